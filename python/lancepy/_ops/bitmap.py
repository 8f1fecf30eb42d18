"""BITMAP and LABEL_LIST scalar indices in pylance 14's on-disk format: building one segment's file, and
(for queries) loading a segment and finding the row addresses whose value satisfies a
condition.

Layout (checked against files pylance 14.0.2 writes). A segment directory
``_indices/<uuid>/`` holds one Lance 2.2 file, ``bitmap_page_lookup.lance``: one row per
distinct value of the column, the null key (when some row is null) first, then the values
ascending; columns ``keys`` (the column's type, nullable) and ``bitmaps`` (binary, nullable):
the rows holding that value as a serialized lance ``RowAddrTreeMap`` (a u32 fragment count,
then per fragment its id, the byte length of its roaring bitmap and the bitmap of row
offsets; serialized natively, :func:`lancepy._lancepy.row_addr_maps_serialize`). Where the
dataset has stable row ids pylance stores row ids instead (``index_version`` 0 still):
lancepy neither builds nor uses such an index (:func:`check_addresses`).

A LABEL_LIST index (of a list column) is the same file keyed by the lists' elements: a row is
in the bitmap of each value its list holds (the null key: lists holding a null element; null
and empty lists are in none); the rows whose list is null are global buffer 1 of the file (one serialized set), which its
metadata ``lance:label_list_nulls`` = ``1`` names;
``index_details`` ``/lance.table.LabelListIndexDetails``, ``index_version`` 1. Schema
metadata ``lance:index_stats`` = ``{"num_bitmaps":N}``. ``IndexMetadata``:
``index_details`` ``/lance.table.BitmapIndexDetails`` (empty), ``index_version`` 0, the
file listed with its size. Rows deleted when the index is built are left out; the sets
hold row addresses.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from lancepy import _lancepy
from lancepy._ops import btree as _btree
from lancepy.exceptions import CorruptFileError, NotSupportedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy._table.snapshot import DatasetView

LOOKUP = "bitmap_page_lookup.lance"
DETAILS_TYPE_URL = "/lance.table.BitmapIndexDetails"
INDEX_VERSION = 0
STATS_KEY = "lance:index_stats"
#: LABEL_LIST indices: the same file, one bitmap per list element value
LABEL_LIST_DETAILS_TYPE_URL = "/lance.table.LabelListIndexDetails"
LABEL_LIST_INDEX_VERSION = 1
LABEL_LIST_NULLS_KEY = "lance:label_list_nulls"


def check_addresses(view: "DatasetView") -> None:
    """Raises :class:`NotSupportedError` where `view` has stable row ids: there pylance 14's
    BITMAP index holds stable row ids, which lancepy does not build or search yet."""
    if view.stable_row_ids:
        raise NotSupportedError(
            "BITMAP index on a dataset with stable row ids: pylance 14 keys it by row id, which lancepy "
            "does not build or search yet"
        )


def lookup_schema(dtype: pa.DataType, num_bitmaps: int, label_list: bool = False) -> pa.Schema:
    """``bitmap_page_lookup.lance``'s schema (with its metadata; a LABEL_LIST index's has
    ``lance:label_list_nulls`` = ``1`` as well, as pylance 14 writes it)."""
    metadata = {STATS_KEY: json.dumps({"num_bitmaps": num_bitmaps}, separators=(",", ":"))}
    if label_list:
        metadata[LABEL_LIST_NULLS_KEY] = "1"
    return pa.schema(
        [pa.field("keys", dtype, nullable=True), pa.field("bitmaps", pa.binary(), nullable=True)], metadata=metadata
    )


def is_list(dtype: pa.DataType) -> bool:
    return pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype)


def flatten(values: pa.Array, ids: pa.Array) -> Tuple[pa.Array, pa.Array]:
    """The elements of the lists `values` with the row address of their list (null and empty
    lists have none)."""
    parents = pc.list_parent_indices(values)
    return pc.list_flatten(values), ids.take(parents)


def group(values: pa.Array, ids: pa.Array) -> Tuple[pa.Array, "np.ndarray", "np.ndarray"]:
    """The distinct keys of `values` in index order (null first, then ascending; floats in
    total order), the row addresses `ids` grouped by key (ascending within a key), and the
    offsets of each key's addresses (``len(keys) + 1`` of them)."""
    import numpy as np

    addrs = np.asarray(ids.to_numpy(zero_copy_only=False), dtype=np.uint64)
    if len(addrs) > 1 and not bool(np.all(addrs[1:] >= addrs[:-1])):  # (a scan's come in order)
        order = np.argsort(addrs, kind="stable")
        addrs = addrs[order]
        values = values.take(pa.array(order, pa.int64()))
    encoded = pc.dictionary_encode(values)
    dictionary = encoded.dictionary
    key_order = np.asarray(_btree.sort_order(dictionary).to_numpy(zero_copy_only=False), dtype=np.int64)
    rank = np.empty(len(dictionary), dtype=np.int64)
    rank[key_order] = np.arange(len(dictionary))
    codes = encoded.indices
    has_null = codes.null_count > 0
    if has_null:
        code = np.asarray(codes.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
        slot = np.where(code < 0, 0, rank[np.maximum(code, 0)] + 1)
    else:  # (one pass: each row's key rank)
        slot = rank[np.asarray(codes.to_numpy(zero_copy_only=False))]
    by_key = _btree.key_order(slot)  # (stable: ascending addresses within a key)
    counts = np.bincount(slot, minlength=len(dictionary) + (1 if has_null else 0))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    keys = dictionary.take(pa.array(key_order, pa.int64()))
    if has_null:
        keys = pa.concat_arrays([pa.nulls(1, dictionary.type), keys])
    return keys, addrs[by_key], offsets


def write_segment(
    base: str, dtype: pa.DataType, values: pa.Array, ids: pa.Array, storage_options: Any = None
) -> List[Dict[str, Any]]:
    """Writes ``bitmap_page_lookup.lance`` under `base` (the segment directory, ending in
    ``/``) for the rows ``(values, ids)``; list-typed `values` (a LABEL_LIST index) are keyed
    by their elements. Returns the file with its size, as ``IndexMetadata.files`` lists it."""
    import numpy as np

    dtype = dtype.storage_type if isinstance(dtype, pa.ExtensionType) else dtype
    label_list = is_list(dtype)
    nulls = np.empty(0, np.uint64)
    if label_list:
        if values.type != dtype:
            values = values.cast(dtype)
        nulls = np.sort(np.asarray(ids.filter(values.is_null()).to_numpy(zero_copy_only=False), dtype=np.uint64))
        values, ids = flatten(values, ids)
        dtype = dtype.value_type
    return write_flat(base, dtype, values, ids, storage_options, label_list, nulls)


def _null_lists(nulls: "np.ndarray") -> bytes:
    """The serialized set of the row addresses `nulls` (sorted) of a LABEL_LIST's null lists."""
    return _lancepy.row_addr_maps_serialize(nulls.astype("<u8").tobytes(), [0, len(nulls)])[0]


def write_flat(
    base: str, dtype: pa.DataType, values: pa.Array, ids: pa.Array, storage_options: Any = None,
    label_list: bool = False, nulls: Optional["np.ndarray"] = None,
) -> List[Dict[str, Any]]:
    """:func:`write_segment` of the keys `values` (a LABEL_LIST's list elements, with
    `label_list`, its null lists' sorted row addresses `nulls`)."""
    import numpy as np

    from lancepy.file import LanceFileWriter

    if values.type != dtype:
        values = values.cast(dtype)
    if len(values):
        keys, addrs, offsets = group(values, ids)
        blobs = _lancepy.row_addr_maps_serialize(addrs.astype("<u8").tobytes(), [int(o) for o in offsets])
    else:
        keys, blobs = pa.array([], dtype), []
    schema = lookup_schema(dtype, len(keys), label_list)
    with LanceFileWriter(base + LOOKUP, schema, version="2.2", storage_options=storage_options) as writer:
        if label_list:
            # (the rows whose list is null, in global buffer 1, as the metadata says)
            if writer.add_global_buffer(_null_lists(nulls if nulls is not None else np.empty(0, np.uint64))) != 1:
                raise CorruptFileError(f"{base}{LOOKUP}: the null lists' buffer is not global buffer 1")
        if len(keys):
            writer.write_batch(pa.record_batch([keys, pa.array(blobs, pa.binary())], schema=schema))
    return [{"path": LOOKUP, "size_bytes": int(writer.file_size or 0)}]


def write_sorted(
    base: str, dtype: pa.DataType, chunks: Iterable[Tuple[pa.Array, pa.Array]], storage_options: Any = None,
    label_list: bool = False, nulls: Optional["np.ndarray"] = None,
) -> List[Dict[str, Any]]:
    """:func:`write_flat` of rows already in key order, given in `chunks` of ``(keys, row
    addresses)`` (see :func:`keyed_sets`). The same bytes as :func:`write_flat`."""
    return write_keyed(base, dtype, keyed_sets(chunks, dtype), storage_options, label_list, nulls)


def keyed_sets(chunks: Iterable[Tuple[pa.Array, pa.Array]], dtype: pa.DataType) -> Iterator[Tuple[pa.Array, List[bytes]]]:
    """The rows `chunks` of ``(keys, row addresses)``, in key order, as chunks of ``(distinct
    keys, their serialized sets)``, each key in one chunk only: a chunk's last key, which the
    next chunk may continue, is held until then."""
    import numpy as np

    pending: Optional[Tuple[pa.Array, "np.ndarray"]] = None  # (the last key, its addresses)

    def sets(addrs: "np.ndarray", offsets: Sequence[int]) -> List[bytes]:
        return _lancepy.row_addr_maps_serialize(addrs.astype("<u8").tobytes(), [int(o) for o in offsets])

    for values, ids in chunks:
        if values.type != dtype:
            values = values.cast(dtype)
        if not len(values):
            continue
        keys, addrs, offsets = group(values, ids)
        if pending is not None:
            if _same_key(pending[0], keys.slice(0, 1)):
                first = np.sort(np.concatenate([pending[1], addrs[: offsets[1]]]))
                addrs = np.concatenate([first, addrs[offsets[1]:]])
                offsets = np.concatenate([[0], offsets[1:] + len(pending[1])])
            else:
                yield pending[0], sets(pending[1], [0, len(pending[1])])
        last = len(keys) - 1
        if last:
            yield keys.slice(0, last), sets(addrs[: offsets[last]], offsets[: last + 1])
        pending = (keys.slice(last, 1), addrs[offsets[last]:].copy())
    if pending is not None:
        yield pending[0], sets(pending[1], [0, len(pending[1])])


def write_keyed(
    base: str, dtype: pa.DataType, chunks: Iterable[Tuple[pa.Array, List[bytes]]], storage_options: Any = None,
    label_list: bool = False, nulls: Optional["np.ndarray"] = None,
) -> List[Dict[str, Any]]:
    """Writes ``bitmap_page_lookup.lance`` under `base` from `chunks` of ``(keys, serialized
    sets)`` in index order, each key once (a LABEL_LIST's, with `label_list`, and its null
    lists' sorted row addresses `nulls`), a chunk at a time. Returns the file as
    :func:`write_segment` does."""
    import numpy as np

    from lancepy.file import LanceFileWriter

    schema = lookup_schema(dtype, 0, label_list)
    count = 0
    with LanceFileWriter(base + LOOKUP, schema, version="2.2", storage_options=storage_options) as writer:
        if label_list:
            if writer.add_global_buffer(_null_lists(nulls if nulls is not None else np.empty(0, np.uint64))) != 1:
                raise CorruptFileError(f"{base}{LOOKUP}: the null lists' buffer is not global buffer 1")
        for keys, blobs in chunks:
            if len(keys):
                writer.write_batch(pa.record_batch([keys, pa.array(blobs, pa.binary())], schema=schema))
                count += len(keys)
        # (the count is known at the end: the schema's metadata is set when the file is closed)
        writer.add_schema_metadata(STATS_KEY, json.dumps({"num_bitmaps": count}, separators=(",", ":")))
    return [{"path": LOOKUP, "size_bytes": int(writer.file_size or 0)}]


def _same_key(a: pa.Array, b: pa.Array) -> bool:
    """Whether the one-value arrays `a` and `b` hold the same key (as :func:`group`'s
    dictionary encoding tells keys apart: NaN is one key, -0.0 and 0.0 are two)."""
    if a.null_count or b.null_count:
        return bool(a.null_count and b.null_count)
    return len(pc.unique(pa.concat_arrays([a, b]))) == 1


def decode(blobs: Sequence[Optional[bytes]]) -> "np.ndarray":
    """The row addresses of the serialized sets `blobs` (``None`` = empty), concatenated
    (a read-only view of the decoded bytes)."""
    import numpy as np

    data, _, full = _lancepy.row_addr_maps_deserialize([b if b is not None else b"\0\0\0\0" for b in blobs])
    if full:
        raise NotSupportedError(
            f"BITMAP index: a bitmap holds whole fragments {sorted({f for _, f in full})} "
            "(written without row offsets); lancepy reads only per-row bitmaps"
        )
    return np.frombuffer(data, dtype="<u8").astype(np.uint64, copy=False)


def decode_each(blobs: Sequence[Optional[bytes]]) -> Tuple["np.ndarray", "np.ndarray"]:
    """Like :func:`decode`, with the offsets of each set's addresses."""
    import numpy as np

    data, lengths, full = _lancepy.row_addr_maps_deserialize([b if b is not None else b"\0\0\0\0" for b in blobs])
    if full:
        raise NotSupportedError("BITMAP index: a bitmap holds whole fragments; lancepy reads only per-row bitmaps")
    return np.frombuffer(data, dtype="<u8").astype(np.uint64), np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


class BitmapSegment:
    """One BITMAP segment opened for queries: its keys in memory, the bitmaps decoded when
    a query needs them."""

    def __init__(self, base: str, storage_options: Any = None) -> None:
        from lancepy.file import LanceFileReader

        reader = LanceFileReader(base + LOOKUP, storage_options)
        table = reader.read_all().to_table()
        if table.schema.names[:2] != ["keys", "bitmaps"]:
            raise CorruptFileError(f"{base}{LOOKUP}: columns {table.schema.names}, expected keys and bitmaps")
        self.keys = table.column("keys").combine_chunks()
        self.bitmaps = table.column("bitmaps").combine_chunks()
        #: the column's type (as a BTREE segment's ``mins.type``)
        self.dtype = self.keys.type
        self._all: Optional["np.ndarray"] = None

    def _take(self, mask: pa.Array) -> "np.ndarray":
        import numpy as np

        picked = np.flatnonzero(np.asarray(pc.fill_null(mask, False).to_numpy(zero_copy_only=False), dtype=bool))
        return decode(self.bitmaps.take(pa.array(picked, pa.int64())).to_pylist())

    def num_rows(self) -> int:
        return len(self.all_rows())

    def all_rows(self) -> "np.ndarray":
        """Every row address the segment holds (sorted)."""
        import numpy as np

        if self._all is None:
            self._all = np.sort(decode(self.bitmaps.to_pylist()))
        return self._all

    def search_range(self, low: Any, low_inclusive: bool, high: Any, high_inclusive: bool) -> "np.ndarray":
        """Row addresses whose value lies in the range (``None`` = open end), plus, for
        floats, those whose value is NaN (a superset, as :meth:`BTreeSegment.search_range`)."""
        keys = self.keys
        mask = pc.is_valid(keys)
        if low is not None:
            cmp = pc.greater_equal if low_inclusive else pc.greater
            mask = pc.and_(mask, cmp(keys, _btree._scalar(low, keys.type)))
        if high is not None:
            cmp = pc.less_equal if high_inclusive else pc.less
            mask = pc.and_(mask, cmp(keys, _btree._scalar(high, keys.type)))
        mask = pc.fill_null(mask, False)
        if pa.types.is_floating(keys.type):
            mask = pc.or_(mask, pc.fill_null(pc.is_nan(keys), False))
        return self._take(mask)

    def search_in(self, values: Sequence[Any]) -> "np.ndarray":
        """Row addresses whose value is one of `values` (plus NaN rows, for floats)."""
        import numpy as np

        found = [self.search_range(v, True, v, True) for v in values]
        return np.concatenate(found) if found else np.empty(0, np.uint64)

    def search_null(self) -> "np.ndarray":
        """Row addresses whose value is NULL."""
        return self._take(pc.is_null(self.keys))


def open_segment(ds_uri: str, uuid: str, storage_options: Any = None) -> BitmapSegment:
    """Opens the BITMAP segment `uuid` of the dataset at `ds_uri`."""
    return BitmapSegment(ds_uri.rstrip("/") + f"/_indices/{uuid}/", storage_options)


def segment_statistics(ds_uri: str, uuid: str, storage_options: Any = None) -> Dict[str, Any]:
    """A segment's entry in ``index_statistics``, as pylance writes it: ``num_bitmaps``."""
    from lancepy.file import LanceFileReader

    md = LanceFileReader(ds_uri.rstrip("/") + f"/_indices/{uuid}/{LOOKUP}", storage_options).metadata().schema.metadata
    try:
        return json.loads((md or {})[STATS_KEY.encode()])
    except (KeyError, ValueError):
        return {"num_bitmaps": len(open_segment(ds_uri, uuid, storage_options).keys)}


def read_rows(ds_uri: str, uuid: str, storage_options: Any = None) -> Tuple[pa.Array, "np.ndarray"]:
    """Every ``(value, row address)`` a segment holds, one row per address."""
    import numpy as np

    seg = open_segment(ds_uri, uuid, storage_options)
    addrs, offsets = decode_each(seg.bitmaps.to_pylist())
    repeat = np.repeat(np.arange(len(seg.keys)), np.diff(offsets))
    return seg.keys.take(pa.array(repeat, pa.int64())), addrs


def read_list_rows(ds_uri: str, uuid: str, storage_options: Any = None) -> Tuple[pa.Array, "np.ndarray"]:
    """A LABEL_LIST segment's ``(element, row address)`` pairs, each element as a list of one
    (so the rows rebuild the index as list rows do)."""
    import numpy as np

    from lancepy.file import LanceFileReader

    keys, addrs = read_rows(ds_uri, uuid, storage_options)
    offsets = pa.array(np.arange(len(keys) + 1, dtype=np.int32))
    lists = pa.ListArray.from_arrays(offsets, keys)
    nulls = null_list_rows(LanceFileReader(ds_uri.rstrip("/") + f"/_indices/{uuid}/{LOOKUP}", storage_options))
    return pa.concat_arrays([lists, pa.nulls(len(nulls), lists.type)]), np.concatenate([addrs, nulls])


def null_list_rows(reader: Any) -> "np.ndarray":
    """The row addresses of the null lists a LABEL_LIST file records (in the global buffer
    its ``lance:label_list_nulls`` metadata names; none when it names none)."""
    import numpy as np

    md = reader.metadata().schema.metadata or {}
    which = md.get(LABEL_LIST_NULLS_KEY.encode())
    if which is None:
        return np.empty(0, np.uint64)
    try:
        index = int(which)
    except ValueError:
        raise CorruptFileError(f"LABEL_LIST index: {LABEL_LIST_NULLS_KEY} {which!r} is not a buffer number") from None
    return decode([reader.read_global_buffer(index)])


def remap(ds_uri: str, storage_options: Any, entry: Dict[str, Any], *args: Any) -> Tuple[str, List[Dict[str, Any]]]:
    """A BITMAP segment after a compaction moved rows (see :func:`lancepy._ops.btree.remap`)."""
    reader = read_list_rows if str(entry.get("details_type") or "").endswith("LabelListIndexDetails") else read_rows
    return _btree.remap(ds_uri, storage_options, entry, *args, read_rows=reader, write=write_segment)


def extend(
    view: "DatasetView", column: str, entries: List[Dict[str, Any]], fragments: Sequence[int], merge: bool
) -> Tuple[str, List[Dict[str, Any]]]:
    """A BITMAP index with the rows of `fragments` added (see :func:`lancepy._ops.btree.extend`)."""
    labels = str(entries[0].get("details_type") or "").endswith("LabelListIndexDetails")
    reader = read_list_rows if labels else read_rows
    return _btree.extend(view, column, entries, fragments, merge, read_rows=reader, write=write_segment)
