"""Upserts on a Spark cluster: :func:`merge_insert` merges a Spark DataFrame into a dataset
keyed on columns, with the matching done in Spark's tasks and one ``Update`` commit, as
:meth:`LanceDataset.merge_insert` would.

The driver pins the dataset's latest version. The source rows and the dataset's keys (with
their row addresses, read one task per fragment) are both hashed on the key columns into
`num_partitions` buckets (Spark's ``xxhash64`` of the keys in the dataset's types) and
cogrouped by bucket, so a bucket holds every source row and every dataset row of its keys.
Each bucket's task runs the local merge's decision (:meth:`MergeInsertBuilder._decide`: the
same refusal of ambiguous matches, conditions and partial-column rules) on its share, writes the rows
to insert or rewrite as new fragments named with the job's tag, and reports them with the
row addresses to delete. Once no task of the job runs any more, the driver keeps one attempt per bucket (the lowest task attempt id
that reported), deletes every other file of the job, writes the deletion files and commits
one ``Update`` against the pinned version; a failed job, a refusal or a conflicting commit
leaves no file of the job behind.

The rows committed equal the local merge's; how the new rows are cut into fragments differs
(one or more fragments per bucket, where the local merge writes one stream).
"""

from __future__ import annotations

import json
import os
import uuid
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa

from lancepy._core.conform import align_to_schema
from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy._ops import mutations as _mutations
from lancepy._ops.write import DEFAULT_MAX_ROWS_PER_FILE, _write
from lancepy._table.commit import commit_on
from lancepy.exceptions import CommitConflictError, InvalidArgumentError, LanceError, SchemaMismatchError
from lancepy.spark import _mapinarrow as _m
from lancepy.spark.backfill import _error

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import DataFrame

    from lancepy.dataset import LanceDataset
    from lancepy.merge_insert import MergeInsertBuilder

__all__ = ["merge_insert"]

_BUCKET = "__lancepy_bucket"
_RESULT_SCHEMA = "bucket int, task_attempt_id bigint, result string"


