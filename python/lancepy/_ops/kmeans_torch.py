"""k-means in PyTorch on any device (pylance's ``lance.torch.kmeans.KMeans``): Lloyd's
algorithm over an in-memory sample, for training IVF centroids on a GPU or Apple silicon
(:func:`lancepy.vector.train_ivf_centroids_on_accelerator`). lancepy's own index builds
train with the native k-means (:func:`lancepy.util.KMeans`); this module needs ``torch``."""

from __future__ import annotations

from typing import Any, Iterable, List, Optional, Union

import numpy as np
import pyarrow as pa

from lancepy.exceptions import InvalidArgumentError, NotSupportedError

_METRICS = {"l2": "l2", "euclidean": "l2", "cosine": "cosine", "dot": "dot"}


def _torch() -> Any:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a test dependency
        raise NotSupportedError("lancepy.torch.kmeans needs PyTorch: pip install torch") from None
    return torch


def default_device() -> str:
    """The fastest device torch offers here: ``cuda``, then ``mps``, else ``cpu``."""
    torch = _torch()
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def normalize_metric(metric: str) -> str:
    m = _METRICS.get(str(metric).lower())
    if m is None:
        raise InvalidArgumentError(f"metric must be 'l2', 'cosine' or 'dot', got {metric!r}")
    return m


