"""lancepy.torch.Loader: batches read ahead on threads in the training process, equal to
LanceDataset.__getitems__ on the same indices, in sampler order; resume, ranks, fork, errors."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading

import numpy as np
import pyarrow as pa
import pytest

torch = pytest.importorskip("torch")

import lancepy  # noqa: E402
from lancepy.exceptions import (  # noqa: E402
    ColumnNotFoundError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    UnsupportedError,
)
from lancepy.torch import BinaryTensor, LanceDataset, Loader, NullValuesError, ShuffleSampler  # noqa: E402
import test_torch as torch_suite  # noqa: E402

pytestmark = pytest.mark.torch

ROWS = 1000
DIM = torch_suite.DIM
BS = 64


def _table(n: int) -> pa.Table:
    """test_torch's table, with a float column that has nulls."""
    score = pa.array([None if i % 11 == 5 else float(i) for i in range(n)], pa.float64())
    return torch_suite._table(n).append_column("score", score)


@pytest.fixture(scope="module")
def uri(tmp_path_factory) -> str:
    """1,000 rows in 4 fragments, every 7th id deleted (version 2)."""
    path = str(tmp_path_factory.mktemp("loader") / "data.lance")
    lancepy.write_dataset(_table(ROWS), path, max_rows_per_file=250)
    lancepy.dataset(path).delete("id % 7 = 3")
    return path


COLS = ["id", "emb", "label", "caption", "image"]


