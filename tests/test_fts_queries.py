"""Full-text search beyond match queries, against pylance 14.0.2 on the same data: indices
with token positions (``with_position``; each library reads the other's, the positions
stored as pylance stores them), phrase queries with ``slop``, boolean / multi-match / boost
queries, fuzzy match queries; and lancepy's hybrid search (``nearest`` and
``full_text_query`` fused by reciprocal rank), checked against a fusion computed here."""

from __future__ import annotations

import random

import lance
import numpy as np
import pyarrow as pa
import pytest
from test_fts import WORDS, assert_same, corpus

import lancepy
from lancepy import query as lq
from lancepy.exceptions import InvalidArgumentError
from lancepy.file import LanceFileReader


def _build(tmp_path, docs, who, **options):
    path = tmp_path / who
    t = pa.table({"id": list(range(len(docs))), "text": docs, "title": [d[::-1] if d else d for d in docs]})
    lance.write_dataset(t, str(path), max_rows_per_file=1000)
    (lance if who == "pylance" else lancepy).dataset(str(path)).create_scalar_index("text", "INVERTED", **options)
    return path


def _phrases(docs, seed, n):
    """Phrases cut from the documents (some with a word changed or dropped), with slops."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        d = rng.choice([d for d in docs if d])
        words = d.replace(",", " ").replace("!", " ").replace("-", " ").split()
        i = rng.randrange(len(words))
        phrase = words[i:i + rng.randint(1, 4)]
        if rng.random() < 0.3:
            phrase[rng.randrange(len(phrase))] = rng.choice(WORDS)
        if rng.random() < 0.2 and len(phrase) > 2:
            del phrase[1]
        out.append((" ".join(phrase), rng.choice([0, 0, 1, 2, 3])))
    return out


@pytest.mark.parametrize("options", [{}, {"stem": False, "remove_stop_words": False}, {"base_tokenizer": "whitespace"}])
def test_positions_stored_as_pylance(tmp_path, options):
    """lancepy's with_position index files equal pylance's (positions stream, block offsets,
    postings, tokens, docs, metadata); the corpus has tokens in more than one posting block
    and documents long enough for bit-packed position runs."""
    docs = corpus(31, 700, 1, 400)
    pl = _build(tmp_path, docs, "pylance", with_position=True, **options)
    lp = _build(tmp_path, docs, "lancepy", with_position=True, **options)
    for name in ["part_0_invert.lance", "part_0_tokens.lance", "part_0_docs.lance", "metadata.lance"]:
        a = LanceFileReader(str(next((pl / "_indices").glob(f"*/{name}")))).read_all().to_table()
        b = LanceFileReader(str(next((lp / "_indices").glob(f"*/{name}")))).read_all().to_table()
        if name == "part_0_invert.lance":
            a = a.drop_columns(["_impacts"])  # (pylance's pruning bounds: lancepy does not write them)
            assert max(len(x) for x in a.column("_position_block_offset").to_pylist()) > 1
            for col in ("_posting", "_max_score", "_compressed_position", "_position_block_offset", "_length"):
                assert a.column(col).equals(b.column(col)), col
        else:
            assert a.equals(b), name
        assert a.schema.metadata == b.schema.metadata, name


@pytest.mark.parametrize("options", [{}, {"stem": False, "remove_stop_words": False}])
def test_phrase_queries_differential(tmp_path, options):
    """Phrase queries (PhraseQuery with slop 0-3, and a quoted query string on the column) on
    pylance's and lancepy's with_position indices, searched by both libraries: pylance's rows
    and scores."""
    docs = corpus(32, 1500, 2, 60)
    pl = _build(tmp_path, docs, "pylance", with_position=True, **options)
    lp = _build(tmp_path, docs, "lancepy", with_position=True, **options)
    rng = random.Random(4)
    for text, slop in _phrases(docs, 8, 40):
        kw = dict(columns=["id"], limit=rng.choice([None, 10]))
        ref = lance.dataset(str(pl)).to_table(full_text_query=lance.query.PhraseQuery(text, "text", slop=slop), **kw)
        for path in (pl, lp):
            assert_same(ref, lancepy.dataset(str(path)).to_table(full_text_query=lq.PhraseQuery(text, "text", slop=slop), **kw))
        assert_same(ref, lance.dataset(str(lp)).to_table(full_text_query=lance.query.PhraseQuery(text, "text", slop=slop), **kw))
        if slop == 0:
            quoted = {"query": f'"{text}"', "columns": ["text"]}
            assert_same(lance.dataset(str(pl)).to_table(full_text_query=quoted, **kw),
                        lancepy.dataset(str(lp)).to_table(full_text_query=quoted, **kw))
    f = dict(columns=["id"], filter="id % 3 = 0", prefilter=True, limit=5)
    q = _phrases(docs, 9, 1)[0][0]
    assert_same(lance.dataset(str(pl)).to_table(full_text_query=lance.query.PhraseQuery(q, "text"), **f),
                lancepy.dataset(str(lp)).to_table(full_text_query=lq.PhraseQuery(q, "text"), **f))


def test_phrase_after_compaction_and_without_positions(tmp_path):
    """lancepy's compaction and optimize_indices keep the positions: both libraries find
    pylance's phrase rows after each; an index without positions refuses phrases."""
    docs = corpus(33, 900, 2, 40)
    lp = _build(tmp_path, docs, "lancepy", with_position=True)
    lance.dataset(str(lp)).delete("id % 5 = 0")
    lancepy.dataset(str(lp)).optimize.compact_files(target_rows_per_fragment=2000)
    for text, slop in _phrases(docs, 10, 15):
        a = lance.dataset(str(lp)).to_table(full_text_query=lance.query.PhraseQuery(text, "text", slop=slop), columns=["id"])
        b = lancepy.dataset(str(lp)).to_table(full_text_query=lq.PhraseQuery(text, "text", slop=slop), columns=["id"])
        assert_same(a, b, limited=False)
    more = corpus(37, 300, 2, 40)
    lance.dataset(str(lp)).insert(pa.table({"id": list(range(5000, 5300)), "text": more,
                                            "title": [d[::-1] if d else d for d in more]}))
    for text, slop in _phrases(docs + more, 11, 10):  # (the new fragment unindexed: searched flat)
        a = lance.dataset(str(lp)).to_table(full_text_query=lance.query.PhraseQuery(text, "text", slop=slop), columns=["id"])
        b = lancepy.dataset(str(lp)).to_table(full_text_query=lq.PhraseQuery(text, "text", slop=slop), columns=["id"])
        assert_same(a, b, limited=False)
    lancepy.dataset(str(lp)).optimize.optimize_indices()
    found_new = False
    for text, slop in _phrases(more, 12, 15):
        a = lance.dataset(str(lp)).to_table(full_text_query=lance.query.PhraseQuery(text, "text", slop=slop), columns=["id"])
        b = lancepy.dataset(str(lp)).to_table(full_text_query=lq.PhraseQuery(text, "text", slop=slop), columns=["id"])
        assert_same(a, b, limited=False)
        found_new |= any(i >= 5000 for i in b.column("id").to_pylist())
    assert found_new
    plain = _build(tmp_path, docs, "plain")
    with pytest.raises(InvalidArgumentError, match="position"):
        lancepy.dataset(str(plain)).to_table(full_text_query=lq.PhraseQuery("dog cat", "text"))
    with pytest.raises(InvalidArgumentError, match="slop"):
        lancepy.dataset(str(plain)).to_table(full_text_query=lq.PhraseQuery("dog cat", "text", slop=-1))
    from lancepy.exceptions import NotSupportedError

    with pytest.raises(NotSupportedError, match="document_granularity"):
        lq.PhraseQuery("dog cat", "text", document_granularity=lq.DocumentGranularity.LIST_ELEMENT)