class KMeans:
    """k clusters of vectors, trained with Lloyd's algorithm in PyTorch on `device` (the
    fastest one here by default). `metric`: ``"l2"``, ``"cosine"`` (unit vectors, l2) or
    ``"dot"`` (largest inner product). `init`: ``"random"`` (k distinct rows of the data,
    drawn with `seed`). Training stops after `max_iters` passes, or when the centroids move
    less than `tolerance` relative to their norm. Rows holding NaN are left out of training
    and assigned ``-1``. `centroids` (k × dim) skip the initialization."""

    def __init__(
        self,
        k: int,
        *,
        metric: str = "l2",
        init: str = "random",
        max_iters: int = 50,
        tolerance: float = 1e-4,
        centroids: Any = None,
        seed: Optional[int] = None,
        device: Optional[Union[str, Any]] = None,
    ) -> None:
        torch = _torch()
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise InvalidArgumentError(f"k must be a positive int, got {k!r}")
        if init != "random":
            raise NotSupportedError(f"KMeans(init={init!r}): only 'random' is supported (as in pylance)")
        if isinstance(max_iters, bool) or not isinstance(max_iters, int) or max_iters < 0:
            raise InvalidArgumentError(f"max_iters must be a non-negative int, got {max_iters!r}")
        self.k = k
        self.metric = normalize_metric(metric)
        self.max_iters = max_iters
        self.tolerance = float(tolerance)
        self.seed = seed
        self.device = torch.device(device if device is not None else default_device())
        self.centroids: Optional[Any] = None
        self.total_distance: Optional[float] = None
        if centroids is not None:
            c = self._to_tensor(centroids)
            if c.shape[0] != k:
                raise InvalidArgumentError(f"centroids must have {k} rows, got {tuple(c.shape)}")
            self.centroids = self._prepare(c)

    def __repr__(self) -> str:
        return f"KMeans(k={self.k}, metric={self.metric!r}, device={self.device})"

    # -- data ---------------------------------------------------------------------------

    def _to_tensor(self, data: Any) -> Any:
        """A 2-D float32 tensor on the device from a tensor, numpy array, pyarrow
        fixed-size-list (or tensor) array, or a table / record batch of one such column."""
        torch = _torch()
        if isinstance(data, (pa.Table, pa.RecordBatch)):
            if data.num_columns != 1:
                raise InvalidArgumentError(f"KMeans takes one vector column, got {data.column_names}")
            data = data.column(0)
        if isinstance(data, pa.ChunkedArray):
            data = data.combine_chunks()
        if isinstance(data, pa.Array):
            if isinstance(data.type, pa.FixedShapeTensorType):
                data = data.storage
            if not pa.types.is_fixed_size_list(data.type):
                raise InvalidArgumentError(f"KMeans takes fixed-size lists of numbers, got {data.type}")
            dim = data.type.list_size
            values = data.flatten().to_numpy(zero_copy_only=False)
            mat = np.asarray(values, dtype=np.float32).reshape(-1, dim)
            if data.null_count:
                mat = mat.copy()
                mat[~np.asarray(data.is_valid())] = np.nan
            data = mat
        if isinstance(data, np.ndarray):
            data = torch.from_numpy(np.require(data, np.float32, ["C", "W"]))
        if not isinstance(data, torch.Tensor):
            raise InvalidArgumentError(f"KMeans takes a tensor, numpy array or pyarrow array, got {type(data).__name__}")
        if data.dim() != 2:
            raise InvalidArgumentError(f"KMeans takes a 2-D array of vectors, got shape {tuple(data.shape)}")
        return data.to(device=self.device, dtype=torch.float32)

    def _prepare(self, x: Any) -> Any:
        torch = _torch()
        return torch.nn.functional.normalize(x) if self.metric == "cosine" else x

    def _gather(self, data: Any, column: Optional[str]) -> Any:
        """Every vector of `data` (an array, or an iterable of batches: tensors, arrays,
        record batches or dicts of columns) as one tensor."""
        torch = _torch()
        if isinstance(data, (np.ndarray, pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch)) or isinstance(data, torch.Tensor):
            if column is not None and isinstance(data, (pa.Table, pa.RecordBatch)):
                data = data.select([column])
            return self._to_tensor(data)
        parts: List[Any] = []
        for batch in data if isinstance(data, Iterable) else []:
            if isinstance(batch, dict):
                if column is None and len(batch) != 1:
                    raise InvalidArgumentError(f"KMeans.fit: name the vector column of batches with columns {list(batch)}")
                batch = batch[column] if column is not None else next(iter(batch.values()))
            elif column is not None and isinstance(batch, (pa.Table, pa.RecordBatch)):
                batch = batch.select([column])
            parts.append(self._to_tensor(batch))
        if not parts:
            raise InvalidArgumentError("KMeans.fit: no data")
        return torch.cat(parts)

    # -- training -----------------------------------------------------------------------

    def _assign(self, x: Any) -> Any:
        """(nearest centroid, its distance) of each row of `x` (prepared)."""
        torch = _torch()
        if self.metric == "dot":
            scores = x @ self.centroids.T
            best, ids = scores.max(dim=1)
            return ids, -best
        d = torch.cdist(x, self.centroids)
        best, ids = d.min(dim=1)
        return ids, best * best

    def fit(self, data: Any, column: Optional[str] = None) -> "KMeans":
        """Trains on `data` (rows with NaN or nulls left out); returns this model."""
        torch = _torch()
        x = self._gather(data, column)
        x = x[~torch.isnan(x).any(dim=1)]
        if x.shape[0] < self.k:
            raise InvalidArgumentError(f"KMeans.fit: {x.shape[0]} usable vectors for k={self.k} clusters")
        x = self._prepare(x)
        if self.centroids is None:
            gen = torch.Generator(device="cpu")
            gen.manual_seed(int(self.seed) if self.seed is not None else int(np.random.default_rng().integers(1 << 62)))
            pick = torch.randperm(x.shape[0], generator=gen)[: self.k].to(self.device)
            self.centroids = x[pick].clone()
        elif self.centroids.shape[1] != x.shape[1]:
            raise InvalidArgumentError(f"centroids have {self.centroids.shape[1]} dimensions, the data {x.shape[1]}")
        for _ in range(self.max_iters):
            ids, dist = self._assign(x)
            self.total_distance = float(dist.sum())
            sums = torch.zeros_like(self.centroids).index_add_(0, ids, x)
            counts = torch.bincount(ids, minlength=self.k).to(x.dtype).unsqueeze(1)
            # An empty cluster keeps its centroid.
            new = torch.where(counts > 0, sums / counts.clamp(min=1), self.centroids)
            new = self._prepare(new)
            shift = float(torch.linalg.norm(new - self.centroids))
            scale = float(torch.linalg.norm(self.centroids)) or 1.0
            self.centroids = new
            if shift / scale < self.tolerance:
                break
        return self

    def transform(self, data: Any) -> Any:
        """The nearest centroid of each row of `data` (int64 tensor; ``-1`` for rows with NaN)."""
        torch = _torch()
        if self.centroids is None:
            raise InvalidArgumentError("KMeans.transform before fit (or centroids=)")
        x = self._to_tensor(data)
        bad = torch.isnan(x).any(dim=1)
        ids, _ = self._assign(self._prepare(torch.nan_to_num(x)))
        return torch.where(bad, torch.full_like(ids, -1), ids)
