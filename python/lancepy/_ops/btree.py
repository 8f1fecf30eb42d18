"""BTREE scalar indices in pylance 14's on-disk format: building one segment's files, and
(for queries) loading a segment and finding the row addresses whose value satisfies a
condition.

Layout (``spec/INDEX_FORMATS.md`` §1; checked against files pylance 14.0.2 writes). A segment
directory ``_indices/<uuid>/`` holds two Lance 2.2 files:

* ``page_data.lance``: every indexed row, sorted by value, nulls first, floats in IEEE total
  order (so NaN after every number); columns ``values`` (the column's type, nullable) and
  ``ids`` (uint64 row address, not null; pylance 14 writes addresses even where the dataset
  has stable row ids, and remaps them when compaction moves rows). No schema metadata.
* ``page_lookup.lance``: one row per logical page of ``BATCH_SIZE`` rows of page_data:
  ``min`` / ``max`` (the page's *first* and *last* value, so a page that starts with nulls has
  a null ``min``), ``null_count`` (uint32) and ``page_idx`` (uint32); schema metadata
  ``batch_size = "4096"`` and ``range_partitioned = "false"``.

Rows deleted when the index is built are left out. Ties are not ordered by address (pylance's
sort is not stable), so a reader must not rely on any order within one value.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from lancepy._ops.remap import moved_rows
from lancepy.exceptions import CorruptFileError, NotSupportedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy._table.snapshot import DatasetView

PAGE_DATA = "page_data.lance"
PAGE_LOOKUP = "page_lookup.lance"
#: Rows per logical page (pylance's ``DEFAULT_BTREE_BATCH_SIZE``).
BATCH_SIZE = 4096
#: Decoded pages an opened integer segment keeps (64 × 4096 rows × 16 bytes: 4 MiB at most)
PAGE_CACHE = 64
DETAILS_TYPE_URL = "/lance.table.BTreeIndexDetails"
#: ``IndexMetadata.index_version`` pylance 14 writes for a BTREE index: 0, or 1 where the
#: dataset has stable row ids (1 = the ``ids`` are row addresses; a 0 index of such a
#: dataset holds stable row ids, as older pylance wrote them).
INDEX_VERSION = 0
INDEX_VERSION_ADDRESSES = 1


def index_version(view: "DatasetView") -> int:
    """The ``index_version`` of a BTREE segment lancepy writes for `view` (as pylance 14)."""
    return INDEX_VERSION_ADDRESSES if view.stable_row_ids else INDEX_VERSION


def holds_addresses(view: "DatasetView", entry: Dict[str, Any]) -> bool:
    """Whether the BTREE segment `entry` holds row addresses (else stable row ids)."""
    return not view.stable_row_ids or int(entry.get("index_version") or 0) >= INDEX_VERSION_ADDRESSES
_SCAN_BATCH_ROWS = 65536


def indexable(dtype: pa.DataType) -> bool:
    """Whether a BTREE index can be built on a column of this type (pylance 14's check)."""
    t = dtype.storage_type if isinstance(dtype, pa.ExtensionType) else dtype
    return any(
        check(t)
        for check in (
            pa.types.is_integer,
            pa.types.is_floating,
            pa.types.is_boolean,
            pa.types.is_string,
            pa.types.is_large_string,
            pa.types.is_binary,
            pa.types.is_large_binary,
            pa.types.is_temporal,
            pa.types.is_decimal128,
            pa.types.is_decimal256,
            pa.types.is_fixed_size_binary,
        )
    )


def data_schema(dtype: pa.DataType) -> pa.Schema:
    """``page_data.lance``'s schema for a column of type `dtype`."""
    return pa.schema([pa.field("values", dtype, nullable=True), pa.field("ids", pa.uint64(), nullable=False)])


def lookup_schema(dtype: pa.DataType) -> pa.Schema:
    """``page_lookup.lance``'s schema (with its metadata) for a column of type `dtype`."""
    return pa.schema(
        [
            pa.field("min", dtype, nullable=True),
            pa.field("max", dtype, nullable=True),
            pa.field("null_count", pa.uint32(), nullable=False),
            pa.field("page_idx", pa.uint32(), nullable=False),
        ],
        metadata={"batch_size": str(BATCH_SIZE), "range_partitioned": "false"},
    )


def _float_order_key(values: pa.Array) -> "np.ndarray":
    """An int64 key whose order is IEEE 754 total order of the (non-null) floats `values`:
    -NaN < -inf < ... < -0.0 < +0.0 < ... < inf < NaN, as Rust's ``total_cmp`` (which
    pylance's sort uses) orders them."""
    import numpy as np

    as64 = values.cast(pa.float64()) if not pa.types.is_float64(values.type) else values
    bits = np.asarray(as64.to_numpy(zero_copy_only=False), dtype=np.float64).view(np.int64)
    return bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


def _int_keys(values: pa.Array) -> Optional["np.ndarray"]:
    """The (non-null) integer, boolean or temporal `values` as a numpy integer array whose
    order is theirs, or ``None`` for other types."""
    import numpy as np

    t = values.type
    if pa.types.is_temporal(t):
        if pa.types.is_time64(t) or pa.types.is_date64(t) or pa.types.is_timestamp(t) or pa.types.is_duration(t):
            values = values.view(pa.int64())
        elif t.bit_width == 32:
            values = values.view(pa.int32())
        else:  # pragma: no cover - every Arrow temporal type is 32 or 64 bits wide
            return None
    elif pa.types.is_boolean(values.type):
        values = values.cast(pa.uint8())
    elif not pa.types.is_integer(t):
        return None
    return np.asarray(values.to_numpy(zero_copy_only=False))


def key_order(keys: "np.ndarray", runs: bool = False) -> "np.ndarray":
    """Positions (int64) that sort the integer array `keys` ascending, ties in position
    order. Where the keys span fewer than 2**16 values, a radix sort of 16-bit keys; where
    ``(key - min)`` and the position fit together in 64 bits (any column of a
    few billion rows whose values span less than 2**(64 - bits of the row count)), one
    sort of the packed words (numpy's vectorised sort) does it; else a stable argsort.
    Memory: one 8-byte word per key beyond `keys` (the packed words become the answer).
    With `runs` (`keys` are a few ascending runs one after another, as a merge's windows are),
    the packed words are sorted by a sort that finds runs (numpy's timsort): linear in them."""
    import numpy as np

    n = len(keys)
    if n == 0:
        return np.empty(0, np.int64)
    lo, hi = int(keys.min()), int(keys.max())
    if hi - lo < 2**16:  # (few distinct values: numpy's stable sort of 16-bit keys is a radix sort)
        diff = keys - np.uint64(lo) if keys.dtype == np.uint64 else np.subtract(keys, lo, dtype=np.int64)
        small = diff.astype(np.uint16)
        return np.argsort(small, kind="stable").astype(np.int64, copy=False)
    bits = max(1, (n - 1).bit_length())
    if (hi - lo).bit_length() + bits > 64:
        return np.argsort(keys, kind="stable").astype(np.int64, copy=False)
    if keys.dtype == np.uint64:
        packed = keys - np.uint64(lo)
    else:  # (hi - lo < 2**63: the difference is exact in int64, and not negative)
        packed = (keys.astype(np.int64) - np.int64(lo)).view(np.uint64)
    np.left_shift(packed, np.uint64(bits), out=packed)
    np.bitwise_or(packed, np.arange(n, dtype=np.uint64), out=packed)
    packed.sort(kind="stable" if runs else None)
    np.bitwise_and(packed, np.uint64((1 << bits) - 1), out=packed)
    return packed.view(np.int64)


def sort_order(values: pa.Array, stable: bool = False, runs: bool = False) -> pa.Array:
    """Positions of `values` in index order: nulls first, then ascending values (floats in
    total order). Ties keep their order, except floats' unless `stable`. `runs`: the values
    are a few sorted runs one after another (see :func:`key_order`)."""
    import numpy as np

    if values.null_count:
        valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        nulls, present = np.flatnonzero(~valid), np.flatnonzero(valid)
        non_null = values.take(pa.array(present, pa.int64()))
    else:
        nulls, present, non_null = np.empty(0, np.int64), None, values
    keys = _float_order_key(non_null) if pa.types.is_floating(values.type) else _int_keys(non_null)
    if keys is None:
        order = np.asarray(pc.sort_indices(non_null).to_numpy(zero_copy_only=False))
    elif pa.types.is_floating(values.type):
        # (ties need no order: numpy's unstable argsort is the fastest that gives positions)
        order = np.argsort(keys, kind="stable" if stable else None)
    else:
        order = key_order(keys, runs)
    if present is not None:
        order = present[order]
    return pa.array(np.concatenate([nulls, order]).astype(np.int64, copy=False) if len(nulls) else order, pa.int64())


def column_batches(
    view: "DatasetView", column: Any, fragment_ids: Sequence[int], row_ids: bool = False,
    batch_rows: int = _SCAN_BATCH_ROWS,
) -> Iterator[Tuple[pa.Array, pa.Array]]:
    """The live rows of `column` (a field path, ``a.b`` inside struct ``a``) in the non-empty
    list `fragment_ids`, `batch_rows` rows at a time: ``(values, row addresses)``, or
    ``(values, row ids)`` with `row_ids`. `column` may also be a key with its own
    ``batches(view, fragment_ids)`` and ``dtype`` (a JSON path's values:
    :class:`lancepy._ops.json_index.JsonPathKey`)."""
    if not isinstance(column, str):  # (a key other than a column: a JSON path's values)
        if row_ids:
            raise NotSupportedError(f"{column!r}: keyed by row address only")
        yield from column.batches(view, fragment_ids)
        return
    top, *path = column.split(".")
    stream = view.snapshot.scan_stream(
        [top], fragment_ids=list(fragment_ids), batch_rows=batch_rows,
        with_row_address=not row_ids, with_row_id=row_ids,
    )
    while (raw := stream.next_batch()) is not None:
        batch = pa.record_batch(raw)
        value = batch.column(top)
        for name in path:  # a struct's field: null where the struct is null
            value = pc.struct_field(value, [value.type.get_field_index(name)])
        yield value, batch.column("_rowid" if row_ids else "_rowaddr").cast(pa.uint64())


def collect(
    view: "DatasetView", column: Any, fragment_ids: Sequence[int], row_ids: bool = False
) -> Tuple[pa.Array, pa.Array]:
    """:func:`column_batches` all at once: ``(values, row addresses)`` (addresses even with
    stable row ids, as pylance 14 stores them in BTREE indices), or ``(values, row ids)``."""
    values: List[pa.Array] = []
    ids: List[pa.Array] = []
    for value, rows in column_batches(view, column, fragment_ids, row_ids):
        values.append(value)
        ids.append(rows)
    return pa.concat_arrays(values), pa.concat_arrays(ids)


def write_segment(
    base: str, dtype: pa.DataType, values: pa.Array, ids: pa.Array, storage_options: Any = None
) -> List[Dict[str, Any]]:
    """Sorts the rows and writes ``page_data.lance`` and ``page_lookup.lance`` under `base`
    (the segment directory, ending in ``/``). Returns the files with their sizes, in the
    order pylance lists them in ``IndexMetadata.files``."""
    dtype = dtype.storage_type if isinstance(dtype, pa.ExtensionType) else dtype
    if values.type != dtype:
        values = values.cast(dtype)
    order = sort_order(values)
    return write_sorted(base, dtype, [(values.take(order), ids.take(order))], storage_options)


def write_sorted(
    base: str, dtype: pa.DataType, chunks: Iterable[Tuple[pa.Array, pa.Array]], storage_options: Any = None
) -> List[Dict[str, Any]]:
    """Writes the segment's files under `base` from rows already in index order, given in
    `chunks` of ``(values, ids)`` of any length: each page is written as soon as it is full,
    so only one page (and the lookup's first and last values) is held. Returns the files as
    :func:`write_segment` does."""
    from lancepy.file import LanceFileWriter

    dtype = dtype.storage_type if isinstance(dtype, pa.ExtensionType) else dtype
    dschema = data_schema(dtype)
    null_counts: List[int] = []
    firsts: List[pa.Array] = []
    lasts: List[pa.Array] = []
    pending_v: List[pa.Array] = []
    pending_i: List[pa.Array] = []
    held = 0

    def page(vals: pa.Array, rows: pa.Array) -> None:
        data.write_batch(pa.record_batch([vals, rows], schema=dschema))
        null_counts.append(vals.null_count)

    def bounds(vals: pa.Array, starts: List[int], ends: List[int]) -> None:
        # (pages' first and last values, as pylance: not their min and max; copies, so
        # that the pages themselves are not kept)
        firsts.append(vals.take(pa.array(starts, pa.int64())))
        lasts.append(vals.take(pa.array(ends, pa.int64())))

    with LanceFileWriter(base + PAGE_DATA, dschema, version="2.2", storage_options=storage_options) as data:
        for values, ids in chunks:
            if values.type != dtype:
                values = values.cast(dtype)
            n, start = len(values), 0
            if held:  # (complete the page begun by the last chunk)
                start = min(BATCH_SIZE - held, n)
                pending_v.append(values.slice(0, start))
                pending_i.append(ids.slice(0, start))
                held += start
                if held < BATCH_SIZE:
                    continue
                vals = pa.concat_arrays(pending_v)
                page(vals, pa.concat_arrays(pending_i))
                bounds(vals, [0], [BATCH_SIZE - 1])
                pending_v, pending_i, held = [], [], 0
            starts = list(range(start, n - BATCH_SIZE + 1, BATCH_SIZE))
            for p in starts:
                page(values.slice(p, BATCH_SIZE), ids.slice(p, BATCH_SIZE))
            if starts:
                bounds(values, starts, [p + BATCH_SIZE - 1 for p in starts])
                start = starts[-1] + BATCH_SIZE
            if start < n:
                pending_v, pending_i, held = [values.slice(start)], [ids.slice(start)], n - start
        if held:
            vals = pa.concat_arrays(pending_v)
            page(vals, pa.concat_arrays(pending_i))
            bounds(vals, [0], [held - 1])
    num_pages = len(null_counts)
    lschema = lookup_schema(dtype)
    with LanceFileWriter(base + PAGE_LOOKUP, lschema, version="2.2", storage_options=storage_options) as lookup:
        if num_pages:
            lookup.write_batch(pa.record_batch(
                [
                    pa.concat_arrays(firsts),
                    pa.concat_arrays(lasts),
                    pa.array(null_counts, pa.uint32()),
                    pa.array(range(num_pages), pa.uint32()),
                ],
                schema=lschema,
            ))
    return [
        {"path": PAGE_DATA, "size_bytes": int(data.file_size or 0)},
        {"path": PAGE_LOOKUP, "size_bytes": int(lookup.file_size or 0)},
    ]


def remap(
    ds_uri: str,
    storage_options: Any,
    entry: Dict[str, Any],
    old_addresses: "np.ndarray",
    new_addresses: "np.ndarray",
    compacted_fragments: Sequence[int],
    dropped_fragments: Sequence[int],
    read_rows: Any = None,
    write: Any = None,
) -> Tuple[str, List[Dict[str, Any]]]:
    """Writes a new segment for the BTREE segment `entry` (from ``index_section_entries``)
    after a compaction: a row at ``old_addresses[i]`` (sorted) is now at ``new_addresses[i]``;
    rows of `compacted_fragments` not in `old_addresses` (deleted) and rows of
    `dropped_fragments` (compacted together with rows the index does not cover) are left
    out. The pages are rebuilt from the remaining rows. Returns the new uuid and its files.
    `read_rows` / `write`: another segment format's :func:`read_rows` and
    :func:`write_segment` (the BITMAP index is remapped the same way)."""
    import uuid as _uuid

    values, rid = (read_rows or read_rows_of)(ds_uri, entry["uuid"], storage_options)
    new_rid, keep = moved_rows(rid, old_addresses, new_addresses, compacted_fragments, dropped_fragments)
    mask = pa.array(keep)
    uid = str(_uuid.uuid4())
    files = (write or write_segment)(
        ds_uri.rstrip("/") + f"/_indices/{uid}/",
        values.type,
        values.filter(mask),
        pa.array(new_rid, pa.uint64()).filter(mask),
        storage_options,
    )
    return uid, files


def read_rows_of(ds_uri: str, uuid: str, storage_options: Any = None) -> Tuple[pa.Array, "np.ndarray"]:
    """Every ``(value, row id)`` a BTREE segment holds."""
    import numpy as np

    from lancepy._ops.index_file import IndexFile, row_ids_column

    base = ds_uri.rstrip("/") + f"/_indices/{uuid}/"
    data = IndexFile(base + PAGE_DATA, storage_options)
    # (a legacy segment's nulls are known from its page lookup only: read page by page)
    table = open_segment(ds_uri, uuid, storage_options).pages() if data.legacy else data.read_all()
    ids = table.column(row_ids_column(table))
    return table.column("values").combine_chunks(), np.asarray(ids.to_numpy(), dtype=np.uint64)


def extend(
    view: "DatasetView",
    column: Any,
    entries: List[Dict[str, Any]],
    fragments: Sequence[int],
    merge: bool,
    read_rows: Any = None,
    write: Any = None,
) -> Tuple[str, List[Dict[str, Any]]]:
    """Indexes the rows of `fragments` (appended since the index `entries`, segments of one
    BTREE index, were built): with `merge`, one new segment holding the rows of every entry
    (those of fragments that still exist) plus the new ones, pages rebuilt; else a delta
    segment of the new rows only. Returns the new segment's uuid and files. `read_rows` /
    `write`: as for :func:`remap`."""
    import uuid as _uuid

    import numpy as np

    dtype = _column_type(view, column)
    values, ids = collect(view, column, fragments) if fragments else (pa.array([], dtype), pa.array([], pa.uint64()))
    if merge:
        live = np.asarray(sorted(view.fragment_ids), dtype=np.int64)
        parts_v, parts_i = [values], [ids]
        for e in entries:
            old_values, rid = (read_rows or read_rows_of)(view.uri, e["uuid"], view.storage_options)
            keep = pa.array(np.isin((rid >> np.uint64(32)).astype(np.int64), live))
            parts_v.append(old_values.cast(dtype).filter(keep))
            parts_i.append(pa.array(rid, pa.uint64()).filter(keep))
        values, ids = pa.concat_arrays(parts_v), pa.concat_arrays(parts_i)
    uid = str(_uuid.uuid4())
    files = (write or write_segment)(view.uri.rstrip("/") + f"/_indices/{uid}/", dtype, values, ids, view.storage_options)
    return uid, files


def _column_type(view: "DatasetView", path: Any) -> pa.DataType:
    if not isinstance(path, str):  # (a key other than a column: its own type)
        return path.dtype
    top, *rest = path.split(".")
    dtype = view.schema.field(top).type
    for name in rest:
        dtype = dtype.field(name).type
    return dtype


def _display(value: pa.Scalar) -> str:
    """A lookup value as pylance's statistics print it (Rust's ``Display``): ``NULL``,
    floats in shortest round-trip form without exponent or trailing ``.0`` (``1``,
    ``100000000000000000000``, ``NaN``, ``inf``), temporal values as their stored integer."""
    import decimal

    if not value.is_valid:
        return "NULL"
    t = value.type
    if pa.types.is_temporal(t):
        return str(value.cast(pa.int64() if t.bit_width == 64 else pa.int32()).as_py())
    v = value.as_py()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if v != v:
            return "NaN"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
        text = format(decimal.Decimal(repr(v)), "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    return str(v)


def segment_statistics(ds_uri: str, uuid: str, storage_options: Any = None) -> Dict[str, Any]:
    """A segment's entry in ``index_statistics`` as pylance writes it: the first value of
    the first page holding a value, the last page's last value, and the page count (``{}``
    for an empty segment)."""
    seg = open_segment(ds_uri, uuid, storage_options)
    pages = len(seg.null_counts)
    if not pages:
        return {}
    valued = [p for p in range(pages) if seg.maxs[p].is_valid]  # (pages of nulls only are not in the tree)
    if not valued:
        return {"min": "N/A", "max": "N/A", "num_pages": pages}
    return {"min": _display(seg.mins[valued[0]]), "max": _display(seg.maxs[valued[-1]]), "num_pages": pages}


class BTreeSegment:
    """One BTREE segment opened for queries: its page lookup table in memory; the pages of
    ``page_data.lance`` read when a query needs them."""

    def __init__(self, base: str, storage_options: Any = None) -> None:
        from lancepy._ops.index_file import IndexFile

        # (either file format: pylance before 0.21 wrote legacy (v1) files, see index_file)
        self._data = IndexFile(base + PAGE_DATA, storage_options)
        lookup_file = IndexFile(base + PAGE_LOOKUP, storage_options)
        md = lookup_file.schema_metadata()
        try:
            self.batch_size = int(md.get(b"batch_size", str(BATCH_SIZE).encode()))
        except ValueError:
            raise CorruptFileError(f"{base}{PAGE_LOOKUP}: batch_size {md.get(b'batch_size')!r} is not a number") from None
        lookup = lookup_file.read_all()
        self.mins = lookup.column("min").combine_chunks()
        self.maxs = lookup.column("max").combine_chunks()
        self.null_counts = lookup.column("null_count").to_pylist()
        #: a legacy file's page numbers (its batches), by lookup row
        self._page_idx = lookup.column("page_idx").to_pylist() if self._data.legacy else None
        if self._page_idx is not None:
            # A legacy file keeps no validity (a null reads as its slot, an empty string as
            # null): a page's min and max are null exactly when all its rows are.
            rows = [self._data.batch_range(int(b))[1] for b in self._page_idx]
            valid = pa.array([nulls < n for nulls, n in zip(self.null_counts, rows)])
            self.mins, self.maxs = (_with_validity(a, valid) for a in (self.mins, self.maxs))
        self.num_rows = self._data.num_rows()
        #: the column's type
        self.dtype = self.mins.type
        self._all: Optional["np.ndarray"] = None
        #: integer columns without null pages: the pages' first and last values (int64,
        #: non-decreasing), for a binary search instead of comparing every page
        self._int_bounds: Optional[Tuple["np.ndarray", "np.ndarray"]] = None
        self._pages: "OrderedDict[int, Tuple[np.ndarray, np.ndarray]]" = OrderedDict()
        self._lock = threading.Lock()
        t = self.dtype
        if (
            (pa.types.is_signed_integer(t) or t in (pa.uint8(), pa.uint16(), pa.uint32()))
            and self._page_idx is None
            and not self.mins.null_count
            and not self.maxs.null_count
        ):
            import numpy as np

            self._int_bounds = (
                np.asarray(self.mins.to_numpy(), dtype=np.int64),
                np.asarray(self.maxs.to_numpy(), dtype=np.int64),
            )

    def _int_range(self, low: Any, low_inclusive: bool, high: Any, high_inclusive: bool) -> Optional[Tuple[int, int]]:
        """The range as inclusive int64 bounds ``(lo, hi)`` for a segment with
        :attr:`_int_bounds`, when both ends are Python ints (or open); else ``None`` (the
        general path compares in Arrow)."""
        if self._int_bounds is None:
            return None
        out = []
        for v, inclusive, step, open_end in ((low, low_inclusive, 1, -(2**63)), (high, high_inclusive, -1, 2**63 - 1)):
            if v is None:
                out.append(open_end)
                continue
            if type(v) is not int or not -(2**63) <= v <= 2**63 - 1:
                return None  # (a literal past int64: the filter compares it as a double)
            out.append(v if inclusive else v + step)
        # (an exclusive bound at an end of int64: an empty range, or the other end)
        return max(out[0], -(2**63)), min(out[1], 2**63 - 1)

    @property
    def legacy(self) -> bool:
        """Whether the segment's files are legacy (v1) files (older pylance's)."""
        return self._data.legacy

    def all_rows(self) -> "np.ndarray":
        """Every row id the segment holds (read once)."""
        import numpy as np

        from lancepy._ops.index_file import row_ids_column

        if self._all is None:
            t = self._data.read_all()
            self._all = np.asarray(t.column(row_ids_column(t)).to_numpy(), dtype=np.uint64)
        return self._all

    def _page(self, page: int) -> pa.Table:
        import numpy as np

        from lancepy._ops.index_file import row_ids_column

        if self._page_idx is not None:
            start, n = self._data.batch_range(int(self._page_idx[page]))
        else:
            start = page * self.batch_size
            n = min(self.batch_size, self.num_rows - start)
        t = self._data.read_range(start, n)
        if self._page_idx is None:
            return t
        t = t.rename_columns(["values", "ids"]) if row_ids_column(t) == "row_ids" else t
        values = t.column("values").combine_chunks()
        if not self.null_counts[page] and not values.null_count:
            return t
        # (the rows were sorted nulls first: the page's first null_count values are its nulls)
        valid = pa.array(np.arange(t.num_rows) >= self.null_counts[page])
        return t.set_column(0, "values", _with_validity(values, valid))

    def pages(self) -> pa.Table:
        """Every ``(values, ids)`` row of the segment, page by page."""
        return pa.concat_tables([self._page(p) for p in range(len(self.null_counts))]) if self.null_counts else (
            pa.table({"values": pa.array([], self.dtype), "ids": pa.array([], pa.uint64())})
        )

    def _gather(self, pages: Sequence[int], keep: Any) -> "np.ndarray":
        """Row ids of the rows of `pages` for which ``keep(values)`` is true."""
        import numpy as np

        out = [np.empty(0, np.uint64)]
        for page in pages:
            t = self._page(page)
            mask = keep(t.column("values").combine_chunks())
            if mask is not None:
                sel = t.column("ids").combine_chunks().filter(mask)
                out.append(np.asarray(sel.to_numpy(zero_copy_only=False), dtype=np.uint64))
        return np.concatenate(out)

    def pages_overlapping(self, low: Any, low_inclusive: bool, high: Any, high_inclusive: bool) -> List[int]:
        """Pages whose [first, last] value span can hold a value in the range (``None`` = open
        end). Pages of nulls only are never included; a NaN bound never excludes a page."""
        import numpy as np

        bounds = self._int_range(low, low_inclusive, high, high_inclusive)
        if bounds is not None:  # (pages in value order: those reaching the range are consecutive)
            mins, maxs = self._int_bounds  # type: ignore[misc]
            if bounds[0] > bounds[1]:
                return []
            first = int(np.searchsorted(maxs, bounds[0], "left"))
            end = int(np.searchsorted(mins, bounds[1], "right"))
            return list(range(first, end))
        keep = pc.is_valid(self.maxs)
        floats = pa.types.is_floating(self.maxs.type)
        if low is not None:
            reach = (pc.greater_equal if low_inclusive else pc.greater)(self.maxs, _scalar(low, self.maxs.type))
            if floats:
                reach = pc.or_(reach, pc.is_nan(self.maxs))
            keep = pc.and_(keep, pc.fill_null(reach, False))
        if high is not None:
            reach = (pc.less_equal if high_inclusive else pc.less)(self.mins, _scalar(high, self.mins.type))
            if floats:
                reach = pc.or_(reach, pc.is_nan(self.mins))
            keep = pc.and_(keep, pc.fill_null(reach, True))  # (a null first value: the page starts with nulls)
        return np.flatnonzero(np.asarray(keep.to_numpy(zero_copy_only=False), dtype=bool)).tolist()

    def search_range(
        self, low: Any, low_inclusive: bool, high: Any, high_inclusive: bool, pages: Optional[List[int]] = None
    ) -> "np.ndarray":
        """Row ids whose value lies in the range (``None`` = open end), plus, for floats,
        those whose value is NaN: a superset of the answer, for the filter to refine.
        `pages`: the range's :meth:`pages_overlapping`, when known."""
        def keep(vals: pa.Array) -> Any:
            mask = pc.is_valid(vals)
            if low is not None:
                mask = pc.and_(mask, (pc.greater_equal if low_inclusive else pc.greater)(vals, _scalar(low, vals.type)))
            if high is not None:
                mask = pc.and_(mask, (pc.less_equal if high_inclusive else pc.less)(vals, _scalar(high, vals.type)))
            mask = pc.fill_null(mask, False)
            if pa.types.is_floating(vals.type):
                # NaN compares differently in SQL engines (IEEE vs total order): kept as a
                # candidate, the filter itself decides
                mask = pc.or_(mask, pc.fill_null(pc.is_nan(vals), False))
            return mask

        if pages is None:
            pages = self.pages_overlapping(low, low_inclusive, high, high_inclusive)
        bounds = self._int_range(low, low_inclusive, high, high_inclusive)
        if bounds is not None and not any(self.null_counts[p] for p in pages):
            return self._gather_int(pages, bounds[0], bounds[1])
        return self._gather(pages, keep)

    def _gather_int(self, pages: Sequence[int], lo: int, hi: int) -> "np.ndarray":
        """Row ids of the rows of `pages` (integer values, no nulls) with ``lo <= value <= hi``."""
        import numpy as np

        out = [np.empty(0, np.uint64)]
        for page in pages:
            values, ids = self._int_page(page)
            mask = (values == lo) if lo == hi else ((values >= lo) & (values <= hi))
            out.append(ids[mask])
        return np.concatenate(out) if len(out) > 2 else out[-1]

    def _int_page(self, page: int) -> Tuple["np.ndarray", "np.ndarray"]:
        """Page `page` of an integer segment as ``(values int64, ids uint64)``; the last
        :data:`PAGE_CACHE` pages read are kept (as pylance's index cache keeps pages)."""
        import numpy as np

        with self._lock:
            hit = self._pages.get(page)
            if hit is not None:
                self._pages.move_to_end(page)
                return hit
        t = self._page(page)
        got = (
            np.asarray(t.column("values").to_numpy()).astype(np.int64, copy=False),
            np.asarray(t.column("ids").to_numpy(), dtype=np.uint64),
        )
        with self._lock:
            self._pages[page] = got
            while len(self._pages) > PAGE_CACHE:
                self._pages.popitem(last=False)
        return got

    def search_in(self, values: Sequence[Any]) -> "np.ndarray":
        """Row ids whose value is one of `values` (plus NaN rows, for floats), each page read
        once. Values that are not exactly of the column's type are searched one by one."""
        import numpy as np

        dtype = self.maxs.type
        exact = [v for v in values if _scalar(v, dtype).type == dtype]
        others = [v for v in values if _scalar(v, dtype).type != dtype]
        found = [self.search_range(v, True, v, True) for v in others]
        if exact:
            pages = sorted({p for v in exact for p in self.pages_overlapping(v, True, v, True)})
            wanted = pa.array(exact, dtype)
            floats = pa.types.is_floating(dtype)

            def keep(vals: pa.Array) -> Any:
                mask = pc.fill_null(pc.is_in(vals, value_set=wanted), False)
                return pc.or_(mask, pc.fill_null(pc.is_nan(vals), False)) if floats else mask

            found.append(self._gather(pages, keep))
        return np.concatenate(found) if found else np.empty(0, np.uint64)

    def search_null(self) -> "np.ndarray":
        """Row ids whose value is NULL."""
        pages = [p for p, n in enumerate(self.null_counts) if n > 0]
        return self._gather(pages, lambda vals: pc.is_null(vals))


def _with_validity(values: pa.Array, valid: pa.Array) -> pa.Array:
    """`values` null exactly where `valid` is false (what a legacy file read as null but
    `valid` keeps, an empty string or binary, becomes empty again)."""
    t = values.type
    if values.null_count and (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                              or pa.types.is_large_binary(t)):
        values = pc.fill_null(values, pa.scalar("" if "string" in str(t) else b"", t))
    return pc.if_else(valid, values, pa.scalar(None, t))


def _scalar(value: Any, dtype: pa.DataType) -> pa.Scalar:
    """`value` as a scalar of the column's type when it is exactly one (so the comparison
    runs in that type), else of its own type (``i > 2.5``, ``u8 < 300``: Arrow compares in a
    common type)."""
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    try:
        s = pa.scalar(value, dtype)
        if s.as_py() == value:
            return s
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        pass
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return pa.scalar(float(value))  # (beyond int64: compared as a double)
    return pa.scalar(value)


def open_segment(ds_uri: str, uuid: str, storage_options: Any = None) -> BTreeSegment:
    """Opens the BTREE segment `uuid` of the dataset at `ds_uri`."""
    return BTreeSegment(ds_uri.rstrip("/") + f"/_indices/{uuid}/", storage_options)

