"""pylance's torch API (``lance.torch.data``) over lancepy: the iterable :class:`LanceDataset`,
the map-style :class:`SafeLanceDataset` and :func:`get_safe_loader`.

``lancepy.torch.LanceDataset`` is lancepy's own map-style dataset; ``lancepy.torch.data``
holds pylance's classes under pylance's names, for code written against ``lance.torch.data``::

    from lancepy.torch.data import LanceDataset

    data = LanceDataset("train.lance", batch_size=256, columns=["emb", "label"])
    loader = torch.utils.data.DataLoader(data, batch_size=None, num_workers=2)
    for batch in loader:              # {"emb": float32 tensor [<=256, 768], "label": tensor [<=256]}
        ...

:class:`LanceDataset` reads through a :mod:`lancepy.sampler` sampler (by default whole
fragments, shared out to the DataLoader workers of every rank), merges consecutive small batches
up to `batch_size` rows, and converts each batch with `to_tensor_fn` (default: a dict of
tensors, or the one tensor when one column is read).

Where this differs from pylance, and why:

* ``rank`` / ``world_size`` given explicitly are this process's distributed rank and world size,
  and each rank's share is further split between its DataLoader workers (pylance gives every
  worker the whole share, so each row comes once per worker). ``auto_detect_rank=False`` uses
  the values as they are (pylance's behaviour).
* Arguments pylance ignores raise :class:`~lancepy.exceptions.NotSupportedError`: extra
  positional or keyword arguments, ``samples`` together with ``sampler``,
  ``shard_granularity``, ``rank`` or ``world_size`` (pylance's sample is drawn from the whole
  dataset in every process whatever they say); ``dataset_options`` with a dataset object
  raises :class:`~lancepy.exceptions.InvalidArgumentError`.
* ``with_row_id`` is honoured by ``samples`` (pylance drops it there) and by every sampler but
  :class:`~lancepy.sampler.ShardedBatchSampler`, which drops it with a warning as pylance's does.
* ``samples`` accepts any filter and yields exactly ``samples`` rows per process in batches of
  at most ``batch_size`` (see :func:`lancepy.sampler.maybe_sample`).
* ``cache``: an interrupted first pass is read again (and recorded) by the next iteration,
  where pylance raises; the cache is per process (DataLoader workers each keep their own).
* The default ``to_tensor_fn`` also converts temporal columns (their stored integers) and
  dictionary-encoded numbers; float columns holding nulls become NaN, as pylance's, but integer
  and bool columns holding nulls raise :class:`~lancepy.torch.NullValuesError` (pylance turns
  them into float64 or object arrays). Columns without a tensor form (strings, lists, structs)
  raise :class:`~lancepy.exceptions.InvalidArgumentError` (a ``ValueError``, as pylance's).
* Blob columns of every file version are read as :class:`lancepy.blob.BlobFile` lists (pylance
  14 only recognises legacy ``large_binary`` blob columns).
* The dataset is pinned to the version it had when this object was made (workers reopen that
  version), and :class:`SafeLanceDataset` pins its version too.
"""

from __future__ import annotations

import functools
import io
import json
import numbers
import os
import tempfile
import warnings
from typing import Any, Dict, Iterable, Iterator, List, Literal, Optional, Protocol, Tuple, Union

import pyarrow as pa
import torch
import torch.utils.data

import lancepy
from lancepy._core.schema import ROW_ID
from lancepy.dataset import LanceDataset as _Dataset
from lancepy.exceptions import InvalidArgumentError, NotSupportedError
from lancepy.sampler import (
    FullScanSampler,
    Sampler,
    ShardedBatchSampler,
    ShardedFragmentSampler,
    _concat,
    _sample_batches,
)

from ._convert import _converter, _Decode, _FixedSizeList, _Primitive
from .dataset import _open_pinned

__all__ = ["LanceDataset", "SafeLanceDataset", "get_safe_loader", "HuggingFaceConverter", "ToTensorFn"]

#: pylance's ``max_takes`` for ``samples=``.
_SAMPLE_MAX_TAKES = 2048


