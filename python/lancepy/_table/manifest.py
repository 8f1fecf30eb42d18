"""Versions and manifests: where a dataset's versions are, opening one (:class:`LoadedManifest`),
manifest naming and feature flags. The bottom of the table layer: it reads, never writes."""

from __future__ import annotations

import datetime
import json
import operator
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from lancepy import _lancepy
from lancepy._core.blobschema import field_blob_kind
from lancepy._core.schema import _field_paths, _schema_of
from lancepy._table.fragments import FragmentMetadata
from lancepy.exceptions import (
    ColumnNotFoundError,
    CorruptFileError,
    DatasetNotFoundError,
    InvalidArgumentError,
    NotFoundError,
    UnsupportedError,
    VersionNotFoundError,
)

VERSIONS_DIR = "_versions"
TRANSACTIONS_DIR = "_transactions"
HINT_FILE = f"{VERSIONS_DIR}/latest_version_hint.json"
FLAG_DELETION_FILES = 1
FLAG_STABLE_ROW_IDS = 2


FLAG_USE_V2_FORMAT_DEPRECATED = 4


FLAG_TABLE_CONFIG = 8
FLAG_BASE_PATHS = 16
FLAG_DISABLE_TRANSACTION_FILE = 32
FLAG_MIXED_DATA_FILE_VERSIONS = 256
_FLAG_NAMES = {
    1: "DELETION_FILES",
    2: "STABLE_ROW_IDS",
    4: "USE_V2_FORMAT_DEPRECATED",
    8: "TABLE_CONFIG",
    16: "BASE_PATHS",
    32: "DISABLE_TRANSACTION_FILE",
    64: "UNSTABLE_DATA_OVERLAY_FILES",
    128: "COVERED_INDEX_METADATA",
    256: "MIXED_DATA_FILE_VERSIONS",
    512: "NON_REUSABLE_FIELD_IDS",
    1024: "FRAGMENT_REUSE_INDEX",
}


#: Flags lancepy implements, for reading and for writing.
KNOWN_READER_FLAGS = 1 | 2 | 4 | 8 | 16 | 32 | 256
KNOWN_WRITER_FLAGS = 1 | 2 | 4 | 8 | 16 | 32 | 256


#: The library name written in ``Manifest.writer_version``.
WRITER_LIBRARY = "lancepy"


# A detached version (pylance's): a manifest outside the line of versions, numbered by a
# random u64 with its top bit set, stored as ``_versions/d{version}.manifest`` (the ``d``
# sorts after every attached manifest name, and listings skip it).
DETACHED_VERSION_MASK = 0x8000_0000_0000_0000


def is_detached(version: Optional[int]) -> bool:
    """Whether `version` names a detached version."""
    return version is not None and bool(int(version) & DETACHED_VERSION_MASK)


def manifest_name(version: int, naming: str) -> str:
    """The path (relative to the root) of version `version` under `naming` (``v1``/``v2``)."""
    if is_detached(version):
        return f"{VERSIONS_DIR}/d{int(version)}.manifest"
    return _lancepy.manifest_path(version, naming)


def list_versions(store: Any) -> Tuple[Dict[int, str], Optional[str]]:
    """All committed versions → manifest path, and the naming scheme in use (listing
    ``_versions/``; mixed schemes are a :class:`CorruptFileError`)."""
    versions, naming = _lancepy.list_versions(store)
    return dict(versions), naming


def latest_version(store: Any) -> Tuple[int, Optional[str]]:
    """The newest committed version (0 if none) and the naming scheme (one listing of
    ``_versions/`` that keeps only the largest version)."""
    return _lancepy.latest_version(store)


class SchemaField:
    """One field of a version's schema (``lance.file.Field``): a typed, read-only view of its
    manifest entry. Fields are listed parents first; a top-level field's parent id is -1."""

    __slots__ = ("_data",)

    def __init__(self, entry: Dict[str, Any]) -> None:
        self._data = entry

    @property
    def id(self) -> int:
        """The field id (stable across versions: data files name their fields by it)."""
        return int(self._data.get("id", 0))

    @property
    def parent_id(self) -> int:
        """The parent's id, -1 for a top-level field."""
        return int(self._data.get("parent_id", -1))

    @property
    def name(self) -> str:
        """The field's own name (not its path)."""
        return str(self._data.get("name", ""))

    @property
    def logical_type(self) -> str:
        """Lance's logical type text (``"int64"``, ``"struct"``, ``"fixed_size_list:float:4"``, ...)."""
        return str(self._data.get("logical_type", ""))

    @property
    def nullable(self) -> bool:
        return bool(self._data.get("nullable", True))

    @property
    def is_top_level(self) -> bool:
        return self.parent_id == -1

    @property
    def entry(self) -> Dict[str, Any]:
        """The manifest entry's JSON form, the wire format of the native encoders (read-only:
        copy it to change it)."""
        return self._data

    def __repr__(self) -> str:
        return f"SchemaField(id={self.id}, parent_id={self.parent_id}, name={self.name!r}, logical_type={self.logical_type!r})"


