"""A manifest's parts read on their own (schema, schema metadata, config, storage version,
largest field id, fragments, commit time, transaction file, the version's summary, the files
it uses, blob columns) equal what the whole decoded manifest says, for datasets written by
both libraries, with nested fields, metadata, config, several data files per fragment,
deletions, blobs, base paths and an older manifest that records no storage version; and the
everyday operations never decode the whole manifest (its JSON grows with the fragments)."""

from __future__ import annotations

import datetime
import json
import shutil
import time
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy._core.blobschema import _is_blob_v2, _is_legacy_blob
from lancepy._table import bases as _bases
from lancepy._table.fragments import FragmentMetadata
from lancepy._table.manifest import LoadedManifest, _infer_storage_version, load_manifest
from lancepy.exceptions import ColumnNotFoundError
from lancepy.optimize import Compaction, CompactionOptions

DATA = Path(__file__).parent / "data"


def _table(n: int = 20) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "s": pa.array([f"v{i}" for i in range(n)]),
            "st": pa.array([{"a": i, "b": [float(i)] * (i % 3)} for i in range(n)]),
        }
    ).replace_schema_metadata({"owner": "tests", "k": "v"})


def _whole(loaded: LoadedManifest):
    return LoadedManifest.from_native(loaded.native).manifest


def _check(uri: str) -> None:
    ds = lancepy.dataset(uri)
    for v in [x["version"] for x in ds.versions()]:
        parts = load_manifest(ds._view.store, v)
        whole = _whole(parts)
        assert parts.field_entries == whole.get("fields", [])
        assert [(f.id, f.parent_id, f.name, f.logical_type, f.nullable) for f in parts.fields] == [
            (f.get("id", 0), f.get("parent_id", -1), f.get("name", ""), f.get("logical_type", ""), f.get("nullable", True))
            for f in whole.get("fields", [])
        ]
        assert parts.schema_metadata == (whole.get("schema_metadata") or {})
        assert parts.config == (whole.get("config") or {})
        recorded = (whole.get("data_format") or {}).get("version")
        assert parts.data_storage_version == (
            recorded or _infer_storage_version(whole.get("fragments", []), whole.get("writer_feature_flags", 0))
        )
        ids = [f.get("id", 0) for f in whole.get("fields", [])]
        for frag in whole.get("fragments", []):
            for df in frag.get("files", []):
                ids.extend(df.get("fields", []))
        assert parts.max_field_id == max(ids, default=-1)
        assert all(isinstance(f, FragmentMetadata) for f in parts.fragments)
        assert [f._manifest_json() for f in parts.fragments] == whole.get("fragments", [])
        some = [f["id"] for f in whole.get("fragments", [])][::2]
        assert {k: f._manifest_json() for k, f in parts.fragments_with_ids(some + [1 << 40]).items()} == {
            f["id"]: f for f in whole.get("fragments", []) if f["id"] in some
        }
        at_v = ds.checkout_version(v)
        for entry in whole.get("fragments", []):
            assert at_v._view.state.fragment_metadata(entry["id"]) == FragmentMetadata._from_dict(entry)
            assert parts.has_fragment(entry["id"]) and at_v.get_fragment(entry["id"]).fragment_id == entry["id"]
        missing = max([f["id"] for f in whole.get("fragments", [])], default=0) + 1
        assert not parts.has_fragment(missing) and at_v.get_fragment(missing) is None
        ts = whole.get("timestamp") or {}
        assert parts.timestamp == (ts.get("seconds", 0), ts.get("nanos", 0))
        assert parts.transaction_file == (whole.get("transaction_file") or "")
        assert parts.max_fragment_id == whole.get("max_fragment_id")
        assert parts.version_entry() == _version_entry(v, whole)
        own = _bases._canonical(uri)
        paths, uris = parts.file_paths(own)
        assert sorted([f"{own}/{p}" for p in paths] + uris) == sorted(_file_uris(own, whole))
        under = {c[len(own) + 1:] for c in map(_bases._canonical, _file_uris(own, whole)) if c.startswith(own + "/")}
        txn = {f"_transactions/{whole['transaction_file']}"} if whole.get("transaction_file") else set()
        assert _bases.own_files(parts, uri) == under | txn | {parts.path}
        for f in whole.get("fields", []):
            if f.get("parent_id", -1) == -1:
                kind = "v2" if _is_blob_v2(f) else "legacy" if _is_legacy_blob(f) else None
                assert parts.blob_kind(f["name"]) == kind
    assert [parts.version_entry() for parts in (load_manifest(ds._view.store, e["version"]) for e in ds.versions())] == ds.versions()


