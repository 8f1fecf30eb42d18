"""Full-text search: the scanner's ``full_text_query`` answered from the columns' INVERTED
indices (:mod:`lancepy._ops.inverted`), as pylance 14 answers it.

A query is a string (a match query over the indexed column, or every indexed column; in
double quotes, a phrase), a dict ``{"query": text, "columns": [...]}``, or one of
:mod:`lancepy.query`'s objects, parsed into a tree: match / phrase leaves (:class:`FtsQuery`),
multi-match (a row's best column), boost (positive less ``negative_boost`` times negative)
and boolean (MUST rows with MUST and SHOULD scores added, or any SHOULD row; MUST_NOT rows
removed). A leaf's text is analyzed as the index analyzed the documents; each query token
(repeats count again) adds its BM25 score to the documents holding it (``operator`` AND:
only documents holding every token; fuzzy: the index's tokens within the edit distance
instead; phrase: only documents holding the tokens at the query's relative positions, give
or take ``slop``). The filter, when given, picks the rows before the top ``limit`` are taken
with ``prefilter``, else after (so fewer may come back), as pylance does. Results come best
first, ties by row id, with ``_score`` (float32). Deleted rows never come back. Rows of
fragments the index does not cover are scored as pylance's flat search scores them: with
the index's statistics plus those rows' own (phrase queries: analyzed with positions; with
a prefilter, only the rows it keeps). An index of several segments (pylance's delta
segments) is searched as one, BM25 statistics over all its segments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from lancepy import _lancepy
from lancepy._core.evaluate import _evaluate
from lancepy._ops import inverted as _inverted
from lancepy._ops import take as _take
from lancepy._ops.scan import stored_columns
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy._table.snapshot import DatasetView

SCORE = "_score"


@dataclass
class FtsQuery:
    """A match query (``slop`` ``None``) or a phrase query (``slop`` an int) on one column."""

    text: str
    column: str
    all_terms: bool = False
    boost: float = 1.0
    slop: Optional[int] = None
    fuzziness: Optional[int] = 0
    max_expansions: int = 50
    prefix_length: int = 0

    @property
    def columns(self) -> List[str]:
        return [self.column]

    def plan_text(self, tokens: Sequence[str]) -> str:
        words = " ".join(tokens) if tokens else self.text
        if self.slop is not None:
            return f"PhraseQuery: column={self.column}, query=[{words}], slop={self.slop}"
        extra = f", fuzziness={self.fuzziness}" if self.fuzziness != 0 else ""
        return f"MatchQuery: column={self.column}, query=[{words}]{extra}"


@dataclass
class FtsMulti:
    """The same text matched in several columns; a row scores its best column's score."""

    queries: List[FtsQuery]

    @property
    def columns(self) -> List[str]:
        return [c for q in self.queries for c in q.columns]


@dataclass
class FtsCombined:
    """`text` in `fields` taken together as one field (BM25F: pylance's CombinedFieldsQuery),
    each field's frequencies and lengths times its weight in `boosts`."""

    text: str
    fields: List[str]
    boosts: List[float]
    all_terms: bool = False

    @property
    def columns(self) -> List[str]:
        return list(self.fields)


@dataclass
class FtsBoost:
    """`positive`'s rows, each minus `negative_boost` times its `negative` score."""

    positive: Any
    negative: Any
    negative_boost: float

    @property
    def columns(self) -> List[str]:
        return self.positive.columns + self.negative.columns


@dataclass
class FtsBoolean:
    """``must`` (rows matching every one, their scores added), ``should`` (rows matching
    any, their scores added) and ``must_not`` (rows removed)."""

    must: List[Any]
    should: List[Any]
    must_not: List[Any]

    @property
    def columns(self) -> List[str]:
        return [c for q in self.must + self.should + self.must_not for c in q.columns]


def _index_entries(view: "DatasetView") -> Dict[str, List[Dict[str, Any]]]:
    """The INVERTED index segments of each column that has one (the first index by name);
    found once per version."""
    got = view.state.get("fts_index_entries")
    if got is None:
        got = view.state["fts_index_entries"] = _find_index_entries(view)
    return got


def _find_index_entries(view: "DatasetView") -> Dict[str, List[Dict[str, Any]]]:
    paths = view.loaded.field_paths
    out: Dict[str, List[Dict[str, Any]]] = {}
    for e in view.index_entries():
        if not str(e.get("details_type") or "").endswith("InvertedIndexDetails") or len(e["fields"]) != 1:
            continue
        column = paths.get(e["fields"][0])
        if column is None:
            continue
        have = out.setdefault(column, [])
        if not have or have[0]["name"] == e["name"]:
            have.append(e)
    return out


def _column_of(indexed: Dict[str, Any], column: Optional[str]) -> str:
    if column is None:
        if not indexed:
            raise InvalidArgumentError("full_text_query: no column has an INVERTED index (create_scalar_index(col, 'INVERTED'))")
        if len(indexed) != 1:
            raise NotSupportedError(f"full_text_query over several columns {sorted(indexed)} without naming one")
        return next(iter(indexed))
    if column not in indexed:
        raise InvalidArgumentError(f"full_text_query: column {column!r} has no INVERTED index")
    return column


def _is_phrase(text: str) -> bool:
    """pylance reads a query string in double quotes as a phrase."""
    return len(text) >= 2 and text.startswith('"') and text.endswith('"')


def _text_query(indexed: Dict[str, Any], text: str, column: Optional[str]) -> Any:
    if column is None and len(indexed) > 1 and not _is_phrase(text):
        return FtsMulti([FtsQuery(text, c) for c in indexed])  # (every indexed column, as pylance)
    if _is_phrase(text):
        return FtsQuery(text[1:-1], _column_of(indexed, column), all_terms=True, slop=0)
    return FtsQuery(text, _column_of(indexed, column))


