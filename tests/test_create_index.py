"""create_index: IVF_FLAT / IVF_PQ indices built by lancepy in pylance 14's format.

Searching with them (and pylance searching with them) is covered with pylance-built ones in
tests/test_vector_index.py, which runs every test on an index of each library. Here: what
the build itself promises (options, errors, recall, versions), checked against pylance.
"""

import shutil

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import IndexAlreadyExistsError, InvalidArgumentError, NotSupportedError

lance = pytest.importorskip("lance")


def clustered(n, dim, centers, seed, noise=1.0):
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centers, dim)).astype(np.float32) * 3
    return (c[rng.integers(0, centers, n)] + noise * rng.normal(size=(n, dim))).astype(np.float32)


def table_of(v, start=0):
    return pa.table({
        "id": pa.array(np.arange(start, start + len(v), dtype=np.int64)),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), v.shape[1]),
    })


def exact_ids(v, q, k, live=None):
    d = ((v - q) ** 2).sum(1)
    if live is not None:
        d = np.where(live, d, np.inf)
    return np.lexsort((np.arange(len(v)), d))[:k]


@pytest.fixture
def small(tmp_path):
    v = clustered(3000, 16, 20, seed=3)
    path = str(tmp_path / "small.lance")
    lancepy.write_dataset(table_of(v), path, max_rows_per_file=1000)
    return path, v


def ids_of(t):
    return t.column("id").to_pylist()


def assert_same(a, b):
    """Equal distances; equal rows except among rows tied on a distance (PQ codes repeat)."""
    da, db = a["_distance"].to_numpy(), b["_distance"].to_numpy()
    np.testing.assert_allclose(da, db, rtol=1e-4, atol=1e-4)
    ia, ib = ids_of(a), ids_of(b)
    for i in range(len(da)):
        if np.isclose(da, da[i], rtol=1e-6, atol=0).sum() == 1:
            assert ia[i] == ib[i], (ia, ib)


@pytest.mark.parametrize("kind", ["IVF_FLAT", "IVF_PQ"])
def test_recall_100k_x_128_at_default_nprobes(tmp_path, kind):
    """The issue's recall check: 100k x 128 clustered vectors, lancepy's index at the default
    nprobes (IVF_PQ: 128 partitions, 32 sub-vectors, refine_factor 10; with the default 12
    partitions the residuals are too coarse for 32 sub-vectors) finds >= 95% of the exact top 10."""
    v = clustered(100_000, 128, 200, seed=1)
    path = str(tmp_path / "r.lance")
    lancepy.write_dataset(table_of(v), path)
    kw = {"num_sub_vectors": 32, "num_partitions": 128} if kind == "IVF_PQ" else {}
    ds = lancepy.dataset(path).create_index("emb", kind, seed=1, **kw)
    assert ds.list_indices()[0]["type"] == kind
    rng = np.random.default_rng(2)
    qs = v[rng.integers(0, len(v), 20)] + rng.normal(size=(20, 128)).astype(np.float32)
    hits = 0
    extra = {"refine_factor": 10} if kind == "IVF_PQ" else {}
    for q in qs:
        got = ids_of(ds.to_table(columns=["id"], nearest={"column": "emb", "q": q, "k": 10, **extra}))
        hits += len(set(got) & set(exact_ids(v, q, 10).tolist()))
    assert hits / 200 >= 0.95


def test_pq_recall_is_pylances(tmp_path):
    """IVF_PQ quality: recall@10 (nprobes 8, refine 10) of lancepy's index is at least that of
    pylance's index on the same data, less 0.05; and both libraries return the same rows from
    lancepy's index."""
    v = clustered(20_000, 32, 100, seed=1, noise=0.5)
    rng = np.random.default_rng(4)
    qs = v[rng.integers(0, len(v), 20)] + 0.5 * rng.normal(size=(20, 32)).astype(np.float32)
    recall = {}
    for who, lib in (("pylance", lance), ("lancepy", lancepy)):
        path = str(tmp_path / f"{who}.lance")
        lance.write_dataset(table_of(v), path)
        kw = {"seed": 3} if who == "lancepy" else {}
        lib.dataset(path).create_index("emb", "IVF_PQ", num_partitions=32, num_sub_vectors=8, **kw)
        ours = lancepy.dataset(path)
        nearest = {"column": "emb", "k": 10, "nprobes": 8, "refine_factor": 10}
        hits = 0
        for q in qs:
            got = ids_of(ours.to_table(columns=["id"], nearest={**nearest, "q": q}))
            hits += len(set(got) & set(exact_ids(v, q, 10).tolist()))
            if who == "lancepy":
                a = ours.to_table(columns=["id"], nearest={**nearest, "q": q})
                assert_same(a, lance.dataset(path).to_table(columns=["id"], nearest={**nearest, "q": q}))
        recall[who] = hits / 200
    # (pylance's training is random: its recall varies from build to build by a few points)
    assert recall["lancepy"] >= recall["pylance"] - 0.08, recall
    assert recall["lancepy"] >= 0.9, recall


