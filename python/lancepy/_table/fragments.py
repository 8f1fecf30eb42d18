"""The typed pieces of a manifest that travel between processes: :class:`FragmentMetadata`,
:class:`DataFile`, :class:`DeletionFile`, and data storage versions."""

from __future__ import annotations

import json
import json as _json  # for the methods whose parameter, as in pylance, is named `json`
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from lancepy._table import lineage
from lancepy.exceptions import InvalidArgumentError, UnsupportedError


DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024


#: pylance's default: 90 GiB.
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024**3


DEFAULT_DATA_STORAGE_VERSION = "2.2"


#: What pylance calls datasets of legacy (v1) data files.
LEGACY_STORAGE_VERSION = "0.1"

_VERSION_ALIASES = {"stable": "2.2", "2.0": "2.0", "2.1": "2.1", "2.2": "2.2", "legacy": "0.1", "0.1": "0.1"}


def is_legacy_version(version: Optional[str]) -> bool:
    """Whether a (normalized) data storage version is the legacy (v1) format."""
    return version == LEGACY_STORAGE_VERSION


def mixes_v1_and_v2(a: str, b: str) -> bool:
    """Whether two storage versions are the legacy format and a 2.x one."""
    return is_legacy_version(a) != is_legacy_version(b)


def normalize_storage_version(version: Optional[str]) -> str:
    """``"0.1"`` (legacy), ``"2.0"``, ``"2.1"`` or ``"2.2"`` from a user's spelling
    (``"stable"`` = 2.2, ``"legacy"`` = 0.1)."""
    if version is None:
        return DEFAULT_DATA_STORAGE_VERSION
    v = str(version).strip().lower()
    if v in _VERSION_ALIASES:
        return _VERSION_ALIASES[v]
    if v in ("next", "2.3"):
        raise UnsupportedError(f"data_storage_version {version!r}: lancepy writes legacy (0.1), 2.0, 2.1 and 2.2 data files")
    raise InvalidArgumentError(
        f"unknown data_storage_version {version!r}; use 'legacy', '2.0', '2.1', '2.2' or 'stable'"
    )


class _DataFilePath(str):
    """A data file's path that can also be called: ``DataFile.path()`` was a method in older
    pylance and still works there, with a ``DeprecationWarning``. Pickles as a plain ``str``."""

    def __call__(self) -> str:
        warnings.warn("DataFile.path() is deprecated, use DataFile.path instead", DeprecationWarning, stacklevel=2)
        return str(self)

    def __reduce__(self) -> Any:
        return (str, (str(self),))


@dataclass(frozen=True)
class DataFile:
    """One data file of a fragment (a view of the manifest entry; pylance's fields)."""

    path: str
    fields: List[int]
    column_indices: Optional[List[int]] = None
    file_major_version: int = 0
    file_minor_version: int = 0
    file_size_bytes: Optional[int] = None
    base_id: Optional[int] = None
    """The base path the file lives under (``None``: the dataset root)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", _DataFilePath(self.path))

    def field_ids(self) -> List[int]:
        """The field ids (pylance's deprecated spelling of :attr:`fields`)."""
        warnings.warn("DataFile.field_ids is deprecated, use DataFile.fields instead", DeprecationWarning, stacklevel=2)
        return self.fields

    @classmethod
    def _from_dict(cls, f: Dict[str, Any]) -> "DataFile":
        """From a manifest entry's JSON form."""
        return cls(
            path=f.get("path", ""),
            fields=list(f.get("fields", [])),
            column_indices=list(f.get("column_indices", [])),
            file_major_version=f.get("file_major_version", 0),
            file_minor_version=f.get("file_minor_version", 0),
            file_size_bytes=f.get("file_size_bytes", 0),
            base_id=f.get("base_id"),
        )

    def _to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "path": str(self.path),
            "fields": list(self.fields),
            "column_indices": list(self.column_indices if self.column_indices is not None else range(len(self.fields))),
            "file_major_version": self.file_major_version,
            "file_minor_version": self.file_minor_version,
        }
        if self.file_size_bytes is not None:
            out["file_size_bytes"] = self.file_size_bytes
        if self.base_id is not None:
            out["base_id"] = self.base_id
        return out


