"""Full-text search: the scanner's ``full_text_query`` answered from the column's INVERTED
index (:mod:`lancepy._ops.inverted`), as pylance 14 answers it.

A query is a string (a match query over the column with an INVERTED index), a dict
``{"query": text, "columns": [column]}``, or a :class:`lancepy.query.MatchQuery`. Its text is
analyzed as the index analyzed the documents; each query token (repeats count again) adds
its BM25 score to the documents holding it (``operator`` AND: only documents holding every
token). The filter, when given, picks the rows before the top ``limit`` are taken with
``prefilter``, else after (so fewer may come back), as pylance does. Results come best first, ties by row id, with
``_score`` (float32). Deleted rows never come back. Rows of fragments the index does not
cover are scored as pylance's flat search scores them: with the index's statistics plus
those rows' own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from lancepy._ops import inverted as _inverted
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy.dataset import LanceDataset

SCORE = "_score"


@dataclass
class FtsQuery:
    text: str
    column: str
    all_terms: bool = False
    boost: float = 1.0

    def plan_text(self, tokens: Sequence[str]) -> str:
        return f"MatchQuery: column={self.column}, query=[{' '.join(tokens) if tokens else self.text}]"


def _index_entries(ds: "LanceDataset") -> Dict[str, List[Dict[str, Any]]]:
    """The INVERTED index segments of each column that has one (the first index by name)."""
    from lancepy._core.schema import _field_paths

    paths = _field_paths(ds._loaded.manifest.get("fields", []))
    out: Dict[str, List[Dict[str, Any]]] = {}
    for e in ds._index_entries():
        if not str(e.get("details_type") or "").endswith("InvertedIndexDetails") or len(e["fields"]) != 1:
            continue
        column = paths.get(e["fields"][0])
        if column is None:
            continue
        have = out.setdefault(column, [])
        if not have or have[0]["name"] == e["name"]:
            have.append(e)
    return out


def parse(ds: "LanceDataset", full_text_query: Any) -> FtsQuery:
    """The query `full_text_query` asks, on the column whose index answers it."""
    from lancepy.query import FullTextOperator, MatchQuery, PhraseQuery

    indexed = _index_entries(ds)
    columns: Optional[List[str]] = None
    all_terms, boost = False, 1.0
    if isinstance(full_text_query, str):
        text = full_text_query
    elif isinstance(full_text_query, dict):
        unknown = set(full_text_query) - {"query", "columns"}
        if unknown:
            raise InvalidArgumentError(f"full_text_query: unknown keys {sorted(unknown)}")
        text = full_text_query.get("query")
        if not isinstance(text, str):
            raise InvalidArgumentError("full_text_query: 'query' must be a string")
        cols = full_text_query.get("columns")
        columns = None if cols is None else ([cols] if isinstance(cols, str) else list(cols))
    elif isinstance(full_text_query, MatchQuery):
        q = full_text_query
        if q.fuzziness != 0:
            raise NotSupportedError("MatchQuery(fuzziness=...): fuzzy matching is not built in lancepy")
        text, columns = q.query, [q.column]
        all_terms = q.operator == FullTextOperator.AND
        boost = float(q.boost)
    elif isinstance(full_text_query, PhraseQuery):
        raise NotSupportedError("PhraseQuery: phrase search (positions) is not built in lancepy's full-text search")
    else:
        raise NotSupportedError(
            f"full_text_query of type {type(full_text_query).__name__}: lancepy takes a string, a dict "
            "{'query', 'columns'} or lancepy.query.MatchQuery"
        )
    if columns is None:
        columns = list(indexed)
        if not columns:
            raise InvalidArgumentError("full_text_query: no column has an INVERTED index (create_scalar_index(col, 'INVERTED'))")
    if len(columns) != 1:
        raise NotSupportedError(f"full_text_query over several columns {columns}: lancepy searches one column")
    column = columns[0]
    if column not in indexed:
        raise InvalidArgumentError(f"full_text_query: column {column!r} has no INVERTED index")
    return FtsQuery(text, column, all_terms, boost)


def _segments(ds: "LanceDataset", column: str) -> List[Tuple[Dict[str, Any], _inverted.InvertedSegment]]:
    """The column's index segments, opened (cached with the version)."""
    cache = ds._per_version.setdefault("fts_segments", {})
    out = []
    for e in _index_entries(ds).get(column, []):
        seg = cache.get(e["uuid"])
        if seg is None:
            seg = cache[e["uuid"]] = _inverted.open_segment(ds._uri, e["uuid"], ds._storage_options)
        out.append((e, seg))
    return out


