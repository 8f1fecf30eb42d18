"""JSON columns (pyarrow's ``pa.json_()``, stored as ``lance.json`` JSONB), both directions with
pylance 14: what one library writes the other reads with the same values, the stored bytes
are the same, and generated JSON texts (seeded, thousands per run, in the lenient syntax
pylance accepts) are stored and read back exactly as pylance stores and reads them."""

from __future__ import annotations

import json
import os
import random

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import LanceError

lance = pytest.importorskip("lance")
if not hasattr(pa, "json_"):
    pytest.skip("pa.json_() needs pyarrow >= 19", allow_module_level=True)

JSON = pa.json_()


def _table(texts, name="j"):
    return pa.table({"id": pa.array(range(len(texts)), pa.int64()), name: pa.array(texts, type=JSON)})


def _stored_bytes(uri, column="j"):
    """The JSONB values as stored, read from the data files with lancepy's file reader (a
    file read returns what is stored)."""
    from lancepy.file import LanceFileReader

    out = []
    ds = lancepy.dataset(uri)
    for frag in ds.get_fragments():
        for f in frag.metadata.files:
            path = os.path.join(uri, "data", f.path)
            out.extend(LanceFileReader(path).read_all(columns=[column]).to_table()[column].to_pylist())
    return out


def test_pylance_json_column_reads_as_text(tmp_path):
    texts = ['{"b":1,"a":[1,2.5,"x"]}', '{"a":"x"}', None, "[]", '"s"', "12", "-3", "1.5e300", "true"]
    uri = str(tmp_path / "p")
    lance.write_dataset(_table(texts), uri)
    want = lance.dataset(uri).to_table()
    ds = lancepy.dataset(uri)
    assert ds.schema.field("j").type == JSON
    got = ds.to_table()
    assert got.schema.field("j").type == JSON
    assert got.equals(want)
    assert ds.take([2, 0, 5]).equals(lance.dataset(uri).take([2, 0, 5]))
    assert ds.to_table(filter="id >= 4", columns=["j"]).equals(lance.dataset(uri).to_table(filter="id >= 4", columns=["j"]))
    batches = list(ds.to_batches(batch_size=2))
    assert pa.Table.from_batches(batches).equals(want)


def test_lancepy_json_column_is_stored_as_pylance_stores_it(tmp_path):
    texts = ['{"b":1,"a":[1,2]}', "{a: 'x', $k: [1,,3]}", None, "0x1F", "NaN", "", " [ ] "]
    mine, theirs = str(tmp_path / "mine"), str(tmp_path / "theirs")
    lancepy.write_dataset(_table(texts), mine)
    lance.write_dataset(_table(texts), theirs)
    assert _stored_bytes(mine) == _stored_bytes(theirs)
    assert lance.dataset(mine).to_table().equals(lance.dataset(theirs).to_table())
    assert lancepy.dataset(mine).to_table().equals(lance.dataset(theirs).to_table())
    field = lancepy.dataset(mine)._view.loaded.top_level_field("j")
    assert field.logical_type == "json" and field.entry["extension_name"] == "lance.json"


def test_appends_across_libraries_and_compaction(tmp_path):
    uri = str(tmp_path / "d")
    lancepy.write_dataset(_table(['{"k":1}', None]), uri)
    lance.write_dataset(_table(['{"k":2}']), uri, mode="append")
    lancepy.write_dataset(_table(['{"k":[3]}']), uri, mode="append")
    want = ['{"k":1}', None, '{"k":2}', '{"k":[3]}']
    assert lancepy.dataset(uri).to_table()["j"].to_pylist() == want
    assert lance.dataset(uri).to_table()["j"].to_pylist() == want
    lancepy.dataset(uri).optimize.compact_files()
    assert len(lance.dataset(uri).get_fragments()) == 1
    assert lance.dataset(uri).to_table()["j"].to_pylist() == want
    assert lancepy.dataset(uri).to_table()["j"].to_pylist() == want


