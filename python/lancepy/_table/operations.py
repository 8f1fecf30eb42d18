"""Operations and transactions in pylance's shape (:class:`LanceOperation`, :class:`Transaction`,
:class:`LanceSchema`) and their conversion to and from the transaction messages the commit
protocol writes."""

from __future__ import annotations

import copy
import datetime as _dt
import uuid as _uuid
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple, Union

import pyarrow as pa

from lancepy._core import rustfmt as _rustfmt
from lancepy._core.args import _refuse
from lancepy._core.schema import _schema_of, lance_fields_for
from lancepy._table import commit as _commit
from lancepy._table.fragments import DataFile, FragmentMetadata
from lancepy.exceptions import CorruptFileError, InvalidArgumentError, VersionNotFoundError

if TYPE_CHECKING:  # pragma: no cover
    pass


class LanceOperation:
    """Operations for :meth:`LanceDataset.commit` (the shapes of pylance's)."""

    class BaseOperation:
        """An operation to commit."""

        def _to_body(self, store: Any, read_version: int) -> Any:  # pragma: no cover - abstract
            raise NotImplementedError

    @dataclass
    class Append(BaseOperation):
        """Adds fragments."""

        fragments: List[FragmentMetadata]

        def _to_body(self, store: Any, read_version: int) -> Any:
            return "Append", {"fragments": [_frag_json(f) for f in self.fragments]}

    @dataclass
    class Overwrite(BaseOperation):
        """Replaces all data (and the schema)."""

        new_schema: Union[pa.Schema, "LanceSchema"]
        fragments: List[FragmentMetadata]
        initial_bases: Optional[List[Any]] = None

        def _to_body(self, store: Any, read_version: int) -> Any:
            _refuse(initial_bases=self.initial_bases)
            if isinstance(self.new_schema, LanceSchema):
                lance = {"fields": self.new_schema._fields, "metadata": self.new_schema._metadata}
            else:
                lance = lance_fields_for(self.new_schema)
            frags = [_frag_json(f) for f in self.fragments]
            return "Overwrite", {"fragments": frags, "schema": lance["fields"], "schema_metadata": lance["metadata"]}

    @dataclass
    class Delete(BaseOperation):
        """Updates deletion files / removes fragments."""

        updated_fragments: List[FragmentMetadata]
        deleted_fragment_ids: List[int]
        predicate: str

        def _to_body(self, store: Any, read_version: int) -> Any:
            return "Delete", {
                "updated_fragments": [_frag_json(f) for f in self.updated_fragments],
                "deleted_fragment_ids": list(self.deleted_fragment_ids),
                "predicate": self.predicate,
            }

    @dataclass
    class Restore(BaseOperation):
        """Makes an old version the latest."""

        version: int

        def _to_body(self, store: Any, read_version: int) -> Any:
            return "Restore", {"version": self.version}


    @dataclass
    class Merge(BaseOperation):
        """Replaces the fragment list and the schema (new columns in new data files).

        `schema` is a :class:`LanceSchema` (field ids as given) or a ``pyarrow.Schema``:
        columns named as in the dataset keep their field ids, new ones get new ids."""

        fragments: List[FragmentMetadata]
        schema: Union["LanceSchema", pa.Schema]
        preserves_nullability: bool = False

        def __post_init__(self) -> None:
            if isinstance(self.schema, pa.Schema):
                warnings.warn(
                    "LanceOperation.Merge with a pyarrow.Schema is deprecated (as in pylance); pass a LanceSchema",
                    DeprecationWarning,
                    stacklevel=3,
                )

        def _to_body(self, store: Any, read_version: int) -> Any:
            fields, metadata = _schema_fields(self.schema, store, read_version)
            return "Merge", {
                "fragments": [_frag_json(f) for f in self.fragments],
                "schema": fields,
                "schema_metadata": metadata,
            }

    @dataclass
    class Project(BaseOperation):
        """Changes the schema only (drops, renames, reorders columns); data files are not
        touched. `schema` as for :class:`Merge`."""

        schema: Union["LanceSchema", pa.Schema]
        preserves_nullability: bool = False

        def _to_body(self, store: Any, read_version: int) -> Any:
            fields, _metadata = _schema_fields(self.schema, store, read_version)
            return "Project", {"schema": fields}

    @dataclass
    class UpdateMap:
        """Key updates of a string map: a ``None`` value deletes its key; `replace` drops
        every key not given."""

        updates: Dict[str, Optional[str]]
        replace: bool = False

        def _to_json(self) -> Dict[str, Any]:
            return _update_map(self.updates, self.replace)

    @dataclass
    class UpdateConfig(BaseOperation):
        """Updates the table config, table metadata, schema metadata and field metadata
        (field ids → :class:`UpdateMap`)."""

        config_updates: Optional["LanceOperation.UpdateMap"] = None
        table_metadata_updates: Optional["LanceOperation.UpdateMap"] = None
        schema_metadata_updates: Optional["LanceOperation.UpdateMap"] = None
        field_metadata_updates: Optional[Dict[int, "LanceOperation.UpdateMap"]] = None

        def _to_body(self, store: Any, read_version: int) -> Any:
            body: Dict[str, Any] = {}
            for name in ("config_updates", "table_metadata_updates", "schema_metadata_updates"):
                value = getattr(self, name)
                if value is not None:
                    body[name] = value._to_json()
            if self.field_metadata_updates:
                body["field_metadata_updates"] = {str(int(k)): v._to_json() for k, v in self.field_metadata_updates.items()}
            return "UpdateConfig", body

    @dataclass
    class Update(BaseOperation):
        """Removes and updates fragments and adds new ones (rows rewritten elsewhere)."""

        removed_fragment_ids: List[int] = field(default_factory=list)
        updated_fragments: List[FragmentMetadata] = field(default_factory=list)
        new_fragments: List[FragmentMetadata] = field(default_factory=list)
        fields_modified: List[int] = field(default_factory=list)
        fields_for_preserving_frag_bitmap: List[int] = field(default_factory=list)
        update_mode: str = ""
        updated_fragment_offsets: Optional[Dict[int, bytes]] = None

        def _to_body(self, store: Any, read_version: int) -> Any:
            _refuse(updated_fragment_offsets=self.updated_fragment_offsets)
            modes = {"": 0, "rewrite_rows": 0, "rewrite_columns": 1}
            if self.update_mode not in modes:
                raise InvalidArgumentError(f"update_mode must be 'rewrite_rows' or 'rewrite_columns', got {self.update_mode!r}")
            return "Update", {
                "removed_fragment_ids": [int(i) for i in self.removed_fragment_ids],
                "updated_fragments": [_frag_json(f) for f in self.updated_fragments],
                "new_fragments": [_frag_json(f) for f in self.new_fragments],
                "fields_modified": [int(i) for i in self.fields_modified],
                "fields_for_preserving_frag_bitmap": [int(i) for i in self.fields_for_preserving_frag_bitmap],
                "update_mode": modes[self.update_mode],
            }

    @dataclass
    class RewriteGroup:
        """Old fragments and the new fragments holding the same rows."""

        old_fragments: List[FragmentMetadata]
        new_fragments: List[FragmentMetadata]

    @dataclass
    class Rewrite(BaseOperation):
        """Replaces groups of fragments by new ones with the same rows (compaction).
        Remapping indices (`rewritten_indices`) is not supported."""

        groups: List["LanceOperation.RewriteGroup"]
        rewritten_indices: List[Any]

        def _to_body(self, store: Any, read_version: int) -> Any:
            _refuse(rewritten_indices=list(self.rewritten_indices) or None)
            groups = [
                {"old_fragments": [_frag_json(f) for f in g.old_fragments], "new_fragments": [_frag_json(f) for f in g.new_fragments]}
                for g in self.groups
            ]
            return "Rewrite", {
                "old_fragments": [f for g in groups for f in g["old_fragments"]],
                "new_fragments": [f for g in groups for f in g["new_fragments"]],
                "groups": groups,
            }

    @dataclass
    class DataReplacementGroup:
        """A new data file for fragment `fragment_id`, replacing the file with the same
        field ids."""

        fragment_id: int
        new_file: DataFile

    @dataclass
    class DataReplacement(BaseOperation):
        """Swaps data files of fragments (same fields, same rows)."""

        replacements: List["LanceOperation.DataReplacementGroup"]

        def _to_body(self, store: Any, read_version: int) -> Any:
            _check_replacement_rows(store, read_version, self.replacements)
            return "DataReplacement", {
                "replacements": [
                    {"fragment_id": int(r.fragment_id), "new_file": r.new_file._to_dict()} for r in self.replacements
                ]
            }


