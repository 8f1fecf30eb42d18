"""Spark: write DataFrames into Lance datasets and read them back, from Python, with no JVM jar.

Both directions run through ``DataFrame.mapInArrow``: Spark hands each task's rows to Python
as Arrow record batches, and lancepy's native writer and reader do the rest. Import this
module explicitly (``import lancepy.spark``); ``import lancepy`` never imports pyspark.

**Writing** (:func:`write_dataset`) is a two-phase commit driven from the Spark driver:

1. When the call starts, the driver reads the dataset's latest version (the *read version*
   of the whole job), checks the DataFrame's schema against it and fixes the Lance schema
   (field ids) and data file version every task will use.
2. Each task streams its partition into new data files (nothing is committed; no reader can
   see them) and returns one row per fragment: the fragment's metadata as JSON, the partition
   id and the task attempt's id. Every file a job writes carries the job's tag in its name.
3. The driver keeps exactly one attempt per partition (the one with the lowest task attempt
   id among those that reported, so a speculative duplicate or a retry is dropped
   deterministically), deletes every other file carrying the job's tag (files of failed,
   killed and discarded attempts), then commits **once**, ``Append`` or ``Overwrite``,
   against the read version of step 1. Compatible commits made in the meantime by other
   writers (appends, deletes, ...) are rebased over; an incompatible one (e.g. a concurrent
   overwrite under an append) raises :class:`~lancepy.exceptions.CommitConflictError` and
   leaves the dataset as it was.
4. If the job fails or is cancelled, every file carrying the job's tag is deleted and the
   error is raised again. A driver that dies between 2 and 3 leaves only data files that no
   manifest references, which :meth:`LanceDataset.cleanup_old_versions` removes.

**Reading** (:func:`read_dataset`) pins the version when the DataFrame is created, plans one
Spark partition per fragment (or per row range of a large fragment), and reads, projects and
filters inside the tasks.

Spark's Arrow batches may carry buffers that are only 8-byte aligned (decimals need 16);
lancepy's import realigns what must be realigned and copies nothing else.

Types: every Spark SQL type with an Arrow counterpart (integers, floats, decimals, strings,
binaries, booleans, dates, timestamps with and without time zone, day-time intervals, arrays,
structs, maps, any nesting). ``vector_columns={"emb": 768}`` stores an ``array<float>``
column as ``fixed_size_list<float32, 768>`` (Lance's vector type); it reads back as an
array. Large binary values (images) work as long as one Arrow batch stays under Spark's
2 GiB limit: lower ``spark.sql.execution.arrow.maxRecordsPerBatch`` (Spark 4 also has
``spark.sql.execution.arrow.maxBytesPerBatch``) for big values.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import pyarrow as pa

from lancepy import _lancepy
from lancepy._core.schema import is_json_type
from lancepy._ops.scan import FILTER_SYSTEM_COLUMNS, compile_scan_filter
from lancepy._table import commit as _commit
from lancepy.exceptions import (
    CommitConflictError,
    DatasetAlreadyExistsError,
    InvalidArgumentError,
    SchemaMismatchError,
    UnsupportedError,
)
from lancepy.fragment import (
    DEFAULT_MAX_ROWS_PER_FILE,
    FragmentMetadata,
    _write,
    lance_fields_for,
    normalize_storage_version,
    schema_differences,
)

if TYPE_CHECKING:  # pragma: no cover - typing only; pyspark is imported lazily
    from pyspark.sql import DataFrame, SparkSession

    from lancepy.dataset import LanceDataset

__all__ = ["write_dataset", "read_dataset", "DEFAULT_MAX_BYTES_PER_FILE"]

#: pylance's default ``max_bytes_per_file`` (90 GiB).
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024**3
DATA_DIR = "data"
_TASK_RESULT_SCHEMA = "fragment string, partition_id int, attempt_number int, task_attempt_id bigint"
_WRITE_MODES = ("create", "append", "overwrite")
# How long the driver waits for killed task attempts of a finished job to stop before it
# lists the job's files (a killed attempt may still be closing a file).
_STRAGGLER_WAIT_S = 30.0
# Batches read ahead of the writer in a task (Spark's batches are 10,000 rows by default).
_PREFETCH_BATCHES = 4
_JOB_GROUP_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")


# -- storage ------------------------------------------------------------------------------


def _store(uri: str, storage_options: Optional[Mapping[str, str]]) -> Any:
    if storage_options is None:
        return _lancepy.Store(uri)
    try:
        return _lancepy.Store(uri, dict(storage_options))
    except TypeError:
        raise UnsupportedError(
            "storage_options: this build of lancepy opens stores without options"
        ) from None


def _write_kwargs(storage_options: Optional[Mapping[str, str]]) -> Dict[str, Any]:
    return {} if storage_options is None else {"storage_options": dict(storage_options)}


def _check_storage_options(storage_options: Optional[Mapping[str, str]]) -> None:
    """Refuses `storage_options` (on the driver, before any task runs) if the pieces that
    must pass them on cannot."""
    if storage_options is None:
        return
    import inspect

    import lancepy

    for fn in (_write, lancepy.dataset):
        if "storage_options" not in inspect.signature(fn).parameters:
            raise UnsupportedError(f"storage_options: this build of lancepy cannot pass them to {fn.__name__}()")


def _open_dataset(uri: str, version: Optional[int], storage_options: Optional[Mapping[str, str]]) -> "LanceDataset":
    import lancepy

    if storage_options is None:
        return lancepy.dataset(uri, version)
    return lancepy.dataset(uri, version, storage_options=dict(storage_options))


# -- types --------------------------------------------------------------------------------


def _spark_to_arrow(schema: Any, timezone: str = "UTC") -> pa.Schema:
    """The Arrow schema of a Spark ``StructType`` as Spark hands batches to Python
    (``timestamp`` columns carry the session time zone)."""
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:  # pyspark 4
        convert = lambda s: to_arrow_schema(s, timezone=timezone)  # noqa: E731
    else:  # pyspark 3.5: timestamps are always UTC
        convert = to_arrow_schema

    names = [f.name for f in schema.fields]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SchemaMismatchError(f"the DataFrame has duplicate column names {dup}; Lance columns must be unique")
    fields = []
    for f in schema.fields:
        try:
            fields.append(convert(type(schema)([f])).field(0))
        except Exception as e:  # noqa: BLE001 - pyspark raises several kinds of type errors
            raise UnsupportedError(
                f"column {f.name!r}: Spark type {f.dataType.simpleString()} has no Arrow counterpart ({e})"
            ) from None
    return pa.schema(fields)


def _vector_schema(schema: pa.Schema, vector_columns: Optional[Mapping[str, int]]) -> pa.Schema:
    """`schema` with each ``vector_columns`` list column turned into a fixed-size list."""
    if not vector_columns:
        return schema
    if not isinstance(vector_columns, Mapping):
        raise InvalidArgumentError("vector_columns must be a dict {column name: dimension}")
    fields = list(schema)
    for name, dim in vector_columns.items():
        if name not in schema.names:
            raise InvalidArgumentError(f"vector_columns: the DataFrame has no column {name!r} (it has {schema.names})")
        if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
            raise InvalidArgumentError(f"vector_columns[{name!r}] must be a positive int, got {dim!r}")
        i = schema.get_field_index(name)
        t = fields[i].type
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not (
            pa.types.is_floating(t.value_type) or pa.types.is_integer(t.value_type)
        ):
            raise InvalidArgumentError(
                f"vector_columns[{name!r}]: column {name!r} is {t}; a vector column must be an array of floats or integers"
            )
        fields[i] = fields[i].with_type(pa.list_(t.value_field, dim))
    return pa.schema(fields, metadata=schema.metadata)


def _castable(src: pa.DataType, dst: pa.DataType) -> bool:
    """Whether a column of Spark's type `src` can be stored as `dst` without loss (a cast
    that only relabels or widens: time zones and units of timestamps, string/binary/list
    offsets width, list → fixed-size list of the same values)."""
    if src == dst:
        return True
    t = pa.types
    if is_json_type(dst):
        # Spark strings stored in a JSON column (parsed when written; not JSON: an error)
        return t.is_string(src) or t.is_large_string(src)
    if t.is_timestamp(src) and t.is_timestamp(dst):
        return (src.tz is None) == (dst.tz is None) and _unit_rank(dst.unit) >= _unit_rank(src.unit)
    if t.is_duration(src) and t.is_duration(dst):
        return _unit_rank(dst.unit) >= _unit_rank(src.unit)
    if (t.is_string(src) or t.is_large_string(src)) and (t.is_string(dst) or t.is_large_string(dst)):
        return True
    if (t.is_binary(src) or t.is_large_binary(src)) and (t.is_binary(dst) or t.is_large_binary(dst)):
        return True
    if (t.is_list(src) or t.is_large_list(src)) and (t.is_list(dst) or t.is_large_list(dst) or t.is_fixed_size_list(dst)):
        return _castable(src.value_type, dst.value_type)
    if t.is_struct(src) and t.is_struct(dst):
        if [f.name for f in src] != [f.name for f in dst]:
            return False
        return all(_castable(a.type, b.type) for a, b in zip(src, dst))
    if t.is_map(src) and t.is_map(dst):
        return _castable(src.key_type, dst.key_type) and _castable(src.item_type, dst.item_type)
    return False


def _unit_rank(unit: str) -> int:
    return {"s": 0, "ms": 1, "us": 2, "ns": 3}[unit]


def _for_spark(t: pa.DataType, path: str) -> pa.DataType:
    """The Arrow type Spark takes for a Lance column of type `t` (mapInArrow does not cast:
    fixed-size lists become lists, unsigned integers wider signed ones, ...)."""
    T = pa.types
    if isinstance(t, pa.BaseExtensionType):  # JSON text (arrow.json) is a Spark string
        return _for_spark(t.storage_type, path)
    if T.is_dictionary(t):
        return _for_spark(t.value_type, path)
    if T.is_uint8(t):
        return pa.int16()
    if T.is_uint16(t):
        return pa.int32()
    if T.is_uint32(t):
        return pa.int64()
    if T.is_uint64(t):
        return pa.decimal128(20, 0)
    if T.is_float16(t):
        return pa.float32()
    if T.is_large_string(t):
        return pa.string()
    if T.is_large_binary(t) or T.is_fixed_size_binary(t):
        return pa.binary()
    if T.is_date64(t):
        return pa.date32()
    if T.is_timestamp(t):
        return pa.timestamp("us", tz=t.tz)
    if T.is_duration(t):
        return pa.duration("us")
    if T.is_decimal(t):
        if t.precision > 38:
            raise UnsupportedError(f"column {path!r}: {t} does not fit Spark's decimals (precision at most 38)")
        return pa.decimal128(t.precision, t.scale)
    if T.is_list(t) or T.is_large_list(t) or T.is_fixed_size_list(t):
        return pa.list_(pa.field("element", _for_spark(t.value_type, path + "[]"), t.value_field.nullable))
    if T.is_map(t):
        return pa.map_(
            _for_spark(t.key_type, path + ".key"),
            pa.field("value", _for_spark(t.item_type, path + ".value"), t.item_field.nullable),
        )
    if T.is_struct(t):
        return pa.struct([pa.field(f.name, _for_spark(f.type, f"{path}.{f.name}"), f.nullable) for f in t])
    if T.is_boolean(t) or T.is_signed_integer(t) or T.is_floating(t) or T.is_string(t) or T.is_binary(t):
        return t
    if T.is_date32(t) or T.is_null(t):
        return t
    raise UnsupportedError(f"column {path!r}: Lance type {t} has no Spark counterpart")


def _spark_schema_of(schema: pa.Schema) -> Tuple[pa.Schema, Any]:
    """(Arrow schema the read tasks produce, the matching Spark ``StructType``)."""
    from pyspark.sql.types import StructType

    from pyspark.sql.pandas.types import from_arrow_type

    arrow = pa.schema([pa.field(f.name, _for_spark(f.type, f.name), f.nullable) for f in schema])
    fields = []
    for f in arrow:
        try:
            fields.append((f.name, from_arrow_type(f.type, prefer_timestamp_ntz=True), f.nullable))
        except Exception as e:  # noqa: BLE001 - pyspark raises several kinds of type errors
            raise UnsupportedError(f"column {f.name!r}: Arrow type {f.type} has no Spark counterpart ({e})") from None
    struct = StructType()
    for name, dtype, nullable in fields:
        struct.add(name, dtype, nullable)
    return arrow, struct


def _conform(batches: Iterator[pa.RecordBatch], target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Spark's batches as `target`: columns by name, in `target`'s order, cast where the
    driver allowed it (vectors, time zones, offset widths)."""
    names = target.names
    for b in batches:
        if b.schema.names != names or not b.schema.equals(target):
            cols = []
            for f in target:
                col = b.column(f.name)
                if col.type != f.type:
                    try:
                        col = col.cast(f.type)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                        if pa.types.is_fixed_size_list(f.type):
                            raise SchemaMismatchError(
                                f"vector column {f.name!r}: every value must have {f.type.list_size} elements ({e})"
                            ) from None
                        raise SchemaMismatchError(f"column {f.name!r}: cannot store {col.type} as {f.type}: {e}") from None
                cols.append(col)
            b = pa.RecordBatch.from_arrays(cols, schema=target)
        yield b


