"""pylance's ``lance.Session``: the caches a dataset object reads through, and what
:func:`lancepy.dataset` does with its cache, session and commit-lock arguments.

A session holds two :class:`~lancepy._core.cache.ByteLruCache`\\ s:

- the **index cache** (default 6 GiB, as pylance): an IVF index's model (centroids,
  partition offsets, codebook) and, one entry per partition, the partitions a search has
  read (row ids and vectors / codes), so a search probes cached partitions without I/O;
- the **metadata cache** (default 1 GiB): the manifests of the versions opened through the
  session, so that opening a version again (``checkout_version``, ``dataset(uri,
  version=n, session=s)``) reads no manifest.

Every dataset opened without ``session=`` gets a new session (as in pylance); the objects
derived from it (``checkout_version``) share it. ``ds.session().size_bytes()`` is what the
caches hold; ``ds._ds.index_cache_hit_rate()`` and ``index_cache_entry_count()`` are
pylance's counters of the index cache.
"""

from __future__ import annotations

import inspect
import os
import warnings
from typing import Any, Dict, List, Optional, Tuple, Union

from lancepy._core.args import _refuse
from lancepy._core.cache import ByteLruCache
from lancepy._core.iostats import dataset_tracker, track_io
from lancepy._core.paths import PathLike, _uri, local_path
from lancepy._core.storage import normalize_storage_options, origin_key
from lancepy._table.snapshot import DatasetView
from lancepy.exceptions import InvalidArgumentError

__all__ = ["Session", "DEFAULT_INDEX_CACHE_SIZE", "DEFAULT_METADATA_CACHE_SIZE"]

DEFAULT_INDEX_CACHE_SIZE = 6 * 1024 * 1024 * 1024
DEFAULT_METADATA_CACHE_SIZE = 1024 * 1024 * 1024
#: pylance's conversion of the deprecated ``index_cache_size`` (entries) to bytes.
_BYTES_PER_INDEX_CACHE_ENTRY = 20 * 1024 * 1024


class Session:
    """The caches of the datasets opened with it (pylance's ``lance.Session``): budgets in
    bytes, ``None`` for pylance's defaults (6 GiB of index data, 1 GiB of metadata). Cache
    backends (``*_cache_backend``) are pylance's plug-ins and not supported."""

    def __init__(
        self,
        index_cache_size_bytes: Optional[int] = None,
        metadata_cache_size_bytes: Optional[int] = None,
        index_cache_backend: Optional[Union[str, Dict[str, Any]]] = None,
        metadata_cache_backend: Optional[Union[str, Dict[str, Any]]] = None,
    ) -> None:
        _refuse(index_cache_backend=index_cache_backend, metadata_cache_backend=metadata_cache_backend)
        self._index = ByteLruCache(
            DEFAULT_INDEX_CACHE_SIZE if index_cache_size_bytes is None else index_cache_size_bytes, "index_cache_size_bytes"
        )
        self._metadata = ByteLruCache(
            DEFAULT_METADATA_CACHE_SIZE if metadata_cache_size_bytes is None else metadata_cache_size_bytes,
            "metadata_cache_size_bytes",
        )

    def size_bytes(self) -> int:
        """Bytes held by both caches now."""
        return self._index.size_bytes + self._metadata.size_bytes

    def index_cache_size_bytes(self) -> int:
        """Bytes held by the index cache now."""
        return self._index.size_bytes

    def is_same_as(self, other: "Session") -> bool:
        """Whether `other` is this session (datasets sharing caches)."""
        return self is other

    def __repr__(self) -> str:
        return f"Session(index_cache_size_bytes={self._index.size_bytes}, metadata_cache_size_bytes={self._metadata.size_bytes})"


class _DatasetCaches:
    """``LanceDataset._ds``: the counters pylance's native dataset object exposes."""

    def __init__(self, ds: Any) -> None:
        self._dataset = ds

    def session(self) -> Session:
        return self._dataset.session()

    def index_cache_entry_count(self) -> int:
        return self._dataset.session()._index.entry_count

    def index_cache_hit_rate(self) -> float:
        return self._dataset.session()._index.hit_rate()