@pytest.mark.parametrize("kind", ["IVF_FLAT", "IVF_PQ"])
def test_commit_and_files_as_pylance_expects(small, kind):
    path, v = small
    before = lancepy.dataset(path).version
    kw = {"num_sub_vectors": 4} if kind == "IVF_PQ" else {}
    ds = lancepy.dataset(path).create_index("emb", kind, num_partitions=6, name="my_idx", seed=1, **kw)
    assert ds.version == before + 1
    theirs = lance.dataset(path)
    (entry,) = theirs.list_indices()
    assert (entry["name"], entry["type"], entry["fields"], entry["version"]) == ("my_idx", kind, ["emb"], before)
    assert set(entry["fragment_ids"]) == {0, 1, 2}
    stats = theirs.stats.index_stats("my_idx")
    assert stats["num_indexed_rows"] == 3000 and stats["num_unindexed_rows"] == 0
    (seg,) = stats["indices"]
    assert seg["num_partitions"] == 6 and sum(p["size"] for p in seg["partitions"]) == 3000
    assert type(theirs.read_transaction(ds.version).operation).__name__ == "CreateIndex"
    theirs.validate()
    # pylance appends and compacts over it; both libraries still agree.
    lance.write_dataset(table_of(v[:100] + 0.01, start=3000), path, mode="append")
    q = v[5]
    a = lancepy.dataset(path).to_table(columns=["id"], nearest={"column": "emb", "q": q, "k": 5, "nprobes": 6})
    b = lance.dataset(path).to_table(columns=["id"], nearest={"column": "emb", "q": q, "k": 5, "nprobes": 6})
    assert ids_of(a) == ids_of(b)


def test_deleted_and_null_rows_are_not_indexed(tmp_path):
    v = clustered(2000, 8, 10, seed=5)
    emb = pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), 8)
    mask = np.zeros(2000, dtype=bool)
    mask[::50] = True  # every 50th vector null
    emb = pa.array([None if m else list(x) for m, x in zip(mask, v)], pa.list_(pa.float32(), 8))
    path = str(tmp_path / "n.lance")
    lancepy.write_dataset(pa.table({"id": np.arange(2000), "emb": emb}), path)
    lancepy.dataset(path).delete("id >= 1900")
    ds = lancepy.dataset(path).create_index("emb", "IVF_FLAT", num_partitions=4, seed=2)
    stats = lance.dataset(path).stats.index_stats("emb_idx")
    live_non_null = int((~mask[:1900]).sum())
    assert sum(p["size"] for p in stats["indices"][0]["partitions"]) == live_non_null
    live = ~mask & (np.arange(2000) < 1900)
    for q in v[[1, 1950, 777]]:
        got = ids_of(ds.to_table(columns=["id"], nearest={"column": "emb", "q": q, "k": 10, "nprobes": 4}))
        assert got == exact_ids(v, q, 10, live).tolist()


def test_replace_and_name_clash(small):
    path, _ = small
    ds = lancepy.dataset(path).create_index("emb", "IVF_FLAT", num_partitions=4, seed=1)
    first = ds.list_indices()[0]["uuid"]
    with pytest.raises(IndexAlreadyExistsError, match="already exists"):
        ds.create_index("emb", "IVF_FLAT", num_partitions=4)
    with pytest.raises(RuntimeError):  # catchable as pylance's
        ds.create_index("emb", "IVF_FLAT", num_partitions=4)
    v = ds.version
    ds.create_index("emb", "IVF_PQ", num_partitions=3, num_sub_vectors=4, replace=True, seed=1)
    assert ds.version == v + 1
    (entry,) = lance.dataset(path).list_indices()
    assert entry["type"] == "IVF_PQ" and entry["uuid"] != first
    lance.dataset(path).validate()


