"""lancepy.spark against a real local Spark (pyspark from PyPI, Java from the OS).

One SparkSession serves the whole run (starting one takes seconds). Master ``local[2,4]``:
two threads, and a task may fail up to four times, so retries happen as on a cluster.
Data stays small and partitions few: what is tested is the protocol (attempts, commits,
cleanup, types), not throughput (that is ``benches/bench_spark.py``).
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy._table import commit as _commit
from lancepy.exceptions import (
    ColumnNotFoundError,
    CommitConflictError,
    DatasetAlreadyExistsError,
    InvalidArgumentError,
    SchemaMismatchError,
)

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark", reason="pyspark is installed by scripts/setup.sh")
import lancepy.spark as lspark  # noqa: E402  (after the pyspark check)
from pyspark.sql import Row, functions as F, types as T  # noqa: E402


@pytest.fixture(scope="session")
def spark():
    from spark_session import local_session

    session = local_session()
    yield session
    session.stop()


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


def _simple_df(spark, n=1000, parts=3, dim=8):
    return spark.range(0, n, 1, numPartitions=parts).select(
        F.col("id"),
        (F.col("id") * 0.5).alias("x"),
        F.concat(F.lit("s"), F.col("id").cast("string")).alias("s"),
        F.array(*[(F.col("id") + i).cast("float") for i in range(dim)]).alias("emb"),
    )


def _expected_simple(n, dim=8) -> pa.Table:
    ids = list(range(n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([i * 0.5 for i in ids], pa.float64()),
            "s": pa.array([f"s{i}" for i in ids]),
            "emb": pa.array([[float(i + k) for k in range(dim)] for i in ids], pa.list_(pa.float32(), dim)),
        }
    )


def test_import_lancepy_does_not_import_pyspark():
    code = "import sys, lancepy, lancepy.fragment, lancepy.dataset; assert 'pyspark' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_spark_writes_pylance_and_lancepy_read(spark, tmp_path, pylance):
    uri = str(tmp_path / "ds.lance")
    ds = lspark.write_dataset(_simple_df(spark, 1000, 3), uri, max_rows_per_file=150, vector_columns={"emb": 8})
    assert ds.version == 1
    frags = ds.get_fragments()
    assert len(frags) >= 3 and len({f.fragment_id for f in frags}) == len(frags)
    assert all(f.metadata.physical_rows <= 150 for f in frags)
    expected = _expected_simple(1000)
    assert ds.schema.field("emb").type == pa.list_(pa.float32(), 8)
    # Spark's columns here are all non-nullable, and the dataset says so.
    expected = expected.cast(pa.schema([f.with_nullable(False) for f in expected.schema]))
    got = ds.to_table().sort_by("id")
    assert got.equals(expected)
    ref = pylance.dataset(uri).to_table().sort_by("id")
    assert ref.equals(expected)
    assert _data_files(uri) == _referenced_files(uri)


def test_modes(spark, tmp_path):
    uri = str(tmp_path / "m.lance")
    lspark.write_dataset(_simple_df(spark, 100, 2), uri)
    with pytest.raises(DatasetAlreadyExistsError):
        lspark.write_dataset(_simple_df(spark, 100, 2), uri)
    ds = lspark.write_dataset(_simple_df(spark, 50, 2).select("s", "x", "emb", "id"), uri, mode="append")
    assert ds.version == 2 and ds.count_rows() == 150
    assert ds.schema.names == ["id", "x", "s", "emb"]
    ds = lspark.write_dataset(spark.range(7).select(F.col("id").cast("int").alias("k")), uri, mode="overwrite")
    assert ds.version == 3 and ds.schema == pa.schema([pa.field("k", pa.int32(), False)])
    assert sorted(ds.to_table().column("k").to_pylist()) == list(range(7))
    assert lancepy.dataset(uri, 2).count_rows() == 150
    # Append to a dataset that does not exist creates it.
    ds = lspark.write_dataset(_simple_df(spark, 10, 1), str(tmp_path / "new.lance"), mode="append")
    assert ds.version == 1 and ds.count_rows() == 10


def test_bad_arguments_fail_before_writing(spark, tmp_path):
    uri = str(tmp_path / "bad.lance")
    lspark.write_dataset(_simple_df(spark, 20, 1), uri)
    before = _data_files(uri)
    with pytest.raises(InvalidArgumentError, match="mode"):
        lspark.write_dataset(_simple_df(spark, 20, 1), uri, mode="upsert")
    with pytest.raises(SchemaMismatchError, match="missing columns"):
        lspark.write_dataset(_simple_df(spark, 20, 1).drop("x"), uri, mode="append")
    with pytest.raises(SchemaMismatchError, match="different types"):
        lspark.write_dataset(_simple_df(spark, 20, 1).withColumn("x", F.col("x").cast("string")), uri, mode="append")
    with pytest.raises(InvalidArgumentError, match="no column"):
        lspark.write_dataset(_simple_df(spark, 20, 1), uri, mode="overwrite", vector_columns={"nope": 3})
    with pytest.raises(InvalidArgumentError, match="array of floats"):
        lspark.write_dataset(_simple_df(spark, 20, 1), uri, mode="overwrite", vector_columns={"s": 3})
    with pytest.raises(InvalidArgumentError, match="max_rows_per_file"):
        lspark.write_dataset(_simple_df(spark, 20, 1), uri, mode="overwrite", max_rows_per_file=0)
    with pytest.raises(SchemaMismatchError, match="duplicate"):
        lspark.write_dataset(spark.range(3).select("id", "id"), uri, mode="overwrite")
    assert lancepy.dataset(uri).version == 1 and _data_files(uri) == before


def test_vector_of_wrong_length_fails_the_job_and_leaves_nothing(spark, tmp_path):
    uri = str(tmp_path / "vec.lance")
    df = _simple_df(spark, 300, 2).withColumn(
        "emb", F.when(F.col("id") == 250, F.array(F.lit(1.0).cast("float"))).otherwise(F.col("emb"))
    )
    with pytest.raises(Exception, match="must have 8 elements"):
        lspark.write_dataset(df, uri, vector_columns={"emb": 8}, max_rows_per_file=50)
    assert _data_files(uri) == set()
    assert not (Path(uri) / "_versions").exists()


def _all_types_df(spark):
    schema = T.StructType(
        [
            T.StructField("id", T.LongType(), False),
            T.StructField("b", T.ByteType()),
            T.StructField("sh", T.ShortType()),
            T.StructField("i", T.IntegerType()),
            T.StructField("f", T.FloatType()),
            T.StructField("d", T.DoubleType()),
            T.StructField("dec", T.DecimalType(10, 2)),
            T.StructField("dec38", T.DecimalType(38, 10)),
            T.StructField("s", T.StringType()),
            T.StructField("bin", T.BinaryType()),
            T.StructField("flag", T.BooleanType()),
            T.StructField("day", T.DateType()),
            T.StructField("ts", T.TimestampType()),
            T.StructField("ts_ntz", T.TimestampNTZType()),
            T.StructField("dur", T.DayTimeIntervalType()),
            T.StructField("ints", T.ArrayType(T.IntegerType())),
            T.StructField("nested", T.ArrayType(T.ArrayType(T.StringType()))),
            T.StructField("st", T.StructType([T.StructField("a", T.IntegerType()), T.StructField("t", T.StringType())])),
            T.StructField("m", T.MapType(T.StringType(), T.LongType())),
            T.StructField(
                "deep",
                T.ArrayType(
                    T.StructType(
                        [
                            T.StructField("k", T.StringType()),
                            T.StructField("v", T.ArrayType(T.DecimalType(20, 4))),
                            T.StructField("m", T.MapType(T.IntegerType(), T.StringType())),
                        ]
                    )
                ),
            ),
            T.StructField("emb", T.ArrayType(T.FloatType(), False)),
        ]
    )
    rows = []
    base = datetime.datetime(2024, 5, 17, 12, 30, 45, 123456)
    for i in range(240):
        null = i % 7 == 3
        rows.append(
            Row(
                id=i,
                b=None if null else (i % 256) - 128,
                sh=None if null else i * 100 - 12000,
                i=None if null else i * 1_000_003 - 2**30,
                f=None if null else i / 3.0,
                d=None if null else -i / 7.0,
                dec=None if null else Decimal(i * 131) / 100 - Decimal("99.99"),
                dec38=None if null else Decimal(f"{i}12345678901234567890.{i % 10}123456789"),
                s=None if null else f"str-{i}-" + "é" * (i % 5),
                bin=None if null else bytes([i % 256]) * (i % 9),
                flag=None if null else i % 2 == 0,
                day=None if null else datetime.date(2000, 1, 1) + datetime.timedelta(days=i * 37),
                ts=None if null else (base + datetime.timedelta(seconds=i * 3607)).replace(tzinfo=datetime.timezone.utc),
                ts_ntz=None if null else base - datetime.timedelta(minutes=i * 61),
                dur=None if null else datetime.timedelta(days=i - 100, microseconds=i * 7919),
                ints=None if null else [i, None, -i][: i % 4],
                nested=None if null else [[f"a{i}", None], [], None][: i % 4],
                st=None if null else Row(a=i, t=None if i % 3 == 0 else f"t{i}"),
                m=None if null else {f"k{j}": i * j for j in range(i % 3)},
                deep=None
                if null
                else [Row(k=f"k{i}", v=[Decimal(i) / 8, None], m={i: f"v{i}", -1: None}), Row(k=None, v=None, m=None)][
                    : i % 3
                ],
                emb=[float(i), float(i) + 0.5, -float(i)],
            )
        )
    return spark.createDataFrame(rows, schema).repartition(3)


def _sorted_rows(df):
    return sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: r["id"])


def test_every_type_round_trips_spark_lance_spark(spark, tmp_path, pylance):
    df = _all_types_df(spark)
    uri = str(tmp_path / "types.lance")
    with pytest.raises(lancepy.exceptions.UnsupportedError, match="needs file version 2.2"):
        lspark.write_dataset(df, uri, vector_columns={"emb": 3}, data_storage_version="2.1")  # maps: 2.2 files (as pylance)
    assert not Path(uri).exists()
    ds = lspark.write_dataset(df, uri, vector_columns={"emb": 3}, max_rows_per_file=64)  # 2.2: the default
    assert ds.data_storage_version == "2.2"
    t = ds.schema
    assert t.field("dec").type == pa.decimal128(10, 2) and t.field("dec38").type == pa.decimal128(38, 10)
    assert t.field("ts").type == pa.timestamp("us", tz="UTC") and t.field("ts_ntz").type == pa.timestamp("us")
    assert t.field("dur").type == pa.duration("us")
    assert t.field("emb").type == pa.list_(pa.float32(), 3)  # Lance keeps no item nullability for vectors
    assert not t.field("id").nullable and t.field("s").nullable
    back = lspark.read_dataset(spark, uri)
    assert back.schema == df.withColumn("emb", F.col("emb").cast("array<float>")).schema
    assert _sorted_rows(back) == _sorted_rows(df)
    # The reference reads exactly what lancepy reads.
    assert pylance.dataset(uri).to_table().sort_by("id").equals(ds.to_table().sort_by("id"))


def test_large_binary_values(spark, tmp_path):
    big = spark.range(0, 12, 1, numPartitions=2).select(
        "id", F.expr("unhex(repeat(lpad(hex(id), 2, '0'), 1500000))").alias("image")
    )
    uri = str(tmp_path / "img.lance")
    ds = lspark.write_dataset(big, uri, max_bytes_per_file=4_000_000)
    # max_bytes_per_file is a soft limit checked between batches (as pylance's): each task's
    # file is closed once past 4 MB written, so at least one file per task.
    assert len(ds.get_fragments()) >= 2
    t = ds.to_table().sort_by("id")
    assert [len(v) for v in t.column("image").to_pylist()] == [1_500_000] * 12
    assert t.column("image")[5].as_py() == bytes([5]) * 1_500_000


def _marker_dir(tmp_path) -> str:
    d = tmp_path / "markers"
    d.mkdir(exist_ok=True)
    return str(d)


def _failing_source(spark, n, parts, fail_partition, fail_attempts, after_rows):
    """`n` rows in `parts` partitions; partition `fail_partition` raises on attempts < `fail_attempts`
    after handing `after_rows` rows on (so files are already being written)."""

    def gen(batches):
        from pyspark import TaskContext

        ctx = TaskContext.get()
        sent = 0
        for b in batches:
            ids = b.column(0)
            for start in range(0, len(ids), 20):
                chunk = ids.slice(start, 20)
                if ctx.partitionId() == fail_partition and ctx.attemptNumber() < fail_attempts and sent >= after_rows:
                    raise RuntimeError(f"injected failure in attempt {ctx.attemptNumber()}")
                sent += len(chunk)
                yield pa.RecordBatch.from_arrays([chunk, pa.compute.multiply(chunk, 2)], names=["id", "y"])

    return spark.range(0, n, 1, numPartitions=parts).mapInArrow(gen, "id long, y long")


def test_retried_task_leaves_no_duplicates_and_no_orphans(spark, tmp_path):
    uri = str(tmp_path / "retry.lance")
    df = _failing_source(spark, 600, 3, fail_partition=1, fail_attempts=1, after_rows=100)
    ds = lspark.write_dataset(df, uri, max_rows_per_file=40)
    ids = ds.to_table().column("id").to_pylist()
    assert sorted(ids) == list(range(600))
    assert _data_files(uri) == _referenced_files(uri)


def test_failed_job_leaves_the_dataset_unchanged(spark, tmp_path):
    uri = str(tmp_path / "fail.lance")
    lspark.write_dataset(_failing_source(spark, 200, 2, 0, 0, 0), uri)
    before_files = _data_files(uri)
    before = lancepy.dataset(uri).to_table()
    df = _failing_source(spark, 600, 3, fail_partition=2, fail_attempts=99, after_rows=100)
    with pytest.raises(Exception, match="injected failure"):
        lspark.write_dataset(df, uri, mode="append", max_rows_per_file=40)
    ds = lancepy.dataset(uri)
    assert ds.version == 1 and ds.to_table().equals(before)
    assert _data_files(uri) == before_files
    # The same for a dataset the failed job was creating: nothing remains.
    fresh = str(tmp_path / "fresh.lance")
    with pytest.raises(Exception, match="injected failure"):
        lspark.write_dataset(df, fresh, max_rows_per_file=40)
    assert _data_files(fresh) == set() and not (Path(fresh) / "_versions").exists()


def test_only_one_attempt_per_partition_is_kept(tmp_path):
    """Two attempts of partition 0 both finish (a retry after a lost result, a speculative
    copy): the driver keeps the lowest attempt id and deletes the other's files."""
    uri = str(tmp_path / "dup.lance")
    target = pa.schema([pa.field("id", pa.int64())])
    lance = lancepy.fragment.lance_fields_for(target)
    plan = lspark._WritePlan(
        uri=uri, storage_options=None, target=target, fields_json=json.dumps(lance["fields"]),
        metadata_json=json.dumps(lance["metadata"]), version="2.1", max_rows_per_file=30,
        max_bytes_per_file=lspark.DEFAULT_MAX_BYTES_PER_FILE, job_tag="0123456789abcdef",
    )

    def part(lo, hi):
        return iter([pa.record_batch([pa.array(range(lo, hi), pa.int64())], schema=target)])

    results = []
    for pid, attempt_id, lo, hi in [(0, 17, 0, 100), (1, 18, 100, 150), (0, 9, 0, 100)]:
        b = lspark._write_partition(plan, part(lo, hi), pid, 0 if attempt_id != 17 else 1, attempt_id)
        results += list(zip(*[b.column(i).to_pylist() for i in range(4)]))
    store = lancepy._lancepy.Store(uri)
    assert len(lspark._job_files(store, plan.job_tag)) == 4 + 2 + 4
    frags = lspark._choose_attempts(results)
    assert [f.physical_rows for f in frags] == [30, 30, 30, 10, 30, 20]
    kept = [f"data/{d.path}" for f in frags for d in f.files]
    assert all("-0-9.lance" in p or "-1-18.lance" in p for p in kept)
    assert lspark._delete_job_files(store, plan.job_tag, keep=kept) == 4
    assert sorted(lspark._job_files(store, plan.job_tag)) == sorted(kept)
    ds = lancepy.LanceDataset.commit(uri, lancepy.LanceOperation.Overwrite(target, frags))
    assert sorted(ds.to_table().column("id").to_pylist()) == list(range(150))


