"""Row lineage of stable-row-id datasets, as a commit and a compaction record it: each row's
stable id (``DataFragment.row_id_sequence``; new rows take the manifest's ``next_row_id`` on),
and the version each row of a fragment was created in and last updated in (``DataFragment.created_at_version_sequence`` /
``last_updated_at_version_sequence``), what pylance reads as ``_row_created_at_version`` and
``_row_last_updated_at_version``.

What a commit writes, as pylance 14 does:

- a fragment new in version ``v`` (append, overwrite, rows a merge_insert inserts): every
  row created and last updated at ``v``;
- a row an update or merge_insert rewrites: keeps its created-at version (found by its
  stable row id in the fragments it came from), last updated at ``v``;
- a ``Merge``: the rows of each fragment whose data files it changed (new columns, a cast),
  last updated at ``v`` (all-null columns add no file and change no row);
- a compaction: the versions of the rows it keeps, in their new order;
- deletes, projections, restores and index changes: the sequences as they were.

A fragment without a sequence (an older writer's) reads as version 1 throughout
(:data:`DEFAULT_VERSION`), as pylance reads it. Sequences are encoded natively
(``_lancepy.encode_row_versions`` / ``decode_row_versions``); here they are numpy arrays of
one ``uint64`` per physical row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional

import numpy as np
import pyarrow as pa

from lancepy import _lancepy
from lancepy.exceptions import InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.fragments import FragmentMetadata
    from lancepy._table.snapshot import DatasetView

CREATED = "created_at_version_sequence"
UPDATED = "last_updated_at_version_sequence"
#: The manifest key of each sequence and its inline arm.
_INLINE = {CREATED: "InlineCreatedAtVersions", UPDATED: "InlineLastUpdatedAtVersions"}
#: Both sequences, by the system column that reads each.
COLUMNS = {"_row_created_at_version": CREATED, "_row_last_updated_at_version": UPDATED}
#: The version of a row whose fragment has no sequence (pylance's reading).
DEFAULT_VERSION = 1
#: The manifest's reader flag of stable row ids (``manifest.FLAG_STABLE_ROW_IDS``).
_FLAG_STABLE_ROW_IDS = 2


def inline_bytes(body: Any) -> bytes:
    """The bytes of an inline sequence as the JSON wire form holds them: hex text (what the
    native layer writes and reads: one string crosses far faster than a number per byte)
    or a list of ints (pylance's JSON form)."""
    return bytes.fromhex(body) if isinstance(body, str) else bytes(body)


def inline_text(data: Any) -> str:
    """Bytes of an inline sequence in the JSON wire form (hex text)."""
    return bytes(data).hex()


def fragment_versions(fragment: Mapping[str, Any], key: str) -> np.ndarray:
    """One version per physical row of `fragment` (a manifest entry's JSON form) from its
    sequence `key` (:data:`CREATED` or :data:`UPDATED`), :data:`DEFAULT_VERSION` without one.

    Raises :class:`~lancepy.exceptions.CorruptFileError` for a sequence that does not cover
    the fragment's rows, :class:`~lancepy.exceptions.UnsupportedError` for one kept in an
    external file (pylance 14 cannot read those either)."""
    rows = int(fragment.get("physical_rows") or 0)
    value = fragment.get(key)
    if not value:
        return np.full(rows, DEFAULT_VERSION, dtype=np.uint64)
    ((arm, body),) = value.items()
    if arm != _INLINE[key]:
        raise UnsupportedError(f"fragment {fragment.get('id', 0)}: a {key} kept in an external file is not supported")
    return np.frombuffer(_lancepy.decode_row_versions(inline_bytes(body), rows), dtype="<u8").astype(np.uint64)


def set_versions(fragment: Dict[str, Any], key: str, versions: np.ndarray) -> None:
    """Stores one version per physical row as `fragment`'s sequence `key` (in place)."""
    data = np.ascontiguousarray(versions, dtype="<u8").tobytes()
    fragment[key] = {_INLINE[key]: inline_text(_lancepy.encode_row_versions(data))}


def _row_ids(seq: Any, rows: Optional[int]) -> np.ndarray:
    """The stable row ids of a serialized row-id sequence of `rows` ids (``None``: as many as
    it holds), as uint64."""
    return np.frombuffer(_lancepy.decode_row_ids_le(inline_bytes(seq), rows), dtype="<u8").astype(np.uint64)


def stamp_new(fragment: Dict[str, Any], version: int) -> None:
    """Marks every row of a fragment new in `version`: created and last updated there."""
    rows = np.full(int(fragment.get("physical_rows") or 0), version, dtype=np.uint64)
    set_versions(fragment, CREATED, rows)
    set_versions(fragment, UPDATED, rows)


def stamp_updated(fragment: Dict[str, Any], version: int) -> None:
    """Marks every row of `fragment` last updated in `version` (a ``DataReplacement`` of
    some of its columns)."""
    set_versions(fragment, UPDATED, np.full(int(fragment.get("physical_rows") or 0), version, dtype=np.uint64))


def stamp_merged(before: Iterable[Mapping[str, Any]], fragments: Iterable[Dict[str, Any]], version: int) -> None:
    """What a ``Merge`` of `fragments` onto the fragments `before` records: the rows of a
    fragment whose data files changed (pylance compares each file's path, fields, column
    indices, file version and base) are last updated in `version`; a fragment new to the
    dataset is created there too; the others stay as they were."""

    def files(f: Mapping[str, Any]) -> List[Any]:
        return [(d.get("path", ""), list(d.get("fields") or []), list(d.get("column_indices") or []),
                 d.get("file_major_version", 0), d.get("file_minor_version", 0), d.get("base_id"))
                for d in f.get("files", [])]

    old = {int(f.get("id", 0)): files(f) for f in before}
    for f in fragments:
        prev = old.get(int(f.get("id", 0)))
        rows = np.full(int(f.get("physical_rows") or 0), version, dtype=np.uint64)
        if prev is None:
            set_versions(f, CREATED, rows)
        if prev is None or prev != files(f):
            set_versions(f, UPDATED, rows)


class _CreatedAt:
    """The created-at version of stable row ids, looked up in the fragments they came from
    (manifest entries with row-id sequences): their ids and versions decoded once, sorted by
    id; an id found in none of them has :data:`DEFAULT_VERSION`."""

    def __init__(self, sources: List[Mapping[str, Any]]) -> None:
        ids: List[np.ndarray] = []
        versions: List[np.ndarray] = []
        for f in sources:
            seq = (f.get("row_id_sequence") or {}).get("InlineRowIds")
            if seq is None:
                continue
            ids.append(_row_ids(seq, int(f.get("physical_rows") or 0)))
            versions.append(fragment_versions(f, CREATED))
        self.ids = np.concatenate(ids) if ids else np.empty(0, dtype=np.uint64)
        self.versions = np.concatenate(versions) if versions else np.empty(0, dtype=np.uint64)
        if len(self.ids) > 1 and not bool(np.all(self.ids[1:] > self.ids[:-1])):  # (ids of appends increase: no sort)
            order = np.argsort(self.ids, kind="stable")
            self.ids, self.versions = self.ids[order], self.versions[order]

    def of(self, row_ids: np.ndarray) -> np.ndarray:
        out = np.full(len(row_ids), DEFAULT_VERSION, dtype=np.uint64)
        if not len(self.ids) or not len(row_ids):
            return out
        pos = np.minimum(np.searchsorted(self.ids, row_ids), len(self.ids) - 1)
        found = self.ids[pos] == row_ids
        out[found] = self.versions[pos[found]]
        return out


def stamp_rewritten(fragment: Dict[str, Any], kept: np.ndarray, created_at: _CreatedAt, version: int) -> None:
    """The sequences of a fragment an update writes: its first ``len(kept)`` rows are rows
    that keep their stable ids `kept` (and their created-at versions), the rest are new; all
    are last updated in `version`."""
    rows = int(fragment.get("physical_rows") or 0)
    created = np.full(rows, version, dtype=np.uint64)
    created[: len(kept)] = created_at.of(np.asarray(kept, dtype=np.uint64))
    set_versions(fragment, CREATED, created)
    set_versions(fragment, UPDATED, np.full(rows, version, dtype=np.uint64))


def deleted_offsets(view: "DatasetView", fragment_id: int) -> np.ndarray:
    """The offsets of the deleted rows of fragment `fragment_id` at `view`'s version."""
    return pa.table(view.snapshot.deleted_rows(int(fragment_id))).column(0).to_numpy().astype(np.int64)


def live_versions(view: "DatasetView", fragments: Iterable["FragmentMetadata"], key: str) -> np.ndarray:
    """The versions (sequence `key`) of the live rows of `fragments` (of `view`'s version),
    in order: what a rewrite of them (compaction) carries over."""
    parts = []
    for f in fragments:
        v = f.row_versions(key)
        if f.deletion_file is not None:
            keep = np.ones(len(v), dtype=bool)
            keep[deleted_offsets(view, f.id)] = False
            v = v[keep]
        parts.append(v)
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


def versions_at(view: "DatasetView", addresses: Any, key: str) -> pa.Array:
    """The version (sequence `key`) of the row at each address of `view`'s version, as
    uint64. Each fragment's sequence is expanded once per version (kept on the view's state)."""
    addr = addresses.to_numpy() if isinstance(addresses, pa.ChunkedArray) else np.asarray(addresses)
    addr = addr.astype(np.uint64)
    frag = (addr >> np.uint64(32)).astype(np.int64)
    local = (addr & np.uint64(0xFFFFFFFF)).astype(np.int64)
    cache = view.state.setdefault("row_versions:" + key, {})
    out = np.empty(len(addr), dtype=np.uint64)
    fids = np.unique(frag)
    missing = [int(f) for f in fids if int(f) not in cache]
    if missing:
        for fid, f in view.loaded.fragments_with_ids(missing).items():
            cache[fid] = f.row_versions(key)
    for fid in fids:
        sel = frag == fid
        out[sel] = cache[int(fid)][local[sel]]
    return pa.array(out, pa.uint64())


def with_versions(view: "DatasetView", table: pa.Table, columns: Iterable[str]) -> pa.Table:
    """`table` (rows of `view`'s version with their ``_rowaddr``) with the system columns
    `columns` (names in :data:`COLUMNS`) appended, for a filter that reads them."""
    for name in columns:
        if name not in table.column_names:
            table = table.append_column(pa.field(name, pa.uint64()), versions_at(view, table.column("_rowaddr"), COLUMNS[name]))
    return table


def complete_updated(m: Dict[str, Any], new: List[Dict[str, Any]], version: int,
                     sources: Callable[[], List[Dict[str, Any]]]) -> None:
    """The lineage of the new fragments of an ``Update`` committed as `version` onto manifest
    `m` (of a stable-row-id dataset; nothing otherwise). Rows that keep their ids come first
    in a fragment and carry them (as pylance writes them); the rest get the next ids. Every
    row is last updated in `version`; a kept row keeps its created-at version, looked up in
    `sources` (called once, if needed: the fragments the update removed or changed, where
    the kept rows were), a new row is created in `version`."""
    if not m.get("reader_feature_flags", 0) & _FLAG_STABLE_ROW_IDS:
        return
    found: Optional[_CreatedAt] = None
    for f in new:
        seq = (f.get("row_id_sequence") or {}).get("InlineRowIds")
        n = f.get("physical_rows") or 0
        if seq is None:
            continue
        kept = _row_ids(seq, None)
        count = len(kept)
        if count > n:
            raise InvalidArgumentError(f"a new fragment of {n} rows carries {count} row ids")
        if count < n:
            set_row_ids(f, kept.tolist() + next_row_ids(m, n - count))
        if found is None:
            found = _CreatedAt(sources())
        stamp_rewritten(f, kept, found, version)


def assign_new(m: Dict[str, Any], fragments: List[Dict[str, Any]], version: int) -> None:
    """Gives the fragments of manifest `m` that have no row ids yet (new ones) the next ids;
    their rows are created and last updated in `version`."""
    for f in fragments:
        if not f.get("row_id_sequence"):
            set_row_ids(f, next_row_ids(m, f.get("physical_rows", 0)))
            stamp_new(f, version)
    m.setdefault("next_row_id", 0)


def next_row_ids(m: Dict[str, Any], n: int) -> List[int]:
    """The next `n` stable row ids of manifest `m` (taken: ``next_row_id`` moves past them)."""
    start = m.get("next_row_id", 0)
    m["next_row_id"] = start + n
    return list(range(start, start + n))


def set_row_ids(fragment: Dict[str, Any], ids: List[int]) -> None:
    fragment["row_id_sequence"] = {"InlineRowIds": inline_text(_lancepy.encode_row_ids(ids))}
