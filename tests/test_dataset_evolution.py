"""Schema evolution, compaction, cleanup, update and merge_insert."""

from __future__ import annotations

import datetime
import os

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError

try:
    import lance
except ImportError:  # pragma: no cover
    lance = None


def table(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "x": (ids % 13).astype(np.float64), "s": [f"s{i}" for i in ids]})


def data_files(uri: str) -> set:
    return set(os.listdir(os.path.join(uri, "data")))


def check_pylance_agrees(uri: str) -> None:
    if lance is None:
        return
    ours = lancepy.dataset(uri).to_table().replace_schema_metadata(None).combine_chunks()
    theirs = lance.dataset(uri).to_table().replace_schema_metadata(None).combine_chunks()
    assert ours.equals(theirs)


def test_add_columns_all_forms(tmp_path):
    uri = str(tmp_path / "a.lance")
    ds = lancepy.write_dataset(table(100), uri, max_rows_per_file=40)
    ds.delete("id % 10 = 0")
    before = data_files(uri)
    ds.add_columns({"double": "id * 2", "label": "s"})
    assert data_files(uri) - before and before <= data_files(uri)  # old files untouched
    t = ds.to_table()
    assert t.column("double").to_pylist() == [i * 2 for i in range(100) if i % 10]
    assert t.column("label").to_pylist() == [f"s{i}" for i in range(100) if i % 10]
    check_pylance_agrees(uri)

    ds.add_columns(lambda b: {"neg": pa.compute.negate(b.column("id"))}, read_columns=["id"])
    assert ds.to_table(columns=["neg"]).column("neg").to_pylist() == [-i for i in range(100) if i % 10]

    files = data_files(uri)
    ds.add_columns(pa.field("empty", pa.string()))
    assert data_files(uri) == files  # metadata only
    assert ds.to_table().column("empty").null_count == ds.count_rows()

    values = pa.table({"pre": pa.array(np.arange(ds.count_rows()) * 10)})
    ds.add_columns(values)
    assert ds.to_table(columns=["pre"]).column("pre").to_pylist() == list(range(0, ds.count_rows() * 10, 10))
    check_pylance_agrees(uri)
    with pytest.raises(InvalidArgumentError, match="already exist"):
        ds.add_columns({"double": "id"})


def test_drop_and_alter_columns(tmp_path):
    uri = str(tmp_path / "d.lance")
    ds = lancepy.write_dataset(table(50), uri, max_rows_per_file=20)
    files = data_files(uri)
    ds.drop_columns(["x"])
    assert ds.schema.names == ["id", "s"]
    assert data_files(uri) == files
    frag = ds.get_fragments()[0].metadata.to_json()
    assert -2 in frag["files"][0]["fields"]  # tombstoned
    check_pylance_agrees(uri)
    ds.add_columns({"x2": "id + 1"})  # new id does not reuse the dropped one
    assert ds.to_table(columns=["x2"]).column("x2").to_pylist() == list(range(1, 51))
    ds.alter_columns({"path": "s", "name": "text"})
    assert ds.schema.names == ["id", "text", "x2"]
    assert ds.to_table(columns=["text"]).column("text")[3].as_py() == "s3"
    ds.alter_columns({"path": "id", "nullable": False})
    assert not ds.schema.field("id").nullable
    check_pylance_agrees(uri)
    assert lancepy.dataset(uri, version=1).schema.names == ["id", "x", "s"]
    files = data_files(uri)
    ds.alter_columns({"path": "x2", "data_type": pa.int32(), "name": "x3"})
    assert ds.schema.field("x3").type == pa.int32()
    assert ds.to_table(columns=["x3"]).column("x3").to_pylist() == list(range(1, 51))
    assert files <= data_files(uri)  # only new files for the rewritten column
    check_pylance_agrees(uri)
    with pytest.raises(InvalidArgumentError, match="cast"):
        ds.alter_columns({"path": "text", "data_type": pa.int64()})
    with pytest.raises(InvalidArgumentError):
        ds.drop_columns(["nope"])