def _check_replacement_rows(store: Any, read_version: int, groups: List["LanceOperation.DataReplacementGroup"]) -> None:
    """Each new file of a ``DataReplacement`` holds as many rows as the fragment it replaces
    columns of (read from the files' footers, in parallel). pylance commits a file of another
    length, and then every read of the fragment fails; lancepy refuses it before committing.
    Files under other base paths and legacy (v1) files are not checked; a fragment the read
    version lacks is the commit's to report."""
    from concurrent.futures import ThreadPoolExecutor

    from lancepy.file import LanceFileReader

    frags = _commit.load_manifest(store, read_version).fragments_with_ids({int(g.fragment_id) for g in groups})
    checks = [g for g in groups
              if int(g.fragment_id) in frags and g.new_file.base_id is None and g.new_file.file_major_version >= 2]
    if not checks:
        return

    def rows(g: "LanceOperation.DataReplacementGroup") -> int:
        reader = LanceFileReader(store.child_uri(f"data/{g.new_file.path}"), storage_options=store.storage_options)
        return int(reader.num_rows())

    with ThreadPoolExecutor(max_workers=min(16, len(checks))) as pool:
        counts = list(pool.map(rows, checks))
    for g, n in zip(checks, counts):
        want = frags[int(g.fragment_id)].physical_rows
        if n != want:
            raise InvalidArgumentError(
                f"DataReplacement: {g.new_file.path} holds {n} rows, but fragment {int(g.fragment_id)} has {want} "
                "(deleted rows included): a replacing file has a value for every row of its fragment"
            )


