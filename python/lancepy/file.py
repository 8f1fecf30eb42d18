"""Reading and writing single Lance files (versions 2.0, 2.1 and 2.2).

The API mirrors ``lance.file`` (pylance) so its users feel at home::

    from lancepy.file import LanceFileWriter, LanceFileReader

    with LanceFileWriter("data.lance", version="2.1") as w:
        w.write_batch(table)              # anything implementing the Arrow PyCapsule protocol

    r = LanceFileReader("data.lance")
    r.schema, r.num_rows(), r.version, r.metadata()
    r.read_all().to_table()
    r.read_range(10, 5).to_table()
    r.take_rows([7, 3, 3]).to_table()     # output follows input order; repeats allowed
    for batch in r.to_batches(batch_size=8192):
        ...

Results implement ``__arrow_c_stream__``: ``pyarrow.table(result)``, ``polars.from_arrow``
and DuckDB read them without a copy.
"""

from __future__ import annotations

import operator
import os
import weakref
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Union

import pyarrow as pa

from lancepy import _lancepy
from lancepy._core.paths import expand_path, local_path
from lancepy._core.storage import StorageOptions, normalize_storage_options
from lancepy.exceptions import (
    CorruptFileError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    LanceIOError,
    NotFoundError,
    NotSupportedError,
)

__all__ = [
    "LanceFileReader",
    "LanceFileWriter",
    "ReaderResults",
    "FileMetadata",
    "ColumnMetadata",
    "PageMetadata",
    "BufferDescriptor",
    "FileStatistics",
    "ColumnStatistics",
    "stable_version",
]

Indices = Union[Sequence[int], "pa.Array", Any]

#: The file version written when none is asked for: pylance 14's default.
DEFAULT_FILE_VERSION = "2.2"


def stable_version() -> str:
    """The stable Lance file format version, the one written by default and meant by
    ``"stable"`` (``"2.2"``, as in pylance 14)."""
    return DEFAULT_FILE_VERSION


class ReaderResults:
    """Decoded rows, held in lancepy's memory until a consumer imports them, in batches of
    ``batch_size`` rows (the last may be shorter), as pylance's.

    Implements ``__arrow_c_stream__`` and ``__arrow_c_schema__``; the buffers are handed
    over without copying, except rows whose batch spans two decoded pieces (those are
    concatenated).
    """

    __slots__ = ("_inner", "_batch_size")

    def __init__(self, inner: Any, batch_size: int = 1024) -> None:
        self._inner = inner
        self._batch_size = batch_size

    def _reader(self) -> pa.RecordBatchReader:
        raw = pa.RecordBatchReader.from_stream(self._inner)
        return pa.RecordBatchReader.from_batches(raw.schema, _rebatch(raw, raw.schema, self._batch_size))

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._reader().__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> Any:
        return self._inner.__arrow_c_schema__()

    @property
    def num_rows(self) -> int:
        """Number of rows."""
        return self._inner.num_rows

    def to_table(self) -> pa.Table:
        """The rows as a ``pyarrow.Table``, one chunk per batch (zero-copy where a batch is
        one decoded piece)."""
        return self._reader().read_all()

    def to_batches(self) -> pa.RecordBatchReader:
        """The rows as a ``pyarrow.RecordBatchReader`` (as pylance returns)."""
        return self._reader()

    def __len__(self) -> int:
        return self.num_rows

    def __repr__(self) -> str:
        return f"ReaderResults(num_rows={self.num_rows})"


def _rebatch(batches: Iterable[pa.RecordBatch], schema: pa.Schema, size: int) -> Iterator[pa.RecordBatch]:
    """`batches` cut and joined into batches of exactly `size` rows (the last may be shorter)."""
    pending: List[pa.RecordBatch] = []
    held = 0
    for batch in batches:
        start = 0
        while start < batch.num_rows:
            take = min(size - held, batch.num_rows - start)
            pending.append(batch.slice(start, take))
            held += take
            start += take
            if held == size:
                yield _joined(pending, schema)
                pending, held = [], 0
    if held:
        yield _joined(pending, schema)


def _joined(pieces: List[pa.RecordBatch], schema: pa.Schema) -> pa.RecordBatch:
    if len(pieces) == 1:
        return pieces[0]
    return pa.Table.from_batches(pieces, schema).combine_chunks().to_batches()[0]