def _node(indexed: Dict[str, Any], q: Any) -> Any:
    """The query tree of one of :mod:`lancepy.query`'s objects."""
    from lancepy.query import (
        BooleanQuery,
        BoostQuery,
        CombinedFieldsQuery,
        FullTextOperator,
        MatchQuery,
        MultiMatchQuery,
        Occur,
        PhraseQuery,
    )

    if isinstance(q, MatchQuery):
        if q.fuzziness is not None and int(q.fuzziness) < 0:
            raise InvalidArgumentError(f"MatchQuery(fuzziness={q.fuzziness}): must be at least 0 (or None: automatic)")
        return FtsQuery(
            q.query, _column_of(indexed, q.column), all_terms=q.operator == FullTextOperator.AND, boost=float(q.boost),
            fuzziness=None if q.fuzziness is None else int(q.fuzziness), max_expansions=int(q.max_expansions),
            prefix_length=int(q.prefix_length),
        )
    if isinstance(q, PhraseQuery):
        if int(q.slop) < 0:
            raise InvalidArgumentError(f"PhraseQuery(slop={q.slop}): must be at least 0")
        return FtsQuery(q.query, _column_of(indexed, q.column), all_terms=True, slop=int(q.slop))
    if isinstance(q, MultiMatchQuery):
        if not q.columns:
            raise InvalidArgumentError("MultiMatchQuery: no columns")
        boosts = [1.0] * len(q.columns) if q.boosts is None else [float(b) for b in q.boosts]
        if len(boosts) != len(q.columns):
            raise InvalidArgumentError(f"MultiMatchQuery: {len(q.columns)} columns but {len(boosts)} boosts")
        op = q.operator if isinstance(q.operator, FullTextOperator) else FullTextOperator(str(q.operator).upper())
        return FtsMulti([
            FtsQuery(q.query, _column_of(indexed, c), all_terms=op == FullTextOperator.AND, boost=b)
            for c, b in zip(q.columns, boosts)
        ])
    if isinstance(q, CombinedFieldsQuery):
        return _combined_node(indexed, q)
    if isinstance(q, BoostQuery):
        return FtsBoost(_node(indexed, q.positive), _node(indexed, q.negative), float(q.negative_boost))
    if isinstance(q, BooleanQuery):
        parts: Dict[str, List[Any]] = {"MUST": [], "SHOULD": [], "MUST_NOT": []}
        for occur, sub in q.queries:
            occur = occur if isinstance(occur, Occur) else Occur(str(occur).upper())
            parts[occur.value].append(_node(indexed, sub))
        if not parts["MUST"] and not parts["SHOULD"]:
            raise InvalidArgumentError("BooleanQuery: at least one MUST or SHOULD query is needed")
        return FtsBoolean(parts["MUST"], parts["SHOULD"], parts["MUST_NOT"])
    raise NotSupportedError(
        f"full_text_query of type {type(q).__name__}: lancepy takes a string, a dict {{'query', 'columns'}} or "
        "lancepy.query's MatchQuery, PhraseQuery, MultiMatchQuery, BoostQuery and BooleanQuery"
    )


#: pylance's bounds on a CombinedFieldsQuery column weight
_MAX_FIELD_BOOST = 1048576.0


def _combined_node(indexed: Dict[str, Any], q: Any) -> FtsCombined:
    """The tree of a ``CombinedFieldsQuery``, its columns and weights checked as pylance does."""
    import math

    from lancepy.query import FullTextOperator

    columns = list(q.columns)
    if not columns:
        raise InvalidArgumentError("CombinedFieldsQuery: no columns")
    boosts = [1.0] * len(columns) if q.boosts is None else [float(b) for b in q.boosts]
    if len(boosts) != len(columns):
        raise InvalidArgumentError(f"The number of boosts ({len(boosts)}) must match the number of columns ({len(columns)})")
    for c, b in zip(columns, boosts):
        if not (math.isfinite(b) and 1.0 <= b <= _MAX_FIELD_BOOST):
            raise InvalidArgumentError(
                f"combined_fields boost for column {c!r} must be a finite value in [1, {int(_MAX_FIELD_BOOST)}], got {b}"
            )
    op = q.operator if isinstance(q.operator, FullTextOperator) else FullTextOperator(str(q.operator).upper())
    return FtsCombined(q.query, columns, boosts, all_terms=op == FullTextOperator.AND)


def parse(view: "DatasetView", full_text_query: Any) -> Any:
    """The query tree `full_text_query` asks (leaves on the columns whose indices answer them)."""
    indexed = _index_entries(view)
    if isinstance(full_text_query, str):
        return _text_query(indexed, full_text_query, None)
    if isinstance(full_text_query, dict):
        unknown = set(full_text_query) - {"query", "columns"}
        if unknown:
            raise InvalidArgumentError(f"full_text_query: unknown keys {sorted(unknown)}")
        text = full_text_query.get("query")
        if not isinstance(text, str):
            raise InvalidArgumentError("full_text_query: 'query' must be a string")
        cols = full_text_query.get("columns")
        columns = None if cols is None else ([cols] if isinstance(cols, str) else list(cols))
        if columns is None or len(columns) == 1:
            return _text_query(indexed, text, None if columns is None else columns[0])
        if _is_phrase(text):
            raise NotSupportedError("full_text_query: a phrase over several columns (use PhraseQuery per column)")
        return FtsMulti([FtsQuery(text, _column_of(indexed, c)) for c in columns])
    return _node(indexed, full_text_query)