@track_io(dataset_tracker)
class DatasetSessionMembers:
    """The members of :class:`lancepy.LanceDataset` about its session and commit lock, which
    its :class:`~lancepy._table.snapshot.DatasetView` holds (``_view``: the one object holding
    its version, its store, session and commit lock), and installing the view an operation
    committed."""

    _view: DatasetView
    #: pylance's ``default_scan_options``: scanner arguments used where a scan leaves them unset.
    _default_scan_options: Optional[Dict[str, Any]] = None

    def session(self) -> Session:
        """The session holding this dataset's caches (see :mod:`lancepy.session`)."""
        return self._view.session

    def _install(self, view: DatasetView) -> None:
        """Moves this object to `view`, the dataset at the version an operation committed."""
        self._view = view

    def _installed(self, committed: Tuple[DatasetView, Any]) -> Any:
        """Moves this object to the view of `committed` (an operation's ``(view, result)``);
        returns the result."""
        self._view, result = committed
        return result

    @property
    def _ds(self) -> _DatasetCaches:
        return _DatasetCaches(self)


def index_cache(ds: Any) -> ByteLruCache:
    """The index cache of `ds`'s session."""
    return ds.session()._index


def _metadata_key(ds_uri: str, storage_options: Any, version: int) -> Any:
    return ("manifest", origin_key(ds_uri, storage_options), int(version))


def _stamp(uri: str, manifest_path: str) -> Optional[Tuple[int, int, int, int]]:
    """The identity of a local manifest file (device, inode, size, mtime), or ``None`` where
    there is none to check cheaply (object stores, ``memory://``) or the file is gone."""
    root = local_path(uri)
    if root is None:
        return None
    try:
        st = os.stat(os.path.join(root, manifest_path))
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _remember(ds: Any) -> None:
    """Keeps `ds`'s manifest for reopening its version, with its file's identity: a version
    removed by a cleanup, or a dataset deleted and written again at the same URI, is read
    afresh instead of answered from the cache. Only local manifests are kept: on an object
    store the check would cost the request a hit saves."""
    loaded = ds._view.loaded
    stamp = _stamp(ds._view.uri, loaded.path)
    if stamp is not None:
        ds.session()._metadata.put(_metadata_key(ds._view.uri, ds._view.storage_options, loaded.version), (loaded, stamp), loaded.size)


def _cached_manifest(session: Session, uri: str, storage_options: Any, version: Any) -> Any:
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        return None  # (the latest version, a tag: found by listing)
    hit = session._metadata.get(_metadata_key(uri, storage_options, version))
    if hit is None:
        return None
    loaded, stamp = hit
    return loaded if _stamp(uri, loaded.path) == stamp else None


def attach(ds: Any, session: Optional[Session], commit_lock: Any = None, default_scan_options: Optional[Dict[str, Any]] = None) -> Any:
    """Gives `ds` `session` (a new one if ``None``), `commit_lock` and `default_scan_options`;
    returns `ds`."""
    ds._view = ds._view.with_session(Session() if session is None else session, commit_lock)
    ds._default_scan_options = _check_scan_options(type(ds), default_scan_options)
    _remember(ds)
    return ds