def test_fragment_ids_and_unindexed_fragments_are_searched(small):
    path, v = small
    ds = lancepy.dataset(path).create_index("emb", "IVF_FLAT", num_partitions=4, fragment_ids=[0, 2], seed=1)
    assert lance.dataset(path).list_indices()[0]["fragment_ids"] == {0, 2}
    for q in v[[10, 1500, 2500]]:
        a = ids_of(ds.to_table(columns=["id"], nearest={"column": "emb", "q": q, "k": 5, "nprobes": 4}))
        b = ids_of(lance.dataset(path).to_table(columns=["id"], nearest={"column": "emb", "q": q, "k": 5, "nprobes": 4}))
        assert a == b == exact_ids(v, q, 5).tolist()
    with pytest.raises(InvalidArgumentError, match="fragment"):
        ds.create_index("emb", "IVF_FLAT", num_partitions=2, fragment_ids=[9], replace=True)


def test_given_centroids_codebook_and_untransposed_codes(small, tmp_path):
    path, v = small
    ds = lancepy.dataset(path)
    rng = np.random.default_rng(0)
    centroids = v[rng.choice(len(v), 5, replace=False)]
    codebook = rng.normal(size=(4, 256, 4)).astype(np.float32)
    ds.create_index("emb", "IVF_PQ", ivf_centroids=centroids, pq_codebook=codebook, num_sub_vectors=4, skip_transpose=True)
    stats = lance.dataset(path).stats.index_stats("emb_idx")["indices"][0]
    assert stats["num_partitions"] == 5 and stats["sub_index"]["transposed"] is False
    np.testing.assert_allclose(np.array(stats["centroids"], dtype=np.float32), centroids)
    for q in v[[3, 2999]]:
        a = lancepy.dataset(path).to_table(columns=["id"], nearest={"column": "emb", "q": q, "k": 5, "nprobes": 2})
        b = lance.dataset(path).to_table(columns=["id"], nearest={"column": "emb", "q": q, "k": 5, "nprobes": 2})
        assert_same(a, b)
    # centroids from a .npy file
    npy = tmp_path / "c.npy"
    np.save(npy, centroids[:3])
    ds.create_index("emb", "IVF_FLAT", ivf_centroids_file=str(npy), replace=True)
    assert lance.dataset(path).stats.index_stats("emb_idx")["indices"][0]["num_partitions"] == 3
    with pytest.raises(InvalidArgumentError, match="num_partitions"):
        ds.create_index("emb", "IVF_FLAT", ivf_centroids=centroids, num_partitions=4, replace=True)
    with pytest.raises(InvalidArgumentError, match="pq_codebook"):
        ds.create_index("emb", "IVF_PQ", num_partitions=2, num_sub_vectors=4, pq_codebook=codebook[:2], replace=True)


def test_seed_makes_builds_reproducible_and_progress_is_reported(small, tmp_path):
    path, _ = small
    other = str(tmp_path / "copy.lance")
    shutil.copytree(path, other)
    seen = []
    for p in (path, other):
        lancepy.dataset(p).create_index("emb", "IVF_PQ", num_partitions=4, num_sub_vectors=2, seed=11,
                                        progress_callback=seen.append)
    a = lance.dataset(path).stats.index_stats("emb_idx")["indices"][0]
    b = lance.dataset(other).stats.index_stats("emb_idx")["indices"][0]
    assert a["centroids"] == b["centroids"] and a["partitions"] == b["partitions"]
    stages = [s.stage for s in seen]
    for stage in ("sample", "train_ivf", "train_pq", "encode", "write", "commit"):
        assert stage in stages
    encode = [s for s in seen if s.stage == "encode"]
    assert encode[-1].completed == encode[-1].total == 3000


def test_default_partitions_follow_pylance(tmp_path):
    v = clustered(9000, 8, 10, seed=1)
    for kind, want in (("IVF_FLAT", 2), ("IVF_PQ", 1)):
        path = str(tmp_path / f"{kind}.lance")
        lancepy.write_dataset(table_of(v), path)
        kw = {"num_sub_vectors": 2} if kind == "IVF_PQ" else {}
        lancepy.dataset(path).create_index("emb", kind, **kw)
        assert lance.dataset(path).stats.index_stats("emb_idx")["indices"][0]["num_partitions"] == want
    lancepy.dataset(path).create_index("emb", "IVF_FLAT", target_partition_size=1000, replace=True)
    assert lance.dataset(path).stats.index_stats("emb_idx")["indices"][0]["num_partitions"] == 9


