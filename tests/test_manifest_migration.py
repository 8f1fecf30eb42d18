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
    manifest, entries = ds._loaded.manifest, ds._index_entries()
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
