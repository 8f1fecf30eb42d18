"""Per-dataset I/O statistics (pylance's ``io_stats_snapshot`` / ``io_stats_incremental``).

Each dataset object counts the reads and writes made on its behalf, through any module and on
any thread working for it: two objects never see each other's I/O, a checkout shares its
parent's counts (as pylance's), a write counts for the dataset it returns, and streams count
for their dataset while they are consumed, whoever consumes them. Exact figures are checked
against what is on disk and against the process's counters; pylance is the reference for the
API and for which operations count.
"""

from __future__ import annotations

import os
import threading

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy._core.iostats import IOStats


def _files_bytes(root: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)


def _stamps(root: str) -> dict:
    out = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            st = os.stat(os.path.join(d, f))
            out[os.path.join(d, f)] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def _table(n: int, dim: int = 0, seed: int = 0) -> pa.Table:
    cols = {"id": pa.array(np.arange(n, dtype=np.int64)), "x": pa.array(np.random.default_rng(seed).random(n))}
    if dim:
        vec = np.random.default_rng(seed).random((n, dim), dtype=np.float32)
        cols["vec"] = pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), dim)
    return pa.table(cols)


def _delta(before: dict, after: dict) -> dict:
    return {k: after[k] - before[k] for k in before}


def test_api_is_pylances(tmp_path):
    ds = lancepy.write_dataset(_table(100), str(tmp_path / "d"))
    ref = lance.dataset(str(tmp_path / "d"))
    for name in ("read_iops", "read_bytes", "write_iops", "written_bytes"):
        assert hasattr(ref.io_stats_snapshot(), name) and hasattr(ds.io_stats_snapshot(), name)
    assert isinstance(ds.io_stats_snapshot(), IOStats)
    assert repr(ds.io_stats_snapshot()).startswith("IOStats(read_iops=")


