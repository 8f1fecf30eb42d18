"""lance.lance.manifest_needs_migration: the same answer as pylance for datasets both write,
and each rule of the check on manifests lacking what old writers left out."""

from __future__ import annotations

import copy

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy._table.manifest import needs_migration
from lancepy.lance import manifest_needs_migration


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_fresh_datasets_need_no_migration(tmp_path, writer):
    uri = str(tmp_path / "d")
    lib = lancepy if writer == "lancepy" else lance
    lib.write_dataset(pa.table({"a": range(100)}), uri, max_rows_per_file=40)
    ds = lib.dataset(uri)
    ds.delete("a < 5")
    ds.create_scalar_index("a", "BTREE")
    assert manifest_needs_migration(lancepy.dataset(uri)) is False
    assert lance.lance.manifest_needs_migration(lance.dataset(uri)) is False


def test_each_rule(tmp_path):
    uri = str(tmp_path / "d")
    ds = lancepy.write_dataset(pa.table({"a": range(10)}), uri)
    ds.delete("a < 2")
    ds.create_scalar_index("a", "BTREE")
    ds = lancepy.dataset(uri)
    manifest, entries = ds._view.loaded.manifest, ds._index_entries()
    assert not needs_migration(manifest, entries)
    m = copy.deepcopy(manifest)
    m["writer_version"] = None
    assert needs_migration(m, entries)
    m = copy.deepcopy(manifest)
    m["fragments"][0]["physical_rows"] = None
    assert needs_migration(m, entries)
    m = copy.deepcopy(manifest)
    m["fragments"][0]["deletion_file"]["num_deleted_rows"] = None
    assert needs_migration(m, entries)
    assert needs_migration(manifest, [dict(entries[0], fragment_ids=None)])
    for version, old in (("0.8.14", True), ("0.8.15", False), ("0.10.0", False), ("garbage", True)):
        m = copy.deepcopy(manifest)
        m["writer_version"] = {"library": "lance", "version": version}
        assert needs_migration(m, entries) is old, version
        assert needs_migration(m, []) is False  # (the version matters for index bitmaps only)


def test_storage_version_inferred_as_pylance_does():
    from lancepy._table.manifest import _infer_storage_version, infer_file_version
    from lancepy.exceptions import InvalidArgumentError
    from lancepy.file import stable_version

    def frag(major, minor):
        return {"files": [{"path": "x.lance", "file_major_version": major, "file_minor_version": minor}]}

    # (0, 0..2) is the legacy format, (0, 3) the first v2 files (lance 0.15), then 2.x.
    assert [infer_file_version([frag(0, m)]) for m in range(4)] == ["0.1", "0.1", "0.1", "2.0"]
    assert infer_file_version([frag(2, 1), frag(2, 1)]) == "2.1" and infer_file_version([{"files": []}]) is None
    with pytest.raises(InvalidArgumentError, match="same version"):
        infer_file_version([frag(0, 0), frag(2, 0)])
    # Without files, lance 0.15's writer flag tells v2 (the stable version) from legacy.
    assert _infer_storage_version([], 4) == stable_version() and _infer_storage_version([], 0) == "0.1"
    assert _infer_storage_version([frag(0, 3)], 0) == "2.0"


def test_a_legacy_recorded_version_is_fixed_on_commit_as_pylance(tmp_path):
    """lance 0.16 could record "0.1" for a dataset of v2 files: the next commit records the
    files' version; files of two versions make the commit fail (roll back, says pylance)."""
    import json
    import types

    from lancepy._table.commit import build_manifest, new_transaction
    from lancepy.exceptions import LanceIOError

    uri = str(tmp_path / "d")
    lancepy.write_dataset(pa.table({"a": range(10)}), uri, data_storage_version="2.0")
    m = json.loads(lancepy.dataset(uri)._view.loaded.json)
    m["data_format"] = {"file_format": "lance", "version": "0.1"}

    def commit(manifest):
        native = types.SimpleNamespace(data_format_version=manifest["data_format"]["version"])
        base = types.SimpleNamespace(manifest=manifest, json=json.dumps(manifest), index_section=None, native=native)
        txn = new_transaction(1, "Delete", {"updated_fragments": [], "deleted_fragment_ids": [], "predicate": "false"})
        return build_manifest(base, txn, 2, "t.txn").manifest["data_format"]["version"]

    assert commit(m) == "2.0"
    m["fragments"].append(dict(m["fragments"][0], id=9, files=[dict(m["fragments"][0]["files"][0], file_major_version=0,
                                                                       file_minor_version=0)]))
    with pytest.raises(LanceIOError, match="mixture of file versions"):
        commit(m)


def test_duplicate_fragment_ids_open_and_scan_as_pylance(tmp_path):
    """lance 0.16 could give two fragments one id. pylance opens and scans such a dataset;
    lancepy does the same, refuses only what needs the id to name one fragment, and the next
    commit fails as pylance's does when the files also mix versions."""
    import json

    from lancepy.exceptions import CorruptFileError, LanceIOError

    uri = str(tmp_path / "d")
    lancepy.write_dataset(pa.table({"foo": [1, 2, 1, 3]}), uri, max_rows_per_file=1, data_storage_version="2.0")
    store = lancepy._lancepy.Store(uri)
    from lancepy._table import commit

    loaded = commit.load_manifest(store)
    m = json.loads(loaded.json)
    m["fragments"][2]["id"] = 1
    m["fragments"].sort(key=lambda f: f["id"])
    m["data_format"] = {"file_format": "lance", "version": "0.1"}
    store.put(loaded.path, lancepy._lancepy.write_manifest(json.dumps(m), loaded.transaction, None))

    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    assert ours.data_storage_version == theirs.data_storage_version == "0.1"
    assert [f.fragment_id for f in ours.get_fragments()] == [f.fragment_id for f in theirs.get_fragments()] == [0, 1, 1, 3]
    assert ours.to_table() == theirs.to_table()
    assert ours.count_rows() == theirs.count_rows() == 4
    assert ours.count_rows("foo = 1") == 2
    assert ours.take([0, 3]) == theirs.take([0, 3])
    with pytest.raises(CorruptFileError, match="two fragments have id 1"):
        ours._take_rows([1 << 32])
    assert ours._take_rows([3 << 32]).to_pylist() == [{"foo": 3}]

    # all files are 2.0: the next commit records it (pylance does the same on its copy)
    ours.delete("false")
    assert ours.data_storage_version == "2.0"

    # one file of the legacy format among them: the commit is refused, nothing changes
    lancepy.write_dataset(pa.table({"foo": [7]}), uri + "-v1", data_storage_version="legacy")
    legacy = json.loads(commit.load_manifest(lancepy._lancepy.Store(uri + "-v1")).json)["fragments"][0]["files"][0]
    loaded = commit.load_manifest(store)
    m = json.loads(loaded.json)
    m["data_format"] = {"file_format": "lance", "version": "0.1"}
    m["fragments"][3]["files"] = [dict(legacy, path="../../d-v1/data/" + legacy["path"])]
    store.put(loaded.path, lancepy._lancepy.write_manifest(json.dumps(m), loaded.transaction, None))
    ds = lancepy.dataset(uri)
    version = ds.version
    with pytest.raises(LanceIOError, match="mixture of file versions"):
        ds.delete("false")
    with pytest.raises(OSError, match="mixture of file versions"):
        lance.dataset(uri).delete("false")
    assert lancepy.dataset(uri).version == version
