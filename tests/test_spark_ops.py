"""lancepy.spark's distributed operations (add_columns, merge_insert) against a real local
Spark: each result equal to the local operation's on a copy of the same dataset, pylance
reading it, and no file of a job left over (retried tasks, refused commits).

Master ``local[2,4]`` (tests/spark_session.py): a task may fail and be retried.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancepy
from lancepy._table import commit as _commit
from lancepy.exceptions import (
    ColumnNotFoundError,
    CommitConflictError,
    InvalidArgumentError,
    UnsupportedError,
)

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark", reason="pyspark is installed by scripts/setup.sh")
import lancepy.spark as lspark  # noqa: E402  (after the pyspark check)


@pytest.fixture(scope="module")
def spark():
    from spark_session import local_session

    return local_session()  # (getOrCreate: the session the other Spark test files use)


def _data_files(uri) -> set:
    d = Path(uri) / "data"
    return {p.name for p in d.iterdir()} if d.exists() else set()


def _referenced_files(uri) -> set:
    """Data files named by any committed version."""
    store = lancepy._lancepy.Store(str(uri))
    versions, _ = _commit.list_versions(store)
    out = set()
    for v in versions:
        for f in _commit.load_manifest(store, v).manifest.get("fragments", []):
            out |= {d["path"] for d in f.get("files", [])}
    return out


def _deletion_files(uri) -> set:
    d = Path(uri) / "_deletions"
    return {p.name for p in d.iterdir()} if d.exists() else set()


def _generated(path, seed: int, writer=None, stable: bool = False) -> str:
    """A dataset of a few fragments of random sizes, some rows deleted (seeded); with stable
    row ids if `stable`."""
    rng = np.random.default_rng(seed)
    writer = writer or lancepy
    n = int(rng.integers(20, 200))
    ids = rng.permutation(n * 3)[:n].astype(np.int64)
    t = pa.table({
        "id": ids,
        "x": pa.array(rng.normal(size=n), mask=rng.random(n) < 0.1),
        "s": pa.array([None if rng.random() < 0.1 else f"s{int(v)}" for v in rng.integers(0, 50, n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.normal(size=n * 4).astype(np.float32)), 4),
    })
    uri = str(path)
    writer.write_dataset(t, uri, max_rows_per_file=int(rng.integers(10, 80)), enable_stable_row_ids=stable)
    if rng.random() < 0.7:
        lancepy.dataset(uri).delete(f"id % {int(rng.integers(3, 9))} = 0")
    return uri


def _copy(uri: str, to) -> str:
    shutil.copytree(uri, to)
    return str(to)


def _make_udf():
    """The backfill function of these tests (made here, so it is pickled by value: Spark's
    workers need not import this test module)."""

    def udf(batch: pa.RecordBatch) -> pa.RecordBatch:
        x = pc.fill_null(batch.column("x"), 0.0)
        return pa.RecordBatch.from_arrays(
            [pc.add(pc.multiply(x, 2.0), batch.column("id").cast(pa.float64())), pc.utf8_upper(batch.column("s"))],
            names=["y", "su"],
        )

    return udf


@pytest.mark.parametrize("seed", range(6))
def test_add_columns_on_spark_equals_local_add_columns(spark, tmp_path, pylance, seed):
    a = _generated(tmp_path / "local.lance", seed)
    b = _copy(a, tmp_path / "spark.lance")
    rng = np.random.default_rng(100 + seed)
    batch_size = int(rng.integers(1, 64))
    if seed % 2:
        transforms, kw = {"y": "x * 2 + id", "t": "upper(s)", "big": "id > 100"}, {}
    elif seed == 4:  # a batch_udf (its results checked against its output schema in the tasks)
        from lancepy.udf import batch_udf

        out = pa.schema([("y", pa.float64()), ("su", pa.string())])
        transforms, kw = batch_udf(output_schema=out)(_make_udf()), {"read_columns": ["id", "x", "s"]}
    else:
        transforms, kw = _make_udf(), {"read_columns": ["id", "x", "s"]}
    lancepy.dataset(a).add_columns(transforms, batch_size=batch_size, **kw)
    version = lspark.add_columns(spark, b, transforms, batch_size=batch_size, **kw)
    da, db = lancepy.dataset(a), lancepy.dataset(b)
    assert version == db.version == da.version
    assert db.schema == da.schema
    assert db.to_table().equals(da.to_table())
    assert [len(f.data_files()) for f in db.get_fragments()] == [len(f.data_files()) for f in da.get_fragments()]
    # with the deleted rows too: the new files line up with the fragments' physical rows
    assert db.to_table(columns=list(db.schema.names)[-1:], with_row_address=True).equals(
        da.to_table(columns=list(da.schema.names)[-1:], with_row_address=True)
    )
    assert pylance.dataset(b).to_table().equals(da.to_table())
    assert _data_files(b) == _referenced_files(b)


def test_add_columns_on_a_pylance_dataset_equals_pylance_add_columns(spark, tmp_path, pylance):
    a = _generated(tmp_path / "pylance.lance", 7, writer=pylance)
    b = _copy(a, tmp_path / "spark.lance")
    pylance.dataset(a).add_columns({"y": "x * 2 + id", "h": "id % 5"})
    lspark.add_columns(spark, b, {"y": "x * 2 + id", "h": "id % 5"})
    assert pylance.dataset(b).to_table().equals(pylance.dataset(a).to_table())
    assert lancepy.dataset(b).to_table().equals(pylance.dataset(a).to_table())


def test_a_retried_backfill_task_leaves_one_file_per_fragment(spark, tmp_path):
    """Each task's first attempt fails after writing its fragment's file: Spark retries it;
    the commit keeps one file per fragment and the failed attempts' files are gone."""
    uri = _generated(tmp_path / "retry.lance", 3)
    want = lancepy.dataset(_copy(uri, tmp_path / "local.lance"))
    compute = _make_udf()
    want.add_columns(compute, read_columns=["id", "x", "s"])
    failed = tmp_path / "failed-attempts"
    failed.mkdir()

    def udf(batch):
        # (runs in Spark's Python worker: the patch lives only until the file is written)
        from pyspark import TaskContext

        from lancepy._ops import evolution as ev

        real = getattr(ev, "_unpatched_new_columns_file", ev.new_columns_file)
        ev._unpatched_new_columns_file = real

        def write_then_fail(*args, **kwargs):
            ev.new_columns_file = real
            made = real(*args, **kwargs)
            if TaskContext.get().attemptNumber() == 0:
                (failed / made["path"]).touch()
                raise RuntimeError("injected failure after the file was written")
            return made

        ev.new_columns_file = write_then_fail
        return compute(batch)

    lspark.add_columns(spark, uri, udf, read_columns=["id", "x", "s"])
    got = lancepy.dataset(uri)
    assert got.to_table().equals(want.to_table())
    assert _data_files(uri) == _referenced_files(uri)
    assert all(len(f.data_files()) == 2 for f in got.get_fragments())
    orphans = {p.name for p in failed.iterdir()}
    assert len(orphans) == len(got.get_fragments()) and not orphans & _data_files(uri)


