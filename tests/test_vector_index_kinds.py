"""Vector indices on a vector nested in a struct, 4-bit IVF_PQ and IVF_FLAT over binary
vectors (hamming), each built by lancepy and by pylance 14 and searched by both: the same
rows (distances compared as multisets where ties make the order of equal rows ambiguous).
"""

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy._ops import ivf as _ivf
from lancepy._ops import pq4
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

lance = pytest.importorskip("lance")

LIBS = {"lancepy": lancepy, "pylance": lance}


def same_result(a, b, exact=True):
    """Two searches found the same rows: equal distance multisets (exactly, or to float
    rounding), and the same rows below the k-th distance (rows tied at it may differ)."""
    da, db = np.asarray(a["_distance"].to_pylist()), np.asarray(b["_distance"].to_pylist())
    assert len(da) == len(db)
    if exact:
        assert sorted(da) == sorted(db)
    else:
        np.testing.assert_allclose(np.sort(da), np.sort(db), rtol=1e-4, atol=1e-4)
    if not len(da):
        return
    cut = max(da.max(), db.max())
    margin = 0 if exact else 1e-3 * max(1.0, abs(cut))
    ia = {i for i, d in zip(a["id"].to_pylist(), da) if d < cut - margin}
    ib = {i for i, d in zip(b["id"].to_pylist(), db) if d < cut - margin}
    assert ia == ib


# --------------------------------------------------------------------------------------
# a vector nested in a struct
# --------------------------------------------------------------------------------------


def nested_table(n, dim, seed, start=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, dim)).astype(np.float32)
    st = pa.StructArray.from_arrays(
        [pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), dim), pa.array([f"l{i}" for i in range(start, start + n)])],
        names=["embedding", "label"],
    )
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64()), "data": st}), v


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
def test_nested_vector_index_both_ways(tmp_path, builder):
    dim = 32
    t, v = nested_table(1200, dim, 1)
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri)
    LIBS[builder].dataset(uri).create_index(
        column="data.embedding", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=8)
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    assert ours.list_indices()[0]["fields"] == theirs.list_indices()[0]["fields"] == ["data.embedding"]
    assert ours.list_indices()[0]["name"] == theirs.list_indices()[0]["name"] == "data.embedding_idx"
    # the manifest names the leaf's field id, as pylance records it
    ids = ours._field_ids_by_path()
    assert ours._index_entries()[0]["fields"] == [ids["data.embedding"]]
    assert theirs.describe_indices()[0].fields == [ids["data.embedding"]]
    rng = np.random.default_rng(2)
    for q in [v[0], v[77], rng.standard_normal(dim).astype(np.float32)]:
        nearest = {"column": "data.embedding", "q": q, "k": 10, "nprobes": 4}
        a = ours.to_table(nearest=nearest)
        b = theirs.to_table(nearest=nearest)
        assert a.column_names == b.column_names == ["id", "data", "_distance"]
        same_result(a, b, exact=False)
        assert a["id"].to_pylist() == b["id"].to_pylist()
        # an exact search of the nested column
        ea = ours.to_table(nearest={**nearest, "use_index": False}, columns=["id"])
        eb = theirs.to_table(nearest={**nearest, "use_index": False}, columns=["id"])
        same_result(ea, eb, exact=False)
        want = np.lexsort((np.arange(len(v)), ((v - q) ** 2).sum(1)))[:10]
        assert ea["id"].to_pylist() == want.tolist()


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
def test_nested_vector_index_append_and_optimize(tmp_path, builder):
    dim = 16
    t, v = nested_table(600, dim, 3)
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri)
    LIBS[builder].dataset(uri).create_index(column="data.embedding", index_type="IVF_FLAT", num_partitions=3)
    t2, v2 = nested_table(50, dim, 4, start=600)
    lancepy.write_dataset(t2, uri, mode="append")
    allv = np.concatenate([v, v2])
    q = v2[5]
    nearest = {"column": "data.embedding", "q": q, "k": 15, "nprobes": 3}
    want = np.lexsort((np.arange(len(allv)), ((allv - q) ** 2).sum(1)))[:15].tolist()
    for ds in (lancepy.dataset(uri), lance.dataset(uri)):  # (the new fragment searched exactly)
        assert ds.to_table(nearest=nearest)["id"].to_pylist() == want
    lancepy.dataset(uri).optimize.optimize_indices()
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    assert theirs.stats.index_stats("data.embedding_idx")["num_unindexed_rows"] == 0
    assert ours.stats.index_stats("data.embedding_idx")["num_indexed_rows"] == 650
    a, b = ours.to_table(nearest=nearest), theirs.to_table(nearest=nearest)
    assert a["id"].to_pylist() == b["id"].to_pylist() == want
    np.testing.assert_allclose(a["_distance"].to_numpy(), b["_distance"].to_numpy(), rtol=1e-5, atol=1e-6)