def test_nested_json_both_directions(tmp_path):
    j = pa.ExtensionArray.from_storage(JSON, pa.array(['{"b":2,"a":1}', "7", None]))
    s = pa.StructArray.from_arrays([j, pa.array([1, 2, 3], pa.int32())], names=["j", "n"], mask=pa.array([False, True, False]))
    items = pa.ExtensionArray.from_storage(JSON, pa.array(["[1]", '{"x":null}']))
    lst = pa.ListArray.from_arrays(pa.array([0, 2, 2, 2], pa.int32()), items, mask=pa.array([False, True, False]))
    t = pa.table({"s": s, "l": lst})
    mine, theirs = str(tmp_path / "mine"), str(tmp_path / "theirs")
    lancepy.write_dataset(t, mine)
    lance.write_dataset(t, theirs)
    want = lance.dataset(theirs).to_table()
    assert lancepy.dataset(theirs).to_table().equals(want)
    assert lance.dataset(mine).to_table().equals(want)
    assert lancepy.dataset(mine).to_table().equals(want)
    assert lancepy.dataset(mine).schema.equals(lance.dataset(theirs).schema)


def test_invalid_json_is_refused_cleanly(tmp_path):
    uri = str(tmp_path / "d")
    lancepy.write_dataset(_table(['{"a":1}']), uri)
    for bad in ['{"a":1', '{"a":1,"a":2}', "[1 2]", '"\\q"']:
        with pytest.raises(LanceError, match="not JSON"):
            lancepy.write_dataset(_table([bad]), uri, mode="append")
        with pytest.raises(Exception):
            lance.write_dataset(_table([bad]), str(tmp_path / "p"), mode="overwrite")
    assert lancepy.dataset(uri).version == 1
    assert lancepy.dataset(uri).to_table()["j"].to_pylist() == ['{"a":1}']


# -- generated texts ---------------------------------------------------------------------


def _gen_value(rng, depth=0):
    kind = rng.random()
    if depth < 4 and kind < 0.18:
        items = [_gen_value(rng, depth + 1) for _ in range(rng.randrange(0, 5))]
        if items and rng.random() < 0.1:
            items.insert(rng.randrange(len(items)), "")  # an empty element: null
        return "[" + rng.choice([",", ", ", " ,\n"]).join(items) + "]"
    if depth < 4 and kind < 0.36:
        keys = rng.sample(["a", "b", "B", "é", "key", "$x", "_1", "中", "a b", "", "zz"], rng.randrange(0, 5))
        parts = []
        for k in keys:
            if k and " " not in k and rng.random() < 0.2:
                key = k  # bare key
            else:
                q = rng.choice(['"', "'"]) if k else '"'
                key = q + k + q
            parts.append(key + rng.choice([":", " : "]) + _gen_value(rng, depth + 1))
        return "{" + ",".join(parts) + "}"
    if kind < 0.55:
        return _gen_number(rng)
    if kind < 0.8:
        return _gen_string(rng)
    return rng.choice(["true", "false", "null", "True", "NULL", "fAlSe", "NaN", "Infinity", "-Infinity", "nan"])


def _gen_number(rng):
    r = rng.random()
    if r < 0.3:
        return str(rng.choice([0, 1, -1, 127, 128, -128, -129, 255, 256, 65535, 65536, 2**31, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30]))
    if r < 0.45:
        return str(rng.randrange(-(10**12), 10**12))
    if r < 0.7:
        x = rng.choice([rng.uniform(-1e6, 1e6), rng.uniform(-1, 1), 10 ** rng.uniform(-320, 308), -(10 ** rng.uniform(-30, 30))])
        return rng.choice([repr(x), "%.17g" % x, "%e" % x, "%.3f" % x])
    return rng.choice(["+7", "007", "1.", ".5", "-.5", "0x1F", "-0x80", "0x1.8", "0XfF", "1E3", "1e+2", "2.50", "-0", "-0.0", "0.0", "00.1e-2"])


_CHARS = 'ab "\\/é中😀\t\n\x01\x7f'


