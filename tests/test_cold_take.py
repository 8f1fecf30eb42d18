"""A cold take reads from storage about the bytes of the rows it returns, not whole files.

The dataset's files are written, flushed and dropped from the page cache
(``posix_fadvise(POSIX_FADV_DONTNEED)``: no root needed); a fresh process then opens the
dataset and takes random rows; afterwards the bytes of those files in the page cache
(``mincore`` through ctypes) are everything that was read from storage for them, read-ahead
included. Before lancepy advised its mappings for random access, each row's page fault read
the kernel's whole read-ahead window around it (128 KiB to 8 MiB per row).

Not timed: bytes are a property of the plan, time is the benchmark's (benches/bench_cold.py).
"""

from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

import lancepy

ROWS, DIM, FILES = 24_000, 512, 3  # 2 KiB vectors, 16 MB per file
PAGE = os.sysconf("SC_PAGE_SIZE")


def _resident_bytes(path: str) -> int:
    """Bytes of `path` in the page cache: mincore(2) over a private mapping of it (which
    faults nothing in)."""
    import ctypes

    size = os.path.getsize(path)
    if size == 0:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    pages = (size + PAGE - 1) // PAGE
    vec = (ctypes.c_ubyte * pages)()
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)
        try:
            anchor = ctypes.c_char.from_buffer(m)
            rc = libc.mincore(ctypes.addressof(anchor), size, vec)
            del anchor
        finally:
            m.close()
    assert rc == 0, f"mincore failed: errno {ctypes.get_errno()}"
    return sum(v & 1 for v in vec) * PAGE


def _evict(paths) -> None:
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