def test_nested_vector_index_errors(tmp_path):
    t, _ = nested_table(300, 8, 5)
    ds = lancepy.write_dataset(t, str(tmp_path / "ds"))
    with pytest.raises(KeyError):
        ds.create_index(column="data.nope", index_type="IVF_FLAT", num_partitions=2)
    with pytest.raises(TypeError, match="FixedSizeList"):
        ds.create_index(column="data.label", index_type="IVF_FLAT", num_partitions=2)
    with pytest.raises(InvalidArgumentError, match="vector column"):
        ds.to_table(nearest={"column": "data.label", "q": np.zeros(8, np.float32)})
    with pytest.raises(lancepy.exceptions.ColumnNotFoundError):
        ds.to_table(nearest={"column": "data.nope", "q": np.zeros(8, np.float32)})


# --------------------------------------------------------------------------------------
# 4-bit PQ
# --------------------------------------------------------------------------------------


def float_table(n, dim, seed):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((6, dim)).astype(np.float32) * 2
    v = (c[rng.integers(0, 6, n)] + rng.standard_normal((n, dim))).astype(np.float32)
    return pa.table({"id": pa.array(np.arange(n), pa.int64()),
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), dim)}), v


def _codes_are_nearest_codewords(uri, v):
    """Every stored 4-bit code (read as lancepy reads them: two a byte, low nibble first,
    transposed within a partition) is the nearest codeword of its row's residual."""
    ds = lancepy.dataset(uri)
    idx = _ivf.load_index(uri, ds._index_entries()[0]["uuid"])
    assert idx.nbits == 4 and idx.codebook.shape == (idx.num_sub_vectors, 16, v.shape[1] // idx.num_sub_vectors)
    rid, packed = _ivf.all_rows(idx)
    codes = pq4.unpack(packed)
    parts = np.repeat(np.arange(idx.num_partitions), idx.lengths)
    rows = (rid & 0xFFFFFFFF).astype(np.int64)
    resid = v[rows] - idx.centroids[parts]
    m, _, sd = idx.codebook.shape
    for j in range(m):
        sub = resid[:, j * sd : (j + 1) * sd]
        d = ((sub[:, None, :] - idx.codebook[j][None]) ** 2).sum(2)
        picked = d[np.arange(len(d)), codes[:, j]]
        np.testing.assert_allclose(picked, d.min(1), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
def test_4bit_ivf_pq_both_ways(tmp_path, builder):
    dim = 64
    t, v = float_table(3000, dim, 7)
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri)
    LIBS[builder].dataset(uri).create_index("vector", index_type="IVF_PQ", num_partitions=2, num_sub_vectors=16,
                                            num_bits=4, metric="l2")
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    for ds in (ours, theirs):
        sub = ds.stats.index_stats("vector_idx")["indices"][0]["sub_index"]
        assert (sub["nbits"], sub["num_sub_vectors"], sub["index_type"]) == (4, 16, "PQ")
    _codes_are_nearest_codewords(uri, v)
    rng = np.random.default_rng(8)
    for q in [v[3], v[2000], rng.standard_normal(dim).astype(np.float32)]:
        for k in (10, 300, 1000):
            nearest = {"column": "vector", "q": q, "k": k, "nprobes": 2}
            a = ours.to_table(nearest=nearest, columns=["id"])
            b = theirs.to_table(nearest=nearest, columns=["id"])
            same_result(a, b, exact=False)
    # with a deleted row
    lance.dataset(uri).delete("id = 1")
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    nearest = {"column": "vector", "q": v[2000], "k": 20, "nprobes": 2}
    same_result(ours.to_table(nearest=nearest, columns=["id"]), theirs.to_table(nearest=nearest, columns=["id"]), exact=False)


def test_4bit_codes_pack_two_a_byte():
    rng = np.random.default_rng(0)
    m = 4
    codes = rng.integers(0, 16, (m, 250)).astype(np.uint8)
    packed = pq4.pack(codes.T)
    assert packed.shape == (250, m // 2)
    assert (packed[:, 0] == (codes[1] << 4) | codes[0]).all()
    assert (packed[:, 1] == (codes[3] << 4) | codes[2]).all()
    np.testing.assert_array_equal(pq4.unpack(packed), codes.T)


def test_4bit_errors(tmp_path):
    t, _ = float_table(600, 16, 9)
    ds = lancepy.write_dataset(t, str(tmp_path / "ds"))
    with pytest.raises(InvalidArgumentError, match="even"):
        ds.create_index("vector", "IVF_PQ", num_partitions=1, num_sub_vectors=1, num_bits=4)
    for kind in ("IVF_FLAT", "IVF_SQ"):
        with pytest.raises(NotSupportedError, match="num_bits"):
            ds.create_index("vector", kind, num_partitions=1, num_bits=4)
    with pytest.raises(NotSupportedError, match="num_bits"):
        ds.create_index("vector", "IVF_PQ", num_partitions=1, num_sub_vectors=4, num_bits=2)
    assert not lancepy.dataset(str(tmp_path / "ds")).has_index


# --------------------------------------------------------------------------------------
# IVF_FLAT over binary vectors (hamming)
# --------------------------------------------------------------------------------------


def binary_table(n, nbytes, seed, start=0):
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 256, (n, nbytes)).astype(np.uint8)
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64()),
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(b.ravel(), pa.uint8()), nbytes)}), b


