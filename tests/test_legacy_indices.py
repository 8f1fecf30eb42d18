"""Scalar index files in pylance's legacy (v1) file format, as pylance before 0.21 wrote
BTREE indices: lancepy reads them, answers filters from them and names them in its plan.
(pylance 0.20 wrote BITMAP indices as Lance 2.0 files, keys in no particular order and
without statistics metadata: that older layout is tested here too.)

The old-layout files are generated here with lancepy's legacy (v1) writer, in the layout of
pylance 0.20's files (``page_data.lance``: ``values`` and ``row_ids``, both nullable, one
batch per 4096-row page; ``page_lookup.lance``: ``min``, ``max``, ``null_count``,
``page_idx`` in one batch, no schema metadata; the index entry without a file list).
pylance 14.0.2, which still reads such files, is the oracle: its plan must show it uses
them and both libraries must return the same rows as an unindexed scan.
"""

from __future__ import annotations

import json
import os
import time
import uuid as _uuid

import lancepy
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lancepy import _lancepy

lance = pytest.importorskip("lance")

PAGE = 4096  # rows per page (pylance 0.20's chunk size)
FIXTURE = "/work/pylance-tests/test_data/v0.20.0/old_btree_bitmap_indices.lance"


def write_legacy_btree(directory: str, values: pa.Array, row_ids: pa.Array) -> None:
    """Writes a BTREE segment as pylance 0.20 did: rows sorted by value, pages of 4096 rows,
    each page one batch of a legacy ``page_data.lance``; the page lookup in a legacy
    ``page_lookup.lance`` (each page's min and max, its null count and batch number)."""
    os.makedirs(directory, exist_ok=True)
    order = pc.array_sort_indices(values, null_placement="at_start")
    values, row_ids = values.take(order), row_ids.take(order)
    dschema = pa.schema([pa.field("values", values.type), pa.field("row_ids", pa.uint64())])
    w = _lancepy.LegacyFileWriter(os.path.join(directory, "page_data.lance"), dschema, PAGE)
    mins, maxs, nulls = [], [], []
    for start in range(0, len(values), PAGE):
        page = values.slice(start, PAGE)
        w.write_batch(pa.record_batch([page, row_ids.slice(start, PAGE)], schema=dschema))
        mm = pc.min_max(page)
        mins.append(mm["min"].as_py())
        maxs.append(mm["max"].as_py())
        nulls.append(page.null_count)
    w.finish()
    lschema = pa.schema(
        [
            pa.field("min", values.type),
            pa.field("max", values.type),
            pa.field("null_count", pa.uint32(), nullable=False),
            pa.field("page_idx", pa.uint32(), nullable=False),
        ]
    )
    w = _lancepy.LegacyFileWriter(os.path.join(directory, "page_lookup.lance"), lschema, max(1, len(mins)))
    w.write_batch(
        pa.record_batch(
            [
                pa.array(mins, values.type),
                pa.array(maxs, values.type),
                pa.array(nulls, pa.uint32()),
                pa.array(range(len(mins)), pa.uint32()),
            ],
            schema=lschema,
        )
    )
    w.finish()


def write_old_bitmap(directory: str, values: pa.Array, row_ids: pa.Array, seed: int = 0) -> None:
    """Writes a BITMAP segment as pylance 0.20 did: ``bitmap_page_lookup.lance`` as a Lance
    2.0 file of ``keys`` and ``bitmaps`` (serialized row address sets), the keys in no
    particular order (here: shuffled), no schema metadata."""
    from lancepy._ops import bitmap as _bitmap
    from lancepy.file import LanceFileWriter

    os.makedirs(directory, exist_ok=True)
    keys, addrs, offsets = _bitmap.group(values, row_ids)
    blobs = _lancepy.row_addr_maps_serialize(addrs.astype("<u8").tobytes(), [int(o) for o in offsets])
    order = np.random.default_rng(seed).permutation(len(keys))
    schema = pa.schema([pa.field("keys", values.type), pa.field("bitmaps", pa.binary())])
    with LanceFileWriter(os.path.join(directory, "bitmap_page_lookup.lance"), schema, version="2.0") as w:
        w.write_batch(
            pa.record_batch([keys.take(pa.array(order)), pa.array([blobs[i] for i in order], pa.binary())], schema=schema)
        )


