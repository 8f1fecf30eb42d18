"""Versions, transactions and the commit protocol.

Everything here is policy; every byte is encoded by the native module.

**Reading.** A dataset's versions are the manifests in ``_versions/``; the latest is found by
listing (``latest_version_hint.json`` is written for other tools but never trusted). Both
manifest naming schemes are read: V1 ``{version}.manifest`` and V2
``{u64::MAX - version:020}.manifest``. Feature flags a reader or writer does not know make it
refuse the dataset with :class:`~lancepy.exceptions.UnsupportedError`.

**Committing** version N+1 from read version R (FORMAT.md §4.7, seeds' transaction spec):

1. the data and deletion files are already written (invisible until a manifest lists them);
2. the transaction is written to ``_transactions/{R}-{uuid}.txn``;
3. the transactions of versions R+1..N are checked against ours (:func:`conflicts`); an
   incompatible one aborts with :class:`~lancepy.exceptions.CommitConflictError` after our
   files are removed again; compatible ones are rebased over: the new manifest is built from
   the latest manifest, not from R's;
4. the manifest (with the transaction inline) is published with put-if-not-exists under
   version N+1's name, inside the caller's commit lock if one is given (pylance's
   ``commit_lock``); if another writer took that name (or the lock says so), go back to 3;
5. ``latest_version_hint.json`` is updated (best effort).

Versions removed by a cleanup since R are not checked in 3 (as pylance: only the versions
that still exist are). A *detached* commit (pylance's ``detached=True``) skips 3 and 5: it
applies the transaction to R alone and publishes ``_versions/d{V}.manifest``, V a random
u64 with the top bit set, outside the line of versions.
"""

from __future__ import annotations

import datetime
import itertools
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple, TypedDict, Union

from lancepy import _lancepy
from lancepy._table import lineage
from lancepy._table import rewrites as _rewrites
from lancepy._table.rewrites import uuid_text
from lancepy._table.cleanup import cleanup_old_versions
from lancepy._table.manifest import (  # noqa: F401 - re-exported: the table layer's entry points
    DETACHED_VERSION_MASK,
    is_detached,
    FLAG_BASE_PATHS,
    FLAG_DELETION_FILES,
    FLAG_DISABLE_TRANSACTION_FILE,
    FLAG_MIXED_DATA_FILE_VERSIONS,
    FLAG_STABLE_ROW_IDS,
    FLAG_TABLE_CONFIG,
    FLAG_USE_V2_FORMAT_DEPRECATED,
    HINT_FILE,
    KNOWN_READER_FLAGS,
    KNOWN_WRITER_FLAGS,
    TRANSACTIONS_DIR,
    VERSIONS_DIR,
    WRITER_LIBRARY,
    LoadedManifest,
    _file_version,
    _fragment_files,
    LEGACY_FILE_VERSION,
    _infer_storage_version,
    infer_file_version,
    check_feature_flags,
    latest_version,
    list_versions,
    load_manifest,
    load_transaction,
    manifest_name,
    write_hint,
)
from lancepy._table.snapshot import DatasetView
from lancepy._table.transaction import Incompatible, _body, conflicts, new_transaction, operation_name  # noqa: F401
from lancepy.exceptions import (
    CommitConflictError,
    DatasetNotFoundError,
    InvalidArgumentError,
    LanceIOError,
    NotSupportedOnStorageError,
    UnsupportedError,
)

__all__ = [
    "FLAG_DELETION_FILES",
    "FLAG_STABLE_ROW_IDS",
    "FLAG_TABLE_CONFIG",
    "FLAG_BASE_PATHS",
    "LoadedManifest",
    "list_versions",
    "latest_version",
    "load_manifest",
    "load_transaction",
    "check_feature_flags",
    "new_transaction",
    "operation_name",
    "conflicts",
    "build_manifest",
    "commit_transaction",
]


def _has_deletions(frag: Dict[str, Any]) -> bool:
    d = frag.get("deletion_file")
    return bool(d) and (d.get("num_deleted_rows", 0) > 0 or d.get("id", 0) != 0)


def _rewrite_indices(
    section: bytes, groups: List[Dict[str, Any]], removed: set, rewritten: List[Dict[str, Any]], store: Any
) -> Optional[bytes]:
    """The index section after a Rewrite (compaction): indices named in `rewritten` (old
    uuid → new uuid, whose files were remapped before the commit) now cover the new fragments
    of every group whose old fragments they all covered; every other index just stops
    claiming the rewritten fragments."""
    before = {e["uuid"]: set(e["fragment_ids"]) for e in _lancepy.index_section_entries(section)}
    section = _lancepy.prune_index_section(section, sorted(removed))
    if not rewritten:
        return section
    by_old = {uuid_text(r.get("old_id") or {}): r for r in rewritten}
    after = {e["uuid"]: set(e["fragment_ids"]) for e in _lancepy.index_section_entries(section)}
    entries = json.loads(_lancepy.index_section_to_json(section))["indices"]
    for e in entries:
        u = uuid_text(e.get("uuid") or {})
        r = by_old.get(u)
        if r is None:
            continue
        ids = set(after.get(u, set()))
        for g in groups:
            olds = {f.get("id", 0) for f in g.get("old_fragments", [])}
            if olds and olds <= before.get(u, set()):
                ids |= {f.get("id", 0) for f in g.get("new_fragments", [])}
        e["fragment_bitmap"] = list(_lancepy.fragment_bitmap(sorted(ids)))
        e["uuid"] = r["new_id"]
        if r.get("new_index_details"):
            e["index_details"] = r["new_index_details"]
        if r.get("new_index_version") is not None:
            e["index_version"] = r["new_index_version"]
        new_dir = f"_indices/{uuid_text(r['new_id'])}"
        if store is not None and e.get("files"):
            listed = store.list(new_dir)
            e["files"] = [{"path": name.rsplit("/", 1)[-1], "size_bytes": size} for name, size, _ in sorted(listed)]
    return _lancepy.index_section_from_json(json.dumps({"indices": entries}))


