"""Row mutations of a dataset: delete, update, merge (a join on a key), insert; the rows a
predicate matches; retries on commit conflicts. The functions behind :class:`LanceDataset`'s
methods of the same names."""

from __future__ import annotations

import datetime
import json
import random
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancepy import _lancepy
from lancepy._core.args import DEFAULT_CONFLICT_RETRIES, DEFAULT_RETRY_TIMEOUT
from lancepy._core.conform import align_to_schema, to_record_batch_reader
from lancepy._core.evaluate import _evaluate_values, _stream_tables
from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy._ops import evolution as _evolution
from lancepy._ops.scan import compile_scan_filter, evaluate_on, read_rows, stored_columns
from lancepy._ops.write import _write
from lancepy._table.lineage import inline_text
from lancepy._table.commit import commit_on, latest_view
from lancepy._table.fragments import DEFAULT_MAX_ROWS_PER_FILE, FragmentMetadata, normalize_storage_version
from lancepy.exceptions import CommitConflictError, InvalidArgumentError
from lancepy.filters import Filter, compile_expression

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.snapshot import DatasetView

_T = TypeVar("_T")


def _matching_addresses(view: DatasetView, flt: Filter, fragment_ids: Optional[List[int]] = None,
                        system: Sequence[str] = ()) -> pa.Array:
    """Row addresses of the live rows matching a filter (in `fragment_ids` only, if
    given), in one pass; `system`: the system columns the filter reads (see
    :func:`~lancepy._ops.scan.compile_scan_filter`)."""
    stream = view.snapshot.scan_stream(
        stored_columns(flt.columns),
        fragment_ids=fragment_ids,
        batch_rows=131072,
        with_row_address=True,
        with_row_id=ROW_ID in system,
        coalesce=True,
    )
    parts: List[pa.Array] = []
    for table in _stream_tables(stream, 1 << 20):
        parts.extend(pc.filter(table.column(ROW_ADDRESS), evaluate_on(view, table, flt, system)).chunks)
    return pa.chunked_array(parts, pa.uint64()).combine_chunks()


def _retry_on_conflict(
    view: DatasetView, attempt: Callable[[DatasetView], _T], conflict_retries: int, retry_timeout: datetime.timedelta
) -> _T:
    """Runs `attempt` on `view` (read that version, write, commit). When its commit loses to a
    concurrent incompatible commit (say, a delete of the same fragment), the files it wrote
    are already gone; the operation is applied again to the latest version, up to
    `conflict_retries` times within `retry_timeout` (pylance's semantics). A conflict that
    is not retryable (the data was overwritten or restored concurrently) is raised at once."""
    if conflict_retries < 0:
        raise InvalidArgumentError(f"conflict_retries must be >= 0, got {conflict_retries}")
    deadline = time.monotonic() + retry_timeout.total_seconds()
    for retry in range(conflict_retries + 1):
        try:
            return attempt(view)
        except CommitConflictError as e:
            # (a conflict no retry resolves, a concurrent overwrite say, is the caller's)
            if not e.retryable or retry == conflict_retries or time.monotonic() >= deadline:
                raise
        # Jittered back-off so that retrying writers do not collide again in lockstep.
        time.sleep(random.uniform(0.0, 0.002 * (retry + 1)))
        view = latest_view(view)
    raise AssertionError("unreachable")  # pragma: no cover


def delete(
    view: DatasetView,
    predicate: Any,
    *,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
    retry_timeout: datetime.timedelta = DEFAULT_RETRY_TIMEOUT,
) -> Tuple[DatasetView, Dict[str, int]]:
    """See :meth:`LanceDataset.delete`: the dataset at the version committed, and the counts."""

    def attempt(view: DatasetView) -> Tuple[DatasetView, Dict[str, int]]:
        flt, system = compile_scan_filter(predicate, view.schema)
        if flt is None:
            raise InvalidArgumentError("delete needs a predicate; use 'true' to delete every row")
        addresses = _matching_addresses(view, flt, system=system)
        updated, removed, written = _write_deletions(view, addresses)
        body = {"updated_fragments": updated, "deleted_fragment_ids": removed, "predicate": flt.text}
        return commit_on(view, "Delete", body, written), {"num_deleted_rows": len(addresses)}

    return _retry_on_conflict(view, attempt, conflict_retries, retry_timeout)


