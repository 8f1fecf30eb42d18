"""pylance's ``lance.commit``: the names its users import for commits (the conflict error,
and the type of a commit lock, which lancepy does not take: ``commit_lock=`` raises
:class:`~lancepy.exceptions.NotSupportedError`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Callable

from lancepy.exceptions import CommitConflictError

#: A function from a version number to a context manager holding the lock for that commit.
CommitLock = Callable[[int], AbstractContextManager]

__all__ = ["CommitConflictError", "CommitLock"]
