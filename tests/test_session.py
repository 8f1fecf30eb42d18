"""Sessions (index and metadata caches), commit locks and detached commits, against pylance 14."""

from __future__ import annotations

import contextlib
import os
import warnings

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import CommitConflictError, InvalidArgumentError, NotSupportedError

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")

pytestmark = pytest.mark.interop


def _vectors(n: int = 1024, dim: int = 16, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    values = pa.array(rng.standard_normal(n * dim).astype(np.float32))
    return pa.table({"vector": pa.FixedSizeListArray.from_arrays(values, dim), "id": pa.array(range(n), pa.int64())})


# -- the metadata cache ---------------------------------------------------------------------


def test_session_sizes_follow_the_budget(tmp_path):
    path = str(tmp_path / "m.lance")
    lancepy.write_dataset(pa.table({"id": [1, 2, 3]}), path)
    full = lancepy.dataset(path)
    full.to_table()
    assert full.session().size_bytes() > 0
    empty = lancepy.dataset(path, metadata_cache_size_bytes=0)
    empty.to_table()
    assert empty.session().size_bytes() == 0 < full.session().size_bytes()
    assert not full.session().is_same_as(lancepy.dataset(path).session())  # a new session per open, as pylance
    assert full.checkout_version(1).session().is_same_as(full.session())
    ref = lance.dataset(path)
    ref.to_table()
    assert ref.session().size_bytes() > lance.dataset(path, metadata_cache_size_bytes=0).session().size_bytes()


def test_a_shared_session_serves_manifests_it_holds(tmp_path):
    path = str(tmp_path / "s.lance")
    for i in range(3):
        lancepy.write_dataset(pa.table({"id": [i]}), path, mode="append")
    session = lancepy.Session()
    opened = [lancepy.dataset(path, version=v, session=session) for v in (1, 2, 3)]
    size = session.size_bytes()
    hits = session._metadata.hits
    again = lancepy.dataset(path, version=2, session=session)
    assert session._metadata.hits == hits + 1 and session.size_bytes() == size
    assert again.to_table() == opened[1].to_table() == lance.dataset(path, version=2).to_table()
    assert again.checkout_version(3).to_table() == lance.dataset(path, version=3).to_table()
    with pytest.raises(InvalidArgumentError):
        lancepy.dataset(path, session=session, metadata_cache_size_bytes=0)
    with pytest.raises(InvalidArgumentError):
        lancepy.dataset(path, session=object())
    with pytest.raises(NotSupportedError, match="metadata_cache_backend"):
        lancepy.Session(metadata_cache_backend={"kind": "moka"})


def test_a_session_never_serves_a_manifest_that_is_gone_or_replaced(tmp_path):
    """A dataset deleted and written again at the same URI, or a version removed by a cleanup,
    is read afresh: the session's manifests are checked against their files."""
    import shutil

    path = str(tmp_path / "r.lance")
    lancepy.write_dataset(pa.table({"id": [1, 2, 3]}), path)
    session = lancepy.Session()
    first = lancepy.dataset(path, version=1, session=session)
    assert first.to_table().column("id").to_pylist() == [1, 2, 3]
    shutil.rmtree(path)
    lancepy.write_dataset(pa.table({"id": [7, 8, 9]}), path)  # version 1 again, other rows
    again = lancepy.dataset(path, version=1, session=session)
    assert again.to_table().column("id").to_pylist() == [7, 8, 9] == lance.dataset(path, version=1).to_table().column("id").to_pylist()
    # A version a cleanup removed is not opened from the cache.
    ds = lancepy.write_dataset(pa.table({"id": [10]}), path, mode="append")
    lancepy.dataset(path, version=1, session=session)
    ds.cleanup_old_versions(older_than=__import__("datetime").timedelta(0))
    with pytest.raises(Exception) as err:
        lancepy.dataset(path, version=1, session=session).to_table()
    assert "1" in str(err.value)


# -- the index cache ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["IVF_PQ", "IVF_FLAT", "IVF_SQ"])
def test_index_cache_hits_and_results(tmp_path, kind):
    path = str(tmp_path / "v.lance")
    lancepy.write_dataset(_vectors(), path)
    params = {"num_sub_vectors": 2} if kind == "IVF_PQ" else {}
    lancepy.dataset(path).create_index("vector", index_type=kind, num_partitions=32, seed=1, **params)
    rng = np.random.default_rng(3)
    queries = [rng.standard_normal(16).astype(np.float32) for _ in range(6)]

    def search(ds, q):
        return ds.to_table(nearest={"column": "vector", "q": q, "k": 5, "nprobes": 4}, columns=["id"])

    cold = lancepy.dataset(path, index_cache_size_bytes=0)
    warm = lancepy.dataset(path)
    ref = lance.dataset(path)
    for q in queries:
        assert search(cold, q) == search(warm, q)
        assert search(warm, q).column("id").to_pylist() == search(ref, q).column("id").to_pylist()
    assert cold._ds.index_cache_hit_rate() == 0.0 and cold._ds.index_cache_entry_count() == 0
    assert cold.session().index_cache_size_bytes() == 0
    # the model and the probed partitions are cached; repeating a query reads nothing new
    entries = warm._ds.index_cache_entry_count()
    assert 1 < entries <= 1 + 32
    assert warm.session().index_cache_size_bytes() > 0
    before = warm._ds.index_cache_hit_rate()
    for _ in range(20):
        search(warm, queries[0])
    assert warm._ds.index_cache_entry_count() == entries
    assert warm._ds.index_cache_hit_rate() > before


def test_index_cache_budget_evicts(tmp_path):
    path = str(tmp_path / "b.lance")
    lancepy.write_dataset(_vectors(), path)
    lancepy.dataset(path).create_index("vector", index_type="IVF_FLAT", num_partitions=16, seed=1)
    big = lancepy.dataset(path)
    for q in np.random.default_rng(5).standard_normal((8, 16)).astype(np.float32):
        big.to_table(nearest={"column": "vector", "q": q, "k": 3, "nprobes": 16})
    full = big.session().index_cache_size_bytes()
    budget = full // 3
    small = lancepy.dataset(path, index_cache_size_bytes=budget)
    for q in np.random.default_rng(5).standard_normal((8, 16)).astype(np.float32):
        small.to_table(nearest={"column": "vector", "q": q, "k": 3, "nprobes": 16})
        assert 0 < small.session().index_cache_size_bytes() <= budget


def test_index_cache_size_is_deprecated_as_in_pylance(tmp_path):
    path = str(tmp_path / "d.lance")
    lancepy.write_dataset(_vectors(64), path)
    for lib in (lancepy, lance):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            lib.dataset(path, index_cache_size=2)
        assert [w.category for w in got] == [DeprecationWarning]
        assert "index_cache_size_bytes" in str(got[0].message)


# -- commit locks ---------------------------------------------------------------------------


def _recording_lock(calls):
    @contextlib.contextmanager
    def lock(version):
        calls.append(("enter", version))
        try:
            yield
        except BaseException as e:
            calls.append(("failed", version, type(e).__name__))
            raise
        calls.append(("exit", version))

    return lock


def test_commit_lock_is_held_around_each_commit_as_pylance(tmp_path):
    seen = {}
    for lib in (lancepy, lance):
        calls = []
        path = str(tmp_path / f"{lib.__name__}.lance")
        lib.write_dataset(pa.table({"a": range(10)}), path, commit_lock=_recording_lock(calls))
        ds = lib.dataset(path, commit_lock=_recording_lock(calls))
        ds.delete("a < 3")
        lib.write_dataset(pa.table({"a": [99]}), path, mode="append", commit_lock=_recording_lock(calls))
        seen[lib.__name__] = (calls, lib.dataset(path).to_table().column("a").to_pylist())
    assert seen["lancepy"] == seen["lance"]
    assert seen["lancepy"][0] == [("enter", 1), ("exit", 1), ("enter", 2), ("exit", 2), ("enter", 3), ("exit", 3)]


def test_commit_lock_errors(tmp_path):
    @contextlib.contextmanager
    def conflict(_version):
        raise CommitConflictError("held elsewhere")
        yield  # pragma: no cover

    @contextlib.contextmanager
    def fails_on_release(_version):
        yield
        raise RuntimeError("hello world!")

    path = str(tmp_path / "l.lance")
    with pytest.raises(CommitConflictError, match="CommitConflictError"):
        lancepy.write_dataset(pa.table({"a": [1]}), path, commit_lock=conflict)
    assert not os.path.exists(os.path.join(path, "_versions")) or not os.listdir(os.path.join(path, "_versions"))
    with pytest.raises(Exception, match="hello world!"):
        lancepy.write_dataset(pa.table({"a": [1]}), path, commit_lock=fails_on_release)
    assert lancepy.dataset(path).version == 1  # (the version was published before the lock failed)
    with pytest.raises(InvalidArgumentError):
        lancepy.write_dataset(pa.table({"a": [1]}), path, mode="append", commit_lock=object())
    ds = lancepy.dataset(path, commit_lock=conflict)
    with pytest.raises(CommitConflictError):
        ds.delete("a = 1", conflict_retries=0)  # (each retry of the delete retries its commit 20 times)
    assert lancepy.dataset(path).count_rows() == 1


# -- detached commits -----------------------------------------------------------------------


@pytest.mark.parametrize("committer", ["lancepy", "pylance"])
def test_detached_commits_are_read_by_both(tmp_path, committer):
    lib = lancepy if committer == "lancepy" else lance
    path = str(tmp_path / "det.lance")
    lib.write_dataset(pa.table({"x": [0]}), path)
    frag = lib.LanceFragment.create(path, pa.table({"x": [1]}))
    detached = lib.LanceDataset.commit(path, lib.LanceOperation.Append([frag]), read_version=1, detached=True)
    v = detached.version
    assert v & 0x8000000000000000
    assert os.path.exists(os.path.join(path, "_versions", f"d{v}.manifest"))
    for reader in (lancepy, lance):
        assert reader.dataset(path).version == 1
        assert reader.dataset(path).to_table() == pa.table({"x": [0]})
        assert reader.dataset(path, version=v).to_table() == pa.table({"x": [0, 1]})
    # attached history goes on; a detached commit on top of the detached version
    lib.write_dataset(pa.table({"x": [2]}), path, mode="append")
    frag = lib.LanceFragment.create(path, pa.table({"x": [3]}))
    d2 = lib.LanceDataset.commit(path, lib.LanceOperation.Append([frag]), read_version=v, detached=True)
    for reader in (lancepy, lance):
        assert reader.dataset(path).to_table() == pa.table({"x": [0, 2]})
        assert reader.dataset(path, version=d2.version).to_table() == pa.table({"x": [0, 1, 3]})
        assert reader.dataset(path).checkout_version(v).to_table() == pa.table({"x": [0, 1]})
    assert lancepy.dataset(path).versions()[-1]["version"] == 2


def test_detached_commits_need_v2_manifest_names(tmp_path):
    path = str(tmp_path / "v1.lance")
    lancepy.write_dataset(pa.table({"x": [0]}), path, enable_v2_manifest_paths=False)
    frag = lancepy.LanceFragment.create(path, pa.table({"x": [1]}))
    with pytest.raises(OSError, match="v1 manifest paths"):
        lancepy.LanceDataset.commit(path, lancepy.LanceOperation.Append([frag]), read_version=1, detached=True)
    assert lancepy.dataset(path).to_table() == pa.table({"x": [0]})


# -- default_scan_options -------------------------------------------------------------------

_OPTIONS = [
    {"with_row_id": True},
    {"with_row_address": True},
    {"with_row_id": True, "with_row_address": True},
    {"columns": ["b"]},
    {"filter": "a > 4"},
    {"batch_size": 3},
]


def _reads(ds):
    return {
        "schema": ds.schema.names,
        "to_table": ds.to_table().to_pydict(),
        "columns": ds.to_table(columns=["a"]).to_pydict(),
        "filter": ds.to_table(filter="a < 3").to_pydict(),
        "batches": [b.num_rows for b in ds.to_batches()],
        "head": ds.head(2).to_pydict(),
        "count": ds.count_rows(),
        "count_filter": ds.count_rows("a > 7"),
        "take": ds.take([1, 0]).to_pydict(),
        "fragment": ds.get_fragments()[0].to_table().to_pydict(),
        "checkout": ds.checkout_version(1).schema.names,
    }


@pytest.mark.parametrize("options", _OPTIONS, ids=[",".join(f"{k}={v}" for k, v in o.items()) for o in _OPTIONS])
def test_default_scan_options_read_as_pylance(tmp_path, options):
    path = str(tmp_path / "o.lance")
    lancepy.write_dataset(pa.table({"a": list(range(10)), "b": [str(i) for i in range(10)]}), path, max_rows_per_file=4)
    assert _reads(lancepy.dataset(path, default_scan_options=options)) == _reads(lance.dataset(path, default_scan_options=options))
    with pytest.raises(InvalidArgumentError, match="no_such_option"):
        lancepy.dataset(path, default_scan_options={"no_such_option": 1})


def test_writes_through_a_dataset_with_default_scan_options_as_pylance(tmp_path):
    """The system columns a view shows are not part of what is written."""
    got = {}
    for lib in (lancepy, lance):
        path = str(tmp_path / f"{lib.__name__}.lance")
        lib.write_dataset(pa.table({"a": list(range(10)), "b": [str(i) for i in range(10)]}), path, max_rows_per_file=4)
        ds = lib.dataset(path, default_scan_options={"with_row_id": True})
        ds.insert(pa.table({"a": [100], "b": ["x"]}))
        lib.write_dataset(pa.table({"a": [101], "b": ["y"]}), ds, mode="append")
        ds.delete("a = 0")
        ds.update({"b": "'z'"}, where="a = 1")
        ds.merge_insert("a").when_matched_update_all().when_not_matched_insert_all().execute(
            pa.table({"a": [2, 200], "b": ["m", "n"]})
        )
        ds.add_columns({"c": "a * 2"})
        ds.create_scalar_index("a", "BTREE")
        ds.optimize.compact_files()
        got[lib.__name__] = (lib.dataset(path).to_table().sort_by("a").to_pydict(), ds.schema.names)
    assert got["lancepy"] == got["lance"]
    assert got["lancepy"][1] == ["a", "b", "c", "_rowid"]