def truncate_table(view: DatasetView) -> DatasetView:
    """See :meth:`LanceDataset.truncate_table`."""
    ids = view.fragment_ids
    return commit_on(view, "Delete", {"updated_fragments": [], "deleted_fragment_ids": ids, "predicate": "true"})


def _write_deletions(view: DatasetView, addresses: pa.Array) -> Any:
    updated, removed, written = [], [], []
    if len(addresses) == 0:
        return updated, removed, written
    for fid, frag_json in view.snapshot.delete_rows(addresses, view.version):
        if frag_json is None:
            removed.append(fid)
        else:
            frag = json.loads(frag_json)
            updated.append(frag)
            written.append(FragmentMetadata._from_dict(frag).deletion_file.path(fid))  # type: ignore[union-attr]
    return updated, removed, written


def update(
    view: DatasetView,
    updates: Dict[str, Any],
    where: Any = None,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
    retry_timeout: datetime.timedelta = DEFAULT_RETRY_TIMEOUT,
    data_storage_version: Optional[str] = None,
) -> Tuple[DatasetView, Dict[str, int]]:
    """See :meth:`LanceDataset.update`: the dataset at the version committed (`view` itself
    when no row matched), and the counts."""
    if data_storage_version is not None and normalize_storage_version(data_storage_version) != view.data_storage_version:
        raise InvalidArgumentError(
            f"the dataset stores {view.data_storage_version} data files; cannot write {data_storage_version} files"
        )
    return _retry_on_conflict(view, lambda v: _update_once(v, updates, where), conflict_retries, retry_timeout)


def _update_once(view: DatasetView, updates: Dict[str, Any], where: Any) -> Tuple[DatasetView, Dict[str, int]]:
    if not updates:
        raise InvalidArgumentError("update needs at least one column to set")
    schema = view.schema
    for name in updates:
        if name not in schema.names:
            raise InvalidArgumentError(f"cannot update column {name!r}: the dataset has no such column")
    # Blob columns are rewritten from their values.
    table = read_rows(view, None, where, with_row_address=True, with_row_id=view.stable_row_ids, blobs_as_values=True)
    if table.num_rows == 0:  # (pylance commits a version that changes nothing)
        return commit_on(view, "Update", update_body(view, [], [], [], list(updates))), {"num_rows_updated": 0}
    new_columns = {}
    for name, value in updates.items():
        target = schema.field(name).type
        if isinstance(value, str):
            expr = compile_expression(value, schema).expression
            arr = _evaluate_values(table, expr, target)
        elif isinstance(value, pc.Expression):
            arr = _evaluate_values(table, value, target)
        else:
            arr = pa.array([value] * table.num_rows, type=target)
        new_columns[name] = arr
    rows = pa.table({n: (new_columns[n] if n in new_columns else table.column(n)) for n in schema.names})
    kept = table.column(ROW_ID).to_numpy() if view.stable_row_ids else None
    body, written = replace_rows_uncommitted(view, table.column(ROW_ADDRESS).combine_chunks(), rows, list(updates), kept)
    return commit_on(view, "Update", body, written), {"num_rows_updated": table.num_rows}


def update_body(
    view: DatasetView, removed: List[int], updated: List[Dict[str, Any]], new: List[Dict[str, Any]],
    columns: Sequence[str],
) -> Dict[str, Any]:
    """The body of an ``Update`` that rewrites rows (deleted where they were, written again
    in `new` fragments) with new values of `columns`, as pylance records one: no field is
    modified in place, and the fields of `columns` are those whose index coverage the
    update keeps (``fields_for_preserving_frag_bitmap``)."""
    ids = {f.name: f.id for f in view.loaded.fields}
    return {
        "removed_fragment_ids": removed,
        "updated_fragments": updated,
        "new_fragments": new,
        "fields_modified": [],
        "fields_for_preserving_frag_bitmap": [ids[n] for n in columns if n in ids],
    }