class LoadedManifest:
    """One version's manifest: the snapshot a dataset object, a commit or a cleanup works on.

    The manifest is held decoded by the native module (``_lancepy.Manifest``) and read through
    typed attributes; the whole message becomes a Python dict (`manifest`) or JSON text
    (`json`) only when something asks for it, once.
    """

    __slots__ = ("native", "_json", "_manifest", "_derived")

    def __init__(self, native: Any) -> None:
        self.native = native
        self._json: Optional[str] = None
        self._manifest: Optional[Dict[str, Any]] = None
        self._derived: Dict[str, Any] = {}  # (values decoded from this version's manifest, once)

    def _part(self, key: str, native_json: Callable[[], str]) -> Any:
        """The manifest's top-level entry `key` as the whole manifest's dict has it, decoded
        on its own (from `native_json`) unless the whole manifest already is: the schema
        alone need not decode every fragment of a large dataset."""
        if self._manifest is not None:
            return self._manifest.get(key)
        name = "part:" + key
        if name not in self._derived:
            self._derived[name] = json.loads(native_json())
        return self._derived[name]

    @classmethod
    def from_native(cls, native: Any) -> "LoadedManifest":
        """Wraps a manifest opened by ``_lancepy.open_manifest`` or ``Manifest.decode``."""
        return cls(native)

    @property
    def version(self) -> int:
        """The version number."""
        return int(self.native.version)

    @property
    def path(self) -> str:
        """The manifest's path relative to the dataset root."""
        return str(self.native.path)

    @property
    def naming(self) -> str:
        """``"v1"`` or ``"v2"``: the naming scheme of the manifest's file name."""
        return str(self.native.naming)

    @property
    def size(self) -> int:
        """The manifest file's size in bytes."""
        return int(self.native.size)

    @property
    def json(self) -> str:
        """The whole manifest as JSON text."""
        if self._json is None:
            self._json = self.native.json()
        return self._json

    @property
    def manifest(self) -> Dict[str, Any]:
        """The whole manifest as a dict (decoded on first use; treat as read-only)."""
        if self._manifest is None:
            m = json.loads(self.json)
            m["version"] = self.version
            self._manifest = m
        return self._manifest

    @property
    def index_section(self) -> Optional[bytes]:
        """The raw ``IndexSection`` message, if the manifest has one."""
        return self.native.index_section

    @property
    def transaction(self) -> Optional[bytes]:
        """The raw inline ``Transaction`` message, if the manifest has one."""
        return self.native.transaction

    @property
    def fragment_ids(self) -> List[int]:
        """The ids of the fragments, in manifest order."""
        return list(self.native.fragment_ids)

    @property
    def reader_feature_flags(self) -> int:
        """``Manifest.reader_feature_flags``."""
        return int(self.native.reader_feature_flags)

    @property
    def writer_feature_flags(self) -> int:
        """``Manifest.writer_feature_flags``."""
        return int(self.native.writer_feature_flags)

    @property
    def stable_row_ids(self) -> bool:
        """Whether the dataset keeps stable row ids (reader flag :data:`FLAG_STABLE_ROW_IDS`)."""
        return bool(self.reader_feature_flags & FLAG_STABLE_ROW_IDS)

    @property
    def data_storage_version(self) -> str:
        """The data file version of this version's files (``"2.0"``, ``"2.1"``, ...): the one
        recorded, else the one inferred from its files and writer flags (older manifests)."""
        recorded = self.native.data_format_version
        if recorded:
            return str(recorded)
        m = self.manifest
        return (m.get("data_format") or {}).get("version") or _infer_storage_version(
            m.get("fragments", []), m.get("writer_feature_flags", 0)
        )

    @property
    def max_field_id(self) -> int:
        """The largest field id the schema or any data file uses (-1 if none)."""
        return int(self.native.max_field_id)

    # Typed parts of the message, decoded once per version (treat them as read-only).

    @property
    def fields(self) -> List[SchemaField]:
        """The schema's fields, parents before children (typed views, made once per version)."""
        found = self._derived.get("field_views")
        if found is None:
            found = self._derived["field_views"] = [SchemaField(e) for e in self.field_entries]
        return found

    @property
    def field_entries(self) -> List[Dict[str, Any]]:
        """The schema's field entries in their JSON form (``id``, ``parent_id``, ``name``,
        ``logical_type``, ...), the wire format the native encoders and schema builders take
        (read-only: copy to change)."""
        return self._part("fields", self.native.fields_json) or []

    def top_level_field(self, name: str) -> SchemaField:
        """The top-level field (column) `name`; :class:`ColumnNotFoundError` if there is none."""
        by_name = self._derived.get("top_level_fields")
        if by_name is None:
            by_name = self._derived["top_level_fields"] = {f.name: f for f in self.fields if f.is_top_level}
        if name not in by_name:
            raise ColumnNotFoundError(f"no column {name!r} in the dataset")
        return by_name[name]

    @property
    def field_paths(self) -> Dict[int, str]:
        """Each field's dotted path (``"s.x"`` for a struct's child) by its id."""
        found = self._derived.get("field_paths")
        if found is None:
            found = self._derived["field_paths"] = _field_paths(self.field_entries)
        return found

    @property
    def fragments(self) -> List[FragmentMetadata]:
        """The fragments, in manifest order: typed views of their manifest entries (decoded
        from the fragments' part of the message alone; treat as read-only and use
        ``FragmentMetadata._manifest_json`` for an entry to change)."""
        found = self._derived.get("fragment_views")
        if found is None:
            entries = self._part("fragments", self.native.fragments_json) or []
            found = self._derived["fragment_views"] = [FragmentMetadata._from_dict(e) for e in entries]
        return found

    def fragments_with_ids(self, ids: Iterable[int]) -> Dict[int, FragmentMetadata]:
        """The fragments with ids in `ids`, by id (only their entries are decoded; ids this
        version lacks are left out)."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        found = (FragmentMetadata._from_dict(e) for e in json.loads(self.native.fragments_json(wanted)))
        return {f.id: f for f in found}

    def has_fragment(self, fragment_id: Any) -> bool:
        """Whether this version has a fragment with id `fragment_id` (any integer)."""
        try:
            fid = operator.index(fragment_id)
        except TypeError:
            return False
        return 0 <= fid < 1 << 64 and bool(self.native.has_fragment(fid))

    @property
    def timestamp(self) -> Tuple[int, int]:
        """``(seconds, nanos)`` of the commit time (``(0, 0)`` if none is recorded)."""
        seconds, nanos = self.native.timestamp
        return int(seconds), int(nanos)

    @property
    def transaction_file(self) -> str:
        """The transaction's file name under ``_transactions/`` (empty if inline or absent)."""
        return str(self.native.transaction_file)

    @property
    def max_fragment_id(self) -> Optional[int]:
        """``Manifest.max_fragment_id`` (``None`` if not recorded)."""
        found = self.native.max_fragment_id
        return None if found is None else int(found)

    def version_entry(self) -> Dict[str, Any]:
        """This version as an entry of :meth:`LanceDataset.versions`."""
        return _summary_entry(self.native.summary())

    def file_paths(self, root: str) -> Tuple[List[str], List[str]]:
        """The data and deletion files this version uses, for the dataset rooted at `root`:
        ``(paths, uris)``, paths relative to `root` of the plainly named files under it, and
        the URIs of the others (under base paths, or oddly named); a file naming an
        unregistered base path is left out."""
        paths, uris = self.native.file_paths(root)
        return list(paths), list(uris)

    def blob_kind(self, column: str) -> Optional[str]:
        """``"v2"``, ``"legacy"`` or ``None`` (not a blob column) for the top-level column
        `column`; :class:`ColumnNotFoundError` if there is none."""
        kinds = self._derived.get("blob_kinds")
        if kinds is None:
            kinds = self._derived["blob_kinds"] = {f.name: field_blob_kind(f.entry) for f in self.fields if f.is_top_level}
        if column not in kinds:
            raise ColumnNotFoundError(f"no column {column!r} in the dataset")
        return kinds[column]

    def blob_columns(self, names: Iterable[str]) -> List[str]:
        """Those of `names` that are blob columns, in order."""
        return [n for n in names if self.blob_kind(n) is not None]

    @property
    def schema_metadata(self) -> Dict[str, Any]:
        """The schema metadata: key → bytes (as a list of ints, as the message holds it)."""
        return self._part("schema_metadata", self.native.schema_metadata_json) or {}

    @property
    def schema_metadata_text(self) -> Dict[str, str]:
        """The schema metadata decoded as text."""
        return {k: bytes(v).decode("utf-8", "replace") for k, v in self.schema_metadata.items()}

    @property
    def config(self) -> Dict[str, str]:
        """The table config (a copy)."""
        return dict(self._part("config", self.native.config_json) or {})

    @property
    def table_metadata(self) -> Dict[str, str]:
        """The table metadata (a copy)."""
        return dict(self._part("table_metadata", self.native.table_metadata_json) or {})

    @property
    def base_paths(self) -> List[Dict[str, Any]]:
        """The registered base paths' entries."""
        return self._part("base_paths", self.native.base_paths_json) or []

    @property
    def field_ids_by_path(self) -> Dict[str, int]:
        """Field id of every field by its path (``"s.x"`` for a struct's child)."""
        found = self._derived.get("field_ids_by_path")
        if found is None:
            found = self._derived["field_ids_by_path"] = {p: i for i, p in self.field_paths.items()}
        return found

    @property
    def arrow_schema(self) -> Any:
        """The schema as a ``pyarrow.Schema`` (from the field entries)."""
        found = self._derived.get("arrow_schema")
        if found is None:
            found = self._derived["arrow_schema"] = _schema_of(self.field_entries, self.schema_metadata)
        return found


