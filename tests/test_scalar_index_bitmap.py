"""BITMAP scalar indices in pylance 14's format: lancepy's file and IndexMetadata equal
pylance's for the same data (bitmaps byte for byte); pylance uses lancepy's index and lancepy
pylance's (their plans show ``ScalarIndexQuery``), with the rows of an unindexed scan; a
seeded differential test of generated filters (with deletions and a fragment appended after
the index) against the unindexed scan; compaction, optimize_indices and index_statistics
as pylance's."""

from __future__ import annotations

import os
import shutil
import uuid
from typing import Any, Dict, List

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy import _lancepy
from lancepy.exceptions import CorruptFileError, NotSupportedError

lance = pytest.importorskip("lance")
pytestmark = pytest.mark.interop

COLUMNS = ("i", "s", "f", "b", "u8")


def make_table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints = rng.integers(0, 40, n)
    floats = rng.integers(0, 10, n).astype(np.float64) / 4
    floats[rng.random(n) < 0.02] = np.nan
    return pa.table(
        {
            "i": pa.array(ints, mask=rng.random(n) < 0.05),
            "s": pa.array([f"v{v:02d}" if v % 7 else None for v in ints]),
            "f": pa.array(floats, mask=rng.random(n) < 0.03),
            "b": pa.array(ints % 3 == 0, mask=rng.random(n) < 0.05),
            "u8": pa.array((ints % 9).astype(np.uint8)),
        }
    )


def twin_datasets(tmp_path: Any, n: int = 3000) -> tuple:
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    lance.write_dataset(make_table(n), theirs, max_rows_per_file=1000)
    lance.dataset(theirs).delete("u8 = 4")
    shutil.copytree(theirs, ours)
    return theirs, ours


def raw_entries(uri: str) -> List[Dict[str, Any]]:
    import json

    ds = lancepy.dataset(uri)
    return json.loads(_lancepy.index_section_to_json(ds._view.loaded.index_section))["indices"]


def lookup_table(uri: str, entry: Dict[str, Any]) -> pa.Table:
    path = os.path.join(uri, "_indices", str(uuid.UUID(bytes=bytes(entry["uuid"]["uuid"]))), "bitmap_page_lookup.lance")
    return lance.file.LanceFileReader(path).read_all().to_table()


def _key(v: Any) -> Any:
    return "NaN" if isinstance(v, float) and v != v else v


def test_files_and_metadata_equal_pylances(tmp_path: Any) -> None:
    theirs, ours = twin_datasets(tmp_path)
    for col in COLUMNS:
        lance.dataset(theirs).create_scalar_index(col, "BITMAP")
        lancepy.dataset(ours).create_scalar_index(col, "BITMAP")
    t_entries, o_entries = raw_entries(theirs), raw_entries(ours)
    assert [e["name"] for e in o_entries] == [e["name"] for e in t_entries] == [f"{c}_idx" for c in COLUMNS]
    for t, o in zip(t_entries, o_entries):
        for k in ("fields", "fragment_bitmap", "index_details", "index_version", "covering_fields", "base_id"):
            assert o[k] == t[k], (o["name"], k)
        assert [f["path"] for f in o["files"]] == [f["path"] for f in t["files"]] == ["bitmap_page_lookup.lance"]
        tt, ot = lookup_table(theirs, t), lookup_table(ours, o)
        assert ot.schema.equals(tt.schema, check_metadata=True), o["name"]
        t_map = {_key(k): b for k, b in zip(tt.column("keys").to_pylist(), tt.column("bitmaps").to_pylist())}
        o_map = {_key(k): b for k, b in zip(ot.column("keys").to_pylist(), ot.column("bitmaps").to_pylist())}
        assert o_map == t_map, o["name"]  # (the bitmaps byte for byte)
        assert ot.column("keys").null_count == tt.column("keys").null_count
        if ot.column("keys").null_count:
            assert ot.column("keys")[0].as_py() is None  # (the null key first, as pylance)
    key = lambda d: (d.name, d.type_url, d.num_rows_indexed, list(d.fields), list(d.field_names))  # noqa: E731
    want = sorted(key(d) for d in lance.dataset(theirs).describe_indices())
    assert sorted(key(d) for d in lancepy.dataset(ours).describe_indices()) == want
    assert sorted(key(d) for d in lancepy.dataset(theirs).describe_indices()) == want
    for col in COLUMNS:
        stats = lancepy.dataset(ours).stats.index_stats(f"{col}_idx")
        want = lance.dataset(theirs).stats.index_stats(f"{col}_idx")
        assert {k: v for k, v in stats.items() if k != "updated_at_timestamp_ms"} == {
            k: v for k, v in want.items() if k != "updated_at_timestamp_ms"
        }


