"""Arrow -> torch: batches (:class:`Batch`), :class:`BinaryTensor`, :func:`collate_fn`, the
per-column converters chosen once from the schema (:class:`_Converter`) and null handling
(:class:`NullValuesError`, ``fill_null``)."""

from __future__ import annotations

import numbers
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from lancepy.exceptions import InvalidArgumentError
from . import _ring


FillNull = Union[None, int, float, bool, Mapping[str, Any]]
#: ``allocate(shape, dtype) -> tensor``: where a batch's fixed-width columns are gathered.
Allocate = Callable[[Tuple[int, ...], torch.dtype], torch.Tensor]


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
    """Keeps a batch as it is (``LanceDataset.__getitems__`` already built it). Picklable.

    In a DataLoader worker process, the batch leaves through the worker's shared-memory ring
    (:mod:`lancepy.torch._ring`): its tensors are copied once into memory the training process
    has already mapped, instead of each into a new shared-memory segment."""
    return _ring.ship(batch)


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
        # Columns a tensor can take byte for byte: name -> (dims after the batch's, dtype).
        self.fixed_layouts: Dict[str, Tuple[Tuple[int, ...], torch.dtype]] = {}
        for _, name, c in self.columns:
            dims = tuple(c.dims) if isinstance(c, _FixedSizeList) else () if isinstance(c, _Primitive) else None
            if dims is not None and c.leaf in _TORCH_DTYPES:  # (booleans are bits in Arrow)
                self.fixed_layouts[name] = (dims, _TORCH_DTYPES[c.leaf])

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
