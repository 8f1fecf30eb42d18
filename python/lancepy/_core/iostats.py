"""Per-object I/O statistics (pylance's ``io_stats_snapshot`` / ``io_stats_incremental``).

A dataset object owns a native ``IoTracker``: while it is current on a thread, every read
and write made there, and on the pool threads working for that thread, is added to it (as
well as to the process's :func:`lancepy.io_counts`). :func:`track_io` makes a class's methods
and properties run with their object's tracker current, so whatever a method reads, through
any module, counts for the object it was called on; streams and iterators made inside keep
counting for it while they are consumed (the native streams capture it, Python generators
re-enter it on each step). Checkouts of a dataset share its tracker, as pylance's share
their object store.
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any, Callable, Dict, Iterator, Optional, Sequence

__all__ = ["IOStats", "track_io"]


class IOStats:
    """I/O counts, with pylance's attribute names: ``read_iops`` (read requests that reached
    storage: ``pread`` calls, ranged GETs) and ``read_bytes``, ``write_iops`` (objects put or
    files finished) and ``written_bytes``. lancepy adds what local takes copy out of mapped
    files (``mapped_bytes``; the kernel fetches what is not cached) and the ranges it asks
    the kernel to fetch ahead of such copies (``prefetch_iops``, ``prefetch_bytes``)."""

    __slots__ = ("read_iops", "read_bytes", "write_iops", "written_bytes", "mapped_bytes", "prefetch_iops", "prefetch_bytes")

    def __init__(self, counts: Dict[str, int]) -> None:
        self.read_iops = counts["requests"]
        self.read_bytes = counts["bytes"]
        self.write_iops = counts["write_requests"]
        self.written_bytes = counts["write_bytes"]
        self.mapped_bytes = counts["mapped_bytes"]
        self.prefetch_iops = counts["prefetch_requests"]
        self.prefetch_bytes = counts["prefetch_bytes"]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IOStats):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        return (f"IOStats(read_iops={self.read_iops}, read_bytes={self.read_bytes}, write_iops={self.write_iops}, "
                f"write_bytes={self.written_bytes}, mapped_bytes={self.mapped_bytes})")


_current = threading.local()  # .tracker: the innermost tracker a wrapper made current here


def _tracked_function(fn: Callable[..., Any], tracker_of: Callable[[Any], Optional[Any]]) -> Callable[..., Any]:
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def steps(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            tracker = tracker_of(self)
            it = fn(self, *args, **kwargs)
            if tracker is None:
                return (yield from it)
            while True:
                outer = getattr(_current, "tracker", None)
                _current.tracker = tracker
                try:
                    with tracker:
                        item = next(it)
                except StopIteration as stop:
                    return stop.value
                finally:
                    _current.tracker = outer
                yield item

        return steps

    @functools.wraps(fn)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        tracker = tracker_of(self)
        outer = getattr(_current, "tracker", None)
        if tracker is None or tracker is outer:  # (nested calls of one object: already current)
            return fn(self, *args, **kwargs)
        _current.tracker = tracker
        try:
            with tracker:
                return fn(self, *args, **kwargs)
        finally:
            _current.tracker = outer

    return call


def track_io(tracker_of: Callable[[Any], Optional[Any]], dunders: Sequence[str] = ()) -> Callable[[type], type]:
    """A class decorator: every method and property getter defined in the class body
    (dunder methods other than `dunders`, static and class methods excepted) runs with
    ``tracker_of(self)`` current (nothing is tracked while it returns ``None``, e.g. during
    ``__init__``)."""

    def decorate(cls: type) -> type:
        for name, member in list(vars(cls).items()):
            if (name.startswith("__") and name not in dunders) or isinstance(member, (staticmethod, classmethod)):
                continue
            if isinstance(member, property) and member.fget is not None:
                setattr(cls, name, property(_tracked_function(member.fget, tracker_of), member.fset, member.fdel,
                                            member.__doc__))
            elif inspect.isfunction(member):
                setattr(cls, name, _tracked_function(member, tracker_of))
        return cls

    return decorate


def dataset_tracker(obj: Any) -> Optional[Any]:
    """The tracker of a dataset object (``None`` before its ``__init__`` set one)."""
    return obj.__dict__.get("_io")


def owner_tracker(obj: Any) -> Optional[Any]:
    """The tracker of the dataset an object reads for (its ``_ds``: scanners, fragments)."""
    ds = obj.__dict__.get("_ds")
    return None if ds is None else ds.__dict__.get("_io")


class IoStatsMembers:
    """pylance's I/O statistics of a dataset object (and of its checkouts)."""

    def io_stats_snapshot(self) -> IOStats:
        """The I/O this dataset object (and its checkouts) did so far, without resetting
        the counts (see :class:`IOStats`)."""
        return IOStats(self._io.counts())  # type: ignore[attr-defined]

    def io_stats_incremental(self) -> IOStats:
        """The I/O since the last call (or since the object was made), resetting the counts."""
        return IOStats(self._io.take())  # type: ignore[attr-defined]
