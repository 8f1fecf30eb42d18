"""Full-text search (INVERTED index): lancepy queries indices pylance 14.0.2 builds, and
pylance queries lancepy's, with the same rows and BM25 scores; seeded random corpora and
queries compare the two libraries."""

from __future__ import annotations

import random

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import NotSupportedError
from lancepy.query import FullTextOperator, MatchQuery, PhraseQuery

DOCS = [
    "the quick brown fox jumps over the lazy dog",
    "Hello world, hello lance!",
    "a dog barks",
    None,
    "fox and dog",
    "",
    "Quick quick QUICK",
    "dog dog dog cat",
    "cats and dogs",
    "Café crème brûlée, naïve façade",
    "the a an",
    "Ünïcödé ÅNGSTRÖM, ﬁnance straße ǆungla hyphen-ated under_score 4.5 日本語 テキスト",
]

WORDS = (
    "run running runs ran runner dog dogs cat cats the a an of and is was were be been "
    "quick quickly fast faster fastest jump jumped jumping lazy laziness happy happiness "
    "data database databases index indexes indexing search searched searching lance "
    "vector vectors column columns row rows table tables query queries fox foxes "
    "connect connected connection connections river rivers city cities Paris London "
    "café naïve résumé über straße ENGLISH Mixed CASE x y z 42 2024 3d a1b2"
).split()


def corpus(seed: int, n: int, lo: int = 1, hi: int = 30) -> list:
    """`n` documents of Zipf-distributed words (some null / empty), seeded."""
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(WORDS))]
    docs = []
    for _ in range(n):
        r = rng.random()
        if r < 0.02:
            docs.append(None)
        elif r < 0.04:
            docs.append("")
        else:
            words = rng.choices(WORDS, weights, k=rng.randint(lo, hi))
            sep = rng.choice([" ", ", ", " - ", "! ", "  "])
            docs.append(sep.join(words))
    return docs


def queries(seed: int, n: int) -> list:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(1, 4))) for _ in range(n)]


def both(path, **kw):
    """pylance's and lancepy's ``to_table(**kw)`` of the dataset at `path`."""
    a = lance.dataset(str(path)).to_table(**kw)
    b = lancepy.dataset(str(path)).to_table(**kw)
    return a, b


def assert_same(a: pa.Table, b: pa.Table, limited: bool = True) -> None:
    """Same rows, best first, with scores within float tolerance. pylance orders rows of
    equal score arbitrarily (and, at a limit, keeps an arbitrary few of them): rows may
    differ only where their score ties the last one kept."""
    assert a.column_names == b.column_names
    sa = np.asarray(a.column("_score").to_numpy(), np.float64)
    sb = np.asarray(b.column("_score").to_numpy(), np.float64)
    np.testing.assert_allclose(sb, sa, rtol=1e-5, atol=1e-6)
    assert np.all(np.diff(sb) <= 0)
    others = [c for c in a.column_names if c != "_score"]
    da = dict(zip(map(str, a.select(others).to_pylist()), sa))
    db = dict(zip(map(str, b.select(others).to_pylist()), sb))
    cut = sa[-1] if len(sa) and limited else -np.inf
    for key in set(da) | set(db):
        if key in da and key in db:
            assert abs(da[key] - db[key]) <= 1e-5 * max(1.0, abs(da[key])), key
        else:
            assert abs(da.get(key, db.get(key)) - cut) <= 1e-5 * max(1.0, abs(cut)), (key, da.get(key), db.get(key))


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small"
    ds = lance.write_dataset(pa.table({"id": list(range(len(DOCS))), "text": DOCS}), str(path))
    ds.create_scalar_index("text", "INVERTED")
    return path


