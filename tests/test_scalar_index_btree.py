"""BTREE scalar indices in pylance 14's format (spec/INDEX_FORMATS.md §1): lancepy's files
and IndexMetadata equal pylance's for the same data; pylance opens, lists and *uses*
lancepy's index (its plan shows ``ScalarIndexQuery``), with the rows of an unindexed scan;
lancepy lists pylance's; the arguments are checked as pylance checks them."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections import defaultdict
from typing import Any, Dict, List

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancepy
from conftest import assert_arrays_equal, assert_tables_equal
from lancepy import _lancepy
from lancepy.exceptions import IndexAlreadyExistsError, IndexedColumnError, InvalidArgumentError, LanceError, NotSupportedError

lance = pytest.importorskip("lance")
pytestmark = pytest.mark.interop


def make_table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints = rng.integers(0, n // 2, n)
    floats = rng.normal(size=n)
    floats[rng.random(n) < 0.01] = np.nan
    floats[:3] = [0.0, -0.0, np.inf]
    return pa.table(
        {
            "i": pa.array(ints, mask=rng.random(n) < 0.02),
            "s": pa.array([f"s{v:06d}" if v % 11 else None for v in ints]),
            "f": pa.array(floats, mask=rng.random(n) < 0.01),
            "d": pa.array(ints.astype("datetime64[s]").astype("datetime64[ms]")),
            "b": pa.array(ints % 3 == 0),
            "u32": pa.array((ints % 1000).astype(np.uint32)),
        }
    )


def twin_datasets(tmp_path: Any, n: int = 10_000) -> tuple:
    """Two byte-identical copies of one pylance-written dataset (three fragments, some rows
    deleted): one for pylance to index, one for lancepy."""
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    lance.write_dataset(make_table(n), theirs, max_rows_per_file=4000)
    lance.dataset(theirs).delete("u32 < 7")
    shutil.copytree(theirs, ours)
    return theirs, ours


def index_entries(uri: str) -> List[Dict[str, Any]]:
    ds = lancepy.dataset(uri)
    return json.loads(_lancepy.index_section_to_json(ds._view.loaded.index_section))["indices"]


def segment_dir(uri: str, entry: Dict[str, Any]) -> str:
    return os.path.join(uri, "_indices", str(uuid.UUID(bytes=bytes(entry["uuid"]["uuid"]))))


def ids_by_value(t: pa.Table) -> Dict[Any, List[int]]:
    out: Dict[Any, List[int]] = defaultdict(list)
    for v, i in zip(t.column("values").to_pylist(), t.column("ids").to_pylist()):
        out["NaN" if isinstance(v, float) and v != v else v].append(i)
    return {k: sorted(v) for k, v in out.items()}


def assert_segment_files_match(theirs: str, ours: str, t_entry: Dict[str, Any], o_entry: Dict[str, Any]) -> None:
    """Same files, schemas (with metadata), row counts, page lookup tables, sorted values and
    row ids per value (ties are unordered in pylance's files)."""
    assert [f["path"] for f in o_entry["files"]] == [f["path"] for f in t_entry["files"]]
    for f in o_entry["files"]:
        assert os.path.getsize(os.path.join(segment_dir(ours, o_entry), f["path"])) == f["size_bytes"]
    for name in ("page_data.lance", "page_lookup.lance"):
        rt = lance.file.LanceFileReader(os.path.join(segment_dir(theirs, t_entry), name))
        ro = lance.file.LanceFileReader(os.path.join(segment_dir(ours, o_entry), name))
        assert ro.metadata().schema == rt.metadata().schema
        assert ro.metadata().schema.metadata == rt.metadata().schema.metadata
        assert ro.metadata().num_rows == rt.metadata().num_rows
        assert len(ro.metadata().global_buffers) == len(rt.metadata().global_buffers)
        assert (ro.metadata().major_version, ro.metadata().minor_version) == (2, 2)
        assert [len(c.pages) for c in ro.metadata().columns] == [len(c.pages) for c in rt.metadata().columns]
        tt, to = rt.read_all().to_table(), ro.read_all().to_table()
        if name == "page_lookup.lance":
            assert_tables_equal(tt, to, name)
        else:
            assert_arrays_equal(tt.column("values"), to.column("values"), name)
            assert ids_by_value(to) == ids_by_value(tt)
        # (and lancepy's own reader reads pylance's file the same)
        mine = lancepy.file.LanceFileReader(os.path.join(segment_dir(theirs, t_entry), name)).read_all().to_table()
        assert_tables_equal(tt, mine, name)


@pytest.mark.parametrize("column", ["i", "s", "f", "d", "b", "u32"])
def test_files_and_metadata_equal_pylances(tmp_path: Any, column: str) -> None:
    theirs, ours = twin_datasets(tmp_path)
    lance.dataset(theirs).create_scalar_index(column, "BTREE")
    lancepy.dataset(ours).create_scalar_index(column, "BTREE")
    (t_entry,), (o_entry,) = index_entries(theirs), index_entries(ours)
    for key in t_entry:
        if key not in ("uuid", "created_at", "files"):
            assert o_entry[key] == t_entry[key], key
    assert o_entry["index_details"] == {"type_url": "/lance.table.BTreeIndexDetails", "value": []}
    assert o_entry["index_version"] == 0 and o_entry["name"] == f"{column}_idx"
    assert_segment_files_match(theirs, ours, t_entry, o_entry)
    # the transaction pylance reads back is the same, bar uuids and sizes
    (t_txn,), (o_txn,) = lance.dataset(theirs).get_transactions(1), lance.dataset(ours).get_transactions(1)
    t_idx, o_idx = t_txn.operation.new_indices[0], o_txn.operation.new_indices[0]
    assert (o_idx.name, o_idx.fields, o_idx.dataset_version, o_idx.fragment_ids, o_idx.index_version) == (
        t_idx.name, t_idx.fields, t_idx.dataset_version, t_idx.fragment_ids, t_idx.index_version
    )
    assert o_idx.index_details == t_idx.index_details and o_txn.read_version == t_txn.read_version


def test_empty_and_all_null_columns(tmp_path: Any) -> None:
    t = pa.table({"x": pa.array([None] * 5000, pa.int32()), "y": pa.array(range(5000))})
    for uri in (tmp_path / "theirs", tmp_path / "ours"):
        lance.write_dataset(t, str(uri))
    lance.dataset(str(tmp_path / "theirs")).create_scalar_index("x", "BTREE")
    lancepy.dataset(str(tmp_path / "ours")).create_scalar_index("x", "BTREE")
    (t_entry,), (o_entry,) = index_entries(str(tmp_path / "theirs")), index_entries(str(tmp_path / "ours"))
    assert_segment_files_match(str(tmp_path / "theirs"), str(tmp_path / "ours"), t_entry, o_entry)


def test_train_false_is_an_empty_index_as_pylances(tmp_path: Any) -> None:
    theirs, ours = twin_datasets(tmp_path, 500)
    lance.dataset(theirs).create_scalar_index("i", "BTREE", train=False)
    lancepy.dataset(ours).create_scalar_index("i", "BTREE", train=False)
    (t_entry,), (o_entry,) = index_entries(theirs), index_entries(ours)
    assert o_entry["fragment_bitmap"] == t_entry["fragment_bitmap"]
    assert_segment_files_match(theirs, ours, t_entry, o_entry)
    # pylance answers from an empty index plus a scan of the unindexed fragments
    got = lance.dataset(ours).to_table(filter="i = 3")
    assert got.equals(lance.dataset(ours).to_table(filter="i = 3", use_scalar_index=False))


def random_filters(rng: np.random.Generator, t: pa.Table, count: int) -> List[str]:
    ints = [v for v in t.column("i").to_pylist() if v is not None]
    strs = [v for v in t.column("s").to_pylist() if v is not None]
    out = ["i IS NULL", "i IS NOT NULL", "s IS NULL", "f IS NULL", "f > 1.5", "f < -2.0", "b = true",
           "f IN (0.0, 1.5)", "f IN (-0.0)", "f = 0.0", "f NOT IN (0.0)"]  # (both zeros are in f)
    for _ in range(count):
        a, b = sorted(int(x) for x in rng.choice(ints, 2))
        s1, s2 = sorted(str(x) for x in rng.choice(strs, 2))
        out += [
            f"i = {a}",
            f"i IN ({a}, {b}, {b + 100000})",
            f"i >= {a} AND i < {b}",
            f"i BETWEEN {a} AND {b}",
            f"i > {b}",
            f"i != {a}",
            f"s = '{s1}'",
            f"s >= '{s1}' AND s <= '{s2}'",
            f"s IN ('{s1}', '{s2}')",
            f"u32 = {a % 1000}",
            f"u32 < {b % 1000}",
            f"f BETWEEN {rng.normal():.3f} AND {rng.normal() + 1:.3f}",
        ]
    return out


def test_pylance_uses_lancepys_index_with_the_same_rows(tmp_path: Any) -> None:
    theirs, ours = twin_datasets(tmp_path)
    ds = lancepy.dataset(ours)
    for column in ("i", "s", "f", "b", "u32"):
        ds.create_scalar_index(column, "BTREE")
    pl = lance.dataset(ours)
    listed = {d["name"]: d for d in pl.list_indices()}
    assert set(listed) == {"i_idx", "s_idx", "f_idx", "b_idx", "u32_idx"}
    assert listed["i_idx"]["type"] == "BTree" and listed["i_idx"]["fields"] == ["i"]
    assert listed["i_idx"]["fragment_ids"] == {0, 1, 2}
    live = pl.count_rows()
    for desc in pl.describe_indices():
        assert desc.type_url == "/lance.table.BTreeIndexDetails"
        assert desc.num_rows_indexed == live
    assert pl.index_statistics("i_idx")["index_type"] == "BTree"
    t = pl.to_table()
    for flt in random_filters(np.random.default_rng(7), t, 8):
        plan = pl.scanner(filter=flt).explain_plan(True)
        assert "ScalarIndexQuery" in plan, (flt, plan)
        got = pl.to_table(filter=flt, with_row_id=True).sort_by("_rowid")
        want = pl.to_table(filter=flt, with_row_id=True, use_scalar_index=False).sort_by("_rowid")
        assert_tables_equal(want, got, flt)
    assert "@i_idx(BTree)" in pl.scanner(filter="i = 5").explain_plan(True)


def test_index_covers_old_fragments_after_append(tmp_path: Any) -> None:
    _, ours = twin_datasets(tmp_path, 3000)
    lancepy.dataset(ours).create_scalar_index("i", "BTREE")
    lancepy.write_dataset(make_table(500, seed=3), ours, mode="append")
    pl = lance.dataset(ours)
    assert pl.list_indices()[0]["fragment_ids"] == {0}
    for flt in ("i = 17", "i < 40", "i IS NULL"):
        assert pl.to_table(filter=flt).sort_by("u32").num_rows == pl.to_table(
            filter=flt, use_scalar_index=False
        ).num_rows


def test_lancepy_lists_pylances_index(tmp_path: Any) -> None:
    theirs, _ = twin_datasets(tmp_path, 2000)
    lance.dataset(theirs).create_scalar_index("s", "BTREE", name="by_s")
    ds = lancepy.dataset(theirs)
    (entry,) = ds.list_indices()
    assert entry["name"] == "by_s" and entry["type"] == "BTree" and entry["fields"] == ["s"]
    assert entry["fragment_ids"] == {0}
    (desc,) = ds.describe_indices()
    assert desc.type_url == "/lance.table.BTreeIndexDetails" and desc.num_rows_indexed == ds.count_rows()


def test_replace_and_names(tmp_path: Any) -> None:
    _, ours = twin_datasets(tmp_path, 1000)
    ds = lancepy.dataset(ours)
    ds.create_scalar_index("i", "BTREE")
    first = ds.list_indices()[0]["uuid"]
    with pytest.raises(IndexAlreadyExistsError, match="already exists"):
        ds.create_scalar_index("i", "BTREE", replace=False)
    assert ds.version == 3
    ds.create_scalar_index("i", "BTREE")  # replace=True is the default, as in pylance
    (entry,) = ds.list_indices()
    assert entry["uuid"] != first and ds.version == 4
    ds.create_scalar_index("I", "BTREE", name="other", index_uuid="12345678-1234-5678-1234-567812345678")
    names = {e["name"]: e for e in lance.dataset(ours).list_indices()}
    assert set(names) == {"i_idx", "other"}
    assert names["other"]["uuid"] == "12345678-1234-5678-1234-567812345678" and names["other"]["fields"] == ["i"]


def test_argument_errors_leave_the_dataset_unchanged(tmp_path: Any) -> None:
    _, ours = twin_datasets(tmp_path, 500)
    ds = lancepy.dataset(ours)
    version = ds.version
    for kind in ("NGRAM", "ZONEMAP", "BLOOMFILTER"):
        with pytest.raises(NotImplementedError, match=kind):
            ds.create_scalar_index("i", kind)
    for kind in ("INVERTED", "FTS"):  # (built: of string columns only)
        with pytest.raises(TypeError, match="INVERTED"):
            ds.create_scalar_index("i", kind)
    with pytest.raises(NotImplementedError, match="Received HASH"):
        ds.create_scalar_index("i", "hash")
    with pytest.raises(NotSupportedError, match="with_position=, base_tokenizer="):
        ds.create_scalar_index("i", "BTREE", with_position=True, base_tokenizer="raw")
    with pytest.raises(NotSupportedError, match="format_version"):
        ds.create_scalar_index("i", "BTREE", format_version=2)
    with pytest.raises(InvalidArgumentError, match="progress_callback"):
        ds.create_scalar_index("i", "BTREE", progress_callback="print")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InvalidArgumentError, match="memory_limit"):
            ds.create_scalar_index("i", "BTREE", memory_limit=bad)
    with pytest.raises(InvalidArgumentError, match="create_index_uncommitted"):
        ds.create_scalar_index("i", "BTREE", fragment_ids=[0])
    with pytest.raises(KeyError, match="nope"):
        ds.create_scalar_index("nope", "BTREE")
    with pytest.raises(NotImplementedError, match="single column"):
        ds.create_scalar_index(["i", "s"], "BTREE")
    with pytest.raises(TypeError, match="BTREE"):
        lancepy.write_dataset(pa.table({"l": [[1], [2]]}), str(tmp_path / "lists")).create_scalar_index("l", "BTREE")
    assert ds.version == version and lancepy.dataset(ours).list_indices() == []