def iter_manifests(store: Any, listed: Dict[int, str], naming: Optional[str], chunk: int = 32) -> Iterator[LoadedManifest]:
    """The manifests of the versions `listed` (version → path, as :func:`list_versions`
    gives them, under `naming`), oldest first, read and decoded in parallel `chunk` at a
    time (a caller that drops each one holds at most `chunk` decoded manifests); one removed
    since it was listed is left out."""
    items = sorted(listed.items())
    for start in range(0, len(items), chunk):
        for m in _lancepy.open_manifests(store, items[start:start + chunk], naming or "v2"):
            if m is not None:
                yield LoadedManifest.from_native(m)


def load_manifest(store: Any, version: Optional[int] = None) -> LoadedManifest:
    """Loads version `version` (default: the latest; a detached version too)."""
    if is_detached(version):
        path = manifest_name(int(version), "v2")  # (detached versions imply V2 naming, as in pylance)
        if not store.exists(path):
            raise VersionNotFoundError(f"detached version {version} of {store.uri} does not exist ({path})")
        return LoadedManifest.from_native(_lancepy.Manifest.decode(store, store.read(path), int(version), path, "v2"))
    native = _lancepy.open_manifest(store, version)
    if native is not None:
        return LoadedManifest.from_native(native)
    # No such version: list them to say which exist.
    versions, _ = list_versions(store)
    if not versions:
        if store.root_exists():
            raise DatasetNotFoundError(f"{store.uri} is not a Lance dataset: it has no manifests in _versions/")
        raise DatasetNotFoundError(f"no Lance dataset at {store.uri}")
    raise VersionNotFoundError(
        f"version {version} of {store.uri} does not exist; versions are {_ranges(sorted(versions))}"
    )