def _segments(view: "DatasetView", column: str) -> List[Tuple[Dict[str, Any], _inverted.InvertedSegment]]:
    """The column's index, opened (cached with the version): ``[(entry, segment)]``, or
    ``[]`` when the column has none. An index of several segments (pylance's delta
    segments) is opened as one searchable segment; its entry then has the segments' uuids
    joined by ``+`` and the union of their fragments."""
    entries = _index_entries(view).get(column, [])
    if not entries:
        return []
    uuids = [str(e["uuid"]) for e in entries]
    key = ("fts_segment", tuple(uuids))
    seg = view.state.get(key)
    if seg is None:
        seg = view.state[key] = _inverted.open_segment(view.uri, uuids, view.storage_options)
    if len(entries) == 1:
        return [(entries[0], seg)]
    covered = sorted(set().union(*({int(f) for f in e["fragment_ids"]} for e in entries)))
    return [(dict(entries[0], uuid="+".join(uuids), fragment_ids=covered), seg)]


def _mask(evaluate: Any, table: pa.Table, flt: Any) -> pa.Array:
    """`flt` over `table` as one boolean array, nulls false (``evaluate`` gives an array or a
    chunked array)."""
    got = evaluate(table, flt)
    if isinstance(got, pa.ChunkedArray):
        got = got.combine_chunks() if got.num_chunks else pa.array([], pa.bool_())
    return got.fill_null(False)


class _Prefilter:
    """A filter applied before the best rows are taken: which of the searched rows pass it
    (their addresses, read once per query with the filter's columns)."""

    #: prefilters whose passing rows (and their documents per index) a version keeps
    CACHED = 8

    def __init__(self, view: "DatasetView", flt: Any, evaluate: Any, frags: List[int]) -> None:
        self.view, self.flt, self.evaluate, self.frags = view, flt, evaluate, frags
        self._passing: Optional["np.ndarray"] = None
        text = getattr(flt, "text", None)
        # (the version's results for this filter text, the last CACHED filters kept)
        self._cache: Optional[Dict[Any, Any]] = None
        if isinstance(text, str) and evaluate is _evaluate:  # (the scanner's evaluation: results depend on the text only)
            recent = view.state.setdefault("fts_prefilters", {})
            key = (text, tuple(frags))
            self._cache = recent.pop(key, None) or {}
            recent[key] = self._cache
            while len(recent) > self.CACHED:
                recent.pop(next(iter(recent)))

    def passing(self) -> "np.ndarray":
        """The sorted addresses of the live rows of the searched fragments that pass."""
        import numpy as np

        if self._passing is None and self._cache is not None:
            self._passing = self._cache.get("passing")
        if self._passing is None:
            names = list(stored_columns(self.flt.columns) or self.view.schema.names)
            found = []
            if self.frags:
                stream = self.view.snapshot.scan_stream(names, fragment_ids=self.frags, with_row_address=True, batch_rows=131072)
                while (raw := stream.next_batch()) is not None:
                    t = pa.Table.from_batches([pa.record_batch(raw)])
                    mask = _mask(self.evaluate, t, self.flt)
                    found.append(np.asarray(t.column("_rowaddr").filter(mask).to_numpy(), np.uint64))
            self._passing = np.sort(np.concatenate(found)) if found else np.empty(0, np.uint64)
            if self._cache is not None:
                self._cache["passing"] = self._passing
        return self._passing

    def restrict(self, seg: _inverted.InvertedSegment, allowed: List[Optional[bytes]]) -> List[Optional[bytes]]:
        """`allowed` (per partition of `seg`) less the documents whose rows do not pass."""
        import numpy as np

        key = ("restrict", id(seg), tuple(id(m) for m in allowed))
        if self._cache is not None and key in self._cache:
            return self._cache[key][0]
        passing = self.passing()
        out: List[Optional[bytes]] = []
        for part, mask in zip(seg.partitions, allowed):
            rows = part.row_ids
            if self.view.stable_row_ids:
                rows, known = _take.addresses_of_ids(self.view, rows)
            else:
                known = np.ones(len(rows), bool)
            pos = np.minimum(np.searchsorted(passing, rows), max(len(passing) - 1, 0))
            ok = known & (passing[pos] == rows) if len(passing) else np.zeros(len(rows), bool)
            if mask is not None:
                ok &= np.frombuffer(mask, dtype=np.uint8).astype(bool)
            out.append(ok.astype(np.uint8).tobytes())
        if self._cache is not None:  # (the objects keyed by id are kept alive with the result)
            self._cache[key] = (out, seg, allowed)
        return out


def _unindexed_rows(view: "DatasetView", column: str, fragments: List[int], rows_filter: Any) -> pa.Table:
    """`column` and ``_rowaddr`` of the live rows of `fragments` that `rows_filter` (a
    :class:`_Prefilter`, or ``None``) keeps: what pylance's flat search reads, its BM25
    statistics over those rows only."""
    import numpy as np

    t = pa.table(view.snapshot.scan([column], fragment_ids=fragments, with_row_address=True, batch_rows=131072))
    if rows_filter is None:
        return t
    # (the rows the prefilter passes are known already, the unindexed fragments' included)
    passing = rows_filter.passing()
    rows = np.asarray(t.column("_rowaddr").to_numpy(), np.uint64)
    if not len(passing):
        return t.slice(0, 0)
    pos = np.minimum(np.searchsorted(passing, rows), len(passing) - 1)
    return t.filter(pa.array(passing[pos] == rows))


