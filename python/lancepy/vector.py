"""Nearest-neighbour queries: ``nearest=`` on ``to_table`` / ``to_batches`` / ``scanner``.

Every search is exact (brute force) for now: lancepy reads only the vector column, scores it in
Rust on all cores (one pass, memory bounded by one batch per thread), then takes the other
columns for the ``k`` winners alone. Results are pylance's: the same rows, ``_distance`` as
pylance defines it (squared L2, ``1 - cosine``, ``1 - dot``), nearest first, ties by row id.

The ``nearest`` dictionary takes pylance's keys. ``column``, ``q``, ``k`` (default 10),
``metric`` (``"l2"`` default, ``"cosine"``, ``"dot"``) and ``distance_range`` shape the
result. ``nprobes``, ``minimum_nprobes``, ``maximum_nprobes``, ``refine_factor``, ``ef``,
``use_index``, ``approx_mode``, ``search_effort`` and ``query_parallelism`` tune approximate
(index) searches; they are checked and, since an exact search is what they approximate,
they cannot change its answer. A filter is applied after the search by default (pylance's
``prefilter=False``: fewer than ``k`` rows may come back); ``prefilter=True`` searches only the
rows that match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError, UnsupportedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy.dataset import LanceDataset
    from lancepy.filters import Filter

DISTANCE = "_distance"

_METRICS = {"l2": "l2", "euclidean": "l2", "cosine": "cosine", "dot": "dot"}
_INDEX_TUNING = ("nprobes", "minimum_nprobes", "maximum_nprobes", "refine_factor", "ef", "search_effort")
_KEYS = {"column", "q", "k", "metric", "use_index", "approx_mode", "distance_range", "query_parallelism", *_INDEX_TUNING}


class VectorColumnError(InvalidArgumentError, TypeError):
    """The column searched is not a vector column (a fixed-size list of floats)."""


@dataclass(frozen=True)
class NearestQuery:
    """A checked ``nearest=`` request."""

    column: str
    q: np.ndarray  # float32, one dimension
    k: int
    metric: str
    distance_range: Tuple[Optional[float], Optional[float]]


def parse_nearest(nearest: Mapping[str, Any], schema: pa.Schema) -> NearestQuery:
    """Checks a ``nearest=`` dictionary against the dataset's schema."""
    import numpy as np  # (only searches need numpy; `import lancepy` does not)

    if not isinstance(nearest, Mapping):
        raise InvalidArgumentError(f"nearest= takes a dict such as {{'column': 'emb', 'q': [...], 'k': 10}}, got {type(nearest).__name__}")
    unknown = sorted(set(nearest) - _KEYS)
    if unknown:
        raise InvalidArgumentError(f"nearest= does not take {unknown}; it takes {sorted(_KEYS)}")
    for key in ("column", "q"):
        if nearest.get(key) is None:
            raise InvalidArgumentError(f"nearest= needs {key!r}")
    column = nearest["column"]
    if column not in schema.names:
        raise ColumnNotFoundError(f"nearest= column {column!r} does not exist; the dataset has {schema.names}")
    t = schema.field(column).type
    if not (pa.types.is_fixed_size_list(t) and pa.types.is_floating(t.value_type)):
        raise VectorColumnError(f"nearest= column {column!r} must be a vector column (fixed-size list of floats), not {t}")
    q = nearest["q"]
    if isinstance(q, (pa.Array, pa.ChunkedArray)):
        q = q.to_numpy(zero_copy_only=False)
    try:
        qv = np.asarray(q, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"nearest= 'q' must be a vector of numbers: {e}") from None
    if qv.ndim == 2:
        raise UnsupportedError("nearest= with several query vectors at once (a 2-D 'q') is not supported by lancepy yet")
    if qv.ndim != 1:
        raise InvalidArgumentError(f"nearest= 'q' must be one vector, got an array of shape {qv.shape}")
    if len(qv) != t.list_size:
        raise InvalidArgumentError(f"query vector has {len(qv)} dimensions but column {column!r} holds vectors of {t.list_size}")
    if not np.isfinite(qv).all():
        raise InvalidArgumentError("nearest= 'q' holds NaN or infinite values")
    k = nearest.get("k")
    k = 10 if k is None else k
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise InvalidArgumentError(f"nearest= 'k' must be a positive integer, got {k!r}")
    metric = nearest.get("metric") or "l2"
    if not isinstance(metric, str):
        raise InvalidArgumentError(f"nearest= 'metric' must be a string, got {metric!r}")
    if metric.lower() == "hamming":
        raise UnsupportedError("the hamming metric (for uint8 vectors) is not supported by lancepy yet")
    if metric.lower() not in _METRICS:
        raise InvalidArgumentError(f"unknown metric {metric!r}: use 'l2', 'cosine' or 'dot'")
    for key in _INDEX_TUNING + ("query_parallelism",):
        v = nearest.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or v < 0):
            raise InvalidArgumentError(f"nearest= {key!r} must be a non-negative number, got {v!r}")
    if nearest.get("approx_mode") not in (None, "fast", "normal", "accurate"):
        raise InvalidArgumentError(f"nearest= 'approx_mode' must be 'fast', 'normal' or 'accurate', got {nearest['approx_mode']!r}")
    dr = nearest.get("distance_range")
    lo: Optional[float] = None
    hi: Optional[float] = None
    if dr is not None:
        try:
            lo, hi = (None if b is None else float(b) for b in dr)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"nearest= 'distance_range' must be (lower, upper), got {dr!r}") from None
    return NearestQuery(column, qv, int(k), _METRICS[metric.lower()], (lo, hi))


def search(
    ds: "LanceDataset",
    query: NearestQuery,
    *,
    columns: Optional[List[str]],
    flt: Optional["Filter"],
    prefilter: bool,
    limit: Optional[int],
    offset: int,
    with_row_id: bool,
    with_row_address: bool,
    fragment_ids: Optional[Sequence[int]],
    evaluate: Any,
) -> pa.Table:
    """Runs an exact search: projected columns, ``_distance``, then ``_rowid`` / ``_rowaddr``."""
    snap = ds._snapshot
    allowed = None
    if flt is not None and prefilter:
        t = pa.table(snap.scan(flt.columns, fragment_ids, 0, None, 131072, False, True, False))
        mask = evaluate(t, flt)
        allowed = t.column("_rowaddr").filter(mask).combine_chunks()
    addresses, distances = snap.knn(query.column, query.q.tolist(), query.k, query.metric, fragment_ids, allowed,
                                    query.distance_range)
    names = list(columns) if columns is not None else list(ds.schema.names)
    read = names
    if flt is not None and not prefilter:
        extra = [c for c in (flt.columns or ds.schema.names) if c not in names]
        read = names + extra
    addr = pa.array(addresses, pa.uint64())
    table = pa.table(snap.take_addresses(addr, read, with_row_id, with_row_address))
    dist = pa.array(distances, pa.float32())
    if flt is not None and not prefilter:
        mask = evaluate(table, flt)
        table, dist = table.filter(mask), dist.filter(mask.combine_chunks() if isinstance(mask, pa.ChunkedArray) else mask)
    result = table.select(names).append_column(pa.field(DISTANCE, pa.float32()), dist)
    for n in ("_rowid", "_rowaddr"):
        if n in table.column_names:
            result = result.append_column(table.schema.field(n), table.column(n))
    if offset or limit is not None:
        result = result.slice(offset, limit)
    return result