class ToTensorFn(Protocol):
    """What ``to_tensor_fn`` is called as: a record batch (or a dict of columns, blob columns
    as lists of :class:`~lancepy.blob.BlobFile`) -> a tensor or a dict of tensors."""

    def __call__(
        self,
        batch: Union[pa.RecordBatch, Dict[str, Any]],
        *,
        hf_converter: Optional["HuggingFaceConverter"] = None,
        use_blob_api: bool = False,
        **kwargs: Any,
    ) -> Union[Dict[str, torch.Tensor], torch.Tensor]: ...


# ----------------------------------------------------------------------------------------
# Arrow -> tensors


class HuggingFaceConverter:
    """Converts columns that a dataset's Hugging Face metadata (the ``huggingface`` schema
    metadata key) describes: ``Image`` features become lists of ``PIL.Image.Image``."""

    def __init__(self, ds_info: Dict[str, Any]) -> None:
        self.ds_info = ds_info

    def _feature(self, col: str) -> Optional[Dict[str, Any]]:
        info = self.ds_info.get("info") if isinstance(self.ds_info, dict) else None
        features = info.get("features") if isinstance(info, dict) else None
        feature = features.get(col) if isinstance(features, dict) else None
        return feature if isinstance(feature, dict) else None

    def to_pytorch(self, col: str, array: pa.Array) -> Optional[List[Any]]:
        """The values of `col` as Python objects, or ``None`` if the metadata does not describe
        the column."""
        feature = self._feature(col)
        if feature is None:
            return None
        kind = feature.get("_type")
        if kind != "Image":
            raise NotSupportedError(
                f"Hugging Face feature {kind!r} (column {col!r}) has no conversion: pass to_tensor_fn="
            )
        import PIL.Image

        def image(value: Any) -> Any:
            if value is None:
                return None
            if value.get("bytes") is None:
                return PIL.Image.open(value["path"])
            return PIL.Image.open(io.BytesIO(value["bytes"]))

        return [image(v) for v in array.to_pylist()]


@functools.lru_cache(maxsize=256)
def _tensor_converter(name: str, type: pa.DataType) -> Any:
    """lancepy's converter for a column that becomes a tensor (floats: nulls -> NaN), else
    ``None``."""
    conv = _converter(pa.field(name, type), None, "bytes")
    inner = conv.inner if isinstance(conv, _Decode) else conv
    if not isinstance(inner, (_Primitive, _FixedSizeList)):
        return None
    if pa.types.is_floating(inner.leaf):
        inner.fill = float("nan")
    return conv


def _to_tensor(
    batch: Union[pa.RecordBatch, Dict[str, Any]],
    *,
    uint64_as_int64: bool = True,
    hf_converter: Optional[HuggingFaceConverter] = None,
    use_blob_api: bool = False,
    **kwargs: Any,
) -> Union[Dict[str, torch.Tensor], torch.Tensor]:
    """A batch as ``{column: tensor}``, or the tensor itself when there is one column.

    Numbers, bools, temporal values (their integers) and fixed-size lists of numbers become
    tensors (``[rows, dim, ...]`` for lists) through lancepy's converters, zero-copy where Arrow's
    layout allows; uint64 columns become int64 with `uint64_as_int64`. Other columns go to
    `hf_converter` when it describes them, else raise
    :class:`~lancepy.exceptions.InvalidArgumentError`. Blob columns (lists of
    :class:`~lancepy.blob.BlobFile`, with `use_blob_api`) need a `to_tensor_fn` of your own.
    """
    if kwargs:
        raise NotSupportedError(f"to_tensor does not support the argument(s) {sorted(kwargs)}")
    if isinstance(batch, pa.RecordBatch):
        items: Iterable[Tuple[str, Any]] = zip(batch.schema.names, batch.columns)
    elif isinstance(batch, dict):
        items = batch.items()
    else:
        raise InvalidArgumentError(f"expected a pyarrow.RecordBatch or a dict of columns, got {type(batch).__name__}")
    out: Dict[str, Any] = {}
    for name, arr in items:
        if isinstance(arr, list):
            what = "blob files" if use_blob_api else "Python values"
            raise NotSupportedError(f"column {name!r} holds {what}: pass a to_tensor_fn that reads them")
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if isinstance(arr.type, pa.FixedShapeTensorType):
            arr = arr.storage
        conv = _tensor_converter(name, arr.type)
        tensor: Any = None
        if conv is not None:
            tensor = conv(arr)
            if uint64_as_int64 and tensor.dtype == torch.uint64 and tensor.dim() == 1:
                tensor = tensor.to(torch.int64)
        elif hf_converter is not None:
            tensor = hf_converter.to_pytorch(name, arr)
        if tensor is None:
            raise InvalidArgumentError(
                f"column {name!r} of type {arr.type} has no tensor form (numbers, bools, temporal values and "
                f"fixed-size lists of numbers do): pass to_tensor_fn= or leave it out of columns="
            )
        out[name] = tensor
    if len(out) == 1:
        return next(iter(out.values()))
    return out