def _row_tokens(
    analyzer: _inverted.Analyzer, col: Any, with_positions: bool = False
) -> Tuple[List[str], "np.ndarray", "np.ndarray", "np.ndarray"]:
    """``(vocabulary, token ids, per-row offsets, positions)`` of the documents of `col` (an
    Arrow column of strings, JSON or lists of strings), as pylance's flat search analyzes
    them: a list's items one by one (their tokens counted together), or with positions (a
    phrase) joined as the index joins them."""
    import numpy as np

    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)) and not with_positions:
        counts = np.asarray(pc.fill_null(pc.list_value_length(col), 0).to_numpy(zero_copy_only=False), np.int64)
        vocab, ids, item_offsets, positions = analyzer.analyze(pc.list_flatten(col))
        return vocab, ids, item_offsets[np.concatenate([[0], np.cumsum(counts)])], positions
    return analyzer.analyze(col, with_positions=with_positions)


def _flat_scores(
    view: "DatasetView", seg: _inverted.InvertedSegment, column: str, tokens: List[str], all_terms: bool,
    fragments: List[int], rows_filter: Any = None,
) -> Tuple["np.ndarray", "np.ndarray"]:
    """Scores of the live rows of `fragments` (not in the index) that `rows_filter` keeps
    (see :func:`_unindexed_rows`), as pylance's flat search: BM25 over the index's documents
    and these rows together."""
    import numpy as np

    t = _unindexed_rows(view, column, fragments, rows_filter)
    addr = np.asarray(t.column("_rowaddr").to_numpy(), dtype=np.uint64)
    vocab, ids, offsets, _ = _row_tokens(seg.analyzer, t.column(column))
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
        idf = _inverted.bm25_idf(seg.doc_count(tok) + int((per_doc > 0).sum()), int(n_docs))[0]
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


def _flat_phrase(
    view: "DatasetView", seg: _inverted.InvertedSegment, column: str, tokens: List[str], query_pos: List[int], slop: int,
    fragments: List[int], rows_filter: Any = None,
) -> Tuple["np.ndarray", "np.ndarray"]:
    """The phrase's rows among the live rows of `fragments` (not in the index) that
    `rows_filter` keeps, scored as :func:`_flat_scores` scores an AND match of its tokens."""
    import numpy as np

    t = _unindexed_rows(view, column, fragments, rows_filter)
    addr = np.asarray(t.column("_rowaddr").to_numpy(), dtype=np.uint64)
    vocab, ids, offsets, positions = _row_tokens(seg.analyzer, t.column(column), with_positions=True)
    where = {w: i for i, w in enumerate(vocab)}
    if any(tok not in where for tok in tokens):
        return np.empty(0, np.uint64), np.empty(0, np.float32)
    doc_of = np.repeat(np.arange(len(addr)), np.diff(offsets))
    lists = []
    for tok, qp in zip(tokens, query_pos):
        hit = ids == where[tok]
        docs, freqs = np.unique(doc_of[hit], return_counts=True)
        starts = np.concatenate([[0], np.cumsum(freqs)])
        lists.append((docs.astype("<u4").tobytes(), starts.astype("<u4").tobytes(),
                      positions[hit].astype("<u4").tobytes(), int(qp)))
    found = np.frombuffer(_lancepy.fts_phrase_docs(lists, int(slop)), dtype="<u4")
    rows, scores = _flat_scores(view, seg, column, tokens, True, fragments, rows_filter)
    keep = np.isin(rows, addr[found])
    return rows[keep], scores[keep]


def _allowed(
    view: "DatasetView", entry: Dict[str, Any], seg: _inverted.InvertedSegment, frags: List[int]
) -> List[Optional[bytes]]:
    """Per partition of `seg`, which documents a search of `frags` may return (a byte per
    document; ``None``: all): rows of those fragments, not deleted (with stable row ids, the
    index's documents are row ids: those of live rows whose address is in `frags`). Cached
    with the version."""
    import numpy as np

    from lancepy.vector import _deleted_addresses

    key = ("fts_allowed", entry["uuid"], tuple(frags))
    got = view.state.get(key)
    if got is not None:
        return got
    searched = np.asarray(sorted(set(frags)), dtype=np.int64)
    stable = view.stable_row_ids
    deleted = np.empty(0, np.uint64) if stable else _deleted_addresses(view)
    out: List[Optional[bytes]] = []
    for part in seg.partitions:
        if stable:
            addresses, ok = _take.addresses_of_ids(view, part.row_ids)
            ok &= np.isin((addresses >> np.uint64(32)).astype(np.int64), searched)
        else:
            ok = np.isin((part.row_ids >> np.uint64(32)).astype(np.int64), searched)
        if len(deleted):
            ok &= ~np.isin(part.row_ids, deleted)
        out.append(None if ok.all() else ok.astype(np.uint8).tobytes())
    view.state[key] = out
    return out


def _levenshtein_within(a: str, b: str, k: int) -> bool:
    """Whether `a` and `b` are at most `k` single-character edits apart."""
    if abs(len(a) - len(b)) > k:
        return False
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        if min(cur) > k:
            return False
        prev = cur
    return prev[-1] <= k


def _json_value_start(token: str) -> int:
    """Where the value of a JSON index's token starts: after its ``<path>,<type>,``."""
    first = token.find(",")
    second = token.find(",", first + 1) if first >= 0 else -1
    return second + 1 if second >= 0 else 0


def _expand_fuzzy(seg: _inverted.InvertedSegment, tokens: List[str], q: FtsQuery) -> List[List[str]]:
    """pylance's fuzzy expansion: per query token (as the simple tokenizer splits the text),
    the index's tokens within its edit distance (``fuzziness``) sharing its first
    ``prefix_length`` bytes, in byte order; ``max_expansions`` caps them all together. One
    list per query token. A JSON index's token keeps its ``<path>,<type>,`` exact: the edit
    distance and the prefix apply to its value."""
    vocab = sorted({t for p in seg.partitions for t in p.token_ids}, key=lambda t: t.encode())
    out: List[List[str]] = []
    k, n = int(q.fuzziness or 0), 0
    for token in tokens:
        head = token[: _json_value_start(token)] if seg.analyzer.json else ""
        value = token[len(head):]
        prefix = head.encode() + value.encode()[: q.prefix_length]
        group: List[str] = []
        out.append(group)
        for cand in vocab:
            if n >= q.max_expansions:
                break
            if prefix and not cand.encode().startswith(prefix):
                continue
            if _levenshtein_within(value, cand[len(head):], k):
                group.append(cand)
                n += 1
    return out