FILTERS = [
    "i = 7", "i != 7", "NOT (i = 7)", "i IS NULL", "i IS NOT NULL", "i IN (1, 2, 39)", "i > 30", "i <= 3",
    "i BETWEEN 5 AND 9", "s = 'v03'", "s != 'v03'", "s IS NULL", "s IN ('v01', 'v10')", "s >= 'v35'",
    "f = 0.5", "f > 2.0", "f IS NULL", "b = true", "b = false", "b IS NULL", "u8 = 3", "u8 < 2",
    "i = 7 AND s = 'v07'", "i = 7 OR u8 = 2", "NOT (i = 3 OR u8 = 1)", "i != 5 AND b = true",
]


def _rows(ds: Any, flt: str) -> List[Dict[str, Any]]:
    """The rows matching `flt`, by row id, NaN made comparable."""
    rows = ds.to_table(filter=flt, with_row_id=True).sort_by("_rowid").to_pylist()
    return [{k: _key(v) for k, v in r.items()} for r in rows]


def _values(t: pa.Table) -> List[Dict[str, Any]]:
    return [{k: _key(v) for k, v in r.items()} for r in t.to_pylist()]


def test_pylance_uses_ours_and_we_use_theirs(tmp_path: Any) -> None:
    theirs, ours = twin_datasets(tmp_path)
    plain = str(tmp_path / "plain")
    shutil.copytree(theirs, plain)
    for col in COLUMNS:
        lance.dataset(theirs).create_scalar_index(col, "BITMAP")
        lancepy.dataset(ours).create_scalar_index(col, "BITMAP")
    for flt in FILTERS:
        expected = _rows(lance.dataset(plain), flt)
        for uri in (theirs, ours):
            for lib in (lance, lancepy):
                got = _rows(lib.dataset(uri), flt)
                assert got == expected, (flt, uri, lib.__name__)
        assert "ScalarIndexQuery" in lance.dataset(ours).scanner(filter=flt).explain_plan(), flt
    for flt in ("i = 7", "i != 7", "i IS NULL", "i IN (1, 2, 39)", "s = 'v03'", "b = true"):
        for uri in (theirs, ours):
            mine = lancepy.dataset(uri).scanner(filter=flt).explain_plan()
            pyl = lance.dataset(uri).scanner(filter=flt).explain_plan()
            query = pyl.split("ScalarIndexQuery: query=")[1].splitlines()[0]
            assert f"ScalarIndexQuery: query={query}" in mine, (flt, mine, pyl)


def _random_filter(rng: np.random.Generator, depth: int = 0) -> str:
    r = rng.random()
    if depth < 2 and r < 0.25:
        op = ["AND", "OR"][int(rng.integers(2))]
        return f"({_random_filter(rng, depth + 1)} {op} {_random_filter(rng, depth + 1)})"
    if depth < 2 and r < 0.35:
        return f"NOT ({_random_filter(rng, depth + 1)})"
    col = ["i", "s", "u8", "b", "f"][int(rng.integers(5))]
    lit = {
        "i": lambda: str(int(rng.integers(-2, 42))),
        "u8": lambda: str(int(rng.integers(0, 10))),
        "s": lambda: f"'v{int(rng.integers(0, 41)):02d}'",
        "b": lambda: ["true", "false"][int(rng.integers(2))],
        "f": lambda: str(float(rng.integers(0, 12)) / 4),
    }[col]
    kind = int(rng.integers(6))
    if kind == 0:
        return f"{col} IS NULL"
    if kind == 1:
        return f"{col} IN ({', '.join(lit() for _ in range(int(rng.integers(1, 4))))})"
    if kind == 2 and col != "b":
        return f"{col} BETWEEN {lit()} AND {lit()}"
    op = ["=", "!=", "<", "<=", ">", ">="][int(rng.integers(6))] if col != "b" else ["=", "!="][int(rng.integers(2))]
    return f"{col} {op} {lit()}"


