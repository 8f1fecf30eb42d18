"""``storage_options``: how a dataset or file on object storage is reached.

The keys are pylance's (which are ``object_store``'s): ``aws_access_key_id``,
``aws_secret_access_key``, ``aws_session_token``, ``aws_region`` / ``region``,
``aws_endpoint`` / ``endpoint``, ``allow_http``, ``virtual_hosted_style_request``, the
``google_*`` and ``azure_*`` keys, ``timeout`` / ``connect_timeout``, plus
``client_max_retries`` and ``client_retry_timeout`` (seconds). Environment variables
(``AWS_*``, ``GOOGLE_*``, ``AZURE_*``) are read first; the options override them. An unknown
key raises :class:`~lancepy.exceptions.UnsupportedError` when the store is opened.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Tuple

from lancepy.exceptions import InvalidArgumentError

StorageOptions = Optional[Mapping[str, Any]]


def normalize_storage_options(options: StorageOptions) -> Optional[Dict[str, str]]:
    """A plain ``{str: str}`` copy of `options` (``None`` stays ``None``).

    Values must be strings as in pylance; booleans and numbers are accepted and spelled the
    way the stores parse them (``True`` → ``"true"``).
    """
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(f"storage_options must be a dict of strings, got {type(options).__name__}")
    out: Dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(f"storage_options keys must be strings, got {key!r}")
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            out[key] = str(value)
        else:
            raise InvalidArgumentError(
                f"storage_options[{key!r}] must be a string, got {type(value).__name__}"
            )
    return out


def reader_cache_info() -> Dict[str, int]:
    """What the process-wide cache of open data files holds: ``files`` (readers kept),
    ``open_files`` (those of them holding an open file descriptor), ``bytes`` (what they hold
    in memory), and its limits ``max_bytes`` / ``max_files``.

    A local data file of at most 16 KiB is read whole when opened and closed at once: its
    reader serves later reads from memory and holds no descriptor (it counts in ``files``
    and ``bytes``, not in ``open_files``).

    A reader is cached per file URI *and* per store it was read from (storage options and
    the cloud environment variables), so a dataset opened with other credentials, another
    endpoint or region never reuses a reader opened for this one. Readers are evicted least
    recently used first when either limit is passed, and when their file is deleted
    (cleanup, :meth:`LanceDataset.drop`).
    """
    from lancepy import _lancepy

    return dict(_lancepy.reader_cache_info())


def set_reader_cache_limits(max_bytes: Optional[int] = None, max_files: Optional[int] = None) -> None:
    """Sets the limits of the cache of open data files (``None`` keeps a limit as it is) and
    evicts down to them. ``max_bytes`` bounds what every reader holds; ``max_files`` the
    readers holding an open file descriptor (readers of small files held in memory hold none).
    Defaults: 256 MiB and 1,024 files, or the environment variables
    ``LANCEPY_READER_CACHE_BYTES`` / ``LANCEPY_READER_CACHE_FILES`` read at first use.
    ``max_files=0`` turns the cache off (every read opens its files anew). A scan over more
    data files than the cache holds keeps the readers it opens only while there is room,
    evicting none."""
    from lancepy import _lancepy

    for name, value in (("max_bytes", max_bytes), ("max_files", max_files)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise InvalidArgumentError(f"{name} must be a non-negative int or None, got {value!r}")
    _lancepy.set_reader_cache_limits(max_bytes, max_files)


_CLOUD_ENV_PREFIXES = ("AWS_", "GOOGLE_", "AZURE_")


def origin_key(uri: str, storage_options: StorageOptions) -> Tuple[Any, ...]:
    """A key for anything cached per object read from `uri`: the URI with everything that
    decides where its bytes come from (the storage options and the cloud environment
    variables the clients read). Caches keyed by it never serve what one dataset object read
    with some credentials, endpoint or region to another opened with different ones."""
    options = normalize_storage_options(storage_options) or {}
    if "://" not in uri or uri.startswith("file://"):
        env: Tuple[Tuple[str, str], ...] = ()  # (a local file: no cloud client reads it)
    else:
        env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_CLOUD_ENV_PREFIXES)))
    return (uri, tuple(sorted(options.items())), env)


def io_counts() -> Dict[str, int]:
    """What this process has read from and written to storage since it started, by every
    dataset and file: ``requests`` (``pread`` calls, ranged GETs) and their ``bytes``;
    ``mapped_bytes`` copied out of mapped local files (rows of a take: the kernel fetches what
    is not cached); ``prefetch_requests`` / ``prefetch_bytes`` asked of the kernel ahead of
    such copies when a take is cold; ``write_requests`` (objects put, files finished) and
    ``write_bytes``. Take the difference of two calls to measure one operation; one dataset
    object's share is its ``io_stats_snapshot()``."""
    from lancepy import _lancepy

    return dict(_lancepy.io_counts())