def test_bad_arguments_leave_the_dataset_alone(small):
    path, _ = small
    ds = lancepy.dataset(path)
    v = ds.version
    with pytest.raises(KeyError):
        ds.create_index("nope", "IVF_FLAT")
    with pytest.raises(TypeError):
        ds.create_index("id", "IVF_FLAT")
    with pytest.raises(InvalidArgumentError, match="num_sub_vectors"):
        ds.create_index("emb", "IVF_PQ", num_partitions=2)
    with pytest.raises(InvalidArgumentError, match="divisible"):
        ds.create_index("emb", "IVF_PQ", num_partitions=2, num_sub_vectors=5)
    with pytest.raises(InvalidArgumentError, match="partitions"):
        ds.create_index("emb", "IVF_FLAT", num_partitions=5000)
    with pytest.raises(ValueError, match="Metric"):
        ds.create_index("emb", "IVF_FLAT", metric="manhattan")
    for kw in ({"accelerator": "cuda"}, {"shuffle_partition_batches": 10}, {"train": False}, {"num_bits": 4},
               {"streaming_sample_rate": 4}, {"precomputed_partition_dataset": "x"}):
        with pytest.raises(NotSupportedError, match=next(iter(kw))):
            ds.create_index("emb", "IVF_FLAT", num_partitions=2, **kw)
    with pytest.raises(NotSupportedError):
        ds.create_index(["emb", "id"], "IVF_FLAT")
    # (float16 / float64 vectors are indexed: tests/test_vector_index_f16.py)
    with pytest.raises(InvalidArgumentError, match="256"):
        small_ds = lancepy.write_dataset(table_of(np.ones((100, 4), np.float32)), path + "2")
        small_ds.create_index("emb", "IVF_PQ", num_partitions=1, num_sub_vectors=2)
    assert lancepy.dataset(path).version == v and not lancepy.dataset(path).has_index
    assert lance.dataset(path).list_indices() == []


def test_cpu_accelerator_and_one_pass_build_the_same_index(tmp_path):
    """accelerator='cpu' (a string or torch.device) is where lancepy trains anyway and
    one_pass_ivfpq is how it builds: the same index as without them (same seed); malformed
    device names are ValueErrors, as in pylance."""
    import torch

    rng = np.random.default_rng(8)
    t = pa.table({"vector": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(2000 * 16, dtype=np.float32)), 16)})
    results = []
    q = rng.random(16)
    for kw in ({}, {"accelerator": "cpu"}, {"accelerator": torch.device("cpu"), "one_pass_ivfpq": True}):
        uri = str(tmp_path / f"d{len(results)}")
        ds = lancepy.write_dataset(t, uri)
        ds.create_index("vector", "IVF_PQ", num_partitions=4, num_sub_vectors=4, seed=3, **kw)
        results.append(lancepy.dataset(uri).to_table(nearest={"column": "vector", "q": q, "k": 20}, columns=[]))
    assert results[0].equals(results[1]) and results[0].equals(results[2])
    for bad in ("no-supported", "0cuda", "cuda-0", "cuda:", "cuda:abc"):
        with pytest.raises(ValueError):
            lancepy.dataset(uri).create_index("vector", "IVF_PQ", num_partitions=4, num_sub_vectors=4, accelerator=bad, replace=True)
    with pytest.raises(NotSupportedError, match="trains on the CPU"):
        lancepy.dataset(uri).create_index("vector", "IVF_PQ", num_partitions=4, num_sub_vectors=4, accelerator="cuda:0", replace=True)


def test_given_codebook_as_tensor_array_equals_numpy(tmp_path):
    rng = np.random.default_rng(9)
    t = pa.table({"vector": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(1024 * 32, dtype=np.float32)), 32)})
    book = rng.standard_normal((4, 256, 8)).astype(np.float32)
    cents = rng.standard_normal((2, 32)).astype(np.float32)
    q = rng.random(32)
    out = []
    for i, cb in enumerate((book, pa.FixedShapeTensorArray.from_numpy_ndarray(book))):
        uri = str(tmp_path / f"d{i}")
        lancepy.write_dataset(t, uri).create_index("vector", "IVF_PQ", num_partitions=2, num_sub_vectors=4,
                                                   ivf_centroids=cents, pq_codebook=cb)
        out.append(lancepy.dataset(uri).to_table(nearest={"column": "vector", "q": q, "k": 10}, columns=[]))
    assert out[0].equals(out[1])
    with pytest.raises(InvalidArgumentError, match="pq_codebook"):
        lancepy.dataset(uri).create_index("vector", "IVF_PQ", num_partitions=2, num_sub_vectors=4, replace=True,
                                          pq_codebook=np.zeros((4, 256, 7), np.float32))
