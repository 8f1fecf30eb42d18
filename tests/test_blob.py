"""Blob columns (`lance-encoding:blob`): written by pylance 14 and by lancepy, read by both.

File version 2.2 stores a blob column as blob v2: one description per row
(kind, position, size, blob_id, blob_uri) with the bytes inline in the data file (< 64 KiB),
packed in a sidecar ``.blob`` file (< 4 MiB) or in a dedicated sidecar. lancepy's scans
return the descriptions exactly as pylance's do, and ``take_blobs`` gives lazily read files.
Every read test runs on a dataset written by each library (``blobs`` fixture).
"""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

import lancepy
from lancepy.blob import BlobFile, blob_sidecar_name
from lancepy.exceptions import (
    ColumnNotFoundError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    LanceError,
)

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")

pytestmark = pytest.mark.interop

BLOB_FIELD = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
SCHEMA = pa.schema([pa.field("id", pa.int64()), BLOB_FIELD])
# Inline (< 64 KiB), packed (< 4 MiB, two share a sidecar), dedicated (>= 4 MiB), empty, null.
SIZES = [10, 1000, 60_000, 100_000, 1_000_000, 5_000_000, 0, None, 7]


def _value(i: int, size):
    if size is None:
        return None
    return bytes((i * 31 + k) % 251 for k in range(min(size, 4096))) * (size // 4096) + bytes(
        (i * 31 + k) % 251 for k in range(size % 4096)
    )


@pytest.fixture(scope="module", params=["pylance", "lancepy"])
def pylance_blobs(request, tmp_path_factory):
    """(path, values): the blobs of SIZES written by `request.param` (two data files)."""
    path = str(tmp_path_factory.mktemp("blobs") / "ds.lance")
    values = [_value(i, s) for i, s in enumerate(SIZES)]
    table = pa.table({"id": list(range(len(SIZES))), "b": values}, schema=SCHEMA)
    (lance if request.param == "pylance" else lancepy).write_dataset(table, path, max_rows_per_file=5)
    return path, values


def test_descriptions_equal_pylance(pylance_blobs):
    path, _ = pylance_blobs
    ours, theirs = lancepy.dataset(path).to_table(), lance.dataset(path).to_table()
    assert ours.schema.equals(theirs.schema, check_metadata=True)
    assert ours.to_pylist() == theirs.to_pylist()
    kinds = {d["kind"] for d in ours.column("b").to_pylist() if d}
    assert kinds == {0, 1, 2}  # inline, packed and dedicated are all exercised
    # Filters and projections go through the same path.
    f = lancepy.dataset(path).to_table(columns=["b"], filter="id >= 4")
    assert f.to_pylist() == lance.dataset(path).to_table(columns=["b"], filter="id >= 4").to_pylist()


@pytest.mark.parametrize("by", ["indices", "addresses", "ids"])
def test_take_blobs_bytes_equal_pylance(pylance_blobs, by):
    path, values = pylance_blobs
    ds, ref = lancepy.dataset(path), lance.dataset(path)
    addrs = ref.to_table(with_row_address=True).column("_rowaddr").to_pylist()
    sel = {"indices": [8, 0, 5, 6, 7, 2, 4, 3, 1], "addresses": None, "ids": None}[by]
    if sel is None:
        sel = [addrs[i] for i in [8, 0, 5, 6, 7, 2, 4, 3, 1]]
    ours = ds.take_blobs("b", **{by: sel})
    theirs = ref.take_blobs("b", **{by: sel})
    assert len(ours) == len(theirs) == len(sel)
    for i, (o, t) in enumerate(zip(ours, theirs)):
        want = values[[8, 0, 5, 6, 7, 2, 4, 3, 1][i]]
        if t is None:
            assert o is None and want is None
            continue
        assert isinstance(o, BlobFile)
        assert o.size() == t.size() == len(want)
        assert o.read() == t.read() == want


def test_blob_file_protocol(pylance_blobs):
    path, values = pylance_blobs
    [f] = lancepy.dataset(path).take_blobs("b", indices=[4])
    [g] = lance.dataset(path).take_blobs("b", indices=[4])
    want = values[4]
    with f:
        assert f.readable() and f.seekable() and not f.writable()
        assert f.read(10) == g.read(10) == want[:10]
        assert f.tell() == g.tell() == 10
        assert f.seek(-5, io.SEEK_END) == g.seek(-5, io.SEEK_END) == len(want) - 5
        assert f.read() == g.read() == want[-5:]
        assert f.read() == b""
        f.seek(100)
        buf = bytearray(1000)
        assert f.readinto(buf) == 1000 and bytes(buf) == want[100:1100]
        assert f.read_range(7, 3) == g.read_range(7, 3) == want[7:10]
        assert f.tell() == 1100
        f.seek(0)
        assert b"".join(iter(lambda: f.read(65_536), b"")) == want
        with pytest.raises(ValueError):
            f.seek(-1)
        with pytest.raises(InvalidArgumentError):
            f.read_range(len(want) - 1, 2)
    assert f.closed
    with pytest.raises(ValueError):
        f.read(1)