def test_a_write_counts_every_byte_it_put_on_the_returned_dataset(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancepy.write_dataset(_table(5000), uri, max_rows_per_file=2000)
    s = ds.io_stats_incremental()
    # three data files, the transaction, the manifest (and nothing was there before)
    assert s.written_bytes == _files_bytes(uri)
    assert s.write_iops == sum(len(fs) for _, _, fs in os.walk(uri))
    assert ds.io_stats_snapshot() == IOStats({k: 0 for k in lancepy.io_counts()})
    before = _stamps(uri)
    ds.delete("id < 10")
    s = ds.io_stats_incremental()
    after = _stamps(uri)
    changed = [p for p in after if before.get(p) != after[p]]  # deletion file, transaction, manifest, hint
    assert s.write_iops == len(changed)
    assert s.written_bytes == sum(after[p][0] for p in changed)
    assert s.read_iops >= 1  # the filter read the id column


def test_counts_equal_the_process_counts_and_stay_with_their_object(tmp_path):
    uri = str(tmp_path / "d")
    lancepy.write_dataset(_table(20000), uri, max_rows_per_file=3000)
    a = lancepy.dataset(uri)
    b = lancepy.dataset(uri)
    a.io_stats_incremental(), b.io_stats_incremental()
    for op in (lambda d: d.to_table(), lambda d: d.count_rows("x > 0.5"), lambda d: d.take([1, 9000, 19999]),
               lambda d: d.to_table(columns=["x"], filter="id % 7 = 0"), lambda d: d.get_fragments()[2].to_table(),
               lambda d: d.scanner(columns=["id"], limit=10).to_table()):
        p0 = lancepy.io_counts()
        op(a)
        want = _delta(p0, lancepy.io_counts())
        got = a.io_stats_incremental()
        assert (got.read_iops, got.read_bytes, got.mapped_bytes) == (want["requests"], want["bytes"], want["mapped_bytes"])
        assert b.io_stats_snapshot().read_iops == 0, "another object's I/O was counted"


def test_checkouts_share_their_parents_counts_as_pylances(tmp_path):
    uri = str(tmp_path / "d")
    lancepy.write_dataset(_table(1000), uri)
    lancepy.write_dataset(_table(1000, seed=1), uri, mode="append")
    for lib in (lancepy, lance):
        ds = lib.dataset(uri)
        ds.io_stats_incremental()
        old = ds.checkout_version(1)
        old.to_table()
        assert ds.io_stats_snapshot().read_bytes == old.io_stats_snapshot().read_bytes > 0, lib.__name__


def test_streams_count_for_their_dataset_whoever_consumes_them(tmp_path):
    uri = str(tmp_path / "d")
    lancepy.write_dataset(_table(30000), uri, max_rows_per_file=4000)
    a, b = lancepy.dataset(uri), lancepy.dataset(uri)
    a.io_stats_incremental(), b.io_stats_incremental()
    reader = a.scanner(batch_size=1000).to_reader()
    got = []

    def consume():
        for batch in reader:
            got.append(batch.num_rows)
            b.take([len(got)])  # b's own I/O, interleaved on the same thread

    p0 = lancepy.io_counts()
    t = threading.Thread(target=consume)
    t.start()
    t.join()
    total = _delta(p0, lancepy.io_counts())
    assert sum(got) == 30000
    sa, sb = a.io_stats_snapshot(), b.io_stats_snapshot()
    assert sa.read_bytes > 30000 * 8  # x (random floats, incompressible) of every row
    assert sb.read_iops + sb.mapped_bytes > 0
    # every byte the process read is on one of the two, none on both
    assert sa.read_bytes + sb.read_bytes == total["bytes"] and sa.read_iops + sb.read_iops == total["requests"]
    assert sa.mapped_bytes + sb.mapped_bytes == total["mapped_bytes"]
    # a Python generator of the dataset counts on each step too
    a.io_stats_incremental()
    p0 = lancepy.io_counts()
    n = sum(batch.num_rows for batch in a.to_batches(batch_size=5000))
    assert n == 30000 and a.io_stats_snapshot().read_bytes == _delta(p0, lancepy.io_counts())["bytes"] > 30000 * 8  # x alone (random floats) is 240 KB


def test_one_column_of_a_vector_table_reads_a_few_percent_of_a_full_scan(tmp_path):
    """Pushdown shown with the dataset's own counters (not timing): projecting the small
    column reads under 5% of the bytes of a full scan; a filter reads its column and the
    matching rows' values."""
    uri = str(tmp_path / "d")
    lancepy.write_dataset(_table(20000, dim=128), uri, max_rows_per_file=5000)
    ds = lancepy.dataset(uri)
    ds.io_stats_incremental()
    ds.to_table()
    full = ds.io_stats_incremental().read_bytes
    ds.to_table(columns=["id"])
    one = ds.io_stats_incremental().read_bytes
    assert 0 < one <= 0.05 * full, (one, full)
    import duckdb

    con = duckdb.connect()
    con.register("t", ds)
    assert con.execute("SELECT sum(id) FROM t").fetchone()[0] == sum(range(20000))
    via_duckdb = ds.io_stats_incremental().read_bytes
    assert 0 < via_duckdb <= 0.05 * full, (via_duckdb, full)


def test_parallel_scans_count_their_pool_threads(tmp_path):
    uri = str(tmp_path / "d")
    lancepy.write_dataset(_table(40000), uri, max_rows_per_file=1000)  # 40 fragments, read in parallel
    ds = lancepy.dataset(uri)
    ds.io_stats_incremental()
    p0 = lancepy.io_counts()
    assert ds.to_table().num_rows == 40000
    want = _delta(p0, lancepy.io_counts())
    got = ds.io_stats_incremental()
    assert got.read_iops == want["requests"] >= 40 and got.read_bytes == want["bytes"]


@pytest.mark.parametrize("threads", [2, 4])
def test_threads_sharing_or_not_a_dataset_keep_their_counts_apart(tmp_path, threads):
    uri = str(tmp_path / "d")
    lancepy.write_dataset(_table(10000), uri, max_rows_per_file=2500)
    objs = [lancepy.dataset(uri) for _ in range(threads)]
    for o in objs:
        o.io_stats_incremental()
    def work(o):
        for _ in range(3):
            o.to_table()

    p0 = lancepy.io_counts()
    ts = [threading.Thread(target=work, args=(o,)) for o in objs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    total = _delta(p0, lancepy.io_counts())
    stats = [o.io_stats_snapshot() for o in objs]
    assert all(s.read_iops > 0 for s in stats)
    assert sum(s.read_iops for s in stats) == total["requests"] and sum(s.read_bytes for s in stats) == total["bytes"]


@pytest.mark.parametrize("transform", [None, lambda batch: batch])
def test_the_torch_loader_reads_count_for_its_dataset(tmp_path, transform):
    """lancepy.torch.Loader's reads (native take pipeline for fixed-width columns; reading
    threads otherwise) count for the dataset object the Loader opened."""
    pytest.importorskip("torch")
    from lancepy.torch import Loader

    uri = str(tmp_path / "d")
    lancepy.write_dataset(_table(4000, dim=16), uri, max_rows_per_file=1000)
    p0 = lancepy.io_counts()
    loader = Loader(uri, columns=["vec", "id"], batch_size=256, shuffle=True, seed=1, threads=2, transform=transform)
    rows = sum(int(b["id"].shape[0]) for b in loader)
    total = _delta(p0, lancepy.io_counts())
    assert rows == 4000
    s = loader.dataset._dataset().io_stats_snapshot()
    assert s.mapped_bytes + s.read_bytes > 4000 * 16 * 4
    assert (s.read_iops, s.read_bytes, s.mapped_bytes) == (total["requests"], total["bytes"], total["mapped_bytes"])
