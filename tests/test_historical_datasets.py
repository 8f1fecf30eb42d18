"""Datasets written by older pylance releases (``tests/data/README.md``) read as pylance 14
reads them, and stay readable by it after lancepy writes to them."""

from __future__ import annotations

import os
import shutil

import lance
import pyarrow as pa
import pytest

import lancepy

DATA = os.path.join(os.path.dirname(__file__), "data")


@pytest.fixture
def v013(tmp_path):
    path = str(tmp_path / "v013.lance")
    shutil.copytree(os.path.join(DATA, "pylance-0.13.0_string_encoding.lance"), path)
    return path


def test_two_column_strings_read_as_pylance_reads_them(v013):
    ds = lancepy.dataset(v013)
    expected = lance.dataset(v013).to_table()
    assert ds.to_table().equals(expected)
    assert ds.to_table().column("strings").to_pylist() == ["foo", "bar", "baz"]
    assert ds.to_table(columns=["bins"]).column("bins").to_pylist() == [b"foo", b"bar", b"baz"]
    assert ds.take([2, 0, 2], columns=["strings", "more_numbers"]).to_pylist() == [
        {"strings": "baz", "more_numbers": 6},
        {"strings": "foo", "more_numbers": 4},
        {"strings": "baz", "more_numbers": 6},
    ]
    assert ds.to_table(filter="strings = 'bar' or bins = X'62617a'").column("numbers").to_pylist() == [2, 3]
    assert ds.count_rows("strings like 'b%'") == 2
    (frag,) = ds.get_fragments()
    assert frag.to_table(columns=["bins", "numbers"]).equals(expected.select(["bins", "numbers"]))


def test_the_file_reader_maps_columns_past_two_column_strings(v013):
    (name,) = os.listdir(os.path.join(v013, "data"))
    reader = lancepy.LanceFileReader(os.path.join(v013, "data", name))
    table = reader.read_all().to_table()
    assert table.column("more_numbers").to_pylist() == [4, 5, 6]
    assert reader.read_range(1, 2, columns=["bins"]).to_table().column("bins").to_pylist() == [b"bar", b"baz"]
    assert reader.take_rows([1]).to_table().column("strings").to_pylist() == ["bar"]


def test_appends_and_deletes_by_lancepy_stay_readable_by_pylance(v013):
    ds = lancepy.dataset(v013)
    more = pa.table({"numbers": [7], "strings": ["qux"], "bins": [b"qux"], "more_numbers": [8]}, schema=ds.schema)
    lancepy.write_dataset(more, v013, mode="append")
    lancepy.dataset(v013).delete("numbers = 2")
    got = lancepy.dataset(v013).to_table()
    assert got.equals(lance.dataset(v013).to_table())
    assert got.column("strings").to_pylist() == ["foo", "baz", "qux"]


def _file_versions(fragments):
    return sorted({(f.file_major_version, f.file_minor_version) for frag in fragments for f in frag.files})


def test_fragments_appended_to_a_manifest_without_data_format_use_its_files_version(v013, tmp_path):
    # The 0.13 manifest records no data_format: the version of new files is inferred from
    # the dataset's own files (2.0), as pylance 14 does, not lancepy's default for new data.
    theirs = str(tmp_path / "theirs.lance")
    shutil.copytree(v013, theirs)
    more = pa.table({"numbers": [7, 8], "strings": ["qux", None], "bins": [b"qux", b""], "more_numbers": [8, 9]},
                    schema=lance.dataset(v013).schema)
    ours = lancepy.fragment.write_fragments(more, v013, mode="append")
    expected = lance.fragment.write_fragments(more, theirs, mode="append")
    assert _file_versions(ours) == _file_versions(expected) == [(2, 0)]
    lancepy.LanceDataset.commit(v013, lancepy.LanceOperation.Append(ours), read_version=1)
    lance.LanceDataset.commit(theirs, lance.LanceOperation.Append(expected), read_version=1)
    want = lance.dataset(theirs).to_table()
    assert lance.dataset(v013).to_table().equals(want)
    assert lancepy.dataset(v013).to_table().equals(want)
    assert lancepy.dataset(theirs).to_table().equals(lancepy.dataset(v013).to_table())
    assert lancepy.dataset(v013).data_storage_version == lance.dataset(v013).data_storage_version == "2.0"
