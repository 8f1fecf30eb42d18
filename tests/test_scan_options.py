"""Scan options shared with pylance: include_deleted_rows, strict_batch_size, batch_size_bytes,
index_segments and batch_readahead."""

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError


@pytest.fixture(params=[False, True], ids=["addresses", "stable-ids"])
def ds_path(tmp_path, request):
    path = str(tmp_path / "ds")
    table = pa.table({"a": list(range(100)), "s": [f"v{i}" for i in range(100)]})
    lance.write_dataset(table, path, max_rows_per_file=40, enable_stable_row_ids=request.param)
    lance.dataset(path).delete("a % 7 = 3")
    return path


def test_include_deleted_rows_as_pylance(ds_path):
    ours, theirs = lancepy.dataset(ds_path), lance.dataset(ds_path)
    for kw in ({}, {"columns": ["a"]}, {"columns": ["s"], "with_row_address": True}, {"limit": 30, "offset": 5}):
        a = ours.to_table(include_deleted_rows=True, with_row_id=True, **kw)
        b = theirs.to_table(include_deleted_rows=True, with_row_id=True, **kw)
        assert a.to_pydict() == b.to_pydict(), kw
    assert ours.to_table(include_deleted_rows=True, with_row_id=True).num_rows == 100
    frag = ours.get_fragments()[0]
    assert frag.to_table(include_deleted_rows=True, with_row_id=True).to_pydict() == \
        theirs.get_fragments()[0].to_table(include_deleted_rows=True, with_row_id=True).to_pydict()
    with pytest.raises(InvalidArgumentError, match="with_row_id"):
        ours.to_table(include_deleted_rows=True)


def test_strict_batch_size(ds_path):
    ours = lancepy.dataset(ds_path)
    sizes = [b.num_rows for b in ours.to_batches(batch_size=9, strict_batch_size=True)]
    assert all(n == 9 for n in sizes[:-1]) and 0 < sizes[-1] <= 9
    assert sum(sizes) == ours.count_rows()
    strict = pa.Table.from_batches(list(ours.to_batches(batch_size=9, strict_batch_size=True, filter="a > 10")))
    assert strict == ours.to_table(filter="a > 10")


def test_batch_size_bytes(ds_path):
    ours = lancepy.dataset(ds_path)
    one_row = ours.to_table(limit=1).nbytes
    batches = list(ours.to_batches(batch_size_bytes=one_row * 10))
    assert pa.Table.from_batches(batches) == ours.to_table()
    assert max(b.num_rows for b in batches) <= 12 and len(batches) >= ours.count_rows() // 12
    with pytest.raises(InvalidArgumentError):
        ours.scanner(batch_size_bytes=100, strict_batch_size=True)
    with pytest.raises(InvalidArgumentError):
        ours.to_table(batch_size_bytes=0)


def test_index_segments_restrict_a_vector_search_as_pylance(tmp_path):
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(0)

    def table(lo, n):
        v = rng.random((n, 16), dtype=np.float32)
        return pa.table({"id": np.arange(lo, lo + n), "v": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), 16)})

    path = str(tmp_path / "seg")
    lance.write_dataset(table(0, 2000), path).create_index("v", "IVF_FLAT", num_partitions=4)
    lance.write_dataset(table(2000, 2000), path, mode="append").optimize.optimize_indices(num_indices_to_merge=0)
    theirs, ours = lance.dataset(path), lancepy.dataset(path)
    segments = [s.uuid for s in theirs.describe_indices()[0].segments]
    assert len(segments) == 2
    q = rng.random(16, dtype=np.float32)
    for sel in ([segments[0]], [segments[1]], segments):
        a = ours.scanner(nearest={"column": "v", "q": q, "k": 10}, index_segments=sel, columns=["id"]).to_table()
        b = theirs.scanner(nearest={"column": "v", "q": q, "k": 10}, index_segments=sel, columns=["id"]).to_table()
        assert a.column("id").to_pylist() == b.column("id").to_pylist(), sel
    with pytest.raises(InvalidArgumentError):
        ours.scanner(nearest={"column": "v", "q": q, "k": 10}, index_segments=["not-a-uuid"]).to_table()
    with pytest.raises(InvalidArgumentError):
        ours.scanner(index_segments=segments)


@pytest.mark.parametrize("readahead", [None, 0, 1, 3, 16])
def test_batch_readahead_streams_the_same_rows(ds_path, readahead):
    """Batches read ahead (on the I/O pool) come out in scan order, whole, filtered or not."""
    ours = lancepy.dataset(ds_path)
    want = ours.to_table()
    got = pa.Table.from_batches(list(ours.to_batches(batch_size=7, batch_readahead=readahead)))
    assert got == want
    got = pa.Table.from_batches(list(ours.to_batches(batch_size=7, batch_readahead=readahead, filter="a > 50")))
    assert got == ours.to_table(filter="a > 50")
    frag = ours.get_fragments()[1]
    got = pa.Table.from_batches(list(frag.to_batches(batch_size=5, batch_readahead=readahead)))
    assert got == frag.to_table()


def test_a_stream_dropped_with_batches_read_ahead(ds_path):
    """Leaving a stream whose next batches are being read ahead frees it, no hang."""
    ours = lancepy.dataset(ds_path)
    for _ in range(20):
        it = ours.to_batches(batch_size=3, batch_readahead=8)
        assert next(it).num_rows == 3
        del it
    assert ours.count_rows() == ours.to_table().num_rows


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_batch_readahead_must_be_a_count(ds_path, bad):
    with pytest.raises(InvalidArgumentError, match="batch_readahead"):
        lancepy.dataset(ds_path).to_batches(batch_readahead=bad)



def test_default_batch_size_from_the_environment(tmp_path, monkeypatch):
    """LANCE_DEFAULT_BATCH_SIZE sets the rows per batch when a scan names none (as pylance)."""
    import lance

    uri = str(tmp_path / "b")
    lancepy.write_dataset(pa.table({"a": range(1000)}), uri)
    monkeypatch.setenv("LANCE_DEFAULT_BATCH_SIZE", "12")
    ours = [b.num_rows for b in lancepy.dataset(uri).to_batches()]
    theirs = [b.num_rows for b in lance.dataset(uri).scanner(scan_in_order=True).to_batches()]
    assert ours == theirs == [12] * 83 + [4]
    assert {b.num_rows for b in lancepy.dataset(uri).to_batches(batch_size=100)} == {100}
    monkeypatch.setenv("LANCE_DEFAULT_BATCH_SIZE", "zero")
    with pytest.raises(lancepy.exceptions.InvalidArgumentError, match="LANCE_DEFAULT_BATCH_SIZE"):
        lancepy.dataset(uri).to_table()
