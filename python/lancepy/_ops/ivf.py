"""IVF vector indices in pylance's on-disk format (``IVF_FLAT``, ``IVF_PQ``, ``IVF_SQ``): reading and searching.

Beyond what is described below: ``IVF_FLAT`` over binary vectors (``uint8`` centroids and
vectors, the hamming distance) and 4-bit ``IVF_PQ`` (16 codewords a sub-vector, two codes a
byte: :mod:`lancepy._ops.pq4`).

An index lives in ``_indices/<uuid>/`` as two Lance files:

* ``index.idx``: schema metadata ``lance:index`` (JSON: type, distance type) and ``lance:ivf``
  (the number of the global buffer holding an ``IVF`` protobuf message whose
  ``centroids_tensor`` are the partition centroids, ``num_partitions x dim`` float32).
* ``auxiliary.idx``: the rows, grouped by partition. Global buffer ``lance:ivf`` holds another
  ``IVF`` message whose ``offsets`` / ``lengths`` locate each partition's rows. Columns:
  ``_rowid`` (row addresses) and either ``flat`` (the vectors, IVF_FLAT) or ``__pq_code``
  (IVF_PQ: one byte per sub-vector; within a partition the codes are stored transposed,
  sub-vector by sub-vector). For PQ, ``storage_metadata`` (JSON) names the global buffer of
  the codebook, a ``Tensor`` message of ``num_sub_vectors x 256 x (dim / num_sub_vectors)``
  float32, trained on residuals (vector minus its partition's centroid) for L2.

An IVF_PQ index in pylance's legacy layout (``index_file_version="Legacy"``: one raw
``index.idx``, see :mod:`lancepy._ops.ivf_legacy`) loads into the same :class:`IvfIndex`
(``legacy`` set) and is searched the same way.

Search follows pylance: partitions are ranked by the distance from the query to their
centroid, the ``nprobes`` nearest are scanned (PQ: distances from per-sub-vector lookup
tables, as pylance computes them), deleted rows and rows outside the prefilter are skipped,
the best ``k * refine_factor`` are re-ranked by exact distance when ``refine_factor`` is
given, and fragments the index does not cover are searched exactly and merged.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from lancepy import _lancepy
from lancepy._core.storage import origin_key
from lancepy._ops import pq4 as _pq4
from lancepy._ops import vector_columns as _vc
from lancepy._ops import ivf_legacy as _legacy
from lancepy.exceptions import CorruptFileError, UnsupportedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

#: Partitions probed when the query gives no ``nprobes`` (more are probed until ``k`` rows
#: are found). pylance's own default is adaptive; lancepy's is this fixed starting width.
DEFAULT_NPROBES = 20

_PQ_CODE = "__pq_code"
_SQ_CODE = "__sq_code"


def sq_codes(mat: "np.ndarray", bounds: Tuple[float, float]) -> "np.ndarray":
    """8-bit scalar-quantizer codes of `mat` (rows × dim), as pylance computes them: each
    value scaled to 0..255 over `bounds` in double precision and cast with saturation (below
    the range 0, above 255, NaN 0)."""
    import numpy as np

    start, end = bounds
    if start == end:
        return np.zeros(mat.shape, np.uint8)
    with np.errstate(invalid="ignore", over="ignore"):
        x = (mat.astype(np.float64) - start) * 255.0 / (end - start)
    return np.clip(np.nan_to_num(x, nan=0.0), 0.0, 255.0).astype(np.uint8)


def sq_distances(codes: "np.ndarray", q_code: "np.ndarray", bounds: Tuple[float, float]) -> "np.ndarray":
    """Squared L2 distances of SQ codes to a query's codes, scaled back to the values' range
    (an integer sum times ``range² / 255²``)."""
    import numpy as np

    diff = codes.astype(np.int32) - q_code.astype(np.int32)
    total = np.einsum("ij,ij->i", diff, diff).astype(np.float32)
    # (pylance 14's arithmetic, found by matching its distances bit for bit: the scale
    # range² / 255² in double precision, rounded to float32, times the float32 sum)
    scale = np.float32((bounds[1] - bounds[0]) ** 2 / 65025.0)
    return total * scale
_FLAT = "flat"
_ROWID = "_rowid"
_VECTOR_DETAILS = "VectorIndexDetails"


# --------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------


@dataclass
class Partition:
    """One partition's rows, as read from ``auxiliary.idx`` (an index cache entry)."""

    row_ids: "np.ndarray"  # (rows,) uint64: row addresses
    # IVF_FLAT: (rows, dim) float32, or (rows, bytes) uint8 for hamming; IVF_PQ: (code bytes, rows) uint8
    # (a byte a sub-vector, or two with 4-bit codes); IVF_SQ: (rows, dim) uint8
    data: "np.ndarray"

    @property
    def nbytes(self) -> int:
        return int(self.row_ids.nbytes + self.data.nbytes)