def test_a_conflicting_commit_refuses_the_backfill_and_leaves_nothing(spark, tmp_path):
    uri = _generated(tmp_path / "conflict.lance", 4)
    before = lancepy.dataset(uri).version
    marker = tmp_path / "deleted-once"

    def udf(batch):
        import os

        try:  # another writer commits while the job runs, once (O_EXCL: tasks run side by side)
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            pass
        else:
            lancepy.dataset(uri).delete("id = 1 OR id >= 0")
        return pa.RecordBatch.from_arrays([pc.multiply(batch.column("id"), 2)], names=["twice"])

    with pytest.raises(CommitConflictError, match="nothing was committed|Nothing was committed"):
        lspark.add_columns(spark, uri, udf, read_columns=["id"])
    ds = lancepy.dataset(uri)
    assert ds.version == before + 1 and "twice" not in ds.schema.names
    assert _data_files(uri) == _referenced_files(uri)


def test_add_columns_refusals(spark, tmp_path):
    uri = _generated(tmp_path / "refuse.lance", 5)
    version = lancepy.dataset(uri).version
    with pytest.raises(UnsupportedError, match="precomputed"):
        lspark.add_columns(spark, uri, pa.table({"z": [1]}))
    with pytest.raises(UnsupportedError, match="reader_schema"):
        lspark.add_columns(spark, uri, _make_udf(), reader_schema=pa.schema([("z", pa.int64())]))
    with pytest.raises(ColumnNotFoundError):
        lspark.add_columns(spark, uri, _make_udf(), read_columns=["nope"])
    from lancepy.udf import batch_udf

    with pytest.raises(UnsupportedError, match="checkpoint"):
        lspark.add_columns(spark, uri, batch_udf(checkpoint_file=str(tmp_path / "ck.sqlite"))(_make_udf()))
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        lspark.add_columns(spark, uri, _make_udf(), batch_size=0)
    with pytest.raises(InvalidArgumentError, match="already exist"):
        lspark.add_columns(spark, uri, {"x": "id + 1"})
    # found by the tasks: a function returning the wrong number of rows
    with pytest.raises(InvalidArgumentError, match="rows for a batch"):
        lspark.add_columns(spark, uri, lambda b: pa.table({"z": range(b.num_rows + 1)}), read_columns=["id"])
    assert lancepy.dataset(uri).version == version
    assert _data_files(uri) == _referenced_files(uri)
    # all-null columns: metadata only, committed by the driver
    lspark.add_columns(spark, uri, pa.field("n", pa.int32()))
    assert lancepy.dataset(uri).to_table(columns=["n"]).column(0).null_count == lancepy.dataset(uri).count_rows()


