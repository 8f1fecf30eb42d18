"""The Python data source "lance" (lancepy.spark.register) against a real local Spark.

Needs pyspark 4.1 or later (Python data sources with filter pushdown); skipped on older
ones (scripts/test_pyspark35.sh runs tests/test_spark.py only). Master ``local[2,4]`` as in
tests/test_spark.py: a task may fail and be retried.
"""

from __future__ import annotations

import datetime
import re
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy._table import commit as _commit
from lancepy.exceptions import CommitConflictError, UnsupportedError

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark", reason="pyspark is installed by scripts/setup.sh")
_ds = pytest.importorskip("pyspark.sql.datasource", reason="Python data sources need pyspark 4")
if not hasattr(_ds, "Filter"):
    pytest.skip("filter pushdown of Python data sources needs pyspark 4.1", allow_module_level=True)
import lancepy.spark as lspark  # noqa: E402
from lancepy.spark import datasource as lds  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    from spark_session import local_session

    session = local_session()
    lspark.register(session)
    yield session


def _data_files(uri) -> set:
    d = Path(uri) / "data"
    return {p.name for p in d.iterdir()} if d.exists() else set()


def _referenced_files(uri) -> set:
    store = lancepy._lancepy.Store(str(uri))
    versions, _ = _commit.list_versions(store)
    out = set()
    for v in versions:
        for f in _commit.load_manifest(store, v).manifest.get("fragments", []):
            out |= {d["path"] for d in f.get("files", [])}
    return out


def _table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    nulls = rng.random(n) < 0.1
    return pa.table(
        {
            "id": pa.array(i, pa.int64()),
            "k": pa.array(rng.integers(-5, 6, n), pa.int32(), mask=nulls),
            "s": pa.array([f"{c}{j % 4}" for c, j in zip(rng.choice(list("abc'"), n), i)], mask=rng.random(n) < 0.1),
            "b": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
            "d": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=int(x)) for x in rng.integers(0, 10, n)]),
            "x": pa.array(rng.normal(size=n)),
        }
    )


def _sorted(rows) -> list:
    return sorted((tuple(r) for r in rows), key=repr)


def test_write_then_pylance_and_lancepy_read_and_the_source_reads_back(spark, tmp_path, pylance):
    uri = str(tmp_path / "rt.lance")
    t = _table(500)
    df = spark.createDataFrame(t.to_pandas()).repartition(3)
    df.write.format("lance").mode("append").option("max_rows_per_file", "60").save(uri)
    ds = lancepy.dataset(uri)
    assert ds.version == 1 and ds.count_rows() == 500 and len(ds.get_fragments()) >= 9
    expected = t.sort_by("id")
    got = ds.to_table().sort_by("id")
    assert got.cast(expected.schema).equals(expected)
    ref = pylance.dataset(uri).to_table().sort_by("id")
    assert ref.cast(expected.schema).equals(expected)
    assert _data_files(uri) == _referenced_files(uri)
    # Reading: one partition per fragment, the same rows as lancepy's.
    r = spark.read.format("lance").load(uri)
    assert r.rdd.getNumPartitions() == len(ds.get_fragments())
    assert _sorted(r.collect()) == _sorted(spark.createDataFrame(got.to_pandas()).collect())
    r2 = spark.read.format("lance").option("rows_per_partition", "25").option("columns", "id,s").load(uri)
    assert r2.columns == ["id", "s"] and r2.rdd.getNumPartitions() > len(ds.get_fragments())
    assert sorted(r2.collect()) == sorted(zip(got["id"].to_pylist(), got["s"].to_pylist()))


def test_read_pins_the_version_at_load_and_takes_version_and_filter(spark, tmp_path):
    uri = str(tmp_path / "pin.lance")
    lancepy.write_dataset(pa.table({"x": list(range(100))}), uri)
    r = spark.read.format("lance").load(uri)
    lancepy.write_dataset(pa.table({"x": list(range(100, 150))}), uri, mode="append")
    assert r.count() == 100 and r.agg(F.sum("x")).collect()[0][0] == sum(range(100))
    assert spark.read.format("lance").load(uri).count() == 150
    v1 = spark.read.format("lance").option("version", "1").option("filter", "x >= 90").load(uri)
    assert sorted(v[0] for v in v1.collect()) == list(range(90, 100))


