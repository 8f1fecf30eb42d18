"""pylance's torch API on lancepy (issue 24): ``lancepy.sampler`` against ``lance.sampler`` and
``lancepy.torch.data`` against ``lance.torch.data``, iterated side by side on the same dataset
(written once): single process, real DataLoaders with 2 worker processes, rank / world size
sharding. Batches are compared exactly (shapes, dtypes, values, order) where pylance's order
is deterministic, as multisets where it is not; random samplers by their properties."""

from __future__ import annotations

import collections
import subprocess
import sys
import warnings

import numpy as np
import pyarrow as pa
import pytest

torch = pytest.importorskip("torch")
lance = pytest.importorskip("lance")
import lance.sampler as pl_sampler  # noqa: E402
import lance.torch.data as pl_data  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

import lancepy  # noqa: E402
import lancepy.sampler as lp_sampler  # noqa: E402
import lancepy.torch.data as lp_data  # noqa: E402
from lancepy.exceptions import InvalidArgumentError, NotSupportedError  # noqa: E402
from lancepy.torch import NullValuesError  # noqa: E402

pytestmark = pytest.mark.torch

ROWS = 1000


@pytest.fixture(autouse=True)
def _quiet():
    # pylance warns on every ShardedBatchSampler call and about read-only NumPy arrays.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.fixture(scope="module")
def uri(tmp_path_factory) -> str:
    """1,000 rows in fragments of 300, 300, 300, 100; ids with ``id % 7 == 3`` deleted."""
    path = str(tmp_path_factory.mktemp("pyl") / "data.lance")
    ids = np.arange(ROWS, dtype=np.int64)
    table = pa.table(
        {
            "id": ids,
            "x": (ids * 0.5).astype(np.float32),
            "v": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(ROWS * 4, dtype=np.float32)), 4),
            "u": pa.array(ids.astype(np.uint64)),
            "flag": pa.array(ids % 3 == 0),
            "f": pa.array([None if i % 11 == 0 else i / 4 for i in range(ROWS)], pa.float64()),
            "name": pa.array([f"row {i}" for i in range(ROWS)]),
        }
    )
    lancepy.write_dataset(table, path, max_rows_per_file=300)
    lancepy.dataset(path).delete("id % 7 = 3")
    return path


@pytest.fixture(scope="module")
def both(uri):
    return lance.dataset(uri), lancepy.dataset(uri)


LIVE = sorted(i for i in range(ROWS) if i % 7 != 3)
NUMERIC = ["id", "x", "v", "u", "flag", "f"]


# ----------------------------------------------------------------------------------------
# helpers


def _rb_rows(b: pa.RecordBatch) -> tuple:
    return tuple(map(tuple, zip(*(b.column(i).to_pylist() for i in range(b.num_columns)))))


def _canon(out) -> tuple:
    """A yielded batch (tensor, dict of tensors, record batch) as comparable values."""
    if isinstance(out, pa.RecordBatch):
        return ("rb", tuple(out.schema.names), _rb_rows(out))
    if isinstance(out, torch.Tensor):
        vals = out.tolist()
        vals = [("nan" if isinstance(v, float) and np.isnan(v) else v) for v in vals] if out.dim() == 1 else vals
        return (tuple(out.shape), str(out.dtype), repr(vals))
    return tuple(sorted((k, _canon(v)) for k, v in out.items()))


def _ids(out) -> list:
    if isinstance(out, pa.RecordBatch):
        return out.column("id").to_pylist()
    t = out if isinstance(out, torch.Tensor) else out["id"]
    return t.tolist()


def _sampled(sampler, ds, **kw) -> list:
    return [_rb_rows(b) for b in sampler(ds, **kw)]


# ----------------------------------------------------------------------------------------
# lancepy.sampler


def test_sampler_module_does_not_import_torch():
    code = "import sys, lancepy, lancepy.sampler; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