@pytest.mark.parametrize("kind", ["BITMAP", "BTREE"])
def test_differential_generated_filters(tmp_path: Any, kind: str) -> None:
    """Seeded filters: the indexed dataset (rows deleted after the index was built, a
    fragment appended after it) returns exactly the rows of an unindexed copy."""
    indexed, plain = str(tmp_path / "indexed"), str(tmp_path / "plain")
    lance.write_dataset(make_table(1500, seed=5), indexed, max_rows_per_file=500)
    ds = lancepy.dataset(indexed)
    for col in ("i", "s", "u8", "b", "f"):
        ds.create_scalar_index(col, kind)
    lancepy.dataset(indexed).delete("i = 11 OR u8 = 5")
    lancepy.dataset(indexed).insert(make_table(300, seed=6))
    shutil.copytree(indexed, plain)
    for e in lancepy.dataset(plain).list_indices():
        lancepy.dataset(plain).drop_index(e["name"])
    with_index, without = lancepy.dataset(indexed), lancepy.dataset(plain)
    assert len(with_index.list_indices()) == 5 and not without.list_indices()
    rng = np.random.default_rng(1234)
    used = 0
    for _ in range(1500):
        flt = _random_filter(rng)
        got = with_index.to_table(filter=flt, columns=["i"], with_row_id=True).column("_rowid").to_pylist()
        want = without.to_table(filter=flt, columns=["i"], with_row_id=True).column("_rowid").to_pylist()
        assert sorted(got) == sorted(want), flt
        used += "ScalarIndexQuery" in with_index.scanner(filter=flt).explain_plan() if _ % 10 == 0 else 0
    assert used > 50  # (most filters are answered from the indices)


def test_maintenance_as_pylance(tmp_path: Any) -> None:
    theirs, ours = twin_datasets(tmp_path)
    lance.dataset(theirs).create_scalar_index("i", "BITMAP")
    lancepy.dataset(ours).create_scalar_index("i", "BITMAP")
    for uri, lib in ((theirs, lance), (ours, lancepy)):
        lib.dataset(uri).insert(make_table(500, seed=9)) if lib is lancepy else lance.write_dataset(
            make_table(500, seed=9), uri, mode="append"
        )
    stats = lambda lib, uri: {k: v for k, v in lib.dataset(uri).stats.index_stats("i_idx").items() if k != "updated_at_timestamp_ms"}  # noqa: E731
    assert stats(lancepy, ours) == stats(lance, theirs)
    assert stats(lancepy, ours)["num_unindexed_fragments"] == 1
    assert _rows(lancepy.dataset(ours), "i = 3") == _rows(lance.dataset(theirs), "i = 3")
    lancepy.dataset(ours).optimize.optimize_indices()
    lance.dataset(theirs).optimize.optimize_indices()
    assert stats(lancepy, ours) == stats(lance, theirs)
    assert stats(lancepy, theirs) == stats(lance, theirs)
    lancepy.dataset(ours).optimize.compact_files(target_rows_per_fragment=5000)
    ds = lancepy.dataset(ours)
    assert len(ds.get_fragments()) == 1 and ds.list_indices()[0]["fragment_ids"] == {ds.get_fragments()[0].fragment_id}
    plain = str(tmp_path / "plain")
    shutil.copytree(theirs, plain)
    lance.dataset(plain).drop_index("i_idx")
    for flt in ("i = 3", "i != 3", "i IS NULL", "i > 35"):
        assert "ScalarIndexQuery" in lance.dataset(ours).scanner(filter=flt).explain_plan()
        want = lance.dataset(plain).to_table(filter=flt).sort_by([(c, "ascending") for c in COLUMNS])
        for lib in (lance, lancepy):
            got = lib.dataset(ours).to_table(filter=flt).sort_by([(c, "ascending") for c in COLUMNS])
            assert _values(got) == _values(want), (flt, lib.__name__)
    lancepy.dataset(ours).drop_index("i_idx")
    assert lance.dataset(ours).list_indices() == []


def test_stable_row_ids_refused(tmp_path: Any) -> None:
    uri = str(tmp_path / "s")
    lance.write_dataset(make_table(100), uri, enable_stable_row_ids=True)
    with pytest.raises(NotSupportedError, match="stable row ids"):
        lancepy.dataset(uri).create_scalar_index("i", "BITMAP")
    lance.dataset(uri).create_scalar_index("i", "BITMAP")  # (pylance's, keyed by row id: not used)
    ds = lancepy.dataset(uri)
    assert "ScalarIndexQuery" not in ds.scanner(filter="i = 3").explain_plan()
    assert _rows(ds, "i = 3") == _rows(lance.dataset(uri), "i = 3")


