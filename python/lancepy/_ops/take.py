"""Random access by row: takes by offset, by row id and by row address, blob takes, and
samples, over one version (a :class:`~lancepy._table.snapshot.DatasetView`). The functions
behind :class:`LanceDataset`'s take methods."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc

from lancepy import blob as _blob
from lancepy._core.args import _indices
from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy._ops.projection import Projection
from lancepy.exceptions import DeletedRowTakeError, InvalidArgumentError
from lancepy.filters import compile_expression

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy._table.snapshot import DatasetView


def sample(
    view: DatasetView,
    num_rows: int,
    columns: Union[List[str], Dict[str, str], None] = None,
    randomize_order: bool = True,
) -> pa.Table:
    """See :meth:`LanceDataset.sample`."""
    total = view.count_rows()
    if not isinstance(num_rows, int) or isinstance(num_rows, bool) or num_rows < 0:
        raise InvalidArgumentError(f"num_rows must be a non-negative int, got {num_rows!r}")
    if num_rows > total:
        raise InvalidArgumentError(f"cannot sample {num_rows} rows from a dataset of {total} rows")
    indices = random.sample(range(total), num_rows)
    if not randomize_order:
        indices.sort()
    return take(view, indices, columns, False, False)


def take(view: DatasetView, indices: Any, columns: Any, with_row_id: bool, with_row_address: bool) -> pa.Table:
    """See :meth:`LanceDataset.take`."""
    offsets = _indices(indices)
    return _projected(view, columns, with_row_id, with_row_address, offsets,
                      lambda cols, rid, addr: view.snapshot.take(offsets, columns=cols, with_row_id=rid, with_row_address=addr))


def _take_rows(
    view: DatasetView, row_ids: Any, columns: Any = None, with_row_id: bool = False, with_row_address: bool = False
) -> pa.Table:
    """See :meth:`LanceDataset._take_rows`."""
    wanted = _indices(row_ids)
    if view.stable_row_ids:
        wanted = _addresses_of_row_ids(view, wanted)
    return _projected(view, columns, with_row_id, with_row_address, None,
                      lambda cols, rid, addr: view.snapshot.take_addresses(wanted, columns=cols, with_row_id=rid, with_row_address=addr))


def _projected(view: DatasetView, columns: Any, with_row_id: bool, with_row_address: bool, offsets: Any, read: Any) -> pa.Table:
    """`read(columns, with_row_id, with_row_address)` for a projection as pylance takes it:
    names (system columns and nested paths included, in the order asked), or a dict of SQL
    expressions (computed columns); `with_row_id` / `with_row_address` append those columns."""
    schema = view.schema
    if isinstance(columns, dict):
        import pyarrow.dataset as pads

        computed = {n: compile_expression(e, schema) for n, e in columns.items()}
        needed: List[str] = []
        for c in computed.values():
            needed.extend(c.columns if c.columns is not None else schema.names)
        t = pa.table(read(list(dict.fromkeys(needed)), with_row_id, with_row_address))
        exprs = {n: c.expression for n, c in computed.items()}
        for n in (ROW_ID, ROW_ADDRESS):
            if n in t.column_names:
                exprs[n] = pc.field(n)
        return pads.dataset(t).to_table(columns=exprs)
    if columns is None or not Projection.needed(list(columns), schema):
        return pa.table(read(None if columns is None else list(columns), with_row_id, with_row_address))
    proj = Projection(list(columns), schema)
    t = pa.table(read(proj.read, proj.row_id or with_row_id, proj.row_address or with_row_address))
    if offsets is not None and proj.row_offset:
        offsets = pc.cast(offsets if isinstance(offsets, pa.Array) else pa.array(offsets, pa.int64()), pa.uint64())
    out = proj.apply(t, view, offsets if proj.row_offset else None)
    for n, on in ((ROW_ID, with_row_id), (ROW_ADDRESS, with_row_address)):
        if on:
            out = out.append_column(t.schema.field(n), t.column(n))
    return out


def take_in_fragment(view: DatasetView, fragment_id: int, indices: Any, columns: Optional[List[str]] = None,
                     with_row_address: bool = False) -> pa.Table:
    """Rows of fragment `fragment_id` at `indices`, positions among its live rows (what
    ``LanceFragment.take`` reads); `columns`: top-level names (``None``: all)."""
    addresses = pa.table(view.snapshot.scan([], fragment_ids=[int(fragment_id)], batch_rows=1 << 20,
                                            with_row_address=True)).column(ROW_ADDRESS)
    picked = addresses.take(pa.array(indices, pa.int64())).combine_chunks()
    # (by address: with stable row ids, a take of row ids would read these as ids)
    return pa.table(view.snapshot.take_addresses(picked, columns=_plain_columns(columns), with_row_address=with_row_address))


def _addresses_of_row_ids(view: DatasetView, ids: Any) -> pa.Array:
    """The addresses of stable row ids (unknown and deleted ids left out), in order. The
    id → address map of this version is built once (one scan of row ids, no columns)."""
    import numpy as np

    want = np.asarray(ids.to_numpy(zero_copy_only=False) if isinstance(ids, pa.Array) else ids, dtype=np.uint64)
    addrs, found = addresses_of_ids(view, want)
    return pa.array(addrs[found], pa.uint64())


def addresses_of_ids(view: DatasetView, ids: "np.ndarray") -> Tuple["np.ndarray", "np.ndarray"]:
    """``(addresses, found)`` of stable row ids `ids` (uint64), aligned with them: `found`
    is False for unknown and deleted ids (their address is then meaningless)."""
    import numpy as np

    sorted_ids, addrs = _row_id_map(view)
    if not len(sorted_ids):
        return np.zeros(len(ids), np.uint64), np.zeros(len(ids), bool)
    pos = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return addrs[pos], sorted_ids[pos] == ids


def _row_id_map(view: DatasetView) -> Tuple["np.ndarray", "np.ndarray"]:
    """This version's live stable row ids, sorted, and their addresses (built once per
    version: one scan of row ids, no columns)."""
    import numpy as np

    cache = view.state.get("row_id_map")
    if cache is None:
        t = pa.table(
            view.snapshot.scan(
                [],
                fragment_ids=None,
                batch_rows=1 << 20,
                with_row_id=True,
                with_row_address=True,
            )
        )
        rid = t.column(ROW_ID).to_numpy().astype(np.uint64)
        addr = t.column(ROW_ADDRESS).to_numpy().astype(np.uint64)
        order = np.argsort(rid, kind="stable")
        cache = view.state["row_id_map"] = (rid[order], addr[order])
    return cache


def take_blobs(
    view: DatasetView,
    blob_column: str,
    ids: Optional[Union[List[int], pa.Array]] = None,
    addresses: Optional[Union[List[int], pa.Array]] = None,
    indices: Optional[Union[List[int], pa.Array]] = None,
    *,
    buffer_size: int = _blob.DEFAULT_BLOB_BUFFER_SIZE,
) -> List[Optional[_blob.BlobFile]]:
    """See :meth:`LanceDataset.take_blobs`."""
    buffer_size = _blob._validate_buffer_size(buffer_size)
    given = [n for n, v in (("ids", ids), ("addresses", addresses), ("indices", indices)) if v is not None]
    if len(given) != 1:
        raise InvalidArgumentError("take_blobs: give exactly one of ids, addresses or indices")
    kind = view.loaded.blob_kind(blob_column)
    if kind is None:
        raise InvalidArgumentError(f"column {blob_column!r} is not a blob column")
    if indices is not None:
        rows = take(view, indices, [blob_column], False, True)
    else:
        wanted = _indices(addresses if addresses is not None else ids)
        if ids is not None:
            rows = _take_rows(view, wanted, [blob_column], with_row_address=True)
        else:
            rows = pa.table(view.snapshot.take_addresses(wanted, columns=[blob_column], with_row_address=True))
        if rows.num_rows != len(wanted):
            raise DeletedRowTakeError(
                f"take_blobs: A take operation that includes row addresses must not target deleted rows: some of "
                f"the {given[0]} name deleted or missing rows"
            )
    return _blob.open_blob_files(
        view.store.uri,
        view.loaded,
        view.storage_options,
        blob_column,
        rows.column("_rowaddr").to_pylist(),
        rows.column(blob_column).to_pylist(),
        buffer_size,
        view.base_store_params,
    )


def _plain_columns(columns: Any) -> Optional[List[str]]:
    if columns is None:
        return None
    if isinstance(columns, dict):
        raise InvalidArgumentError("computed columns (a dict) are only supported by scans, not by take")
    return list(columns)
