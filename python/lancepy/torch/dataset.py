"""Datasets: the map-style :class:`LanceDataset` (one native take per batch) and
:class:`LanceIterableDataset` (ready batches split across DataLoader workers and ranks), and
opening a dataset at a pinned version."""

from __future__ import annotations

import inspect
import numbers
import operator
import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

import numpy as np
import pyarrow as pa
import torch
import torch.utils.data

import lancepy
from lancepy._core.iostats import owner_tracker, track_io
from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy._ops.scan import FILTER_SYSTEM_COLUMNS as SYSTEM_COLUMNS
from lancepy._table import lineage
from lancepy.dataset import LanceDataset as _Dataset
from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError, UnsupportedError

from . import _ring
from ._convert import Allocate, Batch, FillNull, _bytes_columns, _Converter, _one_row
from .sampler import _Order, _rank_world


# ----------------------------------------------------------------------------------------
# Opening a pinned version


def _open(uri: str, version: Union[int, str, None], storage_options: Optional[Dict[str, str]]) -> _Dataset:
    if storage_options is None:
        return lancepy.dataset(uri, version=version)
    if "storage_options" not in inspect.signature(lancepy.dataset).parameters:
        raise UnsupportedError("storage_options= needs a lancepy whose lancepy.dataset() accepts storage_options")
    return lancepy.dataset(uri, version=version, storage_options=storage_options)  # type: ignore[call-arg]


def _open_pinned(
    dataset_or_uri: Any, version: Union[int, str, None], storage_options: Optional[Dict[str, str]]
) -> Tuple[str, _Dataset, Optional[Dict[str, str]]]:
    """(URI, the dataset at a fixed version number, storage options to reopen it with)."""
    if isinstance(dataset_or_uri, (str, os.PathLike)):
        uri = os.fspath(dataset_or_uri)
        if uri.startswith("~"):
            uri = os.path.expanduser(uri)
    elif hasattr(dataset_or_uri, "uri") and hasattr(dataset_or_uri, "version"):
        # A lancepy dataset, or another library's (e.g. pylance's: the same files, read by
        # lancepy). Reopened at its version: the object itself may move to a newer version
        # (a delete, an append) while we read.
        if storage_options is None and isinstance(dataset_or_uri, _Dataset):
            storage_options = getattr(dataset_or_uri, "storage_options", None)
        uri = str(dataset_or_uri.uri)
        if version is None:
            version = dataset_or_uri.version
    else:
        raise InvalidArgumentError(
            f"expected a dataset URI or a lancepy.LanceDataset, got {type(dataset_or_uri).__name__}"
        )
    if "://" not in uri:
        uri = os.path.abspath(uri)  # workers may not share the working directory
    return uri, _open(uri, version, storage_options), storage_options


def _matching_addresses(ds: _Dataset, flt: Any) -> np.ndarray:
    """Row addresses of the live rows matching `flt`, in scan order."""
    parts = [
        b.column(b.schema.get_field_index("_rowaddr")).to_numpy()
        for b in ds.to_batches(columns=[], filter=flt, with_row_address=True, batch_size=1 << 17)
    ]
    return np.concatenate(parts).astype(np.uint64, copy=False) if parts else np.empty(0, dtype=np.uint64)


# ----------------------------------------------------------------------------------------
# Map-style dataset


