"""pylance's fragment-level API on lancepy (``LanceFragment.create``, ``create_from_file``,
``merge``, ``update_columns``, ``open_session``, pickling; ``FragmentMetadata`` row-id metadata
and JSON; ``DeletionFile``), each compared with pylance on the same data: fragments written by
one library are committed or read by the other, and the values must be equal."""

from __future__ import annotations

import json
import pickle
import shutil

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import (
    ColumnNotFoundError,
    EmptyDataError,
    InvalidArgumentError,
    NotSupportedError,
    SchemaMismatchError,
)
from lancepy.fragment import DeletionFile, FragmentMetadata, LanceFragment, RowIdMeta

lance = pytest.importorskip("lance")
PyLanceFileWriter = pytest.importorskip("lance.file").LanceFileWriter
pylance_fragment = pytest.importorskip("lance.fragment")

TABLE = pa.table(
    {
        "id": pa.array(range(10), pa.int64()),
        "name": [f"n{i}" for i in range(10)],
        "s": pa.array([{"x": i, "y": str(i)} for i in range(10)]),
        "value": pa.array([i * 1.5 for i in range(10)], pa.float64()),
    }
)


def _theirs(frag_json):
    """pylance's FragmentMetadata from a fragment's JSON."""
    return lance.FragmentMetadata.from_json(json.dumps(frag_json))


def _without_paths(frag_json):
    """A fragment's JSON without what differs between two writers of the same data."""
    out = dict(frag_json)
    out["files"] = [{k: v for k, v in f.items() if k not in ("path", "file_size_bytes")} for f in out["files"]]
    return out


# -- LanceFragment.create ---------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "2.0", "2.1"])
def test_create_matches_pylance_and_commits_both_ways(tmp_path, version):
    ours = LanceFragment.create(tmp_path / "a", TABLE, data_storage_version=version)
    theirs = lance.LanceFragment.create(tmp_path / "b", TABLE, data_storage_version=version)
    assert _without_paths(ours.to_json()) == _without_paths(theirs.to_json())
    assert ours.row_id_meta is None and ours.deletion_file is None and ours.physical_rows == 10

    # lancepy's fragment committed by pylance, pylance's by lancepy
    ds = lance.LanceDataset.commit(
        tmp_path / "a", lance.LanceOperation.Overwrite(TABLE.schema, [_theirs(ours.to_json())])
    )
    assert ds.to_table() == TABLE
    theirs_meta = FragmentMetadata.from_json(json.dumps(theirs.to_json()))
    ds2 = lancepy.LanceDataset.commit(tmp_path / "b", lancepy.LanceOperation.Overwrite(TABLE.schema, [theirs_meta]))
    assert ds2.to_table() == TABLE
    assert lance.dataset(tmp_path / "b").to_table() == TABLE


def test_create_appends_with_the_datasets_field_ids(tmp_path):
    # a hole in the field ids (b dropped): both libraries give the new file the same ids
    for lib, uri in ((lancepy, tmp_path / "ours"), (lance, tmp_path / "theirs")):
        ds = lib.write_dataset(pa.table({"a": range(3)}), uri)
        ds.add_columns({"b": "a + 1"})
        ds.add_columns({"c": "a + 2"})
        ds.drop_columns(["b"])
    data = pa.table({"a": range(3, 6), "c": range(5, 8)})
    ours = LanceFragment.create(tmp_path / "ours", data)
    theirs = lance.LanceFragment.create(tmp_path / "theirs", data)
    assert [f.fields for f in ours.files] == [f.fields for f in theirs.files]
    base = lance.dataset(tmp_path / "ours")
    ds = lance.LanceDataset.commit(
        tmp_path / "ours", lance.LanceOperation.Append([_theirs(ours.to_json())]), read_version=base.version
    )
    assert ds.to_table() == pa.table({"a": range(6), "c": [2, 3, 4, 5, 6, 7]})
    assert lancepy.dataset(tmp_path / "ours").to_table() == ds.to_table()


