"""Text in the notation of Rust's ``Debug`` formatting, the one pylance prints schemas,
manifests and transactions in (``repr(LanceSchema)``, ``lance.debug``).

A value is built from :class:`Struct` (``Name { a: 1 }``), :class:`TupleStruct`
(``Some(1)``, ``LogicalType("int64")``), :class:`Unit` (``None``, ``Plain``), :class:`Map`,
``str`` (quoted), ``bool``, ``int`` and ``list``; :func:`render` writes it on one line
(``{:?}``) or indented by four spaces, one item a line with trailing commas (``{:#?}``).

:func:`schema_value` and :func:`field_value` build the ``Schema`` / ``Field`` values of a
Lance schema from its manifest fields (their JSON form), field for field as pylance prints
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

CLUSTERING_KEY_POSITION = "lance-schema:unenforced-clustering-key:position"


@dataclass(frozen=True)
class Unit:
    """A unit value or variant: ``None``, ``Plain``, ``Array``."""

    name: str


@dataclass(frozen=True)
class TupleStruct:
    """A tuple struct or variant: ``Some(1)``, ``LogicalType("int64")``."""

    name: str
    items: Tuple[Any, ...]


@dataclass(frozen=True)
class Struct:
    """A struct or struct variant: ``Name { a: 1, b: "x" }``."""

    name: str
    fields: Tuple[Tuple[str, Any], ...]


@dataclass(frozen=True)
class Map:
    """A map: ``{"k": "v"}``; entries in the order given."""

    entries: Tuple[Tuple[Any, Any], ...]


NONE = Unit("None")


def some(value: Any) -> TupleStruct:
    """``Some(value)``."""
    return TupleStruct("Some", (value,))


def option(value: Any) -> Union[TupleStruct, Unit]:
    """``Some(value)``, or ``None`` when `value` is ``None``."""
    return NONE if value is None else some(value)


def struct(_name: str, **fields: Any) -> Struct:
    """A :class:`Struct` named `_name` with its fields in keyword order."""
    return Struct(_name, tuple(fields.items()))


def _quote(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\0":
            out.append("\\0")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def render(value: Any, pretty: bool = False) -> str:
    """`value` in Rust's ``{:?}`` notation, or ``{:#?}`` when `pretty`."""
    parts: List[str] = []
    _write(value, pretty, 0, parts)
    return "".join(parts)


def _write(value: Any, pretty: bool, depth: int, out: List[str]) -> None:
    if isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, Unit):
        out.append(value.name)
    elif isinstance(value, TupleStruct):
        _seq(value.name + "(", ")", [(None, v) for v in value.items], pretty, depth, out)
    elif isinstance(value, Struct):
        if not value.fields:
            out.append(value.name)
        else:
            _seq(value.name + " {", "}", list(value.fields), pretty, depth, out, spaced=True)
    elif isinstance(value, Map):
        _seq("{", "}", list(value.entries), pretty, depth, out, keyed=True)
    elif isinstance(value, (list, tuple)):
        _seq("[", "]", [(None, v) for v in value], pretty, depth, out)
    else:
        raise TypeError(f"no Debug notation for {type(value).__name__}")


def _seq(
    open_: str,
    close: str,
    items: Sequence[Tuple[Optional[Any], Any]],
    pretty: bool,
    depth: int,
    out: List[str],
    spaced: bool = False,
    keyed: bool = False,
) -> None:
    """`items` (name or key, value) between `open_` and `close`: struct fields are
    ``name: value``, map entries ``key: value`` (the key rendered), the rest values."""
    out.append(open_)
    if not items:
        out.append(close)
        return

    def head(name: Any) -> None:
        if keyed:
            _write(name, pretty, depth + 1, out)
            out.append(": ")
        elif name is not None:
            out.append(f"{name}: ")

    if pretty:
        out.append("\n")
        pad = "    " * (depth + 1)
        for name, v in items:
            out.append(pad)
            head(name)
            _write(v, pretty, depth + 1, out)
            out.append(",\n")
        out.append("    " * depth + close)
        return
    if spaced:
        out.append(" ")
    for i, (name, v) in enumerate(items):
        if i:
            out.append(", ")
        head(name)
        _write(v, pretty, depth, out)
    out.append(" " + close if spaced else close)


