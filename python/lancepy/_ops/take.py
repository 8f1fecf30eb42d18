"""Random access by row: takes by offset, by row id and by row address, blob takes, and
samples. The functions behind :class:`LanceDataset`'s take methods."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

import pyarrow as pa

from lancepy import blob as _blob
from lancepy._core.args import _indices
from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy.exceptions import IndexOutOfRangeError, InvalidArgumentError

if TYPE_CHECKING:  # pragma: no cover
    from lancepy.dataset import LanceDataset


def sample(
    ds: LanceDataset,
    num_rows: int,
    columns: Union[List[str], Dict[str, str], None] = None,
    randomize_order: bool = True,
) -> pa.Table:
    """See :meth:`LanceDataset.sample`."""
    total = ds.count_rows()
    if not isinstance(num_rows, int) or isinstance(num_rows, bool) or num_rows < 0:
        raise InvalidArgumentError(f"num_rows must be a non-negative int, got {num_rows!r}")
    if num_rows > total:
        raise InvalidArgumentError(f"cannot sample {num_rows} rows from a dataset of {total} rows")
    indices = random.sample(range(total), num_rows)
    if not randomize_order:
        indices.sort()
    return ds.take(indices, columns)


def _take_rows(
    ds: LanceDataset, row_ids: Any, columns: Any = None, with_row_id: bool = False, with_row_address: bool = False
) -> pa.Table:
    """See :meth:`LanceDataset._take_rows`."""
    cols = ds._plain_columns(columns)
    wanted = _indices(row_ids)
    if ds.has_stable_row_ids:
        wanted = ds._addresses_of_row_ids(wanted)
    return pa.table(
        ds._snapshot.take_addresses(
            wanted,
            columns=cols,
            with_row_id=with_row_id,
            with_row_address=with_row_address,
        )
    )


def _addresses_of_row_ids(ds: LanceDataset, ids: Any) -> pa.Array:
    """See :meth:`LanceDataset._addresses_of_row_ids`."""
    import numpy as np

    cache = ds._per_version.get("row_id_map")
    if cache is None:
        t = pa.table(
            ds._snapshot.scan(
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
        cache = ds._per_version["row_id_map"] = (rid[order], addr[order])
    sorted_ids, addrs = cache
    want = np.asarray(ids.to_numpy(zero_copy_only=False) if isinstance(ids, pa.Array) else ids, dtype=np.uint64)
    if not len(sorted_ids):
        return pa.array([], pa.uint64())
    pos = np.minimum(np.searchsorted(sorted_ids, want), len(sorted_ids) - 1)
    found = sorted_ids[pos] == want
    return pa.array(addrs[pos[found]], pa.uint64())


def take_blobs(
    ds: LanceDataset,
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
    manifest = ds._loaded.manifest
    kind = _blob.blob_field_kind(manifest, blob_column)
    if kind is None:
        raise InvalidArgumentError(f"column {blob_column!r} is not a blob column")
    if indices is not None:
        rows = ds.take(indices, [blob_column], with_row_address=True)
    else:
        wanted = _indices(addresses if addresses is not None else ids)
        if ids is not None:
            rows = ds._take_rows(wanted, [blob_column], with_row_address=True)
        else:
            rows = pa.table(ds._snapshot.take_addresses(wanted, columns=[blob_column], with_row_address=True))
        if rows.num_rows != len(wanted):
            raise IndexOutOfRangeError(f"take_blobs: some of the {given[0]} name deleted or missing rows")
    return _blob.open_blob_files(
        ds._store.uri,
        manifest,
        ds._storage_options,
        blob_column,
        rows.column("_rowaddr").to_pylist(),
        rows.column(blob_column).to_pylist(),
        buffer_size,
        ds._base_store_params,
    )


def _plain_columns(ds: LanceDataset, columns: Any) -> Optional[List[str]]:
    if columns is None:
        return None
    if isinstance(columns, dict):
        raise InvalidArgumentError("computed columns (a dict) are only supported by scans, not by take")
    return list(columns)