def hamming_exact(b, q):
    return np.unpackbits(b ^ q[None], axis=1).sum(1).astype(np.float32)


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
def test_hamming_ivf_flat_both_ways(tmp_path, builder):
    nbytes = 16
    t, b = binary_table(1000, nbytes, 11)
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri)
    LIBS[builder].dataset(uri).create_index("vector", index_type="IVF_FLAT", num_partitions=4, metric="hamming")
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    for ds in (ours, theirs):
        st = ds.stats.index_stats("vector_idx")
        assert st["index_type"] == "IVF_FLAT"
        assert st["indices"][0]["metric_type"] == "hamming"
        assert sum(p["size"] for p in st["indices"][0]["partitions"]) == 1000
    # every row sits in a partition whose centroid is nearest to it (hamming)
    idx = _ivf.load_index(uri, ours._index_entries()[0]["uuid"])
    assert idx.value_type == "uint8" and idx.centroids.shape == (4, nbytes)
    rid, data = _ivf.all_rows(idx)
    np.testing.assert_array_equal(data, b[(rid & 0xFFFFFFFF).astype(np.int64)])
    parts = np.repeat(np.arange(4), idx.lengths)
    cent = idx.centroids.astype(np.uint8)
    d = np.stack([hamming_exact(b[(rid & 0xFFFFFFFF).astype(np.int64)], c) for c in cent], 1)
    assert (d[np.arange(len(d)), parts] == d.min(1)).all()
    rng = np.random.default_rng(12)
    for q in [b[5], rng.integers(0, 256, nbytes).astype(np.uint8)]:
        want = np.sort(hamming_exact(b, q))
        for extra in ({}, {"metric": "hamming"}, {"metric": "hamming", "use_index": False}):
            nearest = {"column": "vector", "q": q, "k": 10, **extra}
            a = ours.to_table(nearest=nearest, columns=["id"])
            bb = theirs.to_table(nearest=nearest, columns=["id"])
            same_result(a, bb)
            assert a["_distance"].to_pylist() == want[:10].tolist()
            assert a.schema.field("_distance").type == pa.float32()
            got = hamming_exact(b[a["id"].to_numpy()], q)
            assert got.tolist() == a["_distance"].to_pylist()
    # a query given as floats is cast to bytes, as pylance casts it
    q = rng.integers(0, 256, nbytes).astype(np.uint8)
    a = ours.to_table(nearest={"column": "vector", "q": q.astype(np.float32) + 0.5, "k": 5}, columns=["id"])
    same_result(a, theirs.to_table(nearest={"column": "vector", "q": q, "k": 5}, columns=["id"]))


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
def test_hamming_append_optimize_and_filters(tmp_path, builder):
    t, b = binary_table(800, 8, 13)
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri)
    LIBS[builder].dataset(uri).create_index("vector", index_type="IVF_FLAT", num_partitions=2, metric="hamming")
    t2, b2 = binary_table(100, 8, 14, start=800)
    lancepy.write_dataset(t2, uri, mode="append")
    allb = np.concatenate([b, b2])
    q = b2[3]
    nearest = {"column": "vector", "q": q, "k": 12, "metric": "hamming"}
    want = np.sort(hamming_exact(allb, q))[:12].tolist()
    for ds in (lancepy.dataset(uri), lance.dataset(uri)):
        assert ds.to_table(nearest=nearest)["_distance"].to_pylist() == want
    lancepy.dataset(uri).optimize.optimize_indices()
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    assert theirs.stats.index_stats("vector_idx")["num_unindexed_rows"] == 0
    same_result(ours.to_table(nearest=nearest, columns=["id"]), theirs.to_table(nearest=nearest, columns=["id"]))
    assert ours.to_table(nearest=nearest)["_distance"].to_pylist() == want
    # a prefilter and a deletion
    lance.dataset(uri).delete("id < 50")
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    kw = dict(nearest=nearest, columns=["id"], filter="id % 2 = 0", prefilter=True)
    a, bb = ours.to_table(**kw), theirs.to_table(**kw)
    same_result(a, bb)
    assert all(i % 2 == 0 and i >= 50 for i in a["id"].to_pylist())


