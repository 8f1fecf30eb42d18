"""lancepy.file.LanceFileSession against pylance's, on the same base paths (local and a real
S3-compatible server on 127.0.0.1): files written by one are read by the other, listings,
existence, ranged reads, uploads, downloads and deletes agree, errors are OSErrors."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from lancepy.exceptions import InvalidArgumentError, NotSupportedError
from lancepy.file import LanceFileSession, ListResult

TABLE = pa.table({"x": pa.array(range(1000), pa.int64()), "s": pa.array([f"v{i}" for i in range(1000)])})


@pytest.fixture(params=["local", "s3"])
def place(request, tmp_path):
    """(base path, storage options) for both sessions."""
    if request.param == "local":
        return str(tmp_path / "files"), None
    s3 = request.getfixturevalue("s3")
    return f"s3://{s3.create_bucket()}/files", s3.options()


def _write(session, path, table=TABLE):
    with session.open_writer(path) as w:
        w.write_batch(table)


def test_both_ways_and_listings(place, tmp_path, pylance):
    from lance.file import LanceFileSession as TheirSession

    base, options = place
    ours, theirs = LanceFileSession(base, storage_options=options), TheirSession(base, storage_options=options)
    _write(ours, "a/ours.lance")
    _write(theirs, "a/b/theirs.lance")
    _write(ours, "top.lance", TABLE.slice(0, 10))
    assert theirs.open_reader("a/ours.lance").read_all().to_table().equals(TABLE)
    assert ours.open_reader("a/b/theirs.lance").read_all().to_table().equals(TABLE)
    assert ours.open_reader("a/b/theirs.lance", columns=["s"]).read_all().to_table().equals(TABLE.select(["s"]))
    for path in (None, "a", "a/", "a/b", "nothing"):
        assert ours.list(path) == sorted(theirs.list(path)), path
        got, want = ours.list_with_delimiter(path), theirs.list_with_delimiter(path)
        assert isinstance(got, ListResult)
        assert (got.common_prefixes, sorted(got.objects)) == (sorted(want.common_prefixes), sorted(want.objects)), path
    for path in ("top.lance", "a/ours.lance", "a", "nope.lance"):
        assert ours.contains(path) == theirs.contains(path), path
    for offset, length in ((0, 4), (10, 100)):
        assert ours.read_range("a/b/theirs.lance", offset, length) == theirs.read_range("a/b/theirs.lance", offset, length)
    assert ours.read_range("a/b/theirs.lance", 5, 0) == b""  # (pylance refuses an empty range on S3)

    local = tmp_path / "local.bin"
    local.write_bytes(os.urandom(9 << 20))  # more than one 8 MiB chunk
    ours.upload_file(local, "up/blob.bin")
    assert theirs.read_range("up/blob.bin", (9 << 20) - 5, 5) == local.read_bytes()[-5:]
    theirs.upload_file(local, "up/theirs.bin")
    ours.download_file("up/theirs.bin", tmp_path / "down.bin")
    assert (tmp_path / "down.bin").read_bytes() == local.read_bytes()
    ours.delete_file("up/blob.bin")
    assert not theirs.contains("up/blob.bin")


def test_errors_are_oserrors_and_arguments_checked(place, tmp_path):
    base, options = place
    session = LanceFileSession(base, storage_options=options)
    _write(session, "f.lance")
    size = len(session.read_range("f.lance", 0, 16))
    assert size == 16
    with pytest.raises(OSError):
        session.read_range("missing.lance", 0, 4)
    with pytest.raises(OSError):
        session.read_range("f.lance", 10**9, 4)
    with pytest.raises(OSError):
        session.delete_file("missing.lance")
    with pytest.raises(OSError):
        session.download_file("missing.lance", tmp_path / "x")
    with pytest.raises(OSError):
        session.open_reader("missing.lance")
    with pytest.raises(InvalidArgumentError):
        session.read_range("f.lance", -1, 4)
    with pytest.raises(InvalidArgumentError):
        session.open_reader("")
    with pytest.raises(NotSupportedError, match="keep_original_array"):
        session.open_writer("g.lance", keep_original_array=True)
    with pytest.raises(NotSupportedError, match="namespace"):
        LanceFileSession(base, namespace_client=object())
    with pytest.raises(NotImplementedError):
        session.open_packed_blob_writer("b.lance", 1)
