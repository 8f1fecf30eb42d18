"""Streaming scans read in units larger than small batches and hand out batches of the size
asked for.

A scan used to read each batch's bytes on its own: with 1,000-row batches it fetched the
mini-block chunks two batches share twice (1.5x the bytes of one pass) and made one request
per column per batch (2,000 requests for 1M rows of two columns: on object storage, one GET
each). Filtered scans handed out batches of the 64K rows they read, whatever ``batch_size``
said. pylance is the oracle for the rows.
"""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancepy

ROWS = 200_000


@pytest.fixture(scope="module")
def ds_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("batches") / "t.lance")
    rng = np.random.default_rng(11)
    table = pa.table(
        {
            "a": np.arange(ROWS),
            "x": rng.random(ROWS),
            "s": pa.array([f"row-{i % 997}" for i in range(ROWS)]),
        }
    )
    lancepy.write_dataset(table, path, max_rows_per_file=70_000)
    lancepy.dataset(path).delete("a % 13 = 5 or (a >= 1000 and a < 3000)")
    return path


@pytest.mark.parametrize("batch_size", [1, 7, 1000, 8192, 70_000, 100_000])
def test_batches_have_the_size_asked_and_the_rows_of_pylance(ds_path, batch_size):
    ds = lancepy.dataset(ds_path)
    if batch_size == 1:
        batches = list(ds.to_batches(batch_size=1, columns=["a"], limit=3000, offset=500))
        expected = lance.dataset(ds_path).to_table(columns=["a"], limit=3000, offset=500)
    else:
        batches = list(ds.to_batches(batch_size=batch_size))
        expected = lance.dataset(ds_path).to_table()
    assert batches and all(0 < b.num_rows <= batch_size for b in batches)
    assert pa.Table.from_batches(batches).equals(expected)


def test_small_batches_read_the_bytes_and_requests_of_large_ones(ds_path):
    ds = lancepy.dataset(ds_path)
    ds.io_stats_incremental()
    big = sum(b.num_rows for b in ds.to_batches(batch_size=100_000))
    whole = ds.io_stats_incremental()
    small = sum(b.num_rows for b in ds.to_batches(batch_size=1000))
    cut = ds.io_stats_incremental()
    assert big == small
    # Each column of a fragment read in a few requests, not one per 1,000 rows (~180 batches).
    assert cut.read_iops <= 2 * whole.read_iops + 12, (cut.read_iops, whole.read_iops)
    assert cut.read_bytes <= 1.1 * whole.read_bytes, (cut.read_bytes, whole.read_bytes)


@pytest.mark.parametrize(
    "flt,kwargs",
    [
        ("a % 2 = 0", {}),
        ("x > 0.25", {"columns": ["s"]}),
        ("s = 'row-5'", {"columns": ["a", "x"], "limit": 40, "offset": 3}),
        ("a > 150000 or a < 20", {"with_row_id": True}),
    ],
)
@pytest.mark.parametrize("batch_size", [1, 333, 8192])
def test_filtered_batches_never_exceed_the_batch_size(ds_path, flt, kwargs, batch_size):
    got = list(lancepy.dataset(ds_path).to_batches(batch_size=batch_size, filter=flt, **kwargs))
    assert all(b.num_rows <= batch_size for b in got)
    expected = lance.dataset(ds_path).to_table(filter=flt, **kwargs)
    assert pa.Table.from_batches(got, schema=expected.schema).equals(expected)


@pytest.mark.parametrize("readahead", [1, 4])
def test_readahead_counts_batches_not_read_units(ds_path, readahead):
    got = lancepy.dataset(ds_path).scanner(batch_size=500, batch_readahead=readahead, columns=["a"]).to_batches()
    batches = list(got)
    assert all(b.num_rows <= 500 for b in batches)
    assert pa.Table.from_batches(batches).equals(lance.dataset(ds_path).to_table(columns=["a"]))
