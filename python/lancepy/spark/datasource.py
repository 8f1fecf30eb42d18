"""The Python data source ``"lance"`` (pyspark 4.1 and later; registered by
:func:`lancepy.spark.register`).

Reading: ``spark.read.format("lance").load(uri)``. The version (option ``version``, default
the latest) is fixed when the DataFrame is created (``load()``): Spark calls
:meth:`LanceDataSource.schema` once there and keeps the data source object it pickled
afterwards, so later commits do not change what the DataFrame reads. One input partition
per fragment, or per row range of at most ``rows_per_partition`` rows (as
:func:`~lancepy.spark.read_dataset` plans); the tasks yield Arrow record batches.

With the option ``pushFilters=true``, filters Spark hands to :meth:`LanceReader.pushFilters`
are turned into one lancepy SQL filter where the translation is exact under SQL's
three-valued logic: comparisons, ``IN``, ``IS [NOT] NULL``, ``<=>``, ``NOT`` and
``LIKE 'abc%'`` / ``'%abc'`` / ``'%abc%'`` on top-level columns of type integer, boolean,
string or date, with literals that fit the column. Every other filter (floats, whose
``NaN`` and ``-0.0`` Spark orders its own way; timestamps; decimals; nested fields; ...) is
handed back to Spark, which evaluates it after the scan.

Pushdown is off by default because of a defect of Spark 4.3: the JVM side
(``PythonDataSourceV2.readInfo``) keeps the reader planned for one query of a DataFrame and
reuses it for a later query of the same DataFrame that has *no* filter at all, so after
``df.where("x > 5").count()`` a ``df.count()`` would still apply ``x > 5``. With pushdown,
give each query that filters its own ``spark.read...load()`` (or never run an unfiltered
query on a DataFrame that ran a filtered one).

pyspark 4.3 does not hand a Python data source the columns a query needs (there is no
column pruning for Python data sources); the option ``columns`` (comma-separated names)
restricts what is read. It may also name the system columns ``_rowid``, ``_rowaddr``,
``_row_created_at_version`` and ``_row_last_updated_at_version`` (longs; Spark's ``where``
on them is pushed down like any other column's), and the ``filter`` option may use them
without reading them: ``option("filter", "_row_last_updated_at_version > 12")`` reads the
rows changed after version 12.

Options (names are case-insensitive, as Spark passes them): ``path`` (``load(uri)``),
``version``, ``columns``, ``filter`` (a lancepy SQL filter applied in the scan),
``rows_per_partition``, ``batch_size``, ``pushFilters`` (``true``/``false``, default
``false``: whether the reader takes filters; Spark refuses to plan a reader that takes
filters while ``spark.sql.python.filterPushdown.enabled`` is off) and ``storage_options.<key>`` (one per
object-store option). Writing takes ``path``, ``max_rows_per_file``,
``max_bytes_per_file``, ``data_storage_version``, ``vector_columns`` (``"emb:768,v:4"``)
and ``storage_options.<key>``. Any other option raises
:class:`~lancepy.exceptions.NotSupportedError`.

Writing: ``df.write.format("lance").mode("append" | "overwrite").save(uri)``. Spark itself
refuses the modes ``error``/``errorifexists`` (its default) and ``ignore`` for Python data
sources. The writer is made on the driver, which fixes the job's read version and schema
(as :func:`~lancepy.spark.write_dataset` does); each task writes data files tagged with
the job and returns their fragments as its commit message; :meth:`LanceWriter.commit`
deletes every file of the job that the messages do not reference (retried and failed
attempts), then commits once. :meth:`LanceWriter.abort` deletes every file of the job. A
commit made meanwhile that conflicts raises
:class:`~lancepy.exceptions.CommitConflictError` (nothing of the job remains). An append
to a path with no dataset creates it. Spark does not tell a Python data source's commit
when killed attempts (speculative duplicates) have stopped; a file one of them finishes
after the commit is referenced by no version, and
:meth:`~lancepy.dataset.LanceDataset.cleanup_old_versions` removes it.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
    WriterCommitMessage,
)

from lancepy.exceptions import InvalidArgumentError, UnsupportedError
from lancepy.fragment import DEFAULT_MAX_ROWS_PER_FILE, FragmentMetadata
from lancepy.spark import _mapinarrow as _m

__all__ = ["LanceDataSource", "LanceReader", "LanceWriter", "register", "filter_to_sql"]

_STORAGE_PREFIX = "storage_options."
_READ_OPTIONS = ("path", "version", "columns", "filter", "rows_per_partition", "batch_size", "pushfilters")
_WRITE_OPTIONS = ("path", "max_rows_per_file", "max_bytes_per_file", "data_storage_version", "vector_columns")


def register(spark: Any, *, filter_pushdown: bool = True) -> None:
    """See :func:`lancepy.spark.register`."""
    if not isinstance(filter_pushdown, bool):
        raise InvalidArgumentError(f"filter_pushdown must be a bool, got {filter_pushdown!r}")
    if filter_pushdown:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(LanceDataSource)


# -- options ------------------------------------------------------------------------------


def _options(options: Mapping[str, str], known: Sequence[str]) -> Tuple[Dict[str, str], Optional[Dict[str, str]]]:
    """(the data source's options by lower-case name, the storage options or None)."""
    mine: Dict[str, str] = {}
    storage: Dict[str, str] = {}
    for key, value in options.items():
        k = key.lower()
        if k.startswith(_STORAGE_PREFIX) and len(k) > len(_STORAGE_PREFIX):
            storage[key[len(_STORAGE_PREFIX):]] = value
        elif k in known:
            mine[k] = value
        else:
            raise UnsupportedError(
                f"the lance data source has no option {key!r} here (it takes {', '.join(known)} and storage_options.<key>)"
            )
    if "path" not in mine or not mine["path"]:
        raise InvalidArgumentError("the lance data source needs a path: load(uri) / save(uri)")
    return mine, (storage or None)


def _positive_int(opts: Mapping[str, str], name: str) -> Optional[int]:
    if name not in opts:
        return None
    try:
        n = int(opts[name])
    except ValueError:
        raise InvalidArgumentError(f"option {name} must be a positive integer, got {opts[name]!r}") from None
    if n <= 0:
        raise InvalidArgumentError(f"option {name} must be a positive integer, got {opts[name]!r}")
    return n


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    v = opts.get(name)
    if v is None:
        return default
    if v.strip().lower() not in ("true", "false"):
        raise InvalidArgumentError(f"option {name} must be true or false, got {v!r}")
    return v.strip().lower() == "true"


def _version(opts: Mapping[str, str]) -> Any:
    v = opts.get("version")
    if v is None:
        return None
    return int(v) if v.strip().isdigit() else v  # a number or a tag


# -- the data source ------------------------------------------------------------------------


class LanceDataSource(DataSource):
    """The data source ``"lance"`` (see the module docs)."""

    def __init__(self, options: Dict[str, str]) -> None:
        super().__init__(options)
        # (reader planned by schema(): this object belongs to one DataFrame, pinned at load())
        self._plan: Optional[Tuple[Any, Any]] = None

    @classmethod
    def name(cls) -> str:
        return "lance"

    def schema(self) -> Any:
        self._plan = _plan(self.options)  # pins the version: this object is pickled after
        return self._plan[1]

    def reader(self, schema: Any) -> DataSourceReader:
        plan = self._plan
        if plan is None:  # the user gave a schema, so Spark did not ask for ours
            plan = _plan(self.options)
            if schema != plan[1]:
                raise UnsupportedError(
                    f"a schema given to spark.read for a lance dataset must be the dataset's: {plan[1].simpleString()} "
                    f"(got {schema.simpleString()}); use the option columns to read fewer columns"
                )
        opts, _ = _options(self.options, _READ_OPTIONS)
        if _bool(opts, "pushfilters", False):
            return LanceReader(plan[0])
        return LanceReaderWithoutPushdown(plan[0])

    def writer(self, schema: Any, overwrite: bool) -> "LanceWriter":
        opts, storage = _options(self.options, _WRITE_OPTIONS)
        vectors = None
        if opts.get("vector_columns"):
            vectors = {}
            for item in opts["vector_columns"].split(","):
                name, _, dim = item.strip().rpartition(":")
                if not name or not dim.strip().isdigit():
                    raise InvalidArgumentError(
                        f"option vector_columns must be 'column:dimension,...', got {opts['vector_columns']!r}"
                    )
                vectors[name] = int(dim)
        job = _m._prepare_write(
            opts["path"],
            "overwrite" if overwrite else "append",
            _m._spark_to_arrow(schema, "UTC"),
            max_rows_per_file=_positive_int(opts, "max_rows_per_file") or DEFAULT_MAX_ROWS_PER_FILE,
            max_bytes_per_file=_positive_int(opts, "max_bytes_per_file") or _m.DEFAULT_MAX_BYTES_PER_FILE,
            data_storage_version=opts.get("data_storage_version"),
            storage_options=storage,
            vector_columns=vectors,
        )
        return LanceWriter(job, overwrite)


def _plan(options: Mapping[str, str]) -> Tuple[Any, Any]:
    opts, storage = _options(options, _READ_OPTIONS)
    _bool(opts, "pushfilters", False)
    columns = None
    if "columns" in opts:
        columns = [c.strip() for c in opts["columns"].split(",") if c.strip()]
        if not columns:
            raise InvalidArgumentError("option columns names no column")
    plan, struct = _m._plan_read(
        opts["path"], columns=columns, filter=opts.get("filter") or None, version=_version(opts),
        rows_per_partition=_positive_int(opts, "rows_per_partition"), storage_options=storage,
        batch_size=_positive_int(opts, "batch_size"),
    )
    # Spark checks every batch against exactly this Arrow schema (time zones, nested field
    # names); the tasks cast to it (a relabelling: the values are those of plan.out).
    from pyspark.sql.pandas.types import to_arrow_schema

    return dataclasses.replace(plan, out=to_arrow_schema(struct, timezone="UTC")), struct


# -- reading ------------------------------------------------------------------------------


class LanceReaderWithoutPushdown(DataSourceReader):
    """Reads one planned version; Spark evaluates every filter itself."""

    def __init__(self, plan: Any) -> None:
        self.plan = plan
        self.pushed: List[str] = []

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(task) for task in self._with_pushed().tasks] or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:  # an empty dataset: one partition with no rows
            return
        yield from _m._read_partition(self._with_pushed(), tuple(partition.value))

    def _with_pushed(self) -> Any:
        """The plan with the pushed filters ANDed to the ``filter`` option."""
        if not self.pushed:
            return self.plan
        parts = ([f"({self.plan.filter})"] if self.plan.filter else []) + [f"({p})" for p in self.pushed]
        return _m._ReadPlan(**{**self.plan.__dict__, "filter": " AND ".join(parts)})

    @property
    def filter(self) -> Optional[str]:
        """The filter the scans apply (the ``filter`` option and the pushed filters)."""
        return self._with_pushed().filter


