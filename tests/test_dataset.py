"""lancepy datasets on their own: write, read, filters, versions, tags, errors."""

from __future__ import annotations

import datetime
import json
import os
import pickle

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancepy
from lancepy.exceptions import (
    ColumnNotFoundError,
    CorruptFileError,
    DatasetAlreadyExistsError,
    DatasetNotFoundError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    NotFoundError,
    SchemaMismatchError,
    UnsupportedError,
    VersionNotFoundError,
)


def table(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "name": [f"n{i}" for i in ids],
            "price": pa.array([None if i % 10 == 0 else i * 0.5 for i in ids], pa.float64()),
            "day": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=int(i)) for i in ids], pa.date32()),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(ids, 4).astype(np.float32)), 4),
            "tag": pa.array([["a", "b", "c"][i % 3] for i in ids]).dictionary_encode(),
        }
    )


def plain(t: pa.Table) -> pa.Table:
    """Dictionary columns decoded (dictionaries of different batches may differ), one chunk."""
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in t.columns]
    return pa.Table.from_arrays(cols, names=t.column_names).combine_chunks()


@pytest.fixture(params=["local", "file", "memory"])
def uri(request, tmp_path):
    if request.param == "memory":
        import uuid

        return f"memory://test-{uuid.uuid4().hex}/ds.lance"
    if request.param == "file":
        return f"file://{tmp_path}/ds.lance"
    return str(tmp_path / "ds.lance")


def test_create_append_read(uri):
    ds = lancepy.write_dataset(table(100), uri, max_rows_per_file=30)
    assert ds.version == 1 and ds.latest_version == 1
    assert len(ds.get_fragments()) == 4
    assert plain(ds.to_table()).equals(plain(table(100)))
    ds = lancepy.write_dataset(table(50, 100), uri, mode="append")
    assert ds.version == 2
    assert ds.count_rows() == 150
    assert plain(ds.to_table()).equals(plain(pa.concat_tables([table(100), table(50, 100)])))
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1, 2, 3, 4]
    assert lancepy.dataset(uri, version=1).count_rows() == 100
    assert ds.head(3).column("id").to_pylist() == [0, 1, 2]
    assert ds.to_table(offset=28, limit=5).column("id").to_pylist() == [28, 29, 30, 31, 32]
    batches = list(ds.to_batches(batch_size=16, columns=["id"]))
    assert all(b.num_rows <= 16 for b in batches)
    assert pa.Table.from_batches(batches).column("id").to_pylist() == list(range(150))


def test_take_follows_input_order(uri):
    ds = lancepy.write_dataset(table(100), uri, max_rows_per_file=10)
    got = ds.take([99, 0, 55, 55, 3], columns=["id", "name"])
    assert got.column("id").to_pylist() == [99, 0, 55, 55, 3]
    assert got.schema.names == ["id", "name"]
    got = ds.take(np.array([5, 6]), with_row_id=True)
    assert got.column("_rowid").to_pylist() == [5, 6]
    with pytest.raises(IndexOutOfRangeError):
        ds.take([100])
    with pytest.raises(ColumnNotFoundError):
        ds.take([1], columns=["nope"])


