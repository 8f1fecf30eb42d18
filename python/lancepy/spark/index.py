"""Vector index builds on a Spark cluster: :func:`create_index` trains on the driver and
encodes in Spark's tasks, one index segment per task, committed once as one index.

The driver pins the dataset's latest version, makes :meth:`LanceDataset.create_index`'s
checks, samples the vectors and trains the IVF centroids (and the PQ codebook, or the SQ's
range) exactly as the local build does. The fragments are cut into `num_segments` groups of
about equal row counts; each task assigns its group's vectors to partitions, encodes them and
writes one segment (``_indices/<uuid>/``) with the shared training. The driver commits one
``CreateIndex`` holding every segment under the index's name: pylance searches them as one
index (its plans show ``deltas=<num_segments>``), and with the same training a search gives the
rows a single-segment build gives.

A task's segment directory is named by a uuid derived from the job, the task and its attempt
number, so the driver knows every directory an attempt may have written. Once no task of the
job runs any more, it keeps one attempt
per task (the lowest task attempt id that reported) and deletes the others' directories, and
all of them if the job or the commit fails.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa

from lancepy._ops import indices as _indices
from lancepy._ops import ivf_build as _ivf_build
from lancepy._table.commit import commit_on
from lancepy.exceptions import CommitConflictError, InvalidArgumentError, NotSupportedError
from lancepy.spark import _mapinarrow as _m

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

__all__ = ["create_index"]

_RESULT_SCHEMA = "task int, task_attempt_id bigint, result string"
#: Attempt numbers whose directories the driver looks for (retries and speculative copies).
_MAX_ATTEMPTS = 64
_INDICES_DIR = "_indices"


def create_index(
    spark: "SparkSession",
    uri: Union[str, "os.PathLike[str]"],
    column: Union[str, List[str]],
    index_type: str,
    name: Optional[str] = None,
    metric: str = "L2",
    replace: bool = False,
    num_partitions: Optional[int] = None,
    ivf_centroids: Any = None,
    pq_codebook: Any = None,
    num_sub_vectors: Optional[int] = None,
    *,
    num_segments: Optional[int] = None,
    storage_options: Optional[Dict[str, str]] = None,
    **options: Any,
) -> int:
    """:meth:`LanceDataset.create_index` (IVF_FLAT, IVF_PQ, IVF_SQ) of the latest version of
    the dataset at `uri`, trained on the driver and encoded by Spark's tasks; one
    ``CreateIndex`` commit. The arguments and `options` (the local method's keywords:
    ``sample_rate``, ``max_iters``, ``seed``, ``target_partition_size``, ``filter_nan``, ...)
    mean what they mean there. Returns the new version.

    Args:
        num_segments: the index's segments (one Spark task each); default Spark's default
            parallelism, at most one per fragment.

    Raises:
        NotSupportedError: ``fragment_ids``, ``index_uuid``, ``progress_callback`` (the
            job chooses the fragments and segments, and its progress is Spark's); whatever
            the local method refuses.
        InvalidArgumentError, TypeError, KeyError: the local method's checks.
        CommitConflictError: a conflicting commit made after the version was pinned
            (nothing of the job remains).
    """
    for arg in ("fragment_ids", "index_uuid", "progress_callback"):
        if options.get(arg) is not None:
            raise NotSupportedError(
                f"lancepy.spark.create_index({arg}=...): the job cuts the fragments into segments itself "
                "and reports progress through Spark; use LanceDataset.create_index"
            )
        options.pop(arg, None)
    if num_segments is not None and (
        isinstance(num_segments, bool) or not isinstance(num_segments, int) or num_segments <= 0
    ):
        raise InvalidArgumentError(f"num_segments must be a positive int, got {num_segments!r}")
    so = None if storage_options is None else dict(storage_options)
    _m._check_storage_options(so)
    ds = _m._open_dataset(os.fspath(uri), None, so)
    try:
        plan = _indices.prepare_vector_index(
            ds._view, column, index_type, name, metric, replace, num_partitions, ivf_centroids, pq_codebook,
            num_sub_vectors, storage_options=so, **options,
        )
    except TypeError as e:
        if "unexpected keyword" in str(e):
            raise InvalidArgumentError(f"lancepy.spark.create_index: {e}") from None
        raise
    fragments = ds.get_fragments()
    if not fragments:
        raise InvalidArgumentError("lancepy.spark.create_index: the dataset has no rows to index")
    trained = _ivf_build.train(ds._view, plan.column, plan.dim, plan.params, [f.fragment_id for f in fragments],
                               lambda *_: None)
    groups = _groups([(f.fragment_id, f.count_rows()) for f in fragments],
                     num_segments or _m._parallelism(spark))
    job_tag = uuid.uuid4().hex
    store = _m._store(ds.uri, so)
    job = spark.range(0, len(groups), 1, numPartitions=len(groups))
    task = _task(ds.uri, ds.version, so, plan, trained, groups, job_tag)
    try:
        rows = _m._run_job(spark, f"lancepy-create-index-{job_tag}", f"lancepy.spark.create_index {ds.uri}",
                           job.mapInArrow(task, _RESULT_SCHEMA).collect)
    except BaseException:
        _delete_segments(store, job_tag, len(groups), keep=())
        raise
    try:
        entries = _choose(rows, len(groups))
        kept = [str(uuid.UUID(bytes=bytes(e["uuid"]["uuid"]))) for e in entries]
        _delete_segments(store, job_tag, len(groups), keep=kept)
        read_version = ds.version
        try:
            ds._install(commit_on(ds._view, "CreateIndex", {"new_indices": entries, "removed_indices": plan.existing}))
        except CommitConflictError as e:
            raise CommitConflictError(
                f"lancepy.spark.create_index started from version {read_version} and cannot commit: {e}. "
                "Nothing was committed and the job's index files were deleted."
            ) from e
    except BaseException:
        _delete_segments(store, job_tag, len(groups), keep=())
        raise
    return ds.version


def _groups(sizes: Sequence[Tuple[int, int]], n: int) -> List[List[int]]:
    """`sizes` (fragment id, rows) cut, in order, into at most `n` runs of about equal rows."""
    n = max(1, min(n, len(sizes)))
    total = sum(r for _, r in sizes)
    out: List[List[int]] = [[]]
    done = 0
    for fid, rows in sizes:
        if out[-1] and len(out) < n and done >= total * len(out) / n:
            out.append([])
        out[-1].append(fid)
        done += rows
    return out


def _segment_uuid(job_tag: str, task: int, attempt: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"lancepy-spark-index/{job_tag}/{task}/{attempt}"))


def _delete_segments(store: Any, job_tag: str, tasks: int, keep: Sequence[str]) -> None:
    """Deletes the segment directories any attempt of the job's tasks may have written,
    except `keep`."""
    mine = {_segment_uuid(job_tag, t, a) for t in range(tasks) for a in range(_MAX_ATTEMPTS)} - set(keep)
    doomed = [p for p, _, _ in store.list(_INDICES_DIR) if p.split("/")[1:2] and p.split("/")[1] in mine]
    if doomed:
        store.delete(doomed)


def _task(
    uri: str,
    version: int,
    storage_options: Optional[Dict[str, str]],
    plan: "_indices.VectorIndexPlan",
    trained: "_ivf_build.Trained",
    groups: List[List[int]],
    job_tag: str,
) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        tid = ctx.taskAttemptId()
        ds = _m._open_dataset(uri, version, storage_options)
        for b in batches:
            for i in b.column(0).to_pylist():
                fragments = _ivf_build._fragments(ds._view, groups[i])
                entry = _ivf_build.write_segment(
                    ds._view, plan.column, plan.field_id, plan.dim, plan.params, trained, fragments,
                    _segment_uuid(job_tag, i, ctx.attemptNumber()), plan.name, lambda *_: None, plan.storage_options,
                )
                yield pa.RecordBatch.from_arrays(
                    [pa.array([i], pa.int32()), pa.array([tid], pa.int64()), pa.array([json.dumps(entry)])],
                    names=["task", "task_attempt_id", "result"],
                )

    return run


def _choose(rows: List[Any], n: int) -> List[Dict[str, Any]]:
    """One segment per task: the lowest task attempt id that reported; in task order."""
    best: Dict[int, Tuple[int, str]] = {}
    for task, attempt, result in rows:
        if task not in best or attempt < best[task][0]:
            best[task] = (attempt, result)
    if sorted(best) != list(range(n)):
        raise InvalidArgumentError(f"lancepy.spark.create_index: tasks {sorted(set(range(n)) - set(best))} reported nothing")
    return [json.loads(best[i][1]) for i in range(n)]