class _Failed:
    """An exception raised by the read-ahead thread, handed to the consumer to re-raise."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _prefetched(batches: Iterator[pa.RecordBatch], depth: int) -> Iterator[pa.RecordBatch]:
    """`batches`, read ahead by up to `depth` batches on a thread of its own.

    Reading a partition from Spark (socket + Arrow IPC) and encoding it (native, GIL released)
    then overlap instead of taking turns. The reader thread stops when this generator is
    closed early (a failed write) after at most the batch it is reading, so that a reused
    Python worker never has two readers on its input.
    """
    import queue
    import threading

    q: "queue.Queue[Any]" = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def pump() -> None:
        try:
            for b in batches:
                while not stop.is_set():
                    try:
                        q.put(b, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(done)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            q.put(_Failed(e))

    reader = threading.Thread(target=pump, name="lancepy-spark-prefetch", daemon=True)
    reader.start()
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()
        while reader.is_alive():
            try:
                q.get(timeout=0.1)
            except queue.Empty:
                pass
        reader.join()


# -- writing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _WritePlan:
    """What every write task needs (pickled into the tasks)."""

    uri: str
    storage_options: Optional[Dict[str, str]]
    target: pa.Schema
    fields_json: str
    metadata_json: str
    version: str
    max_rows_per_file: int
    max_bytes_per_file: int
    job_tag: str


def _write_partition(
    plan: _WritePlan, batches: Iterator[pa.RecordBatch], partition_id: int, attempt_number: int, task_attempt_id: int
) -> pa.RecordBatch:
    """Writes one partition into tagged data files; one result row per fragment."""
    fields = json.loads(plan.fields_json)
    metadata = json.loads(plan.metadata_json)
    tag = f"{plan.job_tag}-{partition_id}-{task_attempt_id}"
    frags: List[FragmentMetadata] = []
    stream = _conform(_prefetched(batches, _PREFETCH_BATCHES), plan.target)
    reader = pa.RecordBatchReader.from_batches(plan.target, stream)
    frags.extend(
        _write(
            plan.uri, reader, fields, metadata, plan.max_rows_per_file, plan.version, plan.max_bytes_per_file,
            file_tag=tag, **_write_kwargs(plan.storage_options),
        )
    )
    n = len(frags)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([json.dumps(f.to_json()) for f in frags], pa.string()),
            pa.array([partition_id] * n, pa.int32()),
            pa.array([attempt_number] * n, pa.int32()),
            pa.array([task_attempt_id] * n, pa.int64()),
        ],
        names=["fragment", "partition_id", "attempt_number", "task_attempt_id"],
    )


def _write_task(plan: _WritePlan) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        yield _write_partition(plan, batches, ctx.partitionId(), ctx.attemptNumber(), ctx.taskAttemptId())

    return run


def _choose_attempts(rows: Sequence[Tuple[str, int, int, int]]) -> List[FragmentMetadata]:
    """One attempt per partition (the lowest task attempt id that reported), its fragments in
    partition order then the order the task wrote them."""
    chosen: Dict[int, int] = {}
    for _, pid, _, attempt in rows:
        if pid not in chosen or attempt < chosen[pid]:
            chosen[pid] = attempt
    kept = [(pid, i, frag) for i, (frag, pid, _, attempt) in enumerate(rows) if chosen[pid] == attempt]
    kept.sort(key=lambda r: (r[0], r[1]))
    return [FragmentMetadata.from_json(frag) for _, _, frag in kept]


def _job_files(store: Any, job_tag: str) -> List[str]:
    """Paths (relative to the root) of every data file the job wrote."""
    marker = f"_{job_tag}-"
    return [p for p, _, _ in store.list(DATA_DIR) if marker in p.rsplit("/", 1)[-1]]


def _delete_job_files(store: Any, job_tag: str, keep: Sequence[str] = ()) -> int:
    kept = set(keep)
    doomed = [p for p in _job_files(store, job_tag) if p not in kept]
    if doomed:
        store.delete(doomed)
    return len(doomed)


def _wait_for_tasks(sc: Any, group: str, timeout: float) -> None:
    """Waits (up to `timeout` s) until no stage of the job group runs: attempts killed after
    the job ended (speculative duplicates, cancelled tasks) may still be writing."""
    if sc is None:
        return
    tracker = sc.statusTracker()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        active = set(tracker.getActiveStageIds())
        stages = set()
        for job_id in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job_id)
            if info is not None:
                stages |= set(info.stageIds)
        if not active & stages:
            return
        time.sleep(0.1)


def _session_time_zone(df: Any) -> str:
    return df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"


def _spark_context(df: Any) -> Any:
    try:
        return df.sparkSession.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
        return None


def _parallelism(spark: Any) -> int:
    """Spark's default parallelism (the shuffle partitions where there is no SparkContext)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
        return int(spark.conf.get("spark.sql.shuffle.partitions") or 2)