def merge_insert(
    df: "DataFrame",
    uri: Union[str, "os.PathLike[str]"],
    on: Union[str, List[str], None] = None,
    *,
    when_matched_update_all: Union[bool, str] = False,
    when_matched_delete: bool = False,
    when_matched_fail: bool = False,
    when_not_matched_insert_all: bool = False,
    when_not_matched_by_source_delete: Union[bool, str] = False,
    num_partitions: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
) -> Dict[str, int]:
    """``dataset.merge_insert(on).when_...(...).execute(df)`` for a Spark DataFrame `df`,
    on the latest version of the dataset at `uri`, the matching done in Spark's tasks and
    one ``Update`` commit. Returns the stats the local merge returns
    (``num_updated_rows``, ``num_inserted_rows``, ``num_deleted_rows``).

    Args:
        on: the key column(s); ``None``: the schema's unenforced primary key (as
            :meth:`LanceDataset.merge_insert`).
        when_matched_update_all: ``True``, or the condition (SQL over ``target.col`` and
            ``source.col``) of :meth:`MergeInsertBuilder.when_matched_update_all`.
        when_matched_delete, when_matched_fail, when_not_matched_insert_all: the builder's
            methods of those names.
        when_not_matched_by_source_delete: ``True``, or the filter over the dataset's columns
            of :meth:`MergeInsertBuilder.when_not_matched_by_source_delete`.
        num_partitions: buckets the keys are hashed into (one Spark task each, writing at
            least one fragment where it has rows to write; default Spark's default parallelism).
        storage_options: for the dataset's store (drivers and tasks).

    `df`'s columns are the dataset's (by name, any order; its types cast to the dataset's as
    :func:`write_dataset` casts them) or, for a partial update, the keys and some others.
    A commit made after the version was pinned is not retried: a conflicting one raises
    :class:`CommitConflictError` (pylance's ``conflict_retries`` would rerun the whole job).

    Raises:
        NotSupportedError: pyspark older than 4.0 (no cogrouped Arrow functions).
        InvalidArgumentError: no clause, bad keys, several rows of `df` matching one dataset row, a match under
            ``when_matched_fail`` (nothing of the job remains).
        SchemaMismatchError: `df` has columns the dataset lacks, or lacks a key.
        CommitConflictError: see above (nothing of the job remains).
    """
    from pyspark.sql import functions as F

    from lancepy.exceptions import UnsupportedError

    cogroup = getattr(__import__("pyspark.sql.pandas.group_ops", fromlist=["x"]), "PandasCogroupedOps", None)
    if cogroup is None or not hasattr(cogroup, "applyInArrow"):
        import pyspark

        raise UnsupportedError(
            f"lancepy.spark.merge_insert needs pyspark 4.0 or later (cogrouped applyInArrow); this is {pyspark.__version__}"
        )
    for name, value in (
        ("when_matched_update_all", when_matched_update_all),
        ("when_not_matched_by_source_delete", when_not_matched_by_source_delete),
    ):
        if not isinstance(value, (bool, str)):
            raise InvalidArgumentError(f"{name} is a bool or a SQL condition string, got {type(value).__name__}")
    for name, flag in (
        ("when_matched_delete", when_matched_delete),
        ("when_matched_fail", when_matched_fail),
        ("when_not_matched_insert_all", when_not_matched_insert_all),
    ):
        if not isinstance(flag, bool):
            raise InvalidArgumentError(f"{name} must be a bool, got {flag!r}")
    if num_partitions is not None and (
        isinstance(num_partitions, bool) or not isinstance(num_partitions, int) or num_partitions <= 0
    ):
        raise InvalidArgumentError(f"num_partitions must be a positive int, got {num_partitions!r}")
    so = None if storage_options is None else dict(storage_options)
    _m._check_storage_options(so)
    ds = _m._open_dataset(os.fspath(uri), None, so)
    settings = {
        "on": on,
        "update_all": when_matched_update_all,
        "matched_delete": when_matched_delete,
        "matched_fail": when_matched_fail,
        "insert_all": when_not_matched_insert_all,
        "by_source_delete": when_not_matched_by_source_delete,
    }
    builder = _builder(ds, settings)  # the local checks, on the driver
    builder._check_clauses()
    keys = list(builder._on)
    settings["on"] = keys
    names = list(df.columns)
    extra = [c for c in names if c not in ds.schema.names]
    if extra or len(set(names)) != len(names):
        raise SchemaMismatchError(
            f"merge_insert: the source's columns {names} are not the dataset's (it has no {extra}; "
            f"the dataset's columns are {ds.schema.names})"
        )
    lacking = [k for k in keys if k not in names]
    if lacking:
        raise SchemaMismatchError(f"the source lacks merge key column(s) {lacking}")

    spark = df.sparkSession
    n = num_partitions or _m._parallelism(spark)
    key_arrow, key_struct = _m._spark_schema_of(pa.schema([ds.schema.field(k) for k in keys]))
    source = df
    for f in key_struct.fields:  # the same Spark types on both sides, so the same hashes
        source = source.withColumn(f.name, F.col(f.name).cast(f.dataType))
    bucket = F.pmod(F.xxhash64(*[F.col(k) for k in keys]), F.lit(n)).cast("int")
    source = source.withColumn(_BUCKET, bucket)
    fids = [f.fragment_id for f in ds.get_fragments()]
    target_schema = key_struct.add(ROW_ADDRESS, "long", False).add(ROW_ID, "long", False)
    if fids:
        target = spark.range(0, len(fids), 1, numPartitions=min(len(fids), max(n, 1)))
        target = target.mapInArrow(_key_reader(ds.uri, ds.version, so, keys, key_arrow, fids), target_schema)
    else:
        target = spark.createDataFrame([], target_schema)
    target = target.withColumn(_BUCKET, bucket)
    job_tag = uuid.uuid4().hex[:16]
    store = _m._store(ds.uri, so)
    run = _bucket_task(ds.uri, ds.version, so, settings, job_tag)
    try:
        job = source.groupBy(_BUCKET).cogroup(target.groupBy(_BUCKET)).applyInArrow(run, _RESULT_SCHEMA)
        rows = _m._run_job(spark, f"lancepy-merge-insert-{job_tag}", f"lancepy.spark.merge_insert {ds.uri}", job.collect)
    except BaseException:
        _m._delete_job_files(store, job_tag)
        raise
    try:
        results = _choose(rows)
        errors = [results[b] for b in sorted(results) if "error" in results[b]]
        if errors:
            raise _error(errors[0])
        return _commit(ds, store, job_tag, [results[b] for b in sorted(results)])
    except BaseException:
        _m._delete_job_files(store, job_tag)
        raise


def _builder(ds: "LanceDataset", settings: Dict[str, Any]) -> "MergeInsertBuilder":
    """The local merge's builder for `settings` (the function's arguments)."""
    b = ds.merge_insert(settings["on"])
    if settings["update_all"] is not False:
        b.when_matched_update_all(None if settings["update_all"] is True else settings["update_all"])
    if settings["matched_delete"]:
        b.when_matched_delete()
    if settings["matched_fail"]:
        b.when_matched_fail()
    if settings["insert_all"]:
        b.when_not_matched_insert_all()
    if settings["by_source_delete"] is not False:
        b.when_not_matched_by_source_delete(
            None if settings["by_source_delete"] is True else settings["by_source_delete"]
        )
    return b


def _key_reader(
    uri: str,
    version: int,
    storage_options: Optional[Dict[str, str]],
    keys: List[str],
    key_arrow: pa.Schema,
    fids: List[int],
) -> Any:
    """mapInArrow function: the live rows' keys (as Spark takes them), row addresses and row
    ids (stable ones, or the addresses) of the fragments whose positions in `fids` it is
    given."""

    def run(batches: Any) -> Any:
        ds = _m._open_dataset(uri, version, storage_options)
        for b in batches:
            for i in b.column(0).to_pylist():
                t = ds.get_fragment(fids[i]).to_table(columns=keys, with_row_address=True, with_row_id=True)
                cols = [_m._cast_for_spark(t.column(k).combine_chunks(), key_arrow.field(k).type) for k in keys]
                cols += [t.column(c).combine_chunks().cast(pa.int64()) for c in (ROW_ADDRESS, ROW_ID)]
                yield from pa.Table.from_arrays(cols, names=keys + [ROW_ADDRESS, ROW_ID]).to_batches()

    return run