def test_create_with_fragment_id_mode_and_progress(tmp_path):
    seen = []

    class Progress:
        def begin(self, fragment):
            seen.append(("begin", fragment.to_json()))

        def complete(self, fragment):
            seen.append(("complete", fragment.to_json()))

    lancepy.write_dataset(pa.table({"z": [1.0]}), tmp_path)
    frag = LanceFragment.create(tmp_path, TABLE, fragment_id=7, mode="overwrite", progress=Progress())
    assert frag.id == 7 and [f.fields for f in frag.files] == [[0, 1, 3, 4, 5]]
    (b, begun), (c, done) = seen
    assert (b, c) == ("begin", "complete")
    assert begun["id"] == 7 and begun["physical_rows"] is None and begun["files"][0]["fields"] == []
    assert begun["files"][0]["path"] == done["files"][0]["path"] == frag.files[0].path
    assert (tmp_path / "data" / frag.files[0].path).exists()
    # the begin record reads back (null physical_rows) in both libraries, but cannot commit
    ours, theirs = FragmentMetadata.from_json(json.dumps(begun)), lance.FragmentMetadata.from_json(json.dumps(begun))
    assert ours.physical_rows is None and theirs.physical_rows is None and ours.num_rows is None
    with pytest.raises(InvalidArgumentError, match="physical_rows is null"):
        lancepy.LanceDataset.commit(tmp_path, lancepy.LanceOperation.Overwrite(TABLE.schema, [ours]))
    ds = lance.LanceDataset.commit(tmp_path, lance.LanceOperation.Overwrite(TABLE.schema, [_theirs(done)]))
    assert ds.to_table() == TABLE


def test_create_filesystem_progress_files_match_pylance(tmp_path):
    from lancepy.progress import FileSystemFragmentWriteProgress

    frag = LanceFragment.create(tmp_path / "ds", TABLE, progress=FileSystemFragmentWriteProgress(str(tmp_path / "p")))
    assert not (tmp_path / "p" / "fragment_0.in_progress").exists()
    recorded = json.loads((tmp_path / "p" / "fragment_0.json").read_text())
    assert lance.FragmentMetadata.from_json(json.dumps(recorded)).files[0].path == frag.files[0].path


def test_create_refuses_what_pylance_refuses(tmp_path):
    import pandas as pd

    for data in (pd.DataFrame([]), pd.DataFrame([{}]), pa.table({"a": pa.array([], pa.int64())})):
        with pytest.raises(OSError):
            lance.LanceFragment.create(tmp_path / "theirs", data)
        with pytest.raises(EmptyDataError):
            LanceFragment.create(tmp_path / "ours", data)
    assert not (tmp_path / "ours" / "data").exists() or not list((tmp_path / "ours" / "data").iterdir())
    lancepy.write_dataset(pa.table({"a": [1]}), tmp_path / "e")
    with pytest.raises(SchemaMismatchError):
        LanceFragment.create(tmp_path / "e", pa.table({"b": [1]}))
    assert LanceFragment.create(tmp_path / "e", pa.table({"b": [1]}), mode="create").files[0].fields == [0]
    with pytest.raises(InvalidArgumentError, match="mode"):
        LanceFragment.create(tmp_path / "e", pa.table({"a": [1]}), mode="bogus")
    with pytest.raises(InvalidArgumentError, match="max_rows_per_group"):
        LanceFragment.create(tmp_path / "e", pa.table({"a": [1]}), max_rows_per_group="x")
    with pytest.raises(NotSupportedError, match="next"):
        LanceFragment.create(tmp_path / "e", pa.table({"a": [1]}), data_storage_version="next")
    with pytest.warns(DeprecationWarning):
        legacy = LanceFragment.create(tmp_path / "e", pa.table({"a": [1]}), use_legacy_format=True)
    assert (legacy.files[0].file_major_version, legacy.files[0].file_minor_version) == (0, 2)
    for name in ("namespace_client", "table_id", "session"):
        with pytest.raises(NotSupportedError, match=name):
            LanceFragment.create(tmp_path / "e", pa.table({"a": [1]}), **{name: object()})