def test_native_bitmaps_round_trip_and_reject_garbage() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        sets = [np.unique(rng.integers(0, 3, 50).astype(np.uint64) << np.uint64(32) | rng.integers(0, 70000, 50).astype(np.uint64)) for _ in range(4)]
        flat = np.concatenate(sets)
        offsets = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).tolist()
        blobs = _lancepy.row_addr_maps_serialize(flat.astype("<u8").tobytes(), offsets)
        data, lengths, full = _lancepy.row_addr_maps_deserialize(blobs)
        assert np.array_equal(np.frombuffer(data, "<u8"), flat) and lengths == [len(s) for s in sets] and not full
    with pytest.raises(CorruptFileError):
        _lancepy.row_addr_maps_deserialize([b"\x01\x00\x00\x00\x00"])
    with pytest.raises(CorruptFileError):
        _lancepy.row_addr_maps_deserialize([b"\x01\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00abcde"])
    with pytest.raises(lancepy.exceptions.LanceError):
        _lancepy.row_addr_maps_serialize(b"\x00" * 8, [0, 2])


def make_list_table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints, strs = [], []
    for _ in range(n):
        k = int(rng.integers(0, 4))
        row = [int(v) if rng.random() > 0.05 else None for v in rng.integers(0, 12, k)]
        ints.append(None if rng.random() < 0.05 else row)
        strs.append(None if rng.random() < 0.05 else [f"t{v}" for v in rng.integers(0, 6, int(rng.integers(0, 3)))])
    return pa.table({"l": pa.array(ints, pa.list_(pa.int64())), "ls": pa.array(strs, pa.list_(pa.string()))})


def test_label_list_files_equal_pylances_and_interop(tmp_path: Any) -> None:
    theirs, ours, plain = (str(tmp_path / n) for n in ("theirs", "ours", "plain"))
    lance.write_dataset(make_list_table(2000), theirs, max_rows_per_file=700)
    lance.dataset(theirs).delete("array_has_any(l, [3])")
    shutil.copytree(theirs, ours)
    shutil.copytree(theirs, plain)
    for col in ("l", "ls"):
        lance.dataset(theirs).create_scalar_index(col, "LABEL_LIST")
        lancepy.dataset(ours).create_scalar_index(col, "LABEL_LIST")
    for t, o in zip(raw_entries(theirs), raw_entries(ours)):
        for k in ("name", "fields", "fragment_bitmap", "index_details", "index_version"):
            assert o[k] == t[k], k
        path = lambda uri, e: os.path.join(uri, "_indices", str(uuid.UUID(bytes=bytes(e["uuid"]["uuid"]))), "bitmap_page_lookup.lance")  # noqa: E731
        rt, ro = lance.file.LanceFileReader(path(theirs, t)), lance.file.LanceFileReader(path(ours, o))
        tt, ot = rt.read_all().to_table(), ro.read_all().to_table()
        assert ot.schema.equals(tt.schema, check_metadata=True)
        assert ot.to_pydict() == tt.to_pydict()  # (keys and bitmaps byte for byte)
        assert ro.read_global_buffer(1) == rt.read_global_buffer(1)  # (the null lists)
    filters = [
        "array_has_any(l, [1])", "array_has_any(l, [1, 7, 11])", "array_has_all(l, [2, 5])",
        "array_has_any(ls, ['t1', 't4'])", "array_has_all(ls, ['t0'])", "NOT array_has_any(l, [1])",
        "array_has_any(l, [4]) AND array_has_any(ls, ['t2'])", "array_has_any(l, [4]) OR array_has_all(ls, ['t5'])",
        "array_has_any(l, [4]) AND NOT array_has_any(ls, ['t2'])",
    ]
    for flt in filters:
        want = _rows(lance.dataset(plain), flt)
        for uri in (theirs, ours):
            for lib in (lance, lancepy):
                assert _rows(lib.dataset(uri), flt) == want, (flt, uri, lib.__name__)
            pyl = lance.dataset(uri).scanner(filter=flt).explain_plan()
            query = pyl.split("ScalarIndexQuery: query=")[1].splitlines()[0]
            assert f"ScalarIndexQuery: query={query}" in lancepy.dataset(uri).scanner(filter=flt).explain_plan(), flt
        assert "ScalarIndexQuery" in lance.dataset(ours).scanner(filter=flt).explain_plan(), flt
    # maintenance: a fragment appended (scanned until optimize_indices adds it), compaction remaps
    lance.write_dataset(make_list_table(300, seed=2), theirs, mode="append")
    lancepy.dataset(ours).insert(make_list_table(300, seed=2))
    lance.write_dataset(make_list_table(300, seed=2), plain, mode="append")
    for flt in filters[:3]:
        assert _rows(lancepy.dataset(ours), flt) == _rows(lance.dataset(plain), flt), flt
    lance.dataset(theirs).optimize.optimize_indices()
    lancepy.dataset(ours).optimize.optimize_indices()
    st = lambda lib, uri: {k: v for k, v in lib.dataset(uri).stats.index_stats("l_idx").items() if k != "updated_at_timestamp_ms"}  # noqa: E731
    assert st(lancepy, ours) == st(lance, theirs) and st(lancepy, ours)["num_unindexed_fragments"] == 0
    lancepy.dataset(ours).optimize.compact_files(target_rows_per_fragment=10_000)
    assert len(lancepy.dataset(ours).get_fragments()) == 1
    for flt in filters:
        want = sorted(map(str, _values(lance.dataset(plain).to_table(filter=flt))))
        for lib in (lance, lancepy):
            assert sorted(map(str, _values(lib.dataset(ours).to_table(filter=flt)))) == want, (flt, lib.__name__)
        assert "ScalarIndexQuery" in lance.dataset(ours).scanner(filter=flt).explain_plan(), flt
    with pytest.raises(TypeError, match="BTREE/BITMAP index column l"):
        lancepy.dataset(ours).create_scalar_index("l", "BITMAP")
    lancepy.dataset(ours).add_columns({"x": "1"})
    with pytest.raises(TypeError, match="LABEL_LIST index column x must be a list"):
        lancepy.dataset(ours).create_scalar_index("x", "LABEL_LIST")