SAMPLERS = {
    "full": lambda m: m.FullScanSampler(),
    "fragment-r1": lambda m: m.ShardedFragmentSampler(1, 2),
    "fragment-random": lambda m: m.ShardedFragmentSampler(0, 2, randomize=True, seed=3),
    "batch-r1": lambda m: m.ShardedBatchSampler(1, 3),
    "batch-random": lambda m: m.ShardedBatchSampler(2, 3, randomize=True, seed=5),
}
READS = [
    {"batch_size": 64, "columns": ["id"]},
    {"batch_size": 64, "columns": ["id", "v"], "filter": "id > 500"},
    {"batch_size": 50, "columns": ["x", "id"], "filter": "x < 100"},
    {"batch_size": 1000, "columns": ["id"]},
    {"batch_size": 7, "columns": ["id", "flag"], "filter": "flag"},
]


@pytest.mark.parametrize("read", READS, ids=lambda r: f"bs{r['batch_size']}-{r.get('filter')}")
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_samplers_yield_pylances_batches(both, name, read):
    pl, lp = both
    theirs = _sampled(SAMPLERS[name](pl_sampler), pl, **read)
    ours = _sampled(SAMPLERS[name](lp_sampler), lp, **read)
    if name == "batch-random" and "filter" in read:
        # pylance shuffles the filtered batches through a bounded heap; lancepy shuffles them
        # all: the same batches, another order.
        assert sorted(ours) == sorted(theirs)
    else:
        assert ours == theirs


def test_fragment_sampler_row_ids_match_pylance(both):
    pl, lp = both
    kw = {"batch_size": 100, "columns": ["id"], "with_row_id": True, "filter": "id > 250"}
    assert _sampled(pl_sampler.ShardedFragmentSampler(0, 2), pl, **kw) == _sampled(
        lp_sampler.ShardedFragmentSampler(0, 2), lp, **kw
    )


def test_batch_sampler_drops_with_row_id_as_pylance_but_warns(both):
    """pylance's ShardedBatchSampler drops with_row_id (warning only without a filter);
    lancepy's returns the same batches and warns in both cases."""
    pl, lp = both
    for flt in (None, "id > 100"):
        kw = {"batch_size": 32, "columns": ["id"], "with_row_id": True, "filter": flt}
        with pytest.warns(UserWarning, match="with_row_id is not supported for ShardedBatchSampler"):
            ours = _sampled(lp_sampler.ShardedBatchSampler(0, 2), lp, **kw)
        assert ours == _sampled(pl_sampler.ShardedBatchSampler(0, 2), pl, **kw)


@pytest.mark.parametrize("world", [1, 2, 3, 5])
@pytest.mark.parametrize("flt", [None, "id % 2 = 0"])
@pytest.mark.parametrize("kind", ["fragment", "batch"])
def test_ranks_together_read_every_row_once(both, world, flt, kind):
    _, lp = both
    cls = lp_sampler.ShardedFragmentSampler if kind == "fragment" else lp_sampler.ShardedBatchSampler
    got = []
    for rank in range(world):
        for b in cls(rank, world, randomize=True, seed=1)(lp, batch_size=40, columns=["id"], filter=flt):
            assert 0 < b.num_rows <= 40
            got += b.column("id").to_pylist()
    expect = [i for i in LIVE if flt is None or i % 2 == 0]
    assert sorted(got) == expect


def test_set_epoch_reshuffles_and_epoch_zero_is_pylances(both):
    pl, lp = both
    for cls in ("ShardedFragmentSampler", "ShardedBatchSampler"):
        ours = getattr(lp_sampler, cls)(0, 1, randomize=True, seed=7)
        theirs = getattr(pl_sampler, cls)(0, 1, randomize=True, seed=7)
        kw = {"batch_size": 40, "columns": ["id"]}
        first = _sampled(ours, lp, **kw)
        assert first == _sampled(theirs, pl, **kw)
        assert first == _sampled(ours, lp, **kw)  # deterministic
        ours.set_epoch(1)
        second = _sampled(ours, lp, **kw)
        assert second != first and sorted(second) == sorted(first)


