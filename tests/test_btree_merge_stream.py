"""optimize_indices merges a BTREE index a few pages at a time (lancepy._ops.extsort.merge_btree):
the old segments are never read whole, the appended rows are sorted as a build sorts them, and
the merged segment holds exactly the live rows, in index order, answering as a scan does, for
lancepy and for pylance. Segments in another order fall back to the in-memory merge."""

from __future__ import annotations

import os
import shutil
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancepy
from conftest import assert_tables_equal
from lancepy._ops import btree as _btree
from lancepy._ops import extsort as _extsort

lance = pytest.importorskip("lance")

N = 6000


def _column(kind: str, n: int, seed: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    nulls = rng.random(n) < 0.05
    if kind == "int":
        return pa.array(rng.integers(-500, 500, n), pa.int64(), mask=nulls)
    if kind == "float":
        vals = rng.choice([-0.0, 0.0, np.nan, np.inf, -np.inf, 1.5, -2.25], n)
        vals = np.where(rng.random(n) < 0.5, rng.standard_normal(n).round(2), vals)
        return pa.array(vals, pa.float64(), mask=nulls)
    if kind == "string":
        return pa.array([f"k{v:03d}" for v in rng.integers(0, 300, n)], pa.string(), mask=nulls)
    return pa.array(rng.integers(0, 10**6, n), pa.int64(), mask=nulls).cast(pa.timestamp("ms"))


def _table(kind: str, n: int, seed: int, start: int) -> pa.Table:
    return pa.table({"id": np.arange(start, start + n), "v": _column(kind, n, seed)})


FILTERS = {
    "int": ["v = 17", "v < -300", "v >= 250 AND v < 260", "v IS NULL", "v IN (3, 200, -7)"],
    "float": ["v = 0.0", "v < -1.0", "v > 1.0", "v IS NULL", "v = 1.5", "v = -0.0"],
    "string": ["v = 'k017'", "v < 'k010'", "v >= 'k290'", "v IS NULL"],
    "timestamp": ["v < TIMESTAMP '1970-01-01 00:01:40'", "v IS NULL"],
}


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
@pytest.mark.parametrize("kind", ["int", "float", "string", "timestamp"])
def test_merge_streams_pages_and_answers_as_a_scan(tmp_path: Any, monkeypatch: Any, kind: str, builder: str) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(kind, N, 1, 0), uri, max_rows_per_file=2000)
    (lancepy if builder == "lancepy" else lance).dataset(uri).create_scalar_index("v", "BTREE")
    lance.write_dataset(_table(kind, 3000, 2, N), uri, mode="append", max_rows_per_file=1500)
    ds = lancepy.dataset(uri)
    ds.delete("id < 2000 OR id % 11 = 3")  # the first fragment gone whole, rows of the others
    # The oracle: the in-memory merge, on a copy.
    copy = str(tmp_path / "copy")
    shutil.copytree(uri, copy)
    with monkeypatch.context() as m:
        m.setattr(_extsort, "merge_btree", lambda *a, **k: None)
        lancepy.dataset(copy).optimize.optimize_indices()
    (in_memory,) = lancepy.dataset(copy).list_indices()
    want_rows = _btree.open_segment(copy, in_memory["uuid"]).pages()

    # The old segments are streamed: never read whole, never merged in memory.
    def whole(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a segment read whole")

    monkeypatch.setattr(_btree, "read_rows_of", whole)
    monkeypatch.setattr(_btree.BTreeSegment, "pages", whole)
    monkeypatch.setattr(_btree, "extend", whole)
    monkeypatch.setattr(_extsort, "MERGE_PAGES", 1)
    lancepy.dataset(uri).optimize.optimize_indices()
    monkeypatch.undo()

    ds = lancepy.dataset(uri)
    (entry,) = ds.list_indices()
    assert entry["fragment_ids"] == {f.fragment_id for f in ds.get_fragments()}
    seg = _btree.open_segment(uri, entry["uuid"])
    rows = seg.pages()
    # The rows of the in-memory merge (those of live fragments), each once, in index order
    # (nulls first, then ascending keys).
    def pairs(t: pa.Table) -> Any:
        return sorted(zip(t.column("ids").to_pylist(), map(repr, t.column("values").to_pylist())))

    assert pairs(rows) == pairs(want_rows)
    live = {f.fragment_id for f in ds.get_fragments()}
    assert {i >> 32 for i in rows.column("ids").to_pylist()} <= live
    keys = _extsort.comparable(rows.column("values").combine_chunks())
    nulls = keys.null_count
    assert keys.slice(0, nulls).null_count == nulls
    valid = np.asarray(keys.slice(nulls).to_numpy(zero_copy_only=False)) if kind != "string" else keys.slice(nulls).to_pylist()
    assert all(a <= b for a, b in zip(valid[:-1], valid[1:]))

    pl = lance.dataset(uri)
    for flt in FILTERS[kind]:
        scan = ds.to_table(filter=flt, use_scalar_index=False, with_row_address=True).sort_by("_rowaddr")
        if kind != "timestamp":  # (timestamp literals are compared by a scan)
            assert "@v_idx(BTree)" in ds.scanner(filter=flt).explain_plan(), flt
        assert_tables_equal(scan, ds.to_table(filter=flt, with_row_address=True).sort_by("_rowaddr"), flt)
        assert_tables_equal(scan, pl.to_table(filter=flt, with_row_address=True).sort_by("_rowaddr"), flt)


def _merge_falls_back(uri: str, monkeypatch: Any, cursor: Any, module: Any) -> None:
    """`uri`'s index merged while `cursor` finds its segment out of order: the in-memory
    merge of `module` runs once, and nothing of the abandoned attempt is left (at most its
    empty directory, on a local disk)."""

    def out_of_order(self: Any, keys: Any) -> None:
        raise _extsort._NotInOrder("planted")

    monkeypatch.setattr(cursor, "_check", out_of_order)
    calls = []
    extend = module.extend
    monkeypatch.setattr(module, "extend", lambda *a, **k: calls.append(1) or extend(*a, **k))
    (old,) = lancepy.dataset(uri).list_indices()
    lancepy.dataset(uri).optimize.optimize_indices()
    assert calls == [1]
    (entry,) = lancepy.dataset(uri).list_indices()
    for d in set(os.listdir(os.path.join(uri, "_indices"))) - {old["uuid"], entry["uuid"]}:
        assert os.listdir(os.path.join(uri, "_indices", d)) == []


def test_segment_in_another_order_falls_back_to_the_in_memory_merge(tmp_path: Any, monkeypatch: Any) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table("int", N, 3, 0), uri, max_rows_per_file=2000)
    lancepy.dataset(uri).create_scalar_index("v", "BTREE")
    lance.write_dataset(_table("int", 1000, 4, N), uri, mode="append")
    ds = lancepy.dataset(uri)
    _merge_falls_back(uri, monkeypatch, _extsort._SegmentCursor, _btree)
    flt = "v BETWEEN -20 AND 20"
    assert_tables_equal(
        ds.to_table(filter=flt, use_scalar_index=False, with_row_address=True).sort_by("_rowaddr"),
        lancepy.dataset(uri).to_table(filter=flt, with_row_address=True).sort_by("_rowaddr"),
        flt,
    )