def _gated_source(spark, n, markers):
    """Rows whose tasks announce they started and then wait until the test says go."""

    def gen(batches):
        for b in batches:
            Path(markers, "started").touch()
            deadline = time.time() + 120
            while not Path(markers, "go").exists() and time.time() < deadline:
                time.sleep(0.05)
            ids = b.column(0)
            yield pa.RecordBatch.from_arrays([ids, pa.compute.multiply(ids, 2)], names=["id", "y"])

    return spark.range(0, n, 1, numPartitions=2).mapInArrow(gen, "id long, y long")


def _run_while_job_waits(spark, tmp_path, uri, other_writer_code, mode="append"):
    markers = _marker_dir(tmp_path)
    outcome = {}

    def job():
        try:
            outcome["ds"] = lspark.write_dataset(_gated_source(spark, 300, markers).withColumn("id", F.col("id") + 1000), uri, mode=mode)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            outcome["error"] = e

    th = threading.Thread(target=job)
    th.start()
    deadline = time.time() + 120
    while not Path(markers, "started").exists() and time.time() < deadline:
        time.sleep(0.05)
    assert Path(markers, "started").exists(), "the Spark job did not start"
    subprocess.run([sys.executable, "-c", other_writer_code], check=True)
    Path(markers, "go").touch()
    th.join(180)
    assert not th.is_alive()
    return outcome