@dataclass
class Transaction:
    """An operation and the version it was planned against, to commit later with
    :meth:`LanceDataset.commit` (what ``write_fragments(..., return_transaction=True)``
    returns). `uuid` names the transaction file; `transaction_properties` are stored in it."""

    read_version: int
    operation: "LanceOperation.BaseOperation"
    uuid: str = field(default_factory=lambda: str(_uuid.uuid4()))
    transaction_properties: Optional[Dict[str, str]] = field(default_factory=dict)


@dataclass
class IndexSegmentDescription:
    """One segment (manifest entry) of an index (:attr:`IndexDescription.segments`), pylance's
    fields; `fragment_ids` is a set (pylance's is its own ``Bitmap`` of the same ids)."""

    uuid: str
    dataset_version_at_last_update: int
    fragment_ids: Set[int]
    index_version: int
    created_at: Optional[_dt.datetime]
    size_bytes: Optional[int]
    base_id: Optional[int]
    covering_fields: List[int]


@dataclass
class IndexDescription:
    """One index of a dataset version (:meth:`LanceDataset.describe_indices`), pylance's fields."""

    name: str
    type_url: str
    num_rows_indexed: int
    fields: List[int]
    field_names: List[str]
    total_size_bytes: int
    index_type: str
    segments: List[IndexSegmentDescription]
    details: Dict[str, Any]
    """The index's parameters as pylance reports them: ``{}`` for BTree, Bitmap and LabelList;
    an INVERTED index's analyzer; a vector index's metric, compression and runtime hints."""

    @property
    def num_segments(self) -> int:
        return len(self.segments)