def test_compaction_and_cleanup(tmp_path):
    uri = str(tmp_path / "c.lance")
    lancepy.write_dataset(table(100), uri, max_rows_per_file=10)
    for i in range(5):
        lancepy.write_dataset(table(10, 100 + 10 * i), uri, mode="append")
    ds = lancepy.dataset(uri)
    ds.delete("id % 3 = 0")
    expected = ds.to_table()
    assert len(ds.get_fragments()) == 15
    metrics = ds.optimize.compact_files(target_rows_per_fragment=60)
    # 100 live rows, target 60: one new fragment (pylance's rule: as many as whole targets fit)
    assert metrics.fragments_removed == 15 and metrics.fragments_added == 1
    assert ds.to_table().equals(expected)
    assert all(f.metadata.deletion_file is None for f in ds.get_fragments())
    check_pylance_agrees(uri)
    ds.tags.create("kept", 2)
    n_versions = ds.version
    stats = ds.cleanup_old_versions(older_than=datetime.timedelta(0), error_if_tagged_old_versions=False)
    assert stats.old_versions == n_versions - 2 and stats.bytes_removed > 0
    assert [v["version"] for v in ds.versions()] == [2, n_versions]
    assert ds.to_table().equals(expected)
    assert lancepy.dataset(uri, version="kept").count_rows() == 110
    assert not os.listdir(os.path.join(uri, "_deletions"))
    check_pylance_agrees(uri)
    with pytest.raises(InvalidArgumentError, match="tagged"):
        lancepy.write_dataset(table(1, 500), uri, mode="append")
        ds = lancepy.dataset(uri)
        ds.tags.create("old", ds.version)
        lancepy.write_dataset(table(1, 501), uri, mode="append")
        ds.cleanup_old_versions(older_than=datetime.timedelta(0))


@pytest.mark.skipif(lance is None, reason="needs pylance")
def test_compaction_keeps_fragments_in_id_order(tmp_path):
    """A rewritten fragment in the middle gets a new, larger id; like pylance, the manifest
    keeps fragments sorted by id (pylance's validate() refuses anything else). Found by
    benches/soak.py."""
    ours_uri, theirs_uri = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    for uri in (ours_uri, theirs_uri):
        lancepy.write_dataset(table(40), uri, max_rows_per_file=10)
    lancepy.dataset(ours_uri).delete("id >= 10 AND id < 19")
    lance.dataset(theirs_uri).delete("id >= 10 AND id < 19")
    ours = lancepy.dataset(ours_uri)
    ours.optimize.compact_files(target_rows_per_fragment=10)
    lance.dataset(theirs_uri).optimize.compact_files(target_rows_per_fragment=10)
    ids = [f.fragment_id for f in ours.get_fragments()]
    assert ids == [f.fragment_id for f in lance.dataset(theirs_uri).get_fragments()]
    assert ids == sorted(ids) and len(ids) == 4 and ids[-1] == 4
    lance.dataset(ours_uri).validate()
    assert ours.to_table().equals(lance.dataset(theirs_uri).to_table())
    check_pylance_agrees(ours_uri)


def test_update_and_merge_insert(tmp_path):
    uri = str(tmp_path / "u.lance")
    ds = lancepy.write_dataset(table(30), uri, max_rows_per_file=10)
    res = ds.update({"x": "x + 100", "s": "'changed'"}, where="id < 5")
    assert res == {"num_rows_updated": 5}
    t = ds.to_table().sort_by("id")
    assert t.column("x").to_pylist()[:6] == [100.0, 101.0, 102.0, 103.0, 104.0, 5.0]
    assert t.column("s").to_pylist()[:6] == ["changed"] * 5 + ["s5"]
    assert ds.count_rows() == 30
    check_pylance_agrees(uri)

    src = pa.table({"id": pa.array([3, 40, 41], pa.int64()), "x": [-1.0, -2.0, -3.0], "s": ["a", "b", "c"]})
    res = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    assert res == {"num_updated_rows": 1, "num_inserted_rows": 2, "num_deleted_rows": 0}
    t = ds.to_table().sort_by("id")
    assert t.num_rows == 32
    row3 = t.filter(pa.compute.field("id") == 3)
    assert row3.column("x").to_pylist() == [-1.0]
    check_pylance_agrees(uri)
    src = pa.table({"id": pa.array([3, 4], pa.int64()), "x": [-5.0, 1000.0], "s": ["low", "high"]})
    res = ds.merge_insert("id").when_matched_update_all("source.x > target.x").execute(src)
    assert res["num_updated_rows"] == 1
    got = ds.to_table(filter="id IN (3, 4)").sort_by("id").column("s").to_pylist()
    assert got == ["a", "high"]
    src = pa.table({"id": pa.array([0, 1], pa.int64()), "x": [0.5, 1.5], "s": ["k", "l"]})
    res = ds.merge_insert("id").when_matched_update_all().when_not_matched_by_source_delete().execute(src)
    assert res["num_deleted_rows"] == 30 and ds.count_rows() == 2
    assert sorted(ds.to_table().column("s").to_pylist()) == ["k", "l"]


