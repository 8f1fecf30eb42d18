"""pylance's blob-v2 input API (``blob_field`` / ``blob_array``) and external blobs
(values given as URIs, with optional slices): written and read by both libraries."""

import os

import lance
import pyarrow as pa
import pytest
from lance import Blob, blob_array, blob_field

import lancepy
from lancepy.exceptions import InvalidArgumentError


@pytest.fixture
def external(tmp_path):
    path = tmp_path / "outside.bin"
    path.write_bytes(b"hello-external-bytes\n" + bytes(range(256)) * 400)
    return "file://" + str(path), path.read_bytes()


def _table(uri):
    values = [b"inline", uri, None, Blob.from_uri(uri, position=6, size=8), b"q" * 100_000, b"p" * 5_000_000]
    return pa.table({"id": list(range(len(values))), "b": blob_array(values)},
                    schema=pa.schema([pa.field("id", pa.int64()), blob_field("b")]))


def _expected(content):
    return [b"inline", content, None, content[6:14], b"q" * 100_000, b"p" * 5_000_000]


def _read(ds, n=6):
    return [None if f is None else f.read() for f in ds.take_blobs("b", indices=list(range(n)))]


def test_blob_array_of_bytes_is_written_as_pylance_writes_it(tmp_path):
    """pylance's documented way to write blob v2 columns, through lancepy."""
    t = pa.table({"id": [0, 1, 2], "b": blob_array([b"hello blob v2", None, b"x" * 70_000])},
                 schema=pa.schema([pa.field("id", pa.int64()), blob_field("b")]))
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lancepy.write_dataset(t, ours)
    lance.write_dataset(t, theirs)
    for path in (ours, theirs):
        for ds in (lancepy.dataset(path), lance.dataset(path)):
            assert _read(ds, 3) == [b"hello blob v2", None, b"x" * 70_000]
    assert lancepy.dataset(ours).to_table() == lance.dataset(theirs).to_table()
    assert lance.dataset(ours).schema == lance.dataset(theirs).schema


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_external_references_both_directions(tmp_path, external, writer):
    uri, content = external
    path = str(tmp_path / "ds")
    lib = lancepy if writer == "lancepy" else lance
    lib.write_dataset(_table(uri), path, allow_external_blob_outside_bases=True)
    assert lancepy.dataset(path).to_table() == lance.dataset(path).to_table()
    for ds in (lancepy.dataset(path), lance.dataset(path)):
        assert _read(ds) == _expected(content)
        assert ds.to_table(blob_handling="all_binary").column("b").to_pylist() == _expected(content)
    f = lancepy.dataset(path).take_blobs("b", indices=[1])[0]
    assert f.size() == len(content)
    f.seek(21)
    assert f.read(4) == bytes(range(4))


def test_ingest_copies_external_bytes(tmp_path, external):
    uri, content = external
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lancepy.write_dataset(_table(uri), ours, external_blob_mode="ingest")
    lance.write_dataset(_table(uri), theirs, external_blob_mode="ingest")
    assert lancepy.dataset(ours).to_table() == lance.dataset(theirs).to_table()
    os.remove(uri[len("file://"):])  # the copies do not need it
    for ds in (lancepy.dataset(ours), lance.dataset(ours)):
        assert _read(ds) == _expected(content)


def test_external_uris_are_refused_unless_allowed(tmp_path, external):
    uri, _ = external
    path = tmp_path / "ds"
    with pytest.raises(InvalidArgumentError, match="allow_external_blob_outside_bases"):
        lancepy.write_dataset(_table(uri), str(path))
    assert not (path / "_versions").exists()
    with pytest.raises(InvalidArgumentError):
        lancepy.write_dataset(_table(uri), str(path), external_blob_mode="ingest", allow_external_blob_outside_bases=True)
    with pytest.raises(InvalidArgumentError):
        lancepy.write_dataset(_table(uri), str(path), external_blob_mode="copy")


def test_write_fragments_honours_external_blob_options(tmp_path, external):
    uri, content = external
    path = str(tmp_path / "ds")
    lancepy.write_dataset(_table(uri).slice(0, 1), path)
    frags = lancepy.fragment.write_fragments(_table(uri), path, allow_external_blob_outside_bases=True)
    ds = lancepy.dataset(path)
    ds = lancepy.LanceDataset.commit(path, lancepy.LanceOperation.Append(frags), read_version=ds.version)
    assert _read(ds, 7)[1:] == _expected(content)
    assert _read(lance.dataset(path), 7)[1:] == _expected(content)