class LanceField:
    """One field of a :class:`LanceSchema`: its name, Lance field id and children (pylance's
    ``LanceField``; the accessors are methods, as there). Not created directly: see
    :meth:`LanceSchema.fields` and :meth:`LanceSchema.field`."""

    def __init__(self, entry: Dict[str, Any], children: List["LanceField"], subtree: List[Dict[str, Any]]) -> None:
        self._entry = entry
        self._children = children
        self._subtree = subtree  # this entry, then its descendants (for to_arrow)

    def name(self) -> str:
        """The field's own name (not its dotted path)."""
        return str(self._entry.get("name", ""))

    def id(self) -> int:
        """The Lance field id."""
        return int(self._entry.get("id", 0))

    def children(self) -> List["LanceField"]:
        """The child fields (of a struct, list or map), in schema order."""
        return list(self._children)

    @property
    def metadata(self) -> Dict[str, str]:
        """The field's metadata, as text."""
        return _rustfmt.metadata_text(self._entry.get("metadata"))

    def to_arrow(self) -> pa.Field:
        """The field as a ``pyarrow.Field``."""
        top = dict(self._subtree[0], parent_id=-1)
        return _schema_of([top] + self._subtree[1:], {}).field(0)

    def is_unenforced_primary_key(self) -> bool:
        """Whether the field belongs to the schema's unenforced primary key."""
        return _rustfmt.primary_key_position(self._entry) is not None

    def unenforced_primary_key_position(self) -> Optional[int]:
        """The field's explicit position in the primary key (from 1); ``None`` when it has
        none or is not a key field."""
        return _rustfmt.primary_key_position(self._entry) or None

    def is_unenforced_clustering_key(self) -> bool:
        """Whether the field belongs to the unenforced clustering key (it has a position there)."""
        return _rustfmt.clustering_key_position(self._entry) is not None

    def unenforced_clustering_key_position(self) -> Optional[int]:
        """The field's position in the clustering key, ``None`` when it is not a key field."""
        return _rustfmt.clustering_key_position(self._entry)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LanceField) and self._subtree == other._subtree

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return _rustfmt.render(_rustfmt.field_value(self._entry, _rustfmt.children_of(self._subtree[1:])))


def _split_field_path(path: str) -> Optional[List[str]]:
    """``a.b`` → ``["a", "b"]``; a part in backticks may hold dots (a doubled backtick is a
    backtick). ``None`` for a path that is not well formed (an empty part, a backtick in an
    unquoted part, an open quote)."""
    parts: List[str] = []
    i, n = 0, len(path)
    while True:
        if i < n and path[i] == "`":
            j, buf = i + 1, []
            while True:
                k = path.find("`", j)
                if k < 0:
                    return None
                buf.append(path[j:k])
                if k + 1 < n and path[k + 1] == "`":
                    buf.append("`")
                    j = k + 2
                    continue
                break
            parts.append("".join(buf))
            i = k + 1
            if i < n and path[i] != ".":
                return None
        else:
            k = path.find(".", i)
            part = path[i:] if k < 0 else path[i:k]
            if not part or "`" in part:
                return None
            parts.append(part)
            i = n if k < 0 else k
        if i >= n:
            return parts
        i += 1  # the dot
        if i >= n:
            return None