def test_failed_build_leaves_no_trace(tmp_path: Any, monkeypatch: Any) -> None:
    from lancepy._ops import btree

    _, ours = twin_datasets(tmp_path, 500)
    ds = lancepy.dataset(ours)
    version = ds.version
    real = btree.write_segment

    def failing(base: str, *args: Any, **kwargs: Any) -> Any:
        real(base, *args, **kwargs)  # the files are written, then the build fails
        raise LanceError("disk full")

    monkeypatch.setattr(btree, "write_segment", failing)
    with pytest.raises(LanceError, match="disk full"):
        ds.create_scalar_index("i", "BTREE")
    assert ds.version == version and lancepy.dataset(ours).version == version
    assert lancepy.dataset(ours).list_indices() == []
    leftovers = [f for _, _, fs in os.walk(os.path.join(ours, "_indices")) for f in fs]
    assert leftovers == []


# -- lancepy answers filters from a BTREE index (its own or pylance's) --------------------------


def lancepy_filters(rng: np.random.Generator, t: pa.Table, count: int) -> List[str]:
    """Seeded filters: what the index answers (=, IN, ranges, BETWEEN, IS NULL, and/or of
    them) mixed with what it does not (!=, IS NOT NULL, unindexed columns, coercions)."""
    ints = [v for v in t.column("i").to_pylist() if v is not None] or [0]
    out = random_filters(rng, t, count) + [
        "i = 100000000000000000000",
        "i < 9223372036854775808",
        "i > -9223372036854775809",
        "u32 IN (18446744073709551615, 5)",
        "f < 1e400",
        "s > 'zzz' OR s < ''",
    ]
    for _ in range(count):
        a, b = sorted(int(x) for x in rng.choice(ints, 2))
        out += [
            f"i = {a} OR s IS NULL",
            f"(i < {a} OR i > {b}) AND f > 0",
            f"i = {a} AND d IS NOT NULL",
            f"i = {a} OR d IS NULL",  # d unindexed: the OR cannot use the index
            f"i = {a + 0.5}",
            f"i > {a - 0.5} AND i < {a + 1.5}",
            f"u32 IN ({a % 1000}, -1, 5000000000)",
            "f = 'NaN'" if a % 2 else "f > -0.0",
            f"{a} <= i",
            f"s < 's{a:06d}' AND i >= {b}",
            f"s LIKE 's{a:06d}'",
            f"s LIKE 's{a:06d}'"[:-4] + "%'",  # prefix: s + 3 digits
            f"s LIKE 's{a:06d}'"[:-3] + "_1'",
            "s LIKE '%1'",
            f"s NOT LIKE 's{a:06d}'"[:-5] + "%'",
        ]
    return out


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
def test_lancepy_filters_with_the_index_equal_a_scan(tmp_path: Any, builder: str) -> None:
    theirs, _ = twin_datasets(tmp_path, 12_000)
    pl = lance.dataset(theirs)
    for column in ("i", "s", "f", "u32", "b"):
        if builder == "pylance":
            pl.create_scalar_index(column, "BTREE")
        else:
            lancepy.dataset(theirs).create_scalar_index(column, "BTREE")
    # rows deleted after the build and a fragment the index does not cover
    lance.dataset(theirs).delete("u32 BETWEEN 100 AND 120")
    lance.write_dataset(make_table(2000, seed=5), theirs, mode="append")
    ds = lancepy.dataset(theirs)
    t = ds.to_table()
    used = 0
    for flt in lancepy_filters(np.random.default_rng(11), t, 6):
        plan = ds.scanner(filter=flt).explain_plan(True)
        used += "ScalarIndexQuery" in plan
        got = ds.to_table(filter=flt, with_row_address=True)
        want = ds.to_table(filter=flt, with_row_address=True, use_scalar_index=False)
        assert_tables_equal(want, got, flt)
        assert ds.count_rows(filter=flt) == want.num_rows, flt
        batches = list(ds.to_batches(filter=flt, columns=["i"], batch_size=100))
        assert sum(b.num_rows for b in batches) == want.num_rows, flt
        # pylance agrees (where it takes the filter: it refuses `i = 2.5` on an integer column)
        try:
            theirs_count = lance.dataset(theirs).count_rows(filter=flt)
        except OSError:
            continue
        assert theirs_count == want.num_rows, flt
    assert used > 50
    assert "ScalarIndexQuery: query=[i = 7]@i_idx(BTree)" in ds.scanner(filter="i = 7").explain_plan()
    assert "ScalarIndexQuery" not in ds.scanner(filter="i = 7", use_scalar_index=False).explain_plan()
    # != alone matches most rows: scanned (pylance takes NOT([i = 7]) from its index); with a
    # narrow part it is that part less the exact answer for 7, as pylance plans it
    assert "ScalarIndexQuery" not in ds.scanner(filter="i != 7").explain_plan()
    text = "ScalarIndexQuery: query=AND([i < 20]@i_idx(BTree),NOT([i = 7]@i_idx(BTree)))"
    assert text in ds.scanner(filter="i < 20 AND i != 7").explain_plan()
    assert text in lance.dataset(theirs).scanner(filter="i < 20 AND i != 7").explain_plan()


