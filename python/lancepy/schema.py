"""Schemas (pylance's ``lance.schema``): :class:`LanceSchema`, an Arrow schema whose fields
carry Lance field ids, and the JSON form of an Arrow schema that pylance reads and writes
(:func:`schema_to_json`, :func:`json_to_schema`).

In that JSON a field is ``{"name", "type", "nullable"[, "metadata"]}``; its ``type`` is
``{"type": <Lance logical type>}`` for a leaf (``"int64"``, ``"timestamp:us:UTC"``,
``"dict:string:int32:false"``) and ``{"type": "struct" | "list" | "large_list" |
"fixed_size_list", "fields": [...][, "length": n]}`` for a nested one
(``fixed_size_binary`` has a ``length`` too). An extension type is written as its storage
type, with its name and metadata in the field's metadata. Maps have no JSON form.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pyarrow as pa

from lancepy._core.schema import _schema_of, lance_fields_for
from lancepy._table.operations import LanceField, LanceSchema
from lancepy.exceptions import InvalidArgumentError, LanceError

__all__ = ["LanceSchema", "LanceField", "schema_to_json", "json_to_schema"]

_EXT_NAME = "ARROW:extension:name"
_EXT_METADATA = "ARROW:extension:metadata"


def _logical_type(dtype: pa.DataType) -> str:
    """The Lance logical type of a leaf Arrow type."""
    return str(lance_fields_for(pa.schema([pa.field("x", dtype)]))["fields"][0]["logical_type"])


def _type_to_json(dtype: pa.DataType) -> Dict[str, Any]:
    if pa.types.is_struct(dtype):
        return {"type": "struct", "fields": [_field_to_json(dtype.field(i)) for i in range(dtype.num_fields)]}
    if pa.types.is_map(dtype):
        raise InvalidArgumentError(f"a map type ({dtype}) has no schema JSON form")
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        kind = "list" if pa.types.is_list(dtype) else "large_list"
        return {"type": kind, "fields": [_field_to_json(dtype.value_field)]}
    if pa.types.is_fixed_size_list(dtype):
        return {"type": "fixed_size_list", "fields": [_field_to_json(dtype.value_field)], "length": dtype.list_size}
    if pa.types.is_fixed_size_binary(dtype) and not pa.types.is_decimal(dtype):
        return {"type": "fixed_size_binary", "length": dtype.byte_width}
    try:
        return {"type": _logical_type(dtype)}
    except LanceError as e:
        raise InvalidArgumentError(f"type {dtype} has no schema JSON form: {e}") from None


def _field_to_json(field: pa.Field) -> Dict[str, Any]:
    dtype = field.type
    metadata = {k.decode(): v.decode() for k, v in (field.metadata or {}).items()}
    if isinstance(dtype, pa.BaseExtensionType):
        # the name and serialized metadata, as the Arrow C data interface carries them
        entry = lance_fields_for(pa.schema([pa.field("x", dtype)]))["fields"][0]
        carried = {k: bytes(v).decode() for k, v in (entry.get("metadata") or {}).items()}
        metadata.update({k: v for k, v in carried.items() if k in (_EXT_NAME, _EXT_METADATA)})
        dtype = dtype.storage_type
    out: Dict[str, Any] = {"name": field.name, "type": _type_to_json(dtype), "nullable": field.nullable}
    if metadata:
        out["metadata"] = metadata
    return out


def schema_to_json(schema: pa.Schema) -> Dict[str, Any]:
    """`schema` as a JSON-able dict (``{"fields": [...]}``, plus ``"metadata"`` when the
    schema has some), the form pylance's ``schema_to_json`` writes.

    Raises :class:`~lancepy.exceptions.InvalidArgumentError` for a type the form cannot
    hold (a map, a view type).
    """
    if not isinstance(schema, pa.Schema):
        raise InvalidArgumentError(f"expected a pyarrow.Schema, got {type(schema).__name__}")
    out: Dict[str, Any] = {"fields": [_field_to_json(f) for f in schema]}
    if schema.metadata:
        out["metadata"] = {k.decode(): v.decode() for k, v in schema.metadata.items()}
    return out


def _text_map(value: Any, what: str) -> Dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InvalidArgumentError(f"{what} must map strings to strings, got {value!r}")
    return value


def _children(t: Dict[str, Any], kind: str, count: int) -> List[pa.Field]:
    fields = t.get("fields")
    if not isinstance(fields, list) or (count and len(fields) != count):
        raise InvalidArgumentError(f"a {kind} type needs {count or 'its'} field(s) under 'fields': {t!r}")
    return [_field_from_json(f) for f in fields]


def _length(t: Dict[str, Any], kind: str) -> int:
    n = t.get("length")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise InvalidArgumentError(f"a {kind} type needs a 'length': {t!r}")
    return n


def _type_from_json(t: Any) -> pa.DataType:
    if not isinstance(t, dict) or not isinstance(t.get("type"), str):
        raise InvalidArgumentError(f"a field's type must be a dict with a 'type' string, got {t!r}")
    kind = t["type"]
    if kind == "struct":
        return pa.struct(_children(t, kind, 0))
    if kind == "list":
        return pa.list_(_children(t, kind, 1)[0])
    if kind == "large_list":
        return pa.large_list(_children(t, kind, 1)[0])
    if kind == "fixed_size_list":
        return pa.list_(_children(t, kind, 1)[0], _length(t, kind))
    if kind == "fixed_size_binary":
        return pa.binary(_length(t, kind))
    entry = {"name": "x", "id": 0, "parent_id": -1, "logical_type": kind, "nullable": True}
    try:
        return _schema_of([entry], {}).field(0).type
    except LanceError as e:
        raise InvalidArgumentError(f"unknown type {kind!r} in schema JSON: {e}") from None


def _field_from_json(f: Any) -> pa.Field:
    if not isinstance(f, dict):
        raise InvalidArgumentError(f"a field must be a dict, got {f!r}")
    for key in ("name", "type", "nullable"):
        if key not in f:
            raise InvalidArgumentError(f"a field needs {key!r}: {f!r}")
    if not isinstance(f["name"], str) or not isinstance(f["nullable"], bool):
        raise InvalidArgumentError(f"a field's name must be a string and nullable a bool: {f!r}")
    metadata = _text_map(f.get("metadata"), f"metadata of field {f['name']!r}")
    return pa.field(f["name"], _type_from_json(f["type"]), f["nullable"], metadata or None)


def json_to_schema(schema_json: Dict[str, Any]) -> pa.Schema:
    """The Arrow schema of `schema_json`, the form :func:`schema_to_json` writes (a field
    whose metadata names a registered extension type gets that type back).

    Raises :class:`~lancepy.exceptions.InvalidArgumentError` for JSON not of that form.
    """
    if not isinstance(schema_json, dict) or not isinstance(schema_json.get("fields"), list):
        shown = json.dumps(schema_json, default=repr)[:200]
        raise InvalidArgumentError(f"schema JSON must be a dict with a 'fields' list, got {shown}")
    metadata = _text_map(schema_json.get("metadata"), "schema metadata")
    schema = pa.schema([_field_from_json(f) for f in schema_json["fields"]], metadata=metadata or None)
    # through the C data interface, so that extension names in field metadata become types
    return pa.Schema._import_from_c_capsule(schema.__arrow_c_schema__())
