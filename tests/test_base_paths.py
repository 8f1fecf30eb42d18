"""Multi-base datasets and shallow clones (FORMAT.md "Base Path System").

* pylance's shallow clones (by version and by tag, clones of clones) read exactly, deletion
  files in the source included; pylance reads lancepy's clones, and lancepy's clone manifest
  is pylance's (same bases, base ids, version, flags, ``Clone`` transaction);
* writes to a clone (append, delete, compaction, new columns, by lancepy and by pylance) go
  under the clone's root and leave the source byte for byte as it was; cleaning up a clone
  never deletes a source file; time travel works on both;
* datasets written by pylance with ``initial_bases`` / ``target_bases`` (dataset-root and
  plain bases) read exactly at every version; lancepy writes the same and pylance reads it;
* bad input gives lancepy exceptions: unknown base id, missing base root, unknown target
  base, cloning onto an existing dataset, a clone that fails midway (leaves nothing).
"""

from __future__ import annotations

import datetime
import glob
import hashlib
import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancepy
from lancepy import _lancepy
from lancepy._table.bases import DatasetBasePath
from lancepy.exceptions import (
    BasePathNotFoundError,
    CorruptFileError,
    DatasetAlreadyExistsError,
    DatasetNotFoundError,
    InvalidArgumentError,
    UnsupportedError,
    VersionNotFoundError,
)


def rows(lo: int, hi: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(lo, hi), pa.int64()),
            "s": pa.array([None if i % 7 == 0 else f"s{i}" for i in range(lo, hi)], pa.string()),
        }
    )


