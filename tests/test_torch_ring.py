"""Batches leaving DataLoader workers through lancepy's shared-memory ring (lancepy.torch._ring).

Real DataLoaders with worker processes (fork and spawn); every batch is compared exactly with
the same batch read in the training process. The ring's counters show which path each batch
took; the files in /dev/shm show that nothing is left behind.
"""

from __future__ import annotations

import gc
import glob
import os
import pickle

import numpy as np
import pyarrow as pa
import pytest

torch = pytest.importorskip("torch")

import lancepy  # noqa: E402
import lancepy.torch as lt  # noqa: E402
from lancepy.torch import _ring  # noqa: E402

pytestmark = pytest.mark.skipif(not _ring.available(), reason="needs /dev/shm")


def _ring_files():
    return set(glob.glob("/dev/shm/lancepy-ring-*"))


@pytest.fixture(autouse=True)
def _no_files_left():
    before = _ring_files()
    _ring.stats.update({k: 0 for k in _ring.stats})
    yield
    gc.collect()
    assert _ring_files() - before == set()


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    rng = np.random.default_rng(7)
    n, d = 3000, 32
    emb = rng.standard_normal((n, d), dtype=np.float32)
    t = pa.table(
        {
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)), d),
            "label": pa.array(np.arange(n, dtype=np.int64) * 3),
            "w": pa.array(rng.random(n)),
            "name": pa.array([f"row{i}" for i in range(n)]),
        }
    )
    path = str(tmp_path_factory.mktemp("ring") / "d.lance")
    lancepy.write_dataset(t, path, max_rows_per_file=1000)
    return path


def _loader(data, workers, *, seed=3, batch_size=100, ctx=None, **kw):
    sampler = lt.ShuffleSampler(data, seed=seed)
    return torch.utils.data.DataLoader(
        data,
        batch_size=batch_size,
        sampler=sampler,
        collate_fn=lt.collate_fn,
        num_workers=workers,
        multiprocessing_context=ctx,
        **kw,
    )


def _same(a, b):
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert torch.equal(a, b)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


@pytest.mark.parametrize("ctx", ["fork", "spawn"])
def test_batches_through_the_ring_equal_the_in_process_ones(uri, ctx):
    data = lt.LanceDataset(uri, columns=["emb", "label", "w", "name"])
    expected = list(_loader(data, 0))
    got = []
    for b in _loader(data, 2, ctx=ctx, prefetch_factor=2):
        got.append(b)
        got[-1] = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in b.items()}
        del b
    assert len(got) == len(expected) == 30
    for a, b in zip(expected, got):
        _same(dict(a), b)
    assert _ring.stats["received"] > 0  # the tensors came through the ring, not pickled one by one


def test_slots_are_reused_once_batches_die(uri):
    data = lt.LanceDataset(uri, columns=["emb", "label"])
    n = 0
    for b in _loader(data, 1, batch_size=50, prefetch_factor=2):
        n += 1
        del b
    assert n == 60
    # 60 batches through one worker with 8 slots: only possible if released slots were refilled.
    assert _ring.stats["received"] == 60
    gc.collect()
    assert all(not r.live for r in _ring._mapped.values())


def test_batches_kept_by_the_loop_stay_intact(uri):
    """The loop keeps every batch: the worker finds no free slot and sends the rest the usual
    way; none of the kept batches is overwritten."""
    data = lt.LanceDataset(uri, columns=["emb", "label"])
    expected = [dict(b) for b in _loader(data, 0, batch_size=50)]
    kept = list(_loader(data, 1, batch_size=50, prefetch_factor=2))
    assert len(kept) == len(expected) == 60
    for a, b in zip(expected, kept):
        _same(a, dict(b))
    assert 0 < _ring.stats["received"] < 60


