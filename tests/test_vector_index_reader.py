"""VectorIndexReader, ds.stats.index_stats and index_file_version against pylance: the
partitions of lancepy's and pylance's IVF indices hold the same rows, read by either library."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.dataset import VectorIndexReader
from lancepy.exceptions import IndexNotFoundError, InvalidArgumentError, NotSupportedError
from lancepy.indices import IndexFileVersion

DIM = 16


def _table(n=2000):
    v = np.random.default_rng(0).standard_normal((n, DIM)).astype(np.float32)
    return pa.table({"id": np.arange(n), "vector": pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)), DIM)})


@pytest.mark.parametrize("kind", ["IVF_PQ", "IVF_FLAT"])
@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
def test_partitions_match_pylance(tmp_path, pylance, kind, builder):
    from lance.dataset import VectorIndexReader as Theirs

    uri = str(tmp_path / "v.lance")
    lancepy.write_dataset(_table(), uri, max_rows_per_file=700)
    kw = dict(num_partitions=4, num_sub_vectors=4) if kind == "IVF_PQ" else dict(num_partitions=4)
    if builder == "lancepy":
        lancepy.dataset(uri).create_index("vector", kind, index_file_version=IndexFileVersion.V3, **kw)
    else:
        pylance.dataset(uri).create_index("vector", kind, **kw)
    ours, theirs = VectorIndexReader(lancepy.dataset(uri), "vector_idx"), Theirs(pylance.dataset(uri), "vector_idx")
    assert ours.num_partitions() == theirs.num_partitions()
    total = 0
    for p in range(ours.num_partitions()):
        a, b = ours.read_partition(p), theirs.read_partition(p)
        assert a.column("_rowid").to_pylist() == b.column("_rowid").to_pylist()
        total += a.num_rows
        full = ours.read_partition(p, with_vector=True)
        col = "__pq_code" if kind == "IVF_PQ" else "flat"
        assert full.column(col).type == theirs.read_partition(p, with_vector=True).column(col).type
        if kind == "IVF_FLAT":  # the stored vectors are the rows' own
            rows = lancepy.dataset(uri).take(list(range(2000)), columns=["vector"]).column("vector").to_pylist()
            ids = a.column("_rowid").to_pylist()
            frag_rows = {f.fragment_id: f.count_rows() for f in lancepy.dataset(uri).get_fragments()}
            starts = np.cumsum([0] + [frag_rows[k] for k in sorted(frag_rows)])
            logical = [int(starts[sorted(frag_rows).index(r >> 32)] + (r & 0xFFFFFFFF)) for r in ids]
            assert full.column("flat").to_pylist() == [rows[i] for i in logical]
    assert total == 2000
    stats = lancepy.dataset(uri).stats.index_stats("vector_idx")
    want = pylance.dataset(uri).stats.index_stats("vector_idx")
    for key in ("index_type", "name", "num_indices", "num_indexed_rows", "num_unindexed_rows"):
        assert stats[key] == want[key], key
    assert [p["size"] for p in stats["indices"][0]["partitions"]] == [p["size"] for p in want["indices"][0]["partitions"]]


def test_errors(tmp_path):
    uri = str(tmp_path / "v.lance")
    ds = lancepy.write_dataset(_table(500), uri)
    ds.create_index("vector", "IVF_FLAT", num_partitions=2)
    reader = VectorIndexReader(ds, "vector_idx")
    with pytest.raises(IndexError, match="out of range"):
        reader.read_partition(reader.num_partitions())
    with pytest.raises(IndexNotFoundError):
        VectorIndexReader(ds, "nope")
    with pytest.raises(NotSupportedError, match="index_file_version"):
        ds.create_index("vector", "IVF_FLAT", num_partitions=2, name="legacy", index_file_version=IndexFileVersion.LEGACY)
    assert issubclass(InvalidArgumentError, ValueError)
