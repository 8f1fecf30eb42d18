"""The everyday pylance API on lancepy, checked against pylance on the same dataset.

Each test writes with one library and reads with the other (or runs both on one dataset)
and compares values: pandas conversion, sampling, time travel by timestamp, moving to the
latest version, table config, table/schema/field metadata, version cleanup, and commits
of ``LanceOperation`` Merge / Project / UpdateConfig / Update / Rewrite / DataReplacement.
"""

from __future__ import annotations

import datetime
import time

import pyarrow as pa
import pytest

import lancepy
from lancepy import LanceOperation
from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError, NotSupportedError, VersionNotFoundError

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
pytestmark = pytest.mark.interop


def _table(n: int = 100, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids], "score": [i / 4 for i in ids]})


@pytest.fixture
def uri(tmp_path):
    u = str(tmp_path / "d.lance")
    lancepy.write_dataset(_table(100), u, max_rows_per_file=40)
    ds = lancepy.dataset(u)
    ds.delete("id % 7 = 3")
    return u


def test_to_pandas_matches_pylance(uri) -> None:
    pd = pytest.importorskip("pandas")
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    pd.testing.assert_frame_equal(ours.to_pandas(), theirs.to_pandas())
    pd.testing.assert_frame_equal(
        ours.to_pandas(columns=["name"], filter="id > 50", limit=5),
        theirs.to_pandas(columns=["name"], filter="id > 50", limit=5),
    )
    pd.testing.assert_frame_equal(ours.scanner(filter="score < 3").to_pandas(), theirs.scanner(filter="score < 3").to_pandas())
    for f_ours, f_theirs in zip(ours.get_fragments(), theirs.get_fragments()):
        pd.testing.assert_frame_equal(f_ours.to_pandas(), f_theirs.to_pandas())
        pd.testing.assert_frame_equal(f_ours.to_pandas(columns=["id"], limit=3), f_theirs.to_pandas(columns=["id"], limit=3))


def test_fragment_reads_match_pylance(uri) -> None:
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    for f_ours, f_theirs in zip(ours.get_fragments(), theirs.get_fragments()):
        assert f_ours.fragment_id == f_theirs.fragment_id
        assert f_ours.deletion_file() == f_theirs.deletion_file()
        assert f_ours.head(4).equals(f_theirs.head(4))
        assert f_ours.to_table(["id"], "id > 10", 5).equals(f_theirs.to_table(["id"], "id > 10", 5))
        assert f_ours.count_rows("id > 10") == f_theirs.count_rows("id > 10")
        assert lancepy.LanceFragment(ours, f_ours.fragment_id).to_table().equals(f_theirs.to_table())
    assert ours.head(7, columns=["id"]).equals(theirs.head(7, columns=["id"]))
    assert ours.scanner(filter="id > 5").head(3).equals(theirs.scanner(filter="id > 5").head(3))


def test_sample(uri) -> None:
    ds = lancepy.dataset(uri)
    all_ids = set(ds.to_table().column("id").to_pylist())
    s = ds.sample(20)
    assert s.num_rows == 20 and s.schema == ds.schema
    ids = s.column("id").to_pylist()
    assert len(set(ids)) == 20 and set(ids) <= all_ids
    ordered = ds.sample(30, columns=["id"], randomize_order=False).column("id").to_pylist()
    assert ordered == sorted(ordered) and len(set(ordered)) == 30
    assert ds.sample(0).num_rows == 0
    with pytest.raises(InvalidArgumentError):
        ds.sample(len(all_ids) + 1)
    # Uniform: over many draws every row turns up (300 draws of 10 of ~86 rows: a given row is
    # missed with probability (1 - 10/86)^300 < 1e-16; 60 draws failed ~5% of runs).
    seen = set()
    for _ in range(300):
        seen |= set(ds.sample(10, columns=["id"]).column("id").to_pylist())
    assert seen == all_ids


def test_checkout_latest_and_asof(tmp_path) -> None:
    u = str(tmp_path / "t.lance")
    lancepy.write_dataset(_table(10), u)
    stale = lancepy.dataset(u)
    times = []
    for i in range(3):
        time.sleep(0.05)
        times.append(datetime.datetime.now())
        time.sleep(0.05)
        lancepy.write_dataset(_table(10, 100 * (i + 1)), u, mode="append")
    assert stale.version == 1
    assert stale.checkout_latest() is None
    assert stale.version == 4 and stale.count_rows() == 40
    for t in times:
        ours = lancepy.dataset(u, asof=t)
        theirs = lance.dataset(u, asof=t)
        assert ours.version == theirs.version
        assert ours.to_table().equals(theirs.to_table())
    assert lancepy.dataset(u, asof=times[1].isoformat()).version == 2
    with pytest.raises(VersionNotFoundError):
        lancepy.dataset(u, asof=datetime.datetime(2000, 1, 1))
    with pytest.raises(InvalidArgumentError):
        lancepy.dataset(u, version=1, asof=times[0])