def _check_scan_options(cls: Any, options: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    if options is None:
        return None
    if not isinstance(options, dict):
        raise InvalidArgumentError(f"default_scan_options must be a dict of scanner arguments, got {type(options).__name__}")
    known = set(inspect.signature(cls.scanner).parameters) - {"self"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InvalidArgumentError(f"default_scan_options: unknown scanner options {unknown}")
    return dict(options)


def scan_options(ds: Any, args: Dict[str, Any]) -> Dict[str, Any]:
    """A scan's arguments, those left ``None`` taken from `ds`'s ``default_scan_options``
    (as pylance: a default cannot be overridden by ``None``)."""
    defaults = ds._default_scan_options
    if not defaults:
        return args
    merged = dict(args)
    for key, value in defaults.items():
        if merged.get(key) is None:
            merged[key] = value
    return merged


def view_schema(ds: Any) -> Any:
    """The schema `ds` shows with ``default_scan_options``: that of a scan with them (system
    columns such as ``_rowid`` included, as pylance)."""
    return ds.scanner().projected_schema


def checkout(ds: Any, version: Union[int, str]) -> Any:
    """``ds.checkout_version(version)``: another version, with the same session and lock."""
    session = ds.session()
    loaded = _cached_manifest(session, ds._view.uri, ds._view.storage_options, version)
    other = type(ds)(ds._view.uri, version, storage_options=ds._view.storage_options, base_store_params=ds._view.base_store_params,
                     _loaded=loaded, _io=ds._io)
    return attach(other, session, ds._view.commit_lock, ds._default_scan_options)


def open_dataset(
    cls: Any,
    uri: Optional[PathLike] = None,
    version: Union[int, str, None] = None,
    asof: Any = None,
    block_size: Optional[int] = None,
    commit_lock: Any = None,
    index_cache_size: Optional[int] = None,
    storage_options: Any = None,
    default_scan_options: Optional[Dict[str, Any]] = None,
    metadata_cache_size_bytes: Optional[int] = None,
    index_cache_size_bytes: Optional[int] = None,
    read_params: Optional[Dict[str, Any]] = None,
    session: Optional[Session] = None,
    namespace_client: Any = None,
    table_id: Optional[List[str]] = None,
    base_store_params: Optional[Dict[str, Dict[str, str]]] = None,
) -> Any:
    """:func:`lancepy.dataset`, opening an instance of `cls` (``LanceDataset``)."""
    from lancepy._ops.write import _version_asof

    _refuse(block_size=block_size, read_params=read_params, namespace_client=namespace_client, table_id=table_id)
    if index_cache_size is not None:
        warnings.warn(
            "The 'index_cache_size' parameter is deprecated. Use 'index_cache_size_bytes' instead "
            "(index_cache_size is converted to bytes at 20 MiB per entry, as pylance does).",
            DeprecationWarning,
            stacklevel=3,
        )
        if isinstance(index_cache_size, bool) or not isinstance(index_cache_size, int) or index_cache_size < 0:
            raise InvalidArgumentError(f"index_cache_size must be a non-negative int, got {index_cache_size!r}")
        if index_cache_size_bytes is None:
            index_cache_size_bytes = index_cache_size * _BYTES_PER_INDEX_CACHE_ENTRY
    if session is not None:
        if not isinstance(session, Session):
            raise InvalidArgumentError(f"session must be a lancepy.Session, got {type(session).__name__}")
        if index_cache_size_bytes is not None or metadata_cache_size_bytes is not None:
            raise InvalidArgumentError("give cache sizes or a session, not both (a session's caches are sized when it is made)")
    else:
        session = Session(index_cache_size_bytes, metadata_cache_size_bytes)
    if commit_lock is not None and not callable(commit_lock):
        raise InvalidArgumentError(f"commit_lock must be a function version -> context manager, got {type(commit_lock).__name__}")
    if uri is None:
        raise InvalidArgumentError("dataset() needs a uri (lancepy has no namespace support)")
    if asof is not None:
        if version is not None:
            raise InvalidArgumentError("give either version or asof, not both")
        version = _version_asof(_uri(uri), asof, normalize_storage_options(storage_options))
    loaded = _cached_manifest(session, _uri(uri), normalize_storage_options(storage_options), version)
    _check_scan_options(cls, default_scan_options)
    ds = cls(uri, version, storage_options=storage_options, base_store_params=base_store_params, _loaded=loaded)
    return attach(ds, session, commit_lock, default_scan_options)