def _both_queries(rng):
    """A random query tree, built as pylance's and as lancepy's objects."""
    def match(column="text"):
        words = " ".join(rng.choices(WORDS, k=rng.randint(1, 3)))
        kw = {}
        if rng.random() < 0.3:
            kw["operator"] = "AND"
        if rng.random() < 0.3:
            kw["boost"] = rng.choice([0.5, 2.0, 3.5])
        if rng.random() < 0.25:
            kw["fuzziness"] = rng.choice([1, 2])
            kw["prefix_length"] = rng.choice([0, 1, 2])
            kw["max_expansions"] = rng.choice([2, 50])
        pk = dict(kw)
        if "operator" in pk:
            pk["operator"] = lance.query.FullTextOperator.AND
            kw["operator"] = lq.FullTextOperator.AND
        return lance.query.MatchQuery(words, column, **pk), lq.MatchQuery(words, column, **kw)

    kind = rng.choice(["bool", "bool", "multi", "boost", "match"])
    if kind == "match":
        return match()
    if kind == "multi":
        words = " ".join(rng.choices(WORDS, k=rng.randint(1, 3)))
        boosts = rng.choice([None, [1.0, 2.0], [0.5, 1.5]])
        return (lance.query.MultiMatchQuery(words, ["text", "title"], boosts=boosts),
                lq.MultiMatchQuery(words, ["text", "title"], boosts=boosts))
    if kind == "boost":
        (p1, l1), (p2, l2) = match(), match()
        nb = rng.choice([0.2, 0.5, 1.0])
        return lance.query.BoostQuery(p1, p2, negative_boost=nb), lq.BoostQuery(l1, l2, negative_boost=nb)
    occurs = [rng.choice(["MUST", "SHOULD", "MUST_NOT"]) for _ in range(rng.randint(1, 4))]
    if not any(o != "MUST_NOT" for o in occurs):
        occurs[0] = "SHOULD"
    parts = [(o, match(rng.choice(["text", "title"]))) for o in occurs]
    return (lance.query.BooleanQuery([(lance.query.Occur[o], p) for o, (p, _) in parts]),
            lq.BooleanQuery([(lq.Occur[o], q) for o, (_, q) in parts]))


