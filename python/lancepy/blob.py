"""Blob columns: large binary values read lazily as file-like :class:`BlobFile` objects.

A column whose Arrow field carries ``lance-encoding:blob = "true"`` is a blob column. In
file version 2.2 (pylance 14's default) it is a *blob-v2* column: the manifest stores it as
``struct<data: large_binary, uri: utf8>`` (Arrow extension ``lance.blob.v2``) and each data
file stores one *description* per row, ``struct<kind, position, size, blob_id, blob_uri>``.
Scans return those descriptions; :meth:`lancepy.LanceDataset.take_blobs` turns them into
:class:`BlobFile` objects that fetch bytes with ranged reads (``pread`` for local files,
ranged GETs on object storage), never the whole blob at once.

Where the bytes are, by ``kind``:

* 0, inline: in the row's data file, at absolute offset ``position``;
* 1, packed: in the sidecar ``data/<data file stem>/<blob_id>.blob`` at ``position``;
* 2, dedicated: the whole sidecar ``data/<data file stem>/<blob_id>.blob``;
* 3, external: at ``blob_uri`` (an absolute URI), ``size`` bytes from ``position``, or
  the whole object when both are 0 (base-relative URIs raise
  :class:`~lancepy.exceptions.NotSupportedError`).

``<blob_id>`` is the id's 32 bits written least significant first as ``0``/``1`` characters.
"""

from __future__ import annotations

import io
from typing import Any, Dict, Iterator, List, Optional, Tuple

from lancepy import _lancepy
from lancepy._core.blobschema import (  # noqa: F401 - re-exported
    blob_sidecar_name,
    sidecar_owner,
    BLOB_V2_EXTENSION,
    _is_arrow_blob_v2,
    _is_blob_marked,
    blob_v2_schema,
    external_blob_handling,
    writable_schema,
)
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

__all__ = ["BlobColumn", "BlobFile", "DEFAULT_BLOB_BUFFER_SIZE", "blob_sidecar_name"]

#: Default sequential read-ahead, bytes (pylance 14's).
DEFAULT_BLOB_BUFFER_SIZE = 512 * 1024

KIND_INLINE = 0
KIND_PACKED = 1
KIND_DEDICATED = 2
KIND_EXTERNAL = 3


def _validate_buffer_size(buffer_size: int) -> int:
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
        raise InvalidArgumentError(f"buffer_size must be an int, got {type(buffer_size).__name__}")
    if buffer_size < 0:
        raise InvalidArgumentError("buffer_size must be non-negative")
    return buffer_size


