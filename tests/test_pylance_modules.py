"""pylance's module layout on lancepy: names pylance users import (``lance.vector.vec_to_table``,
``lance.progress``, ``LANCE_COMMIT_MESSAGE_KEY``), each compared with pylance's on the same
input."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

lance = pytest.importorskip("lance")
import lance.progress  # noqa: E402
import lance.vector  # noqa: E402

import lancepy.progress  # noqa: E402
import lancepy.vector  # noqa: E402


@pytest.mark.parametrize(
    "data, kwargs",
    [
        ({"a": np.arange(4.0), "b": np.ones(4)}, {}),
        ({"a": [1, 2, 3], "b": [4, 5, 6]}, {"names": ["key", "emb"]}),
        ([[1.5, 2.5], [3.5, 4.5], [5.5, 6.5]], {}),
        ([[1, 2], [3, 4]], {"names": "vec"}),
        ([[1, 2], [3, 4]], {"names": ["vec"]}),
        (np.random.default_rng(0).standard_normal((50, 16)), {}),
        (np.arange(12, dtype=np.int64).reshape(3, 4), {"ndim": 4}),
        (np.arange(12.0).reshape(4, 3), {"check_ndim": False}),
    ],
)
def test_vec_to_table_matches_pylance(data, kwargs):
    ours = lancepy.vector.vec_to_table(data, **kwargs)
    theirs = lance.vector.vec_to_table(data, **kwargs)
    assert ours.schema == theirs.schema
    assert ours.equals(theirs)


def test_vec_to_table_refuses_what_pylance_refuses():
    with pytest.raises(ValueError):
        lance.vector.vec_to_table([[1, 2], [3]])
    with pytest.raises(InvalidArgumentError, match="2 dimensions"):
        lancepy.vector.vec_to_table([[1, 2], [3]])
    with pytest.raises(InvalidArgumentError, match="two column names"):
        lancepy.vector.vec_to_table({"a": [1.0]}, names=["only"])
    with pytest.raises(InvalidArgumentError, match="one column name"):
        lancepy.vector.vec_to_table([[1.0]], names=["a", "b"])
    with pytest.raises(NotSupportedError):
        lancepy.vector.vec_to_table("not vectors")
    empty = lancepy.vector.vec_to_table([], ndim=3)
    assert empty.num_rows == 0 and empty.schema.field("vector").type == pa.list_(pa.float32(), 3)
    with pytest.raises(InvalidArgumentError, match="ndim"):
        lancepy.vector.vec_to_table([])


def test_vec_to_table_writes_a_dataset_pylance_reads(tmp_path):
    table = lancepy.vector.vec_to_table(np.random.default_rng(1).standard_normal((100, 8)))
    lancepy.write_dataset(table, str(tmp_path / "v.lance"))
    assert lance.dataset(str(tmp_path / "v.lance")).to_table().equals(table)


class _Recorder(lancepy.progress.FragmentWriteProgress):
    def __init__(self):
        self.events = []

    def begin(self, fragment, **kwargs):
        self.events.append("begin")

    def complete(self, fragment, **kwargs):
        self.events.append(("complete", fragment.physical_rows))


def test_fragment_write_progress_subclass_hears_every_fragment(tmp_path):
    progress = _Recorder()
    table = pa.table({"x": list(range(250))})
    lancepy.write_dataset(table, str(tmp_path / "p.lance"), max_rows_per_file=100, progress=progress)
    assert progress.events == ["begin", ("complete", 100), "begin", ("complete", 100), "begin", ("complete", 50)]
    with pytest.raises(TypeError):
        lancepy.progress.FragmentWriteProgress()  # abstract, as pylance's
    lancepy.write_dataset(table, str(tmp_path / "q.lance"), progress=lancepy.progress.NoopFragmentWriteProgress())


def test_file_system_progress_writes_pylances_files(tmp_path):
    frag = lancepy.fragment.write_fragments(pa.table({"x": [1, 2, 3]}), str(tmp_path / "d.lance"))[0]
    ours_dir, theirs_dir = tmp_path / "ours", tmp_path / "theirs"
    ours = lancepy.progress.FileSystemFragmentWriteProgress(str(ours_dir), {"worker": "7"})
    theirs = lance.progress.FileSystemFragmentWriteProgress(str(theirs_dir), {"worker": "7"})
    their_frag = lance.FragmentMetadata.from_json(json.dumps(frag.to_json()))
    ours.begin(frag)
    theirs.begin(their_frag)
    assert sorted(os.listdir(ours_dir)) == sorted(os.listdir(theirs_dir)) == ["fragment_0.in_progress", "fragment_0.json"]
    for name in os.listdir(ours_dir):
        assert json.loads((ours_dir / name).read_text()) == json.loads((theirs_dir / name).read_text()), name
    ours.complete(frag)
    theirs.complete(their_frag)
    assert os.listdir(ours_dir) == os.listdir(theirs_dir) == ["fragment_0.json"]


def test_index_progress_as_pylance():
    for args in [("start", "train"), ("progress", "assign", 5, 10, "rows"), ("complete", "x", 3, 0), ("progress", "y", 20, 10)]:
        ours, theirs = lancepy.IndexProgress(*args), lance.IndexProgress(*args)
        assert (ours.event, ours.stage, ours.completed, ours.total, ours.unit, ours.fraction) == (
            theirs.event, theirs.stage, theirs.completed, theirs.total, theirs.unit, theirs.fraction
        )


def test_commit_message_key_is_pylances(tmp_path):
    from lance.dataset import LANCE_COMMIT_MESSAGE_KEY as theirs

    from lancepy.dataset import LANCE_COMMIT_MESSAGE_KEY as ours

    assert ours == theirs
    uri = str(tmp_path / "m.lance")
    lancepy.write_dataset(pa.table({"x": [1]}), uri, commit_message="hello")
    assert lance.dataset(uri).read_transaction(1).transaction_properties[theirs] == "hello"


@pytest.mark.parametrize("large", [False, True])
def test_blob_column_as_pylance(large):
    values = [b"abc", None, b"", b"\x00" * 1000]
    arr = pa.array(values, pa.large_binary() if large else pa.binary())
    for column in (arr, pa.chunked_array([arr.slice(0, 2), arr.slice(2)])):
        ours = [f.read() for f in lancepy.BlobColumn(column)]
        theirs = [f.read() for f in lance.BlobColumn(column)]
        assert ours == theirs == [b"abc", b"", b"", b"\x00" * 1000]
    with pytest.raises(ValueError):
        lancepy.BlobColumn(pa.array([1, 2]))
    with pytest.raises(ValueError):
        lancepy.BlobColumn([b"a"])


def test_debug_dumps_name_the_facts_pylances_do(tmp_path):
    import lance.debug

    import lancepy.debug

    uri = str(tmp_path / "dbg.lance")
    table = pa.table({"a": [1, 2, 3], "s": pa.array([{"x": 1}] * 3)})
    lancepy.write_dataset(table, uri)
    lancepy.write_dataset(table, uri, mode="append", commit_message="second")
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    frag = ours.get_fragments()[0]
    for text in (lancepy.debug.format_fragment(frag.metadata, ours), lancepy.debug.format_fragment(frag, ours),
                 lance.debug.format_fragment(theirs.get_fragments()[0].metadata, theirs)):
        assert "major_version: 2" in text and "id: 0" in text
    for text in (lancepy.debug.format_schema(ours), lance.debug.format_schema(theirs)):
        assert 'name: "a"' in text and 'name: "x"' in text and "parent_id: 1" in text
    assert "fragments" in lancepy.debug.format_manifest(ours)
    ours_txns, theirs_txns = lancepy.debug.list_transactions(ours), lance.debug.list_transactions(theirs)
    assert len(ours_txns) == len(theirs_txns) == 2
    assert "Append" in ours_txns[0] and "Overwrite" in ours_txns[1]
    assert "Append" in theirs_txns[0] and "Overwrite" in theirs_txns[1]
    assert len(lancepy.debug.list_transactions(ours, max_transactions=1)) == 1
