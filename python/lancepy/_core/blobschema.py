"""Blob columns in schemas: which Arrow and Lance fields are blobs (legacy or v2) and the
schema a blob column is written with. Reading and writing blob values is :mod:`lancepy.blob`."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from lancepy.exceptions import InvalidArgumentError

BLOB_V2_EXTENSION = "lance.blob.v2"


def _is_blob_marked(field: Any) -> bool:
    md = field.metadata or {}
    return (md.get(b"lance-encoding:blob") or b"").decode().strip().lower() in ("true", "1", "yes")


def _is_arrow_blob_v2(field: Any) -> bool:
    """A blob-v2 field: extension metadata, or a registered extension type of that name
    (pylance registers one for ``lance.blob.v2`` when it is imported)."""
    md = field.metadata or {}
    return md.get(b"ARROW:extension:name") == BLOB_V2_EXTENSION.encode() or (
        getattr(field.type, "extension_name", None) == BLOB_V2_EXTENSION
    )


def blob_v2_schema(schema: Any, version: str) -> Any:
    """The schema a new dataset of file version `version` records for `schema`: from 2.2 on,
    a top-level ``binary`` / ``large_binary`` field marked ``lance-encoding:blob`` becomes a
    blob-v2 column (``struct<data: large_binary, uri: utf8>``, extension ``lance.blob.v2``),
    as pylance 14 records it. Other schemas are returned as they are."""
    import pyarrow as pa

    def major_minor(v: str) -> Tuple[int, ...]:
        try:
            return tuple(int(x) for x in str(v).split(".")[:2])
        except ValueError:
            return (0, 0)

    if major_minor(version) < (2, 2):
        return schema
    fields = []
    changed = False
    for f in schema:
        if _is_blob_marked(f) and (pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)):
            blob = pa.struct([pa.field("data", pa.large_binary()), pa.field("uri", pa.utf8())])
            fields.append(
                pa.field(f.name, blob, f.nullable, metadata={b"ARROW:extension:name": BLOB_V2_EXTENSION.encode()})
            )
            changed = True
        else:
            fields.append(f)
    return pa.schema(fields, metadata=schema.metadata) if changed else schema


def writable_schema(target: Any, data: Any) -> Any:
    """`target` (a dataset's schema) with each blob-v2 column typed as `data` has it when
    that is ``binary`` / ``large_binary``: blob-v2 columns are written from their bytes."""
    import pyarrow as pa

    fields = []
    for f in target:
        if _is_arrow_blob_v2(f) and f.name in data.names:
            t = data.field(f.name).type
            if pa.types.is_binary(t) or pa.types.is_large_binary(t):
                f = pa.field(f.name, t, f.nullable, metadata=f.metadata)
        fields.append(f)
    return pa.schema(fields, metadata=target.metadata)


def external_blob_handling(external_blob_mode: str, allow_external_blob_outside_bases: bool) -> str:
    """What the writer does with blob values given as URIs (pylance's `blob_array` of
    URIs): ``"ingest"`` copies their bytes into the dataset; ``"reference"`` with
    `allow_external_blob_outside_bases` stores the absolute URI; plain ``"reference"``
    refuses them (pylance stores URIs inside registered bases relative to the base, which
    lancepy does not write)."""
    if external_blob_mode not in ("reference", "ingest"):
        raise InvalidArgumentError(f"external_blob_mode must be 'reference' or 'ingest', got {external_blob_mode!r}")
    if external_blob_mode == "ingest":
        if allow_external_blob_outside_bases:
            raise InvalidArgumentError(
                "allow_external_blob_outside_bases only applies when external_blob_mode='reference'"
            )
        return "ingest"
    return "reference" if allow_external_blob_outside_bases else "refuse"


def _is_blob_v2(field: Dict[str, Any]) -> bool:
    return (
        field.get("extension_name") == "lance.blob.v2"
        or bytes(field.get("metadata", {}).get("ARROW:extension:name", b"")) == b"lance.blob.v2"
    )


def _is_legacy_blob(field: Dict[str, Any]) -> bool:
    meta = field.get("metadata", {}) or {}
    return (
        field.get("logical_type") == "large_binary" and bytes(meta.get("lance-encoding:blob", b"")).lower() == b"true"
    )


def field_blob_kind(field: Dict[str, Any]) -> Optional[str]:
    """``"v2"``, ``"legacy"`` (a 2.0 / 2.1 blob page column) or ``None`` (not a blob column)
    for a manifest's field entry (``LoadedManifest.blob_kind`` asks this of a column)."""
    if _is_blob_v2(field):
        return "v2"
    if _is_legacy_blob(field):
        return "legacy"
    return None


def blob_sidecar_name(blob_id: int) -> str:
    """File name of blob sidecar `blob_id`: its 32 bits, least significant first."""
    if not 0 <= blob_id < 1 << 32:
        raise InvalidArgumentError(f"blob id {blob_id} does not fit 32 bits")
    return "".join("1" if blob_id >> i & 1 else "0" for i in range(32)) + ".blob"


def sidecar_owner(path: str) -> Optional[str]:
    """The data file a blob sidecar belongs to (``data/<stem>/<id>.blob`` → ``data/<stem>.lance``),
    or None if `path` is not a sidecar."""
    if not path.endswith(".blob"):
        return None
    head, sep, _ = path.rpartition("/")
    return head + ".lance" if sep and head else None
