"""Distances between sets of vectors on any torch device (pylance's ``lance.torch.distance``):
all pairs (:func:`pairwise_l2`, :func:`pairwise_cosine`) and each vector's nearest centroid
(:func:`l2_distance`, :func:`cosine_distance`, :func:`dot_distance`).

The nearest-centroid functions never hold the whole ``[N, M]`` distance matrix: they work
on row blocks sized to the memory free (CUDA) or to a fixed budget (other devices), and
halve the block when CUDA runs out of memory. L2 distances are squared, as pylance's are.
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

import torch

from lancepy.exceptions import InvalidArgumentError

__all__ = ["cosine_distance", "dot_distance", "l2_distance", "pairwise_cosine", "pairwise_l2"]

#: Bytes of distances one block may hold off CUDA (a block is ``rows x centroids`` floats).
_HOST_BLOCK_BYTES = 512 << 20

#: Below this many rows per block, running out of CUDA memory is an error.
_MIN_BLOCK_ROWS = 128


def _check_matrices(x: torch.Tensor, y: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise InvalidArgumentError(f"x and y must be torch tensors, got {type(x).__name__} and {type(y).__name__}")
    if x.dim() != 2 or y.dim() != 2:
        raise InvalidArgumentError(f"x and y must be 2-D matrices, got shapes {tuple(x.shape)} and {tuple(y.shape)}")
    if x.shape[1] != y.shape[1]:
        raise InvalidArgumentError(f"x and y have different dimensions: {x.shape[1]} and {y.shape[1]}")


def _computable(*tensors: Optional[torch.Tensor]) -> Tuple[Optional[torch.Tensor], ...]:
    """Half-precision tensors on the CPU as float32 (the CPU has no half matrix product)."""
    return tuple(
        t.float() if t is not None and t.device.type == "cpu" and t.dtype in (torch.float16, torch.bfloat16) else t
        for t in tensors
    )


def pairwise_l2(x: torch.Tensor, y: torch.Tensor, y2: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Squared L2 distances ``[M, N]`` between the rows of `x` ``[M, D]`` and of `y`
    ``[N, D]``, in `x`'s dtype; `y2` is ``(y * y).sum(1)`` if already known."""
    _check_matrices(x, y)
    if x.dtype != y.dtype or (y2 is not None and y2.dtype != x.dtype):
        raise InvalidArgumentError("pairwise_l2: x, y (and y2) must have the same dtype")
    dtype = x.dtype
    x, y, y2 = _computable(x, y, y2)
    if y2 is None:
        y2 = (y * y).sum(dim=1)
    x2 = (x * x).sum(dim=1)
    return (x2.unsqueeze(1) + y2.unsqueeze(0) - 2 * (x @ y.T)).to(dtype)


def pairwise_cosine(x: torch.Tensor, y: torch.Tensor, *, y2: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Cosine distances ``1 - x.y / (|x| |y|)``, ``[M, N]``, between the rows of `x` and
    `y`; `y2` is the norms of `y`'s rows if already known."""
    _check_matrices(x, y)
    if y2 is None:
        y2 = torch.linalg.norm(y, dim=1)
    x2 = torch.linalg.norm(x, dim=1).unsqueeze(1)
    return 1 - (x @ y.T) / x2 / y2.reshape(1, -1)


def _block_rows(centroids: torch.Tensor) -> int:
    per_row = max(1, centroids.shape[0]) * 4
    if centroids.device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(centroids.device)
        return max(_MIN_BLOCK_ROWS, free // 2 // per_row)
    return max(_MIN_BLOCK_ROWS, _HOST_BLOCK_BYTES // per_row)


def _nearest(
    vectors: torch.Tensor,
    centroids: torch.Tensor,
    distances: Callable[[torch.Tensor], torch.Tensor],
    nan_id: bool = True,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """For each row of `vectors`: the index of the smallest of its `distances` to the
    centroids and that distance (a NaN distance: index -1 if `nan_id`), computed block by
    block."""
    _check_matrices(vectors, centroids)
    rows = _block_rows(centroids)
    while True:
        try:
            ids, dists = [], []
            for block in torch.split(vectors, rows):
                d = distances(block)
                nearest, idx = torch.min(d, dim=1)
                ids.append(idx)
                dists.append(nearest)
            if not ids:
                return torch.empty(0, dtype=torch.int64, device=vectors.device), torch.empty(
                    0, dtype=vectors.dtype, device=vectors.device
                )
            idx, dist = torch.cat(ids), torch.cat(dists)
            return (torch.where(dist.isnan(), -1, idx) if nan_id else idx), dist
        except torch.cuda.OutOfMemoryError:
            if rows // 2 < _MIN_BLOCK_ROWS:
                raise
            rows //= 2
            torch.cuda.empty_cache()


def l2_distance(
    vectors: torch.Tensor, centroids: torch.Tensor, y2: Optional[torch.Tensor] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Each vector's nearest centroid by L2 distance: (centroid ids ``[N]``, squared L2
    distances ``[N]``); id -1 where the distance is NaN. `y2` is accepted for pylance's
    signature (the distances are computed directly)."""
    if y2 is not None and not isinstance(y2, torch.Tensor):
        raise InvalidArgumentError(f"y2 must be a torch tensor, got {type(y2).__name__}")

    def squared(block: torch.Tensor) -> torch.Tensor:
        b, c = _computable(block, centroids)
        return torch.cdist(b.unsqueeze(0), c.unsqueeze(0), p=2.0).squeeze(0).pow(2)

    return _nearest(vectors, centroids, squared)


def cosine_distance(vectors: torch.Tensor, centroids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Each vector's nearest centroid by cosine distance: (centroid ids ``[N]``, cosine
    distances ``[N]``)."""
    _check_matrices(vectors, centroids)
    norms = torch.linalg.norm(centroids, dim=1)
    # (as pylance's: a NaN distance keeps the id torch's minimum gives it)
    return _nearest(vectors, centroids, lambda block: pairwise_cosine(block, centroids, y2=norms), nan_id=False)


def dot_distance(x: torch.Tensor, y: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Each row of `x`'s nearest row of `y` by dot distance ``1 - x.y``: (ids ``[N]``,
    distances ``[N]``); id -1 where the distance is NaN."""
    return _nearest(x, y, lambda block: 1 - block @ y.T)
