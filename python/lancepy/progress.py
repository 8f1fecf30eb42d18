"""Progress of long writes and index builds, in pylance's shape (``lance.progress``).

:class:`FragmentWriteProgress` is what ``write_dataset(progress=...)`` and
``write_fragments(progress=...)`` call: ``begin(fragment)`` before a fragment's rows are
written and ``complete(fragment)`` after, with the fragment's :class:`FragmentMetadata`.
:class:`FileSystemFragmentWriteProgress` records each fragment in progress as files under a
directory (so that a distributed job can find what a dead worker left half-written), and
:class:`IndexProgress` is one event of an index build.
"""

from __future__ import annotations

import json
import posixpath
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Literal, Optional

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.fragments import FragmentMetadata

__all__ = [
    "FileSystemFragmentWriteProgress",
    "FragmentWriteProgress",
    "IndexProgress",
    "NoopFragmentWriteProgress",
]


@dataclass(frozen=True)
class IndexProgress:
    """One event of an index build: ``event`` is ``"start"``, ``"progress"`` or
    ``"complete"`` of stage ``stage``; ``completed`` of ``total`` units of ``unit`` are done
    (either may be unknown)."""

    event: Literal["start", "progress", "complete"]
    stage: str
    completed: Optional[int] = None
    total: Optional[int] = None
    unit: str = ""

    @property
    def fraction(self) -> Optional[float]:
        """``completed / total`` capped at 1.0, or ``None`` when either is unknown (a total
        of 0 counts as unknown)."""
        if self.completed is None or not self.total:
            return None
        return min(self.completed / self.total, 1.0)


class FragmentWriteProgress(ABC):
    """Hears about every fragment a write produces. Subclass it and pass an instance as
    ``progress=`` to :func:`lancepy.write_dataset` or
    :func:`lancepy.fragment.write_fragments`."""

    @abstractmethod
    def begin(self, fragment: "FragmentMetadata") -> None:
        """Called before the rows of `fragment` are written (its id and files may not be
        assigned yet)."""

    @abstractmethod
    def complete(self, fragment: "FragmentMetadata") -> None:
        """Called once `fragment` is completely written."""


class NoopFragmentWriteProgress(FragmentWriteProgress):
    """A progress that does nothing (the default)."""

    def begin(self, fragment: "FragmentMetadata") -> None:
        """Does nothing."""

    def complete(self, fragment: "FragmentMetadata") -> None:
        """Does nothing."""


class FileSystemFragmentWriteProgress(FragmentWriteProgress):
    """Records fragments in progress as files under `base_uri` (a local path or any URI
    ``pyarrow.fs`` understands): on :meth:`begin`, ``fragment_{id}.in_progress`` (JSON:
    ``{"fragment_id": id, "metadata": metadata}``) and ``fragment_{id}.json`` (the fragment's
    metadata as JSON); on :meth:`complete`, the ``.in_progress`` file is removed. `metadata`
    (e.g. which worker writes) is stored with each fragment in progress."""

    #: The suffix of the file marking a fragment in progress.
    PROGRESS_EXT: str = ".in_progress"

    def __init__(self, base_uri: str, metadata: Optional[Dict[str, str]] = None) -> None:
        from pyarrow.fs import FileSystem

        self._fs, self._base_path = FileSystem.from_uri(base_uri)
        self._metadata: Dict[str, str] = dict(metadata or {})

    def _in_progress_path(self, fragment: "FragmentMetadata") -> str:
        return posixpath.join(self._base_path, f"fragment_{fragment.id}{self.PROGRESS_EXT}")

    def _fragment_file(self, fragment: "FragmentMetadata") -> str:
        return posixpath.join(self._base_path, f"fragment_{fragment.id}.json")

    def begin(self, fragment: "FragmentMetadata") -> None:
        """Writes the fragment's in-progress marker and its metadata."""
        self._fs.create_dir(self._base_path, recursive=True)
        marker = {"fragment_id": fragment.id, "metadata": self._metadata}
        with self._fs.open_output_stream(self._in_progress_path(fragment)) as out:
            out.write(json.dumps(marker).encode("utf-8"))
        with self._fs.open_output_stream(self._fragment_file(fragment)) as out:
            out.write(json.dumps(fragment.to_json()).encode("utf-8"))

    def complete(self, fragment: "FragmentMetadata") -> None:
        """Removes the fragment's in-progress marker."""
        self._fs.delete_file(self._in_progress_path(fragment))