def _assert_same(got, want) -> None:
    assert list(got.keys()) == list(want.keys())
    for k in want:
        a, b = got[k], want[k]
        if isinstance(b, BinaryTensor):
            assert isinstance(a, BinaryTensor)
            assert torch.equal(a.values, b.values) and torch.equal(a.offsets, b.offsets), k
        elif isinstance(b, torch.Tensor):
            assert isinstance(a, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape, k
            assert torch.equal(a, b), k
        else:
            assert a == b, k


def _batches_of(order: np.ndarray, bs: int, drop_last: bool) -> list:
    out = [order[s : s + bs].tolist() for s in range(0, len(order), bs)]
    if drop_last and out and len(out[-1]) < bs:
        out.pop()
    return out


def _check_against(loader, data, index_batches) -> None:
    got = list(loader)
    assert len(got) == len(index_batches) == len(loader)
    for g, idx in zip(got, index_batches):
        _assert_same(g, data.__getitems__(idx))


def _loader_threads() -> list:
    return [t for t in threading.enumerate() if t.name.startswith("lancepy-loader")]


def _no_loader_threads() -> bool:
    for t in _loader_threads():
        t.join(timeout=30)
    return not _loader_threads()


# --------------------------------------------------------------------------------------------
# The batches


@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [True, False])
def test_batches_equal_getitems(uri, shuffle, drop_last):
    data = LanceDataset(uri, columns=COLS)
    loader = Loader(uri, BS, columns=COLS, shuffle=shuffle, drop_last=drop_last, seed=3)
    order = ShuffleSampler(len(data), seed=3, shuffle=shuffle, drop_last=drop_last).indices()
    _check_against(loader, data, _batches_of(order, BS, drop_last))
    ids = [i for b in loader for i in b["id"].tolist()]
    assert all(i % 7 != 3 for i in ids)  # deleted rows are never read
    if not drop_last:
        assert sorted(ids) == sorted(data.__getitems__(list(range(len(data))))["id"].tolist())
    assert len(ids) == (len(data) // BS * BS if drop_last else len(data))


@pytest.mark.parametrize("drop_last", [True, False])
def test_ranks_share_the_epoch(uri, drop_last):
    data = LanceDataset(uri, columns=["id", "emb"])
    n = len(data)
    shares = []
    for rank in range(3):
        loader = Loader(data, 50, rank=rank, world_size=3, drop_last=drop_last, seed=1)
        order = ShuffleSampler(n, seed=1, rank=rank, world_size=3, drop_last=drop_last).indices()
        _check_against(loader, data, _batches_of(order, 50, drop_last))
        shares.append([i for b in loader for i in b["id"].tolist()])
    assert len({len(s) for s in shares}) == 1  # equal shares
    all_ids = data.__getitems__(list(range(n)))["id"].tolist()
    if drop_last:
        per = n // 3 // 50 * 50
        assert [len(s) for s in shares] == [per] * 3
        assert len(set(shares[0] + shares[1] + shares[2])) == 3 * per  # disjoint
    else:
        every = shares[0] + shares[1] + shares[2]
        assert set(every) == set(all_ids)  # covering
        assert len(every) == -(-n // 3) * 3  # padded to equal shares, nothing else repeated
        assert len(every) - len(set(every)) == -(-n // 3) * 3 - n


def test_custom_sampler_of_indices(uri):
    data = LanceDataset(uri, columns=COLS)
    idx = [5, 3, 3, 700, 0, 12, 12, 12, 400, 1, 2, 9, 811, 6, 4, 300, 301]
    _check_against(Loader(data, 5, sampler=idx), data, _batches_of(np.array(idx), 5, False))
    _check_against(Loader(data, 5, sampler=idx, drop_last=True), data, _batches_of(np.array(idx), 5, True))
    # numpy and 0-d tensor indices, and torch's own samplers
    _check_against(Loader(data, 4, sampler=np.array(idx)), data, _batches_of(np.array(idx), 4, False))
    _check_against(Loader(data, 4, sampler=[torch.tensor(i) for i in idx]), data, _batches_of(np.array(idx), 4, False))
    seq = torch.utils.data.SequentialSampler(range(len(data)))
    _check_against(Loader(data, 100, sampler=seq), data, _batches_of(np.arange(len(data)), 100, False))


def test_custom_sampler_of_batches(uri):
    data = LanceDataset(uri, columns=["id", "caption"])
    batches = [[1, 2, 3], [800], [7, 7, 0, 5, 9], list(range(100, 140))]
    _check_against(Loader(data, None, sampler=batches), data, batches)
    bs = torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(range(len(data)), generator=torch.Generator().manual_seed(4)), 33, False)
    want = list(bs)  # the generator is re-seeded per iteration below
    torch_gen = torch.Generator().manual_seed(4)
    bs2 = torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(range(len(data)), generator=torch_gen), 33, False)
    got = list(Loader(data, None, sampler=bs2))
    assert len(got) == len(want)
    for g, idx in zip(got, want):
        _assert_same(g, data.__getitems__(idx))


def test_a_sampler_without_len(uri):
    data = LanceDataset(uri, columns=["id"])

    class Gen:
        def __iter__(self):
            return iter(range(0, 300, 3))

    loader = Loader(data, 16, sampler=Gen())
    got = [i for b in loader for i in b["id"].tolist()]
    assert got == data.__getitems__(list(range(0, 300, 3)))["id"].tolist()
    with pytest.raises(TypeError, match="no len"):
        len(loader)


def test_filter(uri):
    data = LanceDataset(uri, columns=["id", "emb", "label"], filter="label < 4 AND id > 100")
    loader = Loader(uri, 20, columns=["id", "emb", "label"], filter="label < 4 AND id > 100", seed=2)
    order = ShuffleSampler(len(data), seed=2).indices()
    _check_against(loader, data, _batches_of(order, 20, False))
    ids = [i for b in Loader(data, 20, shuffle=False) for i in b["id"].tolist()]
    want = lancepy.dataset(uri).to_table(columns=["id"], filter="label < 4 AND id > 100").column("id").to_pylist()
    assert ids == want


def test_fill_null_and_null_errors(uri):
    with pytest.raises(NullValuesError):
        list(Loader(uri, BS, columns=["id", "score"]))
    data = LanceDataset(uri, columns=["id", "score"], fill_null=-1.0)
    loader = Loader(uri, BS, columns=["id", "score"], fill_null=-1.0, seed=5)
    _check_against(loader, data, _batches_of(ShuffleSampler(len(data), seed=5).indices(), BS, False))
    scores = torch.cat([b["score"] for b in loader])
    assert (scores == -1.0).any()
    # The failing batch is the first holding a null: the ones before it are handed out.
    ids = LanceDataset(uri, columns=["id"]).__getitems__(list(range(len(data))))["id"].tolist()
    clean = [i for i, v in enumerate(ids) if v % 11 != 5]
    null = next(i for i, v in enumerate(ids) if v % 11 == 5)
    order = clean[:16] + [null] + clean[16:40]  # batch 2 (of 7 rows) holds a null score
    got = []
    with pytest.raises(NullValuesError):
        for b in Loader(uri, 7, columns=["id", "score"], sampler=order, prefetch=4):
            got.append(b["id"].tolist())
    assert got == [[ids[i] for i in order[0:7]], [ids[i] for i in order[7:14]]]


def test_binary_tensor(uri):
    data = LanceDataset(uri, columns=["id", "image"], binary="tensor")
    loader = Loader(uri, 30, columns=["id", "image"], binary="tensor")
    _check_against(loader, data, _batches_of(ShuffleSampler(len(data), seed=0).indices(), 30, False))
    assert isinstance(next(iter(loader))["image"], BinaryTensor)


def test_transform_runs_on_the_reading_threads(uri):
    names = set()

    def transform(batch):
        names.add(threading.current_thread().name)
        return {"x": batch["emb"] * 2, "n": len(batch["caption"]), "id": batch["id"]}

    data = LanceDataset(uri, columns=["id", "emb", "caption"])
    loader = Loader(data, 40, transform=transform, threads=2)
    order = ShuffleSampler(len(data), seed=0).indices()
    got = list(loader)
    assert len(got) == len(_batches_of(order, 40, False))
    for g, idx in zip(got, _batches_of(order, 40, False)):
        want = data.__getitems__(idx)
        assert torch.equal(g["x"], want["emb"] * 2) and g["n"] == len(idx) and torch.equal(g["id"], want["id"])
    assert names and all(n.startswith("lancepy-loader") for n in names)
    # A LanceDataset's own transform is applied as __getitems__ applies it.
    data2 = LanceDataset(uri, columns=["id"], transform=lambda b: b["id"] * 10)
    out = list(Loader(data2, 40, shuffle=False))
    assert torch.cat(out).tolist() == [i * 10 for i in data.__getitems__(list(range(len(data))))["id"].tolist()]


# --------------------------------------------------------------------------------------------
# Epochs and resuming


def test_set_epoch_changes_the_order_deterministically(uri):
    loader = Loader(uri, BS, columns=["id"], seed=9)
    e0 = [b["id"].tolist() for b in loader]
    assert [b["id"].tolist() for b in loader] == e0  # same epoch, same order
    loader.set_epoch(1)
    e1 = [b["id"].tolist() for b in loader]
    assert e1 != e0 and sorted(sum(e1, [])) == sorted(sum(e0, []))
    other = Loader(uri, BS, columns=["id"], seed=9)
    other.set_epoch(1)
    assert [b["id"].tolist() for b in other] == e1
    assert loader.epoch == 1
    with pytest.raises(InvalidArgumentError):
        loader.set_epoch(-1)


@pytest.mark.parametrize("prefetch", [1, 4])
def test_resume_mid_epoch(uri, prefetch):
    full = Loader(uri, BS, columns=["id", "emb"], seed=7, prefetch=prefetch)
    full.set_epoch(2)
    want = [b["id"].tolist() for b in full]
    loader = Loader(uri, BS, columns=["id", "emb"], seed=7, prefetch=prefetch)
    loader.set_epoch(2)
    it = iter(loader)
    head = [next(it)["id"].tolist() for _ in range(5)]  # the threads have read further ahead
    state = loader.state_dict()
    assert state["position"] == 5 * BS and state["epoch"] == 2
    del it
    resumed = Loader(uri, BS, columns=["id", "emb"], seed=7, prefetch=prefetch)
    resumed.load_state_dict(state)
    rest = [b["id"].tolist() for b in resumed]
    assert head + rest == want
    # A second resume from the resumed iteration, and the position after a whole epoch.
    again = Loader(uri, BS, columns=["id", "emb"], seed=7)
    again.load_state_dict(state)
    it = iter(again)
    next(it)
    state2 = again.state_dict()
    assert state2["position"] == 6 * BS
    third = Loader(uri, BS, columns=["id", "emb"], seed=7)
    third.load_state_dict(state2)
    assert [b["id"].tolist() for b in third] == want[6:]
    assert third.state_dict()["position"] == len(third.dataset)
    # A state for another order is refused.
    with pytest.raises(InvalidArgumentError):
        Loader(uri, BS, columns=["id"], seed=8).load_state_dict(state)


def test_resume_with_a_custom_sampler(uri):
    order = np.random.default_rng(1).permutation(600).tolist()
    want = [b["id"].tolist() for b in Loader(uri, 25, columns=["id"], sampler=order)]
    loader = Loader(uri, 25, columns=["id"], sampler=order, prefetch=3)
    it = iter(loader)
    head = [next(it)["id"].tolist() for _ in range(4)]
    state = loader.state_dict()
    assert state["batches"] == 4
    del it
    resumed = Loader(uri, 25, columns=["id"], sampler=order)
    resumed.load_state_dict(state)
    assert head + [b["id"].tolist() for b in resumed] == want
    with pytest.raises(InvalidArgumentError):
        resumed.load_state_dict({"epoch": 0, "position": 3})


def test_a_given_shuffle_sampler_shares_epoch_and_resume(uri):
    data = LanceDataset(uri, columns=["id"])
    sampler = ShuffleSampler(data, seed=11, rank=1, world_size=2)
    loader = Loader(data, 32, sampler=sampler)
    loader.set_epoch(3)
    assert sampler.epoch == 3
    want = _batches_of(sampler.indices(), 32, False)
    got = [b["id"].tolist() for b in loader]
    assert got == [data.__getitems__(i)["id"].tolist() for i in want]
    assert len(loader) == len(want)
    # A ShuffleSampler's own saved state resumes the Loader.
    s2 = ShuffleSampler(data, seed=11, rank=1, world_size=2)
    s2.set_epoch(3)
    it = iter(s2)
    for _ in range(64):
        next(it)
    s3 = ShuffleSampler(data, seed=11, rank=1, world_size=2)
    s3.load_state_dict(s2.state_dict())
    assert [b["id"].tolist() for b in Loader(data, 32, sampler=s3)] == got[2:]


def test_len(uri):
    n = len(LanceDataset(uri))
    assert len(Loader(uri, BS)) == -(-n // BS)
    assert len(Loader(uri, BS, drop_last=True)) == n // BS
    assert len(Loader(uri, 10, rank=2, world_size=3)) == -(-(-(-n // 3)) // 10)
    assert len(Loader(uri, 10, rank=2, world_size=3, drop_last=True)) == n // 3 // 10
    assert len(Loader(uri, 4, sampler=list(range(10)))) == 3
    assert len(Loader(uri, 4, sampler=list(range(10)), drop_last=True)) == 2
    assert len(Loader(uri, None, sampler=[[1], [2, 3]])) == 2


# --------------------------------------------------------------------------------------------
# Stopping, errors, threads, processes


def test_early_break_then_iterate_again(uri):
    loader = Loader(uri, 16, columns=["id"], prefetch=4, threads=3)
    full = [b["id"].tolist() for b in loader]
    for i, _ in enumerate(loader):
        if i == 2:
            break
    assert _no_loader_threads()
    assert [b["id"].tolist() for b in loader] == full  # a new iteration starts the epoch again
    it = iter(loader)
    next(it)
    it.close()
    assert _no_loader_threads()
    assert _no_loader_threads() and [b["id"].tolist() for b in loader] == full


def test_an_error_surfaces_at_its_batch(uri):
    data = LanceDataset(uri, columns=["id"])
    n = len(data)
    order = list(range(100)) + [n + 5] + list(range(100, 200))  # batch 10 (of 10 rows) is out of range
    got = []
    with pytest.raises(IndexOutOfRangeError):
        for b in Loader(data, 10, sampler=order, prefetch=6, threads=3):
            got.append(b["id"].tolist())
    assert got == [data.__getitems__(order[s : s + 10])["id"].tolist() for s in range(0, 100, 10)]
    assert _no_loader_threads()

    def transform(batch):
        if 300 in batch["id"].tolist():
            raise RuntimeError("bad batch")
        return batch

    ids = data.__getitems__(list(range(n)))["id"].tolist()
    where = ids.index(300) // 20
    got = []
    with pytest.raises(RuntimeError, match="bad batch"):
        for b in Loader(data, 20, shuffle=False, transform=transform, prefetch=8, threads=4):
            got.append(b)
    assert len(got) == where
    # A sampler's own error also comes at its position.
    bad = [[1, 2], [3], "x"]
    got = []
    with pytest.raises(InvalidArgumentError):
        for b in Loader(data, None, sampler=bad + [[4]] * 10):
            got.append(b["id"].tolist())
    assert len(got) == 2
    with pytest.raises(InvalidArgumentError, match="batch_size=None"):
        list(Loader(data, 5, sampler=[[1, 2], [3]]))
    with pytest.raises(InvalidArgumentError, match="batch_size="):
        list(Loader(data, None, sampler=[1, 2, 3]))


def test_keyboard_interrupt_in_the_consumer(uri):
    loader = Loader(uri, 8, columns=["id"], prefetch=6, threads=3)
    with pytest.raises(KeyboardInterrupt):
        for i, _ in enumerate(loader):
            if i == 3:
                raise KeyboardInterrupt
    assert _no_loader_threads()
    assert sum(len(b["id"]) for b in loader) == len(loader.dataset)
    # A real SIGINT in a process iterating: it stops with KeyboardInterrupt, no hang.
    code = (
        "import os, signal, sys\n"
        f"sys.path.insert(0, {os.path.join(os.path.dirname(lancepy.__file__), '..')!r})\n"
        "from lancepy.torch import Loader\n"
        f"loader = Loader({uri!r}, 8, columns=['id'], prefetch=6, threads=3)\n"
        "for epoch in range(1000):\n"
        "    for i, b in enumerate(loader):\n"
        "        if epoch == 1 and i == 5:\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr, proc.stderr


def _child(loader, queue):
    try:
        queue.put([b["id"].tolist() for b in loader])
    except BaseException as e:  # noqa: BLE001
        queue.put(repr(e))


def _run_child(ctx, target, args, queue):
    """(what the child put in the queue, its exit code); a child that hangs is killed."""
    proc = ctx.Process(target=target, args=args, daemon=True)
    proc.start()
    try:
        got = queue.get(timeout=120)
        proc.join(timeout=60)
        return got, proc.exitcode
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()


def test_forked_child(uri):
    loader = Loader(uri, 32, columns=["id", "emb"], threads=2)
    want = [b["id"].tolist() for b in loader]  # the parent iterated first
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    got, code = _run_child(ctx, _child, (loader, queue), queue)
    assert code == 0
    assert got == want
    # Forked in the middle of an iteration: the child's copy of it refuses (its threads stayed
    # in the parent) and a new one works.
    it = iter(loader)
    next(it)

    def child_mid(queue):
        try:
            next(it)
            queue.put("no error")
        except RuntimeError as e:
            queue.put([b["id"].tolist() for b in loader] if "another process" in str(e) else repr(e))

    got, _ = _run_child(ctx, child_mid, (queue,), queue)
    assert got == want
    assert next(it)["id"].tolist() == want[1]  # the parent's goes on
    it.close()


@pytest.mark.parametrize("threads,prefetch", [(1, 1), (1, 4), (4, 1), (3, 2)])
def test_threads_and_prefetch(uri, threads, prefetch):
    data = LanceDataset(uri, columns=["id", "caption", "emb"])
    loader = Loader(data, 45, threads=threads, prefetch=prefetch, seed=4)
    _check_against(loader, data, _batches_of(ShuffleSampler(len(data), seed=4).indices(), 45, False))


# --------------------------------------------------------------------------------------------
# Datasets: objects, versions, memory://, blobs; devices


def test_dataset_objects_and_versions(uri):
    ds = lancepy.dataset(uri)
    a = [b["id"].tolist() for b in Loader(ds, 50, columns=["id"])]
    b = [b["id"].tolist() for b in Loader(uri, 50, columns=["id"])]
    assert a == b
    old = lancepy.dataset(uri, version=1)  # before the delete
    ids = [i for b in Loader(old, 50, columns=["id"], shuffle=False) for i in b["id"].tolist()]
    assert ids == list(range(ROWS))


def test_memory_dataset_and_blobs(tmp_path):
    blob = pa.field("image", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    values = [None if i % 9 == 4 else bytes([i % 256]) * (i * 3001 % 50_000) for i in range(120)]
    table = pa.table({"id": pa.array(range(120), pa.int64()), "image": pa.array(values, pa.large_binary())},
                     schema=pa.schema([pa.field("id", pa.int64()), blob]))
    for path in (str(tmp_path / "blobs"), "memory://loader-blobs"):
        lancepy.write_dataset(table, path, max_rows_per_file=50)
        lancepy.dataset(path).delete("id = 7")
        data = LanceDataset(path)
        loader = Loader(path, 16, seed=1)
        _check_against(loader, data, _batches_of(ShuffleSampler(len(data), seed=1).indices(), 16, False))
        got = {i: v for b in loader for i, v in zip(b["id"].tolist(), b["image"])}
        assert got == {i: values[i] for i in range(120) if i != 7}


def test_device_cpu_and_pinning(uri):
    data = LanceDataset(uri, columns=["id", "emb", "image"], binary="tensor")
    loader = Loader(data, 50, device="cpu", seed=2)
    _check_against(loader, data, _batches_of(ShuffleSampler(len(data), seed=2).indices(), 50, False))
    assert all(b["emb"].device.type == "cpu" for b in loader)
    if torch.cuda.is_available():
        batch = next(iter(Loader(data, 50, pin_memory=True)))
        assert batch["emb"].is_pinned() and batch["image"].values.is_pinned()
        batch = next(iter(Loader(data, 50, device="cuda", pin_memory=True)))
        assert batch["emb"].is_cuda and torch.equal(batch["emb"].cpu(), data.__getitems__(
            ShuffleSampler(len(data)).indices()[:50].tolist())["emb"])
    else:
        with pytest.raises(UnsupportedError, match="pin_memory"):
            Loader(data, 50, pin_memory=True)
        with pytest.raises(UnsupportedError, match="CUDA"):
            Loader(data, 50, device="cuda")
        with pytest.raises(UnsupportedError, match="CUDA"):
            Loader(data, 50, device="cuda:0")


# --------------------------------------------------------------------------------------------
# Arguments


def test_bad_arguments(uri):
    data = LanceDataset(uri, columns=["id"], filter="id > 10")
    bad = [
        dict(batch_size=0),
        dict(batch_size=-3),
        dict(batch_size="8"),
        dict(batch_size=True),
        dict(batch_size=None),  # without a sampler of batches
        dict(batch_size=None, sampler=[[1]], drop_last=True),
        dict(prefetch=0),
        dict(threads=0),
        dict(threads=1.5),
        dict(binary="text"),
        dict(seed=-1),
        dict(rank=3, world_size=3),
        dict(world_size=0),
        dict(sampler=[1, 2], shuffle=False),
        dict(sampler=[1, 2], seed=4),
        dict(sampler=[1, 2], rank=0),
        dict(sampler=[1, 2], world_size=2),
        dict(sampler=5),
        dict(sampler=ShuffleSampler(3)),  # another number of rows
        dict(device="not a device"),
        dict(non_blocking=False),  # no CUDA device: no copy to make
        dict(transform=3),
    ]
    for kwargs in bad:
        kwargs = dict(kwargs)
        bs = kwargs.pop("batch_size", 8)
        with pytest.raises(InvalidArgumentError):
            Loader(uri, bs, **kwargs)
    with pytest.raises(UnsupportedError):
        Loader(uri, 8, device="meta")
    with pytest.raises(ColumnNotFoundError):
        Loader(uri, 8, columns=["nope"])
    with pytest.raises(InvalidArgumentError):
        Loader(42, 8)
    # A LanceDataset's own settings cannot be contradicted (repeating them is fine).
    for kwargs in (dict(columns=["id", "emb"]), dict(filter="id > 11"), dict(fill_null=0), dict(binary="tensor")):
        with pytest.raises(InvalidArgumentError, match=next(iter(kwargs))):
            Loader(data, 8, **kwargs)
    with pytest.raises(InvalidArgumentError, match="transform"):
        Loader(LanceDataset(uri, transform=lambda b: b), 8, transform=lambda b: b)
    same = Loader(data, 8, columns=["id"], filter="id > 10", shuffle=False)
    assert [i for b in same for i in b["id"].tolist()][:3] == [11, 12, 13]  # id 10 is filtered out (and deleted)
    with pytest.raises(InvalidArgumentError):
        Loader(uri, 8).load_state_dict([1, 2])


@pytest.mark.parametrize("prefetch", [1, 3])
def test_reads_prefetch_batches_ahead(uri, prefetch):
    pulled = []

    class Counting:
        def __iter__(self):
            for i in range(200):
                pulled.append(i)
                yield i

    it = iter(Loader(uri, 10, columns=["id"], sampler=Counting(), prefetch=prefetch, threads=2))
    assert pulled == []  # nothing is read before the first next()
    next(it)
    assert len(pulled) == 10 * (1 + prefetch)  # the batch handed out + `prefetch` ahead
    next(it)
    assert len(pulled) == 10 * (2 + prefetch)
    it.close()


def test_empty_and_small_datasets(uri):
    empty = Loader(uri, 8, columns=["id"], filter="id < 0")
    assert len(empty) == 0 and list(empty) == []
    one = Loader(uri, 5000, columns=["id"], filter="id = 1", shuffle=False)
    assert len(one) == 1 and [b["id"].tolist() for b in one] == [[1]]
    assert list(Loader(uri, 5000, columns=["id"], filter="id = 1", drop_last=True)) == []


# -- gathering straight into caller-allocated tensors (the Loader's pinned path) ---------------


def _plain(shape, dtype):
    return torch.empty(shape, dtype=dtype)


WIDE = 64  # 256-byte vectors: stored row by row (full-zip pages), so take_into gathers them


@pytest.fixture(scope="module")
def wide_uri(tmp_path_factory) -> str:
    """1,000 rows of 64-d vectors (+ id, label, caption) in 4 fragments, every 7th id deleted."""
    rng = np.random.default_rng(3)
    ids = np.arange(ROWS, dtype=np.int64)
    t = pa.table({
        "id": ids,
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(ROWS * WIDE).astype(np.float32)), WIDE),
        "label": pa.array((ids % 10).astype(np.int32)),
        "caption": pa.array([f"row {i}" for i in ids]),
    })
    path = str(tmp_path_factory.mktemp("wide") / "data.lance")
    lancepy.write_dataset(t, path, max_rows_per_file=250)
    lancepy.dataset(path).delete("id % 7 = 3")
    return path


@pytest.mark.parametrize("filtered", [False, True])
def test_batch_into_allocated_tensors_equals_getitems(wide_uri, filtered):
    """Vectors stored row by row are gathered into the allocated tensors; every column
    equals __getitems__ (deletions, 4 fragments, repeats, any order; with a filter, by address)."""
    ds = LanceDataset(wide_uri, filter="id % 3 != 1" if filtered else None)
    rng = np.random.default_rng(5)
    allocated = []

    def allocate(shape, dtype):
        t = torch.full(shape, 7, dtype=dtype)  # not zeros: every byte must be written
        allocated.append(t)
        return t

    for _ in range(20):
        idx = rng.integers(0, len(ds), int(rng.integers(1, 200))).tolist()
        got = ds._batch(idx, allocate=allocate)
        _assert_same(got, ds.__getitems__(idx))
    assert any(got["emb"] is t for t in allocated)  # the vectors went into an allocated tensor
    assert "emb" not in ds._not_direct and "label" in ds._not_direct


def test_batch_into_pylance_written_dataset(tmp_path):
    """The same on a dataset pylance wrote (its full-zip vector pages)."""
    lance = pytest.importorskip("lance")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3000, WIDE)).astype(np.float32)
    t = pa.table({"v": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), WIDE),
                  "ts": pa.array(np.arange(3000).astype("datetime64[us]"))})
    path = str(tmp_path / "pl.lance")
    lance.write_dataset(t, path, max_rows_per_file=1000)
    ds = LanceDataset(path)
    idx = rng.integers(0, 3000, 500).tolist()
    got = ds._batch(idx, allocate=_plain)
    assert torch.equal(got["v"], torch.from_numpy(x[idx]))
    assert got["ts"].tolist() == [int(i) for i in idx]
    assert "v" not in ds._not_direct  # gathered straight into the tensor


def test_batch_into_nullable_vectors_fall_back(tmp_path):
    """Vectors with null rows are not stored row by row: take_into declines, the batch is
    read as before (and null rows are reported)."""
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), 4)
    vec = pa.array([None if i == 3 else v for i, v in enumerate(vec.to_pylist())], vec.type)
    path = str(tmp_path / "n.lance")
    lancepy.write_dataset(pa.table({"v": vec}), path)
    ds = LanceDataset(path, fill_null=-1.0)
    got = ds._batch([3, 1], allocate=_plain)
    assert got["v"].tolist() == [[-1.0] * 4, x[1].tolist()]
    assert "v" in ds._not_direct


