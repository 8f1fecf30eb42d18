"""Exact nearest neighbours for benchmarks (pylance's ``lance.torch.bench_utils``):
:func:`ground_truth` scans a vector column once and keeps, for each query, the row ids of
the `k` nearest vectors, on any torch device."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np
import pyarrow as pa
import torch

from lancepy.exceptions import InvalidArgumentError

from ._convert import _from_numpy
from .devices import preferred_device
from .distance import pairwise_cosine, pairwise_l2

__all__ = ["ground_truth", "sort_tensors"]


def sort_tensors(source: torch.Tensor, other: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """The `k` smallest values of each row of `source` ``[M, N]``, ascending, and the
    values of `other` (same shape) at the same places."""
    if source.shape != other.shape:
        raise InvalidArgumentError(f"sort_tensors: shapes differ: {tuple(source.shape)} and {tuple(other.shape)}")
    values, order = torch.sort(source, dim=1)
    order = order[:, :k]
    return values[:, :k], torch.gather(other, 1, order)


def _vectors(column: Any, name: str) -> torch.Tensor:
    """A fixed-size-list column as a ``[rows, dim]`` tensor (zero-copy when it can)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not pa.types.is_fixed_size_list(column.type):
        raise InvalidArgumentError(f"ground_truth: column {name!r} is not a vector column ({column.type})")
    if column.null_count:
        raise InvalidArgumentError(f"ground_truth: column {name!r} holds null vectors")
    dim = column.type.list_size
    values = column.flatten().to_numpy(zero_copy_only=False)
    return _from_numpy(np.ascontiguousarray(values).reshape(-1, dim))


def ground_truth(
    ds: Any,
    column: str,
    query: Any,
    metric_type: str = "L2",
    k: int = 100,
    batch_size: int = 10240,
    device: Optional[str] = None,
) -> torch.Tensor:
    """The row ids (``[queries, k]``, nearest first) of the `k` vectors of `column` in
    `ds` nearest to each row of `query` (a ``[queries, dim]`` tensor or array) by
    `metric_type` (``"L2"``, squared, or ``"cosine"``), reading `batch_size` rows at a time
    and computing on `device` (default: :func:`preferred_device`)."""
    metric = str(metric_type).lower()
    if metric not in ("l2", "cosine"):
        raise InvalidArgumentError(f"Unknown metric type: {metric_type}")
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InvalidArgumentError(f"k must be a positive int, got {k!r}")
    dev = preferred_device(device)
    if isinstance(query, np.ndarray):
        query = torch.from_numpy(query)
    if not isinstance(query, torch.Tensor) or query.dim() != 2:
        raise InvalidArgumentError("query must be a 2-D tensor or array of query vectors")
    query = query.to(dev)
    best_ids: Optional[torch.Tensor] = None
    best_dists: Optional[torch.Tensor] = None
    for batch in ds.to_batches(columns=[column], with_row_id=True, batch_size=batch_size):
        if batch.num_rows == 0:
            continue
        vectors = _vectors(batch.column(column), column).to(dev)
        row_ids = torch.from_numpy(batch.column("_rowid").to_numpy().astype(np.int64)).to(dev)
        row_ids = row_ids.broadcast_to((query.shape[0], -1))
        dists = pairwise_l2(query, vectors) if metric == "l2" else pairwise_cosine(query, vectors)
        dists, row_ids = sort_tensors(dists, row_ids, k)
        if best_ids is not None:
            dists, row_ids = torch.cat([best_dists, dists], 1), torch.cat([best_ids, row_ids], 1)
        best_dists, best_ids = sort_tensors(dists, row_ids, k)
    if best_ids is None:
        return torch.empty((query.shape[0], 0), dtype=torch.int64, device=dev)
    return best_ids