def test_create_streams_a_failing_producer_and_leaves_no_file(tmp_path):
    def batches():
        yield pa.record_batch({"a": range(100)})
        raise RuntimeError("producer failed")

    reader = pa.RecordBatchReader.from_batches(pa.schema([("a", pa.int64())]), batches())
    with pytest.raises(RuntimeError, match="producer failed"):
        LanceFragment.create(tmp_path, reader)
    assert not list((tmp_path / "data").glob("*.lance"))


# -- LanceFragment.create_from_file -----------------------------------------------------------


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_create_from_file_matches_pylance(tmp_path, version):
    for lib, uri in ((lance, tmp_path / "theirs"), (lancepy, tmp_path / "ours")):
        lib.write_dataset(TABLE.slice(0, 2), uri, data_storage_version=version)
        with PyLanceFileWriter(str(uri / "data" / "extra.lance"), version=version) as w:
            w.write_batch(TABLE)
    ours = LanceFragment.create_from_file("extra.lance", lancepy.dataset(tmp_path / "ours"), 0)
    theirs = lance.LanceFragment.create_from_file("extra.lance", lance.dataset(tmp_path / "theirs"), 0)
    ours_json, theirs_json = ours.to_json(), theirs.to_json()
    # lancepy records the file's size (pylance leaves it unknown)
    assert ours_json["files"][0].pop("file_size_bytes") == (uri / "data" / "extra.lance").stat().st_size
    assert theirs_json["files"][0].pop("file_size_bytes") is None
    if version != "2.0":
        # pylance lists the struct's own field id too (6 fields for 5 columns); lancepy lists
        # the ids of the file's columns, as its writer and pylance's writer do
        assert theirs_json["files"][0]["fields"] == [0, 1, 2, 3, 4, 5]
        theirs_json["files"][0]["fields"] = [0, 1, 3, 4, 5]
    assert ours_json == theirs_json
    ds = lancepy.LanceDataset.commit(tmp_path / "ours", lancepy.LanceOperation.Append([ours]), read_version=1)
    expected = pa.concat_tables([TABLE.slice(0, 2), TABLE])
    assert ds.to_table() == expected
    assert lance.dataset(tmp_path / "ours").to_table() == expected


def test_create_from_file_refuses_other_schemas(tmp_path):
    ds = lancepy.write_dataset(TABLE, tmp_path)
    with lancepy.LanceFileWriter(str(tmp_path / "data" / "other.lance")) as w:
        w.write_batch(TABLE.select(["name", "id", "s", "value"]))
    with pytest.raises(SchemaMismatchError, match="order"):
        LanceFragment.create_from_file("other.lance", ds, 0)
    with pytest.raises(OSError):
        LanceFragment.create_from_file("missing.lance", ds, 0)
    with pytest.raises(InvalidArgumentError):
        LanceFragment.create_from_file("../escape.lance", ds, 0)


# -- merge and update_columns -----------------------------------------------------------------


def _twin_datasets(tmp_path, stable=False):
    """The same dataset written by each library (two fragments, one row deleted)."""
    out = []
    for lib, name in ((lancepy, "ours"), (lance, "theirs")):
        uri = tmp_path / name
        lib.write_dataset(TABLE, uri, max_rows_per_file=5, enable_stable_row_ids=stable)
        lib.dataset(uri).delete("id = 6")
        out.append(lib.dataset(uri))
    return out


@pytest.mark.parametrize("stable", [False, True])
@pytest.mark.parametrize("key", ["id", "_rowid", "_rowaddr"])
def test_fragment_merge_matches_pylance(tmp_path, key, stable):
    ours_ds, theirs_ds = _twin_datasets(tmp_path, stable)
    results = []
    for lib, ds in ((lancepy, ours_ds), (lance, theirs_ds)):
        merged, schema = [], None
        for frag in ds.get_fragments():
            keys = frag.to_table(columns=["id"], with_row_id=True, with_row_address=True).column(key)
            # a repeated key (the last row wins) and a key that matches nothing
            right = pa.table(
                {
                    key: pa.concat_arrays([keys.combine_chunks(), keys.combine_chunks()[:1]]),
                    "extra": [f"e{i}" for i in range(len(keys) + 1)],
                }
            )
            right = pa.concat_tables(
                [right, pa.table({key: pa.array([999], right.schema.field(key).type), "extra": ["never"]})]
            )
            meta, schema = frag.merge(right, key)
            merged.append(meta)
        op = lib.LanceOperation.Merge(merged, schema)
        results.append(lib.LanceDataset.commit(ds.uri, op, read_version=ds.version).to_table())
    assert results[0] == results[1]
    assert lance.dataset(ours_ds.uri).to_table() == results[1]