def test_take_into_rejects_bad_outputs(wide_uri):
    uri, DIM = wide_uri, WIDE
    snap = lancepy.dataset(uri)._view.snapshot
    emb = np.zeros((2, DIM), np.float32)
    assert snap.take_into([0, 5], "emb", emb) is True
    want = lancepy.dataset(uri).take([0, 5], columns=["emb"]).column("emb").to_pylist()
    assert emb.tolist() == want
    with pytest.raises(InvalidArgumentError, match="512|bytes"):
        snap.take_into([0, 5, 6], "emb", emb)
    with pytest.raises(InvalidArgumentError, match="C-contiguous"):
        snap.take_into([0], "emb", np.zeros((2, DIM), np.float32).T)
    ro = np.zeros((2, DIM), np.float32)
    ro.flags.writeable = False
    with pytest.raises(InvalidArgumentError, match="read-only"):
        snap.take_into([0, 5], "emb", ro)
    with pytest.raises(InvalidArgumentError, match="__array_interface__"):
        snap.take_into([0, 5], "emb", bytearray(2 * DIM * 4))
    with pytest.raises(IndexOutOfRangeError):
        snap.take_into([0, 10**6], "emb", emb)
    with pytest.raises(ColumnNotFoundError):
        snap.take_into([0, 5], "nope", emb)
    assert snap.take_into([0, 5], "label", np.zeros(2, np.int64)) is False  # mini-block: declined


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("fixed_only", [False, True])  # True: read by the native pipeline
@pytest.mark.parametrize("mode", ["current", "side", "readers", "pinned"])
def test_cuda_epoch_equals_getitems(wide_uri, mode, fixed_only, monkeypatch):
    """A whole shuffled epoch through pinned memory (vectors gathered straight into it) and,
    unless `pinned`, copied to the device by the training thread on its stream (`current`) or
    a side stream (`side`), or by the reading threads (`readers`): every batch equals __getitems__ of the
    sampler's indices, in order."""
    monkeypatch.setattr(Loader, "_copy_mode", "current" if mode == "pinned" else mode)
    data = LanceDataset(wide_uri, columns=["id", "emb", "label"] if fixed_only else None)
    loader = Loader(data, 37, threads=3, prefetch=5, seed=4, pin_memory=True,
                    device=None if mode == "pinned" else "cuda")
    assert (loader._native_layouts() is not None) == (fixed_only and mode != "readers")
    assert (loader._ring_layouts() is not None) == (fixed_only and mode == "current")
    order = ShuffleSampler(len(data), seed=4)
    want = list(order)
    k = 0
    for batch in loader:
        idx = want[k : k + 37]
        k += len(idx)
        for name, t in batch.items():
            if isinstance(t, torch.Tensor):
                if mode == "pinned":
                    assert t.is_pinned(), name
                else:
                    assert t.is_cuda, name
        _assert_same({n: (v.cpu() if isinstance(v, torch.Tensor) else v) for n, v in batch.items()},
                     data.__getitems__(idx))
    assert k == len(data)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("filtered", [False, True])