def test_index_query_with_fragments_limit_offset_and_columns(tmp_path: Any) -> None:
    theirs, _ = twin_datasets(tmp_path, 9000)
    lancepy.dataset(theirs).create_scalar_index("i", "BTREE")
    lance.write_dataset(make_table(1000, seed=9), theirs, mode="append")
    ds = lancepy.dataset(theirs)
    for flt in ("i < 300", "i IN (1, 2, 3, 4, 5, 6, 7)", "i IS NULL", "i = -1"):
        for scan in (
            dict(limit=10),
            dict(offset=25, limit=40),
            dict(offset=5),
            dict(columns=["s"]),
            dict(fragments=[ds.get_fragment(3), ds.get_fragment(1)]),
            dict(with_row_id=True),
        ):
            got = ds.scanner(filter=flt, **scan).to_table()
            want = ds.scanner(filter=flt, use_scalar_index=False, **scan).to_table()
            assert_tables_equal(want, got, f"{flt} {scan}")


def test_stable_row_ids_index_holds_addresses_as_pylances(tmp_path: Any) -> None:
    """pylance 14 indexes row addresses even where the dataset has stable row ids, and
    remaps them when compaction moves rows: lancepy writes, remaps and reads them so."""
    import pyarrow.compute as pc

    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    for uri in (theirs, ours):
        lance.write_dataset(make_table(4000), uri, enable_stable_row_ids=True, max_rows_per_file=1000)
        lance.dataset(uri).delete("u32 < 300")
    lance.dataset(theirs).create_scalar_index("i", "BTREE")
    lancepy.dataset(ours).create_scalar_index("i", "BTREE")
    (t_entry,), (o_entry,) = index_entries(theirs), index_entries(ours)
    for key in t_entry:
        if key not in ("uuid", "created_at", "files"):
            assert o_entry[key] == t_entry[key], key
    assert o_entry["index_version"] == 1  # (pylance's mark: the ids are addresses)
    assert_segment_files_match(theirs, ours, t_entry, o_entry)
    pl = lance.dataset(ours)
    for flt in ("i < 400", "i = 500"):
        assert pl.count_rows(flt) == pl.scanner(filter=flt, use_scalar_index=False).count_rows(), flt
    ds = lancepy.dataset(ours)
    ds.delete("i % 3 = 0")
    ds.optimize.compact_files()
    ds = lancepy.dataset(ours)
    (entry,) = ds.list_indices()
    assert entry["fragment_ids"] == {f.fragment_id for f in ds.get_fragments()}
    pl = lance.dataset(ours)
    for flt in ("i = 13", "i < 400", "i IS NULL", "i IN (4, 5, 7)"):
        want = ds.to_table(filter=flt, use_scalar_index=False, with_row_id=True, with_row_address=True)
        assert "@i_idx(BTree)" in ds.scanner(filter=flt).explain_plan()
        assert_tables_equal(want, ds.to_table(filter=flt, with_row_id=True, with_row_address=True), flt)
        assert "ScalarIndexQuery" in pl.scanner(filter=flt).explain_plan(True)
        got = pl.to_table(filter=flt, with_row_id=True, with_row_address=True).sort_by("_rowaddr")
        assert_tables_equal(want.sort_by("_rowaddr"), got, flt)
    expr = pc.field("i") == 3
    assert ds.to_table(filter=expr).equals(ds.to_table(filter="i = 3", use_scalar_index=False))

