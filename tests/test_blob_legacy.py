"""Blob columns of file versions 2.0 and 2.1 ("legacy" blobs: a large binary column marked
``lance-encoding:blob``, values stored out of line in the data file, pages of
``(position, size)`` descriptions), read and written by both libraries."""

import glob

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError
from lancepy.file import LanceFileReader

BLOB = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
SCHEMA = pa.schema([pa.field("id", pa.int64()), BLOB])
VERSIONS = ["2.0", "2.1"]


def _values(n):
    """Nulls, empty values, small and large values (the large ones cross page and
    coalescing boundaries)."""
    out = []
    for i in range(n):
        if i % 7 == 3:
            out.append(None)
        elif i % 11 == 5:
            out.append(b"")
        elif i % 13 == 0:
            out.append(bytes([i % 251]) * (300_000 + i))
        else:
            out.append(f"value-{i}-".encode() * (i % 5 + 1))
    return out


def _table(n=60, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "b": pa.array(_values(n), pa.large_binary())}, schema=SCHEMA)


def _write(lib, table, path, version, **kw):
    if lib == "pylance":
        return lance.write_dataset(table, path, data_storage_version=version, **kw)
    return lancepy.write_dataset(table, path, data_storage_version=version, **kw)


def _blobs(files):
    return [None if f is None else f.read() for f in files]


@pytest.mark.parametrize("version", VERSIONS)
def test_reads_pylance_legacy_blobs_as_pylance_does(tmp_path, version):
    path = str(tmp_path / "ds")
    table = _table()
    lance.write_dataset(table, path, data_storage_version=version)
    ours, theirs = lancepy.dataset(path), lance.dataset(path)
    # Default: the descriptions, with pylance's type, metadata and values.
    a, b = ours.to_table(), theirs.to_table()
    assert a.schema.field("b") == b.schema.field("b")
    assert a.schema.field("b").metadata == b.schema.field("b").metadata
    assert a.column("b").to_pylist() == b.column("b").to_pylist()
    assert ours.to_table(blob_handling="blobs_descriptions") == a
    assert ours.to_table(blob_handling="all_descriptions") == a
    # all_binary: the values.
    got = ours.to_table(blob_handling="all_binary")
    assert got.column("b").to_pylist() == table.column("b").to_pylist()
    assert got.schema.field("b").type == pa.large_binary()
    assert got.column_names == ["id", "b"]
    assert got == theirs.to_table(blob_handling="all_binary")
    # With a filter, a limit and an offset, as batches.
    f = ours.to_table(filter="id >= 20", blob_handling="all_binary", limit=15, offset=3)
    assert f.column("b").to_pylist() == table.column("b").to_pylist()[23:38]
    batches = list(ours.to_batches(columns=["b"], blob_handling="all_binary", batch_size=7))
    assert pa.Table.from_batches(batches).column("b").to_pylist() == table.column("b").to_pylist()
    with_addr = ours.to_table(blob_handling="all_binary", with_row_address=True)
    assert with_addr.column_names == ["id", "b", "_rowaddr"]
    # take_blobs: lazily read files, None for nulls.
    idx = [0, 3, 5, 13, 26, 59, 13]
    assert _blobs(ours.take_blobs("b", indices=idx)) == [table.column("b")[i].as_py() for i in idx]
    assert _blobs(ours.take_blobs("b", indices=idx)) == _blobs(theirs.take_blobs("b", indices=idx))
    big = ours.take_blobs("b", indices=[13])[0]
    assert big.size() == 300_013
    big.seek(1000)
    assert big.read(10) == bytes([13]) * 10
    # The file-level reader returns the values, as pylance's does.
    data_file = glob.glob(f"{path}/data/*.lance")[0]
    assert LanceFileReader(data_file).read_all().to_table().column("b").to_pylist() == table.column("b").to_pylist()
    assert LanceFileReader(data_file).take_rows([13, 3]).to_table().column("b").to_pylist() == [
        table.column("b")[13].as_py(),
        None,
    ]


def test_bad_blob_handling_is_refused(tmp_path):
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(5), path, data_storage_version="2.1")
    with pytest.raises(InvalidArgumentError):
        lancepy.dataset(path).to_table(blob_handling="bytes")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_both_libraries_read_what_either_writes(tmp_path, version, writer):
    path = str(tmp_path / "ds")
    table = _table(80)
    _write(writer, table, path, version, max_rows_per_file=50)
    _write("lancepy" if writer == "pylance" else "pylance", _table(30, start=80), path, version, mode="append")
    expected = table.column("b").to_pylist() + _table(30, start=80).column("b").to_pylist()
    for ds in (lancepy.dataset(path), lance.dataset(path)):
        got = ds.to_table(blob_handling="all_binary")
        assert got.column("b").to_pylist() == expected
        assert got.column("id").to_pylist() == list(range(110))
        idx = [0, 3, 5, 13, 52, 91, 104, 109]
        assert _blobs(ds.take_blobs("b", indices=idx)) == [expected[i] for i in idx]
    # The same descriptions shape and file layout as pylance's.
    assert lancepy.dataset(path).schema == lance.dataset(path).schema
    assert lancepy.dataset(path).to_table().schema == lance.dataset(path).to_table().schema