def test_cuda_ring_matches_the_pipeline(wide_uri, filtered, monkeypatch):
    """The ring of page-locked slots (the default with a CUDA device) hands out exactly what the
    per-batch pipeline does: a partial epoch, the rest resumed from state_dict in another
    Loader while the GPU falls behind (batches kept on the device, each step queued behind a
    sleep: slots wait for their copies), then a whole next epoch."""

    def run(ring: bool):
        monkeypatch.setattr(Loader, "_ring", ring)
        data = LanceDataset(wide_uri, columns=["id", "emb", "label"], filter="id % 3 != 1" if filtered else None)
        kw = dict(threads=2, prefetch=2, seed=3, pin_memory=True, device="cuda")
        first = Loader(data, 37, **kw)
        assert (first._ring_layouts() is not None) == ring
        it = iter(first)
        out = [next(it) for _ in range(3)]
        state = first.state_dict()
        it.close()  # stopped early: its readers finish, its slots go
        second = Loader(data, 37, **kw)
        second.load_state_dict(state)
        for batch in second:
            torch.cuda._sleep(2_000_000)
            out.append(batch)
        second.set_epoch(1)
        out.extend(second)
        return [{k: v.cpu() for k, v in b.items()} for b in out], state

    with_ring, state = run(True)
    without, state2 = run(False)
    assert state == state2
    assert len(with_ring) == len(without)
    for a, b in zip(with_ring, without):
        _assert_same(a, b)
    assert sum(len(b["id"]) for b in with_ring[3:]) - sum(len(b["id"]) for b in with_ring[:3]) > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_ring_nulls_fill_or_raise_at_their_batch(tmp_path):
    n = 300
    score = pa.array([None if i in (200, 201) else float(i) for i in range(n)], pa.float64())
    vec = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * WIDE, dtype=np.float32)), WIDE)
    path = str(tmp_path / "nulls.lance")
    lancepy.write_dataset(pa.table({"v": vec, "score": score}), path, max_rows_per_file=100)
    kw = dict(shuffle=False, pin_memory=True, device="cuda", drop_last=True)
    loader = Loader(path, 50, fill_null=-1.0, **kw)
    assert loader._ring_layouts() is not None
    filled = [b["score"].cpu() for b in loader]
    assert len(filled) == 6 and filled[4][0].item() == -1.0 and filled[4][2].item() == 202.0
    got = []
    with pytest.raises(NullValuesError):
        for b in Loader(path, 50, **kw):
            got.append(b)
    assert len(got) == 4  # raised at its batch's turn


