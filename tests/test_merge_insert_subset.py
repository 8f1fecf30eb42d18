"""merge_insert with a source holding only some of the dataset's columns (pylance's
partial updates): matched rows keep their other columns, inserted rows get nulls there —
blob columns included."""

import shutil

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import SchemaMismatchError

BLOB = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})


def _dataset(path, version):
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string()), BLOB, pa.field("n", pa.int64())])
    t = pa.table({"id": [0, 1, 2], "s": ["a", "b", "c"], "b": pa.array([b"x", b"y" * 100_000, None], pa.large_binary()),
                  "n": [7, 8, 9]}, schema=schema)
    lance.write_dataset(t, path, data_storage_version=version)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize(
    "build",
    [
        lambda m: m.when_matched_update_all(),
        lambda m: m.when_matched_update_all().when_not_matched_insert_all(),
        lambda m: m.when_matched_update_all(condition="target.n > 7").when_not_matched_insert_all(),
        lambda m: m.when_matched_update_all().when_not_matched_by_source_delete(),
    ],
    ids=["update", "upsert", "conditional", "replace"],
)
def test_partial_source_as_pylance(tmp_path, version, build):
    source = pa.table({"id": [1, 2, 5], "n": [80, 90, 50]})
    results = {}
    for name, lib in (("ours", lancepy), ("theirs", lance)):
        path = str(tmp_path / name)
        _dataset(path, version)
        counts = build(lib.dataset(path).merge_insert("id")).execute(source)
        results[name] = (counts, lance.dataset(path).to_table(blob_handling="all_binary").sort_by("id"))
        assert lancepy.dataset(path).to_table(blob_handling="all_binary").sort_by("id") == results[name][1]
    assert results["ours"][0] == results["theirs"][0]
    assert results["ours"][1].to_pydict() == results["theirs"][1].to_pydict()


def test_partial_source_needs_the_keys(tmp_path):
    path = str(tmp_path / "ds")
    _dataset(path, "2.2")
    with pytest.raises(SchemaMismatchError):
        lancepy.dataset(path).merge_insert("id").when_matched_update_all().execute(pa.table({"n": [1]}))
    with pytest.raises(SchemaMismatchError):
        lancepy.dataset(path).merge_insert("id").when_matched_update_all().execute(pa.table({"id": [1], "zz": [1]}))
    assert lancepy.dataset(path).version == 1
    shutil.rmtree(path)
