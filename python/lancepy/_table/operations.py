"""Operations and transactions in pylance's shape (:class:`LanceOperation`, :class:`Transaction`,
:class:`LanceSchema`) and their conversion to and from the transaction messages the commit
protocol writes."""

from __future__ import annotations

import copy
import uuid as _uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

import pyarrow as pa

from lancepy._core.args import _refuse
from lancepy._core.schema import _schema_of, lance_fields_for
from lancepy._table import commit as _commit
from lancepy._table.fragments import DataFile, FragmentMetadata
from lancepy.exceptions import CorruptFileError, InvalidArgumentError

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
            return "DataReplacement", {
                "replacements": [
                    {"fragment_id": int(r.fragment_id), "new_file": r.new_file._to_dict()} for r in self.replacements
                ]
            }


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
class IndexDescription:
    """One index of a dataset version (:meth:`LanceDataset.describe_indices`), pylance's fields."""

    name: str
    type_url: str
    num_rows_indexed: int
    fields: List[int]
    field_names: List[str]
    total_size_bytes: int
    index_type: str
    segments: List[Dict[str, Any]]
    """One dict per segment: uuid, dataset_version, fragment_ids, size_bytes."""

    @property
    def num_segments(self) -> int:
        return len(self.segments)


class LanceSchema:
    """A dataset schema with its Lance field ids (``ds.lance_schema``), for
    :class:`LanceOperation.Project` and :class:`LanceOperation.Merge`."""

    def __init__(self, fields: List[Dict[str, Any]], metadata: Optional[Dict[str, Any]] = None) -> None:
        self._fields = copy.deepcopy(fields)
        self._metadata = dict(metadata or {})

    def to_pyarrow(self) -> pa.Schema:
        """The Arrow schema."""
        return _schema_of(self._fields, self._metadata)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LanceSchema) and (self._fields, self._metadata) == (other._fields, other._metadata)

    def __repr__(self) -> str:
        return f"LanceSchema({self.to_pyarrow()})"


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
    base = _commit.load_manifest(store, read_version).manifest if read_version else {}
    base_fields = base.get("fields", [])
    base_md = base.get("schema_metadata", {})
    base_schema = _schema_of(base_fields, base_md) if base_fields else pa.schema([])
    next_id = max([f.get("id", 0) for f in base_fields] + [-1]) + 1
    for frag in base.get("fragments", []):
        for df in frag.get("files", []):
            next_id = max([next_id] + [i + 1 for i in df.get("fields", [])])
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
    if isinstance(f, FragmentMetadata):
        return f._manifest_json()
    if isinstance(f, dict):  # either library's to_json() / a manifest entry
        return FragmentMetadata.from_json(copy.deepcopy(f))._manifest_json()
    raise InvalidArgumentError(f"expected FragmentMetadata, got {type(f).__name__}")


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
