"""Datasets written by pylance read by lancepy, and the other way round, at every version."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import lancepy

lance = pytest.importorskip("lance")
pytestmark = pytest.mark.interop


def make_table(n: int, start: int = 0, dim: int = 8) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    rng = np.random.default_rng(start)
    return pa.table(
        {
            "id": pa.array(ids),
            "text": pa.array([f"row {i}" if i % 7 else None for i in ids]),
            "score": pa.array(rng.random(n)),
            "small": pa.array((ids % 100).astype(np.int32)),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * dim, dtype=np.float32)), dim),
        }
    )


def canon(t: pa.Table) -> pa.Table:
    """Comparable form: one chunk, no schema metadata."""
    return t.replace_schema_metadata(None).combine_chunks()


def assert_same_version(uri: str, version: int) -> None:
    theirs = lance.dataset(uri, version=version)
    ours = lancepy.dataset(uri, version=version)
    assert ours.version == version
    assert ours.schema.names == theirs.schema.names
    a, b = canon(ours.to_table()), canon(theirs.to_table())
    assert a.schema.equals(b.schema), (a.schema, b.schema)
    assert a.equals(b), f"version {version} differs"
    assert ours.count_rows() == theirs.count_rows()
    assert ours.count_rows("small < 10") == theirs.count_rows("small < 10")
    n = ours.count_rows()
    if n:
        idx = sorted(set(np.random.default_rng(version).integers(0, n, 40).tolist()))
        assert canon(ours.take(idx)).equals(canon(theirs.take(idx)))
        filtered = canon(ours.to_table(columns=["id", "text"], filter="small < 10 AND text IS NOT NULL"))
        expected = canon(theirs.to_table(columns=["id", "text"], filter="small < 10 AND text IS NOT NULL"))
        assert filtered.equals(expected)


def deletion_kinds(uri: str) -> set:
    d = os.path.join(uri, "_deletions")
    return {f.rsplit(".", 1)[-1] for f in os.listdir(d)} if os.path.isdir(d) else set()


@pytest.mark.parametrize("storage_version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("v2_paths", [True, False])
def test_lancepy_reads_every_pylance_version(tmp_path, storage_version, v2_paths):
    uri = str(tmp_path / "pl.lance")
    lance.write_dataset(
        make_table(12000), uri, max_rows_per_file=6000, data_storage_version=storage_version,
        enable_v2_manifest_paths=v2_paths,
    )  # v1
    lance.write_dataset(make_table(500, 12000), uri, mode="append", max_rows_per_file=6000)  # v2
    ds = lance.dataset(uri)
    ds.delete("id % 97 = 3")  # v3: a few rows per fragment -> .arrow
    ds = lance.dataset(uri)
    ds.delete("id < 5500")  # v4: most of fragment 0 -> .bin
    assert deletion_kinds(uri) == {"arrow", "bin"}
    ds = lance.dataset(uri)
    ds.add_columns({"double_id": "id * 2"})  # v5: a second data file per fragment
    ds = lance.dataset(uri)
    ds.tags.create("before-overwrite", ds.version)
    lance.write_dataset(make_table(300, 50000), uri, mode="overwrite", max_rows_per_file=6000)  # v6
    latest = lance.dataset(uri).version
    assert latest == 6
    names = os.listdir(os.path.join(uri, "_versions"))
    assert any(len(n) == len("18446744073709551614.manifest") for n in names) == v2_paths
    for v in range(1, latest + 1):
        assert_same_version(uri, v)
    ours = lancepy.dataset(uri, version="before-overwrite")
    assert ours.version == 5 and "double_id" in ours.schema.names
    assert lancepy.dataset(uri).tags.list()["before-overwrite"]["version"] == 5


@pytest.mark.parametrize("storage_version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("v2_paths", [True, False])
def test_pylance_reads_every_lancepy_version(tmp_path, storage_version, v2_paths):
    uri = str(tmp_path / "lp.lance")
    lancepy.write_dataset(
        make_table(12000), uri, max_rows_per_file=6000, data_storage_version=storage_version,
        enable_v2_manifest_paths=v2_paths,
    )  # v1
    lancepy.write_dataset(make_table(500, 12000), uri, mode="append", max_rows_per_file=6000)  # v2
    ds = lancepy.dataset(uri)
    ds.delete("id % 97 = 3")  # v3
    ds.delete("id < 5500")  # v4
    assert deletion_kinds(uri) == {"arrow", "bin"}
    ds.add_columns({"double_id": "id * 2"})  # v5
    ds.tags.create("before-overwrite", ds.version)
    lancepy.write_dataset(make_table(300, 50000), uri, mode="overwrite")  # v6
    names = os.listdir(os.path.join(uri, "_versions"))
    assert any(len(n) == len("18446744073709551614.manifest") for n in names) == v2_paths
    for v in range(1, 7):
        assert_same_version(uri, v)
    assert lance.dataset(uri, version="before-overwrite").version == 5
    # pylance keeps working on lancepy's dataset.
    lance.write_dataset(make_table(100, 90000), uri, mode="append")  # v7
    theirs = lance.dataset(uri)
    theirs.delete("id % 2 = 0")  # v8
    theirs = lance.dataset(uri)
    theirs.optimize.compact_files()  # v9 (ReserveFragments) and v10 (Rewrite)
    theirs = lance.dataset(uri)
    assert theirs.version >= 9
    for v in range(7, theirs.version + 1):
        assert_same_version(uri, v)
    # ... and lancepy on pylance's latest.
    ours = lancepy.dataset(uri)
    ours.delete("id = 90001")
    assert canon(lance.dataset(uri).to_table()).equals(canon(ours.to_table()))


def test_lancepy_commits_on_top_of_pylance_with_index(tmp_path):
    uri = str(tmp_path / "idx.lance")
    lance.write_dataset(make_table(2000), uri, max_rows_per_file=500)
    ds = lance.dataset(uri)
    ds.create_scalar_index("id", "BTREE")
    ours = lancepy.dataset(uri)
    assert [i["name"] for i in ours.list_indices()] == ["id_idx"]
    lancepy.write_dataset(make_table(100, 5000), uri, mode="append")
    ours = lancepy.dataset(uri)
    ours.delete("id < 10")
    ours.optimize.compact_files(target_rows_per_fragment=100000)
    theirs = lance.dataset(uri)
    assert theirs.list_indices()[0]["name"] == "id_idx"
    assert canon(theirs.to_table()).equals(canon(ours.to_table()))
    assert theirs.to_table(filter="id = 1500").num_rows == 1
    assert theirs.to_table(filter="id = 5050").num_rows == 1


def test_fragment_json_is_accepted_by_pylance(tmp_path):
    uri = str(tmp_path / "frag.lance")
    lancepy.write_dataset(make_table(10), uri)
    frags = lancepy.fragment.write_fragments(make_table(20, 100), uri)
    ds = lancepy.LanceDataset.commit(uri, lancepy.LanceOperation.Append(frags), read_version=1)
    assert ds.version == 2
    assert lance.dataset(uri).count_rows() == 30


def test_stable_row_ids_dataset(tmp_path):
    uri = str(tmp_path / "stable.lance")
    lance.write_dataset(make_table(100), uri, max_rows_per_file=40, enable_stable_row_ids=True)
    lance.dataset(uri).delete("id < 5")
    ours = lancepy.dataset(uri)
    assert canon(ours.to_table(with_row_id=True)).equals(canon(lance.dataset(uri).to_table(with_row_id=True)))
    lancepy.write_dataset(make_table(10, 1000), uri, mode="append")
    ours = lancepy.dataset(uri)
    ours.delete("id = 50")
    ours.optimize.compact_files()
    theirs = lance.dataset(uri)
    a = canon(ours.to_table(with_row_id=True))
    assert a.equals(canon(theirs.to_table(with_row_id=True)))
    assert a.column("_rowid").to_pylist() == [i for i in range(5, 110) if i != 50]
    lance.write_dataset(make_table(3, 2000), uri, mode="append")
    assert lancepy.dataset(uri).to_table(with_row_id=True).column("_rowid").to_pylist()[-3:] == [110, 111, 112]


def nested_table(n: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "point": pa.array([{"x": i, "y": float(i) / 2} for i in ids]),
            "tags": pa.array([[f"t{j}" for j in range(i % 4)] if i % 5 else None for i in ids]),
        }
    )


@pytest.mark.parametrize("writer", ["pylance", "lancepy"])
def test_nested_columns_both_ways(tmp_path, writer):
    uri = str(tmp_path / "nested.lance")
    write = lance.write_dataset if writer == "pylance" else lancepy.write_dataset
    kwargs = {"data_storage_version": "2.1"}
    write(nested_table(300), uri, max_rows_per_file=100, **kwargs)
    write(nested_table(50, 1000), uri, mode="append")
    if writer == "pylance":
        lance.dataset(uri).delete("id % 9 = 0")
    else:
        lancepy.dataset(uri).delete("id % 9 = 0")
    for v in (1, 2, 3):
        assert_nested_same(uri, v)


def assert_nested_same(uri: str, version: int) -> None:
    ours = canon(lancepy.dataset(uri, version=version).to_table())
    theirs = canon(lance.dataset(uri, version=version).to_table())
    assert ours.equals(theirs), version
    idx = [5, 0, 77, 5]
    assert canon(lancepy.dataset(uri, version=version).take(idx)).equals(canon(lance.dataset(uri, version=version).take(idx)))


def test_pylance_rebases_over_lancepy_commits(tmp_path):
    """pylance decodes lancepy's transactions when it has to rebase over them."""
    uri = str(tmp_path / "rebase2.lance")
    lance.write_dataset(make_table(300), uri, max_rows_per_file=100)  # v1
    ours = lancepy.dataset(uri)
    ours.delete("id = 5")  # v2 (lancepy Delete)
    lancepy.write_dataset(make_table(10, 1000), uri, mode="append")  # v3 (lancepy Append)
    ours = lancepy.dataset(uri)
    ours.update({"small": "small + 1000"}, where="id = 150")  # v4 (lancepy Update)
    frags = lance.fragment.write_fragments(make_table(7, 2000), uri)
    theirs = lance.LanceDataset.commit(uri, lance.LanceOperation.Append(frags), read_version=1)
    assert theirs.version == 5
    assert canon(lancepy.dataset(uri).to_table()).equals(canon(lance.dataset(uri).to_table()))
    assert lancepy.dataset(uri).count_rows() == 300 - 1 + 10 + 7