def _assign_ids(fragments: List[Dict[str, Any]], next_id: int) -> int:
    for f in fragments:
        f["id"] = next_id
        next_id += 1
    return next_id


def _max_fragment_id(manifest: Optional[Dict[str, Any]]) -> int:
    """Largest fragment id ever used (−1 if none)."""
    if manifest is None:
        return -1
    ids = [f.get("id", 0) for f in manifest.get("fragments", [])]
    recorded = manifest.get("max_fragment_id")
    cands = ids + ([recorded] if recorded is not None else [])
    return max(cands) if cands else -1


@dataclass
class BuiltManifest:
    """A manifest ready to encode: `manifest` whole, or (a delta) `manifest` without its
    fragments, which are `base`'s less `removed`, with `replaced` and `appended` (see
    :meth:`encode`); with `project` (a Project commit), every fragment is then projected onto
    those field ids natively (dropped fields tombstoned, dead data files dropped)."""

    manifest: Dict[str, Any]
    index_section: Optional[bytes]
    base: Any = None
    appended: Optional[List[Dict[str, Any]]] = None
    removed: Optional[List[int]] = None
    replaced: Optional[List[Dict[str, Any]]] = None
    project: Optional[List[int]] = None

    def encode(self, txn_bytes: Optional[bytes], store: Any = None) -> bytes:
        """The manifest file's bytes (with `store`, a legacy dataset's dictionaries too)."""
        if self.base is None:
            return _lancepy.write_manifest(json.dumps(self.manifest), txn_bytes, self.index_section, store,
                                           project=self.project)
        return _lancepy.write_manifest(json.dumps(self.manifest), txn_bytes, self.index_section, store,
                                       base=self.base, appended=json.dumps(self.appended or []),
                                       removed=list(self.removed or []), replaced=json.dumps(self.replaced or []),
                                       project=self.project)


#: Operations built by :func:`_build_delta`: they keep most fragments as they are, or (Project)
#: change every one the same way, natively.
_DELTA_OPERATIONS = ("Append", "Delete", "Update", "Rewrite", "DataReplacement", "Project")
#: Operations that change no fragment, or replace them all: :func:`build_manifest` reads only
#: the base manifest's other fields (its fragments stay native).
_HEADER_OPERATIONS = (
    "Overwrite", "Merge", "Restore", "UpdateConfig", "UpdateBases", "ReserveFragments", "CreateIndex",
)
#: Of those, the ones whose fragments all come from the transaction (Merge: every fragment
#: with its new files) or from another version (Restore).
_REPLACING_OPERATIONS = ("Overwrite", "Merge", "Restore")


def _keeps_fragments(base: Optional[LoadedManifest], name: str, body: Dict[str, Any],
                     data_storage_version: Optional[str]) -> bool:
    """Whether a commit of `name` onto `base` is built without decoding `base`'s fragments
    (:func:`_build_delta`): an append, delete, update, rewrite, data replacement or
    projection (dropped columns) of a manifest that records its (non-legacy) data storage
    version, so that nothing after the operation needs the existing fragments one by one; not
    an update whose rewritten columns prune the indices (that looks at every fragment's
    files)."""
    if name not in _DELTA_OPERATIONS or base is None:
        return False
    if name == "Update" and body.get("fields_modified") and base.index_section is not None:
        return False
    return _records_version(base, data_storage_version)


def _records_version(base: LoadedManifest, data_storage_version: Optional[str]) -> bool:
    """Whether `base` records its (non-legacy) data storage version and the commit keeps it
    non-legacy: then no commit needs `base`'s fragments one by one to know the dataset's
    file version."""
    recorded = base.native.data_format_version
    return bool(recorded) and recorded != LEGACY_FILE_VERSION and data_storage_version != LEGACY_FILE_VERSION


def _next_fragment_id(base: LoadedManifest, m: Dict[str, Any]) -> int:
    """The id after the largest `base` ever used (its fragments' ids, natively, and the
    recorded ``max_fragment_id`` of its fields `m`)."""
    recorded = m.get("max_fragment_id")
    return max([*base.native.fragment_ids, *([recorded] if recorded is not None else [])], default=-1) + 1


