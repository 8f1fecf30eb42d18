"""Orders of rows: :class:`ShuffleSampler`, the per-epoch order it and
:class:`~lancepy.torch.LanceIterableDataset` share out to ranks (:class:`_Order`), and the
rank / world size defaults from ``torch.distributed``."""

from __future__ import annotations

import itertools
import numbers
import operator
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

import numpy as np
import numpy.random  # noqa: F401  (numpy loads it lazily: ~50 ms on first use, paid here, not by the first batch)
import torch
import torch.utils.data

from lancepy.exceptions import InvalidArgumentError


def _num_rows(dataset_or_len: Any) -> int:
    if isinstance(dataset_or_len, numbers.Integral) and not isinstance(dataset_or_len, bool):
        n = int(dataset_or_len)
    else:
        n = len(dataset_or_len)
    if n < 0:
        raise InvalidArgumentError(f"a dataset cannot have {n} rows")
    return n


def _rank_world(rank: Optional[int], world_size: Optional[int]) -> Tuple[int, int]:
    """Explicit values, else torch.distributed's when it is initialised, else (0, 1)."""
    if rank is None or world_size is None:
        dist = torch.distributed
        initialised = dist.is_available() and dist.is_initialized()
        if rank is None:
            rank = dist.get_rank() if initialised else 0
        if world_size is None:
            world_size = dist.get_world_size() if initialised else 1
    rank, world_size = int(rank), int(world_size)
    if world_size < 1:
        raise InvalidArgumentError(f"world_size must be at least 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise InvalidArgumentError(f"rank must be in [0, {world_size}), got {rank}")
    return rank, world_size


class _Order:
    """The order of one epoch: a permutation (or the identity), shared out to ranks."""

    def __init__(
        self,
        num_rows: int,
        seed: int,
        shuffle: bool,
        block_size: Optional[int],
        buffer_size: Optional[int],
        drop_last: bool,
    ) -> None:
        if not isinstance(seed, numbers.Integral) or seed < 0:
            raise InvalidArgumentError(f"seed must be a non-negative integer, got {seed!r}")
        if block_size is not None and (not isinstance(block_size, numbers.Integral) or block_size < 1):
            raise InvalidArgumentError(f"block_size must be a positive integer, got {block_size!r}")
        if buffer_size is not None and (not isinstance(buffer_size, numbers.Integral) or buffer_size < 1):
            raise InvalidArgumentError(f"buffer_size must be a positive integer, got {buffer_size!r}")
        if buffer_size is not None and block_size is None:
            raise InvalidArgumentError("buffer_size only applies with block_size")
        self.num_rows = num_rows
        self.seed = int(seed)
        self.shuffle = bool(shuffle)
        self.block_size = None if block_size is None or block_size == 1 else int(block_size)
        self.buffer_size = None if self.block_size is None else int(buffer_size or 16 * self.block_size)
        self.drop_last = bool(drop_last)

    def share_len(self, world_size: int) -> int:
        n = self.num_rows
        return n // world_size if self.drop_last else -(-n // world_size)

    def epoch_order(self, epoch: int) -> np.ndarray:
        """Every row, in the order of `epoch` (deterministic in seed and epoch)."""
        n = self.num_rows
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        if epoch < 0:
            raise InvalidArgumentError(f"epoch must be non-negative, got {epoch}")
        rng = np.random.default_rng([self.seed, int(epoch)])
        if self.block_size is None:
            return rng.permutation(n).astype(np.int64, copy=False)
        k = self.block_size
        blocks = rng.permutation(-(-n // k)).astype(np.int64)
        starts = blocks * k
        lengths = np.minimum(k, n - starts)
        # Rows of the blocks, block after block: start of each row's block + its position.
        ends = np.cumsum(lengths)
        order = np.repeat(starts - (ends - lengths), lengths) + np.arange(n, dtype=np.int64)
        # Then shuffle rows within consecutive windows of buffer_size (a bounded buffer).
        window = np.arange(n, dtype=np.int64) // self.buffer_size
        return order[np.lexsort((rng.random(n), window))]

    def share(self, epoch: int, rank: int, world_size: int) -> np.ndarray:
        """Rank `rank`'s share of `epoch`: a contiguous slice of the epoch's order, padded
        (by wrapping around to its start) or cut so that every rank gets the same number."""
        per = self.share_len(world_size)
        order = self.epoch_order(epoch)
        total = per * world_size
        if total > len(order):
            order = np.concatenate([order, np.resize(order, total - len(order))])
        return order[rank * per : (rank + 1) * per]

    def state(self) -> Dict[str, Any]:
        return {
            "num_rows": self.num_rows,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "block_size": self.block_size,
            "buffer_size": self.buffer_size,
            "drop_last": self.drop_last,
        }


_FIRST_CHUNK = 1024  # indices turned into Python ints before the first is handed out
_MAX_CHUNK = 65536


class ShuffleSampler(torch.utils.data.Sampler):
    """Row indices for a :class:`LanceDataset`: a full permutation of the live rows per epoch.

    Parameters
    ----------
    dataset_or_len:
        The dataset (anything with ``len``) or its number of rows.
    seed:
        With the epoch, decides the permutation (the same in every process).
    rank, world_size:
        Distributed training: this rank gets a disjoint share of every epoch, of equal length on
        every rank (padded with rows from the start of the epoch's order, or cut with
        `drop_last`), so that no rank waits for another. Default: from ``torch.distributed``
        when it is initialised, else a single process.
    drop_last:
        Cut the epoch to a multiple of `world_size` instead of padding it.
    block_size:
        Shuffle blocks of `block_size` consecutive rows, then rows within windows of
        `buffer_size` rows (default ``16 * block_size``) of that order: fewer, larger reads.
    shuffle:
        ``False``: rows in order (still shared out to ranks).

    ``set_epoch(e)`` picks epoch ``e``'s order. ``state_dict()`` records the epoch and how many
    indices this sampler has handed out in it; after ``load_state_dict`` the next iteration
    yields exactly the rest of that epoch, in the same order. A DataLoader with workers fetches
    ahead of what the training loop has consumed: pass ``consumed=`` (rows consumed since the
    current iteration started) to ``state_dict`` for an exact position then.
    """

    def __init__(
        self,
        dataset_or_len: Any,
        seed: int = 0,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        drop_last: bool = False,
        *,
        block_size: Optional[int] = None,
        buffer_size: Optional[int] = None,
        shuffle: bool = True,
    ) -> None:
        self._order = _Order(_num_rows(dataset_or_len), seed, shuffle, block_size, buffer_size, drop_last)
        self.rank, self.world_size = _rank_world(rank, world_size)
        self.epoch = 0
        self._resume: Optional[int] = None  # position to start the next iteration at
        self._iter: Optional[Iterator[int]] = None  # the current iteration
        self._iter_start = 0  # where in the share it started
        self._chunk: Iterator[int] = iter(())  # the list iterator of the chunk being handed out
        self._chunk_end = 0  # the position in the share just after that chunk

    @property
    def seed(self) -> int:
        return self._order.seed

    @property
    def num_samples(self) -> int:
        """Indices per epoch for this rank."""
        return self._order.share_len(self.world_size)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Uses epoch `epoch`'s order from the next iteration on (a pending resume of the same
        epoch is kept)."""
        epoch = operator.index(epoch)
        if epoch < 0:
            raise InvalidArgumentError(f"epoch must be non-negative, got {epoch}")
        if epoch != self.epoch:
            self.epoch = epoch
            self._resume = None
            self._iter = None

    def indices(self, epoch: Optional[int] = None) -> np.ndarray:
        """This rank's indices of `epoch` (default: the current one), in order."""
        return self._order.share(self.epoch if epoch is None else epoch, self.rank, self.world_size)

    def __iter__(self) -> Iterator[int]:
        share = self.indices()
        start = self._resume or 0
        self._resume = None
        self._chunk, self._chunk_end = iter(()), start
        it = itertools.chain.from_iterable(self._chunks(share, start))
        self._iter, self._iter_start = it, start
        return it

    def _chunks(self, share: np.ndarray, start: int) -> Iterator[Iterator[int]]:
        """The share from `start` as list iterators of growing chunks: the first batch does not
        wait for a whole epoch to become Python ints, and handing out an index stays C code
        (chain over list iterators). Each chunk's iterator is kept so that its length hint
        gives the exact position."""
        pos, size = start, _FIRST_CHUNK
        while pos < len(share):
            end = min(pos + size, len(share))
            self._chunk, self._chunk_end = iter(share[pos:end].tolist()), end
            yield self._chunk
            pos, size = end, min(size * 4, _MAX_CHUNK)

    def _position(self) -> int:
        if self._resume is not None:
            return self._resume
        if self._iter is None:
            return 0
        return self._chunk_end - operator.length_hint(self._chunk)

    def state_dict(self, consumed: Optional[int] = None) -> Dict[str, Any]:
        """The epoch and the position in it (indices of this rank's share already handed out,
        or, with `consumed`, the current iteration's start plus `consumed`)."""
        if consumed is None:
            position = self._position()
        else:
            start = self._resume if self._resume is not None else (self._iter_start if self._iter is not None else 0)
            position = min(start + int(consumed), self.num_samples)
        return {"epoch": self.epoch, "position": position, "world_size": self.world_size, **self._order.state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resumes: the next iteration yields the rest of the recorded epoch."""
        mine = {"world_size": self.world_size, **self._order.state()}
        diff = {k: (state.get(k), v) for k, v in mine.items() if k in state and state[k] != v}
        if diff:
            detail = ", ".join(f"{k}: saved {a!r}, now {b!r}" for k, (a, b) in diff.items())
            raise InvalidArgumentError(f"the saved sampler state is for a different order ({detail})")
        position = int(state["position"])
        if not 0 <= position <= self.num_samples:
            raise InvalidArgumentError(f"position {position} is outside an epoch of {self.num_samples} indices")
        self.epoch = int(state["epoch"])
        self._iter = None
        self._resume = position

    def __repr__(self) -> str:
        o = self._order
        return (
            f"ShuffleSampler(rows={o.num_rows}, seed={o.seed}, epoch={self.epoch}, rank={self.rank}, "
            f"world_size={self.world_size}, block_size={o.block_size})"
        )
