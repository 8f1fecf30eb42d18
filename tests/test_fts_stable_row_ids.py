"""INVERTED indices of datasets with stable row ids: the index's documents are row ids (not
addresses), so they stay valid when compaction moves rows. pylance's index is searched by
lancepy and lancepy's by pylance, through deletions, compaction, appends left unindexed,
delta segments and merges; seeded random queries compare rows and scores."""

from __future__ import annotations

import random

import lance
import pyarrow as pa
import pytest
from test_fts import WORDS, assert_same, corpus

import lancepy
from lancepy import query as lq


def _dataset(tmp_path, builder, seed):
    lib = lance if builder == "pylance" else lancepy
    path = str(tmp_path / f"{builder}-{seed}")
    docs = corpus(seed, 3000, 1, 30)
    lance.write_dataset(pa.table({"id": list(range(2000)), "text": docs[:2000]}), path,
                        enable_stable_row_ids=True, max_rows_per_file=700)
    lance.dataset(path).delete("id % 11 = 3")
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=1500)  # (rows move: ids stay)
    lib.dataset(path).create_scalar_index("text", "INVERTED", with_position=True)
    lance.dataset(path).delete("id % 17 = 4")
    lance.write_dataset(pa.table({"id": list(range(2000, 2500)), "text": docs[2000:2500]}), path, mode="append")
    lib.dataset(path).optimize.optimize_indices(num_indices_to_merge=0)  # (a delta segment)
    lance.write_dataset(pa.table({"id": list(range(2500, 3000)), "text": docs[2500:]}), path, mode="append")  # (unindexed)
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=100000)
    assert lance.dataset(path).has_stable_row_ids
    return path


def _query(rng):
    text = " ".join(rng.choices(WORDS[:40], k=rng.randint(1, 3)))
    kind = rng.choice(["or", "and", "phrase"])
    if kind == "phrase":
        return lance.query.PhraseQuery(text, "text"), lq.PhraseQuery(text, "text")
    op = "AND" if kind == "and" else "OR"
    return (lance.query.MatchQuery(text, "text", operator=lance.query.FullTextOperator(op)),
            lq.MatchQuery(text, "text", operator=lq.FullTextOperator(op)))


@pytest.mark.parametrize("builder", ["pylance", "lancepy"])
def test_random_queries_match_pylance(tmp_path, builder):
    path = _dataset(tmp_path, builder, 31)
    pl, lp = lance.dataset(path), lancepy.dataset(path)
    rng = random.Random(32)
    for _ in range(40):
        pq, q = _query(rng)
        kw = dict(columns=["id"])
        if rng.random() < 0.5:
            kw["limit"] = rng.choice([1, 5, 20])
        if rng.random() < 0.3:
            kw["filter"], kw["prefilter"] = f"id % {rng.randint(2, 5)} = 1", True
        assert_same(pl.to_table(full_text_query=pq, **kw), lp.to_table(full_text_query=q, **kw), limited="limit" in kw)


def test_merged_by_lancepy_searched_by_pylance(tmp_path):
    path = _dataset(tmp_path, "pylance", 41)
    lancepy.dataset(path).optimize.optimize_indices()  # (merges the segments, indexes the rest)
    segs = [i for i in lance.dataset(path).describe_indices() if "Inverted" in i.type_url]
    assert len(segs) == 1 and segs[0].num_rows_indexed == lance.dataset(path).count_rows()
    rng = random.Random(42)
    for _ in range(20):
        pq, q = _query(rng)
        a = lance.dataset(path).to_table(full_text_query=pq, columns=["id"])
        assert_same(a, lancepy.dataset(path).to_table(full_text_query=q, columns=["id"]), limited=False)