@pytest.mark.parametrize("randomize", [False, True])
@pytest.mark.parametrize("world, total, bs", [(1, 100, 10), (4, 1000, 100), (3, 10, 4), (4, 3, 2)])
def test_fixed_batch_sampler_matches_pylance(randomize, world, total, bs):
    covered = []
    for rank in range(world):
        ours = lp_sampler.ShardedFixedBatchSampler(rank, world, randomize, 11, bs, total)
        theirs = pl_sampler.ShardedFixedBatchSampler(rank, world, randomize, 11, bs, total)
        for epoch in (0, 3):
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs)
        assert len(ours) == len(list(ours))
        covered += [i for b in ours for i in b]
    assert sorted(covered) == list(range(total))


def test_maybe_sample_is_seeded_by_numpy_and_draws_distinct_rows(both, uri):
    pl, lp = both
    for n, max_takes in [(50, 2048), (300, 16), (301, 7)]:
        np.random.seed(4)
        ours = [
            b.column("id").to_pylist()
            for b in lp_sampler.maybe_sample(lp, n, ["id"], batch_size=64, max_takes=max_takes)
        ]
        np.random.seed(4)
        again = [
            b.column("id").to_pylist()
            for b in lp_sampler.maybe_sample(uri, n, "id", batch_size=64, max_takes=max_takes)
        ]
        assert ours == again
        flat = [i for b in ours for i in b]
        assert len(flat) == n == len(set(flat)) and set(flat) <= set(LIVE)
        assert [len(b) for b in ours] == [64] * (n // 64) + ([n % 64] if n % 64 else [])
        np.random.seed(4)
        theirs = [
            i
            for b in pl_sampler.maybe_sample(pl, n, ["id"], batch_size=64, max_takes=max_takes)
            for i in b.column("id").to_pylist()
        ]
        assert len(set(theirs)) == len(theirs) and set(theirs) <= set(LIVE)
        if n <= max_takes:  # pylance draws exactly n rows only in this case
            assert len(theirs) == n
        else:  # runs of consecutive live rows spread over the whole dataset
            assert max(flat) > 800 and min(flat) < 200
    # n covering the dataset: every row, in order (as pylance's full scan)
    assert [i for b in lp_sampler.maybe_sample(lp, ROWS, ["id"]) for i in b.column("id").to_pylist()] == LIVE


def test_maybe_sample_with_any_filter(both):
    pl, lp = both
    np.random.seed(0)
    got = [i for b in lp_sampler.maybe_sample(lp, 40, ["id"], filt="id % 5 = 1") for i in b.column("id").to_pylist()]
    assert len(got) == len(set(got)) == 40 and all(i % 5 == 1 and i % 7 != 3 for i in got)
    with pytest.raises(NotImplementedError):  # pylance only runs "<column> is not null"
        list(pl_sampler.maybe_sample(pl, 40, ["id"], filt="id % 5 = 1"))
    few = [i for b in lp_sampler.maybe_sample(lp, 40, ["id"], filt="id < 10") for i in b.column("id").to_pylist()]
    assert sorted(few) == [i for i in LIVE if i < 10]


def test_maybe_sample_is_uniform(both):
    _, lp = both
    counts = collections.Counter()
    np.random.seed(1)
    for _ in range(200):
        for b in lp_sampler.maybe_sample(lp, 100, ["id"]):
            counts.update(b.column("id").to_pylist())
    expected = 200 * 100 / len(LIVE)
    freq = np.array([counts[i] for i in LIVE])
    chi2 = float(((freq - expected) ** 2 / expected).sum())
    assert len(LIVE) * 0.8 < chi2 < len(LIVE) * 1.2  # ~ chi-square with len(LIVE) - 1 dof


def test_reservoir_sampling():
    assert sorted(lp_sampler.reservoir_sampling(range(5), 10)) == list(range(5))
    counts = collections.Counter()
    for _ in range(3000):
        s = lp_sampler.reservoir_sampling(iter(range(20)), 5)
        assert len(set(s)) == 5
        counts.update(s)
    assert all(abs(counts[i] - 750) < 120 for i in range(20))  # each item kept with p = 5/20


def test_sampler_argument_errors(both):
    _, lp = both
    with pytest.raises(InvalidArgumentError):
        lp_sampler.ShardedFragmentSampler(2, 2)
    with pytest.raises(InvalidArgumentError):
        lp_sampler.ShardedBatchSampler(0, 0)
    with pytest.raises(NotSupportedError, match="shuffle"):
        list(lp_sampler.FullScanSampler()(lp, shuffle=True))
    with pytest.raises(NotSupportedError):
        list(lp_sampler.ShardedBatchSampler(0, 1)(lp, "extra"))
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        list(lp_sampler.FullScanSampler()(lp, batch_size=0))
    with pytest.raises(InvalidArgumentError, match="torch.distributed"):
        lp_sampler.ShardedBatchSampler.from_torch()
    assert issubclass(lp_sampler.FullScanSampler, lp_sampler.Sampler)


# ----------------------------------------------------------------------------------------
# lancepy.torch.data.LanceDataset: single process


DATASET_ARGS = [
    {"to_tensor_fn": None},  # every column, as record batches
    {"columns": NUMERIC},
    {"columns": ["id"]},
    {"columns": ["v", "id"], "with_row_id": True},
    {"columns": ["id", "x"], "shard_granularity": "batch"},
    {"columns": ["id", "u"], "shard_granularity": "fragment"},
    {"columns": ["id", "v"], "rank": 1, "world_size": 2},
    {"columns": ["id"], "rank": 2, "world_size": 3, "shard_granularity": "batch"},
    {"columns": ["id", "f"], "filter": "id > 500"},
    {"columns": ["id", "x"], "filter": "id > 500", "shard_granularity": "batch"},
    {"columns": ["id", "flag"], "batch_readahead": 1},
    {"columns": ["id", "x"], "to_tensor_fn": None},
    {"columns": ["id"], "sampler": "fragment-random"},
    {"columns": ["id"], "auto_detect_rank": False},
]


def _make(module, ds, batch_size, kw):
    kw = dict(kw)
    if isinstance(kw.get("sampler"), str):
        kw["sampler"] = SAMPLERS[kw["sampler"]](pl_sampler if module is pl_data else lp_sampler)
    return module.LanceDataset(ds, batch_size, **kw)


@pytest.mark.parametrize("batch_size", [64, 1000])
@pytest.mark.parametrize("kw", DATASET_ARGS, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()) or "default")
def test_dataset_yields_pylances_batches(both, uri, kw, batch_size):
    pl, _ = both
    theirs = [_canon(b) for b in _make(pl_data, pl, batch_size, kw)]
    ours = [_canon(b) for b in _make(lp_data, uri, batch_size, kw)]
    assert ours == theirs