def _build_delta(base: LoadedManifest, name: str, body: Dict[str, Any], version: int, transaction_file: str,
                 data_storage_version: Optional[str], store: Any = None) -> BuiltManifest:
    """:func:`build_manifest` of an Append, Delete, Update, Rewrite, DataReplacement or Project (see
    :func:`_keeps_fragments`): the base manifest's fields but its fragments (which stay
    native), the fragments the operation removes, replaces and adds, new ones numbered after
    the largest id ever used, and what depends on every fragment (feature flags) from a
    native summary of the kept ones and the changed ones."""
    m: Dict[str, Any] = json.loads(base.native.json_without_fragments())
    m.pop("fragments", None)
    ids = base.native.fragment_ids
    next_id = _next_fragment_id(base, m)
    index_section = base.index_section
    project: Optional[List[int]] = None
    if name == "Append":
        removed: List[int] = []
        replaced: List[Dict[str, Any]] = []
        new = body.get("fragments", [])
    elif name == "Rewrite":
        # (the new fragments join the others in id order, as the generic path sorts them)
        groups = _rewrite_groups(body)
        gone, new, next_id = _rewritten(groups, next_id)
        removed, replaced = sorted(gone), []
        if index_section is not None and gone:
            index_section = _rewrite_indices(index_section, groups, gone, body.get("rewritten_indices") or [], store)
    elif name == "DataReplacement":
        # (only the fragments whose files are replaced cross as JSON)
        wanted = sorted({int(r.get("fragment_id", 0)) for r in body.get("replacements", [])})
        by_id = {f.get("id", 0): f for f in json.loads(base.native.fragments_json(wanted))}
        rewritten = _replace_columns(m, by_id, body, version)
        if index_section is not None:
            index_section = _rewrites.withdraw_coverage(index_section, rewritten)
        removed, replaced, new = [], [by_id[i] for i in wanted], []
    elif name == "Project":
        # (every fragment changes: projected natively when encoded, see BuiltManifest)
        m["fields"] = body.get("schema", [])
        project = sorted({f.get("id", 0) for f in m["fields"]})
        removed, replaced, new = [], [], []
        if index_section is not None:
            index_section = _lancepy.filter_index_section(index_section, project)
    else:
        present = set(ids)
        removed = sorted(set(body.get("deleted_fragment_ids" if name == "Delete" else "removed_fragment_ids", [])))
        # (a replacement of a fragment the base lacks, or one also removed, is dropped)
        replaced = [f for f in body.get("updated_fragments", []) if f["id"] in present and f["id"] not in removed]
        new = body.get("new_fragments", []) if name == "Update" else []
    if name != "Rewrite":  # (a Rewrite's new fragments are numbered by _rewritten)
        next_id = _assign_ids(new, next_id)
    if name == "Update":
        sources = sorted(set(removed) | {f["id"] for f in replaced})  # (where rows that keep their ids were)
        lineage.complete_updated(m, new, version, lambda: json.loads(base.native.fragments_json(sources)))
    count, deletions, versions = base.native.fragment_summary(removed + [f["id"] for f in replaced])
    changed = sorted(replaced, key=lambda f: f["id"]) + new
    summary = _FragmentSummary(count + len(changed), deletions or any(_has_deletions(f) for f in changed),
                               set(versions) | _file_versions(changed))
    _finish_manifest(m, changed, summary, next_id, version, transaction_file, data_storage_version)
    return BuiltManifest(m, index_section, base=base.native, appended=new, removed=removed, replaced=replaced,
                         project=project)


def _replace_columns(m: Dict[str, Any], by_id: Dict[int, Dict[str, Any]], body: Dict[str, Any], version: int) -> _rewrites.Rewrites:
    """A ``DataReplacement`` applied to the fragments `by_id` of manifest `m` (in place; see
    :func:`rewrites.replace_data_files`); on a stable-row-id dataset their rows are last
    updated in `version`, as pylance records them. Returns the fields rewritten."""
    rewritten = _rewrites.replace_data_files(by_id, body, m.get("fields", []))
    if m.get("reader_feature_flags", 0) & FLAG_STABLE_ROW_IDS:
        for fid in rewritten:
            lineage.stamp_updated(by_id[fid], version)
    return rewritten


def _rewrite_groups(body: Dict[str, Any]) -> List[Dict[str, Any]]:
    """A Rewrite's groups (an old transaction's single group as one)."""
    return body.get("groups") or [
        {"old_fragments": body.get("old_fragments", []), "new_fragments": body.get("new_fragments", [])}
    ]


def _rewritten(groups: List[Dict[str, Any]], next_id: int) -> Tuple[set, List[Dict[str, Any]], int]:
    """``(ids of the fragments a Rewrite removes, its new fragments, the next free id)``:
    new fragments keep ids reserved beforehand (ReserveFragments, so that remapped indices
    could name them); a group without them has its new fragments numbered from `next_id`."""
    removed: set = set()
    new: List[Dict[str, Any]] = []
    for g in groups:
        fresh = g.get("new_fragments", [])
        if fresh and all(f.get("id") for f in fresh):
            next_id = max(next_id, max(f["id"] for f in fresh) + 1)
        else:
            next_id = _assign_ids(fresh, next_id)
        removed |= {f.get("id", 0) for f in g.get("old_fragments", [])}
        new.extend(fresh)
    return removed, new, next_id


@dataclass
class _FragmentSummary:
    """What the end of a commit needs of the new version's fragments."""

    count: int
    has_deletions: bool
    file_versions: set


def _file_versions(fragments: List[Dict[str, Any]]) -> set:
    return {(int(d.get("file_major_version", 0) or 0), int(d.get("file_minor_version", 0) or 0))
            for f in fragments for d in f.get("files", [])}


def _mixed_versions(versions: set, version: Optional[str]) -> bool:
    """Whether data files of `versions` ((major, minor) pairs) include another 2.x version
    than the dataset's `version`."""
    try:
        want = tuple(int(x) for x in str(version).split(".")[:2])
    except ValueError:
        return False
    return want[0] == 2 and any(v != want for v in versions)


