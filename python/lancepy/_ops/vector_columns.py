"""Vector columns the native exact search (``TableSnapshot.knn``) does not read: vectors
nested in a struct (``"data.embedding"``, pylance's dotted field path) and binary vectors
(``fixed_size_list<uint8>``, the hamming distance: bits that differ). Both are read here, by
their top-level column, and searched exactly in numpy, batch by batch (memory bounded by a
batch and the ``k`` best), with pylance's result: ``(row addresses, distances)``, nearest
first, ties by row address.

Also the hamming kernels an IVF index over binary vectors needs: distances, nearest
centroids, and pylance's k-modes training of the centroids (each centroid bit the majority
bit of its cluster).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

import pyarrow as pa

from lancepy import _lancepy
from lancepy._ops.projection import _resolve_path
from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy._table.snapshot import DatasetView

_BATCH_ROWS = 65536
_ASSIGN_ROWS = 4096


def resolve(schema: pa.Schema, column: str) -> Tuple[str, List[str], pa.Field]:
    """``(top-level column, struct fields below it, the field)`` of a column or dotted path."""
    if column in schema.names:
        return column, [], schema.field(column)
    path = _resolve_path(schema, column)
    if path is None:
        raise ColumnNotFoundError(f"column {column!r} does not exist; the dataset has {schema.names}")
    top, rest = path
    field = schema.field(top)
    for name in rest:
        field = field.type.field(name)
    return top, rest, field


def field_of(schema: pa.Schema, column: str) -> pa.Field:
    """The field a column name or dotted path names (KeyError as pyarrow's when none)."""
    try:
        return resolve(schema, column)[2]
    except ColumnNotFoundError:
        raise KeyError(f"{column} not found in schema") from None


def column_values(data: Any, column: str) -> Any:
    """The values of `column` (a top-level name or a dotted path into structs) in a table or
    record batch read with its top-level column. A null struct makes its child null."""
    if column in data.schema.names:
        return data.column(column)
    path = _resolve_path(data.schema, column)
    if path is None:
        raise ColumnNotFoundError(f"column {column!r} is not in the data read ({data.schema.names})")
    top, rest = path
    col = data.column(top)
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    out = []
    for arr in chunks:
        for name in rest:
            arr = arr.field(name) if arr.null_count == 0 else _child_with_parent_nulls(arr, name)
        out.append(arr)
    return out[0] if isinstance(col, pa.Array) else pa.chunked_array(out, type=out[0].type if out else None)


def _child_with_parent_nulls(arr: pa.StructArray, name: str) -> pa.Array:
    import pyarrow.compute as pc

    return pc.struct_field(arr, name)  # (pyarrow's kernel applies the struct's validity)


def needs_python_search(schema: pa.Schema, column: str, metric: str) -> bool:
    """Whether an exact search of `column` runs here (nested or binary vectors)."""
    if column not in schema.names:
        return True
    t = schema.field(column).type
    if isinstance(t, pa.FixedShapeTensorType):
        return False
    return metric == "hamming" or (pa.types.is_fixed_size_list(t) and pa.types.is_uint8(t.value_type))


# --------------------------------------------------------------------------------------
# hamming
# --------------------------------------------------------------------------------------


def _words(mat: "np.ndarray") -> "np.ndarray":
    """Rows of bytes viewed as 64-bit words where they divide evenly (8x fewer elements to
    count bits of), else as they are."""
    import numpy as np

    mat = np.ascontiguousarray(mat, dtype=np.uint8)
    return mat.view(np.uint64) if mat.shape[-1] % 8 == 0 and mat.shape[-1] else mat


def hamming(mat: "np.ndarray", q: "np.ndarray") -> "np.ndarray":
    """Hamming distances (float32) of the rows of `mat` (rows x bytes, uint8) to `q`."""
    import numpy as np

    w, qw = _words(mat), _words(q.reshape(1, -1))
    counts = np.bitwise_count(np.bitwise_xor(w, qw))
    # (column by column: numpy's reduction over a short last axis is several times slower)
    out = counts[:, 0].astype(np.float32) if counts.shape[1] else np.zeros(len(counts), np.float32)
    for j in range(1, counts.shape[1]):
        out += counts[:, j]
    return out


def hamming_assign(mat: "np.ndarray", centroids: "np.ndarray") -> Tuple["np.ndarray", "np.ndarray"]:
    """Nearest centroid (the first of equals, as pylance's argmin) of each row, and the distance."""
    import numpy as np

    parts = np.empty(len(mat), np.uint32)
    dists = np.empty(len(mat), np.float32)
    words, cw = _words(mat), _words(centroids)
    for s in range(0, len(mat), _ASSIGN_ROWS):
        chunk = words[s : s + _ASSIGN_ROWS]
        d = np.bitwise_count(np.bitwise_xor(chunk[:, None, :], cw[None, :, :])).sum(axis=2, dtype=np.int64)
        parts[s : s + len(chunk)] = np.argmin(d, axis=1)
        dists[s : s + len(chunk)] = d[np.arange(len(chunk)), parts[s : s + len(chunk)]]
    return parts, dists


def train_kmodes(sample: "np.ndarray", k: int, max_iters: int, seed: Optional[int]) -> Tuple["np.ndarray", float]:
    """pylance's k-modes for binary vectors: `k` distinct random rows to start, then rounds of
    (assign each row its nearest centroid by hamming distance; each centroid bit becomes 1
    where more than half its rows have it) until the loss (sum of distances) changes by less
    than 1e-4 of itself or `max_iters` rounds. A cluster left empty keeps its centroid
    (pylance's would be nulls). Returns ``(k x bytes uint8 centroids, loss)``."""
    import numpy as np

    n, nbytes = sample.shape
    if n < k:
        raise InvalidArgumentError(f"cannot train {k} IVF partitions from {n} rows: use fewer partitions (num_partitions=)")
    rng = np.random.default_rng(seed)
    centroids = sample[np.sort(rng.choice(n, size=k, replace=False))].copy()
    bits = np.unpackbits(sample, axis=1, bitorder="little")
    loss = float("inf")
    last = loss
    for _ in range(max_iters):
        parts, dists = hamming_assign(sample, centroids)
        last = float(dists.sum(dtype=np.float64))
        counts = np.bincount(parts, minlength=k)
        order = np.argsort(parts, kind="stable")
        starts = np.searchsorted(parts[order], np.arange(k))
        ones = np.zeros((k, nbytes * 8), np.int64)
        ones[counts > 0] = np.add.reduceat(bits[order], starts[counts > 0], axis=0, dtype=np.int64)
        majority = ones * 2 > counts[:, None]
        fresh = np.packbits(majority, axis=1, bitorder="little")
        centroids = np.where((counts > 0)[:, None], fresh, centroids).astype(np.uint8)
        if abs(loss - last) < 1e-4 * last:
            break
        loss = last
    return np.ascontiguousarray(centroids), last


def uint8_query(q: Any, nbytes: int) -> "np.ndarray":
    """A hamming query as bytes: values in 0..255 (floats truncated, as pylance casts them)."""
    import numpy as np

    arr = np.asarray(q)
    if arr.ndim != 1 or len(arr) != nbytes:
        raise InvalidArgumentError(f"query vector has {arr.size} values, which does not match the column's {nbytes} bytes")
    if not np.isfinite(arr.astype(np.float64)).all() or (arr < 0).any() or (arr >= 256).any():
        raise InvalidArgumentError("a hamming query holds bytes: values from 0 to 255")
    return arr.astype(np.uint8)


# --------------------------------------------------------------------------------------
# exact search
# --------------------------------------------------------------------------------------


def _float_distances(vectors: "np.ndarray", q: "np.ndarray", metric: str) -> "np.ndarray":
    import numpy as np

    if metric == "l2":
        d = vectors - q
        return np.einsum("ij,ij->i", d, d).astype(np.float32)
    dots = vectors @ q
    if metric == "dot":
        return (1.0 - dots).astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(q))
    with np.errstate(divide="ignore", invalid="ignore"):
        return (1.0 - dots / norms).astype(np.float32)


