"""The exceptions lancepy raises.

Every error that comes out of lancepy is a :class:`LanceError`. Subclasses also derive from
the closest Python builtin (``ValueError``, ``IndexError``, ``OSError``, ...) so that code
written against generic Python conventions keeps working::

    try:
        reader.take_rows([10**9])
    except lancepy.exceptions.IndexOutOfRangeError as e:   # also an IndexError
        ...

The native core raises these same classes (they are created in Python and looked up by the
extension module), so tracebacks read ``lancepy.exceptions.CorruptFileError: ...``.
"""

from __future__ import annotations

__all__ = [
    "LanceError",
    "CorruptFileError",
    "UnsupportedError",
    "InvalidArgumentError",
    "EmptyDataError",
    "SchemaMismatchError",
    "ColumnNotFoundError",
    "IndexedColumnError",
    "IndexOutOfRangeError",
    "DeletedRowTakeError",
    "LanceIOError",
    "NotSupportedOnStorageError",
    "NotFoundError",
    "DatasetNotFoundError",
    "BasePathNotFoundError",
    "DatasetAlreadyExistsError",
    "VersionNotFoundError",
    "IndexAlreadyExistsError",
    "IndexNotFoundError",
    "CommitConflictError",
    "InternalError",
    "NotSupportedError",
]


class LanceError(Exception):
    """Base class of every error raised by lancepy."""


class CorruptFileError(LanceError):
    """A file or manifest is truncated, damaged or not a Lance file at all."""


class UnsupportedError(LanceError, NotImplementedError):
    """The data uses a version, encoding, type or feature flag lancepy does not implement."""


class InvalidArgumentError(LanceError, ValueError):
    """An argument passed to lancepy is not valid."""


class SchemaMismatchError(InvalidArgumentError, OSError):
    """Data does not match the schema of the file or dataset it is written to. Also an
    ``OSError``, which is what pylance raises for an append whose schema differs."""

    def __str__(self) -> str:  # OSError would format (errno, strerror); keep the message.
        return str(self.args[0]) if self.args else ""


class IndexedColumnError(InvalidArgumentError, OSError):
    """An operation would rewrite a column an index is built on (a cast): drop the index
    first. Also an ``OSError``, which is what pylance raises there."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ColumnNotFoundError(InvalidArgumentError, KeyError):
    """A requested column does not exist."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain.
        return str(self.args[0]) if self.args else ""


class IndexOutOfRangeError(InvalidArgumentError, IndexError):
    """A row index is outside the file or dataset."""


class DeletedRowTakeError(IndexOutOfRangeError, UnsupportedError):
    """A take of blobs by row id names a deleted or missing row. Also a
    ``NotImplementedError``, the class pylance raises there (it cannot open blobs of
    deleted rows)."""


class LanceIOError(LanceError, OSError):
    """Reading or writing storage failed."""


class NotSupportedOnStorageError(UnsupportedError, LanceIOError):
    """What a dataset's storage layout does not allow (a detached commit to a dataset with
    V1 manifest names): a ``NotImplementedError`` and, as pylance raises, an ``OSError``."""

    def __str__(self) -> str:  # (OSError would format errno, strerror)
        return str(self.args[0]) if self.args else ""


class NotFoundError(LanceIOError, FileNotFoundError):
    """A file or object does not exist."""


class DatasetNotFoundError(NotFoundError, ValueError):
    """There is no Lance dataset at the given URI (a ``ValueError`` too, as pylance raises)."""


class BasePathNotFoundError(NotFoundError):
    """A file of the dataset lives under one of its base paths (e.g. the source dataset of a
    shallow clone) and that base path no longer exists: it was moved or deleted."""


class DatasetAlreadyExistsError(LanceIOError, FileExistsError):
    """A dataset exists where ``mode="create"`` was asked to create one."""


class EmptyDataError(InvalidArgumentError, LanceIOError):
    """There is nothing to write: the data has no columns, or no rows where a file must
    hold some (``LanceFragment.create``). An ``OSError`` too, as pylance raises."""


class VersionNotFoundError(LanceError, LookupError):
    """The requested dataset version or tag does not exist."""


class IndexNotFoundError(LanceError, RuntimeError, KeyError):
    """An index that does not exist (a ``RuntimeError`` and a ``KeyError`` too: pylance raises
    the one or the other, depending on the call)."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain.
        return str(self.args[0]) if self.args else ""


class CommitConflictError(LanceError, OSError):
    """A concurrent commit conflicts with this one; nothing was written.

    An ``OSError`` too, and with pylance's ``retryable`` (``True``: the commit lost a race
    and may be tried again on the newer version; ``False``: it can never succeed), so that
    this is also pylance's ``lance.commit.CommitConflictError``.
    """

    def __init__(self, message: str = "", retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class InternalError(LanceError, RuntimeError):
    """A bug in lancepy: an internal invariant failed or the native core panicked.

    Never caused by bad input (that is :class:`CorruptFileError`, :class:`InvalidArgumentError`
    and their kin); the message asks for a bug report.
    """


#: pylance's name for an unsupported option or feature; the same class as :class:`UnsupportedError`.
NotSupportedError = UnsupportedError


class IndexAlreadyExistsError(LanceError, RuntimeError):
    """An index of that name exists already (a ``RuntimeError`` too, as pylance raises);
    ``create_index(..., replace=True)`` replaces it."""
