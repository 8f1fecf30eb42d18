"""The typed pieces of a manifest that travel between processes: :class:`FragmentMetadata`,
:class:`DataFile`, :class:`DeletionFile`, and data storage versions."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from lancepy.exceptions import InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:
    pass


DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024


#: pylance's default: 90 GiB.
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024**3


DEFAULT_DATA_STORAGE_VERSION = "2.2"


_VERSION_ALIASES = {"stable": "2.2", "2.0": "2.0", "2.1": "2.1", "2.2": "2.2"}


def normalize_storage_version(version: Optional[str]) -> str:
    """``"2.0"``, ``"2.1"`` or ``"2.2"`` from a user's spelling (``"stable"`` = 2.2)."""
    if version is None:
        return DEFAULT_DATA_STORAGE_VERSION
    v = str(version).strip().lower()
    if v in _VERSION_ALIASES:
        return _VERSION_ALIASES[v]
    if v in ("legacy", "0.1", "0.2", "next", "2.3"):
        raise UnsupportedError(f"data_storage_version {version!r}: lancepy writes 2.0, 2.1 and 2.2 data files")
    raise InvalidArgumentError(f"unknown data_storage_version {version!r}; use '2.0', '2.1', '2.2' or 'stable'")


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
            "path": self.path,
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

    def path(self, fragment_id: int, base_uri: Optional[str] = None) -> str:
        """Path relative to the root of its base (the dataset root if `base_id` is ``None``),
        or under `base_uri` when given."""
        ext = "bin" if self.file_type == "bitmap" else "arrow"
        rel = f"_deletions/{fragment_id}-{self.read_version}-{self.id}.{ext}"
        return rel if base_uri is None else f"{base_uri.rstrip('/')}/{rel}"

    def _to_dict(self) -> Dict[str, Any]:
        if self.file_type not in ("array", "bitmap"):
            raise InvalidArgumentError(f"deletion file_type must be 'array' or 'bitmap', got {self.file_type!r}")
        out: Dict[str, Any] = {
            "file_type": 1 if self.file_type == "bitmap" else 0,
            "read_version": self.read_version,
            "id": self.id,
            "num_deleted_rows": self.num_deleted_rows,
        }
        if self.base_id is not None:
            out["base_id"] = self.base_id
        return out


_DATA_FILE_KEYS = ("path", "fields", "column_indices", "file_major_version", "file_minor_version", "file_size_bytes", "base_id")


_SEQUENCE_KEYS = ("row_id_sequence", "last_updated_at_version_sequence", "created_at_version_sequence")


class FragmentMetadata:
    """The manifest entry of one fragment (``lance.table.DataFragment``).

    Plain data: picklable and convertible to/from JSON, so it can travel from the task that
    wrote a fragment to the process that commits it. Constructed like pylance's
    (``FragmentMetadata(id, files, physical_rows, deletion_file)``); row-id and
    row-version metadata and overlays cannot be given (they raise
    :class:`~lancepy.exceptions.NotSupportedError`).
    """

    __slots__ = ("_data",)

    def __init__(
        self,
        id: int,
        files: List[DataFile],
        physical_rows: int,
        deletion_file: Optional[DeletionFile] = None,
        row_id_meta: Any = None,
        created_at_version_meta: Any = None,
        last_updated_at_version_meta: Any = None,
        overlays: Optional[List[Any]] = None,
    ) -> None:
        for name, value in (
            ("row_id_meta", row_id_meta),
            ("created_at_version_meta", created_at_version_meta),
            ("last_updated_at_version_meta", last_updated_at_version_meta),
            ("overlays", overlays or None),
        ):
            if value is not None:
                raise UnsupportedError(f"FragmentMetadata({name}=...) is not supported by lancepy")
        if not all(isinstance(f, DataFile) for f in files):
            raise InvalidArgumentError("FragmentMetadata files must be DataFile objects")
        data: Dict[str, Any] = {"id": int(id), "files": [f._to_dict() for f in files], "physical_rows": int(physical_rows)}
        if deletion_file is not None:
            data["deletion_file"] = deletion_file._to_dict()
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
    def physical_rows(self) -> int:
        """Rows stored, deleted ones included."""
        return int(self._data.get("physical_rows", 0))

    @property
    def num_deletions(self) -> int:
        """Rows marked deleted."""
        d = self._data.get("deletion_file")
        return int(d.get("num_deleted_rows", 0)) if d else 0

    @property
    def num_rows(self) -> int:
        """Live rows."""
        return self.physical_rows - self.num_deletions

    @property
    def files(self) -> List[DataFile]:
        """The data files."""
        return [DataFile._from_dict(f) for f in self._data.get("files", [])]

    def data_files(self) -> List[DataFile]:
        """The data files (pylance's older spelling of :attr:`files`)."""
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

    def to_json(self) -> Dict[str, Any]:
        """A JSON-able dict in pylance's layout (``FragmentMetadata.from_json`` of either
        library reads it). lancepy's stable-row-id sequences ride along under their
        protobuf names (pylance ignores them)."""
        d = self._data
        deletion = self.deletion_file
        out: Dict[str, Any] = {
            "id": self.id,
            "files": [{k: f.get(k) for k in _DATA_FILE_KEYS} for f in d.get("files", [])],
            "overlays": [],
            "physical_rows": self.physical_rows,
            "deletion_file": None
            if deletion is None
            else {
                "read_version": deletion.read_version,
                "id": deletion.id,
                "file_type": deletion.file_type,
                "num_deleted_rows": deletion.num_deleted_rows,
                "base_id": deletion.base_id,
            },
            "row_id_meta": None,
            "created_at_version_meta": None,
            "last_updated_at_version_meta": None,
        }
        for key in _SEQUENCE_KEYS:
            if d.get(key) is not None:
                out[key] = d[key]
        return json.loads(json.dumps(out))

    def _manifest_json(self) -> Dict[str, Any]:
        """A copy of the manifest entry (the JSON form of ``DataFragment``)."""
        return json.loads(json.dumps(self._data))

    @staticmethod
    def from_json(json_data: Union[str, Dict[str, Any]]) -> "FragmentMetadata":
        """Inverse of :meth:`to_json` (accepts the dict or its JSON text)."""
        data = json.loads(json_data) if isinstance(json_data, str) else json_data
        if not isinstance(data, dict) or "files" not in data:
            raise InvalidArgumentError("fragment metadata must be a dict with a 'files' entry")
        data = dict(data)
        # pylance's JSON (FragmentMetadata.to_json there): the same fields, plus its own
        # row-id / version metadata and overlays, and deletion file types as text.
        for key in ("overlays", "row_id_meta", "created_at_version_meta", "last_updated_at_version_meta"):
            if data.get(key):
                raise UnsupportedError(f"fragment metadata with {key} is not supported by lancepy")
            data.pop(key, None)
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
        return f"FragmentMetadata(id={self.id}, physical_rows={self.physical_rows}, files={[f.path for f in self.files]})"