@pytest.mark.interop
def test_merge_insert_delete_not_matched_by_source_with_condition(tmp_path):
    import lance

    data = pa.table({"id": pa.array(range(10), pa.int64()), "v": [f"v{i}" for i in range(10)]})
    src = pa.table({"id": pa.array([1, 2, 20], pa.int64()), "v": ["one", "two", "twenty"]})
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")

    def merge(dataset):  # the same call on either implementation
        builder = dataset.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        return builder.when_not_matched_by_source_delete("id > 5 OR v = 'v0'").execute(src)

    ds = lancepy.write_dataset(data, ours)
    res = merge(ds)
    ref_res = merge(lance.write_dataset(data, theirs))
    assert res == {k: ref_res[k] for k in res}
    assert res == {"num_updated_rows": 2, "num_inserted_rows": 1, "num_deleted_rows": 5}
    got = ds.to_table().sort_by("id")
    assert got.equals(lance.dataset(theirs).to_table().sort_by("id"))
    assert got.column("id").to_pylist() == [1, 2, 3, 4, 5, 20]
    # pylance reads our version the same way.
    assert lance.dataset(ours).to_table().sort_by("id").equals(got)


@pytest.mark.interop
def test_versions_metadata_matches_pylance(tmp_path):
    import lance

    uri = str(tmp_path / "v")
    lance.write_dataset(pa.table({"a": list(range(100))}), uri)
    lancepy.write_dataset(pa.table({"a": list(range(100, 150))}), uri, mode="append")
    lancepy.dataset(uri).delete("a < 3")
    lance.dataset(uri).delete("a >= 110 AND a < 150")
    lancepy.dataset(uri).add_columns({"b": "a * 2"})
    ours, theirs = lancepy.dataset(uri).versions(), lance.dataset(uri).versions()
    assert [v["version"] for v in ours] == [v["version"] for v in theirs] == [1, 2, 3, 4, 5]
    assert [v["metadata"] for v in ours] == [v["metadata"] for v in theirs]
    assert ours[-1]["metadata"]["total_rows"] == "107"
    for a, b in zip(ours, theirs):  # pylance rounds through a float
        assert abs((a["timestamp"] - b["timestamp"]).total_seconds()) < 2e-6


def test_add_columns_by_function_on_many_fragments_and_a_failing_one(tmp_path, monkeypatch):
    """The function runs over fragments on several threads: the values land on the right
    fragments, and a function that fails on one fragment leaves no new file and no version."""
    from lancepy._ops import evolution

    monkeypatch.setattr(evolution, "_udf_threads", lambda fragments: min(fragments, 4))
    uri = str(tmp_path / "many.lance")
    lancepy.write_dataset(pa.table({"id": pa.array(range(200), pa.int64())}), uri, max_rows_per_file=10)
    lancepy.dataset(uri).delete("id % 7 = 0")

    def double(batch):
        return pa.RecordBatch.from_arrays([pa.compute.multiply(batch.column("id"), 2)], names=["twice"])

    before = set(os.listdir(os.path.join(uri, "data")))
    version = lancepy.dataset(uri).version

    def fails(batch):
        if batch.num_rows and batch.column("id")[0].as_py() >= 150:
            raise ValueError("boom")
        return double(batch)

    with pytest.raises(ValueError, match="boom"):
        lancepy.dataset(uri).add_columns(fails)
    assert set(os.listdir(os.path.join(uri, "data"))) == before
    assert lancepy.dataset(uri).version == version
    lancepy.dataset(uri).add_columns(double)
    t = lancepy.dataset(uri).to_table()
    assert t.column("twice").to_pylist() == [2 * i for i in t.column("id").to_pylist()]
    assert t.num_rows == 200 - len(range(0, 200, 7))
