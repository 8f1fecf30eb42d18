"""Row mutations of a dataset: delete, update, merge (a join on a key), insert; the rows a
predicate matches; retries on commit conflicts. The functions behind :class:`LanceDataset`'s
methods of the same names."""

from __future__ import annotations

import datetime
import json
import random
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from lancepy._core.args import DEFAULT_CONFLICT_RETRIES, DEFAULT_RETRY_TIMEOUT
from lancepy._core.conform import align_to_schema, to_record_batch_reader
from lancepy._core.evaluate import _evaluate, _evaluate_values, _stream_tables
from lancepy._core.schema import ROW_ADDRESS
from lancepy._ops import evolution as _evolution
from lancepy._ops.write import _write
from lancepy._table.fragments import DEFAULT_MAX_ROWS_PER_FILE, FragmentMetadata, normalize_storage_version
from lancepy.exceptions import CommitConflictError, InvalidArgumentError
from lancepy.filters import Filter, compile_expression, compile_filter

if TYPE_CHECKING:  # pragma: no cover
    from lancepy.dataset import LanceDataset

_T = TypeVar("_T")


def _matching_addresses(ds: LanceDataset, flt: Filter, fragment_ids: Optional[List[int]] = None) -> pa.Array:
    """Row addresses of the live rows matching a filter (in `fragment_ids` only, if
    given), in one pass."""
    stream = ds._snapshot.scan_stream(
        flt.columns,
        fragment_ids=fragment_ids,
        batch_rows=131072,
        with_row_address=True,
        coalesce=True,
    )
    parts: List[pa.Array] = []
    for table in _stream_tables(stream, 1 << 20):
        parts.extend(pc.filter(table.column(ROW_ADDRESS), _evaluate(table, flt)).chunks)
    return pa.chunked_array(parts, pa.uint64()).combine_chunks()


def _retry_on_conflict(
    ds: LanceDataset, attempt: Callable[[], _T], conflict_retries: int, retry_timeout: datetime.timedelta
) -> _T:
    """Runs `attempt` (read this version, write, commit). When its commit loses to a
    concurrent incompatible commit (say, a delete of the same fragment), the files it wrote
    are already gone; the latest version is re-read and the operation applied again, up to
    `conflict_retries` times within `retry_timeout` (pylance's semantics)."""
    if conflict_retries < 0:
        raise InvalidArgumentError(f"conflict_retries must be >= 0, got {conflict_retries}")
    deadline = time.monotonic() + retry_timeout.total_seconds()
    for retry in range(conflict_retries + 1):
        try:
            return attempt()
        except CommitConflictError:
            if retry == conflict_retries or time.monotonic() >= deadline:
                raise
        # Jittered back-off so that retrying writers do not collide again in lockstep.
        time.sleep(random.uniform(0.0, 0.002 * (retry + 1)))
        ds._refresh_latest()
    raise AssertionError("unreachable")  # pragma: no cover


def delete(
    ds: LanceDataset,
    predicate: Any,
    *,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
    retry_timeout: datetime.timedelta = DEFAULT_RETRY_TIMEOUT,
) -> Dict[str, int]:
    """See :meth:`LanceDataset.delete`."""

    def attempt() -> Dict[str, int]:
        flt = compile_filter(predicate, ds._schema)
        if flt is None:
            raise InvalidArgumentError("delete needs a predicate; use 'true' to delete every row")
        addresses = _matching_addresses(ds, flt)
        updated, removed, written = _write_deletions(ds, addresses)
        body = {"updated_fragments": updated, "deleted_fragment_ids": removed, "predicate": flt.text}
        ds._commit("Delete", body, written)
        return {"num_deleted_rows": len(addresses)}

    return _retry_on_conflict(ds, attempt, conflict_retries, retry_timeout)


def truncate_table(ds: LanceDataset) -> None:
    """See :meth:`LanceDataset.truncate_table`."""
    ids = [f.get("id", 0) for f in ds._loaded.manifest.get("fragments", [])]
    ds._commit("Delete", {"updated_fragments": [], "deleted_fragment_ids": ids, "predicate": "true"})


def _write_deletions(ds: LanceDataset, addresses: pa.Array) -> Any:
    updated, removed, written = [], [], []
    if len(addresses) == 0:
        return updated, removed, written
    for fid, frag_json in ds._snapshot.delete_rows(addresses, ds.version):
        if frag_json is None:
            removed.append(fid)
        else:
            frag = json.loads(frag_json)
            updated.append(frag)
            written.append(FragmentMetadata._from_dict(frag).deletion_file.path(fid))  # type: ignore[union-attr]
    return updated, removed, written