def test_unknown_options_and_pyspark_refused_modes(spark, tmp_path):
    uri = str(tmp_path / "modes.lance")
    df = spark.range(0, 30, 1, numPartitions=2).withColumnRenamed("id", "x")
    df.write.format("lance").mode("append").save(uri)
    df.write.format("lance").mode("append").save(uri)
    assert lancepy.dataset(uri).count_rows() == 60
    df.limit(5).write.format("lance").mode("overwrite").save(uri)
    ds = lancepy.dataset(uri)
    assert ds.count_rows() == 5 and ds.version == 3
    for mode in ("error", "errorifexists", "ignore"):
        with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
            df.write.format("lance").mode(mode).save(uri)
    with pytest.raises(Exception, match="no option 'colums'"):
        spark.read.format("lance").option("colums", "x").load(uri).collect()
    with pytest.raises(Exception, match="no option 'compression'"):
        df.write.format("lance").mode("append").option("compression", "zstd").save(uri)
    assert lancepy.dataset(uri).version == 3
    assert _data_files(uri) == _referenced_files(uri)


def test_a_retried_task_leaves_no_duplicates_and_no_orphans(spark, tmp_path):
    uri = str(tmp_path / "retry.lance")
    markers = tmp_path / "markers"
    markers.mkdir()

    def gen(batches):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        sent = 0
        for b in batches:
            ids = b.column(0)
            for start in range(0, len(ids), 20):
                if ctx.partitionId() == 1 and ctx.attemptNumber() == 0 and sent >= 100:
                    (markers / f"failed-{ctx.taskAttemptId()}").write_text("")
                    raise RuntimeError("injected failure in the first attempt")
                chunk = ids.slice(start, 20)
                sent += len(chunk)
                yield pa.RecordBatch.from_arrays([chunk], names=["id"])

    df = spark.range(0, 600, 1, numPartitions=3).mapInArrow(gen, "id long")
    df.write.format("lance").mode("append").option("max_rows_per_file", "40").save(uri)
    assert len(list(markers.iterdir())) == 1  # the failure did happen
    assert sorted(lancepy.dataset(uri).to_table().column("id").to_pylist()) == list(range(600))
    assert _data_files(uri) == _referenced_files(uri)


def test_a_failed_job_is_aborted_and_leaves_nothing(spark, tmp_path):
    uri = str(tmp_path / "abort.lance")
    lancepy.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64())}), uri)
    before = _data_files(uri)

    def gen(batches):
        for b in batches:
            yield b
            raise RuntimeError("every attempt fails")

    df = spark.range(0, 300, 1, numPartitions=2).mapInArrow(gen, "id long")
    with pytest.raises(Exception, match="every attempt fails"):
        df.write.format("lance").mode("append").save(uri)
    assert lancepy.dataset(uri).version == 1 and _data_files(uri) == before


def test_a_conflicting_commit_is_refused_and_the_files_go(spark, tmp_path):
    uri = str(tmp_path / "conflict.lance")
    lancepy.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64())}), uri)
    from pyspark.sql.types import LongType, StructField, StructType

    source = lds.LanceDataSource({"path": uri})
    writer = source.writer(StructType([StructField("id", LongType())]), False)
    # A task's files and message, written without Spark (what write() does in a task).
    result = lspark._write_partition(writer.job.plan, iter([pa.record_batch({"id": pa.array([7], pa.int64())})]), 0, 0, 11)
    msg = lds.LanceCommitMessage(result.column(0).to_pylist(), 0, 11)
    assert len(_data_files(uri)) == 2
    lancepy.write_dataset(pa.table({"id": pa.array([5], pa.int64())}), uri, mode="overwrite")
    files = _data_files(uri)
    with pytest.raises(CommitConflictError, match="started from version 1"):
        writer.commit([msg])
    assert lancepy.dataset(uri).to_table().column("id").to_pylist() == [5]
    assert _data_files(uri) == files - {f for f in files if writer.job.plan.job_tag in f}
    assert not any(writer.job.plan.job_tag in f for f in _data_files(uri))


