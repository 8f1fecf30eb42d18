"""IVF_PQ vector indices in pylance's legacy index layout (``index_file_version="Legacy"``).

Where a V3 index is two Lance files (``index.idx`` holding the model, ``auxiliary.idx`` the
rows), a legacy IVF_PQ index is one raw file, ``_indices/<uuid>/index.idx`` (checked against
what pylance 14.0.2 writes):

* the partitions, one after the other from byte 0: a partition of ``n`` rows is its PQ codes,
  ``n × num_sub_vectors`` bytes row by row (one byte per sub-vector: 8-bit codes), then its
  ``n`` row addresses as little-endian uint64; an empty partition has no bytes;
* at position ``p``: a little-endian uint32 length and an ``Index`` protobuf message
  (``lance.index.pb``): ``name`` (1), ``columns`` (2), ``dataset_version`` (3), ``index_type``
  (4, VECTOR = 0) and ``vector_index`` (5): ``spec_version`` (1) = 1, ``dimension`` (2),
  ``stages`` (3: an ``IVF`` stage (field 2: centroids tensor, each partition's *byte*
  offset and row count, k-means loss), then a ``PQ`` stage (field 3: ``num_bits``,
  ``num_sub_vectors``, ``dimension``, ``codebook_tensor``: shape ``(256, dim)``, its values sub-vector by
  sub-vector, 256 codewords of ``dim / num_sub_vectors`` values each)), ``metric_type`` (4: L2 = 0, Cosine = 1, Dot = 2);
* a 16-byte footer: ``p`` as uint64, version major 0 and minor 1 (uint16 each), ``LANC``.

pylance tells the layouts apart by that footer version (0.0/0.1: this one). This module
decodes and encodes the file (the ``Index`` message natively, by prost:
``_lancepy.decode_legacy_index`` / ``encode_legacy_index``); :mod:`lancepy._ops.ivf`
searches it like a V3 index.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from lancepy import _lancepy
from lancepy._core.paths import expand_path
from lancepy._core.storage import normalize_storage_options
from lancepy.exceptions import CorruptFileError, UnsupportedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

FILE_NAME = "index.idx"
_MAGIC = b"LANC"
_FOOTER = 16
_METRICS = ("l2", "cosine", "dot")
_PQ_CODEWORDS = 256


def _reader(path: str, storage_options: Any) -> Any:
    return _lancepy.RangeReader(expand_path(path), normalize_storage_options(storage_options))


def is_legacy(path: str, storage_options: Any = None) -> bool:
    """Whether the ``index.idx`` at `path` is a legacy IVF_PQ file (footer version 0.0 or
    0.1); a Lance 2.x ``index.idx`` (V3) is not."""
    r = _reader(path, storage_options)
    size = r.size()
    if size < _FOOTER:
        return False
    tail = bytes(r.read_range(size - _FOOTER, _FOOTER))
    major, minor = struct.unpack("<HH", tail[8:12])
    return tail[12:] == _MAGIC and major == 0 and minor in (0, 1)


# --------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------


@dataclass
class LegacyModel:
    """What a legacy ``index.idx`` says about itself (its ``Index`` message)."""

    name: str
    column: str
    dataset_version: int
    metric: str
    dim: int
    centroids_type: str  # the type the IVF stage stores its centroids in ("float32", ...)
    byte_offsets: "np.ndarray"  # (partitions,) int64
    lengths: "np.ndarray"  # (partitions,) int64
    centroids: "np.ndarray"  # (partitions, dim) float32
    loss: Optional[float]
    codebook: "np.ndarray"  # (sub_vectors, 256, sub_dim) float32
    num_sub_vectors: int


def load(path: str, storage_options: Any = None) -> LegacyModel:
    """Reads the model of the legacy IVF_PQ file at `path`."""
    import numpy as np

    r = _reader(path, storage_options)
    size = r.size()
    tail = bytes(r.read_range(size - _FOOTER, _FOOTER))
    (pos,) = struct.unpack("<Q", tail[:8])
    if not 0 <= pos <= size - _FOOTER - 4:
        raise CorruptFileError(f"{path}: the index message position {pos} is outside the file")
    (n,) = struct.unpack("<I", bytes(r.read_range(pos, 4)))
    if pos + 4 + n > size - _FOOTER:
        raise CorruptFileError(f"{path}: the index message ({n} bytes at {pos}) runs past the footer")
    msg = _lancepy.decode_legacy_index(bytes(r.read_range(pos + 4, n)))
    vector = msg["vector_index"]
    if vector is None:
        raise CorruptFileError(f"{path}: the index message has no vector index")
    dim, metric = vector["dimension"], vector["metric_type"]
    if metric not in _METRICS:
        raise UnsupportedError(f"{path}: legacy vector indices with the {metric!r} distance are not supported by lancepy")
    stages = vector["stages"]
    kinds = [s["stage"] for s in stages]
    if kinds != ["ivf", "pq"]:
        names = [str(k).upper() if k != "transform" else "TRANSFORM (OPQ)" for k in kinds]
        raise UnsupportedError(f"{path}: a legacy vector index of stages {names}; lancepy reads IVF then PQ")
    ivf, pq = stages
    if ivf["centroids"] is None:
        raise UnsupportedError(f"{path}: the IVF stage keeps its centroids in the deprecated float list; lancepy reads tensors")
    centroids = np.ascontiguousarray(np.asarray(ivf["centroids"]), dtype=np.float32)
    nbits, m, pq_dim = pq["num_bits"], pq["num_sub_vectors"], pq["dimension"]
    if nbits != 8:
        raise UnsupportedError(f"{path}: PQ with {nbits}-bit codes is not supported by lancepy (8-bit codes are)")
    if centroids.ndim != 2 or centroids.shape[1] != dim or pq_dim != dim or m <= 0 or dim % m:
        raise CorruptFileError(f"{path}: centroids {centroids.shape}, {m} sub-vectors and dimension {dim} do not agree")
    if pq["codebook"] is None:
        raise UnsupportedError(f"{path}: the PQ stage keeps its codebook in the deprecated float list; lancepy reads tensors")
    cb = np.asarray(pq["codebook"], dtype=np.float32)
    if cb.size != m * _PQ_CODEWORDS * (dim // m):
        raise CorruptFileError(f"{path}: the codebook has {cb.size} values, not {m} x {_PQ_CODEWORDS} x {dim // m}")
    offsets, lengths, loss = ivf["offsets"], ivf["lengths"], ivf["loss"]
    if max(offsets + lengths, default=0) > pos:  # (before numpy: a damaged varint may not fit an int64)
        raise CorruptFileError(f"{path}: partition offsets/lengths reach past byte {pos}")
    offs = np.asarray(offsets, dtype=np.int64)
    lens = np.asarray(lengths, dtype=np.int64)
    k = centroids.shape[0]
    if len(offs) != k or len(lens) != k or (offs < 0).any() or (lens < 0).any() or (offs + lens * (m + 8) > pos).any():
        raise CorruptFileError(f"{path}: partition offsets/lengths do not fit {k} partitions before byte {pos}")
    columns = msg["columns"]
    return LegacyModel(
        msg["name"], columns[0] if columns else "", int(msg["dataset_version"]), metric, int(dim), str(ivf["centroids_type"]),
        offs, lens, centroids, loss, np.ascontiguousarray(cb.reshape(m, _PQ_CODEWORDS, dim // m)), int(m),
    )


def read_partition(path: str, storage_options: Any, byte_offset: int, n: int, m: int) -> Tuple["np.ndarray", "np.ndarray"]:
    """One partition's ``(row ids, codes)``: codes as (rows, sub-vectors) uint8."""
    import numpy as np

    if n == 0:
        return np.empty(0, np.uint64), np.empty((0, m), np.uint8)
    raw = bytes(_reader(path, storage_options).read_range(int(byte_offset), int(n) * (m + 8)))
    codes = np.frombuffer(raw, dtype=np.uint8, count=n * m).reshape(n, m)
    row_ids = np.frombuffer(raw, dtype="<u8", count=n, offset=n * m).astype(np.uint64)
    return row_ids, codes