def build_manifest(
    base: Optional[LoadedManifest],
    txn: Dict[str, Any],
    version: int,
    transaction_file: str,
    *,
    store: Any = None,
    data_storage_version: Optional[str] = None,
    new_dataset_flags: int = 0,
) -> BuiltManifest:
    """Applies `txn` to `base` (the latest committed manifest) as version `version`.

    `new_dataset_flags` (e.g. :data:`FLAG_STABLE_ROW_IDS`) are set on a dataset's first
    manifest (when there is no `base`)."""

    name = operation_name(txn)
    # Fresh copies (parsing JSON text is much faster than deepcopy).
    body = json.loads(json.dumps(_body(txn)))
    if _keeps_fragments(base, name, body, data_storage_version):
        return _build_delta(base, name, body, version, transaction_file, data_storage_version, store)
    index_section = base.index_section if base is not None else None
    # (An operation that keeps the base's fragments as they are, or drops them all, reads its
    # other fields only; the rest decode the base manifest once: a fresh dict to change.)
    header = base is not None and name in _HEADER_OPERATIONS and _records_version(base, data_storage_version)
    m: Dict[str, Any] = json.loads(base.native.json_without_fragments() if header else base.json) if base is not None else {}
    old = m if base is not None else None
    if header:
        m.pop("fragments", None)
    fragments: List[Dict[str, Any]] = m.get("fragments", [])
    next_id = _next_fragment_id(base, m) if header else _max_fragment_id(old) + 1
    project: Optional[List[int]] = None  # (a Project's field ids: see BuiltManifest)

    if name == "Overwrite":
        fragments = body.get("fragments", [])
        next_id = _assign_ids(fragments, next_id if old is not None else 0)
        m["fields"] = body.get("schema", [])
        m["schema_metadata"] = body.get("schema_metadata", {})
        config = dict(m.get("config", {}))
        config.update(body.get("config_upsert_values", {}))
        m["config"] = config
        if body.get("initial_bases"):
            m["base_paths"] = list(body["initial_bases"])
        index_section = None
        # (stable row ids go on from the overwritten version's next id, as pylance's do)
        m["next_row_id"] = m.get("next_row_id", 0) if old is not None else 0
    elif name == "Append":
        if old is None:
            raise DatasetNotFoundError("cannot append: the dataset does not exist")
        new = body.get("fragments", [])
        next_id = _assign_ids(new, next_id)
        fragments = fragments + new
    elif name == "Delete":
        updated = {f["id"]: f for f in body.get("updated_fragments", [])}
        removed = set(body.get("deleted_fragment_ids", []))
        fragments = [updated.get(f.get("id", 0), f) for f in fragments if f.get("id", 0) not in removed]
    elif name == "Update":
        updated = {f["id"]: f for f in body.get("updated_fragments", [])}
        removed = set(body.get("removed_fragment_ids", []))
        modified = {int(i) for i in body.get("fields_modified") or []}
        if modified and index_section is not None:
            index_section = _rewrites.withdraw_coverage(index_section, _rewrites.update_rewrites(fragments, updated, modified))
        sources = [f for f in fragments if f.get("id", 0) in removed or f.get("id", 0) in updated]
        fragments = [updated.get(f.get("id", 0), f) for f in fragments if f.get("id", 0) not in removed]
        new = body.get("new_fragments", [])
        next_id = _assign_ids(new, next_id)
        lineage.complete_updated(m, new, version, lambda: sources)
        fragments = fragments + new
    elif name == "Merge":
        fragments = body.get("fragments", [])
        m["fields"] = body.get("schema", [])
        m["schema_metadata"] = body.get("schema_metadata", m.get("schema_metadata", {}))
        next_id = max(next_id, max((f.get("id", 0) for f in fragments), default=-1) + 1)
        if base is not None and (index_section is not None or m.get("reader_feature_flags", 0) & FLAG_STABLE_ROW_IDS):
            before = json.loads(base.native.fragments_json(base.native.fragment_ids))
            if m.get("reader_feature_flags", 0) & FLAG_STABLE_ROW_IDS:
                lineage.stamp_merged(before, fragments, version)
            if index_section is not None:
                index_section = _rewrites.withdraw_coverage(index_section, _rewrites.merge_rewrites(before, fragments))
        if index_section is not None:
            # (an index on a field the new schema lacks goes: a cast's column has a new field id,
            # and an index built concurrently on the old one indexes values no column holds)
            index_section = _lancepy.filter_index_section(index_section, sorted({f.get("id", 0) for f in m["fields"]}))
    elif name == "Project":
        m["fields"] = body.get("schema", [])
        project = sorted({f.get("id", 0) for f in m["fields"]})
        if index_section is not None:
            index_section = _lancepy.filter_index_section(index_section, project)
    elif name == "Rewrite":  # (of a legacy dataset's manifest: others are deltas)
        groups = _rewrite_groups(body)
        removed, new, next_id = _rewritten(groups, next_id)
        fragments = [f for f in fragments if f.get("id", 0) not in removed] + new  # (sorted by id below)
        if index_section is not None and removed:
            index_section = _rewrite_indices(index_section, groups, removed, body.get("rewritten_indices") or [], store)
    elif name == "Restore":
        if store is None:
            raise ValueError("restore needs the store")
        target = load_manifest(store, body["version"])
        next_row_id = m.get("next_row_id", 0)
        m = json.loads(target.json)
        # (stable row ids are never given twice: the restored version goes on from the
        # latest's next id, as pylance's does)
        m["next_row_id"] = max(next_row_id, m.get("next_row_id", 0))
        fragments = m.get("fragments", [])
        index_section = target.index_section
        next_id = max(next_id, _max_fragment_id(m) + 1)
    elif name == "UpdateConfig":
        config = dict(m.get("config", {}))
        config.update(body.get("upsert_values") or {})
        for k in body.get("delete_keys") or []:
            config.pop(k, None)
        m["config"] = _apply_update_map(config, body.get("config_updates"))
        m["table_metadata"] = _apply_update_map(dict(m.get("table_metadata") or {}), body.get("table_metadata_updates"))
        schema_md = dict(m.get("schema_metadata") or {})
        schema_md.update({k: list(v.encode()) for k, v in (body.get("schema_metadata") or {}).items()})
        m["schema_metadata"] = _apply_update_map(schema_md, body.get("schema_metadata_updates"), as_bytes=True)
        field_updates = {int(k): v for k, v in (body.get("field_metadata_updates") or {}).items()}
        legacy = {int(k): v.get("metadata") or {} for k, v in (body.get("field_metadata") or {}).items()}
        for f in m.get("fields", []):
            fid = f.get("id", 0)
            md = dict(f.get("metadata") or {})
            if fid in legacy:
                md.update({k: list(v.encode()) for k, v in legacy[fid].items()})
            if fid in field_updates:
                md = _apply_update_map(md, field_updates[fid], as_bytes=True)
            f["metadata"] = md
    elif name == "DataReplacement":
        rewritten = _replace_columns(m, {f.get("id", 0): f for f in fragments}, body, version)
        if index_section is not None:
            index_section = _rewrites.withdraw_coverage(index_section, rewritten)
    elif name == "UpdateBases":
        # Id 0 in the transaction means "assign one" (pylance): the largest id so far + 1.
        bases = list(m.get("base_paths") or [])
        for b in body.get("new_bases", []):
            clash = [o for o in bases if (b.get("name") is not None and o.get("name") == b.get("name")) or o.get("path") == b.get("path")]
            if clash:
                raise InvalidArgumentError(
                    f"base path {b.get('name')!r} at {b.get('path')!r} clashes with the registered base "
                    f"{clash[0].get('id', 0)} ({clash[0].get('name')!r} at {clash[0].get('path')!r})"
                )
            b = dict(b)
            if not b.get("id") or any(b["id"] == o.get("id", 0) for o in bases):
                b["id"] = max((o.get("id", 0) for o in bases), default=0) + 1
            bases.append(b)
        m["base_paths"] = bases
    elif name == "ReserveFragments":
        next_id += body.get("num_fragments", 0)
    elif name == "CreateIndex":
        # Index entries added and removed (pylance commits drop_index this way, with no new
        # ones). The index files themselves are written before the commit by whoever built them.
        if old is None:
            raise DatasetNotFoundError("cannot change indices: the dataset does not exist")
        removed = {json.dumps(i.get("uuid"), sort_keys=True) for i in body.get("removed_indices", [])}
        entries = json.loads(_lancepy.index_section_to_json(index_section))["indices"] if index_section else []
        entries = [e for e in entries if json.dumps(e.get("uuid"), sort_keys=True) not in removed]
        entries += body.get("new_indices", [])
        index_section = _lancepy.index_section_from_json(json.dumps({"indices": entries})) if entries else None
    else:
        raise UnsupportedError(f"lancepy cannot commit a {name} transaction")

    if base is None and new_dataset_flags:
        m["reader_feature_flags"] = m.get("reader_feature_flags", 0) | new_dataset_flags
        m["writer_feature_flags"] = m.get("writer_feature_flags", 0) | new_dataset_flags
    if header and name not in _REPLACING_OPERATIONS:
        # (the base's fragments, unchanged and native, follow these fields when encoded)
        count, deletions, versions = base.native.fragment_summary([])
        _finish_manifest(m, [], _FragmentSummary(count, deletions, set(versions)), next_id, version, transaction_file,
                         data_storage_version)
        return BuiltManifest(m, index_section, base=base.native, appended=[], removed=[], replaced=[])
    # Fragments stay in id order, as pylance keeps them (its validate() requires it): a
    # Rewrite's new fragments have new, larger ids than the ones they replace.
    fragments.sort(key=lambda f: f.get("id", 0))
    m["fragments"] = fragments
    fmt = m.get("data_format") or {}
    if data_storage_version is None and not fmt.get("version"):
        m["data_format"] = {"file_format": "lance",
                            "version": _infer_storage_version(fragments, m.get("writer_feature_flags", 0))}
    fmt = m.get("data_format") or {}
    if fmt.get("version") == LEGACY_FILE_VERSION and data_storage_version is None:
        # (as pylance: lance 0.16 could record "0.1" for datasets of v2 files; the next commit
        # fixes it, unless the files mix versions)
        try:
            actual = infer_file_version(fragments)
        except InvalidArgumentError as e:
            raise LanceIOError(f"The dataset contains a mixture of file versions.  You will need to rollback to an earlier version: {e}") from None
        if actual is not None and actual != LEGACY_FILE_VERSION:
            m["data_format"] = {"file_format": "lance", "version": actual}
    summary = _FragmentSummary(len(fragments), any(_has_deletions(f) for f in fragments), _file_versions(fragments))
    _finish_manifest(m, fragments, summary, next_id, version, transaction_file, data_storage_version)
    return BuiltManifest(m, index_section, project=project)