def test_spark_append_and_python_append_both_survive(spark, tmp_path):
    uri = str(tmp_path / "conc.lance")
    lancepy.write_dataset(pa.table({"id": pa.array(range(10), pa.int64()), "y": pa.array(range(10), pa.int64())}), uri)
    code = (
        "import lancepy, pyarrow as pa; "
        f"lancepy.write_dataset(pa.table({{'id': pa.array(range(500, 520), pa.int64()), 'y': pa.array([0] * 20, pa.int64())}}), {uri!r}, mode='append')"
    )
    outcome = _run_while_job_waits(spark, tmp_path, uri, code)
    assert "error" not in outcome, outcome.get("error")
    ds = outcome["ds"]
    assert ds.version == 3
    ids = sorted(ds.to_table().column("id").to_pylist())
    assert ids == list(range(10)) + list(range(500, 520)) + list(range(1000, 1300))
    # The Spark commit was made against the version read when the job started, and rebased.
    txn = _commit.load_transaction(lancepy._lancepy.Store(uri), 3)
    assert txn["read_version"] == 1 and _commit.operation_name(txn) == "Append"
    assert _data_files(uri) == _referenced_files(uri)


def test_incompatible_concurrent_commit_fails_clearly(spark, tmp_path):
    uri = str(tmp_path / "clash.lance")
    lancepy.write_dataset(pa.table({"id": pa.array(range(10), pa.int64()), "y": pa.array(range(10), pa.int64())}), uri)
    code = (
        "import lancepy, pyarrow as pa; "
        f"lancepy.write_dataset(pa.table({{'id': pa.array([7], pa.int64()), 'y': pa.array([7], pa.int64())}}), {uri!r}, mode='overwrite')"
    )
    outcome = _run_while_job_waits(spark, tmp_path, uri, code)
    err = outcome.get("error")
    assert isinstance(err, CommitConflictError), err
    assert "started from version 1" in str(err) and "Overwrite" in str(err)
    ds = lancepy.dataset(uri)
    assert ds.version == 2 and ds.to_table().column("id").to_pylist() == [7]
    assert _data_files(uri) == _referenced_files(uri)


