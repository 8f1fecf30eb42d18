"""Interop with pylance (the reference implementation), both directions, versions 2.1 and 2.2.

For every type of the file-format issue and every data shape that applies to it:

* pylance writes (``lance.file.LanceFileWriter``) → lancepy reads: ``read_all``,
  ``read_range`` (chunk and page edges), ``take_rows`` (unsorted, repeated, every edge row) and
  ``to_batches`` all return exactly the values that were written;
* lancepy writes → pylance reads (``lance.file.LanceFileReader``): exact values, and
  pylance's ``take_rows`` agrees with lancepy's and with the input.

Values are compared exactly (``conftest.assert_tables_equal``): types, null masks, floats
bit for bit, dictionaries by their decoded values.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from conftest import (
    EDGE_ROWS,
    TYPES,
    VERSIONS,
    assert_tables_equal,
    make_array,
    range_cases,
    read_pylance,
    shapes_for,
    table_of,
    take_expected,
    take_indices,
    write_lancepy,
    write_pylance,
)
from lancepy.file import LanceFileReader

pytestmark = pytest.mark.interop

CASES = [pytest.param(tid, shape, id=f"{tid}-{shape}") for tid in TYPES for shape in shapes_for(tid)]

MULTI_PAGE_BYTES = 8 * 1024
MULTI_PAGE_BATCHES = [1000, 1, 1023, 2000]


def write_kwargs(shape: str) -> dict:
    if shape == "multi_page":
        return {"max_page_bytes": MULTI_PAGE_BYTES, "batch_sizes": MULTI_PAGE_BATCHES}
    return {}


def check_lancepy_reads(path, table: pa.Table, version: str, rng: np.random.Generator) -> None:
    """Every read path of lancepy returns exactly ``table``."""
    n = table.num_rows
    r = LanceFileReader(str(path))
    assert r.num_rows() == n
    assert r.version == version
    assert r.schema.field("v").type == table.schema.field("v").type

    assert_tables_equal(table, r.read_all().to_table(), "read_all")
    assert_tables_equal(table, r.read_all(columns=["v"]).to_table(), "read_all(columns=['v'])")

    for start, count in range_cases(n):
        got = r.read_range(start, count).to_table()
        assert_tables_equal(table.slice(start, count), got, f"read_range({start}, {count})")

    idx = take_indices(n, rng)
    assert_tables_equal(take_expected(table, idx), r.take_rows(idx).to_table(), f"take_rows({idx})")
    # The same indices as numpy and Arrow arrays.
    assert_tables_equal(take_expected(table, idx), r.take_rows(np.array(idx, dtype=np.int64)).to_table(), "take_rows(numpy)")
    assert_tables_equal(take_expected(table, idx), r.take_rows(pa.array(idx, type=pa.uint64())).to_table(), "take_rows(uint64 array)")
    assert_tables_equal(take_expected(table, []), r.take_rows([]).to_table(), "take_rows([])")

    reader = r.to_reader(batch_size=777)
    assert reader.schema == r.schema
    assert_tables_equal(table, reader.read_all(), "to_reader(777)")

    for batch_size in (1000, 4096, max(1, n)):
        batches = list(r.to_batches(batch_size=batch_size))
        assert all(b.num_rows <= batch_size for b in batches), [b.num_rows for b in batches]
        assert sum(b.num_rows for b in batches) == n
        got = pa.Table.from_batches(batches, schema=r.schema) if batches else r.schema.empty_table()
        assert_tables_equal(table, got, f"to_batches({batch_size})")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("type_id,shape", CASES)
def test_pylance_writes_lancepy_reads(pylance_file, tmp_path, rng, version, type_id, shape):
    table = table_of(make_array(type_id, shape, rng))
    path = tmp_path / "pylance.lance"
    write_pylance(pylance_file, path, table, version, **write_kwargs(shape))
    # pylance must read its own file (guards against generator mistakes).
    assert_tables_equal(table, read_pylance(pylance_file, path), "pylance reads its own file")
    check_lancepy_reads(path, table, version, rng)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("type_id,shape", CASES)
def test_lancepy_writes_pylance_reads(pylance_file, tmp_path, rng, version, type_id, shape):
    table = table_of(make_array(type_id, shape, rng))
    n = table.num_rows
    path = tmp_path / "lancepy.lance"
    write_lancepy(path, table, version, **write_kwargs(shape))

    reader = pylance_file.LanceFileReader(str(path))
    meta = reader.metadata()
    assert f"{meta.major_version}.{meta.minor_version}" == version
    assert reader.num_rows() == n
    assert_tables_equal(table, reader.read_all().to_table(), "pylance read_all")
    for start, count in range_cases(n):
        if count == 0:
            continue  # pylance rejects empty ranges
        got = reader.read_range(start, count).to_table()
        assert_tables_equal(table.slice(start, count), got, f"pylance read_range({start}, {count})")

    # pylance's take_rows needs strictly increasing indices; lancepy takes any order.
    idx = take_indices(n, rng)
    sorted_idx = sorted(set(idx))
    if sorted_idx:
        theirs = reader.take_rows(sorted_idx).to_table()
        assert_tables_equal(take_expected(table, sorted_idx), theirs, "pylance take_rows")
        ours = LanceFileReader(str(path)).take_rows(sorted_idx).to_table()
        assert_tables_equal(theirs, ours, "lancepy take_rows vs pylance take_rows")
    # And lancepy reads its own file through every path.
    check_lancepy_reads(path, table, version, rng)


# --------------------------------------------------------------------------------------------
# Many pages: millions of rows (the reference's default page size, and small pages)
# --------------------------------------------------------------------------------------------


def _page_edges(path) -> list:
    """Rows at and around every page boundary of column 0 (from lancepy's metadata)."""
    pages = LanceFileReader(str(path)).metadata().columns[0].pages
    edges, row = [], 0
    for p in pages:
        edges += [row - 1, row, row + 1]
        row += p.num_rows
    edges += [row - 2, row - 1]
    return sorted({e for e in edges if 0 <= e < row})


def _million_rows_table(kind: str, n: int, rng: np.random.Generator) -> pa.Table:
    if kind == "int64_nulls":
        v = rng.integers(-(2**40), 2**40, size=n)
        return table_of(pa.array(v, mask=rng.random(n) < 0.1))
    if kind == "string_nulls":
        words = np.array(["", "a", "lance", "ünïcödé", "columnar format", "x" * 40])
        v = words[rng.integers(0, len(words), size=n)].tolist()
        return table_of(pa.array(v, type=pa.string(), mask=rng.random(n) < 0.1))
    if kind == "float32_small_pages":
        return table_of(pa.array(rng.standard_normal(n).astype(np.float32)))
    if kind == "vector_f32_8":
        flat = pa.array(rng.standard_normal(n * 8).astype(np.float32))
        return table_of(pa.FixedSizeListArray.from_arrays(flat, 8))
    raise AssertionError(kind)


MILLION_CASES = [
    ("int64_nulls", 2_000_000, None),
    ("string_nulls", 1_000_000, None),
    ("float32_small_pages", 3_000_000, 64 * 1024),
    ("vector_f32_8", 500_000, 1 << 20),
]


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kind,n,page_bytes", MILLION_CASES, ids=[c[0] for c in MILLION_CASES])
@pytest.mark.parametrize("direction", ["pylance_to_lancepy", "lancepy_to_pylance"])
def test_millions_of_rows_many_pages(pylance_file, tmp_path, rng, version, kind, n, page_bytes, direction):
    table = _million_rows_table(kind, n, rng)
    path = tmp_path / "big.lance"
    batch_sizes = [300_000] * (n // 300_000 + 1)
    if direction == "pylance_to_lancepy":
        write_pylance(pylance_file, path, table, version, max_page_bytes=page_bytes, batch_sizes=batch_sizes)
    else:
        write_lancepy(path, table, version, max_page_bytes=page_bytes, batch_sizes=batch_sizes)
    r = LanceFileReader(str(path))
    assert len(r.metadata().columns[0].pages) > 1, "expected several pages"
    assert_tables_equal(table, r.read_all().to_table(), "lancepy read_all")
    edges = _page_edges(path)
    idx = edges + [e for e in EDGE_ROWS if e < n]
    rng.shuffle(idx)
    assert_tables_equal(take_expected(table, idx), r.take_rows(idx).to_table(), "lancepy take at page edges")
    for e in edges[1:-1:3]:
        start = max(0, e - 5)
        assert_tables_equal(table.slice(start, 10), r.read_range(start, 10).to_table(), f"read_range({start}, 10)")
    if direction == "lancepy_to_pylance":
        theirs = pylance_file.LanceFileReader(str(path))
        assert_tables_equal(table, theirs.read_all().to_table(), "pylance read_all")
        uniq = sorted(set(idx))
        assert_tables_equal(take_expected(table, uniq), theirs.take_rows(uniq).to_table(), "pylance take at page edges")


# --------------------------------------------------------------------------------------------
# Several columns in one file, written in several batches
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("direction", ["pylance_to_lancepy", "lancepy_to_pylance"])
def test_wide_table_all_types_together(pylance_file, tmp_path, rng, version, direction):
    """One column per type of the catalogue, each with some nulls, in one file."""
    n = 3000
    cols = {}
    for tid in TYPES:
        if tid.endswith("_4096"):
            continue  # keeps the table small; 4096-dim vectors have their own cases
        shape = "some_nulls" if tid != "null" else "all_nulls"
        cols[tid] = make_array(tid, shape, rng, n=n)
    table = pa.table(cols)
    path = tmp_path / "wide.lance"
    if direction == "pylance_to_lancepy":
        write_pylance(pylance_file, path, table, version, batch_sizes=[1024, 1000, 7])
        got = LanceFileReader(str(path)).read_all().to_table()
    else:
        write_lancepy(path, table, version, batch_sizes=[1024, 1000, 7])
        got = read_pylance(pylance_file, path)
    assert_tables_equal(table, got, "read_all")
    r = LanceFileReader(str(path))
    idx = take_indices(n, rng)
    assert_tables_equal(take_expected(table, idx), r.take_rows(idx).to_table(), "take_rows")
    some = ["int8", "string", "fsl_float32_128", "dict_int32_string"]
    assert_tables_equal(table.slice(1000, 100).select(some), r.read_range(1000, 100, columns=some).to_table(), "projected read_range")
    assert_tables_equal(take_expected(table, idx).select(some[::-1]), r.take_rows(idx, columns=some[::-1]).to_table(), "projected take, reordered")


# --------------------------------------------------------------------------------------------
# Schema and field metadata
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("direction", ["pylance_to_lancepy", "lancepy_to_pylance"])
def test_schema_and_field_metadata_survive(pylance_file, tmp_path, version, direction):
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False, metadata={"unit": "none", "ünï": "cödé"}),
            pa.field("name", pa.string(), metadata={"description": "a name"}),
            pa.field("vec", pa.list_(pa.float32(), 4)),
        ],
        metadata={"creator": "lancepy tests", "empty": ""},
    )
    table = pa.table(
        {
            "id": pa.array([3, 1, 2], pa.int64()),
            "name": ["a", None, "ç"],
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12, dtype=np.float32)), 4),
        },
        schema=schema,
    )
    path = tmp_path / "meta.lance"
    if direction == "pylance_to_lancepy":
        write_pylance(pylance_file, path, table, version)
        got_schema = LanceFileReader(str(path)).schema
        got = LanceFileReader(str(path)).read_all().to_table()
    else:
        write_lancepy(path, table, version)
        theirs = pylance_file.LanceFileReader(str(path))
        got = theirs.read_all().to_table()
        got_schema = got.schema
    assert_tables_equal(table, got, "values")
    for name in schema.names:
        assert got_schema.field(name).nullable == schema.field(name).nullable, name
        assert got_schema.field(name).metadata == schema.field(name).metadata, name
    for k, v in schema.metadata.items():
        assert got_schema.metadata.get(k) == v, (k, got_schema.metadata)