def _finish_manifest(m: Dict[str, Any], fragments: List[Dict[str, Any]], summary: _FragmentSummary, next_id: int,
                     version: int, transaction_file: str, data_storage_version: Optional[str]) -> None:
    """What every commit sets last: stable row ids for `fragments` that have none, the
    version's own fields (number, time, writer, transaction file, largest fragment id), the
    data storage format and the feature flags that follow from the fragments (`summary`)."""
    if m.get("reader_feature_flags", 0) & FLAG_STABLE_ROW_IDS:
        lineage.assign_new(m, fragments, version)
    m["version"] = version
    m["version_aux_data"] = 0
    now = time.time()
    m["timestamp"] = {"seconds": int(now), "nanos": int((now % 1) * 1e9)}
    m["tag"] = ""
    m["transaction_file"] = transaction_file
    m["writer_version"] = {"library": WRITER_LIBRARY, "version": _lancepy.__version__}
    if summary.count or next_id > 0:
        m["max_fragment_id"] = max(next_id - 1, 0)
    fmt = m.get("data_format") or {}
    if data_storage_version is not None:
        fmt = {"file_format": "lance", "version": data_storage_version}
    m["data_format"] = fmt
    reader = m.get("reader_feature_flags", 0) & ~(FLAG_DELETION_FILES | FLAG_TABLE_CONFIG | FLAG_BASE_PATHS)
    writer = m.get("writer_feature_flags", 0) & ~(FLAG_DELETION_FILES | FLAG_TABLE_CONFIG | FLAG_BASE_PATHS)
    if summary.has_deletions:
        reader |= FLAG_DELETION_FILES
        writer |= FLAG_DELETION_FILES
    if m.get("config"):
        writer |= FLAG_TABLE_CONFIG
    if m.get("base_paths"):
        reader |= FLAG_BASE_PATHS
        writer |= FLAG_BASE_PATHS
    if _mixed_versions(summary.file_versions, fmt.get("version")):
        # Data files of another version than the dataset's (e.g. compacted into 2.1): pylance
        # reads them only with this flag (once set it stays, as pylance keeps it).
        reader |= FLAG_MIXED_DATA_FILE_VERSIONS
        writer |= FLAG_MIXED_DATA_FILE_VERSIONS
    m["reader_feature_flags"] = reader
    m["writer_feature_flags"] = writer
    m.pop("index_section", None)
    m.pop("inline_transaction_position", None)
    m.pop("transaction_section", None)