# -- the native pipeline (fixed-width columns, no transform: no Python on the reading side) ---


@pytest.fixture
def native(monkeypatch):
    """Batches through the native TakePipeline even unpinned (by default only pinned ones)."""
    monkeypatch.setattr(Loader, "_native", True)


@pytest.mark.parametrize("filtered", [False, True])
@pytest.mark.parametrize("threads", [1, 3])
def test_native_pipeline_epoch_equals_getitems(wide_uri, native, filtered, threads):
    data = LanceDataset(wide_uri, columns=["id", "emb", "label"], filter="id % 3 != 1" if filtered else None)
    loader = Loader(data, 29, threads=threads, prefetch=4, seed=8)
    assert loader._native_layouts() is not None
    want = list(ShuffleSampler(len(data), seed=8))
    k = 0
    for batch in loader:
        idx = want[k : k + 29]
        k += len(idx)
        _assert_same(batch, data.__getitems__(idx))
    assert k == len(data)
    # Not for columns that are not fixed-width numbers, nor with a transform.
    assert Loader(LanceDataset(wide_uri), 8)._native_layouts() is None
    assert Loader(data, 8, transform=lambda b: b)._native_layouts() is None


def test_native_pipeline_nulls_fill_or_raise_at_their_batch(tmp_path, native):
    """A batch with nulls is read again the usual way: filled, or NullValuesError at its turn."""
    n = 300
    score = pa.array([None if i in (200, 201) else float(i) for i in range(n)], pa.float64())
    vec = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * WIDE, dtype=np.float32)), WIDE)
    path = str(tmp_path / "nulls.lance")
    lancepy.write_dataset(pa.table({"v": vec, "score": score}), path, max_rows_per_file=100)
    filled = list(Loader(path, 50, shuffle=False, fill_null=-1.0))
    assert Loader(path, 50, shuffle=False)._native_layouts() is not None
    got = torch.cat([b["score"] for b in filled])
    assert got[200].item() == -1.0 and got[199].item() == 199.0
    assert torch.equal(torch.cat([b["v"] for b in filled]).flatten(), torch.arange(n * WIDE, dtype=torch.float32))
    seen = []
    with pytest.raises(NullValuesError):
        for b in Loader(path, 50, shuffle=False):
            seen.append(b)
    assert len(seen) == 4  # rows 0..199: the batch holding row 200 raises