class LanceSchema:
    """A dataset schema whose every field carries a Lance field id (pylance's ``LanceSchema``).

    The ids follow a field through a dataset's versions; they are assigned depth first when
    a schema is first written and are particular to each dataset, so the schema of one
    dataset does not describe another. Get one from ``ds.lance_schema`` or
    :meth:`from_pyarrow`; :class:`LanceOperation.Project` and :class:`LanceOperation.Merge`
    take one. ``repr`` prints it as pylance does.
    """

    def __init__(self, fields: List[Dict[str, Any]], metadata: Optional[Dict[str, Any]] = None) -> None:
        self._fields = copy.deepcopy(fields)
        self._metadata = dict(metadata or {})

    @staticmethod
    def from_pyarrow(schema: pa.Schema) -> "LanceSchema":
        """A Lance schema for an Arrow schema, field ids assigned depth first from 0 (a
        dataset may have other ids for the same columns).

        Raises :class:`~lancepy.exceptions.InvalidArgumentError` for something other than a
        ``pyarrow.Schema``, a top-level name with a dot, or an invalid primary key.
        """
        if not isinstance(schema, pa.Schema):
            raise InvalidArgumentError(f"expected a pyarrow.Schema, got {type(schema).__name__}")
        dotted = [f.name for f in schema if "." in f.name]
        if dotted:
            raise InvalidArgumentError(f"top-level field {dotted[0]!r} cannot contain '.' (a struct field, perhaps?)")
        lance = lance_fields_for(schema)
        return LanceSchema(lance["fields"], lance["metadata"])

    def _tree(self) -> List[LanceField]:
        children = _rustfmt.children_of(self._fields)

        def build(entry: Dict[str, Any]) -> Tuple[LanceField, List[Dict[str, Any]]]:
            kids, subtree = [], [entry]
            for c in children.get(int(entry.get("id", 0)), []):
                kid, sub = build(c)
                kids.append(kid)
                subtree.extend(sub)
            return LanceField(entry, kids, subtree), subtree

        return [build(e)[0] for e in children.get(-1, [])]

    def fields(self) -> List[LanceField]:
        """The top-level fields, in schema order."""
        return self._tree()

    def _walk(self) -> List[LanceField]:
        """Every field, depth first."""
        out: List[LanceField] = []
        stack = list(reversed(self._tree()))
        while stack:
            f = stack.pop()
            out.append(f)
            stack.extend(reversed(f.children()))
        return out

    def _lookup(self, name: str, case_insensitive: bool) -> Optional[LanceField]:
        if not isinstance(name, str):
            raise InvalidArgumentError(f"a field name must be a str, got {type(name).__name__}")
        parts = _split_field_path(name)
        if not parts:
            return None
        level = self._tree()
        found: Optional[LanceField] = None
        for part in parts:
            found = next((f for f in level if f.name() == part), None)
            if found is None and case_insensitive:
                found = next((f for f in level if f.name().lower() == part.lower()), None)
            if found is None:
                return None
            level = found.children()
        return found

    def field(self, name: str) -> Optional[LanceField]:
        """The field at `name`, a dotted path for a nested field (``"parent.child"``; a name
        holding dots goes in backticks: ``"parent.`a.b`"``), or ``None``."""
        return self._lookup(name, False)

    def field_case_insensitive(self, name: str) -> Optional[LanceField]:
        """As :meth:`field`, each part matched exactly first, then ignoring case; the field
        keeps its own spelling."""
        return self._lookup(name, True)

    def unenforced_primary_key(self) -> List[LanceField]:
        """The fields of the unenforced primary key in key order: those with a position, by
        position, then the others in schema order (depth first)."""
        keyed = [f for f in self._walk() if f.is_unenforced_primary_key()]
        placed = sorted(
            (f for f in keyed if f.unenforced_primary_key_position()), key=lambda f: f.unenforced_primary_key_position() or 0
        )
        return placed + [f for f in keyed if not f.unenforced_primary_key_position()]

    def unenforced_clustering_key(self) -> List[LanceField]:
        """The fields of the unenforced clustering key, by position."""
        keyed = [f for f in self._walk() if f.is_unenforced_clustering_key()]
        return sorted(keyed, key=lambda f: f.unenforced_clustering_key_position() or 0)

    def to_pyarrow(self) -> pa.Schema:
        """The Arrow schema."""
        return _schema_of(self._fields, self._metadata)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LanceSchema) and (self._fields, self._metadata) == (other._fields, other._metadata)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return _rustfmt.render(_rustfmt.schema_value(self._fields, self._metadata))


