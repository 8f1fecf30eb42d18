"""Building IVF vector indices (``IVF_FLAT``, ``IVF_PQ``, ``IVF_SQ``) in pylance 14's on-disk format.

The files written are the ones :mod:`lancepy._ops.ivf` reads (and pylance reads and writes), in file
version 2.2:

* ``index.idx``: no rows (the flat sub-index keeps nothing per partition), one column
  ``__flat_marker``; schema metadata ``lance:index`` (type, distance type), ``lance:flat``
  (one empty string per partition) and ``lance:ivf`` = the global buffer holding an ``IVF``
  message with the centroids (a float32 ``Tensor``) and the k-means loss.
* ``auxiliary.idx``: the rows, partition after partition and by row id within one:
  ``_rowid`` and either ``flat`` (the vectors; normalized for cosine) or ``__pq_code`` (one
  byte per sub-vector; within a partition the codes are transposed, sub-vector by
  sub-vector) or ``__sq_code`` (one byte per value: its place in the value range of the
  sample, 0..255). Global buffer ``lance:ivf`` holds the partitions' offsets and lengths;
  ``storage_metadata`` (JSON) names the buffer of a PQ codebook, or holds the SQ range.

Training follows pylance's recipe: IVF centroids by k-means on ``num_partitions ×
sample_rate`` random rows (cosine on normalized rows; dot by inner product), PQ codebooks
(256 codewords per sub-vector) by k-means on ``256 × sample_rate`` rows' residuals (vector
minus its centroid; dot quantizes the vectors themselves). The kernels run in Rust
(:mod:`lancepy._lancepy`); this module orchestrates, writes the files and builds the
manifest's ``IndexMetadata``.

Binary vectors (``fixed_size_list<uint8>``, ``metric="hamming"``, IVF_FLAT only): centroids by
pylance's k-modes (:func:`lancepy._ops.vector_columns.train_kmodes`), written as a uint8
tensor; the vectors kept as bytes. ``num_bits=4`` (IVF_PQ only): 16 codewords a sub-vector
trained on ``16 × sample_rate`` rows, codes packed two a byte (:mod:`lancepy._ops.pq4`). A
vector nested in a struct (``"data.embedding"``) is read through its top-level column; the
index names the nested field's id, as pylance's does.

Memory: the row ids and PQ codes of every indexed row are held until the file is written
(``8 + num_sub_vectors`` bytes a row); IVF_FLAT also holds the vectors (the indexed column's
size), as the file must be written partition by partition.
"""

from __future__ import annotations

import json
import time
import uuid as _uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from lancepy import _lancepy
from lancepy._ops import ivf as _ivf_read
from lancepy._ops import pq4 as _pq4
from lancepy._ops import vector_columns as _vc
from lancepy._ops import ivf_legacy as _ivf_legacy
from lancepy._ops import take as _take
from lancepy._ops.remap import moved_rows
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy._table.snapshot import DatasetView

#: Rows per partition aimed at when ``num_partitions`` is not given (pylance 14's defaults).
TARGET_PARTITION_SIZE = {"IVF_FLAT": 4096, "IVF_PQ": 8192, "IVF_SQ": 8192}
MAX_PARTITIONS = 4096
DEFAULT_SAMPLE_RATE = 256
DEFAULT_MAX_ITERS = 50
_PQ_CODEWORDS = 256
_ENCODE_BATCH_ROWS = 65536


@dataclass
class IndexBuildProgress:
    """What a ``progress_callback`` of :meth:`LanceDataset.create_index` receives."""

    stage: str  # "sample" | "train_ivf" | "train_pq" | "encode" | "write" | "commit"
    completed: int
    total: int


@dataclass
class IvfParams:
    kind: str  # "IVF_FLAT" | "IVF_PQ" | "IVF_SQ"
    metric: str  # "l2" | "cosine" | "dot"
    num_partitions: Optional[int]
    num_sub_vectors: Optional[int]
    sample_rate: int
    max_iters: int
    ivf_centroids: Any
    pq_codebook: Any
    filter_nan: bool
    seed: Optional[int]
    transposed: bool = True
    sq_bounds: Optional[Tuple[float, float]] = None  # IVF_SQ: the range its codes span
    #: The indexed vectors' type: pylance writes the centroids, the PQ codebook and the
    #: IVF_FLAT vectors in it ("float16", "float32", "float64"; "uint8": binary vectors, hamming).
    value_type: str = "float32"
    num_bits: int = 8  # IVF_PQ: bits a code (8, or 4: two codes a byte)
    #: the index layout: "V3" (index.idx + auxiliary.idx) or "Legacy" (IVF_PQ only: one raw
    #: index.idx, see :mod:`lancepy._ops.ivf_legacy`)
    file_version: str = "V3"
    #: the rows per partition the build was asked for (recorded in the index's details)
    target_partition_size: Optional[int] = None