class _Varied(torch.utils.data.Dataset):
    """Batches of growing size and every kind of leaf: tensors of several dtypes, numpy arrays,
    nested tuples and lists, and values that are pickled as usual (bool and bfloat16 tensors,
    strings, bytes, None)."""

    def __len__(self):
        return 400

    def __getitems__(self, idx):
        idx = np.asarray(idx)
        n = int(idx.max()) + 1  # later batches are larger: the ring grows
        x = torch.arange(n * 7, dtype=torch.float32).reshape(n, 7) + float(idx[0])
        return {
            "x": x,
            "xt": x.t(),  # not contiguous: copied contiguous
            "i16": torch.tensor(idx, dtype=torch.int16),
            "np": np.arange(n, dtype=np.float64) * 0.5,
            "nested": (torch.tensor(idx), [np.uint8(3), np.arange(3, dtype=np.int32)]),
            "flags": torch.tensor(idx % 2 == 0),
            "bf16": torch.ones(3, dtype=torch.bfloat16) * int(idx[0]),
            "s": [f"s{i}" for i in idx],
            "b": b"\x00\x01",
            "none": None,
            "empty": torch.empty((0, 4), dtype=torch.float32),
        }


def test_every_kind_of_leaf_and_growing_batches():
    data = _Varied()
    order = list(range(0, 400))

    def loader(workers):
        return torch.utils.data.DataLoader(
            data,
            batch_size=40,
            sampler=order,
            collate_fn=lt.collate_fn,
            num_workers=workers,
            prefetch_factor=2 if workers else None,
        )

    expected = list(loader(0))
    got = [b for b in loader(2)]
    assert len(got) == 10
    for a, b in zip(expected, got):
        _same(a, b)
    assert _ring.stats["received"] > 0


def test_iterable_dataset_through_the_ring(uri):
    ids = lt.LanceIterableDataset(uri, batch_size=128, columns=["emb", "label"], shuffle=True, seed=5)
    expected = sorted(int(v) for b in torch.utils.data.DataLoader(ids, batch_size=None) for v in b["label"])
    got = []
    for b in torch.utils.data.DataLoader(ids, batch_size=None, num_workers=2):
        assert b["emb"].shape[1] == 32
        got.extend(int(v) for v in b["label"])
    assert sorted(got) == expected == [3 * i for i in range(3000)]
    assert _ring.stats["received"] > 0


def test_disabled_ring_sends_batches_the_usual_way(uri, monkeypatch):
    data = lt.LanceDataset(uri, columns=["emb", "label"])
    monkeypatch.setattr(_ring, "enabled", False)
    got = [dict(b) for b in _loader(data, 1, batch_size=500, prefetch_factor=2)]  # forked: sees the flag
    assert len(got) == 6
    assert _ring.stats["received"] == 0


def test_outside_a_worker_nothing_is_wrapped():
    b = {"x": torch.ones(3)}
    assert lt.collate_fn(b) is b
    assert pickle.loads(pickle.dumps(lt.collate_fn(b)))["x"].sum() == 3


def test_a_slot_outside_its_ring_is_refused(tmp_path):
    """A shipped batch naming bytes beyond its slot raises rather than reading them."""
    ring = _ring._WorkerRing(4096, slots=2)
    try:
        args = (ring.path, os.getpid(), ring.size, ring.slots, ring.slot_bytes, 0, ("#", 0, True), [(4000, "<f8", (100,))])
        with pytest.raises(OSError, match="outside its slot"):
            _ring._receive(*args)
    finally:
        ring.close()
        _ring._unlink(ring.path)
        _ring._mapped.pop(ring.path, None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pin_memory needs CUDA")
def test_pinned_batches_free_their_slots_at_once(uri):
    """With pin_memory, the DataLoader's pinning thread copies each batch out of its slot and
    drops the views: every batch goes through the ring and the pinned copies are exact."""
    data = lt.LanceDataset(uri, columns=["emb", "label"])
    expected = [dict(b) for b in _loader(data, 0, batch_size=50)]
    kept = list(_loader(data, 2, batch_size=50, prefetch_factor=2, pin_memory=True))
    assert len(kept) == len(expected) == 60
    for a, b in zip(expected, kept):
        assert b["emb"].is_pinned() and b["label"].is_pinned()
        _same(a, dict(b))
    assert _ring.stats["received"] == 60  # kept pinned copies do not hold slots