@pytest.mark.parametrize("batch_size", [None, 3])
def test_merge_columns_with_sql_matches_pylance(tmp_path, batch_size):
    ours_ds, theirs_ds = _twin_datasets(tmp_path)
    tables = []
    for lib, ds in ((lancepy, ours_ds), (lance, theirs_ds)):
        merged, schema = [], None
        for frag in ds.get_fragments():
            meta, schema = frag.merge_columns({"twice": "id * 2", "more": "value + 1.0"}, batch_size=batch_size)
            merged.append(meta)
        tables.append(
            lib.LanceDataset.commit(ds.uri, lib.LanceOperation.Merge(merged, schema), read_version=2).to_table()
        )
    assert tables[0] == tables[1] == lance.dataset(ours_ds.uri).to_table()
    assert tables[0].column("twice").to_pylist() == [2 * i for i in range(10) if i != 6]
    with pytest.raises(InvalidArgumentError):
        ours_ds.get_fragment(0).merge_columns({"bad": "id +"})


def test_null_keys_match_null_keys_as_in_pylance(tmp_path):
    data = pa.table({"id": pa.array([1, None, 3, 4]), "v": [1, 2, 3, 4]})
    out = []
    for lib, uri in ((lancepy, tmp_path / "ours"), (lance, tmp_path / "theirs")):
        lib.write_dataset(data, uri).delete("v = 4")
        ds = lib.dataset(uri)
        right = pa.table({"id": pa.array([None, 3], pa.int64()), "c": ["null key", "three"]})
        meta, schema = ds.get_fragment(0).merge(right, "id")
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Merge([meta], schema), read_version=ds.version)
        update = pa.table({"id": pa.array([None, 1], pa.int64()), "v": [99, 11]})
        meta, fields = ds.get_fragment(0).update_columns(update, left_on="id")
        op = lib.LanceOperation.Update(updated_fragments=[meta], fields_modified=fields)
        out.append(lib.LanceDataset.commit(uri, op, read_version=ds.version).to_table())
    assert out[0] == out[1]
    assert out[0].to_pydict() == {"id": [1, None, 3], "v": [11, 99, 3], "c": [None, "null key", "three"]}


def test_fragment_merge_errors(tmp_path):
    ds = lancepy.write_dataset(TABLE, tmp_path)
    frag = ds.get_fragment(0)
    with pytest.raises(ColumnNotFoundError):
        frag.merge(pa.table({"id": [1], "c": [1]}), "nope")
    with pytest.raises(ColumnNotFoundError):
        frag.merge(pa.table({"id": [1], "c": [1]}), "id", "nope")
    with pytest.raises(InvalidArgumentError, match="exist"):
        frag.merge(pa.table({"id": [1], "name": ["x"]}), "id")