def test_query_objects_differential(tmp_path):
    """Seeded boolean (MUST / SHOULD / MUST_NOT), multi-match with boosts, boost and fuzzy /
    AND / boosted match queries over two indexed columns: pylance's rows and scores."""
    docs = corpus(34, 1200, 2, 40)
    path = tmp_path / "d"
    t = pa.table({"id": list(range(len(docs))), "text": docs, "title": corpus(35, 1200, 1, 8)})
    ds = lance.write_dataset(t, str(path), max_rows_per_file=500)
    ds.create_scalar_index("text", "INVERTED")
    lancepy.dataset(str(path)).create_scalar_index("title", "INVERTED")
    rng = random.Random(12)
    for _ in range(60):
        pq, q = _both_queries(rng)
        kw = dict(columns=["id"], limit=rng.choice([None, None, 10]))
        if rng.random() < 0.3:
            kw.update(filter="id % 2 = 0", prefilter=True)
        a = lance.dataset(str(path)).to_table(full_text_query=pq, **kw)
        b = lancepy.dataset(str(path)).to_table(full_text_query=q, **kw)
        assert_same(a, b, limited=kw["limit"] is not None)
    for pq, q in [(lance.query.MatchQuery("quikly", "text", fuzziness=None), lq.MatchQuery("quikly", "text", fuzziness=None)),
                  (lance.query.MatchQuery("dataa", "text", fuzziness=1), lq.MatchQuery("dataa", "text", fuzziness=1))]:
        assert_same(lance.dataset(str(path)).to_table(full_text_query=pq, columns=["id"]),
                    lancepy.dataset(str(path)).to_table(full_text_query=q, columns=["id"]), limited=False)
    a = lance.dataset(str(path)).to_table(full_text_query="dog", columns=["id"])  # (every indexed column)
    assert_same(a, lancepy.dataset(str(path)).to_table(full_text_query="dog", columns=["id"]), limited=False)
    with pytest.raises(InvalidArgumentError, match="MUST or SHOULD"):
        lancepy.dataset(str(path)).to_table(full_text_query=lq.BooleanQuery([(lq.Occur.MUST_NOT, lq.MatchQuery("dog", "text"))]))
    with pytest.raises(InvalidArgumentError, match="boosts"):
        lancepy.dataset(str(path)).to_table(full_text_query=lq.MultiMatchQuery("dog", ["text", "title"], boosts=[1.0]))


def _hybrid_data(tmp_path, n=600, dim=8):
    rng = np.random.default_rng(5)
    docs = corpus(36, n, 2, 30)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * dim).astype(np.float32)), dim)
    path = str(tmp_path / "h")
    lancepy.write_dataset(pa.table({"id": list(range(n)), "text": docs, "vec": vec}), path)
    ds = lancepy.dataset(path)
    ds.create_scalar_index("text", "INVERTED")
    return ds, rng


def _fusion(vector: pa.Table, fts: pa.Table, k: float) -> dict:
    fused: dict = {}
    for t in (vector, fts):
        for rank, i in enumerate(t.column("id").to_pylist()):
            fused[i] = fused.get(i, 0.0) + 1.0 / (rank + k)
    return fused


