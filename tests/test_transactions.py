"""``write_fragments(..., return_transaction=True)``, :class:`lancepy.dataset.Transaction` and
``LanceDataset.commit(uri, transaction)``, checked against pylance 14 both ways."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pytest

import lancepy
from lancepy.dataset import LanceOperation, Transaction
from lancepy.exceptions import CommitConflictError, InvalidArgumentError, VersionNotFoundError
from lancepy.fragment import FragmentMetadata, write_fragments

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")

pytestmark = pytest.mark.interop


def _table(lo: int, hi: int) -> pa.Table:
    return pa.table({"id": pa.array(range(lo, hi), pa.int64()), "s": [f"v{i}" for i in range(lo, hi)]})


def test_transaction_has_pylances_shape():
    ours = [(f.name, f.default is dataclasses.MISSING) for f in dataclasses.fields(Transaction)]
    theirs = [(f.name, f.default is dataclasses.MISSING) for f in dataclasses.fields(lance.Transaction)]
    assert ours == theirs


def test_distributed_append_via_transactions(tmp_path):
    """Workers write fragments and return transactions; the driver commits each one."""
    uri = str(tmp_path / "ds.lance")
    lancepy.write_dataset(_table(0, 10), uri)
    txns = [write_fragments(_table(10 * k, 10 * k + 10), uri, return_transaction=True) for k in (1, 2, 3)]
    for t in txns:
        assert isinstance(t, Transaction) and t.read_version == 1
        assert isinstance(t.operation, LanceOperation.Append)
    txns[0].transaction_properties["job"] = "backfill-1"
    ds = lancepy.LanceDataset.commit(uri, txns[0])
    assert ds.version == 2
    # The others were planned against version 1; appends do not conflict and rebase.
    for t in txns[1:]:
        ds = lancepy.LanceDataset.commit(uri, t)
    assert ds.version == 4
    ref = lance.dataset(uri)
    assert sorted(ref.to_table().column("id").to_pylist()) == list(range(40))
    assert ds.to_table().sort_by("id").equals(ref.to_table().sort_by("id"))
    # pylance reads lancepy's transaction files: the uuid and the properties survive.
    read = ref.read_transaction(2)
    assert read.uuid == txns[0].uuid
    assert read.transaction_properties == {"job": "backfill-1"}
    assert type(read.operation).__name__ == "Append"


def test_overwrite_and_create_transactions(tmp_path):
    uri = str(tmp_path / "new.lance")
    t = write_fragments(_table(0, 5), uri, return_transaction=True)
    assert t.read_version == 0 and isinstance(t.operation, LanceOperation.Overwrite)
    lancepy.LanceDataset.commit(uri, t)
    t2 = write_fragments(_table(100, 103), uri, mode="overwrite", return_transaction=True)
    assert t2.read_version == 1 and isinstance(t2.operation, LanceOperation.Overwrite)
    ds = lancepy.LanceDataset.commit(uri, t2)
    assert ds.to_table().equals(lance.dataset(uri).to_table())
    assert lance.dataset(uri).to_table().column("id").to_pylist() == [100, 101, 102]


def test_pylance_transaction_committed_by_lancepy(tmp_path):
    uri = str(tmp_path / "pl.lance")
    lance.write_dataset(_table(0, 4), uri)
    tp = lance.fragment.write_fragments(_table(4, 8), uri, return_transaction=True)
    frags = [FragmentMetadata.from_json(json.dumps(f.to_json())) for f in tp.operation.fragments]
    ours = Transaction(tp.read_version, LanceOperation.Append(frags), uuid=tp.uuid)
    ds = lancepy.LanceDataset.commit(uri, ours)
    assert ds.to_table().equals(lance.dataset(uri).to_table())
    assert lance.dataset(uri).to_table().column("id").to_pylist() == list(range(8))
    assert lance.dataset(uri).read_transaction(2).uuid == tp.uuid


def test_lancepy_transaction_committed_by_pylance(tmp_path):
    uri = str(tmp_path / "lp.lance")
    lancepy.write_dataset(_table(0, 4), uri)
    t = write_fragments(_table(4, 8), uri, return_transaction=True)
    frags = [lance.FragmentMetadata.from_json(json.dumps(f.to_json())) for f in t.operation.fragments]
    ref = lance.LanceDataset.commit(uri, lance.Transaction(t.read_version, lance.LanceOperation.Append(frags)))
    assert ref.to_table().equals(lancepy.dataset(uri).to_table())
    assert lancepy.dataset(uri).to_table().column("id").to_pylist() == list(range(8))


def test_bad_commits_leave_the_dataset_alone(tmp_path):
    uri = str(tmp_path / "bad.lance")
    lancepy.write_dataset(_table(0, 3), uri)
    with pytest.raises(InvalidArgumentError):
        lancepy.LanceDataset.commit(uri, "not an operation")  # type: ignore[arg-type]
    # An overwrite planned on version 1 conflicts with a later overwrite.
    t1 = write_fragments(_table(10, 11), uri, mode="overwrite", return_transaction=True)
    t2 = write_fragments(_table(20, 21), uri, mode="overwrite", return_transaction=True)
    lancepy.LanceDataset.commit(uri, t1)
    before = lancepy.dataset(uri).to_table()
    with pytest.raises(CommitConflictError):
        lancepy.LanceDataset.commit(uri, t2)
    assert lancepy.dataset(uri).version == 2
    assert lancepy.dataset(uri).to_table().equals(before)


def _summary(txn):
    """What both libraries' Transaction objects must agree on."""
    if txn is None:
        return None
    op = txn.operation

    def frags(fs):
        return [(f.id, [d.path for d in f.files], f.physical_rows) for f in fs]

    out = {"op": type(op).__name__, "read_version": txn.read_version, "uuid": str(txn.uuid),
           "properties": dict(txn.transaction_properties or {})}
    for name in ("fragments", "updated_fragments", "new_fragments"):
        if hasattr(op, name):
            out[name] = frags(getattr(op, name))
    for name in ("deleted_fragment_ids", "removed_fragment_ids", "fields_modified", "predicate", "version"):
        if hasattr(op, name):
            out[name] = getattr(op, name)
    if hasattr(op, "groups"):
        out["groups"] = [(frags(g.old_fragments), frags(g.new_fragments)) for g in op.groups]
    for name in ("new_schema", "schema"):
        if hasattr(op, name):
            out[name] = getattr(op, name).to_pyarrow().names
    return out


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_read_transaction_and_get_transactions_match_pylance(tmp_path, writer) -> None:
    lib = lancepy if writer == "lancepy" else lance
    u = str(tmp_path / "d.lance")
    t = pa.table({"x": list(range(40)), "s": [f"v{i}" for i in range(40)]})
    ds = lib.write_dataset(t, u, max_rows_per_file=10)  # 1: Overwrite
    ds = lib.write_dataset(t, u, mode="append")  # 2: Append
    ds.delete("x < 3")  # 3: Delete
    ds.update({"x": "x + 100"}, "x = 15")  # 4: Update
    ds.add_columns({"y": "x * 2"})  # 5: Merge
    ds.drop_columns(["y"])  # 6: Project
    ds.optimize.compact_files()  # 7: Rewrite
    lib.dataset(u, version=2).restore()  # Restore
    ours, theirs = lancepy.dataset(u), lance.dataset(u)
    assert ours.version == theirs.version
    names = []
    for v in range(1, ours.version + 1):
        a, b = _summary(ours.read_transaction(v)), _summary(theirs.read_transaction(v))
        assert a == b, v
        names.append(a["op"])
    # pylance's compaction first reserves fragment ids (a version of its own, an operation
    # neither library has a class for: a bare BaseOperation in both).
    assert [n for n in names if n != "BaseOperation"] == [
        "Overwrite", "Append", "Delete", "Update", "Merge", "Project", "Rewrite", "Restore"
    ]
    assert [_summary(x) for x in ours.get_transactions(3)] == [_summary(x) for x in theirs.get_transactions(3)]
    assert len(ours.get_transactions()) == ours.version  # fewer versions than the default 10
    old = lancepy.dataset(u, version=4)
    assert [x.operation.__class__.__name__ for x in old.get_transactions(2)] == ["Update", "Delete"]
    with pytest.raises(VersionNotFoundError):
        ours.read_transaction(99)
    with pytest.raises(InvalidArgumentError):
        ours.get_transactions(-1)


