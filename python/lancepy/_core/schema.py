"""Schema helpers of the core layer: the row id / row address column names, a Lance schema
(fields JSON) as an Arrow schema, and the table forms user callbacks may return."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

import pyarrow as pa

from lancepy import _lancepy
from lancepy.exceptions import InvalidArgumentError

if TYPE_CHECKING:  # pragma: no cover
    pass


ROW_ID = "_rowid"


ROW_ADDRESS = "_rowaddr"


def _schema_of(fields: List[Dict[str, Any]], metadata: Dict[str, Any]) -> pa.Schema:
    return pa.schema(_lancepy.lance_to_schema(json.dumps(fields), json.dumps(metadata)))


def _as_table(out: Any) -> pa.Table:
    if isinstance(out, pa.Table):
        return out
    if isinstance(out, pa.RecordBatch):
        return pa.Table.from_batches([out])
    if isinstance(out, dict):
        return pa.table(out)
    if type(out).__module__.startswith("pandas"):
        return pa.Table.from_pandas(out, preserve_index=False)
    raise InvalidArgumentError(f"an add_columns function must return a table, batch or dict, got {type(out).__name__}")


def _describe(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def _same_type(a: pa.DataType, b: pa.DataType) -> bool:
    if a == b:
        return True
    if pa.types.is_fixed_size_list(a) and pa.types.is_fixed_size_list(b):
        return a.list_size == b.list_size and _same_type(a.value_type, b.value_type)
    return False


def schema_differences(
    got: pa.Schema, target: pa.Schema, compatible: Callable[[pa.DataType, pa.DataType], bool] = _same_type
) -> List[str]:
    """How `got` differs from `target` (columns matched by name, in any order), in words:
    missing and unexpected columns, and columns whose types are not `compatible`."""
    missing = [n for n in target.names if n not in got.names]
    extra = [n for n in got.names if n not in target.names]
    wrong = [
        f"{f.name}: {got.field(f.name).type} (dataset has {f.type})"
        for f in target
        if f.name in got.names and not compatible(got.field(f.name).type, f.type)
    ]
    parts = []
    if missing:
        parts.append(f"missing columns {missing}")
    if extra:
        parts.append(f"unexpected columns {extra}")
    if wrong:
        parts.append("different types: " + "; ".join(wrong))
    return parts


def lance_fields_for(schema: pa.Schema, first_id: int = 0) -> Dict[str, Any]:
    """Lance fields (with ids from `first_id`) and schema metadata for an Arrow schema.
    Metadata keys and values must be UTF-8 (Lance stores them as text)."""
    _check_utf8_metadata(schema.metadata, "the schema")
    for path, f in _walk_fields(schema):
        _check_utf8_metadata(f.metadata, f"field {path!r}")
    return json.loads(_lancepy.schema_to_lance(schema, first_id))


def _walk_fields(schema: pa.Schema) -> List[Any]:
    out = []
    stack = [(f.name, f) for f in schema]
    while stack:
        path, f = stack.pop()
        out.append((path, f))
        t = f.type
        children = [t.field(i) for i in range(t.num_fields)] if t.num_fields else []
        stack.extend((f"{path}.{c.name}", c) for c in children)
    return out


def _check_utf8_metadata(metadata: Optional[Dict[bytes, bytes]], what: str) -> None:
    for k, v in (metadata or {}).items():
        for part in (k, v):
            try:
                part.decode("utf-8") if isinstance(part, bytes) else part
            except UnicodeDecodeError:
                from lancepy.exceptions import InvalidArgumentError

                raise InvalidArgumentError(
                    f"metadata key {k!r} of {what} is not valid UTF-8 (Lance stores metadata as text; "
                    "base64-encode binary values)"
                ) from None


def _field_paths(fields: List[Dict[str, Any]]) -> Dict[int, str]:
    """Field id → dotted path (``"a.b"``) for a manifest's flat field list."""
    by_id = {f.get("id", 0): f for f in fields}
    out: Dict[int, str] = {}
    for fid, f in by_id.items():
        parts, cur, seen = [f.get("name", "")], f, {fid}
        while cur.get("parent_id", -1) in by_id and cur.get("parent_id", -1) not in seen:
            seen.add(cur["parent_id"])
            cur = by_id[cur["parent_id"]]
            parts.append(cur.get("name", ""))
        out[fid] = ".".join(reversed(parts))
    return out


#: The extension names of JSON columns: Arrow's JSON text, and pylance's stored JSONB.
JSON_EXTENSIONS = ("arrow.json", "lance.json")


def is_json_type(t: pa.DataType) -> bool:
    """Whether `t` is JSON text as reads return JSON columns (``arrow.json``)."""
    return isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.json"


def holds_json(t: pa.DataType) -> bool:
    """Whether values of type `t` are, or hold, JSON text (``arrow.json``) at any depth."""
    if isinstance(t, pa.BaseExtensionType):
        return t.extension_name == "arrow.json" or holds_json(t.storage_type)
    return any(holds_json(t.field(i).type) for i in range(t.num_fields))


def is_json_field(field: pa.Field) -> bool:
    """Whether `field` is a JSON column: its type is a JSON extension, or (where pyarrow has
    no JSON type registered) its metadata names one."""
    t = field.type
    if isinstance(t, pa.BaseExtensionType) and t.extension_name in JSON_EXTENSIONS:
        return True
    return (field.metadata or {}).get(b"ARROW:extension:name", b"").decode("utf-8", "replace") in JSON_EXTENSIONS


def is_stored_json_field(field: pa.Field) -> bool:
    """Whether `field` is a JSON column as stored (JSONB in ``large_binary``, ``lance.json``)."""
    return pa.types.is_large_binary(field.type) and (field.metadata or {}).get(b"ARROW:extension:name") == b"lance.json"