def _run_job(spark: Any, group: str, description: str, collect: Callable[[], List[Any]]) -> List[Any]:
    """`collect()` (a Spark action) as job group `group`; before returning or raising, waits
    (up to ``_STRAGGLER_WAIT_S``) until no task of the group still runs, so that no attempt
    killed after the job ended (a speculative copy, a cancelled task) writes a file after the
    caller's cleanup. The session's job-group properties are restored."""
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
        sc = None
    saved = {k: sc.getLocalProperty(k) for k in _JOB_GROUP_PROPERTIES} if sc is not None else {}
    if sc is not None:
        sc.setJobGroup(group, description, interruptOnCancel=True)
    try:
        return collect()
    finally:
        for k, v in saved.items():
            sc.setLocalProperty(k, v)  # None removes the property
        _wait_for_tasks(sc, group, _STRAGGLER_WAIT_S)


def write_dataset(
    df: "DataFrame",
    uri: Union[str, "os.PathLike[str]"],
    mode: str = "create",
    *,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    data_storage_version: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
    vector_columns: Optional[Dict[str, int]] = None,
) -> "LanceDataset":
    """Writes a Spark DataFrame as a new version of the Lance dataset at `uri`.

    Every task streams its partition into data files; the driver then commits them all in
    one version, against the version that was the latest when this call started (see the
    module docs for the protocol and what happens on retries and failures).

    Args:
        df: the DataFrame. Its column names must be unique.
        uri: where the dataset is (a path or ``file://``; every executor must reach it).
        mode: ``"create"`` (the dataset must not exist), ``"append"`` (creates it if
            needed; the columns must match the dataset's, in any order) or ``"overwrite"``
            (replaces data and schema; older versions stay readable).
        max_rows_per_file: rows per data file (and so per fragment) at most.
        max_bytes_per_file: about this many bytes (as written, encoded) per data file at
            most.
        data_storage_version: data file version for a new or overwritten dataset
            (``"2.0"``, ``"2.1"``, ``"2.2"``/``"stable"`` (default, as pylance 14)); an append keeps the
            dataset's.
        storage_options: options of the object store (passed on as given).
        vector_columns: ``{column: dimension}``: these ``array<float>`` (or other numeric
            arrays) are stored as fixed-size lists, the vector type of Lance.

    Returns:
        The new version.

    Raises:
        DatasetAlreadyExistsError: `mode` is ``"create"`` and a dataset exists at `uri`.
        SchemaMismatchError: an append's columns differ from the dataset's.
        CommitConflictError: a commit made after the job started is incompatible with this
            one (nothing of this write remains).
    """
    job = _prepare_write(
        uri, mode, _spark_to_arrow(df.schema, _session_time_zone(df)), max_rows_per_file=max_rows_per_file,
        max_bytes_per_file=max_bytes_per_file, data_storage_version=data_storage_version,
        storage_options=storage_options, vector_columns=vector_columns,
    )
    plan, store, u = job.plan, job.store, job.plan.uri

    # 2. The tasks write; the driver gets one row per fragment.
    sc = _spark_context(df)
    group = f"lancepy-write-{plan.job_tag}"
    saved = {k: sc.getLocalProperty(k) for k in _JOB_GROUP_PROPERTIES} if sc is not None else {}
    if sc is not None:
        sc.setJobGroup(group, f"lancepy.spark.write_dataset {u} ({mode})", interruptOnCancel=True)
    try:
        rows = [
            (r[0], r[1], r[2], r[3]) for r in df.mapInArrow(_write_task(plan), _TASK_RESULT_SCHEMA).collect()
        ]
    except BaseException:
        _wait_for_tasks(sc, group, _STRAGGLER_WAIT_S)
        _delete_job_files(store, plan.job_tag)
        raise
    finally:
        for k, v in saved.items():
            sc.setLocalProperty(k, v)  # None removes the property

    # 3. One attempt per partition; everything else the job wrote goes.
    _wait_for_tasks(sc, group, _STRAGGLER_WAIT_S)
    version = _commit_job(job, _choose_attempts(rows), f"lancepy.spark.write_dataset({u!r}, mode={mode!r})")
    return _open_dataset(u, version, plan.storage_options)


