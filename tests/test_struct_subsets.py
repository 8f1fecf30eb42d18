"""Appends of some of a dataset's columns, or of a struct without some of its children, as
pylance 14 writes them: data files of just the fields given (the data file lists only their
ids); the others read as nulls. And a struct whose child pylance dropped (files keep it).

Before, lancepy could not read such a pylance dataset ("the file stores Struct(x) where the
dataset's schema says Struct(x, y)"), refused such an append, and wrote a top-level subset
append as files holding every column (nulls for the missing ones)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import SchemaMismatchError

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
pytestmark = pytest.mark.interop

INNER = pa.struct([pa.field("p", pa.int32()), pa.field("q", pa.string())])
C = pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.int32()), pa.field("n", INNER)])
SCHEMA = pa.schema([pa.field("a", pa.int64()), pa.field("c", C), pa.field("z", pa.string())])


def write(lib, uri: str) -> None:
    lib.write_dataset(pa.table({"a": [1, 2], "c": pa.array([{"x": 1, "y": 2, "n": {"p": 1, "q": "a"}}, None], C),
                                "z": ["u", None]}, schema=SCHEMA), uri)
    # a struct with one of its children
    lib.write_dataset(pa.table({"a": [3, 4], "c": pa.array([{"x": 5}, None], pa.struct([pa.field("x", pa.int32())])),
                                "z": ["v", "w"]}), uri, mode="append")
    # columns in another order, a nested struct with some children, a column left out
    nested = pa.struct([pa.field("n", pa.struct([pa.field("q", pa.string())])), pa.field("y", pa.int32())])
    lib.write_dataset(pa.table({"c": pa.array([{"n": {"q": "z"}, "y": 9}], nested), "a": [5]}), uri, mode="append")


EXPECTED = [
    {"a": 1, "c": {"x": 1, "y": 2, "n": {"p": 1, "q": "a"}}, "z": "u"},
    {"a": 2, "c": None, "z": None},
    {"a": 3, "c": {"x": 5, "y": None, "n": None}, "z": "v"},
    {"a": 4, "c": None, "z": "w"},
    {"a": 5, "c": {"x": None, "y": 9, "n": {"p": None, "q": "z"}}, "z": None},
]


def data_file_fields(uri: str):
    return [[f.fields for f in frag.metadata.files] for frag in lance.dataset(uri).get_fragments()]


@pytest.mark.parametrize("writer", ["pylance", "lancepy"])
def test_partial_struct_appends_read_alike(tmp_path, writer) -> None:
    uri = str(tmp_path / "d.lance")
    write(lance if writer == "pylance" else lancepy, uri)
    # pylance's layout: the files list only the leaf ids given ([a, c.x, z], [c.n.q, c.y, a])
    assert data_file_fields(uri) == [[[0, 2, 3, 5, 6, 7]], [[0, 2, 7]], [[6, 3, 0]]]
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    assert ours.to_table().to_pylist() == EXPECTED == theirs.to_table().to_pylist()
    assert ours.schema == theirs.schema
    reads = {
        "take": lambda d: d.take([4, 0, 2, 3]).to_pylist(),
        "column": lambda d: d.to_table(columns=["c"]).to_pylist(),
        "nested column": lambda d: d.to_table(columns=["c.x", "a"]).to_pylist(),
        "filter on a child": lambda d: d.to_table(filter="c.x = 5").to_pylist(),
        "filter on a nested child": lambda d: d.to_table(filter="c.n.q = 'z'").to_pylist(),
        "child is null": lambda d: sorted(d.to_table(filter="c.y IS NULL").column("a").to_pylist()),
        "batches": lambda d: [b.to_pylist() for b in d.to_batches(batch_size=2)],
        "count": lambda d: d.count_rows("c.n.p IS NULL"),
    }
    for name, read in reads.items():
        assert read(ours) == read(theirs), name


def test_a_dropped_struct_child_and_a_compaction(tmp_path) -> None:
    uri = str(tmp_path / "d.lance")
    write(lance, uri)
    lance.dataset(uri).drop_columns(["c.y"])  # (the files keep c.y)
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    assert ours.schema == theirs.schema
    assert ours.to_table().to_pylist() == theirs.to_table().to_pylist()
    assert ours.take([4, 1]).to_pylist() == theirs.take([4, 1]).to_pylist()
    lancepy.write_dataset(pa.table({"a": [6], "c": pa.array([{"x": 7, "n": {"p": 2, "q": "w"}}], ours.schema.field("c").type)}),
                          uri, mode="append")
    lancepy.dataset(uri).optimize.compact_files()
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    assert len(ours.get_fragments()) == 1
    assert ours.to_table().to_pylist() == theirs.to_table().to_pylist()
    assert ours.to_table().column("a").to_pylist() == [1, 2, 3, 4, 5, 6]


def test_missing_non_nullable_fields_are_refused(tmp_path) -> None:
    c = pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.int32(), nullable=False)])
    uri = str(tmp_path / "n.lance")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("c", c)])
    lancepy.write_dataset(pa.table({"id": [1], "c": pa.array([{"x": 1, "y": 2}], c)}, schema=schema), uri)
    with pytest.raises(SchemaMismatchError, match="non-nullable field 'y'"):
        lancepy.write_dataset(pa.table({"id": [2], "c": pa.array([{"x": 5}], pa.struct([pa.field("x", pa.int32())]))}),
                              uri, mode="append")
    with pytest.raises(SchemaMismatchError, match="missing columns"):
        lancepy.write_dataset(pa.table({"c": pa.array([{"x": 5, "y": 1}], c)}), uri, mode="append")
    assert lancepy.dataset(uri).version == 1  # (nothing committed)


def test_a_top_level_subset_append_writes_only_its_columns(tmp_path) -> None:
    uri = str(tmp_path / "t.lance")
    lancepy.write_dataset(pa.table({"a": [1], "b": ["x"], "c": [1.5]}), uri)
    lancepy.write_dataset(pa.table({"c": [2.5], "a": [2]}), uri, mode="append")
    assert data_file_fields(uri) == [[[0, 1, 2]], [[2, 0]]]  # (as pylance writes it)
    want = {"a": [1, 2], "b": ["x", None], "c": [1.5, 2.5]}
    assert lancepy.dataset(uri).to_table().to_pydict() == want == lance.dataset(uri).to_table().to_pydict()
