"""The native TakeRing (lancepy.torch.Loader's reader with a CUDA device): a run of batches read
ahead on native threads into a fixed ring of caller-allocated slots. Checked here on CPU arrays
against the dataset's own take; the Loader's use of it is checked on a GPU (test_torch_loader.py)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import ColumnNotFoundError, IndexOutOfRangeError, InvalidArgumentError

DIM = 16
ROWS = 900


@pytest.fixture(scope="module")
def uri(tmp_path_factory) -> str:
    """900 rows (16-d float32 vectors stored row by row, int64 ids, a string) in 3 fragments,
    every 5th id deleted."""
    rng = np.random.default_rng(5)
    ids = np.arange(ROWS, dtype=np.int64)
    t = pa.table({
        "id": ids,
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(ROWS * DIM).astype(np.float32)), DIM),
        "text": pa.array([f"row {i}" for i in ids]),
    })
    path = str(tmp_path_factory.mktemp("ring") / "data.lance")
    lancepy.write_dataset(t, path, max_rows_per_file=300)
    lancepy.dataset(path).delete("id % 5 = 2")
    return path


def _slots(n: int, batch: int):
    return [[np.full((batch, DIM), np.nan, np.float32), np.full(batch, -1, np.int64)] for _ in range(n)]


def _drain(ring, slots, release_every=1):
    """Every batch as (emb, id) copies, releasing slots every `release_every` batches."""
    out = []
    while True:
        got = ring.next()
        if got is None:
            return out
        slot, n, read = got
        assert read
        out.append((slots[slot][0][:n].copy(), slots[slot][1][:n].copy()))
        if ring.position % release_every == 0 or ring.position == ring.batches:
            ring.release(ring.position)


@pytest.mark.parametrize("n_slots,threads,batch,release_every", [
    (1, 1, 64, 1), (3, 4, 50, 1), (8, 3, 37, 3), (4, 2, 1000, 1), (2, 5, 7, 2),
])
def test_ring_batches_equal_take(uri, n_slots, threads, batch, release_every):
    ds = lancepy.dataset(uri)
    n = ds.count_rows()
    idx = np.random.default_rng(n_slots * 31 + batch).permutation(n).astype(np.int64)
    slots = _slots(n_slots, batch)
    ring = ds._view.snapshot.take_ring(["emb", "id"], slots, pa.array(idx), batch, threads)
    assert ring.batches == -(-n // batch) and ring.position == 0
    got = _drain(ring, slots, release_every)
    ring.close()
    want = ds.take(idx, columns=["emb", "id"])
    emb = np.concatenate([g[0] for g in got])
    ids = np.concatenate([g[1] for g in got])
    assert np.array_equal(ids, want.column("id").to_numpy())
    assert np.array_equal(emb, want.column("emb").combine_chunks().values.to_numpy().reshape(-1, DIM))
    assert [len(g[1]) for g in got][:-1] == [batch] * (len(got) - 1)


def test_ring_by_row_address(uri):
    ds = lancepy.dataset(uri)
    addresses = ds.to_table(columns=[], with_row_address=True, filter="id % 3 = 0").column("_rowaddr").to_numpy()
    order = np.random.default_rng(1).permutation(addresses).astype(np.int64)
    slots = _slots(3, 40)
    ring = ds._view.snapshot.take_ring(["emb", "id"], slots, pa.array(order), 40, 2, addresses=True)
    ids = np.concatenate([g[1] for g in _drain(ring, slots)])
    want = ds._take_rows(order, columns=["id"]).column("id").to_numpy()
    assert (ids % 3 == 0).all() and np.array_equal(ids, want)


def test_ring_refuses_what_would_hang_or_overwrite(uri):
    snap = lancepy.dataset(uri)._view.snapshot
    idx = pa.array(np.arange(200, dtype=np.int64))
    slots = _slots(2, 50)
    ring = snap.take_ring(["emb", "id"], slots, idx, 50, 2)
    assert ring.next()[0] == 0 and ring.next()[0] == 1
    # Batch 2 goes into slot 0, still held: an error, not a wait forever.
    with pytest.raises(InvalidArgumentError, match="release"):
        ring.next()
    with pytest.raises(InvalidArgumentError, match="not handed out"):
        ring.release(3)
    # The slots are claimed: no other native writer may write them while the ring lives.
    with pytest.raises(InvalidArgumentError, match="shares memory"):
        snap.take_ring(["emb", "id"], slots, idx, 50, 1)
    ring.release(2)
    assert ring.next() is not None and ring.ready(2)
    ring.close()
    ring.close()  # idempotent
    with pytest.raises(InvalidArgumentError, match="closed|release"):
        ring.next()
    # Closed, the claim is gone: the same slots serve a new ring.
    again = snap.take_ring(["emb", "id"], slots, idx, 50, 1)
    assert len(_drain(again, slots)) == 4


def test_ring_bad_arguments(uri):
    snap = lancepy.dataset(uri)._view.snapshot
    idx = pa.array(np.arange(10, dtype=np.int64))
    with pytest.raises(InvalidArgumentError, match="bytes"):
        snap.take_ring(["emb", "id"], [[np.empty((5, DIM), np.float32), np.empty(4, np.int64)]], idx, 5, 1)
    with pytest.raises(InvalidArgumentError, match="arrays for 2 columns"):
        snap.take_ring(["emb", "id"], [[np.empty((5, DIM), np.float32)]], idx, 5, 1)
    with pytest.raises(InvalidArgumentError, match="at least one slot"):
        snap.take_ring(["emb", "id"], [], idx, 5, 1)
    with pytest.raises(InvalidArgumentError, match="threads"):
        snap.take_ring(["emb", "id"], _slots(1, 5), idx, 5, 0)
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        snap.take_ring(["emb", "id"], _slots(1, 5), idx, 0, 1)
    with pytest.raises(InvalidArgumentError, match="fixed width"):
        snap.take_ring(["text"], [[np.empty(5, np.int64)]], idx, 5, 1)
    with pytest.raises(ColumnNotFoundError):
        snap.take_ring(["nope"], [[np.empty(5, np.int64)]], idx, 5, 1)
    shared = np.empty((10, DIM), np.float32)
    with pytest.raises(InvalidArgumentError, match="shares memory"):
        snap.take_ring(["emb", "id"], [[shared[:5], np.empty(5, np.int64)], [shared[:5], np.empty(5, np.int64)]], idx, 5, 1)
    ro = np.empty(5, np.int64)
    ro.flags.writeable = False
    with pytest.raises(InvalidArgumentError, match="read-only"):
        snap.take_ring(["id"], [[ro]], idx, 5, 1)


def test_ring_read_error_is_raised_at_its_batch(uri):
    snap = lancepy.dataset(uri)._view.snapshot
    idx = np.arange(100, dtype=np.int64)
    idx[75] = 10**9  # out of range: batch 1 of 50-row batches fails
    slots = _slots(2, 50)
    ring = snap.take_ring(["emb", "id"], slots, pa.array(idx), 50, 2)
    slot, n, read = ring.next()
    assert (slot, n, read) == (0, 50, True)
    assert np.array_equal(slots[0][1], lancepy.dataset(uri).take(idx[:50], columns=["id"]).column("id").to_numpy())
    with pytest.raises(IndexOutOfRangeError):
        ring.next()
    ring.close()


def test_ring_nulls_are_reported_not_read(tmp_path):
    vec = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(40 * 4, dtype=np.float32)), 4)
    score = pa.array([None if i == 25 else float(i) for i in range(40)], pa.float64())
    path = str(tmp_path / "n.lance")
    lancepy.write_dataset(pa.table({"v": vec, "score": score}), path)
    snap = lancepy.dataset(path)._view.snapshot
    slots = [[np.empty((20, 4), np.float32), np.empty(20, np.float64)] for _ in range(2)]
    ring = snap.take_ring(["v", "score"], slots, pa.array(np.arange(40, dtype=np.int64)), 20, 1)
    assert ring.next() == (0, 20, True)
    assert slots[0][1].tolist() == [float(i) for i in range(20)]
    assert ring.next() == (1, 20, False)  # a null in it: read it another way
    assert ring.next() is None
    ring.close()


def _threads() -> int:
    import os
    return len(os.listdir("/proc/self/task"))


def test_ring_dropped_mid_run_stops_its_readers(uri):
    """Readers waiting for a slot are woken and joined when the ring goes (closed or dropped)."""
    snap = lancepy.dataset(uri)._view.snapshot
    before = _threads()
    for i in range(20):
        slots = _slots(2, 10)
        ring = snap.take_ring(["emb", "id"], slots, pa.array(np.arange(500, dtype=np.int64)), 10, 3)
        ring.next()
        if i % 2:
            ring.close()
        del ring
    assert _threads() <= before