def test_transaction_read_back_commits_again(tmp_path) -> None:
    """An Append read back from one dataset's history commits the same files to a copy."""
    import shutil

    u = str(tmp_path / "d.lance")
    lancepy.write_dataset(pa.table({"x": [1, 2]}), u)
    lancepy.write_dataset(pa.table({"x": [3]}), u, mode="append")
    copy = str(tmp_path / "copy.lance")
    shutil.copytree(u, copy)
    txn = lancepy.dataset(u).read_transaction(2)
    lancepy.dataset(copy, version=1).restore()
    out = lancepy.LanceDataset.commit(copy, txn.operation, read_version=3)
    assert sorted(out.to_table().column("x").to_pylist()) == [1, 2, 3]
    assert sorted(lance.dataset(copy).to_table().column("x").to_pylist()) == [1, 2, 3]


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_fragment_delete_and_delete_rows_then_commit(tmp_path, writer) -> None:
    """LanceFragment.delete / delete_rows write deletion files and return the fragment for a
    Delete the caller commits, as pylance's: both libraries, same rows left."""
    import shutil

    lib = lancepy if writer == "lancepy" else lance
    u = str(tmp_path / "d.lance")
    lib.write_dataset(pa.table({"id": list(range(30))}), u, max_rows_per_file=10)
    copy = str(tmp_path / "copy.lance")
    shutil.copytree(u, copy)
    results = {}
    for name, mod, path in (("ours", lancepy, u), ("theirs", lance, copy)):
        ds = mod.dataset(path)
        f1 = ds.get_fragment(1).delete("id % 3 = 0")
        f2 = ds.get_fragment(2).delete_rows([0, 1, 9])
        assert ds.get_fragment(0).delete("id > 100").deletion_file is None  # nothing matched: unchanged
        assert ds.get_fragment(0).delete("id >= 0") is None  # every row: fragment gone
        op = mod.LanceOperation.Delete([f1, f2], [0], "by hand")
        mod.LanceDataset.commit(path, op, read_version=ds.version)
        results[name] = sorted(mod.dataset(path).to_table().column("id").to_pylist())
    assert results["ours"] == results["theirs"] == [10, 11, 13, 14, 16, 17, 19, 22, 23, 24, 25, 26, 27, 28]
    assert sorted(lance.dataset(u).to_table().column("id").to_pylist()) == results["ours"]
    from lancepy.exceptions import IndexOutOfRangeError

    with pytest.raises(IndexOutOfRangeError):
        lancepy.dataset(u).get_fragment(1).delete_rows([10])


def test_fragment_validate_checks_that_fragment_only(tmp_path) -> None:
    from lancepy.exceptions import CorruptFileError

    u = str(tmp_path / "d.lance")
    lancepy.write_dataset(pa.table({"id": list(range(30))}), u, max_rows_per_file=10)
    ds = lancepy.dataset(u)
    ds.delete("id = 3")
    ds = lancepy.dataset(u)
    for f in ds.get_fragments():
        assert f.validate() is None
        lance.dataset(u).get_fragment(f.fragment_id).validate()
    # Damage fragment 1's data file: fragment 1 fails (with pylance too), 0 and 2 still pass.
    path = tmp_path / "d.lance" / "data" / ds.get_fragment(1).metadata.files[0].path
    path.write_bytes(path.read_bytes()[:-40])
    ds = lancepy.dataset(u)
    with pytest.raises(CorruptFileError, match="fragment 1"):
        ds.get_fragment(1).validate()
    ds.get_fragment(0).validate()
    ds.get_fragment(2).validate()
    with pytest.raises(Exception):
        lance.dataset(u).get_fragment(1).validate()
