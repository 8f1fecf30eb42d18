"""Appends, deletes, updates, rewrites (compactions) and data replacements build their manifest without turning the existing fragments
into JSON (issue 23: commits cost flat in fragments): the base's fragments stay native and
only the removed, replaced and new ones cross as JSON. The manifest must be the one the generic path builds from every fragment,
whatever the base holds (deletions, a deleted last fragment, stable row ids, table config,
pylance's manifests, 2.0 files), and pylance must read the result."""

from __future__ import annotations

import copy
import json

import pyarrow as pa
import pytest

import lance
import lancepy
from lancepy import _lancepy
from lancepy._table import commit as C
from lancepy._table.manifest import load_manifest

CASES = ["plain", "deletions", "last_fragment_deleted", "stable_row_ids", "config", "pylance", "v2_0", "v2_1"]
#: and fragments of two data files, one holding a tombstoned field (id, -2), one a column added later
MANIFEST_CASES = CASES + ["added_column"]


def _table(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()), "s": [f"s{i}" for i in range(start, start + n)]})


def _dataset(tmp_path, case: str) -> str:
    uri = str(tmp_path / case)
    t = _table(0, 100)
    if case == "pylance":
        lance.write_dataset(t, uri, max_rows_per_file=30)
    else:
        version = {"v2_0": "2.0", "v2_1": "2.1"}.get(case)
        lancepy.write_dataset(t, uri, max_rows_per_file=30, enable_stable_row_ids=case == "stable_row_ids",
                              data_storage_version=version)
    ds = lancepy.dataset(uri)
    if case == "deletions":
        ds.delete("id % 7 = 0")
    elif case == "last_fragment_deleted":
        ds.delete("id >= 90")  # the last fragment (rows 90..99) goes: the largest id is no fragment's
    elif case == "config":
        ds.update_config({"team": "ml"})
    elif case == "added_column":
        ds.add_columns({"z": "id * 2"})
        ds.drop_columns(["s"])
    return uri


def _decoded(data: bytes) -> dict:
    text, index, txn = _lancepy.read_manifest(data, "test.manifest")
    m = json.loads(text)
    m.pop("timestamp")
    return m


def _body(op: str, frags: list, with_deletion: bool, fields: list) -> dict:
    """A synthetic `op` over the base's fragments `frags` (copies of its own entries: the
    manifests are compared, never read)."""
    frags = copy.deepcopy(frags)
    for f in frags:
        f.pop("row_id_sequence", None)
    copies = [dict(f) for f in frags[:2]]
    if not with_deletion:
        for f in copies:
            f.pop("deletion_file", None)
    if op == "Append":
        return {"fragments": copies}
    if op == "Project":  # (the last field dropped: with "added_column", every fragment's second file)
        return {"schema": fields[:-1]}
    if op == "DataReplacement":  # (two fragments' files replaced by files of the same fields)
        return {"replacements": [{"fragment_id": f["id"], "new_file": dict(f["files"][0], path=f"replaced-{i}.lance")}
                                 for i, f in enumerate((frags[0], frags[-1]))]}
    if op == "Rewrite":  # (one group's new fragments with ids reserved beforehand, one's to number)
        reserved = [dict(f, id=5000 + i) for i, f in enumerate(copies)]
        fresh = [dict(f, id=0) for f in copies]
        return {"groups": [{"old_fragments": [frags[0]], "new_fragments": reserved},
                           {"old_fragments": [frags[-1], {"id": 10_000}], "new_fragments": fresh}]}
    touched = dict(frags[0])
    if with_deletion:
        touched["deletion_file"] = {"file_type": 1, "read_version": 1, "id": 77, "num_deleted_rows": 3}
    else:
        touched.pop("deletion_file", None)
    gone = [frags[-1]["id"], 10_000]  # (an id the base lacks is ignored)
    if op == "Delete":
        return {"updated_fragments": [touched, dict(frags[-1])], "deleted_fragment_ids": gone, "predicate": "x"}
    return {"updated_fragments": [touched], "removed_fragment_ids": gone, "new_fragments": copies,
            "fields_modified": []}


