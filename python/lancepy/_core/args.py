"""Argument helpers shared by every layer: refusing options lancepy does not implement
(:class:`~lancepy.exceptions.NotSupportedError` naming them), retry defaults, timeouts."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Dict, Optional

import pyarrow as pa

from lancepy.exceptions import InvalidArgumentError, UnsupportedError
from lancepy.file import _to_indices

if TYPE_CHECKING:  # pragma: no cover
    pass


DEFAULT_CONFLICT_RETRIES = 10


DEFAULT_RETRY_TIMEOUT = datetime.timedelta(seconds=30)


def _timeout_seconds(timeout: Any) -> Optional[float]:
    """`commit_timeout` (a ``timedelta``, seconds, or None) in seconds."""
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        seconds = float(timeout)
    else:
        raise InvalidArgumentError(f"commit_timeout must be a timedelta or seconds, got {type(timeout).__name__}")
    if seconds < 0:
        raise InvalidArgumentError(f"commit_timeout must not be negative, got {timeout!r}")
    return seconds


def _args(scope: Dict[str, Any]) -> Dict[str, Any]:
    """A method's arguments (its ``locals()`` on entry) without ``self``, to forward."""
    return {k: v for k, v in scope.items() if k != "self"}


def _refuse(**options: Any) -> None:
    """Raises :class:`UnsupportedError` naming the first of `options` that was given."""
    for name, value in options.items():
        if value is not None:
            raise UnsupportedError(f"{name}={value!r} is not supported by lancepy")


def _indices(indices: Any) -> Any:
    if isinstance(indices, pa.ChunkedArray):
        return indices.combine_chunks()
    return _to_indices(indices)