def test_native_pipeline_bad_indices_at_their_batch_and_early_stop(wide_uri, native):
    data = LanceDataset(wide_uri, columns=["id", "emb"])
    loader = Loader(data, None, sampler=[[0, 1], [2, 3], [5, 10**9], [4]], threads=2)
    seen = []
    with pytest.raises(IndexOutOfRangeError):
        for b in loader:
            seen.append(b["id"].tolist())
    assert len(seen) == 2
    # Stopping early, then iterating again: every read in flight finished, a fresh pipeline.
    loader = Loader(data, 16, threads=2, prefetch=6, seed=1)
    for i, _ in enumerate(loader):
        if i == 2:
            break
    assert sum(len(b["id"]) for b in loader) == len(data)


def test_take_pipeline_rejects_bad_use(wide_uri):
    snap = lancepy.dataset(wide_uri)._view.snapshot
    with pytest.raises(InvalidArgumentError, match="fixed width"):
        snap.take_pipeline(["caption"], 2)
    with pytest.raises(ColumnNotFoundError):
        snap.take_pipeline(["nope"], 2)
    with pytest.raises(InvalidArgumentError, match="threads"):
        snap.take_pipeline(["emb"], 0)
    pipe = snap.take_pipeline(["emb", "id"], 2)
    assert pipe.columns == ["emb", "id"]
    emb, ids = np.zeros((3, WIDE), np.float32), np.zeros(3, np.int64)
    with pytest.raises(InvalidArgumentError, match="outputs for 2 columns"):
        pipe.submit([0, 1, 2], [emb])
    with pytest.raises(InvalidArgumentError, match="bytes"):
        pipe.submit([0, 1], [emb, ids])
    ro = emb.copy()
    ro.flags.writeable = False
    with pytest.raises(InvalidArgumentError, match="read-only"):
        pipe.submit([0, 1, 2], [ro, ids])
    with pytest.raises(InvalidArgumentError, match="in flight"):
        pipe.wait(12345)
    ticket = pipe.submit([0, 1, 2], [emb, ids])
    out = pipe.wait(ticket)
    assert out[0] is emb and out[1] is ids
    want = lancepy.dataset(wide_uri).take([0, 1, 2], columns=["emb", "id"])
    assert emb.tolist() == want.column("emb").to_pylist() and ids.tolist() == want.column("id").to_pylist()
    bad = pipe.submit([0, 10**9, 2], [emb, ids])
    with pytest.raises(IndexOutOfRangeError):
        pipe.wait(bad)
    pipe.close()
    pipe.close()
    with pytest.raises(InvalidArgumentError, match="closed"):
        pipe.submit([0, 1, 2], [emb, ids])