# -- merge_insert --------------------------------------------------------------------------

_CLAUSES = [
    {"when_matched_update_all": True, "when_not_matched_insert_all": True},
    {"when_matched_update_all": True},
    {"when_not_matched_insert_all": True},
    {"when_matched_update_all": True, "when_not_matched_insert_all": True, "when_not_matched_by_source_delete": True},
    {"when_matched_update_all": "source.x > target.x", "when_not_matched_insert_all": True},
    {"when_not_matched_by_source_delete": "id % 2 = 0", "when_not_matched_insert_all": True},
    {"when_matched_delete": True, "when_not_matched_insert_all": True},
    {"when_matched_update_all": True, "when_not_matched_by_source_delete": True},
]


def _apply_locally(ds, on, clauses, source: pa.Table):
    b = ds.merge_insert(on)
    if clauses.get("when_matched_update_all"):
        c = clauses["when_matched_update_all"]
        b.when_matched_update_all(None if c is True else c)
    if clauses.get("when_matched_delete"):
        b.when_matched_delete()
    if clauses.get("when_not_matched_insert_all"):
        b.when_not_matched_insert_all()
    if clauses.get("when_not_matched_by_source_delete"):
        c = clauses["when_not_matched_by_source_delete"]
        b.when_not_matched_by_source_delete(None if c is True else c)
    return b.execute(source)