def test_index_query_after_update_delete_and_cast(tmp_path: Any) -> None:
    _, ours = twin_datasets(tmp_path, 6000)
    ds = lancepy.dataset(ours)
    ds.create_scalar_index("i", "BTREE")
    ds.create_scalar_index("u32", "BTREE")
    ds.update({"i": "i + 1"}, where="i < 100")  # rows move to a new, unindexed fragment
    ds.delete("i BETWEEN 200 AND 260")
    for flt in ("i < 120", "i = 50", "i BETWEEN 150 AND 300", "i IS NULL", "u32 = 5"):
        assert "ScalarIndexQuery" in ds.scanner(filter=flt).explain_plan()
        assert_tables_equal(
            ds.to_table(filter=flt, with_row_address=True),
            ds.to_table(filter=flt, with_row_address=True, use_scalar_index=False),
            flt,
        )
    # A cast would leave the index describing other values: refused, as pylance refuses it,
    # until the index is dropped.
    with pytest.raises(IndexedColumnError, match="u32_idx"):
        ds.alter_columns({"path": "u32", "data_type": pa.int64()})
    assert "ScalarIndexQuery" in ds.scanner(filter="u32 = 5").explain_plan()
    ds.drop_index("u32_idx")
    ds.alter_columns({"path": "u32", "data_type": pa.int64()})
    assert ds.schema.field("u32").type == pa.int64()
    assert "ScalarIndexQuery" not in ds.scanner(filter="u32 = 5").explain_plan()
    assert_tables_equal(ds.to_table(filter="u32 = 5", use_scalar_index=False), ds.to_table(filter="u32 = 5"), "cast")