class LanceReader(LanceReaderWithoutPushdown):
    """Reads one planned version; filters that translate exactly run in lancepy's scan."""

    def pushFilters(self, filters: List[Filter]) -> Iterable[Filter]:
        schema = _arrow_schema_of(self.plan)
        rest = []
        for f in filters:
            sql = filter_to_sql(f, schema)
            if sql is None:
                rest.append(f)
            else:
                self.pushed.append(sql)
        return rest


def _arrow_schema_of(plan: Any) -> pa.Schema:
    """The dataset's own Arrow schema at the planned version (types before Spark's), and the
    system columns the plan reads (uint64)."""
    ds = _m._open_dataset(plan.uri, plan.version, plan.storage_options)
    system = [c for c in plan.columns or [] if c not in ds.schema.names]
    return pa.schema(list(ds.schema) + [pa.field(c, pa.uint64(), False) for c in system])


# -- filters -----------------------------------------------------------------------------

_INT_RANGES = {
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
    # (the system columns, Spark longs: literals a long and a uint64 compare alike)
    pa.uint64(): (0, 2**63 - 1),
}


def _column(attribute: Tuple[str, ...], schema: pa.Schema) -> Optional[Tuple[str, pa.DataType]]:
    if len(attribute) != 1 or "`" in attribute[0]:
        return None
    name = attribute[0]
    if schema.get_field_index(name) < 0:
        return None
    t = schema.field(name).type
    if t in _INT_RANGES or pa.types.is_boolean(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        return f"`{name}`", t
    if pa.types.is_date32(t):
        return f"`{name}`", t
    return None


def _literal(value: Any, t: pa.DataType) -> Optional[str]:
    """`value` as a SQL literal of type `t`, or None where it is not one exactly."""
    if value is None:
        return "NULL"
    if t in _INT_RANGES:
        if type(value) is not int:
            return None
        lo, hi = _INT_RANGES[t]
        return str(value) if lo <= value <= hi else None
    if pa.types.is_boolean(t):
        return ("TRUE" if value else "FALSE") if type(value) is bool else None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "'" + value.replace("'", "''") + "'" if type(value) is str else None
    if pa.types.is_date32(t):
        return f"DATE '{value.isoformat()}'" if type(value) is datetime.date else None
    return None


def filter_to_sql(f: Filter, schema: pa.Schema) -> Optional[str]:
    """A lancepy SQL predicate with exactly `f`'s meaning in Spark (three-valued), or None."""
    if isinstance(f, Not):
        inner = filter_to_sql(f.child, schema)
        return None if inner is None else f"NOT ({inner})"
    col = _column(f.attribute, schema)
    if col is None:
        return None
    name, t = col
    if isinstance(f, (IsNull, IsNotNull)):
        return f"{name} IS {'NOT ' if isinstance(f, IsNotNull) else ''}NULL"
    if isinstance(f, (StringStartsWith, StringEndsWith, StringContains)):
        lit = _literal(f.value, t) if isinstance(f.value, str) else None
        if lit is None or not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            return None
        fn = {StringStartsWith: "starts_with", StringEndsWith: "ends_with", StringContains: "contains"}[type(f)]
        return f"{fn}({name}, {lit})"
    if isinstance(f, In):
        if not f.value:
            return None
        lits = [_literal(v, t) for v in f.value]
        return None if any(lit is None for lit in lits) else f"{name} IN ({', '.join(lits)})"
    op = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}.get(type(f))
    if op is not None:
        if f.value is None:
            return None  # `a = NULL`: Spark folds these; not worth a special case
        lit = _literal(f.value, t)
        return None if lit is None else f"{name} {op} {lit}"
    if isinstance(f, EqualNullSafe):
        if f.value is None:
            return f"{name} IS NULL"
        lit = _literal(f.value, t)
        return None if lit is None else f"({name} IS NOT NULL AND {name} = {lit})"
    return None


