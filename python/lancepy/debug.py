"""Human-readable dumps of a dataset's metadata, as pylance's ``lance.debug``.

Each function returns text laid out like a Rust ``{:#?}`` dump (``Name {`` / ``key: value,``
/ ``}``), with the manifest's own field names; pylance prints its internal structs the same
way, so the same facts appear under the same names (``major_version: 2``, ``physical_rows``,
``name: "a"``). :func:`format_schema` and :func:`format_fragment` are pylance's text line
for line (map entries sorted by key, where pylance prints hash order);
:func:`format_manifest` and :func:`list_transactions` are not. For tooling, read :attr:`LanceDataset.lance_schema`,
:meth:`LanceDataset.get_fragments` and :meth:`LanceDataset.get_transactions` instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from lancepy._core import rustfmt as _rustfmt

if TYPE_CHECKING:  # pragma: no cover
    from lancepy.dataset import LanceDataset

__all__ = ["format_fragment", "format_manifest", "format_schema", "list_transactions"]

_INDENT = "    "


class _Named(dict):
    """A dict rendered as a named struct (``DataFile { ... }``)."""

    def __init__(self, name: str, fields: Dict[str, Any]) -> None:
        super().__init__(fields)
        self.name = name


def _render(value: Any, name: Optional[str], depth: int) -> str:
    pad = _INDENT * (depth + 1)
    end = _INDENT * depth
    if isinstance(value, _Named):
        name = value.name
    if isinstance(value, dict):
        if not value:
            return f"{name} {{}}" if name else "{}"
        body = "".join(f"{pad}{k}: {_render(v, None, depth + 1)},\n" for k, v in value.items())
        return f"{name or ''} {{\n{body}{end}}}".lstrip()
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        body = "".join(f"{pad}{_render(v, None, depth + 1)},\n" for v in value)
        return f"[\n{body}{end}]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "None"
    if isinstance(value, (bytes, bytearray)):
        return f"{len(value)} bytes"
    return str(value)


def _field_tree(fields: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The manifest's flat field list as a tree (children under their parents)."""
    nodes = {f.get("id", 0): {**f, "children": []} for f in fields}
    roots = []
    for f in fields:
        node = nodes[f.get("id", 0)]
        parent = nodes.get(f.get("parent_id", -1))
        (parent["children"] if parent is not None else roots).append(node)
    return [_schema_field(n) for n in roots]


def _schema_field(node: Dict[str, Any]) -> Dict[str, Any]:
    return _Named(
        "Field",
        {
            "name": node.get("name", ""),
            "id": node.get("id", 0),
            "parent_id": node.get("parent_id", -1),
            "logical_type": node.get("logical_type", ""),
            "nullable": bool(node.get("nullable", False)),
            "metadata": {k: bytes(v).decode("utf-8", "replace") for k, v in (node.get("metadata") or {}).items()},
            "children": [_schema_field(c) for c in node["children"]],
        },
    )


def _schema(manifest: Dict[str, Any]) -> Dict[str, Any]:
    md = manifest.get("schema_metadata") or {}
    return {
        "fields": _field_tree(manifest.get("fields") or []),
        "metadata": {k: bytes(v).decode("utf-8", "replace") for k, v in md.items()},
    }


def _fragment(frag: Dict[str, Any]) -> Dict[str, Any]:
    """A fragment's manifest entry, its data files' format versions spelled out."""
    files = [
        _Named(
            "DataFile",
            {
                "path": f.get("path", ""),
                "fields": list(f.get("fields") or []),
                "column_indices": list(f.get("column_indices") or []),
                "major_version": f.get("file_major_version", 0),
                "minor_version": f.get("file_minor_version", 0),
                "file_size_bytes": f.get("file_size_bytes"),
                "base_id": f.get("base_id"),
            },
        )
        for f in frag.get("files") or []
    ]
    return {
        "id": frag.get("id", 0),
        "files": files,
        "deletion_file": frag.get("deletion_file"),
        "physical_rows": frag.get("physical_rows"),
    }


