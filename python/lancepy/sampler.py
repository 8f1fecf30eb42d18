"""pylance's samplers (``lance.sampler``) over lancepy datasets, without torch.

A sampler is called with a dataset and read options and yields ``pyarrow.RecordBatch``\\ es;
:class:`lancepy.torch.data.LanceDataset` (pylance's iterable torch dataset) reads through
one. All reads are lancepy's native scans and takes: Python only handles batches.

* :class:`FullScanSampler`: every fragment, in order.
* :class:`ShardedFragmentSampler`: fragments ``rank, rank + world_size, ...`` (optionally of a
  seeded shuffle of the fragment list).
* :class:`ShardedBatchSampler`: batches of `batch_size` consecutive rows, rank ``r`` getting
  batches ``r, r + world_size, ...`` (optionally in a seeded shuffled order); with a filter,
  the matching rows are dealt out to ranks one by one, then batched.
* :class:`ShardedFixedBatchSampler`: lists of row indices for a map-style dataset: rank ``r``
  gets the ``r``-th contiguous share of the rows, cut into batches.
* :func:`maybe_sample`: a random sample of ``n`` rows (numpy's global generator).
* :func:`reservoir_sampling`: ``k`` items of a stream, each equally likely.

Batches come as pylance's do: a fragment scan is cut into runs of `batch_size` live rows of
each fragment (the last run of a fragment may be shorter), a filter removes rows from those
runs, and runs left empty are skipped; a batch never spans two fragments.

Differences from pylance, on purpose: the seeded shuffles use ``seed + epoch`` (pylance's
:class:`ShardedFragmentSampler` and unfiltered :class:`ShardedBatchSampler` ignore
``set_epoch``; at epoch 0 the orders are pylance's), and use their own ``random.Random``
rather than reseeding the global ``random`` module; :class:`ShardedBatchSampler` drops
``with_row_id`` as pylance does (its batches are the columns asked for), but warns with or
without a filter (pylance warns only without one); with a filter and ``randomize=True``, it
shuffles the order of all of the rank's batches (pylance approximates with a bounded heap);
:func:`maybe_sample` returns exactly ``n`` distinct rows in batches of at most `batch_size`
and accepts any filter; ``len(ShardedFixedBatchSampler)`` counts this rank's batches (pylance's
gives every rank the first rank's count); :func:`reservoir_sampling` keeps each item with
equal probability (pylance's keeps random priorities in a heap); extra positional or keyword
arguments raise
:class:`~lancepy.exceptions.NotSupportedError` instead of being ignored.
"""

from __future__ import annotations

import abc
import numbers
import os
import random
import warnings
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np
import pyarrow as pa

from lancepy._core.schema import ROW_ADDRESS, ROW_ID
from lancepy.dataset import LanceDataset
from lancepy.dataset import dataset as _open_dataset
from lancepy.exceptions import InvalidArgumentError, NotSupportedError
from lancepy.fragment import LanceFragment

__all__ = [
    "maybe_sample",
    "reservoir_sampling",
    "Sampler",
    "FragmentSampler",
    "FullScanSampler",
    "ShardedFragmentSampler",
    "ShardedBatchSampler",
    "ShardedFixedBatchSampler",
]

Columns = Optional[Union[List[str], Dict[str, str]]]
T = TypeVar("T")

#: Rows per native scan batch: large, so that the runs of `batch_size` rows cut from it are
#: mostly zero-copy slices.
_SCAN_ROWS = 8192
#: Rows per native take when reading a sample.
_TAKE_ROWS = 65536