def test_struct_field_index_equals_pylances(tmp_path: Any) -> None:
    t = pa.table({"st": pa.array([{"a": i % 7, "b": str(i)} if i % 13 else None for i in range(5000)])})
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    lance.write_dataset(t, theirs)
    lance.write_dataset(t, ours)
    lance.dataset(theirs).create_scalar_index("st.a", "BTREE")
    lancepy.dataset(ours).create_scalar_index("st.a", "BTREE")
    (t_entry,), (o_entry,) = index_entries(theirs), index_entries(ours)
    assert (o_entry["name"], o_entry["fields"]) == (t_entry["name"], t_entry["fields"]) == ("st.a_idx", [1])
    assert_segment_files_match(theirs, ours, t_entry, o_entry)
    pl = lance.dataset(ours)
    assert "ScalarIndexQuery" in pl.scanner(filter="st.a = 3").explain_plan(True)
    assert pl.count_rows("st.a = 3") == lance.dataset(theirs).count_rows("st.a = 3")


def test_pylance_optimizes_and_compacts_lancepys_index(tmp_path: Any) -> None:
    """pylance's index maintenance reads lancepy's pages by its page size: a delta segment,
    a merge and a compaction remap all start from lancepy's files."""
    _, ours = twin_datasets(tmp_path, 9000)
    lancepy.dataset(ours).create_scalar_index("i", "BTREE")
    lance.write_dataset(make_table(3000, seed=21), ours, mode="append")
    pl = lance.dataset(ours)
    pl.optimize.optimize_indices(num_indices_to_merge=0)
    assert len(lance.dataset(ours).list_indices()) == 2
    lance.write_dataset(make_table(1000, seed=22), ours, mode="append")
    lance.dataset(ours).optimize.optimize_indices()
    lance.dataset(ours).delete("i % 5 = 0")
    lance.dataset(ours).optimize.compact_files()
    pl = lance.dataset(ours)
    ds = lancepy.dataset(ours)
    for flt in ("i = 17", "i < 300", "i BETWEEN 1000 AND 1100", "i IS NULL", "i IN (3, 4, 6)"):
        assert "ScalarIndexQuery" in pl.scanner(filter=flt).explain_plan(True)
        want = pl.to_table(filter=flt, use_scalar_index=False, with_row_id=True).sort_by("_rowid")
        assert_tables_equal(want, pl.to_table(filter=flt, with_row_id=True).sort_by("_rowid"), flt)
        # lancepy answers from pylance's remapped segments
        assert "@i_idx(BTree)" in ds.scanner(filter=flt).explain_plan()
        assert_tables_equal(ds.to_table(filter=flt, use_scalar_index=False), ds.to_table(filter=flt), flt)
        assert ds.count_rows(filter=flt) == want.num_rows


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
def test_lancepy_compaction_remaps_btree_segments(tmp_path: Any, builder: str) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(make_table(6000, seed=4), uri, max_rows_per_file=1000)
    if builder == "pylance":
        lance.dataset(uri).create_scalar_index("i", "BTREE")
    else:
        lancepy.dataset(uri).create_scalar_index("i", "BTREE")
    lance.write_dataset(make_table(500, seed=6), uri, mode="append")  # not covered
    ds = lancepy.dataset(uri)
    ds.delete("u32 % 4 = 1")
    before = ds.to_table(filter="i < 500", use_scalar_index=False).sort_by("u32")
    ds.optimize.compact_files(target_rows_per_fragment=2500)
    ds = lancepy.dataset(uri)
    (entry,) = ds.list_indices()
    live = {f.fragment_id for f in ds.get_fragments()}
    assert entry["fragment_ids"] and entry["fragment_ids"] <= live
    pl = lance.dataset(uri)
    for flt in ("i = 17", "i < 500", "i BETWEEN 100 AND 900", "i IS NULL", "i IN (3, 4, 6)"):
        want = ds.to_table(filter=flt, use_scalar_index=False, with_row_address=True)
        assert "@i_idx(BTree)" in ds.scanner(filter=flt).explain_plan()
        assert_tables_equal(want, ds.to_table(filter=flt, with_row_address=True), flt)
        assert "ScalarIndexQuery" in pl.scanner(filter=flt).explain_plan(True)
        theirs = pl.to_table(filter=flt, with_row_address=True).sort_by("_rowaddr")
        assert_tables_equal(want.sort_by("_rowaddr"), theirs, flt)
    assert_tables_equal(before, ds.to_table(filter="i < 500").sort_by("u32"), "rows kept")
    # the remapped segment's files are a valid BTREE segment (sorted, pages of 4096)
    r = lance.file.LanceFileReader(os.path.join(uri, "_indices", entry["uuid"], "page_lookup.lance"))
    assert r.metadata().schema.metadata[b"batch_size"] == b"4096"


