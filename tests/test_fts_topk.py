"""Top-k full-text search with block-max pruning: on seeded corpora full of tied scores, a
query with ``limit`` returns exactly the first rows of the same query without a limit
(scores bit for bit, ties by row address), and pylance 14.0.2's rows and scores; with
prefilters, postfilters, deletions, offsets and phrase queries. A dataset object moved to a
new version answers as a freshly opened one (the per-index state cached for queries belongs
to the version)."""

from __future__ import annotations

import random

import lance
import numpy as np
import pyarrow as pa
import pytest
from test_fts import WORDS, assert_same, corpus

import lancepy
from lancepy import query as lq


def _build(tmp_path, docs, who, **options):
    path = tmp_path / who
    lance.write_dataset(pa.table({"id": list(range(len(docs))), "text": docs}), str(path), max_rows_per_file=1500)
    (lance if who == "pylance" else lancepy).dataset(str(path)).create_scalar_index("text", "INVERTED", **options)
    return path


def _exact_prefix(ds, kw, limit, offset=0):
    """The limited query's rows are the unlimited query's rows `offset:offset+limit`, scores
    bit for bit (the unlimited query scores every document)."""
    full = ds.to_table(**kw, with_row_address=True)
    part = ds.to_table(**kw, with_row_address=True, limit=limit, offset=offset)
    want = full.slice(offset, limit)
    assert part.column("_rowaddr").to_pylist() == want.column("_rowaddr").to_pylist(), kw
    assert part.column("_score").to_pylist() == want.column("_score").to_pylist(), kw


def _tied_corpus(seed: int, n: int) -> list:
    """Short documents over few words: many documents share a score."""
    rng = random.Random(seed)
    few = WORDS[:12]
    return [" ".join(rng.choices(few, k=rng.randint(1, 4))) if rng.random() > 0.02 else None for _ in range(n)]


@pytest.mark.parametrize("kind", ["zipf", "tied"])
def test_match_top_k_is_exact(tmp_path, kind):
    """Random match queries (OR and AND, repeated tokens) with limits, offsets, filters
    before and after, and deleted rows: the top k equal the exhaustive ranking's first k,
    and pylance's rows and scores."""
    docs = corpus(41, 4000, 1, 80) if kind == "zipf" else _tied_corpus(42, 4000)
    pl = _build(tmp_path, docs, "pylance")
    lp = _build(tmp_path, docs, "lancepy")
    for path in (pl, lp):
        lance.dataset(str(path)).delete("id % 17 = 3")
    rng = random.Random(43)
    for _ in range(40):
        text = " ".join(rng.choices(WORDS[:30], k=rng.randint(1, 4)))
        op = rng.choice(["OR", "OR", "AND"])
        kw = dict(columns=["id"])
        limit = rng.choice([1, 2, 5, 10, 37])
        mod, rem = rng.randint(2, 6), rng.randint(0, 1)
        if rng.random() < 0.4:
            kw["filter"] = f"id % {mod} = {rem}"
            kw["prefilter"] = rng.random() < 0.5
        ours = lancepy.dataset(str(lp))
        q = lq.MatchQuery(text, "text", operator=lq.FullTextOperator(op))
        if "filter" not in kw or kw["prefilter"]:
            _exact_prefix(ours, dict(kw, full_text_query=q), limit, offset=rng.choice([0, 0, 3]))
        else:  # (a postfilter: the best `limit` rows, then those passing the filter)
            top = ours.to_table(full_text_query=q, columns=["id"]).slice(0, limit)
            want = [(i, s) for i, s in zip(top.column("id").to_pylist(), top.column("_score").to_pylist()) if i % mod == rem]
            got = ours.to_table(full_text_query=q, limit=limit, **kw)
            assert list(zip(got.column("id").to_pylist(), got.column("_score").to_pylist())) == want
            continue  # (pylance's rows near the cut may differ: scores a few ulps apart order either way)
        pq = lance.query.MatchQuery(text, "text", operator=lance.query.FullTextOperator(op))
        ref = lance.dataset(str(pl)).to_table(full_text_query=pq, limit=limit, **kw)
        for path in (pl, lp):
            assert_same(ref, lancepy.dataset(str(path)).to_table(full_text_query=q, limit=limit, **kw))


