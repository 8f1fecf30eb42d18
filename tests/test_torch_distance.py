"""pylance's ``lance.torch.distance``, ``lance.torch.bench_utils`` and
``lance.torch.preferred_device`` on lancepy, compared with pylance's on the same inputs
(CPU; CUDA where there is one)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

torch = pytest.importorskip("torch")
lance = pytest.importorskip("lance")
pl_torch = pytest.importorskip("lance.torch")
pl_distance = pytest.importorskip("lance.torch.distance")
pl_bench = pytest.importorskip("lance.torch.bench_utils")

import lancepy  # noqa: E402
from lancepy.exceptions import InvalidArgumentError  # noqa: E402
from lancepy.torch import bench_utils, distance, preferred_device  # noqa: E402

pytestmark = pytest.mark.torch

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _pair(seed=0, m=20, n=100, d=64, dtype=torch.float32):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.standard_normal((m, d))).to(dtype), torch.from_numpy(rng.random((n, d))).to(dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_pairwise_as_pylance(device):
    x, y = (t.to(device) for t in _pair())
    for name in ("pairwise_l2", "pairwise_cosine"):
        ours, theirs = getattr(distance, name)(x, y), getattr(pl_distance, name)(x, y)
        assert ours.shape == theirs.shape == (20, 100) and ours.dtype == theirs.dtype
        assert torch.allclose(ours.cpu(), theirs.cpu(), atol=1e-4)
    y2 = (y * y).sum(dim=1)
    assert torch.allclose(distance.pairwise_l2(x, y, y2).cpu(), pl_distance.pairwise_l2(x, y, y2).cpu(), atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_pairwise_l2_dtypes_as_pylance(dtype):
    x, y = _pair(d=32, dtype=dtype)
    ours, theirs = distance.pairwise_l2(x, y), pl_distance.pairwise_l2(x, y)
    assert ours.dtype == theirs.dtype == dtype
    assert torch.allclose(ours.float(), theirs.float(), rtol=1e-2, atol=1e-1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["l2_distance", "cosine_distance", "dot_distance"])
def test_nearest_as_pylance(device, name):
    x, y = (t.to(device) for t in _pair(seed=1, m=500, n=37))
    ids, dists = getattr(distance, name)(x, y)
    pl_ids, pl_dists = getattr(pl_distance, name)(x, y)
    assert ids.shape == pl_ids.shape == (500,) and ids.dtype == pl_ids.dtype
    assert (ids.cpu() == pl_ids.cpu()).float().mean() > 0.99  # ties at float precision may differ
    assert torch.allclose(dists.cpu(), pl_dists.cpu(), atol=1e-3)


def test_nearest_in_blocks_and_nans(monkeypatch):
    x, y = _pair(seed=2, m=1000, n=10)
    x[7] = float("nan")
    whole = distance.l2_distance(x, y)
    monkeypatch.setattr(distance, "_HOST_BLOCK_BYTES", 1)  # blocks of the minimum: 128 rows
    blocked = distance.l2_distance(x, y)
    theirs = pl_distance.l2_distance(x, y)
    for ours in (whole, blocked):
        assert ours[0][7] == theirs[0][7] == -1
        assert torch.equal(ours[0], theirs[0])
        assert torch.allclose(ours[1], theirs[1], atol=1e-3, equal_nan=True)
    empty_ids, empty_dists = distance.l2_distance(x[:0], y)
    assert empty_ids.shape == empty_dists.shape == (0,)


def test_refusals():
    x, y = _pair()
    with pytest.raises(ValueError):
        pl_distance.pairwise_l2(x[0], y)
    for call in (
        lambda: distance.pairwise_l2(x[0], y),
        lambda: distance.pairwise_cosine(x, y[:, :3]),
        lambda: distance.pairwise_l2(x, y.double()),
        lambda: distance.l2_distance(x.numpy(), y),
        lambda: distance.cosine_distance(x, y[0]),
        lambda: preferred_device(3),
        lambda: preferred_device("no-such-device"),
        lambda: bench_utils.sort_tensors(x, y, 3),
    ):
        with pytest.raises(InvalidArgumentError):
            call()


def test_preferred_device_as_pylance():
    assert preferred_device() == pl_torch.preferred_device()
    for spec in ("cpu", "cuda:1", torch.device("cpu")):
        assert preferred_device(spec) == pl_torch.preferred_device(spec)


def test_sort_tensors_as_pylance():
    values = torch.tensor([[5, 7, 3, 9, 1], [10, 2, 4, 6, 8]], dtype=torch.float32)
    ids = torch.arange(10).reshape(2, 5)
    for a, b in zip(bench_utils.sort_tensors(values, ids, 3), pl_bench.sort_tensors(values, ids, 3)):
        assert torch.equal(a, b)


@pytest.mark.parametrize("metric", ["L2", "cosine"])
def test_ground_truth_as_pylance(tmp_path, metric):
    rng = np.random.default_rng(3)
    n, dim = 1000, 16
    data = rng.random((n, dim)).astype(np.float32)
    table = pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(data.reshape(-1)), dim), "id": range(n)})
    ours = lancepy.write_dataset(table, tmp_path / "ours", max_rows_per_file=300)
    theirs = lance.write_dataset(table, tmp_path / "theirs", max_rows_per_file=300)
    ours.delete("id % 10 = 0")
    theirs.delete("id % 10 = 0")
    queries = data[rng.choice(n, 12)]
    got = bench_utils.ground_truth(ours, "vec", queries, metric_type=metric, k=7, batch_size=128, device="cpu")
    want = pl_bench.ground_truth(theirs, "vec", queries, metric_type=metric, k=7, batch_size=128, device="cpu")
    assert got.shape == want.shape == (12, 7)
    assert torch.equal(torch.sort(got, 1).values, torch.sort(want, 1).values)
    with pytest.raises(InvalidArgumentError, match="Unknown metric type"):
        bench_utils.ground_truth(ours, "vec", queries, metric_type="hamming")
    with pytest.raises(InvalidArgumentError, match="not a vector column"):
        bench_utils.ground_truth(ours, "id", queries)