def update(
    ds: LanceDataset,
    updates: Dict[str, Any],
    where: Any = None,
    conflict_retries: int = DEFAULT_CONFLICT_RETRIES,
    retry_timeout: datetime.timedelta = DEFAULT_RETRY_TIMEOUT,
    data_storage_version: Optional[str] = None,
) -> Dict[str, int]:
    """See :meth:`LanceDataset.update`."""
    if data_storage_version is not None and normalize_storage_version(data_storage_version) != ds.data_storage_version:
        raise InvalidArgumentError(
            f"the dataset stores {ds.data_storage_version} data files; cannot write {data_storage_version} files"
        )
    return _retry_on_conflict(ds, lambda: _update_once(ds, updates, where), conflict_retries, retry_timeout)


def _update_once(ds: LanceDataset, updates: Dict[str, Any], where: Any) -> Dict[str, int]:
    if not updates:
        raise InvalidArgumentError("update needs at least one column to set")
    schema = ds._schema
    for name in updates:
        if name not in schema.names:
            raise InvalidArgumentError(f"cannot update column {name!r}: the dataset has no such column")
    # Blob columns are rewritten from their values.
    table = ds.to_table(filter=where, with_row_address=True, blob_handling="all_binary")
    if table.num_rows == 0:
        return {"num_rows_updated": 0}
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
    _replace_rows(ds, table.column(ROW_ADDRESS).combine_chunks(), rows, fields_modified=list(updates))
    return {"num_rows_updated": table.num_rows}


def _replace_rows(
    ds: LanceDataset, addresses: pa.Array, new_rows: Optional[pa.Table], fields_modified: Sequence[str] = ()
) -> None:
    """Deletes rows at `addresses` and appends `new_rows`, as one Update transaction."""
    body, written = replace_rows_uncommitted(ds, addresses, new_rows, fields_modified)
    ds._commit("Update", body, written)


def replace_rows_uncommitted(
    ds: LanceDataset, addresses: pa.Array, new_rows: Optional[pa.Table], fields_modified: Sequence[str] = ()
) -> Tuple[Dict[str, Any], List[str]]:
    """Writes what :func:`_replace_rows` commits (deletion files, new data files) and returns
    the ``Update`` transaction's body and the files written, without committing."""
    updated, removed, written = _write_deletions(ds, addresses)
    new_frags: List[Dict[str, Any]] = []
    if new_rows is not None and new_rows.num_rows > 0:
        reader = align_to_schema(new_rows.to_reader(), ds._schema)
        frags = _write(
            ds._uri,
            reader,
            ds._loaded.manifest.get("fields", []),
            ds._loaded.manifest.get("schema_metadata", {}),
            DEFAULT_MAX_ROWS_PER_FILE,
            ds.data_storage_version,
            storage_options=ds._storage_options,
        )
        new_frags = [f._manifest_json() for f in frags]
        written += [f"data/{d['path']}" for f in new_frags for d in f["files"]]
    ids = {f.get("name"): f.get("id") for f in ds._loaded.manifest.get("fields", [])}
    body = {
        "removed_fragment_ids": removed,
        "updated_fragments": updated,
        "new_fragments": new_frags,
        "fields_modified": [ids[n] for n in fields_modified if n in ids],
    }
    return body, written


def merge(
    ds: LanceDataset, data_obj: Any, left_on: str, right_on: Optional[str] = None, schema: Optional[pa.Schema] = None
) -> None:
    """See :meth:`LanceDataset.merge`."""
    right_on = left_on if right_on is None else right_on
    if left_on not in ds._schema.names:
        from lancepy.exceptions import ColumnNotFoundError

        raise ColumnNotFoundError(f"merge key {left_on!r} is not a column of the dataset")
    right = to_record_batch_reader(data_obj, schema).read_all()
    if right_on not in right.column_names:
        from lancepy.exceptions import ColumnNotFoundError

        raise ColumnNotFoundError(f"merge key {right_on!r} is not a column of the data")
    new_names = [n for n in right.column_names if n != right_on]
    if not new_names:
        raise InvalidArgumentError("the data to merge has no columns besides the key")
    _evolution._check_new_names(ds, right.select(new_names).schema)
    # The last row of a repeated key wins (as in pylance): look keys up back to front.
    right = right.take(pa.array(range(right.num_rows - 1, -1, -1), pa.int64()))
    right_keys = right.column(right_on)
    left_keys = ds.to_table(columns=[left_on]).column(left_on)
    try:
        right_keys = right_keys.cast(left_keys.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InvalidArgumentError(f"cannot join {left_on!r} ({left_keys.type}) with {right_on!r}: {e}") from None
    positions = pc.index_in(left_keys, value_set=right_keys.combine_chunks())
    values = right.select(new_names).take(positions)
    _evolution._add_precomputed_columns(ds, values, ds.max_field_id + 1)
