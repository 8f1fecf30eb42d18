r"""PyTorch training data straight from Lance datasets (``pip install lancepy[torch]``).

::

    from torch.utils.data import DataLoader
    from lancepy.torch import LanceDataset, ShuffleSampler, collate_fn

    data = LanceDataset("train.lance", columns=["emb", "label"])      # the version is pinned now
    sampler = ShuffleSampler(data, seed=0)                              # DDP ranks: automatic
    loader = DataLoader(data, batch_size=256, sampler=sampler, collate_fn=collate_fn)  # see "Workers"
    for epoch in range(10):
        sampler.set_epoch(epoch)
        for batch in loader:         # {"emb": float32 tensor [256, 768], "label": int64 tensor [256]}
            ...

* :class:`LanceDataset` is map-style: index ``i`` is the ``i``-th live row of the pinned version
  (what ``ds.take([i])`` returns). The DataLoader hands a whole batch of indices to
  ``__getitems__``, which reads them with ONE native take over all fragments (rows in the
  given order, repeats allowed) and converts the columns without per-row Python objects.
* :class:`ShuffleSampler` yields a deterministic permutation per epoch (``set_epoch``), splits
  it into equal, disjoint shares for distributed ranks and resumes mid-epoch exactly
  (``state_dict`` / ``load_state_dict``); ``block_size=`` trades randomness for fewer, larger
  reads.
* :class:`LanceIterableDataset` yields ready batches, splitting the work across DataLoader
  workers and ranks with no overlap and no gap: a full scan in order, or shuffled.
* :class:`Loader` replaces the DataLoader for reading: threads in the training process read
  batches ahead (one native take each, GIL released), optionally pinned and copied to a CUDA
  device, in :class:`ShuffleSampler`'s (or any sampler's) order, with resume and ranks.

Batches are dicts ``column -> values``:

===========================================  =========================================================
column type                                  value
===========================================  =========================================================
int*, uint*, float16/32/64                   1-D tensor, **zero-copy** (shares the Arrow buffer)
date, time, timestamp, duration              1-D int32/int64 tensor of the stored integers, zero-copy
bool                                         1-D ``torch.bool`` tensor (one copy: Arrow packs bits)
fixed_size_list of the above (nested: N-D)   ``[batch, dim, ...]`` tensor, **zero-copy** (bool: 1 copy)
string, large_string (and dictionaries)      ``list[str]`` (``None`` for nulls)
binary, large_binary, fixed_size_binary      ``list[bytes]``; with ``binary="tensor"`` a
                                             :class:`BinaryTensor` ``(values, offsets)``: one uint8
                                             tensor of all values (zero-copy) + int64 offsets
anything else (lists, structs, decimals...)  the ``pyarrow.Array`` itself
===========================================  =========================================================

Numeric columns holding nulls raise :class:`NullValuesError` unless ``fill_null=`` is given
(one value for every column, or a dict per column); filling makes one copy. Zero-copy tensors
share memory with the batch just read (nothing else uses it); DataLoader workers move each
batch to shared memory, which is one copy. Reads go through lancepy's native take: one call
per batch, with the GIL released; vectors and large binary values stored row by row (full-zip
pages without nulls) are copied from the mapped files straight into the batch, in order (for
``list[bytes]``, straight into each ``bytes`` object: one copy).

Workers: a batch of 256 rows × 768 float32 takes ~0.2–0.3 ms to read here, while moving a
batch from a DataLoader worker to the training process costs milliseconds (PyTorch puts each
tensor in a new shared-memory segment and sends it through a pipe) — the same for any
dataset (``benches/bench_torch.py`` measures an in-memory gather through the same workers).
So for reading alone ``num_workers=0`` is fastest, and :class:`Loader` (reads on threads of
the training process, ahead of the loop) faster still; use workers for costly ``transform``\ s
that hold the GIL (image decoding in Python, tokenizing), where the work they take off the
training process outweighs the transfer.

Datasets are opened lazily in each process: the objects here pickle the URI, the pinned
version and the options, never open handles, so ``multiprocessing_context`` may be
``"fork"``, ``"spawn"`` or ``"forkserver"`` (``memory://`` datasets exist only in the process
that made them and its forks).
"""

from __future__ import annotations

import inspect
import itertools
import numbers
import operator
import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.random  # noqa: F401  (numpy loads it lazily: ~50 ms on first use, paid here, not by the first batch)
import pyarrow as pa
import pyarrow.compute as pc
import torch
import torch.utils.data

import lancepy
from lancepy import blob as _blob
from lancepy.dataset import LanceDataset as _Dataset
from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError, UnsupportedError

__all__ = [
    "LanceDataset",
    "LanceIterableDataset",
    "ShuffleSampler",
    "BinaryTensor",
    "NullValuesError",
    "collate_fn",
    "Loader",
]

FillNull = Union[None, int, float, bool, Mapping[str, Any]]


class NullValuesError(InvalidArgumentError):
    """A numeric column holds nulls and no ``fill_null`` value was given for it."""


class BinaryTensor(NamedTuple):
    """A batch of binary values as two tensors: value ``i`` is ``values[offsets[i]:offsets[i + 1]]``."""

    values: torch.Tensor  # uint8, all values back to back
    offsets: torch.Tensor  # int64, batch + 1 entries, starting at 0

    @property
    def num_values(self) -> int:
        """Number of values (rows)."""
        return max(int(self.offsets.shape[0]) - 1, 0)

    def item_bytes(self, i: int) -> bytes:
        """Value ``i`` as ``bytes``."""
        return bytes(self.values[int(self.offsets[i]) : int(self.offsets[i + 1])].numpy())


