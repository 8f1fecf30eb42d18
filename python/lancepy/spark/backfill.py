"""Backfills on a Spark cluster: :func:`add_columns` computes new columns with one Spark task
per fragment and commits them once, as :meth:`LanceDataset.add_columns` would.

The driver pins the dataset's latest version and checks the arguments; each task opens that
version, computes its fragment's new columns exactly as the local operation does
(:func:`lancepy._ops.evolution.fragment_values`: runs of `batch_size` physical rows with the
deleted ones left out, deleted rows null), writes them as one data file named with the job's
tag and reports the file. Once no task of the job runs any more (stragglers are waited for,
as by :func:`write_dataset`), the driver keeps one attempt per fragment (the lowest task attempt
id that reported), deletes every other file of the job, and commits one ``Merge`` against the
pinned version; a failed job, a refused argument found late or a conflicting commit leaves no
file of the job behind.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import pyarrow as pa

from lancepy._core.schema import ROW_ADDRESS, ROW_ID, lance_fields_for
from lancepy._ops import evolution as _evolution
from lancepy import exceptions as _exceptions
from lancepy.exceptions import (
    ColumnNotFoundError,
    CommitConflictError,
    InvalidArgumentError,
    LanceError,
    UnsupportedError,
)
from lancepy.filters import compile_expression
from lancepy.spark import _mapinarrow as _m
from lancepy.udf import BatchUDF

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

__all__ = ["add_columns"]

_RESULT_SCHEMA = "fragment bigint, task_attempt_id bigint, result string"


def add_columns(
    spark: "SparkSession",
    uri: Union[str, "os.PathLike[str]"],
    transforms: Any,
    read_columns: Optional[List[str]] = None,
    reader_schema: Optional[pa.Schema] = None,
    batch_size: Optional[int] = None,
    *,
    storage_options: Optional[Dict[str, str]] = None,
) -> int:
    """:meth:`LanceDataset.add_columns` on the latest version of the dataset at `uri`, with
    one Spark task per fragment computing and writing its new columns; one ``Merge`` commit.
    The arguments mean what they mean there; the result is the version that call would
    commit (the same rows, schema and data-file layout: one new file per fragment). Returns
    the new version.

    `transforms`: a function ``batch -> batch/table/dict`` (pickled to the tasks; a
    :func:`~lancepy.udf.batch_udf` without a checkpoint file), a dict of new column names to
    SQL expressions, or ``pyarrow`` field(s) / schema (all-null columns: metadata only, so
    committed by the driver without a job).

    Raises:
        NotSupportedError: precomputed values (a table or reader: there is nothing to
            distribute; use ``LanceDataset.add_columns``), `reader_schema` (it goes with
            them), a ``batch_udf`` with a checkpoint file (the checkpoint is a local file).
        InvalidArgumentError: bad arguments, a function whose results disagree across
            fragments or with the local rules (nothing of the job remains).
        CommitConflictError: a commit made after the version was pinned conflicts with the
            ``Merge`` (nothing of the job remains).
    """
    if reader_schema is not None:
        raise UnsupportedError(
            "lancepy.spark.add_columns: reader_schema goes with precomputed values, which are not distributed; "
            "use LanceDataset.add_columns"
        )
    if isinstance(transforms, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)) or (
        hasattr(transforms, "__arrow_c_stream__") and not callable(transforms)
    ):
        raise UnsupportedError(
            "lancepy.spark.add_columns: precomputed values are not distributed; use LanceDataset.add_columns"
        )
    if isinstance(transforms, BatchUDF) and transforms.cache is not None:
        raise UnsupportedError(
            "lancepy.spark.add_columns: a batch_udf with a checkpoint file (the checkpoint is a file on the driver); "
            "use a batch_udf without checkpoint_file"
        )
    if batch_size is None:
        batch_size = _evolution._UDF_BATCH_SIZE
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise InvalidArgumentError(f"batch_size must be a positive int, got {batch_size!r}")
    so = None if storage_options is None else dict(storage_options)
    _m._check_storage_options(so)
    ds = _m._open_dataset(os.fspath(uri), None, so)
    schema = ds.schema
    if isinstance(transforms, (pa.Field, pa.Schema)) or (
        isinstance(transforms, list) and transforms and all(isinstance(f, pa.Field) for f in transforms)
    ):
        ds.add_columns(transforms)  # all-null columns: a metadata-only commit, nothing to compute
        return ds.version
    if isinstance(transforms, dict):
        if read_columns is not None:
            raise InvalidArgumentError("add_columns: read_columns applies to functions, not to SQL expressions")
        bad = [k for k, v in transforms.items() if not isinstance(k, str) or not isinstance(v, str)]
        if bad or not transforms:
            raise InvalidArgumentError(
                "lancepy.spark.add_columns with a dict needs new column names mapped to SQL expression strings"
            )
        compiled = {n: compile_expression(e, schema) for n, e in transforms.items()}  # checked here
        if all(_evolution._is_null_cast(e) for e in transforms.values()):
            ds.add_columns(transforms)  # CAST(NULL AS ...) only: metadata-only, as the local operation
            return ds.version
        _, columns = _evolution.sql_function(schema, compiled)
    elif callable(transforms):
        columns = list(read_columns) if read_columns is not None else schema.names
        missing = [c for c in columns if c not in schema.names and c not in (ROW_ID, ROW_ADDRESS)]
        if missing:
            raise ColumnNotFoundError(f"add_columns: no columns {missing} in the dataset (columns are {schema.names})")
    else:
        raise InvalidArgumentError(f"add_columns cannot use a {type(transforms).__name__}")
    fids = [f.fragment_id for f in ds.get_fragments()]
    if not fids:
        raise InvalidArgumentError("cannot compute columns for a dataset without rows; add all-null columns instead")
    job_tag = uuid.uuid4().hex[:16]
    store = _m._store(ds.uri, so)
    plan = _Plan(ds.uri, ds.version, so, transforms, columns, batch_size, ds.max_field_id + 1, job_tag, fids)
    job = spark.range(0, len(fids), 1, numPartitions=len(fids))
    try:
        rows = _m._run_job(spark, f"lancepy-add-columns-{job_tag}", f"lancepy.spark.add_columns {ds.uri}",
                           job.mapInArrow(_task(plan), _RESULT_SCHEMA).collect)
    except BaseException:
        _m._delete_job_files(store, job_tag)
        raise
    try:
        results = _choose(rows, fids)
        errors = [r for r in results.values() if "error" in r]
        if errors:
            raise _error(errors[0])
        schemas = {r["schema"] for r in results.values()}
        if len(schemas) != 1:
            raise InvalidArgumentError(
                "lancepy.spark.add_columns: the function's new columns have different types in different fragments: "
                + "; ".join(sorted(str(_schema_from(s)) for s in schemas))
            )
        new_schema = _schema_from(schemas.pop())
        _evolution._check_new_names(ds._view, new_schema)
        lance = lance_fields_for(new_schema, plan.first_id)
        files = {fid: r["file"] for fid, r in results.items()}
        kept = [f"{_m.DATA_DIR}/{f['path']}" for f in files.values()]
        _m._delete_job_files(store, job_tag, keep=kept)
        try:
            ds._install(_evolution.commit_new_columns(ds._view, files, lance, kept))
        except CommitConflictError as e:
            raise CommitConflictError(
                f"lancepy.spark.add_columns started from version {plan.version} and cannot commit: {e}. "
                "Nothing was committed and the job's files were deleted."
            ) from e
    except BaseException:
        _m._delete_job_files(store, job_tag)
        raise
    return ds.version


class _Plan:
    """What every task needs (pickled to it)."""

    def __init__(
        self,
        uri: str,
        version: int,
        storage_options: Optional[Dict[str, str]],
        transforms: Any,
        columns: List[str],
        batch_size: int,
        first_id: int,
        job_tag: str,
        fids: List[int],
    ) -> None:
        self.uri, self.version, self.storage_options = uri, version, storage_options
        self.transforms, self.columns, self.batch_size = transforms, columns, batch_size
        self.first_id, self.job_tag, self.fids = first_id, job_tag, fids

    def function(self, schema: pa.Schema) -> Callable[[pa.RecordBatch], Any]:
        if isinstance(self.transforms, dict):
            compiled = {n: compile_expression(e, schema) for n, e in self.transforms.items()}
            return _evolution.sql_function(schema, compiled)[0]
        return self.transforms


def _schema_text(schema: pa.Schema) -> str:
    return schema.serialize().to_pybytes().hex()


def _schema_from(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(bytes.fromhex(text)))


def _run_fragment(plan: _Plan, fid: int, tid: int) -> Dict[str, Any]:
    """One fragment's new columns written as one data file: ``{"schema", "file"}``, or
    ``{"error"}`` for a refusal the driver raises (lancepy's errors, not Spark's)."""
    ds = _m._open_dataset(plan.uri, plan.version, plan.storage_options)
    try:
        table = _evolution.fragment_values(ds._view, plan.function(ds.schema), plan.columns, fid, plan.batch_size)
        new_schema = _evolution.nullable_schema(table.schema)
        lance = lance_fields_for(new_schema, plan.first_id)
        tag = f"{plan.job_tag}-{fid}-{tid}"
        written = _evolution.new_columns_file(ds._view, fid, table, new_schema, lance, file_tag=tag)
    except LanceError as e:
        return {"error": str(e), "kind": type(e).__name__}
    return {"schema": _schema_text(new_schema), "file": written}


def _task(plan: _Plan) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        tid = TaskContext.get().taskAttemptId()
        for b in batches:
            for i in b.column(0).to_pylist():
                fid = plan.fids[i]
                result = _run_fragment(plan, fid, tid)
                yield pa.RecordBatch.from_arrays(
                    [pa.array([fid], pa.int64()), pa.array([tid], pa.int64()), pa.array([json.dumps(result)])],
                    names=["fragment", "task_attempt_id", "result"],
                )

    return run


def _error(result: Dict[str, Any]) -> LanceError:
    """The lancepy error a task reported, as the driver raises it."""
    cls = getattr(_exceptions, result.get("kind", ""), None)
    if not (isinstance(cls, type) and issubclass(cls, LanceError)):
        cls = InvalidArgumentError
    return cls(result["error"])


def _choose(rows: List[Any], fids: List[int]) -> Dict[int, Dict[str, Any]]:
    """One result per fragment: the lowest task attempt id that reported."""
    best: Dict[int, Tuple[int, str]] = {}
    for fid, attempt, result in rows:
        if fid not in best or attempt < best[fid][0]:
            best[fid] = (attempt, result)
    lacking = sorted(set(fids) - set(best))
    if lacking:
        raise InvalidArgumentError(f"lancepy.spark.add_columns: fragments {lacking} reported nothing")
    return {fid: json.loads(best[fid][1]) for fid in fids}