def _update_map(values: Dict[str, Optional[str]], replace: bool) -> Dict[str, Any]:
    """The JSON form of a transaction ``UpdateMap``."""
    if not isinstance(values, dict):
        raise InvalidArgumentError(f"expected a dict of str to str or None, got {type(values).__name__}")
    entries = []
    for k, v in values.items():
        if not isinstance(k, str) or not (v is None or isinstance(v, str)):
            raise InvalidArgumentError(f"keys and values must be strings (or None to delete), got {k!r}: {v!r}")
        entries.append({"key": k, "value": v})
    return {"update_entries": entries, "replace": bool(replace)}


def _schema_fields(schema: Any, store: Any, read_version: int) -> Any:
    """Lance fields and schema metadata for `schema` (a :class:`LanceSchema` as is; a
    ``pyarrow.Schema`` keeps the field ids of same-named, same-typed top-level columns of
    version `read_version` and numbers new ones after its largest id)."""
    if isinstance(schema, LanceSchema):
        return copy.deepcopy(schema._fields), dict(schema._metadata)
    if not isinstance(schema, pa.Schema):
        raise InvalidArgumentError(f"expected a LanceSchema or pyarrow.Schema, got {type(schema).__name__}")
    base = _commit.load_manifest(store, read_version) if read_version else None
    base_fields = base.field_entries if base is not None else []
    base_md = base.schema_metadata if base is not None else {}
    base_schema = _schema_of(base_fields, base_md) if base_fields else pa.schema([])
    next_id = (base.max_field_id if base is not None else -1) + 1
    children: Dict[int, List[Dict[str, Any]]] = {}
    for f in base_fields:
        children.setdefault(f.get("parent_id", -1), []).append(f)

    def subtree(f: Dict[str, Any]) -> List[Dict[str, Any]]:
        out = [copy.deepcopy(f)]
        for c in children.get(f.get("id", 0), []):
            out.extend(subtree(c))
        return out

    top = {f.get("name"): f for f in children.get(-1, [])}
    fields: List[Dict[str, Any]] = []
    for af in schema:
        old = top.get(af.name)
        if old is not None and base_schema.field(af.name).type == af.type:
            entries = subtree(old)
            entries[0]["nullable"] = af.nullable
        else:
            entries = lance_fields_for(pa.schema([af]), next_id)["fields"]
            next_id = max([next_id] + [e.get("id", 0) + 1 for e in entries])
        fields.extend(entries)
    metadata = lance_fields_for(pa.schema([], metadata=schema.metadata))["metadata"] if schema.metadata else base_md
    return fields, metadata


def _frag_json(f: Any) -> Dict[str, Any]:
    if isinstance(f, dict):  # either library's to_json() / a manifest entry
        f = FragmentMetadata.from_json(copy.deepcopy(f))
    if not isinstance(f, FragmentMetadata):
        raise InvalidArgumentError(f"expected FragmentMetadata, got {type(f).__name__}")
    if f.physical_rows is None:
        raise InvalidArgumentError(
            f"fragment {f.id} has no row count (physical_rows is null: it was recorded before its rows were written)"
        )
    return f._manifest_json()


