"""Prefiltered full-text top-k: the filter picks the documents searched (block-max top-k
over the rows that pass, not every match scored and filtered afterwards). Its rows are kept
per version and filter text: many queries with one filter answer as pylance does, and a
dataset object moved to a new version answers as a freshly opened one."""

from __future__ import annotations

import random

import lance
import pyarrow as pa
import pytest
from test_fts import WORDS, assert_same, corpus

import lancepy
from lancepy import query as lq


def _dataset(tmp_path, stable):
    path = str(tmp_path / f"d-{stable}")
    docs = corpus(81, 5000, 2, 40)
    lance.write_dataset(pa.table({"id": list(range(4000)), "g": [i % 7 for i in range(4000)], "text": docs[:4000]}), path,
                        max_rows_per_file=1500, enable_stable_row_ids=stable)
    lance.dataset(path).create_scalar_index("text", "INVERTED", with_position=True)
    lance.write_dataset(pa.table({"id": list(range(4000, 5000)), "g": [i % 7 for i in range(4000, 5000)],
                                  "text": docs[4000:]}), path, mode="append")  # (not indexed)
    lance.dataset(path).delete("id % 13 = 2")
    return path


@pytest.mark.parametrize("stable", [False, True])
def test_one_filter_many_queries(tmp_path, stable):
    path = _dataset(tmp_path, stable)
    pl, lp = lance.dataset(path), lancepy.dataset(path)
    rng = random.Random(82)
    for flt in ("g = 3", "g IN (1, 5) AND id > 700", "text LIKE '%data%'"):
        for _ in range(12):
            text = " ".join(rng.choices(WORDS[:40], k=rng.randint(1, 3)))
            phrase = rng.random() < 0.25
            q = lq.PhraseQuery(text, "text") if phrase else lq.MatchQuery(text, "text")
            pq = lance.query.PhraseQuery(text, "text") if phrase else lance.query.MatchQuery(text, "text")
            kw = dict(filter=flt, prefilter=True, columns=["id"], limit=rng.choice([1, 7, 30]))
            assert_same(pl.to_table(full_text_query=pq, **kw), lp.to_table(full_text_query=q, **kw))


def test_a_new_version_answers_as_a_fresh_dataset(tmp_path):
    path = _dataset(tmp_path, False)
    ds = lancepy.dataset(path)
    kw = dict(full_text_query="data index", filter="g = 3", prefilter=True, columns=["id"], limit=20)
    first = ds.to_table(**kw)
    ds.delete("g = 3 AND id % 2 = 0")  # (rows the cached filter passed)
    after = ds.to_table(**kw)
    assert_same(lancepy.dataset(path).to_table(**kw), after)
    assert_same(lance.dataset(path).to_table(**kw), after)
    assert not set(after["id"].to_pylist()) & {i for i in first["id"].to_pylist() if i % 2 == 0}