@pytest.mark.parametrize("version", VERSIONS + ["2.2"])
def test_file_writer_writes_blob_pages_pylance_reads(tmp_path, version):
    """The file-level writer stores a blob-marked large binary column as blob pages (in
    every version, as pylance's file writer does)."""
    from lance.file import LanceFileReader as PylanceFileReader

    from lancepy.file import LanceFileWriter

    path = str(tmp_path / "f.lance")
    table = _table(40)
    with LanceFileWriter(path, version=version) as w:
        w.write_batch(table)
    theirs = PylanceFileReader(path).read_all().to_table()
    assert theirs.column("b").to_pylist() == table.column("b").to_pylist()
    ours = LanceFileReader(path)
    assert ours.read_all().to_table() == table
    assert ours.metadata().encodings()[1][0] == "blob" if version != "2.0" else True


REWRITE_VALUES = [b"abc", None, b"", b"x" * 100_000, b"y" * 5_000_000, b"z" * 70_000, b"w" * 64 * 1024]


def _rewrite_dataset(tmp_path, version, writer):
    path = str(tmp_path / f"{writer}-{version}")
    n = len(REWRITE_VALUES)
    table = pa.table({"id": pa.array(range(n), pa.int64()), "b": pa.array(REWRITE_VALUES, pa.large_binary())}, schema=SCHEMA)
    _write(writer, table, path, version, max_rows_per_file=2)
    return path


@pytest.mark.parametrize("version", VERSIONS + ["2.2"])
@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_compaction_rewrites_blob_columns(tmp_path, version, writer):
    """Compaction reads blob values (inline, packed and dedicated ones in 2.2) and writes them
    again; both libraries read the result."""
    path = _rewrite_dataset(tmp_path, version, writer)
    lancepy.dataset(path).delete("id = 2")
    metrics = lancepy.dataset(path).optimize.compact_files()
    assert metrics.fragments_removed == 4 and metrics.fragments_added == 1
    expected = REWRITE_VALUES[:2] + REWRITE_VALUES[3:]
    for ds in (lancepy.dataset(path), lance.dataset(path)):
        assert len(ds.get_fragments()) == 1
        assert ds.to_table(blob_handling="all_binary").column("b").to_pylist() == expected
        assert _blobs(ds.take_blobs("b", indices=list(range(len(expected))))) == expected
    # The old files' sidecars go with them at cleanup; the new ones stay.
    import datetime

    lancepy.dataset(path).cleanup_old_versions(older_than=datetime.timedelta(0))
    assert lance.dataset(path).to_table(blob_handling="all_binary").column("b").to_pylist() == expected


@pytest.mark.parametrize("version", VERSIONS + ["2.2"])
@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_update_rewrites_rows_with_blobs(tmp_path, version, writer):
    path = _rewrite_dataset(tmp_path, version, writer)
    assert lancepy.dataset(path).update({"id": "id + 100"}, where="id < 4") == {"num_rows_updated": 4}
    expected = sorted((i + 100 if i < 4 else i, v) for i, v in enumerate(REWRITE_VALUES))
    for ds in (lancepy.dataset(path), lance.dataset(path)):
        got = ds.to_table(blob_handling="all_binary")
        assert sorted(zip(got.column("id").to_pylist(), got.column("b").to_pylist())) == expected


def test_compaction_streams_blob_values_in_bounded_batches(tmp_path):
    """The rewrite source hands the writer slices of about `blob_bytes` of values."""
    from lancepy.optimize import _RewriteSource

    path = _rewrite_dataset(tmp_path, "2.1", "lancepy")
    ds = lancepy.dataset(path)
    ids = [f.fragment_id for f in ds.get_fragments()]
    source = _RewriteSource(ds, ids, False, False, [], [], blob_bytes=200_000)
    batches = list(source.reader())
    assert [v for b in batches for v in b.column("b").to_pylist()] == REWRITE_VALUES
    for b in batches:
        sizes = [len(v or b"") for v in b.column("b").to_pylist()]
        assert sum(sizes) <= 200_000 or len(sizes) == 1