@dataclass(frozen=True)
class DeletionFile:
    """The deletion file of a fragment (pylance's fields, in pylance's order)."""

    read_version: int
    id: int
    file_type: str
    """``"array"`` (Arrow IPC, ``.arrow``) or ``"bitmap"`` (roaring, ``.bin``)."""
    num_deleted_rows: int
    base_id: Optional[int]
    """The base path the file lives under (``None``: the dataset root)."""

    def __post_init__(self) -> None:
        if self.file_type not in ("array", "bitmap"):
            raise InvalidArgumentError(f"deletion file_type must be 'array' or 'bitmap', got {self.file_type!r}")

    def asdict(self) -> Dict[str, Any]:
        """The fields as a dict (pylance's ``DeletionFile.asdict``: the keys of the constructor)."""
        return {
            "read_version": self.read_version,
            "id": self.id,
            "file_type": self.file_type,
            "num_deleted_rows": self.num_deleted_rows,
            "base_id": self.base_id,
        }

    def json(self) -> str:
        """:meth:`asdict` as compact JSON text."""
        return _json.dumps(self.asdict(), separators=(",", ":"))

    @staticmethod
    def from_json(json: str) -> "DeletionFile":
        """Inverse of :meth:`json`."""
        d = _json.loads(json)
        if not isinstance(d, dict):
            raise InvalidArgumentError("a deletion file's JSON must be an object")
        try:
            return DeletionFile(**d)
        except TypeError as e:
            raise InvalidArgumentError(f"not a deletion file: {e}") from None

    def path(self, fragment_id: int, base_uri: Optional[str] = None) -> str:
        """Path relative to the root of its base (the dataset root if `base_id` is ``None``),
        or under `base_uri` when given."""
        ext = "bin" if self.file_type == "bitmap" else "arrow"
        rel = f"_deletions/{fragment_id}-{self.read_version}-{self.id}.{ext}"
        return rel if base_uri is None else f"{base_uri.rstrip('/')}/{rel}"

    def _to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "file_type": 1 if self.file_type == "bitmap" else 0,
            "read_version": self.read_version,
            "id": self.id,
            "num_deleted_rows": self.num_deleted_rows,
        }
        if self.base_id is not None:
            out["base_id"] = self.base_id
        return out


_DATA_FILE_KEYS = (
    "path",
    "fields",
    "column_indices",
    "file_major_version",
    "file_minor_version",
    "file_size_bytes",
    "base_id",
)


_SEQUENCE_KEYS = ("row_id_sequence", "last_updated_at_version_sequence", "created_at_version_sequence")


class _SequenceMeta:
    """Where a per-row sequence of a fragment lives: inline (the serialized bytes) or in an
    external file (``path``, ``offset``, ``size``). Holds the manifest's form of the protobuf
    ``oneof`` (``{"Inline...": [bytes]}`` or ``{"External...": {...}}``); subclasses name the
    two arms as the manifest does and as pylance's JSON does."""

    _PROTO: Tuple[str, str] = ("", "")
    _PYLANCE: Tuple[str, str] = ("", "")
    __slots__ = ("_value",)

    def __init__(self, inline: Optional[bytes] = None, *, external: Optional[Dict[str, Any]] = None) -> None:
        if (inline is None) == (external is None):
            raise InvalidArgumentError(f"{type(self).__name__} needs inline bytes or an external file, not both")
        if inline is not None:
            self._value: Dict[str, Any] = {self._PROTO[0]: lineage.inline_text(inline)}
        else:
            ext = dict(external or {})
            if set(ext) != {"path", "offset", "size"}:
                raise InvalidArgumentError(
                    f"an external {type(self).__name__} needs path, offset and size, got {sorted(ext)}"
                )
            self._value = {
                self._PROTO[1]: {"path": str(ext["path"]), "offset": int(ext["offset"]), "size": int(ext["size"])}
            }

    @classmethod
    def _from_proto(cls, value: Dict[str, Any]) -> Any:
        """From the manifest's JSON form (``None`` if `value` is empty)."""
        if not value:
            return None
        ((key, body),) = value.items()
        if key == cls._PROTO[0]:
            return cls(lineage.inline_bytes(body))
        if key == cls._PROTO[1]:
            return cls(external=body)
        raise InvalidArgumentError(f"unknown {cls.__name__} variant {key!r}")

    @classmethod
    def from_dict(cls, dict: Dict[str, Any]) -> Any:  # noqa: A002 - pylance's parameter name
        """From :meth:`asdict`'s form (pylance's JSON; the manifest's form is accepted too)."""
        data = dict
        if not isinstance(data, type({})) or len(data) != 1:
            raise InvalidArgumentError(f"{cls.__name__} must be a one-key dict, got {data!r}")
        ((key, body),) = data.items()
        if key.lower() == cls._PYLANCE[0].lower() or key == cls._PROTO[0]:
            return cls(lineage.inline_bytes(body))
        if key.lower() == cls._PYLANCE[1].lower() or key == cls._PROTO[1]:
            return cls(external=body)
        raise InvalidArgumentError(f"unknown {cls.__name__} variant {key!r}")

    @classmethod
    def from_json(cls, json: str) -> Any:
        """Inverse of :meth:`json`."""
        return cls.from_dict(_json.loads(json))

    def asdict(self) -> Dict[str, Any]:
        """pylance's JSON form: ``{"Inline": [bytes]}`` or ``{"External": {path, offset, size}}``
        (lower-case keys for the row version sequences, as pylance writes them)."""
        ((key, body),) = self._value.items()
        if key == self._PROTO[0]:
            return {self._PYLANCE[0]: list(lineage.inline_bytes(body))}
        return {self._PYLANCE[1]: dict(body)}

    def json(self) -> str:
        """:meth:`asdict` as compact JSON text."""
        return json.dumps(self.asdict(), separators=(",", ":"))

    def _proto(self) -> Dict[str, Any]:
        return json.loads(json.dumps(self._value))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._value == self._value  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(json.dumps(self._value, sort_keys=True))

    def __getstate__(self) -> Dict[str, Any]:
        return self._value

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._value = state

    def __repr__(self) -> str:
        ((key, body),) = self._value.items()
        what = f"{len(lineage.inline_bytes(body))} bytes inline" if key == self._PROTO[0] else f"external {body['path']!r}"
        return f"{type(self).__name__}({what})"


