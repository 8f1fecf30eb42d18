"""Lance file version 2.0 against pylance, both ways.

pylance writes → lancepy reads, and lancepy writes → pylance reads, for every non-nested
type, with no / some / all nulls, zero / one / many rows, several pages, sliced input,
negative numbers, empty and non-ASCII strings and values of 256+ bytes and over 32 KiB.
Reads compare exactly (``Table.equals``); dictionary columns compare by value, because
each reader builds its own dictionary (pylance keeps the null entry the 2.0 format adds,
lancepy re-encodes in first-seen order).
"""

from __future__ import annotations

import datetime
import decimal
from typing import Callable, Dict, List

import numpy as np
import pyarrow as pa
import pytest

lance_file = pytest.importorskip("lance.file")

from lancepy.file import LanceFileReader, LanceFileWriter  # noqa: E402

pytestmark = pytest.mark.interop

NullMode = str  # "none" | "some" | "all"


def _mask(n: int, mode: NullMode) -> List[bool]:
    """True where the value is null."""
    if mode == "none":
        return [False] * n
    if mode == "all":
        return [True] * n
    return [i % 3 == 1 for i in range(n)]


def _nullify(values: list, mode: NullMode) -> list:
    return [None if m else v for v, m in zip(values, _mask(len(values), mode))]


def _ints(n: int, lo: int, hi: int) -> list:
    span = hi - lo
    return [lo + (i * 7919 + 13) % span for i in range(n)]


def _text(i: int) -> str:
    kinds = [
        "",
        "ascii",
        "ünïcødé ✓ 日本語 🦀",
        "x" * 300,  # >= 256 bytes
        "y" * (33 * 1024),  # > 32 KiB
        str(i),
    ]
    return kinds[i % len(kinds)]


def _fsl(item_type: pa.DataType, dim: int, n: int, mode: NullMode, item_nulls: bool) -> pa.Array:
    if pa.types.is_floating(item_type):
        raw = (np.arange(n * dim, dtype=np.float64) * 0.25 - 3).astype(item_type.to_pandas_dtype())
        items = pa.array(raw, type=item_type)
    else:
        info = np.iinfo(item_type.to_pandas_dtype())
        items = pa.array(_ints(n * dim, int(info.min), int(info.max)), type=item_type)
    if item_nulls:
        items = pa.array(
            [None if i % 4 == 2 else v for i, v in enumerate(items.to_pylist())], type=item_type
        )
    mask = pa.array(_mask(n, mode), type=pa.bool_())
    return pa.FixedSizeListArray.from_arrays(items, dim, mask=mask)


def _dictionary(key: pa.DataType, n: int, mode: NullMode) -> pa.Array:
    values = _nullify([["red", "grün", "", "青"][i % 4] for i in range(n)], mode)
    return pa.array(values, type=pa.string()).dictionary_encode().cast(pa.dictionary(key, pa.string()))