def _apply_update_map(values: Dict[str, Any], update: Optional[Dict[str, Any]], *, as_bytes: bool = False) -> Dict[str, Any]:
    """Applies a transaction's ``UpdateMap`` (entries with a ``None`` value delete their
    key; ``replace`` starts from nothing). Values of byte maps are lists of byte values in
    the manifest's JSON form."""
    if not update:
        return values
    out: Dict[str, Any] = {} if update.get("replace") else dict(values)
    for entry in update.get("update_entries") or []:
        key, value = entry.get("key", ""), entry.get("value")
        if value is None:
            out.pop(key, None)
        else:
            out[key] = list(value.encode()) if as_bytes else value
    return out


@dataclass
class CommitResult:
    """What a commit produced."""

    version: int
    manifest: LoadedManifest
    attempts: int
    rebased_over: List[int] = field(default_factory=list)


#: Table config keys of automatic cleanup (pylance's): every `interval`-th version a commit
#: removes versions older than `older_than` (a duration such as ``"3600s"``).
AUTO_CLEANUP_INTERVAL = "lance.auto_cleanup.interval"
AUTO_CLEANUP_OLDER_THAN = "lance.auto_cleanup.older_than"

_DURATION_UNITS = {
    "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0, "h": 3600.0, "hr": 3600.0,
    "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0, "d": 86400.0, "day": 86400.0, "days": 86400.0,
    "w": 604800.0, "week": 604800.0, "weeks": 604800.0,
}


def parse_duration(text: str) -> float:
    """Seconds in a duration like ``"3600s"``, ``"2h 30m"`` or ``"14days"`` (a bare number is
    seconds). Raises :class:`InvalidArgumentError` for anything else."""
    import re

    if not re.fullmatch(r"\s*(\d+(\.\d+)?\s*[a-z]*\s*)+", text.lower()):
        raise InvalidArgumentError(f"{text!r} is not a duration (e.g. '3600s', '2h 30m', '14days')")
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", text.lower())
    total = 0.0
    for number, unit in parts:
        if unit and unit not in _DURATION_UNITS:
            raise InvalidArgumentError(f"{text!r}: unknown duration unit {unit!r}")
        total += float(number) * _DURATION_UNITS.get(unit, 1.0)
    return total


def _auto_cleanup(store: Any, loaded: LoadedManifest) -> None:
    """After a commit: the table's automatic cleanup, when its config asks for it at this
    version (as pylance: every `interval`-th version, versions older than `older_than`, the
    two newest and tagged ones kept). A failure is a warning: the commit itself has landed."""
    config = loaded.config
    interval_text = config.get(AUTO_CLEANUP_INTERVAL)
    if not interval_text:
        return
    import warnings

    try:
        interval = int(interval_text)
        if interval <= 0 or loaded.version % interval:
            return
        older_than = parse_duration(config.get(AUTO_CLEANUP_OLDER_THAN) or "14days")
        cleanup_old_versions(
            store,
            store.uri,
            older_than=datetime.timedelta(seconds=older_than),
            retain_versions=2,
            error_if_tagged_old_versions=False,
        )
    except Exception as e:  # noqa: BLE001 - the commit stands; the cleanup can run again later
        warnings.warn(f"automatic cleanup of {store.uri} after version {loaded.version} failed: {e}", stacklevel=2)


def _check_retries(store: Any, retries: int, max_retries: int, version: int, attempt: int, locked: bool = False) -> None:
    if retries > max_retries:
        who = "the commit lock raised CommitConflictError for it" if locked else "another writer committed it"
        raise CommitConflictError(
            f"Commit conflict for version {version}: {who}; gave up committing to "
            f"{store.uri} after {max_retries} retries ({attempt} attempts)"
        )


