"""IVF_PQ indices in pylance's legacy index layout (``index_file_version="Legacy"``: one raw
``index.idx`` ending in an ``Index`` protobuf message), both directions with pylance 14.0.2:
lancepy writes one and pylance searches it with the same rows (and vice versa), lancepy's
encoder reproduces pylance's file byte for byte, and compaction / optimize_indices keep the
layout (as pylance does)."""

from __future__ import annotations

import glob
import os

import lancepy
import numpy as np
import pyarrow as pa
import pytest
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

lance = pytest.importorskip("lance")

DIM = 32


def _table(seed: int, n: int, nans: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    vec = rng.random((n, DIM), dtype=np.float32)
    if nans:
        vec[rng.choice(n, nans, replace=False)] = np.nan
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), DIM),
        }
    )


def _queries(seed: int, count: int = 6) -> list:
    rng = np.random.default_rng(seed + 1000)
    return [rng.random(DIM, dtype=np.float32) for _ in range(count)]


_SEARCHES = [{}, {"nprobes": 1}, {"nprobes": 3, "refine_factor": 2}]


def _same_results(path: str, seed: int, filt: str = "id % 3 <> 1") -> None:
    """lancepy and pylance return the same rows (and distances) from the index at `path`."""
    mine, theirs = lancepy.dataset(path), lance.dataset(path)
    for q in _queries(seed):
        for extra in _SEARCHES:
            nearest = {"column": "vector", "q": q, "k": 10, **extra}
            a = mine.to_table(nearest=nearest, columns=["id"])
            b = theirs.to_table(nearest=nearest, columns=["id"])
            assert a.column("id").to_pylist() == b.column("id").to_pylist(), extra
            np.testing.assert_allclose(a.column("_distance").to_numpy(), b.column("_distance").to_numpy(), rtol=1e-5)
            a = mine.to_table(nearest=nearest, columns=["id"], filter=filt, prefilter=True)
            b = theirs.to_table(nearest=nearest, columns=["id"], filter=filt, prefilter=True)
            assert a.column("id").to_pylist() == b.column("id").to_pylist(), (extra, filt)
    plan = mine.scanner(nearest={"column": "vector", "q": _queries(seed)[0], "k": 5}).explain_plan()
    assert "ANNIvfPartition" in plan


def _stats(ds) -> dict:
    st = ds.stats.index_stats("vector_idx")
    (seg,) = st["indices"]
    return seg


def _index_file(path: str) -> str:
    (f,) = glob.glob(os.path.join(path, "_indices", "*", "*"))
    return f


@pytest.mark.parametrize("seed,metric", [(3, "l2"), (4, "l2"), (5, "cosine"), (6, "dot")])
def test_lancepy_writes_legacy_pylance_reads_it(tmp_path, seed: int, metric: str) -> None:
    path = str(tmp_path / "ds")
    lancepy.write_dataset(_table(seed, 1500, nans=seed * 5), path, max_rows_per_file=600)
    ds = lancepy.dataset(path).create_index(
        "vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=8, index_file_version="Legacy", seed=seed,
        metric=metric,
    )
    assert os.path.basename(_index_file(path)) == "index.idx"  # (one file: no auxiliary.idx)
    with open(_index_file(path), "rb") as f:
        f.seek(-8, os.SEEK_END)
        assert f.read() == b"\x00\x00\x01\x00LANC"  # (footer version 0.1)
    mine, theirs = _stats(ds), _stats(lance.dataset(path))
    assert mine["index_file_version"] == "Legacy"
    assert mine == theirs
    assert sum(p["size"] for p in mine["partitions"]) == 1500 - seed * 5  # (NaN vectors are not indexed)
    _same_results(path, seed)


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_pylance_writes_legacy_lancepy_reads_it(tmp_path, metric: str) -> None:
    from lancepy._ops import ivf as _ivf
    from lancepy._ops import ivf_legacy as _legacy

    path = str(tmp_path / "ds")
    lance.write_dataset(_table(5, 1200, nans=7), path)
    lance.dataset(path).create_index(
        "vector", index_type="IVF_PQ", num_partitions=3, num_sub_vectors=16, index_file_version="Legacy", metric=metric
    )
    ds = lancepy.dataset(path)
    mine, theirs = _stats(ds), _stats(lance.dataset(path))
    assert mine["index_file_version"] == "Legacy"
    assert mine == theirs
    _same_results(path, 5)
    # lancepy's encoder writes pylance's file again, byte for byte, from what it decoded
    f = _index_file(path)
    idx = _ivf.load_index(path, os.path.basename(os.path.dirname(f)))
    rows, codes = _ivf.all_rows(idx)
    model = idx.legacy
    data = _legacy.encode(
        model.name, model.column, model.dataset_version, model.metric, model.dim, model.num_sub_vectors, rows, codes,
        idx.lengths, idx.centroids, idx.loss, idx.codebook,
    )
    with open(f, "rb") as fh:
        assert data == fh.read()


def test_compaction_and_optimize_keep_the_legacy_layout(tmp_path) -> None:
    path = str(tmp_path / "ds")
    lancepy.write_dataset(_table(6, 1200), path, max_rows_per_file=300)
    ds = lancepy.dataset(path).create_index(
        "vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=8, index_file_version="Legacy", seed=6
    )
    ds.delete("id % 5 = 2")
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    ds = lancepy.dataset(path)
    assert _stats(ds)["index_file_version"] == "Legacy"
    assert _stats(ds) == _stats(lance.dataset(path))
    _same_results(path, 6)
    lancepy.write_dataset(_table(7, 200).set_column(0, "id", pa.array(range(1200, 1400), pa.int64())), path, mode="append")
    ds = lancepy.dataset(path)
    ds.optimize.optimize_indices(num_indices_to_merge=1)
    ds = lancepy.dataset(path)
    seg = _stats(ds)
    assert seg["index_file_version"] == "Legacy"
    assert sum(p["size"] for p in seg["partitions"]) == 1200 - 240 + 200
    assert seg == _stats(lance.dataset(path))
    _same_results(path, 7)


def test_legacy_layout_refusals(tmp_path) -> None:
    path = str(tmp_path / "ds")
    lancepy.write_dataset(_table(8, 300), path)
    ds = lancepy.dataset(path)
    with pytest.raises(NotSupportedError, match="IVF_PQ only"):
        ds.create_index("vector", index_type="IVF_FLAT", num_partitions=2, index_file_version="Legacy")
    with pytest.raises(InvalidArgumentError):
        ds.create_index("vector", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=4, index_file_version="V9")
    with pytest.raises(NotSupportedError, match="8-bit PQ codes only"):
        ds.create_index("vector", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=4, num_bits=4,
                        index_file_version="Legacy")
    half = pa.table({"vector": pa.FixedSizeListArray.from_arrays(pa.array(np.ones(64 * 8, np.float16)), 8)})
    lancepy.write_dataset(half, str(tmp_path / "half"))
    with pytest.raises(NotSupportedError, match="float16"):
        lancepy.dataset(str(tmp_path / "half")).create_index(
            "vector", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=2, index_file_version="Legacy"
        )