@pytest.mark.parametrize("op", ["Append", "Delete", "Update", "Rewrite", "DataReplacement", "Project"])
@pytest.mark.parametrize("with_deletion", [False, True])
@pytest.mark.parametrize("case", MANIFEST_CASES)
def test_a_commit_builds_the_manifest_the_generic_path_builds(tmp_path, case, with_deletion, op, monkeypatch):
    uri = _dataset(tmp_path, case)
    store = lancepy.dataset(uri)._view.store
    base = load_manifest(store, lancepy.dataset(uri).version)
    body = _body(op, base.manifest["fragments"], with_deletion, base.manifest["fields"])
    txn = C.new_transaction(base.version, op, body)
    assert C._keeps_fragments(base, op, body, None)
    fast = C.build_manifest(base, txn, base.version + 1, "t.txn")
    assert fast.base is not None and "fragments" not in fast.manifest
    monkeypatch.setattr(C, "_keeps_fragments", lambda *a: False)
    slow = C.build_manifest(base, txn, base.version + 1, "t.txn")
    assert slow.base is None
    got, want = _decoded(fast.encode(b"")), _decoded(slow.encode(b""))
    assert got == want
    ids = [f["id"] for f in got["fragments"]]
    assert ids == sorted(ids)


@pytest.mark.parametrize("case", CASES)
def test_appends_deletes_updates_and_compactions_stay_readable_by_pylance(tmp_path, case):
    uri = _dataset(tmp_path, case)
    want = lancepy.dataset(uri).to_table()
    for start in (1000, 2000):
        lancepy.write_dataset(_table(start, 40), uri, mode="append", max_rows_per_file=25)
        want = pa.concat_tables([want, _table(start, 40)])
    ds = lancepy.dataset(uri)
    ds.delete("id = 1005 OR id < 3")
    ds.update({"s": "'updated'"}, where="id >= 2030")
    ds.update({"id": "id + 10000"}, where="id = 1010")  # (the updated rows move to a new fragment)
    ds = lancepy.dataset(uri)
    before = len(ds.get_fragments())
    ds.optimize.compact_files(target_rows_per_fragment=60)  # (a Rewrite)
    assert len(lancepy.dataset(uri).get_fragments()) < before
    want = pa.Table.from_pylist(
        [{"id": (r["id"] + 10000 if r["id"] == 1010 else r["id"]), "s": "updated" if r["id"] >= 2030 else r["s"]}
         for r in want.to_pylist() if not (r["id"] == 1005 or r["id"] < 3)], schema=want.schema)
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.to_table().sort_by("id").equals(want.sort_by("id"))
    assert lancepy.dataset(uri).to_table().sort_by("id").equals(want.sort_by("id"))
    if case == "stable_row_ids":
        ours = lancepy.dataset(uri).to_table(with_row_id=True).column("_rowid").to_pylist()
        assert ours == theirs.to_table(with_row_id=True).column("_rowid").to_pylist()
        assert len(set(ours)) == len(ours)
    lancepy.dataset(uri).drop_columns(["s"])  # (a Project)
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.to_table().sort_by("id").equals(want.select(["id"]).sort_by("id"))


def test_an_update_that_prunes_indices_takes_the_generic_path(tmp_path):
    uri = _dataset(tmp_path, "plain")
    ds = lancepy.dataset(uri)
    ds.create_scalar_index("id", "BTREE")
    base = load_manifest(ds._view.store, lancepy.dataset(uri).version)
    assert not C._keeps_fragments(base, "Update", {"fields_modified": [0]}, None)
    assert C._keeps_fragments(base, "Update", {"fields_modified": []}, None)
    ds.update({"id": "id + 1"}, where="id < 10")
    assert lance.dataset(uri).to_table(filter="id = 5").num_rows == 1
    assert sorted(lancepy.dataset(uri).to_table(filter="id < 11").column("id").to_pylist()) == sorted([*range(1, 11), 10])


def test_a_legacy_or_unrecorded_format_takes_the_generic_path(tmp_path):
    uri = str(tmp_path / "legacy")
    lancepy.write_dataset(_table(0, 10), uri, data_storage_version="legacy")
    base = load_manifest(lancepy.dataset(uri)._view.store, 1)
    assert not C._keeps_fragments(base, "Append", {}, None)
    assert not C._keeps_fragments(base, "Delete", {}, None)
    lancepy.write_dataset(_table(10, 10), uri, mode="append")
    assert lance.dataset(uri).count_rows() == 20