MAKERS: Dict[str, Callable[[int, NullMode], pa.Array]] = {
    "null": lambda n, m: pa.nulls(n),
    "bool": lambda n, m: pa.array(_nullify([i % 3 == 0 for i in range(n)], m), pa.bool_()),
    "int8": lambda n, m: pa.array(_nullify(_ints(n, -128, 128), m), pa.int8()),
    "int16": lambda n, m: pa.array(_nullify(_ints(n, -(2**15), 2**15), m), pa.int16()),
    "int32": lambda n, m: pa.array(_nullify(_ints(n, -(2**31), 2**31), m), pa.int32()),
    "int64": lambda n, m: pa.array(_nullify(_ints(n, -(2**63), 2**63), m), pa.int64()),
    "uint8": lambda n, m: pa.array(_nullify(_ints(n, 0, 2**8), m), pa.uint8()),
    "uint16": lambda n, m: pa.array(_nullify(_ints(n, 0, 2**16), m), pa.uint16()),
    "uint32": lambda n, m: pa.array(_nullify(_ints(n, 0, 2**32), m), pa.uint32()),
    "uint64": lambda n, m: pa.array(_nullify(_ints(n, 0, 2**64), m), pa.uint64()),
    "float16": lambda n, m: pa.array(
        np.arange(n, dtype=np.float16) - 7, pa.float16(), mask=np.array(_mask(n, m), dtype=bool)
    ),
    "float32": lambda n, m: pa.array(_nullify([i * -1.5 for i in range(n)], m), pa.float32()),
    "float64": lambda n, m: pa.array(_nullify([i / 7 - 3 for i in range(n)], m), pa.float64()),
    "decimal128": lambda n, m: pa.array(
        _nullify([decimal.Decimal(i - 50) / 100 for i in range(n)], m), pa.decimal128(12, 2)
    ),
    "decimal256": lambda n, m: pa.array(
        _nullify([decimal.Decimal(10**40 - i) for i in range(n)], m), pa.decimal256(50, 0)
    ),
    "date32": lambda n, m: pa.array(_nullify(_ints(n, -30000, 30000), m), pa.date32()),
    "date64": lambda n, m: pa.array(
        _nullify([d * 86_400_000 for d in _ints(n, -30000, 30000)], m), pa.date64()
    ),
    "time32_s": lambda n, m: pa.array(_nullify(_ints(n, 0, 86400), m), pa.time32("s")),
    "time32_ms": lambda n, m: pa.array(_nullify(_ints(n, 0, 86_400_000), m), pa.time32("ms")),
    "time64_us": lambda n, m: pa.array(_nullify(_ints(n, 0, 86_400_000_000), m), pa.time64("us")),
    "time64_ns": lambda n, m: pa.array(_nullify(_ints(n, 0, 86_400 * 10**9), m), pa.time64("ns")),
    "timestamp_s": lambda n, m: pa.array(_nullify(_ints(n, -(2**40), 2**40), m), pa.timestamp("s")),
    "timestamp_ms_utc": lambda n, m: pa.array(
        _nullify(_ints(n, -(2**40), 2**40), m), pa.timestamp("ms", tz="UTC")
    ),
    "timestamp_us_tz": lambda n, m: pa.array(
        _nullify(_ints(n, -(2**50), 2**50), m), pa.timestamp("us", tz="America/New_York")
    ),
    "timestamp_ns": lambda n, m: pa.array(_nullify(_ints(n, -(2**62), 2**62), m), pa.timestamp("ns")),
    "duration_s": lambda n, m: pa.array(_nullify(_ints(n, -(2**40), 2**40), m), pa.duration("s")),
    "duration_ms": lambda n, m: pa.array(_nullify(_ints(n, -(2**40), 2**40), m), pa.duration("ms")),
    "duration_us": lambda n, m: pa.array(_nullify(_ints(n, -(2**40), 2**40), m), pa.duration("us")),
    "duration_ns": lambda n, m: pa.array(_nullify(_ints(n, -(2**40), 2**40), m), pa.duration("ns")),
    "string": lambda n, m: pa.array(_nullify([_text(i) for i in range(n)], m), pa.string()),
    "large_string": lambda n, m: pa.array(_nullify([_text(i) for i in range(n)], m), pa.large_string()),
    "binary": lambda n, m: pa.array(
        _nullify([_text(i).encode() + bytes([i % 256]) for i in range(n)], m), pa.binary()
    ),
    "large_binary": lambda n, m: pa.array(
        _nullify([_text(i).encode() for i in range(n)], m), pa.large_binary()
    ),
    "fixed_size_binary": lambda n, m: pa.array(
        _nullify([bytes([i % 256, 255 - i % 256, 7]) for i in range(n)], m), pa.binary(3)
    ),
    "low_cardinality_string": lambda n, m: pa.array(
        _nullify([["alpha", "", "gämma", "δ" * 300][i % 4] for i in range(n)], m), pa.string()
    ),
    "dictionary_int8": lambda n, m: _dictionary(pa.int8(), n, m),
    "dictionary_int32": lambda n, m: _dictionary(pa.int32(), n, m),
    "dictionary_uint16": lambda n, m: _dictionary(pa.uint16(), n, m),
    "fsl_float16": lambda n, m: _fsl(pa.float16(), 4, n, m, False),
    "fsl_float32": lambda n, m: _fsl(pa.float32(), 8, n, m, False),
    "fsl_float64": lambda n, m: _fsl(pa.float64(), 3, n, m, False),
    "fsl_int8": lambda n, m: _fsl(pa.int8(), 16, n, m, False),
    "fsl_uint8": lambda n, m: _fsl(pa.uint8(), 5, n, m, False),
    "fsl_float32_null_items": lambda n, m: _fsl(pa.float32(), 4, n, m, True),
    "fsl_uint8_null_items": lambda n, m: _fsl(pa.uint8(), 3, n, m, True),
}