def test_optimize_indices_adds_new_rows_to_a_btree_index(tmp_path: Any) -> None:
    theirs, ours = twin_datasets(tmp_path, 5000)
    lance.dataset(theirs).create_scalar_index("i", "BTREE")
    lancepy.dataset(ours).create_scalar_index("i", "BTREE")
    for uri in (theirs, ours):
        lance.write_dataset(make_table(3000, seed=8), uri, mode="append")
    lance.dataset(theirs).optimize.optimize_indices(num_indices_to_merge=0)
    ds = lancepy.dataset(ours)
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    # the delta segment equals pylance's
    t_entries, o_entries = index_entries(theirs), index_entries(ours)
    assert len(o_entries) == len(t_entries) == 2
    assert [e["fragment_bitmap"] for e in o_entries] == [e["fragment_bitmap"] for e in t_entries]
    assert [e["dataset_version"] for e in o_entries] == [e["dataset_version"] for e in t_entries]
    assert_segment_files_match(theirs, ours, t_entries[1], o_entries[1])

    def check(uri: str) -> None:
        ds, pl = lancepy.dataset(uri), lance.dataset(uri)
        for flt in ("i = 17", "i < 300", "i IS NULL", "i IN (3, 2000, 2400)"):
            want = ds.to_table(filter=flt, use_scalar_index=False, with_row_address=True)
            assert "@i_idx(BTree)" in ds.scanner(filter=flt).explain_plan()
            assert_tables_equal(want, ds.to_table(filter=flt, with_row_address=True), flt)
            assert "ScalarIndexQuery" in pl.scanner(filter=flt).explain_plan(True)
            got = pl.to_table(filter=flt, with_row_address=True).sort_by("_rowaddr")
            assert_tables_equal(want.sort_by("_rowaddr"), got, flt)

    check(ours)
    for uri in (theirs, ours):
        lance.write_dataset(make_table(700, seed=9), uri, mode="append")
    lance.dataset(theirs).delete("i % 7 = 0")
    lance.dataset(theirs).optimize.optimize_indices()
    ds = lancepy.dataset(ours)
    ds.delete("i % 7 = 0")
    ds.optimize.optimize_indices()  # the last segment merged with the new rows, as pylance merges it
    t_entries, o_entries = index_entries(theirs), index_entries(ours)
    assert len(o_entries) == len(t_entries) == 2
    assert [e["fragment_bitmap"] for e in o_entries] == [e["fragment_bitmap"] for e in t_entries]
    assert [e["dataset_version"] for e in o_entries] == [e["dataset_version"] for e in t_entries]
    check(ours)
    ds.optimize.optimize_indices(num_indices_to_merge=2)  # merged: one segment over every fragment
    (entry,) = ds.list_indices()
    assert entry["fragment_ids"] == {f.fragment_id for f in ds.get_fragments()}
    check(ours)
    ds.optimize.optimize_indices(retrain=True)
    (again,) = ds.list_indices()
    assert again["uuid"] != entry["uuid"] and again["fragment_ids"] == entry["fragment_ids"]
    check(ours)
    version = ds.version
    ds.optimize.optimize_indices()  # nothing new
    assert ds.version == version