def _gen_string(rng):
    out = []
    for _ in range(rng.randrange(0, 8)):
        r = rng.random()
        if r < 0.6:
            c = rng.choice(_CHARS)
            out.append({'"': '\\"', "\\": "\\\\"}.get(c, c))
        else:
            out.append(rng.choice(["\\n", "\\t", "\\/", "\\b", "\\f", "\\r", "\\u00e9", "\\u{0041}", "\\ud83d\\ude00", "\\ud800", "\\udc00", "\\ud800\\u0041", "\\u0000"]))
    return '"' + "".join(out) + '"'


def test_generated_json_texts_match_pylance(tmp_path):
    rng = random.Random(20261128)
    texts = []
    for _ in range(3000):
        t = _gen_value(rng)
        if rng.random() < 0.1:
            t = rng.choice([" ", "\n", "\\n", "\\t"]) + t + rng.choice([" ", "\r\n", "\\x0C", ""])
        if rng.random() < 0.1 and t:
            # A damaged text: cut short, or a character put in (some stay valid JSON).
            at = rng.randrange(len(t) + 1)
            t = t[:at] if rng.random() < 0.5 else t[:at] + rng.choice(':,{}[]"\\x0-.e') + t[at:]
        texts.append(t)
    # Texts pylance refuses (duplicate keys after generation, ...) are checked one by one
    # below; the rest are written together by each library.
    ok, refused = [], []
    for t in texts:
        try:
            lancepy_ok = True
            lancepy._lancepy.jsonb_encode(t)
        except LanceError:
            lancepy_ok = False
        (ok if lancepy_ok else refused).append(t)
    mine, theirs = str(tmp_path / "mine"), str(tmp_path / "theirs")
    lance.write_dataset(_table(ok), theirs)
    lancepy.write_dataset(_table(ok), mine)
    theirs_bytes = _stored_bytes(theirs)
    mine_bytes = _stored_bytes(mine)
    diff = [(t, a, b) for t, a, b in zip(ok, mine_bytes, theirs_bytes) if a != b]
    assert not diff, diff[:5]
    want = lance.dataset(theirs).to_table()["j"].to_pylist()
    assert lancepy.dataset(theirs).to_table()["j"].to_pylist() == want
    assert lancepy.dataset(mine).to_table()["j"].to_pylist() == want
    # What lancepy refuses, pylance refuses too.
    assert len(refused) > 50
    for i, t in enumerate(refused[:60]):
        with pytest.raises(Exception):
            lance.write_dataset(_table([t]), str(tmp_path / f"r{i}"))
    # What reads return is stored again as the same bytes (where it holds no null: NaN and
    # infinities read as null).
    again = str(tmp_path / "again")
    lancepy.write_dataset(_table(want), again)
    checked = 0
    for text, a, b in zip(want, _stored_bytes(again), mine_bytes):
        if text is not None and "null" not in text:
            assert a == b, text
            checked += 1
    assert checked > 1000


# -- JSON filter functions -----------------------------------------------------------------

# (no slices such as `[0 to 1]`: pylance 14 aborts on a slice of an empty array, allocating
# for ~2^64 positions; slices are compared on arrays with elements below)
_PATH_STEPS = ['.a', '.b', '.B', '.key', '."a b"', '["a"]', '["é"]', '.中', '._1', ".zz", "[0]", "[1]", "[last]",
               "[last-1]", "[0, 2]", "[*]", ".*", "[-1]", "[5]", "[last+1]", ".**", ".**{1}", ".**{0 to 1}", ".**{2 to last}"]
_KEYS = ["a", "b", "B", "key", "a b", "é", "中", "_1", "zz", "0", "1", "2", "", "missing"]


def _gen_path(rng):
    r = rng.random()
    if r < 0.04:
        return rng.choice(["$.a[?(@ > 1)]", "$.a +", "$[", "$.", "@.a", "$.$x", "$[a]"])  # refused by both
    steps = "".join(rng.choice(_PATH_STEPS) for _ in range(rng.randrange(0, 4)))
    if r < 0.12 and steps.startswith("."):
        return steps[1:]  # a bare first name: `a.b`
    return "$" + steps


