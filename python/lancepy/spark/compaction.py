"""Compaction on a Spark cluster: :func:`compact_files` plans on the driver
(:meth:`lancepy.optimize.Compaction.plan`), runs each :class:`~lancepy.optimize.CompactionTask`
in a Spark task, and commits the results once (:meth:`~lancepy.optimize.Compaction.commit`).

As for writes (:mod:`lancepy.spark._mapinarrow`), every data file the job writes carries the
job's tag; the driver keeps one attempt per task (the lowest task attempt id that reported),
deletes every other file of the job, and deletes all of them if the job or the commit fails.
"""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple, Union

import pyarrow as pa

from lancepy.exceptions import InvalidArgumentError
from lancepy.optimize import _OPTION_NAMES, Compaction, CompactionMetrics, CompactionPlan, RewriteResult, _execute
from lancepy.spark import _mapinarrow as _m

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

__all__ = ["compact_files"]

_RESULT_SCHEMA = "task int, task_attempt_id bigint, result string"


def compact_files(
    spark: "SparkSession",
    uri: Union[str, "os.PathLike[str]"],
    *,
    storage_options: Optional[Dict[str, str]] = None,
    **options: Any,
) -> CompactionMetrics:
    """Compacts the latest version of the dataset at `uri` with Spark's tasks doing the
    rewriting. `options` are :meth:`LanceDataset.optimize.compact_files`'s (pylance's
    ``CompactionOptions``), with the same meaning; the result is the version that call would
    commit (one ``ReserveFragments`` and one ``Rewrite``), made by one task per group of
    fragments. Returns the metrics summed over the tasks.

    Raises:
        InvalidArgumentError: an option that compaction does not have, or a bad value.
        CommitConflictError: a commit made after the plan conflicts with the rewrite
            (nothing of the job remains).
    """
    unknown = sorted(set(options) - set(_OPTION_NAMES))
    if unknown:
        raise InvalidArgumentError(f"compact_files: unknown compaction options {unknown} (it takes {list(_OPTION_NAMES)})")
    so = None if storage_options is None else dict(storage_options)
    _m._check_storage_options(so)
    ds = _m._open_dataset(os.fspath(uri), None, so)
    plan = Compaction.plan(ds, options)
    if not plan.tasks:
        return Compaction.commit(ds, [], options)
    job_tag = uuid.uuid4().hex[:16]
    store = _m._store(ds.uri, so)
    job = spark.range(0, plan.num_tasks(), 1, numPartitions=plan.num_tasks())
    try:
        rows = _m._run_job(spark, f"lancepy-compact-{job_tag}", f"lancepy.spark.compact_files {ds.uri}",
                           job.mapInArrow(_task(ds.uri, so, plan, job_tag), _RESULT_SCHEMA).collect)
    except BaseException:
        _m._delete_job_files(store, job_tag)
        raise
    results = _choose(rows, plan.num_tasks())
    try:
        kept = [f"{_m.DATA_DIR}/{d.path}" for r in results for f in r.new_fragments for d in f.files]
        _m._delete_job_files(store, job_tag, keep=kept)
        return Compaction.commit(ds, results, options)
    except BaseException:
        _m._delete_job_files(store, job_tag)
        raise


def _choose(rows: List[Any], n: int) -> List[RewriteResult]:
    """One result per task: the lowest task attempt id that reported; in task order."""
    best: Dict[int, Tuple[int, str]] = {}
    for task, attempt, result in rows:
        if task not in best or attempt < best[task][0]:
            best[task] = (attempt, result)
    if sorted(best) != list(range(n)):
        raise InvalidArgumentError(f"compact_files: tasks {sorted(set(range(n)) - set(best))} reported nothing")
    return [RewriteResult.from_json(best[i][1]) for i in range(n)]


def _task(uri: str, storage_options: Optional[Dict[str, str]], plan: CompactionPlan, job_tag: str) -> Any:
    text = plan.json()

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        tid = TaskContext.get().taskAttemptId()
        p = CompactionPlan.from_json(text)
        ds = _m._open_dataset(uri, p.read_version, storage_options)
        for b in batches:
            for i in b.column(0).to_pylist():
                result = _execute(p.tasks[i], ds, file_tag=f"{job_tag}-{i}-{tid}")
                yield pa.RecordBatch.from_arrays(
                    [pa.array([i], pa.int32()), pa.array([tid], pa.int64()), pa.array([result.json()])],
                    names=["task", "task_attempt_id", "result"],
                )

    return run