def distances_of(values: Any, q: "np.ndarray", metric: str) -> Tuple["np.ndarray", "np.ndarray"]:
    """``(distances, valid mask)`` of a fixed-size-list array of vectors to `q`."""
    import numpy as np

    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage  # (a 1-D tensor: the vectors it holds)
    n, dim = len(arr), arr.type.list_size
    valid = np.ones(n, bool) if arr.null_count == 0 else arr.is_valid().to_numpy(zero_copy_only=False)
    flat = arr.values.slice(arr.offset * dim, n * dim)
    if flat.null_count:
        valid &= ~flat.is_null().to_numpy(zero_copy_only=False).reshape(n, dim).any(axis=1)
        flat = flat.fill_null(0)
    if pa.types.is_uint8(arr.type.value_type):
        if metric != "hamming":
            raise InvalidArgumentError(f"Distance type {metric} does not support uint8 vectors: use metric='hamming'")
        mat = flat.to_numpy(zero_copy_only=False).reshape(n, dim)
        return hamming(mat, q.astype(np.uint8)), valid
    if metric == "hamming":
        raise InvalidArgumentError(f"the hamming distance is for uint8 vectors, not {arr.type.value_type}")
    if not pa.types.is_floating(arr.type.value_type):
        raise InvalidArgumentError(f"a vector column holds floats or bytes, not {arr.type.value_type}")
    if pa.types.is_float32(arr.type.value_type) and metric in ("l2", "dot") and n:
        # scored natively (all cores, the kernels of the top-level exact search)
        got = _lancepy.span_distances(flat, dim, [(0, n)], q.astype(np.float32).tolist(), metric)
        return pa.record_batch(got).column(0).to_numpy(zero_copy_only=False), valid
    if pa.types.is_float64(arr.type.value_type):
        mat64 = flat.to_numpy(zero_copy_only=False).reshape(n, dim)
        return _float_distances(mat64, q.astype(np.float64), metric), valid
    mat = flat.to_numpy(zero_copy_only=False).astype(np.float32).reshape(n, dim)
    qq = q.astype(np.float16).astype(np.float32) if pa.types.is_float16(arr.type.value_type) else q.astype(np.float32)
    return _float_distances(mat, qq, metric), valid