def test_cursor_refuses_rows_out_of_order() -> None:
    cursor = _extsort._SegmentCursor.__new__(_extsort._SegmentCursor)
    cursor._last = None
    cursor._check(pa.array([None, None, 1, 2, 2, 5]))
    cursor._check(pa.array([5, 9]))
    for bad in ([None, 10], [4, 6]):
        with pytest.raises(_extsort._NotInOrder):
            cursor._check(pa.array(bad, pa.int64()))
    cursor._last = None
    with pytest.raises(_extsort._NotInOrder):
        cursor._check(pa.array([1, None, 2]))
    with pytest.raises(_extsort._NotInOrder):
        cursor._check(pa.array([3, 1]))


def _merged_both_ways(tmp_path: Any, uri: str, monkeypatch: Any, merge_keys: int = 0) -> Any:
    """A copy of `uri` whose BITMAP / LABEL_LIST index is merged in memory (the oracle), then
    `uri`'s merged key by key, its segments never read whole (with ``MERGE_KEYS`` =
    `merge_keys` when given): ``(copy, the copy's index entry, uri's index entry)``."""
    from lancepy._ops import bitmap as _bitmap

    copy = str(tmp_path / "copy")
    shutil.copytree(uri, copy)
    with monkeypatch.context() as m:
        m.setattr(_extsort, "merge_bitmap", lambda *a, **k: None)
        lancepy.dataset(copy).optimize.optimize_indices()
    (in_memory,) = lancepy.dataset(copy).list_indices()

    def whole(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a segment read whole")

    with monkeypatch.context() as m:
        for name in ("read_rows", "read_list_rows", "extend"):
            m.setattr(_bitmap, name, whole)
        if merge_keys:
            m.setattr(_extsort, "MERGE_KEYS", merge_keys)
        lancepy.dataset(uri).optimize.optimize_indices()
    (entry,) = lancepy.dataset(uri).list_indices()
    return copy, in_memory, entry


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
@pytest.mark.parametrize("kind", ["int", "float", "string"])
def test_bitmap_merge_streams_keys_and_answers_as_a_scan(tmp_path: Any, monkeypatch: Any, kind: str, builder: str) -> None:
    from lancepy._ops import bitmap as _bitmap

    uri = str(tmp_path / "ds")
    t = _table(kind, N, 5, 0)
    if kind == "int":  # (a BITMAP's few distinct values)
        t = t.set_column(1, "v", pc.divide(t.column("v"), 25))
    lance.write_dataset(t, uri, max_rows_per_file=2000)
    (lancepy if builder == "lancepy" else lance).dataset(uri).create_scalar_index("v", "BITMAP")
    lance.write_dataset(_table(kind, 3000, 6, N), uri, mode="append", max_rows_per_file=1500)
    lancepy.dataset(uri).delete("id < 2000 OR id % 11 = 3")
    copy, in_memory, entry = _merged_both_ways(tmp_path, uri, monkeypatch)
    ds = lancepy.dataset(uri)
    assert entry["fragment_ids"] == {f.fragment_id for f in ds.get_fragments()}

    def pairs(path: str, uuid: str) -> Any:
        keys, addrs = _bitmap.read_rows(path, uuid)
        return sorted(zip(addrs.tolist(), map(repr, keys.to_pylist())))

    assert pairs(uri, entry["uuid"]) == pairs(copy, in_memory["uuid"])
    # The same bytes as the in-memory merge (keys in order, one bitmap each).
    with open(os.path.join(uri, "_indices", entry["uuid"], _bitmap.LOOKUP), "rb") as a, open(
        os.path.join(copy, "_indices", in_memory["uuid"], _bitmap.LOOKUP), "rb"
    ) as b:
        assert a.read() == b.read()
    pl = lance.dataset(uri)
    for flt in FILTERS[kind][:4]:
        scan = ds.to_table(filter=flt, use_scalar_index=False, with_row_address=True).sort_by("_rowaddr")
        assert_tables_equal(scan, ds.to_table(filter=flt, with_row_address=True).sort_by("_rowaddr"), flt)
        assert_tables_equal(scan, pl.to_table(filter=flt, with_row_address=True).sort_by("_rowaddr"), flt)


def _lists(n: int, seed: int, start: int) -> pa.Table:
    """A LABEL_LIST column: lists of 0-3 labels, some null lists and null elements."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        r = rng.random()
        if r < 0.05:
            rows.append(None)
        else:
            rows.append([None if rng.random() < 0.03 else f"l{v:02d}" for v in rng.integers(0, 40, rng.integers(0, 4))])
    return pa.table({"id": np.arange(start, start + n), "tags": pa.array(rows, pa.list_(pa.string()))})


def _assert_same_lookup(uri: str, uuid: str, other: str, other_uuid: str, label_list: bool = False) -> None:
    """The two segments' lookup files hold the same keys, the same sets (byte for byte), the
    same metadata and (LABEL_LIST) the same null lists; written in other batches, their pages
    may be cut elsewhere."""
    from lancepy._ops import bitmap as _bitmap
    from lancepy.file import LanceFileReader

    a = LanceFileReader(os.path.join(uri, "_indices", uuid, _bitmap.LOOKUP))
    b = LanceFileReader(os.path.join(other, "_indices", other_uuid, _bitmap.LOOKUP))
    ta, tb = a.read_all().to_table(), b.read_all().to_table()
    assert ta.schema.metadata == tb.schema.metadata
    assert list(map(repr, ta.column("keys").to_pylist())) == list(map(repr, tb.column("keys").to_pylist()))  # (NaN too)
    assert ta.column("bitmaps").to_pylist() == tb.column("bitmaps").to_pylist()
    if label_list:
        assert a.read_global_buffer(1) == b.read_global_buffer(1)


LIST_FILTERS = [
    "array_has_any(tags, ['l03', 'l17'])",
    "array_has_all(tags, ['l01', 'l02'])",
    "NOT array_has_any(tags, ['l05'])",
    "tags IS NULL",
]


@pytest.mark.parametrize("builder", ["lancepy", "pylance"])
@pytest.mark.parametrize("deleted", [False, True])
def test_label_list_merge_streams_keys_and_answers_as_a_scan(
    tmp_path: Any, monkeypatch: Any, builder: str, deleted: bool
) -> None:
    from lancepy._ops import bitmap as _bitmap

    uri = str(tmp_path / "ds")
    lance.write_dataset(_lists(N, 7, 0), uri, max_rows_per_file=2000)
    (lancepy if builder == "lancepy" else lance).dataset(uri).create_scalar_index("tags", "LABEL_LIST")
    lance.write_dataset(_lists(3000, 8, N), uri, mode="append", max_rows_per_file=1500)
    if deleted:
        lancepy.dataset(uri).delete("id < 2000 OR id % 11 = 3")
    copy, in_memory, entry = _merged_both_ways(tmp_path, uri, monkeypatch, merge_keys=7)  # (many windows of old keys)
    ds = lancepy.dataset(uri)
    assert entry["fragment_ids"] == {f.fragment_id for f in ds.get_fragments()}
    # The same rows and null lists as the in-memory merge.
    assert _bitmap.read_list_rows(uri, entry["uuid"])[1].tolist() == _bitmap.read_list_rows(copy, in_memory["uuid"])[1].tolist()
    if builder == "lancepy" or deleted:  # (a pylance bitmap a merge copies keeps pylance's bytes)
        _assert_same_lookup(uri, entry["uuid"], copy, in_memory["uuid"], label_list=True)
    pl = lance.dataset(uri)
    for flt in LIST_FILTERS:
        scan = ds.to_table(filter=flt, use_scalar_index=False, with_row_address=True).sort_by("_rowaddr")
        assert_tables_equal(scan, ds.to_table(filter=flt, with_row_address=True).sort_by("_rowaddr"), flt)
        assert_tables_equal(scan, pl.to_table(filter=flt, with_row_address=True).sort_by("_rowaddr"), flt)


@pytest.mark.parametrize("kind", ["int", "float", "string"])
def test_bitmap_merge_of_live_segments_copies_their_sets(tmp_path: Any, monkeypatch: Any, kind: str) -> None:
    """Nothing deleted: each old key's set is copied as it is, over many windows of keys and
    several segments, and the file holds what the in-memory merge's holds."""
    from lancepy import _lancepy

    uri = str(tmp_path / "ds")
    t = _table(kind, N, 9, 0)
    if kind == "int":
        t = t.set_column(1, "v", pc.divide(t.column("v"), 25))
    lancepy.write_dataset(t, uri, max_rows_per_file=2000)
    ds = lancepy.dataset(uri)
    ds.create_scalar_index("v", "BITMAP")
    lancepy.write_dataset(_table(kind, 2000, 10, N), uri, mode="append")
    lancepy.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)  # (a second segment)
    lancepy.write_dataset(_table(kind, 1500, 11, N + 2000), uri, mode="append")
    assert len(lancepy.dataset(uri).list_indices()) == 2
    copy = str(tmp_path / "copy")
    shutil.copytree(uri, copy)
    with monkeypatch.context() as m:
        m.setattr(_extsort, "merge_bitmap", lambda *a, **k: None)
        lancepy.dataset(copy).optimize.optimize_indices(num_indices_to_merge=2)
    lives = []
    union = _lancepy.row_addr_maps_union

    def spy(blobs: Any, offsets: Any, live: Any = None) -> Any:
        lives.append(live)
        return union(blobs, offsets, live)

    with monkeypatch.context() as m:
        m.setattr(_extsort, "MERGE_KEYS", 5)
        m.setattr(_extsort._lancepy, "row_addr_maps_union", spy)
        lancepy.dataset(uri).optimize.optimize_indices(num_indices_to_merge=2)
    assert lives and all(live is None for live in lives)  # (no fragment to leave out)
    (entry,) = lancepy.dataset(uri).list_indices()
    (in_memory,) = lancepy.dataset(copy).list_indices()
    _assert_same_lookup(uri, entry["uuid"], copy, in_memory["uuid"])
    pl, ds = lance.dataset(uri), lancepy.dataset(uri)
    for flt in FILTERS[kind][:4]:
        scan = ds.to_table(filter=flt, use_scalar_index=False, with_row_address=True).sort_by("_rowaddr")
        assert_tables_equal(scan, pl.to_table(filter=flt, with_row_address=True).sort_by("_rowaddr"), flt)