def format_schema(dataset: "LanceDataset") -> str:
    """The dataset's Lance schema (field ids, parents, logical types, encodings, metadata),
    line for line as pylance prints it (metadata entries sorted by key)."""
    m = dataset._view.loaded.manifest
    return _rustfmt.render(_rustfmt.schema_value(m.get("fields") or [], m.get("schema_metadata")), pretty=True)


def format_manifest(dataset: "LanceDataset") -> str:
    """The manifest of the dataset's version: schema, fragments, version, config."""
    m = dataset._view.loaded.manifest
    shown = {
        "schema": _schema(m),
        "version": dataset.version,
        "fragments": [_Named("Fragment", _fragment(f)) for f in m.get("fragments") or []],
        "reader_feature_flags": m.get("reader_feature_flags", 0),
        "writer_feature_flags": m.get("writer_feature_flags", 0),
        "max_fragment_id": m.get("max_fragment_id"),
        "config": dict(m.get("config") or {}),
        "data_storage_version": dataset.data_storage_version,
    }
    return _render(shown, "Manifest", 0)


def _file_fields(fields: List[Dict[str, Any]], ids: List[int]) -> List[Dict[str, Any]]:
    """The schema entries a data file holds: its field ids and their ancestors."""
    by_id = {int(f.get("id", 0)): f for f in fields}
    keep = set()
    for i in ids:
        while i in by_id and i not in keep:
            keep.add(i)
            i = int(by_id[i].get("parent_id", -1))
    return [f for f in fields if int(f.get("id", 0)) in keep]


def _deletion_value(d: Optional[Dict[str, Any]]) -> Any:
    if not d:
        return _rustfmt.NONE
    kind = d.get("file_type")
    kind = {0: "Array", 1: "Bitmap"}.get(kind, kind) if isinstance(kind, int) else str(kind).capitalize()
    return _rustfmt.some(
        _rustfmt.struct(
            "DeletionFile",
            read_version=int(d.get("read_version", 0)),
            id=int(d.get("id", 0)),
            file_type=_rustfmt.Unit(kind),
            num_deleted_rows=_rustfmt.option(d.get("num_deleted_rows")),
            base_id=_rustfmt.option(d.get("base_id")),
        )
    )


def format_fragment(fragment: Any, dataset: "LanceDataset") -> str:
    """One fragment (a :class:`~lancepy.fragment.FragmentMetadata` or
    :class:`~lancepy.fragment.LanceFragment`): its data files with the part of the schema
    each holds, its deletion file and row count, line for line as pylance prints it."""
    meta = fragment.metadata if hasattr(fragment, "metadata") and not hasattr(fragment, "to_json") else fragment
    frag = meta.to_json()
    m = dataset._view.loaded.manifest
    fields, metadata = m.get("fields") or [], m.get("schema_metadata")
    files = [
        _rustfmt.struct(
            "PrettyPrintableDataFile",
            path=f.get("path", ""),
            fields=list(f.get("fields") or []),
            column_indices=list(f.get("column_indices") or []),
            schema=_rustfmt.schema_value(_file_fields(fields, list(f.get("fields") or [])), metadata),
            major_version=int(f.get("file_major_version", 0)),
            minor_version=int(f.get("file_minor_version", 0)),
        )
        for f in frag.get("files") or []
    ]
    value = _rustfmt.struct(
        "PrettyPrintableFragment",
        id=int(frag.get("id", 0)),
        files=files,
        deletion_file=_deletion_value(frag.get("deletion_file")),
        physical_rows=_rustfmt.option(frag.get("physical_rows")),
    )
    return _rustfmt.render(value, pretty=True)


def list_transactions(dataset: "LanceDataset", /, max_transactions: int = 10) -> List[str]:
    """The transactions of the newest `max_transactions` versions, newest first, one text
    each (``"None"`` for a version whose transaction is not recorded)."""
    out = []
    for version in range(dataset.latest_version, max(dataset.latest_version - max_transactions, 0), -1):
        txn = dataset.read_transaction(version)
        if txn is None:
            out.append("None")
            continue
        out.append(
            _render(
                {
                    "read_version": txn.read_version,
                    "uuid": str(txn.uuid),
                    "operation": type(txn.operation).__name__,
                    "transaction_properties": dict(txn.transaction_properties or {}) or None,
                },
                "Transaction",
                0,
            )
        )
    return out
