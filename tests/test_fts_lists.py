"""Full-text search over ``list<string>`` columns, against pylance 14.0.2 on the same data: a
row's document is its non-null items joined by spaces (so a phrase may run from one item into
the next), the index files lancepy writes equal pylance's, and each library searches the
other's index with pylance's rows and scores, for generated rows and queries (seeded:
matches, AND, phrases, fuzzy), over indexed and not-yet-indexed rows."""

from __future__ import annotations

import random

import lance
import pyarrow as pa
import pytest
from test_fts import WORDS, assert_same

import lancepy
from lancepy.file import LanceFileReader


def _rows(seed: int, n: int, large: bool = False):
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(WORDS))]
    rows = []
    for _ in range(n):
        r = rng.random()
        if r < 0.03:
            rows.append(None)
        elif r < 0.06:
            rows.append([])
        else:
            items = []
            for _ in range(rng.randint(1, 4)):
                items.append(None if rng.random() < 0.05 else " ".join(rng.choices(WORDS, weights, k=rng.randint(0, 6))))
            rows.append(items)
    typ = pa.large_list(pa.large_string()) if large else pa.list_(pa.string())
    return pa.array(rows, typ)


def _write(path, values, start=0, mode="create", lib=lance):
    t = pa.table({"id": pa.array(range(start, start + len(values)), pa.int64()), "tags": values})
    lib.write_dataset(t, str(path), mode=mode, max_rows_per_file=400)


def _queries(seed: int, n: int):
    """Generated queries: ``(kind, text, options)``."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        r = rng.random()
        words = rng.sample(WORDS[:40], rng.randint(1, 3))
        if r < 0.4:
            out.append(("match", " ".join(words), {}))
        elif r < 0.6:
            out.append(("match", " ".join(words), {"operator": "AND"}))
        elif r < 0.85:
            out.append(("phrase", " ".join(words[:2]), {"slop": rng.choice([0, 1])}))
        else:
            out.append(("match", words[0][:-1] + "x", {"fuzziness": 1}))
    return out


def _q(lib, spec):
    """The query object of `lib` (pylance or lancepy) for a generated query."""
    kind, text, opts = spec
    if kind == "phrase":
        return lib.query.PhraseQuery(text, "tags", slop=opts["slop"])
    kw = dict(opts)
    if "operator" in kw:
        kw["operator"] = lib.query.FullTextOperator.AND
    return lib.query.MatchQuery(text, "tags", **kw)


def _search(lib, path, spec):
    return lib.dataset(str(path)).to_table(full_text_query=_q(lib, spec), columns=["id"])


@pytest.mark.parametrize("large", [False, True])
def test_list_index_files_and_queries_equal_pylance(tmp_path, large):
    values = _rows(3, 1500, large)
    for who in ("pylance", "lancepy"):
        _write(tmp_path / who, values)
        (lance if who == "pylance" else lancepy).dataset(str(tmp_path / who)).create_scalar_index(
            "tags", "INVERTED", with_position=True)
    for name in ["part_0_invert.lance", "part_0_tokens.lance", "part_0_docs.lance", "metadata.lance"]:
        a = LanceFileReader(str(next((tmp_path / "pylance" / "_indices").glob(f"*/{name}")))).read_all().to_table()
        b = LanceFileReader(str(next((tmp_path / "lancepy" / "_indices").glob(f"*/{name}")))).read_all().to_table()
        if name == "part_0_invert.lance":
            a = a.drop_columns(["_impacts"])  # (pylance's pruning bounds: lancepy does not write them)
        assert a.equals(b), name
    found = 0
    for spec in _queries(4, 150):
        ref = _search(lance, tmp_path / "pylance", spec)
        for who in ("pylance", "lancepy"):
            assert_same(ref, _search(lancepy, tmp_path / who, spec), limited=False)
        assert_same(ref, _search(lance, tmp_path / "lancepy", spec), limited=False)
        found += ref.num_rows > 0
    assert found > 100
    # (a phrase that runs from one item into the next, as pylance joins them)
    t = pa.table({"id": pa.array([0, 1], pa.int64()), "tags": pa.array([["quick brown", "fox"], ["brown", None, "fox"]])})
    lancepy.write_dataset(t, str(tmp_path / "x"))
    lancepy.dataset(str(tmp_path / "x")).create_scalar_index("tags", "INVERTED", with_position=True)
    got = lancepy.dataset(str(tmp_path / "x")).to_table(full_text_query=lancepy.query.PhraseQuery("brown fox", "tags"))
    assert sorted(got.column("id").to_pylist()) == [0, 1]


def test_list_rows_not_yet_indexed(tmp_path):
    """Rows appended after the index: scored as pylance's flat search scores them (a list's
    items counted one by one; phrases over the joined items), then added by
    ``optimize_indices``."""
    for who in ("pylance", "lancepy"):
        lib = lance if who == "pylance" else lancepy
        _write(tmp_path / who, _rows(5, 700), lib=lib)
        lib.dataset(str(tmp_path / who)).create_scalar_index("tags", "INVERTED", with_position=True)
        _write(tmp_path / who, _rows(6, 300), start=700, mode="append", lib=lib)
    queries = _queries(7, 80)
    for spec in queries:
        ref = _search(lance, tmp_path / "pylance", spec)
        for who in ("pylance", "lancepy"):
            assert_same(ref, _search(lancepy, tmp_path / who, spec), limited=False)
    lance.dataset(str(tmp_path / "pylance")).optimize.optimize_indices()
    lancepy.dataset(str(tmp_path / "lancepy")).optimize.optimize_indices()
    for spec in queries[:40]:
        ref = _search(lance, tmp_path / "pylance", spec)
        assert_same(ref, _search(lance, tmp_path / "lancepy", spec), limited=False)
        assert_same(ref, _search(lancepy, tmp_path / "lancepy", spec), limited=False)


def test_list_of_other_items_refused(tmp_path):
    t = pa.table({"v": pa.array([[1, 2], [3]], pa.list_(pa.int64()))})
    ds = lancepy.write_dataset(t, str(tmp_path / "d"))
    with pytest.raises(TypeError, match="INVERTED index column v"):
        ds.create_scalar_index("v", "INVERTED")