@dataclass(frozen=True)
class _WriteJob:
    """A write prepared on the driver: the tasks' plan and what the commit needs."""

    plan: _WritePlan
    store: Any
    read_version: int
    naming: Optional[str]
    operation: str
    fields: List[Any]
    metadata: Dict[str, Any]


def _prepare_write(
    uri: Union[str, "os.PathLike[str]"],
    mode: str,
    source: pa.Schema,
    *,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
    data_storage_version: Optional[str] = None,
    storage_options: Optional[Dict[str, str]] = None,
    vector_columns: Optional[Dict[str, int]] = None,
) -> _WriteJob:
    """Step 1 of a write (on the driver): checks the arguments, fixes the read version of
    the job and the schema every task writes (`source`: the Arrow schema of the rows)."""
    from lancepy.dataset import _uri

    if mode not in _WRITE_MODES:
        raise InvalidArgumentError(f"mode must be 'create', 'append' or 'overwrite', got {mode!r}")
    if not isinstance(max_rows_per_file, int) or max_rows_per_file <= 0:
        raise InvalidArgumentError(f"max_rows_per_file must be a positive int, got {max_rows_per_file!r}")
    if not isinstance(max_bytes_per_file, int) or max_bytes_per_file <= 0:
        raise InvalidArgumentError(f"max_bytes_per_file must be a positive int, got {max_bytes_per_file!r}")
    u = _uri(uri)
    so = None if storage_options is None else dict(storage_options)
    _check_storage_options(so)
    store = _store(u, so)

    read_version, naming = _commit.latest_version(store)
    base = _commit.load_manifest(store, read_version) if read_version > 0 else None
    if mode == "create" and base is not None:
        raise DatasetAlreadyExistsError(f"a dataset already exists at {u} (use mode='append' or 'overwrite')")
    if base is not None:
        _commit.check_feature_flags(base, write=True, uri=u)
    source = _vector_schema(source, vector_columns)
    if mode == "append" and base is not None:
        fields = base.field_entries
        metadata = base.schema_metadata
        target = pa.schema(_lancepy.lance_to_schema(json.dumps(fields), json.dumps(metadata)))
        _check_append_schema(source, target)
        version = base.data_storage_version
        if data_storage_version is not None and normalize_storage_version(data_storage_version) != version:
            raise InvalidArgumentError(f"the dataset stores {version} data files; cannot append {data_storage_version} files")
        operation = "Append"
    else:
        target = source
        lance = lance_fields_for(target)
        fields, metadata = lance["fields"], lance["metadata"]
        version = normalize_storage_version(data_storage_version)
        operation = "Overwrite"

    _check_writable(target, version)

    plan = _WritePlan(
        uri=u,
        storage_options=so,
        target=target,
        fields_json=json.dumps(fields),
        metadata_json=json.dumps(metadata),
        version=version,
        max_rows_per_file=max_rows_per_file,
        max_bytes_per_file=max_bytes_per_file,
        job_tag=uuid.uuid4().hex[:16],
    )
    return _WriteJob(plan, store, read_version, naming, operation, fields, metadata)