def _transaction_from_json(txn: Dict[str, Any]) -> "Transaction":
    """A :class:`Transaction` from the JSON form of a ``lance.table.Transaction``."""
    name = _commit.operation_name(txn)
    if name is None:
        raise CorruptFileError("a transaction without a known operation")
    body = next(iter(txn["operation"].values())) or {}
    frags = lambda key: [FragmentMetadata.from_json(copy.deepcopy(f)) for f in body.get(key) or []]  # noqa: E731
    ids = lambda key: [int(i) for i in body.get(key) or []]  # noqa: E731

    def schema() -> "LanceSchema":
        return LanceSchema(body.get("schema") or [], body.get("schema_metadata") or {})

    def update_map(value: Optional[Dict[str, Any]]) -> Optional["LanceOperation.UpdateMap"]:
        if value is None:
            return None
        entries = {e["key"]: e.get("value") for e in value.get("update_entries") or []}
        return LanceOperation.UpdateMap(entries, bool(value.get("replace", False)))

    op: LanceOperation.BaseOperation
    if name == "Append":
        op = LanceOperation.Append(frags("fragments"))
    elif name == "Overwrite":
        op = LanceOperation.Overwrite(schema(), frags("fragments"))
    elif name == "Delete":
        op = LanceOperation.Delete(frags("updated_fragments"), ids("deleted_fragment_ids"), body.get("predicate") or "")
    elif name == "Restore":
        op = LanceOperation.Restore(int(body.get("version", 0)))
    elif name == "Merge":
        op = LanceOperation.Merge(frags("fragments"), schema())
    elif name == "Project":
        op = LanceOperation.Project(schema())
    elif name == "Update":
        mode = body.get("update_mode") or 0
        op = LanceOperation.Update(
            removed_fragment_ids=ids("removed_fragment_ids"),
            updated_fragments=frags("updated_fragments"),
            new_fragments=frags("new_fragments"),
            fields_modified=ids("fields_modified"),
            fields_for_preserving_frag_bitmap=ids("fields_for_preserving_frag_bitmap"),
            update_mode="rewrite_columns" if mode in (1, "REWRITE_COLUMNS") else "rewrite_rows",
        )
    elif name == "Rewrite":
        groups = [
            LanceOperation.RewriteGroup(
                [FragmentMetadata.from_json(copy.deepcopy(f)) for f in g.get("old_fragments") or []],
                [FragmentMetadata.from_json(copy.deepcopy(f)) for f in g.get("new_fragments") or []],
            )
            for g in body.get("groups") or []
        ]
        if not groups and (body.get("old_fragments") or body.get("new_fragments")):  # written before groups existed
            groups = [LanceOperation.RewriteGroup(frags("old_fragments"), frags("new_fragments"))]
        op = LanceOperation.Rewrite(groups, list(body.get("rewritten_indices") or []))
    elif name == "UpdateConfig":
        fields = body.get("field_metadata_updates") or {}
        op = LanceOperation.UpdateConfig(
            config_updates=update_map(body.get("config_updates")),
            table_metadata_updates=update_map(body.get("table_metadata_updates")),
            schema_metadata_updates=update_map(body.get("schema_metadata_updates")),
            field_metadata_updates={int(k): update_map(v) for k, v in fields.items()} or None,
        )
    elif name == "DataReplacement":
        op = LanceOperation.DataReplacement(
            [
                LanceOperation.DataReplacementGroup(int(r.get("fragment_id", 0)), DataFile._from_dict(r["new_file"]))
                for r in body.get("replacements") or []
            ]
        )
    else:  # e.g. ReserveFragments, CreateIndex: pylance also hands these over as a bare BaseOperation
        op = LanceOperation.BaseOperation()
    return Transaction(
        int(txn.get("read_version", 0)), op, str(txn.get("uuid", "")), dict(txn.get("transaction_properties") or {})
    )


def read_transaction(store: Any, version: int) -> Optional[Transaction]:
    """The transaction that made version `version` of the dataset in `store` (``None`` if it
    carries no readable one); see :meth:`LanceDataset.read_transaction`."""
    if not isinstance(version, int) or isinstance(version, bool):
        raise InvalidArgumentError(f"version must be an int, got {version!r}")
    versions, _ = _commit.list_versions(store)
    if version not in versions:
        raise VersionNotFoundError(f"{store.uri} has no version {version}")
    txn = _commit.load_transaction(store, version)
    return None if txn is None else _transaction_from_json(txn)


def recent_transactions(store: Any, version: int, count: int) -> List[Optional[Transaction]]:
    """The transactions of the `count` versions up to `version`, newest first (``None`` for a
    version without a readable one); see :meth:`LanceDataset.get_transactions`."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise InvalidArgumentError(f"recent_transactions must be a non-negative int, got {count!r}")
    versions, _ = _commit.list_versions(store)
    out: List[Optional[Transaction]] = []
    for v in [v for v in sorted(versions, reverse=True) if v <= version][:count]:
        txn = _commit.load_transaction(store, v)
        out.append(None if txn is None else _transaction_from_json(txn))
    return out
