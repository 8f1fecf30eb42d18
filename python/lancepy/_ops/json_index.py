"""Scalar indices over one JSON path of a JSON column (pylance's ``IndexConfig("json", ...)``,
``/lance.index.pb.JsonIndexDetails``): a BTREE or BITMAP index (the *target*) whose keys are
the values at the path, in pylance 14's layout.

The values are typed as pylance types them: the JSON type of the first non-null value met
in scan order decides (``Boolean``, ``Int64``, ``Float64`` or ``Utf8``; ``Utf8`` when every
value is null); every other value must have that type (a ``Float64`` index also takes
integers), else the build fails naming the row; arrays and objects are refused. The target
index's files are the index's files; its details sit inside the JSON details with the path.
Index version 0. The column may be a JSON field of a struct (``m.j``; a null struct is a null
value), as pylance allows; filters use only indices on top-level columns (pylance 14 scans
for ``json_get_*(m.j, ...)`` too).

A filter uses such an index where it reads the same values: ``json_get_int``,
``json_get_float``, ``json_get_bool`` or ``json_get_string`` of the column and a key equal
to the index's path, the function's type being the index's type, the path a plain member
name (``x``, not ``$.a.b``: the ``json_get_*`` functions look a key up, the index follows a
JSONPath, and only for a plain name are these the same value). pylance 14 also routes other
paths and mismatched types to the index, giving other rows than its own scan; lancepy
answers those by scanning (see :mod:`lancepy._ops.scalar_query`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from lancepy import _lancepy
from lancepy._core.schema import is_json_field
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.snapshot import DatasetView

#: ``index_details`` type URL and the index version pylance 14 writes.
DETAILS_TYPE_URL = "/lance.index.pb.JsonIndexDetails"
INDEX_VERSION = 0

#: the target index types lancepy builds under a JSON index (pylance's names, lower case)
TARGETS = {"btree": "BTREE", "bitmap": "BITMAP"}
#: pylance's ``target_data_type`` parameter names -> Arrow types (``LargeBinary`` refused)
_TARGET_TYPES = {"Boolean": pa.bool_(), "Int64": pa.int64(), "Float64": pa.float64(), "Utf8": pa.string()}
#: the JSON function reading each target type (the only one a filter is answered with)
FUNCTIONS = {pa.bool_(): "json_get_bool", pa.int64(): "json_get_int", pa.float64(): "json_get_float", pa.string(): "json_get_string"}
_NATIVE_NAMES = {pa.bool_(): "bool", pa.int64(): "int64", pa.float64(): "double", pa.string(): "string"}
#: a JSONPath that is one plain member name (where it and a key lookup read the same value)
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_SCAN_BATCH_ROWS = 65536


def is_plain_path(path: str) -> bool:
    """Whether `path` is one plain member name (``x``, ``user_id``)."""
    return _PLAIN.fullmatch(path) is not None


@dataclass(frozen=True)
class JsonPathKey:
    """What a JSON-path index keys its rows by: the value at `path` of JSON column `column`,
    as `dtype` (the type the index was trained on). Stands for a column name wherever a
    BTREE or BITMAP build reads its keys (:func:`lancepy._ops.btree.column_batches`)."""

    column: str
    path: str
    dtype: pa.DataType

    def batches(self, view: "DatasetView", fragment_ids: Sequence[int]) -> Iterator[Tuple[pa.Array, pa.Array]]:
        """``(values at the path as dtype, row addresses)`` of the live rows of `fragment_ids`."""
        for values, rows in _raw_batches(view, self.column, fragment_ids):
            yield _converted(values, self), rows


@dataclass(frozen=True)
class JsonDetails:
    """A JSON index entry's details: the path and the target index's details."""

    path: str
    target_type_url: str
    target_value: bytes
    target_data_type: int

    @property
    def target_kind(self) -> Optional[str]:
        """``"BTree"`` or ``"Bitmap"`` (as pylance's plans name them), else ``None``."""
        name = self.target_type_url.rsplit(".", 1)[-1]
        return {"BTreeIndexDetails": "BTree", "BitmapIndexDetails": "Bitmap"}.get(name)


def details_of(entry: Dict[str, Any]) -> Optional[JsonDetails]:
    """The details of index entry `entry` (from ``index_section_entries``) when it is a JSON
    index, else ``None``."""
    if not str(entry.get("details_type") or "").endswith("JsonIndexDetails"):
        return None
    d = _lancepy.decode_index_details(DETAILS_TYPE_URL, bytes(entry.get("details_value") or b""))
    return JsonDetails(str(d["path"]), str(d["target_type_url"]), bytes(d["target_value"]), int(d["target_data_type"]))


def details_bytes(path: str, target_type_url: str) -> List[int]:
    """The ``index_details`` value of a new JSON index (pylance 14's bytes)."""
    return list(_lancepy.encode_json_index_details(path, target_type_url, b"", 0))


def parse_config(parameters: Any) -> Tuple[str, str, Optional[pa.DataType]]:
    """``(target kind, path, trained type or None)`` from an ``IndexConfig("json", ...)``'s
    parameters (pylance's keys: ``target_index_type``, ``path``, ``target_index_parameters``,
    ``target_data_type``)."""
    if not isinstance(parameters, dict):
        raise InvalidArgumentError(f"IndexConfig('json') parameters must be a dict, got {type(parameters).__name__}")
    known = {"target_index_type", "path", "target_index_parameters", "target_data_type"}
    unknown = sorted(set(parameters) - known)
    if unknown:
        raise NotSupportedError(f"IndexConfig('json') parameters {unknown}: lancepy knows {sorted(known)}")
    for key in ("target_index_type", "path"):
        if not isinstance(parameters.get(key), str):
            raise InvalidArgumentError(f"IndexConfig('json') needs a string {key!r} parameter")
    target = parameters["target_index_type"]
    if target.lower() in ("inverted", "fts"):
        raise NotSupportedError(
            f"JSON-path indexes do not support target index type '{target}'; create an INVERTED index directly "
            "on the JSON column instead"
        )
    if target.lower() not in TARGETS:
        raise NotSupportedError(f"IndexConfig('json'): lancepy builds BTREE and BITMAP targets, not {target!r}")
    options = parameters.get("target_index_parameters")
    if options not in (None, "", "{}", {}):
        raise NotSupportedError(
            f"IndexConfig('json') target_index_parameters={options!r}: lancepy's {TARGETS[target.lower()]} takes none"
        )
    dtype = None
    given = parameters.get("target_data_type")
    if given is not None:
        if given == "LargeBinary":
            raise InvalidArgumentError(
                f"Cannot create a JSON index for JSON path '{parameters['path']}' with target data type LargeBinary "
                "(arrays or objects); only scalar values are supported"
            )
        if given not in _TARGET_TYPES:
            raise InvalidArgumentError(f"IndexConfig('json') target_data_type must be one of {sorted(_TARGET_TYPES)}, got {given!r}")
        dtype = _TARGET_TYPES[given]
    _check_path(parameters["path"])
    return TARGETS[target.lower()], parameters["path"], dtype


def _check_path(path: str) -> None:
    """Raises :class:`InvalidArgumentError` for a path that is not a JSONPath, and
    :class:`NotSupportedError` for one lancepy does not read (filter expressions)."""
    try:
        _lancepy.json_index_type(pa.array(["{}"], pa.string()), path)
    except NotImplementedError as e:
        raise NotSupportedError(f"JSON index path {path!r}: {e}") from None
    except ValueError as e:
        raise InvalidArgumentError(f"JSON index path {path!r}: {e}") from None


def check_column(view: "DatasetView", field: pa.Field, column: str) -> None:
    """Raises unless a JSON index can be built on `field` of `view`."""
    if not is_json_field(field):
        if pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type):
            raise NotSupportedError(
                f"JSON index on {column!r}: lancepy indexes JSON columns (pa.json_()), not raw binary ones"
            )
        raise InvalidArgumentError("A JSON index can only be created on a JSON, Binary or LargeBinary field.")
    if view.stable_row_ids:
        raise NotSupportedError("JSON index on a dataset with stable row ids: not built by lancepy yet")