def test_read_partitions_are_fragments_and_tasks_filter_and_project(spark, tmp_path):
    uri = str(tmp_path / "read.lance")
    lancepy.write_dataset(_expected_simple(1000), uri, max_rows_per_file=300)
    ds = lancepy.dataset(uri)
    ds.delete("id % 10 = 0")
    ds = lancepy.dataset(uri)
    df = lspark.read_dataset(spark, uri)
    assert df.rdd.getNumPartitions() == len(ds.get_fragments()) == 4
    assert df.schema["emb"].dataType == T.ArrayType(T.FloatType(), True)
    assert df.count() == 900
    rows = _sorted_rows(df)
    assert rows[0] == {"id": 1, "x": 0.5, "s": "s1", "emb": [float(1 + k) for k in range(8)]}
    got = lspark.read_dataset(spark, uri, columns=["s", "id"], filter="id >= 295 AND id < 305")
    assert got.columns == ["s", "id"]
    assert [(r.s, r.id) for r in got.orderBy("id").collect()] == [(f"s{i}", i) for i in range(295, 305) if i % 10]
    # Row ranges of large fragments: more partitions, same rows, the filter applied after the range.
    split = lspark.read_dataset(spark, uri, rows_per_partition=100, filter="x > 100", columns=["id"])
    assert split.rdd.getNumPartitions() == 10  # 270 + 270 + 270 + 90 live rows
    assert sorted(r.id for r in split.collect()) == [i for i in range(201, 1000) if i % 10]
    with pytest.raises(ColumnNotFoundError):
        lspark.read_dataset(spark, uri, columns=["nope"])
    with pytest.raises(InvalidArgumentError):
        lspark.read_dataset(spark, uri, filter="id >")


