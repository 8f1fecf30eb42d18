"""``ShardedBatchIterator``: one rank's share of a dataset's record batches (pylance's
deprecated sharding iterator, same arguments and order; :mod:`lancepy.sampler` is the
successor)."""

from __future__ import annotations

import operator
import os
import warnings
from typing import Dict, Iterator, List, Union

import pyarrow as pa

import lancepy
from lancepy.dataset import LanceDataset
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

__all__ = ["ShardedBatchIterator"]

Columns = Union[List[str], Dict[str, str], None]


class ShardedBatchIterator:
    """The record batches of shard `rank` of `world_size`.

    ``granularity="fragment"`` (the default): the fragments ``rank, rank + world_size, ...``,
    each read in `batch_size` batches. ``granularity="batch"``: the row ranges
    ``[k * batch_size, (k + 1) * batch_size)`` for ``k = rank, rank + world_size, ...``, one
    batch each (the last may be short). `columns` is a list of names or a dict of output name ->
    SQL expression.
    """

    def __init__(
        self,
        data: Union[str, "os.PathLike[str]", LanceDataset],
        rank: int,
        world_size: int,
        *,
        columns: Columns = None,
        batch_size: int = 1024 * 10,
        granularity: str = "fragment",
        batch_readahead: int = 8,
        with_row_id: bool = False,
    ) -> None:
        warnings.warn("ShardedBatchIterator is deprecated: use lancepy.sampler", DeprecationWarning, stacklevel=2)
        rank, world_size, batch_size = operator.index(rank), operator.index(world_size), operator.index(batch_size)
        if world_size < 1 or not 0 <= rank < world_size:
            raise InvalidArgumentError(f"rank must be in [0, world_size), got rank={rank}, world_size={world_size}")
        if batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be positive, got {batch_size}")
        if granularity not in ("fragment", "batch"):
            raise InvalidArgumentError(f"granularity must be 'fragment' or 'batch', got {granularity!r}")
        if granularity == "batch" and with_row_id:
            raise NotSupportedError("with_row_id=True with granularity='batch'")
        self._ds = data if isinstance(data, LanceDataset) else lancepy.dataset(os.fspath(data))
        self._rank, self._world_size, self._batch_size = rank, world_size, batch_size
        self._granularity, self._columns = granularity, columns
        self._batch_readahead, self._with_row_id = batch_readahead, with_row_id

    @staticmethod
    def from_torch(
        data: Union[str, "os.PathLike[str]", LanceDataset],
        *,
        columns: Columns = None,
        batch_size: int = 1024 * 10,
        granularity: str = "fragment",
        batch_readahead: int = 8,
        with_row_id: bool = False,
    ) -> "ShardedBatchIterator":
        """Rank and world size from ``torch.distributed`` (which must be initialised)."""
        import torch.distributed as dist

        return ShardedBatchIterator(
            data, dist.get_rank(), dist.get_world_size(), columns=columns, batch_size=batch_size,
            granularity=granularity, batch_readahead=batch_readahead, with_row_id=with_row_id,
        )

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self._by_fragment() if self._granularity == "fragment" else self._by_range()

    def _by_fragment(self) -> Iterator[pa.RecordBatch]:
        fragments = self._ds.get_fragments()
        for fragment in fragments[self._rank :: self._world_size]:
            yield from fragment.to_batches(
                columns=self._columns, batch_size=self._batch_size, with_row_id=self._with_row_id,
                batch_readahead=self._batch_readahead,
            )

    def _by_range(self) -> Iterator[pa.RecordBatch]:
        total = self._ds.count_rows()
        step = self._world_size * self._batch_size
        for start in range(self._rank * self._batch_size, total, step):
            table = self._ds.to_table(columns=self._columns, offset=start, limit=min(self._batch_size, total - start))
            yield from table.combine_chunks().to_batches()