def test_dataset_of_a_lancepy_dataset_object(both):
    pl, lp = both
    ours = [_canon(b) for b in lp_data.LanceDataset(lp, 100, columns=["id", "v"])]
    assert ours == [_canon(b) for b in pl_data.LanceDataset(pl, 100, columns=["id", "v"])]


def test_auto_detected_distributed_rank_matches_pylance(both, uri, monkeypatch):
    pl, _ = both
    monkeypatch.setattr(torch.distributed, "is_available", lambda: True)
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda *a, **k: 1)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda *a, **k: 3)
    for extra in ({}, {"shard_granularity": "batch"}):
        theirs = [_canon(b) for b in pl_data.LanceDataset(pl, 50, columns=["id"], **extra)]
        ours = [_canon(b) for b in lp_data.LanceDataset(uri, 50, columns=["id"], **extra)]
        assert ours == theirs


def test_samples_match_pylances_shape_and_are_seeded(both, uri):
    pl, _ = both
    np.random.seed(3)
    ours = [_ids(b) for b in lp_data.LanceDataset(uri, 64, columns=["id"], samples=300)]
    np.random.seed(3)
    assert [_ids(b) for b in lp_data.LanceDataset(uri, 64, columns=["id"], samples=300)] == ours
    theirs = [_ids(b) for b in pl_data.LanceDataset(pl, 64, columns=["id"], samples=300)]
    assert [len(b) for b in ours] == [len(b) for b in theirs] == [64] * 4 + [44]
    flat = [i for b in ours for i in b]
    assert len(set(flat)) == 300 and set(flat) <= set(LIVE)
    with_ids = next(iter(lp_data.LanceDataset(uri, 64, columns=["id"], samples=10, with_row_id=True)))
    assert set(with_ids) == {"id", "_rowid"}