def test_read_version_is_pinned_when_planned(spark, tmp_path):
    uri = str(tmp_path / "pin.lance")
    lancepy.write_dataset(_expected_simple(100), uri)
    df = lspark.read_dataset(spark, uri, columns=["id"])
    lancepy.write_dataset(_expected_simple(50), uri, mode="append")
    lancepy.dataset(uri).delete("id < 90")
    assert df.count() == 100
    assert sorted(r.id for r in df.collect()) == list(range(100))
    assert lspark.read_dataset(spark, uri, columns=["id"]).count() == 10
    assert lspark.read_dataset(spark, uri, version=2, columns=["id"]).count() == 150


def test_read_maps_lance_only_types_to_spark(spark, tmp_path):
    uri = str(tmp_path / "lt.lance")
    t = pa.table(
        {
            "u8": pa.array([1, 255, None], pa.uint8()),
            "u32": pa.array([0, 2**32 - 1, 5], pa.uint32()),
            "u64": pa.array([0, 2**64 - 1, None], pa.uint64()),
            "h": pa.array([np.float16(1.5), None, np.float16(-2.0)], pa.float16()),  # (older pyarrow takes no Python floats here)
            "ls": pa.array(["a", "bb", None], pa.large_string()),
            "fsb": pa.array([b"ab", b"cd", None], pa.binary(2)),
            "ns": pa.array([1, 2_000, None], pa.timestamp("ns")),
            "vec": pa.array([[1, 2], [3, 4], None], pa.list_(pa.float64(), 2)),
        }
    )
    lancepy.write_dataset(t, uri)
    df = lspark.read_dataset(spark, uri)
    assert [f.dataType for f in df.schema.fields] == [
        T.ShortType(), T.LongType(), T.DecimalType(20, 0), T.FloatType(), T.StringType(), T.BinaryType(),
        T.TimestampNTZType(), T.ArrayType(T.DoubleType(), True),
    ]
    rows = df.collect()
    assert [r.u8 for r in rows] == [1, 255, None]
    assert [r.u64 for r in rows] == [Decimal(0), Decimal(2**64 - 1), None]
    assert [r.vec for r in rows] == [[1.0, 2.0], [3.0, 4.0], None]
    assert [None if r.fsb is None else bytes(r.fsb) for r in rows] == [b"ab", b"cd", None]
    assert rows[1].ns == datetime.datetime(1970, 1, 1, 0, 0, 0, 2)