def exact_search(
    view: "DatasetView",
    column: str,
    q: "np.ndarray",
    k: int,
    metric: str,
    fragment_ids: Optional[Sequence[int]],
    allowed: Any,
    distance_range: Tuple[Optional[float], Optional[float]],
) -> Tuple[List[int], List[float]]:
    """The `k` live rows of `column` nearest to `q` (exact): ``(row addresses, distances)``,
    nearest first, ties by address; null vectors are skipped; `allowed` (row addresses)
    restricts the rows; distances in ``[lower, upper)`` of `distance_range` only."""
    import numpy as np

    top, _, _ = resolve(view.schema, column)
    ok = None
    if allowed is not None:
        ok = np.sort(np.asarray(allowed.to_numpy(zero_copy_only=False) if hasattr(allowed, "to_numpy") else allowed,
                                dtype=np.uint64))
    frags = None if fragment_ids is None else [int(f) for f in fragment_ids]
    best_a = np.empty(0, np.uint64)
    best_d = np.empty(0, np.float32)
    lo, hi = distance_range
    if frags is not None and not frags:
        return [], []
    stream = view.snapshot.scan_stream([top], fragment_ids=frags, batch_rows=_BATCH_ROWS, with_row_address=True)
    while (raw := stream.next_batch()) is not None:
        batch = pa.record_batch(raw)
        d, valid = distances_of(column_values(batch, column), q, metric)
        addr = batch.column("_rowaddr").to_numpy(zero_copy_only=False).astype(np.uint64)
        keep = valid & ~np.isnan(d)
        if ok is not None:
            keep &= np.isin(addr, ok)
        if lo is not None:
            keep &= d >= lo
        if hi is not None:
            keep &= d < hi
        best_a = np.concatenate([best_a, addr[keep]])
        best_d = np.concatenate([best_d, d[keep]])
        order = np.lexsort((best_a, best_d))[:k]
        best_a, best_d = best_a[order], best_d[order]
    return best_a.tolist(), best_d.tolist()


def take_vectors(view: "DatasetView", addresses: "np.ndarray", column: str) -> Tuple["np.ndarray", Any]:
    """``(row addresses, values of column)`` of rows at `addresses` (nested paths read by
    their top-level column)."""
    import numpy as np

    top, _, _ = resolve(view.schema, column)
    t = pa.table(view.snapshot.take_addresses(pa.array(addresses, pa.uint64()), columns=[top], with_row_address=True))
    return t.column("_rowaddr").to_numpy().astype(np.uint64), column_values(t, column)
