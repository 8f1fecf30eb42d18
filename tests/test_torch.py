"""lancepy.torch: map-style and iterable datasets, the shuffle sampler, real DataLoaders."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pytest

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

import lancepy  # noqa: E402
from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError, UnsupportedError  # noqa: E402
from lancepy.torch import (  # noqa: E402
    BinaryTensor,
    _Converter,
    LanceDataset,
    LanceIterableDataset,
    NullValuesError,
    ShuffleSampler,
    collate_fn,
)

pytestmark = pytest.mark.torch

ROWS = 1000
DIM = 8
FORK_OK = sys.platform != "win32"


def _table(n: int, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(start)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "id": pa.array(ids),
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * DIM).astype(np.float32)), DIM),
            "label": pa.array((ids % 10).astype(np.int32)),
            "caption": pa.array([f"row {i}" for i in ids]),
            "image": pa.array([bytes([i % 256]) * (i % 7) for i in ids], type=pa.binary()),
        }
    )


@pytest.fixture(scope="module")
def uri(tmp_path_factory) -> str:
    """1,000 rows in 4 fragments, every 7th id deleted (version 2)."""
    path = str(tmp_path_factory.mktemp("torch") / "data.lance")
    lancepy.write_dataset(_table(ROWS), path, max_rows_per_file=250)
    lancepy.dataset(path).delete("id % 7 = 3")
    return path


@pytest.fixture(scope="module")
def live_ids(uri) -> np.ndarray:
    return lancepy.dataset(uri).to_table(columns=["id"]).column("id").to_numpy()


def _ids_of(loader) -> list:
    out = []
    for batch in loader:
        out.extend(batch["id"].tolist())
    return out


# --------------------------------------------------------------------------------------------
# LanceDataset


def test_import_lancepy_does_not_import_torch():
    code = "import sys, lancepy, lancepy.dataset, lancepy.file; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_len_is_live_rows_and_index_is_the_ith_live_row(uri, live_ids):
    ds = LanceDataset(uri)
    assert len(ds) == len(live_ids) == ROWS - len([i for i in range(ROWS) if i % 7 == 3])
    assert ds.version == 2
    for i in (0, 1, 2, 3, 500, len(ds) - 1, -1):
        assert int(ds[i]["id"]) == live_ids[i]
    with pytest.raises(IndexError):
        ds[len(ds)]
    with pytest.raises(IndexError):
        ds.__getitems__([0, len(ds)])


def test_getitems_is_one_batch_in_order_with_repeats(uri, live_ids):
    ds = LanceDataset(uri, columns=["id", "emb", "label", "caption", "image"])
    idx = [17, 3, 3, 900 % len(ds), 0, 17]
    batch = ds.__getitems__(idx)
    assert list(batch) == ["id", "emb", "label", "caption", "image"]
    assert batch["id"].dtype == torch.int64 and batch["id"].tolist() == live_ids[idx].tolist()
    assert batch["emb"].shape == (len(idx), DIM) and batch["emb"].dtype == torch.float32
    assert batch["label"].dtype == torch.int32
    assert batch["caption"] == [f"row {i}" for i in live_ids[idx]]
    assert batch["image"] == [bytes([i % 256]) * (i % 7) for i in live_ids[idx]]
    # the same rows through every index form
    for form in (np.array(idx), torch.tensor(idx), tuple(idx)):
        assert ds[form]["id"].tolist() == batch["id"].tolist()
    assert ds[2:5]["id"].tolist() == live_ids[2:5].tolist()
    empty = ds.__getitems__([])
    assert empty["emb"].shape == (0, DIM) and empty["caption"] == []


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_large_binary_values_copied_straight_into_bytes(tmp_path, version):
    # Values of a few KB are stored row by row (full-zip) in 2.1+: they are copied from the file
    # straight into each `bytes` object. 2.0 files go through the native take. Either way the
    # batch equals the dataset's own values, with a filter (row addresses) too.
    n = 600
    rng = np.random.default_rng(5)
    blobs = [rng.integers(0, 256, 1000 + 37 * (i % 50), dtype=np.uint8).tobytes() for i in range(n)]
    table = pa.table({"id": pa.array(np.arange(n)), "image": pa.array(blobs, type=pa.large_binary()),
                      "label": pa.array(np.arange(n, dtype=np.int32) % 10)})
    path = str(tmp_path / "images.lance")
    lancepy.write_dataset(table, path, max_rows_per_file=200, data_storage_version=version)
    lancepy.dataset(path).delete("id % 11 = 4")
    live = lancepy.dataset(path).to_table()
    ds = LanceDataset(path, columns=["image", "label", "id"])
    direct = ds._dataset()._view.snapshot.take_bytes([0, 1], "image")
    assert (direct is None) == (version == "2.0")
    idx = [5, 0, 399, 5, len(ds) - 1, 250]
    batch = ds.__getitems__(idx)
    assert list(batch) == ["image", "label", "id"]
    assert batch["image"] == [live.column("image")[i].as_py() for i in idx]
    assert batch["id"].tolist() == [live.column("id")[i].as_py() for i in idx]
    assert ds[3]["image"] == live.column("image")[3].as_py()
    only = LanceDataset(path, columns=["image"]).__getitems__(idx)
    assert list(only) == ["image"] and only["image"] == batch["image"]
    assert LanceDataset(path, columns=["image"]).__getitems__([]) == {"image": []}
    filtered = LanceDataset(path, columns=["id", "image"], filter="id >= 300")
    want = live.filter(pa.compute.greater_equal(live.column("id"), 300))
    got = filtered.__getitems__([0, 7, len(filtered) - 1])
    assert got["image"] == [want.column("image")[i].as_py() for i in (0, 7, len(filtered) - 1)]


def test_values_equal_pylance(tmp_path):
    lance = pytest.importorskip("lance")
    path = str(tmp_path / "pl.lance")
    lance.write_dataset(_table(600), path, max_rows_per_file=200, data_storage_version="2.1")
    lance.dataset(path).delete("id % 5 = 1")
    theirs = lance.dataset(path)
    for source in (path, theirs):  # a URI, and pylance's own dataset object
        ds = LanceDataset(source)
        assert len(ds) == theirs.count_rows()
        rows = np.random.default_rng(0).integers(0, len(ds), 100).tolist()
        ours = ds.__getitems__(rows)
        ref = theirs.take(rows)
        assert ours["id"].tolist() == ref.column("id").to_pylist()
        expected = np.stack([np.asarray(v, dtype=np.float32) for v in ref.column("emb").to_pylist()])
        np.testing.assert_array_equal(ours["emb"].numpy(), expected)
        assert ours["label"].tolist() == ref.column("label").to_pylist()
        assert ours["caption"] == ref.column("caption").to_pylist()
        assert ours["image"] == ref.column("image").to_pylist()


def test_fixed_size_lists_are_zero_copy(uri):
    ds = LanceDataset(uri, columns=["emb", "id", "caption"])
    # __getitems__: tensors over the native result's memory (what pyarrow would see too)
    out = ds._take([5, 1, 9])
    batch = ds._convert.native(out)
    rb = pa.record_batch(out)
    assert batch["emb"].data_ptr() == rb.column(0).values.buffers()[1].address
    assert batch["id"].data_ptr() == rb.column(1).buffers()[1].address
    assert out.fixed_values(2) is None  # strings: not fixed-width
    # from a pyarrow record batch (scans of several fragments): DLPack, also no copy
    rb = ds.read([5, 1, 9])
    batch = ds._convert(rb)
    emb = rb.column(0)
    values = emb.values
    assert batch["emb"].data_ptr() == values.buffers()[1].address + (values.offset + emb.offset * DIM) * 4
    ids = rb.column(1)
    assert batch["id"].data_ptr() == ids.buffers()[1].address + ids.offset * 8
    sliced = _Converter(rb.schema, None, "bytes")(rb.slice(1, 2))
    assert sliced["emb"].data_ptr() == batch["emb"].data_ptr() + DIM * 4
    assert sliced["id"].tolist() == batch["id"][1:].tolist()


def test_types(tmp_path):
    n = 6
    ts = pa.array(np.arange(n, dtype=np.int64) * 1000, type=pa.timestamp("us"))
    table = pa.table(
        {
            "i8": pa.array(np.arange(n, dtype=np.int8)),
            "u16": pa.array(np.arange(n, dtype=np.uint16)),
            "u64": pa.array(np.arange(n, dtype=np.uint64)),
            "f16": pa.array(np.arange(n, dtype=np.float16)),
            "f64": pa.array(np.arange(n, dtype=np.float64) / 2),
            "flag": pa.array([i % 2 == 0 for i in range(n)]),
            "ts": ts,
            "day": pa.array(np.arange(n, dtype=np.int32), type=pa.date32()),
            "bits": pa.FixedSizeListArray.from_arrays(pa.array([i % 3 == 0 for i in range(n * 2)]), 2),
            "big": pa.array([b"x" * i for i in range(n)], type=pa.large_binary()),
            "fixed": pa.array([bytes([i, i]) for i in range(n)], type=pa.binary(2)),
            "cat": pa.array(["a", "b", "a", "c", "b", "a"]).dictionary_encode(),
            "tags": pa.array([[str(i)] * (i % 3) for i in range(n)]),
        }
    )
    path = str(tmp_path / "types.lance")
    lancepy.write_dataset(table, path)
    ds = LanceDataset(path, binary="tensor")
    b = ds.__getitems__([4, 0, 5])
    assert b["i8"].dtype == torch.int8 and b["i8"].tolist() == [4, 0, 5]
    assert b["u16"].dtype == torch.uint16 and b["u64"].dtype == torch.uint64
    assert b["f16"].dtype == torch.float16 and b["f64"].tolist() == [2.0, 0.0, 2.5]
    assert b["flag"].dtype == torch.bool and b["flag"].tolist() == [True, True, False]
    assert b["ts"].dtype == torch.int64 and b["ts"].tolist() == [4000, 0, 5000]
    assert b["day"].dtype == torch.int32 and b["day"].tolist() == [4, 0, 5]
    assert b["bits"].dtype == torch.bool and b["bits"].tolist() == [[False, True], [True, False], [False, False]]
    big = b["big"]
    assert isinstance(big, BinaryTensor) and big.values.dtype == torch.uint8 and big.offsets.tolist() == [0, 4, 4, 9]
    assert big.num_values == 3
    assert [big.item_bytes(i) for i in range(3)] == [b"xxxx", b"", b"xxxxx"]
    assert b["fixed"].offsets.tolist() == [0, 2, 4, 6] and b["fixed"].item_bytes(2) == bytes([5, 5])
    assert b["cat"] == ["b", "a", "a"]
    assert isinstance(b["tags"], pa.Array) and b["tags"].to_pylist() == [["4"], [], ["5", "5"]]
    row = ds[1]
    assert int(row["i8"]) == 1 and row["bits"].tolist() == [False, True] and bytes(row["big"].numpy()) == b"x"
    assert LanceDataset(path, columns=["big"])[[5]]["big"] == [b"xxxxx"]


def test_nested_fixed_size_lists_are_nd_tensors():
    # (lancepy's writer does not store nested fixed-size lists yet: the conversion alone)
    mat = pa.FixedSizeListArray.from_arrays(pa.FixedSizeListArray.from_arrays(pa.array(np.arange(60, dtype=np.int16)), 3), 2)
    rb = pa.record_batch({"mat": mat}).slice(3, 4)
    out = _Converter(rb.schema, None, "bytes")(rb)["mat"]
    assert out.shape == (4, 2, 3) and out.dtype == torch.int16
    assert out.reshape(-1).tolist() == list(range(18, 42))
    inner = rb.column(0).values.values
    assert out.data_ptr() == inner.buffers()[1].address + 18 * 2  # zero-copy


def test_nulls_raise_unless_filled(tmp_path):
    table = pa.table(
        {
            "x": pa.array([1, None, 3], type=pa.int64()),
            "v": pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0, None, 4.0, 5.0, 6.0], type=pa.float32()), 2),
            "w": pa.array([[1.0, 2.0], None, [5.0, 6.0]], type=pa.list_(pa.float32(), 2)),
        }
    )
    path = str(tmp_path / "nulls.lance")
    lancepy.write_dataset(table, path)
    ds = LanceDataset(path)
    assert ds[[0, 2]]["x"].tolist() == [1, 3]  # no nulls in this batch
    with pytest.raises(NullValuesError, match="'x'.*fill_null"):
        ds[[0, 1]]
    with pytest.raises(NullValuesError, match="'v'"):
        LanceDataset(path, columns=["v"])[[1]]
    with pytest.raises(NullValuesError, match="'w'"):
        LanceDataset(path, columns=["w"])[[1]]
    filled = LanceDataset(path, fill_null=0)[[0, 1, 2]]
    assert filled["x"].tolist() == [1, 0, 3]
    assert filled["v"].tolist() == [[1.0, 2.0], [0.0, 4.0], [5.0, 6.0]]
    assert filled["w"].tolist() == [[1.0, 2.0], [0.0, 0.0], [5.0, 6.0]]
    per_column = LanceDataset(path, columns=["x", "w"], fill_null={"x": -1, "w": 9.0})[[1]]
    assert per_column["x"].tolist() == [-1] and per_column["w"].tolist() == [[9.0, 9.0]]


def test_transform_runs_once_per_batch(uri):
    calls = []

    def transform(batch):
        calls.append(len(batch["id"]))
        return batch["emb"].sum(dim=1), batch["label"]

    ds = LanceDataset(uri, columns=["emb", "label", "id"], transform=transform)
    x, y = ds.__getitems__(list(range(32)))
    assert x.shape == (32,) and y.shape == (32,) and calls == [32]


def test_version_is_pinned_and_tags_resolve(tmp_path):
    path = str(tmp_path / "v.lance")
    lancepy.write_dataset(_table(100), path)
    lancepy.dataset(path).tags.create("first", 1)
    ds = LanceDataset(path, columns=["id"])
    lancepy.write_dataset(_table(50, start=100), path, mode="append")
    lancepy.dataset(path).delete("id < 10")
    assert len(ds) == 100 and ds.version == 1
    clone = pickle.loads(pickle.dumps(ds))
    assert clone.version == 1 and len(clone) == 100 and clone[[0, 99]]["id"].tolist() == [0, 99]
    latest = LanceDataset(path)
    assert latest.version == 3 and len(latest) == 140
    tagged = LanceDataset(path, version="first")
    assert tagged.version == 1 and len(tagged) == 100
    at = LanceDataset(lancepy.dataset(path, version=2), columns=["id"])
    assert at.version == 2 and at[[149]]["id"].tolist() == [149]
    # a dataset object that moves on (here: a delete) does not move the torch dataset
    obj = lancepy.dataset(path)
    data = LanceDataset(obj, columns=["id"])
    obj.delete("id >= 100")
    assert obj.version == 4 and data.version == 3 and len(data) == 140 and data[[139]]["id"].tolist() == [149]


def test_filter_indexes_matching_rows(uri, live_ids):
    ds = LanceDataset(uri, columns=["id", "label"], filter="label = 4")
    expected = [i for i in live_ids if i % 10 == 4]
    assert len(ds) == len(expected)
    assert ds[list(range(len(ds)))]["id"].tolist() == expected
    assert ds[[3, 0, 3]]["id"].tolist() == [expected[3], expected[0], expected[3]]
    with pytest.raises(IndexError):
        ds[[len(ds)]]
    clone = pickle.loads(pickle.dumps(ds))
    assert clone[[1]]["id"].tolist() == [expected[1]]


def test_pickles_no_open_handles(uri):
    ds = LanceDataset(uri, columns=["id"])
    state = ds.__getstate__()
    assert state["_ds"] is None and "_convert" not in state
    clone = pickle.loads(pickle.dumps(ds))
    assert clone._ds is None and clone[[4]]["id"].tolist() == ds[[4]]["id"].tolist()
    assert pickle.loads(pickle.dumps(collate_fn)) is collate_fn


def test_bad_arguments(uri):
    with pytest.raises(ColumnNotFoundError):
        LanceDataset(uri, columns=["nope"])
    with pytest.raises(InvalidArgumentError):
        LanceDataset(uri, binary="base64")
    with pytest.raises(InvalidArgumentError):
        LanceDataset(12)


def test_storage_options_are_passed_on_only_when_given(uri, monkeypatch):
    import inspect

    import lancepy.torch as lt

    if "storage_options" in inspect.signature(lancepy.dataset).parameters:
        assert LanceDataset(uri, storage_options={}).version == 2
    else:  # not supported yet: fails loudly instead of being ignored
        with pytest.raises(UnsupportedError, match="storage_options"):
            LanceDataset(uri, storage_options={"region": "x"})
    seen = []
    real = lancepy.dataset

    def fake(u, version=None, storage_options=None):
        seen.append(storage_options)
        return real(u, version=version)

    monkeypatch.setattr(lt.lancepy, "dataset", fake)
    LanceDataset(uri, columns=["id"])
    ds = LanceDataset(uri, columns=["id"], storage_options={"k": "v"})
    clone = pickle.loads(pickle.dumps(ds))
    clone[[0]]
    assert seen == [None, {"k": "v"}, {"k": "v"}]


def test_default_collate_explains_what_to_do(uri):
    loader = DataLoader(LanceDataset(uri, columns=["id"]), batch_size=4)
    with pytest.raises(TypeError, match="collate_fn=lancepy.torch.collate_fn"):
        next(iter(loader))


# --------------------------------------------------------------------------------------------
# ShuffleSampler


def test_sampler_permutation_per_epoch():
    s = ShuffleSampler(100, seed=3)
    e0 = list(s)
    assert sorted(e0) == list(range(100)) and e0 != list(range(100))
    assert list(s) == e0  # same epoch, same order
    s.set_epoch(1)
    e1 = list(s)
    assert sorted(e1) == list(range(100)) and e1 != e0
    again = ShuffleSampler(100, seed=3)
    again.set_epoch(1)
    assert list(again) == e1
    assert list(ShuffleSampler(100, seed=4)) != e0
    assert list(ShuffleSampler(10, shuffle=False)) == list(range(10))
    assert list(ShuffleSampler(0)) == []


@pytest.mark.parametrize("n,world,drop_last", [(1000, 2, False), (999, 2, False), (999, 2, True), (10, 3, False), (2, 4, False), (2, 4, True)])
def test_sampler_ranks_are_disjoint_equal_and_cover(n, world, drop_last):
    shares = [list(ShuffleSampler(n, seed=1, rank=r, world_size=world, drop_last=drop_last)) for r in range(world)]
    lengths = {len(s) for s in shares}
    assert len(lengths) == 1
    per = lengths.pop()
    assert per == (n // world if drop_last else -(-n // world))
    flat = [i for s in shares for i in s]
    if drop_last:
        assert len(set(flat)) == len(flat) == per * world  # disjoint, nothing padded
    else:
        assert set(flat) == set(range(n))  # every row, on exactly one rank unless padded
        assert len(flat) - len(set(flat)) == per * world - n


@pytest.mark.parametrize("taken", [0, 1, 1023, 1024, 1025, 5119, 5120, 70000, 99999, 100000])
def test_sampler_position_is_exact_across_chunks(taken):
    # The epoch is handed out in growing chunks (1,024, then 4,096, ...): the position and a
    # resume must be exact on both sides of every chunk boundary.
    n = 100_000
    full = list(ShuffleSampler(n, seed=11))
    s = ShuffleSampler(n, seed=11)
    it = iter(s)
    got = [next(it) for _ in range(taken)]
    assert got == full[:taken]
    state = s.state_dict()
    assert state["position"] == taken
    resumed = ShuffleSampler(n, seed=11)
    resumed.load_state_dict(state)
    assert list(resumed) == full[taken:]
    assert list(it) == full[taken:]  # the first iteration goes on unaffected


def test_sampler_resume_mid_epoch_exactly(uri):
    ds = LanceDataset(uri, columns=["id"])
    sampler = ShuffleSampler(ds, seed=7)
    sampler.set_epoch(2)
    loader = DataLoader(ds, batch_size=32, sampler=sampler, collate_fn=collate_fn, num_workers=0)
    full = [b["id"].tolist() for b in loader]
    state = None
    seen = []
    for k, b in enumerate(loader):
        seen.append(b["id"].tolist())
        if k == 4:
            state = sampler.state_dict()
            break
    assert state["epoch"] == 2 and state["position"] == 5 * 32
    state = pickle.loads(pickle.dumps(state))
    resumed = ShuffleSampler(ds, seed=7)
    resumed.load_state_dict(state)
    resumed.set_epoch(2)  # the usual training-loop call keeps the pending resume
    rest = [b["id"].tolist() for b in DataLoader(ds, batch_size=32, sampler=resumed, collate_fn=collate_fn)]
    assert seen + rest == full
    assert len(resumed) == len(ds)
    # after the resumed pass, the next pass of that epoch is whole again
    assert [b["id"].tolist() for b in DataLoader(ds, batch_size=32, sampler=resumed, collate_fn=collate_fn)] == full
    with pytest.raises(InvalidArgumentError, match="seed"):
        ShuffleSampler(ds, seed=8).load_state_dict(state)


def test_sampler_resume_with_workers_by_consumed_rows(uri):
    ds = LanceDataset(uri, columns=["id"])
    sampler = ShuffleSampler(ds, seed=1)
    loader = DataLoader(ds, batch_size=50, sampler=sampler, collate_fn=collate_fn, num_workers=2, multiprocessing_context="fork")
    full = [b["id"].tolist() for b in DataLoader(ds, batch_size=50, sampler=ShuffleSampler(ds, seed=1), collate_fn=collate_fn)]
    seen = []
    for k, b in enumerate(loader):
        seen.append(b["id"].tolist())
        if k == 2:
            state = sampler.state_dict(consumed=3 * 50)
            break
    assert state["position"] == 150
    resumed = ShuffleSampler(ds, seed=1)
    resumed.load_state_dict(state)
    rest = [b["id"].tolist() for b in DataLoader(ds, batch_size=50, sampler=resumed, collate_fn=collate_fn)]
    assert seen + rest == full


def test_sampler_blocks():
    n, k = 1000, 50
    s = ShuffleSampler(n, seed=0, block_size=k, buffer_size=100)
    order = list(s)
    assert sorted(order) == list(range(n)) and order != list(range(n))
    # each window of 100 rows holds exactly two whole blocks
    for w in range(0, n, 100):
        blocks = {i // k for i in order[w : w + 100]}
        assert len(blocks) == 2
    s.set_epoch(1)
    assert list(s) != order
    ragged = list(ShuffleSampler(103, seed=2, block_size=10))
    assert sorted(ragged) == list(range(103))
    with pytest.raises(InvalidArgumentError):
        ShuffleSampler(10, block_size=0)


def test_sampler_defaults_from_torch_distributed(monkeypatch):
    import torch.distributed as dist

    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda: 1)
    monkeypatch.setattr(dist, "get_world_size", lambda: 3)
    s = ShuffleSampler(10)
    assert (s.rank, s.world_size, len(s)) == (1, 3, 4)
    with pytest.raises(InvalidArgumentError):
        ShuffleSampler(10, rank=3, world_size=3)


# --------------------------------------------------------------------------------------------
# Real DataLoaders


@pytest.mark.parametrize(
    "workers,context",
    [(0, None)] + ([(2, "fork")] if FORK_OK else []) + [(2, "spawn")],
)
def test_loader_sees_every_live_row_once_per_epoch(uri, live_ids, workers, context):
    ds = LanceDataset(uri, columns=["id", "emb"])
    sampler = ShuffleSampler(ds, seed=0)
    loader = DataLoader(
        ds, batch_size=64, sampler=sampler, collate_fn=collate_fn, num_workers=workers, multiprocessing_context=context
    )
    orders = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        ids = _ids_of(loader)
        assert sorted(ids) == sorted(live_ids.tolist())  # every live row once; deleted rows never
        orders.append(ids)
    assert orders[0] != orders[1]
    # the order is the sampler's, whatever the number of workers
    expected = [int(live_ids[i]) for i in ShuffleSampler(ds, seed=0).indices(1)]
    assert orders[1] == expected


@pytest.mark.skipif(not FORK_OK, reason="fork is POSIX-only")
def test_persistent_workers(uri, live_ids):
    ds = LanceDataset(uri, columns=["id"])
    sampler = ShuffleSampler(ds, seed=5)
    loader = DataLoader(
        ds, batch_size=100, sampler=sampler, collate_fn=collate_fn, num_workers=2, persistent_workers=True,
        multiprocessing_context="fork", pin_memory=False,
    )
    seen = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        ids = _ids_of(loader)
        assert sorted(ids) == sorted(live_ids.tolist())
        seen.append(ids)
    assert len({tuple(s) for s in seen}) == 3


def test_loader_with_a_batch_sampler_and_default_collation(uri, live_ids):
    ds = LanceDataset(uri, columns=["id", "caption"])
    batches = torch.utils.data.BatchSampler(ShuffleSampler(ds, seed=0), batch_size=100, drop_last=False)
    loader = DataLoader(ds, sampler=batches, batch_size=None)  # each index is a whole batch
    ids = []
    for b in loader:
        assert len(b["caption"]) == len(b["id"])
        ids.extend(b["id"].tolist())
    assert sorted(ids) == sorted(live_ids.tolist())


@pytest.mark.parametrize("world", [2, 3])
def test_loader_ranks_disjoint_equal_cover(uri, live_ids, world):
    ds = LanceDataset(uri, columns=["id"])
    shares = []
    for rank in range(world):
        sampler = ShuffleSampler(ds, seed=11, rank=rank, world_size=world)
        shares.append(_ids_of(DataLoader(ds, batch_size=40, sampler=sampler, collate_fn=collate_fn)))
    assert len({len(s) for s in shares}) == 1
    flat = [i for s in shares for i in s]
    assert set(flat) == set(live_ids.tolist())
    assert len(flat) - len(set(flat)) == len(shares[0]) * world - len(live_ids)


# --------------------------------------------------------------------------------------------
# LanceIterableDataset


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("workers", [0, 2])
def test_iterable_covers_every_row_once(uri, live_ids, shuffle, workers):
    ds = LanceIterableDataset(uri, batch_size=64, columns=["id", "emb"], shuffle=shuffle, seed=3)
    loader = DataLoader(ds, batch_size=None, num_workers=workers, multiprocessing_context="fork" if workers and FORK_OK else None)
    assert len(loader) == -(-len(live_ids) // 64)
    ids = _ids_of(loader)
    assert sorted(ids) == sorted(live_ids.tolist())
    if not shuffle:
        assert ids == live_ids.tolist()  # a scan, in order, across workers
    else:
        assert ids != live_ids.tolist()
        ds.set_epoch(1)
        again = _ids_of(loader)
        assert sorted(again) == sorted(ids) and again != ids


def test_iterable_scan_of_vectors_only(uri):
    # (batches of only vectors / binary are read by a take, the others by a range scan)
    expected = lancepy.dataset(uri).to_table(columns=["emb", "image"])
    ds = LanceIterableDataset(uri, batch_size=100, columns=["emb", "image"])
    assert ds._rows_stored_whole
    batches = list(ds)
    emb = torch.cat([b["emb"] for b in batches])
    np.testing.assert_array_equal(emb.numpy(), np.stack(expected.column("emb").to_numpy(zero_copy_only=False)))
    assert [v for b in batches for v in b["image"]] == expected.column("image").to_pylist()


def test_iterable_ranks_and_filter(uri, live_ids):
    shares = []
    for rank in range(2):
        ds = LanceIterableDataset(uri, batch_size=30, columns=["id"], filter="label < 5", rank=rank, world_size=2, shuffle=True)
        shares.append(_ids_of(DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="spawn")))
    expected = {int(i) for i in live_ids if i % 10 < 5}
    assert len(shares[0]) == len(shares[1])
    assert set(shares[0]) | set(shares[1]) == expected
    assert len(shares[0]) + len(shares[1]) - len(expected) in (0, 1)  # padded to equal length
    dropped = [
        _ids_of(LanceIterableDataset(uri, batch_size=30, columns=["id"], rank=r, world_size=2, drop_last=True))
        for r in range(2)
    ]
    assert not set(dropped[0]) & set(dropped[1]) and len(dropped[0]) == len(dropped[1]) == len(live_ids) // 2


@pytest.mark.skipif(not FORK_OK, reason="fork is POSIX-only")
def test_iterable_persistent_workers_advance_epochs(uri, live_ids):
    ds = LanceIterableDataset(uri, batch_size=100, columns=["id"], shuffle=True, transform=lambda b: b["id"])
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True, multiprocessing_context="fork")
    passes = [torch.cat(list(loader)).tolist() for _ in range(2)]
    for p in passes:
        assert sorted(p) == sorted(live_ids.tolist())
    assert passes[0] != passes[1]
    # the same orders as set_epoch(0), set_epoch(1) in one process
    local = LanceIterableDataset(uri, batch_size=100, columns=["id"], shuffle=True, transform=lambda b: b["id"])
    for e in range(2):
        local.set_epoch(e)
        assert torch.cat(list(local)).tolist() == passes[e]


# --------------------------------------------------------------------------------------------
# The example


def test_example_training_loss_goes_down(tmp_path):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    try:
        import train_torch
    finally:
        sys.path.pop(0)
    losses = train_torch.main(["--rows", "4000", "--epochs", "3", "--workers", "0", "--uri", str(tmp_path / "t.lance")])
    assert len(losses) == 3
    assert losses[-1] < 0.7 * losses[0]


def test_system_columns_are_read_as_the_dataset_reads_them(tmp_path):
    """``_rowid``, ``_rowaddr`` and the row version columns in ``columns`` (int64), with and
    without a filter, in the process and through DataLoader workers and the Loader: the values
    ``to_table`` gives."""
    uri = str(tmp_path / "sys.lance")
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(40, dtype=np.float32)), 2)
    lancepy.write_dataset(pa.table({"a": list(range(20)), "v": vectors}), uri, enable_stable_row_ids=True,
                          max_rows_per_file=8)
    lancepy.dataset(uri).update({"a": "a + 100"}, where="a % 5 = 0")
    system = ["_rowid", "_rowaddr", "_row_created_at_version", "_row_last_updated_at_version"]
    cols = ["a", *system, "v"]
    for flt in (None, "_row_last_updated_at_version > 1", "a > 50"):
        ds = LanceDataset(uri, columns=cols, filter=flt)
        want = lancepy.dataset(uri).to_table(columns=cols, filter=flt)
        batch = ds[list(range(len(ds)))]
        for c in cols[:-1]:
            assert batch[c].dtype == torch.int64
            assert batch[c].tolist() == want.column(c).to_pylist(), (flt, c)
        loader = DataLoader(ds, batch_size=3, num_workers=2, collate_fn=lancepy.torch.collate_fn)
        assert sorted(int(x) for b in loader for x in b["_rowid"]) == sorted(want.column("_rowid").to_pylist())
        got = sorted(int(x) for b in lancepy.torch.Loader(ds, batch_size=3) for x in b["_row_last_updated_at_version"])
        assert got == sorted(want.column("_row_last_updated_at_version").to_pylist())
    with pytest.raises(ColumnNotFoundError, match="system columns"):
        LanceDataset(uri, columns=["a", "_rowidd"])