def test_label_list_differential_generated_filters(tmp_path: Any) -> None:
    """Seeded array_has_any / array_has_all filters (with NOT, AND, OR) on LABEL_LIST
    indices, rows deleted and a fragment appended after the index: the rows of an
    unindexed copy."""
    indexed, plain = str(tmp_path / "indexed"), str(tmp_path / "plain")
    lance.write_dataset(make_list_table(1500, seed=11), indexed, max_rows_per_file=500)
    for col in ("l", "ls"):
        lancepy.dataset(indexed).create_scalar_index(col, "LABEL_LIST")
    lancepy.dataset(indexed).delete("array_has_any(l, [5])")
    lancepy.dataset(indexed).insert(make_list_table(200, seed=12))
    shutil.copytree(indexed, plain)
    for name in ("l_idx", "ls_idx"):
        lancepy.dataset(plain).drop_index(name)
    rng = np.random.default_rng(77)

    def leaf() -> str:
        fn = ["array_has_any", "array_has_all"][int(rng.integers(2))]
        if rng.random() < 0.5:
            vals = ", ".join(str(int(v)) for v in rng.integers(0, 13, int(rng.integers(1, 4))))
            return f"{fn}(l, [{vals}])"
        vals = ", ".join(f"'t{int(v)}'" for v in rng.integers(0, 7, int(rng.integers(1, 3))))
        return f"{fn}(ls, [{vals}])"

    def gen(depth: int = 0) -> str:
        r = rng.random()
        if depth < 2 and r < 0.3:
            return f"({gen(depth + 1)} {['AND', 'OR'][int(rng.integers(2))]} {gen(depth + 1)})"
        if depth < 2 and r < 0.45:
            return f"NOT ({gen(depth + 1)})"
        return leaf()

    with_index, without = lancepy.dataset(indexed), lancepy.dataset(plain)
    used = 0
    for _ in range(400):
        flt = gen()
        got = with_index.to_table(filter=flt, columns=["l"], with_row_id=True).column("_rowid").to_pylist()
        want = without.to_table(filter=flt, columns=["l"], with_row_id=True).column("_rowid").to_pylist()
        assert sorted(got) == sorted(want), flt
        used += "ScalarIndexQuery" in with_index.scanner(filter=flt).explain_plan()
    assert used > 200  # (most filters are answered from the indices)