@track_io(owner_tracker, dunders=("__getitem__", "__getitems__"))  # (reads count for the dataset's io_stats_*)
class LanceDataset(torch.utils.data.Dataset):
    """A map-style PyTorch dataset over one pinned version of a Lance dataset.

    Parameters
    ----------
    dataset_or_uri:
        A URI / path, a :class:`lancepy.LanceDataset` (its version is used unless `version`
        is given), or another library's dataset object with ``uri`` and ``version``.
    columns:
        Columns to read (default: all), in this order. May name the system columns
        ``_rowid``, ``_rowaddr``, ``_row_created_at_version`` and
        ``_row_last_updated_at_version`` (read as int64).
    filter:
        Only rows matching this SQL predicate (or ``pyarrow.compute`` expression) are
        indexed: index ``i`` is then the ``i``-th matching live row. The matching rows are
        found once, here.
    version:
        A version number or tag; default: the latest (or the given dataset's). Resolved to a
        number now: commits that land later never change what an index means.
    transform:
        ``transform(batch) -> anything``, applied once per batch (decode images, tokenize).
    storage_options:
        Passed on to :func:`lancepy.dataset` when not ``None``.
    fill_null:
        Replaces nulls in numeric columns (one value, or a dict column -> value); without it
        a batch holding such nulls raises :class:`NullValuesError`.
    binary:
        ``"bytes"`` (default): binary columns as ``list[bytes]``; ``"tensor"``: as one
        :class:`BinaryTensor` per batch (no per-row Python objects).

    ``len(ds)`` is the number of (matching) live rows. ``ds[i]`` is one row (a dict of
    per-row values; with a transform, ``transform`` of the one-row batch); ``ds[[i, j, ...]]``
    and ``ds.__getitems__(indices)`` are batches. Use ``collate_fn=lancepy.torch.collate_fn``
    in the DataLoader (the batch is already built).
    """

    def __init__(
        self,
        dataset_or_uri: Any,
        columns: Optional[Sequence[str]] = None,
        filter: Any = None,
        version: Union[int, str, None] = None,
        transform: Optional[Callable[[Batch], Any]] = None,
        storage_options: Optional[Dict[str, str]] = None,
        *,
        fill_null: FillNull = None,
        binary: str = "bytes",
    ) -> None:
        if binary not in ("bytes", "tensor"):
            raise InvalidArgumentError(f"binary must be 'bytes' or 'tensor', got {binary!r}")
        uri, ds, storage_options = _open_pinned(dataset_or_uri, version, storage_options)
        schema = ds.schema
        if columns is None:
            cols = list(schema.names)
        else:
            if isinstance(columns, str):
                raise InvalidArgumentError("columns must be a list of column names, not a string")
            cols = list(columns)
            unknown = [c for c in cols if c not in schema.names and c not in SYSTEM_COLUMNS]
            if unknown:
                raise ColumnNotFoundError(
                    f"columns {unknown} do not exist; the dataset has {schema.names} (and the system columns "
                    f"{list(SYSTEM_COLUMNS)})"
                )
        self._uri = uri
        self._version: int = ds.version
        self._storage_options = storage_options
        self._columns = cols
        # Blob columns (images, audio, video stored as blobs) are read as their values, not
        # as the descriptions a scan returns: binary columns for the converters.
        # System columns (row ids, addresses, row versions) are computed, not read: int64.
        self._system_columns = [c for c in cols if c not in schema.names]
        self._blob_columns = ds._view.loaded.blob_columns([c for c in cols if c in schema.names])
        self._fields = [
            pa.field(c, pa.int64(), False) if c in self._system_columns
            else pa.field(c, pa.large_binary(), schema.field(c).nullable) if c in self._blob_columns
            else schema.field(c)
            for c in cols
        ]
        self._fill_null = fill_null
        self._binary = binary
        self.transform = transform
        self._filter_text = None if filter is None else str(filter)
        if filter is None:
            self._addresses: Optional[np.ndarray] = None
            self._len = ds.count_rows()
        else:
            self._addresses = _matching_addresses(ds, filter)
            self._len = len(self._addresses)
        self._ds: Optional[_Dataset] = ds
        self._pid: Optional[int] = os.getpid()
        self._convert = _Converter(self._fields, fill_null, binary)
        self._bytes_columns = [c for c in _bytes_columns(self._fields, binary) if c not in self._blob_columns]
        self._not_direct: Set[str] = set(self._blob_columns) | set(self._system_columns)  # (take_into cannot gather)

    # -- pickling: the URI, the version and the options, never an open dataset -----------

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        state["_ds"] = None
        state["_pid"] = None
        del state["_convert"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_not_direct", set(self._blob_columns))  # pickled before it existed
        self.__dict__.setdefault("_system_columns", [])
        self._convert = _Converter(self._fields, self._fill_null, self._binary)

    def _dataset(self) -> _Dataset:
        # Opened once per process (a forked worker opens its own).
        pid = os.getpid()
        if self._ds is None or self._pid != pid:
            self._ds = _open(self._uri, self._version, self._storage_options)
            self._pid = pid
        return self._ds

    # -- description ----------------------------------------------------------------------

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def version(self) -> int:
        """The pinned version number."""
        return self._version

    @property
    def columns(self) -> List[str]:
        return list(self._columns)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the columns read."""
        return pa.schema(self._fields)

    @property
    def filter(self) -> Optional[str]:
        return self._filter_text

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        extra = f", filter={self._filter_text!r}" if self._filter_text is not None else ""
        return f"lancepy.torch.LanceDataset({self._uri!r}, version={self._version}, rows={self._len}{extra})"

    # -- reading --------------------------------------------------------------------------

    def read(self, indices: Any) -> pa.RecordBatch:
        """The rows at `indices` as an Arrow record batch (one native take, input order)."""
        return pa.record_batch(self._take(indices))

    def _take(self, indices: Any) -> Any:
        """lancepy's native result for the rows at `indices` (not yet a pyarrow object)."""
        return self._native_take(*self._where(indices), self._columns)

    def _native_take(self, where: List[int], by_address: bool, columns: List[str]) -> Any:
        """The native take of `columns` at logical indices or row addresses; blob columns
        as their values (fetched with ranged reads from their descriptions)."""
        view = self._dataset()._view
        snapshot = view.snapshot
        blobs = [c for c in columns if c in self._blob_columns] if self._blob_columns else None
        system = [c for c in columns if c in self._system_columns] if self._system_columns else None
        if not blobs and not system:
            return _native_take(snapshot, where, by_address, columns)
        stored = [c for c in columns if not system or c not in system]
        with_id = bool(system) and ROW_ID in system
        if by_address:
            t = pa.table(snapshot.take_addresses(where, columns=stored, with_row_id=with_id, with_row_address=True))
        else:
            t = pa.table(snapshot.take(where, columns=stored, with_row_id=with_id, with_row_address=True))
        addresses = t.column(ROW_ADDRESS).combine_chunks()
        for name in blobs or ():
            i = t.schema.get_field_index(name)
            values = pa.table(snapshot.blob_values(name, addresses, t.column(i).combine_chunks())).column(0)
            t = t.set_column(i, pa.field(name, pa.large_binary(), t.schema.field(i).nullable), values)
        computed = {
            name: (t.column(name).combine_chunks() if name in (ROW_ID, ROW_ADDRESS)
                   else lineage.versions_at(view, addresses, lineage.COLUMNS[name])).cast(pa.int64())
            for name in system or ()
        }
        t = pa.table([computed[c] if c in computed else t.column(c) for c in columns],
                     names=columns).combine_chunks()
        return pa.RecordBatch.from_arrays([c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in t.columns],
                                          schema=t.schema)

    def _where(self, indices: Any) -> Tuple[List[int], bool]:
        """(logical row indices, False), or (row addresses, True) when a filter is set."""
        if self._addresses is None:
            return (indices if isinstance(indices, list) else _index_list(indices)), False
        idx = np.asarray(_index_list(indices), dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self._len):
            bad = int(idx[(idx < 0) | (idx >= self._len)][0])
            raise IndexError(f"row index {bad} is out of range for {self._len} rows")
        return self._addresses[idx].tolist(), True

    def _batch(self, indices: Any, allocate: Optional[Allocate] = None) -> Batch:
        """One native read of `indices`, converted. Binary columns read as ``list[bytes]``
        are copied once, from the file straight into each ``bytes`` object, when every
        fragment stores them row by row (full-zip pages); the rest is one native take.

        With `allocate` (``allocate(shape, dtype) -> tensor``: pinned memory, say), the
        fixed-width columns stored row by row (vectors) are gathered straight into tensors it
        returns, with the GIL released: one copy from the file into the batch."""
        if not self._bytes_columns and allocate is None:
            return self._convert.native(self._take(indices))
        snapshot = self._dataset()._view.snapshot
        where, by_address = self._where(indices)
        ready: Dict[str, Any] = {}
        for name in self._bytes_columns:
            values = snapshot.take_bytes(where, name, addresses=by_address)
            if values is not None:  # else not stored row by row: through the native take
                ready[name] = values
        if allocate is not None and where:
            for name, (dims, dtype) in self._convert.fixed_layouts.items():
                if name in self._not_direct:
                    continue
                out = allocate((len(where), *dims), dtype)
                if snapshot.take_into(where, name, out.numpy(), addresses=by_address):
                    ready[name] = out
                else:  # not stored row by row (a small column in mini-blocks): not tried again
                    self._not_direct.add(name)
        rest = [c for c in self._columns if c not in ready]
        if not rest:
            return Batch((c, ready[c]) for c in self._columns)
        return self._convert.native(self._native_take(where, by_address, rest), ready)

    def __getitems__(self, indices: Any) -> Any:
        """One batch: ONE native take of `indices` (any order, repeats allowed), converted."""
        batch = self._batch(indices)
        return batch if self.transform is None else self.transform(batch)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, numbers.Integral) and not isinstance(index, bool):
            i = int(index)
            if i < 0:
                i += self._len
            if not 0 <= i < self._len:
                raise IndexError(f"row index {index} is out of range for {self._len} rows")
            batch = self._batch([i])
            return _one_row(batch) if self.transform is None else self.transform(batch)
        if isinstance(index, slice):
            return self.__getitems__(list(range(*index.indices(self._len))))
        return self.__getitems__(index)


