"""lancepy.torch.kmeans.KMeans (pylance's torch k-means) and
lancepy.vector.train_ivf_centroids_on_accelerator, on the CPU device."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

torch = pytest.importorskip("torch")

import lancepy  # noqa: E402
from lancepy.exceptions import InvalidArgumentError, NotSupportedError  # noqa: E402
from lancepy.torch.kmeans import KMeans  # noqa: E402
from lancepy.vector import train_ivf_centroids_on_accelerator  # noqa: E402


def _blobs(seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(c, 0.1, (100, 8)) for c in (0.0, 5.0, 10.0)]).astype(np.float32)


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_fit_finds_separated_clusters_and_transform_assigns_them(metric):
    data = _blobs()
    if metric != "l2":
        data = data + np.array([1.0] + [0.0] * 7, np.float32) * np.arange(300, dtype=np.float32)[:, None] % 3
    km = KMeans(3, metric=metric, device="cpu", seed=2).fit(data)
    ids = km.transform(data).numpy()
    assert ids.shape == (300,) and set(ids) <= {0, 1, 2}
    if metric == "l2":
        # (random init may start two centroids in one cluster; from one row of each, Lloyd's
        # iterations find the clusters' means)
        start = torch.from_numpy(data[[3, 130, 270]] + 1.0)
        km2 = KMeans(3, device="cpu", centroids=start).fit(data)
        ids2 = km2.transform(data).numpy()
        assert [len(set(ids2[i * 100 : (i + 1) * 100])) for i in range(3)] == [1, 1, 1] and len(set(ids2)) == 3
        assert sorted(km2.centroids[:, 0].tolist()) == pytest.approx([0.0, 5.0, 10.0], abs=0.1)
    # the assignment is the nearest centroid by the metric
    c = km.centroids.numpy()
    x = data / np.linalg.norm(data, axis=1, keepdims=True) if metric == "cosine" else data
    want = np.argmax(x @ c.T, axis=1) if metric == "dot" else np.argmin(((x[:, None, :] - c[None]) ** 2).sum(-1), axis=1)
    assert (ids == want).mean() > 0.99


def test_rows_with_nan_get_minus_one_and_are_left_out_of_training():
    km = KMeans(4, centroids=torch.rand(4, 8), device="cpu")
    values = np.arange(64).astype(np.float32)
    values[8:16] = np.nan
    ids = km.transform(pa.FixedSizeListArray.from_arrays(pa.array(values), 8))
    assert ids[1] == -1 and all(ids[i] != -1 for i in range(8) if i != 1)
    data = _blobs()
    data[5] = np.nan
    KMeans(3, device="cpu", seed=1).fit(data)  # trains on the 299 others


def test_bad_arguments():
    with pytest.raises(InvalidArgumentError):
        KMeans(0)
    with pytest.raises(NotSupportedError):
        KMeans(2, init="kmeans++")
    with pytest.raises(InvalidArgumentError):
        KMeans(2, metric="hamming")
    with pytest.raises(InvalidArgumentError):
        KMeans(2, device="cpu").transform(np.zeros((2, 2), np.float32))
    with pytest.raises(InvalidArgumentError, match="usable vectors"):
        KMeans(5, device="cpu").fit(np.zeros((3, 2), np.float32))


def test_train_ivf_centroids_on_accelerator(tmp_path):
    data = _blobs(3)
    uri = str(tmp_path / "v.lance")
    ds = lancepy.write_dataset(pa.table({"vector": pa.FixedSizeListArray.from_arrays(pa.array(data.ravel()), 8)}), uri)
    centroids, km = train_ivf_centroids_on_accelerator(ds, "vector", 3, "l2", torch.device("cpu"))
    assert centroids.shape == (3, 8) and centroids.dtype == np.float32 and isinstance(km, KMeans)
    # usable as given centroids of a native index build
    ds.create_index("vector", "IVF_FLAT", num_partitions=3, ivf_centroids=centroids)
    assert lancepy.dataset(uri).to_table(nearest={"column": "vector", "q": data[0], "k": 1}).num_rows == 1
    with pytest.raises(InvalidArgumentError, match="only support 'cuda' or 'mps'"):
        train_ivf_centroids_on_accelerator(ds, "vector", 3, "l2", "cpu")