# -- writing ------------------------------------------------------------------------------


@dataclass
class LanceCommitMessage(WriterCommitMessage):
    """One task attempt's fragments (JSON) and who wrote them."""

    fragments: List[str]
    partition_id: int
    task_attempt_id: int


class LanceWriter(DataSourceArrowWriter):
    """Writes one job (see the module docs); made on the driver, pickled into the tasks."""

    def __init__(self, job: Any, overwrite: bool) -> None:
        self.job = dataclasses.replace(job, store=None)  # a native store is not pickled
        self.overwrite = overwrite

    def _job(self) -> Any:
        plan = self.job.plan
        return dataclasses.replace(self.job, store=_m._store(plan.uri, plan.storage_options))

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        pid, attempt, tid = ctx.partitionId(), ctx.attemptNumber(), ctx.taskAttemptId()
        result = _m._write_partition(self.job.plan, iterator, pid, attempt, tid)
        return LanceCommitMessage(result.column(0).to_pylist(), pid, tid)

    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        rows = []
        for m in messages:
            if not isinstance(m, LanceCommitMessage):
                raise InvalidArgumentError(f"the lance writer got a commit message it did not write: {m!r}")
            rows.extend((frag, m.partition_id, 0, m.task_attempt_id) for frag in m.fragments)
        frags: List[FragmentMetadata] = _m._choose_attempts(rows)
        mode = "overwrite" if self.overwrite else "append"
        _m._commit_job(self._job(), frags, f"df.write.format('lance').mode({mode!r}).save({self.job.plan.uri!r})")

    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        _m._delete_job_files(self._job().store, self.job.plan.job_tag)