def _flat_scores(
    ds: "LanceDataset", seg: _inverted.InvertedSegment, column: str, tokens: List[str], all_terms: bool,
    fragments: List[int],
) -> Tuple["np.ndarray", "np.ndarray"]:
    """Scores of the live rows of `fragments` (not in the index), as pylance's flat search:
    BM25 over the index's documents and these rows together."""
    import numpy as np

    t = pa.table(ds._snapshot.scan([column], fragment_ids=fragments, with_row_address=True, batch_rows=131072))
    addr = np.asarray(t.column("_rowaddr").to_numpy(), dtype=np.uint64)
    vocab, ids, offsets, _ = seg.analyzer.analyze(t.column(column).to_pylist())
    lengths = np.diff(offsets)
    has = lengths > 0
    n_docs = np.float32(seg.num_docs + int(has.sum()))
    total = seg.avg_doc_length * seg.num_docs + float(lengths.sum())
    avgdl = np.float32(total / float(n_docs)) if n_docs else np.float32(0)
    k1, b = np.float32(_inverted.K1), np.float32(_inverted.B)
    doc_of = np.repeat(np.arange(len(addr)), lengths)
    score = np.zeros(len(addr), np.float32)
    matched = np.zeros(len(addr), np.int64)
    where = {w: i for i, w in enumerate(vocab)}
    uniq = list(dict.fromkeys(tokens))
    for tok in tokens:
        i = where.get(tok)
        if i is None:
            continue
        per_doc = np.bincount(doc_of[ids == i], minlength=len(addr))
        n = np.float32(seg.doc_count(tok) + int((per_doc > 0).sum()))
        idf = np.float32(np.log(np.float32(1.0) + (n_docs - n + np.float32(0.5)) / (n + np.float32(0.5))))
        f = per_doc.astype(np.float32)
        norm = k1 * (np.float32(1.0) - b + b * lengths.astype(np.float32) / avgdl)
        w = np.where(per_doc > 0, idf * ((k1 + np.float32(1.0)) * f / (f + norm)), np.float32(0)).astype(np.float32)
        score = (score + w).astype(np.float32)
    for tok in uniq:
        i = where.get(tok)
        if i is not None:
            matched += np.bincount(doc_of[ids == i], minlength=len(addr)) > 0
    keep = matched == len(uniq) if all_terms else matched > 0
    return addr[keep], score[keep]


def _allowed(
    ds: "LanceDataset", entry: Dict[str, Any], seg: _inverted.InvertedSegment, frags: List[int]
) -> List[Optional[bytes]]:
    """Per partition of `seg`, which documents a search of `frags` may return (a byte per
    document; ``None``: all): rows of those fragments, not deleted. Cached with the version."""
    import numpy as np

    from lancepy.vector import _deleted_addresses

    key = ("fts_allowed", entry["uuid"], tuple(frags))
    got = ds._per_version.get(key)
    if got is not None:
        return got
    searched = np.asarray(sorted(set(frags)), dtype=np.int64)
    deleted = _deleted_addresses(ds)
    out: List[Optional[bytes]] = []
    for part in seg.partitions:
        ok = np.isin((part.row_ids >> np.uint64(32)).astype(np.int64), searched)
        if len(deleted):
            ok &= ~np.isin(part.row_ids, deleted)
        out.append(None if ok.all() else ok.astype(np.uint8).tobytes())
    ds._per_version[key] = out
    return out