def _version_entry(version, whole):
    """`versions()`'s entry for one version, computed from the whole manifest's JSON."""
    frags = whole.get("fragments") or []
    files = [df for f in frags for df in f.get("files") or []]
    deletions = [f["deletion_file"] for f in frags if f.get("deletion_file")]
    stats = {
        "total_data_file_rows": sum(f.get("physical_rows") or 0 for f in frags),
        "total_data_files": len(files),
        "total_deletion_file_rows": sum(d.get("num_deleted_rows") or 0 for d in deletions),
        "total_deletion_files": len(deletions),
        "total_files_size": sum(df.get("file_size_bytes") or 0 for df in files),
        "total_fragments": len(frags),
    }
    stats["total_rows"] = stats["total_data_file_rows"] - stats["total_deletion_file_rows"]
    ts = whole.get("timestamp") or {}
    when = datetime.datetime.fromtimestamp(ts.get("seconds", 0)) + datetime.timedelta(microseconds=ts.get("nanos", 0) // 1000)
    return {"version": version, "timestamp": when, "metadata": {k: str(n) for k, n in stats.items()}}


def _file_uris(root, whole):
    """The data and deletion files a version uses, from the whole manifest's JSON."""
    bases = {b.get("id", 0): b for b in whole.get("base_paths") or []}

    def under(base_id, subdir, name):
        if base_id is None:
            return f"{root}/{subdir}/{name}"
        base = bases[base_id]
        path = base["path"].rstrip("/")
        return f"{path}/{subdir}/{name}" if base.get("is_dataset_root") else f"{path}/{name}"

    out = []
    for frag in whole.get("fragments", []):
        out += [under(df.get("base_id"), "data", df["path"]) for df in frag.get("files", [])]
        d = frag.get("deletion_file")
        if d and (d.get("num_deleted_rows", 0) > 0 or d.get("id", 0) != 0):
            ext = "bin" if d.get("file_type", 0) == 1 else "arrow"
            name = f"{frag.get('id', 0)}-{d.get('read_version', 0)}-{d.get('id', 0)}.{ext}"
            out.append(under(d.get("base_id"), "_deletions", name))
    return out


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_parts_equal_the_whole_manifest(tmp_path, writer):
    lib = lancepy if writer == "lancepy" else lance
    uri = str(tmp_path / "d.lance")
    lib.write_dataset(_table(), uri, max_rows_per_file=7)
    ds = lib.dataset(uri)
    ds.update_config({"lance.test": "1"})
    ds = lib.dataset(uri)
    ds.add_columns({"z": "id * 2"})
    lib.write_dataset(_table(5), uri, mode="append")
    assert lancepy.dataset(uri)._view.loaded.config.get("lance.test") == "1"
    _check(uri)


def test_parts_after_the_whole_manifest_was_decoded(tmp_path):
    uri = str(tmp_path / "d.lance")
    lancepy.write_dataset(_table(), uri)
    loaded = lancepy.dataset(uri)._view.loaded
    fresh = LoadedManifest.from_native(loaded.native)
    whole = fresh.manifest  # decoded first: the parts come from it
    assert fresh.field_entries is whole["fields"]
    assert fresh.field_entries == LoadedManifest.from_native(loaded.native).field_entries
    assert [f.entry for f in fresh.fields] == whole["fields"]


def test_old_manifest_without_a_recorded_storage_version(tmp_path):
    src = DATA / "pylance-0.13.0_string_encoding.lance"
    uri = str(tmp_path / "old.lance")
    shutil.copytree(src, uri)
    loaded = lancepy.dataset(uri)._view.loaded
    assert loaded.native.data_format_version is None or loaded.native.data_format_version == (
        _whole(loaded).get("data_format") or {}
    ).get("version")
    _check(uri)


BLOB = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})