def _commit_job(job: _WriteJob, frags: Sequence[FragmentMetadata], what: str) -> int:
    """Step 3 of a write (on the driver): deletes every file of the job that `frags` do not
    reference, then commits `frags` once against the job's read version; on any failure
    every file of the job is deleted. Returns the new version."""
    plan, store = job.plan, job.store
    kept = [f"{DATA_DIR}/{d.path}" for f in frags for d in f.files]
    try:
        _delete_job_files(store, plan.job_tag, keep=kept)
        frag_json = [f._manifest_json() for f in frags]
        if job.operation == "Append":
            body: Dict[str, Any] = {"fragments": frag_json}
        else:
            body = {"fragments": frag_json, "schema": job.fields, "schema_metadata": job.metadata}
        txn = _commit.new_transaction(job.read_version, job.operation, body)
        try:
            result = _commit.commit_transaction(
                store,
                txn,
                naming=job.naming or "v2",
                written_files=kept,
                data_storage_version=plan.version if job.operation == "Overwrite" else None,
            )
        except CommitConflictError as e:
            raise CommitConflictError(
                f"{what} started from version {job.read_version} and cannot commit: {e}. "
                "Nothing was committed and the job's files were deleted."
            ) from e
    except BaseException:
        _delete_job_files(store, plan.job_tag)
        raise
    return result.version