def _leaf_context(
    view: "DatasetView", column: str, frags: List[int]
) -> Tuple[Dict[str, Any], _inverted.InvertedSegment, List[Optional[bytes]], List[int]]:
    """What a search of `column` over the live rows of `frags` needs that does not depend on
    the query: the index entry, its opened segment, the documents it may return per
    partition (see :func:`_allowed`) and the fragments it does not cover. Cached with the
    version."""
    key = ("fts_leaf", column, tuple(frags))
    got = view.state.get(key)
    if got is None:
        segs = _segments(view, column)
        if not segs:
            raise InvalidArgumentError(f"full_text_query: column {column!r} has no INVERTED index")
        entry, seg = segs[0]
        covered = {int(f) for f in entry["fragment_ids"]}
        got = (entry, seg, _allowed(view, entry, seg, frags), [f for f in frags if f not in covered])
        view.state[key] = got
    return got


def _leaf(
    view: "DatasetView", q: FtsQuery, frags: List[int], k: Optional[int], rows_filter: Any = None
) -> Tuple["np.ndarray", "np.ndarray"]:
    """``(row addresses, scores)`` of one match / phrase query over the live rows of `frags`
    (with `k`: at least the best `k`, maybe more; `rows_filter`: a prefilter, which rows of
    fragments the index does not cover are read, see :func:`_unindexed_rows`)."""
    import numpy as np

    entry, seg, allowed, uncovered = _leaf_context(view, q.column, frags)
    if rows_filter is not None:
        allowed = rows_filter.restrict(seg, allowed)
    if view.stable_row_ids:  # (the index's documents are stable row ids: `allowed` keeps live ones only)
        def addresses(found: "np.ndarray") -> "np.ndarray":
            return _take.addresses_of_ids(view, found)[0]
    else:
        def addresses(found: "np.ndarray") -> "np.ndarray":
            return found
    flat_tokens, flat_pos = seg.analyzer.query_tokens(q.text)
    # (the index's search counts a token repeated at one position once: n-grams all sit at
    # position 0, so a repeated n-gram counts once there; pylance's flat search counts repeats)
    pairs = list(dict.fromkeys(zip(flat_tokens, flat_pos)))
    tokens, query_pos = [t for t, _ in pairs], [p for _, p in pairs]
    boost = np.float32(q.boost)
    if q.boost <= 0:
        k = None  # (a boost of 0 or less reorders the scores: the unboosted best k are not the best)
    if q.slop is not None:
        if not seg.analyzer.with_position:
            raise InvalidArgumentError(
                "phrase query: position is not found but required for phrase queries, try recreating the index with position"
            )
        rows, scores = seg.phrase_search(tokens, [int(p) for p in query_pos], q.slop, allowed=allowed, k=k)
        rows = addresses(rows)
        if uncovered and tokens:
            a2, s2 = _flat_phrase(view, seg, q.column, flat_tokens, [int(p) for p in flat_pos], q.slop, uncovered, rows_filter)
            rows, scores = np.concatenate([rows, a2]), np.concatenate([scores, s2])
        return rows, (scores * boost).astype(np.float32)
    if q.fuzziness:  # (None, as 0: exact tokens, as pylance 14)
        # (pylance splits a fuzzy query's text as the simple tokenizer does, with no filter:
        # no lower-casing, stemming or stop words)
        groups = _expand_fuzzy(seg, seg.analyzer.raw_query_tokens(q.text), q)
        tokens = [t for g in groups for t in g]
        if q.all_terms:  # (AND: a row holds some expansion of every query token)
            if not all(groups):
                rows, scores = np.empty(0, np.uint64), np.empty(0, np.float32)
            else:
                rows, scores = seg.search(tokens, False, allowed=allowed)
                for g in groups:
                    rows_g, _ = seg.search(g, False, allowed=allowed)
                    keep = np.isin(rows, rows_g)
                    rows, scores = rows[keep], scores[keep]
                rows = addresses(rows)
            if uncovered and flat_tokens:
                a2, s2 = _flat_scores(view, seg, q.column, flat_tokens, True, uncovered, rows_filter)
                rows, scores = np.concatenate([rows, a2]), np.concatenate([scores, s2])
            return rows, (scores * boost).astype(np.float32)
    rows, scores = seg.search(tokens, q.all_terms, allowed=allowed, k=k)
    rows = addresses(rows)
    scores = (scores * boost).astype(np.float32)
    if uncovered and flat_tokens:
        # (a fuzzy query too: pylance's flat search of the rows the index does not cover looks
        # for the query's own tokens, analyzed as the index analyzes text, not the expansions)
        a2, s2 = _flat_scores(view, seg, q.column, flat_tokens, q.all_terms, uncovered, rows_filter)
        rows = np.concatenate([rows, a2])
        scores = np.concatenate([scores, (s2 * boost).astype(np.float32)])
    return rows, scores


