"""Transactions: building one, naming its operation, and deciding whether two transactions
committed concurrently conflict (:func:`conflicts`), which drives rebasing in the commit loop."""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Optional


def new_transaction(read_version: int, operation: str, body: Dict[str, Any]) -> Dict[str, Any]:
    """A transaction dict (the JSON form of ``lance.table.Transaction``)."""
    return {
        "read_version": read_version,
        "uuid": str(uuid.uuid4()),
        "tag": "",
        "transaction_properties": {},
        "operation": {operation: body},
    }


def operation_name(txn: Optional[Dict[str, Any]]) -> Optional[str]:
    """``"Append"``, ``"Delete"``, ... or ``None`` for a missing or unknown operation."""
    if not txn:
        return None
    op = txn.get("operation")
    if not isinstance(op, dict) or len(op) != 1:
        return None
    return next(iter(op))


def _body(txn: Dict[str, Any]) -> Dict[str, Any]:
    return next(iter(txn["operation"].values()))


def _touched_fragments(txn: Dict[str, Any]) -> set:
    """Ids of existing fragments that a transaction modified or removed."""
    name, body = operation_name(txn), _body(txn)
    ids = set()
    if name == "Delete":
        ids |= {f.get("id", 0) for f in body.get("updated_fragments", [])}
        ids |= set(body.get("deleted_fragment_ids", []))
    elif name == "Update":
        ids |= {f.get("id", 0) for f in body.get("updated_fragments", [])}
        ids |= set(body.get("removed_fragment_ids", []))
    elif name == "Rewrite":
        ids |= _compacted(body)
    elif name == "DataReplacement":
        ids |= {r.get("fragment_id", 0) for r in body.get("replacements", [])}
    return ids


def _config_keys(txn: Dict[str, Any]) -> set:
    """``(map, key)`` pairs a transaction sets or deletes: map is ``"config"``,
    ``"table"``, ``"schema"`` or ``"field:<id>"``; key ``None`` stands for every key (a
    replacing update)."""
    name, body = operation_name(txn), _body(txn)
    if name == "Overwrite":
        return {("config", k) for k in body.get("config_upsert_values") or {}}
    if name != "UpdateConfig":
        return set()
    keys = {("config", k) for k in body.get("upsert_values") or {}} | {("config", k) for k in body.get("delete_keys") or []}
    keys |= {("schema", k) for k in body.get("schema_metadata") or {}}
    for fid, upd in (body.get("field_metadata") or {}).items():
        keys |= {(f"field:{fid}", k) for k in (upd or {}).get("metadata") or {}}
    maps = [("config", body.get("config_updates")), ("table", body.get("table_metadata_updates")),
            ("schema", body.get("schema_metadata_updates"))]
    maps += [(f"field:{fid}", upd) for fid, upd in (body.get("field_metadata_updates") or {}).items()]
    for where, upd in maps:
        if not upd:
            continue
        if upd.get("replace"):
            keys.add((where, None))
        keys |= {(where, e.get("key")) for e in upd.get("update_entries") or []}
    return keys


def _config_overlap(a: set, b: set) -> bool:
    """Whether two sets of :func:`_config_keys` touch a common key."""
    if a & b:
        return True
    wild_a = {m for m, k in a if k is None}
    wild_b = {m for m, k in b if k is None}
    return any(m in wild_a for m, _ in b) or any(m in wild_b for m, _ in a)


class Incompatible(str):
    """A conflict reason no retry can resolve (pylance's "incompatible transaction"): the
    operation must not be applied again to the newer version (a concurrent overwrite or
    restore replaced the data it was planned on, a fragment it rewrites is gone)."""