def test_filters(uri):
    ds = lancepy.write_dataset(table(100), uri, max_rows_per_file=40)
    t = table(100)

    def check(sql, expr):
        got = ds.to_table(filter=sql).column("id").to_pylist()
        want = t.filter(expr).column("id").to_pylist()
        assert got == want, sql
        assert ds.count_rows(filter=sql) == len(want)

    f = pc.field
    check("id < 10", f("id") < 10)
    check("id >= 10 AND id < 20 OR id = 99", ((f("id") >= 10) & (f("id") < 20)) | (f("id") == 99))
    check("NOT (id > 5)", ~(f("id") > 5))
    check("id IN (1, 5, 7)", f("id").isin([1, 5, 7]))
    check("id NOT IN (1, 5, 7) AND id < 10", ~f("id").isin([1, 5, 7]) & (f("id") < 10))
    check("price IS NULL", f("price").is_null())
    check("price IS NOT NULL AND id < 15", f("price").is_valid() & (f("id") < 15))
    check("name LIKE 'n1%'", pc.match_like(f("name"), "n1%"))
    check("id * 2 + 1 > 150", f("id") * 2 + 1 > 150)
    check("id % 10 = 3", pc.equal(pc.subtract(f("id"), pc.multiply(pc.divide(f("id"), 10), 10)), 3))
    check("day >= date '2020-03-01'", f("day") >= pa.scalar(datetime.date(2020, 3, 1)))
    check("day < '2020-01-05'", f("day") < pa.scalar(datetime.date(2020, 1, 5)))
    check("id BETWEEN 3 AND 6", (f("id") >= 3) & (f("id") <= 6))
    check("`name` = 'n42'", f("name") == "n42")
    check("tag = 'b'", pc.equal(f("tag").cast(pa.string()), "b"))
    # a pyarrow expression works as well
    assert ds.count_rows(filter=f("id") < 3) == 3
    # filter with projection, offset and limit
    got = ds.to_table(columns=["name"], filter="id > 50", offset=2, limit=3)
    assert got.column("name").to_pylist() == ["n53", "n54", "n55"]
    with pytest.raises(InvalidArgumentError):
        ds.to_table(filter="nope > 1")
    with pytest.raises(InvalidArgumentError):
        ds.to_table(filter="id >>> 1")


def test_delete_small_and_large(tmp_path):
    uri = str(tmp_path / "del.lance")
    ds = lancepy.write_dataset(table(12000), uri, max_rows_per_file=6000)
    ds.delete("id % 100 = 1")
    assert ds.version == 2
    assert ds.count_rows() == 12000 - 120
    kinds = {f.rsplit(".", 1)[1] for f in os.listdir(os.path.join(uri, "_deletions"))}
    assert kinds == {"arrow"}
    ds.delete("id < 5500")
    kinds = {f.rsplit(".", 1)[1] for f in os.listdir(os.path.join(uri, "_deletions"))}
    assert "bin" in kinds
    remaining = ds.to_table().column("id").to_pylist()
    assert remaining == [i for i in range(5500, 12000) if i % 100 != 1]
    assert ds.take([0]).column("id").to_pylist() == [5500]
    # deleting a whole fragment removes it
    ds.delete("id < 6000")
    assert [f.fragment_id for f in ds.get_fragments()] == [1]
    ds.delete("id > 100000")  # no match: a new version all the same, like pylance
    assert ds.version == 5
    assert lancepy.dataset(uri, version=1).count_rows() == 12000


def test_versions_checkout_restore_tags(uri):
    ds = lancepy.write_dataset(table(10), uri)
    lancepy.write_dataset(table(10, 10), uri, mode="append")
    ds = lancepy.write_dataset(table(5, 100), uri, mode="overwrite")
    assert ds.version == 3 and ds.count_rows() == 5
    assert [v["version"] for v in ds.versions()] == [1, 2, 3]
    assert isinstance(ds.versions()[0]["timestamp"], datetime.datetime)
    old = ds.checkout_version(2)
    assert old.count_rows() == 20
    ds.tags.create("two", 2)
    listed = ds.tags.list()
    assert list(listed) == ["two"] and listed["two"]["version"] == 2 and listed["two"]["branch"] is None
    assert listed["two"]["manifest_size"] > 0 and listed["two"]["created_at"].tzinfo is not None
    assert lancepy.dataset(uri, version="two").count_rows() == 20
    with pytest.raises(InvalidArgumentError):
        ds.tags.create("two", 1)
    ds.tags.update("two", 1)
    assert lancepy.dataset(uri, version="two").version == 1
    with pytest.raises(VersionNotFoundError):
        ds.tags.create("bad", 42)
    ds.tags.delete("two")
    with pytest.raises(VersionNotFoundError):
        lancepy.dataset(uri, version="two")
    restored = lancepy.dataset(uri, version=2)
    assert restored.restore() is None
    assert restored.version == 4 and restored.count_rows() == 20
    assert lancepy.dataset(uri).count_rows() == 20