def test_write_manifest_refuses_fragments_given_twice(tmp_path):
    uri = _dataset(tmp_path, "plain")
    base = load_manifest(lancepy.dataset(uri)._view.store, 1)
    with pytest.raises(lancepy.exceptions.LanceError):
        _lancepy.write_manifest(base.json, None, None, None, base=base.native, appended="[]")
    with pytest.raises(lancepy.exceptions.LanceError):
        _lancepy.write_manifest(base.native.json_without_fragments(), None, None, None, appended="[]")


def _header_body(op: str, base) -> dict:
    """A synthetic `op` that changes no fragment of `base` (Overwrite: replaces them all)."""
    if op == "Overwrite":
        frags = copy.deepcopy(base.manifest["fragments"][:2])
        for f in frags:
            f.pop("row_id_sequence", None)
            f.pop("deletion_file", None)
        return {"fragments": frags, "schema": base.manifest["fields"], "schema_metadata": {},
                "config_upsert_values": {"a": "b"}}
    if op == "Merge":  # (every fragment, as a column added to each would list them)
        return {"fragments": copy.deepcopy(base.manifest["fragments"]), "schema": base.manifest["fields"],
                "schema_metadata": {}}
    if op == "Restore":
        return {"version": 1}
    if op == "UpdateConfig":
        return {"upsert_values": {"k": "v"}, "delete_keys": ["team"]}
    if op == "UpdateBases":
        return {"new_bases": [{"id": 0, "name": "b1", "path": "/tmp/elsewhere", "is_dataset_root": False}]}
    if op == "ReserveFragments":
        return {"num_fragments": 4}
    return {"new_indices": [], "removed_indices": []}


@pytest.mark.parametrize(
    "op", ["Overwrite", "Merge", "Restore", "UpdateConfig", "UpdateBases", "ReserveFragments", "CreateIndex"]
)
@pytest.mark.parametrize("case", CASES)
def test_operations_that_keep_or_drop_every_fragment_read_no_fragment(tmp_path, case, op, monkeypatch):
    """Overwrite, Merge, Restore, config / base-path / index changes and fragment
    reservations build the manifest the generic path builds without decoding the base's
    fragments."""
    uri = _dataset(tmp_path, case)
    store = lancepy.dataset(uri)._view.store
    base = load_manifest(store, lancepy.dataset(uri).version)
    body = _header_body(op, base)
    txn = C.new_transaction(base.version, op, body)
    fresh = load_manifest(store, base.version)  # (nothing decoded whole yet)
    fast = C.build_manifest(fresh, txn, base.version + 1, "t.txn", store=store)
    assert fresh._manifest is None and fresh._json is None
    assert (fast.base is None) == (op in ("Overwrite", "Merge", "Restore"))
    monkeypatch.setattr(C, "_HEADER_OPERATIONS", ())
    slow = C.build_manifest(base, txn, base.version + 1, "t.txn", store=store)
    assert slow.base is None
    assert _decoded(fast.encode(b"")) == _decoded(slow.encode(b""))


@pytest.mark.parametrize("case", ["plain", "stable_row_ids", "pylance"])
def test_config_index_and_overwrite_commits_stay_readable_by_pylance(tmp_path, case):
    uri = _dataset(tmp_path, case)
    ds = lancepy.dataset(uri)
    ds.update_config({"owner": "data"})
    ds.create_scalar_index("id", "BTREE")
    ds.delete_config_keys(["owner"])
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.count_rows("id = 42") == 1 and theirs.to_table().num_rows == 100
    assert [i["name"] for i in theirs.list_indices()] == ["id_idx"]
    lancepy.write_dataset(_table(500, 10), uri, mode="overwrite")
    theirs = lance.dataset(uri)
    theirs.validate()
    assert theirs.to_table().equals(_table(500, 10))
    assert lancepy.dataset(uri).to_table().equals(_table(500, 10))
