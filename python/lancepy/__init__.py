"""lancepy: an independent implementation of the Lance columnar format.

The Rust core (``lancepy._lancepy``) reads and writes Lance files; this package is the thin
Python API on top. Arrow data crosses the boundary zero-copy through the Arrow PyCapsule
interface.
"""

from __future__ import annotations

from lancepy import exceptions
from lancepy._lancepy import __version__
from lancepy.file import LanceFileReader, LanceFileWriter

__all__ = ["__version__", "exceptions", "LanceFileReader", "LanceFileWriter"]