def test_config_both_ways(uri) -> None:
    ds = lancepy.dataset(uri)
    assert ds.update_config({"a": "1", "b": "2"}) == {"a": "1", "b": "2"}
    assert lance.dataset(uri).config() == {"a": "1", "b": "2"}
    ds.delete_config_keys(["a", "missing"])
    assert lance.dataset(uri).config() == {"b": "2"}
    theirs = lance.dataset(uri)
    theirs.update_config({"c": "3"})
    ds.checkout_latest()
    assert ds.config() == {"b": "2", "c": "3"}
    assert ds.update_config({"z": "9"}, replace=True) == {"z": "9"}
    assert lance.dataset(uri).config() == {"z": "9"}
    with pytest.raises(InvalidArgumentError):
        ds.update_config({"k": 1})
    # Still a readable dataset for both.
    assert lance.dataset(uri).to_table().equals(lancepy.dataset(uri).to_table())


def test_metadata_both_ways(uri) -> None:
    ds = lancepy.dataset(uri)
    assert ds.update_schema_metadata({"owner": "me"}) == {"owner": "me"}
    ds.update_field_metadata({"name": {"unit": "none"}, "id": {"pk": "yes"}})
    assert ds.update_metadata({"team": "x"}) == {"team": "x"}
    theirs = lance.dataset(uri)
    assert theirs.schema.metadata == {b"owner": b"me"}
    assert theirs.schema.field("name").metadata == {b"unit": b"none"}
    assert theirs.schema.field("id").metadata == {b"pk": b"yes"}
    assert theirs.metadata == {"team": "x"}
    assert theirs.schema == lancepy.dataset(uri).schema
    theirs.update_schema_metadata({"owner": None, "k": "v"})
    theirs.update_field_metadata({"id": {"pk": None, "q": "1"}})
    ds.checkout_latest()
    assert ds.schema_metadata == {"k": "v"}
    assert ds.schema.field("id").metadata == {b"q": b"1"}
    ds.replace_schema_metadata({"only": "this"})
    ds.replace_field_metadata("name", {"x": "y"})
    theirs = lance.dataset(uri)
    assert theirs.schema.metadata == {b"only": b"this"}
    assert theirs.schema.field("name").metadata == {b"x": b"y"}
    with pytest.raises(ColumnNotFoundError):
        ds.update_field_metadata({"nope": {"a": "b"}})


def test_nested_field_metadata(tmp_path) -> None:
    u = str(tmp_path / "n.lance")
    t = pa.table({"s": pa.array([{"x": 1, "y": "a"}], pa.struct([("x", pa.int32()), ("y", pa.string())]))})
    ds = lancepy.write_dataset(t, u)
    ds.update_field_metadata({"s.x": {"deep": "1"}})
    assert lance.dataset(u).schema.field("s").type.field("x").metadata == {b"deep": b"1"}


def test_cleanup_retain_versions_matches_pylance(tmp_path) -> None:
    def make(u: str) -> None:
        lancepy.write_dataset(_table(5), u)
        lancepy.dataset(u).delete("id = 1")
        lancepy.write_dataset(_table(5, 10), u, mode="overwrite")
        lancepy.write_dataset(_table(5, 20), u, mode="append")
        lancepy.dataset(u).delete("id = 21")

    a, b = str(tmp_path / "a.lance"), str(tmp_path / "b.lance")
    make(a)
    make(b)
    stats = lancepy.dataset(a).cleanup_old_versions(retain_versions=2)
    their_stats = lance.dataset(b).cleanup_old_versions(retain_versions=2)
    for name in ("old_versions", "data_files_removed", "transaction_files_removed", "deletion_files_removed"):
        assert getattr(stats, name) == getattr(their_stats, name), name
    assert stats.data_files_removed == 1 and stats.deletion_files_removed == 1
    ours = [v["version"] for v in lancepy.dataset(a).versions()]
    theirs = [v["version"] for v in lance.dataset(b).versions()]
    assert ours == theirs == [4, 5]
    assert stats.old_versions == 3
    assert lance.dataset(a).to_table().equals(lancepy.dataset(b).to_table())
    with pytest.raises(InvalidArgumentError):
        lancepy.dataset(a).cleanup_old_versions(retain_versions=0)
    with pytest.raises(NotSupportedError, match="delete_rate_limit"):
        lancepy.dataset(a).cleanup_old_versions(retain_versions=1, delete_rate_limit=5)


def test_merge_and_project_operations_read_by_pylance(tmp_path) -> None:
    u = str(tmp_path / "m.lance")
    ds = lancepy.write_dataset(_table(10), u)
    # New column in new data files, committed with Merge and a pyarrow schema.
    extra = pa.table({"double": [float(i * 2) for i in range(10)]})
    frags = lancepy.fragment.write_fragments(extra, str(tmp_path / "scratch.lance"))
    assert len(frags) == 1
    # Attach the new file to the existing fragment; fields get ids after the dataset's.
    import shutil

    src = tmp_path / "scratch.lance" / "data" / frags[0].files[0].path
    shutil.copy(src, tmp_path / "m.lance" / "data" / frags[0].files[0].path)
    old = ds.get_fragments()[0].metadata
    new_file = lancepy.fragment.DataFile(
        frags[0].files[0].path, [3], [0], frags[0].files[0].file_major_version, frags[0].files[0].file_minor_version,
        frags[0].files[0].file_size_bytes,
    )
    merged = lancepy.FragmentMetadata(old.id, old.files + [new_file], old.physical_rows)
    schema = ds.schema.append(pa.field("double", pa.float64()))
    ds2 = lancepy.LanceDataset.commit(u, LanceOperation.Merge([merged], schema), read_version=ds.version)
    assert [f["id"] for f in ds2.lance_schema._fields] == [0, 1, 2, 3]
    expected = _table(10).append_column("double", extra.column("double"))
    assert lance.dataset(u).to_table().equals(expected)
    assert ds2.to_table().equals(expected)
    # Project: drop "name" and reorder, keeping ids.
    ds3 = lancepy.LanceDataset.commit(
        u, LanceOperation.Project(pa.schema([schema.field("double"), schema.field("id")])), read_version=ds2.version
    )
    assert lance.dataset(u).to_table().equals(expected.select(["double", "id"]))
    assert ds3.to_table().equals(expected.select(["double", "id"]))