def test_cache_replays_the_first_pass(uri, both, tmp_path):
    pl, _ = both
    for module, ds in ((pl_data, pl), (lp_data, uri)):
        data = module.LanceDataset(ds, 64, columns=["id"], samples=200, cache=str(tmp_path))
        first = [_ids(b) for b in data]
        assert [_ids(b) for b in data] == first  # the same sample again: replayed
    ours = lp_data.LanceDataset(uri, 64, columns=["id"], samples=200, cache=True)
    it = iter(ours)
    next(it)
    it.close()  # an interrupted first pass is not replayed: the next pass reads (and records) again
    full = [_ids(b) for b in ours]
    assert sum(map(len, full)) == 200 and [_ids(b) for b in ours] == full


def test_default_to_tensor_matches_pylance_conversions(both):
    pl, lp = both
    batch = lp.take(list(range(0, 40, 3)), columns=NUMERIC).to_batches()[0]
    ours, theirs = lp_data._to_tensor(batch), pl_data._to_tensor(batch)
    assert set(ours) == set(theirs)
    for k in ours:
        assert ours[k].dtype == theirs[k].dtype and ours[k].shape == theirs[k].shape, k
        assert torch.equal(torch.nan_to_num(ours[k].double()), torch.nan_to_num(theirs[k].double())), k
    assert torch.isnan(ours["f"][0])  # float nulls -> NaN, as pylance
    with pytest.raises(ValueError):
        pl_data._to_tensor(lp.take([0], columns=["name"]).to_batches()[0])
    with pytest.raises(ValueError):
        next(iter(pl_data.LanceDataset(pl, 10)))  # the string column
    with pytest.raises(ValueError, match="name"):
        next(iter(lp_data.LanceDataset(lp, 10)))
    with pytest.raises(InvalidArgumentError, match="name"):
        lp_data._to_tensor(lp.take([0], columns=["name"]).to_batches()[0])
    nulls = pa.record_batch({"a": pa.array([1, None], pa.int64()), "b": pa.array([1, 2])})
    with pytest.raises(NullValuesError):
        lp_data._to_tensor(nulls)


def test_custom_to_tensor_fn_gets_pylances_keywords(uri):
    seen = []

    def fn(batch, *, hf_converter=None, use_blob_api=False):
        seen.append((hf_converter, use_blob_api))
        return batch.num_rows

    assert sum(lp_data.LanceDataset(uri, 100, columns=["name"], to_tensor_fn=fn)) == len(LIVE)
    assert set(seen) == {(None, False)}


