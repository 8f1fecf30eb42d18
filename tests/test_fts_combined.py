"""``CombinedFieldsQuery`` (BM25F over several columns taken as one field), scored as
pylance 14 scores it: seeded random queries (weights, OR / AND, repeated terms, limits,
prefilters) over two text columns of different lengths with nulls and deletions, on indices
built by either library; pylance's errors for bad weights and columns."""

from __future__ import annotations

import random

import lance
import pyarrow as pa
import pytest
from test_fts import WORDS, assert_same, corpus

import lancepy
from lancepy import query as lq


def _dataset(tmp_path, builder, seed, n=3000):
    lib = lance if builder == "pylance" else lancepy
    path = str(tmp_path / f"{builder}-{seed}")
    rng = random.Random(seed)
    titles = [t if rng.random() > 0.2 else None for t in corpus(seed, n, 1, 6)]
    bodies = [b if rng.random() > 0.1 else None for b in corpus(seed + 1, n, 5, 60)]
    lance.write_dataset(pa.table({"id": list(range(n)), "title": titles, "body": bodies}), path, max_rows_per_file=1200)
    for col in ("title", "body"):
        lib.dataset(path).create_scalar_index(col, "INVERTED")
    lance.dataset(path).delete("id % 7 = 3")
    return path


@pytest.mark.parametrize("builder", ["pylance", "lancepy"])
def test_random_combined_queries_match_pylance(tmp_path, builder):
    path = _dataset(tmp_path, builder, 51)
    pl, lp = lance.dataset(path), lancepy.dataset(path)
    rng = random.Random(52)
    for _ in range(60):
        words = rng.choices(WORDS[:45], k=rng.randint(1, 4))
        text = " ".join(words + ([words[0]] if rng.random() < 0.2 else []))
        cols = rng.choice([["title", "body"], ["body", "title"], ["body"]])
        boosts = None if rng.random() < 0.4 else [rng.choice([1.0, 1.5, 2.0, 7.0]) for _ in cols]
        op = rng.choice(["OR", "OR", "AND"])
        kw = {"columns": ["id"]}
        if rng.random() < 0.5:
            kw["limit"] = rng.choice([1, 10, 25])
        if rng.random() < 0.3:
            kw["filter"], kw["prefilter"] = f"id % {rng.randint(2, 4)} = 0", True
        pq = lance.query.CombinedFieldsQuery(text, cols, boosts=boosts, operator=lance.query.FullTextOperator(op))
        q = lq.CombinedFieldsQuery(text, cols, boosts=boosts, operator=lq.FullTextOperator(op))
        assert_same(pl.to_table(full_text_query=pq, **kw), lp.to_table(full_text_query=q, **kw), limited="limit" in kw)


def test_combined_inside_boolean_and_plan(tmp_path):
    path = _dataset(tmp_path, "lancepy", 61, n=800)
    combined = ("data index", ["title", "body"])
    pq = lance.query.BooleanQuery([
        (lance.query.Occur.SHOULD, lance.query.CombinedFieldsQuery(*combined)),
        (lance.query.Occur.MUST_NOT, lance.query.MatchQuery("lance", "body")),
    ])
    q = lq.BooleanQuery([(lq.Occur.SHOULD, lq.CombinedFieldsQuery(*combined)), (lq.Occur.MUST_NOT, lq.MatchQuery("lance", "body"))])
    assert_same(lance.dataset(path).to_table(full_text_query=pq, columns=["id"]),
                lancepy.dataset(path).to_table(full_text_query=q, columns=["id"]), limited=False)
    plan = lancepy.dataset(path).scanner(full_text_query=lq.CombinedFieldsQuery(*combined)).explain_plan()
    assert "CombinedFieldsQuery: columns=[title, body], query=data index" in plan