@pytest.mark.parametrize("version", VERSIONS + ["2.2"])
def test_to_pandas_blob_modes_match_pylance(tmp_path, version):
    pytest.importorskip("pandas")
    path = _rewrite_dataset(tmp_path, version, "pylance")
    ours, theirs = lancepy.dataset(path), lance.dataset(path)
    lazy = ours.to_pandas()
    assert list(lazy.columns) == ["id", "b"]
    assert [None if f is None else f.read() for f in lazy["b"]] == REWRITE_VALUES
    assert [None if f is None else f.read() for f in theirs.to_pandas()["b"]] == REWRITE_VALUES
    for mode in ("bytes", "descriptions"):
        assert ours.to_pandas(blob_mode=mode).equals(theirs.to_pandas(blob_mode=mode))
    assert list(ours.to_pandas(with_row_address=True).columns) == ["id", "b", "_rowaddr"]
    assert ours.get_fragments()[0].to_pandas(blob_mode="bytes").equals(theirs.get_fragments()[0].to_pandas(blob_mode="bytes"))
    with pytest.raises(InvalidArgumentError):
        ours.to_pandas(blob_mode="eager")


def test_to_pandas_forwards_keywords_to_pyarrow_and_refuses_unknown_ones(tmp_path):
    pytest.importorskip("pandas")
    path = str(tmp_path / "ds")
    lancepy.write_dataset(pa.table({"a": [1, 2]}), path)
    assert lancepy.dataset(path).to_pandas(use_threads=False)["a"].tolist() == [1, 2]
    with pytest.raises(TypeError, match="no_such_option"):
        lancepy.dataset(path).to_pandas(no_such_option=True)
    with pytest.raises(TypeError, match="no_such_option"):
        lancepy.dataset(path).scanner().to_pandas(blob_mode="bytes", no_such_option=True)


def test_descriptions_asking_for_more_bytes_than_the_file_has_are_corrupt(tmp_path):
    """Repeated ranges (a hostile file) must not make a read allocate beyond its input."""
    from lancepy.exceptions import CorruptFileError

    path = str(tmp_path / "ds")
    lancepy.write_dataset(_table(20), path, data_storage_version="2.1")
    ds = lancepy.dataset(path)
    size = ds.get_fragments()[0].data_files()[0].file_size_bytes
    n = 1000
    descriptions = pa.StructArray.from_arrays(
        [pa.array([0] * n, pa.uint64()), pa.array([size // 2] * n, pa.uint64())], names=["position", "size"]
    )
    with pytest.raises(CorruptFileError, match="ask for"):
        ds._view.snapshot.blob_values("b", pa.array([0] * n, pa.uint64()), descriptions)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("nullable, values", [(True, [b"a", b"bb"]), (True, [b"a", None, b""]), (False, [b"a", b""])])
def test_blob_pages_are_encoded_as_pylance_encodes_them(tmp_path, version, nullable, values):
    """Same rows, same page encodings (a nullable column's blob pages say "nullable" only
    when they hold a null, as pylance's) and same file bytes up to the metadata."""
    from lance.file import LanceFileReader as PylanceFileReader

    field = pa.field("b", pa.large_binary(), nullable=nullable, metadata={"lance-encoding:blob": "true"})
    table = pa.table({"b": pa.array(values, pa.large_binary())}, schema=pa.schema([field]))
    files = []
    for lib in ("lancepy", "pylance"):
        path = str(tmp_path / lib)
        _write(lib, table, path, version)
        files.append(glob.glob(f"{path}/data/*.lance")[0])
    encodings = [str(PylanceFileReader(f).metadata().columns[0].pages[0].encoding) for f in files]
    assert encodings[0] == encodings[1]
    for f in files:
        assert LanceFileReader(f).read_all().to_table().column("b").to_pylist() == values


@pytest.mark.parametrize("source_version", VERSIONS + ["2.2"])
@pytest.mark.parametrize("target_version", ["2.1", "2.2"])
def test_write_dataset_from_a_blob_dataset_copies_the_blobs(tmp_path, source_version, target_version):
    """A LanceDataset as write_dataset's input streams its blob values (not descriptions),
    and the copy stores them as blobs again, in the target's file version."""
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    table = _table(30)
    _write("pylance", table, src, source_version)
    lancepy.write_dataset(lancepy.dataset(src), dst, data_storage_version=target_version)
    for ds in (lancepy.dataset(dst), lance.dataset(dst)):
        assert ds.to_table(blob_handling="all_binary").column("b").to_pylist() == table.column("b").to_pylist()
    assert _blobs(lance.dataset(dst).take_blobs("b", indices=[13])) == [table.column("b")[13].as_py()]