def test_deleted_rows(tmp_path, pylance_blobs):
    _, values = pylance_blobs
    path = str(tmp_path / "del.lance")
    table = pa.table({"id": list(range(len(SIZES))), "b": values}, schema=SCHEMA)
    lance.write_dataset(table, path)
    lance.dataset(path).delete("id in (1, 4)")
    ds, ref = lancepy.dataset(path), lance.dataset(path)
    assert ds.to_table().to_pylist() == ref.to_table().to_pylist()
    n = ds.count_rows()
    ours = [f.read() if f else None for f in ds.take_blobs("b", indices=list(range(n)))]
    theirs = [f.read() if f else None for f in ref.take_blobs("b", indices=list(range(n)))]
    assert ours == theirs == [v for i, v in enumerate(values) if i not in (1, 4)]
    with pytest.raises(IndexOutOfRangeError):
        ds.take_blobs("b", addresses=[1])  # deleted


def test_take_blobs_of_deleted_ids_raise_as_pylance(tmp_path, pylance_blobs):
    """Row ids of deleted rows: both raise a ``NotImplementedError`` with pylance's phrase
    (lancepy's is also an ``IndexOutOfRangeError``)."""
    _, values = pylance_blobs
    path = str(tmp_path / "del_ids.lance")
    lance.write_dataset(pa.table({"id": list(range(len(SIZES))), "b": values}, schema=SCHEMA), path)
    ids = lance.dataset(path).to_table(columns=[], with_row_id=True).column("_rowid").to_pylist()
    lance.dataset(path).delete("id = 1")
    phrase = "A take operation that includes row addresses must not target deleted"
    for opened, cls in ((lancepy.dataset(path), IndexOutOfRangeError), (lance.dataset(path), NotImplementedError)):
        with pytest.raises(NotImplementedError, match=phrase) as got:
            opened.take_blobs("b", ids=ids)
        assert isinstance(got.value, cls)
    kept = [i for i in ids if i != ids[1]]
    assert [f.read() if f else None for f in lancepy.dataset(path).take_blobs("b", ids=kept)] == [
        f.read() if f else None for f in lance.dataset(path).take_blobs("b", ids=kept)
    ]


def test_errors(pylance_blobs):
    path, _ = pylance_blobs
    ds = lancepy.dataset(path)
    with pytest.raises(InvalidArgumentError):
        ds.take_blobs("id", indices=[0])  # not a blob column
    with pytest.raises(ColumnNotFoundError):
        ds.take_blobs("nope", indices=[0])
    with pytest.raises(InvalidArgumentError):
        ds.take_blobs("b")  # no selection
    with pytest.raises(InvalidArgumentError):
        ds.take_blobs("b", indices=[0], addresses=[0])
    with pytest.raises(LanceError):
        ds.take_blobs("b", indices=[1000])
    with pytest.raises(InvalidArgumentError):
        ds.take_blobs("b", indices=[0], buffer_size=-1)
    for err in (ColumnNotFoundError, IndexOutOfRangeError):
        assert issubclass(err, LanceError)


def test_sidecar_names():
    assert blob_sidecar_name(1) == "1" + "0" * 31 + ".blob"
    assert blob_sidecar_name(3) == "11" + "0" * 30 + ".blob"
    with pytest.raises(InvalidArgumentError):
        blob_sidecar_name(1 << 32)