def test_update_config_operation_both_ways(uri) -> None:
    v = lancepy.dataset(uri).version
    op = LanceOperation.UpdateConfig(
        config_updates=LanceOperation.UpdateMap({"a": "1"}),
        schema_metadata_updates=LanceOperation.UpdateMap({"s": "2"}),
        field_metadata_updates={0: LanceOperation.UpdateMap({"f": "3"})},
        table_metadata_updates=LanceOperation.UpdateMap({"t": "4"}),
    )
    lancepy.LanceDataset.commit(uri, op, read_version=v)
    theirs = lance.dataset(uri)
    assert theirs.config() == {"a": "1"}
    assert theirs.schema.metadata == {b"s": b"2"}
    assert theirs.schema.field("id").metadata == {b"f": b"3"}
    assert theirs.metadata == {"t": "4"}
    pl_op = lance.LanceOperation.UpdateConfig(config_updates=lance.LanceOperation.UpdateMap({"a": None, "b": "5"}))
    lance.LanceDataset.commit(uri, pl_op, read_version=theirs.version)
    assert lancepy.dataset(uri).config() == {"b": "5"}


def test_update_and_rewrite_operations_read_by_pylance(tmp_path) -> None:
    u = str(tmp_path / "u.lance")
    ds = lancepy.write_dataset(_table(20), u, max_rows_per_file=10)
    new = lancepy.fragment.write_fragments(_table(3, 1000), u)
    ds = lancepy.LanceDataset.commit(
        u, LanceOperation.Update(removed_fragment_ids=[0], new_fragments=new), read_version=ds.version
    )
    expected = pa.concat_tables([_table(10, 10), _table(3, 1000)])
    assert lance.dataset(u).to_table().equals(expected)
    # Rewrite the two fragments into one.
    frags = ds.get_fragments()
    rewritten = lancepy.fragment.write_fragments(ds.to_table(), u)
    group = LanceOperation.RewriteGroup([f.metadata for f in frags], rewritten)
    ds = lancepy.LanceDataset.commit(u, LanceOperation.Rewrite([group], []), read_version=ds.version)
    assert len(ds.get_fragments()) == 1 and len(lance.dataset(u).get_fragments()) == 1
    assert lance.dataset(u).to_table().equals(expected)
    with pytest.raises(NotSupportedError, match="rewritten_indices"):
        lancepy.LanceDataset.commit(u, LanceOperation.Rewrite([group], ["idx"]), read_version=ds.version)


def test_data_replacement_read_by_pylance(tmp_path) -> None:
    u = str(tmp_path / "r.lance")
    ds = lancepy.write_dataset(pa.table({"id": [1, 2, 3]}), u)
    replacement = lancepy.fragment.write_fragments(pa.table({"id": [7, 8, 9]}), u)[0].files[0]
    ds = lancepy.LanceDataset.commit(
        u, LanceOperation.DataReplacement([LanceOperation.DataReplacementGroup(0, replacement)]), read_version=ds.version
    )
    assert lance.dataset(u).to_table().column("id").to_pylist() == [7, 8, 9]
    assert ds.to_table().column("id").to_pylist() == [7, 8, 9]


def test_default_storage_version_is_pylance_14s(tmp_path) -> None:
    ours = lancepy.write_dataset(_table(3), tmp_path / "a.lance")
    theirs = lance.write_dataset(_table(3), str(tmp_path / "b.lance"))
    assert ours.data_storage_version == theirs.data_storage_version == "2.2"
    assert lance.dataset(str(tmp_path / "a.lance")).data_storage_version == "2.2"


def test_merge_matches_pylance(tmp_path) -> None:
    t = pa.table({"x": [1, 2, 3, 4, 5], "y": ["a", "b", "c", "d", "e"]})
    right = pa.table({"k": [3, 1, 9, 2, 1], "z": [30.0, 10.0, 90.0, 20.0, 11.0], "w": ["3", "1", "9", "2", "1b"]})
    theirs = lance.write_dataset(t, str(tmp_path / "a.lance"), max_rows_per_file=2)
    ours = lancepy.write_dataset(t, tmp_path / "b.lance", max_rows_per_file=2)
    for ds in (theirs, ours):
        ds.delete("x = 4")
        ds.merge(right, "x", "k")
    assert ours.to_table().equals(theirs.to_table())
    assert lance.dataset(str(tmp_path / "b.lance")).to_table().equals(theirs.to_table())
    assert ours.to_table().column("z").to_pylist() == [11.0, 20.0, 30.0, None]
    with pytest.raises(ColumnNotFoundError):
        ours.merge(right, "nope", "k")
    with pytest.raises(InvalidArgumentError):
        ours.merge(pa.table({"x": [1], "y": ["dup"]}), "x")  # y exists


