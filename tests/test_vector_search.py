"""Exact nearest-neighbour search (``nearest=``) against pylance's brute-force search."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError, UnsupportedError

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")

DIM = 16


def _table(n: int, dtype=np.float32, null_every: int = 0, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, DIM)).astype(dtype)
    v[5] = v[6]  # an exact tie: broken by row id
    vec = pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM)
    if null_every:
        mask = pa.array([i % null_every == 1 for i in range(n)])
        vec = pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM, mask=mask)
    return pa.table({"id": np.arange(n), "cat": [f"c{i % 7}" for i in range(n)], "vec": vec})


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    """Written by pylance in 4 fragments, then rows deleted."""
    path = str(tmp_path_factory.mktemp("vs") / "ds.lance")
    lance.write_dataset(_table(2000), path, max_rows_per_file=600)
    lance.dataset(path).delete("id % 10 = 3")
    return path


def _query(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)


def _assert_same(theirs: pa.Table, ours: pa.Table) -> None:
    assert ours.column_names == theirs.column_names
    assert ours["id"].to_pylist() == theirs["id"].to_pylist()
    np.testing.assert_allclose(ours["_distance"].to_numpy(), theirs["_distance"].to_numpy(), rtol=1e-5, atol=1e-5)
    for name in ours.column_names:
        if name != "_distance":
            assert ours[name].to_pylist() == theirs[name].to_pylist(), name


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot", "L2", "euclidean"])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"filter": "id % 2 = 0"},
        {"filter": "cat = 'c3'", "prefilter": True},
        {"columns": ["id"], "with_row_id": True},
        {"columns": ["cat", "id"], "with_row_address": True},
        {"limit": 4, "offset": 2},
    ],
)
def test_equals_pylance(uri, metric, kwargs):
    nearest = {"column": "vec", "q": _query(), "k": 25, "metric": metric}
    theirs = lance.dataset(uri).to_table(nearest=nearest, **kwargs)
    ours = lancepy.dataset(uri).to_table(nearest=nearest, **kwargs)
    _assert_same(theirs, ours)


def test_deleted_rows_never_returned_and_ties_break_by_row_id(uri):
    ds = lancepy.dataset(uri)
    v = ds.to_table(columns=["vec"], filter="id = 5")["vec"][0].as_py()
    got = ds.to_table(nearest={"column": "vec", "q": v, "k": 3}, columns=["id"])
    assert got["id"].to_pylist()[:2] == [5, 6] and got["_distance"].to_pylist()[:2] == [0.0, 0.0]
    deleted = ds.to_table(columns=["vec"], filter="id = 13")  # (id % 10 = 3 is deleted)
    assert deleted.num_rows == 0
    everything = ds.to_table(nearest={"column": "vec", "q": _query(), "k": 5000}, columns=["id"])
    assert everything.num_rows == ds.count_rows() == 1800
    assert not any(i % 10 == 3 for i in everything["id"].to_pylist())
    d = everything["_distance"].to_numpy()
    assert (np.diff(d) >= 0).all()


def test_postfilter_may_return_fewer_rows_prefilter_fills_k(uri):
    ds = lancepy.dataset(uri)
    nearest = {"column": "vec", "q": _query(3), "k": 10}
    post = ds.to_table(nearest=nearest, filter="cat = 'c1'")
    pre = ds.to_table(nearest=nearest, filter="cat = 'c1'", prefilter=True)
    assert post.num_rows < 10 and pre.num_rows == 10
    assert set(post["cat"].to_pylist()) <= {"c1"} and set(pre["cat"].to_pylist()) == {"c1"}


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_float_widths_and_lancepy_written(tmp_path, dtype):
    path = str(tmp_path / "w.lance")
    lancepy.write_dataset(_table(700, dtype=dtype), path, max_rows_per_file=300)
    nearest = {"column": "vec", "q": _query(), "k": 12, "metric": "cosine"}
    _assert_same(lance.dataset(path).to_table(nearest=nearest), lancepy.dataset(path).to_table(nearest=nearest))


def test_null_vectors_are_skipped(tmp_path):
    path = str(tmp_path / "n.lance")
    lance.write_dataset(_table(300, null_every=3), path)
    nearest = {"column": "vec", "q": _query(), "k": 300}
    theirs = lance.dataset(path).to_table(nearest=nearest, columns=["id"])
    ours = lancepy.dataset(path).to_table(nearest=nearest, columns=["id"])
    assert ours.num_rows == 200
    _assert_same(theirs, ours)


def test_distance_range_scanner_batches_and_count(uri):
    ds = lancepy.dataset(uri)
    nearest = {"column": "vec", "q": _query(), "k": 50, "distance_range": (10.0, 20.0)}
    _assert_same(lance.dataset(uri).to_table(nearest=nearest), ds.to_table(nearest=nearest))
    d = ds.to_table(nearest=nearest)["_distance"].to_numpy()
    assert len(d) and (d >= 10.0).all() and (d < 20.0).all()
    sc = ds.scanner(nearest={"column": "vec", "q": _query(), "k": 30}, columns=["id"], batch_size=8)
    batches = list(sc.to_batches())
    assert [b.num_rows for b in batches] == [8, 8, 8, 6]
    assert sc.count_rows() == 30 and sc.projected_schema.names == ["id", "_distance"]
    assert pa.Table.from_batches(batches).equals(sc.to_table())


def test_index_tuning_keys_are_accepted_and_exact(uri):
    ds = lancepy.dataset(uri)
    plain = ds.to_table(nearest={"column": "vec", "q": _query(), "k": 10})
    tuned = ds.to_table(
        nearest={"column": "vec", "q": list(_query()), "k": 10, "nprobes": 1, "refine_factor": 2, "ef": 4,
                 "use_index": True, "approx_mode": "fast", "minimum_nprobes": 1, "maximum_nprobes": 2}
    )
    assert plain.equals(tuned)


def test_bad_queries_raise_clear_errors(uri):
    ds = lancepy.dataset(uri)
    q = _query()
    with pytest.raises(TypeError, match="vector column"):
        ds.to_table(nearest={"column": "id", "q": q})
    with pytest.raises(InvalidArgumentError, match="vector column"):
        ds.to_table(nearest={"column": "cat", "q": q})
    with pytest.raises(ColumnNotFoundError):
        ds.to_table(nearest={"column": "nope", "q": q})
    with pytest.raises(ValueError, match="dimensions"):
        ds.to_table(nearest={"column": "vec", "q": q[:3]})
    with pytest.raises(ValueError, match="'k'"):
        ds.to_table(nearest={"column": "vec", "q": q, "k": 0})
    with pytest.raises(ValueError, match="metric"):
        ds.to_table(nearest={"column": "vec", "q": q, "metric": "foo"})
    with pytest.raises(InvalidArgumentError, match="hamming is for uint8 vectors"):
        ds.to_table(nearest={"column": "vec", "q": q, "metric": "hamming"})  # (binary vectors: test_vector_index_kinds.py)
    with pytest.raises(InvalidArgumentError, match="bogus"):
        ds.to_table(nearest={"column": "vec", "q": q, "bogus": 1})
    with pytest.raises(InvalidArgumentError, match="needs 'q'"):
        ds.to_table(nearest={"column": "vec"})
    with pytest.raises(UnsupportedError, match="several query vectors"):
        ds.to_table(nearest={"column": "vec", "q": np.stack([q, q])})
    with pytest.raises(InvalidArgumentError, match="NaN"):
        ds.to_table(nearest={"column": "vec", "q": np.full(DIM, np.nan, np.float32)})
    assert ds.to_table(filter="id > 3", prefilter=True).num_rows == ds.count_rows("id > 3")  # (as pylance: no effect)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_every_file_version(tmp_path, version):
    # (2.1+ vectors without nulls are scored straight from the mapped file; 2.0 pages are decoded)
    path = str(tmp_path / f"v{version}.lance")
    lance.write_dataset(_table(900), path, max_rows_per_file=400, data_storage_version=version)
    lance.dataset(path).delete("id % 4 = 1")
    for metric in ("l2", "dot"):
        nearest = {"column": "vec", "q": _query(5), "k": 40, "metric": metric}
        _assert_same(lance.dataset(path).to_table(nearest=nearest), lancepy.dataset(path).to_table(nearest=nearest))


def test_limit_without_k_sets_the_number_of_neighbours_as_pylance(tmp_path):
    import lance

    rng = np.random.default_rng(3)
    t = pa.table({"id": range(300), "vector": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(300 * 8, dtype=np.float32)), 8)})
    uri = str(tmp_path / "k.lance")
    lancepy.write_dataset(t, uri)
    q = rng.random(8)
    ours = lancepy.dataset(uri).to_table(columns=["id"], nearest={"column": "vector", "q": q}, limit=12)
    theirs = lance.dataset(uri).to_table(columns=["id"], nearest={"column": "vector", "q": q}, limit=12)
    assert ours.num_rows == 12 and ours.column("id").equals(theirs.column("id"))
    with pytest.raises(ValueError, match="Cannot include deleted rows"):
        lancepy.dataset(uri).to_table(nearest={"column": "vector", "q": q, "k": 3}, with_row_id=True, include_deleted_rows=True)


def test_ivf_index_statistics_keys_match_pylance(tmp_path):
    import lance

    rng = np.random.default_rng(4)
    t = pa.table({"vector": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(1000 * 16, dtype=np.float32)), 16)})
    uri = str(tmp_path / "s.lance")
    lancepy.write_dataset(t, uri)
    lancepy.dataset(uri).create_index("vector", "IVF_PQ", num_partitions=4, num_sub_vectors=2, metric="cosine")
    ours = lancepy.dataset(uri).stats.index_stats("vector_idx")["indices"][0]
    theirs = lance.dataset(uri).stats.index_stats("vector_idx")["indices"][0]
    assert set(theirs) <= set(ours)
    assert ours["index_file_version"] == "V3" and ours["sub_index"]["metric_type"] == theirs["sub_index"]["metric_type"] == "l2"
    assert np.allclose(np.array(ours["centroids"]), np.array(theirs["centroids"]))
    assert ours["loss"] == pytest.approx(theirs["loss"])
    with pytest.raises(KeyError, match='Index "nope" not found'):
        lancepy.dataset(uri).stats.index_stats("nope")


def test_fixed_shape_tensor_columns_are_searched_as_vectors(tmp_path):
    import lance

    rng = np.random.default_rng(5)
    vecs = rng.random((200, 8), dtype=np.float32)
    t = pa.table({"id": range(200), "tensor": pa.FixedShapeTensorArray.from_numpy_ndarray(vecs)})
    uri = str(tmp_path / "t.lance")
    lancepy.write_dataset(t, uri)
    q_scalar = pa.FixedShapeTensorArray.from_numpy_ndarray(vecs[7:8])[0]
    for q in (vecs[7], q_scalar):
        ours = lancepy.dataset(uri).to_table(nearest={"column": "tensor", "q": q, "k": 5}, columns=["id"])
        theirs = lance.dataset(uri).to_table(nearest={"column": "tensor", "q": q, "k": 5}, columns=["id"])
        assert ours.column("id").to_pylist() == theirs.column("id").to_pylist()
        assert ours.column("id")[0].as_py() == 7
        assert np.allclose(ours.column("_distance").to_numpy(), theirs.column("_distance").to_numpy(), rtol=1e-5)
