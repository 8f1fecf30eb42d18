"""Full-text search over JSON columns (pylance 14's JSON document tokenizer: an INVERTED index
on a ``pa.json_()`` column flattens each document into ``<path>,<type>,<value>`` tokens, and
is searched with such triplets), against pylance 14.0.2 on the same data: the index files
lancepy writes equal pylance's, each library searches the other's index with pylance's rows
and scores, for generated documents and queries (seeded, hundreds per run: matches, AND /
OR, phrases, fuzzy, boolean), over indexed and not-yet-indexed rows."""

from __future__ import annotations

import json
import random

import lancepy
import pyarrow as pa
import pytest
from lancepy.exceptions import InvalidArgumentError
from lancepy.file import LanceFileReader

lance = pytest.importorskip("lance")
if not hasattr(pa, "json_"):
    pytest.skip("pa.json_() needs pyarrow >= 19", allow_module_level=True)

from test_fts import WORDS, assert_same

KEYS = ["title", "body", "tags", "meta", "n", "ok", "x", "é", "B"]


def _doc(rng: random.Random, depth: int = 0):
    """A random JSON value: objects of a few known keys, arrays, strings of Zipf words,
    numbers written in several ways, booleans and nulls."""
    r = rng.random()
    if depth < 3 and r < 0.35:
        return {k: _doc(rng, depth + 1) for k in rng.sample(KEYS, rng.randint(1, 4))}
    if depth < 3 and r < 0.5:
        return [_doc(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if r < 0.8:
        weights = [1.0 / (i + 1) for i in range(len(WORDS))]
        return " ".join(rng.choices(WORDS, weights, k=rng.randint(1, 8)))
    if r < 0.88:
        return rng.choice([0, 1, 7, -3, 42, 10**20, 2**64 + 1, 1.5, 1.0, -0.0, 2.5e-7, 1e22, 3.14159])
    if r < 0.95:
        return rng.choice([True, False])
    return None


def _docs(seed: int, n: int):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < 0.03:
            out.append(None)
        else:
            d = _doc(rng)
            out.append(json.dumps(d if isinstance(d, dict) or rng.random() < 0.2 else {"title": d}))
    return out


def _write(path, docs, max_rows_per_file=400):
    t = pa.table({"id": pa.array(range(len(docs)), pa.int64()), "doc": pa.array(docs, type=pa.json_())})
    lance.write_dataset(t, str(path), max_rows_per_file=max_rows_per_file)


def _leaves(value, path=""):
    """``(path, type, literal)`` of each leaf of a document read back as text (numbers as
    they are printed)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, path)
    elif value is None:
        yield path, "null", "null"
    elif isinstance(value, bool):
        yield path, "bool", "true" if value else "false"
    elif isinstance(value, str) and value.startswith("\x00num:"):
        yield path, "number", value[5:]
    else:
        yield path, "str", value


def _parse(text):
    def num(s):  # (numbers kept as printed)
        return "\x00num:" + s

    return json.loads(text, parse_int=num, parse_float=num)


def _queries(texts, seed: int, n: int):
    """Generated queries over the documents as read back: ``(kind, query text, options)``."""
    rng = random.Random(seed)
    leaves = [leaf for t in texts if t for leaf in _leaves(_parse(t))]
    strs = [leaf for leaf in leaves if leaf[1] == "str" and leaf[2].split()]
    out = []
    for _ in range(n):
        r = rng.random()
        triplets = []
        for _ in range(rng.randint(1, 3)):
            path, kind, value = rng.choice(leaves)
            if kind == "str":
                words = value.split()
                i = rng.randrange(len(words)) if words else 0
                value = " ".join(words[i:i + rng.randint(1, 2)]) or rng.choice(WORDS)
            if rng.random() < 0.1:
                path = rng.choice(KEYS)  # (maybe a path no document has)
            triplets.append(f"{path},{kind},{value}")
        text = ";".join(triplets)
        if r < 0.45:
            out.append(("match", text, {}))
        elif r < 0.6:
            out.append(("match", text, {"operator": "AND"}))
        elif r < 0.75 and strs:
            path, _, value = rng.choice(strs)
            words = value.split()
            i = rng.randrange(len(words))
            out.append(("phrase", ";".join(f"{path},str,{w}" for w in words[i:i + rng.randint(2, 3)]),
                        {"slop": rng.choice([0, 0, 1])}))
        elif r < 0.85 and strs:
            path, _, value = rng.choice(strs)
            w = rng.choice(value.split()).lower()
            if len(w) > 2 and rng.random() < 0.7:
                j = rng.randrange(len(w))
                w = w[:j] + rng.choice("aeiouxyz") + w[j + 1:]
            out.append(("match", f"{path},str,{w}", {"fuzziness": rng.choice([1, 2]), "prefix_length": rng.choice([0, 1])}))
        else:
            out.append(("boolean", text, {"not": rng.choice(leaves)}))
    return out


def _query(lib, kind, text, opts):
    q = lib.query
    if kind == "phrase":
        return q.PhraseQuery(text, "doc", slop=opts["slop"])
    if kind == "boolean":
        path, t, v = opts["not"]
        return q.BooleanQuery([(q.Occur.SHOULD, q.MatchQuery(text, "doc")),
                               (q.Occur.MUST_NOT, q.MatchQuery(f"{path},{t},{v}" if t != "str" else f"{path},str,{v.split()[0]}",
                                                                "doc"))])
    kw = {}
    if "operator" in opts:
        kw["operator"] = q.FullTextOperator.AND
    for k in ("fuzziness", "prefix_length"):
        if k in opts:
            kw[k] = opts[k]
    return q.MatchQuery(text, "doc", **kw)


def _search(ds, lib, kind, text, opts, limit):
    return ds.to_table(full_text_query=_query(lib, kind, text, opts), columns=["id"], limit=limit)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The same generated documents, indexed by pylance and by lancepy (with positions)."""
    root = tmp_path_factory.mktemp("fts_json")
    docs = _docs(7, 1200)
    for who in ("pylance", "lancepy"):
        _write(root / who, docs)
        (lance if who == "pylance" else lancepy).dataset(str(root / who)).create_scalar_index(
            "doc", "INVERTED", with_position=True)
    return root, docs


def test_index_files_equal_pylance(built):
    """lancepy's JSON index files (token set, postings with positions, documents, metadata
    with ``lance_tokenizer: json``) equal pylance's."""
    root, _ = built
    for name in ["part_0_invert.lance", "part_0_tokens.lance", "part_0_docs.lance", "metadata.lance"]:
        a = LanceFileReader(str(next((root / "pylance" / "_indices").glob(f"*/{name}")))).read_all().to_table()
        b = LanceFileReader(str(next((root / "lancepy" / "_indices").glob(f"*/{name}")))).read_all().to_table()
        if name == "part_0_invert.lance":
            a = a.drop_columns(["_impacts"])  # (pylance's pruning bounds: lancepy does not write them)
            b = b.drop_columns([c for c in b.column_names if c not in a.column_names])
        assert a.equals(b), name
        assert a.schema.metadata == b.schema.metadata, name
    md = LanceFileReader(str(next((root / "lancepy" / "_indices").glob("*/metadata.lance")))).read_all().to_table()
    assert json.loads(md.schema.metadata[b"params"])["lance_tokenizer"] == "json"
    d = lancepy.dataset(str(root / "lancepy")).describe_indices()[0]
    assert d.details == lance.dataset(str(root / "pylance")).describe_indices()[0].details


def test_generated_queries_differential(built):
    """Hundreds of generated queries, each searched by both libraries on both libraries'
    indices: pylance's rows and scores (on pylance's index) everywhere."""
    root, _ = built
    texts = lance.dataset(str(root / "pylance")).to_table(columns=["doc"]).column("doc").to_pylist()
    rng = random.Random(11)
    checked = 0
    for kind, text, opts in _queries(texts, 3, 300):
        limit = rng.choice([None, 10])
        ref = _search(lance.dataset(str(root / "pylance")), lance, kind, text, opts, limit)
        for who in ("pylance", "lancepy"):
            got = _search(lancepy.dataset(str(root / who)), lancepy, kind, text, opts, limit)
            assert_same(ref, got, limited=limit is not None)
            if who == "lancepy":
                other = _search(lance.dataset(str(root / who)), lance, kind, text, opts, limit)
                assert_same(ref, other, limited=limit is not None)
        checked += ref.num_rows > 0
    assert checked > 150  # (most queries find rows)


def test_rows_not_yet_indexed_and_optimize(tmp_path):
    """Rows appended after the index are searched without it (flat, as pylance scores them);
    ``optimize_indices`` adds them, and pylance reads the result."""
    docs = _docs(21, 500)
    more = _docs(22, 200)
    for who in ("pylance", "lancepy"):
        _write(tmp_path / who, docs)
        lib = lance if who == "pylance" else lancepy
        lib.dataset(str(tmp_path / who)).create_scalar_index("doc", "INVERTED")
        t = pa.table({"id": pa.array(range(500, 700), pa.int64()), "doc": pa.array(more, type=pa.json_())})
        lib.write_dataset(t, str(tmp_path / who), mode="append")
    texts = [t for t in lance.dataset(str(tmp_path / "pylance")).to_table().column("doc").to_pylist()]
    queries = [q for q in _queries(texts, 5, 120) if q[0] != "phrase"]
    for kind, text, opts in queries:
        ref = _search(lance.dataset(str(tmp_path / "pylance")), lance, kind, text, opts, None)
        assert_same(ref, _search(lancepy.dataset(str(tmp_path / "lancepy")), lancepy, kind, text, opts, None), limited=False)
        assert_same(ref, _search(lancepy.dataset(str(tmp_path / "pylance")), lancepy, kind, text, opts, None), limited=False)
    lance.dataset(str(tmp_path / "pylance")).optimize.optimize_indices()
    lancepy.dataset(str(tmp_path / "lancepy")).optimize.optimize_indices()
    for kind, text, opts in queries[:40]:
        ref = _search(lance.dataset(str(tmp_path / "pylance")), lance, kind, text, opts, None)
        assert_same(ref, _search(lance.dataset(str(tmp_path / "lancepy")), lance, kind, text, opts, None), limited=False)
        assert_same(ref, _search(lancepy.dataset(str(tmp_path / "lancepy")), lancepy, kind, text, opts, None), limited=False)


def test_numbers_are_tokens_as_printed(tmp_path):
    """A number's token is its text as a JSON column reads back (``1e+22``, ``1000.0`` for
    ``1E3``, ``1.5`` for ``1.50``), in both libraries."""
    docs = ['{"a":1e22,"c":1.50}', '{"a":1E3,"k":1.0e-7,"n":-0.0}', '{"a":12345678901234567890}', '[1,"x y"]', '"top"']
    for who in ("pylance", "lancepy"):
        _write(tmp_path / who, docs)
        (lance if who == "pylance" else lancepy).dataset(str(tmp_path / who)).create_scalar_index("doc", "INVERTED")
    for text in ["a,number,1e+22", "a,number,1e22", "a,number,1000.0", "a,number,1E3", "c,number,1.5", "c,number,1.50",
                 "k,number,1e-7", "n,number,-0.0", "a,number,12345678901234567890", ",number,1", ",str,x", ",str,top"]:
        ref = lance.dataset(str(tmp_path / "pylance")).to_table(full_text_query=text, columns=["id"])
        for who in ("pylance", "lancepy"):
            got = lancepy.dataset(str(tmp_path / who)).to_table(full_text_query=text, columns=["id"])
            assert_same(ref, got, limited=False)
    assert lancepy.dataset(str(tmp_path / "lancepy")).to_table(full_text_query="a,number,1e+22").column("id").to_pylist() == [0]


def test_malformed_queries_and_options_refused(tmp_path):
    """A query that is not triplets fails in both libraries; ``lance_tokenizer`` is not an
    option of pylance's ``create_scalar_index``, nor of lancepy's; a plain string column is
    indexed as text."""
    _write(tmp_path / "d", ['{"a":"x"}'])
    lance.dataset(str(tmp_path / "d")).create_scalar_index("doc", "INVERTED")
    ds = lancepy.dataset(str(tmp_path / "d"))
    for text in ["brown", "a,string,x", "a,str,x;"]:
        with pytest.raises(ValueError, match="Invalid triple"):  # (pyarrow's ArrowInvalid)
            lance.dataset(str(tmp_path / "d")).to_table(full_text_query=text)
        with pytest.raises(InvalidArgumentError, match="Invalid triple"):
            ds.to_table(full_text_query=text)
    with pytest.raises(ValueError, match="lance_tokenizer"):
        lance.dataset(str(tmp_path / "d")).create_scalar_index("doc", "INVERTED", lance_tokenizer="json")
    with pytest.raises(TypeError, match="lance_tokenizer"):  # (not a parameter of lancepy's)
        ds.create_scalar_index("doc", "INVERTED", lance_tokenizer="json")
    t = pa.table({"s": ['{"a":"x"}', "plain words"]})
    plain = lancepy.write_dataset(t, str(tmp_path / "s"))
    plain.create_scalar_index("s", "INVERTED")
    assert plain.to_table(full_text_query="words").num_rows == 1
    assert plain.to_table(full_text_query="x").num_rows == 1


def _random_json_text(rng: random.Random, depth: int = 0) -> str:
    """A random JSON text with odd but valid corners: escapes, non-ASCII keys, repeated
    keys, numbers in every form JSON allows, whitespace between tokens."""
    ws = lambda: rng.choice(["", "", " ", "\n\t", "\r\n  "])  # noqa: E731
    r = rng.random()
    if depth < 4 and r < 0.3:
        keys = [rng.choice(["a", "b", "B", "é", "k\\u00e9y", "x y", "", "a.b", "日本"]) for _ in range(rng.randint(0, 4))]
        return "{" + ",".join(f'{ws()}"{k}"{ws()}:{_random_json_text(rng, depth + 1)}' for k in keys) + ws() + "}"
    if depth < 4 and r < 0.45:
        return "[" + ",".join(ws() + _random_json_text(rng, depth + 1) + ws() for _ in range(rng.randint(0, 3))) + "]"
    if r < 0.75:
        words = rng.choices(WORDS + ["\\n", "\\\"", "\\u00e9t\\u00e9", "\\ud83d\\ude00", "a\\/b", "tab\\there"], k=rng.randint(0, 5))
        return '"' + " ".join(words) + '"'
    if r < 0.9:
        sign = rng.choice(["", "-"])
        whole = rng.choice(["0", "7", "42", "18446744073709551616", "123456789012345678901234567890"])
        frac = rng.choice(["", ".0", ".5", ".25000"])
        exp = rng.choice(["", "e3", "E+2", "e-7", "E0"])
        return sign + whole + frac + exp
    return rng.choice(["true", "false", "null"])


def _reference_tokens(text: str, words) -> list:
    """What pylance's JSON document tokenizer makes of `text`: the flattened
    ``<path>,<type>,<value>`` tokens, keys in byte order (a repeated key: its last value),
    numbers as written, strings through `words` (the analyzer)."""
    def num(s):
        return ("\x00num", s)

    def pairs(items):
        return dict(items)  # (a repeated key keeps its last value)

    value = json.loads(text, parse_int=num, parse_float=num, object_pairs_hook=pairs)
    out = []

    def walk(v, path):
        if isinstance(v, dict):
            for k in sorted(v, key=lambda k: k.encode("utf-8", "surrogatepass")):
                walk(v[k], f"{path}.{k}" if path else k)
        elif isinstance(v, list):
            for x in v:
                walk(x, path)
        elif isinstance(v, tuple):
            out.append(f"{path},number,{v[1]}")
        elif v is None:
            out.append(f"{path},null,null")
        elif isinstance(v, bool):
            out.append(f"{path},bool,{'true' if v else 'false'}")
        else:
            out.extend(f"{path},str,{w}" for w in words(v))

    walk(value, "")
    return out


def test_generated_documents_tokenized_as_reference():
    """2,000 generated JSON texts (seeded) flattened by the native document tokenizer equal a
    reference flattening (Python's strict JSON parser, keys sorted, numbers as written); texts
    that are not JSON (damaged copies) are refused with InvalidArgumentError, as Python's
    parser refuses them."""
    from lancepy import _lancepy

    def analyze(texts):
        vocab, ids, offsets, _ = _lancepy.fts_analyze(texts, "simple", None, True, None, None, False, json=True)
        ids = memoryview(ids).cast("I")
        offs = memoryview(offsets).cast("Q")
        return [[vocab[ids[j]] for j in range(offs[i], offs[i + 1])] for i in range(len(texts))]

    def words(s):
        vocab, ids, _, _ = _lancepy.fts_analyze([s], "simple", None, True, None, None, False)
        return [vocab[i] for i in memoryview(ids).cast("I")]

    rng = random.Random(17)
    texts = [_random_json_text(rng) for _ in range(2000)]
    got = analyze(texts)
    for text, tokens in zip(texts, got):
        assert tokens == _reference_tokens(text, words), text
    refused = 0
    for text in texts[:600]:
        if len(text) < 2:
            continue
        cut = rng.randrange(len(text))
        bad = text[:cut] + rng.choice(["", "}", ",", "'", "\x01", "01", "NaN"]) + text[cut + 1:]
        try:
            json.loads(bad, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
            ok = True
        except ValueError:
            ok = False
        if ok:
            assert analyze([bad])[0] == _reference_tokens(bad, words), bad
        else:
            refused += 1
            with pytest.raises(InvalidArgumentError, match="not JSON"):
                analyze([bad])
    assert refused > 200
