"""A manifest's parts read on their own (schema, schema metadata, config, storage version,
largest field id) equal what the whole decoded manifest says, for datasets written by both
libraries, with nested fields, metadata, config, several data files per fragment and an
older manifest that records no storage version."""

from __future__ import annotations

import shutil
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy._table.manifest import LoadedManifest, _infer_storage_version, load_manifest

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
        assert parts.fields == whole.get("fields", [])
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
    assert fresh.fields is whole["fields"]
    assert fresh.fields == LoadedManifest.from_native(loaded.native).fields


def test_old_manifest_without_a_recorded_storage_version(tmp_path):
    src = DATA / "pylance-0.13.0_string_encoding.lance"
    uri = str(tmp_path / "old.lance")
    shutil.copytree(src, uri)
    loaded = lancepy.dataset(uri)._view.loaded
    assert loaded.native.data_format_version is None or loaded.native.data_format_version == (
        _whole(loaded).get("data_format") or {}
    ).get("version")
    _check(uri)