def _random_filter(rng: np.random.Generator):
    """(a Spark SQL predicate over _table's columns, whether all of it can be pushed)."""
    col = str(rng.choice(["k", "s", "b", "d", "x", "id"]))
    values = {
        "k": lambda: str(int(rng.integers(-6, 7))),
        "id": lambda: str(int(rng.integers(0, 300))),
        "s": lambda: "'" + str(rng.choice(["a", "b", "c", "''"])) + str(int(rng.integers(0, 5))) + "'",
        "b": lambda: str(rng.choice(["true", "false"])),
        "d": lambda: f"DATE '2024-01-0{int(rng.integers(1, 10))}'",
        "x": lambda: f"{rng.normal():.3f}",
    }[col]
    kind = int(rng.integers(0, 8))
    if kind == 0:
        p = f"{col} {rng.choice(['=', '<', '<=', '>', '>=', '<>'])} {values()}"
    elif kind == 1:
        p = f"{col} IN ({', '.join(values() for _ in range(int(rng.integers(1, 4))))})"
    elif kind == 2:
        p = f"{col} IS {rng.choice(['', 'NOT '])}NULL"
    elif kind == 3:
        p = f"NOT ({col} {rng.choice(['=', '<', '>='])} {values()})"
    elif kind == 4:
        p = f"{col} <=> {values()}"
    elif kind == 5 and col == "s":
        p = "s LIKE " + str(rng.choice(["'a%'", "'%1'", "'%''%'"]))
    else:
        p = f"{col} {rng.choice(['>', '<'])} {values()} AND s IS NOT NULL"
    return p, col != "x"


def test_pushed_filters_return_what_spark_filtering_returns(spark, tmp_path):
    uri = str(tmp_path / "push.lance")
    t = _table(300, seed=7)
    lancepy.write_dataset(t, uri, max_rows_per_file=150)  # two fragments: two tasks per filter
    rng = np.random.default_rng(2026)
    filters = [_random_filter(rng) for _ in range(120)]
    # What Spark's own filtering keeps: every predicate evaluated by Spark over every row, in one job.
    plain = spark.read.format("lance").load(uri)
    verdicts = plain.select("*", *[F.expr(p).alias(f"_p{i}") for i, (p, _) in enumerate(filters)]).collect()
    width = len(plain.columns)
    # The pushed side: a fresh load per filter (see the module docs of lancepy.spark.datasource),
    # all of them planned and run as one union, tagged by filter.
    pushed = [
        spark.read.format("lance").option("pushFilters", "true").load(uri).where(p).select(F.lit(i).alias("_q"), "*")
        for i, (p, _) in enumerate(filters)
    ]
    union = pushed[0]
    for q in pushed[1:]:
        union = union.unionAll(q)
    node = union._jdf.queryExecution().optimizedPlan()  # the plan collect() runs
    while node.nodeName() != "Union":
        node = node.children().apply(0)
    assert node.children().size() == len(filters)
    pushed_any = 0
    for i, (p, pushable) in enumerate(filters):
        if pushable:
            plan = node.children().apply(i).toString()
            assert "Filter" not in plan and re.search(rf"\b{i} AS _q#", plan), (p, plan)  # all of it went to lancepy
            pushed_any += 1
    got: dict = {i: [] for i in range(len(filters))}
    for r in union.collect():
        got[r[0]].append(tuple(r)[1:])
    for i, (p, _) in enumerate(filters):
        want = [tuple(r)[:width] for r in verdicts if r[width + i] is True]
        assert sorted(got[i], key=repr) == sorted(want, key=repr), p
    assert pushed_any > 60


def test_push_filters_translates_exactly_what_it_can(tmp_path):
    uri = str(tmp_path / "unit.lance")
    lancepy.write_dataset(_table(20), uri)
    plan, _ = lspark._mapinarrow._plan_read(uri)
    reader = lds.LanceReader(plan)
    fs = [
        lds.EqualTo(("k",), 3),
        lds.GreaterThan(("x",), 0.5),  # floats stay with Spark
        lds.In(("s",), ("a'1", None)),
        lds.Not(lds.IsNull(("b",))),
        lds.StringStartsWith(("s",), "a%"),
        lds.EqualNullSafe(("d",), datetime.date(2024, 1, 3)),
        lds.LessThan(("k",), 2**40),  # does not fit an int32: Spark compares in bigint
        lds.EqualTo(("a", "b"), 1),  # nested
    ]
    rest = list(reader.pushFilters(fs))
    assert rest == [fs[1], fs[6], fs[7]] and all(r is f for r, f in zip(rest, [fs[1], fs[6], fs[7]]))
    assert reader.filter == (
        "(`k` = 3) AND (`s` IN ('a''1', NULL)) AND (NOT (`b` IS NULL)) AND (starts_with(`s`, 'a%')) AND "
        "((`d` IS NOT NULL AND `d` = DATE '2024-01-03'))"
    )
    got = lancepy.dataset(uri).to_table(filter=reader.filter)
    assert got.num_rows == sum(1 for r in _table(20).to_pylist() if r["k"] == 3 and r["s"] in ("a'1",) and r["b"] is not None
                               and r["s"].startswith("a%") and r["d"] == datetime.date(2024, 1, 3))