class BufferDescriptor(NamedTuple):
    """Where a buffer is in the file: a ``(position, size)`` tuple with pylance's attribute
    names."""

    position: int
    size: int


@dataclass(frozen=True)
class PageMetadata:
    """One page of a column."""

    num_rows: int
    buffers: List[BufferDescriptor]
    """(file position, size) of each page buffer."""
    encoding: str
    """The page's layout and encodings, e.g. ``miniblock(values=inline_bitpacking(64))``."""


@dataclass(frozen=True)
class ColumnMetadata:
    """One column of a file."""

    pages: List[PageMetadata]
    column_buffers: List[BufferDescriptor]
    """(file position, size) of each column-level buffer (pages usually hold their own)."""


@dataclass(frozen=True)
class FileMetadata:
    """Layout of a Lance file: version, global buffers, columns, pages and encodings (the
    attributes of pylance's ``LanceFileMetadata``, and more)."""

    major_version: int
    minor_version: int
    version: str
    num_rows: int
    file_size: int
    num_global_buffers: int
    global_buffers: List[BufferDescriptor]
    num_column_metadata_bytes: int
    """Bytes of the column metadata and its offset table (as pylance counts them)."""
    num_data_bytes: int
    """Bytes of data pages (everything before the global buffers and column metadata)."""
    columns: List[ColumnMetadata]
    schema: Optional[pa.Schema] = None

    @property
    def num_global_buffer_bytes(self) -> int:
        """Bytes of all global buffers."""
        return sum(b.size for b in self.global_buffers)

    def encodings(self) -> List[List[str]]:
        """The encoding of every page, column by column."""
        return [[p.encoding for p in c.pages] for c in self.columns]


@dataclass(frozen=True)
class ColumnStatistics:
    """Pages and bytes of one column."""

    num_pages: int
    size_bytes: int


@dataclass(frozen=True)
class FileStatistics:
    """Per-column statistics of a file (:meth:`LanceFileReader.file_statistics`)."""

    columns: List[ColumnStatistics]


def _positive_batch_size(batch_size: int) -> int:
    batch_size = operator.index(batch_size)
    if batch_size <= 0:
        raise InvalidArgumentError(f"batch_size must be positive, got {batch_size}")
    return batch_size


def _to_indices(indices: Indices) -> Any:
    if isinstance(indices, (list, tuple, range)):
        return list(indices)
    if hasattr(indices, "__arrow_c_array__"):
        return indices
    dtype = getattr(indices, "dtype", None)
    if getattr(dtype, "kind", None) in ("i", "u") and getattr(indices, "ndim", 1) == 1 and len(indices) <= 256:
        # A few numpy integers: a list is cheaper than an Arrow array (~0.1 µs vs ~4 µs).
        return indices.tolist()
    # numpy arrays and other array-likes: hand over as an Arrow array (zero-copy for
    # 64-bit integers).
    try:
        return pa.array(indices)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
        raise InvalidArgumentError(f"row indices must be integers: {e}") from None