def _lock(commit_lock: Any, version: int) -> Any:
    """Enters ``commit_lock(version)`` (pylance's ``commit_lock=``: a function returning a
    context manager, held while `version`'s manifest is published). ``None`` without a lock;
    ``False`` when the lock raises :class:`CommitConflictError` (the version counts as taken,
    as in pylance); any other error from it stops the commit."""
    if commit_lock is None:
        return None
    try:
        lease = commit_lock(version)
        lease.__enter__()
        return lease
    except CommitConflictError:
        return False
    except Exception as e:  # noqa: BLE001 - the user's lock: reported as pylance does
        raise LanceIOError(f"Error from commit handler: {e}") from e


def _unlock(lease: Any, failure: Optional[BaseException]) -> None:
    """Leaves a lease of :func:`_lock`: cleanly after a publish, with `failure` otherwise."""
    if not lease:
        return
    try:
        if failure is None:
            lease.__exit__(None, None, None)
        else:
            lease.__exit__(type(failure), failure, failure.__traceback__)
    except CommitConflictError:
        raise
    except Exception as e:  # noqa: BLE001
        raise LanceIOError(f"Error from commit handler: {e}") from e


def _publish(store: Any, path: str, data: bytes, version: int, commit_lock: Any) -> Tuple[bool, Any]:
    """Put-if-not-exists of a manifest inside the commit lock: ``(published, lease)``, the
    lease still to be left with :func:`_unlock` (after the caller has recorded the publish:
    a lock that fails on release does not undo a published version). ``lease is False``: the
    lock refused the version."""
    lease = _lock(commit_lock, version)
    if lease is False:
        return False, False
    try:
        return bool(store.put_if_not_exists(path, data)), lease
    except BaseException as e:
        _unlock(lease, e)
        raise


def _commit_detached(store: Any, txn: Dict[str, Any], txn_bytes: bytes, txn_name: str, *, max_retries: int,
                     commit_lock: Any, data_storage_version: Optional[str]) -> CommitResult:
    """A detached commit (pylance's ``detached=True``): the transaction applied to its read
    version (attached or detached; no conflict checks, nothing rebased) as a version numbered
    by a random u64 with the top bit set, ``_versions/d{version}.manifest``. The dataset's
    line of versions, its latest version and its hint do not change."""
    _, scheme = latest_version(store)
    if scheme == "v1":
        raise NotSupportedOnStorageError("detached commits cannot be used with v1 manifest paths")
    base = load_manifest(store, txn.get("read_version", 0))
    check_feature_flags(base, write=True, uri=store.uri)
    for attempt in range(1, max(1, max_retries) + 1):
        version = random.getrandbits(64) | DETACHED_VERSION_MASK
        built = build_manifest(base, txn, version, txn_name, store=store, data_storage_version=data_storage_version)
        data = built.encode(txn_bytes)
        path = manifest_name(version, "v2")
        published, lease = _publish(store, path, data, version, commit_lock)
        if published:
            _unlock(lease, None)
            return CommitResult(version, LoadedManifest.from_native(_lancepy.Manifest.decode(store, data, version, path, "v2")), attempt)
        _unlock(lease, LanceIOError("commit failed"))
    raise CommitConflictError(f"no unused detached version number found in {store.uri} after {max_retries} tries")


def commit_transaction(
    store: Any,
    txn: Dict[str, Any],
    *,
    naming: Optional[str] = None,
    written_files: Iterable[Union[str, Tuple[Any, str]]] = (),
    max_retries: int = 20,
    data_storage_version: Optional[str] = None,
    new_dataset_flags: int = 0,
    timeout_s: Optional[float] = None,
    commit_lock: Any = None,
    detached: bool = False,
) -> CommitResult:
    """Commits `txn` (read version ``txn["read_version"]``) with the protocol above, retrying
    at most `max_retries` times and, with `timeout_s`, not retrying after that many seconds.
    As in pylance, the first try is for version ``read_version + 1``: finding newer versions
    there (rebasing over them) costs a retry, and so does each version lost to a concurrent
    writer; ``max_retries=0`` commits only on top of the latest version.

    `written_files` (paths relative to the root, or ``(store, path)`` for files written
    under another base path) are deleted again if the commit fails, so a failed commit
    leaves no trace. `naming` is used for a new dataset; an existing one keeps its scheme.
    `commit_lock` (pylance's) is held around each try to publish a version's manifest;
    `detached` makes a detached version (see :func:`_commit_detached`).
    """
    if commit_lock is not None and not callable(commit_lock):
        raise InvalidArgumentError(f"commit_lock must be a function version -> context manager, got {type(commit_lock).__name__}")
    files = list(written_files)
    read_version = txn.get("read_version", 0)
    txn_bytes = _lancepy.encode_transaction(json.dumps(txn))
    txn_name = f"{read_version}-{txn['uuid']}.txn"
    txn_path = f"{TRANSACTIONS_DIR}/{txn_name}"
    published = False
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        # A unique name: no one else writes it, and no reader looks at it before a manifest
        # names it.
        store.put_if_not_exists(txn_path, txn_bytes)
        if detached:
            return _commit_detached(store, txn, txn_bytes, txn_name, max_retries=max_retries, commit_lock=commit_lock,
                                    data_storage_version=data_storage_version)
        checked = read_version
        locked = False
        rebased: List[int] = []
        retries = 0
        for attempt in itertools.count(1):
            latest, scheme = latest_version(store)
            if read_version > latest:
                raise CommitConflictError(
                    f"read version {read_version} is newer than the latest version {latest} of {store.uri}"
                )
            if attempt == 1 and latest > read_version:
                retries += 1  # version read_version + 1 is taken already
                _check_retries(store, retries, max_retries, read_version + 1, attempt)
            for v in range(checked + 1, latest + 1):
                other = load_transaction(store, v)
                if other is None and _lancepy.open_manifest(store, v) is None:
                    # Version v was removed (by a cleanup) since we read: as pylance, only the
                    # versions that still exist are checked.
                    continue
                reason = conflicts(txn, other)
                if reason is not None:
                    raise CommitConflictError(
                        f"commit of {operation_name(txn)} (read version {read_version}) conflicts with version {v}: {reason}",
                        retryable=not isinstance(reason, Incompatible),
                    )
                txn = _rewrites.rebase_new_indices(txn, other)
                rebased.append(v)
            checked = latest
            base = load_manifest(store, latest) if latest > 0 else None
            if base is not None:
                check_feature_flags(base, write=True, uri=store.uri)
            built = build_manifest(
                base, txn, latest + 1, txn_name, store=store, data_storage_version=data_storage_version,
                new_dataset_flags=new_dataset_flags,
            )
            data = built.encode(txn_bytes, store)
            path = manifest_name(latest + 1, scheme or naming or "v2")
            published, lease = _publish(store, path, data, latest + 1, commit_lock)
            locked = lease is False
            _unlock(lease, None if published else LanceIOError("commit failed"))
            if published:
                write_hint(store, latest + 1)
                loaded = LoadedManifest.from_native(
                    _lancepy.Manifest.decode(store, data, latest + 1, path, scheme or naming or "v2")
                )
                _auto_cleanup(store, loaded)
                return CommitResult(latest + 1, loaded, attempt, rebased)
            # Another writer took version latest + 1: back off, then rebase. Exponential with
            # full jitter: on a local disk a retry costs microseconds, on object storage each
            # one costs a few round trips, and racing writers must spread out or they keep
            # colliding (8 writers on S3 would otherwise exhaust their retries).
            retries += 1
            _check_retries(store, retries, max_retries, latest + 1, attempt, locked)
            if deadline is not None and time.monotonic() >= deadline:
                raise CommitConflictError(
                    f"gave up committing to {store.uri}: version {latest + 1} was taken and the commit timeout "
                    f"({timeout_s:g} s) has passed after {attempt} attempt(s)"
                )
            time.sleep(random.uniform(0.0, min(1.0, 0.005 * 2 ** min(attempt, 8))))
        raise AssertionError("unreachable")  # pragma: no cover
    except BaseException:
        if published:
            raise
        delete_written(store, files + [txn_path])
        raise