SIZES = [0, 1, 600]
MODES = ["none", "some", "all"]


def _by_value(table: pa.Table) -> pa.Table:
    """Dictionary columns decoded to their values (each reader builds its own dictionary)."""
    cols = []
    for col in table.columns:
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names)


def assert_tables_equal(got: pa.Table, want: pa.Table) -> None:
    assert got.schema.types == want.schema.types, (got.schema, want.schema)
    assert got.num_rows == want.num_rows
    if any(pa.types.is_dictionary(t) for t in want.schema.types):
        got, want = _by_value(got), _by_value(want)
    got, want = got.combine_chunks(), want.combine_chunks()
    assert got.equals(want), f"\n got: {got.to_pydict()!r:.2000}\nwant: {want.to_pydict()!r:.2000}"


def _sample_rows(n: int) -> List[int]:
    """Sorted, distinct rows: both ends, a run, and a spread."""
    rows = {0, 1, 2, n // 2, n // 2 + 1, n - 2, n - 1} | set(range(0, n, max(1, n // 17)))
    return sorted(r for r in rows if 0 <= r < n)


def _take(table: pa.Table, rows: List[int]) -> pa.Table:
    return table.take(pa.array(rows, pa.int64()))


def write_with_pylance(path, table: pa.Table, **kw) -> None:
    with lance_file.LanceFileWriter(str(path), schema=table.schema, version="2.0", **kw) as w:
        w.write_batch(table)


def write_with_lancepy(path, table: pa.Table, **kw) -> None:
    with LanceFileWriter(path, schema=table.schema, version="2.0", **kw) as w:
        w.write_batch(table)


def read_with_pylance(path) -> pa.Table:
    return lance_file.LanceFileReader(str(path)).read_all().to_table()


def take_with_pylance(path, rows: List[int]) -> pa.Table:
    return lance_file.LanceFileReader(str(path)).take_rows(rows).to_table()


def _check_lancepy_reads(path, table: pa.Table) -> None:
    reader = LanceFileReader(path)
    assert reader.version == "2.0"
    assert reader.num_rows() == table.num_rows
    assert_tables_equal(reader.read_all().to_table(), table)
    n = table.num_rows
    rows = _sample_rows(n)
    assert_tables_equal(reader.take_rows(rows).to_table(), _take(table, rows))
    if n > 2:
        # Unsorted with repeats, and a range in the middle.
        shuffled = [n - 1, 0, n // 2, 0, 1]
        assert_tables_equal(reader.take_rows(shuffled).to_table(), _take(table, shuffled))
        assert_tables_equal(reader.read_range(1, n - 2).to_table(), table.slice(1, n - 2))


def _check_pylance_reads(path, table: pa.Table) -> None:
    assert_tables_equal(read_with_pylance(path), table)
    rows = _sample_rows(table.num_rows)
    if rows:
        assert_tables_equal(take_with_pylance(path, rows), _take(table, rows))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(MAKERS))
def test_pylance_writes_lancepy_reads(tmp_path, name, n, mode):
    table = pa.table({"c": MAKERS[name](n, mode)})
    path = tmp_path / "pylance.lance"
    write_with_pylance(path, table)
    _check_lancepy_reads(path, table)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(MAKERS))
def test_lancepy_writes_pylance_reads(tmp_path, name, n, mode):
    table = pa.table({"c": MAKERS[name](n, mode)})
    path = tmp_path / "lancepy.lance"
    write_with_lancepy(path, table)
    _check_pylance_reads(path, table)
    _check_lancepy_reads(path, table)