def conflicts(ours: Dict[str, Any], theirs: Optional[Dict[str, Any]]) -> Optional[str]:
    """Why our transaction cannot be committed after `theirs` (``None`` if it can).

    Rules of the table format's transaction specification, from the point of view of the
    transaction being committed; "retryable" conflicts are conflicts too (the caller may
    retry from the new version). A missing or unknown transaction always conflicts.
    """
    mine, other = operation_name(ours), operation_name(theirs)
    if other is None:
        return "the concurrent version's transaction is missing or of an unknown kind"
    assert theirs is not None
    if mine == "Restore":
        return None if other != "UpdateMemWalState" else f"{other} happened concurrently"
    if other == "UpdateBases" or mine == "UpdateBases":
        # Registering base paths changes no fragment and no schema, and the bases are added
        # to whatever manifest is latest; only two registrations can clash.
        if mine == other:
            return "a concurrent UpdateBases registered base paths"
        return None
    if other in ("Overwrite", "Restore", "UpdateMemWalState", "Clone"):
        if mine == "Overwrite" and other == "Restore":
            return None
        if mine == "Overwrite" and other == "Overwrite":
            # (retryable: the writer may decide to overwrite again; not when both set a config key)
            if _config_overlap(_config_keys(ours), _config_keys(theirs)):
                return Incompatible("a concurrent Overwrite set the same config keys")
            return "a concurrent Overwrite replaced the dataset"
        if mine == "UpdateConfig" and other != "Overwrite":
            return None
        if mine == "UpdateConfig":  # (over an Overwrite: only metadata or config keys it also set)
            body = _body(ours)
            if body.get("schema_metadata") or body.get("schema_metadata_updates") or body.get("field_metadata") \
                    or body.get("field_metadata_updates") or _config_overlap(_config_keys(ours), _config_keys(theirs)):
                return Incompatible("a concurrent Overwrite replaced the schema or config this UpdateConfig changes")
            return None
        return Incompatible(f"a concurrent {other} replaced the data this {mine} was based on")
    overlap = _touched_fragments(ours) & _touched_fragments(theirs)
    if mine == "Append":
        return None
    if mine == "Overwrite":
        if other == "UpdateConfig" and _config_overlap(_config_keys(ours), _config_keys(theirs)):
            return Incompatible("a concurrent UpdateConfig changed the same config keys")
        return None
    if mine in ("Delete", "Update"):
        if other == "Merge":
            return f"a concurrent Merge (add_columns) rewrote every fragment this {mine} touches"
        if other in ("Delete", "Update", "Rewrite", "DataReplacement") and overlap:
            return f"a concurrent {other} modified the same fragments {sorted(overlap)}"
        return None
    if mine == "Rewrite":
        if other == "Merge":
            return "a concurrent Merge (add_columns) rewrote every fragment"
        if other in ("Delete", "Update", "Rewrite", "DataReplacement") and overlap:
            return f"a concurrent {other} modified fragments being compacted {sorted(overlap)}"
        if other == "CreateIndex" and _index_meets_rewrite(theirs, ours):
            return "a concurrent CreateIndex indexed row addresses that compaction changes"
        return None
    if mine == "Merge":
        if other == "Project":
            return Incompatible("a concurrent Project changed the schema this Merge replaces")
        if other in ("Update", "Append", "Delete", "Merge", "Rewrite", "DataReplacement"):
            return f"a concurrent {other} changed the fragments this Merge replaces"
        return None
    if mine == "Project":
        if other in ("Project", "Merge"):
            return f"a concurrent {other} changed the schema"
        return None
    if mine == "DataReplacement":
        return _replacement_conflict(_body(ours), other, _body(theirs))
    if mine == "UpdateConfig":
        if other == "UpdateConfig" and _config_overlap(_config_keys(ours), _config_keys(theirs)):
            return Incompatible("a concurrent UpdateConfig changed the same keys")
        return None
    if mine in ("CreateIndex", "ReserveFragments"):
        if mine == "CreateIndex" and other == "Rewrite" and _index_meets_rewrite(ours, theirs):
            return "a concurrent Rewrite changed row addresses the new index holds"
        if mine == "CreateIndex" and other == "CreateIndex":
            # (two new indices of one name would both be kept; replacing or dropping the same
            # index twice would undo the other's change)
            ours_new = {e.get("name") for e in _body(ours).get("new_indices", [])}
            theirs_new = {e.get("name") for e in _body(theirs).get("new_indices", [])}
            ours_gone = {uuid_key(e) for e in _body(ours).get("removed_indices", [])}
            theirs_gone = {uuid_key(e) for e in _body(theirs).get("removed_indices", [])}
            if ours_new & theirs_new:
                return f"a concurrent CreateIndex created indices named {sorted(ours_new & theirs_new)}"
            if ours_gone & theirs_gone and (ours_new or theirs_new):
                return "a concurrent CreateIndex replaced the same index"
        if mine == "CreateIndex" and other in ("Merge", "Project"):
            # (a cast gives its column a new field id, a Project drops fields: an index of the
            # old field would index values no column holds; pylance 14 commits it, and then
            # cannot open the dataset's indices)
            indexed = {int(x) for e in _body(ours).get("new_indices", []) for x in e.get("fields", [])}
            gone = indexed - {int(f.get("id", 0)) for f in _body(theirs).get("schema", [])}
            if gone:
                return f"a concurrent {other} replaced or dropped the indexed fields {sorted(gone)}"
        if mine == "CreateIndex" and other == "DataReplacement":
            # (the new index holds the values the replacement rewrote; a concurrent Update is
            # rebased instead: see rewrites.rebase_new_indices)
            indexed = {int(x) for e in _body(ours).get("new_indices", []) for x in e.get("fields", [])}
            replaced = {int(x) for r in _body(theirs).get("replacements", []) for x in (r.get("new_file") or {}).get("fields", [])}
            if indexed & replaced:
                return f"a concurrent DataReplacement rewrote indexed fields {sorted(indexed & replaced)}"
        return None
    return f"cannot check {mine} against a concurrent {other}"