@pytest.mark.parametrize("stable", [False, True])
def test_update_columns_matches_pylance(tmp_path, stable):
    ours_ds, theirs_ds = _twin_datasets(tmp_path, stable)
    outputs = []
    for lib, ds in ((lancepy, ours_ds), (lance, theirs_ds)):
        frag = ds.get_fragment(1)
        ids = frag.to_table(columns=[], with_row_id=True).column("_rowid").to_pylist()
        update = pa.table(
            {
                "_rowid": pa.array([ids[0], ids[2], 10**9], pa.uint64()),
                "name": ["first", None, "never"],
                "value": [-1.0, -2.0, -3.0],
            }
        )
        meta, fields, offsets = frag.update_columns(update, with_offsets=True)
        op = lib.LanceOperation.Update(updated_fragments=[meta], fields_modified=fields)
        ds = lib.LanceDataset.commit(ds.uri, op, read_version=ds.version)
        # then by a column, on the updated fragment (the last of repeated keys wins)
        by_id = ds.get_fragment(1).update_columns(pa.table({"id": [8, 8], "name": ["x", "y"]}), left_on="id")
        outputs.append((fields, offsets, by_id[1], [f["fields"] for f in by_id[0].to_json()["files"]]))
        op = lib.LanceOperation.Update(updated_fragments=[by_id[0]], fields_modified=by_id[1])
        outputs.append(lib.LanceDataset.commit(ds.uri, op, read_version=ds.version).to_table())
    (our_fields, our_offsets, our_id_fields, our_files), ours, (fields, offsets, id_fields, files), theirs = outputs
    assert (our_fields, our_offsets, our_id_fields, our_files) == (fields, offsets, id_fields, files)
    assert ours == theirs
    assert lance.dataset(ours_ds.uri).to_table() == theirs
    assert lancepy.dataset(theirs_ds.uri).to_table() == theirs
    assert theirs.column("name").to_pylist()[5:] == ["first", "n7", "y", "n9"]
    assert theirs.column("value").to_pylist()[5:] == [-1.0, 10.5, -2.0, 13.5]


def test_update_columns_of_a_struct_matches_pylance(tmp_path):
    tables, modified = [], []
    for lib, uri in ((lancepy, tmp_path / "ours"), (lance, tmp_path / "theirs")):
        ds = lib.write_dataset(TABLE, uri)
        update = pa.table({"id": [2], "s": pa.array([{"x": 20, "y": "twenty"}])})
        meta, fields = ds.get_fragment(0).update_columns(update, left_on="id")
        modified.append((fields, [f["fields"] for f in meta.to_json()["files"]]))
        op = lib.LanceOperation.Update(updated_fragments=[meta], fields_modified=fields)
        tables.append(lib.LanceDataset.commit(uri, op, read_version=1).to_table())
    assert modified[0] == modified[1]
    assert tables[0] == tables[1] == lance.dataset(tmp_path / "ours").to_table()
    assert tables[0].column("s")[2].as_py() == {"x": 20, "y": "twenty"}


def test_update_columns_errors_name_the_problem(tmp_path):
    ds = lancepy.write_dataset(TABLE, tmp_path)
    frag = ds.get_fragment(0)
    with pytest.raises(ColumnNotFoundError, match="does not exist"):
        frag.update_columns(pa.table({"_rowid": pa.array([0], pa.uint64()), "nope": [1]}))
    with pytest.raises(InvalidArgumentError, match="metadata column"):
        frag.update_columns(pa.table({"_rowid": pa.array([0], pa.uint64()), "_rowaddr": pa.array([1], pa.uint64())}))
    with pytest.raises(InvalidArgumentError, match="join column"):
        frag.update_columns(pa.table({"id": [1], "name": ["x"]}), left_on="name", right_on="id")
    with pytest.raises(SchemaMismatchError):
        frag.update_columns(pa.table({"_rowid": pa.array([0], pa.uint64()), "id": ["not a number"]}))


# -- sessions, pickling, metadata -------------------------------------------------------------


def test_open_session_takes_as_pylance(tmp_path):
    lancepy.write_dataset(TABLE.select(["id", "name"]), tmp_path)
    ours, theirs = lancepy.dataset(tmp_path).get_fragment(0), lance.dataset(tmp_path).get_fragment(0)
    for with_addr in (False, True):
        a = ours.open_session(columns=["id", "name"], with_row_address=with_addr).take([1, 3, 7])
        b = theirs.open_session(columns=["id", "name"], with_row_address=with_addr).take([1, 3, 7])
        assert a == b


def test_pickled_fragment_and_dataset_keep_their_version(tmp_path):
    ds = lancepy.write_dataset(TABLE, tmp_path)
    frag = ds.get_fragment(0)
    lancepy.write_dataset(TABLE, tmp_path, mode="overwrite")  # version 2
    again = pickle.loads(pickle.dumps(frag))
    assert again.fragment_id == 0 and again.to_table() == frag.to_table() == TABLE
    assert pickle.loads(pickle.dumps(ds)).version == 1