def _bucket_task(
    uri: str, version: int, storage_options: Optional[Dict[str, str]], settings: Dict[str, Any], job_tag: str
) -> Any:
    def run(key: Tuple[Any, ...], source: pa.Table, target: pa.Table) -> pa.Table:
        from pyspark import TaskContext

        tid = TaskContext.get().taskAttemptId()
        bucket = key[0].as_py()
        result = _merge_bucket(uri, version, storage_options, settings, f"{job_tag}-{bucket}-{tid}", source, target)
        return pa.table(
            {"bucket": pa.array([bucket], pa.int32()), "task_attempt_id": pa.array([tid], pa.int64()),
             "result": pa.array([json.dumps(result)])}
        )

    return run


def _merge_bucket(
    uri: str,
    version: int,
    storage_options: Optional[Dict[str, str]],
    settings: Dict[str, Any],
    tag: str,
    source: pa.Table,
    target: pa.Table,
) -> Dict[str, Any]:
    """One bucket's share of the merge: ``{"stats", "fragments", "deletes"}`` (new fragments'
    JSON, row addresses to delete as hex of little-endian uint64), or ``{"error", "kind"}``."""
    ds = _m._open_dataset(uri, version, storage_options)
    try:
        builder = _builder(ds, settings)
        keys = settings["on"]
        source = source.drop_columns([_BUCKET])
        present = pa.schema([ds.schema.field(n) for n in ds.schema.names if n in source.column_names])
        source = pa.Table.from_batches(list(_m._conform(iter(source.to_batches()), present)), present)
        source, missing = builder._source(source, None)
        ids = [ROW_ID] if ds._view.stable_row_ids else []  # (the ids updated rows keep)
        target = pa.Table.from_arrays(
            [target.column(k).cast(ds.schema.field(k).type) for k in keys]
            + [target.column(c).cast(pa.uint64()) for c in [ROW_ADDRESS] + ids],
            names=keys + [ROW_ADDRESS] + ids,
        )
        stats, addresses, rows, kept = builder._decide(source, missing, target)
        fragments: List[Dict[str, Any]] = []
        if rows is not None and rows.num_rows:
            made = _write(
                ds._view.uri,
                align_to_schema(rows.to_reader(), ds.schema),
                ds._view.loaded.field_entries,
                ds._view.loaded.schema_metadata,
                DEFAULT_MAX_ROWS_PER_FILE,
                ds.data_storage_version,
                file_tag=tag,
                storage_options=ds._view.storage_options,
            )
            fragments = [f._manifest_json() for f in made]
            _mutations.keep_row_ids(ds._view, fragments, kept)
    except LanceError as e:
        return {"error": str(e), "kind": type(e).__name__}
    deletes = b"" if addresses is None else addresses.to_numpy(zero_copy_only=False).astype("<u8").tobytes()
    return {"stats": stats, "fragments": fragments, "deletes": deletes.hex()}


def _choose(rows: Sequence[Any]) -> Dict[int, Dict[str, Any]]:
    """One result per bucket that reported: the lowest task attempt id's."""
    best: Dict[int, Tuple[int, str]] = {}
    for bucket, attempt, result in rows:
        if bucket not in best or attempt < best[bucket][0]:
            best[bucket] = (attempt, result)
    return {b: json.loads(r) for b, (_, r) in best.items()}


def _commit(ds: "LanceDataset", store: Any, job_tag: str, results: List[Dict[str, Any]]) -> Dict[str, int]:
    """Deletes the job's files no chosen result holds, then commits one ``Update``: the
    deletion files (written here) and the buckets' new fragments."""
    stats = {k: sum(r["stats"][k] for r in results) for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}
    frags = [f for r in results for f in r["fragments"]]
    kept = [f"{_m.DATA_DIR}/{d['path']}" for f in frags for d in f["files"]]
    _m._delete_job_files(store, job_tag, keep=kept)
    addresses = np.concatenate([np.frombuffer(bytes.fromhex(r["deletes"]), "<u8") for r in results] or [np.array([], "<u8")])
    updated, removed, written = _mutations._write_deletions(ds._view, pa.array(addresses, pa.uint64()))
    # (a merge that changes nothing commits a version all the same, as the local one)
    body = _mutations.update_body(ds._view, removed, updated, frags, ds.schema.names)
    read_version = ds.version
    try:
        ds._install(commit_on(ds._view, "Update", body, list(written) + kept))
    except CommitConflictError as e:
        raise CommitConflictError(
            f"lancepy.spark.merge_insert started from version {read_version} and cannot commit: {e}. "
            "Nothing was committed and the job's files were deleted."
        ) from e
    return stats