def _doc_lengths(view: "DatasetView", entry: Dict[str, Any], seg: _inverted.InvertedSegment) -> Tuple["np.ndarray", "np.ndarray"]:
    """The index's documents (row addresses, sorted; with stable row ids those of the live
    rows) and their token counts, over every partition; built once per version."""
    import numpy as np

    key = ("fts_doc_lengths", entry["uuid"])
    got = view.state.get(key)
    if got is None:
        rows = np.concatenate([p.row_ids for p in seg.partitions]) if seg.partitions else np.empty(0, np.uint64)
        lengths = np.concatenate([p.num_tokens for p in seg.partitions]) if seg.partitions else np.empty(0, np.uint32)
        if view.stable_row_ids:
            rows, known = _take.addresses_of_ids(view, rows)
            rows, lengths = rows[known], lengths[known]
        order = np.argsort(rows, kind="stable")
        got = view.state[key] = (rows[order], lengths[order].astype(np.float32))
    return got


def _check_combined_columns(view: "DatasetView", columns: List[str]) -> None:
    """pylance's checks of a combined-fields query's columns, in its order: each one exists
    and holds text (strings or lists of strings); then one at least has an INVERTED index."""
    from lancepy.exceptions import ColumnNotFoundError

    indexed = _index_entries(view)
    for c in columns:
        if c in indexed:
            continue
        t: Any = view.schema
        for part in c.split("."):  # (a nested column by its dotted path)
            i = t.get_field_index(part) if isinstance(t, (pa.Schema, pa.StructType)) else -1
            if i < 0:
                raise ColumnNotFoundError(f"CombinedFieldsQuery: FTS field path {c!r} does not exist in the dataset schema")
            t = t.field(i).type
        inner = t.value_type if pa.types.is_list(t) or pa.types.is_large_list(t) else t
        if not (pa.types.is_string(inner) or pa.types.is_large_string(inner)):
            raise InvalidArgumentError(f"CombinedFieldsQuery: FTS field {c!r} must be strings or lists of strings, got {t}")
        if view.schema.get_field_index(c) < 0:
            raise NotSupportedError(f"CombinedFieldsQuery: nested column {c!r} without an INVERTED index (lancepy reads top-level ones)")
    if not any(c in indexed for c in columns):
        raise InvalidArgumentError(f"CombinedFieldsQuery: combined_fields requires an inverted index on at least one of {columns}")


def _flat_field(
    view: "DatasetView", column: str, analyzer: _inverted.Analyzer, terms: List[str], fragments: List[int], rows_filter: Any
) -> Tuple[int, float, "np.ndarray", List[Tuple["np.ndarray", int, "np.ndarray"]], "np.ndarray", "np.ndarray"]:
    """One combined-fields column over the live rows of `fragments` its index does not cover
    (all of them, for a column without one), analyzed with the query's analyzer as pylance's
    flat search does (a list's items one text): its documents (rows with a token), tokens,
    each term's document count, postings ``(rows, term, freq)`` of the rows `rows_filter` (a
    prefilter) keeps, and its rows and their lengths. Unlike a single column's flat search
    (:func:`_flat_scores`), pylance counts the statistics over every such row, the prefilter's
    rejects included."""
    import numpy as np

    t = _unindexed_rows(view, column, fragments, None)
    addr = np.asarray(t.column("_rowaddr").to_numpy(), dtype=np.uint64)
    passing = None
    if rows_filter is not None:
        ok = rows_filter.passing()
        pos = np.minimum(np.searchsorted(ok, addr), max(len(ok) - 1, 0))
        passing = (ok[pos] == addr) if len(ok) else np.zeros(len(addr), bool)
    col = t.column(column).combine_chunks() if t.num_rows else pa.array([], pa.string())
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):  # (a row's items, one after another)
        items = pc.list_flatten(col)
        owner = np.asarray(pc.list_parent_indices(col).to_numpy(zero_copy_only=False), np.int64)
    else:
        items, owner = col, np.arange(len(col), dtype=np.int64)
    vocab, ids, offsets, _ = analyzer.analyze(items)  # (read in place)
    doc_of = np.repeat(owner, np.diff(offsets))
    lengths = np.bincount(doc_of, minlength=len(addr)).astype(np.int64)
    where = {w: i for i, w in enumerate(vocab)}
    df = np.zeros(len(terms), np.int64)
    postings = []
    for j, term in enumerate(terms):
        i = where.get(term)
        if i is None:
            continue
        per_doc = np.bincount(doc_of[ids == i], minlength=len(addr))
        nz = per_doc > 0
        df[j] = int(nz.sum())
        if passing is not None:
            nz &= passing
        postings.append((addr[nz], j, per_doc[nz].astype(np.float32)))
    return int((lengths > 0).sum()), float(lengths.sum()), df, postings, addr, lengths.astype(np.float32)


