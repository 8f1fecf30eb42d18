"""A data file whose column type disagrees with the dataset's schema is refused.

Reinterpreting such a file's buffers gives a silently wrong answer (pylance 14 reads
an int64 file column under an int32 field as the int32 of its low bytes); lancepy
raises :class:`CorruptFileError` on every read path instead.
"""

import os
import shutil

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import CorruptFileError


def _data_file(uri):
    ds = lancepy.dataset(uri)
    return os.path.join(uri, "data", ds.get_fragments()[0].data_files()[0].path)


CASES = {
    "int64 under int32": (pa.array([1, 2, 3], pa.int32()), pa.array([2**40, 5, 6], pa.int64())),
    "int32 under int64": (pa.array([1, 2, 3], pa.int64()), pa.array([7, 8, 9], pa.int32())),
    "float under int": (pa.array([1, 2, 3], pa.int64()), pa.array([1.5, 2.5, 3.5], pa.float64())),
    "string under binary": (pa.array([b"a", b"b", b"c"]), pa.array(["x", "y", "z"])),
    "vector width": (
        pa.array([[1.0, 2.0]] * 3, pa.list_(pa.float32(), 2)),
        pa.array([[1.0, 2.0, 3.0, 4.0]] * 3, pa.list_(pa.float32(), 4)),
    ),
    "list item type": (
        pa.array([[1], [2], [3]], pa.list_(pa.int32())),
        pa.array([[1], [2], [3]], pa.list_(pa.int64())),
    ),
    "struct child type": (
        pa.array([{"x": 1}] * 3, pa.struct([("x", pa.int32())])),
        pa.array([{"x": 1}] * 3, pa.struct([("x", pa.float32())])),
    ),
}


@pytest.fixture(params=sorted(CASES), ids=sorted(CASES))
def swapped(request, tmp_path):
    declared, stored = CASES[request.param]
    uri = str(tmp_path / "declared.lance")
    lancepy.write_dataset(pa.table({"id": pa.array([0, 1, 2], pa.int64()), "a": declared}), uri)
    other = str(tmp_path / "stored.lance")
    lancepy.write_dataset(pa.table({"id": pa.array([0, 1, 2], pa.int64()), "a": stored}), other)
    shutil.copy(_data_file(other), _data_file(uri))
    return uri


@pytest.mark.parametrize(
    "read",
    [
        lambda ds: ds.to_table(),
        lambda ds: ds.to_table(columns=["a"]),
        lambda ds: ds.to_table(filter="id >= 1"),
        lambda ds: ds.take([0, 2]),
        lambda ds: ds.take([2, 0, 2], columns=["a"]),
        lambda ds: ds.get_fragments()[0].to_table(),
        lambda ds: ds._take_rows([0, 1]),
    ],
    ids=["scan", "projection", "filter", "take", "take-repeats", "fragment", "take-rows"],
)
def test_every_read_path_refuses_the_file(swapped, read):
    with pytest.raises(CorruptFileError, match=r"the file stores .* where the dataset's schema says"):
        read(lancepy.dataset(swapped))


def test_columns_that_agree_are_still_read(swapped):
    assert lancepy.dataset(swapped).to_table(columns=["id"])["id"].to_pylist() == [0, 1, 2]


def test_a_time_zone_difference_reads_the_same_instants(tmp_path):
    uri = str(tmp_path / "tz.lance")
    values = [0, 10**9, 2 * 10**9]
    lancepy.write_dataset(pa.table({"t": pa.array(values, pa.timestamp("us", "UTC"))}), uri)
    other = str(tmp_path / "naive.lance")
    lancepy.write_dataset(pa.table({"t": pa.array(values, pa.timestamp("us"))}), other)
    shutil.copy(_data_file(other), _data_file(uri))
    got = lancepy.dataset(uri).to_table()["t"]
    assert got.type == pa.timestamp("us", "UTC")
    assert got.cast(pa.int64()).to_pylist() == values