def test_stats_match_pylance(uri) -> None:
    assert lancepy.dataset(uri).stats.dataset_stats() == lance.dataset(uri).stats.dataset_stats()
    assert lancepy.dataset(uri).stats.dataset_stats(50) == lance.dataset(uri).stats.dataset_stats(50)


def test_stable_row_ids_at_create(tmp_path) -> None:
    u = str(tmp_path / "s.lance")
    ds = lancepy.write_dataset(_table(30), u, max_rows_per_file=10, enable_stable_row_ids=True)
    assert ds.has_stable_row_ids and lance.dataset(u).has_stable_row_ids
    ds.delete("id % 3 = 0")
    before = ds.to_table(columns=["id"], with_row_id=True)
    ds.optimize.compact_files()
    after = ds.to_table(columns=["id"], with_row_id=True)
    assert after.equals(before) and len(ds.get_fragments()) == 1
    assert lance.dataset(u).to_table(columns=["id"], with_row_id=True).equals(before)
    lancepy.write_dataset(_table(5, 100), u, mode="append")
    assert lance.dataset(u).to_table(columns=["id"], with_row_id=True).equals(lancepy.dataset(u).to_table(columns=["id"], with_row_id=True))
    assert not lancepy.write_dataset(_table(3), tmp_path / "plain.lance").has_stable_row_ids


def test_pylance_fragment_json_commits_with_lancepy(tmp_path) -> None:
    import json

    u = str(tmp_path / "f.lance")
    ds = lancepy.write_dataset(_table(5), u)
    theirs = lance.fragment.write_fragments(_table(3, 50), u)
    payload = [json.dumps(f.to_json()) for f in theirs]  # what a pylance worker would send
    frags = [lancepy.FragmentMetadata.from_json(p) for p in payload]
    ds = lancepy.LanceDataset.commit(u, LanceOperation.Append(frags), read_version=ds.version)
    expected = pa.concat_tables([_table(5), _table(3, 50)])
    assert ds.to_table().equals(expected) and lance.dataset(u).to_table().equals(expected)
    # And lancepy's deletion files come back from pylance's spelling of the type.
    ds.delete("id = 1")
    spelled = lance.dataset(u).get_fragments()[0].metadata.to_json()
    ours = lancepy.FragmentMetadata.from_json(json.dumps(spelled))
    assert ours.deletion_file == ds.get_fragments()[0].metadata.deletion_file


def test_restore_returns_none_like_pylance(tmp_path) -> None:
    u = str(tmp_path / "r.lance")
    lancepy.write_dataset(_table(5), u)
    lancepy.write_dataset(_table(5, 10), u, mode="append")
    old = lancepy.dataset(u, version=1)
    assert old.restore() is None and old.version == 3 and old.count_rows() == 5
    assert lance.dataset(u).count_rows() == 5


class _Progress:
    """pylance's FragmentWriteProgress shape."""

    def __init__(self) -> None:
        self.events = []

    def begin(self, fragment) -> None:
        self.events.append(("begin", fragment.physical_rows, len(fragment.files)))

    def complete(self, fragment) -> None:
        self.events.append(("complete", fragment.physical_rows, len(fragment.files)))


def test_write_progress(tmp_path) -> None:
    p = _Progress()
    batches = [_table(7, 7 * i).to_batches()[0] for i in range(4)]  # 28 rows in batches of 7
    ds = lancepy.write_dataset(pa.RecordBatchReader.from_batches(batches[0].schema, batches), tmp_path / "p.lance",
                               max_rows_per_file=10, progress=p)
    assert p.events == [("begin", 0, 0), ("complete", 10, 1)] * 2 + [("begin", 0, 0), ("complete", 8, 1)]
    assert [f.metadata.physical_rows for f in ds.get_fragments()] == [10, 10, 8]
    assert ds.to_table().equals(pa.Table.from_batches(batches))
    # pylance sees the same begin/complete pairs (it may miss the last complete).
    from lance.progress import FragmentWriteProgress

    class Theirs(_Progress, FragmentWriteProgress):
        pass

    theirs = Theirs()
    lance.write_dataset(_table(28), str(tmp_path / "q.lance"), max_rows_per_file=10, progress=theirs)
    assert theirs.events[: len(p.events) - 1] == [(e, n if e == "complete" else None, k) for e, n, k in p.events][:-1]
    p2 = _Progress()
    frags = lancepy.fragment.write_fragments(_table(25), tmp_path / "p.lance", max_rows_per_file=10, progress=p2)
    assert [e for e in p2.events if e[0] == "complete"] == [("complete", 10, 1), ("complete", 10, 1), ("complete", 5, 1)]
    assert sum(f.physical_rows for f in frags) == 25
    with pytest.raises(InvalidArgumentError, match="begin"):
        lancepy.write_dataset(_table(3), tmp_path / "r.lance", progress=object())


