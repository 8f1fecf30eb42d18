"""pylance's ``lance.commit``: the commit-conflict error and the type of a commit lock.

:class:`CommitConflictError` is :class:`lancepy.exceptions.CommitConflictError` (an
``OSError`` with ``retryable``). :data:`CommitLock` is the type of pylance's ``commit_lock=``
argument, a function ``version -> context manager`` held while that version is committed;
lancepy commits with a conditional put and takes no external lock, so functions given it
raise :class:`~lancepy.exceptions.NotSupportedError` naming ``commit_lock``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Callable

from lancepy.exceptions import CommitConflictError

CommitLock = Callable[[int], AbstractContextManager]

__all__ = ["CommitConflictError", "CommitLock"]
