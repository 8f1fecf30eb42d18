"""Export is zero-copy: pyarrow's buffers are the ones lancepy decoded into.

``ReaderResults`` wraps a native object whose ``_buffer_addresses()`` lists, per column, the
addresses of the data buffers as lancepy allocated them (``ArrayData.buffers()``: values, or
offsets then bytes). After ``pyarrow.table(result)`` the same addresses must appear in
pyarrow's buffers of the same column — a copy would put them elsewhere.
"""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
import pytest

from conftest import VERSIONS, assert_tables_equal, write_lancepy
from lancepy.file import LanceFileReader


def _table(n: int = 5000) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table(
        {
            "i64": pa.array(rng.integers(-(2**60), 2**60, size=n)),
            "f32": pa.array(rng.standard_normal(n).astype(np.float32), mask=rng.random(n) < 0.2),
            "s": pa.array([f"row {i} ü" * (i % 5) for i in range(n)]),
            "ls": pa.array([f"{i}" for i in range(n)], type=pa.large_string()),
            "b": pa.array(rng.random(n) < 0.5),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 8).astype(np.float32)), 8),
            "wide": pa.array([("x" * 300) + str(i) for i in range(n)]),
        }
    )


def _pyarrow_data_buffers(arr: pa.Array) -> list:
    """Addresses of the non-validity buffers of ``arr`` (and its children, in order)."""
    out = []
    t = arr.type
    bufs = arr.buffers()
    if pa.types.is_fixed_size_list(t):
        return [b.address for b in bufs[1:] if b is not None]  # child validity, child values
    for i, b in enumerate(bufs):
        if i == 0 or b is None:
            continue
        out.append(b.address)
    return out


@pytest.fixture(params=VERSIONS)
def written(request, tmp_path):
    table = _table()
    path = tmp_path / "zc.lance"
    write_lancepy(path, table, request.param)
    return path, table


def _check_zero_copy(result, expected: pa.Table) -> pa.Table:
    addresses = result._inner._buffer_addresses()
    table = result.to_table()
    assert_tables_equal(expected, table)
    assert len(addresses) == table.num_columns, "one address list per column (single batch)"
    for name, lance_addrs in zip(table.column_names, addresses):
        chunks = table.column(name).chunks
        assert len(chunks) == 1
        arrow_addrs = _pyarrow_data_buffers(chunks[0])
        if pa.types.is_fixed_size_list(chunks[0].type):
            # ArrayData.buffers() of a fixed-size list is empty: its memory is the child's,
            # which the probe does not report.
            continue
        assert lance_addrs, f"column {name}: no buffers reported"
        # Every buffer lancepy allocated for the column is one pyarrow now uses.
        missing = [a for a in lance_addrs if a not in arrow_addrs]
        assert not missing, f"column {name}: pyarrow buffers {arrow_addrs} do not include lancepy's {lance_addrs} (copied?)"
    return table


def test_read_all_is_zero_copy(written):
    path, table = written
    _check_zero_copy(LanceFileReader(str(path)).read_all(batch_size=1 << 20), table)  # (one batch)


def test_read_range_is_zero_copy(written):
    path, table = written
    _check_zero_copy(LanceFileReader(str(path)).read_range(1000, 3000, batch_size=1 << 20), table.slice(1000, 3000))


def test_batches_of_batch_size_are_slices_of_the_decoded_buffers(written):
    """Cut into batches of `batch_size` rows, the result still shares lancepy's buffers:
    each chunk views the one decoded buffer (no copy), as the single batch does."""
    path, table = written
    result = LanceFileReader(str(path)).read_all(columns=["i64"], batch_size=1000)
    addresses = result._inner._buffer_addresses()[0]
    chunks = result.to_table().column("i64").chunks
    assert [len(c) for c in chunks] == [1000] * 5
    for c in chunks:
        assert [b.address for b in c.buffers()[1:] if b is not None] == addresses
    assert_tables_equal(table.select(["i64"]), pa.table({"i64": pa.chunked_array(chunks)}))


def test_take_is_zero_copy(written):
    path, table = written
    idx = [4999, 0, 1024, 1024, 17]
    _check_zero_copy(LanceFileReader(str(path)).take_rows(idx), table.take(pa.array(idx)))


def test_fixed_size_list_values_are_zero_copy(written):
    """The vector column's items buffer (the child) is shared, not copied."""
    path, table = written
    result = LanceFileReader(str(path)).read_all(columns=["vec"], batch_size=1 << 20)
    first = pa.table(result).column("vec").chunks[0]
    second = pa.table(result).column("vec").chunks[0]
    assert first.values.buffers()[1].address == second.values.buffers()[1].address
    assert_tables_equal(table.select(["vec"]), pa.table({"vec": first}))


def test_exporting_twice_shares_the_same_memory(written):
    path, _ = written
    result = LanceFileReader(str(path)).read_all(columns=["i64", "s"])
    a, b = pa.table(result), pa.table(result)
    for name in ("i64", "s"):
        assert a.column(name).chunks[0].buffers()[1].address == b.column(name).chunks[0].buffers()[1].address


def test_exported_memory_outlives_reader_and_result(written):
    """pyarrow keeps lancepy's buffers alive after the result and the reader are gone."""
    path, table = written
    reader = LanceFileReader(str(path))
    result = reader.read_all()
    got = result.to_table()
    del result, reader
    gc.collect()
    # Allocate and free a lot, so reused memory would show.
    for _ in range(5):
        LanceFileReader(str(path)).read_all().to_table()
    gc.collect()
    assert_tables_equal(table, got)


def test_addresses_differ_between_columns(written):
    """Sanity check of the probe itself: distinct columns report distinct memory."""
    path, _ = written
    addrs = LanceFileReader(str(path)).read_all(columns=["i64", "ls"])._inner._buffer_addresses()
    assert addrs[0][0] not in addrs[1]


def test_a_copy_is_detected():
    """The check fails for data that was copied (so the tests above can fail)."""
    arr = pa.array(np.arange(10, dtype=np.int64))
    copied = pa.array(arr.to_pylist(), type=pa.int64())
    assert arr.buffers()[1].address not in _pyarrow_data_buffers(copied)