def replace_with_legacy_btree(path: str, name: str) -> None:
    """Replaces the (lancepy-built) BTREE index `name` of the dataset at `path` by a legacy
    segment over the same rows, committed as pylance 0.20 recorded it (no file list)."""
    _replace_segment(path, name, write_legacy_btree)


def replace_with_old_bitmap(path: str, name: str) -> None:
    """The same for a BITMAP index, in pylance 0.20's layout."""
    _replace_segment(path, name, write_old_bitmap)


def _replace_segment(path: str, name: str, write) -> None:
    from lancepy._table import commit as _commit

    ds = lancepy.dataset(path)
    entry = next(e for e in ds._index_entries() if e["name"] == name)
    column = ds.schema.field(entry["fields"][0]).name
    t = ds.to_table(columns=[column], with_row_address=True)
    uid = str(_uuid.uuid4())
    write(os.path.join(path, "_indices", uid), t.column(column).combine_chunks(), t.column("_rowaddr").combine_chunks())
    raw = {
        _commit.uuid_text(e["uuid"]): e
        for e in json.loads(_lancepy.index_section_to_json(ds._view.loaded.index_section))["indices"]
    }
    old = raw[entry["uuid"]]
    new = {k: v for k, v in old.items() if k not in ("files", "index_version")}
    new.update({"uuid": {"uuid": list(_uuid.UUID(uid).bytes)}, "created_at": int(time.time() * 1000)})
    _commit.commit_on(ds._view, "CreateIndex", {"new_indices": [new], "removed_indices": [old]}, [])


def _values(seed: int, n: int, dtype: str) -> pa.Array:
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        return pa.array(rng.integers(-500, 500, n), pa.int64())
    if dtype == "float64":
        return pa.array(np.round(rng.normal(0, 100, n), 1), pa.float64())
    return pa.array([f"k{v:04d}" for v in rng.integers(0, 700, n)], pa.string())


def _filters(dtype: str, data: pa.Table) -> list:
    """Filters narrow enough that lancepy answers them from the index (a range reaching more
    than two 4096-row pages is scanned instead, by lancepy's cost rule); one equality on a
    value the data holds."""
    present = data.column("v")[777].as_py()
    if dtype == "string":
        return [
            "v > 'k0680'",
            f"v = '{present}'",
            "v IN ('k0001', 'k0500', 'zzz')",
            "v < 'k0010' OR v >= 'k0690'",
            "v >= 'k0300' AND v < 'k0305'",
        ]
    if dtype == "float64":
        return ["v > 250.5", f"v = {present!r}", "v BETWEEN -1 AND 1", "v < -260 OR v > 270", "v IN (-0.5, 0.5, 9999.0)"]
    return [
        "v > 490",
        f"v = {present}",
        "v IN (1, 2, 499)",
        "v BETWEEN -3 AND 3 AND id < 5000",
        "v < -495 OR v > 495",
    ]


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


@pytest.mark.parametrize("dtype", ["int64", "float64", "string"])
@pytest.mark.parametrize("seed", [1, 2])
def test_legacy_btree_answers_filters(tmp_path, dtype: str, seed: int) -> None:
    n = 3 * PAGE + 123 + seed * 100  # several pages, the last one short
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": _values(seed, n, dtype)})
    path = str(tmp_path / "ds")
    lancepy.write_dataset(data, path, max_rows_per_file=5000)
    lancepy.dataset(path).create_scalar_index("v", "BTREE", name="v_idx")
    replace_with_legacy_btree(path, "v_idx")

    ds, pl = lancepy.dataset(path), lance.dataset(path)
    seg = ds._index_entries()[0]["uuid"]
    reader = _lancepy.FileReader(os.path.join(path, "_indices", seg, "page_data.lance"), allow_legacy=True)
    assert reader.batch_offsets is not None  # (the segment lancepy reads is a legacy file)
    for flt in _filters(dtype, data):
        expected = _sorted(pl.to_table(filter=flt, use_scalar_index=False))
        assert expected == _sorted(ds.to_table(filter=flt, use_scalar_index=False)), flt
        assert expected.num_rows > 0, flt
        mine = _sorted(ds.to_table(filter=flt))
        theirs = _sorted(pl.to_table(filter=flt))
        assert mine == expected, flt
        assert theirs == expected, flt
        assert "ScalarIndexQuery" in ds.scanner(filter=flt).explain_plan(), flt
        plan = pl.scanner(filter=flt).explain_plan()
        assert "ScalarIndexQuery" in plan or "MaterializeIndex" in plan, flt