class BlobFile(io.BufferedIOBase):
    """One blob as a read-only, seekable binary file (what
    :meth:`lancepy.LanceDataset.take_blobs` returns). Bytes are fetched on demand with ranged
    reads of at least `buffer_size` bytes (the read-ahead; 0 disables it)."""

    def __init__(self, reader: Any, position: int, size: int, buffer_size: int = DEFAULT_BLOB_BUFFER_SIZE) -> None:
        super().__init__()
        self._reader = reader
        self._start = int(position)
        self._size = int(size)
        self._pos = 0
        self._buffer_size = _validate_buffer_size(buffer_size)
        self._buf = b""
        self._buf_start = 0
        self._closed = False

    # -- file protocol -------------------------------------------------------------------

    def close(self) -> None:
        """Closes the file; later reads raise ``ValueError``."""
        self._closed = True
        self._buf = b""

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def readable(self) -> bool:
        """Always true."""
        return True

    def seekable(self) -> bool:
        """Always true."""
        return True

    def writable(self) -> bool:
        """Always false."""
        return False

    def _check_open(self, what: str = "read") -> None:
        if self._closed:
            raise ValueError(f"{what} of closed file")

    def size(self) -> int:
        """Size of the blob in bytes."""
        return self._size

    def tell(self) -> int:
        """The cursor, in bytes from the start of the blob."""
        self._check_open("tell")
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Moves the cursor (``whence`` as :func:`io.IOBase.seek`); returns the new position."""
        self._check_open("seek")
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"Invalid whence: {whence}")
        if pos < 0:
            raise ValueError(f"negative seek value {pos}")
        self._pos = pos
        return pos

    def _fetch(self, offset: int, length: int) -> bytes:
        """`length` bytes at blob offset `offset` (clipped to the blob)."""
        length = max(0, min(length, self._size - offset))
        if length == 0:
            return b""
        return self._reader.read_range(self._start + offset, length)

    def read_range(self, offset: int, length: int) -> bytes:
        """`length` bytes at `offset` of the blob, without moving the cursor."""
        self._check_open()
        if offset < 0 or length < 0 or offset + length > self._size:
            raise InvalidArgumentError(f"range {offset}..+{length} is outside the blob ({self._size} bytes)")
        return self._fetch(offset, length)

    def read_ranges(self, ranges: List[Tuple[int, int]]) -> List[bytes]:
        """:meth:`read_range` of each ``(offset, length)``, in order."""
        return [self.read_range(o, n) for o, n in ranges]

    def read(self, size: Optional[int] = -1) -> bytes:
        """Up to `size` bytes from the cursor (all that is left when negative or ``None``)."""
        self._check_open()
        left = self._size - self._pos
        if left <= 0:
            return b""
        n = left if size is None or size < 0 else min(size, left)
        if n == 0:
            return b""
        b = self._buf
        rel = self._pos - self._buf_start
        if 0 <= rel and rel + n <= len(b):
            out = b[rel : rel + n]
        elif n >= self._buffer_size:
            out = self._fetch(self._pos, n)
        else:
            self._buf = self._fetch(self._pos, max(n, self._buffer_size))
            self._buf_start = self._pos
            out = self._buf[:n]
        self._pos += len(out)
        return bytes(out)

    read1 = read

    def readall(self) -> bytes:
        """Everything from the cursor to the end."""
        return self.read(-1)

    def readinto(self, b: Any) -> int:
        """Fills the writable buffer `b` from the cursor; returns the number of bytes read."""
        self._check_open("readinto")
        view = memoryview(b).cast("B")
        if view.readonly:
            raise TypeError(f"readinto() argument must be read-write bytes-like object, not {type(b).__name__}")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    readinto1 = readinto

    def __repr__(self) -> str:
        return f"<BlobFile size={self._size}>"


def open_blob_files(
    root: str,
    loaded: Any,
    storage_options: Optional[Dict[str, str]],
    column: str,
    addresses: List[int],
    descriptions: List[Optional[Dict[str, Any]]],
    buffer_size: int,
    base_store_params: Optional[Dict[str, Dict[str, str]]] = None,
) -> List[Optional[BlobFile]]:
    """One :class:`BlobFile` (``None`` for a null value) per row address and description,
    of version `loaded` (a ``LoadedManifest``) of the dataset at `root`."""
    from lancepy._table import bases as _bases

    fid = loaded.top_level_field(column).id
    frags = loaded.fragments_with_ids(a >> 32 for a, d in zip(addresses, descriptions) if d is not None)
    bases = {int(b.get("id", 0)): b for b in loaded.base_paths}
    readers: Dict[str, Any] = {}

    def reader(uri: str) -> Any:
        if uri not in readers:
            readers[uri] = _lancepy.RangeReader(uri, _bases.options_for(uri, storage_options, base_store_params))
        return readers[uri]

    out: List[Optional[BlobFile]] = []
    for addr, desc in zip(addresses, descriptions):
        if desc is None:
            out.append(None)
            continue
        frag = frags.get(addr >> 32)
        data_file = None
        for df in reversed(frag.files if frag else []):
            if fid in df.fields:
                data_file = df
                break
        if data_file is None:
            raise InvalidArgumentError(f"row address {addr}: its fragment holds no data for column {column!r}")
        pos, size = int(desc["position"]), int(desc["size"])
        if "kind" not in desc:
            # A 2.0 / 2.1 blob column: the bytes are in the data file; 2.0 marks a null value
            # with size 0 at a nonzero position.
            if size == 0 and pos != 0:
                out.append(None)
                continue
            kind = KIND_INLINE
        else:
            kind = int(desc["kind"])
        if kind == KIND_INLINE:
            name = str(data_file.path)
        elif kind in (KIND_PACKED, KIND_DEDICATED):
            stem = data_file.path[: -len(".lance")] if data_file.path.endswith(".lance") else str(data_file.path)
            name = f"{stem}/{blob_sidecar_name(int(desc['blob_id']))}"
        elif kind == KIND_EXTERNAL:
            # An absolute URI, and a slice of it (none: all of it).
            ext = desc.get("blob_uri") or ""
            if "://" not in ext and not ext.startswith("/"):
                raise NotSupportedError(f"row address {addr}: external blob {ext!r} is not an absolute URI "
                                        "(base-relative external blobs are not supported)")
            r = reader(ext)
            if pos == 0 and size == 0:
                size = r.size()
            out.append(BlobFile(r, pos, size, buffer_size))
            continue
        else:
            raise InvalidArgumentError(f"row address {addr}: unknown blob kind {kind}")
        uri = _bases._file_uri(root, bases, data_file.base_id, "data", name)
        if uri is None:
            raise InvalidArgumentError(f"row address {addr}: base path {data_file.base_id} is not in the manifest")
        out.append(BlobFile(reader(uri), pos, size, buffer_size))
    return out


class BlobColumn:
    """A binary Arrow column read value by value as file-like objects (pylance's
    ``lance.BlobColumn``): iterating gives an ``io.BytesIO`` per row (an empty one for a
    null, as pylance's). For blob columns of a dataset, :meth:`LanceDataset.take_blobs`
    gives lazily read :class:`BlobFile` objects instead."""

    def __init__(self, blob_column: Any) -> None:
        import pyarrow as pa

        if not isinstance(blob_column, (pa.Array, pa.ChunkedArray)):
            raise InvalidArgumentError(f"BlobColumn takes a pyarrow Array or ChunkedArray, got {type(blob_column).__name__}")
        if not (pa.types.is_binary(blob_column.type) or pa.types.is_large_binary(blob_column.type)):
            raise InvalidArgumentError(f"Expected a binary array: BlobColumn takes a binary column, got {blob_column.type}")
        self.blob_column = blob_column

    def __iter__(self) -> Iterator[io.BytesIO]:
        for value in self.blob_column:
            yield io.BytesIO(value.as_py() or b"")