@pytest.mark.parametrize(
    "kw",
    [
        dict(full_text_query="dog"),
        dict(full_text_query="dog dog cat"),
        dict(full_text_query="quick foxes"),
        dict(full_text_query="cafe creme"),
        dict(full_text_query="finance strasse ÅNGSTRÖM dzungla 日本語"),
        dict(full_text_query="the"),
        dict(full_text_query=""),
        dict(full_text_query="dog", limit=2, filter="id > 2", prefilter=True),
        dict(full_text_query="dog", limit=3, filter="id > 4"),
        dict(full_text_query="dog", with_row_id=True, columns=["id"]),
        dict(full_text_query="dog cat", with_row_address=True, columns=["id"], limit=3, offset=1),
        dict(full_text_query={"query": "dog", "columns": ["text"]}),
        dict(full_text_query="dog", columns=["_score", "id"]),
        dict(full_text_query="dog cat", columns=["id", "_score"], with_row_id=True),
    ],
)
def test_lancepy_reads_pylance_index(small, kw):
    a, b = both(small, **kw)
    assert_same(a, b)


def test_query_objects(small):
    for lq, pq in [
        (MatchQuery("dog cat", "text", operator=FullTextOperator.AND),
         lance.query.MatchQuery("dog cat", "text", operator=lance.query.FullTextOperator.AND)),
        (MatchQuery("dog cat", "text", boost=2.5), lance.query.MatchQuery("dog cat", "text", boost=2.5)),
    ]:
        a = lance.dataset(str(small)).to_table(full_text_query=pq)
        b = lancepy.dataset(str(small)).to_table(full_text_query=lq)
        assert_same(a, b)
    with pytest.raises(ValueError, match="position"):  # (the index has no positions)
        lancepy.dataset(str(small)).to_table(full_text_query=PhraseQuery("quick brown", "text"))


def test_deletes_and_unindexed_fragments(small):
    lance.dataset(str(small)).delete("id = 2")
    a, b = both(small, full_text_query="dog cat")
    assert_same(a, b)
    assert 2 not in b.column("id").to_pylist()
    lance.dataset(str(small)).insert(pa.table({"id": [100, 101, 102], "text": ["dog eats dog", None, "cat"]}))
    for q in ["dog cat", "dog", "eat", "zebra"]:
        a, b = both(small, full_text_query=q)
        assert_same(a, b)
    a, b = both(small, full_text_query="dog", filter="id >= 4", limit=3, prefilter=True)
    assert_same(a, b)


def test_count_and_plan(small):
    ds = lancepy.dataset(str(small))
    sc = ds.scanner(full_text_query="dog", filter="id > 1", limit=3)
    assert sc.count_rows() == 3
    assert ds.scanner(full_text_query="dog", filter="id > 1").count_rows() == lance.dataset(str(small)).scanner(
        full_text_query="dog", filter="id > 1"
    ).count_rows()
    plan = sc.explain_plan()
    assert "MatchQuery: column=text, query=[dog]" in plan and "text_idx" in plan
    ours, theirs = ds.index_statistics("text_idx"), lance.dataset(str(small)).stats.index_stats("text_idx")
    assert ours["indices"] == theirs["indices"] and ours["index_type"] == theirs["index_type"] == "Inverted"
    batches = list(ds.scanner(full_text_query="dog", batch_size=2).to_batches())
    assert sum(b.num_rows for b in batches) == 5 and all(b.num_rows <= 2 for b in batches)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"stem": False},
        {"remove_stop_words": False},
        {"lower_case": False, "stem": False},
        {"ascii_folding": False},
        {"base_tokenizer": "whitespace"},
        {"base_tokenizer": "raw", "stem": False, "remove_stop_words": False},
        {"max_token_length": 5},
        {"language": "French", "remove_stop_words": False},
    ],
)
def test_pylance_options_differential(tmp_path, options):
    """Seeded corpora indexed by pylance with each option; lancepy answers random queries
    with pylance's rows and scores."""
    docs = corpus(7, 600)
    path = tmp_path / "d"
    ds = lance.write_dataset(pa.table({"id": list(range(len(docs))), "text": docs}), str(path), max_rows_per_file=250)
    ds.create_scalar_index("text", "INVERTED", **options)
    qs = queries(11, 25) if options.get("base_tokenizer") != "raw" else [d for d in docs[:25] if d]
    for q in qs:
        a, b = both(path, full_text_query=q, columns=["id"], limit=20)
        assert_same(a, b)