@pytest.mark.parametrize("dtype", ["int64", "string"])
def test_old_bitmap_layout_answers_filters(tmp_path, dtype: str) -> None:
    n = 2 * PAGE + 77
    rng = np.random.default_rng(11)
    values = pa.array(rng.integers(0, 40, n), pa.int64()) if dtype == "int64" else pa.array(
        [f"k{v:04d}" for v in rng.integers(0, 40, n)]
    )
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": values})
    path = str(tmp_path / "ds")
    lancepy.write_dataset(data, path, max_rows_per_file=3000)
    lancepy.dataset(path).create_scalar_index("v", "BITMAP", name="v_idx")
    replace_with_old_bitmap(path, "v_idx")
    ds, pl = lancepy.dataset(path), lance.dataset(path)
    filters = ["v = 3", "v IN (0, 39, 77)", "v >= 38", "v < 1 OR v = 20"] if dtype == "int64" else [
        "v = 'k0003'", "v IN ('k0000', 'k0039', 'x')", "v >= 'k0038'", "v < 'k0001' OR v = 'k0020'"
    ]
    for flt in filters:
        expected = _sorted(pl.to_table(filter=flt, use_scalar_index=False))
        assert expected.num_rows > 0, flt
        assert _sorted(ds.to_table(filter=flt)) == expected, flt
        assert _sorted(pl.to_table(filter=flt)) == expected, flt
        assert "ScalarIndexQuery" in ds.scanner(filter=flt).explain_plan(), flt
        plan = pl.scanner(filter=flt).explain_plan()
        assert "ScalarIndexQuery" in plan or "MaterializeIndex" in plan, flt
    assert ds.stats.index_stats("v_idx")["indices"][0] == pl.stats.index_stats("v_idx")["indices"][0]


def test_compaction_rewrites_legacy_btree_in_new_format(tmp_path) -> None:
    """Compaction remaps a legacy segment into Lance 2.x files (as pylance 14 does: it has no
    legacy writer for scalar indices); both libraries then answer from the new segment."""
    n = 2 * PAGE + 500
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": _values(7, n, "int64")})
    path = str(tmp_path / "ds")
    lancepy.write_dataset(data, path, max_rows_per_file=1000)
    lancepy.dataset(path).create_scalar_index("v", "BTREE", name="v_idx")
    replace_with_legacy_btree(path, "v_idx")
    ds = lancepy.dataset(path)
    ds.delete("id % 7 = 3")
    ds.optimize.compact_files(target_rows_per_fragment=4000)
    ds, pl = lancepy.dataset(path), lance.dataset(path)
    (entry,) = ds._index_entries()
    reader = _lancepy.FileReader(os.path.join(path, "_indices", entry["uuid"], "page_data.lance"), allow_legacy=True)
    assert reader.batch_offsets is None  # (a Lance 2.x file now)
    for flt in _filters("int64", data):
        expected = _sorted(pl.to_table(filter=flt, use_scalar_index=False))
        assert expected.num_rows > 0, flt
        assert _sorted(ds.to_table(filter=flt)) == expected, flt
        assert _sorted(pl.to_table(filter=flt)) == expected, flt
        plan = pl.scanner(filter=flt).explain_plan()
        assert "ScalarIndexQuery" in plan or "MaterializeIndex" in plan, flt
        assert "ScalarIndexQuery" in ds.scanner(filter=flt).explain_plan(), flt