@pytest.mark.parametrize("prefilter", [False, True])
def test_hybrid_search_fuses_by_reciprocal_rank(tmp_path, prefilter):
    """The fused top 10 equals a fusion of the two searches' own results computed here
    (recall 1.0, same order and relevance scores), on seeded queries, with and without a
    prefilter; ``_distance`` / ``_score`` are those of each search (null where a row came
    from the other only)."""
    ds, rng = _hybrid_data(tmp_path)
    qrng = random.Random(3)
    for trial in range(12):
        q = rng.standard_normal(8).astype(np.float32)
        text = " ".join(qrng.choices(WORDS[:40], k=2))
        rrf_k = [60, 60, 10, 1.5][trial % 4]
        kw = dict(filter="id % 3 != 0", prefilter=True) if prefilter else {}
        nearest = {"column": "vec", "q": q, "k": 20}
        vector = ds.to_table(columns=["id"], nearest=nearest, **kw)
        fts = ds.to_table(columns=["id"], full_text_query=text, limit=20, **kw)
        got = ds.to_table(columns=["id"], nearest=nearest, full_text_query=text, limit=10, rrf_k=rrf_k, **kw)
        assert got.column_names == ["id", "_distance", "_score", "_relevance_score"]
        want = _fusion(vector, fts, float(rrf_k))
        best = sorted(want.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        ids = got.column("id").to_pylist()
        assert set(ids) == {i for i, _ in best}  # (recall 1.0)
        np.testing.assert_allclose(got.column("_relevance_score").to_numpy(), [want[i] for i in ids], rtol=1e-6)
        assert list(np.argsort(-np.asarray([want[i] for i in ids]), kind="stable")) == list(range(len(ids)))
        dist = dict(zip(vector.column("id").to_pylist(), vector.column("_distance").to_pylist()))
        score = dict(zip(fts.column("id").to_pylist(), fts.column("_score").to_pylist()))
        assert got.column("_distance").to_pylist() == [dist.get(i) for i in ids]
        assert got.column("_score").to_pylist() == [score.get(i) for i in ids]
        if prefilter:
            assert all(i % 3 for i in ids)


def test_hybrid_plan_and_arguments(tmp_path):
    ds, rng = _hybrid_data(tmp_path, 200)
    q = rng.standard_normal(8).astype(np.float32)
    sc = ds.scanner(nearest={"column": "vec", "q": q, "k": 5}, full_text_query="dog", rrf_k=30, limit=5, with_row_id=True)
    plan = sc.explain_plan()
    assert "RRFFusion: k=30" in plan and "NearestNeighbours: column=vec" in plan and "MatchQuery: column=text" in plan
    t = sc.to_table()
    assert t.column_names[-2:] == ["_relevance_score", "_rowid"] and t.num_rows <= 5
    assert sc.count_rows() == t.num_rows
    nearest = {"column": "vec", "q": q, "k": 20}
    whole = ds.to_table(columns=["id"], nearest=nearest, full_text_query="dog")
    part = ds.to_table(columns=["id"], nearest=nearest, full_text_query="dog", offset=3, limit=5)
    assert part.equals(whole.slice(3, 5))
    with pytest.raises(InvalidArgumentError, match="rrf_k"):
        ds.to_table(full_text_query="dog", rrf_k=60)
    with pytest.raises(InvalidArgumentError, match="rrf_k"):
        ds.to_table(nearest={"column": "vec", "q": q, "k": 5}, full_text_query="dog", rrf_k=0)


@pytest.mark.parametrize("operator", ["OR", "AND"])
def test_fuzzy_queries_over_rows_not_yet_indexed(tmp_path, operator):
    """A fuzzy match over a dataset with rows the index does not cover, as pylance answers
    it: the indexed rows by the query tokens' expansions (from the index's vocabulary), the
    others by a flat search of the query's own tokens analyzed as the index analyzes text
    (so an upper-case query finds nothing in the index but finds the new rows). Generated
    queries (typos, upper case, prefixes, limits), pylance's rows and scores."""
    path = tmp_path / "d"
    lance.write_dataset(pa.table({"id": list(range(800)), "text": corpus(3, 800, 1, 30)}), str(path), max_rows_per_file=300)
    lance.dataset(str(path)).create_scalar_index("text", "INVERTED")
    lance.write_dataset(pa.table({"id": list(range(800, 1100)), "text": corpus(4, 300, 1, 30)}), str(path), mode="append")
    rng = random.Random(1)
    found = 0
    for _ in range(150):
        words = rng.sample(WORDS, rng.randint(1, 3))
        words = [w if rng.random() < 0.5 or len(w) < 3 else w[:-1] + rng.choice("aeiouxz") for w in words]
        if rng.random() < 0.3:
            words = [w.upper() for w in words]
        kw = dict(fuzziness=rng.choice([1, 2]), prefix_length=rng.choice([0, 0, 1, 2]))
        limit = rng.choice([None, 10])
        ref = lance.dataset(str(path)).to_table(
            full_text_query=lance.query.MatchQuery(" ".join(words), "text", operator=getattr(lance.query.FullTextOperator, operator), **kw),
            columns=["id"], limit=limit)
        got = lancepy.dataset(str(path)).to_table(
            full_text_query=lq.MatchQuery(" ".join(words), "text", operator=getattr(lq.FullTextOperator, operator), **kw),
            columns=["id"], limit=limit)
        assert_same(ref, got, limited=limit is not None)
        found += any(i >= 800 for i in ref.column("id").to_pylist())
    assert found > 30