def _gen_call(rng):
    name = rng.choice(["json_extract", "json_exists", "json_array_length", "json_array_contains",
                       "json_get", "json_get_string", "json_get_int", "json_get_float", "json_get_bool"])
    if name in ("json_extract", "json_exists", "json_array_length"):
        return f"{name}(j, '{_gen_path(rng)}')"
    if name == "json_array_contains":
        return f"{name}(j, '{_gen_path(rng)}', '{rng.choice(['1', 'x', '2.5', 'true', 'null', '[]', 'a'])}')"
    if name == "json_get":
        # JSONB out: read through another function
        return f"json_extract(json_get(j, '{rng.choice(_KEYS)}'), '{_gen_path(rng)}')"
    return f"{name}(j, '{rng.choice(_KEYS)}')"


def _project(lib, uri, expr):
    try:
        return lib.dataset(uri).to_table(columns={"id": "id", "x": expr}).to_pydict()
    except Exception as e:  # noqa: BLE001 - compared below: both libraries refuse
        return ("refused", type(e).__name__)


def test_generated_json_functions_match_pylance(tmp_path):
    rng = random.Random(1128)
    docs = [_gen_value(rng) for _ in range(400)] + [None, '{"a":[1,2,3],"b":{"a":"x"}}', '[{"a":1},{"a":2}]']
    uri = str(tmp_path / "docs")
    lance.write_dataset(_table(docs), uri, max_rows_per_file=150)
    compared = refused = 0
    for _ in range(700):
        expr = _gen_call(rng)
        want = _project(lance, uri, expr)
        got = _project(lancepy, uri, expr)
        if isinstance(want, tuple):
            assert isinstance(got, tuple), (expr, got)
            refused += 1
            continue
        assert got == want, expr
        compared += 1
    assert compared > 350 and refused > 10


def test_json_path_slices_match_pylance(tmp_path):
    docs = ['[1,2,3,4]', '{"a":[5,6]}', '"s"', '[[1,2],[3]]', '{"a":{"b":[7]}}']
    uri = str(tmp_path / "d")
    lance.write_dataset(_table(docs), uri)
    for path in ["$[0 to 1]", "$[1 to last]", "$[last-1 to last]", "$[0 to 9]", "$[-3 to 1]", "$[2 to 1]", "$[0, 1 to 2]",
                 "$.a[0 to last]", "$[*][0 to last]", "$[ 0 TO LAST ]"]:
        expr = f"json_extract(j, '{path}')"
        assert _project(lancepy, uri, expr) == _project(lance, uri, expr), path


def test_json_functions_in_filters(tmp_path):
    uri = str(tmp_path / "d")
    docs = ['{"name":"ann","age":31,"tags":["x","y"],"addr":{"city":"Oslo"}}', '{"name":"bob","age":"29","tags":[]}', None,
            '{"name":"cy","age":40.6,"tags":["y"],"addr":{"city":"Rome"}}']
    lancepy.write_dataset(_table(docs), uri)
    for f in [
        "json_get_string(j, 'name') = 'bob'",
        "json_get_int(j, 'age') > 30",
        "json_extract(j, '$.addr.city') = '\"Rome\"'",
        "json_array_contains(j, '$.tags', 'y')",
        "json_array_length(j, '$.tags') = 0",
        "json_exists(j, '$.addr') AND NOT json_exists(j, '$.addr.zip')",
        "json_get_string(json_get(j, 'addr'), 'city') = 'Oslo'",
    ]:
        want = lance.dataset(uri).to_table(filter=f)["id"].to_pylist()
        assert lancepy.dataset(uri).to_table(filter=f)["id"].to_pylist() == want, f
        assert lancepy.dataset(uri).count_rows(f) == len(want), f
    with pytest.raises(lancepy.exceptions.NotSupportedError, match="filter expressions"):
        lancepy.dataset(uri).to_table(filter="json_exists(j, '$.tags[?(@ == \"x\")]')")