def test_merge_insert_when_matched_delete_and_fail(tmp_path) -> None:
    base = pa.table({"k": [1, 2, 3], "v": [1, 1, 1]})
    theirs = lance.write_dataset(base, str(tmp_path / "a.lance"))
    ours = lancepy.write_dataset(base, tmp_path / "b.lance")
    for src, insert in ((pa.table({"k": [3, 4], "v": [2, 2]}), False), (pa.table({"k": [2, 5], "v": [2, 2]}), True)):
        results = []
        for ds in (theirs, ours):
            b = ds.merge_insert("k").when_matched_delete()
            if insert:
                b = b.when_not_matched_insert_all()
            results.append(b.execute(src))
        assert results[0] == results[1]
        assert ours.to_table().sort_by("k").equals(theirs.to_table().sort_by("k"))
    with pytest.raises(InvalidArgumentError, match="k = 1"):
        ours.merge_insert("k").when_matched_fail().when_not_matched_insert_all().execute(pa.table({"k": [1, 6], "v": [2, 2]}))
    assert ours.to_table().column("k").to_pylist() == [1, 5]
    got = ours.merge_insert("k").when_matched_fail().when_not_matched_insert_all().execute(pa.table({"k": [7], "v": [2]}))
    assert got == {"num_updated_rows": 0, "num_inserted_rows": 1, "num_deleted_rows": 0}


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_file_metadata_and_statistics_match_pylance(tmp_path, version) -> None:
    import numpy as np

    t = pa.table({"a": np.arange(20000), "s": [str(i) for i in range(20000)], "f": pa.array(np.random.default_rng(1).random(20000))})
    path = str(tmp_path / "f.lance")
    w = lance.file.LanceFileWriter(path, version=version)
    w.write_batch(t)
    w.close()
    ours, theirs = lancepy.LanceFileReader(path), lance.file.LanceFileReader(path)
    m, pm = ours.metadata(), theirs.metadata()
    for name in ("num_rows", "major_version", "minor_version", "num_column_metadata_bytes", "num_global_buffer_bytes", "num_data_bytes"):
        assert getattr(m, name) == getattr(pm, name), name
    assert [[(b.position, b.size) for b in c.column_buffers] for c in m.columns] == [
        [(b.position, b.size) for b in c.column_buffers] for c in pm.columns
    ]
    assert m.schema == pm.schema
    assert [(b.position, b.size) for b in m.global_buffers] == [(b.position, b.size) for b in pm.global_buffers]
    assert [[[(b.position, b.size) for b in p.buffers] for p in c.pages] for c in m.columns] == [
        [[(b.position, b.size) for b in p.buffers] for p in c.pages] for c in pm.columns
    ]
    assert [(c.num_pages, c.size_bytes) for c in ours.file_statistics().columns] == [
        (c.num_pages, c.size_bytes) for c in theirs.file_statistics().columns
    ]
    assert ours.num_rows() == theirs.num_rows() == 20000
    assert ours.read_all().to_batches().read_all().equals(theirs.read_all().to_batches().read_all())


def test_data_stats_match_pylance(tmp_path) -> None:
    import numpy as np

    t = pa.table({"a": np.arange(5000), "s": pa.array([{"x": i, "y": str(i)} for i in range(5000)]),
                  "l": [[i, i + 1] for i in range(5000)]})
    for writer in ("lancepy", "pylance"):
        u = str(tmp_path / f"{writer}.lance")
        if writer == "lancepy":
            lancepy.write_dataset(t, u, max_rows_per_file=2000).add_columns({"b": "a * 2"})
        else:
            lance.write_dataset(t, u, max_rows_per_file=2000).add_columns({"b": "a * 2"})
        ours = lancepy.dataset(u).stats.data_stats()
        theirs = lance.dataset(u).stats.data_stats()
        assert [(f.id, f.bytes_on_disk) for f in ours.fields] == [(f.id, f.bytes_on_disk) for f in theirs.fields]
        assert sum(f.bytes_on_disk for f in ours.fields) > 0


def test_lancepy_fragment_json_commits_with_pylance(tmp_path) -> None:
    import json

    u = str(tmp_path / "g.lance")
    ds = lancepy.write_dataset(_table(5), u)
    ds.delete("id = 2")
    ours = lancepy.fragment.write_fragments(_table(4, 70), u, max_rows_per_file=3)
    payload = [json.dumps(f.to_json()) for f in ours]
    theirs = [lance.fragment.FragmentMetadata.from_json(p) for p in payload]
    assert [f.physical_rows for f in theirs] == [3, 1]
    lance.LanceDataset.commit(u, lance.LanceOperation.Append(theirs), read_version=ds.version)
    expected = pa.concat_tables([_table(5).filter(pa.compute.field("id") != 2), _table(4, 70)])
    assert lance.dataset(u).to_table().equals(expected) and lancepy.dataset(u).to_table().equals(expected)
    # The same layout as pylance's, deletion files included.
    mine = lancepy.dataset(u).get_fragments()[0].metadata.to_json()
    pl = lance.dataset(u).get_fragments()[0].metadata.to_json()
    assert mine == pl


