"""Hybrid search (beyond pylance's Python API, as LanceDB does it): a scan with both
``nearest=`` and ``full_text_query=`` runs the vector search and the full-text search and
fuses their ranked lists by reciprocal rank fusion.

Each input is searched as it would be alone, with the scan's filter (before the search with
``prefilter``, else after it): the vector search returns the nearest ``k`` rows (its own
``k``; ``limit + offset`` when the ``nearest`` dict has none), the full-text search the
same number of best-scoring rows. A row's ``_relevance_score`` is the sum, over the lists
holding it, of ``1 / (rank + rrf_k)``, its rank counted from 0 (LanceDB's
``RRFReranker``; ``rrf_k`` defaults to 60, the scanner's ``rrf_k=`` keyword sets it).
Rows come by ``_relevance_score`` descending, ties by row address; ``_distance`` is null for
rows only the full-text search found and ``_score`` for rows only the vector search found.
``offset`` / ``limit`` then cut the fused list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence

import pyarrow as pa

from lancepy._ops import fts_search as _fts
from lancepy.exceptions import InvalidArgumentError

if TYPE_CHECKING:  # pragma: no cover
    from lancepy._table.snapshot import DatasetView

DEFAULT_RRF_K = 60.0
RELEVANCE = "_relevance_score"


def check_rrf_k(rrf_k: Any) -> float:
    """`rrf_k` as a float (``None``: the default); refuses what is not a positive number."""
    if rrf_k is None:
        return DEFAULT_RRF_K
    if isinstance(rrf_k, bool) or not isinstance(rrf_k, (int, float)) or not rrf_k > 0:
        raise InvalidArgumentError(f"rrf_k must be a positive number, got {rrf_k!r}")
    return float(rrf_k)


def search(
    view: "DatasetView", nearest: Any, fts_query: Any, *, rrf_k: float, columns: Optional[List[str]], flt: Any,
    prefilter: bool, limit: Optional[int], offset: int, with_row_id: bool, with_row_address: bool,
    fragment_ids: Optional[Sequence[int]], evaluate: Any, index_segments: Any, fast_search: bool,
) -> pa.Table:
    """The fused rows: projected columns, ``_distance``, ``_score``, ``_relevance_score``,
    then ``_rowid`` / ``_rowaddr``."""
    import numpy as np

    from lancepy import vector as _vector

    vec = _vector.search(
        view, nearest, columns=[], flt=flt, prefilter=prefilter, limit=None, offset=0, with_row_id=False,
        with_row_address=True, fragment_ids=fragment_ids, evaluate=evaluate, index_segments=index_segments,
        fast_search=fast_search,
    )
    v_rows = np.asarray(vec.column("_rowaddr").to_numpy(zero_copy_only=False), np.uint64)
    v_dist = vec.column("_distance").to_pylist()
    f_rows, f_scores = _fts.ranked(view, fts_query, flt=flt, prefilter=prefilter, limit=int(nearest.k), offset=0,
                                   fragment_ids=fragment_ids, evaluate=evaluate)
    fused: dict = {}
    for lst in (v_rows.tolist(), f_rows.tolist()):
        for rank, row in enumerate(lst):
            fused[row] = fused.get(row, 0.0) + 1.0 / (rank + rrf_k)
    rows = np.asarray(list(fused), np.uint64)
    rel = np.asarray(list(fused.values()), np.float64)
    order = np.lexsort((rows, -rel))
    end = None if limit is None else offset + limit
    order = order[offset:end]
    rows, rel = rows[order], rel[order]
    dist = dict(zip(v_rows.tolist(), v_dist))
    score = dict(zip(f_rows.tolist(), f_scores.tolist()))
    names = list(columns) if columns is not None else list(view.schema.names)
    table = pa.table(view.snapshot.take_addresses(
        pa.array(rows, pa.uint64()), columns=names, with_row_id=with_row_id, with_row_address=with_row_address
    ))
    out = table.select(names)
    out = out.append_column(pa.field("_distance", pa.float32()), pa.array([dist.get(r) for r in rows.tolist()], pa.float32()))
    out = out.append_column(pa.field(_fts.SCORE, pa.float32()), pa.array([score.get(r) for r in rows.tolist()], pa.float32()))
    out = out.append_column(pa.field(RELEVANCE, pa.float32()), pa.array(rel, pa.float32()))
    for n in ("_rowid", "_rowaddr"):
        if n in table.column_names:
            out = out.append_column(table.schema.field(n), table.column(n))
    return out


def plan_lines(rrf_k: float, vector_line: str, fts_lines: List[str]) -> List[str]:
    """What ``explain_plan`` says: the fusion, then its two inputs."""
    return [f"RRFFusion: k={rrf_k:g}, inputs=[vector search, full-text search] (_relevance_score = sum of 1 / (rank + k))",
            "input 1: " + vector_line] + ["input 2: " + line for line in fts_lines]