# ----------------------------------------------------------------------------------------
# Argument checks


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _non_negative(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise InvalidArgumentError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def _rank_world(rank: Any, world_size: Any) -> Tuple[int, int]:
    world_size = _positive("world_size", world_size)
    rank = _non_negative("rank", rank)
    if rank >= world_size:
        raise InvalidArgumentError(f"rank must be in [0, {world_size}), got {rank}")
    return rank, world_size


def _refuse_extra(where: str, args: Sequence[Any], kwargs: Dict[str, Any]) -> None:
    """Raises :class:`NotSupportedError` naming arguments pylance would silently ignore."""
    if args:
        raise NotSupportedError(f"{where} takes no extra positional arguments, got {len(args)}: {args!r}")
    if kwargs:
        raise NotSupportedError(f"{where} does not support the argument(s) {sorted(kwargs)}")


def _torch_rank_world() -> Tuple[int, int]:
    import torch.distributed as dist  # only here: this module does not need torch

    if not (dist.is_available() and dist.is_initialized()):
        raise InvalidArgumentError("from_torch() needs an initialised torch.distributed process group")
    return int(dist.get_rank()), int(dist.get_world_size())


def _as_dataset(dataset: Any) -> LanceDataset:
    if isinstance(dataset, LanceDataset):
        return dataset
    if isinstance(dataset, (str, os.PathLike)):
        return _open_dataset(dataset)
    raise InvalidArgumentError(f"expected a lancepy.LanceDataset or a dataset URI, got {type(dataset).__name__}")


# ----------------------------------------------------------------------------------------
# Reading


def _fragment_ids(fragments: Iterable[Any]) -> List[int]:
    ids = []
    for f in fragments:
        if isinstance(f, LanceFragment) or hasattr(f, "fragment_id"):
            ids.append(int(f.fragment_id))
        elif isinstance(f, numbers.Integral) and not isinstance(f, bool):
            ids.append(int(f))
        else:
            raise InvalidArgumentError(f"expected fragments (or fragment ids), got {type(f).__name__}")
    return ids


def _concat(pieces: List[pa.RecordBatch]) -> pa.RecordBatch:
    if len(pieces) == 1:
        return pieces[0]
    return pa.Table.from_batches(pieces).combine_chunks().to_batches()[0]


class _LiveIndex:
    """Row address -> position among the live rows of its fragment (deletions per fragment
    read once, natively)."""

    def __init__(self, ds: LanceDataset) -> None:
        self._ds = ds
        self._deleted: Dict[int, np.ndarray] = {}

    def _deleted_offsets(self, fragment_id: int) -> np.ndarray:
        d = self._deleted.get(fragment_id)
        if d is None:
            t = pa.table(self._ds._view.snapshot.deleted_rows(fragment_id))
            d = np.sort(t.column(0).to_numpy().astype(np.int64)) if t.num_rows else np.empty(0, np.int64)
            self._deleted[fragment_id] = d
        return d

    def __call__(self, addresses: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(fragment id, live position) of each address."""
        fragment = (addresses >> np.uint64(32)).astype(np.int64)
        offset = (addresses & np.uint64(0xFFFFFFFF)).astype(np.int64)
        live = offset
        for fid in np.unique(fragment):
            deleted = self._deleted_offsets(int(fid))
            if deleted.size:
                if live is offset:
                    live = offset.copy()
                m = fragment == fid
                live[m] = offset[m] - np.searchsorted(deleted, offset[m])
        return fragment, live


def _fragment_batches(
    ds: LanceDataset,
    fragments: Iterable[Any],
    *,
    batch_size: int,
    columns: Columns,
    filter: Any,
    with_row_id: bool,
    batch_readahead: int,
) -> Iterator[pa.RecordBatch]:
    """The rows of `fragments`, in that order, in pylance's batches: runs of `batch_size` live
    rows of each fragment, with the filter applied to each run and empty runs skipped."""
    batch_size = _positive("batch_size", batch_size)
    ids = _fragment_ids(fragments)
    if not ids:
        return
    scanner = ds.scanner(
        columns=columns,
        filter=filter,
        fragments=ids,
        batch_size=max(batch_size, _SCAN_ROWS),
        batch_readahead=_non_negative("batch_readahead", batch_readahead),
        with_row_id=bool(with_row_id),
        with_row_address=True,
    )
    live_index = _LiveIndex(ds)
    pending: List[pa.RecordBatch] = []
    last: Optional[Tuple[int, int, int]] = None  # (fragment, run, address) of the last pending row
    for b in scanner.to_batches():
        if not b.num_rows:
            continue
        i = b.schema.get_field_index(ROW_ADDRESS)
        addr = b.column(i).to_numpy().astype(np.uint64, copy=False)
        b = b.remove_column(i)
        fragment, live = live_index(addr)
        run = live // batch_size
        # A new run starts where the fragment or the run changes, or the addresses stop
        # increasing (the same fragment listed twice in a row).
        new = np.empty(len(addr), dtype=bool)
        new[1:] = (fragment[1:] != fragment[:-1]) | (run[1:] != run[:-1]) | (addr[1:] <= addr[:-1])
        new[0] = last is None or (int(fragment[0]), int(run[0])) != last[:2] or int(addr[0]) <= last[2]
        starts = np.flatnonzero(new).tolist()
        bounds = starts + [len(addr)]
        if bounds[0] > 0:  # the first rows continue the pending run
            pending.append(b.slice(0, bounds[0]))
        for s, e in zip(bounds[:-1], bounds[1:]):
            if pending:
                yield _concat(pending)
            pending = [b.slice(s, e - s)]
        last = (int(fragment[-1]), int(run[-1]), int(addr[-1]))
    if pending:
        yield _concat(pending)


def _matching_row_ids(ds: LanceDataset, filter: Any) -> np.ndarray:
    """Row ids of the live rows that match `filter`, in scan order (filter columns only)."""
    parts = [
        b.column(b.schema.get_field_index(ROW_ID)).to_numpy()
        for b in ds.scanner(columns=[], filter=filter, with_row_id=True, batch_size=1 << 17).to_batches()
        if b.num_rows
    ]
    return np.concatenate(parts).astype(np.uint64, copy=False) if parts else np.empty(0, dtype=np.uint64)


def _read_groups(read: Any, groups: Sequence[np.ndarray], per_read: int) -> Iterator[pa.RecordBatch]:
    """Each of `groups` (indices or row ids) as one batch, reading up to `per_read` groups with
    one native call of `read` (indices -> table)."""
    per_read = max(1, per_read)
    for g in range(0, len(groups), per_read):
        chunk = groups[g : g + per_read]
        lengths = [len(x) for x in chunk]
        table = read(np.concatenate(chunk) if len(chunk) > 1 else chunk[0]).combine_chunks()
        pos = 0
        for n in lengths:
            batches = table.slice(pos, n).to_batches()
            pos += n
            yield _concat(batches) if batches else pa.RecordBatch.from_pylist([], schema=table.schema)


def _take_reader(ds: LanceDataset, columns: Columns, with_row_id: bool, by_row_id: bool) -> Any:
    if isinstance(columns, dict):
        raise NotSupportedError("computed columns (a dict of SQL expressions) need a scan, not a take")
    if by_row_id:
        return lambda ids: ds._take_rows(ids, columns=columns, with_row_id=with_row_id)
    return lambda idx: ds.take(idx, columns=columns, with_row_id=with_row_id)


# ----------------------------------------------------------------------------------------
# Random samples


def maybe_sample(
    dataset: Union[str, os.PathLike, LanceDataset],
    n: int,
    columns: Union[List[str], Dict[str, str], str],
    batch_size: int = 10240,
    max_takes: int = 2048,
    filt: Optional[str] = None,
) -> Iterator[pa.RecordBatch]:
    """A random sample of `n` rows of `dataset` (a lancepy dataset or a URI), as record batches
    of at most `batch_size` rows.

    With `n` at least the number of rows, every row (that matches `filt`) is returned, in scan
    order. Otherwise the rows are drawn with numpy's global generator (``np.random.seed`` makes
    the sample repeatable), without repeats: up to `max_takes` rows are drawn individually; a
    larger sample is `max_takes` runs of consecutive rows, one at a random place in each of
    `max_takes` equal slices of the dataset (fewer, larger reads). With `filt`, `n` rows are
    drawn from those that match (all of them if fewer match).
    """
    ds = _as_dataset(dataset)
    if isinstance(columns, str):
        columns = [columns]
    yield from _sample_batches(ds, n, columns, batch_size, max_takes, filt, False)


def _sample_batches(
    ds: LanceDataset,
    n: int,
    columns: Columns,
    batch_size: int,
    max_takes: int,
    filt: Optional[str],
    with_row_id: bool,
) -> Iterator[pa.RecordBatch]:
    """:func:`maybe_sample`, optionally with row ids."""
    n = _non_negative("n", n)
    batch_size = _positive("batch_size", batch_size)
    max_takes = _positive("max_takes", max_takes)
    total = ds.count_rows()
    if n >= total:
        yield from ds.scanner(
            columns=columns, filter=filt, batch_size=batch_size, with_row_id=with_row_id, strict_batch_size=True
        ).to_batches()
        return
    if filt is not None:
        ids = _matching_row_ids(ds, filt)
        chosen = ids[_distinct(len(ids), min(n, len(ids)))]
        read = _take_reader(ds, columns, with_row_id, by_row_id=True)
    else:
        if n > max_takes:
            chosen = _runs(total, n, max_takes)
        else:
            chosen = _distinct(total, n)
        read = _take_reader(ds, columns, with_row_id, by_row_id=False)
    groups = [chosen[i : i + batch_size] for i in range(0, len(chosen), batch_size)]
    yield from _read_groups(read, groups, max(1, _TAKE_ROWS // batch_size))


def _distinct(total: int, n: int) -> np.ndarray:
    """`n` distinct positions of ``[0, total)`` in random order (numpy's global generator),
    in memory for about `n` positions when `n` is small against `total`."""
    if n * 4 >= total:
        return np.random.permutation(total)[:n].astype(np.int64)
    got = np.empty(0, dtype=np.int64)
    while len(got) < n:
        drawn = np.concatenate([got, np.random.randint(0, total, size=2 * (n - len(got)) + 16, dtype=np.int64)])
        _, first = np.unique(drawn, return_index=True)
        got = drawn[np.sort(first)][:n]
    return got


def _runs(total: int, n: int, runs: int) -> np.ndarray:
    """`n` distinct positions in ``[0, total)``: `runs` runs of consecutive positions, one at a
    random place (numpy's global generator) in each of `runs` equal slices."""
    edges = np.linspace(0, total, runs + 1).astype(np.int64)
    sizes = np.full(runs, n // runs, dtype=np.int64)
    sizes[: n % runs] += 1
    room = edges[1:] - edges[:-1]
    # A slice shorter than its share gives what it has; the rest goes to slices with room.
    short = np.minimum(sizes, room)
    left = n - int(short.sum())
    sizes = short
    while left:
        spare = np.flatnonzero(room > sizes)
        add = np.zeros(runs, dtype=np.int64)
        give = min(left, len(spare))
        add[spare[:give]] = 1
        sizes += add
        left -= give
    starts = edges[:-1] + (np.random.random(runs) * (room - sizes + 1)).astype(np.int64)
    return np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes) + np.arange(n, dtype=np.int64)


def reservoir_sampling(stream: Iterable[T], k: int) -> List[T]:
    """`k` items of `stream` (all of them if it has fewer), each item equally likely to be
    kept, in one pass and with memory for `k` items (numpy's default generator, unseeded)."""
    k = _non_negative("k", k)
    rng = np.random.default_rng()
    kept: List[T] = []
    for i, item in enumerate(stream):
        if i < k:
            kept.append(item)
        else:
            j = int(rng.integers(0, i + 1))
            if j < k:
                kept[j] = item
    return kept


# ----------------------------------------------------------------------------------------
# Samplers


class Sampler(abc.ABC):
    """Reads a dataset as record batches, in some order or subset.

    A subclass implements ``__call__(dataset, *, batch_size, columns, filter,
    batch_readahead, with_row_id)``, yielding ``pyarrow.RecordBatch``\\ es.
    """

    @abc.abstractmethod
    def __call__(
        self,
        ds: LanceDataset,
        *args: Any,
        batch_size: int = 128,
        columns: Columns = None,
        filter: Optional[str] = None,
        batch_readahead: int = 16,
        with_row_id: bool = False,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]:
        """The batches of `ds` this sampler selects."""


class FragmentSampler(Sampler):
    """A sampler that reads whole fragments: a subclass implements :meth:`iter_fragments`,
    and the fragments it yields are scanned in that order (one native scan)."""

    def __call__(
        self,
        dataset: LanceDataset,
        *args: Any,
        batch_size: int = 128,
        columns: Columns = None,
        filter: Optional[str] = None,
        batch_readahead: int = 16,
        with_row_id: bool = False,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]:
        """Scans the fragments :meth:`iter_fragments` yields (given `args` and `kwargs`): runs of
        `batch_size` live rows of each fragment, filtered."""
        fragments = list(self.iter_fragments(dataset, *args, **kwargs))
        return _fragment_batches(
            dataset,
            fragments,
            batch_size=batch_size,
            columns=columns,
            filter=filter,
            with_row_id=with_row_id,
            batch_readahead=batch_readahead,
        )

    @abc.abstractmethod
    def iter_fragments(self, ds: LanceDataset, *args: Any, **kwargs: Any) -> Iterator[LanceFragment]:
        """The fragments to read, in order."""


class FullScanSampler(FragmentSampler):
    """Every fragment of the dataset, in order: a full scan."""

    def iter_fragments(self, dataset: LanceDataset, **kwargs: Any) -> Iterator[LanceFragment]:
        """The dataset's fragments in order."""
        _refuse_extra("FullScanSampler", (), kwargs)
        yield from dataset.get_fragments()


class _Sharded:
    """What the sharded samplers share: rank and world size, `randomize`, `seed` plus the
    epoch for the shuffle, :meth:`from_torch` and the repr."""

    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0) -> None:
        self._rank, self._world_size = _rank_world(rank, world_size)
        self._randomize = bool(randomize)
        self._seed = _non_negative("seed", seed)
        self._epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Shuffle with ``seed + epoch`` from now on (pylance's ignores the epoch)."""
        self._epoch = _non_negative("epoch", epoch)

    @classmethod
    def from_torch(cls, randomize: bool = False, seed: int = 0) -> Any:
        """With the rank and world size of ``torch.distributed`` (initialised)."""
        rank, world_size = _torch_rank_world()
        return cls(rank, world_size, randomize=randomize, seed=seed)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(rank={self._rank}, world_size={self._world_size}, "
            f"randomize={self._randomize}, seed={self._seed})"
        )


class ShardedFragmentSampler(_Sharded, FragmentSampler):
    """Rank `rank` of `world_size` reads fragments ``rank, rank + world_size, ...`` of the
    dataset's fragment list, shuffled first with `seed` (plus the epoch, see
    :meth:`set_epoch`) when `randomize` is true. Reads whole fragments, so it is cheaper than
    :class:`ShardedBatchSampler`, but ranks get as many rows as their fragments hold."""

    def iter_fragments(self, dataset: LanceDataset, **kwargs: Any) -> Iterator[LanceFragment]:
        """This rank's fragments."""
        _refuse_extra("ShardedFragmentSampler", (), kwargs)
        fragments = dataset.get_fragments()
        if self._randomize:
            random.Random(self._seed + self._epoch).shuffle(fragments)
        yield from fragments[self._rank :: self._world_size]


class ShardedBatchSampler(_Sharded, Sampler):
    """Rank `rank` of `world_size` reads every `world_size`-th batch of `batch_size` rows.

    Without a filter, the rows (positions ``0 .. count_rows()``) are cut into batches of
    `batch_size` consecutive rows and rank ``r`` reads batches ``r, r + world_size, ...``
    (one native take each, up to `batch_readahead` batches per call), in order or, with
    `randomize`, in an order shuffled with ``seed + epoch``. With a filter, the row ids of the
    matching rows are found first (a scan of the filter's columns), rank ``r`` takes matches
    ``r, r + world_size, ...``, cut into batches of `batch_size` (the last may be shorter),
    read in order or shuffled the same way.
    """

    def _groups(self, ds: LanceDataset, batch_size: int, filter: Optional[str]) -> List[np.ndarray]:
        if filter is None:
            total = ds.count_rows()
            step = self._world_size * batch_size
            groups = [
                np.arange(s, min(s + batch_size, total), dtype=np.int64)
                for s in range(self._rank * batch_size, total, step)
            ]
        else:
            mine = _matching_row_ids(ds, filter)[self._rank :: self._world_size]
            groups = [mine[i : i + batch_size] for i in range(0, len(mine), batch_size)]
        if self._randomize:
            random.Random(self._seed + self._epoch).shuffle(groups)
        return groups

    def __call__(
        self,
        dataset: LanceDataset,
        *args: Any,
        batch_size: int = 128,
        columns: Columns = None,
        filter: Optional[str] = None,
        batch_readahead: int = 16,
        with_row_id: Optional[bool] = None,
        **kwargs: Any,
    ) -> Iterator[pa.RecordBatch]:
        """This rank's batches (see the class)."""
        _refuse_extra("ShardedBatchSampler", args, kwargs)
        batch_size = _positive("batch_size", batch_size)
        readahead = _non_negative("batch_readahead", batch_readahead)
        if with_row_id:
            # pylance's batches never carry the row ids, and code written for it expects the
            # columns alone (a single column becomes a tensor, not a dict): drop them as it does.
            warnings.warn("with_row_id is not supported for ShardedBatchSampler: its batches hold the columns asked "
                          "for only (as pylance's); use ShardedFragmentSampler for row ids", UserWarning, stacklevel=2)
        return self._read(dataset, batch_size, columns, filter, readahead, with_row_id=False)

    def _read(self, dataset: LanceDataset, batch_size: int, columns: Columns, filter: Optional[str], readahead: int,
              with_row_id: bool) -> Iterator[pa.RecordBatch]:
        """This rank's batches, with ``_rowid`` where `with_row_id` (for readers that fetch
        blobs by row id; the public call drops it as pylance does)."""
        read = _take_reader(dataset, columns, with_row_id, by_row_id=filter is not None)
        return _read_groups(read, self._groups(dataset, batch_size, filter), readahead)



class ShardedFixedBatchSampler(ShardedBatchSampler):
    """Batches of row indices for a map-style dataset (a PyTorch ``batch_sampler``).

    Rank ``r`` of `world_size` gets the ``r``-th contiguous share of ``ceil(total_num_rows /
    world_size)`` indices of ``0 .. total_num_rows``, cut into lists of `batch_size`
    consecutive indices; with `randomize` their order is shuffled with ``seed + epoch``.
    """

    def __init__(
        self,
        rank: int,
        world_size: int,
        randomize: bool = False,
        seed: int = 0,
        batch_size: int = 0,
        total_num_rows: int = 0,
    ) -> None:
        super().__init__(rank, world_size, randomize, seed)
        self._total_num_rows = _non_negative("total_num_rows", total_num_rows)
        self._batch_size = _non_negative("batch_size", batch_size)
        if self._batch_size == 0 and self._total_num_rows:
            raise InvalidArgumentError("batch_size must be positive when total_num_rows is")

    def _share(self) -> Tuple[int, int]:
        per_rank = -(-self._total_num_rows // self._world_size)
        start = min(self._rank * per_rank, self._total_num_rows)
        return start, min(start + per_rank, self._total_num_rows)

    def __len__(self) -> int:
        """Batches this rank gets per epoch."""
        start, end = self._share()
        return -(-(end - start) // self._batch_size) if end > start else 0

    def __iter__(self) -> Iterator[List[int]]:
        start, end = self._share()
        batches = [list(range(s, min(s + self._batch_size, end))) for s in range(start, end, self._batch_size or 1)]
        if self._randomize:
            random.Random(self._seed + self._epoch).shuffle(batches)
        yield from batches

    @staticmethod
    def from_torch(  # type: ignore[override]
        batch_size: int, total_num_rows: int, randomize: bool = False, seed: int = 0
    ) -> "ShardedFixedBatchSampler":
        """With the rank and world size of ``torch.distributed`` (initialised)."""
        rank, world_size = _torch_rank_world()
        return ShardedFixedBatchSampler(rank, world_size, randomize, seed, batch_size, total_num_rows)