def test_bitmap_segment_keys_out_of_order_fall_back(tmp_path: Any, monkeypatch: Any) -> None:
    from lancepy._ops import bitmap as _bitmap

    stream = _extsort._KeyStream(pa.int64(), check=True)
    stream._check(pa.array([None, 1, 4]))
    stream._check(pa.array([5, 9]))
    for bad in ([None, 10], [9, 12], [11, 11]):
        with pytest.raises(_extsort._NotInOrder):
            stream._check(pa.array(bad, pa.int64()))

    uri = str(tmp_path / "ds")
    lancepy.write_dataset(pa.table({"id": np.arange(3000), "v": np.arange(3000) % 30}), uri)
    lancepy.dataset(uri).create_scalar_index("v", "BITMAP")
    lancepy.write_dataset(pa.table({"id": np.arange(3000, 3500), "v": np.arange(500) % 40}), uri, mode="append")

    _merge_falls_back(uri, monkeypatch, _extsort._LookupStream, _bitmap)
    assert lancepy.dataset(uri).count_rows("v = 35") == 12


def test_rows_held_at_the_merge_are_not_spilled() -> None:
    """ExternalSort.merged serves the rows it still holds from memory (a run file only for
    what was spilled before), in the order a full spill would give."""
    rng = np.random.default_rng(3)
    values = [pa.array(rng.integers(0, 50, 4000)) for _ in range(3)]
    ids = [pa.array(np.arange(i * 4000, (i + 1) * 4000, dtype=np.uint64)) for i in range(3)]
    with _extsort.ExternalSort(pa.int64(), 3 * 64_000) as sorter:
        for v, i in zip(values, ids):
            sorter.add(v, i)
        assert sorter.spilled and len(sorter.runs) == 1 and len(sorter.held()[0]) == 4000
        got = list(sorter.merged())
        assert len(sorter.runs) == 1  # (the held rows were not written out)
    v = pa.concat_arrays([g[0] for g in got])
    i = pa.concat_arrays([g[1] for g in got])
    order = np.argsort(np.concatenate([a.to_numpy() for a in values]), kind="stable")
    assert v.to_numpy().tolist() == np.concatenate([a.to_numpy() for a in values])[order].tolist()
    assert i.to_numpy().tolist() == order.tolist()