def _source(ds, seed: int, columns=None) -> pa.Table:
    """Some of the dataset's live keys and some new ones (no key twice), random values."""
    rng = np.random.default_rng(1000 + seed)
    live = ds.to_table(columns=["id"]).column("id").to_numpy()
    old = rng.choice(live, size=min(len(live), int(rng.integers(0, len(live) + 1))), replace=False) if len(live) else []
    new = np.arange(10_000, 10_000 + int(rng.integers(1, 60)))
    ids = rng.permutation(np.concatenate([np.asarray(old, np.int64), new]).astype(np.int64))
    n = len(ids)
    t = pa.table({
        "id": ids,
        "x": pa.array(rng.normal(size=n), mask=rng.random(n) < 0.1),
        "s": pa.array([f"new{int(v)}" for v in rng.integers(0, 9, n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.normal(size=n * 4).astype(np.float32)), 4),
    })
    return t.select(columns) if columns else t


def _to_spark(spark, t: pa.Table):
    """`t` as a Spark DataFrame (vectors as Spark arrays, as a Spark job holds them)."""
    cols = [c.cast(pa.list_(pa.float32())) if pa.types.is_fixed_size_list(c.type) else c for c in t.columns]
    return spark.createDataFrame(pa.Table.from_arrays(cols, names=t.column_names).to_pandas())


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


@pytest.mark.parametrize("seed", range(len(_CLAUSES)))
def test_merge_insert_on_spark_equals_local_merge_insert(spark, tmp_path, pylance, seed):
    a = _generated(tmp_path / "local.lance", 20 + seed, writer=pylance if seed == 3 else None)
    b = _copy(a, tmp_path / "spark.lance")
    clauses = _CLAUSES[seed]
    # a partial source: matched rows keep their other columns, inserted rows get nulls
    columns = ["id", "x"] if seed == 0 else None
    source = _source(lancepy.dataset(a), seed, columns)
    want = _apply_locally(lancepy.dataset(a), "id", clauses, source)
    got = lspark.merge_insert(_to_spark(spark, source), b, "id", num_partitions=1 + seed % 4, **clauses)
    assert got == want
    da, db = lancepy.dataset(a), lancepy.dataset(b)
    assert db.version == da.version
    assert _sorted(db.to_table()).equals(_sorted(da.to_table()))
    assert _sorted(pylance.dataset(b).to_table()).equals(_sorted(da.to_table()))
    assert _data_files(b) == _referenced_files(b)


def test_merge_insert_on_spark_keeps_stable_row_ids(spark, tmp_path, pylance):
    """With stable row ids, updated rows keep their ids and inserted ones get the next ones,
    as in the local merge (and pylance's)."""
    a = _generated(tmp_path / "local.lance", 41, stable=True)
    b = _copy(a, tmp_path / "spark.lance")
    clauses = {"when_matched_update_all": True, "when_not_matched_insert_all": True}
    source = _source(lancepy.dataset(a), 41)
    want = _apply_locally(lancepy.dataset(a), "id", clauses, source)
    assert want["num_updated_rows"] > 0 and want["num_inserted_rows"] > 0
    assert lspark.merge_insert(_to_spark(spark, source), b, "id", num_partitions=3, **clauses) == want
    before = lancepy.dataset(a, version=1).to_table(columns=["id"], with_row_id=True)
    old = dict(zip(before.column("id").to_pylist(), before.column("_rowid").to_pylist()))
    local, distributed = (lancepy.dataset(u).to_table(with_row_id=True).sort_by("id") for u in (a, b))
    assert distributed.drop_columns(["_rowid"]).equals(local.drop_columns(["_rowid"]))
    got = dict(zip(distributed.column("id").to_pylist(), distributed.column("_rowid").to_pylist()))
    assert {k: v for k, v in got.items() if k in old} == {k: old[k] for k in got if k in old}  # kept
    new = sorted(v for k, v in got.items() if k not in old)  # (the buckets' order numbers them)
    assert new == sorted(v for k, v in zip(local.column("id").to_pylist(), local.column("_rowid").to_pylist())
                         if k not in old)
    assert pylance.dataset(b).to_table(with_row_id=True).sort_by("id").equals(distributed)
    # Each row was created and last updated in the same versions as by the local merge.
    lineage = ["id", "_row_created_at_version", "_row_last_updated_at_version"]
    want_versions = lancepy.dataset(a).to_table(columns=lineage).sort_by("id")
    assert lancepy.dataset(b).to_table(columns=lineage).sort_by("id").equals(want_versions)
    assert pylance.dataset(b).to_table(columns=lineage).sort_by("id").equals(want_versions)
    assert len(set(want_versions.column("_row_last_updated_at_version").to_pylist())) == 2


def test_merge_insert_refusals_leave_nothing(spark, tmp_path):
    uri = _generated(tmp_path / "refuse.lance", 30)
    ds = lancepy.dataset(uri)
    version = ds.version
    source = _source(ds, 30)
    with pytest.raises(InvalidArgumentError, match="does nothing"):
        lspark.merge_insert(_to_spark(spark, source), uri, "id")
    with pytest.raises(InvalidArgumentError, match="not a column"):
        lspark.merge_insert(_to_spark(spark, source), uri, "nope", when_not_matched_insert_all=True)
    live = ds.to_table(columns=["id"]).column("id")[0].as_py()
    two = source.slice(0, 2)
    two = two.set_column(0, "id", pa.array([live, live], two.schema.field("id").type))
    dup = pa.concat_tables([source.filter(pc.not_equal(source.column("id"), live)), two])
    with pytest.raises(InvalidArgumentError, match="Ambiguous merge inserts are prohibited"):
        lspark.merge_insert(_to_spark(spark, dup), uri, "id", when_matched_update_all=True,
                            when_not_matched_insert_all=True)
    with pytest.raises(InvalidArgumentError, match="matches a dataset row"):
        lspark.merge_insert(_to_spark(spark, source.slice(0, 5)), uri, "id", when_matched_fail=True,
                            when_not_matched_insert_all=True)
    from lancepy.exceptions import SchemaMismatchError

    with pytest.raises(SchemaMismatchError, match="no \\['extra'\\]"):
        lspark.merge_insert(_to_spark(spark, source.append_column("extra", pa.array([1] * source.num_rows))),
                            uri, "id", when_not_matched_insert_all=True)
    assert lancepy.dataset(uri).version == version
    assert _data_files(uri) == _referenced_files(uri)


def test_a_conflicting_commit_refuses_the_merge_and_leaves_nothing(spark, tmp_path):
    uri = _generated(tmp_path / "conflict.lance", 31)
    source = _source(lancepy.dataset(uri), 31)
    before = lancepy.dataset(uri).version
    deletions = _deletion_files(uri)
    # pin the version the job reads, then let another writer delete everything first
    import lancepy.spark.merge as lmerge

    real = lmerge._commit

    def commit_after_a_concurrent_delete(ds, *args):
        lancepy.dataset(uri).delete("id >= 0")
        return real(ds, *args)

    lmerge._commit = commit_after_a_concurrent_delete
    try:
        with pytest.raises(CommitConflictError, match="Nothing was committed"):
            lspark.merge_insert(_to_spark(spark, source), uri, "id", when_matched_update_all=True,
                                when_not_matched_insert_all=True)
    finally:
        lmerge._commit = real
    assert lancepy.dataset(uri).version == before + 1
    assert _data_files(uri) == _referenced_files(uri)
    assert _deletion_files(uri) == deletions  # (the whole-fragment delete wrote none)


def test_a_retried_merge_task_leaves_no_orphan(spark, tmp_path, monkeypatch):
    """Each bucket's first attempt fails after writing its new fragments: Spark retries it;
    the commit keeps one attempt's files and the failed attempts' files are gone."""
    import lancepy.spark.merge as lmerge

    a = _generated(tmp_path / "local.lance", 40)
    b = _copy(a, tmp_path / "spark.lance")
    source = _source(lancepy.dataset(a), 40)
    clauses = {"when_matched_update_all": True, "when_not_matched_insert_all": True}
    want = _apply_locally(lancepy.dataset(a), "id", clauses, source)
    failed = tmp_path / "failed-attempts"
    failed.mkdir()
    real = lmerge._bucket_task

    def failing_first_attempts(*args):
        run = real(*args)

        def wrapped(key, src, tgt):
            import json as _json

            from pyspark import TaskContext

            out = run(key, src, tgt)
            if TaskContext.get().attemptNumber() == 0:
                for f in _json.loads(out.column("result")[0].as_py())["fragments"]:
                    for d in f["files"]:
                        (failed / d["path"]).touch()
                raise RuntimeError("injected failure after the files were written")
            return out

        return wrapped

    monkeypatch.setattr(lmerge, "_bucket_task", failing_first_attempts)
    got = lspark.merge_insert(_to_spark(spark, source), b, "id", num_partitions=3, **clauses)
    assert got == want
    assert _sorted(lancepy.dataset(b).to_table()).equals(_sorted(lancepy.dataset(a).to_table()))
    orphans = {p.name for p in failed.iterdir()}
    assert orphans and not orphans & _data_files(b)
    assert _data_files(b) == _referenced_files(b)


# -- create_index --------------------------------------------------------------------------


def _vectors(path, seed: int, n: int = 3000, dim: int = 16) -> str:
    rng = np.random.default_rng(seed)
    t = pa.table({
        "id": np.arange(n, dtype=np.int64),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.normal(size=n * dim).astype(np.float32)), dim),
    })
    uri = str(path)
    lancepy.write_dataset(t, uri, max_rows_per_file=int(rng.integers(300, 900)))
    lancepy.dataset(uri).delete("id % 11 = 3")
    return uri


