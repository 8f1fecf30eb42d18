"""One version as a dataset object reads it: the native ``TableSnapshot`` opened from the
version's :class:`~lancepy._table.manifest.LoadedManifest`, and every cache derived from
that version (:class:`VersionState`). A dataset that moves to another version replaces its
state; nothing derived from a version outlives it."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple, TypeVar

import pyarrow as pa

from lancepy import _lancepy
from lancepy._table.fragments import FragmentMetadata
from lancepy._table.manifest import LoadedManifest

_T = TypeVar("_T")


class VersionState(dict):
    """The per-version caches of one dataset version, keyed by name and built on first use:
    the Arrow schema, fragment ids, row counts and manifest entries, the live row count
    (here), and those the operations layer keeps (the stable row id map, a vector search's
    deleted rows, opened index segments, ...). One object is shared by a dataset and its
    pinned views of that version, and dropped with the version."""

    __slots__ = ("loaded", "snapshot")

    def __init__(self, loaded: LoadedManifest, snapshot: Any) -> None:
        super().__init__()
        self.loaded = loaded
        self.snapshot = snapshot

    @classmethod
    def open(
        cls, uri: str, loaded: LoadedManifest, storage_options: Any, base_store_params: Optional[Dict[str, Any]]
    ) -> "VersionState":
        """Opens the native snapshot of `loaded` (from the decoded manifest where there is one)."""
        if loaded.native is not None:
            snapshot = _lancepy.TableSnapshot.from_manifest(uri, loaded.native, storage_options, base_store_params)
        else:
            snapshot = _lancepy.TableSnapshot(uri, loaded.json, storage_options, base_store_params)
        return cls(loaded, snapshot)

    def cached(self, key: str, build: Callable[[], _T]) -> _T:
        """The value cached under `key`, built by `build` the first time."""
        value = self.get(key)
        if value is None:
            value = self[key] = build()
        return value

    def schema(self) -> pa.Schema:
        """The version's Arrow schema."""
        return self.cached("schema", lambda: pa.schema(self.snapshot.schema()))

    def fragment_rows(self) -> Dict[int, Tuple[int, int]]:
        """Fragment id → (physical rows, live rows)."""
        return self.cached("fragment_rows", lambda: {fid: (phys, live) for fid, phys, live in self.snapshot.fragment_rows()})

    def fragment_ids(self) -> frozenset:
        """The ids of the version's fragments."""
        return self.cached("fragment_ids", lambda: frozenset(self.loaded.fragment_ids))

    def fragment_metadata(self, fragment_id: int) -> FragmentMetadata:
        """The manifest entry of fragment `fragment_id`."""
        by_id = self.cached("fragments_by_id", lambda: {f.get("id", 0): f for f in self.loaded.manifest.get("fragments", [])})
        return FragmentMetadata._from_dict(by_id[fragment_id])

    def count_rows(self) -> int:
        """Live rows: the manifest's row counts less deletions."""
        return self.cached("count_rows", self.snapshot.count_rows)