def test_register_needs_a_new_enough_pyspark(monkeypatch):
    monkeypatch.setitem(sys.modules, "lancepy.spark.datasource", None)  # as if the import failed
    monkeypatch.delattr(lspark, "datasource", raising=False)
    with pytest.raises(UnsupportedError, match="pyspark 4.1"):
        lspark.register(object())


def test_without_pushdown_a_dataframe_answers_filtered_and_unfiltered_queries(spark, tmp_path):
    """The default (no pushdown) is immune to Spark 4.3 reusing a pushed reader."""
    uri = str(tmp_path / "reuse.lance")
    lancepy.write_dataset(pa.table({"x": list(range(100))}), uri)
    r = spark.read.format("lance").load(uri)
    assert r.where("x > 90").count() == 9
    assert r.count() == 100 and r.agg(F.sum("x")).collect()[0][0] == 4950
    assert "Filter" in r.where("x > 90")._jdf.queryExecution().optimizedPlan().toString()


def test_compact_files_on_spark_equals_local_compaction(spark, tmp_path, pylance):
    import shutil

    from lancepy.exceptions import InvalidArgumentError

    a, b = str(tmp_path / "local.lance"), str(tmp_path / "spark.lance")
    rng = np.random.default_rng(5)
    for i in range(6):
        t = pa.table({"id": pa.array(np.arange(i * 50, (i + 1) * 50), pa.int64()), "v": pa.array(rng.normal(size=50))})
        lancepy.write_dataset(t, a, mode="append" if i else "create", max_rows_per_file=20)
    lancepy.dataset(a).delete("id % 7 = 0")
    shutil.copytree(a, b)
    opts = {"target_rows_per_fragment": 70, "materialize_deletions_threshold": 0.05}
    want = lancepy.dataset(a).optimize.compact_files(**opts)
    got = lspark.compact_files(spark, b, **opts)
    assert (got.fragments_removed, got.fragments_added, got.files_removed, got.files_added) == (
        want.fragments_removed, want.fragments_added, want.files_removed, want.files_added)
    assert got.fragments_added > 0
    da, db = lancepy.dataset(a), lancepy.dataset(b)
    assert db.version == da.version
    assert [f.metadata.physical_rows for f in db.get_fragments()] == [f.metadata.physical_rows for f in da.get_fragments()]
    assert db.to_table().equals(da.to_table())
    assert pylance.dataset(b).to_table().equals(da.to_table())
    assert _data_files(b) == _referenced_files(b)
    with pytest.raises(InvalidArgumentError, match="target_rows"):
        lspark.compact_files(spark, b, target_rows=5)
    assert lancepy.dataset(b).version == db.version


def test_lance_only_types_read_as_read_dataset_reads_them(spark, tmp_path):
    """Time zones, nanoseconds, unsigned integers, float16, vectors, large strings, structs,
    maps: the data source hands Spark exactly what read_dataset (mapInArrow) does."""
    import decimal

    uri = str(tmp_path / "types.lance")
    t = pa.table({
        "ts": pa.array([1_000_000_123, None], pa.timestamp("ns", tz="America/New_York")),
        "ntz": pa.array([1, 2], pa.timestamp("ms")),
        "u8": pa.array([1, 255], pa.uint8()),
        "u64": pa.array([1, 2**64 - 1], pa.uint64()),
        "f16": pa.array([1.5, None], pa.float16()),
        "dec": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(10, 2)),
        "v": pa.array([[1, 2], [3, 4]], pa.list_(pa.float32(), 2)),
        "ls": pa.array(["a", "b"], pa.large_string()),
        "st": pa.array([{"a": 1, "b": "x"}, None]),
        "m": pa.array([[("k", 1)], []], pa.map_(pa.string(), pa.int32())),
        "d": pa.array([datetime.date(2020, 1, 1), None]),
    })
    lancepy.write_dataset(t, uri, data_storage_version="2.2")
    want = lspark.read_dataset(spark, uri)
    got = spark.read.format("lance").load(uri)
    assert got.schema == want.schema
    assert sorted(map(repr, got.collect())) == sorted(map(repr, want.collect()))