def test_fragment_metadata_json_and_pickle_match_pylance(tmp_path):
    ours_ds, theirs_ds = _twin_datasets(tmp_path, stable=True)
    shutil.rmtree(ours_ds.uri)
    shutil.copytree(theirs_ds.uri, ours_ds.uri)  # one dataset, read by both libraries
    for ours, theirs in zip(lancepy.dataset(ours_ds.uri).get_fragments(), lance.dataset(ours_ds.uri).get_fragments()):
        a, b = ours.metadata, theirs.metadata
        assert a.to_json() == b.to_json()
        assert a.row_id_meta.asdict() == b.row_id_meta.asdict() and a.row_id_meta.json() == b.row_id_meta.json()
        assert a.created_at_version_meta.json() == b.created_at_version_meta.json()
        assert isinstance(a.row_id_meta, RowIdMeta) and a.overlays == []
        assert pickle.loads(pickle.dumps(a)) == a
        assert FragmentMetadata.from_json(json.dumps(b.to_json())) == a
        assert lance.FragmentMetadata.from_json(json.dumps(a.to_json())) == b
    assert lancepy.dataset(ours_ds.uri).get_fragment(1).metadata.deletion_file.asdict() == (
        lance.dataset(ours_ds.uri).get_fragment(1).metadata.deletion_file.asdict()
    )


def test_row_id_meta_carries_ids_through_a_commit(tmp_path):
    ds = lancepy.write_dataset(TABLE.slice(0, 4), tmp_path, enable_stable_row_ids=True)
    old = ds.get_fragment(0).metadata
    new = LanceFragment.create(tmp_path, TABLE.slice(0, 4))
    moved = FragmentMetadata(new.id, new.files, new.physical_rows, row_id_meta=old.row_id_meta)
    group = lancepy.LanceOperation.RewriteGroup(old_fragments=[old], new_fragments=[moved])
    ds = lancepy.LanceDataset.commit(tmp_path, lancepy.LanceOperation.Rewrite([group], []), read_version=1)
    assert ds.to_table(with_row_id=True).column("_rowid").to_pylist() == [0, 1, 2, 3]
    assert lance.dataset(tmp_path).to_table(with_row_id=True).column("_rowid").to_pylist() == [0, 1, 2, 3]
    with pytest.raises(InvalidArgumentError):
        FragmentMetadata(0, [], 1, row_id_meta={"Inline": [1]})
    with pytest.raises(NotSupportedError):
        FragmentMetadata(0, [], 1, overlays=[object()])


def test_deletion_file_as_pylance():
    ours = DeletionFile(read_version=1, id=123, file_type="bitmap", num_deleted_rows=10, base_id=456)
    theirs = pylance_fragment.DeletionFile(read_version=1, id=123, file_type="bitmap", num_deleted_rows=10, base_id=456)
    assert ours.asdict() == theirs.asdict()
    assert json.loads(ours.json()) == json.loads(theirs.json())
    assert DeletionFile.from_json(theirs.json()) == ours
    assert ours.path(3) == theirs.path(3)
    meta = FragmentMetadata(id=1, files=[], physical_rows=1000, deletion_file=ours)
    assert pickle.loads(pickle.dumps(meta)) == meta
    assert (
        meta.to_json()["deletion_file"]
        == lance.FragmentMetadata(id=1, files=[], physical_rows=1000, deletion_file=theirs).to_json()["deletion_file"]
    )
    with pytest.raises(InvalidArgumentError):
        DeletionFile(1, 2, "foo", 3, None)


def test_data_file_path_is_also_pylances_deprecated_call(tmp_path):
    frag = LanceFragment.create(tmp_path, TABLE)
    path = frag.files[0].path
    with pytest.warns(DeprecationWarning):
        assert path() == path
    assert type(pickle.loads(pickle.dumps(path))) is str


# -- committing created fragments (pylance's LanceDataset.commit rules) -----------------------