def test_index_statistics_equal_pylances(tmp_path: Any) -> None:
    t = pa.table(
        {
            "s": ["b", "a", None, "zz"] * 3000,
            "f": [1.0, float("nan"), -2.5, 1e20] * 3000,
            "d": pa.array([1, 2, 3, 4] * 3000, pa.timestamp("ms")),
            "b": [True, False, None, True] * 3000,
            "e": pa.array([None] * 12000, pa.int32()),
        }
    )
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri, max_rows_per_file=5000)
    ds = lancepy.dataset(uri)
    for column in t.column_names:
        ds.create_scalar_index(column, "BTREE")
    ds.create_scalar_index("s", "BTREE", name="empty", train=False)
    lance.write_dataset(t.slice(0, 100), uri, mode="append")
    lance.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0, index_names=["s_idx"])
    ds, pl = lancepy.dataset(uri), lance.dataset(uri)
    for name in [c + "_idx" for c in t.column_names] + ["empty"]:
        assert ds.index_statistics(name) == pl.index_statistics(name), name
    assert ds.index_statistics("f_idx")["indices"] == [{"min": "-2.5", "max": "NaN", "num_pages": 3}]


def test_like_prefix_on_unicode_strings(tmp_path: Any) -> None:
    words = ["é", "éa", "éz", "f", "e", "ea", "\U0010ffff", "\U0010ffffa", "\ud7ff", "\ue000x", "日本", "日本語", "日", None]
    uri = str(tmp_path / "ds")
    lancepy.write_dataset(pa.table({"w": words * 700}), uri)
    ds = lancepy.dataset(uri)
    ds.create_scalar_index("w", "BTREE")
    pl = lance.dataset(uri)
    for prefix in ["é", "e", "日本", "日", "\U0010ffff", "\ud7ff", "f"]:
        flt = f"w LIKE '{prefix}%'"
        assert "ScalarIndexQuery" in ds.scanner(filter=flt).explain_plan(), flt
        want = ds.to_table(filter=flt, use_scalar_index=False, with_row_address=True)
        assert_tables_equal(want, ds.to_table(filter=flt, with_row_address=True), flt)
        assert pl.count_rows(flt) == want.num_rows


def test_wide_ranges_are_scanned(tmp_path: Any) -> None:
    uri = str(tmp_path / "ds")
    lancepy.write_dataset(pa.table({"k": np.arange(60_000) % 20_000, "v": np.arange(60_000)}), uri)
    ds = lancepy.dataset(uri)
    ds.create_scalar_index("k", "BTREE")
    for flt, indexed in (("k = 5", True), ("k < 100", True), ("k >= 0", False), ("k < 10000", False),
                         ("k = 5 OR k > 100", False), ("k < 10000 AND k = 7", True)):
        assert ("ScalarIndexQuery" in ds.scanner(filter=flt).explain_plan()) == indexed, flt
        assert_tables_equal(ds.to_table(filter=flt, use_scalar_index=False), ds.to_table(filter=flt), flt)


def test_more_column_types_equal_pylances(tmp_path: Any) -> None:
    import decimal

    rng = np.random.default_rng(3)
    n = 9000
    ints = rng.integers(-500, 500, n)
    mask = rng.random(n) < 0.05
    t = pa.table(
        {
            "i8": pa.array(ints % 100, pa.int8(), mask=mask),
            "f32": pa.array(rng.normal(size=n).astype(np.float32), mask=mask),
            "dec": pa.array([decimal.Decimal(int(v)) / 100 for v in ints], pa.decimal128(10, 2), mask=mask),
            "fsb": pa.array([int(v % 300).to_bytes(2, "big") for v in ints], pa.binary(2), mask=mask),
            "bin": pa.array([str(v).encode() for v in ints], pa.binary(), mask=mask),
            "ls": pa.array([f"x{v}" for v in ints], pa.large_string(), mask=mask),
            "dt": pa.array((ints + 20000).astype("datetime64[D]"), pa.date32(), mask=mask),
            "ts": pa.array(ints.astype("datetime64[us]"), pa.timestamp("us", tz="UTC"), mask=mask),
        }
    )
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    lance.write_dataset(t, theirs, max_rows_per_file=5000)
    lance.write_dataset(t, ours, max_rows_per_file=5000)
    for column in t.column_names:
        lance.dataset(theirs).create_scalar_index(column, "BTREE")
        lancepy.dataset(ours).create_scalar_index(column, "BTREE")
    for t_entry, o_entry in zip(index_entries(theirs), index_entries(ours)):
        assert (o_entry["name"], o_entry["fragment_bitmap"]) == (t_entry["name"], t_entry["fragment_bitmap"])
        assert_segment_files_match(theirs, ours, t_entry, o_entry)
    pl = lance.dataset(ours)
    for flt in ("i8 = 7", "f32 > 2.5", "ls = 'x17'", "dt IS NULL", "i8 IN (1, 2)"):
        assert "ScalarIndexQuery" in pl.scanner(filter=flt).explain_plan(True), flt
        assert pl.count_rows(flt) == lance.dataset(theirs).count_rows(flt) == lancepy.dataset(ours).count_rows(flt), flt