@pytest.mark.skipif(not os.path.isdir(FIXTURE), reason="pylance's v0.20.0 test data is not checked out here")
def test_generated_files_match_pylance_0_20_layout(tmp_path) -> None:
    """Local only: the generator above writes what pylance 0.20 wrote for the fixture's BTREE
    index (same schemas, batches and contents), and lancepy answers the fixture's filters."""
    ds = lancepy.dataset(FIXTURE)
    entry = next(e for e in ds._index_entries() if e["name"] == "btree_idx")
    t = ds.to_table(columns=["btree"], with_row_address=True)
    write_legacy_btree(str(tmp_path), t.column("btree").combine_chunks(), t.column("_rowaddr").combine_chunks())
    for name in ("page_data.lance", "page_lookup.lance"):
        theirs = _lancepy.FileReader(os.path.join(FIXTURE, "_indices", entry["uuid"], name), allow_legacy=True)
        mine = _lancepy.FileReader(os.path.join(str(tmp_path), name), allow_legacy=True)
        assert theirs.batch_offsets is not None and mine.batch_offsets == theirs.batch_offsets, name
        assert pa.schema(mine.schema()) == pa.schema(theirs.schema()), name
        assert mine.schema_metadata() == theirs.schema_metadata() == {}, name
        assert pa.table(mine.read_range(0, mine.num_rows)) == pa.table(theirs.read_range(0, theirs.num_rows)), name
    bitmap = next(e for e in ds._index_entries() if e["name"] == "bitmap_idx")
    write_old_bitmap(str(tmp_path / "bm"), t.column("btree").combine_chunks(), t.column("_rowaddr").combine_chunks())
    theirs = _lancepy.FileReader(os.path.join(FIXTURE, "_indices", bitmap["uuid"], "bitmap_page_lookup.lance"))
    mine = _lancepy.FileReader(str(tmp_path / "bm" / "bitmap_page_lookup.lance"))
    assert mine.version == theirs.version == "2.0"
    assert pa.schema(mine.schema()) == pa.schema(theirs.schema())
    assert mine.schema_metadata() == theirs.schema_metadata() == {}
    bt = ds.to_table(columns=["bitmap", "btree"])
    assert bt.column("bitmap") == bt.column("btree")  # (so the bitmap index's sets are the ones generated here)
    mine_t, theirs_t = (pa.table(r.read_range(0, r.num_rows)).sort_by("keys") for r in (mine, theirs))
    assert mine_t == theirs_t
    for flt in ("btree > 2", "bitmap > 2"):
        assert ds.to_table(filter=flt) == pa.table({"bitmap": [3, 4], "btree": [3, 4]})
        assert "ScalarIndexQuery" in ds.scanner(filter=flt).explain_plan()


@pytest.mark.parametrize("dtype", ["int64", "string"])
def test_legacy_btree_nulls(tmp_path, dtype: str) -> None:
    """A legacy file keeps no validity (a null reads as its slot, an empty string as null);
    the rows were sorted nulls first, so each page's first ``null_count`` rows are its nulls:
    lancepy answers from that (pylance 14 finds no NULL rows in such a segment and takes its
    empty strings for nulls, so only lancepy is compared on those filters). Compaction writes the nulls into the new segment,
    which pylance then reads right too."""
    n = 2 * PAGE + 900
    rng = np.random.default_rng(21)
    raw = rng.integers(-5, 5, n)
    nulls = rng.random(n) < 0.12
    nulls[: PAGE + 10] |= np.arange(PAGE + 10) % 2 == 0  # (nulls across a whole page and into the next)
    if dtype == "int64":
        values = pa.array([None if z else int(v) for v, z in zip(raw, nulls)], pa.int64())
        flts = ["v = 0", "v = 2", "v IS NULL", "v IS NOT NULL AND v < -4", "v IN (0, 4)", "v IS NULL OR v = 3"]
    else:
        values = pa.array([None if z else ("" if v == 0 else f"s{v}") for v, z in zip(raw, nulls)], pa.string())
        flts = ["v = ''", "v = 's2'", "v IS NULL", "v IS NOT NULL AND v < 's-4'", "v IN ('', 's4')", "v IS NULL OR v = 's3'"]
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": values})
    path = str(tmp_path / "ds")
    lancepy.write_dataset(data, path, max_rows_per_file=5000)
    lancepy.dataset(path).create_scalar_index("v", "BTREE", name="v_idx")
    replace_with_legacy_btree(path, "v_idx")
    ds, pl = lancepy.dataset(path), lance.dataset(path)
    for flt in flts:
        expected = _sorted(pl.to_table(filter=flt, use_scalar_index=False))
        assert expected.num_rows > 0, flt
        assert _sorted(ds.to_table(filter=flt)) == expected, flt
        assert "ScalarIndexQuery" in ds.scanner(filter=flt).explain_plan(), flt
        if "NULL" not in flt and "''" not in flt:
            assert _sorted(pl.to_table(filter=flt)) == expected, flt
    ds.optimize.compact_files(target_rows_per_fragment=20000)
    ds, pl = lancepy.dataset(path), lance.dataset(path)
    for flt in flts:
        expected = _sorted(pl.to_table(filter=flt, use_scalar_index=False))
        assert _sorted(ds.to_table(filter=flt)) == expected, flt
        assert _sorted(pl.to_table(filter=flt)) == expected, flt
        plan = pl.scanner(filter=flt).explain_plan()
        assert "ScalarIndexQuery" in plan or "MaterializeIndex" in plan, flt
