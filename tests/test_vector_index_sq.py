"""IVF_SQ vector indices in pylance 14's format: lancepy's index searched by pylance and
pylance's by lancepy (same rows, bit-equal distances), cosine, compaction remapping,
optimize_indices, statistics and refusals."""

from __future__ import annotations

import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

DIM = 16


def _table(n, seed, start=0):
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), DIM)})


def _search(lib, uri, q, **kw):
    nearest = {"column": "vector", "q": q, "k": 10, "nprobes": 3, **kw}
    return lib.dataset(uri).to_table(nearest=nearest, columns=["id"])


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_each_library_searches_the_others_index(tmp_path, builder, metric):
    uri = str(tmp_path / "d.lance")
    lancepy.write_dataset(_table(3000, 1), uri, max_rows_per_file=1000)
    lib = lancepy if builder == "lancepy" else lance
    lib.dataset(uri).create_index("vector", "IVF_SQ", num_partitions=6, metric=metric)
    assert lancepy.dataset(uri).list_indices()[0]["type"] == lance.dataset(uri).list_indices()[0]["type"] == "IVF_SQ"
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = rng.standard_normal(DIM)
        ours, theirs = _search(lancepy, uri, q), _search(lance, uri, q)
        assert ours.column("id").to_pylist() == theirs.column("id").to_pylist()
        assert ours.column("_distance").to_pylist() == theirs.column("_distance").to_pylist()
    # the same partitions, codes and range: pylance's statistics read the same from both
    s_ours = lancepy.dataset(uri).stats.index_stats("vector_idx")["indices"][0]
    s_theirs = lance.dataset(uri).stats.index_stats("vector_idx")["indices"][0]
    assert s_ours["sub_index"] == s_theirs["sub_index"]
    assert s_ours["partitions"] == s_theirs["partitions"]


def test_the_range_and_codes_are_pylances(tmp_path):
    """Over fewer rows than the range's sample, the range is every value's: pylance's own
    build and lancepy's write the same bounds and, for the same centroids, the same codes."""
    t = _table(2000, 2)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    cents = np.random.default_rng(3).standard_normal((4, DIM)).astype(np.float32)
    for uri, lib in ((ours, lancepy), (theirs, lance)):
        lancepy.write_dataset(t, uri)
        lib.dataset(uri).create_index("vector", "IVF_SQ", num_partitions=4, ivf_centroids=cents)
    a = lancepy.dataset(ours).stats.index_stats("vector_idx")["indices"][0]
    b = lancepy.dataset(theirs).stats.index_stats("vector_idx")["indices"][0]
    assert a["sub_index"]["bounds"] == b["sub_index"]["bounds"] and a["partitions"] == b["partitions"]
    from lancepy._ops import ivf

    ia = ivf.load_index(ours, lancepy.dataset(ours).list_indices()[0]["uuid"])
    ib = ivf.load_index(theirs, lancepy.dataset(theirs).list_indices()[0]["uuid"])
    (ra, ca), (rb, cb) = ivf.all_rows(ia), ivf.all_rows(ib)
    assert np.array_equal(ra, rb) and np.array_equal(ca, cb)


def test_compaction_and_optimize_keep_the_index_usable(tmp_path):
    uri = str(tmp_path / "d.lance")
    lancepy.write_dataset(_table(2000, 4), uri, max_rows_per_file=250)
    ds = lancepy.dataset(uri)
    ds.create_index("vector", "IVF_SQ", num_partitions=4)
    ds.delete("id % 10 = 3")
    ds = lancepy.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    lancepy.write_dataset(_table(500, 5, start=2000), uri, mode="append")
    lancepy.dataset(uri).optimize.optimize_indices()
    rng = np.random.default_rng(9)
    for _ in range(10):
        q = rng.standard_normal(DIM)
        ours, theirs = _search(lancepy, uri, q, nprobes=4), _search(lance, uri, q, nprobes=4)
        assert ours.column("id").to_pylist() == theirs.column("id").to_pylist()
        assert not any(i % 10 == 3 and i < 2000 for i in ours.column("id").to_pylist())
    assert lance.dataset(uri).stats.index_stats("vector_idx")["num_unindexed_rows"] == 0


def test_refusals(tmp_path):
    uri = str(tmp_path / "d.lance")
    ds = lancepy.write_dataset(_table(300, 6), uri)
    with pytest.raises(InvalidArgumentError, match="num_sub_vectors"):
        ds.create_index("vector", "IVF_SQ", num_partitions=2, num_sub_vectors=4)
    with pytest.raises(NotSupportedError, match="dot"):
        ds.create_index("vector", "IVF_SQ", num_partitions=2, metric="dot")
    with pytest.raises(NotSupportedError, match="IVF_SQ"):
        ds.create_index("vector", "IVF_HNSW_SQ", num_partitions=2)
    other = str(tmp_path / "dot.lance")
    shutil.copytree(uri, other)
    lance.dataset(other).create_index("vector", "IVF_SQ", num_partitions=2, metric="dot")
    with pytest.raises(NotSupportedError, match="dot"):
        lancepy.dataset(other).to_table(nearest={"column": "vector", "q": np.ones(DIM), "k": 3})