class RowIdMeta(_SequenceMeta):
    """The stable row ids of a fragment's rows (a serialized row-id sequence, inline or in
    an external file): pylance's ``RowIdMeta``."""

    _PROTO = ("InlineRowIds", "ExternalRowIds")
    _PYLANCE = ("Inline", "External")
    __slots__ = ()


class RowDatasetVersionMeta(_SequenceMeta):
    """The dataset version each row of a fragment was created or last updated in (a
    serialized run-length sequence): pylance's ``RowDatasetVersionMeta``."""

    _PROTO = ("Inline", "External")  # the arm's prefix; the sequence's name completes it
    _PYLANCE = ("inline", "external")
    __slots__ = ()


#: manifest key of each sequence, and the arm names of its oneof.
_VERSION_ARMS = {
    "created_at_version_sequence": ("InlineCreatedAtVersions", "ExternalCreatedAtVersions"),
    "last_updated_at_version_sequence": ("InlineLastUpdatedAtVersions", "ExternalLastUpdatedAtVersions"),
}


def _version_meta_from_proto(key: str, value: Optional[Dict[str, Any]]) -> Optional[RowDatasetVersionMeta]:
    if not value:
        return None
    inline, external = _VERSION_ARMS[key]
    ((arm, body),) = value.items()
    if arm == inline:
        return RowDatasetVersionMeta(lineage.inline_bytes(body))
    if arm == external:
        return RowDatasetVersionMeta(external=body)
    raise InvalidArgumentError(f"unknown {key} variant {arm!r}")


def _version_meta_to_proto(key: str, meta: RowDatasetVersionMeta) -> Dict[str, Any]:
    ((arm, body),) = meta._proto().items()
    return {_VERSION_ARMS[key][0 if arm == "Inline" else 1]: body}


#: FragmentMetadata's argument / pylance JSON key -> manifest key.
_META_KEYS = {
    "row_id_meta": "row_id_sequence",
    "created_at_version_meta": "created_at_version_sequence",
    "last_updated_at_version_meta": "last_updated_at_version_sequence",
}