def _ranges(vs: List[int]) -> str:
    if not vs:
        return "none"
    out, start, prev = [], vs[0], vs[0]
    for v in vs[1:] + [None]:  # type: ignore[list-item]
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(out)


def check_feature_flags(manifest: Union[Dict[str, Any], LoadedManifest], *, write: bool, uri: str = "") -> None:
    """Refuses a manifest whose feature flags lancepy does not implement."""
    if isinstance(manifest, LoadedManifest):
        flags, writer_flags = manifest.reader_feature_flags, manifest.writer_feature_flags
    else:
        flags, writer_flags = manifest.get("reader_feature_flags", 0), manifest.get("writer_feature_flags", 0)
    known = KNOWN_READER_FLAGS
    what = "read"
    if write:
        flags = writer_flags | flags
        known = KNOWN_WRITER_FLAGS
        what = "write to"
    unknown = flags & ~known
    if unknown:
        bits = [b for b in range(64) if unknown >> b & 1]
        names = ", ".join(f"{1 << b} ({_FLAG_NAMES.get(1 << b, 'unknown')})" for b in bits)
        raise UnsupportedError(
            f"cannot {what} dataset {uri}: it uses feature flag(s) {names} that lancepy does not implement"
        )


def load_transaction(store: Any, version: int) -> Optional[Dict[str, Any]]:
    """The transaction that created `version` (inline, else from its file); ``None`` if it
    cannot be found or decoded."""
    try:
        loaded = load_manifest(store, version)
    except (VersionNotFoundError, DatasetNotFoundError):
        return None
    data = loaded.transaction
    name = loaded.transaction_file
    if data is None and name:
        try:
            data = store.read(f"{TRANSACTIONS_DIR}/{name}")
        except NotFoundError:
            return None
    if data is None:
        return None
    try:
        return json.loads(_lancepy.decode_transaction(data, name))
    except CorruptFileError:
        return None


