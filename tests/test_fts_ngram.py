"""INVERTED indices with the ``ngram`` tokenizer (substring search): lancepy builds the same
posting lists as pylance 14 (the same n-grams of the whole text, spaces included, folded and
lower-cased after the split, all at position 0) for its options, and each library searches
the other's index with the same rows and scores, on seeded random substring queries."""

from __future__ import annotations

import random
import shutil

import lance
import pyarrow as pa
import pytest
from test_fts import WORDS, assert_same, corpus

import lancepy
from lancepy._ops import inverted

ODD = ["Hello World", "héllo wörld café", "ÀÉÎÕÜ àéîõü", "ab", "", None, "日本語のテキスト", "x" * 60, "tab\tand\nnewline", "  spaced  "]

OPTIONS = [
    {},
    {"with_position": True},
    {"min_ngram_length": 2, "max_ngram_length": 4},
    {"min_ngram_length": 1, "max_ngram_length": 5, "prefix_only": True},
    {"lower_case": False, "ascii_folding": False},
    {"stem": True, "remove_stop_words": True},
]


def _postings(path):
    uid = lance.dataset(path).list_indices()[0]["uuid"]
    params, p = inverted.read_postings(path, uid)
    by_token = {}
    for i, (t, doc, f) in enumerate(zip(p.tok, p.doc, p.freq)):
        by_token.setdefault(p.vocab[t], []).append((int(p.rows[doc]), int(f)))
    positions = None if p.positions is None else sorted(set(int(x) for x in p.positions))
    return params, by_token, positions


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_same_postings_as_pylance(tmp_path, options):
    docs = ODD + corpus(5, 300, 1, 12)
    got = {}
    for who, lib in (("pylance", lance), ("lancepy", lancepy)):
        path = str(tmp_path / who)
        lance.write_dataset(pa.table({"id": list(range(len(docs))), "text": docs}), path)
        lib.dataset(path).create_scalar_index("text", "INVERTED", base_tokenizer="ngram", **options)
        got[who] = _postings(path)
    assert got["lancepy"] == got["pylance"]
    if options.get("with_position"):
        assert got["lancepy"][2] == [0]


@pytest.mark.parametrize("builder", ["pylance", "lancepy"])
def test_substring_queries_match_pylance(tmp_path, builder):
    docs = corpus(9, 2000, 1, 20)
    path = str(tmp_path / builder)
    lance.write_dataset(pa.table({"id": list(range(len(docs))), "text": docs}), path, max_rows_per_file=800)
    (lance if builder == "pylance" else lancepy).dataset(path).create_scalar_index(
        "text", "INVERTED", base_tokenizer="ngram", min_ngram_length=2, max_ngram_length=3
    )
    lance.dataset(path).delete("id % 9 = 2")
    lance.write_dataset(pa.table({"id": [5000, 5001], "text": ["unindexed lance row", "another data row"]}), path, mode="append")
    rng = random.Random(10)
    pl, lp = lance.dataset(path), lancepy.dataset(path)
    fixed = ["anan", "data data", "ininin", "x", "QUICK", "naïve"]  # (repeated n-grams count once, as pylance)
    for i in range(46):
        word = rng.choice(WORDS)
        start = rng.randint(0, max(0, len(word) - 2))
        text = fixed[i] if i < len(fixed) else word[start:start + rng.randint(2, 6)]
        kw = {"columns": ["id"]}
        if rng.random() < 0.5:
            kw["limit"] = rng.choice([3, 10])
        assert_same(pl.to_table(full_text_query=text, **kw), lp.to_table(full_text_query=text, **kw), limited="limit" in kw)


def test_bad_ngram_lengths_are_refused(tmp_path):
    path = str(tmp_path / "d")
    lance.write_dataset(pa.table({"text": ["abc"]}), path)
    for lo, hi in ((0, 3), (4, 2)):
        with pytest.raises(lancepy.exceptions.InvalidArgumentError, match="min_ngram_length"):
            lancepy.dataset(path).create_scalar_index("text", "INVERTED", base_tokenizer="ngram",
                                                       min_ngram_length=lo, max_ngram_length=hi)
    shutil.rmtree(path)