def keep_row_ids(view: DatasetView, new_frags: List[Dict[str, Any]], kept: Optional[Any]) -> None:
    """Gives the first ``len(kept)`` rows of `new_frags` (in order) the stable row ids `kept`
    (rows rewritten by an update keep their ids, as in pylance); the rows after them get new
    ids at commit. Nothing without stable row ids."""
    if kept is None or not len(kept) or not view.stable_row_ids:
        return
    ids = np.asarray(kept, dtype=np.uint64)
    start = 0
    for f in new_frags:
        part = ids[start : start + int(f["physical_rows"])]
        if len(part):
            f["row_id_sequence"] = {"InlineRowIds": inline_text(_lancepy.encode_row_ids(part.tolist()))}
        start += int(f["physical_rows"])


def replace_rows_uncommitted(
    view: DatasetView, addresses: pa.Array, new_rows: Optional[pa.Table], columns: Sequence[str] = (),
    kept_row_ids: Optional[Any] = None,
) -> Tuple[Dict[str, Any], List[str]]:
    """Writes what an ``Update`` that deletes the rows at `addresses` and appends `new_rows`
    (new values of `columns`; with stable row ids its first rows keep the ids `kept_row_ids`)
    commits (deletion files, new data files) and returns the transaction's body
    (:func:`update_body`) and the files written, without committing."""
    updated, removed, written = _write_deletions(view, addresses)
    new_frags: List[Dict[str, Any]] = []
    if new_rows is not None and new_rows.num_rows > 0:
        reader = align_to_schema(new_rows.to_reader(), view.schema)
        frags = _write(
            view.uri,
            reader,
            view.loaded.field_entries,
            view.loaded.schema_metadata,
            DEFAULT_MAX_ROWS_PER_FILE,
            view.data_storage_version,
            storage_options=view.storage_options,
        )
        new_frags = [f._manifest_json() for f in frags]
        written += [f"data/{d['path']}" for f in new_frags for d in f["files"]]
        keep_row_ids(view, new_frags, kept_row_ids)
    return update_body(view, removed, updated, new_frags, columns), written


def merge(
    view: DatasetView, data_obj: Any, left_on: str, right_on: Optional[str] = None, schema: Optional[pa.Schema] = None
) -> DatasetView:
    """See :meth:`LanceDataset.merge`."""
    right_on = left_on if right_on is None else right_on
    if left_on not in view.schema.names:
        from lancepy.exceptions import ColumnNotFoundError

        raise ColumnNotFoundError(f"merge key {left_on!r} is not a column of the dataset")
    right = to_record_batch_reader(data_obj, schema).read_all()
    if right_on not in right.column_names:
        from lancepy.exceptions import ColumnNotFoundError

        raise ColumnNotFoundError(f"merge key {right_on!r} is not a column of the data")
    new_names = [n for n in right.column_names if n != right_on]
    if not new_names:
        raise InvalidArgumentError("the data to merge has no columns besides the key")
    _evolution._check_new_names(view, right.select(new_names).schema)
    # The last row of a repeated key wins (as in pylance): look keys up back to front.
    right = right.take(pa.array(range(right.num_rows - 1, -1, -1), pa.int64()))
    right_keys = right.column(right_on)
    left_keys = read_rows(view, [left_on]).column(left_on)
    try:
        right_keys = right_keys.cast(left_keys.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InvalidArgumentError(f"cannot join {left_on!r} ({left_keys.type}) with {right_on!r}: {e}") from None
    positions = pc.index_in(left_keys, value_set=right_keys.combine_chunks())
    values = right.select(new_names).take(positions)
    return _evolution._add_precomputed_columns(view, values, view.max_field_id + 1)
