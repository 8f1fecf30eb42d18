"""Utilities of pylance's ``lance.util``: timestamps (:func:`sanitize_ts`, :func:`td_to_micros`),
k-means clustering of float32 vectors (:class:`KMeans`, trained by lancepy's native k-means,
the one IVF indices are built with) and :func:`validate_vector_index`, a recall check of a
vector index.

pylance's ``HNSW`` wrapper is not here: lancepy builds no HNSW graphs.
"""

from __future__ import annotations

import datetime as _dt
import sys
from typing import TYPE_CHECKING, Any, Literal, Optional, Union

import pyarrow as pa

from lancepy._ops import ivf_build as _ivf_build
from lancepy.exceptions import InvalidArgumentError, LanceError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from lancepy.dataset import LanceDataset

__all__ = [
    "MetricType",
    "sanitize_ts",
    "td_to_micros",
    "KMeans",
    "validate_vector_index",
    "ArgumentTypeError",
    "NotFittedError",
    "IndexValidationError",
]

MetricType = Literal["l2", "euclidean", "dot", "cosine"]

_METRICS = {"l2": "l2", "euclidean": "l2", "dot": "dot", "cosine": "cosine"}


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument of the wrong type (a ``TypeError`` too, as pylance raises)."""


class NotFittedError(LanceError, RuntimeError):
    """:meth:`KMeans.predict` before :meth:`KMeans.fit` (a ``RuntimeError``, as pylance's)."""


class IndexValidationError(LanceError, ValueError):
    """:func:`validate_vector_index`: too few vectors found themselves (a ``ValueError``, as
    pylance's)."""


def sanitize_ts(ts: Union[_dt.datetime, str, Any]) -> _dt.datetime:
    """`ts` as a ``datetime.datetime``: a ``datetime`` as it is, a ``pandas.Timestamp``
    converted, a string of the form ``"YYYY-MM-DD HH:MM:SS"`` parsed (as pylance 14 does).

    Raises :class:`~lancepy.exceptions.InvalidArgumentError` for a string of another form
    and :class:`ArgumentTypeError` for any other type.
    """
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(ts, pd.Timestamp):
        return ts.to_pydatetime()
    if isinstance(ts, _dt.datetime):
        return ts
    if isinstance(ts, str):
        try:
            return _dt.datetime.strptime(ts, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise InvalidArgumentError(f"cannot parse timestamp {ts!r}: expected 'YYYY-MM-DD HH:MM:SS'") from None
    raise ArgumentTypeError(f"expected a datetime, pandas.Timestamp or str, got {type(ts).__name__}: {ts!r}")


def td_to_micros(td: _dt.timedelta) -> int:
    """Whole microseconds in `td` (rounded half to even)."""
    if not isinstance(td, _dt.timedelta):
        raise ArgumentTypeError(f"expected a datetime.timedelta, got {type(td).__name__}")
    return round(td / _dt.timedelta(microseconds=1))


def _metric(metric_type: Any) -> str:
    metric = _METRICS.get(metric_type.lower()) if isinstance(metric_type, str) else None
    if metric is None:
        raise InvalidArgumentError(f"Invalid metric_type: {metric_type!r}; use 'l2' ('euclidean'), 'cosine' or 'dot'")
    return metric


def _matrix(data: Any, what: str) -> "np.ndarray":
    """`data` (a float32 ``FixedSizeListArray``, a 1-D ``FixedShapeTensorArray`` or a 2-D
    float32 numpy array) as a C-contiguous ``rows × dim`` float32 matrix."""
    import numpy as np

    if isinstance(data, pa.FixedShapeTensorArray):
        if len(data.type.shape) != 1:
            raise InvalidArgumentError(f"{what}: a fixed shape tensor array must be 1-D, got {len(data.type.shape)}-D")
        data = data.storage
    if isinstance(data, pa.FixedSizeListArray):
        if data.type.value_type != pa.float32():
            raise InvalidArgumentError(f"{what}: the array must be of float32, got {data.type.value_type}")
        values = data.flatten().to_numpy(zero_copy_only=False)
        return np.ascontiguousarray(values.reshape(len(data), data.type.list_size), dtype=np.float32)
    if isinstance(data, np.ndarray):
        if data.ndim != 2:
            raise InvalidArgumentError(f"{what}: a numpy array must be 2-D, got {data.ndim}-D")
        if data.dtype != np.float32:
            raise InvalidArgumentError(f"{what}: a numpy array must be of float32, got {data.dtype}")
        return np.ascontiguousarray(data)
    raise InvalidArgumentError(
        f"{what}: expected a FixedSizeListArray, FixedShapeTensorArray or numpy array, got {type(data).__name__}"
    )


class KMeans:
    """k-means clustering of float32 vectors.

    Train with :meth:`fit` (each call starts afresh from random centroids), then
    :meth:`predict` the nearest centroid of vectors. Data is a 2-D float32 numpy array, a
    float32 ``FixedSizeListArray`` or a 1-D ``FixedShapeTensorArray``. Distances: ``"l2"``
    (``"euclidean"``), ``"dot"`` (centroids kept at unit length, as pylance's) or ``"cosine"``
    (vectors normalized first; pylance 14 cannot train with cosine).

    Examples
    --------
    >>> import numpy as np
    >>> data = np.random.default_rng(0).standard_normal((1000, 8)).astype(np.float32)
    >>> kmeans = KMeans(4)
    >>> kmeans.fit(data)
    >>> len(kmeans.centroids), len(kmeans.predict(data))
    (4, 1000)
    """

    def __init__(
        self,
        k: int,
        metric_type: MetricType = "l2",
        max_iters: int = 50,
        centroids: Optional[pa.FixedSizeListArray] = None,
    ) -> None:
        """`k` clusters under `metric_type`, at most `max_iters` iterations a :meth:`fit`;
        `centroids` (``k`` of them) makes the model usable by :meth:`predict` without
        training."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidArgumentError(f"k must be a positive int, got {k!r}")
        if isinstance(max_iters, bool) or not isinstance(max_iters, int) or max_iters < 1:
            raise InvalidArgumentError(f"max_iters must be a positive int, got {max_iters!r}")
        self.k = k
        self._metric_type = _metric(metric_type)
        self._max_iters = max_iters
        self._centroids: Optional["np.ndarray"] = None
        if centroids is not None:
            mat = _matrix(centroids, "centroids")
            if mat.shape[0] != k:
                raise InvalidArgumentError(f"centroids: expected {k} centroids, got {mat.shape[0]}")
            self._centroids = _ivf_build._normalized(mat) if self._metric_type == "dot" else mat

    def __repr__(self) -> str:
        return f"lancepy.KMeans(k={self.k}, metric_type={self._metric_type})"

    @property
    def centroids(self) -> Optional[pa.FixedShapeTensorArray]:
        """The ``k`` centroids as a 1-D fixed shape tensor array, ``None`` before training."""
        if self._centroids is None:
            return None
        dim = self._centroids.shape[1]
        storage = pa.FixedSizeListArray.from_arrays(pa.array(self._centroids.reshape(-1), type=pa.float32()), dim)
        tensor = pa.fixed_shape_tensor(pa.float32(), (dim,))
        return pa.FixedShapeTensorArray.from_storage(tensor, storage)

    def _prepared(self, data: Any) -> "np.ndarray":
        mat = _matrix(data, "data")
        return _ivf_build._normalized(mat) if self._metric_type == "cosine" else mat

    def fit(self, data: Union[pa.FixedSizeListArray, pa.FixedShapeTensorArray, "np.ndarray"]) -> None:
        """Trains the model on `data` (at least ``k`` vectors), replacing any centroids."""
        mat = self._prepared(data)
        if mat.shape[0] < self.k:
            raise InvalidArgumentError(f"k-means: {mat.shape[0]} vectors cannot train {self.k} centroids")
        params = _ivf_build.IvfParams(
            kind="IVF_FLAT",
            metric=self._metric_type,
            num_partitions=self.k,
            num_sub_vectors=None,
            sample_rate=_ivf_build.DEFAULT_SAMPLE_RATE,
            max_iters=self._max_iters,
            ivf_centroids=None,
            pq_codebook=None,
            filter_nan=False,
            seed=None,
        )
        centroids, _ = _ivf_build.train_ivf(mat, self.k, params)
        self._centroids = _ivf_build._normalized(centroids) if self._metric_type == "dot" else centroids

    def predict(self, data: Union[pa.FixedSizeListArray, pa.FixedShapeTensorArray, "np.ndarray"]) -> pa.UInt32Array:
        """The index of the nearest centroid of each vector of `data`."""
        mat = self._prepared(data)
        if self._centroids is None:
            raise NotFittedError("KMeans must be trained (fit) before predict")
        if mat.shape[1] != self._centroids.shape[1]:
            raise InvalidArgumentError(f"data has {mat.shape[1]} dimensions, the centroids {self._centroids.shape[1]}")
        parts, _ = _ivf_build.assign(mat, self._centroids, self._metric_type)
        return pa.array(parts, type=pa.uint32())


def validate_vector_index(
    dataset: "LanceDataset",
    column: str,
    refine_factor: int = 5,
    sample_size: Optional[int] = None,
    pass_threshold: float = 1.0,
) -> None:
    """Checks that the vector index on `column` finds vectors of the dataset itself: each
    vector (of a random sample of `sample_size` rows; all rows by default; vectors with NaN
    skipped) is searched for with ``k=1``, ``nprobes=1`` and `refine_factor`, and passes when
    the nearest hit is at distance 0 (below 1e-6).

    Raises :class:`IndexValidationError` when fewer than `pass_threshold` of them pass, and
    :class:`~lancepy.exceptions.InvalidArgumentError` when there is no vector to check.
    """
    import numpy as np

    if not 0.0 <= float(pass_threshold) <= 1.0:
        raise InvalidArgumentError(f"pass_threshold must be within [0, 1], got {pass_threshold!r}")
    data = dataset.to_table(columns=[column]) if sample_size is None else dataset.sample(sample_size, columns=[column])
    checked = passed = 0
    for vec in data.column(column).to_numpy(zero_copy_only=False):
        vec = np.asarray(vec, dtype=np.float32)
        if np.isnan(vec).any():
            continue
        checked += 1
        nearest = {"column": column, "q": vec, "k": 1, "nprobes": 1, "refine_factor": refine_factor}
        distance = dataset.to_table(columns=[], nearest=nearest)["_distance"][0].as_py()
        passed += abs(distance) < 1e-6
    if not checked:
        raise InvalidArgumentError(f"no vectors without NaN in column {column!r} to check")
    if passed / checked < pass_threshold:
        raise IndexValidationError(f"Vector index failed sanity check: only {passed}/{checked} vectors found themselves")