def test_hamming_errors(tmp_path):
    t, _ = binary_table(300, 8, 15)
    ds = lancepy.write_dataset(t, str(tmp_path / "ds"))
    with pytest.raises(NotSupportedError, match="hamming"):
        ds.create_index("vector", "IVF_PQ", num_partitions=2, num_sub_vectors=2, metric="hamming")
    with pytest.raises(TypeError, match="hamming"):
        ds.create_index("vector", "IVF_FLAT", num_partitions=2)  # (uint8 vectors need metric="hamming")
    f, _ = float_table(300, 8, 16)
    fds = lancepy.write_dataset(f, str(tmp_path / "f"))
    with pytest.raises(TypeError, match="hamming"):
        fds.create_index("vector", "IVF_FLAT", num_partitions=2, metric="hamming")
    with pytest.raises(InvalidArgumentError, match="hamming"):
        fds.to_table(nearest={"column": "vector", "q": np.zeros(8, np.float32), "metric": "hamming"})
    with pytest.raises(InvalidArgumentError, match="l2"):
        ds.to_table(nearest={"column": "vector", "q": np.zeros(8, np.uint8), "metric": "l2"})
    with pytest.raises(InvalidArgumentError, match="0 to 255"):
        ds.to_table(nearest={"column": "vector", "q": np.full(8, 300.0)})
    with pytest.raises(InvalidArgumentError, match="bytes"):
        ds.to_table(nearest={"column": "vector", "q": np.zeros(5, np.uint8)})
    assert not lancepy.dataset(str(tmp_path / "ds")).has_index


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
@pytest.mark.parametrize("kind", ["4bit", "hamming"])
def test_rewritten_indices_stay_readable(tmp_path, builder, kind):
    """optimize_indices (a delta segment, then a merge) and a compaction rewrite 4-bit PQ and
    hamming indices in their own layout: pylance searches the rewritten files as lancepy does."""
    uri = str(tmp_path / "ds")
    if kind == "4bit":
        t, v = float_table(1200, 32, 21)
        idx_kw = dict(index_type="IVF_PQ", num_partitions=2, num_sub_vectors=8, num_bits=4)
        q, exact = v[10], False
    else:
        t, v = binary_table(1200, 8, 21)
        idx_kw = dict(index_type="IVF_FLAT", num_partitions=2, metric="hamming")
        q, exact = v[10], True
    lance.write_dataset(t.slice(0, 600), uri, max_rows_per_file=300)
    LIBS[builder].dataset(uri).create_index("vector", **idx_kw)
    lance.write_dataset(t.slice(600, 300), uri, mode="append")
    lancepy.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)  # (a delta segment)
    lance.write_dataset(t.slice(900, 300), uri, mode="append")
    lancepy.dataset(uri).optimize.optimize_indices()  # (merged into one)
    lance.dataset(uri).delete("id % 5 = 0")
    lancepy.dataset(uri).optimize.compact_files(target_rows_per_fragment=2000)
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    st = theirs.stats.index_stats("vector_idx")
    assert st["num_unindexed_rows"] == 0 and st["num_indexed_rows"] == 960
    if kind == "4bit":
        assert st["indices"][0]["sub_index"]["nbits"] == 4
    else:
        assert st["indices"][0]["metric_type"] == "hamming"
    nearest = {"column": "vector", "q": q, "k": 25, "nprobes": 2}
    a, b = ours.to_table(nearest=nearest, columns=["id"]), theirs.to_table(nearest=nearest, columns=["id"])
    same_result(a, b, exact=exact)
    assert all(i % 5 for i in a["id"].to_pylist())


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_nested_exact_search_matches_pylance(tmp_path, metric, dtype):
    rng = np.random.default_rng(31)
    n, dim = 500, 8
    v = rng.standard_normal((n, dim)).astype(dtype)
    emb = pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), dim)
    valid = pa.array(rng.random(n) > 0.05)  # (some null structs: their vectors are skipped)
    st = pa.StructArray.from_arrays([emb, pa.array(np.arange(n))], names=["embedding", "n"], mask=pa.compute.invert(valid))
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": pa.array(np.arange(n), pa.int64()), "data": st}), uri, max_rows_per_file=200)
    lance.dataset(uri).delete("id = 7")
    q = rng.standard_normal(dim).astype(np.float32)
    nearest = {"column": "data.embedding", "q": q, "k": 20, "metric": metric}
    a = lancepy.dataset(uri).to_table(nearest=nearest, columns=["id"], filter="id > 3", prefilter=True)
    b = lance.dataset(uri).to_table(nearest=nearest, columns=["id"], filter="id > 3", prefilter=True)
    same_result(a, b, exact=False)
    assert a["id"].to_pylist() == b["id"].to_pylist()