def _encodings(path) -> List[List[str]]:
    return LanceFileReader(path).metadata().encodings()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(MAKERS))
def test_lancepy_writes_the_shapes_pylance_writes(tmp_path, name, mode):
    """Our 2.0 encoding trees are the ones pylance writes for the same data."""
    table = pa.table({"c": MAKERS[name](600, mode)})
    write_with_pylance(tmp_path / "p.lance", table)
    write_with_lancepy(tmp_path / "l.lance", table)
    assert _encodings(tmp_path / "l.lance") == _encodings(tmp_path / "p.lance")


def _mixed_table(n: int) -> pa.Table:
    names = ["int32", "float64", "string", "large_binary", "bool", "fsl_float32_null_items",
             "dictionary_int32", "low_cardinality_string", "timestamp_us_tz", "decimal128", "null"]
    return pa.table({name: MAKERS[name](n, "some") for name in names})


@pytest.mark.parametrize("direction", ["pylance_to_lancepy", "lancepy_to_pylance"])
def test_multiple_pages(tmp_path, direction):
    table = _mixed_table(3000)
    path = tmp_path / "pages.lance"
    if direction == "pylance_to_lancepy":
        write_with_pylance(path, table, max_page_bytes=8 * 1024)
    else:
        write_with_lancepy(path, table, max_page_bytes=8 * 1024)
    pages = [len(c.pages) for c in LanceFileReader(path).metadata().columns]
    assert max(pages) > 3, pages
    _check_lancepy_reads(path, table)
    _check_pylance_reads(path, table)
    # Every page edge, from both sides.
    reader = LanceFileReader(path)
    rows, first = [], 0
    for page in LanceFileReader(path).metadata().columns[0].pages:
        rows += [first, first + page.num_rows - 1]
        first += page.num_rows
    rows = sorted(set(rows))
    assert_tables_equal(reader.take_rows(rows).to_table(), _take(table, rows))
    assert_tables_equal(take_with_pylance(path, rows), _take(table, rows))


@pytest.mark.parametrize("direction", ["pylance_to_lancepy", "lancepy_to_pylance"])
def test_sliced_input(tmp_path, direction):
    """Arrays with a non-zero offset (validity bitmaps not byte aligned) are written right."""
    base = _mixed_table(1000)
    table = base.slice(13, 700)
    path = tmp_path / "sliced.lance"
    if direction == "pylance_to_lancepy":
        write_with_pylance(path, table)
    else:
        write_with_lancepy(path, table)
    _check_lancepy_reads(path, table)
    _check_pylance_reads(path, table)


@pytest.mark.parametrize("direction", ["pylance_to_lancepy", "lancepy_to_pylance"])
def test_several_batches_and_zero_rows(tmp_path, direction):
    table = _mixed_table(100)
    path = tmp_path / "batches.lance"
    writer_cls = lance_file.LanceFileWriter if direction == "pylance_to_lancepy" else LanceFileWriter
    path_arg = str(path) if direction == "pylance_to_lancepy" else path
    with writer_cls(path_arg, schema=table.schema, version="2.0") as w:
        for batch in [table.slice(0, 0), table.slice(0, 40), table.slice(40, 1), table.slice(41)]:
            w.write_batch(batch)
    _check_lancepy_reads(path, table)
    _check_pylance_reads(path, table)

    empty = table.slice(0, 0)
    path = tmp_path / "empty.lance"
    with writer_cls(str(path) if writer_cls is lance_file.LanceFileWriter else path,
                    schema=empty.schema, version="2.0") as w:
        w.write_batch(empty)
    assert LanceFileReader(path).num_rows() == 0
    assert_tables_equal(LanceFileReader(path).read_all().to_table(), empty)
    assert_tables_equal(read_with_pylance(path), empty)


