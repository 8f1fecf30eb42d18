"""Filtered counts and scans over many small fragments (issue 23): the answers equal
pylance's on the same dataset (written by either library, with deletions, with filters that
page statistics could decide and ones they cannot), the reader cache keeps its limits, a scan
over more files than the cache holds evicts none of the readers already kept, and no file
descriptor outlives a count."""

from __future__ import annotations

import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancepy


def _table(n: int, seed: int = 0, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    x = rng.random(n)
    x[rng.random(n) < 0.05] = np.nan
    return pa.table(
        {
            "id": pa.array(np.arange(start, start + n, dtype=np.int64)),
            "x": pa.array(x, mask=rng.random(n) < 0.05),
            "s": pa.array([f"k{i % 7}" for i in range(n)]),
        }
    )


def _rows(t: pa.Table) -> list:
    """The rows, NaN made comparable (``Table.equals`` holds NaN unequal to itself)."""
    return [tuple("NaN" if isinstance(v, float) and v != v else v for v in r.values()) for r in t.to_pylist()]


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """300 fragments of 10 rows (two appends), written by each library, then rows deleted
    (three fragments wholly)."""
    out = {}
    for writer in ("lancepy", "pylance"):
        uri = str(tmp_path_factory.mktemp(writer) / "many.lance")
        lib = lancepy if writer == "lancepy" else lance
        lib.write_dataset(_table(2000, seed=1), uri, max_rows_per_file=10)
        lib.write_dataset(_table(1000, seed=2, start=2000), uri, mode="append", max_rows_per_file=10)
        lib.dataset(uri).delete("id % 13 = 0 OR (id >= 500 AND id < 530)")
        out[writer] = uri
    yield out
    for uri in out.values():  # (the process-wide reader cache forgets their files)
        lancepy.LanceDataset.drop(uri)


FILTERS = [
    "x > 0.5",
    "x <= 0.25 OR x IS NULL",
    "id < 700",  # pages of sorted ids decide it
    "id >= 0",  # every row
    "id < 0",  # no row
    "id BETWEEN 1000 AND 1200 AND s = 'k3'",
    "s IN ('k1', 'k5') AND NOT (x > 0.9)",
    "x IS NOT NULL AND x < 0.1",
]


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
@pytest.mark.parametrize("flt", FILTERS)
def test_filtered_counts_and_scans_equal_pylances(many, writer, flt):
    uri = many[writer]
    ours, ref = lancepy.dataset(uri), lance.dataset(uri)
    assert len(ours.get_fragments()) == len(ref.get_fragments()) == 297  # 500..529 emptied three
    assert ours.count_rows(flt) == ref.count_rows(flt)
    got = ours.to_table(filter=flt).sort_by("id")
    want = ref.to_table(filter=flt).sort_by("id")
    assert got.schema == want.schema and _rows(got) == _rows(want)
    frags = [f.fragment_id for f in ref.get_fragments()][::7]
    # (pylance 14's count_rows drops its keywords; its scanner honours `fragments`.)
    want_n = ref.scanner(filter=flt, fragments=[ref.get_fragment(i) for i in frags]).count_rows()
    assert ours.count_rows(flt, fragments=[ours.get_fragment(i) for i in frags]) == want_n


def test_seeded_generated_filters_count_as_pylance(many):
    uri = many["lancepy"]
    ours, ref = lancepy.dataset(uri), lance.dataset(uri)
    rng = np.random.default_rng(23)
    for _ in range(25):
        lo = int(rng.integers(0, 3000))
        hi = lo + int(rng.integers(0, 1500))
        t = round(float(rng.random()), 3)
        op = rng.choice([">", "<", ">=", "<="])
        flt = f"(id >= {lo} AND id < {hi}) {rng.choice(['AND', 'OR'])} x {op} {t}"
        assert ours.count_rows(flt) == ref.count_rows(flt), flt


def test_coalesced_stream_returns_the_same_rows_in_order(many):
    ds = lancepy.dataset(many["pylance"])
    plain = [pa.table(b) for b in iter(ds._view.snapshot.scan_stream(["id", "x"], batch_rows=64).next_batch, None)]
    merged = [
        pa.table(b)
        for b in iter(ds._view.snapshot.scan_stream(["id", "x"], batch_rows=64, coalesce=True).next_batch, None)
    ]
    assert _rows(pa.concat_tables(plain)) == _rows(pa.concat_tables(merged))
    assert len(merged) < len(plain) and all(t.num_rows <= 64 for t in merged)
    whole = pa.table(ds._view.snapshot.scan(["id", "x"], batch_rows=64, coalesce=True, with_row_address=True))
    assert whole.column("id").num_chunks == len(merged)
    assert _rows(whole.select(["id", "x"])) == _rows(pa.concat_tables(plain))


def _big_files(uri: str, files: int) -> None:
    """`files` data files over 16 KiB each (held open, not in memory, by the reader cache)."""
    rng = np.random.default_rng(5)
    n = 10000 * files
    lancepy.write_dataset(pa.table({"v": rng.random(n)}), uri, max_rows_per_file=10000)


def _requests(fn) -> int:
    """Read requests the process makes while `fn` runs."""
    before = lancepy.io_counts()["requests"]
    fn()
    return lancepy.io_counts()["requests"] - before


def test_a_scan_over_more_files_than_the_cache_holds_evicts_none_of_its_readers(tmp_path):
    before = lancepy.reader_cache_info()
    try:
        hot, cold = str(tmp_path / "hot.lance"), str(tmp_path / "cold.lance")
        _big_files(hot, 3)
        _big_files(cold, 12)
        lancepy.set_reader_cache_limits(max_bytes=1 << 40, max_files=0)  # empties the cache
        lancepy.set_reader_cache_limits(max_files=5)
        h, c = lancepy.dataset(hot), lancepy.dataset(cold)
        want_h, want_c = lance.dataset(hot).count_rows("v > 0.5"), lance.dataset(cold).count_rows("v < 0.25")
        assert h.count_rows("v > 0.5") == want_h
        assert lancepy.reader_cache_info()["open_files"] == 3
        warm = _requests(lambda: h.count_rows("v > 0.5"))  # the pages only: no file opened
        fds = _open_fds()
        for _ in range(2):
            assert c.count_rows("v < 0.25") == want_c
            info = lancepy.reader_cache_info()
            assert info["open_files"] == 5, info  # room for two more, none evicted for the rest
            assert _open_fds() <= fds + 2
        # The hot readers were kept: counting again opens none of their files.
        assert _requests(lambda: h.count_rows("v > 0.5")) == warm
        # Limits set lower evict, least recently used first (the cold ones).
        lancepy.set_reader_cache_limits(max_files=3)
        assert lancepy.reader_cache_info()["open_files"] == 3
        assert _requests(lambda: h.count_rows("v > 0.5")) == warm
        # Room is counted in bytes too: past the budget, a one-pass scan keeps nothing more.
        budget = lancepy.reader_cache_info()["bytes"]
        lancepy.set_reader_cache_limits(max_bytes=budget, max_files=5)
        assert c.count_rows("v < 0.25") == want_c
        assert lancepy.reader_cache_info()["bytes"] <= budget
        assert _requests(lambda: h.count_rows("v > 0.5")) == warm
    finally:
        lancepy.set_reader_cache_limits(max_bytes=before["max_bytes"], max_files=before["max_files"])
        for uri in (hot, cold):
            lancepy.LanceDataset.drop(uri)


def test_ten_thousand_fragments_count_as_pylance_and_leak_no_descriptor(tmp_path):
    uri = str(tmp_path / "tenk.lance")
    n = 10000
    rng = np.random.default_rng(7)
    lancepy.write_dataset(pa.table({"id": np.arange(n, dtype=np.int64), "x": rng.random(n)}), uri, max_rows_per_file=1)
    lancepy.dataset(uri).delete("id % 10 = 3")
    ds = lancepy.dataset(uri)
    assert len(ds.get_fragments()) == n - n // 10
    fds = _open_fds()
    for _ in range(2):
        got = ds.count_rows("x > 0.5")
        assert _open_fds() <= fds
    assert got == lance.dataset(uri).count_rows("x > 0.5")
    assert ds.count_rows("id < 5000") == lance.dataset(uri).count_rows("id < 5000") == 4500
    info = lancepy.reader_cache_info()
    assert info["open_files"] <= info["max_files"] and info["bytes"] <= info["max_bytes"]
    lancepy.LanceDataset.drop(uri)
    assert lancepy.reader_cache_info()["files"] < info["files"]