class FragmentMetadata:
    """The manifest entry of one fragment (``lance.table.DataFragment``).

    Plain data: picklable and convertible to/from JSON, so it can travel from the task that
    wrote a fragment to the process that commits it. Constructed like pylance's
    (``FragmentMetadata(id, files, physical_rows, deletion_file, row_id_meta, ...)``).
    `physical_rows` is ``None`` for a fragment announced before its rows were written (a
    progress hook's ``begin``); such a fragment cannot be committed. Stable row ids
    (`row_id_meta`, a :class:`RowIdMeta`) are kept at commit time, so rewritten rows keep
    their ids; the row version sequences are carried as given. Overlays are not supported
    (:class:`~lancepy.exceptions.NotSupportedError`).
    """

    __slots__ = ("_data",)

    def __init__(
        self,
        id: int,
        files: List[DataFile],
        physical_rows: Optional[int],
        deletion_file: Optional[DeletionFile] = None,
        row_id_meta: Optional[RowIdMeta] = None,
        created_at_version_meta: Optional[RowDatasetVersionMeta] = None,
        last_updated_at_version_meta: Optional[RowDatasetVersionMeta] = None,
        overlays: Optional[List[Any]] = None,
    ) -> None:
        if overlays:
            raise UnsupportedError("FragmentMetadata(overlays=...) is not supported by lancepy")
        if not all(isinstance(f, DataFile) for f in files):
            raise InvalidArgumentError("FragmentMetadata files must be DataFile objects")
        if deletion_file is not None and not isinstance(deletion_file, DeletionFile):
            raise InvalidArgumentError(f"deletion_file must be a DeletionFile, got {type(deletion_file).__name__}")
        rows = None if physical_rows is None else int(physical_rows)
        data: Dict[str, Any] = {"id": int(id), "files": [f._to_dict() for f in files], "physical_rows": rows}
        if deletion_file is not None:
            data["deletion_file"] = deletion_file._to_dict()
        if row_id_meta is not None:
            if not isinstance(row_id_meta, RowIdMeta):
                raise InvalidArgumentError(f"row_id_meta must be a RowIdMeta, got {type(row_id_meta).__name__}")
            data["row_id_sequence"] = row_id_meta._proto()
        for name, meta in (
            ("created_at_version_meta", created_at_version_meta),
            ("last_updated_at_version_meta", last_updated_at_version_meta),
        ):
            if meta is not None:
                if not isinstance(meta, RowDatasetVersionMeta):
                    raise InvalidArgumentError(f"{name} must be a RowDatasetVersionMeta, got {type(meta).__name__}")
                data[_META_KEYS[name]] = _version_meta_to_proto(_META_KEYS[name], meta)
        self._data = data

    @classmethod
    def _from_dict(cls, data: Dict[str, Any]) -> "FragmentMetadata":
        """Wraps a manifest entry (its JSON form) without copying."""
        out = cls.__new__(cls)
        out._data = data
        return out

    @property
    def id(self) -> int:
        """Fragment id (assigned at commit time for new fragments)."""
        return int(self._data.get("id", 0))

    @property
    def physical_rows(self) -> Optional[int]:
        """Rows stored, deleted ones included (``None``: not known yet, see the class)."""
        rows = self._data.get("physical_rows", 0)
        return None if rows is None else int(rows)

    @property
    def num_deletions(self) -> int:
        """Rows marked deleted."""
        d = self._data.get("deletion_file")
        return int(d.get("num_deleted_rows", 0)) if d else 0

    @property
    def num_rows(self) -> Optional[int]:
        """Live rows (``None`` while :attr:`physical_rows` is)."""
        rows = self.physical_rows
        return None if rows is None else rows - self.num_deletions

    @property
    def files(self) -> List[DataFile]:
        """The data files."""
        return [DataFile._from_dict(f) for f in self._data.get("files", [])]

    def data_files(self) -> List[DataFile]:
        """The data files (pylance's deprecated spelling of :attr:`files`)."""
        warnings.warn(
            "FragmentMetadata.data_files is deprecated. Use .files instead.", DeprecationWarning, stacklevel=2
        )
        return self.files

    @property
    def deletion_file(self) -> Optional[DeletionFile]:
        """The deletion file, if any."""
        d = self._data.get("deletion_file")
        if not d:
            return None
        return DeletionFile(
            read_version=d.get("read_version", 0),
            id=d.get("id", 0),
            file_type="bitmap" if d.get("file_type", 0) in (1, "BITMAP_ARROW_ARRAY", "bitmap") else "array",
            num_deleted_rows=d.get("num_deleted_rows", 0),
            base_id=d.get("base_id"),
        )

    @property
    def row_id_meta(self) -> Optional[RowIdMeta]:
        """The stable row ids of the fragment's rows (``None`` without stable row ids)."""
        return RowIdMeta._from_proto(self._data.get("row_id_sequence") or {})

    @property
    def created_at_version_meta(self) -> Optional[RowDatasetVersionMeta]:
        """The version each row was created in (datasets with stable row ids), or ``None``."""
        key = "created_at_version_sequence"
        return _version_meta_from_proto(key, self._data.get(key))

    @property
    def last_updated_at_version_meta(self) -> Optional[RowDatasetVersionMeta]:
        """The version each row was last updated in (datasets with stable row ids), or ``None``."""
        key = "last_updated_at_version_sequence"
        return _version_meta_from_proto(key, self._data.get(key))

    def row_versions(self, key: str) -> np.ndarray:
        """The version of each physical row in the fragment's row version sequence `key`
        (``lineage.CREATED`` or ``UPDATED``); version 1 throughout without one."""
        return lineage.fragment_versions(self._data, key)

    @property
    def overlays(self) -> List[Any]:
        """Data overlay files: always empty (lancepy does not write or read overlays)."""
        return []

    def to_json(self) -> Dict[str, Any]:
        """A JSON-able dict in pylance's layout (``FragmentMetadata.from_json`` of either
        library reads it)."""
        deletion = self.deletion_file
        metas = {name: getattr(self, name) for name in _META_KEYS}
        out: Dict[str, Any] = {
            "id": self.id,
            "files": [{k: f.get(k) for k in _DATA_FILE_KEYS} for f in self._data.get("files", [])],
            "overlays": [],
            "physical_rows": self.physical_rows,
            "deletion_file": None if deletion is None else deletion.asdict(),
            **{name: None if meta is None else meta.asdict() for name, meta in metas.items()},
        }
        return json.loads(json.dumps(out))

    def _manifest_json(self) -> Dict[str, Any]:
        """A copy of the manifest entry (the JSON form of ``DataFragment``)."""
        return json.loads(json.dumps(self._data))

    @staticmethod
    def from_json(json_data: Union[str, Dict[str, Any]]) -> "FragmentMetadata":
        """Inverse of :meth:`to_json` (accepts the dict or its JSON text; also a manifest
        entry's JSON form). ``physical_rows`` may be null (see the class)."""
        data = json.loads(json_data) if isinstance(json_data, str) else json_data
        if not isinstance(data, dict) or "files" not in data:
            raise InvalidArgumentError("fragment metadata must be a dict with a 'files' entry")
        data = dict(data)
        if data.pop("overlays", None):
            raise UnsupportedError("fragment metadata with overlays is not supported by lancepy")
        # pylance's JSON: the row-id / row-version sequences under their Python names, and
        # deletion file types as text; a manifest entry has them under the protobuf names.
        for name, key in _META_KEYS.items():
            value = data.pop(name, None)
            if value is None:
                continue
            if key == "row_id_sequence":
                data[key] = RowIdMeta.from_dict(value)._proto()
            else:
                data[key] = _version_meta_to_proto(key, RowDatasetVersionMeta.from_dict(value))
        deletion = data.get("deletion_file")
        if isinstance(deletion, dict) and isinstance(deletion.get("file_type"), str):
            kind = deletion["file_type"].lower()
            if kind not in ("array", "bitmap"):
                raise InvalidArgumentError(f"unknown deletion file type {deletion['file_type']!r}")
            data["deletion_file"] = dict(deletion, file_type=1 if kind == "bitmap" else 0)
        return FragmentMetadata._from_dict(data)

    def __getstate__(self) -> str:
        return json.dumps(self._data)

    def __setstate__(self, state: str) -> None:
        self._data = json.loads(state)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FragmentMetadata) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        # pylance's layout (its tests look for e.g. "file_major_version=2" in it)
        files = ", ".join(
            f"DataFile(path={str(f.path)!r}, fields={list(f.fields)!r}, column_indices={list(f.column_indices or [])!r}, "
            f"file_major_version={f.file_major_version}, file_minor_version={f.file_minor_version}, "
            f"file_size_bytes={f.file_size_bytes!r})"
            for f in self.files
        )
        return (
            f"FragmentMetadata(id={self.id}, files=[{files}], physical_rows={self.physical_rows}, "
            f"deletion_file={self.deletion_file!r}, row_id_meta={self.row_id_meta!r}, "
            f"created_at_version_meta={self.created_at_version_meta!r}, "
            f"last_updated_at_version_meta={self.last_updated_at_version_meta!r}, overlays=[])"
        )