class Batch(dict):
    """A batch: ``column -> values``. It is already collated: indexing it by position raises a
    helpful error (that is what PyTorch's ``default_collate`` does first)."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return dict.__getitem__(self, key)
        except KeyError:
            if isinstance(key, numbers.Integral):
                raise TypeError(
                    "a lancepy.torch batch is already collated (one native read per batch): pass "
                    "collate_fn=lancepy.torch.collate_fn to the DataLoader"
                ) from None
            raise


def collate_fn(batch: Any) -> Any:
    """Keeps a batch as it is (``LanceDataset.__getitems__`` already built it). Picklable."""
    return batch


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
# Arrow -> torch


_TORCH_DTYPES = {
    pa.int8(): torch.int8,
    pa.int16(): torch.int16,
    pa.int32(): torch.int32,
    pa.int64(): torch.int64,
    pa.uint8(): torch.uint8,
    pa.uint16(): torch.uint16,
    pa.uint32(): torch.uint32,
    pa.uint64(): torch.uint64,
    pa.float16(): torch.float16,
    pa.float32(): torch.float32,
    pa.float64(): torch.float64,
}


def _storage_int(t: pa.DataType) -> Optional[pa.DataType]:
    """The integer type a temporal type is stored as (``None`` if `t` is not temporal)."""
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return pa.int64()
    return None


def _leaf_type(t: pa.DataType) -> Optional[pa.DataType]:
    """The type a tensor can hold for `t` (numeric, bool or temporal-as-int), else ``None``."""
    if t in _TORCH_DTYPES or pa.types.is_boolean(t):
        return t
    return _storage_int(t)


def _fill_for(fill_null: FillNull, name: str) -> Any:
    if isinstance(fill_null, Mapping):
        return fill_null.get(name)
    return fill_null


def _null_error(name: str, nulls: int) -> NullValuesError:
    return NullValuesError(
        f"column {name!r} holds {nulls} null value(s) in this batch; pass fill_null= (one value, or a dict "
        f"column -> value) to replace them"
    )


def _tensor_of(arr: pa.Array, leaf: pa.DataType) -> torch.Tensor:
    """A 1-D tensor of a primitive array without nulls: zero-copy except for booleans."""
    n = len(arr)
    if pa.types.is_boolean(leaf):
        return torch.from_numpy(arr.to_numpy(zero_copy_only=False))  # a fresh, writable array
    if leaf != arr.type:
        arr = arr.view(leaf)
    if n == 0:
        return torch.empty(0, dtype=_TORCH_DTYPES[leaf])
    try:
        # DLPack shares the Arrow buffer (and keeps it alive), ~4 µs, without the warning
        # torch.from_numpy gives for read-only memory.
        return torch.from_dlpack(arr)
    except (BufferError, TypeError, RuntimeError, AttributeError, NotImplementedError):
        return _from_numpy(arr.to_numpy(zero_copy_only=True))


_numpy_warned = False


def _from_numpy(a: np.ndarray) -> torch.Tensor:
    """torch.from_numpy of a possibly read-only array. Torch warns once per process about
    read-only arrays; the first call is made with that warning silenced."""
    global _numpy_warned
    if _numpy_warned or a.flags.writeable:
        return torch.from_numpy(a)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        t = torch.from_numpy(a)
    _numpy_warned = True
    return t


def _filled(arr: pa.Array, leaf: pa.DataType, fill: Any) -> torch.Tensor:
    if arr.type != leaf:
        arr = arr.view(leaf)
    return _tensor_of(pc.fill_null(arr, pa.scalar(fill, type=leaf)), leaf)


class _Primitive:
    def __init__(self, name: str, leaf: pa.DataType, fill: Any) -> None:
        self.name, self.leaf, self.fill = name, leaf, fill

    def __call__(self, arr: pa.Array) -> torch.Tensor:
        if arr.null_count:
            if self.fill is None:
                raise _null_error(self.name, arr.null_count)
            return _filled(arr, self.leaf, self.fill)
        return _tensor_of(arr, self.leaf)


class _FixedSizeList:
    """``[batch, d1, d2, ...]`` tensors from (nested) fixed-size lists of a primitive type."""

    def __init__(self, name: str, dims: List[int], leaf: pa.DataType, fill: Any) -> None:
        self.name, self.dims, self.leaf, self.fill = name, dims, leaf, fill

    def __call__(self, arr: pa.Array) -> torch.Tensor:
        n = len(arr)
        null_rows = []  # per level: which items of that level are null lists
        values = arr
        leaf_nulls = 0
        for d in self.dims:
            if values.null_count:
                null_rows.append((values.is_null().to_numpy(zero_copy_only=False), len(values)))
            # `.values` ignores the list array's own offset: slice the items it covers. (The
            # null count of the whole child is known; a slice's would be counted: ~50 µs.)
            child = values.values
            leaf_nulls = child.null_count
            values = child.slice(values.offset * d, len(values) * d)
        if leaf_nulls:
            leaf_nulls = values.null_count
        shape = (n, *self.dims)
        if not null_rows and not leaf_nulls:
            return _tensor_of(values, self.leaf).view(shape)
        if self.fill is None:
            raise _null_error(self.name, sum(int(m.sum()) for m, _ in null_rows) + leaf_nulls)
        flat = _filled(values, self.leaf, self.fill).clone()
        # A null list stands for all the items under it.
        for mask, count in null_rows:
            flat.view(count, -1)[torch.from_numpy(mask)] = self.fill
        return flat.view(shape)


def _strings(arr: pa.Array) -> List[Optional[str]]:
    return arr.to_pylist()


class _BinaryTensor:
    def __call__(self, arr: pa.Array) -> BinaryTensor:
        n = len(arr)
        t = arr.type
        if pa.types.is_fixed_size_binary(t):
            w = t.byte_width
            data = arr.buffers()[1]
            values = _bytes_tensor(data, arr.offset * w, n * w)
            return BinaryTensor(values, torch.arange(0, (n + 1) * w, w, dtype=torch.int64) if w else torch.zeros(n + 1, dtype=torch.int64))
        if not (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
            arr = arr.cast(pa.large_binary())
            t = arr.type
        width = 8 if pa.types.is_large_binary(t) else 4
        bufs = arr.buffers()
        offs = np.frombuffer(bufs[1], dtype=np.int64 if width == 8 else np.int32, count=n + 1, offset=arr.offset * width)
        base, end = int(offs[0]), int(offs[-1])
        offsets = torch.from_numpy(offs.astype(np.int64) - base)
        return BinaryTensor(_bytes_tensor(bufs[2], base, end - base), offsets)


def _bytes_tensor(buf: Optional[pa.Buffer], offset: int, count: int) -> torch.Tensor:
    """Bytes ``offset..offset + count`` of an Arrow buffer as a uint8 tensor, zero-copy."""
    if count <= 0 or buf is None:
        return torch.empty(0, dtype=torch.uint8)
    return _from_numpy(np.frombuffer(buf, dtype=np.uint8, count=count, offset=offset))


def _as_is(arr: pa.Array) -> pa.Array:
    return arr


class _Decode:
    def __init__(self, inner: Callable[[pa.Array], Any]) -> None:
        self.inner = inner

    def __call__(self, arr: pa.Array) -> Any:
        return self.inner(arr.dictionary_decode())


def _converter(field: pa.Field, fill_null: FillNull, binary: str) -> Callable[[pa.Array], Any]:
    t = field.type
    fill = _fill_for(fill_null, field.name)
    if pa.types.is_dictionary(t):
        return _Decode(_converter(pa.field(field.name, t.value_type), fill_null, binary))
    leaf = _leaf_type(t)
    if leaf is not None:
        return _Primitive(field.name, leaf, fill)
    if pa.types.is_fixed_size_list(t):
        dims = []
        inner = t
        while pa.types.is_fixed_size_list(inner):
            dims.append(inner.list_size)
            inner = inner.value_type
        leaf = _leaf_type(inner)
        if leaf is not None:
            return _FixedSizeList(field.name, dims, leaf, fill)
        return _as_is
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        return _strings
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or getattr(
        pa.types, "is_binary_view", lambda _: False
    )(t):
        return _BinaryTensor() if binary == "tensor" else _strings
    return _as_is


class _Converter:
    """Record batch -> :class:`Batch`, one converter per column, chosen once from the schema."""

    def __init__(self, fields: Sequence[pa.Field], fill_null: FillNull, binary: str) -> None:
        self.columns = [(i, f.name, _converter(f, fill_null, binary)) for i, f in enumerate(fields)]
        # Columns that may come straight from lancepy's native result as numpy views.
        self.numeric = [isinstance(c, (_Primitive, _FixedSizeList)) for _, _, c in self.columns]

    def __call__(self, rb: pa.RecordBatch) -> Batch:
        return Batch((name, convert(rb.column(i))) for i, name, convert in self.columns)

    def native(self, out: Any, ready: Optional[Dict[str, Any]] = None) -> Batch:
        """Converts lancepy's native result: numbers and fixed-size lists of them without nulls
        become tensors over the result's memory in two steps (``np.asarray`` of a view, then
        ``torch.from_numpy``); other columns go through a pyarrow record batch. Columns in
        `ready` (already converted) are not in `out`, which holds the others in order."""
        rb = None
        items = []
        i = 0
        for (_, name, convert), numeric in zip(self.columns, self.numeric):
            if ready is not None and name in ready:
                items.append((name, ready[name]))
                continue
            # (a pyarrow batch — rows with blob values — has no native fast path)
            values = out.fixed_values(i) if numeric and not isinstance(out, pa.RecordBatch) else None
            if values is not None:
                items.append((name, _from_numpy(np.asarray(values))))
            else:
                if rb is None:
                    rb = pa.record_batch(out)
                items.append((name, convert(rb.column(i))))
            i += 1
        return Batch(items)


def _bytes_columns(fields: Sequence[pa.Field], binary: str) -> List[str]:
    """The columns read as ``list[bytes]`` that may be copied straight out of the files."""
    if binary != "bytes":
        return []
    return [f.name for f in fields if pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)]


def _one_row(batch: Batch) -> Dict[str, Any]:
    out = {}
    for k, v in batch.items():
        if isinstance(v, BinaryTensor):
            out[k] = v.values[int(v.offsets[0]) : int(v.offsets[1])]
        else:
            out[k] = v[0]
    return out


# ----------------------------------------------------------------------------------------
# Map-style dataset


class LanceDataset(torch.utils.data.Dataset):
    """A map-style PyTorch dataset over one pinned version of a Lance dataset.

    Parameters
    ----------
    dataset_or_uri:
        A URI / path, a :class:`lancepy.LanceDataset` (its version is used unless `version`
        is given), or another library's dataset object with ``uri`` and ``version``.
    columns:
        Columns to read (default: all), in this order.
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
            unknown = [c for c in cols if c not in schema.names]
            if unknown:
                raise ColumnNotFoundError(f"columns {unknown} do not exist; the dataset has {schema.names}")
        self._uri = uri
        self._version: int = ds.version
        self._storage_options = storage_options
        self._columns = cols
        # Blob columns (images, audio, video stored as blobs) are read as their values, not
        # as the descriptions a scan returns: binary columns for the converters.
        manifest = ds._loaded.manifest
        self._blob_columns = [c for c in cols if _blob.blob_field_kind(manifest, c) is not None]
        self._fields = [
            pa.field(c, pa.large_binary(), schema.field(c).nullable) if c in self._blob_columns else schema.field(c)
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

    # -- pickling: the URI, the version and the options, never an open dataset -----------

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        state["_ds"] = None
        state["_pid"] = None
        del state["_convert"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
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
        snapshot = self._dataset()._snapshot
        blobs = [c for c in columns if c in self._blob_columns] if self._blob_columns else None
        if not blobs:
            return _native_take(snapshot, where, by_address, columns)
        if by_address:
            t = pa.table(snapshot.take_addresses(where, columns, False, True))
        else:
            t = pa.table(snapshot.take(where, columns, False, True))
        addresses = t.column("_rowaddr").combine_chunks()
        for name in blobs:
            i = t.schema.get_field_index(name)
            values = pa.table(snapshot.blob_values(name, addresses, t.column(i).combine_chunks())).column(0)
            t = t.set_column(i, pa.field(name, pa.large_binary(), t.schema.field(i).nullable), values)
        t = t.drop_columns(["_rowaddr"]).combine_chunks()
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

    def _batch(self, indices: Any) -> Batch:
        """One native read of `indices`, converted. Binary columns read as ``list[bytes]``
        are copied once, from the file straight into each ``bytes`` object, when every
        fragment stores them row by row (full-zip pages); the rest is one native take."""
        if not self._bytes_columns:
            return self._convert.native(self._take(indices))
        snapshot = self._dataset()._snapshot
        where, by_address = self._where(indices)
        ready: Dict[str, Any] = {}
        for name in self._bytes_columns:
            values = snapshot.take_bytes(where, name, by_address)
            if values is not None:  # else not stored row by row: through the native take
                ready[name] = values
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
        return snapshot.take_addresses(where, columns, False, False)
    return snapshot.take(where, columns, False, False)


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
# Orders: permutations, blocks, ranks


def _num_rows(dataset_or_len: Any) -> int:
    if isinstance(dataset_or_len, numbers.Integral) and not isinstance(dataset_or_len, bool):
        n = int(dataset_or_len)
    else:
        n = len(dataset_or_len)
    if n < 0:
        raise InvalidArgumentError(f"a dataset cannot have {n} rows")
    return n


def _rank_world(rank: Optional[int], world_size: Optional[int]) -> Tuple[int, int]:
    """Explicit values, else torch.distributed's when it is initialised, else (0, 1)."""
    if rank is None or world_size is None:
        dist = torch.distributed
        initialised = dist.is_available() and dist.is_initialized()
        if rank is None:
            rank = dist.get_rank() if initialised else 0
        if world_size is None:
            world_size = dist.get_world_size() if initialised else 1
    rank, world_size = int(rank), int(world_size)
    if world_size < 1:
        raise InvalidArgumentError(f"world_size must be at least 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise InvalidArgumentError(f"rank must be in [0, {world_size}), got {rank}")
    return rank, world_size


class _Order:
    """The order of one epoch: a permutation (or the identity), shared out to ranks."""

    def __init__(
        self,
        num_rows: int,
        seed: int,
        shuffle: bool,
        block_size: Optional[int],
        buffer_size: Optional[int],
        drop_last: bool,
    ) -> None:
        if not isinstance(seed, numbers.Integral) or seed < 0:
            raise InvalidArgumentError(f"seed must be a non-negative integer, got {seed!r}")
        if block_size is not None and (not isinstance(block_size, numbers.Integral) or block_size < 1):
            raise InvalidArgumentError(f"block_size must be a positive integer, got {block_size!r}")
        if buffer_size is not None and (not isinstance(buffer_size, numbers.Integral) or buffer_size < 1):
            raise InvalidArgumentError(f"buffer_size must be a positive integer, got {buffer_size!r}")
        if buffer_size is not None and block_size is None:
            raise InvalidArgumentError("buffer_size only applies with block_size")
        self.num_rows = num_rows
        self.seed = int(seed)
        self.shuffle = bool(shuffle)
        self.block_size = None if block_size is None or block_size == 1 else int(block_size)
        self.buffer_size = None if self.block_size is None else int(buffer_size or 16 * self.block_size)
        self.drop_last = bool(drop_last)

    def share_len(self, world_size: int) -> int:
        n = self.num_rows
        return n // world_size if self.drop_last else -(-n // world_size)

    def epoch_order(self, epoch: int) -> np.ndarray:
        """Every row, in the order of `epoch` (deterministic in seed and epoch)."""
        n = self.num_rows
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        if epoch < 0:
            raise InvalidArgumentError(f"epoch must be non-negative, got {epoch}")
        rng = np.random.default_rng([self.seed, int(epoch)])
        if self.block_size is None:
            return rng.permutation(n).astype(np.int64, copy=False)
        k = self.block_size
        blocks = rng.permutation(-(-n // k)).astype(np.int64)
        starts = blocks * k
        lengths = np.minimum(k, n - starts)
        # Rows of the blocks, block after block: start of each row's block + its position.
        ends = np.cumsum(lengths)
        order = np.repeat(starts - (ends - lengths), lengths) + np.arange(n, dtype=np.int64)
        # Then shuffle rows within consecutive windows of buffer_size (a bounded buffer).
        window = np.arange(n, dtype=np.int64) // self.buffer_size
        return order[np.lexsort((rng.random(n), window))]

    def share(self, epoch: int, rank: int, world_size: int) -> np.ndarray:
        """Rank `rank`'s share of `epoch`: a contiguous slice of the epoch's order, padded
        (by wrapping around to its start) or cut so that every rank gets the same number."""
        per = self.share_len(world_size)
        order = self.epoch_order(epoch)
        total = per * world_size
        if total > len(order):
            order = np.concatenate([order, np.resize(order, total - len(order))])
        return order[rank * per : (rank + 1) * per]

    def state(self) -> Dict[str, Any]:
        return {
            "num_rows": self.num_rows,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "block_size": self.block_size,
            "buffer_size": self.buffer_size,
            "drop_last": self.drop_last,
        }


_FIRST_CHUNK = 1024  # indices turned into Python ints before the first is handed out
_MAX_CHUNK = 65536


class ShuffleSampler(torch.utils.data.Sampler):
    """Row indices for a :class:`LanceDataset`: a full permutation of the live rows per epoch.

    Parameters
    ----------
    dataset_or_len:
        The dataset (anything with ``len``) or its number of rows.
    seed:
        With the epoch, decides the permutation (the same in every process).
    rank, world_size:
        Distributed training: this rank gets a disjoint share of every epoch, of equal length on
        every rank (padded with rows from the start of the epoch's order, or cut with
        `drop_last`), so that no rank waits for another. Default: from ``torch.distributed``
        when it is initialised, else a single process.
    drop_last:
        Cut the epoch to a multiple of `world_size` instead of padding it.
    block_size:
        Shuffle blocks of `block_size` consecutive rows, then rows within windows of
        `buffer_size` rows (default ``16 * block_size``) of that order: fewer, larger reads.
    shuffle:
        ``False``: rows in order (still shared out to ranks).

    ``set_epoch(e)`` picks epoch ``e``'s order. ``state_dict()`` records the epoch and how many
    indices this sampler has handed out in it; after ``load_state_dict`` the next iteration
    yields exactly the rest of that epoch, in the same order. A DataLoader with workers fetches
    ahead of what the training loop has consumed: pass ``consumed=`` (rows consumed since the
    current iteration started) to ``state_dict`` for an exact position then.
    """

    def __init__(
        self,
        dataset_or_len: Any,
        seed: int = 0,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        drop_last: bool = False,
        *,
        block_size: Optional[int] = None,
        buffer_size: Optional[int] = None,
        shuffle: bool = True,
    ) -> None:
        self._order = _Order(_num_rows(dataset_or_len), seed, shuffle, block_size, buffer_size, drop_last)
        self.rank, self.world_size = _rank_world(rank, world_size)
        self.epoch = 0
        self._resume: Optional[int] = None  # position to start the next iteration at
        self._iter: Optional[Iterator[int]] = None  # the current iteration
        self._iter_start = 0  # where in the share it started
        self._chunk: Iterator[int] = iter(())  # the list iterator of the chunk being handed out
        self._chunk_end = 0  # the position in the share just after that chunk

    @property
    def seed(self) -> int:
        return self._order.seed

    @property
    def num_samples(self) -> int:
        """Indices per epoch for this rank."""
        return self._order.share_len(self.world_size)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Uses epoch `epoch`'s order from the next iteration on (a pending resume of the same
        epoch is kept)."""
        epoch = operator.index(epoch)
        if epoch < 0:
            raise InvalidArgumentError(f"epoch must be non-negative, got {epoch}")
        if epoch != self.epoch:
            self.epoch = epoch
            self._resume = None
            self._iter = None

    def indices(self, epoch: Optional[int] = None) -> np.ndarray:
        """This rank's indices of `epoch` (default: the current one), in order."""
        return self._order.share(self.epoch if epoch is None else epoch, self.rank, self.world_size)

    def __iter__(self) -> Iterator[int]:
        share = self.indices()
        start = self._resume or 0
        self._resume = None
        self._chunk, self._chunk_end = iter(()), start
        it = itertools.chain.from_iterable(self._chunks(share, start))
        self._iter, self._iter_start = it, start
        return it

    def _chunks(self, share: np.ndarray, start: int) -> Iterator[Iterator[int]]:
        """The share from `start` as list iterators of growing chunks: the first batch does not
        wait for a whole epoch to become Python ints, and handing out an index stays C code
        (chain over list iterators). Each chunk's iterator is kept so that its length hint
        gives the exact position."""
        pos, size = start, _FIRST_CHUNK
        while pos < len(share):
            end = min(pos + size, len(share))
            self._chunk, self._chunk_end = iter(share[pos:end].tolist()), end
            yield self._chunk
            pos, size = end, min(size * 4, _MAX_CHUNK)

    def _position(self) -> int:
        if self._resume is not None:
            return self._resume
        if self._iter is None:
            return 0
        return self._chunk_end - operator.length_hint(self._chunk)

    def state_dict(self, consumed: Optional[int] = None) -> Dict[str, Any]:
        """The epoch and the position in it (indices of this rank's share already handed out,
        or, with `consumed`, the current iteration's start plus `consumed`)."""
        if consumed is None:
            position = self._position()
        else:
            start = self._resume if self._resume is not None else (self._iter_start if self._iter is not None else 0)
            position = min(start + int(consumed), self.num_samples)
        return {"epoch": self.epoch, "position": position, "world_size": self.world_size, **self._order.state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resumes: the next iteration yields the rest of the recorded epoch."""
        mine = {"world_size": self.world_size, **self._order.state()}
        diff = {k: (state.get(k), v) for k, v in mine.items() if k in state and state[k] != v}
        if diff:
            detail = ", ".join(f"{k}: saved {a!r}, now {b!r}" for k, (a, b) in diff.items())
            raise InvalidArgumentError(f"the saved sampler state is for a different order ({detail})")
        position = int(state["position"])
        if not 0 <= position <= self.num_samples:
            raise InvalidArgumentError(f"position {position} is outside an epoch of {self.num_samples} indices")
        self.epoch = int(state["epoch"])
        self._iter = None
        self._resume = position

    def __repr__(self) -> str:
        o = self._order
        return (
            f"ShuffleSampler(rows={o.num_rows}, seed={o.seed}, epoch={self.epoch}, rank={self.rank}, "
            f"world_size={self.world_size}, block_size={o.block_size})"
        )


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
            yield batch if self.transform is None else self.transform(batch)

    def _read(self, rows: np.ndarray) -> Any:
        data = self.data
        first = int(rows[0])
        consecutive = int(rows[-1]) - first == len(rows) - 1 and (len(rows) < 2 or bool((np.diff(rows) == 1).all()))
        if consecutive and data._addresses is None and not self._rows_stored_whole and not data._blob_columns:
            # Consecutive rows: a range scan. (Vectors and binary values are copied faster
            # by a take: one copy per page out of the mapped file, no decoding.)
            return data._dataset()._snapshot.scan(data._columns, None, first, len(rows), 1 << 20, False, False, False)
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


# ----------------------------------------------------------------------------------------
# In-process prefetching loader


_UNSET: Any = object()


def _default_threads() -> int:
    return max(1, min((os.cpu_count() or 2) - 1, 8))


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _is_index(x: Any) -> bool:
    """Whether a sampler's item is one row index (not a batch of them)."""
    if isinstance(x, bool):
        return False
    if isinstance(x, (numbers.Integral, np.integer)):
        return True
    if isinstance(x, torch.Tensor):
        return x.ndim == 0 and not x.dtype.is_floating_point and not x.dtype.is_complex
    if isinstance(x, np.ndarray):
        return x.ndim == 0 and x.dtype.kind in "iu"
    return False


def _device_of(device: Any) -> Optional[torch.device]:
    """The target device (``None``: leave batches where they are), checked now."""
    if device is None:
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as e:
        raise InvalidArgumentError(f"device={device!r} is not a torch device: {e}") from None
    if dev.type == "cpu":
        return dev
    if dev.type != "cuda":
        raise UnsupportedError(f"device={device!r}: the Loader copies batches to 'cpu' or 'cuda' devices only")
    if not torch.cuda.is_available():
        raise UnsupportedError(f"device={device!r} needs CUDA, and torch.cuda.is_available() is False here")
    if dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    elif dev.index >= torch.cuda.device_count():
        raise InvalidArgumentError(f"device={device!r}: there are {torch.cuda.device_count()} CUDA device(s)")
    return dev


def _map_tensors(obj: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """`obj` with `fn` applied to every tensor in it (dicts, lists, tuples, named tuples)."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, Batch):
        return Batch((k, _map_tensors(v, fn)) for k, v in obj.items())
    if isinstance(obj, Mapping):
        try:
            return type(obj)({k: _map_tensors(v, fn) for k, v in obj.items()})  # type: ignore[call-arg]
        except TypeError:
            return {k: _map_tensors(v, fn) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # named tuple (BinaryTensor)
        return type(obj)(*(_map_tensors(v, fn) for v in obj))
    if isinstance(obj, (list, tuple)):
        if obj and not any(isinstance(v, (torch.Tensor, Mapping, list, tuple)) for v in obj[:1]):
            return obj  # list[str] / list[bytes]: nothing to move
        return type(obj)(_map_tensors(v, fn) for v in obj)
    return obj


def _tensors_in(obj: Any) -> Iterator[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, Mapping):
        for v in obj.values():
            yield from _tensors_in(v)
    elif isinstance(obj, (list, tuple)):
        if obj and isinstance(obj[0], (str, bytes)):
            return
        for v in obj:
            yield from _tensors_in(v)


class _Moved(NamedTuple):
    """A batch copied to a CUDA device on a side stream, and the event that ends the copy."""

    batch: Any
    event: Any


class Loader:
    """Batches of a Lance dataset read ahead on background threads, in the training process.

    A DataLoader with workers moves every batch out of a worker process through shared
    memory, which costs more than reading it. The Loader reads in the training process
    instead: `threads` threads each run :class:`LanceDataset`'s one native take per batch
    (the GIL is released while it reads) and the conversion to tensors, `prefetch` batches
    ahead of the training loop, and hand the batches out strictly in sampler order.

    ::

        from lancepy.torch import Loader

        loader = Loader("train.lance", batch_size=1024, columns=["emb", "label"], device="cuda")
        for epoch in range(10):
            loader.set_epoch(epoch)
            for batch in loader:       # {"emb": float32 [1024, 768] on cuda, "label": int64 [1024]}
                ...

    Parameters
    ----------
    dataset:
        A URI / path, a :class:`lancepy.LanceDataset` (read at its version) or a
        :class:`LanceDataset` (its columns, filter, version, ``fill_null``, ``binary`` and
        ``transform`` are used; passing different ones here raises
        :class:`~lancepy.exceptions.InvalidArgumentError`).
    batch_size:
        Rows per batch. ``None`` when `sampler` yields whole batches (lists of indices).
    columns, filter, fill_null, binary:
        As for :class:`LanceDataset`.
    sampler:
        Any iterable of row indices (grouped into batches of `batch_size`) or, with
        ``batch_size=None``, of lists of row indices (one batch each). Default: a
        :class:`ShuffleSampler` made from `shuffle`, `seed`, `rank`, `world_size` and
        `drop_last` (which are then not accepted with a sampler of your own). A
        :class:`ShuffleSampler` passed here is read in whole slices of its order (no per-index
        iteration) and its epoch and resume position are shared with the Loader.
    shuffle:
        ``False``: rows in order (still shared out to ranks).
    seed:
        With the epoch, decides the order (the same in every process).
    drop_last:
        Drop the last, incomplete batch of each epoch; across ranks, also cut the epoch to a
        multiple of `world_size` instead of padding it (so every rank gets the same number of
        batches either way).
    prefetch:
        Batches read ahead of the one the training loop holds (at most ``prefetch + 1``
        batches are in memory).
    threads:
        Batches read concurrently (threads in the Loader's pool; no more than ``prefetch + 1``
        are started, as no more batches are ever in flight). Default: one less than the number
        of CPUs, at least 1, at most 8. The native take parallelises each batch over
        lancepy's CPU pool too (``LANCEPY_THREADS`` sizes it).
    pin_memory:
        Put the batch's tensors in page-locked memory (on the reading threads), so that a copy
        to the GPU can overlap computation. Needs CUDA.
    device:
        ``"cuda"`` / ``"cuda:N"``: copy each batch's tensors to that device on a side CUDA stream
        from the reading threads; the training loop's stream waits for the copy when the batch
        is handed out. ``"cpu"``: leave them where they are. Default: no copy.
    non_blocking:
        Asynchronous device copies (``tensor.to(device, non_blocking=True)``); only with a
        CUDA `device`.
    transform:
        ``transform(batch) -> anything``, applied on the reading threads (a
        :class:`LanceDataset` given with a transform of its own takes none here).
    rank, world_size:
        Distributed training: each rank reads a disjoint, equal-sized share of every epoch (as
        :class:`ShuffleSampler`). Default: from ``torch.distributed`` when it is initialised.

    ``len(loader)`` is the number of batches per epoch for this rank. ``set_epoch(e)`` picks
    epoch ``e``'s order. ``state_dict()`` records the position after the batches already handed
    out (batches read ahead do not count); after ``load_state_dict(state)`` the next iteration
    yields exactly the batches that would have followed. An iteration stopped early (``break``,
    an exception, ``KeyboardInterrupt``) stops its threads; an error reading a batch is raised
    where that batch would have been handed out. The Loader holds no threads between
    iterations: it may be pickled, forked and used in the child (each iteration starts its own
    threads).
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: Optional[int],
        *,
        columns: Optional[Sequence[str]] = None,
        filter: Any = None,
        sampler: Any = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        prefetch: int = 4,
        threads: Optional[int] = None,
        pin_memory: bool = False,
        device: Any = None,
        non_blocking: bool = True,
        transform: Optional[Callable[[Any], Any]] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        fill_null: FillNull = None,
        binary: str = "bytes",
    ) -> None:
        if batch_size is not None:
            batch_size = _positive_int("batch_size", batch_size)
        elif sampler is None:
            raise InvalidArgumentError("batch_size=None needs a sampler= that yields batches (lists of row indices)")
        elif drop_last:
            raise InvalidArgumentError("drop_last=True applies to batches of batch_size; with batch_size=None the "
                                       "sampler makes the batches")
        self.prefetch = _positive_int("prefetch", prefetch)
        self.threads = _default_threads() if threads is None else _positive_int("threads", threads)
        if transform is not None and not callable(transform):
            raise InvalidArgumentError(f"transform must be callable, got {type(transform).__name__}")
        if binary not in ("bytes", "tensor"):
            raise InvalidArgumentError(f"binary must be 'bytes' or 'tensor', got {binary!r}")

        if isinstance(dataset, LanceDataset):
            conflicts = []
            if columns is not None and list(columns) != dataset.columns:
                conflicts.append(f"columns={list(columns)!r} (the dataset reads {dataset.columns!r})")
            if filter is not None and str(filter) != dataset.filter:
                conflicts.append(f"filter={str(filter)!r} (the dataset's is {dataset.filter!r})")
            if fill_null is not None and fill_null != dataset._fill_null:
                conflicts.append(f"fill_null={fill_null!r} (the dataset's is {dataset._fill_null!r})")
            if binary != "bytes" and binary != dataset._binary:
                conflicts.append(f"binary={binary!r} (the dataset's is {dataset._binary!r})")
            if transform is not None and dataset.transform is not None and transform is not dataset.transform:
                conflicts.append("transform= (the dataset has its own transform)")
            if conflicts:
                raise InvalidArgumentError(
                    "these arguments conflict with the given lancepy.torch.LanceDataset: " + "; ".join(conflicts)
                )
            if transform is dataset.transform:
                transform = None  # applied once, by the dataset
            self.dataset = dataset
        else:
            self.dataset = LanceDataset(dataset, columns, filter, fill_null=fill_null, binary=binary)
        self.batch_size = batch_size
        self.drop_last = bool(drop_last)
        self.transform = transform

        if sampler is None:
            sampler = ShuffleSampler(len(self.dataset), seed, rank, world_size, drop_last, shuffle=shuffle)
            self._own_sampler = True
        else:
            given = [n for n, v, d in (("shuffle", shuffle, True), ("seed", seed, 0), ("rank", rank, None),
                                       ("world_size", world_size, None)) if v != d]
            if given:
                raise InvalidArgumentError(
                    f"{', '.join(given)} apply to the Loader's own sampler; with sampler= set them on your sampler"
                )
            if isinstance(sampler, (str, bytes)) or not hasattr(sampler, "__iter__"):
                raise InvalidArgumentError(f"sampler must be an iterable of row indices, got {type(sampler).__name__}")
            if isinstance(sampler, ShuffleSampler) and sampler._order.num_rows != len(self.dataset):
                raise InvalidArgumentError(
                    f"the ShuffleSampler orders {sampler._order.num_rows} rows; the dataset has {len(self.dataset)}"
                )
            self._own_sampler = False
        self.sampler = sampler
        self._shuffle_sampler = isinstance(sampler, ShuffleSampler) and batch_size is not None

        self.pin_memory = bool(pin_memory)
        self.device = _device_of(device)
        self.non_blocking = bool(non_blocking)
        if self.pin_memory and not torch.cuda.is_available():
            raise UnsupportedError("pin_memory=True needs CUDA (page-locked memory is a CUDA allocation), and "
                                   "torch.cuda.is_available() is False here")
        if not self.non_blocking and (self.device is None or self.device.type != "cuda"):
            raise InvalidArgumentError("non_blocking=False applies to copies to a CUDA device=; none is made here")

        # Position: the iteration in progress (or the last one) and what it handed out.
        self._epoch = 0  # custom samplers (a ShuffleSampler keeps its own)
        self._iter_epoch: Optional[int] = None
        self._iter_start = 0  # rows (ShuffleSampler) or batches (others) before the iteration's first
        self._handed = 0  # rows / batches handed out by it
        self._skip: Optional[int] = None  # custom samplers: batches to skip at the next iteration
        self._generation = 0  # which iteration updates the position (the latest one started)

    # -- description --------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self.sampler.epoch if self._shuffle_sampler else self._epoch

    def __len__(self) -> int:
        """Batches per epoch for this rank."""
        if self.batch_size is None:
            return len(self.sampler)
        try:
            n = len(self.sampler)
        except TypeError:
            raise TypeError(f"the sampler ({type(self.sampler).__name__}) has no len()") from None
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __repr__(self) -> str:
        return (
            f"lancepy.torch.Loader({self.dataset!r}, batch_size={self.batch_size}, sampler={self.sampler!r}, "
            f"prefetch={self.prefetch}, threads={self.threads}, device={self.device})"
        )

    # -- epochs and resuming ------------------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        """Uses epoch `epoch`'s order from the next iteration on (passed to the sampler's
        ``set_epoch`` when it has one). A pending resume of the same epoch is kept."""
        epoch = operator.index(epoch)
        if epoch < 0:
            raise InvalidArgumentError(f"epoch must be non-negative, got {epoch}")
        if self._shuffle_sampler:
            self.sampler.set_epoch(epoch)
            return
        if epoch != self._epoch:
            self._skip = None
        self._epoch = epoch
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def _position(self) -> int:
        if self._shuffle_sampler:
            s = self.sampler
            if s._resume is not None:
                return s._resume
            return self._iter_start + self._handed if self._iter_epoch == s.epoch else 0
        if self._skip is not None:
            return self._skip
        return self._iter_start + self._handed if self._iter_epoch == self._epoch else 0

    def state_dict(self) -> Dict[str, Any]:
        """The epoch and the position after the batches handed out so far (rows of this rank's
        share with a :class:`ShuffleSampler`, else batches of the sampler's iteration)."""
        if self._shuffle_sampler:
            s = self.sampler
            return {"epoch": s.epoch, "position": self._position(), "world_size": s.world_size,
                    **s._order.state(), "batch_size": self.batch_size}
        return {"epoch": self._epoch, "batches": self._position(), "batch_size": self.batch_size}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resumes: the next iteration yields the batches that followed when `state` was taken.

        With a sampler other than :class:`ShuffleSampler`, the next iteration skips the
        batches already handed out, which is exact when the sampler yields the same order
        again (deterministic for its epoch)."""
        if not isinstance(state, Mapping):
            raise InvalidArgumentError(f"state must be a dict from Loader.state_dict(), got {type(state).__name__}")
        if self._shuffle_sampler:
            if "position" not in state:
                raise InvalidArgumentError("this state is not a Loader's with a ShuffleSampler (no 'position')")
            self.sampler.load_state_dict(state)
            self._iter_epoch = None
            return
        if "batches" not in state:
            raise InvalidArgumentError("this state is not a Loader's with a custom sampler (no 'batches')")
        batches = int(state["batches"])
        if batches < 0:
            raise InvalidArgumentError(f"batches must be non-negative, got {batches}")
        self.set_epoch(int(state.get("epoch", 0)))
        self._skip = batches
        self._iter_epoch = None

    # -- iterating ----------------------------------------------------------------------

    def _index_batches(self) -> Iterator[List[int]]:
        """This iteration's batches of row indices (from the resume position), bookkeeping set."""
        self._generation += 1
        self._handed = 0
        bs = self.batch_size
        if self._shuffle_sampler:
            s = self.sampler
            share = s.indices()
            start = s._resume or 0
            s._resume = None
            self._iter_epoch, self._iter_start = s.epoch, start
            n = len(share)
            stop = start + (n - start) // bs * bs if self.drop_last else n

            def slices() -> Iterator[List[int]]:
                for pos in range(start, stop, bs):
                    yield share[pos : min(pos + bs, stop)].tolist()

            return slices()
        skip = self._skip or 0
        self._skip = None
        self._iter_epoch, self._iter_start = self._epoch, skip
        return itertools.islice(self._sampler_batches(), skip, None)

    def _sampler_batches(self) -> Iterator[List[int]]:
        it = iter(self.sampler)
        bs = self.batch_size
        if bs is None:
            for b in it:
                if _is_index(b):
                    raise InvalidArgumentError(
                        "the sampler yields row indices: pass batch_size= (None is for samplers of batches)"
                    )
                yield _index_list(b)
            return
        while True:
            chunk = list(itertools.islice(it, bs))
            if not chunk:
                return
            if not _is_index(chunk[0]):
                raise InvalidArgumentError(
                    "the sampler yields batches (lists of row indices): pass batch_size=None to use them as they are"
                )
            if len(chunk) < bs and self.drop_last:
                return
            try:
                yield [operator.index(i) for i in chunk]
            except TypeError:
                raise InvalidArgumentError("the sampler must yield integer row indices") from None

    def _reader(self) -> Callable[[List[int]], Any]:
        data, transform = self.dataset, self.transform
        pin, device, non_blocking = self.pin_memory, self.device, self.non_blocking
        cuda = device is not None and device.type == "cuda"
        stream = torch.cuda.Stream(device) if cuda else None

        def pin_one(t: torch.Tensor) -> torch.Tensor:
            return t if t.is_pinned() else t.pin_memory()

        def read(indices: List[int]) -> Any:
            batch = data.__getitems__(indices)
            if transform is not None:
                batch = transform(batch)
            if pin:
                batch = _map_tensors(batch, pin_one)
            if cuda:
                with torch.cuda.device(device), torch.cuda.stream(stream):
                    batch = _map_tensors(batch, lambda t: t.to(device, non_blocking=non_blocking))
                    event = torch.cuda.Event()
                    event.record(stream)
                return _Moved(batch, event)
            return batch

        return read

    def _hand_out(self, result: Any) -> Any:
        if not isinstance(result, _Moved):
            return result
        current = torch.cuda.current_stream(self.device)
        current.wait_event(result.event)
        for t in _tensors_in(result.batch):
            if t.is_cuda:
                t.record_stream(current)  # its memory is not reused while this stream may read it
        return result.batch

    def __iter__(self) -> Iterator[Any]:
        return self._run()

    def _run(self) -> Iterator[Any]:
        import collections
        from concurrent.futures import Future, ThreadPoolExecutor

        self.dataset._dataset()  # opened here, once per process, not by racing threads
        batches = self._index_batches()
        generation = self._generation
        read = self._reader()
        pid = os.getpid()
        counts_rows = self._shuffle_sampler
        pool = ThreadPoolExecutor(min(self.threads, self.prefetch + 1), thread_name_prefix="lancepy-loader")
        pending: "collections.deque[Tuple[Future, int]]" = collections.deque()
        exhausted = False

        def top_up() -> None:
            nonlocal exhausted
            while not exhausted and len(pending) < self.prefetch:
                try:
                    indices = next(batches)
                except StopIteration:
                    exhausted = True
                except Exception as e:  # a sampler's error: raised at its batch's position
                    failed: Future = Future()
                    failed.set_exception(e)
                    pending.append((failed, 0))
                    exhausted = True
                else:
                    pending.append((pool.submit(read, indices), len(indices)))

        try:
            top_up()
            while pending:
                if os.getpid() != pid:  # its threads stayed in the parent
                    raise RuntimeError("this Loader iteration began in another process: call iter(loader) again")
                future, rows = pending.popleft()
                top_up()
                result = future.result()
                batch = self._hand_out(result)
                del result
                if self._generation == generation:
                    self._handed += rows if counts_rows else 1
                yield batch
                del batch
        finally:
            early = bool(pending)
            for future, _ in pending:
                future.cancel()
            pending.clear()
            if os.getpid() == pid:
                # At the end nothing is in flight: the threads are joined. Stopped early, reads
                # in flight finish on their own (an object-store read may take a while).
                pool.shutdown(wait=not early, cancel_futures=True)
