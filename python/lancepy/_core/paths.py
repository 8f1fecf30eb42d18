"""How a user's path or URI is read before it reaches the store layer.

* ``~`` and ``~user`` at the start of a local path are expanded, as pylance does (a dataset
  written to ``"~/x.lance"`` lands in the home directory, never in a directory named ``~``).
* ``memory://`` with no name means a new, empty in-memory dataset on each call, as in
  pylance: it is given a unique name (``memory://lancepy-anon-<uuid>``) in lancepy's
  process-wide memory store; nothing is ever written to disk.
"""

from __future__ import annotations

import os
import uuid
from typing import Optional, Union

from lancepy.exceptions import InvalidArgumentError

__all__ = ["expand_path", "is_anonymous_memory", "local_path"]

MEMORY = "memory://"


def is_anonymous_memory(uri: str) -> bool:
    """Whether `uri` is ``memory://`` with no name (``memory://`` or ``memory:///...``
    made only of slashes)."""
    return uri.startswith(MEMORY) and not uri[len(MEMORY):].strip("/")


def expand_path(uri: str) -> str:
    """`uri` as the store layer must see it: ``~`` expanded in a local path, a fresh unique
    name for an anonymous ``memory://``; anything else unchanged."""
    if is_anonymous_memory(uri):
        return f"{MEMORY}lancepy-anon-{uuid.uuid4().hex}"
    if uri.startswith("~"):
        return os.path.expanduser(uri)
    return uri


def local_path(uri: str) -> Optional[str]:
    """The absolute file-system path of a local `uri` (a plain path or ``file://``), else None."""
    if uri.startswith("file://"):
        return os.path.abspath(uri[len("file://"):])
    return None if "://" in uri else os.path.abspath(uri)


def _uri(uri: PathLike) -> str:
    """A dataset URI as lancepy uses it: ``~`` expanded, an anonymous ``memory://`` given
    a fresh name (see :mod:`lancepy._core.paths`), trailing slashes dropped."""
    u = os.fspath(uri)
    if not u:
        raise InvalidArgumentError("the dataset URI is empty")
    u = expand_path(u)
    return u.rstrip("/") if len(u) > 1 else u


def _local_path(uri: str) -> Optional[str]:
    """The filesystem path of a local `uri` (a plain path or ``file://``), else ``None``."""
    if uri.startswith("file://"):
        return uri[len("file://"):]
    return None if "://" in uri else uri


PathLike = Union[str, "os.PathLike[str]"]