def test_bad_input_leaves_nothing(tmp_path):
    uri = str(tmp_path / "bad.lance")
    ds = lancepy.write_dataset(table(10), uri)
    before = sorted(os.listdir(os.path.join(uri, "data")))
    with pytest.raises(SchemaMismatchError, match="unexpected columns"):
        lancepy.write_dataset(pa.table({"id": [1], "zzz": [1]}), uri, mode="append")
    with pytest.raises(OSError):  # (what pylance raises for an append of another schema)
        lancepy.write_dataset(pa.table({"zzz": [1]}), uri, mode="append")
    with pytest.raises(SchemaMismatchError, match="different types"):
        lancepy.write_dataset(table(3).set_column(0, "id", pa.array(["a", "b", "c"])), uri, mode="append")
    assert sorted(os.listdir(os.path.join(uri, "data"))) == before
    assert lancepy.dataset(uri).version == 1
    with pytest.raises(DatasetAlreadyExistsError):
        lancepy.write_dataset(table(3), uri)
    with pytest.raises(VersionNotFoundError, match="version 7"):
        lancepy.dataset(uri, version=7)
    with pytest.raises(DatasetNotFoundError):
        lancepy.dataset(str(tmp_path / "nothing"))
    # a non-nullable column with nulls is refused by the writer and nothing is left behind
    strict = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    lancepy.write_dataset(pa.table({"id": [1, 2]}, schema=strict), str(tmp_path / "strict"))
    with pytest.raises(SchemaMismatchError):
        lancepy.write_dataset(pa.table({"id": pa.array([None], pa.int64())}), str(tmp_path / "strict"), mode="append")
    assert len(os.listdir(tmp_path / "strict" / "data")) == 1
    assert ds.count_rows() == 10


def test_append_of_a_subset_of_columns_fills_nulls_as_pylance(tmp_path):
    """pylance appends data lacking some nullable columns (they read as nulls); a missing
    non-nullable column is refused and nothing is written."""
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("x", pa.float64()), pa.field("s", pa.string())])
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    first = pa.table({"id": [1, 2], "x": [0.5, None], "s": ["a", "b"]}, schema=schema)
    for uri, lib in ((ours, lancepy), (theirs, lance)):
        lib.write_dataset(first, uri)
        lib.dataset(uri).insert(pa.table({"id": [3, 4], "s": ["c", None]}))
        lib.dataset(uri).insert(pa.table({"x": [9.0], "id": [5]}))
    want = lance.dataset(theirs).to_table()
    assert lancepy.dataset(ours).to_table().equals(want)
    assert lance.dataset(ours).to_table().equals(want)
    with pytest.raises(SchemaMismatchError, match="missing columns"):
        lancepy.dataset(ours).insert(pa.table({"x": [1.0]}))
    assert lancepy.dataset(ours).count_rows() == 5


def test_corrupt_manifest_and_missing_data_file(tmp_path):
    uri = str(tmp_path / "c.lance")
    lancepy.write_dataset(table(10), uri)
    lancepy.write_dataset(table(10), uri, mode="append")
    vdir = os.path.join(uri, "_versions")
    latest = sorted(n for n in os.listdir(vdir) if n.endswith(".manifest"))[0]  # V2: newest first
    path = os.path.join(vdir, latest)
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-3])
    with pytest.raises(CorruptFileError):
        lancepy.dataset(uri)
    assert lancepy.dataset(uri, version=1).count_rows() == 10
    open(path, "wb").write(data)
    ds = lancepy.dataset(uri)
    victim = ds.get_fragments()[1].data_files()[0].path
    os.remove(os.path.join(uri, "data", victim))
    with pytest.raises(NotFoundError, match="data file"):
        lancepy.dataset(uri).to_table()