def _raw_batches(view: "DatasetView", column: str, fragment_ids: Sequence[int]) -> Iterator[Tuple[pa.Array, pa.Array]]:
    """``(JSON values as stored, row addresses)`` of the live rows of `fragment_ids`;
    `column` is a field path (``a.j``: JSON field ``j`` of struct ``a``, null where ``a`` is)."""
    top, *path = column.split(".")
    stream = view.snapshot.scan_stream(
        [top], fragment_ids=list(fragment_ids), batch_rows=_SCAN_BATCH_ROWS, with_row_address=True, json_stored=True
    )
    while (raw := stream.next_batch()) is not None:
        batch = pa.record_batch(raw)
        values = batch.column(top)
        for name in path:
            values = pc.struct_field(values, [values.type.get_field_index(name)])
        yield values, batch.column("_rowaddr").cast(pa.uint64())


def _converted(values: pa.Array, key: JsonPathKey) -> pa.Array:
    try:
        out = _lancepy.json_index_values(values, key.path, _NATIVE_NAMES[key.dtype])
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from None
    return pa.table(out).column(0).combine_chunks()


def typed_batches(
    view: "DatasetView", column: str, path: str, fragment_ids: Sequence[int], dtype: Optional[pa.DataType]
) -> Tuple[JsonPathKey, Iterator[Tuple[pa.Array, pa.Array]]]:
    """The key of a new index over `path` and its batches (as :func:`batches`). Without
    `dtype`, the type is the first non-null value's: batches are read (and kept) until one is
    found; ``Utf8`` when none is."""
    raw = _raw_batches(view, column, fragment_ids) if fragment_ids else iter(())
    held: List[Tuple[pa.Array, pa.Array]] = []
    if dtype is None:
        for values, rows in raw:
            held.append((values, rows))
            try:
                found = _lancepy.json_index_type(values, path)
            except ValueError as e:
                raise InvalidArgumentError(str(e)) from None
            if found is not None:
                dtype = {v: k for k, v in _NATIVE_NAMES.items()}[found]
                break
    key = JsonPathKey(column, path, dtype if dtype is not None else pa.string())

    def convert() -> Iterator[Tuple[pa.Array, pa.Array]]:
        for values, rows in held:
            yield _converted(values, key), rows
        held.clear()
        for values, rows in raw:
            yield _converted(values, key), rows

    return key, convert()


def trained_type(view: "DatasetView", entries: List[Dict[str, Any]]) -> pa.DataType:
    """The value type JSON index `entries` (its segments) were trained on, from the target's
    files (pylance 14 records it nowhere else)."""
    from lancepy._ops import bitmap as _bitmap
    from lancepy._ops import btree as _btree

    details = details_of(entries[0])
    module = _btree if details is not None and details.target_kind == "BTree" else _bitmap
    opened = view.state.setdefault("btree_segments", {})
    types = set()
    for e in entries:
        if e["uuid"] not in opened:
            opened[e["uuid"]] = module.open_segment(view.uri, e["uuid"], view.storage_options)
        types.add(opened[e["uuid"]].dtype)
    if len(types) != 1:
        raise InvalidArgumentError(f"the segments of JSON index {entries[0]['name']!r} hold values of types {sorted(map(str, types))}")
    return types.pop()


def key_of(view: "DatasetView", column: str, entries: List[Dict[str, Any]]) -> JsonPathKey:
    """The key JSON index `entries` (its segments) hold, over `column`."""
    details = details_of(entries[0])
    assert details is not None
    return JsonPathKey(column, details.path, trained_type(view, entries))
