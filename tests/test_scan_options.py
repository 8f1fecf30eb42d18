"""Scan options shared with pylance: include_deleted_rows and strict_batch_size."""

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError


@pytest.fixture(params=[False, True], ids=["addresses", "stable-ids"])
def ds_path(tmp_path, request):
    path = str(tmp_path / "ds")
    table = pa.table({"a": list(range(100)), "s": [f"v{i}" for i in range(100)]})
    lance.write_dataset(table, path, max_rows_per_file=40, enable_stable_row_ids=request.param)
    lance.dataset(path).delete("a % 7 = 3")
    return path


def test_include_deleted_rows_as_pylance(ds_path):
    ours, theirs = lancepy.dataset(ds_path), lance.dataset(ds_path)
    for kw in ({}, {"columns": ["a"]}, {"columns": ["s"], "with_row_address": True}, {"limit": 30, "offset": 5}):
        a = ours.to_table(include_deleted_rows=True, with_row_id=True, **kw)
        b = theirs.to_table(include_deleted_rows=True, with_row_id=True, **kw)
        assert a.to_pydict() == b.to_pydict(), kw
    assert ours.to_table(include_deleted_rows=True, with_row_id=True).num_rows == 100
    frag = ours.get_fragments()[0]
    assert frag.to_table(include_deleted_rows=True, with_row_id=True).to_pydict() == \
        theirs.get_fragments()[0].to_table(include_deleted_rows=True, with_row_id=True).to_pydict()
    with pytest.raises(InvalidArgumentError, match="with_row_id"):
        ours.to_table(include_deleted_rows=True)


def test_strict_batch_size(ds_path):
    ours = lancepy.dataset(ds_path)
    sizes = [b.num_rows for b in ours.to_batches(batch_size=9, strict_batch_size=True)]
    assert all(n == 9 for n in sizes[:-1]) and 0 < sizes[-1] <= 9
    assert sum(sizes) == ours.count_rows()
    strict = pa.Table.from_batches(list(ours.to_batches(batch_size=9, strict_batch_size=True, filter="a > 10")))
    assert strict == ours.to_table(filter="a > 10")
