"""Columns rewritten in place: what a ``DataReplacement`` does to a fragment's data files, and
which fragments the indices of rewritten fields stop covering (after an ``Update`` that wrote
new files for some columns, a ``Merge`` that changed the file serving a field, or a
``DataReplacement``), as pylance 14 records them.

A rewrite is a mapping ``{fragment id: field ids rewritten there}``; an index on any of those
fields no longer answers for that fragment (its values are the old ones), so the fragment is
scanned until the index is optimized.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Iterable, List, Mapping, Set

from lancepy import _lancepy
from lancepy.exceptions import CommitConflictError, InvalidArgumentError

#: The field id of a column no longer read from a data file (its values live elsewhere).
TOMBSTONE = -2

Rewrites = Dict[int, Set[int]]

_NOT_ALIGNED = (
    "Expected to modify the fragment but no changes were made. This means the new data files does not align "
    "with any existing data files. Please check if the schema of the new data files matches the schema of the "
    "old data files including the file major and minor versions"
)


def with_descendants(field_entries: Iterable[Mapping[str, Any]], ids: Iterable[int]) -> Set[int]:
    """`ids` and the ids of every field nested under them in the schema `field_entries`."""
    children: Dict[int, List[int]] = {}
    for e in field_entries:
        children.setdefault(int(e.get("parent_id", -1)), []).append(int(e.get("id", 0)))
    out: Set[int] = set()
    pending = [int(i) for i in ids]
    while pending:
        i = pending.pop()
        if i not in out:
            out.add(i)
            if i >= 0:
                pending.extend(children.get(i, []))
    return out


def _is_legacy(file: Mapping[str, Any]) -> bool:
    return int(file.get("file_major_version") or 0) == 0


def replace_data_files(
    by_id: Dict[int, Dict[str, Any]], body: Mapping[str, Any], field_entries: List[Mapping[str, Any]]
) -> Rewrites:
    """Applies a ``DataReplacement``'s groups to the fragments `by_id` (in place) and returns
    the fields rewritten in each, as pylance 14 applies them:

    - a data file with exactly the new file's fields (in order) and file version takes the
      new file's path, size and base;
    - a new file whose fields no data file holds (columns added without data) joins the
      fragment;
    - otherwise, when every replaced field is held by some data file (none of them a legacy
      v1 file), the fields are tombstoned where they are, files left without a field of the
      schema dropped, and the new file joins the fragment.

    All new files must hold the same fields; a group changing nothing is an error."""
    groups = list(body.get("replacements", []))
    if len({tuple(int(x) for x in (g.get("new_file") or {}).get("fields", [])) for g in groups}) > 1:
        listed = "".join(f"File {i}: {list((g.get('new_file') or {}).get('fields', []))}\n" for i, g in enumerate(groups))
        raise InvalidArgumentError(f"All new data files must have the same fields, but found different fields:\n{listed}")
    live = {int(e.get("id", 0)) for e in field_entries}
    out: Rewrites = {}
    for g in groups:
        fid = int(g.get("fragment_id", 0))
        frag = by_id.get(fid)
        if frag is None:
            raise CommitConflictError(f"DataReplacement: fragment {fid} does not exist")
        new_file = dict(g.get("new_file") or {})
        new_fields = [int(x) for x in new_file.get("fields", [])]
        replaced = with_descendants(field_entries, [x for x in new_fields if x >= 0])
        files = frag["files"] = list(frag.get("files") or [])
        before = json.dumps(files, sort_keys=True)
        covered: Set[int] = set()
        in_place = False
        for f in files:
            if ([int(x) for x in f.get("fields", [])] == new_fields
                    and int(f.get("file_major_version") or 0) == int(new_file.get("file_major_version") or 0)
                    and int(f.get("file_minor_version") or 0) == int(new_file.get("file_minor_version") or 0)):
                f["path"] = new_file.get("path")
                f["file_size_bytes"] = new_file.get("file_size_bytes")
                if new_file.get("base_id") is None:
                    f.pop("base_id", None)
                else:
                    f["base_id"] = new_file["base_id"]
                in_place = True
            covered |= with_descendants(field_entries, [int(x) for x in f.get("fields", []) if int(x) >= 0])
        if not covered & replaced:
            files.append(new_file)
        elif (not in_place and replaced <= covered
              and all(not _is_legacy(f) or not replaced & {int(x) for x in f.get("fields", [])} for f in files)):
            for f in files:
                if not _is_legacy(f):
                    f["fields"] = [TOMBSTONE if int(x) in replaced else int(x) for x in f.get("fields", [])]
            files[:] = [f for f in files if any(int(x) in live for x in f.get("fields", []))]
            files.append(new_file)
        if json.dumps(files, sort_keys=True) == before:
            raise InvalidArgumentError(_NOT_ALIGNED)
        out[fid] = replaced
    return out


def merge_rewrites(before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]]) -> Rewrites:
    """The fields a ``Merge`` rewrote in place: for each fragment in both lists, the fields
    still present whose data file (by path) changed. New fragments carry nothing stale."""

    def paths(frag: Mapping[str, Any]) -> Dict[int, str]:
        return {int(x): str(f.get("path")) for f in frag.get("files", []) for x in f.get("fields", []) if int(x) >= 0}

    prev = {int(f.get("id", 0)): paths(f) for f in before}
    out: Rewrites = {}
    for f in after:
        fid = int(f.get("id", 0))
        if fid not in prev or fid in out:
            continue
        now = paths(f)
        changed = {x for x, p in prev[fid].items() if x in now and now[x] != p}
        if changed:
            out[fid] = changed
    return out


def update_rewrites(before: Iterable[Mapping[str, Any]], updated: Mapping[int, Mapping[str, Any]],
                    modified: Set[int]) -> Rewrites:
    """The fields `modified` of an ``Update`` rewrote in the `updated` fragments (new data
    files for them, as ``update_columns`` writes). Fragments whose files serving those
    fields did not change (only rows deleted: lancepy's delete-and-append update) rewrote
    nothing."""

    def serving(frag: Mapping[str, Any]) -> List[Any]:
        return sorted(
            (str(f.get("path")), tuple(f.get("fields", [])))
            for f in frag.get("files", [])
            if modified & {int(x) for x in f.get("fields", [])}
        )

    prev = {int(f.get("id", 0)): f for f in before}
    return {fid: set(modified) for fid, f in updated.items() if fid in prev and serving(prev[fid]) != serving(f)}


def withdraw_coverage(section: bytes, rewrites: Rewrites) -> bytes:
    """The index section `section` with each index on a field of `rewrites` no longer covering
    the fragments where that field was rewritten."""
    if not rewrites:
        return section
    covered = {e["uuid"]: set(e["fragment_ids"]) for e in _lancepy.index_section_entries(section)}
    entries = json.loads(_lancepy.index_section_to_json(section))["indices"]
    changed = False
    for e in entries:
        fields = {int(x) for x in e.get("fields", [])}
        ids = covered.get(uuid_text(e.get("uuid") or {}), set())
        gone = {fid for fid, rewritten in rewrites.items() if fid in ids and fields & rewritten}
        if gone:
            e["fragment_bitmap"] = list(_lancepy.fragment_bitmap(sorted(ids - gone)))
            changed = True
    return _lancepy.index_section_from_json(json.dumps({"indices": entries})) if changed else section


def rebase_new_indices(txn: Dict[str, Any], other: Mapping[str, Any]) -> Dict[str, Any]:
    """`txn` rebased over the concurrent transaction `other`: a ``CreateIndex`` committed
    after an ``Update`` that rewrote some columns in place no longer covers the fragments
    where the update rewrote an indexed field (the index was built from their old values),
    as pylance rebases it. Any other pair is returned as it is."""
    ops = txn.get("operation") or {}
    theirs = (other or {}).get("operation") or {}
    if "CreateIndex" not in ops or "Update" not in theirs:
        return txn
    update = theirs["Update"]
    modified = {int(x) for x in update.get("fields_modified") or []}
    entries = ops["CreateIndex"].get("new_indices") or []
    if not modified or not entries:
        return txn
    rewritten: Rewrites = {int(f.get("id", 0)): modified for f in update.get("updated_fragments", [])}
    section = _lancepy.index_section_from_json(json.dumps({"indices": entries}))
    pruned = withdraw_coverage(section, rewritten)
    if pruned is section:
        return txn
    body = dict(ops["CreateIndex"], new_indices=json.loads(_lancepy.index_section_to_json(pruned))["indices"])
    return dict(txn, operation={"CreateIndex": body})


def uuid_text(u: Mapping[str, Any]) -> str:
    """An index entry's uuid (its JSON form: bytes as a list of ints) as text."""
    return str(uuid.UUID(bytes=bytes(u.get("uuid", b""))))