class LanceFileReader:
    """Reads one Lance file.

    Parameters
    ----------
    path:
        A local path or a ``file://``, ``memory://``, ``s3://``, ``gs://`` or ``az://`` URI.
    storage_options:
        Object-store options (credentials, endpoint, ...; pylance's keys, see
        :func:`lancepy.dataset`).
    columns:
        Default projection (top-level column names) for every read; ``None`` reads all.
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        storage_options: StorageOptions = None,
        columns: Optional[List[str]] = None,
        *,
        namespace_client: Any = None,
        table_id: Optional[List[str]] = None,
    ) -> None:
        if namespace_client is not None or table_id is not None:
            raise NotSupportedError("namespace_client / table_id: lancepy has no namespace support")
        if isinstance(storage_options, (list, tuple)) and columns is None:
            raise InvalidArgumentError(
                "the second argument of LanceFileReader is storage_options (as in pylance); pass columns=[...] by name"
            )
        self._reader = _lancepy.FileReader(expand_path(os.fspath(path)), normalize_storage_options(storage_options))
        self._columns = columns

    @property
    def path(self) -> str:
        """Where the file is."""
        return self._reader.path

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the file (field and schema metadata included)."""
        return pa.schema(self._reader.schema())

    def num_rows(self) -> int:
        """Number of rows in the file (a method, as in pylance)."""
        return self._reader.num_rows

    @property
    def version(self) -> str:
        """File format version: ``"2.0"``, ``"2.1"`` or ``"2.2"``."""
        return self._reader.version

    def _cols(self, columns: Optional[List[str]]) -> Optional[List[str]]:
        return self._columns if columns is None else list(columns)

    def read_all(
        self, *, batch_size: int = 1024, batch_readahead: int = 16, columns: Optional[List[str]] = None
    ) -> ReaderResults:
        """Reads every row, in batches of `batch_size` rows. The rows are decoded at once, so
        every batch is read ahead (`batch_readahead` is met by any value)."""
        batch_size = _positive_batch_size(batch_size)
        n = self._reader.num_rows
        return ReaderResults(self._reader.read_range(0, n, self._cols(columns)), batch_size)

    def read_range(
        self,
        start: int,
        num_rows: int,
        *,
        batch_size: int = 1024,
        batch_readahead: int = 16,
        columns: Optional[List[str]] = None,
    ) -> ReaderResults:
        """Reads ``num_rows`` rows starting at row ``start``, in batches of `batch_size` rows."""
        batch_size = _positive_batch_size(batch_size)
        start, num_rows = operator.index(start), operator.index(num_rows)
        if start < 0 or num_rows < 0:
            raise InvalidArgumentError("start and num_rows must be non-negative")
        total = self._reader.num_rows
        if start + num_rows > total:
            raise IndexOutOfRangeError(
                f"rows {start}..{start + num_rows} are outside {self.path} (which has {total} rows)"
            )
        return ReaderResults(self._reader.read_range(start, num_rows, self._cols(columns)), batch_size)

    def take_rows(
        self,
        indices: Indices,
        *,
        batch_size: int = 1024,
        batch_readahead: int = 16,
        columns: Optional[List[str]] = None,
    ) -> ReaderResults:
        """Reads the rows at ``indices``.

        The output follows the order of ``indices`` and repeats are allowed. Only the pieces
        of the file that hold the requested rows are read and decoded; they come in batches of
        `batch_size` rows.
        """
        batch_size = _positive_batch_size(batch_size)
        return ReaderResults(self._reader.take(_to_indices(indices), self._cols(columns)), batch_size)

    def to_batches(
        self, batch_size: int = 8192, columns: Optional[List[str]] = None
    ) -> Iterator[pa.RecordBatch]:
        """Streams the file as record batches of at most ``batch_size`` rows.

        Batches are decoded one at a time as the iterator advances.
        """
        stream = self._reader.stream(_positive_batch_size(batch_size), self._cols(columns))
        while True:
            batch = stream.next_batch()
            if batch is None:
                return
            yield from pa.table(batch).to_batches()

    def to_reader(self, batch_size: int = 8192, columns: Optional[List[str]] = None) -> pa.RecordBatchReader:
        """A ``pyarrow.RecordBatchReader`` that decodes batches on demand."""
        stream = self._reader.stream(_positive_batch_size(batch_size), self._cols(columns))
        return pa.RecordBatchReader.from_stream(stream)

    def read_global_buffer(self, index: int) -> bytes:
        """The raw bytes of global buffer ``index`` (0 holds the schema)."""
        index = operator.index(index)
        if index < 0:
            raise IndexOutOfRangeError(f"global buffer {index} does not exist")
        return self._reader.read_global_buffer(index)

    def metadata(self) -> FileMetadata:
        """The file's layout: schema, columns, pages, buffer positions and encodings."""
        m = self._reader.metadata()
        columns = [
            ColumnMetadata(
                pages=[
                    PageMetadata(p["num_rows"], [BufferDescriptor(*b) for b in p["buffers"]], p["encoding"])
                    for p in c["pages"]
                ],
                column_buffers=[BufferDescriptor(*b) for b in c["column_buffers"]],
            )
            for c in m.pop("columns")
        ]
        m["global_buffers"] = [BufferDescriptor(*b) for b in m["global_buffers"]]
        # Counted as pylance does: with the column-metadata offset table (16 bytes a column).
        m["num_column_metadata_bytes"] += 16 * len(columns)
        return FileMetadata(columns=columns, schema=self.schema, **m)

    def file_statistics(self) -> FileStatistics:
        """Pages and bytes (of page buffers) of every column, as pylance reports them."""
        return FileStatistics(
            [
                ColumnStatistics(len(c.pages), sum(b.size for p in c.pages for b in p.buffers))
                for c in self.metadata().columns
            ]
        )

    def __repr__(self) -> str:
        return f"LanceFileReader({self.path!r}, version={self.version}, num_rows={self.num_rows()})"


