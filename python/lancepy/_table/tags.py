"""Tags: named versions stored as ``_refs/tags/{name}.json``."""

from __future__ import annotations

import datetime
import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from lancepy._table import manifest as _manifest
from lancepy._table.manifest import latest_version
from lancepy.exceptions import InvalidArgumentError, NotFoundError, UnsupportedError, VersionNotFoundError

if TYPE_CHECKING:  # pragma: no cover
    pass


TAGS_DIR = "_refs/tags"


class Tags:
    """Named versions, stored as ``_refs/tags/{name}.json`` (``{"version": N, "manifestSize": M, ...}``)."""

    def __init__(self, store: Any, version: Optional[int] = None) -> None:
        """Tags of the dataset at `store` (a ``_lancepy.Store``); `version` is what a
        reference of ``None`` means (the latest version when not given)."""
        self._store = store
        self._version = version

    @staticmethod
    def _check_name(tag: str) -> None:
        if not tag or "/" in tag or tag.startswith(".") or not all(c.isalnum() or c in "-_." for c in tag):
            raise InvalidArgumentError(f"invalid tag name {tag!r}: use letters, digits, '-', '_' and '.'")

    def _path(self, tag: str) -> str:
        self._check_name(tag)
        return f"{TAGS_DIR}/{tag}.json"

    def _resolve(self, reference: Any) -> int:
        """A version number from pylance's tag references: ``None`` (this version), a
        version number, a tag name or ``(branch, version)`` with no branch."""
        if reference is None:
            return self._version if self._version is not None else latest_version(self._store)[0]
        if isinstance(reference, tuple):
            if len(reference) != 2:
                raise InvalidArgumentError(f"a reference tuple is (branch, version), got {reference!r}")
            branch, version = reference
            if branch is not None:
                raise UnsupportedError(f"branch {branch!r}: lancepy does not support branches")
            return latest_version(self._store)[0] if version is None else self._check_version(version)
        if isinstance(reference, str):
            return self.get_version(reference)
        return self._check_version(reference)

    def _check_version(self, version: Any) -> int:
        if not isinstance(version, int) or isinstance(version, bool) or version <= 0:
            raise InvalidArgumentError(f"a version is a positive int, got {version!r}")
        _manifest.load_manifest(self._store, version)  # raises VersionNotFoundError
        return version

    def list(self) -> Dict[str, Dict[str, Any]]:
        """``{tag: {"branch", "version", "created_at", "updated_at", "manifest_size",
        "metadata"}}`` (pylance's keys; times are aware UTC datetimes)."""
        out = {}
        for path, _size, _mtime in self._store.list(TAGS_DIR):
            if not path.endswith(".json"):
                continue
            name = path[len(TAGS_DIR) + 1 : -len(".json")]
            try:
                doc = json.loads(self._store.read(path))
            except (ValueError, NotFoundError):
                continue
            out[name] = {
                "branch": doc.get("branch"),
                "version": doc.get("version"),
                "created_at": _parse_time(doc.get("createdAt")),
                "updated_at": _parse_time(doc.get("updatedAt")),
                "manifest_size": doc.get("manifestSize", doc.get("manifest_size")),
                "metadata": doc.get("metadata") or {},
            }
        return out

    def list_ordered(self, order: Optional[str] = None) -> List[Any]:
        """``[(tag, info)]`` ordered by version, newest first (`order` ``"desc"``, the
        default) or oldest first (``"asc"``); `info` as in :meth:`list`."""
        if order not in (None, "asc", "desc"):
            raise InvalidArgumentError(f"order must be 'asc' or 'desc', got {order!r}")
        items = sorted(self.list().items(), key=lambda kv: (kv[1]["version"], kv[0]))
        return items if order == "asc" else items[::-1]

    def get_version(self, tag: str) -> int:
        """The version a tag points to."""
        try:
            data = json.loads(self._store.read(self._path(tag)))
        except NotFoundError:
            raise VersionNotFoundError(f"tag {tag!r} does not exist in {self._store.uri}") from None
        return int(data["version"])

    def _contents(self, version: int, created: Optional[str] = None) -> bytes:
        # The layout pylance 14 writes (camelCase keys).
        loaded = _manifest.load_manifest(self._store, version)
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        doc = {
            "branch": None,
            "version": version,
            "createdAt": created or now,
            "updatedAt": now,
            "manifestSize": loaded.size,
            "metadata": {},
        }
        return json.dumps(doc, indent=2).encode()

    def create(self, tag: str, reference: Union[int, str, tuple, None] = None) -> None:
        """Tags the version `reference` names (default: this dataset's version); the tag
        must not exist yet."""
        version = self._resolve(reference)
        if not self._store.put_if_not_exists(self._path(tag), self._contents(version)):
            raise InvalidArgumentError(f"tag {tag!r} already exists; use tags.update to move it")

    def update(self, tag: str, reference: Union[int, str, tuple, None] = None) -> None:
        """Moves an existing tag to the version `reference` names (default: this one)."""
        self.get_version(tag)
        version = self._resolve(reference)
        created = json.loads(self._store.read(self._path(tag))).get("createdAt")
        self._store.put(self._path(tag), self._contents(version, created))

    def delete(self, tag: str) -> None:
        """Removes a tag."""
        self.get_version(tag)
        self._store.delete([self._path(tag)])


def _parse_time(text: Any) -> Optional[datetime.datetime]:
    if not isinstance(text, str):
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def load_version(store: Any, version: Union[int, str, None]) -> _manifest.LoadedManifest:
    """Version `version` of the dataset in `store`: a number, a tag name, or ``None`` (the
    latest)."""
    if isinstance(version, str):
        version = Tags(store).get_version(version)
    elif version is not None and (not isinstance(version, int) or isinstance(version, bool) or version < 0):
        raise InvalidArgumentError(f"version must be a non-negative int or a tag name, got {version!r}")
    return _manifest.load_manifest(store, version)