@pytest.fixture(scope="module")
def vectors(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("cold") / "vectors.lance")
    rng = np.random.default_rng(7)

    def batches():
        for start in range(0, ROWS, 4000):
            vecs = rng.standard_normal((4000, DIM), dtype=np.float32)
            yield pa.record_batch(
                [pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), DIM), pa.array(np.arange(start, start + 4000))],
                names=["vec", "label"],
            )

    schema = pa.schema([pa.field("vec", pa.list_(pa.float32(), DIM)), pa.field("label", pa.int64())])
    lancepy.write_dataset(batches(), uri, schema=schema, max_rows_per_file=ROWS // FILES)
    files = [os.path.join(uri, "data", f) for f in os.listdir(os.path.join(uri, "data"))]
    assert len(files) == FILES
    return uri, files


_TAKE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import lancepy
    uri, n, cols = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
    idx = np.sort(np.random.default_rng(n).choice({rows}, n, replace=False)).tolist()
    c0 = lancepy.io_counts()
    ds = lancepy.dataset(uri)
    t = ds.take(idx, columns=cols)
    c1 = lancepy.io_counts()
    mine = ds.io_stats_incremental()
    t = lancepy.dataset(uri).take(idx, columns=cols)  # warm now
    c2 = lancepy.io_counts()
    cold = {{k: c1[k] - c0[k] for k in c0}}
    warm = {{k: c2[k] - c1[k] for k in c0}}
    stats = {{k: getattr(mine, k) for k in mine.__slots__}}
    print(json.dumps({{"rows": t.num_rows, "cold": cold, "warm": warm, "dataset": stats,
                      "after": ds.io_stats_snapshot().read_iops}}))
    """
).format(rows=ROWS)


@pytest.mark.parametrize("n,cols", [(50, "vec"), (400, "vec"), (400, "vec,label")])
def test_cold_take_reads_about_the_rows_it_returns(vectors, n, cols):
    uri, files = vectors
    _evict(files)
    before = sum(_resident_bytes(f) for f in files)
    assert before < FILES * 64 * PAGE, "the files must start out of the page cache"
    out = subprocess.run([sys.executable, "-c", _TAKE, uri, str(n), cols], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["rows"] == n
    read = sum(_resident_bytes(f) for f in files) - before
    row_bytes = DIM * 4
    # Each row: its bytes rounded out to whole pages (at most 2 pages for 2 KiB); each file:
    # the footer and metadata read on open (64 KiB) and the label column's chunks touched.
    bound = n * (row_bytes + 2 * PAGE) + FILES * (128 << 10) + (n * 2 * PAGE if "label" in cols else 0)
    assert read <= bound, f"a cold take of {n} rows read {read:,} bytes from storage (bound {bound:,})"
    assert read >= n * row_bytes // 2, f"{read:,} bytes cannot hold {n} rows: were the files out of the cache?"
    # lancepy's own counters say the same: the vectors were copied out of the mappings, their
    # pages asked for ahead (cold) within the same bound, and not asked for again (warm).
    cold, warm = result["cold"], result["warm"]
    assert cold["mapped_bytes"] == warm["mapped_bytes"] == n * row_bytes
    assert 0 < cold["prefetch_requests"] <= n and n * row_bytes <= cold["prefetch_bytes"] <= n * (row_bytes + 2 * PAGE)
    assert warm["prefetch_requests"] == 0
    assert cold["bytes"] <= bound
    # The dataset object's own counters (pylance's io_stats_*) hold exactly that I/O, and the
    # second dataset object's take is not counted on the first.
    mine = result["dataset"]
    assert (mine["read_iops"], mine["read_bytes"], mine["mapped_bytes"]) == (cold["requests"], cold["bytes"], cold["mapped_bytes"])
    assert (mine["prefetch_iops"], mine["prefetch_bytes"]) == (cold["prefetch_requests"], cold["prefetch_bytes"])
    assert result["after"] == 0


def test_cold_take_returns_the_rows(vectors):
    uri, files = vectors
    _evict(files)
    idx = [0, 1, 7999, 8000, 12345, ROWS - 1, 5]
    got = lancepy.dataset(uri).take(idx, columns=["vec", "label"])
    assert got.column("label").to_pylist() == idx
    _evict(files)
    full = lancepy.dataset(uri).to_table(columns=["vec"])
    assert got.column("vec").to_pylist() == full.column("vec").take(pa.array(idx)).to_pylist()


def test_analyze_plan_reports_the_reads(vectors):
    uri, _ = vectors
    text = lancepy.dataset(uri).scanner(columns=["label"], filter="label < 10").analyze_plan()
    head = text.splitlines()[0]
    fields = dict(kv.split("=") for kv in head[len("Analyze: "):].split(", "))
    assert fields["output_rows"] == "10"
    assert int(fields["io_requests"]) >= 1 and int(fields["io_bytes"]) >= 10 * 8


def test_takes_in_any_order_equal_the_table(tmp_path):
    """Rows gathered straight out of the mapped files, across fragments and pages, in any
    order (runs of consecutive rows, repeats, fragment boundaries), equal the scanned table."""
    rng = np.random.default_rng(11)
    n, dim = 3000, 6
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    table = pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), dim), "x": pa.array(np.arange(n) * 3)})
    uri = str(tmp_path / "t.lance")
    # Small pages and files: many page and fragment boundaries.
    lancepy.write_dataset(table, uri, max_rows_per_file=700, max_page_bytes=4096)
    ds = lancepy.dataset(uri)
    full = ds.to_table()
    for case in range(300):
        kind = case % 4
        if kind == 0:
            idx = rng.integers(0, n, rng.integers(1, 200)).tolist()  # random, with repeats
        elif kind == 1:
            s = int(rng.integers(0, n - 100))
            idx = list(range(s, s + int(rng.integers(1, 100))))  # one run, maybe across files
        elif kind == 2:
            idx = [int(i) for s in rng.integers(0, n - 5, 20) for i in range(s, s + 5)]  # short runs
        else:
            idx = rng.permutation(n)[: rng.integers(1, n)].tolist()
        got = ds.take(idx, columns=["vec", "x"])
        assert got.equals(full.take(pa.array(idx, pa.int64()))), f"case {case}: {idx[:10]}..."


def test_small_columns_kept_whole_give_the_table_values(tmp_path):
    """Takes of batches pick small columns (ints, floats, timestamps with nulls) out of
    columns decoded whole per fragment: equal to the scanned table after deletions, across
    fragments, with a column some fragments lack, and on a version the object moved past."""
    rng = np.random.default_rng(5)
    n = 4000
    mask = rng.random(n) < 0.2
    table = pa.table({
        "id": pa.array(np.arange(n)),
        "f": pa.array(rng.standard_normal(n).astype(np.float32), mask=mask),
        "t": pa.array((np.arange(n) * 1_000_000).astype("datetime64[us]")),
        "u8": pa.array((np.arange(n) % 251).astype(np.uint8)),
    })
    uri = str(tmp_path / "small.lance")
    lancepy.write_dataset(table, uri, max_rows_per_file=900)
    ds = lancepy.dataset(uri)
    ds.delete("id % 7 = 3")
    ds.add_columns({"sq": "id * id"})
    lancepy.write_dataset(table.slice(0, 500).append_column("sq", pa.array(np.arange(500) * 3)), uri, mode="append")
    old = lancepy.dataset(uri, version=ds.version)
    ds = lancepy.dataset(uri)
    for d in (ds, old):
        full = d.to_table()
        for case in range(60):
            idx = rng.integers(0, full.num_rows, int(rng.integers(64, 400))).tolist()
            got = d.take(idx)
            assert got.equals(full.take(pa.array(idx, pa.int64()))), f"case {case}"
    # After a delete on the same object, takes see the new version's rows.
    ds.delete("id < 100")
    full = ds.to_table()
    idx = list(range(0, full.num_rows, 5))
    assert ds.take(idx).equals(full.take(pa.array(idx)))


def test_one_row_of_a_many_page_binary_column_reads_one_repetition_index(tmp_path):
    """Variable-width values stored row by row (images, documents) are found through each
    page's repetition index; a take fetches the indexes of the pages it touches only. Before,
    the first take of a file fetched every page's index (a one-row take of a 20-page column
    read 20 of them)."""
    from lancepy.file import LanceFileReader

    rng = np.random.default_rng(3)
    n, size = 20_000, 2_000  # 40 MB: several 8 MiB pages of ~4,000 rows, a 32 KB index each
    data = rng.integers(0, 256, n * size, dtype=np.uint8).tobytes()
    offsets = pa.py_buffer(np.arange(0, (n + 1) * size, size, dtype=np.int32).tobytes())
    values = pa.Array.from_buffers(pa.binary(), n, [None, offsets, pa.py_buffer(data)])
    uri = str(tmp_path / "blobs.lance")
    lancepy.write_dataset(pa.table({"b": values}), uri)
    (path,) = [os.path.join(uri, "data", f) for f in os.listdir(os.path.join(uri, "data"))]
    pages = len(LanceFileReader(path).metadata().columns[0].pages)
    assert pages >= 4, "the column must span several pages"
    index_bytes = (n // pages + 2) * 8

    def read_bytes(take):
        c0 = lancepy.io_counts()
        got = take()
        c1 = lancepy.io_counts()
        return got, c1["bytes"] - c0["bytes"]

    for rows in ([n - 7], [5, n - 7]):
        reader = LanceFileReader(path)
        got, read = read_bytes(lambda: reader.take_rows(rows).to_table())
        assert got.column("b").to_pylist() == [data[r * size : (r + 1) * size] for r in rows]
        # The footer and metadata (64 KiB at most) and one index per page touched.
        assert read <= (64 << 10) + len(rows) * index_bytes, (rows, read)
        ds = lancepy.dataset(uri)
        got, read = read_bytes(lambda: ds.take(rows))
        assert got.column("b").to_pylist() == [data[r * size : (r + 1) * size] for r in rows]
        assert read <= (64 << 10) + len(rows) * index_bytes, (rows, read)
    # Every page touched: every index read once, and the values right.
    reader = LanceFileReader(path)
    rows = list(range(0, n, n // pages // 2))
    got, read = read_bytes(lambda: reader.take_rows(rows).to_table())
    assert got.column("b").to_pylist() == [data[r * size : (r + 1) * size] for r in rows]
    assert read >= pages * (n // pages - 2) * 4