def test_lancepy_reads_what_pylance_commits(tmp_path) -> None:
    """Merge, Project, Update, Rewrite, DataReplacement and UpdateConfig committed by
    pylance (through its API and its LanceOperation classes) read the same in lancepy."""
    u = str(tmp_path / "p.lance")
    theirs = lance.write_dataset(_table(30), u, max_rows_per_file=10)

    def same() -> None:
        ours = lancepy.dataset(u)
        ref = lance.dataset(u)
        assert ours.version == ref.version
        assert ours.schema == ref.schema
        assert ours.to_table().equals(ref.to_table())

    theirs.add_columns({"twice": "id * 2"})  # Merge
    same()
    theirs.drop_columns(["score"])  # Project
    same()
    theirs.update({"name": "'x'"}, where="id < 5")  # Update
    same()
    theirs.optimize.compact_files(target_rows_per_fragment=1000)  # Rewrite
    same()
    theirs.update_field_metadata({"id": {"k": "v"}})  # UpdateConfig
    same()
    # DataReplacement: a new file for the "twice" column of the only fragment.
    frag = lance.dataset(u).get_fragments()[0]
    twice_id = [f for f in lance.dataset(u).lance_schema.fields() if f.name() == "twice"][0].id()
    path = f"{u}/data/replacement.lance"
    w = lance.file.LanceFileWriter(path, pa.schema([pa.field("twice", pa.int64())]))
    w.write_batch(pa.table({"twice": pa.array([-i for i in range(frag.count_rows())], pa.int64())}))
    w.close()
    new_file = lance.fragment.DataFile("replacement.lance", [twice_id], [0], 2, 2)
    op = lance.LanceOperation.DataReplacement([lance.LanceOperation.DataReplacementGroup(frag.fragment_id, new_file)])
    lance.LanceDataset.commit(u, op, read_version=lance.dataset(u).version)
    same()
    assert lancepy.dataset(u).to_table().column("twice").to_pylist() == [-i for i in range(30)]


def test_order_by_matches_pylance(tmp_path) -> None:
    from lancepy.dataset import ColumnOrdering

    t = pa.table({"a": [3, None, 1, 2, 5, 2, None], "b": ["x", "y", "z", "w", "v", "u", "t"]})
    u = str(tmp_path / "o.lance")
    lancepy.write_dataset(t, u, max_rows_per_file=3)
    ours, theirs = lancepy.dataset(u), lance.dataset(u)
    import importlib

    PL = importlib.import_module("lance.dataset").ColumnOrdering  # lance.dataset is also a function
    cases = [
        (["a", "b"], [ColumnOrdering("a"), ColumnOrdering("b")]),
        ([PL("a", ascending=False), PL("b")], [ColumnOrdering("a", False), ColumnOrdering("b")]),
        ([PL("a", nulls_first=True), PL("b", nulls_first=True)], [ColumnOrdering("a", True, True), ColumnOrdering("b", True, True)]),
    ]
    for pl_order, our_order in cases:
        expected = theirs.to_table(order_by=pl_order)
        assert ours.to_table(order_by=our_order).equals(expected)
        assert ours.to_table(order_by=pl_order).equals(expected)  # pylance's objects work too
        assert ours.to_table(order_by=our_order, limit=3, offset=2).equals(expected.slice(2, 3))
        assert ours.to_table(order_by=our_order, columns=["b"]).equals(expected.select(["b"]))
        assert pa.Table.from_batches(list(ours.to_batches(order_by=our_order, batch_size=2))).equals(expected)
    filtered = theirs.to_table(order_by=["b"], filter="a > 1")
    assert ours.to_table(order_by=["b"], filter="a > 1").equals(filtered)
    assert ours.head(2, order_by=["b"]).equals(theirs.to_table(order_by=["b"]).slice(0, 2))
    with pytest.raises(ColumnNotFoundError):
        ours.to_table(order_by=["nope"])
    mixed = [ColumnOrdering("a", nulls_first=True), ColumnOrdering("b", False)]
    if int(pa.__version__.split(".")[0]) >= 25:
        assert ours.to_table(order_by=mixed).column("b").to_pylist() == ["y", "t", "z", "w", "u", "x", "v"]
    else:
        with pytest.raises(NotSupportedError):
            ours.to_table(order_by=mixed)


def test_get_version_truncate_and_ordered_tags(tmp_path) -> None:
    a, b = str(tmp_path / "a.lance"), str(tmp_path / "b.lance")
    ours = lancepy.write_dataset(_table(12), a, max_rows_per_file=5)
    theirs = lance.write_dataset(_table(12), b, max_rows_per_file=5)
    for ds in (ours, theirs):
        ds.update_config({"k": "v"})
        ds.truncate_table()
    for ds in (ours, lance.dataset(a)):
        assert ds.version == 3 and ds.count_rows() == 0 and ds.schema == theirs.schema
        assert ds.config() == {"k": "v"} and ds.get_fragments() == []
    assert lancepy.dataset(a, version=2).count_rows() == 12
    g_ours, g_theirs = ours.get_version(), theirs.get_version()
    assert g_ours["version"] == g_theirs["version"] and g_ours["metadata"] == g_theirs["metadata"]
    assert lancepy.dataset(a, version=1).get_version()["metadata"]["total_rows"] == "12"
    for ds in (ours, theirs):
        ds.tags.create("b", 1)
        ds.tags.create("a", 2)
        ds.tags.create("c", 3)
    for order in (None, "asc", "desc"):
        assert [n for n, _ in ours.tags.list_ordered(order)] == [n for n, _ in theirs.tags.list_ordered(order)]
    with pytest.raises(InvalidArgumentError):
        ours.tags.list_ordered("sideways")


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_merge_insert_without_on_uses_the_schema_primary_key(tmp_path, writer) -> None:
    key = pa.field("a", pa.int64(), nullable=False, metadata={"lance-schema:unenforced-primary-key": "true"})
    schema = pa.schema([key, pa.field("b", pa.string())])
    t = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]}, schema=schema)
    ours_path, theirs_path = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    (lancepy if writer == "lancepy" else lance).write_dataset(t, ours_path)
    (lancepy if writer == "lancepy" else lance).write_dataset(t, theirs_path)
    new = pa.table({"a": [2, 9], "b": ["Y", "Q"]}, schema=schema)
    got = lancepy.dataset(ours_path).merge_insert().when_matched_update_all().when_not_matched_insert_all().execute(new)
    want = lance.dataset(theirs_path).merge_insert().when_matched_update_all().when_not_matched_insert_all().execute(new)
    assert got == want == {"num_inserted_rows": 1, "num_updated_rows": 1, "num_deleted_rows": 0}
    for path in (ours_path, theirs_path):
        assert lance.dataset(path).to_table().sort_by("a").to_pydict() == {"a": [1, 2, 3, 9], "b": ["x", "Y", "z", "Q"]}
        assert lancepy.dataset(path).schema.field("a").metadata == key.metadata  # the mark survives
    plain = lancepy.write_dataset(pa.table({"a": [1]}), str(tmp_path / "plain.lance"))
    with pytest.raises(ValueError, match="primary"):
        plain.merge_insert()


