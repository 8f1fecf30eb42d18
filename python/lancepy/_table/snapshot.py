"""One version as a dataset object reads it: the native ``TableSnapshot`` opened from the
version's :class:`~lancepy._table.manifest.LoadedManifest`, and every cache derived from
that version (:class:`VersionState`). A dataset that moves to another version replaces its
state; nothing derived from a version outlives it."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

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
        """The manifest entry of fragment `fragment_id` (``KeyError`` if there is none): that
        fragment's alone, decoded on first use, unless every entry already is."""
        by_id = self.cached("fragments_by_id", dict)
        entry = by_id.get(fragment_id)
        if entry is None:
            found = self.loaded.native.fragment_json(int(fragment_id))
            if found is None:
                raise KeyError(fragment_id)
            entry = by_id[fragment_id] = json.loads(found)
        return FragmentMetadata._from_dict(entry)

    def count_rows(self) -> int:
        """Live rows: the manifest's row counts less deletions."""
        return self.cached("count_rows", self.snapshot.count_rows)


class DatasetView:
    """A dataset at one version, as the table and operations layers take it: where it is
    (`uri`, `storage_options`, `base_store_params`, the `store`), what serves it (`session`:
    its caches; `commit_lock`; `io`: its I/O counters) and the version (`loaded`: the
    :class:`LoadedManifest`; `state`: the :class:`VersionState` with the native snapshot and
    the per-version caches). Immutable: a dataset that moves to another version, or is given
    another session, holds a new view (:meth:`at`, :meth:`with_session`); nothing else
    carries a version's state."""

    __slots__ = ("uri", "storage_options", "base_store_params", "store", "session", "commit_lock", "io", "loaded", "state")

    def __init__(
        self,
        uri: str,
        storage_options: Any,
        base_store_params: Optional[Dict[str, Any]],
        store: Any,
        session: Any,
        commit_lock: Any,
        io: Any,
        loaded: LoadedManifest,
        state: Optional[VersionState] = None,
    ) -> None:
        values = (uri, storage_options, base_store_params, store, session, commit_lock, io, loaded)
        for name, value in zip(self.__slots__, values):
            object.__setattr__(self, name, value)
        if state is None:
            state = VersionState.open(uri, loaded, storage_options, base_store_params)
        object.__setattr__(self, "state", state)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a DatasetView is immutable (cannot set {name!r}): make another one")

    def _replace(self, **changes: Any) -> "DatasetView":
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return DatasetView(**values)

    def at(self, loaded: LoadedManifest) -> "DatasetView":
        """The same dataset at version `loaded` (a new native snapshot and new caches)."""
        return self._replace(loaded=loaded, state=None)

    def with_session(self, session: Any, commit_lock: Any) -> "DatasetView":
        """This version served by `session` and `commit_lock` (the version's caches kept)."""
        return self._replace(session=session, commit_lock=commit_lock)

    def __repr__(self) -> str:
        return f"DatasetView({self.uri!r}, version={self.version})"

    # -- the version ----------------------------------------------------------------------

    @property
    def snapshot(self) -> Any:
        """The native ``TableSnapshot`` of this version (scans, takes, counts, search)."""
        return self.state.snapshot

    @property
    def version(self) -> int:
        """The version number."""
        return self.loaded.version

    @property
    def naming(self) -> str:
        """The manifest naming scheme (``"v1"`` / ``"v2"``)."""
        return self.loaded.naming

    @property
    def schema(self) -> pa.Schema:
        """The version's Arrow schema (per-version cache)."""
        return self.state.schema()

    @property
    def data_storage_version(self) -> str:
        """The data file version of this version's files (recorded or inferred)."""
        return self.loaded.data_storage_version

    @property
    def max_field_id(self) -> int:
        """The largest field id the schema or any data file uses."""
        return self.loaded.max_field_id

    @property
    def stable_row_ids(self) -> bool:
        """Whether the dataset keeps stable row ids."""
        return self.loaded.stable_row_ids

    @property
    def fragment_ids(self) -> List[int]:
        """The ids of the fragments, in manifest order."""
        return self.loaded.fragment_ids

    def fragment_id_set(self) -> frozenset:
        """The ids of the fragments, as a set (per-version cache)."""
        return self.state.fragment_ids()

    def fragment_rows(self) -> Dict[int, Tuple[int, int]]:
        """Fragment id → (physical rows, live rows) (per-version cache)."""
        return self.state.fragment_rows()

    def fragment_metadata(self, fragment_id: int) -> FragmentMetadata:
        """The manifest entry of fragment `fragment_id`."""
        return self.state.fragment_metadata(fragment_id)

    def count_rows(self) -> int:
        """Live rows of this version (per-version cache)."""
        return self.state.count_rows()

    def index_entries(self) -> List[Dict[str, Any]]:
        """The index section's entries (uuid, name, fields, fragment ids, ...), decoded anew
        on each call (the caller may change them: a transaction takes them)."""
        section = self.loaded.index_section
        return [] if section is None else list(_lancepy.index_section_entries(section))