def test_phrase_top_k_is_exact(tmp_path):
    """Phrase queries (slop 0-2) with limits and prefilters: the top k equal the exhaustive
    ranking's first k, and pylance's rows and scores."""
    rng = random.Random(44)
    docs = corpus(45, 3000, 2, 60)
    pl = _build(tmp_path, docs, "pylance", with_position=True)
    lp = _build(tmp_path, docs, "lancepy", with_position=True)
    for _ in range(30):
        d = rng.choice([d for d in docs if d]).replace(",", " ").replace("!", " ").replace("-", " ").split()
        at = rng.randrange(len(d))
        text, slop = " ".join(d[at:at + rng.randint(2, 3)]), rng.choice([0, 0, 1, 2])
        limit = rng.choice([1, 3, 10])
        kw = dict(columns=["id"])
        if rng.random() < 0.3:
            kw.update(filter=f"id % {rng.randint(2, 4)} = 0", prefilter=True)
        q = lq.PhraseQuery(text, "text", slop=slop)
        _exact_prefix(lancepy.dataset(str(lp)), dict(kw, full_text_query=q), limit)
        ref = lance.dataset(str(pl)).to_table(full_text_query=lance.query.PhraseQuery(text, "text", slop=slop), limit=limit, **kw)
        for path in (pl, lp):
            assert_same(ref, lancepy.dataset(str(path)).to_table(full_text_query=q, limit=limit, **kw))


def test_non_positive_boost_is_not_pruned(tmp_path):
    """A boost of 0 or less reorders the scores: the best rows are still the exhaustive
    ranking's first ones."""
    lp = _build(tmp_path, corpus(46, 800, 1, 30), "lancepy")
    ds = lancepy.dataset(str(lp))
    for boost in (0.0, -1.5):
        q = lq.MatchQuery("dog cat", "text", boost=boost)
        _exact_prefix(ds, dict(full_text_query=q, columns=["id"]), 5)


def test_moved_dataset_answers_as_fresh(tmp_path):
    """The same LanceDataset object, moved to new versions (rows deleted, rows added and
    indexed, the index replaced), answers full-text queries as a freshly opened one."""
    docs = corpus(47, 1200, 1, 40)
    lp = _build(tmp_path, docs, "lancepy", with_position=True)
    ds = lancepy.dataset(str(lp))
    queries = [dict(full_text_query="dog cat", limit=10), dict(full_text_query=lq.PhraseQuery("the dog", "text"), limit=5),
               dict(full_text_query="quick", limit=3, filter="id > 100", prefilter=True)]

    def same_as_fresh():
        fresh = lancepy.dataset(str(lp))
        for kw in queries:
            a, b = ds.to_table(columns=["id"], **kw), fresh.to_table(columns=["id"], **kw)
            assert a.equals(b), kw

    same_as_fresh()
    ds.delete("id % 3 = 0")
    same_as_fresh()
    ds.insert(pa.table({"id": [5000, 5001], "text": ["dog cat dog cat the dog", "quick quick"]}))
    same_as_fresh()
    ds.optimize.optimize_indices()
    same_as_fresh()
    ds.create_scalar_index("text", "INVERTED", with_position=True, remove_stop_words=False, replace=True)
    same_as_fresh()
    old, fresh_v2 = ds.checkout_version(2), lancepy.dataset(str(lp), version=2)  # (the first indexed version)
    for kw in queries:
        assert old.to_table(columns=["id"], **kw).equals(fresh_v2.to_table(columns=["id"], **kw))
    assert np.all(np.diff(ds.to_table(full_text_query="dog", columns=["id"], limit=50).column("_score").to_numpy()) <= 0)