# ----------------------------------------------------------------------------------------
# Iterable dataset


def _merge_small(stream: Iterable[pa.RecordBatch], batch_size: int) -> Iterator[pa.RecordBatch]:
    """Consecutive batches joined while together they hold at most `batch_size` rows (a batch
    already larger passes as it is)."""
    held: List[pa.RecordBatch] = []
    rows = 0
    for b in stream:
        if held and rows + b.num_rows > batch_size:
            yield _concat(held)
            held, rows = [], 0
        held.append(b)
        rows += b.num_rows
    if held:
        yield _concat(held)


class _BatchCache:
    """The record batches of a first pass, kept in an Arrow IPC stream file in a temporary
    directory (removed with this object, or at exit) and replayed by later passes."""

    def __init__(self, cache: Union[bool, str, "os.PathLike[str]"]) -> None:
        parent = None if cache is True else os.fspath(cache)  # type: ignore[arg-type]
        self._dir = tempfile.TemporaryDirectory(prefix="lancepy-torch-dataset-", dir=parent)
        self.path = os.path.join(self._dir.name, "cache.arrow")
        self.complete = False
        self._empty = False

    def record(self, stream: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Passes `stream` through, writing it down; complete only if it ran to its end."""
        self.complete = False
        writer = None
        try:
            for b in stream:
                if writer is None:
                    writer = pa.ipc.new_stream(self.path, b.schema)
                writer.write_batch(b)
                yield b
        finally:
            if writer is not None:
                writer.close()
        self._empty = writer is None
        self.complete = True

    def replay(self) -> Iterator[pa.RecordBatch]:
        if self._empty:
            return
        with pa.memory_map(self.path) as source:
            yield from pa.ipc.open_stream(source)

    def close(self) -> None:
        self._dir.cleanup()


def _dist_rank_world() -> Tuple[int, int]:
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    return 0, 1


def _open_source(dataset: Any, dataset_options: Optional[Dict[str, Any]]) -> Tuple[_Dataset, str, Dict[str, Any]]:
    """(the dataset pinned at its current version, its URI, the options that reopen it)."""
    if isinstance(dataset, (str, os.PathLike)):
        options = dict(dataset_options or {})
        uri = os.path.expanduser(os.fspath(dataset))
        if "://" not in uri:
            uri = os.path.abspath(uri)  # workers may not share the working directory
        ds = lancepy.dataset(uri, **options)
        reopen = {k: v for k, v in options.items() if k not in ("version", "asof")}
        reopen["version"] = ds.version
        return ds, uri, reopen
    if dataset_options:
        raise InvalidArgumentError("dataset_options apply when dataset is a URI, not an opened dataset")
    uri, ds, storage_options = _open_pinned(dataset, None, None)
    reopen: Dict[str, Any] = {"version": ds.version}
    if storage_options is not None:
        reopen["storage_options"] = storage_options
    return ds, uri, reopen


class LanceDataset(torch.utils.data.IterableDataset):
    """pylance's iterable PyTorch dataset over a Lance dataset (``lance.torch.data.LanceDataset``).

    Each iteration yields the batches of `sampler` (see :mod:`lancepy.sampler`), consecutive
    small ones merged up to `batch_size` rows, each converted by `to_tensor_fn`.

    Parameters
    ----------
    dataset:
        A URI, or a dataset object (lancepy's, or another library's with ``uri`` and
        ``version``); read at the version it has now. `dataset_options` are
        :func:`lancepy.dataset`'s keyword arguments, for a URI.
    batch_size:
        Rows per batch (the most; batches end at fragment boundaries and filters remove rows).
    columns, filter, with_row_id:
        The columns to read (default: all), a SQL filter, and whether to add ``_rowid``.
    samples:
        If positive, each iteration reads a random sample of that many rows instead (see
        :func:`lancepy.sampler.maybe_sample`; numpy's global generator), in every process.
    cache:
        ``True`` or a directory: the first full pass is written to a temporary Arrow file
        (under that directory) and later passes replay it.
    rank, world_size:
        This process's rank and world size for distributed reading (deprecated in pylance; by
        default from ``torch.distributed``). Each rank's share is split between DataLoader
        workers.
    shard_granularity:
        ``None`` or ``"fragment"``: ranks and workers read whole fragments
        (:class:`~lancepy.sampler.ShardedFragmentSampler`); ``"batch"``: every
        ``world_size``-th batch of consecutive rows (:class:`~lancepy.sampler.ShardedBatchSampler`).
    batch_readahead:
        Batches read ahead by the native scan.
    to_tensor_fn:
        Batch -> tensors (see :data:`ToTensorFn`); ``None`` yields the record batches.
    sampler:
        A :class:`~lancepy.sampler.Sampler` (or any callable of that shape) instead of the
        default one; it is used as it is, in every worker.
    auto_detect_rank:
        Whether ranks come from ``torch.distributed`` and DataLoader workers; ``False``: only
        from `rank` and `world_size` (both or neither; neither: every process reads everything).
    """

    def __init__(
        self,
        dataset: Union[_Dataset, str, "os.PathLike[str]"],
        batch_size: int,
        *args: Any,
        dataset_options: Optional[Dict[str, Any]] = None,
        columns: Optional[Union[List[str], Dict[str, str]]] = None,
        filter: Optional[str] = None,
        samples: Optional[int] = 0,
        cache: Optional[Union[str, bool]] = None,
        with_row_id: bool = False,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        shard_granularity: Optional[Literal["fragment", "batch"]] = None,
        batch_readahead: int = 16,
        to_tensor_fn: Optional[ToTensorFn] = _to_tensor,
        sampler: Optional[Sampler] = None,
        auto_detect_rank: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if args:
            raise NotSupportedError(f"LanceDataset takes no positional arguments after batch_size, got {args!r}")
        if kwargs:
            raise NotSupportedError(f"LanceDataset does not support the argument(s) {sorted(kwargs)}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be a positive integer, got {batch_size!r}")
        if samples is not None and (
            isinstance(samples, bool) or not isinstance(samples, numbers.Integral) or samples < 0
        ):
            raise InvalidArgumentError(f"samples must be a non-negative integer, got {samples!r}")
        if shard_granularity not in (None, "fragment", "batch"):
            raise InvalidArgumentError(
                f"shard_granularity must be None, 'fragment' or 'batch', got {shard_granularity!r}"
            )
        if cache is not None and not isinstance(cache, (bool, str, os.PathLike)):
            raise InvalidArgumentError(f"cache must be a bool or a directory, got {type(cache).__name__}")
        if (
            isinstance(batch_readahead, bool)
            or not isinstance(batch_readahead, numbers.Integral)
            or batch_readahead < 1
        ):
            raise InvalidArgumentError(f"batch_readahead must be a positive integer, got {batch_readahead!r}")
        for name, fn in (("to_tensor_fn", to_tensor_fn), ("sampler", sampler)):
            if fn is not None and not callable(fn):
                raise InvalidArgumentError(f"{name} must be callable, got {type(fn).__name__}")
        if samples:
            given = [
                n
                for n, v in (
                    ("sampler", sampler),
                    ("shard_granularity", shard_granularity),
                    ("rank", rank),
                    ("world_size", world_size),
                )
                if v is not None
            ]
            if given:
                raise NotSupportedError(
                    f"samples= draws from the whole dataset in every process; it cannot be combined with {given}"
                )
        if rank is not None and world_size is not None:
            warnings.warn("rank and world_size are deprecated (as in pylance)", DeprecationWarning, stacklevel=2)
            ShardedFragmentSampler(rank, world_size)  # validates them
        elif not auto_detect_rank and (rank is not None or world_size is not None):
            raise InvalidArgumentError("with auto_detect_rank=False, give both rank and world_size, or neither")
        elif not auto_detect_rank and shard_granularity is not None and sampler is None:
            raise InvalidArgumentError(
                f"shard_granularity={shard_granularity!r} needs rank and world_size (or auto_detect_rank=True)"
            )

        ds, self._uri, self._reopen = _open_source(dataset, dataset_options)
        self._ds: Optional[_Dataset] = ds
        self._version = ds.version
        self.columns = columns
        self.batch_size = int(batch_size)
        self.samples = samples
        self.filter = filter
        self.with_row_id = bool(with_row_id)
        self.batch_readahead = int(batch_readahead)
        self._to_tensor_fn = to_tensor_fn
        self._blob_columns = self._find_blob_columns(ds)
        if self._blob_columns:
            self.with_row_id = True  # blobs are fetched by row id (as pylance does)
        self.shard_granularity = shard_granularity
        self.rank = rank
        self.world_size = world_size
        self.sampler = sampler
        self._auto_detect_rank = bool(auto_detect_rank)
        self._dist: Optional[Tuple[int, int]] = None  # torch.distributed's, fixed when pickled
        self._hf_converter: Optional[HuggingFaceConverter] = None
        meta = ds.schema.metadata or {}
        if b"huggingface" in meta:
            self._hf_converter = HuggingFaceConverter(json.loads(meta[b"huggingface"]))
        self.cache = cache
        self._cache: Optional[_BatchCache] = None

    # -- state ----------------------------------------------------------------------------

    @property
    def dataset(self) -> _Dataset:
        """The lancepy dataset read (the pinned version; opened in each process)."""
        if self._ds is None:
            self._ds = lancepy.dataset(self._uri, **self._reopen)
        return self._ds

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        state["_ds"] = None
        state["_cache"] = None
        if self._auto_detect_rank and self._dist is None:
            # Spawned workers do not share torch.distributed's state: fix it now.
            state["_dist"] = _dist_rank_world()
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"LanceTorchDataset({self._uri}, size={self.samples})"

    @property
    def schema(self) -> pa.Schema:
        """The schema of the columns read (without ``_rowid``)."""
        ds = self.dataset
        if not self.columns:
            return ds.schema
        if isinstance(self.columns, dict):
            return ds.scanner(columns=self.columns).projected_schema
        return pa.schema([ds.schema.field(c) for c in self.columns], metadata=ds.schema.metadata)

    def _find_blob_columns(self, ds: _Dataset) -> List[str]:
        if isinstance(self.columns, dict):
            return []
        names = list(self.columns) if self.columns else list(ds.schema.names)
        return ds._view.loaded.blob_columns(c for c in names if c in ds.schema.names)

    # -- reading --------------------------------------------------------------------------

    def _shard(self) -> Tuple[Optional[int], Optional[int]]:
        """(rank, world size) of this process among all readers (workers of all ranks)."""
        if not self._auto_detect_rank:
            return self.rank, self.world_size
        dist_rank, dist_world = self._dist if self._dist is not None else _dist_rank_world()
        rank = dist_rank if self.rank is None else int(self.rank)
        world = dist_world if self.world_size is None else int(self.world_size)
        info = torch.utils.data.get_worker_info()
        if info is not None:
            rank, world = rank * info.num_workers + info.id, world * info.num_workers
        return rank, world

    def _default_sampler(self) -> Sampler:
        rank, world = self._shard()
        if self.shard_granularity == "batch":
            return ShardedBatchSampler(rank, world)  # type: ignore[arg-type]
        if rank is None or world is None:
            return FullScanSampler()
        return ShardedFragmentSampler(rank, world)

    def _projection(self) -> Union[List[str], Dict[str, str]]:
        if isinstance(self.columns, dict):
            return self.columns
        names = list(self.columns) if self.columns else list(self.dataset.schema.names)
        return [c for c in names if c not in self._blob_columns]

    def _stream(self) -> Iterator[pa.RecordBatch]:
        ds = self.dataset
        if self.samples:
            raw = _sample_batches(
                ds, self.samples, self._projection(), self.batch_size, _SAMPLE_MAX_TAKES, self.filter, self.with_row_id
            )
        else:
            sampler = self.sampler if self.sampler is not None else self._default_sampler()
            if self._blob_columns and isinstance(sampler, ShardedBatchSampler):
                # (blobs are fetched by row id, which the public call drops as pylance's does)
                raw = sampler._read(ds, self.batch_size, self._projection(), self.filter, self.batch_readahead,
                                    with_row_id=True)
                return _merge_small(raw, self.batch_size)
            raw = sampler(
                ds,
                columns=self._projection(),
                filter=self.filter,
                batch_size=self.batch_size,
                with_row_id=self.with_row_id,
                batch_readahead=self.batch_readahead,
            )
        return _merge_small(raw, self.batch_size)

    def __iter__(self) -> Iterator[Any]:
        if self.cache:
            if self._cache is None:
                self._cache = _BatchCache(self.cache)
            stream = self._cache.replay() if self._cache.complete else self._cache.record(self._stream())
        else:
            stream = self._stream()
        use_blob_api = bool(self._blob_columns)
        for batch in stream:
            if use_blob_api:
                row_ids = batch.column(batch.schema.get_field_index(ROW_ID))
                columns: Dict[str, Any] = dict(zip(batch.schema.names, batch.columns))
                for col in self._blob_columns:
                    columns[col] = self.dataset.take_blobs(col, ids=row_ids)
                batch = columns
            if self._to_tensor_fn is not None:
                batch = self._to_tensor_fn(batch, hf_converter=self._hf_converter, use_blob_api=use_blob_api)
            yield batch


# ----------------------------------------------------------------------------------------
# Map-style dataset and its loader


class SafeLanceDataset(torch.utils.data.Dataset):
    """A map-style dataset of rows as dicts (``take(indices).to_pylist()``), safe to use with
    any multiprocessing start method: the dataset is opened in each process that reads, at the
    version it had when this object was made.

    `uri` is a dataset URI; `dataset_options` are :func:`lancepy.dataset`'s keyword arguments.
    """

    def __init__(
        self, uri: Union[str, "os.PathLike[str]"], *, dataset_options: Optional[Dict[str, Any]] = None, **kwargs: Any
    ) -> None:
        if kwargs:
            raise NotSupportedError(f"SafeLanceDataset does not support the argument(s) {sorted(kwargs)}")
        super().__init__()
        ds, self.uri, self._reopen = _open_source(uri, dataset_options)
        self.dataset_options = dict(dataset_options or {})
        self._len = ds.count_rows()
        self._ds: Optional[_Dataset] = None  # opened lazily in the process that reads

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        state["_ds"] = None
        return state

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, idx: int) -> Dict[str, Any]:
        return self.__getitems__([idx])[0]

    def __getitems__(self, indices: List[int]) -> List[Dict[str, Any]]:
        """Rows `indices` (positions among the live rows) with one native take, as dicts."""
        if self._ds is None:
            self._ds = lancepy.dataset(self.uri, **self._reopen)
        return self._ds.take(indices).to_pylist()


def get_safe_loader(
    dataset: torch.utils.data.Dataset, batch_size: int = 32, num_workers: int = 4, **kwargs: Any
) -> torch.utils.data.DataLoader:
    """A DataLoader with process-safe defaults: ``spawn`` workers, ``persistent_workers=True``;
    `kwargs` (any DataLoader argument) take precedence."""
    loader_args = {
        "batch_size": batch_size,
        "num_workers": num_workers,
        "persistent_workers": kwargs.pop("persistent_workers", True),
        "multiprocessing_context": torch.multiprocessing.get_context("spawn"),
        **kwargs,
    }
    return torch.utils.data.DataLoader(dataset, **loader_args)
