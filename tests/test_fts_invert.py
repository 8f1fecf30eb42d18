"""The INVERTED build's inversion (``_lancepy.fts_invert``, a counting sort by token): the same
(token, document, frequency) triples and positions as a sort of (token, document) keys, on
seeded texts with empty and null ones, with and without positions; bad input is an error."""

from __future__ import annotations

import numpy as np
import pytest

from lancepy import _lancepy
from lancepy._ops import inverted as _inverted
from lancepy.exceptions import LanceError


def _by_sorting(ids: np.ndarray, offsets: np.ndarray, token_pos: np.ndarray, with_pos: bool):
    lengths = np.diff(offsets)
    has = lengths > 0
    n_docs = max(int(has.sum()), 1)
    key = ids.astype(np.int64) * n_docs + np.repeat(np.cumsum(has) - 1, lengths).astype(np.int64)
    uniq, freq = np.unique(key, return_counts=True)
    pos = np.asarray(token_pos, np.uint32)[np.argsort(key, kind="stable")] if with_pos else None
    return uniq // n_docs, uniq % n_docs, freq, pos


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_pos", [False, True])
def test_inversion_equals_a_sort_of_token_document_keys(seed: int, with_pos: bool) -> None:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(int(rng.integers(5, 2000)))]
    texts = [None if rng.random() < 0.05 else " ".join(rng.choice(words, int(rng.integers(0, 60))))
             for _ in range(int(rng.integers(1, 3000)))]
    params = _inverted.check_params({"with_position": with_pos, "stem": bool(seed % 2), "remove_stop_words": bool(seed % 3)})
    vocab, ids, offsets, token_pos = _inverted.Analyzer(params).analyze(texts, with_positions=with_pos)
    tok, doc, freq, pos = _by_sorting(ids, offsets, token_pos, with_pos)
    got = _inverted._new_docs(params, texts, np.arange(len(texts), dtype=np.uint64) + 7)
    assert got.tok.tolist() == tok.tolist()
    assert got.doc.tolist() == doc.tolist()
    assert got.freq.tolist() == freq.tolist()
    lengths = np.diff(offsets)
    assert got.rows.tolist() == (np.arange(len(texts)) + 7)[lengths > 0].tolist()
    assert got.doc_len.tolist() == lengths[lengths > 0].tolist()
    if with_pos:
        assert got.positions.tolist() == pos.tolist()
    else:
        assert got.positions is None


def test_inversion_refuses_bad_input() -> None:
    ids = np.array([0, 1, 0], "<u4").tobytes()
    offsets = np.array([0, 3], "<u8").tobytes()
    for args in (
        (ids, offsets, 1, None),  # (an id past the vocabulary)
        (ids, np.array([0, 4], "<u8").tobytes(), 2, None),  # (offsets past the ids)
        (ids, np.array([2, 1, 3], "<u8").tobytes(), 2, None),  # (offsets descending)
        (ids, offsets, 2, np.array([0], "<u4").tobytes()),  # (positions of another length)
        (ids[:5], offsets, 2, None),  # (not whole u32s)
    ):
        with pytest.raises(LanceError):
            _lancepy.fts_invert(*args)
    tok, doc, freq, pos = _lancepy.fts_invert(ids, offsets, 2, None)
    assert np.frombuffer(freq, "<u4").tolist() == [2, 1] and pos == b""