def _segments(uri) -> set:
    """Index segment directories holding files (deleting a segment's files may leave its
    empty directory on a local file system, as object stores have no directories)."""
    d = Path(uri) / "_indices"
    return {p.name for p in d.iterdir() if any(p.iterdir())} if d.exists() else set()


@pytest.mark.parametrize(
    "kind,kw",
    [
        ("IVF_PQ", {"num_partitions": 8, "num_sub_vectors": 4}),
        ("IVF_FLAT", {"num_partitions": 6, "metric": "cosine"}),
        ("IVF_SQ", {"num_partitions": 4}),
    ],
)
def test_create_index_on_spark_searches_as_the_local_index(spark, tmp_path, pylance, kind, kw):
    """Trained on the driver with a seed, one segment per task; the local build given the
    same training (the seed) finds the same rows at the same distances, in lancepy and in
    pylance, which searches the segments as one index."""
    a = _vectors(tmp_path / "local.lance", len(kind))
    b = _copy(a, tmp_path / "spark.lance")
    lancepy.dataset(a).create_index("v", kind, seed=7, **kw)
    version = lspark.create_index(spark, b, "v", kind, seed=7, num_segments=3, **kw)
    db = lancepy.dataset(b)
    assert version == db.version
    [desc] = pylance.dataset(b).describe_indices()
    assert len(desc.segments) == 3 and desc.num_rows_indexed == lancepy.dataset(a).count_rows()
    # the segments cover every fragment once, and are the only index files
    covered = sorted(f for seg in desc.segments for f in seg.fragment_ids)
    assert covered == sorted(f.fragment_id for f in db.get_fragments())
    assert _segments(b) == {str(seg.uuid) for seg in desc.segments}
    rng = np.random.default_rng(99)
    for _ in range(5):
        q = rng.normal(size=16).astype(np.float32)
        for nprobes in (1, 3):
            near = {"column": "v", "q": q, "k": 10, "nprobes": nprobes}
            want = lancepy.dataset(a).to_table(columns=["id"], nearest=near)
            got = lancepy.dataset(b).to_table(columns=["id"], nearest=near)
            ref = pylance.dataset(b).to_table(columns=["id"], nearest=near)
            assert got.column("id").to_pylist() == want.column("id").to_pylist()
            assert ref.column("id").to_pylist() == want.column("id").to_pylist()
            np.testing.assert_allclose(ref.column("_distance").to_numpy(), want.column("_distance").to_numpy(), rtol=1e-5)
    plan = pylance.dataset(b).scanner(nearest={"column": "v", "q": q, "k": 10}).explain_plan()
    assert "ANNSubIndex" in plan and "deltas=3" in plan