@dataclass
class IvfIndex:
    """An IVF index's model, loaded in memory; its partitions are read on demand, one at a
    time, through the index cache of the searching dataset's session (index files are
    immutable, so both are cached by index uuid)."""

    uuid: str
    kind: str  # "IVF_FLAT" | "IVF_PQ" | "IVF_SQ"
    metric: str  # "l2" | "cosine" | "dot" | "hamming" (IVF_FLAT over uint8 vectors)
    centroids: "np.ndarray"  # (partitions, dim) float32 (hamming: byte values)
    offsets: "np.ndarray"  # (partitions,) int64: first row of each partition
    lengths: "np.ndarray"  # (partitions,) int64
    aux_path: str  # auxiliary.idx: the partitions' rows
    storage_options: Any
    num_rows: int
    codebook: Optional["np.ndarray"] = None  # IVF_PQ: (sub_vectors, 2^nbits, sub_dim) float32
    num_sub_vectors: int = 0
    nbits: int = 8  # IVF_PQ: bits a code (8, or 4: two codes a byte)
    pq_transposed: bool = False  # IVF_PQ: codes stored sub-vector by sub-vector within a partition
    sq_bounds: Optional[Tuple[float, float]] = None  # IVF_SQ: the values' (start, end)
    loss: Optional[float] = None  # the k-means loss recorded in index.idx, if any
    value_type: str = "float32"  # the centroids' stored float type (pylance's: the vectors')
    cache: Any = None  # a ByteLruCache (the session's index cache), or None: nothing kept
    cache_key: Any = None
    #: a legacy-layout IVF_PQ index (one raw ``index.idx``, see :mod:`lancepy._ops.ivf_legacy`):
    #: its model (``aux_path`` is then that file; ``offsets`` still count rows)
    legacy: Any = None

    @property
    def num_partitions(self) -> int:
        return len(self.lengths)

    @property
    def dim(self) -> int:
        return int(self.centroids.shape[1])

    @property
    def code_bytes(self) -> int:
        """IVF_PQ: bytes of code a row."""
        return self.num_sub_vectors * self.nbits // 8

    @property
    def nbytes(self) -> int:
        cb = 0 if self.codebook is None else self.codebook.nbytes
        return int(self.centroids.nbytes + self.offsets.nbytes + self.lengths.nbytes + cb)

    def partition(self, p: int) -> Partition:
        """Partition `p`'s rows: from the index cache, or read (and cached)."""
        if self.cache is None:
            return _read_partition(self, p)
        return self.cache.get_or_load((self.cache_key, int(p)), lambda: _read_partition(self, p), lambda part: part.nbytes)


def _metadata(reader: Any, path: str) -> Dict[str, str]:
    md = reader.schema.metadata or {}
    return {k.decode(): v.decode() for k, v in md.items()}


def _buffer_number(md: Dict[str, str], key: str, reader: Any, path: str) -> int:
    try:
        n = int(md[key])
    except (KeyError, ValueError):
        raise CorruptFileError(f"{path}: schema metadata {key!r} is missing or not a number") from None
    if not 0 <= n < reader.metadata().num_global_buffers:
        raise CorruptFileError(f"{path}: {key} names global buffer {n}, the file has {reader.metadata().num_global_buffers}")
    return n


