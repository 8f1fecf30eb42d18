"""An INVERTED index of several segments (pylance's delta segments: ``optimize_indices(
num_indices_to_merge=0)`` indexes only the rows added since, in a segment of its own): both
libraries search all segments together, with BM25 statistics over all of them, and give the
same rows and scores; lancepy writes such delta segments and pylance searches them; merging
them later (``optimize_indices()``) changes no result. Seeded random queries (match OR / AND,
phrases, boolean, limits, filters, deletions) compare the two libraries."""

from __future__ import annotations

import random
import shutil

import lance
import pyarrow as pa
import pytest
from test_fts import WORDS, assert_same, corpus

import lancepy
from lancepy import query as lq


def _table(docs, start):
    return pa.table({"id": list(range(start, start + len(docs))), "text": docs})


def _segmented(tmp_path, who, seed, *, with_position=True, parts=3, n=600):
    """A dataset indexed in `parts` segments by `who` (one per append after the first),
    with one more fragment left unindexed."""
    lib = lance if who == "pylance" else lancepy
    path = str(tmp_path / f"{who}-{seed}")
    docs = corpus(seed, n * (parts + 1), 1, 40)
    lance.write_dataset(_table(docs[:n], 0), path)
    lib.dataset(path).create_scalar_index("text", "INVERTED", with_position=with_position)
    for i in range(1, parts):
        lance.write_dataset(_table(docs[i * n:(i + 1) * n], i * n), path, mode="append")
        lib.dataset(path).optimize.optimize_indices(num_indices_to_merge=0)
    lance.write_dataset(_table(docs[parts * n:], parts * n), path, mode="append")  # (not indexed)
    return path


def _segments(path):
    return [i for i in lance.dataset(path).list_indices() if i["type"] == "Inverted"]


@pytest.mark.parametrize("writer", ["pylance", "lancepy"])
def test_delta_segments_are_written_and_searched_together(tmp_path, writer):
    path = _segmented(tmp_path, writer, 7)
    segs = _segments(path)
    assert len(segs) == 3 and len({s["name"] for s in segs}) == 1
    assert [sorted(s["fragment_ids"]) for s in segs] == [[0], [1], [2]]
    for text in ["data", "index search", "lance dog cat", "running"]:
        a = lance.dataset(path).to_table(full_text_query=text, with_row_id=True)
        b = lancepy.dataset(path).to_table(full_text_query=text, with_row_id=True)
        assert_same(a, b, limited=False)
        assert set(b["id"].to_pylist()) & set(range(600, 1800)), text  # (rows of the later segments)


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("writer", ["pylance", "lancepy"])
def test_random_queries_match_pylance(tmp_path, writer, parts):
    """With `parts` 1, one segment: rows of the fragment the index does not cover are scored
    over the rows a prefilter keeps (pylance's flat search reads only those)."""
    path = _segmented(tmp_path, writer, 11, parts=parts)
    lance.dataset(path).delete("id % 13 = 5")
    pl, lp = lance.dataset(path), lancepy.dataset(path)
    rng = random.Random(12)
    for _ in range(60):
        text = " ".join(rng.choices(WORDS[:40], k=rng.randint(1, 3)))
        kind = rng.choice(["or", "and", "phrase", "bool"])
        if kind == "phrase":
            pq, q = lance.query.PhraseQuery(text, "text"), lq.PhraseQuery(text, "text")
        elif kind == "bool":
            other = rng.choice(WORDS[:40])
            pq = lance.query.BooleanQuery([
                (lance.query.Occur.SHOULD, lance.query.MatchQuery(text, "text")),
                (lance.query.Occur.MUST_NOT, lance.query.MatchQuery(other, "text")),
            ])
            q = lq.BooleanQuery([(lq.Occur.SHOULD, lq.MatchQuery(text, "text")), (lq.Occur.MUST_NOT, lq.MatchQuery(other, "text"))])
        else:
            op = "AND" if kind == "and" else "OR"
            pq = lance.query.MatchQuery(text, "text", operator=lance.query.FullTextOperator(op))
            q = lq.MatchQuery(text, "text", operator=lq.FullTextOperator(op))
        kw = dict(columns=["id"])
        if rng.random() < 0.5:
            kw["limit"] = rng.choice([1, 5, 10, 50])
        if rng.random() < 0.3:
            kw["filter"], kw["prefilter"] = f"id % {rng.randint(2, 5)} = 0", True
        assert_same(pl.to_table(full_text_query=pq, **kw), lp.to_table(full_text_query=q, **kw), limited="limit" in kw)


def test_merged_segments_equal_one_index_of_every_row(tmp_path):
    """``optimize_indices(num_indices_to_merge=k)`` merges the last k segments (and indexes the
    fragment none covered):
    the same results as an index built over every row at once, in both libraries."""
    path = _segmented(tmp_path, "lancepy", 21)
    merged, fresh = str(tmp_path / "merged"), str(tmp_path / "fresh")
    shutil.copytree(path, merged)
    shutil.copytree(path, fresh)
    lancepy.dataset(merged).optimize.optimize_indices(num_indices_to_merge=len(_segments(merged)))
    assert len(_segments(merged)) == 1
    lancepy.dataset(fresh).create_scalar_index("text", "INVERTED", with_position=True, replace=True)
    for text in ["data index", "quick lazy dog", "searching"]:
        want = lancepy.dataset(fresh).to_table(full_text_query=text, with_row_id=True)
        assert_same(want, lancepy.dataset(merged).to_table(full_text_query=text, with_row_id=True), limited=False)
        assert_same(want, lance.dataset(merged).to_table(full_text_query=text, with_row_id=True), limited=False)


def test_segments_analyzed_differently_are_refused(tmp_path):
    """Segments built with other analyzer options cannot be scored together: a clear error,
    not mixed scores."""
    from lancepy._ops import inverted

    docs = corpus(3, 400, 1, 20)
    bases = []
    for lower in (True, False):
        path = str(tmp_path / f"lower-{lower}")
        lance.write_dataset(_table(docs, 0), path)
        lance.dataset(path).create_scalar_index("text", "INVERTED", lower_case=lower)
        bases.append(f"{path}/_indices/{_segments(path)[0]['uuid']}/")
    assert inverted.InvertedSegment(bases[:1]).num_docs == inverted.InvertedSegment(bases[1:]).num_docs
    with pytest.raises(lancepy.exceptions.NotSupportedError, match="analyzed differently"):
        inverted.InvertedSegment(bases)