def test_full_blocks_differential(tmp_path):
    """Posting lists longer than a block (128 documents: bit-packed blocks) and random
    queries with filters and limits."""
    docs = corpus(3, 3000, 5, 60)
    path = tmp_path / "big"
    ds = lance.write_dataset(pa.table({"id": list(range(len(docs))), "text": docs}), str(path))
    ds.create_scalar_index("text", "INVERTED")
    rng = random.Random(5)
    for q in queries(9, 30):
        kw = dict(full_text_query=q, columns=["id"])
        if rng.random() < 0.5:
            kw["limit"] = rng.choice([1, 5, 10, 50])
        if rng.random() < 0.5:
            kw["filter"] = f"id % {rng.randint(2, 5)} = 0"
            kw["prefilter"] = rng.random() < 0.5
        a, b = both(path, **kw)
        assert_same(a, b)


def _write_both(tmp_path, docs, **options):
    """The same table written twice, one indexed by pylance, one by lancepy."""
    paths = []
    for who in ("pylance", "lancepy"):
        path = tmp_path / who
        lance.write_dataset(pa.table({"id": list(range(len(docs))), "text": docs}), str(path), max_rows_per_file=1000)
        if who == "pylance":
            lance.dataset(str(path)).create_scalar_index("text", "INVERTED", **options)
        else:
            lancepy.dataset(str(path)).create_scalar_index("text", "INVERTED", **options)
        paths.append(path)
    return paths


@pytest.mark.parametrize(
    "options",
    [{}, {"stem": False, "remove_stop_words": False}, {"base_tokenizer": "whitespace", "lower_case": False},
     {"max_token_length": 6, "ascii_folding": False}, {"custom_stop_words": ["dog", "cat"]}],
)
def test_pylance_reads_lancepy_index(tmp_path, options):
    """Both libraries search lancepy's index with the rows and scores of pylance's own index;
    the token set, documents and metadata files equal pylance's."""
    from lancepy.file import LanceFileReader

    docs = corpus(21, 2500, 3, 50)
    pl, lp = _write_both(tmp_path, docs, **options)
    for name in ["part_0_tokens.lance", "part_0_docs.lance", "metadata.lance"]:
        a = LanceFileReader(str(next((pl / "_indices").glob(f"*/{name}")))).read_all().to_table()
        b = LanceFileReader(str(next((lp / "_indices").glob(f"*/{name}")))).read_all().to_table()
        if name == "part_0_tokens.lance" and len(list((pl / "_indices").glob("*/part_*_tokens.lance"))) > 1:
            continue  # (pylance split its index into partitions)
        assert a.equals(b), name
        assert a.schema.metadata == b.schema.metadata, name
    rng = random.Random(2)
    for q in queries(4, 30):
        kw = dict(full_text_query=q, columns=["id"], limit=rng.choice([None, 10, 100]))
        ref = lance.dataset(str(pl)).to_table(**kw)
        assert_same(ref, lance.dataset(str(lp)).to_table(**kw))
        assert_same(ref, lancepy.dataset(str(lp)).to_table(**kw))
    d = [i for i in lance.dataset(str(lp)).describe_indices() if i.name == "text_idx"][0]
    assert d.index_type == "Inverted" and d.type_url.endswith("InvertedIndexDetails")
    sa = lance.dataset(str(pl)).stats.index_stats("text_idx")
    sb = lance.dataset(str(lp)).stats.index_stats("text_idx")
    for k in ("index_type", "num_indexed_rows", "num_unindexed_rows"):
        assert sa[k] == sb[k]
    assert sa["indices"][0]["params"] == sb["indices"][0]["params"]
    assert sa["indices"][0]["num_docs"] == sb["indices"][0]["num_docs"]


def test_create_options_refused(tmp_path):
    path = tmp_path / "d"
    lancepy.write_dataset(pa.table({"text": ["a b", "c"], "n": [1, 2]}), str(path))
    ds = lancepy.dataset(str(path))
    with pytest.raises(NotSupportedError, match="num_workers"):
        ds.create_scalar_index("text", "INVERTED", num_workers=2)
    with pytest.raises(NotSupportedError, match="base_tokenizer"):
        ds.create_scalar_index("text", "INVERTED", base_tokenizer="mecab/ipadic")
    with pytest.raises(TypeError):
        ds.create_scalar_index("n", "INVERTED")
    ds.create_scalar_index("text", "FTS", language="German", remove_stop_words=False)
    assert lance.dataset(str(path)).to_table(full_text_query="b").column("text").to_pylist() == ["a b"]