def _blob_table(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "b": [bytes([i % 251]) * (i * 37 % 5000) for i in ids]},
                    schema=pa.schema([pa.field("id", pa.int64()), BLOB]))


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
@pytest.mark.parametrize("storage", ["2.0", "2.2"])
def test_parts_with_deletions_blobs_and_base_paths(tmp_path, writer, storage):
    lib = lancepy if writer == "lancepy" else lance
    src = str(tmp_path / "src.lance")
    lib.write_dataset(_blob_table(0, 30), src, max_rows_per_file=8, data_storage_version=storage)
    lib.dataset(src).delete("id % 7 = 3")
    lib.write_dataset(_blob_table(30, 5), src, mode="append")
    _check(src)
    clone = str(tmp_path / "clone.lance")
    lance.dataset(src).shallow_clone(clone, 2)  # (its data files are under a base path)
    lib.write_dataset(_blob_table(90, 4), clone, mode="append")
    lib.dataset(clone).delete("id = 91 or id = 4")
    _check(clone)
    loaded = lancepy.dataset(clone)._view.loaded
    assert loaded.blob_columns(["id", "b"]) == ["b"]
    with pytest.raises(ColumnNotFoundError):
        loaded.blob_kind("nope")


def test_everyday_operations_never_decode_the_whole_manifest(tmp_path, monkeypatch):
    """Opening, reading, counting, taking, blob reads, versions, ``asof`` and cleanup read the
    parts they need: the whole manifest (every fragment as JSON) is never decoded."""
    uri = str(tmp_path / "d.lance")
    lancepy.write_dataset(_blob_table(0, 40), uri, max_rows_per_file=10)
    lancepy.dataset(uri).delete("id = 5")
    lancepy.write_dataset(_blob_table(40, 10), uri, mode="append")
    time.sleep(0.01)
    cutoff = datetime.datetime.now()
    lancepy.write_dataset(_blob_table(50, 10), uri, mode="append")
    expected = lancepy.dataset(uri).to_table()
    values = [_blob_table(0, 60).column("b")[i].as_py() for i in range(60) if i != 5]

    decoded = []
    whole_json = LoadedManifest.json

    def counting(self):
        decoded.append(self.version)
        return whole_json.fget(self)

    monkeypatch.setattr(LoadedManifest, "json", property(counting))
    ds = lancepy.dataset(uri)
    assert ds.to_table().equals(expected)
    assert ds.count_rows("id > 3") == 55 and ds.count_rows() == 59
    df = ds.to_pandas()
    assert [f.read() for f in df["b"]] == values
    assert ds.to_pandas(blob_mode="bytes")["b"].tolist() == values
    assert ds.scanner(blob_handling="all_binary").to_table().column("b").to_pylist() == values
    assert [f.read() for f in ds.take_blobs("b", indices=[0, 44])] == [values[0], values[44]]
    assert ds.get_version() == ds.versions()[-1]
    assert ds.get_fragments()[0].count_rows() == 9  # (id 5 deleted)
    assert lancepy.dataset(uri).get_fragment(1).metadata.physical_rows == 10
    assert ds.get_fragment(np.int64(0)).fragment_id == 0 and ds.get_fragment(99) is None and ds.get_fragment("0") is None
    assert ds.stats.dataset_stats()["num_fragments"] == 6
    assert ds.base_paths() == {}
    ds.validate()
    assert sum(f.bytes_on_disk for f in ds.stats.data_stats().fields) > 0
    assert len(Compaction.plan(ds, CompactionOptions(target_rows_per_fragment=100)).tasks) == 1
    assert lancepy.dataset(uri, asof=cutoff).version == ds.version - 1
    ds.cleanup_old_versions(older_than=datetime.timedelta(0))
    assert lancepy.dataset(uri).to_table().equals(expected)
    assert decoded == []
    # (The counter counts: the whole manifest's JSON when asked for it.)
    assert json.loads(lancepy.dataset(uri)._view.loaded.json)["fragments"] and decoded