# --------------------------------------------------------------------------------------
# protobuf messages (lance.index.pb), encoded natively (prost)
# --------------------------------------------------------------------------------------


_ARROW_FLOATS = {"float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64(), "uint8": pa.uint8()}


def _writable_type(value_type: str) -> str:
    """`value_type` if lancepy can write an index of it (a rewrite keeps an index's type)."""
    if value_type not in _ARROW_FLOATS:
        raise NotSupportedError(
            f"rewriting a vector index of {value_type} vectors: lancepy writes float16, float32, float64 and uint8 ones")
    return value_type


def _f32(array: "np.ndarray") -> pa.Array:
    import numpy as np

    return pa.array(np.ascontiguousarray(array, dtype=np.float32).reshape(-1), pa.float32())


def _tensor_f32(array: "np.ndarray", shape: Sequence[int], value_type: str = "float32") -> bytes:
    """A ``Tensor`` of `shape` holding `array`'s values in C order, as `value_type` values."""
    return _lancepy.encode_tensor_f32(_f32(array), [int(s) for s in shape], value_type)


def ivf_message(
    offsets: Sequence[int],
    lengths: Sequence[int],
    centroids: Optional["np.ndarray"] = None,
    loss: Optional[float] = None,
    value_type: str = "float32",
) -> bytes:
    """An ``IVF`` message: partition offsets (2) and lengths (3), centroids tensor (4, as
    `value_type` values), loss (5)."""
    loss = None if loss is None else float(loss)
    if centroids is None:
        return _lancepy.encode_ivf(list(offsets), list(lengths), loss=loss)
    return _lancepy.encode_ivf(list(offsets), list(lengths), _f32(centroids), list(centroids.shape), loss, value_type)


def vector_index_details(p: IvfParams) -> bytes:
    """``VectorIndexDetails``: metric (1), the target partition size asked for (2), PQ
    parameters (4), SQ (5) or flat (8), build parameters (9)."""
    hints = [("lance.ivf.sample_rate", str(p.sample_rate)), ("lance.ivf.max_iters", str(p.max_iters))]
    tps = int(p.target_partition_size or 0)
    if p.kind == "IVF_SQ":
        hints += [("lance.sq.sample_rate", str(p.sample_rate))]
        return _lancepy.encode_vector_index_details(p.metric, "sq", hints, 8, 0, target_partition_size=tps)
    if p.kind != "IVF_PQ":
        return _lancepy.encode_vector_index_details(p.metric, "flat", hints, target_partition_size=tps)
    hints += [("lance.pq.sample_rate", str(p.sample_rate)), ("lance.pq.max_iters", str(p.max_iters)), ("lance.pq.kmeans_redos", "1")]
    return _lancepy.encode_vector_index_details(
        p.metric, "pq", hints, p.num_bits, int(p.num_sub_vectors or 0), target_partition_size=tps
    )


# --------------------------------------------------------------------------------------
# data access
# --------------------------------------------------------------------------------------


def _values(batch_values: Any, dtype: Any = None) -> "np.ndarray":
    import numpy as np

    return np.ascontiguousarray(batch_values.to_numpy(zero_copy_only=False), dtype=dtype or np.float32)


def _vectors_of(column: Any, dim: int, filter_nan: bool) -> Tuple["np.ndarray", "np.ndarray"]:
    """``(rows × dim float32 matrix, mask of the rows kept)`` of a fixed-size-list column
    (a uint8 matrix for binary vectors): null vectors always dropped, vectors with a NaN or
    infinite value dropped with ``filter_nan``."""
    import numpy as np

    arr = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    n = len(arr)
    keep = np.ones(n, dtype=bool)
    if arr.null_count:
        keep &= arr.is_valid().to_numpy(zero_copy_only=False)
    flat = arr.values.slice(arr.offset * dim, n * dim)
    if flat.null_count:
        bad = flat.is_null().to_numpy(zero_copy_only=False).reshape(n, dim).any(axis=1)
        keep &= ~bad
        flat = flat.fill_null(0)
    if pa.types.is_uint8(flat.type):
        return _values(flat, np.uint8).reshape(n, dim), keep
    mat = _values(flat).reshape(n, dim)
    if filter_nan:
        keep &= np.isfinite(mat).all(axis=1)
    return mat, keep


def _normalized(mat: "np.ndarray") -> "np.ndarray":
    import numpy as np

    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(mat / norms, dtype=np.float32)


def _sample(view: "DatasetView", column: str, dim: int, fragments: List[int], want: int, p: IvfParams) -> "np.ndarray":
    """Up to `want` random live rows of `column` in `fragments` (as a float32 matrix, or
    uint8 for binary vectors)."""
    import numpy as np

    live_rows = view.fragment_rows()
    counts = [live_rows[f][1] for f in fragments]
    total = sum(counts)
    rng = np.random.default_rng(p.seed)
    picks = np.arange(total) if want >= total else np.sort(rng.choice(total, size=want, replace=False))
    parts = []
    start = 0
    for frag, n in zip(fragments, counts):
        local = picks[(picks >= start) & (picks < start + n)] - start
        start += n
        if len(local):
            t = _take.take_in_fragment(view, frag, local, [_vc.resolve(view.schema, column)[0]])
            mat, keep = _vectors_of(_vc.column_values(t, column), dim, p.filter_nan)
            parts.append(mat[keep])
    dtype = np.uint8 if p.metric == "hamming" else np.float32
    return np.concatenate(parts) if parts else np.empty((0, dim), dtype)


# --------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------


def _matrix_arg(value: Any, what: str, shape: Tuple[int, ...]) -> "np.ndarray":
    """A user-given centroids / codebook array (numpy, pyarrow fixed-size lists), checked."""
    import numpy as np

    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        arr = value.combine_chunks() if isinstance(value, pa.ChunkedArray) else value
        if isinstance(arr.type, pa.FixedShapeTensorType):
            value = arr.to_numpy_ndarray()
        elif pa.types.is_fixed_size_list(arr.type):
            value = _values(arr.flatten()).reshape(len(arr), arr.type.list_size)
        else:
            value = _values(arr)
    if isinstance(value, np.ndarray) and value.dtype == object:
        raise InvalidArgumentError(f"{what}: not a numeric array (an array of objects)")
    try:
        mat = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{what}: not a numeric array ({e})") from None
    fixed = int(np.prod([d for d in shape if d >= 0]))
    if mat.size == 0 or mat.size % fixed or (-1 not in shape and mat.size != fixed):
        want = " x ".join("N" if d < 0 else str(d) for d in shape)
        raise InvalidArgumentError(f"{what}: expected {want} values, got shape {mat.shape}")
    return np.ascontiguousarray(mat.reshape(shape))


def _batch_column(got: Any, name: str = "values") -> "np.ndarray":
    return pa.record_batch(got).column(name).to_numpy(zero_copy_only=False)


def train_ivf(sample: "np.ndarray", k: int, p: IvfParams) -> Tuple["np.ndarray", float]:
    """k-means centroids (``k × dim``) and loss on `sample` (already normalized for cosine)."""
    import numpy as np

    dim = sample.shape[1]
    seed = int(p.seed if p.seed is not None else np.random.default_rng().integers(1 << 62))
    got, loss, _ = _lancepy.kmeans_train(pa.array(sample.reshape(-1)), dim, k, p.max_iters, p.metric, seed)
    return _batch_column(got).reshape(k, dim), float(loss)


def assign(mat: "np.ndarray", centroids: "np.ndarray", metric: str) -> Tuple["np.ndarray", "np.ndarray"]:
    """Nearest centroid of each row and the distance to it."""
    b = pa.record_batch(_lancepy.ivf_assign(pa.array(mat.reshape(-1)), mat.shape[1], pa.array(centroids.reshape(-1)), metric))
    return b.column("partition").to_numpy(), b.column("distance").to_numpy()


def pq_codes(mat: "np.ndarray", codebook: "np.ndarray", m: int, centroids: Optional["np.ndarray"], parts: Optional["np.ndarray"]) -> "np.ndarray":
    """``rows × m`` PQ codes of `mat` (of its residuals when `centroids` / `parts` are given)."""
    dim = mat.shape[1]
    extra = {}
    if centroids is not None:
        extra = {"centroids": pa.array(centroids.reshape(-1)), "partitions": pa.array(parts)}
    got = _lancepy.pq_encode(pa.array(mat.reshape(-1)), dim, pa.array(codebook.reshape(-1)), m, **extra)
    return _batch_column(got).reshape(-1, m)


# --------------------------------------------------------------------------------------
# the build
# --------------------------------------------------------------------------------------


def _encode_rows(
    view: "DatasetView",
    column: str,
    dim: int,
    fragments: List[int],
    centroids: "np.ndarray",
    codebook: Optional["np.ndarray"],
    m: int,
    p: IvfParams,
    report: Callable[[str, int, int], None],
) -> Tuple["np.ndarray", "np.ndarray", "np.ndarray"]:
    """Assigns (and PQ-encodes) every indexable live row of `fragments`: ``(row ids,
    partitions, codes or vectors)``, in scan order."""
    import numpy as np

    num_rows = sum(view.fragment_rows()[f][1] for f in fragments)
    ids_parts: List[Any] = []
    part_parts: List[Any] = []
    data_parts: List[Any] = []
    done = 0
    frag_ids = list(fragments)
    stream = view.snapshot.scan_stream(
        [_vc.resolve(view.schema, column)[0]],
        fragment_ids=frag_ids,
        batch_rows=_ENCODE_BATCH_ROWS,
        with_row_id=True,
    )
    if p.metric == "hamming":
        centroids = np.asarray(centroids, dtype=np.uint8)  # (byte values, held as floats by a loaded index)
    report("encode", 0, num_rows)
    while (raw := stream.next_batch()) is not None:
        batch = pa.record_batch(raw)
        mat, keep = _vectors_of(_vc.column_values(batch, column), dim, p.filter_nan)
        rid = batch.column("_rowid").to_numpy(zero_copy_only=False)
        if not keep.all():
            mat, rid = np.ascontiguousarray(mat[keep]), rid[keep]
        if p.metric == "cosine":
            mat = _normalized(mat)
        parts, _ = _vc.hamming_assign(mat, centroids) if p.metric == "hamming" else assign(mat, centroids, p.metric)
        if p.kind == "IVF_PQ" and p.num_bits == 4:
            assert codebook is not None
            data_parts.append(_pq4.pack(_pq4.encode(mat if p.metric == "dot" else mat - centroids[parts], codebook)))
        elif p.kind == "IVF_PQ":
            if p.metric == "dot":
                data_parts.append(pq_codes(mat, codebook, m, None, None))
            else:
                data_parts.append(pq_codes(mat, codebook, m, centroids, parts))
        elif p.kind == "IVF_SQ":
            assert p.sq_bounds is not None
            data_parts.append(_ivf_read.sq_codes(mat, p.sq_bounds))
        else:
            data_parts.append(mat)
        ids_parts.append(rid)
        part_parts.append(parts)
        done += batch.num_rows
        report("encode", done, num_rows)
    width = m * p.num_bits // 8 if p.kind == "IVF_PQ" else dim
    dtype = np.uint8 if p.kind in ("IVF_PQ", "IVF_SQ") or p.metric == "hamming" else np.float32
    row_ids = np.concatenate(ids_parts).astype(np.uint64, copy=False) if ids_parts else np.empty(0, np.uint64)
    parts = np.concatenate(part_parts) if part_parts else np.empty(0, np.uint32)
    data = np.concatenate(data_parts) if data_parts else np.empty((0, width), dtype)
    return row_ids, parts, data


def build(
    view: "DatasetView",
    column: str,
    field_id: int,
    dim: int,
    p: IvfParams,
    fragment_ids: Optional[List[int]],
    index_uuid: Optional[str],
    name: str,
    progress: Optional[Callable[[IndexBuildProgress], None]],
    storage_options: Any = None,
) -> Dict[str, Any]:
    """Trains, encodes and writes the index files; returns the ``IndexMetadata`` (JSON form)
    to commit."""

    def report(stage: str, done: int, total: int) -> None:
        if progress is not None:
            progress(IndexBuildProgress(stage, done, total))

    fragments = _fragments(view, fragment_ids)
    trained = train(view, column, dim, p, fragments, report)
    return write_segment(view, column, field_id, dim, p, trained, fragments, index_uuid, name, report, storage_options)


def _fragments(view: "DatasetView", fragment_ids: Optional[List[int]]) -> List[int]:
    """The ids of the dataset's fragments, or of those of `fragment_ids` (all in this
    version), in manifest order."""
    fragments = list(view.fragment_ids)
    if fragment_ids is not None:
        wanted = set(int(f) for f in fragment_ids)
        missing = wanted - set(fragments)
        if missing:
            raise InvalidArgumentError(f"fragment_ids: fragments {sorted(missing)} are not in version {view.version}")
        fragments = [f for f in fragments if f in wanted]
    return fragments


@dataclass
class Trained:
    """What training gives every segment built with it: the IVF centroids (and their
    k-means loss, None where given), the PQ codebook (IVF_PQ), the number of sub-vectors."""

    centroids: "np.ndarray"
    loss: Optional[float]
    codebook: Optional["np.ndarray"]
    m: int


def train(
    view: "DatasetView", column: str, dim: int, p: IvfParams, fragments: List[int],
    report: Callable[[str, int, int], None],
) -> Trained:
    """Steps 1-3 of :func:`build`: samples `fragments` and trains (or takes from `p`) the
    centroids and the PQ codebook; for IVF_SQ, sets ``p.sq_bounds``."""
    import numpy as np

    num_rows = sum(view.fragment_rows()[f][1] for f in fragments)
    k = p.num_partitions
    given_centroids = None
    words = 1 << p.num_bits  # (PQ codewords a sub-vector)
    if p.ivf_centroids is not None:
        if p.metric == "hamming":
            raise NotSupportedError("create_index(ivf_centroids=...) with metric='hamming': lancepy trains binary centroids itself")
        given_centroids = _matrix_arg(p.ivf_centroids, "ivf_centroids", (-1, dim))
        if k is not None and k != len(given_centroids):
            raise InvalidArgumentError(f"ivf_centroids has {len(given_centroids)} centroids, but num_partitions={k}")
        k = len(given_centroids)
    if k is None:
        k = min(max(1, num_rows // TARGET_PARTITION_SIZE[p.kind]), MAX_PARTITIONS)
    if k < 1:
        raise InvalidArgumentError(f"num_partitions must be at least 1, got {k}")
    m = int(p.num_sub_vectors or 0)

    # 1. sample
    want = k * p.sample_rate
    if (p.kind == "IVF_PQ" and p.pq_codebook is None) or p.kind == "IVF_SQ":
        want = max(want, (words if p.kind == "IVF_PQ" else _PQ_CODEWORDS) * p.sample_rate)  # (an SQ's range: 2^8 x sample_rate rows)
    need_sample = p.ivf_centroids is None or (p.kind == "IVF_PQ" and p.pq_codebook is None) or p.kind == "IVF_SQ"
    sample = np.empty((0, dim), np.uint8 if p.metric == "hamming" else np.float32)
    if need_sample:
        report("sample", 0, want)
        sample = _sample(view, column, dim, fragments, want, p)
        report("sample", len(sample), want)
        if p.metric == "cosine":
            sample = _normalized(sample)

    # 2. IVF centroids
    loss: Optional[float] = None
    if given_centroids is not None:
        centroids = given_centroids
    else:
        if len(sample) < k:
            raise InvalidArgumentError(
                f"cannot train {k} IVF partitions from {len(sample)} rows: use fewer partitions (num_partitions=)"
            )
        report("train_ivf", 0, 1)
        ivf_sample = sample[: k * p.sample_rate]
        if p.metric == "hamming":
            seed = int(p.seed if p.seed is not None else np.random.default_rng().integers(1 << 62))
            centroids, loss = _vc.train_kmodes(ivf_sample, k, p.max_iters, seed)
        else:
            centroids, loss = train_ivf(ivf_sample, k, p)
        report("train_ivf", 1, 1)

    # 3. PQ codebook (trained on residuals, except for dot)
    codebook = None
    if p.kind == "IVF_PQ":
        if p.pq_codebook is not None:
            codebook = _matrix_arg(p.pq_codebook, "pq_codebook", (m, words, dim // m))
        else:
            if len(sample) < words:
                raise InvalidArgumentError(
                    f"training a PQ codebook needs at least {words} rows, {len(sample)} are indexable"
                )
            report("train_pq", 0, 1)
            pq_sample = sample[: words * p.sample_rate]  # (pylance's PQ sample: 2^num_bits x sample_rate rows)
            if p.metric != "dot":
                parts, _ = assign(pq_sample, centroids, p.metric)
                pq_sample = np.asarray(pq_sample - centroids[parts], dtype=np.float32)
            seed = int(p.seed if p.seed is not None else np.random.default_rng().integers(1 << 62))
            if p.num_bits == 4:
                codebook = _pq4.train_codebook(pq_sample, m, p.max_iters, seed)
            else:
                got = _lancepy.pq_train(pa.array(np.ascontiguousarray(pq_sample).reshape(-1)), dim, m, p.max_iters, seed)
                codebook = _batch_column(got).reshape(m, _PQ_CODEWORDS, dim // m)
            report("train_pq", 1, 1)

    # 3b. the SQ's range: the sample's smallest and largest values
    if p.kind == "IVF_SQ":
        if not len(sample):
            raise InvalidArgumentError("IVF_SQ: no indexable vectors to take the value range from")
        p.sq_bounds = (float(np.nanmin(sample)), float(np.nanmax(sample)))
    return Trained(centroids, loss, codebook, m)


def write_segment(
    view: "DatasetView",
    column: str,
    field_id: int,
    dim: int,
    p: IvfParams,
    trained: Trained,
    fragments: List[int],
    index_uuid: Optional[str],
    name: str,
    report: Callable[[str, int, int], None],
    storage_options: Any = None,
) -> Dict[str, Any]:
    """Steps 4-6 of :func:`build`: encodes the rows of `fragments` with `trained` and writes
    one index segment (directory ``_indices/<index_uuid>/``, a new uuid if None); returns
    its ``IndexMetadata`` (JSON form). Segments of one training, over disjoint fragments,
    make one index when committed together under one name."""
    centroids, loss, codebook, m = trained.centroids, trained.loss, trained.codebook, trained.m
    k = len(centroids)
    # 4. encode every row
    row_ids, parts, data = _encode_rows(view, column, dim, fragments, centroids, codebook, m, p, report)

    # 5. group by partition
    row_ids, data, offsets, lengths = _grouped(row_ids, parts, data, k)

    # 6. write the files
    report("write", 0, 2)
    uid = str(_uuid.UUID(index_uuid)) if index_uuid is not None else str(_uuid.uuid4())
    base = view.uri.rstrip("/") + f"/_indices/{uid}/"
    if p.file_version == "Legacy":
        files = _write_legacy(base, name, column, view.version, p, dim, m, centroids, loss, codebook, row_ids, data, lengths,
                              storage_options)
    else:
        files = _write_files(base, p, k, dim, m, centroids, loss, codebook, row_ids, data, offsets, lengths, storage_options)
    report("write", 2, 2)
    bitmap = _lancepy.fragment_bitmap([int(f) for f in fragments])
    return {
        "uuid": {"uuid": list(_uuid.UUID(uid).bytes)},
        "fields": [field_id],
        "name": name,
        "dataset_version": view.version,
        "fragment_bitmap": list(bitmap),
        "index_details": {"type_url": "/lance.index.pb.VectorIndexDetails", "value": list(vector_index_details(p))},
        "index_version": 1,
        "created_at": int(time.time() * 1000),
        "base_id": None,
        "files": files,
        "covering_fields": [],
    }


def _grouped(
    row_ids: "np.ndarray", parts: "np.ndarray", data: "np.ndarray", k: int
) -> Tuple["np.ndarray", "np.ndarray", "np.ndarray", "np.ndarray"]:
    """Rows ordered partition by partition, by row id within one: ``(row ids, data,
    offsets, lengths)``."""
    import numpy as np

    order = np.lexsort((row_ids, parts))
    lengths = np.bincount(parts[order], minlength=k).astype(np.int64) if len(order) else np.zeros(k, np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return row_ids[order], data[order], offsets, lengths


def _write_files(
    base: str,
    p: IvfParams,
    k: int,
    dim: int,
    m: int,
    centroids: "np.ndarray",
    loss: Optional[float],
    codebook: Optional["np.ndarray"],
    row_ids: "np.ndarray",
    data: "np.ndarray",
    offsets: "np.ndarray",
    lengths: "np.ndarray",
    storage_options: Any,
) -> List[Dict[str, Any]]:
    import numpy as np

    from lancepy.file import LanceFileWriter

    n = len(row_ids)
    rid = pa.array(row_ids.astype(np.uint64, copy=False), pa.uint64())
    if p.kind == "IVF_PQ":
        # Transposed within each partition: code byte 0 of every row, then byte 1, ... (a byte
        # is a sub-vector's code, or two sub-vectors' 4-bit codes)
        nb = m * p.num_bits // 8
        out = np.empty(n * nb, dtype=np.uint8)
        if p.transposed:
            for o, ln in zip(offsets.tolist(), lengths.tolist()):
                out[o * nb : (o + ln) * nb] = data[o : o + ln].T.reshape(-1)
        else:
            out[:] = data.reshape(-1)
        values = pa.FixedSizeListArray.from_arrays(pa.array(out, pa.uint8()), nb)
        schema = pa.schema([pa.field("_rowid", pa.uint64()), pa.field("__pq_code", pa.list_(pa.uint8(), nb))])
    elif p.kind == "IVF_SQ":
        values = pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(data, dtype=np.uint8).reshape(-1), pa.uint8()), dim)
        schema = pa.schema([pa.field("_rowid", pa.uint64()), pa.field("__sq_code", pa.list_(pa.uint8(), dim))])
    else:
        vt = _ARROW_FLOATS[p.value_type]
        values = pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(data, dtype=vt.to_pandas_dtype()).reshape(-1), vt), dim)
        # (pylance's column of binary vectors is nullable, its float ones are not)
        schema = pa.schema(
            [pa.field("_rowid", pa.uint64()), pa.field("flat", pa.list_(pa.field("item", vt), dim), nullable=p.metric == "hamming")]
        )
    aux = LanceFileWriter(base + "auxiliary.idx", schema, version="2.2", storage_options=storage_options)
    if n:
        aux.write_batch(pa.record_batch([rid, values], schema=schema))
    aux.add_schema_metadata("distance_type", p.metric)
    aux.add_schema_metadata("lance:ivf", str(aux.add_global_buffer(ivf_message(offsets.tolist(), lengths.tolist()))))
    if p.kind == "IVF_PQ":
        pos = aux.add_global_buffer(_tensor_f32(codebook, (1 << p.num_bits, dim), p.value_type))
        meta = {
            "codebook_position": pos,
            "nbits": p.num_bits,
            "num_sub_vectors": m,
            "dimension": dim,
            "codebook_tensor": [],
            "transposed": p.transposed,
        }
    elif p.kind == "IVF_SQ":
        assert p.sq_bounds is not None
        meta = {"dim": dim, "num_bits": 8, "bounds": {"start": p.sq_bounds[0], "end": p.sq_bounds[1]}}
    else:
        meta = {"dim": dim}
    aux.add_schema_metadata("storage_metadata", json.dumps([json.dumps(meta, separators=(",", ":"))]))
    aux.close()

    marker = pa.schema([pa.field("__flat_marker", pa.uint64(), nullable=False)])
    idx = LanceFileWriter(base + "index.idx", marker, version="2.2", storage_options=storage_options)
    idx.add_schema_metadata("lance:index", json.dumps({"type": p.kind, "distance_type": p.metric}, separators=(",", ":")))
    idx.add_schema_metadata("lance:flat", json.dumps([""] * k, separators=(",", ":")))
    idx.add_schema_metadata("lance:ivf", str(idx.add_global_buffer(ivf_message([0] * k, [0] * k, centroids, loss, p.value_type))))
    idx.close()
    return [
        {"path": "auxiliary.idx", "size_bytes": int(aux.file_size or 0)},
        {"path": "index.idx", "size_bytes": int(idx.file_size or 0)},
    ]


def _write_legacy(
    base: str,
    name: str,
    column: str,
    dataset_version: int,
    p: IvfParams,
    dim: int,
    m: int,
    centroids: "np.ndarray",
    loss: Optional[float],
    codebook: "np.ndarray",
    row_ids: "np.ndarray",
    codes: "np.ndarray",
    lengths: "np.ndarray",
    storage_options: Any,
) -> List[Dict[str, Any]]:
    """Writes an IVF_PQ index in pylance's legacy layout (one ``index.idx``)."""
    if p.kind != "IVF_PQ" or p.value_type != "float32":
        raise NotSupportedError(
            f"the legacy index layout: lancepy writes it for IVF_PQ of float32 vectors (not {p.kind} of {p.value_type})"
        )
    data = _ivf_legacy.encode(
        name, column, dataset_version, p.metric, dim, m, row_ids, codes, lengths, centroids, loss, codebook, p.value_type
    )
    return _ivf_legacy.write(base, data, storage_options)


# --------------------------------------------------------------------------------------
# remapping after compaction
# --------------------------------------------------------------------------------------


def remap(
    ds_uri: str,
    storage_options: Any,
    entry: Dict[str, Any],
    old_addresses: "np.ndarray",
    new_addresses: "np.ndarray",
    compacted_fragments: Sequence[int],
    dropped_fragments: Sequence[int],
) -> Tuple[str, List[Dict[str, Any]]]:
    """Writes a copy of the IVF index `entry` (from ``index_section_entries``) whose row
    addresses are moved by a compaction: a row at ``old_addresses[i]`` (sorted) is now at
    ``new_addresses[i]``; rows of `compacted_fragments` that are not in `old_addresses`
    (deleted rows) and rows of `dropped_fragments` (compacted together with fragments the
    index does not cover: they are searched exactly from now on) are left out. Other rows are
    kept as they are. Returns the new index's uuid and its files (for the manifest)."""
    import numpy as np

    from lancepy._ops import ivf as _ivf

    idx = _ivf.load_index(ds_uri, entry["uuid"], storage_options)
    row_ids, data = _ivf.all_rows(idx)
    new_rid, keep = moved_rows(row_ids, old_addresses, new_addresses, compacted_fragments, dropped_fragments)
    parts = np.repeat(np.arange(idx.num_partitions), idx.lengths)
    new_rid, data, offsets, lengths = _grouped(new_rid[keep], parts[keep], data[keep], idx.num_partitions)
    return _rewrite(ds_uri, storage_options, idx, new_rid, data, offsets, lengths)


def _rewrite(
    ds_uri: str, storage_options: Any, idx: Any, row_ids: "np.ndarray", data: "np.ndarray", offsets: "np.ndarray", lengths: "np.ndarray"
) -> Tuple[str, List[Dict[str, Any]]]:
    """Writes a new index with `idx`'s model (centroids, codebook, metric) and these rows."""
    m = idx.num_sub_vectors if idx.kind == "IVF_PQ" else 0
    p = IvfParams(idx.kind, idx.metric, idx.num_partitions, m or None, DEFAULT_SAMPLE_RATE, DEFAULT_MAX_ITERS,
                  None, None, True, None, sq_bounds=idx.sq_bounds, value_type=_writable_type(idx.value_type), num_bits=idx.nbits)
    uid = str(_uuid.uuid4())
    base = ds_uri.rstrip("/") + f"/_indices/{uid}/"
    if idx.legacy is not None:  # (kept in its layout, as pylance remaps and optimizes a legacy index)
        p.file_version = "Legacy"
        files = _write_legacy(base, idx.legacy.name, idx.legacy.column, idx.legacy.dataset_version, p,
                              idx.centroids.shape[1], m, idx.centroids, idx.loss, idx.codebook, row_ids, data, lengths,
                              storage_options)
        return uid, files
    files = _write_files(base, p, idx.num_partitions, idx.centroids.shape[1], m, idx.centroids, idx.loss, idx.codebook,
                         row_ids, data, offsets, lengths, storage_options)
    return uid, files


def extend(
    view: "DatasetView", column: str, entries: List[Dict[str, Any]], fragments: List[int], merge: bool
) -> Tuple[str, List[Dict[str, Any]]]:
    """Adds the rows of `fragments` to an index with the model of the first of `entries`
    (segments of one index, from ``index_section_entries``): with `merge`, one new segment
    holding the rows of every entry plus the new ones; else a delta segment of the new rows
    only. Returns the new segment's uuid and files."""
    import numpy as np

    from lancepy._ops import ivf as _ivf

    first = _ivf.load_index(view.uri, entries[0]["uuid"], view.storage_options)
    m = first.num_sub_vectors if first.kind == "IVF_PQ" else 0
    p = IvfParams(first.kind, first.metric, first.num_partitions, m or None, DEFAULT_SAMPLE_RATE, DEFAULT_MAX_ITERS,
                  None, None, True, None, sq_bounds=first.sq_bounds, value_type=_writable_type(first.value_type),
                  num_bits=first.nbits)
    dim = first.centroids.shape[1]
    row_ids, parts, data = _encode_rows(view, column, dim, fragments, first.centroids, first.codebook, m, p, lambda *a: None)
    if merge:
        live = view.fragment_id_set()
        olds = [first] + [_ivf.load_index(view.uri, e["uuid"], view.storage_options) for e in entries[1:]]
        for idx in olds:
            if idx.centroids.shape != first.centroids.shape or not np.array_equal(idx.centroids, first.centroids):
                raise NotSupportedError("optimize_indices: merging index segments trained separately (retrain=True rebuilds)")
            # rows of fragments that no longer exist are dropped
            old_rid, old_data = _ivf.all_rows(idx)
            keep = np.isin((old_rid >> np.uint64(32)).astype(np.int64), np.asarray(sorted(live), dtype=np.int64))
            row_ids = np.concatenate([old_rid[keep], row_ids])
            parts = np.concatenate([np.repeat(np.arange(idx.num_partitions), idx.lengths)[keep].astype(np.uint32), parts])
            data = np.concatenate([old_data[keep], data])
    row_ids, data, offsets, lengths = _grouped(row_ids, parts, data, first.num_partitions)
    return _rewrite(view.uri, view.storage_options, first, row_ids, data, offsets, lengths)