def test_compressed_strings_both_ways(tmp_path):
    """``lance-encoding:compression=zstd`` compresses the bytes of string pages in 2.0."""
    field = pa.field("s", pa.string(), metadata={"lance-encoding:compression": "zstd"})
    table = pa.Table.from_arrays([MAKERS["string"](800, "some")], schema=pa.schema([field]))
    for writer, name in [(write_with_pylance, "p"), (write_with_lancepy, "l")]:
        path = tmp_path / f"{name}.lance"
        writer(path, table)
        assert "flat(8, zstd)" in _encodings(path)[0][0]
        _check_lancepy_reads(path, table)
        _check_pylance_reads(path, table)


def test_random_access_reads_only_what_it_needs(tmp_path):
    """Takes from flat and binary 2.0 pages read byte ranges, not whole pages: a take from a
    file whose other pages are damaged still works."""
    n = 20_000
    table = pa.table({
        "i": pa.array(range(n), pa.int64()),
        "s": pa.array([f"value-{i}" * (1 + i % 5) for i in range(n)], pa.string()),
    })
    path = tmp_path / "ra.lance"
    write_with_lancepy(path, table)
    reader = LanceFileReader(path)
    rows = [3, 4, 5, 19_999]
    assert_tables_equal(reader.take_rows(rows).to_table(), _take(table, rows))
    # Overwrite the middle of the string bytes with garbage; rows elsewhere still read.
    meta = reader.metadata()
    bytes_pos, bytes_size = meta.columns[1].pages[0].buffers[1]
    with open(path, "r+b") as f:
        f.seek(bytes_pos + bytes_size // 4)
        f.write(b"\xff" * (bytes_size // 2))
    fresh = LanceFileReader(path)
    assert_tables_equal(fresh.take_rows(rows).to_table(), _take(table, rows))
    with pytest.raises(Exception):
        fresh.read_all().to_table()


def test_corrupt_offsets_raise_not_crash(tmp_path):
    from lancepy.exceptions import CorruptFileError

    table = pa.table({"s": pa.array(["a", "bb", "ccc", None, "dddd"])})
    path = tmp_path / "bad.lance"
    write_with_pylance(path, table)
    meta = LanceFileReader(path).metadata()
    idx_pos, _ = meta.columns[0].pages[0].buffers[0]
    with open(path, "r+b") as f:
        f.seek(idx_pos + 8)  # second end offset -> far beyond the bytes
        f.write((1 << 40).to_bytes(8, "little"))
    reader = LanceFileReader(path)
    with pytest.raises(CorruptFileError):
        reader.read_all().to_table()
    with pytest.raises(CorruptFileError):
        reader.take_rows([1]).to_table()
    assert_tables_equal(reader.take_rows([0]).to_table(), table.take([0]))


def test_dates_and_times_round_trip_exactly(tmp_path):
    table = pa.table({
        "d": pa.array([datetime.date(1970, 1, 1), None, datetime.date(1900, 2, 28)]),
        "t": pa.array([datetime.time(23, 59, 59, 999999), None, datetime.time(0)]),
        "ts": pa.array([datetime.datetime(2024, 2, 29, 12), None, datetime.datetime(1800, 1, 1)],
                       pa.timestamp("us", tz="Europe/Paris")),
    })
    for writer in (write_with_pylance, write_with_lancepy):
        path = tmp_path / f"{writer.__name__}.lance"
        writer(path, table)
        _check_lancepy_reads(path, table)
        _check_pylance_reads(path, table)


try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        ints=st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=300),
        texts=st.lists(st.one_of(st.none(), st.text(max_size=40)), max_size=300),
        offset=st.integers(0, 20),
        direction=st.sampled_from(["pylance_to_lancepy", "lancepy_to_pylance"]),
    )
    def test_random_tables_round_trip(tmp_path, ints, texts, offset, direction):
        n = min(len(ints), len(texts))
        table = pa.table({
            "i": pa.array(ints[:n], pa.int64()),
            "s": pa.array(texts[:n], pa.string()),
        })
        table = table.slice(min(offset, n))
        path = tmp_path / f"h-{direction}.lance"
        if direction == "pylance_to_lancepy":
            write_with_pylance(path, table)
        else:
            write_with_lancepy(path, table)
        _check_lancepy_reads(path, table)
        _check_pylance_reads(path, table)