def test_writer_shared_by_threads_keeps_every_batch(pylance_file, tmp_path):
    """Threads writing through one LanceFileWriter at once (pylance allows it): every batch
    is stored whole, and pylance reads the file back. Before the writer took a lock, a
    concurrent call failed with "Already borrowed" and its rows were lost."""
    import threading

    from lancepy.file import LanceFileReader, LanceFileWriter

    schema = pa.schema([pa.field("t", pa.int64()), pa.field("v", pa.int64()), pa.field("s", pa.string())])
    for trial in range(20):
        path = str(tmp_path / f"mt{trial}.lance")
        errors = []
        with LanceFileWriter(path, schema) as writer:
            def write(t):
                try:
                    for part in range(3):
                        vals = list(range(t * 1000 + part * 100, t * 1000 + part * 100 + 100))
                        writer.write_batch(pa.table({"t": [t] * 100, "v": vals, "s": [str(v) for v in vals]}, schema=schema))
                except Exception as e:  # pragma: no cover - what the test guards against
                    errors.append(e)

            threads = [threading.Thread(target=write, args=(t,)) for t in range(6)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        assert errors == []
        ours = LanceFileReader(path).read_all().to_table()
        theirs = pylance_file.LanceFileReader(path).read_all().to_table()
        assert ours == theirs
        assert sorted(ours.column("v").to_pylist()) == sorted(t * 1000 + i for t in range(6) for i in range(300))
        # one call's batch is never split by another's
        v = ours.column("v").to_pylist()
        starts = [i for i in range(0, len(v), 100)]
        assert all(v[i + 99] - v[i] == 99 for i in starts)


@pytest.mark.parametrize("batch_size", [1, 7, 700, 1024, 5000, 9000])
def test_reader_results_come_in_pylances_batches(pylance_file, tmp_path, batch_size):
    """read_all / read_range / take_rows honour `batch_size` as pylance does: chunks of
    exactly that many rows (the last shorter), whatever pieces the decoder produced; 100
    one-MiB blobs in one batch, as pylance's test_blob expects."""
    from lancepy.file import LanceFileReader, LanceFileWriter

    path = str(tmp_path / "f.lance")
    t = pa.table({"a": np.arange(5000), "s": [str(i) for i in range(5000)]})
    with LanceFileWriter(path) as w:
        for i in range(0, 5000, 1300):
            w.write_batch(t.slice(i, 1300))
    ours, theirs = LanceFileReader(path), pylance_file.LanceFileReader(path)

    def chunks(results):
        table = results.to_table()
        return [len(c) for c in table.column("a").chunks], table

    for call, args in (("read_all", ()), ("read_range", (10, 3000)), ("take_rows", (list(range(1, 5000, 3)),))):
        got = chunks(getattr(ours, call)(*args, batch_size=batch_size))
        want = chunks(getattr(theirs, call)(*args, batch_size=batch_size))
        assert got[0] == want[0] and got[1] == want[1], call
        assert [b.num_rows for b in getattr(ours, call)(*args, batch_size=batch_size).to_batches()] == got[0]

    blob = pa.schema([pa.field("val", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    bpath = str(tmp_path / "b.lance")
    with LanceFileWriter(bpath, blob) as w:
        for _ in range(100):
            w.write_batch(pa.table({"val": pa.array([b"0" * (1 << 20)], pa.large_binary())}, schema=blob))
    col = LanceFileReader(bpath).read_all(batch_size=max(batch_size, 100)).to_table().column("val")
    assert col.num_chunks == 1 and len(col.chunk(0)) == 100


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_empty_structs_both_ways(pylance_file, tmp_path, version):
    """A struct without children: one column of one constant page, every row valid, as
    pylance writes it. Nulls in it, or one nested in another struct, are refused as pylance
    refuses them (never written as something else)."""
    from lancepy.exceptions import NotSupportedError
    from lancepy.file import LanceFileReader, LanceFileWriter

    schema = pa.schema([pa.field("id", pa.int32()), pa.field("empties", pa.struct([]))])
    table = pa.table({"id": [0, 1, 2, 3], "empties": [{}] * 4}, schema=schema)
    for name, writer, reader in (("ours", LanceFileWriter, pylance_file.LanceFileReader),
                                 ("theirs", pylance_file.LanceFileWriter, LanceFileReader),
                                 ("both", LanceFileWriter, LanceFileReader)):
        path = str(tmp_path / f"{name}.lance")
        with writer(path, version=version) as w:
            w.write_batch(table)
        got = reader(path).read_all().to_table()
        assert got == table and got.column("empties").null_count == 0, name
        assert reader(path).take_rows([1, 3]).to_table() == table.take([1, 3]), name
    with pytest.raises(NotSupportedError, match="null rows"):
        with LanceFileWriter(str(tmp_path / "n.lance"), version=version) as w:
            w.write_batch(pa.table({"e": pa.array([{}, None], pa.struct([]))}))
    nested = pa.table({"s": pa.array([{"e": {}, "x": 1}], pa.struct([pa.field("e", pa.struct([])), pa.field("x", pa.int64())]))})
    with pytest.raises(NotSupportedError, match="inside another struct"):
        with LanceFileWriter(str(tmp_path / "m.lance"), version=version) as w:
            w.write_batch(nested)
    path = str(tmp_path / "pm.lance")
    with pylance_file.LanceFileWriter(path, version=version) as w:
        w.write_batch(nested)
    with pytest.raises(NotSupportedError, match="without children"):
        LanceFileReader(path).read_all()


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("dim,rows", [(1, 1), (3, 5), (9, 3000)])
@pytest.mark.parametrize("item_type", [pa.int32(), pa.float64(), pa.int8()])
def test_fixed_size_lists_whose_items_are_all_null_from_pylance(tmp_path, version, dim, rows, item_type):
    """pylance stores a page of fixed-size lists whose items are all null as full-zip
    values holding only the items' validity bitmap (item values: a constant without a
    value); lancepy refused the page as an unsupported encoding (found by
    test_file_hypothesis)."""
    import lance
    from lance.file import LanceFileWriter as PylanceWriter

    import lancepy
    from lancepy.file import LanceFileReader as Reader

    mask = pa.array(np.arange(rows) % 3 == 1) if rows > 2 else None
    vectors = pa.FixedSizeListArray.from_arrays(pa.array([None] * (rows * dim), item_type), dim, mask=mask)
    table = pa.table({"v": vectors, "id": pa.array(np.arange(rows))})
    path = str(tmp_path / "f.lance")
    with PylanceWriter(path, version=version) as w:
        w.write_batch(table)
    reader = Reader(path)
    assert reader.read_all().to_table().equals(table)
    idx = sorted({rows - 1, 0, rows // 2})
    assert reader.take_rows(idx).to_table().equals(table.take(idx))
    assert reader.read_range(rows // 2, rows - rows // 2).to_table().equals(table.slice(rows // 2))
    uri = str(tmp_path / "d.lance")
    lance.write_dataset(table, uri, data_storage_version=version)
    assert lancepy.dataset(uri).to_table().equals(table)