def test_bad_combined_queries(tmp_path):
    path = str(tmp_path / "d")
    lance.write_dataset(pa.table({"id": [1, 2], "title": ["a b", "c"], "body": ["x", "y"], "other": ["p", "q"]}), path)
    for col in ("title", "body"):
        lance.dataset(path).create_scalar_index(col, "INVERTED")
    ds = lancepy.dataset(path)
    for boosts, match in (([0.5, 1.0], "finite value in"), ([1.0], "number of boosts"), ([float("inf"), 1.0], "finite value in")):
        with pytest.raises(lancepy.exceptions.InvalidArgumentError, match=match):
            ds.to_table(full_text_query=lq.CombinedFieldsQuery("a", ["title", "body"], boosts=boosts))
        with pytest.raises(ValueError):  # (pylance refuses the same)
            lance.dataset(path).to_table(full_text_query=lance.query.CombinedFieldsQuery("a", ["title", "body"], boosts=boosts))
    # pylance's refusals, in its order: a column that does not exist or is not text, then no
    # column with an index
    for cols, err, match in (
        (["other"], lancepy.exceptions.InvalidArgumentError, "requires an inverted index on at least one"),
        (["title", "zz"], lancepy.exceptions.ColumnNotFoundError, "'zz' does not exist"),
        (["zz"], lancepy.exceptions.ColumnNotFoundError, "'zz' does not exist"),
        (["id", "title"], lancepy.exceptions.InvalidArgumentError, "'id' must be strings"),
    ):
        with pytest.raises(err, match=match):
            ds.to_table(full_text_query=lq.CombinedFieldsQuery("a", cols))
        with pytest.raises(ValueError):
            lance.dataset(path).to_table(full_text_query=lance.query.CombinedFieldsQuery("a", cols))


def _random_queries(pl, lp, seed, columns, n=40):
    rng = random.Random(seed)
    for _ in range(n):
        words = rng.choices(WORDS[:45], k=rng.randint(1, 4))
        text = " ".join(words + ([words[0]] if rng.random() < 0.2 else []))
        cols = rng.choice(columns)
        boosts = None if rng.random() < 0.4 else [rng.choice([1.0, 1.5, 2.0, 7.0]) for _ in cols]
        op = rng.choice(["OR", "OR", "AND"])
        kw = {"columns": ["id"]}
        if rng.random() < 0.5:
            kw["limit"] = rng.choice([1, 10, 25])
        if rng.random() < 0.3:
            kw["filter"], kw["prefilter"] = f"id % {rng.randint(2, 4)} = 0", True
        pq = lance.query.CombinedFieldsQuery(text, cols, boosts=boosts, operator=lance.query.FullTextOperator(op))
        q = lq.CombinedFieldsQuery(text, cols, boosts=boosts, operator=lq.FullTextOperator(op))
        assert_same(pl.to_table(full_text_query=pq, **kw), lp.to_table(full_text_query=q, **kw), limited="limit" in kw)


@pytest.mark.parametrize("builder,seed,stable", [("pylance", 71, False), ("lancepy", 71, False), ("pylance", 72, False),
                                                  ("lancepy", 72, False), ("pylance", 73, True), ("lancepy", 74, True)])
def test_unindexed_column_and_fragments_as_pylance(tmp_path, builder, seed, stable):
    """A column without an INVERTED index (pylance scores its rows flat, with the indexed
    column's analyzer) and fragments appended after the indices were built (flat, their
    statistics added to the index's), deleted rows among them, with and without stable row
    ids; scores within 1e-5 and the same best rows as pylance."""
    lib = lance if builder == "pylance" else lancepy
    path = str(tmp_path / f"{builder}-{seed}")
    rng = random.Random(seed)

    def table(start, n):
        return pa.table({
            "id": list(range(start, start + n)),
            "title": [t if rng.random() > 0.2 else None for t in corpus(seed + start, n, 1, 6)],
            "body": [b if rng.random() > 0.1 else None for b in corpus(seed + start + 1, n, 5, 40)],
            "note": corpus(seed + start + 2, n, 0, 12),
            "tags": [None if rng.random() < 0.1 else rng.choices(WORDS[:30], k=rng.randint(0, 3)) for _ in range(n)],
        })

    lance.write_dataset(table(0, 1500), path, max_rows_per_file=600, enable_stable_row_ids=stable)
    if stable:  # (rows moved by a compaction: their row ids no longer their addresses)
        lance.dataset(path).delete("id % 17 = 1")
        lance.dataset(path).optimize.compact_files(target_rows_per_fragment=1000)
    lib.dataset(path).create_scalar_index("title", "INVERTED", stem=rng.random() < 0.5)
    lib.dataset(path).create_scalar_index("body", "INVERTED", stem=lance.dataset(path).describe_indices()[0].details["stem"])
    lance.dataset(path).delete("id % 11 = 4")
    pl, lp = lance.dataset(path), lancepy.dataset(path)
    # a column without an index, a list column without one
    _random_queries(pl, lp, seed, [["title", "note"], ["note", "body"], ["note", "title", "body"], ["body", "tags"]])
    # rows appended after: fragments no index covers
    lance.write_dataset(table(1500, 700), path, mode="append", max_rows_per_file=400)
    lance.dataset(path).delete("id % 13 = 5")
    pl, lp = lance.dataset(path), lancepy.dataset(path)
    _random_queries(pl, lp, seed + 1, [["title", "body"], ["body"], ["note", "title"], ["tags", "body", "note"]])