def page_bytes(schema: Optional[pa.Schema], data_cache_bytes: Optional[int], max_page_bytes: Optional[int]) -> Optional[int]:
    """The page size a writer uses for pylance's `data_cache_bytes` (a buffer budget divided
    evenly over the top-level columns of `schema`) and `max_page_bytes` (the largest page):
    the smaller of the two; ``None`` for the default."""
    for name, value in (("data_cache_bytes", data_cache_bytes), ("max_page_bytes", max_page_bytes)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise InvalidArgumentError(f"{name} must be a positive int, got {value!r}")
    if data_cache_bytes is None or schema is None:
        return max_page_bytes
    per_column = max(1, data_cache_bytes // (len(schema.names) or 1))
    return per_column if max_page_bytes is None else min(max_page_bytes, per_column)


class LanceFileWriter:
    """Writes one Lance file.

    Parameters
    ----------
    path:
        A local path or a ``file://``, ``memory://``, ``s3://``, ``gs://`` or ``az://`` URI.
        An existing file is replaced.
    schema:
        The schema (anything with ``__arrow_c_schema__``); if ``None``, the first batch's.
    version:
        ``"2.0"``, ``"2.1"``, ``"2.2"`` (default, as pylance 14 writes) or ``"stable"`` (= 2.2).
    data_cache_bytes:
        Bytes buffered for column data in all, divided evenly over the top-level columns
        (needs `schema`); default 8 MiB per column.
    max_page_bytes:
        The largest page: a column's buffer is written as a page once it holds this much
        (default 8 MiB).
    storage_options:
        Object-store options (credentials, endpoint, ...; see :func:`lancepy.dataset`). On
        object storage a file larger than 5 MiB is sent as a multipart upload while it is
        written; nothing is visible before :meth:`close`.

    Field metadata steers encodings: ``lance-encoding:compression`` (``zstd``, ``lz4``,
    ``none``), ``lance-encoding:compression-level`` and ``lance-encoding:structural-encoding``
    (``miniblock`` or ``fullzip``).
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        schema: Optional[pa.Schema] = None,
        *,
        data_cache_bytes: Optional[int] = None,
        version: Optional[str] = None,
        storage_options: StorageOptions = None,
        namespace_client: Any = None,
        table_id: Optional[List[str]] = None,
        max_page_bytes: Optional[int] = None,
    ) -> None:
        if namespace_client is not None or table_id is not None:
            raise NotSupportedError("namespace_client / table_id: lancepy has no namespace support")
        if data_cache_bytes is not None and schema is None:
            raise InvalidArgumentError("data_cache_bytes needs the schema up front (schema=...)")
        max_page_bytes = page_bytes(pa.schema(schema) if schema is not None else None, data_cache_bytes, max_page_bytes)
        if version is None:
            version = DEFAULT_FILE_VERSION
        path = expand_path(os.fspath(path))
        # The native writer lives in a one-item list only, so that the finalizer can release
        # it (closing the file) before deleting the file.
        self._holder: List[Any] = [
            _lancepy.FileWriter(path, schema, version, max_page_bytes, normalize_storage_options(storage_options))
        ]
        self._closed = False
        self._final_schema: Optional[pa.Schema] = None
        self.num_rows: Optional[int] = None
        self.file_size: Optional[int] = None
        # A writer dropped (or left by an exception) before close() removes its unfinished
        # file, as pylance leaves none: the native writer is released, then the file deleted.
        self._discard = weakref.finalize(self, _discard_unfinished, self._holder, local_path(path))

    @property
    def _writer(self) -> Any:
        if not self._holder:
            raise InvalidArgumentError("the LanceFileWriter is closed")
        return self._holder[0]

    @property
    def schema(self) -> Optional[pa.Schema]:
        """The schema being written (``None`` until known)."""
        if not self._holder:
            return self._final_schema
        s = self._writer.schema()
        return None if s is None else pa.schema(s)

    def write_batch(self, batch: Any) -> None:
        """Appends a record batch, table or stream (Arrow PyCapsule protocol).

        Each batch must have the file's schema (given to the constructor, or the first
        batch's): as in pylance, a column of another type, name or position raises
        :class:`~lancepy.exceptions.SchemaMismatchError` (nothing is cast here, unlike
        :func:`lancepy.write_dataset` with a declared schema). A malformed batch (buffers
        shorter than its length says, offsets outside its data) is refused before the
        native writer reads it."""
        from lancepy._core.conform import conform

        data = batch
        if isinstance(data, (list, dict)) or not (
            hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__")
        ):
            raise InvalidArgumentError(
                f"write_batch expects Arrow data (pyarrow Table/RecordBatch or any object with "
                f"__arrow_c_stream__/__arrow_c_array__), got {type(data).__name__}"
            )
        if self._closed:
            raise InvalidArgumentError("write_batch on a closed LanceFileWriter")
        self._writer.write_batch(conform(data))

    def add_schema_metadata(self, key: str, value: str) -> None:
        """Sets a schema-level metadata entry of the file (stored when it is closed)."""
        self._writer.add_schema_metadata(key, value)

    def add_global_buffer(self, data: bytes) -> int:
        """Stores `data` as a global buffer of the file; returns its number, for
        :meth:`LanceFileReader.read_global_buffer` (1 for the first: buffer 0 holds the schema)."""
        return self._writer.add_global_buffer(bytes(data))

    def close(self) -> int:
        """Finishes the file; returns the number of rows written. A failure to finish
        removes the unfinished file."""
        if self._closed:
            return self.num_rows or 0
        self._closed = True
        self._final_schema = self.schema
        try:
            if self._final_schema is None:
                raise InvalidArgumentError(
                    "Schema is unknown and file cannot be created: pass `schema=` or write at least one batch before closing")
            self.num_rows, self.file_size = self._writer.finish()
        except BaseException:
            self._discard()
            raise
        self._discard.detach()
        self._holder.clear()
        return self.num_rows

    def abort(self) -> None:
        """Abandons the file: nothing of it is left (what dropping an unclosed writer does)."""
        if self._closed:
            return
        self._final_schema = self.schema
        self._closed = True
        self._discard()

    def __enter__(self) -> "LanceFileWriter":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def _discard_unfinished(holder: List[Any], local: Optional[str]) -> None:
    """Releases an unfinished native writer and removes its local file. (On object storage
    nothing is visible before close: the upload is dropped with the writer.)"""
    holder.clear()
    if local is not None:
        try:
            os.remove(local)
        except OSError:
            pass




@dataclass(frozen=True)
class ListResult:
    """One level of a listing (:meth:`LanceFileSession.list_with_delimiter`): the child
    "directories" (`common_prefixes`) and the child files (`objects`), relative to the
    session's base path."""

    common_prefixes: List[str]
    objects: List[str]


class LanceFileSession:
    """Readers, writers and file operations under one base path (a local directory or an
    object-store URI), all with the same storage options: what pylance's ``LanceFileSession``
    offers. Paths given to its methods are relative to the base path.

    ::

        session = LanceFileSession("s3://bucket/files", storage_options={...})
        with session.open_writer("part-0.lance") as w:
            w.write_batch(table)
        session.open_reader("part-0.lance").read_all().to_table()
    """

    def __init__(
        self,
        base_path: Union[str, "os.PathLike[str]"],
        storage_options: StorageOptions = None,
        namespace_client: Any = None,
        table_id: Optional[List[str]] = None,
    ) -> None:
        if namespace_client is not None or table_id is not None:
            raise NotSupportedError("namespace_client / table_id: lancepy has no namespace support")
        self._base = expand_path(os.fspath(base_path)).rstrip("/")
        self._options = normalize_storage_options(storage_options)
        self._store = _lancepy.Store(self._base, self._options)

    @property
    def base_path(self) -> str:
        return self._base

    def _uri(self, path: str) -> str:
        if not isinstance(path, str) or not path.strip("/"):
            raise InvalidArgumentError(f"a path relative to the session's base path is needed, got {path!r}")
        return f"{self._base}/{path.lstrip('/')}"

    def open_reader(self, path: str, columns: Optional[List[str]] = None) -> LanceFileReader:
        """A reader of the file at `path`."""
        return LanceFileReader(self._uri(path), self._options, columns)

    def open_writer(
        self,
        path: str,
        *,
        schema: Optional[pa.Schema] = None,
        data_cache_bytes: Optional[int] = None,
        version: Optional[str] = None,
        keep_original_array: Optional[bool] = None,
        max_page_bytes: Optional[int] = None,
    ) -> LanceFileWriter:
        """A writer of a new file at `path` (see :class:`LanceFileWriter` for the options)."""
        if keep_original_array:
            raise NotSupportedError("keep_original_array=True: lancepy's writer does not keep the arrays it wrote")
        return LanceFileWriter(
            self._uri(path),
            schema,
            data_cache_bytes=data_cache_bytes,
            version=version,
            max_page_bytes=max_page_bytes,
            storage_options=self._options,
        )

    def open_packed_blob_writer(self, path: str, blob_id: int) -> Any:
        raise NotImplementedError("packed blob files are not written by lancepy's file API; write blobs through a dataset")

    def open_dedicated_blob_writer(self, path: str, blob_id: int) -> Any:
        raise NotImplementedError("dedicated blob files are not written by lancepy's file API; write blobs through a dataset")

    def contains(self, path: str) -> bool:
        """Whether a file exists at `path` (a "directory" is not a file)."""
        return self._store.exists(self._rel(path))

    def _rel(self, path: Optional[str]) -> str:
        if path is None:
            return ""
        if not isinstance(path, str):
            raise InvalidArgumentError(f"a path relative to the session's base path is needed, got {path!r}")
        return path.strip("/")

    def list(self, path: Optional[str] = None) -> List[str]:
        """Every file under `path` (default: the base path), recursively, relative to the base path."""
        prefix = self._rel(path)
        return sorted(name for name, _, _ in self._store.list(prefix))

    def list_with_delimiter(self, path: Optional[str] = None) -> ListResult:
        """The files directly under `path` and its child directories (one level)."""
        prefix = self._rel(path)
        start = f"{prefix}/" if prefix else ""
        dirs, files = set(), []
        for name in self.list(path):
            rest = name[len(start):] if name.startswith(start) else name
            if "/" in rest:
                dirs.add(start + rest.split("/", 1)[0])
            else:
                files.append(name)
        return ListResult(common_prefixes=sorted(dirs), objects=files)

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """`length` bytes of the file at `path` from `offset` (one ranged read); a missing
        file or a range past its end raises an ``OSError``."""
        offset, length = operator.index(offset), operator.index(length)
        if offset < 0 or length < 0:
            raise InvalidArgumentError(f"offset and length must be non-negative, got {offset}, {length}")
        try:
            return _lancepy.RangeReader(self._uri(path), self._options).read_range(offset, length)
        except CorruptFileError as e:  # a range past the end: the caller's mistake, not a damaged file
            raise LanceIOError(f"reading {path!r} at {offset}..{offset + length}: {e}") from None

    def delete_file(self, path: str) -> None:
        """Deletes the file at `path` (an ``OSError`` if there is none)."""
        rel = self._rel(path)
        if not self._store.exists(rel):
            raise NotFoundError(f"no file {path!r} under {self._base}")
        self._store.delete([rel])

    def upload_file(self, local_path: Union[str, "os.PathLike[str]"], remote_path: str) -> None:
        """Copies a local file to `remote_path`, 8 MiB at a time."""
        _lancepy.copy_object(os.path.abspath(os.fspath(local_path)), self._uri(remote_path), None, self._options)

    def download_file(self, remote_path: str, local_path: Union[str, "os.PathLike[str]"]) -> None:
        """Copies the file at `remote_path` to a local file, 8 MiB at a time."""
        _lancepy.copy_object(self._uri(remote_path), os.path.abspath(os.fspath(local_path)), self._options, None)

    def __repr__(self) -> str:
        return f"LanceFileSession({self._base!r})"