@pytest.mark.parametrize("builder", ["pylance", "lancepy"])
def test_optimize_and_compaction_differential(tmp_path, builder):
    """An index (built by either library) after deletes, an append, ``optimize_indices``
    and ``compact_files``: done by lancepy on one copy and by pylance on another, both
    libraries find the same rows with the same scores on both copies, and the index covers
    every fragment."""
    docs, more = corpus(5, 1200, 2, 40), corpus(6, 300, 2, 40)
    paths = {}
    for who in ("pylance", "lancepy"):
        path = str(tmp_path / who)
        lance.write_dataset(pa.table({"id": list(range(len(docs))), "text": docs}), path, max_rows_per_file=200)
        (lance if builder == "pylance" else lancepy).dataset(path).create_scalar_index("text", "INVERTED")
        lance.dataset(path).delete("id % 7 = 0")
        lance.dataset(path).insert(pa.table({"id": list(range(5000, 5000 + len(more))), "text": more}))
        (lance if who == "pylance" else lancepy).dataset(path).optimize.optimize_indices()
        paths[who] = path

    def check(seed):
        for q in queries(seed, 15):
            kw = dict(full_text_query=q, columns=["id"])
            ref = lance.dataset(paths["pylance"]).to_table(**kw)
            for lib in (lance, lancepy):
                for path in paths.values():
                    assert_same(ref, lib.dataset(path).to_table(**kw), limited=False)
        stats = lancepy.dataset(paths["lancepy"]).index_statistics("text_idx")
        assert stats["num_unindexed_rows"] == 0 and stats["num_unindexed_fragments"] == 0

    check(1)
    for who, lib in (("pylance", lance), ("lancepy", lancepy)):
        lib.dataset(paths[who]).optimize.compact_files(target_rows_per_fragment=700)
    assert len(lance.dataset(paths["lancepy"]).get_fragments()) == len(lance.dataset(paths["pylance"]).get_fragments())
    check(2)
    lancepy.dataset(paths["lancepy"]).optimize.optimize_indices(retrain=True)
    check(3)


def test_no_index_and_unbuilt_queries(tmp_path):
    path = str(tmp_path / "d")
    vec = pa.FixedSizeListArray.from_arrays(pa.array([0.0, 1.0, 2.0], pa.float32()), 1)
    lancepy.write_dataset(pa.table({"a": list(range(3)), "b": ["x y", "y", "z"], "v": vec}), path)
    ds = lancepy.dataset(path)
    with pytest.raises(ValueError, match="INVERTED"):
        ds.to_table(full_text_query="y")
    ds.create_scalar_index("b", "INVERTED")
    assert ds.head(3, full_text_query="y").column("a").to_pylist() == [1, 0]
    hybrid = ds.to_table(full_text_query="y", nearest={"column": "v", "q": [1.0], "k": 1})
    assert hybrid.column("a").to_pylist() == [1] and hybrid.column("_distance").to_pylist() == [0.0]
    assert hybrid.column("_score").to_pylist()[0] > 0 and hybrid.column("_relevance_score").to_pylist()[0] > 0
    with pytest.raises(NotSupportedError, match="CombinedFields"):
        ds.to_table(full_text_query=type("CombinedFieldsQuery", (), {})())


def test_token_files_equal_pylance(tmp_path):
    """The analyzer (tokenizer, stemmer, stop words, ASCII folding of accents and ligatures)
    gives pylance's tokens, ids and document lengths on mixed-script text."""
    from lancepy.file import LanceFileReader

    pl, lp = _write_both(tmp_path, DOCS)
    for name in ["part_0_tokens.lance", "part_0_docs.lance", "metadata.lance"]:
        a = LanceFileReader(str(next((pl / "_indices").glob(f"*/{name}")))).read_all().to_table()
        b = LanceFileReader(str(next((lp / "_indices").glob(f"*/{name}")))).read_all().to_table()
        assert a.equals(b), name