def _replacement_conflict(ours: Dict[str, Any], other: str, theirs: Dict[str, Any]) -> Optional[str]:
    """Why a ``DataReplacement`` (files of some columns of some fragments, row for row)
    cannot be committed after a concurrent `other` (pylance 14's rules): a fragment it
    replaces was removed, compacted or had rows moved out; a field it replaces was
    rewritten, replaced, dropped or indexed concurrently; a Merge replaced every fragment."""
    targets = {int(r.get("fragment_id", 0)): {int(x) for x in (r.get("new_file") or {}).get("fields", []) if int(x) >= 0}
               for r in ours.get("replacements", [])}
    if other in ("Append", "UpdateConfig", "ReserveFragments"):
        return None
    if other == "Merge":
        return "a concurrent Merge replaced every fragment"
    if other == "Project":
        kept = {int(f.get("id", 0)) for f in theirs.get("schema", [])}
        gone = sorted(set().union(*targets.values()) - kept) if targets else []
        return Incompatible(f"a concurrent Project dropped replaced fields {gone}") if gone else None
    if other in ("Delete", "Update"):
        removed = set(theirs.get("deleted_fragment_ids" if other == "Delete" else "removed_fragment_ids", []))
        if removed & set(targets):
            return Incompatible(f"a concurrent {other} removed fragments {sorted(removed & set(targets))} being replaced")
        if other == "Delete":
            return None  # (deletion vectors stay aligned with the replacing files)
        modified = {int(x) for x in theirs.get("fields_modified") or []}
        moved = bool(theirs.get("new_fragments")) and int(theirs.get("update_mode") or 0) == 0
        for f in theirs.get("updated_fragments", []):
            fid = int(f.get("id", 0))
            if fid in targets and (moved or targets[fid] & modified):
                return f"a concurrent Update rewrote rows or replaced fields of fragment {fid}"
        return None
    if other == "CreateIndex":
        indexed = {int(x) for e in theirs.get("new_indices", []) for x in e.get("fields", [])}
        both = sorted(indexed & set().union(*targets.values())) if targets else []
        return f"a concurrent CreateIndex indexed replaced fields {both}" if both else None
    if other == "Rewrite":
        old = _compacted(theirs)
        return f"a concurrent Rewrite compacted fragments {sorted(old & set(targets))}" if old & set(targets) else None
    if other == "DataReplacement":
        for r in theirs.get("replacements", []):
            fid = int(r.get("fragment_id", 0))
            if targets.get(fid, set()) & {int(x) for x in (r.get("new_file") or {}).get("fields", [])}:
                return f"a concurrent DataReplacement replaced the same fields of fragment {fid}"
        return None
    return f"cannot check DataReplacement against a concurrent {other}"


def uuid_key(entry: Dict[str, Any]) -> str:
    """An index entry's uuid as a comparable key (its JSON form: a list of byte values)."""
    return json.dumps((entry or {}).get("uuid"))


def _index_meets_rewrite(create_index: Dict[str, Any], rewrite: Dict[str, Any]) -> bool:
    """Whether a ``CreateIndex``'s new indices cover fragments a ``Rewrite`` replaced (their
    row addresses changed under the index; as pylance, an entry without a fragment bitmap
    covers them all, and dropping an index covers none)."""
    entries = _body(create_index).get("new_indices") or []
    compacted = _compacted(_body(rewrite))
    if not entries or not compacted:
        return False
    if any(not e.get("fragment_bitmap") for e in entries):
        return True
    from lancepy import _lancepy

    section = _lancepy.index_section_from_json(json.dumps({"indices": entries}))
    return any(int(i) in compacted for e in _lancepy.index_section_entries(section) for i in e["fragment_ids"])


def _compacted(rewrite: Dict[str, Any]) -> set:
    """Ids of the fragments a ``Rewrite`` body replaced (its groups', and an old
    transaction's top-level ``old_fragments``)."""
    groups = list(rewrite.get("groups") or []) + [rewrite]
    return {int(f.get("id", 0)) for g in groups for f in g.get("old_fragments", [])}