def _native_take(snapshot: Any, where: List[int], by_address: bool, columns: List[str]) -> Any:
    """The native take of `columns` at logical indices or row addresses."""
    if by_address:
        return snapshot.take_addresses(where, columns=columns)
    return snapshot.take(where, columns=columns)


def _index_list(indices: Any) -> List[int]:
    if isinstance(indices, list):
        return indices
    if isinstance(indices, torch.Tensor):
        return indices.tolist()
    if isinstance(indices, np.ndarray):
        if indices.dtype.kind not in "iu":
            raise InvalidArgumentError(f"row indices must be integers, got {indices.dtype}")
        return indices.tolist()
    if isinstance(indices, range):
        return list(indices)
    try:
        return [operator.index(i) for i in indices]
    except TypeError:
        raise InvalidArgumentError("row indices must be a sequence of integers") from None


# ----------------------------------------------------------------------------------------
# Iterable dataset


class LanceIterableDataset(torch.utils.data.IterableDataset):
    """Ready batches of a Lance dataset, split across DataLoader workers and ranks.

    Each epoch's order (a full scan in row order, or with ``shuffle=True`` a permutation of
    seed and epoch, optionally by blocks as in :class:`ShuffleSampler`) is shared out to ranks
    as :class:`ShuffleSampler` does (equal shares: padded, or cut with ``drop_last``), and each
    rank's share is cut into batches of `batch_size` that its DataLoader workers take in turn
    (worker ``w`` of ``W`` reads batches ``w, w + W, ...``), so every row of the share is read
    once: no overlap, no gap, and the DataLoader yields the batches in order.

    Use it with ``DataLoader(ds, batch_size=None, ...)``. ``set_epoch(e)`` chooses the order of
    the next pass; without it, each pass uses the next epoch (persistent workers, which never
    see ``set_epoch`` calls made after they started, count passes the same way).
    Other arguments are those of :class:`LanceDataset` and :class:`ShuffleSampler`.
    """

    def __init__(
        self,
        dataset_or_uri: Any,
        batch_size: int,
        columns: Optional[Sequence[str]] = None,
        filter: Any = None,
        shuffle: bool = False,
        seed: int = 0,
        *,
        version: Union[int, str, None] = None,
        transform: Optional[Callable[[Batch], Any]] = None,
        storage_options: Optional[Dict[str, str]] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        drop_last: bool = False,
        block_size: Optional[int] = None,
        buffer_size: Optional[int] = None,
        fill_null: FillNull = None,
        binary: str = "bytes",
    ) -> None:
        if not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.data = LanceDataset(
            dataset_or_uri, columns, filter, version, None, storage_options, fill_null=fill_null, binary=binary
        )
        self.batch_size = int(batch_size)
        self.transform = transform
        self._order = _Order(len(self.data), seed, shuffle, block_size, buffer_size, drop_last)
        self._rank, self._world_size = rank, world_size
        if rank is not None or world_size is not None:
            _rank_world(rank, world_size)  # validate now
        self.epoch = 0
        self._passes = 0  # passes since the epoch was set

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        # Spawned workers do not share torch.distributed's state: fix rank and world size now.
        state["_rank"], state["_world_size"] = _rank_world(self._rank, self._world_size)
        return state

    def set_epoch(self, epoch: int) -> None:
        epoch = operator.index(epoch)
        if epoch < 0:
            raise InvalidArgumentError(f"epoch must be non-negative, got {epoch}")
        self.epoch = epoch
        self._passes = 0

    def _batches_per_rank(self, world_size: int) -> int:
        return -(-self._order.share_len(world_size) // self.batch_size)

    def __len__(self) -> int:
        """Batches per pass for this rank."""
        return self._batches_per_rank(_rank_world(self._rank, self._world_size)[1])

    def __iter__(self) -> Iterator[Any]:
        rank, world_size = _rank_world(self._rank, self._world_size)
        info = torch.utils.data.get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        epoch = self.epoch + self._passes
        self._passes += 1
        share = self._order.share(epoch, rank, world_size)
        bs = self.batch_size
        data = self.data
        for b in range(worker, self._batches_per_rank(world_size), workers):
            rows = share[b * bs : (b + 1) * bs]
            batch = data._convert.native(self._read(rows))
            # In a worker process, the batch leaves through the worker's shared-memory ring.
            yield _ring.ship(batch if self.transform is None else self.transform(batch))

    def _read(self, rows: np.ndarray) -> Any:
        data = self.data
        first = int(rows[0])
        consecutive = int(rows[-1]) - first == len(rows) - 1 and (len(rows) < 2 or bool((np.diff(rows) == 1).all()))
        if (consecutive and data._addresses is None and not self._rows_stored_whole and not data._blob_columns
                and not data._system_columns):
            # Consecutive rows: a range scan. (Vectors and binary values are copied faster
            # by a take: one copy per page out of the mapped file, no decoding.)
            return data._dataset()._view.snapshot.scan(
                data._columns,
                fragment_ids=None,
                offset=first,
                limit=len(rows),
                batch_rows=1 << 20,
            )
        return data._take(rows.tolist())

    @property
    def _rows_stored_whole(self) -> bool:
        """Whether every column read is of a kind stored row by row (vectors, binary)."""
        return all(
            pa.types.is_fixed_size_list(f.type) or pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)
            for f in self.data._fields
        )

    def __repr__(self) -> str:
        return f"lancepy.torch.LanceIterableDataset({self.data!r}, batch_size={self.batch_size}, shuffle={self._order.shuffle})"