def search(
    ds: "LanceDataset",
    query: FtsQuery,
    *,
    columns: Optional[List[str]],
    flt: Any,
    prefilter: bool,
    limit: Optional[int],
    offset: int,
    with_row_id: bool,
    with_row_address: bool,
    fragment_ids: Optional[Sequence[int]],
    evaluate: Any,
) -> pa.Table:
    """The rows matching `query`: projected columns, ``_score``, then ``_rowid`` /
    ``_rowaddr``; best first."""
    import numpy as np

    if ds.has_stable_row_ids:
        raise NotSupportedError("full_text_query on a dataset with stable row ids: lancepy searches row-address indices only")
    segs = _segments(ds, query.column)
    if len(segs) != 1:
        raise NotSupportedError(
            f"full_text_query: the INVERTED index of {query.column!r} has {len(segs)} segments; lancepy searches one"
        )
    entry, seg = segs[0]
    tokens = seg.analyzer.tokens(query.text)
    live = ds._snapshot_rows()
    frags = [f for f in live] if fragment_ids is None else [int(f) for f in fragment_ids if int(f) in live]
    covered = {int(f) for f in entry["fragment_ids"]}
    end = None if limit is None else offset + limit
    k = end if (flt is None or not prefilter) else None
    rows, scores = seg.search(tokens, query.all_terms, allowed=_allowed(ds, entry, seg, frags), k=k)
    scores = (scores * np.float32(query.boost)).astype(np.float32)
    uncovered = [f for f in frags if f not in covered]
    if uncovered and tokens:
        a2, s2 = _flat_scores(ds, seg, query.column, tokens, query.all_terms, uncovered)
        rows = np.concatenate([rows, a2])
        scores = np.concatenate([scores, (s2 * np.float32(query.boost)).astype(np.float32)])
    if end is not None and (flt is None or not prefilter) and len(rows) > end:
        # (the rows scoring at least the end-th best: ties at the cut are ordered below)
        kth = np.partition(scores, len(scores) - end)[len(scores) - end] if end else np.float32(np.inf)
        near = scores >= kth
        rows, scores = rows[near], scores[near]
    if not prefilter:  # (the best `offset + limit` rows, then the filter)
        order = np.lexsort((rows, -scores))[:end]
        rows, scores = rows[order], scores[order]
    if flt is not None and len(rows):
        order = np.argsort(rows)
        rows, scores = rows[order], scores[order]
        t = pa.table(ds._snapshot.take_addresses(pa.array(rows, pa.uint64()), columns=list(flt.columns or ds.schema.names)))
        mask = pa.chunked_array([evaluate(t, flt)]).combine_chunks().fill_null(False)
        keep = np.asarray(mask.to_numpy(zero_copy_only=False), bool)
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[offset:end]
    rows, scores = rows[order], scores[order]
    names = list(columns) if columns is not None else list(ds.schema.names)
    table = pa.table(ds._snapshot.take_addresses(
        pa.array(rows, pa.uint64()), columns=names, with_row_id=with_row_id, with_row_address=with_row_address
    ))
    result = table.select(names).append_column(pa.field(SCORE, pa.float32()), pa.array(scores, pa.float32()))
    for n in ("_rowid", "_rowaddr"):
        if n in table.column_names:
            result = result.append_column(table.schema.field(n), table.column(n))
    return result


def plan_lines(ds: "LanceDataset", query: FtsQuery, flt: Any, prefilter: bool) -> List[str]:
    """What ``explain_plan`` says about the search (as pylance's plan names it)."""
    segs = _segments(ds, query.column)
    tokens = segs[0][1].analyzer.tokens(query.text) if segs else []
    lines = []
    if flt is not None and not prefilter:
        lines.append(f"Filter: {getattr(flt, 'text', flt)} (postfilter: on the best rows)")
    lines.append(query.plan_text(tokens) + f" (index {segs[0][0]['name'] if segs else '?'})")
    if flt is not None and prefilter:
        lines.append(f"Filter: {getattr(flt, 'text', flt)} (prefilter: before the best rows are taken)")
    return lines