def test_blob_columns_come_as_blob_files(tmp_path):
    blob = pa.field("image", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    values = [bytes([i]) * (i * 37 % 500) for i in range(30)]
    table = pa.table(
        {"id": pa.array(range(30), pa.int64()), "image": pa.array(values, pa.large_binary())},
        schema=pa.schema([pa.field("id", pa.int64()), blob]),
    )
    path = str(tmp_path / "blobs")
    lancepy.write_dataset(table, path, max_rows_per_file=12)

    def read(batch, *, hf_converter=None, use_blob_api=False):
        assert use_blob_api
        return batch["id"].to_pylist(), [f.read() for f in batch["image"]], batch["_rowid"]

    got = list(lp_data.LanceDataset(path, 8, to_tensor_fn=read))
    assert [i for ids, _, _ in got for i in ids] == list(range(30))
    assert [v for _, vs, _ in got for v in vs] == values
    # a batch sampler drops row ids asked for (as pylance's), but still fetches blobs by them
    for flt in (None, "id >= 0"):
        sampler = lp_sampler.ShardedBatchSampler(0, 1)
        got = list(lp_data.LanceDataset(path, 8, to_tensor_fn=read, sampler=sampler, filter=flt))
        assert [v for _, vs, _ in got for v in vs] == values
    with pytest.raises(NotSupportedError, match="image"):
        next(iter(lp_data.LanceDataset(path, 8)))


def test_dataset_argument_errors(uri, both):
    _, lp = both
    with pytest.raises(NotSupportedError, match="shuffle"):
        lp_data.LanceDataset(uri, 8, shuffle=True)
    with pytest.raises(NotSupportedError):
        lp_data.LanceDataset(uri, 8, "extra")
    with pytest.raises(NotSupportedError, match="rank"):
        lp_data.LanceDataset(uri, 8, samples=5, rank=0, world_size=2)
    with pytest.raises(InvalidArgumentError, match="shard_granularity"):
        lp_data.LanceDataset(uri, 8, shard_granularity="row")
    with pytest.raises(InvalidArgumentError, match="dataset_options"):
        lp_data.LanceDataset(lp, 8, dataset_options={"version": 1})
    with pytest.raises(InvalidArgumentError, match="rank"):
        lp_data.LanceDataset(uri, 8, rank=3, world_size=2)
    with pytest.raises(InvalidArgumentError, match="both"):
        lp_data.LanceDataset(uri, 8, rank=0, auto_detect_rank=False)
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        lp_data.LanceDataset(uri, 0)
    with pytest.raises(InvalidArgumentError, match="batch_readahead"):  # pylance's scanner: ValueError
        lp_data.LanceDataset(uri, 8, batch_readahead=0)
    old = lp_data.LanceDataset(uri, 1000, columns=["id"], dataset_options={"version": 1})
    assert sum(len(_ids(b)) for b in old) == ROWS  # version 1: before the delete


# ----------------------------------------------------------------------------------------
# Real DataLoaders with 2 worker processes. pylance's workers are spawned: a pylance worker
# forked after its parent ran a take_scan (ShardedBatchSampler) crashes or hangs.

FORK, SPAWN = "fork", "spawn"


def _loader(data, context, workers=2):
    return DataLoader(data, batch_size=None, num_workers=workers, multiprocessing_context=context)


def _loader_batches(data, context=FORK):
    return [_canon(b) for b in _loader(data, context)]


@pytest.mark.parametrize(
    "kw, our_context",
    [
        ({"columns": ["id", "v"]}, SPAWN),
        ({"columns": ["id", "x"], "shard_granularity": "batch", "filter": "id % 3 = 0"}, FORK),
    ],
    ids=["fragments", "batches-filtered"],
)
def test_dataloader_workers_share_out_rows_like_pylance(both, uri, kw, our_context):
    pl, _ = both
    theirs = _loader_batches(pl_data.LanceDataset(pl, 64, **kw), SPAWN)
    ours = _loader_batches(lp_data.LanceDataset(uri, 64, **kw), our_context)
    assert sorted(ours) == sorted(theirs)
    ids = sorted(i for b in _loader(lp_data.LanceDataset(uri, 64, **kw), FORK) for i in _ids(b))
    assert ids == [i for i in LIVE if "filter" not in kw or i % 3 == 0]


def _shard_ids(module, ds, workers, context=FORK, **kw):
    data = module.LanceDataset(ds, 50, columns=["id"], shard_granularity="batch", **kw)
    batches = data if not workers else _loader(data, context, workers)
    return sorted(i for b in batches for i in _ids(b))


def test_dataloader_workers_split_an_explicit_rank(both, uri):
    """Explicit rank / world_size: lancepy splits the rank's share between the workers (worker
    ``w`` of ``W`` reads shard ``rank * W + w`` of ``world_size * W``, as auto-detection does);
    pylance gives each worker the whole share (every row twice with 2 workers)."""
    pl, _ = both
    theirs = _shard_ids(pl_data, pl, 2, SPAWN, rank=1, world_size=2)
    ranks = [_shard_ids(lp_data, uri, 2, rank=r, world_size=2) for r in (0, 1)]
    assert sorted(ranks[0] + ranks[1]) == LIVE
    expect = sorted(_shard_ids(pl_data, pl, 0, rank=2, world_size=4) + _shard_ids(pl_data, pl, 0, rank=3, world_size=4))
    assert ranks[1] == expect
    assert theirs == sorted(_shard_ids(lp_data, uri, 0, rank=1, world_size=2) * 2)
    # pylance's behaviour on request
    assert _shard_ids(lp_data, uri, 2, rank=1, world_size=2, auto_detect_rank=False) == theirs


def test_dataloader_workers_under_torch_distributed(both, uri, monkeypatch):
    """Rank 1 of 2 (torch.distributed, faked; forked workers inherit it) with 2 workers: worker
    ``w`` reads shard ``2 + w`` of 4, as pylance's workers do (its formula, run in-process
    here: pylance's forked workers are not safe)."""
    pl, _ = both
    for extra in ({}, {"shard_granularity": "batch"}):
        theirs = []
        for shard in (2, 3):
            theirs += [
                _canon(b) for b in pl_data.LanceDataset(pl, 40, columns=["id", "x"], rank=shard, world_size=4, **extra)
            ]
        with monkeypatch.context() as m:
            m.setattr(torch.distributed, "is_available", lambda: True)
            m.setattr(torch.distributed, "is_initialized", lambda: True)
            m.setattr(torch.distributed, "get_rank", lambda *a, **k: 1)
            m.setattr(torch.distributed, "get_world_size", lambda *a, **k: 2)
            ours = _loader_batches(lp_data.LanceDataset(uri, 40, columns=["id", "x"], **extra))
        assert sorted(ours) == sorted(theirs) and ours


def test_dataloader_samples_per_worker_like_pylance(both, uri):
    """samples= draws in every process: each of 2 workers yields its own 100 rows, as pylance."""
    pl, _ = both

    def sizes(data, context):
        return sorted(len(_ids(b)) for b in _loader(data, context))

    ours = sizes(lp_data.LanceDataset(uri, 64, columns=["id"], samples=100), FORK)
    assert ours == sizes(pl_data.LanceDataset(pl, 64, columns=["id"], samples=100), SPAWN) == [36, 36, 64, 64]


def test_safe_dataset_and_loader_match_pylance(tmp_path):
    uri = str(tmp_path / "safe.lance")
    ids = np.arange(300, dtype=np.int64)
    table = pa.table(
        {
            "id": ids,
            "v": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(600, dtype=np.float32)), 2),
            "name": [f"n{i}" for i in ids],
        }
    )
    lancepy.write_dataset(table, uri, max_rows_per_file=100)
    ours, theirs = lp_data.SafeLanceDataset(uri), pl_data.SafeLanceDataset(uri)
    assert len(ours) == len(theirs) == 300
    assert ours[5] == theirs[5]
    assert ours.__getitems__([9, 2, 250]) == theirs.__getitems__([9, 2, 250])
    loader = lp_data.get_safe_loader(ours, batch_size=128, num_workers=2)
    assert loader.multiprocessing_context.get_start_method() == "spawn" and loader.persistent_workers
    got = list(loader)
    expect = list(DataLoader(theirs, batch_size=128, num_workers=0))
    assert len(got) == len(expect) == 3
    for a, b in zip(got, expect):
        assert torch.equal(a["id"], b["id"]) and a["name"] == b["name"]
        assert all(torch.equal(x, y) for x, y in zip(a["v"], b["v"]))
    with pytest.raises(NotSupportedError):
        lp_data.SafeLanceDataset(uri, extra=1)
