"""The INVERTED build's native partition builder (``FtsPostingsBuilder``: texts analyzed and
inverted batch by batch): on seeded texts with empty and null ones, with and without
positions, fed in batches of random sizes as Arrow arrays or lists, it holds the same
vocabulary, documents and (token, document, frequency) triples as a sort of (token, document)
keys over the whole corpus, and its partition files are byte for byte those the flat path
writes from those triples; bad input is an error."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancepy import _lancepy
from lancepy._ops import fts_analyzer as _fts_analyzer
from lancepy._ops import inverted as _inverted
from lancepy.exceptions import LanceError


def _by_sorting(params, texts, rows):
    """The oracle: the corpus analyzed at once, inverted by sorting (token, document) keys."""
    with_pos = bool(params.get("with_position"))
    vocab, ids, offsets, token_pos = _inverted.Analyzer(params).analyze(texts, with_positions=with_pos)
    lengths = np.diff(offsets)
    has = lengths > 0
    n_docs = max(int(has.sum()), 1)
    key = ids.astype(np.int64) * n_docs + np.repeat(np.cumsum(has) - 1, lengths).astype(np.int64)
    uniq, freq = np.unique(key, return_counts=True)
    pos = np.asarray(token_pos, np.uint32)[np.argsort(key, kind="stable")] if with_pos else None
    return _inverted.Postings(list(vocab), uniq // n_docs, uniq % n_docs, freq, np.asarray(rows, np.uint64)[has],
                              lengths[has], pos)


def _texts(rng):
    words = [f"w{i}" for i in range(int(rng.integers(5, 2000)))] + ["The", "running", "Über", "café"]
    return [None if rng.random() < 0.05 else " ".join(rng.choice(words, int(rng.integers(0, 60))))
            for _ in range(int(rng.integers(1, 3000)))]


def _fed(params, texts, rows, rng):
    builder = _inverted.Analyzer(params).builder()
    at = 0
    while at < len(texts):
        n = int(rng.integers(1, 700))
        chunk = texts[at:at + n]
        values = pa.array(chunk, rng.choice([pa.string(), pa.large_string(), pa.string_view()])) if rng.random() < 0.7 else chunk
        builder.add(values, np.asarray(rows[at:at + n], "<u8").tobytes())
        at += n
    return builder


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_pos", [False, True])
def test_builder_equals_a_sort_of_token_document_keys(tmp_path, seed: int, with_pos: bool) -> None:
    rng = np.random.default_rng(seed)
    texts = _texts(rng)
    rows = np.sort(rng.choice(10 * len(texts), len(texts), replace=False)).astype(np.uint64)
    params = _fts_analyzer.check_params({"with_position": with_pos, "stem": bool(seed % 2), "remove_stop_words": bool(seed % 3),
                                     "ascii_folding": seed % 4 == 1})
    want = _by_sorting(params, texts, rows)
    builder = _fed(params, texts, rows, rng)
    assert builder.vocab() == want.vocab
    assert builder.num_docs == len(want.rows)
    got_rows, got_lens = builder.docs()
    assert np.frombuffer(got_rows, "<u8").tolist() == want.rows.tolist()
    assert np.frombuffer(got_lens, "<u4").tolist() == want.doc_len.tolist()
    assert np.frombuffer(builder.doc_freqs(), "<u4").tolist() == np.bincount(want.tok, minlength=len(want.vocab)).tolist()
    if not len(want.rows):
        return
    # the partition files: those of the flat path, byte for byte
    flat, built = str(tmp_path / "flat") + "/", str(tmp_path / "built") + "/"
    _inverted.write_partition(flat, 0, params, want)
    _inverted.write_partition(built, 0, params, builder)
    for kind in ("invert", "tokens", "docs"):
        assert (tmp_path / "built" / f"part_0_{kind}.lance").read_bytes() == (tmp_path / "flat" / f"part_0_{kind}.lance").read_bytes()
    # and they decode to the oracle's triples and positions
    back = _inverted.partition_postings(_inverted.Partition(built, 0, True, 128, None), with_pos)
    assert back.vocab == want.vocab
    assert back.tok.tolist() == want.tok.tolist()
    assert back.doc.tolist() == want.doc.tolist()
    assert back.freq.tolist() == want.freq.tolist()
    if with_pos:
        assert back.positions.tolist() == want.positions.tolist()


def test_builder_memory_grows_with_its_lists() -> None:
    builder = _inverted.Analyzer(_fts_analyzer.check_params({})).builder()
    assert builder.memory_bytes == 0 and builder.num_docs == 0
    sizes = []
    for i in range(5):
        texts = pa.array([f"a{i} b{j} c{j % 7} d{j % 3}" for j in range(20_000)])
        builder.add(texts, np.arange(i * 20_000, (i + 1) * 20_000, dtype="<u8").tobytes())
        sizes.append(builder.memory_bytes)
    # (8 bytes a (token, document) pair at least: 4 pairs a document)
    assert sizes == sorted(sizes) and sizes[-1] >= 8 * 4 * 100_000
    assert builder.num_docs == 100_000


def test_builder_and_flat_encoder_refuse_bad_input() -> None:
    builder = _inverted.Analyzer(_fts_analyzer.check_params({})).builder()
    with pytest.raises(LanceError, match="row ids"):
        builder.add(pa.array(["a b", "c"]), np.arange(3, dtype="<u8").tobytes())
    with pytest.raises(LanceError):
        builder.add(pa.array(["a b"]), b"\x00" * 5)
    with pytest.raises(LanceError, match="strings"):
        builder.add(pa.array([1, 2]), np.arange(2, dtype="<u8").tobytes())
    builder.add(["x y", "y"], np.arange(2, dtype="<u8").tobytes())  # (two tokens)
    with pytest.raises(LanceError, match="idf"):
        builder.encode(np.ones(1, "<f4").tobytes(), 128)
    with pytest.raises(LanceError, match="block size"):
        builder.encode(np.ones(2, "<f4").tobytes(), 100)
    # (the lists are let go as they are encoded: once only)
    done = _inverted.Analyzer(_fts_analyzer.check_params({})).builder()
    done.add(["x y"], np.arange(1, dtype="<u8").tobytes())
    assert pa.record_batch(done.encode(np.ones(2, "<f4").tobytes(), 128)).num_rows == 2
    for again in (lambda: done.encode(np.ones(2, "<f4").tobytes(), 128), done.doc_freqs,
                  lambda: done.add(["z"], np.arange(1, dtype="<u8").tobytes())):
        with pytest.raises(LanceError, match="encoded already"):
            again()
    u32 = (lambda *v: np.array(v, "<u4").tobytes())
    ok = (np.array([0, 2], "<u8").tobytes(), u32(0, 1), u32(1, 1), None, u32(1, 1), np.ones(1, "<f4").tobytes(), 128)
    assert pa.record_batch(_lancepy.fts_encode_partition(*ok)).num_rows == 1
    for i, bad in ((0, np.array([0, 3], "<u8").tobytes()), (1, u32(0, 5)), (3, u32(0)), (5, b""), (1, b"\x00" * 3)):
        args = list(ok)
        args[i] = bad
        with pytest.raises(LanceError):
            _lancepy.fts_encode_partition(*args)
