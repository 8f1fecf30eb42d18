"""write_dataset's commit and page options, as pylance has them: commit messages and
transaction properties (stored in the transaction file), auto-cleanup options for a new
dataset, and page sizes (max_page_bytes, data_cache_bytes)."""

import glob

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError
from lancepy.file import LanceFileReader


def _table(n=1000):
    return pa.table({"a": pa.array(range(n), pa.int64()), "s": [f"row {i}" * 3 for i in range(n)]})


def test_commit_message_and_transaction_properties_are_stored(tmp_path):
    path = str(tmp_path / "ds")
    lancepy.write_dataset(_table(), path, commit_message="first", transaction_properties={"job": "42"})
    lancepy.write_dataset(_table(), path, mode="append", commit_message="second")
    theirs = lance.dataset(path)
    assert theirs.read_transaction(1).transaction_properties == {"__lance_commit_message": "first", "job": "42"}
    assert theirs.read_transaction(2).transaction_properties == {"__lance_commit_message": "second"}
    ours = lancepy.dataset(path)
    assert ours.read_transaction(1).transaction_properties == {"__lance_commit_message": "first", "job": "42"}
    # ... and what pylance writes, lancepy reads
    lance.write_dataset(_table(), path, mode="append", commit_message="third", transaction_properties={"k": "v"})
    assert lancepy.dataset(path).read_transaction(3).transaction_properties == {"__lance_commit_message": "third", "k": "v"}
    with pytest.raises(InvalidArgumentError):
        lancepy.write_dataset(_table(), path, mode="append", commit_message=5)


def test_commit_takes_a_commit_message(tmp_path):
    path = str(tmp_path / "ds")
    lancepy.write_dataset(_table(10), path)
    frags = lancepy.fragment.write_fragments(_table(10), path)
    lancepy.LanceDataset.commit(path, lancepy.LanceOperation.Append(frags), read_version=1, commit_message="backfill")
    assert lance.dataset(path).read_transaction(2).transaction_properties == {"__lance_commit_message": "backfill"}


def test_auto_cleanup_options_configure_a_new_dataset(tmp_path):
    path = str(tmp_path / "ds")
    lancepy.write_dataset(_table(10), path, auto_cleanup_options={"interval": 2, "older_than_seconds": 0})
    cfg = lancepy.dataset(path).config()
    assert cfg["lance.auto_cleanup.interval"] == "2"
    assert lance.dataset(path).config() == cfg
    # Both libraries clean up on their commits: old versions go.
    for i in range(4):
        (lance if i % 2 else lancepy).write_dataset(_table(10), path, mode="append")
    assert len(lance.dataset(path).versions()) < 5
    # An existing dataset keeps its config (as in pylance).
    lancepy.write_dataset(_table(10), path, mode="append", auto_cleanup_options={"interval": 9, "older_than_seconds": 5})
    assert lancepy.dataset(path).config()["lance.auto_cleanup.interval"] == "2"
    with pytest.raises(InvalidArgumentError):
        lancepy.write_dataset(_table(10), str(tmp_path / "x"), auto_cleanup_options={"interval": 2})


@pytest.mark.parametrize("option", ["max_page_bytes", "data_cache_bytes"])
def test_page_size_options_cut_smaller_pages(tmp_path, option):
    small, default = str(tmp_path / "small"), str(tmp_path / "default")
    table = _table(100_000)
    lancepy.write_dataset(table, small, **{option: 64 * 1024})
    lancepy.write_dataset(table, default)

    def pages(path):
        f = glob.glob(f"{path}/data/*.lance")[0]
        return sum(len(c.pages) for c in lance.file.LanceFileReader(f).metadata().columns)

    assert pages(small) > pages(default) >= 2
    assert lancepy.dataset(small).to_table() == table
    assert lance.dataset(small).to_table() == table
    assert LanceFileReader(glob.glob(f"{small}/data/*.lance")[0]).read_all().to_table() == table
    with pytest.raises(InvalidArgumentError):
        lancepy.write_dataset(table, str(tmp_path / "bad"), **{option: 0})


def test_blob_pack_file_size_threshold_as_pylance(tmp_path):
    """Packed blobs (64 KiB .. 4 MiB) roll over to a new pack file at the threshold: the same
    descriptions and sidecar files as pylance's."""
    blob = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    values = [bytes([i]) * (100_000 + 37_000 * i) for i in range(12)]
    table = pa.table({"id": list(range(12)), "b": pa.array(values, pa.large_binary())},
                     schema=pa.schema([pa.field("id", pa.int64()), blob]))
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lancepy.write_dataset(table, ours, blob_pack_file_size_threshold=400_000)
    lance.write_dataset(table, theirs, blob_pack_file_size_threshold=400_000)
    a, b = lancepy.dataset(ours).to_table(), lance.dataset(theirs).to_table()
    assert a.column("b") == b.column("b")
    assert len(set(d["blob_id"] for d in a.column("b").to_pylist())) > 3

    def sidecars(path):
        return sorted(p.name for p in (tmp_path / path / "data").rglob("*.blob"))

    assert sidecars("ours") == sidecars("theirs")
    for path in (ours, theirs):
        got = [f.read() for f in lance.dataset(path).take_blobs("b", indices=list(range(12)))]
        assert got == values
    with pytest.raises(InvalidArgumentError):
        lancepy.write_dataset(table, str(tmp_path / "bad"), blob_pack_file_size_threshold=0)


def test_commit_creating_a_dataset_with_stable_row_ids(tmp_path):
    path = str(tmp_path / "ds")
    frags = lancepy.fragment.write_fragments(_table(10), path)
    op = lancepy.LanceOperation.Overwrite(_table(10).schema, frags)
    ds = lancepy.LanceDataset.commit(path, op, enable_stable_row_ids=True)
    assert ds.has_stable_row_ids and lance.dataset(path).has_stable_row_ids
    # Row ids survive a compaction, for both libraries.
    more = lancepy.fragment.write_fragments(_table(10), path)
    lancepy.LanceDataset.commit(path, lancepy.LanceOperation.Append(more), read_version=1)
    before = lancepy.dataset(path).to_table(with_row_id=True).column("_rowid").to_pylist()
    lancepy.dataset(path).optimize.compact_files()
    assert lance.dataset(path).to_table(with_row_id=True).column("_rowid").to_pylist() == before