@pytest.mark.parametrize("seed", range(6))
def test_sort_order_equals_a_stable_reference_sort(seed: int) -> None:
    """The build's sort (one sort of packed (value - min, position) words where they fit in
    64 bits, else an argsort) puts every type's values in index order: nulls first, then
    ascending, integers' ties in row order; checked against Arrow's stable sort on seeded
    random columns, extremes included (ranges too wide to pack)."""
    from lancepy._ops import btree as _btree

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    mask = rng.random(n) < (0.1 if seed % 2 else 0.0)
    wide = seed % 3 == 0
    i64 = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64) if wide else rng.integers(-50, 50, n)
    u64 = rng.integers(2**64 - 1000 if not wide else 0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    columns = {
        "i64": pa.array(i64, pa.int64(), mask=mask),
        "i8": pa.array(rng.integers(-128, 128, n), pa.int8(), mask=mask),
        "u64": pa.array(u64, pa.uint64(), mask=mask),
        "u16": pa.array(rng.integers(0, 2**16, n), pa.uint16(), mask=mask),
        "b": pa.array(rng.random(n) < 0.5, pa.bool_(), mask=mask),
        "ts": pa.array(rng.integers(-(10**12), 10**12, n), pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "d32": pa.array(rng.integers(-1000, 1000, n), pa.int32()).cast(pa.date32()),
        "s": pa.array([f"v{v}" for v in rng.integers(0, 40, n)], pa.string(), mask=mask),
    }
    for name, values in columns.items():
        order = _btree.sort_order(values)
        assert sorted(order.to_pylist()) == list(range(n)), name
        want = pc.sort_indices(pa.table({"v": values}), sort_keys=[("v", "ascending", "at_start")])
        assert_arrays_equal(values.take(want), values.take(order), name)
        if not pa.types.is_string(values.type):  # (integers: ties in row order, as a stable sort)
            assert order.to_pylist() == want.to_pylist(), name


def test_key_order_at_the_ends_of_each_integer_type() -> None:
    """The three sorts of :func:`key_order` (16-bit radix, packed words, argsort) at the ends
    of every integer type equal numpy's stable argsort."""
    from lancepy._ops.btree import key_order

    for dt in (np.int8, np.int16, np.uint8, np.uint16, np.int32, np.uint32, np.uint64, np.int64):
        info = np.iinfo(dt)
        spans = ((int(info.min), min(int(info.max), int(info.min) + 65535)), (max(int(info.min), int(info.max) - 65535), int(info.max)),
                 (int(info.min), int(info.max)), (-5, 2**40) if info.bits == 64 and info.min else (0, int(info.max)))
        for lo, hi in spans:
            keys = np.random.default_rng(lo % 97).integers(lo, hi, 5000, dtype=dt, endpoint=True)
            assert (key_order(keys) == np.argsort(keys, kind="stable")).all(), (dt, lo, hi)


def test_columns_rewritten_in_place_leave_the_index_as_pylance_prunes_it(tmp_path: Any) -> None:
    """An ``Update`` that rewrites an indexed column of a fragment in place (``update_columns``)
    takes that fragment out of the column's indices, as pylance's commit does (else the index
    answers with the old values); lancepy's own ``update`` (rows deleted and appended) keeps the
    fragment covered; indexed results equal the scan throughout."""
    t = pa.table({"a": pa.array(range(6000)), "b": pa.array(range(6000))})
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for uri in (ours, theirs):
        lance.write_dataset(t, uri, max_rows_per_file=2000)
        lancepy.dataset(uri).create_scalar_index("a", "BTREE")
        lancepy.dataset(uri).create_scalar_index("b", "BTREE")
    rows = pa.table({"_rowid": pa.array([5, 7], pa.uint64()), "a": pa.array([777777, -3])})
    frag, fields = lancepy.dataset(ours).get_fragments()[0].update_columns(rows)
    lancepy.LanceDataset.commit(ours, lancepy.LanceOperation.Update(updated_fragments=[frag], fields_modified=fields),
                                read_version=3)
    pfrag, pfields = lance.dataset(theirs).get_fragments()[0].update_columns(rows)
    lance.LanceDataset.commit(theirs, lance.LanceOperation.Update(updated_fragments=[pfrag], fields_modified=pfields),
                              read_version=3)
    ds = lancepy.dataset(ours)
    covered = {i["name"]: sorted(i["fragment_ids"]) for i in ds.list_indices()}
    assert covered == {i["name"]: sorted(i["fragment_ids"]) for i in lance.dataset(theirs).list_indices()}
    assert covered == {"a_idx": [1, 2], "b_idx": [0, 1, 2]}
    for flt in ("a = 777777", "a = 5", "a = -3", "a < 10", "b = 5", "a >= 1990 AND a < 2010"):
        want = ds.to_table(filter=flt, use_scalar_index=False)
        assert_tables_equal(want, ds.to_table(filter=flt), flt)
        assert lance.dataset(ours).count_rows(flt) == want.num_rows, flt
    ds.update({"b": "b + 1"}, where="a < 3000")
    assert {i["name"]: sorted(i["fragment_ids"]) for i in ds.list_indices()} == covered
    for flt in ("b = 6", "b = 2500", "a = 777777"):
        assert_tables_equal(ds.to_table(filter=flt, use_scalar_index=False), ds.to_table(filter=flt), flt)