# -- Lance schemas --------------------------------------------------------------------------

_ENCODINGS = {1: "Plain", 2: "VarBinary", 3: "Dictionary", 4: "RLE"}
_ENCODING_NAMES = {"NONE": 0, "PLAIN": 1, "VAR_BINARY": 2, "DICTIONARY": 3, "RLE": 4}


def metadata_text(metadata: Optional[Dict[str, Any]]) -> Dict[str, str]:
    """A manifest metadata map (values as byte lists, bytes or text) as text, by key."""
    out = {}
    for k, v in (metadata or {}).items():
        if isinstance(v, list):
            v = bytes(v)
        out[k] = v.decode("utf-8", errors="replace") if isinstance(v, (bytes, bytearray)) else str(v)
    return out


def _sorted_map(metadata: Optional[Dict[str, Any]]) -> Map:
    # pylance prints a HashMap (any order); sorted here, so the text is stable
    return Map(tuple(sorted(metadata_text(metadata).items())))


def primary_key_position(entry: Dict[str, Any]) -> Optional[int]:
    """The field's place in the unenforced primary key: ``None`` when not a key field, 0
    when it is one without a position."""
    if not entry.get("unenforced_primary_key"):
        return None
    return int(entry.get("unenforced_primary_key_position") or 0)


def clustering_key_position(entry: Dict[str, Any]) -> Optional[int]:
    """The field's place in the unenforced clustering key (its
    ``lance-schema:unenforced-clustering-key:position`` metadata), ``None`` when it has none."""
    value = metadata_text(entry.get("metadata")).get(CLUSTERING_KEY_POSITION)
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def children_of(fields: Sequence[Dict[str, Any]]) -> Dict[int, List[Dict[str, Any]]]:
    """Parent id → its child entries in schema order (-1: the top-level fields)."""
    out: Dict[int, List[Dict[str, Any]]] = {}
    for f in fields:
        out.setdefault(int(f.get("parent_id", -1)), []).append(f)
    return out


def field_value(entry: Dict[str, Any], children: Dict[int, List[Dict[str, Any]]]) -> Struct:
    """The ``Field { .. }`` of one manifest field entry and, nested, its children."""
    encoding = entry.get("encoding") or 0
    if isinstance(encoding, str):  # the enum's name in some JSON forms
        encoding = _ENCODING_NAMES.get(encoding.upper(), 0)
    dictionary = entry.get("dictionary")
    return struct(
        "Field",
        name=entry.get("name", ""),
        id=int(entry.get("id", 0)),
        parent_id=int(entry.get("parent_id", -1)),
        logical_type=TupleStruct("LogicalType", (entry.get("logical_type", ""),)),
        metadata=_sorted_map(entry.get("metadata")),
        encoding=option(Unit(_ENCODINGS[encoding]) if encoding in _ENCODINGS else None),
        nullable=bool(entry.get("nullable", False)),
        children=[field_value(c, children) for c in children.get(int(entry.get("id", 0)), [])],
        dictionary=NONE
        if not dictionary
        else some(
            struct(
                "Dictionary",
                offset=int(dictionary.get("offset", 0)),
                length=int(dictionary.get("length", 0)),
                values=NONE,
            )
        ),
        unenforced_primary_key_position=option(primary_key_position(entry)),
        unenforced_clustering_key_position=option(clustering_key_position(entry)),
    )


def schema_value(fields: Sequence[Dict[str, Any]], metadata: Optional[Dict[str, Any]]) -> Struct:
    """The ``Schema { fields, metadata }`` of a manifest's field list and schema metadata."""
    children = children_of(fields)
    return struct(
        "Schema", fields=[field_value(f, children) for f in children.get(-1, [])], metadata=_sorted_map(metadata)
    )