def test_primary_key_rules_match_pylance(tmp_path) -> None:
    # Position alone marks a key field; positions order a composite key; the flag takes
    # true/1/yes in any case; key fields must be non-nullable leaves outside lists.
    def f(name, typ, nullable=False, **meta):
        return pa.field(name, typ, nullable, metadata={f"lance-schema:unenforced-primary-key{k}": v for k, v in meta.items()} or None)

    schema = pa.schema([f("a", pa.int64(), **{"": "YES", ":position": "2"}), f("b", pa.string(), **{":position": "1"}), f("c", pa.int64(), True)])
    rows = pa.table({"a": [1, 1, 2], "b": ["x", "y", "x"], "c": [0, 0, 0]}, schema=schema)
    new = pa.table({"a": [1, 3], "b": ["x", "x"], "c": [5, 6]}, schema=schema)
    results = []
    for reader in (lancepy, lance):
        for name in ("ours", "theirs"):
            path = str(tmp_path / f"{name}-{reader.__name__}")
            (lancepy if name == "ours" else lance).write_dataset(rows, path)
            ds = reader.dataset(path)
            results.append(ds.merge_insert().when_matched_update_all().when_not_matched_insert_all().execute(new))
            assert sorted(reader.dataset(path).to_table().to_pylist(), key=lambda r: (r["a"], r["b"])) == [
                {"a": 1, "b": "x", "c": 5}, {"a": 1, "b": "y", "c": 0}, {"a": 2, "b": "x", "c": 0}, {"a": 3, "b": "x", "c": 6}]
    assert results == [{"num_inserted_rows": 1, "num_updated_rows": 1, "num_deleted_rows": 0}] * 4
    for bad in (pa.schema([f("a", pa.int64(), True, **{"": "true"})]), pa.schema([f("a", pa.list_(pa.int64()), **{"": "1"})])):
        data = pa.table({"a": [1] if pa.types.is_integer(bad.field("a").type) else [[1]]}, schema=bad)
        with pytest.raises(ValueError, match="primary key"):
            lancepy.write_dataset(data, str(tmp_path / "bad.lance"))
        with pytest.raises(Exception):
            lance.write_dataset(data, str(tmp_path / "bad-pylance.lance"))
    with pytest.raises(ValueError, match="positive integer"):
        lancepy.write_dataset(pa.table({"a": [1]}, schema=pa.schema([f("a", pa.int64(), **{":position": "first"})])), str(tmp_path / "p.lance"))


@pytest.mark.parametrize("start,end", [(0, 0), (3, 17), (35, 45), (80, 200), (200, 300)])
def test_slice_matches_pylance(uri, start, end) -> None:
    """Positions count live rows only (the fixture deleted some), across fragment edges."""
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    assert ours.slice(start, end).equals(theirs.slice(start, end))
    assert ours.slice(start, end, columns=["name"]).equals(theirs.slice(start, end, columns=["name"]))
    assert ours.slice(start, end, columns={"twice": "id * 2"}).equals(theirs.slice(start, end, columns={"twice": "id * 2"}))


@pytest.mark.parametrize("start,end", [(-1, 3), (5, 3)])
def test_slice_refuses_bad_bounds_as_pylance_does(uri, start, end) -> None:
    with pytest.raises(ValueError):
        lance.dataset(uri).slice(start, end)
    with pytest.raises(InvalidArgumentError):  # a ValueError too
        lancepy.dataset(uri).slice(start, end)


@pytest.mark.parametrize("start,end", [(1.5, 3), (True, 3), (0, "3")])
def test_slice_refuses_bounds_that_are_not_ints(uri, start, end) -> None:
    with pytest.raises(InvalidArgumentError, match="must be an int"):
        lancepy.dataset(uri).slice(start, end)


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_drop_deletes_a_dataset_root_and_everything_under_it(tmp_path, writer) -> None:
    u = str(tmp_path / "d.lance")
    (lancepy if writer == "lancepy" else lance).write_dataset(_table(50), u, max_rows_per_file=20)
    (tmp_path / "d.lance" / "notes.txt").write_text("kept next to the dataset")
    lancepy.LanceDataset.drop(u)
    assert not (tmp_path / "d.lance").exists()
    with pytest.raises(ValueError):  # pylance: gone for it too
        lance.dataset(u)