def _check_writable(schema: pa.Schema, version: str) -> None:
    """Fails on the driver, before any task runs, if `version` files cannot hold `schema`
    (e.g. maps need 2.2): an empty file is written to memory."""
    from lancepy.file import LanceFileWriter

    LanceFileWriter(f"memory://lancepy-spark-check-{uuid.uuid4().hex}/check.lance", schema=schema, version=version).close()


def _check_append_schema(source: pa.Schema, target: pa.Schema) -> None:
    parts = schema_differences(source, target, _castable)
    if parts:
        raise SchemaMismatchError("the DataFrame does not match the dataset schema: " + ", ".join(parts))


# -- reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ReadPlan:
    """What every read task needs (pickled into the tasks)."""

    uri: str
    version: int
    storage_options: Optional[Dict[str, str]]
    columns: Optional[List[str]]
    filter: Any
    out: pa.Schema
    tasks: List[Tuple[int, int, Optional[int]]]
    """(fragment id, first live row, rows or None for the rest) per Spark partition."""
    batch_size: int


_BATCH_BYTES = 16 * 1024 * 1024
_VARIABLE_WIDTH_GUESS = 64


def _row_bytes(t: pa.DataType) -> int:
    """A guess of one value's size: exact for fixed widths, a constant for variable ones."""
    if pa.types.is_fixed_size_list(t):
        return t.list_size * _row_bytes(t.value_type)
    if pa.types.is_struct(t):
        return sum(_row_bytes(f.type) for f in t)
    if pa.types.is_dictionary(t):
        return _row_bytes(t.index_type)
    try:
        return max(t.bit_width // 8, 1)
    except ValueError:  # variable width (strings, lists, maps, ...)
        return _VARIABLE_WIDTH_GUESS


def _rows_per_batch(schema: pa.Schema) -> int:
    width = sum(_row_bytes(f.type) for f in schema) or 1
    return int(min(max(_BATCH_BYTES // width, 1024), 1 << 20))


def _read_partition(plan: _ReadPlan, task: Tuple[int, int, Optional[int]]) -> Iterator[pa.RecordBatch]:
    fid, offset, limit = task
    ds = _open_dataset(plan.uri, plan.version, plan.storage_options)
    if offset == 0 and limit is None:
        scanner = ds.scanner(columns=plan.columns, filter=plan.filter, fragments=[fid], batch_size=plan.batch_size,
                             blob_handling="all_binary")
        flt = None
    else:
        # A row range: the range is over the fragment's rows, so the filter runs after it.
        flt, system = compile_scan_filter(plan.filter, ds.schema)
        read = plan.columns
        if flt is not None:
            read = None if plan.columns is None or flt.columns is None else list(dict.fromkeys(plan.columns + flt.columns))
            if read is None and system:  # (all columns and the system columns the filter reads)
                read = list(dict.fromkeys((plan.columns or ds.schema.names) + list(ds.schema.names) + list(system)))
        scanner = ds.scanner(columns=read, fragments=[fid], offset=offset, limit=limit, batch_size=plan.batch_size,
                             blob_handling="all_binary")
    for batch in scanner.to_batches():
        pieces = [batch]
        if flt is not None:
            pieces = pa.Table.from_batches([batch]).filter(flt.expression).to_batches()
        for b in pieces:
            if b.num_rows == 0:
                continue
            cols = [b.column(name) for name in plan.out.names]
            cols = [c if c.type == f.type else _cast_for_spark(c, f.type) for c, f in zip(cols, plan.out)]
            yield pa.RecordBatch.from_arrays(cols, schema=plan.out)


def _cast_for_spark(col: pa.Array, to: pa.DataType) -> pa.Array:
    # Spark keeps microseconds: finer timestamps and durations are truncated (documented);
    # every other cast for Spark is exact and checked.
    safe = not (pa.types.is_timestamp(col.type) or pa.types.is_duration(col.type))
    return col.cast(to, safe=safe)


def _read_task(plan: _ReadPlan) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for i in b.column(0).to_pylist():
                yield from _read_partition(plan, plan.tasks[i])

    return run


def read_dataset(
    spark: "SparkSession",
    uri: Union[str, "os.PathLike[str]"],
    *,
    columns: Optional[List[str]] = None,
    filter: Any = None,
    version: Optional[Union[int, str]] = None,
    rows_per_partition: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    batch_size: Optional[int] = None,
) -> "DataFrame":
    """A Spark DataFrame over one version of a Lance dataset.

    The version (default: the latest) is fixed now, when the DataFrame is planned: later
    commits by other writers do not change what it reads. There is one Spark partition per
    fragment, or per range of at most `rows_per_partition` rows of a larger fragment. The
    tasks read only `columns` and apply `filter` (a SQL predicate or a
    ``pyarrow.compute.Expression``) themselves. `columns` and `filter` may name the system
    columns ``_rowid``, ``_rowaddr``, ``_row_created_at_version`` and
    ``_row_last_updated_at_version`` (Spark longs): rows changed since a version, say.

    Column types: fixed-size lists (vectors) become arrays, unsigned integers the next wider
    signed type (``uint64`` → ``decimal(20,0)``), ``float16`` → ``float``, large strings,
    binaries and lists their plain versions; timestamps and durations are truncated to
    microseconds (what Spark stores).

    `batch_size` is the rows per Arrow batch handed to Spark; by default about 16 MiB of
    data per batch, estimated from the column types (every batch costs Spark and Python a
    fixed overhead, so narrow projections get long batches).
    """
    plan, struct = _plan_read(
        uri, columns=columns, filter=filter, version=version, rows_per_partition=rows_per_partition,
        storage_options=storage_options, batch_size=batch_size,
    )
    if not plan.tasks:
        return spark.createDataFrame([], struct)
    return spark.range(0, len(plan.tasks), 1, numPartitions=len(plan.tasks)).mapInArrow(_read_task(plan), struct)


def _plan_read(
    uri: Union[str, "os.PathLike[str]"],
    *,
    columns: Optional[List[str]] = None,
    filter: Any = None,
    version: Optional[Union[int, str]] = None,
    rows_per_partition: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    batch_size: Optional[int] = None,
) -> Tuple[_ReadPlan, Any]:
    """A read planned on the driver: (the tasks' plan, the Spark ``StructType`` they produce).
    The version is fixed here."""
    if rows_per_partition is not None and (
        not isinstance(rows_per_partition, int) or isinstance(rows_per_partition, bool) or rows_per_partition <= 0
    ):
        raise InvalidArgumentError(f"rows_per_partition must be a positive int, got {rows_per_partition!r}")
    if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0):
        raise InvalidArgumentError(f"batch_size must be a positive int, got {batch_size!r}")
    so = None if storage_options is None else dict(storage_options)
    _check_storage_options(so)
    ds = _open_dataset(os.fspath(uri), version, so)
    schema = ds.schema
    if columns is not None:
        columns = list(columns)
        unknown = [c for c in columns if c not in schema.names and c not in FILTER_SYSTEM_COLUMNS]
        if unknown:
            from lancepy.exceptions import ColumnNotFoundError

            raise ColumnNotFoundError(
                f"columns {unknown} do not exist; the dataset has {schema.names} (and the system columns "
                f"{list(FILTER_SYSTEM_COLUMNS)})"
            )
        # (system columns are uint64 that never reach 2**63: Spark longs, as pylance's connector has them)
        projected = pa.schema([schema.field(c) if c in schema.names else pa.field(c, pa.int64(), False) for c in columns])
    else:
        projected = schema
    compile_scan_filter(filter, schema)  # bad filters fail here, not in the tasks
    # Blob columns are read as their values (binary), not as their descriptions.
    blobs = set(ds._view.loaded.blob_columns([n for n in projected.names if n in schema.names]))
    projected = pa.schema(
        [pa.field(f.name, pa.large_binary(), f.nullable) if f.name in blobs else f for f in projected],
        metadata=projected.metadata,
    )
    out, struct = _spark_schema_of(projected)
    tasks: List[Tuple[int, int, Optional[int]]] = []
    rows = ds._snapshot_rows()
    for frag in ds.get_fragments():
        live = rows[frag.fragment_id][1]
        if live == 0:
            continue
        if rows_per_partition is None or live <= rows_per_partition:
            tasks.append((frag.fragment_id, 0, None))
        else:
            for start in range(0, live, rows_per_partition):
                tasks.append((frag.fragment_id, start, min(rows_per_partition, live - start)))
    plan = _ReadPlan(
        uri=ds.uri, version=ds.version, storage_options=so, columns=columns, filter=filter, out=out,
        tasks=tasks, batch_size=batch_size or _rows_per_batch(projected),
    )
    return plan, struct