def commit_body(
    store: Any,
    read_version: int,
    operation: str,
    body: Dict[str, Any],
    *,
    naming: Optional[str] = None,
    written: Iterable[Union[str, Tuple[Any, str]]] = (),
    commit_lock: Any = None,
) -> LoadedManifest:
    """Commits operation `operation` (its transaction body `body`) on top of `read_version`
    with :func:`commit_transaction`; returns the new version's manifest."""
    txn = new_transaction(read_version, operation, body)
    return commit_transaction(store, txn, naming=naming, written_files=written, commit_lock=commit_lock).manifest


def commit_on(
    view: DatasetView,
    operation: str,
    body: Dict[str, Any],
    written: Iterable[Union[str, Tuple[Any, str]]] = (),
    read_version: Optional[int] = None,
) -> DatasetView:
    """Commits operation `operation` (body `body`, files `written`) on top of `view`'s version
    (or `read_version`), under its commit lock; returns the dataset at the new version (the
    caller installs it: ``LanceDataset`` swaps its view)."""
    check_feature_flags(view.loaded, write=True, uri=view.uri)
    rv = view.version if read_version is None else read_version
    loaded = commit_body(view.store, rv, operation, body, naming=view.naming, written=written, commit_lock=view.commit_lock)
    check_feature_flags(loaded, write=False, uri=view.uri)
    return view.at(loaded)


def latest_view(view: DatasetView) -> DatasetView:
    """`view`'s dataset at its latest version."""
    loaded = load_manifest(view.store)
    check_feature_flags(loaded, write=False, uri=view.uri)
    return view.at(loaded)


def delete_written(store: Any, files: Iterable[Union[str, Tuple[Any, str]]]) -> None:
    """Deletes files a failed write or commit left: paths relative to `store`'s root, or
    ``(store, path)`` under another base. Best effort: the error that matters is the
    caller's."""
    files = list(files)
    try:
        store.delete([w for w in files if isinstance(w, str)])
        for other_store, rel in (w for w in files if not isinstance(w, str)):
            other_store.delete([rel])
    except Exception:  # noqa: BLE001 - best effort
        pass


class AutoCleanupConfig(TypedDict):
    """Automatic cleanup of old versions (pylance's ``AutoCleanupConfig``): every
    `interval`-th commit removes versions older than `older_than_seconds`."""

    interval: int
    older_than_seconds: int


def _auto_cleanup_config(options: AutoCleanupConfig) -> Dict[str, str]:
    """The table config entries of pylance's ``AutoCleanupConfig`` (``interval``: every
    n-th version cleans up; ``older_than_seconds``: what it removes)."""
    if not isinstance(options, dict) or {"interval", "older_than_seconds"} - set(options):
        raise InvalidArgumentError("auto_cleanup_options needs 'interval' and 'older_than_seconds'")
    interval, older = options["interval"], options["older_than_seconds"]
    if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
        raise InvalidArgumentError(f"interval must be a positive int, got {interval!r}")
    if not isinstance(older, (int, float)) or isinstance(older, bool) or older < 0:
        raise InvalidArgumentError(f"older_than_seconds must be a non-negative number, got {older!r}")
    return {AUTO_CLEANUP_INTERVAL: str(interval), AUTO_CLEANUP_OLDER_THAN: f"{older}s"}