def test_lancepy_writes_what_pylance_writes(tmp_path):
    """Same rows, same writer settings: the same descriptions (kinds, positions, sidecar
    ids) and the same sidecar files, byte for byte."""
    import os

    values = [_value(i, s) for i, s in enumerate(SIZES)]
    table = pa.table({"id": list(range(len(SIZES))), "b": values}, schema=SCHEMA)
    layout = {}
    for who, lib in (("pylance", lance), ("lancepy", lancepy)):
        path = str(tmp_path / who)
        lib.write_dataset(table, path, max_rows_per_file=5)
        ds = lance.dataset(path)
        ds.validate()
        sidecars = []
        for frag in ds.get_fragments():
            stem = frag.data_files()[0].path.removesuffix(".lance")
            d = os.path.join(path, "data", stem)
            sidecars.append(sorted((n, open(os.path.join(d, n), "rb").read()) for n in os.listdir(d)) if os.path.isdir(d) else [])
        layout[who] = (ds.to_table().to_pylist(), sidecars, ds.schema)
    assert layout["lancepy"][0] == layout["pylance"][0]
    assert layout["lancepy"][1] == layout["pylance"][1]
    assert layout["lancepy"][2] == layout["pylance"][2]


def test_append_fragments_and_cleanup_keep_sidecars(tmp_path):
    path = str(tmp_path / "a.lance")
    values = [_value(i, s) for i, s in enumerate(SIZES)]
    table = pa.table({"id": list(range(len(SIZES))), "b": values}, schema=SCHEMA)
    lance.write_dataset(table, path)
    lancepy.write_dataset(table, path, mode="append")  # lancepy appends to pylance's blob dataset
    frags = lancepy.fragment.write_fragments(pa.table({"id": [100], "b": [values[5]]}, schema=SCHEMA), path)
    lancepy.LanceDataset.commit(path, lancepy.LanceOperation.Append(frags), read_version=2)
    ds = lancepy.dataset(path)
    assert ds.count_rows() == 2 * len(SIZES) + 1
    lancepy.dataset(path).cleanup_old_versions(older_than=__import__("datetime").timedelta(0), delete_unverified=True)
    for lib in (lancepy, lance):
        files = lib.dataset(path).take_blobs("b", indices=list(range(2 * len(SIZES) + 1)))
        got = [f.read() if f is not None else None for f in files]
        assert got == values + values + [values[5]]
    lance.dataset(path).validate()


@pytest.mark.parametrize("writer", ["pylance", "lancepy"])
@pytest.mark.parametrize("version", ["2.2", "2.1"])
def test_large_blob_read_in_slices_keeps_memory_flat(tmp_path, writer, version):
    """A 200 MB blob (a dedicated sidecar in 2.2, in the data file in 2.1) read in 1 MB
    slices: peak RSS grows by far less than the blob."""
    path = str(tmp_path / "big.lance")
    mib = 1 << 20
    pattern = bytes(range(256)) * 4096  # 1 MiB
    (lance if writer == "pylance" else lancepy).write_dataset(
        pa.table({"id": [0], "b": [pattern * 200]}, schema=SCHEMA), path, data_storage_version=version
    )
    script = textwrap.dedent(
        f"""
        import resource, lancepy
        pattern = bytes(range(256)) * 4096
        ds = lancepy.dataset({path!r})
        [f] = ds.take_blobs("b", indices=[0])
        assert f.size() == 200 * {mib}
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        n = 0
        while True:
            chunk = f.read({mib})
            if not chunk:
                break
            assert chunk == pattern, n
            n += 1
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(n, (after - before) // 1024)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    slices, grown_mib = map(int, out.stdout.split())
    assert slices == 200
    assert grown_mib < 100, f"peak RSS grew by {grown_mib} MiB"


@pytest.mark.parametrize("writer", ["pylance", "lancepy"])
def test_take_blobs_and_take_rows_by_stable_row_ids(tmp_path, writer):
    """With stable row ids, ``ids`` are row ids (they survive deletes and compaction), as in
    pylance: take_blobs(ids=) and take_rows agree with pylance's."""
    path = str(tmp_path / "stable.lance")
    values = [bytes([i]) * (i * 9000) for i in range(10)]
    table = pa.table({"id": list(range(10)), "b": values}, schema=SCHEMA)
    (lance if writer == "pylance" else lancepy).write_dataset(table, path, max_rows_per_file=4, enable_stable_row_ids=True)
    lancepy.dataset(path).delete("id < 3")
    ids = [9, 4, 3]
    for ds in (lancepy.dataset(path),):
        assert [f.read() for f in ds.take_blobs("b", ids=ids)] == [values[i] for i in ids]
        assert ds.take_rows(ids + [1]).column("id").to_pylist() == lance.dataset(path)._take_rows(ids + [1]).column("id").to_pylist()
    assert [f.read() for f in lance.dataset(path).take_blobs("b", ids=ids)] == [values[i] for i in ids]
    with pytest.raises(IndexOutOfRangeError):
        lancepy.dataset(path).take_blobs("b", ids=[1])  # deleted
