"""pylance's ``lance.commit``: the commit-conflict error and the type of a commit lock.

:class:`CommitConflictError` is :class:`lancepy.exceptions.CommitConflictError` (an
``OSError`` with ``retryable``). :data:`CommitLock` is the type of pylance's ``commit_lock=``
argument, a function ``version -> context manager`` entered before that version's manifest
is published and left after (with the error, if the publish failed); a lock that raises
:class:`CommitConflictError` makes the commit retry as if the version were taken (see
:mod:`lancepy._table.commit`).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Callable

from lancepy.exceptions import CommitConflictError

CommitLock = Callable[[int], AbstractContextManager]

__all__ = ["CommitConflictError", "CommitLock"]