def _combined(
    view: "DatasetView", node: FtsCombined, frags: List[int], rows_filter: Any = None
) -> Tuple["np.ndarray", "np.ndarray"]:
    """``(row addresses, float32 scores)`` of a combined-fields query (BM25F, as pylance 14
    scores it): per row, a term's frequency and the row's length are the fields' own added
    up, each times its field's weight; a term's document frequency is its largest in any one
    field; the document count is the largest of the fields', the average length their
    weighted token totals over it. A field's statistics are its index's plus those of the
    rows it does not cover (see :func:`_flat_field`); a column without an index is all such
    rows, analyzed as the first indexed column's index analyzes. A repeated query term counts once."""
    import numpy as np

    _check_combined_columns(view, node.fields)
    indexed = _index_entries(view)
    ctxs = {c: _leaf_context(view, c, frags) for c in node.fields if c in indexed}
    if rows_filter is not None:
        ctxs = {c: (e, seg, rows_filter.restrict(seg, allowed), u) for c, (e, seg, allowed, u) in ctxs.items()}
    params = [{k: v for k, v in seg.params.items() if k not in ("with_position", "block_size")} for _, seg, _, _ in ctxs.values()]
    if any(p != params[0] for p in params[1:]):
        raise InvalidArgumentError("CombinedFieldsQuery: the columns' INVERTED indices must share one tokenizer configuration")
    analyzer = next(iter(ctxs.values()))[1].analyzer
    empty = (np.empty(0, np.uint64), np.empty(0, np.float32))
    terms = list(dict.fromkeys(analyzer.query_tokens(node.text)[0]))
    if not terms:
        return empty
    weights = [np.float32(b) for b in node.boosts]
    n_docs, total, df = 0, 0.0, np.zeros(len(terms), np.int64)
    # (row address, term, weighted frequency) of every allowed posting of every field; each
    # field's rows (sorted) and their lengths
    rows_l, term_l, tf_l, lengths_of = [], [], [], []
    for c, w in zip(node.fields, weights):
        f_docs, f_total, f_df = 0, 0.0, np.zeros(len(terms), np.int64)
        f_rows, f_lens = [], []
        ctx = ctxs.get(c)
        if ctx is not None:
            entry, seg, allowed, uncovered = ctx
            f_docs, f_total = seg.num_docs, float(sum(p.total_tokens for p in seg.partitions))
            f_df += [seg.doc_count(t) for t in terms]
            for i, part in enumerate(seg.partitions):
                mask = None if allowed[i] is None else np.frombuffer(allowed[i], dtype=np.uint8).astype(bool)
                for j, t in enumerate(terms):
                    tid = part.token_ids.get(t)
                    if tid is None:
                        continue
                    docs, freqs = part.posting(int(tid))
                    if mask is not None:
                        keep = mask[docs]
                        docs, freqs = docs[keep], freqs[keep]
                    rows = part.row_ids[docs]
                    rows_l.append(_take.addresses_of_ids(view, rows)[0] if view.stable_row_ids else rows)
                    term_l.append(np.full(len(docs), j, np.int64))
                    tf_l.append(freqs.astype(np.float32) * w)
            docs_, lens_ = _doc_lengths(view, entry, seg)
            f_rows.append(docs_)
            f_lens.append(lens_)
        else:
            uncovered = frags
        if uncovered:
            u_docs, u_total, u_df, postings, u_rows, u_lens = _flat_field(view, c, analyzer, terms, uncovered, rows_filter)
            f_docs, f_total, f_df = f_docs + u_docs, f_total + u_total, f_df + u_df
            for rows, j, freqs in postings:
                rows_l.append(rows)
                term_l.append(np.full(len(rows), j, np.int64))
                tf_l.append(freqs * w)
            f_rows.append(u_rows)
            f_lens.append(u_lens)
        n_docs, total, df = max(n_docs, f_docs), total + float(w) * f_total, np.maximum(df, f_df)
        rows_f = np.concatenate(f_rows) if f_rows else np.empty(0, np.uint64)
        order = np.argsort(rows_f, kind="stable")
        lengths_of.append((w, rows_f[order], (np.concatenate(f_lens) if f_lens else np.empty(0, np.float32))[order]))
    if n_docs == 0 or not rows_l:
        return empty
    avgdl = np.float32(total / n_docs)
    idf = list(_inverted.bm25_idf(df, n_docs))
    rows, where = np.unique(np.concatenate(rows_l).astype(np.uint64), return_inverse=True)
    tf = np.zeros((len(rows), len(terms)), np.float32)
    np.add.at(tf, (where, np.concatenate(term_l)), np.concatenate(tf_l))
    dl = np.zeros(len(rows), np.float32)
    for w, docs, lengths in lengths_of:
        if not len(docs):
            continue
        pos = np.minimum(np.searchsorted(docs, rows), len(docs) - 1)
        dl += np.where(docs[pos] == rows, lengths[pos], np.float32(0)) * w
    k1, b = np.float32(_inverted.K1), np.float32(_inverted.B)
    norm = k1 * (np.float32(1.0) - b + b * dl / avgdl)
    scores = np.zeros(len(rows), np.float32)
    for j in range(len(terms)):
        f = tf[:, j]
        scores += np.where(f > 0, idf[j] * ((k1 + np.float32(1.0)) * f / (f + norm)), np.float32(0)).astype(np.float32)
    keep = (tf > 0).all(axis=1) if node.all_terms else (tf > 0).any(axis=1)
    return rows[keep], scores[keep].astype(np.float32)


def _scores_of(
    view: "DatasetView", node: Any, frags: List[int], k: Optional[int], rows_filter: Any = None
) -> Tuple["np.ndarray", "np.ndarray"]:
    """``(row addresses, float32 scores)`` of a query tree, unordered (`rows_filter`: see
    :func:`_leaf`)."""
    import numpy as np

    if isinstance(node, FtsQuery):
        return _leaf(view, node, frags, k, rows_filter)
    if isinstance(node, FtsCombined):
        return _combined(view, node, frags, rows_filter)
    if isinstance(node, FtsMulti):  # (a row's best column; each column's top k hold the best k)
        parts = [_scores_of(view, q, frags, k, rows_filter) for q in node.queries]
        rows = np.concatenate([r for r, _ in parts]).astype(np.uint64)
        scores = np.concatenate([s for _, s in parts]).astype(np.float32)
        order = np.lexsort((-scores, rows))
        rows, scores = rows[order], scores[order]
        first = np.ones(len(rows), bool)
        first[1:] = rows[1:] != rows[:-1]
        return rows[first], scores[first]
    if isinstance(node, FtsBoost):
        rows, scores = _scores_of(view, node.positive, frags, None, rows_filter)
        nrows, nscores = _scores_of(view, node.negative, frags, None, rows_filter)
        neg = dict(zip(nrows.tolist(), nscores.tolist()))
        nb = np.float32(node.negative_boost)
        out = np.asarray([np.float32(s) - nb * np.float32(neg[r]) if r in neg else np.float32(s)
                          for r, s in zip(rows.tolist(), scores.tolist())], np.float32)
        return rows, out
    if isinstance(node, FtsBoolean):
        acc: Dict[int, Any] = {}
        for i, q in enumerate(node.must):
            r, s = _scores_of(view, q, frags, None, rows_filter)
            if i == 0:
                acc = dict(zip(r.tolist(), (np.float32(x) for x in s.tolist())))
            else:
                got = dict(zip(r.tolist(), s.tolist()))
                acc = {row: np.float32(v + np.float32(got[row])) for row, v in acc.items() if row in got}
        for q in node.should:
            r, s = _scores_of(view, q, frags, None, rows_filter)
            for row, v in zip(r.tolist(), s.tolist()):
                if row in acc:
                    acc[row] = np.float32(acc[row] + np.float32(v))
                elif not node.must:
                    acc[row] = np.float32(v)
        for q in node.must_not:
            r, _ = _scores_of(view, q, frags, None, rows_filter)
            for row in r.tolist():
                acc.pop(row, None)
        return np.asarray(list(acc), np.uint64), np.asarray(list(acc.values()), np.float32)
    raise NotSupportedError(f"full_text_query node {type(node).__name__}")  # pragma: no cover - parse makes only these


