"""lancepy._dataset.ShardedBatchIterator against pylance's on the same dataset: the same
batches of every rank, by fragment and by row range, with projections, SQL columns and row ids."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pytest

import lancepy
from lancepy._dataset import ShardedBatchIterator
from lancepy.exceptions import InvalidArgumentError, NotSupportedError


@pytest.fixture(scope="module")
def uri(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("shards") / "d.lance")
    t = pa.table({"a": pa.array(range(1186), pa.int64()), "b": pa.array([f"s{i}" for i in range(1186)])})
    lancepy.write_dataset(t, path, max_rows_per_file=100)
    lancepy.dataset(path).delete("a % 13 = 4")
    return path


def _rows(it) -> pa.Table:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pa.Table.from_batches(list(it))


@pytest.mark.parametrize("granularity", ["fragment", "batch"])
@pytest.mark.parametrize("columns", [["a"], None, {"a": "a", "twice": "a * 2"}])
def test_same_shards_as_pylance(uri, pylance, granularity, columns):
    from lance._dataset.sharded_batch_iterator import ShardedBatchIterator as Theirs

    world = 3
    seen = []
    for rank in range(world):
        kw = dict(columns=columns, batch_size=37, granularity=granularity)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = _rows(ShardedBatchIterator(uri, rank, world, **kw))
            if isinstance(columns, dict) and granularity == "batch":
                # pylance's take_scan refuses SQL columns (TypeError): compare with its plain rows.
                a = _rows(Theirs(pylance.dataset(uri), rank, world, **{**kw, "columns": ["a"]})).column("a")
                theirs = pa.table({"a": a, "twice": pa.compute.multiply(a, 2)})
            else:
                theirs = _rows(Theirs(pylance.dataset(uri), rank, world, **kw))
        assert ours.equals(theirs), (rank, granularity, columns)
        seen += ours.column(0).to_pylist()
    assert sorted(seen) == sorted(lancepy.dataset(uri).to_table(columns={"a": "a"}).column("a").to_pylist())


def test_row_ids_and_errors(uri, pylance):
    from lance._dataset.sharded_batch_iterator import ShardedBatchIterator as Theirs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _rows(ShardedBatchIterator(lancepy.dataset(uri), 1, 2, columns=["a"], with_row_id=True))
        theirs = _rows(Theirs(uri, 1, 2, columns=["a"], with_row_id=True))
        assert ours.equals(theirs)
        with pytest.raises(NotSupportedError, match="with_row_id"):
            ShardedBatchIterator(uri, 0, 2, granularity="batch", with_row_id=True)
        for bad in (dict(rank=2, world_size=2), dict(rank=0, world_size=0)):
            with pytest.raises(InvalidArgumentError):
                ShardedBatchIterator(uri, **bad)
        with pytest.raises(InvalidArgumentError, match="granularity"):
            ShardedBatchIterator(uri, 0, 1, granularity="row")
        with pytest.raises(InvalidArgumentError, match="batch_size"):
            ShardedBatchIterator(uri, 0, 1, batch_size=0)
    with pytest.warns(DeprecationWarning):
        ShardedBatchIterator(uri, 0, 1)
