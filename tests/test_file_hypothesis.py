"""Property tests: random flat schemas and tables round-trip through lancepy, and through
pylance in both directions.

Two kinds of strategies:

* *table specs* — a random flat schema drawn from the whole type catalogue, a row count, a
  data shape per column (nulls, runs, constants, low cardinality, long values, ...), a slice
  offset, a page size and batch boundaries; the data itself comes from the seeded generators
  in ``conftest`` so that tables can be large enough to cross chunk and page edges;
* *values* — small tables whose values Hypothesis draws one by one (any Unicode text, any
  bytes, integer extremes, any float bit pattern), so failures shrink to a minimal example.

Example counts are modest (profile ``lancepy`` in ``conftest``; override with
``LANCEPY_HYPOTHESIS_EXAMPLES``) so the suite stays fast.
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from conftest import (
    TYPES,
    VERSIONS,
    assert_tables_equal,
    make_array,
    read_pylance,
    shapes_for,
    write_lancepy,
    write_pylance,
)
from lancepy.file import LanceFileReader

# Types for random schemas: the catalogue without the widest vectors (kept fast).
SCHEMA_TYPES = [t for t in TYPES if not t.endswith("_4096")]
DATA_SHAPES = ["default", "some_nulls", "all_nulls", "small_range", "runs", "constant", "low_cardinality", "long_256", "non_ascii", "empty_strings", "item_nulls", "special_floats", "text_fsst"]


@st.composite
def table_specs(draw, max_rows: int = 5000, dots_in_names: bool = True):
    ncols = draw(st.integers(1, 5))
    # pylance's writer refuses "." in top-level names (it means a nested path there).
    excluded = "\x00" if dots_in_names else "\x00."
    names = draw(st.lists(st.text(st.characters(codec="utf-8", exclude_characters=excluded), min_size=1, max_size=12), min_size=ncols, max_size=ncols, unique=True))
    cols = []
    for name in names:
        tid = draw(st.sampled_from(SCHEMA_TYPES))
        allowed = [s for s in DATA_SHAPES if s in shapes_for(tid) or s == "default"]
        if tid == "null":
            allowed = ["all_nulls"]
        cols.append((name, tid, draw(st.sampled_from(allowed))))
    rows = draw(st.one_of(st.integers(0, 3), st.integers(0, max_rows), st.sampled_from([1023, 1024, 1025, 4096, 4097])))
    offset = draw(st.sampled_from([0, 0, 1, 13, 1024]))
    return {
        "columns": cols,
        "rows": rows,
        "offset": offset,
        "seed": draw(st.integers(0, 2**32 - 1)),
        "version": draw(st.sampled_from(VERSIONS)),
        "page_bytes": draw(st.sampled_from([None, None, 4096, 64 * 1024])),
        "batches": draw(st.lists(st.integers(1, 3000), max_size=4)),
    }


def build_table(spec) -> pa.Table:
    rng = np.random.default_rng(spec["seed"])
    n, off = spec["rows"], spec["offset"]
    arrays = {}
    for name, tid, shape in spec["columns"]:
        rows = n + off
        if shape == "long_256":
            rows = min(rows, 300 + off)
        arrays[name] = (tid, shape, rows)
    n_eff = min(r for _, _, r in arrays.values()) - off  # long values cap the row count
    out = {}
    for name, (tid, shape, _) in arrays.items():
        arr = make_array(tid, "no_nulls" if shape == "default" else shape, rng, n=n_eff + off)
        out[name] = arr.slice(off, n_eff)
    return pa.table(out)


def _check_reads(path, table: pa.Table, rng: np.random.Generator) -> None:
    r = LanceFileReader(str(path))
    n = table.num_rows
    assert r.num_rows() == n
    assert_tables_equal(table, r.read_all().to_table(), "read_all")
    if n:
        start = int(rng.integers(0, n))
        count = int(rng.integers(0, n - start + 1))
        assert_tables_equal(table.slice(start, count), r.read_range(start, count).to_table(), f"read_range({start}, {count})")
        idx = rng.integers(0, n, size=min(n, 40)).tolist() + [n - 1, 0]
        assert_tables_equal(table.take(pa.array(idx, pa.int64())), r.take_rows(idx).to_table(), "take_rows")
        cols = list(table.column_names)
        rng.shuffle(cols)
        proj = cols[: max(1, len(cols) // 2)]
        assert_tables_equal(table.select(proj), r.read_all(columns=proj).to_table(), f"projection {proj}")
    batches = list(r.to_batches(batch_size=1000))
    got = pa.Table.from_batches(batches, schema=r.schema) if batches else r.schema.empty_table()
    assert_tables_equal(table, got, "to_batches")


def _write_args(spec):
    return {"max_page_bytes": spec["page_bytes"], "batch_sizes": spec["batches"] or None}


@given(spec=table_specs())
def test_random_tables_roundtrip_through_lancepy(spec):
    note(repr(spec))
    table = build_table(spec)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.lance"
        write_lancepy(path, table, spec["version"], **_write_args(spec))
        _check_reads(path, table, np.random.default_rng(spec["seed"]))


@pytest.mark.interop
@given(spec=table_specs(max_rows=3000))
def test_random_tables_lancepy_to_pylance(pylance_file, spec):
    note(repr(spec))
    table = build_table(spec)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.lance"
        write_lancepy(path, table, spec["version"], **_write_args(spec))
        assert_tables_equal(table, read_pylance(pylance_file, path), "pylance read_all")
        n = table.num_rows
        if n:
            rows = sorted(set(np.random.default_rng(spec["seed"]).integers(0, n, size=min(n, 30)).tolist()))
            theirs = pylance_file.LanceFileReader(str(path)).take_rows(rows).to_table()
            assert_tables_equal(table.take(pa.array(rows, pa.int64())), theirs, "pylance take_rows")


@pytest.mark.interop
@given(spec=table_specs(max_rows=3000, dots_in_names=False))
def test_random_tables_pylance_to_lancepy(pylance_file, spec):
    note(repr(spec))
    table = build_table(spec)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.lance"
        write_pylance(pylance_file, path, table, spec["version"], **_write_args(spec))
        _check_reads(path, table, np.random.default_rng(spec["seed"]))


# --------------------------------------------------------------------------------------------
# Value-level strategies (shrink to minimal examples)
# --------------------------------------------------------------------------------------------

VALUE_COLUMNS = {
    "int8": (pa.int8(), st.integers(-(2**7), 2**7 - 1)),
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "uint64": (pa.uint64(), st.integers(0, 2**64 - 1)),
    "uint16": (pa.uint16(), st.integers(0, 2**16 - 1)),
    "float32_bits": (pa.float32(), st.integers(0, 2**32 - 1).map(lambda b: struct.unpack("<f", struct.pack("<I", b))[0])),
    "float64": (pa.float64(), st.floats(allow_nan=True, allow_infinity=True)),
    "bool": (pa.bool_(), st.booleans()),
    "string": (pa.string(), st.text(st.characters(codec="utf-8"), max_size=40)),
    "large_string": (pa.large_string(), st.text(max_size=300)),
    "binary": (pa.binary(), st.binary(max_size=40)),
    "large_binary": (pa.large_binary(), st.binary(max_size=400)),
    "fsb4": (pa.binary(4), st.binary(min_size=4, max_size=4)),
    "date32": (pa.date32(), st.integers(-(2**31), 2**31 - 1)),
    "timestamp_ns_tz": (pa.timestamp("ns", "UTC"), st.integers(-(2**63), 2**63 - 1)),
    "vec_f32_3": (pa.list_(pa.float32(), 3), st.lists(st.floats(width=32, allow_nan=False), min_size=3, max_size=3)),
    "vec_u8_2": (pa.list_(pa.uint8(), 2), st.lists(st.integers(0, 255), min_size=2, max_size=2)),
}


def _array_from_values(t: pa.DataType, values) -> pa.Array:
    if pa.types.is_date32(t) or pa.types.is_timestamp(t):
        storage = pa.int32() if pa.types.is_date32(t) else pa.int64()
        return pa.array(values, type=storage).view(t)
    return pa.array(values, type=t)


@st.composite
def value_tables(draw):
    names = draw(st.lists(st.sampled_from(sorted(VALUE_COLUMNS)), min_size=1, max_size=4, unique=True))
    n = draw(st.integers(0, 300))
    cols = {}
    for name in names:
        t, values = VALUE_COLUMNS[name]
        nullable = draw(st.booleans())
        elem = st.one_of(st.none(), values) if nullable else values
        # Runs of repeated values exercise RLE / constant pages; hypothesis shrinks them too.
        base = draw(st.lists(elem, min_size=min(n, 1), max_size=max(1, min(n, 20))))
        reps = [base[i % len(base)] for i in range(n)] if base else []
        mode = draw(st.sampled_from(["cycle", "runs"]))
        if mode == "runs" and base:
            reps = [base[(i * len(base)) // max(n, 1)] for i in range(n)]
        cols[name] = _array_from_values(t, reps)
    return pa.table(cols), draw(st.sampled_from(VERSIONS)), draw(st.sampled_from([None, 256, 4096]))


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(case=value_tables())
def test_drawn_values_roundtrip_all_directions(pylance_file, case):
    table, version, page_bytes = case
    note(f"version={version} page_bytes={page_bytes}\n{table!r}"[:3000])
    with tempfile.TemporaryDirectory() as d:
        ours, theirs = Path(d) / "ours.lance", Path(d) / "theirs.lance"
        write_lancepy(ours, table, version, max_page_bytes=page_bytes)
        assert_tables_equal(table, LanceFileReader(str(ours)).read_all().to_table(), "lancepy → lancepy")
        assert_tables_equal(table, read_pylance(pylance_file, ours), "lancepy → pylance")
        write_pylance(pylance_file, theirs, table, version, max_page_bytes=page_bytes)
        assert_tables_equal(table, LanceFileReader(str(theirs)).read_all().to_table(), "pylance → lancepy")
        if table.num_rows:
            idx = [table.num_rows - 1, 0, table.num_rows // 2, 0]
            assert_tables_equal(table.take(idx), LanceFileReader(str(theirs)).take_rows(idx).to_table(), "take_rows")