def snapshot_files(root) -> dict:
    """Every file under `root` → sha256 of its bytes."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def manifest_of(root, version=None) -> dict:
    """The decoded manifest (and inline transaction) of a version (default: the latest)."""
    store = _lancepy.Store(str(root), None)
    versions, _ = _lancepy.list_versions(store)
    versions = dict(versions)
    path = versions[max(versions) if version is None else version]
    text, index_section, txn = _lancepy.read_manifest(store.read(path), path)
    m = json.loads(text)
    m["_txn"] = json.loads(_lancepy.decode_transaction(txn, path)) if txn else None
    m["_path"] = path
    return m


def sorted_table(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


def make_source(pylance_or_lancepy, uri) -> None:
    """Three versions: create (2 fragments), append, delete (a deletion file)."""
    pylance_or_lancepy.write_dataset(rows(0, 40), uri, max_rows_per_file=20)
    pylance_or_lancepy.write_dataset(rows(40, 60), uri, mode="append")
    pylance_or_lancepy.dataset(uri).delete("id % 10 = 3")


# --------------------------------------------------------------------------------------------
# pylance's clones, read by lancepy
# --------------------------------------------------------------------------------------------


def test_read_pylance_clones(tmp_path, pylance):
    src, clone, by_tag = str(tmp_path / "src"), str(tmp_path / "clone"), str(tmp_path / "by_tag")
    make_source(pylance, src)
    theirs_src = pylance.dataset(src)
    theirs_src.tags.create("before-delete", 2)
    theirs = theirs_src.shallow_clone(clone, 3)
    pylance.dataset(src).shallow_clone(by_tag, "before-delete")

    ours = lancepy.dataset(clone)
    assert ours.version == 3
    assert ours.to_table().equals(theirs.to_table())
    assert ours.count_rows() == 60 - 6
    assert ours.take([0, 53, 3]).equals(theirs.take([0, 53, 3]))
    assert ours.to_table(filter="id > 50").equals(theirs.to_table(filter="id > 50"))
    assert ours.base_paths() == {0: DatasetBasePath(os.path.abspath(src), None, True, 0)}
    # The deletion file lives in the source: read through base 0.
    frag0 = ours.get_fragments()[0].metadata
    assert frag0.deletion_file is not None and frag0.deletion_file.base_id == 0
    assert {d.base_id for f in ours.get_fragments() for d in f.metadata.files} == {0}
    tagged = lancepy.dataset(by_tag)
    assert tagged.version == 2 and tagged.count_rows() == 60
    assert tagged.to_table().equals(pylance.dataset(by_tag).to_table())
    # A clone of a clone: the first source keeps base 0, the middle clone becomes base 1.
    pylance.write_dataset(rows(100, 105), clone, mode="append")
    pylance.dataset(clone).delete("id = 101 or id = 5")
    second = str(tmp_path / "second")
    pylance.dataset(clone).shallow_clone(second, 5)
    ours2 = lancepy.dataset(second)
    assert ours2.base_paths() == {
        0: DatasetBasePath(os.path.abspath(src), None, True, 0),
        1: DatasetBasePath(os.path.abspath(clone), None, True, 1),
    }
    assert ours2.to_table().equals(pylance.dataset(second).to_table())
    assert ours2.count_rows() == 54 + 5 - 2


# --------------------------------------------------------------------------------------------
# lancepy's clones, read by pylance; the manifest is pylance's
# --------------------------------------------------------------------------------------------


def _comparable(m: dict) -> dict:
    """A manifest without what legitimately differs between two clones of one version."""
    m = dict(m)
    for k in ("timestamp", "transaction_file", "writer_version", "_path", "inline_transaction_position"):
        m.pop(k, None)
    txn = dict(m.pop("_txn"))
    txn.pop("uuid")
    m["_txn"] = txn
    return m


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_clone_manifest_matches_pylance(tmp_path, pylance, writer):
    src = str(tmp_path / "src")
    make_source(lancepy if writer == "lancepy" else pylance, src)
    lancepy.dataset(src).shallow_clone(tmp_path / "ours", 3)
    pylance.dataset(src).shallow_clone(str(tmp_path / "theirs"), 3)
    ours, theirs = manifest_of(tmp_path / "ours"), manifest_of(tmp_path / "theirs")
    assert _comparable(ours) == _comparable(theirs)
    assert ours["_txn"]["operation"] == {
        "Clone": {"is_shallow": True, "ref_name": None, "ref_version": 3, "ref_path": os.path.abspath(src), "branch_name": None}
    }
    assert ours["_path"] == theirs["_path"]  # same version, V2 naming
    assert ours["transaction_file"].startswith("3-")
    assert sorted(os.listdir(tmp_path / "ours")) == sorted(os.listdir(tmp_path / "theirs"))
    # pylance reads lancepy's clone, values compared exactly.
    theirs_view = pylance.dataset(str(tmp_path / "ours"))
    assert theirs_view.version == 3
    assert theirs_view.to_table().equals(lancepy.dataset(src).to_table())
    assert [t["version"] for t in theirs_view.versions()] == [3]
    assert lancepy.dataset(tmp_path / "ours").tags.list() == {}


def test_clone_references(tmp_path, pylance):
    src = str(tmp_path / "src")
    make_source(lancepy, src)
    ds = lancepy.dataset(src)
    ds.tags.create("gold", 1)
    assert ds.shallow_clone(tmp_path / "t", "gold").version == 1
    assert ds.shallow_clone(tmp_path / "latest", (None, None)).version == 3
    assert ds.shallow_clone(tmp_path / "main", ("main", 2)).count_rows() == 60
    with pytest.raises(UnsupportedError, match="branch"):
        ds.shallow_clone(tmp_path / "b", ("dev", 1))
    with pytest.raises(VersionNotFoundError):
        ds.shallow_clone(tmp_path / "v9", 9)
    with pytest.raises(VersionNotFoundError):
        ds.shallow_clone(tmp_path / "nope", "no-such-tag")
    assert not (tmp_path / "v9").exists() and not (tmp_path / "nope").exists()
    with pytest.raises(DatasetAlreadyExistsError):
        ds.shallow_clone(tmp_path / "t", 2)
    with pytest.raises(DatasetAlreadyExistsError):
        ds.shallow_clone(src, 2)
    with pytest.raises(InvalidArgumentError):
        ds.shallow_clone(tmp_path / "x", True)
    # A clone of a V1-named source is V2-named, like pylance's.
    v1 = str(tmp_path / "v1")
    lancepy.write_dataset(rows(0, 5), v1, enable_v2_manifest_paths=False)
    c = lancepy.dataset(v1).shallow_clone(tmp_path / "v1clone", 1)
    assert c.manifest_naming == "v2" and c.count_rows() == 5


@pytest.mark.filterwarnings("ignore:The 'list_indices' method is deprecated")
def test_clone_keeps_indices_in_the_source(tmp_path, pylance):
    src = str(tmp_path / "src")
    theirs = pylance.write_dataset(rows(0, 500), src)
    theirs.create_scalar_index("id", "BTREE")
    clone = str(tmp_path / "clone")
    ours = lancepy.dataset(src).shallow_clone(clone, 2)
    assert [i["name"] for i in ours.list_indices()] == ["id_idx"]
    view = pylance.dataset(clone)
    [idx] = view.list_indices()
    assert idx["base_id"] == 0
    assert "ScalarIndexQuery" in view.scanner(filter="id = 78").explain_plan()
    assert view.to_table(filter="id = 78").column("s").to_pylist() == ["s78"]


# --------------------------------------------------------------------------------------------
# Writes to a clone stay in the clone
# --------------------------------------------------------------------------------------------


def test_writes_to_clone_leave_source_untouched(tmp_path, pylance):
    src, clone = str(tmp_path / "src"), str(tmp_path / "clone")
    make_source(pylance, src)
    before = snapshot_files(src)
    source_table = lancepy.dataset(src).to_table()

    c = lancepy.dataset(src).shallow_clone(clone, 3)
    lancepy.write_dataset(rows(60, 70), clone, mode="append")
    c = lancepy.dataset(clone)
    c.delete("id = 1 or id = 65 or id = 45")  # a source fragment, a clone fragment, another source fragment
    c.add_columns({"double": "id * 2"})
    c.update({"s": "'changed'"}, where="id = 2")
    metrics = c.optimize.compact_files(target_rows_per_fragment=1000)
    assert metrics.fragments_removed > 0
    c = lancepy.dataset(clone)
    expected = [i for i in range(70) if not (i < 60 and i % 10 == 3) and i not in (1, 65, 45)]
    table = c.to_table()
    assert sorted(table.column("id").to_pylist()) == expected
    assert table.filter(pc.equal(table.column("id"), 2)).column("s").to_pylist() == ["changed"]
    assert pylance.dataset(clone).to_table().equals(table)

    assert snapshot_files(src) == before
    assert lancepy.dataset(src).to_table().equals(source_table)
    # Every new file is under the clone's root.
    after = snapshot_files(clone)
    assert any(p.startswith("data/") for p in after) and any(p.startswith("_deletions/") for p in after)

    # Time travel in the clone: its first version is the source's version 3.
    first = lancepy.dataset(clone, version=3)
    assert first.to_table().equals(source_table)
    assert [v["version"] for v in c.versions()] == list(range(3, c.version + 1))
    # Restoring the clone's first version.
    first.restore()
    assert lancepy.dataset(clone).to_table().equals(source_table)


def test_pylance_writes_to_our_clone(tmp_path, pylance):
    src, clone = str(tmp_path / "src"), str(tmp_path / "clone")
    make_source(lancepy, src)
    before = snapshot_files(src)
    lancepy.dataset(src).shallow_clone(clone, 3)
    pylance.write_dataset(rows(60, 66), clone, mode="append")
    pylance.dataset(clone).delete("id = 0 or id = 61")
    ours, theirs = lancepy.dataset(clone), pylance.dataset(clone)
    assert ours.version == theirs.version == 5
    assert ours.to_table().equals(theirs.to_table())
    assert snapshot_files(src) == before


def test_cleanup_on_clone_never_deletes_source_files(tmp_path, pylance):
    src, clone = str(tmp_path / "src"), str(tmp_path / "clone")
    make_source(lancepy, src)
    before = snapshot_files(src)
    lancepy.dataset(src).shallow_clone(clone, 2)
    lancepy.write_dataset(rows(60, 70), clone, mode="append")
    c = lancepy.dataset(clone)
    c.delete("id < 30")  # removes source fragments from the clone's latest version
    c.optimize.compact_files()
    expected = lancepy.dataset(clone).to_table()
    stats = lancepy.dataset(clone).cleanup_old_versions(older_than=datetime.timedelta(0), delete_unverified=True)
    assert stats.old_versions > 0
    assert snapshot_files(src) == before
    assert lancepy.dataset(clone).to_table().equals(expected)
    assert pylance.dataset(clone).to_table().equals(expected)
    # The source is whole at every version.
    for v in (1, 2, 3):
        assert lancepy.dataset(src, version=v).to_table().equals(pylance.dataset(src, version=v).to_table())


def test_cleanup_keeps_files_a_base_finds_under_the_own_root(tmp_path):
    """A base registered at the dataset's own root: its files are the dataset's and in use."""
    root = str(tmp_path / "ds")
    lancepy.write_dataset(
        rows(0, 10), root, initial_bases=[DatasetBasePath(root, "self", True)], target_bases=["self"]
    )
    lancepy.write_dataset(rows(10, 20), root, mode="append")
    ds = lancepy.dataset(root)
    ds.cleanup_old_versions(older_than=datetime.timedelta(0), delete_unverified=True)
    assert lancepy.dataset(root).count_rows() == 20


# --------------------------------------------------------------------------------------------
# Failures and bad input
# --------------------------------------------------------------------------------------------


def test_failed_clone_leaves_nothing(tmp_path, monkeypatch):
    """The clone fails after writing its transaction file, before publishing its manifest:
    nothing is left that a reader (or a later clone) would trip over."""
    import lancepy._table.bases as bases
    import lancepy._table.manifest as manifest

    src, clone = str(tmp_path / "src"), str(tmp_path / "clone")
    make_source(lancepy, src)
    calls = []

    def failing_latest_version(store):
        calls.append(store.uri)
        if len(calls) == 2:  # the re-check just before the manifest is published
            assert any(p.startswith("_transactions/") for p, _, _ in store.list(""))
            raise OSError("simulated failure while publishing the clone")
        return manifest.latest_version(store)

    class Manifest:
        def __getattr__(self, name):
            return getattr(manifest, name)

        latest_version = staticmethod(failing_latest_version)

    monkeypatch.setattr(bases, "_manifest", Manifest())
    with pytest.raises(OSError, match="simulated"):
        lancepy.dataset(src).shallow_clone(clone, 3)
    monkeypatch.undo()
    assert len(calls) == 2
    assert snapshot_files(clone) == {} if os.path.exists(clone) else True
    with pytest.raises(DatasetNotFoundError):
        lancepy.dataset(clone)
    # The clone can then be made normally.
    assert lancepy.dataset(src).shallow_clone(clone, 3).count_rows() == 54


def test_missing_source_is_a_clear_error(tmp_path, pylance):
    src, clone = str(tmp_path / "src"), str(tmp_path / "clone")
    make_source(pylance, src)
    lancepy.dataset(src).shallow_clone(clone, 3)
    shutil.rmtree(src)
    c = lancepy.dataset(clone)  # the manifest is the clone's own
    with pytest.raises(BasePathNotFoundError, match="base path 0 .*does not exist"):
        c.to_table()
    with pytest.raises(BasePathNotFoundError):
        c.take([0])
    # A missing file whose base exists is an ordinary NotFoundError, not this one.
    # (pylance writes the source: lancepy keeps readers of files it opened cached.)
    src2, clone2 = str(tmp_path / "src2"), str(tmp_path / "clone2")
    make_source(pylance, src2)
    lancepy.dataset(src2).shallow_clone(clone2, 2)
    for f in glob.glob(os.path.join(src2, "data", "*.lance")):
        os.remove(f)
    with pytest.raises(lancepy.exceptions.NotFoundError) as e:
        lancepy.dataset(clone2).to_table()
    assert not isinstance(e.value, BasePathNotFoundError)


def test_unknown_base_id_is_corrupt(tmp_path):
    root = str(tmp_path / "ds")
    lancepy.write_dataset(rows(0, 10), root)
    store = _lancepy.Store(root, None)
    versions, _ = _lancepy.list_versions(store)
    path = dict(versions)[1]
    text, index_section, txn = _lancepy.read_manifest(store.read(path), path)
    m = json.loads(text)
    m["fragments"][0]["files"][0]["base_id"] = 9
    m["base_paths"] = [{"id": 2, "name": "other", "is_dataset_root": True, "path": str(tmp_path / "other")}]
    store.put(path, _lancepy.write_manifest(json.dumps(m), txn, index_section))
    with pytest.raises(CorruptFileError, match=r"fragment 0: .*base path 9.*\[2\]"):
        lancepy.dataset(root)


# --------------------------------------------------------------------------------------------
# Datasets written with initial_bases / target_bases
# --------------------------------------------------------------------------------------------


def _bases(tmp_path, cls):
    return [
        cls(str(tmp_path / "plain"), name="plain"),
        cls(str(tmp_path / "rooted"), name="rooted", is_dataset_root=True),
    ]


def _multi_base_history(mod, tmp_path, root, cls):
    mod.write_dataset(rows(0, 10), root, initial_bases=_bases(tmp_path, cls), target_bases=["plain"])
    mod.write_dataset(rows(10, 20), root, mode="append", target_bases=["rooted"])
    mod.write_dataset(rows(20, 30), root, mode="append")
    mod.write_dataset(rows(30, 40), root, mode="append", target_bases=[str(tmp_path / "plain")])
    mod.dataset(root).delete("id % 10 = 1")


def test_read_pylance_multi_base_dataset(tmp_path, pylance):
    root = str(tmp_path / "ds")
    _multi_base_history(pylance, tmp_path, root, pylance.DatasetBasePath)
    assert sorted(os.listdir(tmp_path / "rooted")) == ["data"]
    assert len(glob.glob(str(tmp_path / "plain" / "*.lance"))) == 2
    for v in range(1, 6):
        ours, theirs = lancepy.dataset(root, version=v), pylance.dataset(root, version=v)
        assert ours.to_table().equals(theirs.to_table()), v
        assert ours.count_rows() == theirs.count_rows()
    ours = lancepy.dataset(root)
    assert ours.base_paths() == {
        1: DatasetBasePath(str(tmp_path / "plain"), "plain", False, 1),
        2: DatasetBasePath(str(tmp_path / "rooted"), "rooted", True, 2),
    }
    assert ours.take([0, 35]).equals(pylance.dataset(root).take([0, 35]))
    # lancepy goes on from pylance's dataset.
    lancepy.write_dataset(rows(40, 45), root, mode="append", target_bases=["rooted"])
    lancepy.dataset(root).delete("id = 12 or id = 42")
    assert pylance.dataset(root).to_table().equals(lancepy.dataset(root).to_table())
    # ... and a clone of it keeps both bases, adding the root as base 3.
    clone = lancepy.dataset(root).shallow_clone(tmp_path / "clone", 7)
    assert sorted(clone.base_paths()) == [1, 2, 3]
    assert pylance.dataset(str(tmp_path / "clone")).to_table().equals(clone.to_table())


def test_write_multi_base_dataset_like_pylance(tmp_path, pylance):
    ours_root, theirs_root = str(tmp_path / "ours"), str(tmp_path / "theirs")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _multi_base_history(lancepy, tmp_path / "a", ours_root, DatasetBasePath)
    _multi_base_history(pylance, tmp_path / "b", theirs_root, pylance.DatasetBasePath)
    for v in range(1, 6):
        mo, mt = manifest_of(ours_root, v), manifest_of(theirs_root, v)
        rel = lambda bases, d: sorted((b["id"], b["name"], b["is_dataset_root"], os.path.relpath(b["path"], d)) for b in bases)  # noqa: E731
        assert rel(mo["base_paths"], tmp_path / "a") == rel(mt["base_paths"], tmp_path / "b")
        ids = lambda m: [([d.get("base_id") for d in f["files"]], (f.get("deletion_file") or {}).get("base_id")) for f in m["fragments"]]  # noqa: E731
        assert ids(mo) == ids(mt)
        assert mo["reader_feature_flags"] == mt["reader_feature_flags"]
        assert mo["writer_feature_flags"] == mt["writer_feature_flags"]
    assert mo["_txn"]["operation"].keys() == mt["_txn"]["operation"].keys()
    first = manifest_of(ours_root, 1)["_txn"]["operation"]["Overwrite"]["initial_bases"]
    assert [(b["id"], b["name"]) for b in first] == [(1, "plain"), (2, "rooted")]
    assert pylance.dataset(ours_root).to_table().equals(lancepy.dataset(ours_root).to_table())
    assert sorted(os.listdir(tmp_path / "a" / "rooted")) == ["data"]


def test_multi_base_write_errors(tmp_path):
    root = str(tmp_path / "ds")
    base = DatasetBasePath(str(tmp_path / "plain"), name="plain")
    with pytest.raises(InvalidArgumentError, match="'zzz' is not registered"):
        lancepy.write_dataset(rows(0, 5), root, initial_bases=[base], target_bases=["zzz"])
    assert not os.path.exists(tmp_path / "plain") or not os.listdir(tmp_path / "plain")
    with pytest.raises(InvalidArgumentError, match="two initial bases"):
        lancepy.write_dataset(rows(0, 5), root, initial_bases=[base, base])
    lancepy.write_dataset(rows(0, 5), root, initial_bases=[base])
    with pytest.raises(InvalidArgumentError, match="mode must be 'create'"):
        lancepy.write_dataset(rows(0, 5), root, mode="append", initial_bases=[base])
    lancepy.write_dataset(rows(0, 0), root, mode="append", target_all_bases=True)  # (nothing to place)
    with pytest.raises(InvalidArgumentError, match="not registered"):
        lancepy.write_dataset(rows(0, 5), root, mode="append", target_bases=["other"])
    lancepy.write_dataset(rows(5, 9), root, mode="append", target_bases=["plain"])
    assert lancepy.dataset(root).count_rows() == 9
    # Explicit ids are kept, others numbered around them.
    ds = lancepy.write_dataset(
        rows(0, 1), str(tmp_path / "ids"),
        initial_bases=[DatasetBasePath(str(tmp_path / "x"), id=1), DatasetBasePath(str(tmp_path / "y"))],
    )
    assert sorted(ds.base_paths()) == [1, 2]


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_add_bases(tmp_path, pylance, writer):
    """``add_bases`` (an ``UpdateBases`` transaction): ids assigned like pylance, clashes
    refused, the new bases usable as ``target_bases`` by both libraries."""
    root = str(tmp_path / "ds")
    mod = lancepy if writer == "lancepy" else pylance
    cls = DatasetBasePath if writer == "lancepy" else pylance.DatasetBasePath
    mod.write_dataset(rows(0, 10), root)
    mod.dataset(root).add_bases([cls(str(tmp_path / "b1"), name="x"), cls(str(tmp_path / "b2"), is_dataset_root=True)])
    mod.dataset(root).add_bases([cls(str(tmp_path / "b3"), name="z", id=7)])
    ours = lancepy.dataset(root)
    assert ours.version == 3
    assert ours.base_paths() == {
        1: DatasetBasePath(str(tmp_path / "b1"), "x", False, 1),
        2: DatasetBasePath(str(tmp_path / "b2"), None, True, 2),
        7: DatasetBasePath(str(tmp_path / "b3"), "z", False, 7),
    }
    assert manifest_of(root, 2)["_txn"]["operation"]["UpdateBases"]["new_bases"][0]["id"] == 0
    with pytest.raises(InvalidArgumentError, match="clashes"):
        lancepy.dataset(root).add_bases([DatasetBasePath(str(tmp_path / "b9"), name="x")])
    with pytest.raises(InvalidArgumentError, match="clashes"):
        lancepy.dataset(root).add_bases([DatasetBasePath(str(tmp_path / "b1"), name="q")])
    assert lancepy.dataset(root).version == 3
    lancepy.write_dataset(rows(10, 15), root, mode="append", target_bases=["x"])
    pylance.write_dataset(rows(15, 20), root, mode="append", target_bases=["z"])
    assert len(glob.glob(str(tmp_path / "b1" / "*.lance"))) == 1
    assert len(glob.glob(str(tmp_path / "b3" / "*.lance"))) == 1
    assert lancepy.dataset(root).to_table().equals(pylance.dataset(root).to_table())
    assert lancepy.dataset(root).count_rows() == 20


def test_update_bases_rebases_over_concurrent_writes(tmp_path):
    root = str(tmp_path / "ds")
    lancepy.write_dataset(rows(0, 10), root)
    stale = lancepy.dataset(root)
    lancepy.write_dataset(rows(10, 20), root, mode="append")
    lancepy.dataset(root).delete("id = 3")
    stale.add_bases([DatasetBasePath(str(tmp_path / "b"), name="b")])  # read version 1, commits 4
    ds = lancepy.dataset(root)
    assert ds.version == 4 and ds.count_rows() == 19 and sorted(ds.base_paths()) == [1]
    appender = lancepy.dataset(root)
    lancepy.dataset(root).add_bases([DatasetBasePath(str(tmp_path / "c"), name="c")])
    appender.insert(rows(20, 25), target_bases=["c"])
    assert lancepy.dataset(root).count_rows() == 24


@pytest.mark.parametrize(
    "options",
    [{"target_all_bases": True}, {"target_all_bases": False}, {"target_bases": ["rooted", "plain"]},
     {"target_bases": ["plain", str(Path("{tmp}") / "rooted")]}],
    ids=["all-with-root", "all-bases", "named", "named-and-path"],
)
def test_round_robin_over_bases_as_pylance(tmp_path, pylance, options):
    """Several targets: each new data file goes to the next one in turn, as pylance does."""
    placed = {}
    for name, mod, cls in (("ours", lancepy, DatasetBasePath), ("theirs", pylance, pylance.DatasetBasePath)):
        (tmp_path / name).mkdir()
        root = str(tmp_path / name / "ds")
        opts = {k: [t.replace("{tmp}", str(tmp_path / name)) for t in v] if k == "target_bases" else v
                for k, v in options.items()}
        mod.write_dataset(rows(0, 4), root, initial_bases=_bases(tmp_path / name, cls))
        mod.write_dataset(rows(4, 15), root, mode="append", max_rows_per_file=2, **opts)
        placed[name] = [d.base_id for f in pylance.dataset(root).get_fragments() for d in f.data_files()]
        for m in (lancepy, pylance):
            assert m.dataset(root).to_table().sort_by("id").equals(rows(0, 15)), (name, m)
    assert placed["ours"] == placed["theirs"]
    assert len(set(placed["ours"][1:])) > 1


def test_round_robin_write_that_fails_leaves_no_files(tmp_path):
    root = str(tmp_path / "ds")
    lancepy.write_dataset(rows(0, 4), root, initial_bases=_bases(tmp_path, DatasetBasePath))
    before = sorted(str(p) for p in tmp_path.rglob("*.lance"))

    def batches():
        yield from rows(4, 10).to_batches()
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError, match="source failed"):
        lancepy.write_dataset(pa.RecordBatchReader.from_batches(rows(0, 1).schema, batches()), root, mode="append",
                              max_rows_per_file=2, target_all_bases=True)
    assert sorted(str(p) for p in tmp_path.rglob("*.lance")) == before
    assert lancepy.dataset(root).version == 1
    with pytest.raises(InvalidArgumentError):
        lancepy.write_dataset(rows(0, 1), root, mode="append", target_all_bases=True, target_bases=["plain"])


def test_write_fragments_into_bases_as_pylance(tmp_path, pylance):
    """Distributed writers put their files into registered bases (round-robin) before the
    driver commits; placement equal to pylance's write_fragments."""
    placed = {}
    for name, mod, cls in (("ours", lancepy, DatasetBasePath), ("theirs", pylance, pylance.DatasetBasePath)):
        (tmp_path / name).mkdir()
        root = str(tmp_path / name / "ds")
        mod.write_dataset(rows(0, 4), root, initial_bases=_bases(tmp_path / name, cls))
        frags = mod.fragment.write_fragments(rows(4, 11), root, max_rows_per_file=2, target_all_bases=False)
        placed[name] = [d.base_id for f in frags for d in f.data_files()]
        op = mod.LanceOperation.Append(frags)
        mod.LanceDataset.commit(root, op, read_version=1)
        for m in (lancepy, pylance):
            assert m.dataset(root).to_table().sort_by("id").equals(rows(0, 11)), (name, m)
    assert placed["ours"] == placed["theirs"] == [1, 2, 1, 2]
