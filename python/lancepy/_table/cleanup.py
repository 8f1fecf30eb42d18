"""Cleanup of old versions: which manifests are old (age, how many to retain, tags), and
every file only they reference (data, deletion, transaction and index files), deleted
manifests first. Used by :meth:`LanceDataset.cleanup_old_versions` and by the automatic
cleanup after a commit."""

from __future__ import annotations

import datetime
import os
import time
from dataclasses import dataclass
from typing import Any, List, Optional, Set

from lancepy import _lancepy
from lancepy._core import blobschema as _blob
from lancepy._core.paths import _local_path
from lancepy._table import bases as _bases
from lancepy._table import manifest as _manifest
from lancepy._table.tags import Tags
from lancepy.exceptions import DatasetNotFoundError, InvalidArgumentError, LanceError

_INDICES_DIR = "_indices"


@dataclass
class CleanupStats:
    """What :meth:`LanceDataset.cleanup_old_versions` removed."""

    bytes_removed: int = 0
    old_versions: int = 0
    data_files_removed: int = 0
    transaction_files_removed: int = 0
    index_files_removed: int = 0
    deletion_files_removed: int = 0
    failed_deletes: int = 0


def cleanup_old_versions(
    store: Any,
    uri: str,
    *,
    older_than: Optional[datetime.timedelta] = None,
    retain_versions: Optional[int] = None,
    delete_unverified: bool = False,
    error_if_tagged_old_versions: bool = True,
) -> CleanupStats:
    """Deletes the old versions of the dataset at `store` (root `uri`) and every file only
    they reference; see :meth:`lancepy.LanceDataset.cleanup_old_versions`."""
    if retain_versions is not None and retain_versions < 1:
        raise InvalidArgumentError(f"retain_versions must be at least 1, got {retain_versions}")
    if older_than is None and retain_versions is None:
        older_than = datetime.timedelta(days=14)
    cutoff = time.time() - older_than.total_seconds() if older_than is not None else float("inf")
    listed, naming = _manifest.list_versions(store)
    latest = max(listed)
    retained = set(sorted(listed)[-retain_versions:]) if retain_versions is not None else set()
    tagged = {t["version"] for t in Tags(store).list().values()}
    # Each version's files and indices are gathered as its manifest is read (a few at a time,
    # in parallel), so that memory holds the sets of paths, not every version's manifest.
    # Only files under this dataset's own root count: files under base paths (a clone's
    # source) belong to another dataset and are never deleted.
    referenced: Set[str] = set()
    removed_in_old: Set[str] = set()
    live_indices: Set[str] = set()
    old_indices: Set[str] = set()
    old_versions = 0
    for loaded in _manifest.iter_manifests(store, listed, naming):
        v = loaded.version
        if v == latest or loaded.timestamp[0] >= cutoff or v in retained:
            kept = True
        elif v in tagged:
            if error_if_tagged_old_versions:
                raise InvalidArgumentError(
                    f"version {v} is older than the cutoff but tagged; delete its tags first or pass error_if_tagged_old_versions=False"
                )
            kept = True
        else:
            kept = False
            old_versions += 1
        (referenced if kept else removed_in_old).update(_bases.own_files(loaded, uri))
        (live_indices if kept else old_indices).update(_own_index_uuids(loaded))
    unverified_cutoff = time.time() - 7 * 24 * 3600
    file_cutoff = min(unverified_cutoff, cutoff)
    to_delete, bytes_removed = [], 0
    for prefix in ("data", "_deletions", _manifest.TRANSACTIONS_DIR, _manifest.VERSIONS_DIR):
        for path, size, mtime in store.list(prefix):
            # A blob sidecar (data/<stem>/<id>.blob) lives and dies with data/<stem>.lance.
            owner = _blob.sidecar_owner(path) or path
            if owner in referenced or path == _manifest.HINT_FILE:
                continue
            if owner in removed_in_old or delete_unverified or mtime < file_cutoff:
                if (
                    prefix == _manifest.VERSIONS_DIR
                    and path not in removed_in_old
                    and not path.rsplit("/", 1)[-1].startswith(".")
                ):
                    continue  # never delete a manifest we did not decide to remove
                to_delete.append(path)
                bytes_removed += size

    # Index files: `_indices/<uuid>/...`, kept while a kept version lists the index.
    for path, size, mtime in store.list(_INDICES_DIR):
        parts = path.split("/")
        uid = parts[1] if len(parts) > 2 else None
        if uid in live_indices:
            continue
        if uid in old_indices or delete_unverified or mtime < file_cutoff:
            to_delete.append(path)
            bytes_removed += size
    # Manifests first: a crash midway leaves unreferenced files (removed by a later
    # cleanup), never a version whose files are gone.
    to_delete.sort(key=lambda p: not p.startswith(_manifest.VERSIONS_DIR))
    store.delete(to_delete)
    local = _local_path(uri)
    if local is not None:  # (object stores have no directories; a local one left empty goes too)
        for d in sorted({p.rsplit("/", 1)[0] for p in to_delete if p.count("/") >= 2}, reverse=True):
            try:
                os.rmdir(os.path.join(local, d))
            except OSError:
                pass

    def count(prefix: str) -> int:
        return sum(1 for p in to_delete if p.startswith(prefix + "/"))

    return CleanupStats(
        bytes_removed=bytes_removed,
        old_versions=old_versions,
        data_files_removed=count("data"),
        transaction_files_removed=count(_manifest.TRANSACTIONS_DIR),
        deletion_files_removed=count("_deletions"),
        index_files_removed=count(_INDICES_DIR),
    )


def _own_index_uuids(loaded: Any) -> List[str]:
    """The uuids of the indices version `loaded` lists under the dataset's own root."""
    if loaded.index_section is None:
        return []
    return [e["uuid"] for e in _lancepy.index_section_entries(loaded.index_section) if e["base_id"] is None]


def drop_dataset(uri: str, storage_options: Any, ignore_not_found: Optional[bool]) -> None:
    """Deletes the dataset at `uri` and everything under it, manifests first; see
    :meth:`LanceDataset.drop` (a root without a readable manifest is refused)."""
    store = _lancepy.Store(uri, storage_options)
    versions, _ = _manifest.list_versions(store)
    if not versions and not store.root_exists():
        if ignore_not_found:
            return
        raise DatasetNotFoundError(f"cannot drop {uri}: it does not exist")
    readable = False
    for v in sorted(versions, reverse=True):
        try:
            _manifest.load_manifest(store, v)
        except LanceError:  # corrupt, or unreadable for another reason: not proof of a dataset
            continue
        readable = True
        break
    if not readable:
        raise InvalidArgumentError(
            f"refusing to drop {uri}: no readable Lance manifest in _versions/, so it is not a dataset root "
            "(a path holding only data files or unreadable manifests needs a storage-level delete)"
        )
    objects = [path for path, _, _ in store.list("")]
    manifests = {p for p in objects if p.startswith(_manifest.VERSIONS_DIR + "/")}
    store.delete(sorted(manifests))
    local = _local_path(uri)
    if local is not None and os.path.isdir(local):
        import shutil

        shutil.rmtree(local)
        _lancepy.evict_cached_files(uri)
    else:
        store.delete([p for p in objects if p not in manifests])