def load_index(ds_uri: str, uuid: str, storage_options: Any = None, cache: Any = None) -> IvfIndex:
    """Opens ``_indices/<uuid>/`` of the dataset at ``ds_uri``: its model, from `cache` (a
    session's index cache; keyed by URI, index and storage options: index files are
    immutable, but the same URI read with other options may be another store) or read and
    kept there. Its partitions go through the same cache."""
    key = ("ivf", origin_key(ds_uri, storage_options), uuid)
    if cache is None:
        return _load(ds_uri, uuid, storage_options)
    idx = cache.get_or_load(key, lambda: _load(ds_uri, uuid, storage_options), lambda i: i.nbytes)
    if idx.cache is not cache:  # (the same model may be in several sessions' caches)
        idx = copy.copy(idx)
        idx.cache, idx.cache_key = cache, key
    return idx


def _load(ds_uri: str, uuid: str, storage_options: Any) -> IvfIndex:
    import numpy as np

    from lancepy.file import LanceFileReader

    base = ds_uri.rstrip("/") + f"/_indices/{uuid}/"
    ipath, apath = base + "index.idx", base + "auxiliary.idx"
    if _legacy.is_legacy(ipath, storage_options):
        return _load_legacy(uuid, ipath, storage_options)
    ireader = LanceFileReader(ipath, storage_options)
    imd = _metadata(ireader, ipath)
    try:
        info = json.loads(imd["lance:index"])
        kind, metric = str(info["type"]).upper(), str(info["distance_type"]).lower()
    except (KeyError, ValueError, TypeError):
        raise CorruptFileError(f"{ipath}: schema metadata 'lance:index' is missing or malformed") from None
    if kind not in ("IVF_FLAT", "IVF_PQ", "IVF_SQ"):
        raise UnsupportedError(f"vector index type {kind} is not supported by lancepy (IVF_FLAT, IVF_PQ and IVF_SQ are)")
    if metric not in ("l2", "cosine", "dot", "hamming"):
        raise UnsupportedError(f"vector indices with the {metric!r} distance are not supported by lancepy")
    # IVF messages and tensors (lance.index.pb) are decoded natively (prost).
    ivf = _lancepy.decode_ivf_message(ireader.read_global_buffer(_buffer_number(imd, "lance:ivf", ireader, ipath)))
    tensor, loss = ivf["centroids"], ivf["loss"]
    centroids = None if tensor is None else np.asarray(tensor)
    if centroids is None or centroids.ndim != 2:
        raise CorruptFileError(f"{ipath}: the IVF message has no 2-D centroids tensor")

    areader = LanceFileReader(apath, storage_options)
    amd = _metadata(areader, apath)
    offsets, lengths, _, _ = _lancepy.decode_ivf(areader.read_global_buffer(_buffer_number(amd, "lance:ivf", areader, apath)))
    nparts, dim = centroids.shape
    num_rows = areader.num_rows()
    if max(offsets + lengths, default=0) > num_rows:  # (before numpy: a damaged varint may not fit an int64)
        raise CorruptFileError(f"{apath}: partition offsets/lengths reach past its {num_rows} rows")
    offs = np.asarray(offsets, dtype=np.int64)
    lens = np.asarray(lengths, dtype=np.int64)
    if len(offs) != nparts or len(lens) != nparts or (lens < 0).any() or (offs < 0).any() or (offs + lens > num_rows).any():
        raise CorruptFileError(f"{apath}: partition offsets/lengths do not fit {nparts} partitions of {num_rows} rows")
    names = areader.schema.names
    if _ROWID not in names:
        raise CorruptFileError(f"{apath}: no {_ROWID} column")
    idx = IvfIndex(uuid, kind, metric, np.ascontiguousarray(centroids), offs, lens, apath, storage_options, num_rows, loss=loss,
                   value_type=str(ivf["centroids_type"]))
    if metric == "hamming" and (kind != "IVF_FLAT" or idx.value_type != "uint8"):
        raise UnsupportedError(f"{kind} indices with the hamming distance over {idx.value_type} centroids are not supported "
                               "by lancepy (IVF_FLAT over uint8 vectors is)")
    if kind == "IVF_FLAT":
        if _FLAT not in names:
            raise CorruptFileError(f"{apath}: no {_FLAT!r} column")
    elif kind == "IVF_SQ":
        if metric == "dot":
            raise UnsupportedError("IVF_SQ indices with the dot distance are not supported by lancepy (l2 and cosine are)")
        try:
            (sq,) = json.loads(amd["storage_metadata"])
            sq = json.loads(sq) if isinstance(sq, str) else sq
            nbits, sq_dim = int(sq["num_bits"]), int(sq["dim"])
            start, end = float(sq["bounds"]["start"]), float(sq["bounds"]["end"])
        except (KeyError, ValueError, TypeError):
            raise CorruptFileError(f"{apath}: 'storage_metadata' is missing or malformed") from None
        if nbits != 8:
            raise UnsupportedError(f"IVF_SQ with {nbits}-bit codes is not supported by lancepy (8-bit codes are)")
        if sq_dim != dim or _SQ_CODE not in names:
            raise CorruptFileError(f"{apath}: no {_SQ_CODE} column of {dim} codes a row")
        idx.sq_bounds = (start, end)
    else:
        try:
            (pq,) = json.loads(amd["storage_metadata"])
            pq = json.loads(pq) if isinstance(pq, str) else pq
            nbits, m, pos = int(pq["nbits"]), int(pq["num_sub_vectors"]), int(pq["codebook_position"])
            transposed = bool(pq.get("transposed", False))
        except (KeyError, ValueError, TypeError):
            raise CorruptFileError(f"{apath}: 'storage_metadata' is missing or malformed") from None
        if nbits not in (4, 8):
            raise UnsupportedError(f"IVF_PQ with {nbits}-bit codes is not supported by lancepy (8-bit and 4-bit codes are)")
        if m <= 0 or dim % m or (nbits == 4 and m % 2):
            raise CorruptFileError(f"{apath}: {m} sub-vectors do not divide dimension {dim} (or not in pairs for 4-bit codes)")
        if not 0 < pos < areader.metadata().num_global_buffers:
            raise CorruptFileError(f"{apath}: the codebook buffer {pos} does not exist")
        cb = np.asarray(_lancepy.decode_tensor_f32(areader.read_global_buffer(pos)))
        words = 1 << nbits
        if cb.size != m * words * (dim // m):
            raise CorruptFileError(f"{apath}: the codebook has {cb.size} values, not {m} x {words} x {dim // m}")
        idx.codebook = np.ascontiguousarray(cb.reshape(m, words, dim // m))
        idx.num_sub_vectors = m
        idx.nbits = nbits
        idx.pq_transposed = transposed
        if _PQ_CODE not in names:
            raise CorruptFileError(f"{apath}: no {_PQ_CODE} column")
    return idx


def _load_legacy(uuid: str, path: str, storage_options: Any) -> IvfIndex:
    """An IVF_PQ index in pylance's legacy layout (one raw ``index.idx``)."""
    import numpy as np

    model = _legacy.load(path, storage_options)
    lengths = model.lengths
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(lengths) else lengths
    return IvfIndex(
        uuid, "IVF_PQ", model.metric, model.centroids, offsets, lengths, path, storage_options, int(lengths.sum()),
        codebook=model.codebook, num_sub_vectors=model.num_sub_vectors, loss=model.loss,
        value_type=model.centroids_type, legacy=model,
    )


def all_rows(idx: IvfIndex) -> Tuple["np.ndarray", "np.ndarray"]:
    """Every row of the index in file order (partition by partition), read in one pass and
    not cached: ``(row ids, per-row data)``, the data as rows × dim vectors or SQ codes, or
    rows × sub-vectors PQ codes (what a rewrite of the index needs)."""
    import numpy as np

    from lancepy.file import LanceFileReader

    if idx.legacy is not None:
        got = [_legacy_partition(idx, p) for p in range(idx.num_partitions)]
        rows = [g[0] for g in got]
        codes = [g[1] for g in got]
        return np.concatenate(rows or [np.empty(0, np.uint64)]), np.concatenate(codes or [np.empty((0, idx.num_sub_vectors), np.uint8)])
    column = {"IVF_FLAT": _FLAT, "IVF_SQ": _SQ_CODE}.get(idx.kind, _PQ_CODE)
    width = idx.code_bytes if idx.kind == "IVF_PQ" else idx.dim
    table = LanceFileReader(idx.aux_path, idx.storage_options).read_all(columns=[_ROWID, column]).to_table()
    row_ids = table.column(_ROWID).combine_chunks().to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
    col = table.column(column).combine_chunks()
    values = col.flatten().to_numpy(zero_copy_only=False)
    n = idx.num_rows
    if len(row_ids) != n or col.type.list_size != width or len(values) != n * width:
        raise CorruptFileError(f"{idx.aux_path}: does not hold {n} rows of {width} {column!r} values")
    if idx.kind == "IVF_FLAT":
        dtype = np.uint8 if idx.metric == "hamming" else np.float32
        return row_ids, np.ascontiguousarray(values, dtype=dtype).reshape(n, width)
    values = values.astype(np.uint8, copy=False)
    if idx.kind == "IVF_SQ" or not idx.pq_transposed:
        return row_ids, np.ascontiguousarray(values.reshape(n, width))
    out = np.empty((n, width), dtype=np.uint8)
    for o, k in zip(idx.offsets.tolist(), idx.lengths.tolist()):
        out[o : o + k] = values[o * width : (o + k) * width].reshape(width, k).T
    return row_ids, out


def _read_partition(idx: IvfIndex, p: int) -> Partition:
    """Reads partition `p`'s rows from ``auxiliary.idx`` (only those rows)."""
    import numpy as np

    from lancepy.file import LanceFileReader

    if idx.legacy is not None:
        row_ids, codes = _legacy_partition(idx, p)
        return Partition(row_ids, np.ascontiguousarray(codes.T))
    o, n = int(idx.offsets[p]), int(idx.lengths[p])
    column = {"IVF_FLAT": _FLAT, "IVF_SQ": _SQ_CODE}.get(idx.kind, _PQ_CODE)
    width = idx.code_bytes if idx.kind == "IVF_PQ" else idx.dim
    table = LanceFileReader(idx.aux_path, idx.storage_options).read_range(o, n, columns=[_ROWID, column]).to_table()
    row_ids = table.column(_ROWID).combine_chunks().to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
    col = table.column(column).combine_chunks()
    values = col.flatten().to_numpy(zero_copy_only=False)
    if len(row_ids) != n or col.type.list_size != width or len(values) != n * width:
        raise CorruptFileError(f"{idx.aux_path}: partition {p} does not hold {n} rows of {width} {column!r} values")
    if idx.kind == "IVF_FLAT":
        data = np.ascontiguousarray(values, dtype=np.uint8 if idx.metric == "hamming" else np.float32).reshape(n, width)
    elif idx.kind == "IVF_SQ":
        data = np.ascontiguousarray(values.astype(np.uint8, copy=False).reshape(n, width))
    else:
        # Kept as (sub-vectors, rows): the native scan reads them sub-vector by sub-vector
        # (4-bit codes unpacked, a byte a code).
        codes = values.astype(np.uint8, copy=False)
        data = np.ascontiguousarray(codes.reshape(width, n) if idx.pq_transposed else codes.reshape(n, width).T)
        if idx.nbits == 4:
            data = np.ascontiguousarray(_pq4.unpack(data.T).T)
    return Partition(row_ids, data)


def _legacy_partition(idx: IvfIndex, p: int) -> Tuple["np.ndarray", "np.ndarray"]:
    """Partition `p` of a legacy-layout index: ``(row ids, codes as rows × sub-vectors)``."""
    model = idx.legacy
    return _legacy.read_partition(idx.aux_path, idx.storage_options, int(model.byte_offsets[p]), int(idx.lengths[p]),
                                  idx.num_sub_vectors)


# --------------------------------------------------------------------------------------
# searching
# --------------------------------------------------------------------------------------


def _centroid_distances(idx: IvfIndex, q: "np.ndarray") -> "np.ndarray":
    import numpy as np

    c = idx.centroids
    if idx.metric == "hamming":
        return _vc.hamming(c.astype(np.uint8), q.astype(np.uint8))
    if idx.metric == "dot":
        return 1.0 - c @ q
    d = c - q
    return np.einsum("ij,ij->i", d, d)


def _distances(idx: IvfIndex, parts: List[int], q: "np.ndarray") -> Tuple["np.ndarray", "np.ndarray"]:
    """``(row ids, index distances)`` of every row of partitions ``parts``, in one pass
    (4-bit PQ: partition by partition, each with its own table)."""
    import numpy as np

    loaded = [idx.partition(p) for p in parts]
    if idx.kind == "IVF_PQ" and idx.nbits == 4:
        # A table per partition (of the query's residual; dot: of the query), its 16 entries a
        # sub-vector padded to the native kernel's 256 (codes never reach past 15).
        assert idx.codebook is not None
        m = idx.num_sub_vectors
        tables = np.zeros((max(len(parts), 1), m, 256), np.float32)
        for i, p in enumerate(parts):
            tables[i, :, : _pq4.CODEWORDS] = _pq4.table_for(q, idx.centroids[p], idx.codebook, idx.metric)
        spans4, at4 = [], 0
        for part in loaded:
            spans4.append((at4, len(part.row_ids)))
            at4 += len(part.row_ids)
        codes4 = np.ascontiguousarray(np.concatenate([part.data for part in loaded], axis=1)) if loaded else np.empty((m, 0), np.uint8)
        rid4 = np.concatenate([part.row_ids for part in loaded]) if loaded else np.empty(0, np.uint64)
        got = _lancepy.pq_span_distances(pa.array(codes4.reshape(-1)), codes4.shape[1], m, spans4,
                                         pa.array(tables.reshape(-1)), list(range(len(spans4))))
        d4 = pa.record_batch(got).column(0).to_numpy(zero_copy_only=True)
        return rid4, (d4 - np.float32(m - 1)).astype(np.float32) if idx.metric == "dot" else d4
    if idx.metric == "hamming":
        data = np.concatenate([part.data for part in loaded]) if loaded else np.empty((0, idx.dim), np.uint8)
        rid = np.concatenate([part.row_ids for part in loaded]) if loaded else np.empty(0, np.uint64)
        return rid, _vc.hamming(data, q.astype(np.uint8))
    spans, at = [], 0
    for part in loaded:
        spans.append((at, len(part.row_ids)))
        at += len(part.row_ids)
    rid = np.concatenate([part.row_ids for part in loaded]) if loaded else np.empty(0, np.uint64)
    if idx.kind == "IVF_FLAT":
        # Scored natively, span by span in parallel (the Arrow array wraps the numpy buffer:
        # no copy). Cosine: the stored vectors and the query are normalized, so it is scored
        # as one minus the inner product, as dot is.
        vectors = np.concatenate([part.data for part in loaded]) if loaded else np.empty((0, idx.dim), np.float32)
        got = _lancepy.span_distances(pa.array(vectors.reshape(-1)), idx.dim, spans, q.astype(np.float32).tolist(), idx.metric)
        return rid, pa.record_batch(got).column(0).to_numpy(zero_copy_only=True)
    if idx.kind == "IVF_SQ":
        assert idx.sq_bounds is not None
        q_code = sq_codes(q.astype(np.float32).reshape(1, -1), idx.sq_bounds)[0]
        codes = np.concatenate([part.data for part in loaded]) if loaded else np.empty((0, idx.dim), np.uint8)
        return rid, sq_distances(codes, q_code, idx.sq_bounds)
    m = idx.num_sub_vectors
    cb = idx.codebook
    codes = np.ascontiguousarray(np.concatenate([part.data for part in loaded], axis=1)) if loaded else np.empty((m, 0), np.uint8)
    flat_codes = pa.array(codes.reshape(-1))
    if idx.metric == "dot":  # codes of the vectors themselves; 1 - (sum of per-sub-vector dots)
        table = -np.einsum("mkd,md->mk", cb, q.reshape(m, -1))
        table[0] += 1.0
        got = _lancepy.pq_span_distances(
            flat_codes, codes.shape[1], m, spans, pa.array(table.astype(np.float32).reshape(-1)), [0] * len(spans)
        )
    else:
        # Codes of residuals (vector minus its centroid): per probed partition and sub-vector,
        # a table of squared L2 distances from the query's residual to the 256 codewords,
        # built and applied natively.
        got = _lancepy.pq_l2_span_distances(
            flat_codes, codes.shape[1], m, spans, q.astype(np.float32).tolist(),
            pa.array(np.ascontiguousarray(idx.centroids[parts], dtype=np.float32).reshape(-1)),
            pa.array(np.ascontiguousarray(cb, dtype=np.float32).reshape(-1)),
        )
    return rid, pa.record_batch(got).column(0).to_numpy(zero_copy_only=True)


@dataclass
class IndexQuery:
    """What an index search needs beyond the query vector."""

    k: int
    nprobes: Optional[int]
    minimum_nprobes: Optional[int]
    maximum_nprobes: Optional[int]
    refine_factor: Optional[int]


def search_partitions(
    idx: IvfIndex,
    q: "np.ndarray",
    opts: IndexQuery,
    keep: Any,
) -> Tuple["np.ndarray", "np.ndarray"]:
    """Candidates ``(row addresses, index distances)`` from the probed partitions, the
    best ``k * refine_factor`` (or ``k``) of them by ``(distance, row id)``.

    ``keep(row_ids) -> bool mask`` drops deleted and filtered-out rows before ranking.
    """
    import numpy as np

    q = np.asarray(q, dtype=np.uint8 if idx.metric == "hamming" else np.float32)
    if idx.metric == "cosine":
        norm = float(np.linalg.norm(q))
        q = q / norm if norm > 0 else q
    order = np.argsort(_centroid_distances(idx, q), kind="stable")
    nparts = idx.num_partitions
    if opts.nprobes is not None:
        lo = hi = max(1, min(int(opts.nprobes), nparts))
    else:
        lo = max(1, min(int(opts.minimum_nprobes or DEFAULT_NPROBES), nparts))
        hi = nparts if opts.maximum_nprobes is None else max(lo, min(int(opts.maximum_nprobes), nparts))
    want = opts.k * (opts.refine_factor or 1)
    ids: List[Any] = []
    dists: List[Any] = []
    found = 0
    probe = order[:lo].tolist()
    rest = order[lo:hi].tolist()
    while probe:
        rid, d = _distances(idx, probe, q)
        mask = keep(rid)
        if mask is not None:
            rid, d = rid[mask], d[mask]
        ids.append(rid)
        dists.append(d)
        found += len(rid)
        # (no nprobes given: keep probing, one partition at a time, until k rows are found)
        probe = rest[:1] if found < opts.k else []
        rest = rest[1:]
    if not ids:
        return np.empty(0, np.uint64), np.empty(0, np.float32)
    rid = np.concatenate(ids)
    d = np.concatenate(dists).astype(np.float32, copy=False)
    if len(rid) > want:
        part = np.argpartition(d, want - 1)[:want]
        cut = d[part].max()
        sel = np.nonzero(d <= cut)[0]  # every tie at the cut, so ties break by row id below
        rid, d = rid[sel], d[sel]
    top = np.lexsort((rid, d))[:want]
    return rid[top], d[top]


def vector_indices(section: Optional[bytes], field_id: int) -> List[Dict[str, Any]]:
    """The manifest's vector-index entries on field ``field_id``."""
    if section is None:
        return []
    return [
        e
        for e in _lancepy.index_section_entries(section)
        if e["fields"] == [field_id] and e["details_type"].endswith(_VECTOR_DETAILS)
    ]


def covered_fragments(entry: Dict[str, Any], fragment_ids: Sequence[int]) -> Tuple[List[int], List[int]]:
    """Splits the dataset's fragments into those the index covers and the others."""
    bm = set(entry["fragment_ids"])
    return [f for f in fragment_ids if f in bm], [f for f in fragment_ids if f not in bm]