def test_drop_refuses_what_is_not_a_dataset_root(tmp_path) -> None:
    from lancepy.exceptions import DatasetNotFoundError

    missing = str(tmp_path / "missing")
    with pytest.raises(DatasetNotFoundError):
        lancepy.LanceDataset.drop(missing)
    with pytest.raises(OSError):  # pylance's error kind for the same call
        lance.LanceDataset.drop(missing)
    assert lancepy.LanceDataset.drop(missing, ignore_not_found=True) is None
    # A parent directory, or a directory of data files only: refused, nothing deleted.
    parent = tmp_path / "parent"
    lancepy.write_dataset(_table(10), str(parent / "inner.lance"))
    (tmp_path / "only_data" / "data").mkdir(parents=True)
    (tmp_path / "only_data" / "data" / "x.lance").write_bytes(b"x")
    for p in (parent, tmp_path / "only_data"):
        with pytest.raises(InvalidArgumentError, match="not a dataset root"):
            lancepy.LanceDataset.drop(str(p))
        with pytest.raises(ValueError):
            lance.LanceDataset.drop(str(p))
    assert lancepy.dataset(str(parent / "inner.lance")).count_rows() == 10
    assert (tmp_path / "only_data" / "data" / "x.lance").exists()
    # Unreadable manifests only: refused as well.
    bad = tmp_path / "bad.lance"
    lancepy.write_dataset(_table(10), str(bad))
    for m in (bad / "_versions").iterdir():
        m.write_bytes(b"not a manifest")
    with pytest.raises(InvalidArgumentError, match="not a dataset root"):
        lancepy.LanceDataset.drop(str(bad))
    assert (bad / "data").exists()


def test_join_is_pyarrows_and_replace_schema_is_refused_as_in_pylance(uri) -> None:
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    with pytest.raises(NotImplementedError):
        theirs.join(theirs, "id")
    # pylance refuses join; lancepy does pyarrow's (tests/test_arrow_dataset.py compares more)
    t = ours.to_table()
    got = ours.join(ours, "id", join_type="inner", right_suffix="_r").to_table().sort_by("id")
    assert got.equals(t.join(t, "id", join_type="inner", right_suffix="_r").sort_by("id"))
    with pytest.raises(NotImplementedError):
        theirs.replace_schema(theirs.schema)
    with pytest.raises(NotSupportedError):
        ours.replace_schema(ours.schema)


@pytest.mark.parametrize("writer", ["lancepy", "pylance"])
def test_auto_cleanup_runs_every_interval_as_in_pylance(tmp_path, writer) -> None:
    """Automatic cleanup enabled by either library: commits of either keep the same versions."""
    import os

    kept = {}
    for lib_name, lib in (("lancepy", lancepy), ("pylance", lance)):
        u = str(tmp_path / f"{lib_name}.lance")
        ds = lib.write_dataset(_table(5), u)
        (lancepy if writer == "lancepy" else lance).dataset(u).optimize.enable_auto_cleanup(
            {"interval": 3, "older_than_seconds": 0}
        )
        seen = []
        for i in range(7):
            time.sleep(0.02)
            ds = lib.write_dataset(_table(5, start=i * 10), u, mode="overwrite")
            seen.append(sorted(v["version"] for v in ds.versions()))
        kept[lib_name] = seen
        assert len(os.listdir(os.path.join(u, "data"))) == len(seen[-1])  # old data files went too
    assert kept["lancepy"] == kept["pylance"], kept
    ds = lancepy.dataset(str(tmp_path / "lancepy.lance"))
    ds.optimize.disable_auto_cleanup()
    assert "lance.auto_cleanup.interval" not in lancepy.dataset(ds.uri).config()
    with pytest.raises(InvalidArgumentError):
        ds.optimize.enable_auto_cleanup({"interval": 0, "older_than_seconds": 1})


def test_a_stale_object_commits_after_cleanup_removed_versions_as_pylance(tmp_path) -> None:
    """A dataset object opened before versions were cleaned up commits on top of the latest:
    as pylance, the versions removed since it read are not checked for conflicts (there is
    nothing left to check), those that remain are."""
    out = {}
    for lib_name, lib in (("lancepy", lancepy), ("pylance", lance)):
        u = str(tmp_path / f"{lib_name}.lance")
        stale = lib.write_dataset(_table(5), u)
        for i in range(3):
            lib.write_dataset(_table(5, start=10 * (i + 1)), u, mode="append")
        time.sleep(0.05)
        lib.dataset(u).cleanup_old_versions(older_than=datetime.timedelta(0))
        assert [v["version"] for v in lib.dataset(u).versions()] == [4]
        stale.optimize.enable_auto_cleanup({"interval": 100, "older_than_seconds": 3600})
        latest = lib.dataset(u)
        out[lib_name] = (latest.version, latest.to_table().to_pylist(), latest.config().get("lance.auto_cleanup.interval"))
    assert out["lancepy"] == out["pylance"] and out["lancepy"][0] == 5
