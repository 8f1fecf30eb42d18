"""Nearest-neighbour queries: ``nearest=`` on ``to_table`` / ``to_batches`` / ``scanner``.

With an IVF_FLAT or IVF_PQ index on the column (built by pylance; see :mod:`lancepy._ops.ivf`),
the search uses it as pylance does: ``nprobes`` partitions nearest the query are scanned
(lancepy's default when none is given: 20, more until ``k`` rows are found; pylance's own
default is adaptive), ``refine_factor`` re-ranks the best ``k * refine_factor`` by exact
distance, deleted rows never come back, and fragments appended after the index was built
are searched exactly and merged (the index's candidates are then re-ranked exactly, as
pylance does). ``use_index=False``, a ``metric`` other than the index's, or a dataset with
stable row ids give an exact search.

Nested and binary vectors are searched exactly by :mod:`lancepy._ops.vector_columns` (numpy,
batch by batch). Otherwise the exact search reads only the vector column, scores it in Rust on all cores (one pass,
memory bounded by one batch per thread), then takes the other columns for the ``k``
winners alone. Results are pylance's: the same rows, ``_distance`` as pylance defines it
(squared L2, ``1 - cosine``, ``1 - dot``), nearest first, ties by row id.

The ``nearest`` dictionary takes pylance's keys. ``column`` (a vector column, or a dotted
path to one nested in a struct: ``"data.embedding"``), ``q``, ``k`` (default 10), ``metric``
(``"l2"`` default, or the index's; ``"cosine"``, ``"dot"``; ``"hamming"``, the only one for
binary vectors, ``fixed_size_list<uint8>``, and their default: ``q`` cast to bytes) and
``distance_range`` shape the result; ``nprobes``, ``minimum_nprobes``, ``maximum_nprobes``,
``refine_factor`` and ``use_index`` steer an index search. ``ef``, ``approx_mode``,
``search_effort`` and ``query_parallelism`` tune index kinds lancepy does not read (HNSW)
and are checked only. A filter is applied after the search by default (pylance's
``prefilter=False``: fewer than ``k`` rows may come back); ``prefilter=True`` searches only
the rows that match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

from lancepy._ops import ivf as _ivf
from lancepy._ops import pq4 as _pq4
from lancepy._ops import vector_columns as _vc
from lancepy._ops.scan import stored_columns
from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError, NotSupportedError, UnsupportedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy._table.snapshot import DatasetView
    from lancepy.filters import Filter

DISTANCE = "_distance"

_METRICS = {"l2": "l2", "euclidean": "l2", "cosine": "cosine", "dot": "dot", "hamming": "hamming"}
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
    metric_given: bool = True
    use_index: bool = True
    nprobes: Optional[int] = None
    minimum_nprobes: Optional[int] = None
    maximum_nprobes: Optional[int] = None
    refine_factor: Optional[int] = None


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
    try:
        t = _vc.resolve(schema, column)[2].type  # (a column, or a path into structs: "data.embedding")
    except ColumnNotFoundError:
        raise ColumnNotFoundError(f"nearest= column {column!r} does not exist; the dataset has {schema.names}") from None
    if isinstance(t, pa.FixedShapeTensorType) and len(t.shape) == 1:
        t = t.storage_type  # (a 1-D tensor column is stored as the vectors it holds)
    binary = pa.types.is_fixed_size_list(t) and pa.types.is_uint8(t.value_type)
    if not (pa.types.is_fixed_size_list(t) and (binary or pa.types.is_floating(t.value_type))):
        raise VectorColumnError(
            f"nearest= column {column!r} must be a vector column (fixed-size list of floats, or of uint8), not {t}")
    metric = nearest.get("metric") or ("hamming" if binary else "l2")
    if not isinstance(metric, str):
        raise InvalidArgumentError(f"nearest= 'metric' must be a string, got {metric!r}")
    if metric.lower() not in _METRICS:
        raise InvalidArgumentError(f"unknown metric {metric!r}: use 'l2', 'cosine', 'dot' or 'hamming'")
    if binary != (metric.lower() == "hamming"):
        raise InvalidArgumentError(f"Distance type {metric} does not support {t.value_type} vectors"
                                   + (": use 'hamming'" if binary else ": hamming is for uint8 vectors"))
    q = nearest["q"]
    if isinstance(q, pa.ExtensionScalar):
        q = q.value
    if isinstance(q, pa.Scalar) and hasattr(q, "values"):
        q = q.values
    if isinstance(q, (pa.Array, pa.ChunkedArray)):
        q = q.to_numpy(zero_copy_only=False)
    try:
        qv = np.asarray(q, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"nearest= 'q' must be a vector of numbers: {e}") from None
    if binary and qv.ndim == 1:  # (bytes, truncated from floats as pylance casts them)
        qv = _vc.uint8_query(qv, t.list_size).astype(np.float32)
    if qv.ndim == 2:
        raise UnsupportedError("nearest= with several query vectors at once (a 2-D 'q') is not supported by lancepy yet")
    if qv.ndim != 1:
        raise InvalidArgumentError(f"nearest= 'q' must be one vector, got an array of shape {qv.shape}")
    if len(qv) != t.list_size:
        raise InvalidArgumentError(
            f"query vector has {len(qv)} dimensions, which does not match index column size {t.list_size} (column {column!r})")
    if not np.isfinite(qv).all():
        raise InvalidArgumentError("nearest= 'q' holds NaN or infinite values")
    k = nearest.get("k")
    k = 10 if k is None else k
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise InvalidArgumentError(f"nearest= 'k' must be a positive integer, got {k!r}")
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
    def count(key: str) -> Optional[int]:
        v = nearest.get(key)
        return None if v is None else int(v)

    use_index = nearest.get("use_index")
    return NearestQuery(
        column, qv, int(k), _METRICS[metric.lower()], (lo, hi), metric_given=nearest.get("metric") is not None,
        use_index=True if use_index is None else bool(use_index), nprobes=count("nprobes"),
        minimum_nprobes=count("minimum_nprobes"), maximum_nprobes=count("maximum_nprobes"),
        refine_factor=count("refine_factor"),
    )


def search(
    view: "DatasetView",
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
    index_segments: Optional[Sequence[str]] = None,
    fast_search: bool = False,
) -> pa.Table:
    """Runs a search: projected columns, ``_distance``, then ``_rowid`` / ``_rowaddr``.
    With `fast_search` (pylance's), only the rows the column's index covers are searched:
    fragments added since it was built are not, and without an index nothing is found."""
    snap = view.snapshot
    if fast_search:
        covered = {int(f) for e in _index_for(view, query) for f in e["fragment_ids"]}
        wanted = covered if fragment_ids is None else covered & {int(f) for f in fragment_ids}
        fragment_ids = sorted(f for f in wanted if f in view.fragment_rows())
    allowed = None
    if flt is not None and prefilter:
        t = pa.table(snap.scan(stored_columns(flt.columns), fragment_ids=fragment_ids, with_row_address=True, coalesce=True))
        mask = evaluate(t, flt)
        allowed = t.column("_rowaddr").filter(mask).combine_chunks()
    found = _index_search(view, query, fragment_ids, allowed, index_segments)
    if found is None:
        if index_segments is not None:
            raise InvalidArgumentError("index_segments= needs a search that uses the column's vector index")
        addresses, distances = _exact(view, query, query.k, query.metric, fragment_ids, allowed, query.distance_range)
    else:
        addresses, distances = found
    names = list(columns) if columns is not None else list(view.schema.names)
    read = names
    if flt is not None and not prefilter:
        extra = [c for c in (stored_columns(flt.columns) or view.schema.names) if c not in names]
        read = names + extra
    addr = pa.array(addresses, pa.uint64())
    table = pa.table(snap.take_addresses(
        addr,
        columns=read,
        with_row_id=with_row_id,
        with_row_address=with_row_address,
    ))
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


def _exact(
    view: "DatasetView", query: NearestQuery, k: int, metric: str, fragment_ids: Optional[Sequence[int]], allowed: Any,
    distance_range: Tuple[Optional[float], Optional[float]],
) -> Tuple[List[int], List[float]]:
    """Exact search: native for top-level float vectors, else :func:`vector_columns.exact_search`
    (vectors nested in structs, binary vectors)."""
    if _vc.needs_python_search(view.schema, query.column, metric):
        return _vc.exact_search(view, query.column, query.q, k, metric, fragment_ids, allowed, distance_range)
    return view.snapshot.knn(query.column, query.q.tolist(), k, metric, fragment_ids, allowed, distance_range)


def _index_for(view: "DatasetView", query: NearestQuery) -> List[Dict[str, Any]]:
    """The manifest entries (segments) of the vector index a search can use, or [] (exact
    search). An index appended to by ``optimize_indices(num_indices_to_merge=0)`` has several
    segments of one name, each covering its own fragments."""
    if not query.use_index or view.loaded.index_section is None or view.stable_row_ids:
        return []  # (indices of stable-row-id datasets hold row ids, not addresses: searched exactly)
    field_id = view.loaded.field_ids_by_path.get(query.column)
    if field_id is None:
        return []
    entries = _ivf.vector_indices(view.loaded.index_section, field_id)
    return [e for e in entries if e["name"] == entries[0]["name"]] if entries else []


def _segment_uuid(value: Any) -> str:
    import uuid as _uuid

    try:
        return str(value if isinstance(value, _uuid.UUID) else _uuid.UUID(str(value)))
    except ValueError:
        raise InvalidArgumentError(f"index_segments: {value!r} is not a segment uuid") from None


def _exact_distances(vectors: "np.ndarray", q: "np.ndarray", metric: str) -> "np.ndarray":
    import numpy as np

    if metric == "l2":
        d = vectors - q
        return np.einsum("ij,ij->i", d, d)
    dots = vectors @ q
    if metric == "dot":
        return 1.0 - dots
    norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(q))
    with np.errstate(divide="ignore", invalid="ignore"):
        return (1.0 - dots / norms).astype(np.float32)


def _deleted_addresses(view: "DatasetView") -> "np.ndarray":
    """Sorted addresses of this version's deleted rows (cached with the version)."""
    import numpy as np

    cached = view.state.get("ivf_deleted")
    if cached is not None:
        return cached
    parts = []
    for fid, (phys, live) in view.fragment_rows().items():
        if live < phys:
            offs = pa.table(view.snapshot.deleted_rows(fid)).column(0).to_numpy()
            parts.append((np.uint64(fid) << np.uint64(32)) | offs.astype(np.uint64))
    out = np.sort(np.concatenate(parts)) if parts else np.empty(0, np.uint64)
    view.state["ivf_deleted"] = out
    return out


def _segment_filter(
    entry: Dict[str, Any], covered: List[int], deleted: "np.ndarray", allowed: Optional["np.ndarray"]
) -> Callable[["np.ndarray"], Optional["np.ndarray"]]:
    """``keep(row ids) -> mask`` for one index segment: rows of the fragments searched
    (`covered`; the index may name fragments since removed, and ``fragments=`` may restrict
    the search), not deleted, and in `allowed` (a prefilter) when given."""
    import numpy as np

    every = set(entry["fragment_ids"])
    check_fragments = every != set(covered)
    frag_ok = np.zeros(max(every, default=0) + 2, dtype=bool)  # (the last slot: any other fragment)
    frag_ok[[f for f in covered if f < len(frag_ok) - 1]] = True
    last = np.uint64(len(frag_ok) - 1)

    def keep(rid: "np.ndarray") -> Optional["np.ndarray"]:
        mask = frag_ok[np.minimum(rid >> np.uint64(32), last).astype(np.intp)] if check_fragments else None
        if len(deleted):
            live = ~np.isin(rid, deleted)
            mask = live if mask is None else mask & live
        if allowed is not None:
            ok = np.isin(rid, allowed)
            mask = ok if mask is None else mask & ok
        return mask

    return keep


def _usable_index(
    view: "DatasetView", query: NearestQuery, index_segments: Optional[Sequence[str]] = None
) -> Optional[Tuple[List[Dict[str, Any]], List[Tuple[Dict[str, Any], Any]]]]:
    """The index segments a search uses (those of `index_segments` when given) and each
    loaded, or None when the search is exact (no index, or one of another metric)."""
    segments = _index_for(view, query)
    if not segments:
        return None
    if index_segments is not None:
        wanted = {_segment_uuid(u) for u in index_segments}
        known = {str(e["uuid"]) for e in segments}
        if wanted - known:
            raise InvalidArgumentError(f"index_segments {sorted(wanted - known)} are not segments of the "
                                       f"{query.column!r} index (its segments: {sorted(known)})")
        segments = [e for e in segments if str(e["uuid"]) in wanted]
    loaded = []
    for entry in segments:
        root = view.uri
        if entry["base_id"] is not None:
            base = view.base_paths().get(entry["base_id"])
            if base is None:
                return None
            root = base.path
        loaded.append((entry, _ivf.load_index(root, entry["uuid"], view.storage_options, view.session._index)))
    metric = loaded[0][1].metric
    if query.metric_given and query.metric != metric:
        return None  # (a search by another distance than the index's is exact, as in pylance)
    if any(idx.metric != metric for _, idx in loaded):
        return None
    return segments, loaded


def search_plan(
    view: "DatasetView", query: NearestQuery, fragment_ids: Optional[Sequence[int]],
    index_segments: Optional[Sequence[str]] = None, fast_search: bool = False,
) -> str:
    """How :func:`search` finds the nearest rows, in one line of an explained plan: with
    the index (and which fragments it covers) and/or exactly (``KNNVectorDistance``, as
    pylance names its exact search) over the fragments the index does not cover."""
    frags = list(view.fragment_rows()) if fragment_ids is None else [int(f) for f in fragment_ids]
    usable = _usable_index(view, query, index_segments)
    if fast_search:
        covered_all = {int(f) for e in _index_for(view, query) for f in e["fragment_ids"]}
        frags = [f for f in frags if f in covered_all]
    if usable is None:
        return f"KNNVectorDistance: metric={query.metric}, exact search of {len(frags)} fragment(s)"
    segments, loaded = usable
    if index_segments is not None and fragment_ids is None:
        frags = sorted({f for e in segments for f in e["fragment_ids"]} & set(frags))
    covered = {int(f) for e in segments for f in e["fragment_ids"]}
    exact = [f for f in frags if f not in covered]
    line = (f"ANNIvfPartition: index={segments[0]['name']}, segments={len(segments)}, metric={loaded[0][1].metric}, "
            f"fragments={len(frags) - len(exact)}")
    if exact:
        line += f"; KNNVectorDistance: metric={loaded[0][1].metric}, exact search of the unindexed fragments {exact}"
    return line


def _index_search(
    view: "DatasetView", query: NearestQuery, fragment_ids: Optional[Sequence[int]], allowed: Optional[pa.Array],
    index_segments: Optional[Sequence[str]] = None,
) -> Optional[Tuple[List[int], List[float]]]:
    """Searches with the column's IVF index (merging an exact search of the fragments it
    does not cover); None when there is no usable index. With `index_segments` (segment
    uuids), only those segments are searched, and, when `fragment_ids` are given, the
    fragments they do not cover exactly (pylance's rule)."""
    import numpy as np

    usable = _usable_index(view, query, index_segments)
    if usable is None:
        return None
    segments, loaded = usable
    metric = loaded[0][1].metric
    frags = list(view.fragment_rows()) if fragment_ids is None else [int(f) for f in fragment_ids]
    if index_segments is not None and fragment_ids is None:
        # only the chosen segments' rows
        frags = sorted({f for e in segments for f in e["fragment_ids"]} & set(frags))
    deleted = _deleted_addresses(view)
    allowed_arr = None if allowed is None else np.sort(allowed.to_numpy(zero_copy_only=False).astype(np.uint64))
    uncovered = set(frags)
    q = query.q
    parts = []
    for entry, idx in loaded:
        covered, _ = _ivf.covered_fragments(entry, frags)
        uncovered -= set(covered)
        if covered:
            parts.append((idx, _segment_filter(entry, covered, deleted, allowed_arr)))
    uncovered_list = sorted(uncovered)
    # Index distances (PQ-approximate) and exact ones cannot be merged: with fragments the
    # index does not cover, the index's candidates are re-ranked exactly (as pylance does).
    refine = query.refine_factor or (1 if uncovered_list else None)
    opts = _ivf.IndexQuery(query.k, query.nprobes, query.minimum_nprobes, query.maximum_nprobes, refine)
    found = [_ivf.search_partitions(idx, q, opts, keep) for idx, keep in parts]
    addr = np.concatenate([a for a, _ in found]) if found else np.empty(0, np.uint64)
    dist = np.concatenate([d for _, d in found]) if found else np.empty(0, np.float32)
    if len(found) > 1:  # the segments' best, together
        top = np.lexsort((addr, dist))[: query.k * (refine or 1)]
        addr, dist = addr[top], dist[top]
    uncovered = uncovered_list
    if refine and len(addr):
        got, col = _vc.take_vectors(view, addr, query.column)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if metric == "hamming":
            dist = _vc.distances_of(col, q, metric)[0]
        else:
            vecs = col.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(len(got), -1)
            dist = _exact_distances(vecs, q, metric).astype(np.float32)
        addr = got.astype(np.uint64)
    if uncovered:
        a2, d2 = _exact(view, query, query.k, metric, uncovered, allowed, (None, None))
        addr = np.concatenate([addr, np.asarray(a2, dtype=np.uint64)])
        dist = np.concatenate([dist, np.asarray(d2, dtype=np.float32)])
    lo, hi = query.distance_range
    if lo is not None or hi is not None:
        keep_r = np.ones(len(dist), bool)
        if lo is not None:
            keep_r &= dist >= lo
        if hi is not None:
            keep_r &= dist < hi
        addr, dist = addr[keep_r], dist[keep_r]
    top = np.lexsort((addr, dist))[: query.k]
    return addr[top].tolist(), dist[top].tolist()


def vec_to_table(
    data: Any,
    names: Any = None,
    ndim: Optional[int] = None,
    check_ndim: bool = True,
) -> pa.Table:
    """A table of float32 vectors (a ``fixed_size_list<float>[ndim]`` column), as pylance's
    ``lance.vector.vec_to_table``.

    `data` is a dict (key → vector: an ``id`` column of the keys and a ``vector`` column), a
    list of vectors or a 2-D numpy array (one ``vector`` column, a row per vector). `names`
    renames the columns: two names for a dict, one (a string or a one-element list)
    otherwise. `ndim` is the vectors' length (by default the first vector's); with
    `check_ndim` every vector must have that length, else
    :class:`~lancepy.exceptions.InvalidArgumentError` (a ``ValueError``) names the first that
    does not.
    """
    import numpy as np

    if isinstance(data, dict):
        names = ["id", "vector"] if names is None else names
        if isinstance(names, str) or len(names) != 2:
            raise InvalidArgumentError(f"for a dict of vectors, names must be two column names, got {names!r}")
        vectors = list(data.values())
        columns = [pa.array(list(data.keys()))]
    elif isinstance(data, (list, np.ndarray)):
        names = ["vector"] if names is None else [names] if isinstance(names, str) else names
        if len(names) != 1:
            raise InvalidArgumentError(f"for a list or array of vectors, names must be one column name, got {names!r}")
        vectors = data
        columns = []
    else:
        raise NotSupportedError(f"vec_to_table takes a dict, a list or a numpy array, got {type(data).__name__}")
    if ndim is None:
        if len(vectors) == 0:
            raise InvalidArgumentError("vec_to_table got no vectors: give ndim= to make an empty table")
        ndim = len(vectors[0])
    if check_ndim:
        for v in vectors:
            if len(v) != ndim:
                raise InvalidArgumentError(f"expected vectors of {ndim} dimensions, got one of {len(v)}: {v!r}")
    values = np.asarray(vectors, dtype=np.float32).ravel() if len(vectors) else np.zeros(0, np.float32)
    if ndim <= 0 or values.size % ndim:
        raise InvalidArgumentError(f"{values.size} values do not make vectors of {ndim} dimensions")
    columns.append(pa.FixedSizeListArray.from_arrays(pa.array(values, pa.float32()), ndim))
    return pa.Table.from_arrays(columns, names=list(names))


class VectorIndexReader:
    """The partitions of one IVF vector index (``IVF_FLAT`` / ``IVF_PQ``, lancepy's or
    pylance's), as pylance's ``lance.dataset.VectorIndexReader``.

    ::

        reader = VectorIndexReader(ds, "vector_idx")
        for p in range(reader.num_partitions()):
            rows = reader.read_partition(p)["_rowid"]  # row addresses of the partition's rows

    Raises ``ValueError`` (an :class:`~lancepy.exceptions.InvalidArgumentError`) when the
    index is not a vector index, :class:`~lancepy.exceptions.IndexNotFoundError` when there is
    no index of that name.
    """

    def __init__(self, dataset: Any, index_name: str) -> None:
        self.dataset = dataset
        self.index_name = index_name
        self.stats = dataset.stats.index_stats(index_name)
        if self.stats["index_type"] == "IVF_SQ":
            raise NotSupportedError(f"VectorIndexReader of the IVF_SQ index {index_name} (IVF_FLAT and IVF_PQ are supported)")
        if self.stats["index_type"] not in ("IVF_FLAT", "IVF_PQ"):
            raise InvalidArgumentError(f"Index {index_name} is not vector index ({self.stats['index_type']})")
        segments = self.stats["indices"]
        if len(segments) != 1:
            raise NotSupportedError(f"VectorIndexReader of an index in {len(segments)} segments (one is supported)")
        self._uuid = segments[0]["uuid"]

    def num_partitions(self) -> int:
        """The number of IVF partitions."""
        return int(self.stats["indices"][0]["num_partitions"])

    def read_partition(self, partition_id: int, *, with_vector: bool = False) -> pa.Table:
        """The rows of partition `partition_id`: ``_rowid`` (row addresses) and, with
        `with_vector`, the stored vectors (``flat``, IVF_FLAT) or PQ codes (``__pq_code``, one
        byte per sub-vector, or two 4-bit codes a byte, row by row)."""
        import numpy as np

        n = self.num_partitions()
        if not 0 <= partition_id < n:
            raise IndexError(f"Partition id {partition_id} is out of range, expected 0 <= partition_id < {n}")
        view = self.dataset._view
        idx = _ivf.load_index(view.uri, self._uuid, view.storage_options, view.session._index)
        part = idx.partition(partition_id)
        columns = {_ivf._ROWID: pa.array(part.row_ids, pa.uint64())}
        if with_vector and idx.kind == "IVF_FLAT":
            columns[_ivf._FLAT] = pa.FixedSizeListArray.from_arrays(pa.array(part.data.reshape(-1)), idx.dim)
        elif with_vector and idx.kind == "IVF_PQ":
            codes = np.ascontiguousarray(part.data.T)
            if idx.nbits == 4:  # (as stored: two codes a byte)
                codes = _pq4.pack(codes)
            columns[_ivf._PQ_CODE] = pa.FixedSizeListArray.from_arrays(pa.array(codes.reshape(-1)), idx.code_bytes)
        return pa.table(columns)


def train_ivf_centroids_on_accelerator(
    view: "DatasetView",
    column: str,
    k: int,
    metric_type: str,
    accelerator: Any,
    batch_size: int = 1024 * 10 * 4,
    *,
    sample_rate: int = 256,
    max_iters: int = 50,
    filter_nan: bool = True,
) -> Tuple["np.ndarray", Any]:
    """pylance's helper: IVF centroids trained by :class:`lancepy.torch.kmeans.KMeans` on
    `accelerator` (``"cuda"``, ``"cuda:N"``, ``"mps"`` or a ``torch.device``) over a random
    sample of ``k × sample_rate`` rows of `column` (rows with nulls or, with `filter_nan`, NaN
    left out). Returns ``(centroids as the column's float type, the trained KMeans)``.
    `batch_size` is how many rows a read takes at a time."""
    import re

    import numpy as np

    from lancepy._ops.kmeans_torch import KMeans

    if isinstance(accelerator, str) and not (re.fullmatch(r"cuda(:\d+)?", accelerator) or accelerator == "mps"):
        raise InvalidArgumentError(
            f"Train ivf centroids on accelerator: only support 'cuda' or 'mps' as accelerator, got {accelerator!r}")
    for name, value in (("k", k), ("batch_size", batch_size), ("sample_rate", sample_rate)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InvalidArgumentError(f"{name} must be a positive int, got {value!r}")
    field = view.schema.field(column)
    if not (pa.types.is_fixed_size_list(field.type) and pa.types.is_floating(field.type.value_type)):
        raise VectorColumnError(f"column {column!r} must be a vector column (fixed-size list of floats), not {field.type}")
    total = view.count_rows()
    want = min(total, k * sample_rate)
    rows = np.sort(np.random.default_rng().choice(total, size=want, replace=False)) if want < total else np.arange(total)
    parts = [view.take(rows[i : i + batch_size], columns=[column]).column(0) for i in range(0, len(rows), batch_size)]
    vectors = pa.chunked_array([c for p in parts for c in p.chunks], field.type).combine_chunks()
    if vectors.null_count:
        vectors = vectors.filter(vectors.is_valid())
    dim = field.type.list_size
    mat = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(-1, dim)
    if filter_nan:
        mat = mat[np.isfinite(mat).all(axis=1)]
    kmeans = KMeans(k, metric=metric_type, max_iters=max_iters, device=accelerator)
    kmeans.fit(mat)
    centroids = kmeans.centroids.cpu().numpy().astype(field.type.value_type.to_pandas_dtype())
    return centroids, kmeans