#: What pylance calls the legacy (v1) data file format's version.
LEGACY_FILE_VERSION = "0.1"
#: The writer flag datasets of lance 0.15 set when their files were v2 (before data_format).
FLAG_USE_V2_FORMAT_DEPRECATED = 4


def _file_version(d: Dict[str, Any]) -> str:
    """A data file's format version as pylance names it: (0, 0..2) is the legacy format
    ("0.1"), (0, 3) what became 2.0."""
    major, minor = int(d.get("file_major_version", 2) or 0), int(d.get("file_minor_version", 0) or 0)
    if major == 0:
        return "2.0" if minor == 3 else LEGACY_FILE_VERSION
    return f"{major}.{minor}"


def infer_file_version(fragments: List[Dict[str, Any]]) -> Optional[str]:
    """The version of the fragments' data files (None without files). Files of two versions
    raise :class:`InvalidArgumentError`."""
    found: Optional[str] = None
    for f in fragments:
        for d in _fragment_files(f):
            v = _file_version(d)
            if found is None:
                found = v
            elif v != found:
                raise InvalidArgumentError(f"All data files must have the same version. Detected both {found} and {v}")
    return found


def _infer_storage_version(fragments: List[Dict[str, Any]], writer_flags: Optional[int] = None) -> str:
    """A manifest's data storage version when it records none (written before lance 0.16):
    its files' version; without files, the writer flags (v2 flag: the stable version, else
    legacy; unknown flags: lancepy's default)."""
    found = infer_file_version(fragments)
    if found is not None:
        return found
    from lancepy.file import DEFAULT_FILE_VERSION

    if writer_flags is None:
        return DEFAULT_FILE_VERSION
    return DEFAULT_FILE_VERSION if writer_flags & FLAG_USE_V2_FORMAT_DEPRECATED else LEGACY_FILE_VERSION


def _fragment_files(frag: Dict[str, Any]) -> List[Dict[str, Any]]:
    return frag.get("files") or []


def write_hint(store: Any, version: int) -> None:
    """Updates ``latest_version_hint.json`` (best effort: the hint is advisory, for other
    tools; lancepy never trusts it)."""
    try:
        # Unlink + create instead of replace: replacing an existing file makes ext4 flush it
        # (auto_da_alloc).
        store.delete([HINT_FILE])
        store.put_if_not_exists(HINT_FILE, json.dumps({"version": version}).encode())
    except Exception:  # noqa: BLE001 - the hint is advisory
        pass


_SUMMARY_KEYS = (
    "total_data_file_rows",
    "total_data_files",
    "total_deletion_file_rows",
    "total_deletion_files",
    "total_files_size",
    "total_fragments",
)


def _summary_entry(row: Tuple[int, ...]) -> Dict[str, Any]:
    """One entry of :meth:`LanceDataset.versions` from a row of ``version_summaries``."""
    version, seconds, nanos, *totals = row
    when = datetime.datetime.fromtimestamp(seconds) + datetime.timedelta(microseconds=nanos // 1000)
    stats = dict(zip(_SUMMARY_KEYS, totals))
    stats["total_rows"] = stats["total_data_file_rows"] - stats["total_deletion_file_rows"]
    return {"version": version, "timestamp": when, "metadata": {k: str(v) for k, v in stats.items()}}


def needs_migration(manifest: Dict[str, Any], index_entries: List[Dict[str, Any]]) -> bool:
    """Whether a manifest lacks facts newer writers record, so that pylance rewrites it on its
    next commit: no writer version; a fragment without ``physical_rows`` or a deletion file
    without its row count; an index without a fragment bitmap, or one written by lance
    before 0.8.15 (whose bitmaps could be wrong)."""
    writer = manifest.get("writer_version")
    if not writer:
        return True
    for f in manifest.get("fragments", []):
        if f.get("physical_rows") is None:
            return True
        deletion = f.get("deletion_file")
        if deletion and deletion.get("num_deleted_rows") is None:
            return True
    old_lance = writer.get("library") == "lance" and _version_before(str(writer.get("version") or ""), (0, 8, 15))
    return any(e.get("fragment_ids") is None or old_lance for e in index_entries)


def _version_before(text: str, cutoff: Tuple[int, int, int]) -> bool:
    """Whether the semver `text` is older than `cutoff` (unreadable counts as older)."""
    try:
        parts = tuple(int(p) for p in text.split("-")[0].split("+")[0].split(".")[:3])
    except ValueError:
        return True
    return len(parts) < 3 or parts < cutoff
