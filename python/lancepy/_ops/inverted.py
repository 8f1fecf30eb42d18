"""INVERTED (full-text search) indices in pylance 14's on-disk format: the analyzer
parameters, opening a segment, BM25 scoring of its posting lists, and writing one.

Layout (checked against files pylance 14.0.2 writes). A segment directory
``_indices/<uuid>/`` holds ``metadata.lance`` and, per partition ``p`` (the metadata's
``partitions``, a JSON list), ``part_<p>_tokens.lance``, ``part_<p>_docs.lance`` and
``part_<p>_invert.lance``; all Lance 2.x files.

* ``metadata.lance``: one column ``deleted_fragments`` (binary, one row: a portable roaring
  bitmap of fragment ids), schema metadata ``params`` (the analyzer, JSON),
  ``partitions``, ``format_version`` (``"2"``), ``posting_block_size`` (``"128"``),
  ``posting_tail_codec`` (``"varint_delta_v1"``) and ``token_set_format`` (``"fst"``).
* ``tokens``: ``token_set_format`` ``fst``: one row, ``_token_fst_bytes`` (an FST map from
  token to token id, the ``fst`` crate's format), ``_token_next_id`` (u32: the number of
  tokens) and ``_token_total_length`` (u64: their bytes together); ``arrow``: columns
  ``_token`` (utf8) and ``_token_id`` (u32).
* ``docs``: one row per document (a row with at least one token), in doc-id order:
  ``_rowid`` (u64; row addresses where the dataset has no stable row ids) and
  ``_num_tokens`` (u32); schema metadata ``total_tokens``.
* ``invert``: one row per token id: ``_posting`` (list of large_binary: the blocks of the
  posting list, see :mod:`lancepy._lancepy`'s ``fts_posting_*``), ``_max_score`` (f32),
  ``_length`` (u32: documents holding the token) and ``_impacts`` (list of large_binary:
  per block, the frequency / document-length pairs that bound its scores, two copies; lancepy
  does not write it, pylance reads the index without it). With positions (``with_position``;
  metadata ``positions_layout`` ``shared_stream_v2``, ``positions_codec`` ``packed_delta_v1``)
  also ``_compressed_position`` (large_binary: the token's positions stream, see
  :mod:`lancepy._lancepy`'s ``fts_positions_*``) and ``_position_block_offset`` (list of u32:
  where each posting block's positions start in it).

Scores are BM25 as pylance computes them, in float32: ``k1 = 1.2``, ``b = 0.75``, idf
``ln(1 + (N - n + 0.5) / (n + 0.5))`` over the documents of every partition of the segment
(deleted rows included, as the index holds them), the average document length
``total_tokens / N``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import pyarrow as pa

from lancepy import _lancepy
from lancepy._core.allocator import lean
from lancepy._ops.fts_analyzer import _CODE_FLAGS, DEFAULT_PARAMS, Analyzer
from lancepy.exceptions import CorruptFileError, InvalidArgumentError, NotSupportedError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy._table.snapshot import DatasetView

DETAILS_TYPE_URL = "/lance.table.InvertedIndexDetails"
METADATA = "metadata.lance"
K1 = 1.2
B = 0.75

def _f32(x: float) -> float:
    """`x` rounded to float32 (as a Python float)."""
    import numpy as np

    return float(np.float32(x))


def _metadata_dict(reader: Any) -> Dict[str, str]:
    md = reader.metadata().schema.metadata or {}
    return {k.decode(): v.decode() for k, v in md.items()}


class Partition:
    """One partition of a segment: its token ids, documents and posting lists."""

    def __init__(self, base: str, pid: int, tail_varint: bool, block_size: int, storage_options: Any) -> None:
        import numpy as np

        from lancepy.file import LanceFileReader

        tokens = LanceFileReader(f"{base}part_{pid}_tokens.lance", storage_options).read_all().to_table()
        if "_token_fst_bytes" in tokens.column_names:
            if tokens.num_rows != 1:
                raise CorruptFileError(f"{base}part_{pid}_tokens.lance: {tokens.num_rows} rows, expected one FST")
            keys, values = _lancepy.fts_fst_entries(tokens.column("_token_fst_bytes")[0].as_py())
            self.token_ids: Dict[str, int] = dict(zip(keys, values))
        elif "_token" in tokens.column_names:
            self.token_ids = dict(zip(tokens.column("_token").to_pylist(), tokens.column("_token_id").to_pylist()))
        else:
            raise CorruptFileError(f"{base}part_{pid}_tokens.lance: columns {tokens.column_names}")
        docs_reader = LanceFileReader(f"{base}part_{pid}_docs.lance", storage_options)
        docs = docs_reader.read_all().to_table()
        self.row_ids = np.asarray(docs.column("_rowid").to_numpy(), dtype=np.uint64)
        self.num_tokens = np.asarray(docs.column("_num_tokens").to_numpy(), dtype=np.uint32)
        md = _metadata_dict(docs_reader)
        self.total_tokens = int(md.get("total_tokens", int(self.num_tokens.sum())))
        invert = LanceFileReader(f"{base}part_{pid}_invert.lance", storage_options).read_all().to_table()
        self._postings = invert.column("_posting").combine_chunks()
        self.lengths = np.asarray(invert.column("_length").to_numpy(), dtype=np.int64)
        self._tail_varint = tail_varint
        self._block_size = block_size
        self._decoded: Dict[int, Tuple[bytes, bytes]] = {}
        has_positions = "_compressed_position" in invert.column_names
        self._positions = invert.column("_compressed_position").combine_chunks() if has_positions else None
        self._position_offsets = invert.column("_position_block_offset").combine_chunks() if has_positions else None
        self._decoded_positions: Dict[int, bytes] = {}
        self._position_starts: Dict[int, bytes] = {}
        self.num_tokens_bytes = self.num_tokens.astype("<u4").tobytes()
        self.row_ids_bytes = self.row_ids.astype("<u8").tobytes()
        #: the segment's average document length (float32), set by the segment
        self.avgdl = 0.0
        self._bounds: Dict[int, bytes] = {}
        self._norms: Optional[Tuple[float, bytes]] = None

    @property
    def norms_bytes(self) -> bytes:
        """Each document's BM25 length norm at the segment's average length (f32 bytes; see
        ``_lancepy.fts_doc_norms``); computed once."""
        if self._norms is None or self._norms[0] != self.avgdl:
            self._norms = (self.avgdl, _lancepy.fts_doc_norms(self.num_tokens_bytes, self.avgdl))
        return self._norms[1]

    def bounds_bytes(self, token_id: int) -> bytes:
        """The block bounds of a token's posting list (f32 bytes: per 128 documents, the
        largest BM25 weight with idf 1; see ``_lancepy.fts_block_bounds``); computed once."""
        got = self._bounds.get(token_id)
        if got is None:
            docs, freqs = self.posting_bytes(token_id)
            got = self._bounds[token_id] = _lancepy.fts_block_bounds(docs, freqs, self.num_tokens_bytes, self.avgdl)
        return got

    def posting_bytes(self, token_id: int) -> Tuple[bytes, bytes]:
        """``(doc ids, frequencies)`` of a token as little-endian u32 bytes (decoded once)."""
        got = self._decoded.get(token_id)
        if got is None:
            if not 0 <= token_id < len(self.lengths):
                raise CorruptFileError(f"INVERTED index: token id {token_id} has no posting list")
            blocks = self._postings[token_id].as_py()
            got = _lancepy.fts_posting_decode(blocks, int(self.lengths[token_id]), self._block_size, self._tail_varint)
            self._decoded[token_id] = got
        return got

    @property
    def has_positions(self) -> bool:
        return self._positions is not None

    def positions_bytes(self, token_id: int) -> bytes:
        """The positions of a token's documents (u32 bytes, one document's after another, in
        posting order); decoded once."""
        got = self._decoded_positions.get(token_id)
        if got is None:
            if self._positions is None or self._position_offsets is None:
                raise NotSupportedError(
                    "phrase query: the INVERTED index has no positions; recreate it with with_position=True"
                )
            _, freqs = self.posting_bytes(token_id)
            got = _lancepy.fts_positions_decode(
                self._positions[token_id].as_py(), self._position_offsets[token_id].as_py(), freqs, self._block_size
            )
            self._decoded_positions[token_id] = got
        return got

    def position_starts_bytes(self, token_id: int) -> bytes:
        """Where each of a token's documents' positions start in :meth:`positions_bytes`, then
        their number (u32 bytes, one more than the documents); computed once."""
        import numpy as np

        got = self._position_starts.get(token_id)
        if got is None:
            _, freqs = self.posting(token_id)
            got = np.concatenate([[0], np.cumsum(freqs, dtype=np.uint64)]).astype("<u4").tobytes()
            self._position_starts[token_id] = got
        return got

    def posting(self, token_id: int) -> Tuple["np.ndarray", "np.ndarray"]:
        """``(doc ids, frequencies)`` of a token."""
        import numpy as np

        docs, freqs = self.posting_bytes(token_id)
        return np.frombuffer(docs, dtype="<u4"), np.frombuffer(freqs, dtype="<u4")

    def positions(self, token_id: int) -> "np.ndarray":
        import numpy as np

        return np.frombuffer(self.positions_bytes(token_id), dtype="<u4")


def segment_layout(base: str, storage_options: Any = None) -> Tuple[Dict[str, Any], List[int], bool, int]:
    """What a segment's metadata file says (its partitions are not read): ``(params,
    partition ids, whether posting tails are varint-coded, posting block size)``."""
    from lancepy.file import LanceFileReader

    md = _metadata_dict(LanceFileReader(base + METADATA, storage_options))
    try:
        params = dict(DEFAULT_PARAMS, **json.loads(md.get("params", "{}")))
        partitions = [int(p) for p in json.loads(md.get("partitions", "[]"))]
    except (ValueError, TypeError) as e:
        raise CorruptFileError(f"{base}{METADATA}: bad metadata ({e})") from None
    codec = md.get("posting_tail_codec")
    if codec is None:
        codec = "varint_delta_v1" if md.get("format_version") == "2" else "fixed32"
    if codec not in ("varint_delta_v1", "fixed32"):
        raise NotSupportedError(f"INVERTED index posting_tail_codec {codec!r} is not known to lancepy")
    return params, partitions, codec == "varint_delta_v1", int(md.get("posting_block_size", "128"))


class InvertedSegment:
    """An INVERTED index opened for queries: one segment, or several segments of one index
    searched as one (pylance's delta segments, from ``optimize_indices(num_indices_to_merge=0)``):
    their partitions side by side, BM25 statistics (documents, average length, documents per
    token) over all of them, as pylance scores them."""

    def __init__(self, base: Union[str, Sequence[str]], storage_options: Any = None) -> None:
        bases = [base] if isinstance(base, str) else list(base)
        if not bases:
            raise InvalidArgumentError("an INVERTED index needs at least one segment")
        self.partitions: List[Partition] = []
        self.params: Dict[str, Any] = {}
        for i, b in enumerate(bases):
            params, partitions, tail_varint, block_size = segment_layout(b, storage_options)
            if i == 0:
                self.params = params
            elif params != self.params:
                raise NotSupportedError(
                    f"INVERTED index segments analyzed differently ({bases[0]}: {self.params}, {b}: {params}): "
                    "lancepy searches segments of one analyzer together"
                )
            self.partitions += [Partition(b, p, tail_varint, block_size, storage_options) for p in partitions]
        self.analyzer = Analyzer(self.params)
        self.num_docs = sum(len(p.row_ids) for p in self.partitions)
        total = sum(p.total_tokens for p in self.partitions)
        self.avg_doc_length = (total / self.num_docs) if self.num_docs else 0.0
        for p in self.partitions:
            p.avgdl = _f32(self.avg_doc_length)
        self._idf: Dict[str, Tuple[int, float]] = {}

    def idf(self, token: str) -> Tuple[int, float]:
        """``(documents holding `token`, its idf as float32)`` over every partition (cached)."""
        got = self._idf.get(token)
        if got is None:
            n = self.doc_count(token)
            got = self._idf[token] = (n, float(bm25_idf(n, self.num_docs)[0]))
        return got

    def doc_count(self, token: str) -> int:
        """Documents (of every partition) holding `token`."""
        n = 0
        for p in self.partitions:
            tid = p.token_ids.get(token)
            if tid is not None:
                n += int(p.lengths[tid])
        return n

    def search(
        self, tokens: Sequence[str], all_terms: bool = False, boost: float = 1.0,
        allowed: Optional[Sequence[Optional[bytes]]] = None, k: Optional[int] = None,
    ) -> Tuple["np.ndarray", "np.ndarray"]:
        """``(row ids, float32 BM25 scores)`` of the documents holding any (`all_terms`:
        every) token of `tokens` (a repeated token scores again), unordered. `allowed`: per
        partition, a byte per document (0: left out) or ``None`` (all); `k`: only the `k`
        best of each partition (score descending, then row id)."""
        import numpy as np

        uniq = list(dict.fromkeys(tokens))
        if not uniq or self.num_docs == 0:
            return np.empty(0, np.uint64), np.empty(0, np.float32)
        avgdl = _f32(self.avg_doc_length)
        idfs = {t: self.idf(t) for t in uniq}
        if all_terms and any(c == 0 for c, _ in idfs.values()):
            return np.empty(0, np.uint64), np.empty(0, np.float32)
        rows, scores = [], []
        need = len(uniq) if all_terms else 1
        found: List[Tuple[Partition, Tuple[bytes, bytes]]] = []
        top_k: List[Tuple[Partition, Any]] = []  # (the partitions' top-k searches, run together)
        for i, part in enumerate(self.partitions):
            present = [(t, part.token_ids.get(t)) for t in uniq]
            present = [(t, int(tid)) for t, tid in present if tid is not None]
            if not present:
                continue
            mask = allowed[i] if allowed is not None else None
            if k is None:  # (every document: scored exhaustively)
                lists = [(*part.posting_bytes(tid), idfs[t][1], tokens.count(t)) for t, tid in present]
                found.append((part, _lancepy.fts_score_docs(lists, part.num_tokens_bytes, part.row_ids_bytes, avgdl, need, mask, k)))
            else:  # (the best k: block-max pruning, the same documents and scores)
                lists = [(*part.posting_bytes(tid), part.bounds_bytes(tid), idfs[t][1], tokens.count(t)) for t, tid in present]
                top_k.append((part, (lists, part.norms_bytes, part.row_ids_bytes, mask)))
        if top_k:  # (in parallel, without the GIL)
            found += zip([p for p, _ in top_k], _lancepy.fts_top_k_partitions([a for _, a in top_k], need, k))
        for part, (docs_b, scores_b) in found:
            rows.append(part.row_ids[np.frombuffer(docs_b, dtype="<u4")])
            scores.append(np.frombuffer(scores_b, dtype="<f4") * np.float32(boost))
        if not rows:
            return np.empty(0, np.uint64), np.empty(0, np.float32)
        return np.concatenate(rows), np.concatenate(scores).astype(np.float32)


    def phrase_search(
        self, tokens: Sequence[str], query_positions: Sequence[int], slop: int,
        allowed: Optional[Sequence[Optional[bytes]]] = None, k: Optional[int] = None,
    ) -> Tuple["np.ndarray", "np.ndarray"]:
        """``(row ids, float32 BM25 scores)`` of the documents holding `tokens` in order, at
        their `query_positions` (as the analyzer numbers the query's tokens, so a removed
        stop word leaves a gap) give or take `slop` positions, each token after the one
        before (pylance's phrase check). Scores as :meth:`search` with every token required
        (a repeated token scores again), for the documents found only. `allowed` as for
        :meth:`search`; with `k`, the best `k` of each partition (positions checked only for
        documents that would enter them; block bounds skip runs of documents), else every
        document found."""
        import numpy as np

        empty = (np.empty(0, np.uint64), np.empty(0, np.float32))
        if not tokens or self.num_docs == 0:
            return empty
        if not all(p.has_positions for p in self.partitions):
            raise NotSupportedError("phrase query: the INVERTED index has no positions; recreate it with with_position=True")
        uniq = list(dict.fromkeys(tokens))
        idfs = {t: self.idf(t) for t in uniq}
        if any(c == 0 for c, _ in idfs.values()):
            return empty
        searched: List[Partition] = []
        parts = []  # (per partition, searched together in parallel, without the GIL)
        for i, part in enumerate(self.partitions):
            tids = [part.token_ids.get(t) for t in tokens]
            if any(t is None for t in tids):
                continue
            lists = []
            for q, tid in zip(query_positions, tids):
                docs, _ = part.posting_bytes(int(tid))
                lists.append((docs, part.position_starts_bytes(int(tid)), part.positions_bytes(int(tid)), int(q)))
            terms = [(list(tokens).index(t), idfs[t][1], list(tokens).count(t), part.bounds_bytes(int(part.token_ids[t])))
                     for t in uniq]
            mask = allowed[i] if allowed is not None else None
            searched.append(part)
            parts.append((lists, terms, part.norms_bytes, part.row_ids_bytes, mask))
        rows, scores = [], []
        if parts:
            for part, (docs_b, scores_b) in zip(searched, _lancepy.fts_phrase_top_k_partitions(parts, int(slop), k)):
                found = np.frombuffer(docs_b, dtype="<u4")
                if len(found):
                    rows.append(part.row_ids[found])
                    scores.append(np.frombuffer(scores_b, dtype="<f4"))
        if not rows:
            return empty
        return np.concatenate(rows), np.concatenate(scores).astype(np.float32)


def open_segment(ds_uri: str, uuid: Union[str, Sequence[str]], storage_options: Any = None) -> InvertedSegment:
    """Opens the INVERTED segment `uuid` of the dataset at `ds_uri` (several uuids: the
    segments of one index, searched together)."""
    uuids = [uuid] if isinstance(uuid, str) else list(uuid)
    return InvertedSegment([ds_uri.rstrip("/") + f"/_indices/{u}/" for u in uuids], storage_options)


# ---------------------------------------------------------------------------------------
# Building


def details_bytes(params: Dict[str, Any]) -> List[int]:
    """The ``InvertedIndexDetails`` message pylance 14 commits with the index (encoded
    natively: ``_lancepy.encode_inverted_index_details``; zero values left out)."""
    mtl = params["max_token_length"]
    data = _lancepy.encode_inverted_index_details(
        base_tokenizer=str(params["base_tokenizer"]),
        language=str(params["language"]),
        with_position=bool(params["with_position"]),
        max_token_length=None if mtl is None else int(mtl),
        lower_case=bool(params["lower_case"]),
        stem=bool(params["stem"]),
        remove_stop_words=bool(params["remove_stop_words"]),
        ascii_folding=bool(params["ascii_folding"]),
        min_ngram_length=int(params["min_ngram_length"]),
        max_ngram_length=int(params["max_ngram_length"]),
        prefix_only=bool(params["prefix_only"]),
        block_size=int(params["block_size"]),
        format_version=FORMAT_VERSION,
        code=tuple(bool(params.get(k)) for k in _CODE_FLAGS) if params["base_tokenizer"] == "code" else None,
    )
    return list(data)


FORMAT_VERSION = 2
INDEX_VERSION = 2
#: The metadata pylance 14 adds to an index's files when it stores positions.
POSITIONS_META = {"positions_layout": "shared_stream_v2", "positions_codec": "packed_delta_v1"}


def bm25_idf(df: Any, n_docs: int) -> "np.ndarray":
    """Each token's BM25 idf (float32) from its number of documents `df` (an int, or an array
    of them) among `n_docs`, computed natively as pylance computes it (numpy's float32 log
    rounds some values the other way)."""
    import numpy as np

    counts = np.ascontiguousarray(np.atleast_1d(np.asarray(df)).astype("<u4"))
    return np.frombuffer(_lancepy.fts_idf(counts.tobytes(), int(n_docs)), "<f4")


@dataclass
class Postings:
    """A whole index in memory: `vocab` (token id -> token); the (token, doc, frequency)
    triples (integer arrays: int64, or a new partition's u32) ordered by token then doc; each
    doc's row id and token count."""

    vocab: List[str]
    tok: "np.ndarray"
    doc: "np.ndarray"
    freq: "np.ndarray"
    rows: "np.ndarray"
    doc_len: "np.ndarray"
    #: with positions: every (token, doc) pair's positions, one pair's after another
    positions: Optional["np.ndarray"] = None


def _pair_starts(freq: "np.ndarray") -> "np.ndarray":
    import numpy as np

    return np.concatenate([[0], np.cumsum(freq)]).astype(np.int64)


def _take_positions(positions: "np.ndarray", freq: "np.ndarray", pairs: "np.ndarray") -> "np.ndarray":
    """The positions of the (token, doc) pairs `pairs` (indices into `freq`), in that order."""
    import numpy as np

    starts = _pair_starts(freq)
    f = freq[pairs].astype(np.int64)
    if not len(f):
        return np.empty(0, np.uint32)
    within = np.arange(int(f.sum()), dtype=np.int64) - np.repeat(_pair_starts(f)[:-1], f)
    return positions[np.repeat(starts[pairs], f) + within]


def partition_postings(part: Partition, with_positions: bool) -> Postings:
    """One partition's contents as :class:`Postings` (tokens in token id order)."""
    import numpy as np

    vocab: List[str] = []
    docs, freqs, poss = [], [], []
    for token, tid in sorted(part.token_ids.items(), key=lambda kv: kv[1]):
        d, f = part.posting_bytes(int(tid))
        vocab.append(token)
        docs.append(d)
        freqs.append(f)
        if with_positions:
            poss.append(part.positions_bytes(int(tid)))
    counts = np.fromiter((len(d) // 4 for d in docs), np.int64, len(docs))
    u32 = (lambda xs: np.frombuffer(b"".join(xs), dtype="<u4"))
    # (posting lists hold their documents in order: (token, doc) order already)
    return Postings(vocab, np.repeat(np.arange(len(vocab), dtype=np.int64), counts), u32(docs).astype(np.int64),
                    u32(freqs).astype(np.int64), part.row_ids.copy(), part.num_tokens.astype(np.int64),
                    u32(poss).astype(np.uint32) if with_positions else None)


def read_postings(ds_uri: str, uuid: str, storage_options: Any = None) -> Tuple[Dict[str, Any], Postings]:
    """A segment's params and contents (its partitions merged: docs one after another, tokens
    by first partition, then first appearance)."""
    import numpy as np

    seg = open_segment(ds_uri, uuid, storage_options)
    vocab: List[str] = []
    where: Dict[str, int] = {}
    toks, docs, freqs, rows, lens, poss = [], [], [], [], [], []
    with_pos = bool(seg.params.get("with_position"))
    doc_base = 0
    for part in seg.partitions:
        for token, tid in sorted(part.token_ids.items(), key=lambda kv: kv[1]):
            gid = where.get(token)
            if gid is None:
                gid = where[token] = len(vocab)
                vocab.append(token)
            d, f = part.posting(int(tid))
            toks.append(np.full(len(d), gid, np.int64))
            docs.append(d.astype(np.int64) + doc_base)
            freqs.append(f.astype(np.int64))
            if with_pos:
                poss.append(part.positions(int(tid)))
        rows.append(part.row_ids)
        lens.append(part.num_tokens.astype(np.int64))
        doc_base += len(part.row_ids)
    cat = (lambda xs, t: np.concatenate(xs).astype(t) if xs else np.empty(0, t))
    tok, doc, freq = cat(toks, np.int64), cat(docs, np.int64), cat(freqs, np.int64)
    order = np.lexsort((doc, tok))
    positions = _take_positions(cat(poss, np.uint32), freq, order) if with_pos else None
    return seg.params, Postings(vocab, tok[order], doc[order], freq[order], cat(rows, np.uint64), cat(lens, np.int64),
                                positions)


def keep_docs(p: Postings, keep: "np.ndarray", rows: "np.ndarray") -> Postings:
    """`p` with only the docs `keep` marks (their row ids now `rows[keep]`), doc ids and token
    ids renumbered in order, tokens left without docs dropped (as pylance remaps an index)."""
    import numpy as np

    new_doc = np.cumsum(keep) - 1
    pair = keep[p.doc] if len(p.doc) else np.zeros(0, bool)
    tok, doc, freq = p.tok[pair], new_doc[p.doc[pair]], p.freq[pair]
    used = np.zeros(len(p.vocab), bool)
    used[tok] = True
    new_tok = np.cumsum(used) - 1
    vocab = [t for t, u in zip(p.vocab, used) if u]
    positions = None if p.positions is None else _take_positions(p.positions, p.freq, np.flatnonzero(pair))
    return Postings(vocab, new_tok[tok], doc, freq, np.asarray(rows, np.uint64)[keep], p.doc_len[keep], positions)


def write_postings(base: str, params: Dict[str, Any], p: Postings, storage_options: Any = None) -> List[Dict[str, Any]]:
    """Writes `p` as one segment of one partition under `base`; returns the files."""
    return write_partition(base, 0, params, p, storage_options) + write_metadata(base, params, [0], storage_options)


#: Rows of text a build reads at a time: a document can be kilobytes, and the scan's working
#: memory (pages read, decompressed, cut) grows with its batches.
TEXT_BATCH_ROWS = 16384
#: Tokens whose posting lists are encoded and handed to the file writer at once (the writer
#: flushes pages as they fill: a partition's encoded lists are never all in memory).
ENCODE_CHUNK_TOKENS = 16384
#: pylance's default build memory (2 GiB, per worker; lancepy builds with one).
DEFAULT_MEMORY_LIMIT_MIB = 2048
#: The share of the build memory a partition's posting lists may take before they are written:
#: encoding them takes about their size again, beside them.
_LISTS_SHARE = 0.25


def build_partitions(
    base: str, params: Dict[str, Any], batches: Iterable[Tuple[pa.Array, pa.Array]], memory_limit_mib: Optional[int],
    storage_options: Any = None, written: Optional[List[str]] = None, first_partition: int = 0,
    progress: Any = None,
) -> List[Dict[str, Any]]:
    """Writes one segment under `base` from `batches` of ``(texts, row ids)`` (ascending row
    ids), in bounded memory: each batch is analyzed and added to the posting lists of the
    partition being built as it arrives (natively: ``FtsPostingsBuilder``); when the lists
    hold a quarter of `memory_limit_mib` (default :data:`DEFAULT_MEMORY_LIMIT_MIB`), they are
    written as a partition of their own (as pylance's builder flushes a worker's partition),
    and the next partition starts. Statistics for queries are those of all partitions
    together; each partition's block bounds are its own, as pylance writes them. The names of
    the files, as written, are added to `written` (for a rollback). With `first_partition`,
    partitions ``0 .. first_partition - 1`` are written already (see :func:`extend`): the new
    ones follow them, and the metadata lists them all. `progress` (a callable, or ``None``)
    hears :class:`~lancepy.progress.IndexProgress` events as pylance 14 reports them: stage
    ``tokenize_docs`` (rows read) and ``write_metadata`` (files). Returns the files, in the
    order written."""
    import numpy as np

    from lancepy.progress import IndexProgress

    def report(event: str, stage: str, done: int, total: Optional[int], unit: str) -> None:
        if progress is not None:
            progress(IndexProgress(event, stage, done, total, unit))

    limit = int(((DEFAULT_MEMORY_LIMIT_MIB if memory_limit_mib is None else int(memory_limit_mib)) << 20) * _LISTS_SHARE)
    analyzer = Analyzer(params)
    files: List[Dict[str, Any]] = []
    pids: List[int] = []
    builder = analyzer.builder()
    docs = 0

    def flush() -> None:
        nonlocal builder
        pid = first_partition + len(pids)
        if written is not None:  # (named before they are written: a failed write is rolled back whole)
            written.extend(f"part_{pid}_{kind}.lance" for kind in ("invert", "tokens", "docs"))
        files.extend(write_partition(base, pid, params, builder, storage_options))
        pids.append(pid)
        builder = analyzer.builder()

    report("start", "tokenize_docs", 0, None, "rows")
    with lean():  # (freed scan and analysis buffers go back to the OS as the build goes)
        for values, ids in batches:
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            rows = np.asarray(ids.to_numpy(zero_copy_only=False), "<u8")
            builder.add(values, rows.tobytes())  # (the texts are read in place, then let go)
            del values
            if builder.memory_bytes >= limit:
                flush()
            docs += len(rows)
            report("progress", "tokenize_docs", docs, None, "rows")
        if builder.num_docs or not (pids or first_partition):
            flush()
        del builder
    report("complete", "tokenize_docs", docs, None, "rows")
    if written is not None:
        written.append(METADATA)
    report("start", "write_metadata", 0, 1, "files")
    files.extend(write_metadata(base, params, list(range(first_partition)) + pids, storage_options))
    report("progress", "write_metadata", 1, 1, "files")
    report("complete", "write_metadata", 1, 1, "files")
    return files


#: The keys of a segment's metadata that say how its partitions' files are laid out.
_LAYOUT_KEYS = ("format_version", "posting_block_size", "posting_tail_codec", "token_set_format", *POSITIONS_META)


def _layout(params: Dict[str, Any]) -> Dict[str, str]:
    """The layout keys of the metadata of a segment lancepy writes with `params`."""
    return {
        "format_version": str(FORMAT_VERSION),
        "posting_block_size": str(int(params.get("block_size") or 128)),
        "posting_tail_codec": "varint_delta_v1",
        "token_set_format": "fst",
        **(POSITIONS_META if params.get("with_position") else {}),
    }


def write_metadata(base: str, params: Dict[str, Any], partitions: Sequence[int], storage_options: Any = None) -> List[Dict[str, Any]]:
    """Writes the segment's metadata file (its params and partitions) under `base`."""
    from lancepy.file import LanceFileWriter

    md_schema = pa.schema(
        [pa.field("deleted_fragments", pa.binary(), nullable=False)],
        metadata={
            "params": json.dumps({k: params.get(k, v) for k, v in DEFAULT_PARAMS.items()}, separators=(",", ":")),
            "partitions": json.dumps([int(p) for p in partitions], separators=(",", ":")),
            **_layout(params),
        },
    )
    empty_bitmap = bytes(_lancepy.fragment_bitmap([]))
    md = pa.record_batch([pa.array([empty_bitmap], pa.binary())], schema=md_schema)
    with LanceFileWriter(base + METADATA, md.schema, version="2.2", storage_options=storage_options) as w:
        w.write_batch(md)
    return [{"path": METADATA, "size_bytes": int(w.file_size or 0)}]


def write_partition(
    base: str, pid: int, params: Dict[str, Any], p: Union[Postings, Any], storage_options: Any = None
) -> List[Dict[str, Any]]:
    """Writes `p` (:class:`Postings`, or a native ``FtsPostingsBuilder``) as partition `pid`
    of the segment under `base` (its ``part_<pid>_*`` files: posting lists, token set,
    documents); returns the files."""
    import numpy as np

    from lancepy.file import LanceFileWriter

    with_pos = bool(params.get("with_position"))
    block_size = int(params.get("block_size") or 128)
    if isinstance(p, Postings):
        if with_pos and p.positions is None:
            raise InvalidArgumentError("INVERTED index with_position=True: the postings carry no positions")
        vocab = p.vocab
        doc_rows, doc_len = np.asarray(p.rows, "<u8"), np.asarray(p.doc_len, "<u4")
        starts = np.searchsorted(p.tok, np.arange(len(vocab) + 1, dtype=p.tok.dtype)).astype("<u8")  # (no wider copy of tok)
        df = np.diff(starts)
        raw = _lancepy.fts_encode_partition(
            starts.tobytes(), _raw(np.asarray(p.doc, "<u4")), _raw(np.asarray(p.freq, "<u4")),
            _raw(np.asarray(p.positions, "<u4")) if with_pos else None, doc_len.tobytes(),
            bm25_idf(df, len(doc_rows)).tobytes(), block_size,
        )
    else:  # (a native FtsPostingsBuilder: encoded a batch of tokens at a time, as written)
        vocab = p.vocab()
        rows_bytes, lens_bytes = p.docs()
        doc_rows, doc_len = np.frombuffer(rows_bytes, "<u8"), np.frombuffer(lens_bytes, "<u4")
        idf = bm25_idf(np.frombuffer(p.doc_freqs(), "<u4"), len(doc_rows)).tobytes()
        raw = pa.RecordBatchReader.from_stream(p.encode_chunks(idf, block_size, ENCODE_CHUNK_TOKENS))
    total_tokens = int(doc_len.sum(dtype=np.uint64))
    files = []
    meta = {"format_version": str(FORMAT_VERSION), "posting_block_size": str(block_size), "posting_tail_codec": "varint_delta_v1"}
    if with_pos:
        meta.update(POSITIONS_META)
    # (the columns as encoded natively: `_posting`, `_max_score`, `_length` and, with positions,
    # `_compressed_position`, `_position_block_offset`; exported without a copy)
    if not isinstance(raw, pa.RecordBatchReader):
        whole = pa.record_batch(raw)
        raw = pa.RecordBatchReader.from_batches(whole.schema, [whole])
    invert = raw
    invert_schema = invert.schema.with_metadata(meta)
    del raw
    fst = _lancepy.fts_fst_build(list(vocab), list(range(len(vocab))))
    tokens_schema = pa.schema(
        [
            pa.field("_token_fst_bytes", pa.large_binary(), nullable=False),
            pa.field("_token_next_id", pa.uint32(), nullable=False),
            pa.field("_token_total_length", pa.uint64(), nullable=False),
        ]
    )
    tokens = pa.record_batch(
        [pa.array([fst], pa.large_binary()), pa.array([len(vocab)], pa.uint32()),
         pa.array([sum(len(v.encode()) for v in vocab)], pa.uint64())],
        schema=tokens_schema,
    )
    docs_schema = pa.schema(
        [pa.field("_rowid", pa.uint64(), nullable=False), pa.field("_num_tokens", pa.uint32(), nullable=False)],
        metadata={"total_tokens": str(total_tokens)},
    )
    docs = pa.record_batch([pa.array(doc_rows, pa.uint64()), pa.array(doc_len, pa.uint32())], schema=docs_schema)
    for name, schema, batches in (
        (f"part_{pid}_invert.lance", invert_schema, invert),
        (f"part_{pid}_tokens.lance", tokens.schema, [tokens]),
        (f"part_{pid}_docs.lance", docs.schema, [docs]),
    ):
        with LanceFileWriter(base + name, schema, version="2.2", storage_options=storage_options) as w:
            for batch in batches:
                if batch.num_rows:
                    w.write_batch(batch.replace_schema_metadata(schema.metadata))
        files.append({"path": name, "size_bytes": int(w.file_size or 0)})
    return files


def remap(
    ds_uri: str, storage_options: Any, entry: Dict[str, Any], old_addresses: "np.ndarray", new_addresses: "np.ndarray",
    compacted_fragments: Sequence[int], dropped_fragments: Sequence[int],
) -> Tuple[str, List[Dict[str, Any]]]:
    """A new segment for the INVERTED segment `entry` after a compaction moved rows (see
    :func:`lancepy._ops.remap.moved_rows`): documents of rows that moved get their new
    addresses, those of rows gone are dropped, with the tokens only they held; partitions are
    merged into one. Returns the new uuid and its files."""
    import uuid as _uuid

    from lancepy._ops.remap import moved_rows

    params, p = read_postings(ds_uri, entry["uuid"], storage_options)
    new_rows, keep = moved_rows(p.rows, old_addresses, new_addresses, compacted_fragments, dropped_fragments)
    uid = str(_uuid.uuid4())
    files = write_postings(ds_uri.rstrip("/") + f"/_indices/{uid}/", params, keep_docs(p, keep, new_rows), storage_options)
    return uid, files


def extend(
    view: "DatasetView", column: str, entries: List[Dict[str, Any]], fragments: Sequence[int], merge: bool, retrain: bool = False
) -> Tuple[str, List[Dict[str, Any]]]:
    """One new segment holding the documents of every segment in `entries` (one INVERTED
    index) and those of the rows of `fragments` (added since), as ``optimize_indices`` merges
    them; with `retrain`, or for a delta segment (``merge=False``: pylance's
    ``num_indices_to_merge=0``, searched together with the others), the rows of `fragments`
    only, with the index's params. In bounded memory: the segments' partitions are copied one
    at a time, each a partition of the new segment (queries score with the statistics of all
    partitions together, so the answers are those of one partition), and the new rows are
    read a scan batch at a time into partitions of their own (see :func:`build_partitions`).
    Files of a merge that fails are removed."""
    import uuid as _uuid

    from lancepy._ops import btree as _btree

    from lancepy.file import LanceFileReader

    layouts = [(str(e["uuid"]), segment_layout(view.uri.rstrip("/") + f"/_indices/{e['uuid']}/", view.storage_options))
               for e in entries]
    params = layouts[0][1][0]
    if any(layout[0] != params for _, layout in layouts[1:]):
        raise NotSupportedError("optimize_indices: INVERTED segments with different analyzer params")
    if retrain or not merge:  # (a delta segment, or a rebuild: the rows of `fragments` only)
        layouts = []
    uid = str(_uuid.uuid4())
    base = view.uri.rstrip("/") + f"/_indices/{uid}/"
    names: List[str] = []
    files: List[Dict[str, Any]] = []
    try:
        pid = 0
        want = _layout(params)
        for old, (_, partitions, tail_varint, block_size) in layouts:
            old_base = view.uri.rstrip("/") + f"/_indices/{old}/"
            md = _metadata_dict(LanceFileReader(old_base + METADATA, view.storage_options))
            # Partitions laid out as the new segment declares are copied as they are (a partition's
            # files name no partition id and score with their own statistics); others are decoded
            # and written again in the new layout.
            as_is = {k: md.get(k) for k in _LAYOUT_KEYS} == {k: want.get(k) for k in _LAYOUT_KEYS}
            for p in partitions:
                names.extend(f"part_{pid}_{kind}.lance" for kind in ("invert", "tokens", "docs"))
                if as_is:
                    files.extend(_copy_files(view.store, f"_indices/{old}/part_{p}_", f"_indices/{uid}/part_{pid}_"))
                else:
                    files.extend(_copy_partition(old_base, p, tail_varint, block_size, base, pid, params, view.storage_options))
                pid += 1
        # (documents are row ids where the index holds them, as its own)
        batches = (_btree.column_batches(view, column, list(fragments), row_ids=view.stable_row_ids, batch_rows=TEXT_BATCH_ROWS)
                   if fragments else iter(()))
        files.extend(build_partitions(base, params, batches, None, view.storage_options, written=names, first_partition=pid))
    except BaseException:
        view.store.delete([f"_indices/{uid}/{n}" for n in names])
        raise
    return uid, files


def _copy_files(store: Any, old_prefix: str, new_prefix: str) -> List[Dict[str, Any]]:
    """A partition's three files copied byte for byte, one at a time, to `new_prefix`."""
    files = []
    for kind in ("invert", "tokens", "docs"):
        data = store.read(f"{old_prefix}{kind}.lance")
        store.put(f"{new_prefix}{kind}.lance", data)
        files.append({"path": f"{new_prefix.rsplit('/', 1)[1]}{kind}.lance", "size_bytes": len(data)})
        del data
    return files


def _copy_partition(
    old_base: str, old_pid: int, tail_varint: bool, block_size: int, base: str, pid: int, params: Dict[str, Any],
    storage_options: Any,
) -> List[Dict[str, Any]]:
    """Partition `old_pid` of the segment under `old_base` written again as partition `pid`
    under `base` (only it in memory, for as long as this call)."""
    part = Partition(old_base, old_pid, tail_varint, block_size, storage_options)
    postings = partition_postings(part, bool(params.get("with_position")))
    return write_partition(base, pid, params, postings, storage_options)


def _raw(a: "np.ndarray") -> bytes:
    """The bytes under the array `a` (the bytes object it views when it views one whole)."""
    base = a.base
    if isinstance(base, bytes) and len(base) == a.nbytes and a.dtype.byteorder in "<|=":
        return base
    return a.tobytes()