def test_vector_index_reader_of_4bit_and_hamming(tmp_path):
    """VectorIndexReader returns 4-bit codes as stored (two a byte) and binary vectors as
    bytes, for lancepy's and pylance's indices alike."""
    t, v = float_table(600, 16, 41)
    lance.write_dataset(t, str(tmp_path / "pq"))
    lancepy.dataset(str(tmp_path / "pq")).create_index("vector", "IVF_PQ", num_partitions=2, num_sub_vectors=4, num_bits=4)
    t2, b = binary_table(600, 8, 42)
    lance.write_dataset(t2, str(tmp_path / "bin"))
    lance.dataset(str(tmp_path / "bin")).create_index("vector", "IVF_FLAT", num_partitions=2, metric="hamming")
    from lancepy.vector import VectorIndexReader

    r = VectorIndexReader(lancepy.dataset(str(tmp_path / "pq")), "vector_idx")
    got = pa.concat_tables([r.read_partition(p, with_vector=True) for p in range(r.num_partitions())])
    assert got.schema.field("__pq_code").type == pa.list_(pa.uint8(), 2) and got.num_rows == 600
    r = VectorIndexReader(lancepy.dataset(str(tmp_path / "bin")), "vector_idx")
    got = pa.concat_tables([r.read_partition(p, with_vector=True) for p in range(r.num_partitions())])
    rows = (got["_rowid"].to_numpy() & 0xFFFFFFFF).astype(np.int64)
    np.testing.assert_array_equal(np.stack(got["flat"].to_numpy(zero_copy_only=False)).astype(np.uint8), b[rows])