# --------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------


def encode(
    name: str,
    column: str,
    dataset_version: int,
    metric: str,
    dim: int,
    m: int,
    row_ids: "np.ndarray",
    codes: "np.ndarray",
    lengths: "np.ndarray",
    centroids: "np.ndarray",
    loss: Optional[float],
    codebook: "np.ndarray",
    value_type: str = "float32",
) -> bytes:
    """The bytes of a legacy ``index.idx``: rows (`row_ids`, `codes` as rows × `m`) grouped
    by partition (`lengths` rows each, in order), then the ``Index`` message (the IVF stage
    with `centroids` and `loss`; the PQ stage with `codebook`, written with shape
    ``(256, dim)`` as pylance writes it; tensors as `value_type` values) and the footer."""
    import numpy as np
    import pyarrow as pa

    if metric not in _METRICS:
        raise UnsupportedError(f"a legacy vector index with the {metric!r} distance")
    codes = np.ascontiguousarray(codes, dtype=np.uint8).reshape(len(row_ids), m)
    ids = np.ascontiguousarray(row_ids, dtype="<u8")
    parts: List[bytes] = []
    offsets: List[int] = []
    pos = start = 0
    for n in (int(x) for x in lengths):
        offsets.append(pos)
        if n:
            parts += [codes[start : start + n].tobytes(), ids[start : start + n].tobytes()]
            pos += n * (m + 8)
            start += n

    def f32(a: "np.ndarray") -> pa.Array:
        return pa.array(np.ascontiguousarray(a, dtype=np.float32).reshape(-1), pa.float32())

    index = _lancepy.encode_legacy_index(
        name, column, int(dataset_version), metric, int(dim), offsets, [int(x) for x in lengths], f32(centroids),
        f32(codebook), int(m), loss=None if loss is None else float(loss), num_bits=8, dtype=value_type,
    )
    body = b"".join(parts)
    return body + struct.pack("<I", len(index)) + index + struct.pack("<QHH", len(body), 0, 1) + _MAGIC


def write(base: str, data: bytes, storage_options: Any = None) -> List[dict]:
    """Writes `data` as ``index.idx`` under the segment directory `base` (ending in ``/``);
    returns the file list of the index's manifest entry."""
    store = _lancepy.Store(expand_path(base.rstrip("/")), normalize_storage_options(storage_options))
    store.put(FILE_NAME, data)
    return [{"path": FILE_NAME, "size_bytes": len(data)}]