def test_hint_file_is_not_trusted(tmp_path):
    uri = str(tmp_path / "h.lance")
    lancepy.write_dataset(table(10), uri)
    lancepy.write_dataset(table(10), uri, mode="append")
    hint = os.path.join(uri, "_versions", "latest_version_hint.json")
    assert json.load(open(hint)) == {"version": 2}
    for junk in [b'{"version": 1}', b'{"version": 99}', b"garbage"]:
        open(hint, "wb").write(junk)
        assert lancepy.dataset(uri).version == 2


def test_unknown_feature_flags_are_refused(tmp_path):
    uri = str(tmp_path / "f.lance")
    lancepy.write_dataset(table(10), uri)
    store = lancepy._lancepy.Store(uri)
    from lancepy._table import commit

    loaded = commit.load_manifest(store)
    m = dict(loaded.manifest)
    m["reader_feature_flags"] = 64
    m["writer_feature_flags"] = 64
    data = lancepy._lancepy.write_manifest(json.dumps(m), loaded.transaction, None)
    store.put(loaded.path, data)
    with pytest.raises(UnsupportedError, match="UNSTABLE_DATA_OVERLAY_FILES"):
        lancepy.dataset(uri)
    m["reader_feature_flags"] = 0
    m["writer_feature_flags"] = 512
    store.put(loaded.path, lancepy._lancepy.write_manifest(json.dumps(m), loaded.transaction, None))
    assert lancepy.dataset(uri).count_rows() == 10
    with pytest.raises(UnsupportedError, match="512"):
        lancepy.write_dataset(table(1), uri, mode="append")


def test_write_fragments_and_commit(uri):
    lancepy.write_dataset(table(10), uri)
    frags = lancepy.fragment.write_fragments(table(20, 10), uri, max_rows_per_file=8)
    assert [f.physical_rows for f in frags] == [8, 8, 4]
    payload = [f.to_json() for f in frags]
    back = [lancepy.FragmentMetadata.from_json(json.dumps(p)) for p in payload]
    back = pickle.loads(pickle.dumps(back))
    assert back == frags
    assert lancepy.dataset(uri).version == 1  # nothing committed yet
    ds = lancepy.LanceDataset.commit(uri, lancepy.LanceOperation.Append(back), read_version=1)
    assert ds.version == 2 and ds.count_rows() == 30
    assert ds.to_table().column("id").to_pylist() == list(range(30))
    # a fresh dataset from fragments
    other = uri + "-new"
    frags = lancepy.fragment.write_fragments(table(5), other)
    ds = lancepy.LanceDataset.commit(other, lancepy.LanceOperation.Overwrite(table(5).schema, frags))
    assert plain(ds.to_table()).equals(plain(table(5)))


def test_unsupported_types_are_refused_clearly(tmp_path):
    t = pa.table({"iv": pa.array([(1, 2, 3)], pa.month_day_nano_interval())})
    with pytest.raises(UnsupportedError, match="interval|Interval"):
        lancepy.write_dataset(t, str(tmp_path / "n.lance"))
    assert not os.path.exists(tmp_path / "n.lance" / "_versions")


def test_nested_columns(uri):
    t = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "st": pa.array([{"a": 1, "b": "x"}, None, {"a": 3, "b": None}]),
            "ls": pa.array([[1, 2], [], None], pa.list_(pa.int32())),
        }
    )
    ds = lancepy.write_dataset(t, uri)
    ds = lancepy.write_dataset(t, uri, mode="append")
    assert ds.to_table().equals(pa.concat_tables([t, t]).combine_chunks())
    assert ds.take([4]).column("st").to_pylist() == [None]
    ds.delete("id = 1")
    assert ds.count_rows() == 4