def test_storage_options_reach_an_s3_dataset(spark, s3, pylance):
    """moto on 127.0.0.1 with explicit keys: the data source writes and reads s3:// through
    storage_options.<key> options; pylance reads what it wrote."""
    uri = f"s3://{s3.create_bucket()}/spark-ds.lance"
    opts = {f"storage_options.{k}": v for k, v in s3.options().items()}
    df = spark.range(0, 200, 1, numPartitions=2).select(F.col("id"), (F.col("id") * 3).alias("y"))
    df.write.format("lance").mode("append").options(**opts).save(uri)
    got = spark.read.format("lance").options(**opts).option("filter", "y >= 300").load(uri)
    assert sorted(r.id for r in got.collect()) == list(range(100, 200))
    ref = pylance.dataset(uri, storage_options=s3.options()).to_table().sort_by("id")
    assert ref.column("y").to_pylist() == [3 * i for i in range(200)]


def test_compaction_keeps_one_attempt_per_task(tmp_path):
    """The driver's choice among attempts that reported (retries, speculative duplicates)."""
    from lancepy.exceptions import InvalidArgumentError
    from lancepy.optimize import Compaction, _execute
    from lancepy.spark import compaction as lcomp

    uri = str(tmp_path / "choose.lance")
    lancepy.write_dataset(pa.table({"id": pa.array(range(100), pa.int64())}), uri, max_rows_per_file=10)
    ds = lancepy.dataset(uri)
    plan = Compaction.plan(ds, {"target_rows_per_fragment": 200})
    assert plan.num_tasks() == 1
    first = _execute(plan.tasks[0], ds, file_tag="job-0-7")
    second = _execute(plan.tasks[0], ds, file_tag="job-0-3")
    chosen = lcomp._choose([(0, 7, first.json()), (0, 3, second.json())], 1)
    assert chosen == [second]
    assert all("job-0-3" in d.path for f in chosen[0].new_fragments for d in f.files)
    with pytest.raises(InvalidArgumentError, match=r"tasks \[1\] reported nothing"):
        lcomp._choose([(0, 7, first.json())], 2)


def test_system_columns_read_and_filter_as_lancepy_reads_them(spark, tmp_path):
    """``_rowid``, ``_rowaddr`` and the row version columns of a stable-row-id dataset, as
    columns and in filters (the ``filter`` option, and Spark's own ``where`` pushed down),
    through the data source and ``read_dataset``, whole fragments and row ranges: the rows
    lancepy's scan gives. (Rows changed since a version: an incremental read.)"""
    uri = str(tmp_path / "lineage.lance")
    lancepy.write_dataset(_table(40), uri, max_rows_per_file=15, enable_stable_row_ids=True)
    lancepy.dataset(uri).update({"x": "x + 1"}, where="id % 7 = 0")
    lancepy.write_dataset(_table(5, seed=3), uri, mode="append")
    system = ["_rowid", "_rowaddr", "_row_created_at_version", "_row_last_updated_at_version"]
    ds = lancepy.dataset(uri)

    def want(flt):
        t = ds.to_table(columns=["id", *system], filter=flt)
        return _sorted(zip(*(t.column(c).to_pylist() for c in t.column_names)))

    changed = "_row_last_updated_at_version > 1"
    assert 0 < len(want(changed)) < ds.count_rows()
    for rows in (None, "4"):
        reader = spark.read.format("lance").option("columns", ",".join(["id", *system]))
        if rows:
            reader = reader.option("rows_per_partition", rows)
        assert _sorted(reader.option("filter", changed).load(uri).collect()) == want(changed)
        pushed = reader.option("pushFilters", "true").load(uri).where("_row_created_at_version = 3")
        assert "Filter" not in pushed._jdf.queryExecution().optimizedPlan().toString()
        assert _sorted(pushed.collect()) == want("_row_created_at_version = 3")
        df = lspark.read_dataset(spark, uri, columns=["id", *system], filter=changed,
                                 rows_per_partition=int(rows) if rows else None)
        assert _sorted(df.collect()) == want(changed)
    # a filter on the system columns without projecting them
    assert _sorted(lspark.read_dataset(spark, uri, columns=["id"], filter=changed, rows_per_partition=4).collect()) == \
        _sorted((r[0],) for r in want(changed))
    with pytest.raises(lancepy.exceptions.ColumnNotFoundError, match="system columns"):
        lspark.read_dataset(spark, uri, columns=["id", "_rowidd"])