def search(
    view: "DatasetView",
    query: Any,
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
    rows, scores = ranked(view, query, flt=flt, prefilter=prefilter, limit=limit, offset=offset,
                          fragment_ids=fragment_ids, evaluate=evaluate)
    names = list(columns) if columns is not None else list(view.schema.names)
    table = pa.table(view.snapshot.take_addresses(
        pa.array(rows, pa.uint64()), columns=names, with_row_id=with_row_id, with_row_address=with_row_address
    ))
    result = table.select(names).append_column(pa.field(SCORE, pa.float32()), pa.array(scores, pa.float32()))
    for n in ("_rowid", "_rowaddr"):
        if n in table.column_names:
            result = result.append_column(table.schema.field(n), table.column(n))
    return result


def ranked(
    view: "DatasetView", query: Any, *, flt: Any, prefilter: bool, limit: Optional[int], offset: int,
    fragment_ids: Optional[Sequence[int]], evaluate: Any,
) -> Tuple["np.ndarray", "np.ndarray"]:
    """``(row addresses, scores)`` of the rows `query` returns, best first (ties by row
    address), the filter applied before (`prefilter`) or after the best rows are taken."""
    import numpy as np

    live = view.fragment_rows()
    frags = [f for f in live] if fragment_ids is None else [int(f) for f in fragment_ids if int(f) in live]
    end = None if limit is None else offset + limit
    # (a prefilter picks the documents searched: the best `end` of those are the answer)
    rows_filter = _Prefilter(view, flt, evaluate, frags) if flt is not None and prefilter else None
    rows, scores = _scores_of(view, query, frags, end, rows_filter)
    rows, scores = np.asarray(rows, np.uint64), np.asarray(scores, np.float32)
    if end is not None and len(rows) > end:
        # (the rows scoring at least the end-th best: ties at the cut are ordered below)
        kth = np.partition(scores, len(scores) - end)[len(scores) - end] if end else np.float32(np.inf)
        near = scores >= kth
        rows, scores = rows[near], scores[near]
    if not prefilter:  # (the best `offset + limit` rows, then the filter)
        order = np.lexsort((rows, -scores))[:end]
        rows, scores = rows[order], scores[order]
    if flt is not None and not prefilter and len(rows):  # (a postfilter: on the best rows)
        order = np.argsort(rows)
        rows, scores = rows[order], scores[order]
        t = pa.table(view.snapshot.take_addresses(pa.array(rows, pa.uint64()), columns=list(stored_columns(flt.columns) or view.schema.names),
                                                  with_row_address=True))
        mask = _mask(evaluate, t, flt)
        keep = np.asarray(mask.to_numpy(zero_copy_only=False), bool)
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[offset:end]
    return rows[order], scores[order]


def _leaves(node: Any) -> List[FtsQuery]:
    if isinstance(node, FtsQuery):
        return [node]
    if isinstance(node, FtsCombined):
        return []
    if isinstance(node, FtsMulti):
        return list(node.queries)
    if isinstance(node, FtsBoost):
        return _leaves(node.positive) + _leaves(node.negative)
    return [q for sub in node.must + node.should + node.must_not for q in _leaves(sub)]


def plan_lines(view: "DatasetView", query: Any, flt: Any, prefilter: bool) -> List[str]:
    """What ``explain_plan`` says about the search (as pylance's plan names it)."""
    lines = []
    if flt is not None and not prefilter:
        lines.append(f"Filter: {getattr(flt, 'text', flt)} (postfilter: on the best rows)")
    if not isinstance(query, FtsQuery):
        name = "CombinedFields" if isinstance(query, FtsCombined) else type(query).__name__[3:]
        lines.append(f"{name}Query: " + {
            FtsMulti: "a row's best score over its columns",
            FtsBoost: f"positive minus negative_boost={getattr(query, 'negative_boost', '')} times negative",
            FtsBoolean: "MUST rows plus SHOULD scores, less MUST_NOT rows",
            FtsCombined: f"columns=[{', '.join(getattr(query, 'fields', []))}], query={getattr(query, 'text', '')}",
        }[type(query)])
    for leaf in _leaves(query):
        segs = _segments(view, leaf.column)
        tokens = segs[0][1].analyzer.tokens(leaf.text) if segs else []
        lines.append(leaf.plan_text(tokens) + f" (index {segs[0][0]['name'] if segs else '?'})")
    if flt is not None and prefilter:
        lines.append(f"Filter: {getattr(flt, 'text', flt)} (prefilter: before the best rows are taken)")
    return lines