def test_commit_needs_read_version_but_for_overwrite_and_restore(tmp_path):
    lancepy.write_dataset(TABLE, tmp_path)
    frag = LanceFragment.create(tmp_path, TABLE)
    with pytest.raises(ValueError, match="read_version is required"):
        lance.LanceDataset.commit(tmp_path, lance.LanceOperation.Append([_theirs(frag.to_json())]))
    with pytest.raises(InvalidArgumentError, match="read_version is required"):
        lancepy.LanceDataset.commit(tmp_path, lancepy.LanceOperation.Append([frag]))
    ds = lancepy.LanceDataset.commit(tmp_path, lancepy.LanceOperation.Append([frag]), read_version=1)
    assert ds.count_rows() == 20 == lance.dataset(tmp_path).count_rows()
    assert lancepy.LanceDataset.commit(tmp_path, lancepy.LanceOperation.Overwrite(TABLE.schema, [frag])).version == 3


def test_max_retries_counts_retries_as_pylance(tmp_path):
    for lib, uri in ((lancepy, tmp_path / "ours"), (lance, tmp_path / "theirs")):
        frag = LanceFragment.create(uri, TABLE)
        op = lib.LanceOperation.Overwrite(TABLE.schema, [frag if lib is lancepy else _theirs(frag.to_json())])
        v1 = lib.LanceDataset.commit(uri, op, max_retries=0)
        lib.LanceDataset.commit(uri, op, read_version=v1.version, max_retries=0)
        with pytest.raises(Exception, match=f"Commit conflict for version {v1.version + 1}"):
            lib.LanceDataset.commit(uri, op, read_version=v1.version, max_retries=0)
        # with a retry, the rebase finds a conflict: an Overwrite based on a replaced version
        with pytest.raises(Exception, match="(conflict|preempted)"):
            lib.LanceDataset.commit(uri, op, read_version=v1.version, max_retries=1)
        assert lib.dataset(uri).version == 2


def test_merge_columns_from_precomputed_batches_matches_pylance(tmp_path):
    """Precomputed new columns (an iterator of batches of `reader_schema`, or a reader),
    committed by Overwrite as pylance's own test does, read equal from both libraries."""
    schema = pa.schema([pa.field("c", pa.int64()), pa.field("d", pa.string())])
    new = pa.table({"c": range(100), "d": [str(i) for i in range(100)]}, schema=schema)
    results = {}
    for name, lib in (("ours", lancepy), ("theirs", lance)):
        uri = str(tmp_path / name)
        lib.write_dataset(pa.table({"a": range(100)}), uri)
        frag = lib.dataset(uri).get_fragments()[0]
        meta, merged = frag.merge_columns(iter(new.to_batches(max_chunksize=15)), reader_schema=schema, batch_size=15)
        lib.LanceDataset.commit(uri, lib.LanceOperation.Overwrite(merged.to_pyarrow(), [meta]))
        results[name] = uri
    want = lance.dataset(results["theirs"]).to_table()
    assert lancepy.dataset(results["ours"]).to_table().equals(want)
    assert lance.dataset(results["ours"]).to_table().equals(want)
    frag = lancepy.dataset(results["ours"]).get_fragments()[0]
    with pytest.raises(InvalidArgumentError, match="rows given"):
        frag.merge_columns(iter(new.slice(0, 50).to_batches()), reader_schema=schema)
    with pytest.raises(lancepy.exceptions.SchemaMismatchError):
        frag.merge_columns(iter(new.to_batches()), reader_schema=pa.schema([("c", pa.string())]))
    # A table of the values works the same way (pylance's test_merge_separate_dataset).
    meta, schema = frag.merge_columns(pa.table({"e": range(100)}))
    assert len(meta.data_files()) == len(frag.data_files()) + 1 and schema.to_pyarrow().names[-1] == "e"


def test_merge_columns_refuses_a_checkpointed_udf(tmp_path):
    uri = str(tmp_path / "d")
    lancepy.write_dataset(pa.table({"a": range(10)}), uri)

    @lancepy.batch_udf(checkpoint_file=str(tmp_path / "cache.sqlite"))
    def twice(batch):
        return pa.record_batch([pa.array([2 * x.as_py() for x in batch["a"]])], ["b"])

    with pytest.raises(ValueError, match="A checkpoint file cannot be used"):
        lancepy.dataset(uri).get_fragments()[0].merge_columns(twice, columns=["a"])
