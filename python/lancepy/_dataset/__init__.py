"""Iterators over a dataset kept under pylance's module path ``lance._dataset``:
:class:`~lancepy._dataset.sharded_batch_iterator.ShardedBatchIterator`."""

from .sharded_batch_iterator import ShardedBatchIterator

__all__ = ["ShardedBatchIterator"]