def test_files_of_a_driver_that_died_before_committing_are_removed_by_cleanup(tmp_path):
    """Tasks wrote, the driver never committed: the files are unreferenced, and
    cleanup_old_versions removes them (they are younger than a week, hence
    delete_unverified)."""
    uri = str(tmp_path / "crash.lance")
    lancepy.write_dataset(pa.table({"id": pa.array(range(5), pa.int64())}), uri)
    committed = _data_files(uri)
    target = pa.schema([pa.field("id", pa.int64())])
    ds = lancepy.dataset(uri)
    m = ds._view.loaded.manifest
    plan = lspark._WritePlan(
        uri=uri, storage_options=None, target=target, fields_json=json.dumps(m["fields"]),
        metadata_json=json.dumps(m.get("schema_metadata", {})), version="2.1", max_rows_per_file=10,
        max_bytes_per_file=lspark.DEFAULT_MAX_BYTES_PER_FILE, job_tag="feedfacefeedface",
    )
    lspark._write_partition(plan, iter([pa.record_batch([pa.array(range(30), pa.int64())], schema=target)]), 0, 0, 1)
    assert len(_data_files(uri) - committed) == 3
    ds.cleanup_old_versions(older_than=datetime.timedelta(days=7))
    assert len(_data_files(uri) - committed) == 3  # young and unverified: kept by default
    ds.cleanup_old_versions(older_than=datetime.timedelta(days=7), delete_unverified=True)
    assert _data_files(uri) == committed
    assert ds.to_table().column("id").to_pylist() == list(range(5))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_read_blob_columns_as_binary(spark, tmp_path, version):
    """Blob columns (images stored as blobs) reach Spark as their bytes."""
    blob = pa.field("image", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    values = [None if i % 7 == 3 else bytes([i]) * (i * 5003) for i in range(40)]
    uri = str(tmp_path / "blobs.lance")
    lancepy.write_dataset(pa.table({"id": pa.array(range(40), pa.int64()), "image": pa.array(values, pa.large_binary())},
                                   schema=pa.schema([pa.field("id", pa.int64()), blob])),
                          uri, data_storage_version=version, max_rows_per_file=15)
    df = lspark.read_dataset(spark, uri)
    assert df.schema["image"].dataType == T.BinaryType()
    got = {r.id: (None if r.image is None else bytes(r.image)) for r in df.collect()}
    assert got == dict(enumerate(values))
    split = lspark.read_dataset(spark, uri, rows_per_partition=5, filter="id > 30", columns=["image"])
    assert sorted(len(r.image or b"") for r in split.collect()) == sorted(len(v or b"") for v in values[31:])


def test_distributed_operations_on_this_pyspark(spark, tmp_path):
    """add_columns and create_index (mapInArrow) run on every supported pyspark; merge_insert
    needs cogrouped Arrow functions (pyspark 4.0) and refuses older ones (tests/test_spark_ops.py
    covers all three in depth)."""
    from lancepy.exceptions import UnsupportedError

    rng = np.random.default_rng(3)
    t = pa.table({"id": pa.array(range(600), pa.int64()),
                  "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.normal(size=600 * 8).astype(np.float32)), 8)})
    a, b = str(tmp_path / "a.lance"), str(tmp_path / "b.lance")
    for uri in (a, b):
        lancepy.write_dataset(t, uri, max_rows_per_file=200)
        lancepy.dataset(uri).delete("id % 5 = 1")
    lancepy.dataset(a).add_columns({"twice": "id * 2"})
    lspark.add_columns(spark, b, {"twice": "id * 2"})
    assert lancepy.dataset(b).to_table().equals(lancepy.dataset(a).to_table())
    lancepy.dataset(a).create_index("v", "IVF_FLAT", num_partitions=2, seed=3)
    lspark.create_index(spark, b, "v", "IVF_FLAT", num_partitions=2, seed=3, num_segments=2)
    q = rng.normal(size=8).astype(np.float32)
    near = {"column": "v", "q": q, "k": 5}
    assert (lancepy.dataset(b).to_table(columns=["id"], nearest=near).column("id").to_pylist()
            == lancepy.dataset(a).to_table(columns=["id"], nearest=near).column("id").to_pylist())
    df = spark.createDataFrame([(1, 2)], "id long, twice long")
    if hasattr(__import__("pyspark.sql.pandas.group_ops", fromlist=["x"]).PandasCogroupedOps, "applyInArrow"):
        got = lspark.merge_insert(df, b, "id", when_matched_update_all=True, when_not_matched_insert_all=True)
        assert got == {"num_updated_rows": 0, "num_inserted_rows": 1, "num_deleted_rows": 0}
    else:
        with pytest.raises(UnsupportedError, match="pyspark 4.0"):
            lspark.merge_insert(df, b, "id", when_matched_update_all=True)


@pytest.mark.skipif(not hasattr(pa, "json_"), reason="pa.json_() needs pyarrow >= 19 (the pyspark 3.5 job has an older one)")
def test_json_columns_read_as_strings_and_appended_from_strings(spark, tmp_path):
    uri = str(tmp_path / "json.lance")
    texts = ['{"b":1,"a":[1,2]}', None, '{"k":"v"}']
    lancepy.write_dataset(pa.table({"id": pa.array([0, 1, 2], pa.int64()), "j": pa.array(texts, type=pa.json_())}), uri)
    df = lspark.read_dataset(spark, uri)
    assert dict(df.dtypes)["j"] == "string"
    got = sorted((r["id"], r["j"]) for r in df.collect())
    assert got == [(0, '{"a":[1,2],"b":1}'), (1, None), (2, '{"k":"v"}')]
    # Spark strings appended to the JSON column are stored as JSONB, as pylance stores them.
    new = spark.createDataFrame([(3, "{'x': 1}")], "id long, j string")
    lspark.write_dataset(new, uri, mode="append")
    ds = lancepy.dataset(uri)
    assert ds.schema.field("j").type == pa.json_()
    assert ds.to_table(filter="id = 3")["j"].to_pylist() == ['{"x":1}']
    assert ds.to_table(filter="json_get_int(j, 'x') = 1")["id"].to_pylist() == [3]
