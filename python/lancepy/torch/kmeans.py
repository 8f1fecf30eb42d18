"""pylance's ``lance.torch.kmeans``: :class:`KMeans` in PyTorch (see
:mod:`lancepy._ops.kmeans_torch`)."""

from lancepy._ops.kmeans_torch import KMeans

__all__ = ["KMeans"]