def test_a_retried_index_task_leaves_no_orphan_segment(spark, tmp_path, monkeypatch, pylance):
    import lancepy.spark.index as lindex

    uri = _vectors(tmp_path / "retry.lance", 11)
    failed = tmp_path / "failed-attempts"
    failed.mkdir()
    real = lindex._task

    def failing_first_attempts(*args):
        run = real(*args)

        def wrapped(batches):
            from pyspark import TaskContext

            for out in run(batches):
                if TaskContext.get().attemptNumber() == 0:
                    import json as _json
                    import uuid as _uuid

                    entry = _json.loads(out.column("result")[0].as_py())
                    (failed / str(_uuid.UUID(bytes=bytes(entry["uuid"]["uuid"])))).touch()
                    raise RuntimeError("injected failure after the segment was written")
                yield out

        return wrapped

    monkeypatch.setattr(lindex, "_task", failing_first_attempts)
    lspark.create_index(spark, uri, "v", "IVF_PQ", num_partitions=4, num_sub_vectors=4, num_segments=2, seed=1)
    orphans = {p.name for p in failed.iterdir()}
    assert len(orphans) == 2
    kept = _segments(uri)
    assert len(kept) == 2 and not orphans & kept
    [desc] = pylance.dataset(uri).describe_indices()
    assert {str(seg.uuid) for seg in desc.segments} == kept


def test_create_index_refusals_leave_nothing(spark, tmp_path):
    from lancepy.exceptions import NotSupportedError

    uri = _vectors(tmp_path / "refuse.lance", 12)
    version = lancepy.dataset(uri).version
    with pytest.raises(NotSupportedError, match="fragment_ids"):
        lspark.create_index(spark, uri, "v", "IVF_PQ", num_partitions=4, num_sub_vectors=4, fragment_ids=[0])
    with pytest.raises(InvalidArgumentError, match="num_sub_vectors"):
        lspark.create_index(spark, uri, "v", "IVF_PQ", num_partitions=4)
    with pytest.raises(InvalidArgumentError, match="unexpected keyword"):
        lspark.create_index(spark, uri, "v", "IVF_PQ", num_partitions=4, num_sub_vectors=4, bogus=1)
    with pytest.raises(NotSupportedError):
        lspark.create_index(spark, uri, "v", "HNSW")
    with pytest.raises(InvalidArgumentError, match="num_segments"):
        lspark.create_index(spark, uri, "v", "IVF_FLAT", num_partitions=4, num_segments=0)
    assert lancepy.dataset(uri).version == version and not _segments(uri)