def test_native_writers_never_share_memory(wide_uri):
    """Two batches in flight into the same array (or overlapping views) are refused: no two
    native writers ever hold the same bytes."""
    snap = lancepy.dataset(wide_uri)._view.snapshot
    pipe = snap.take_pipeline(["emb"], 1)
    big = np.zeros((4, WIDE), np.float32)
    rows = list(range(800)) * 100  # ~20 MB for the one reading thread: `a` waits behind it
    first = pipe.submit(rows, [np.zeros((len(rows), WIDE), np.float32)])
    a = pipe.submit([0, 1], [big[:2]])
    with pytest.raises(InvalidArgumentError, match="shares memory"):
        pipe.submit([2, 3], [big[1:3]])  # overlaps `a`, which is in flight
    pipe.wait(first)
    pipe.wait(a)
    b = pipe.submit([2, 3], [big[1:3]])  # `a` is done: the bytes are free again
    assert pipe.wait(b) is not None
    with pytest.raises(InvalidArgumentError, match="shares memory"):
        pipe2 = snap.take_pipeline(["emb", "id"], 1)
        shared = np.zeros(64, np.int64)
        pipe2.submit([0, 1], [shared.view(np.float32)[: 2 * WIDE].reshape(2, WIDE), shared[:2]])
    pipe.close()