@pytest.mark.parametrize("given_schema", [False, True])
def test_file_writer_stores_json_text_as_pylance_does(tmp_path, given_schema):
    """The file-level writer takes JSON text (``pa.json_()``) and stores it as JSONB with
    ``lance.json``, as pylance's file writer does; file-level reads of either library return
    the stored form, the same bytes."""
    from lance.file import LanceFileReader as PReader
    from lance.file import LanceFileWriter as PWriter

    from lancepy.file import LanceFileReader, LanceFileWriter

    t = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                  "j": pa.array(['{"b":[1,2.5],"a":"x"}', None, "{a: 'bare'}"], type=JSON)})
    kw = {"schema": t.schema} if given_schema else {}
    with PWriter(str(tmp_path / "p.lance"), **kw) as w:
        w.write_batch(t)
    with LanceFileWriter(str(tmp_path / "l.lance"), **kw) as w:
        w.write_batch(t)
    want = PReader(str(tmp_path / "p.lance")).read_all().to_table()
    assert want.schema.field("j").type == pa.large_binary()
    for path in ("p.lance", "l.lance"):
        for reader in (PReader, LanceFileReader):
            got = reader(str(tmp_path / path)).read_all().to_table()
            assert got.column("j").to_pylist() == want.column("j").to_pylist(), (path, reader)
            assert got.schema.field("j").metadata[b"ARROW:extension:name"] == b"lance.json"


def test_json_function_filters_read_stored_jsonb(tmp_path):
    """A filter that reads its JSON columns through JSON functions only is evaluated over the
    stored JSONB (no text made for rows it drops): every scan path (whole table, limits,
    late columns taken or scanned, batches, counts) gives pylance's rows, JSON text
    included; a filter that also reads the column otherwise keeps the text form."""
    from lancepy.filters import compile_filter

    rng = random.Random(5)
    docs = []
    for i in range(3000):
        if rng.random() < 0.05:
            docs.append(None)
            continue
        d = {"n": i, "k": rng.choice(["a", "b", "c", None]), "t": rng.sample(["x", "y", "z", "w"], rng.randint(0, 3))}
        if rng.random() < 0.3:
            d["sub"] = {"v": rng.random(), "s": rng.choice(["p", "q"])}
        docs.append(json.dumps(d))
    t = pa.table({"id": pa.array(range(len(docs)), pa.int64()), "j": pa.array(docs, type=JSON),
                  "x": pa.array([rng.random() for _ in docs]), "s": pa.array([f"r{i % 7}" for i in range(len(docs))])})
    uri = str(tmp_path / "d")
    lance.write_dataset(t, uri, max_rows_per_file=700)
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    filters = [
        "json_get_int(j, 'n') < 40",
        "json_get_int(j, 'n') % 3 = 0 AND x > 0.5",
        "json_get_string(j, 'k') = 'a' OR json_array_contains(j, '$.t', 'z')",
        "json_exists(j, '$.sub') AND json_get_float(json_get(j, 'sub'), 'v') > 0.9",
        "json_extract(j, '$.sub.s') = '\"p\"' AND s IN ('r1', 'r2')",
        "json_array_length(j, '$.t') >= 2",
        "NOT json_exists(j, '$.k')",
    ]
    for f in filters:
        assert compile_filter(f, ours.schema).stored is not None, f
        for kw in [{}, {"columns": ["id", "j"]}, {"columns": ["s", "id"]}, {"columns": ["j"], "limit": 7},
                   {"columns": ["id", "x"], "limit": 25, "offset": 3}, {"limit": 5}]:
            want = theirs.to_table(filter=f, **kw)
            got = ours.to_table(filter=f, **kw)
            assert got.equals(want), (f, kw)
            batches = list(ours.to_batches(filter=f, batch_size=64, **kw))
            got_b = pa.Table.from_batches(batches, schema=got.schema) if batches else got.slice(0, 0)
            assert got_b.equals(want), (f, kw)
        assert ours.count_rows(f) == theirs.count_rows(f), f
    for f in ["json_get_int(j, 'n') < 40 OR j IS NULL", "json_get_string(j, 'k') = 'a' AND j IS NOT NULL"]:
        assert compile_filter(f, ours.schema).stored is None, f
        assert ours.to_table(filter=f).equals(theirs.to_table(filter=f)), f
        assert ours.count_rows(f) == theirs.count_rows(f), f
