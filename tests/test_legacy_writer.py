"""Legacy (v1) data files (``data_storage_version="legacy"`` / ``"0.1"``), written and read by
lancepy and compared with pylance on the same data: lancepy's files read by pylance, pylance's
read and appended to by lancepy, seeded generated tables of mixed types in both directions,
every write path keeping a legacy dataset legacy, and damaged files failing with lancepy's
exceptions.

The legacy format does not record nulls of numbers, booleans, structs or lists (they read
back as the slot's value, false, a struct of those, an empty list) and reads empty strings of
nullable columns as null: the expected values are always what pylance itself reads back
from its own legacy files of the same input."""

from __future__ import annotations

import datetime
import json
import os
import random
import struct
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import CorruptFileError, InvalidArgumentError, LanceError, NotSupportedError
from lancepy.file import LanceFileReader, LanceFileWriter
from lancepy.fragment import LanceFragment

lance = pytest.importorskip("lance")


def _data_files(uri):
    d = os.path.join(str(uri), "data")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".lance"))


def _versions(ds):
    return {(f.file_major_version, f.file_minor_version) for fr in ds.get_fragments() for f in fr.metadata.files}


def all_types_table(n: int = 7) -> pa.Table:
    """One column of every type the legacy format stores, with nulls where Arrow allows."""
    rng = np.random.default_rng(7)
    ints = [None if i % 4 == 1 else int(i * 37 - 50) for i in range(n)]

    def col(t):
        return pa.array([None if v is None else v % 100 for v in ints], t)

    return pa.table(
        {
            "i8": col(pa.int8()),
            "u16": col(pa.uint16()),
            "i32": col(pa.int32()),
            "u64": col(pa.uint64()),
            "i64": pa.array(ints, pa.int64()),
            "f16": pa.array(rng.random(n).astype(np.float16)),
            "f32": pa.array(rng.random(n).astype(np.float32)),
            "f64": pa.array([None if v is None else v / 3 for v in ints], pa.float64()),
            "bool": pa.array([None if i % 5 == 2 else i % 2 == 0 for i in range(n)]),
            "date32": pa.array([datetime.date(2020, 1, 1 + i) for i in range(n)]),
            "date64": pa.array([datetime.date(2021, 2, 1 + i) for i in range(n)], pa.date64()),
            "ts": pa.array([datetime.datetime(2022, 3, 4, 5, 6, i) for i in range(n)], pa.timestamp("us", "UTC")),
            "ts_s": pa.array([i * 1000 for i in range(n)], pa.timestamp("s")),
            "time": pa.array([i * 10_000 for i in range(n)], pa.time64("us")),
            "dur": pa.array([i * 7 for i in range(n)], pa.duration("ms")),
            "dec": pa.array([Decimal(f"{i}.{i:02d}") for i in range(n)], pa.decimal128(10, 2)),
            "dec256": pa.array([Decimal(f"-{i}.5") for i in range(n)], pa.decimal256(40, 1)),
            "fsb": pa.array([bytes([i, i + 1, i + 2]) for i in range(n)], pa.binary(3)),
            "str": pa.array([None if i % 3 == 0 else f"s{i}" * i for i in range(n)]),
            "lstr": pa.array([f"L{i}" for i in range(n)], pa.large_string()),
            "bin": pa.array([bytes(range(i)) for i in range(n)], pa.binary()),
            "lbin": pa.array([None if i == 2 else b"x" * i for i in range(n)], pa.large_binary()),
            "list": pa.array([None if i == 3 else list(range(i)) for i in range(n)], pa.list_(pa.int32())),
            "llist": pa.array([[f"{i}-{j}" for j in range(i % 3)] for i in range(n)], pa.large_list(pa.string())),
            "fsl": pa.array([[float(i), i + 0.5, -i, 1e9] for i in range(n)], pa.list_(pa.float32(), 4)),
            "struct": pa.array(
                [{"a": i, "b": f"b{i}", "c": [i, i]} if i != 4 else None for i in range(n)],
                pa.struct([("a", pa.int64()), ("b", pa.string()), ("c", pa.list_(pa.int16()))]),
            ),
            "dict": pa.array([["x", "yy", None][i % 3] for i in range(n)], pa.dictionary(pa.int8(), pa.string())),
            "ldict": pa.DictionaryArray.from_arrays(
                pa.array([i % 2 for i in range(n)], pa.int32()), pa.array(["foo", "bar"], pa.large_string())
            ),
            "null": pa.nulls(n),
        }
    )


def test_lancepy_writes_what_pylance_reads(tmp_path):
    table = all_types_table()
    ours = lancepy.write_dataset(table, tmp_path / "ours", data_storage_version="legacy")
    lance.write_dataset(table, tmp_path / "theirs", data_storage_version="legacy")
    theirs = lance.dataset(tmp_path / "theirs")
    expected = theirs.to_table()
    assert ours.data_storage_version == "0.1" == lance.dataset(tmp_path / "ours").data_storage_version
    assert _versions(lance.dataset(tmp_path / "ours")) == {(0, 2)} == _versions(theirs)
    got = lance.dataset(tmp_path / "ours").to_table()
    assert got.schema == expected.schema == table.schema
    assert got.equals(expected)
    # and lancepy reads both files as pylance does
    assert lancepy.dataset(tmp_path / "ours").to_table().equals(expected)
    assert lancepy.dataset(tmp_path / "theirs").to_table().equals(expected)
    # the fields of the manifest's data file entries are pylance's: every field id, no columns
    mine = lance.dataset(tmp_path / "ours").get_fragments()[0].metadata.files[0]
    their = theirs.get_fragments()[0].metadata.files[0]
    assert (mine.fields, mine.column_indices) == (their.fields, their.column_indices)


def test_roundtrip_types_as_pylance_tests_it(tmp_path):
    """pylance's test_roundtrip_types: dictionaries and lists of strings read back as written."""
    table = pa.table(
        {
            "dict": pa.array(["a", "b", "a"], pa.dictionary(pa.int8(), pa.string())),
            "large_dict": pa.DictionaryArray.from_arrays(pa.array([0, 1, 1], pa.int8()), pa.array(["foo", "bar"], pa.large_string())),
            "list": pa.array([["a", "b"], ["c", "d"], ["e", "f"]], pa.list_(pa.string())),
            "large_list": pa.array([["a", "b"], ["c", "d"], ["e", "f"]], pa.large_list(pa.string())),
        }
    )
    ds = lancepy.write_dataset(table, tmp_path, data_storage_version="legacy")
    assert ds.schema == table.schema
    assert ds.to_table() == table
    assert lance.dataset(tmp_path).to_table() == table


def test_pylance_writes_lancepy_appends_pylance_reads(tmp_path):
    table = all_types_table(9)
    lance.write_dataset(table, tmp_path / "d", data_storage_version="legacy")
    lancepy.write_dataset(table, tmp_path / "d", mode="append")
    lance.write_dataset(table, tmp_path / "ref", data_storage_version="legacy")
    lance.write_dataset(table, tmp_path / "ref", mode="append")
    theirs = lance.dataset(tmp_path / "d")
    assert theirs.data_storage_version == "0.1"
    assert _versions(theirs) == {(0, 2)}
    expected = lance.dataset(tmp_path / "ref").to_table()
    assert theirs.to_table().equals(expected)
    assert lancepy.dataset(tmp_path / "d").to_table().equals(expected)
    # and the other way round: pylance appends to lancepy's legacy dataset
    lancepy.write_dataset(table, tmp_path / "e", data_storage_version="0.1")
    lance.write_dataset(table, tmp_path / "e", mode="append")
    assert _versions(lance.dataset(tmp_path / "e")) == {(0, 2)}
    assert lancepy.dataset(tmp_path / "e").to_table().equals(expected)
    assert lance.dataset(tmp_path / "e").to_table().equals(expected)


# --------------------------------------------------------------------------------------------
# Seeded generated tables, both directions
# --------------------------------------------------------------------------------------------


def _random_array(rng: random.Random, kind: str, n: int) -> pa.Array:
    def maybe(v, p=0.2):
        return None if rng.random() < p else v

    if kind == "int":
        t = rng.choice([pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32()])
        return pa.array([maybe(rng.randrange(0, 100)) for _ in range(n)], t)
    if kind == "float":
        return pa.array([maybe(rng.uniform(-1e6, 1e6)) for _ in range(n)], rng.choice([pa.float32(), pa.float64()]))
    if kind == "bool":
        return pa.array([maybe(rng.random() < 0.5) for _ in range(n)])
    if kind == "string":
        t = rng.choice([pa.string(), pa.large_string()])
        return pa.array([maybe("".join(rng.choice("abcé😀") for _ in range(rng.randrange(0, 6)))) for _ in range(n)], t)
    if kind == "binary":
        t = rng.choice([pa.binary(), pa.large_binary()])
        return pa.array([maybe(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 5)))) for _ in range(n)], t)
    if kind == "list":
        t = rng.choice([pa.list_(pa.int64()), pa.large_list(pa.string()), pa.list_(pa.list_(pa.int32()))])
        inner = t.value_type
        def item():
            if pa.types.is_list(inner):
                return [rng.randrange(9) for _ in range(rng.randrange(3))]
            return rng.randrange(1000) if pa.types.is_integer(inner) else f"v{rng.randrange(99)}"
        return pa.array([maybe([item() for _ in range(rng.randrange(0, 4))]) for _ in range(n)], t)
    if kind == "fsl":
        d = rng.choice([1, 3, 8])
        return pa.array([[rng.uniform(-1, 1) for _ in range(d)] for _ in range(n)], pa.list_(pa.float32(), d))
    if kind == "fsb":
        return pa.array([bytes(rng.randrange(256) for _ in range(4)) for _ in range(n)], pa.binary(4))
    if kind == "dict":
        values = pa.array([f"w{i}" for i in range(rng.randrange(1, 6))])
        keys = pa.array([maybe(rng.randrange(len(values))) for _ in range(n)], pa.int16())
        return pa.DictionaryArray.from_arrays(keys, values)
    if kind == "struct":
        a = _random_array(rng, "int", n)
        b = _random_array(rng, "string", n)
        c = _random_array(rng, "list", n)
        return pa.StructArray.from_arrays([a, b, c], names=["a", "b", "c"])
    raise AssertionError(kind)


KINDS = ["int", "float", "bool", "string", "binary", "list", "fsl", "fsb", "dict", "struct"]


def random_table(seed: int) -> pa.Table:
    rng = random.Random(seed)
    n = rng.choice([1, 5, 100, 1023, 1024, 1025, 2600])
    kinds = rng.sample(KINDS, rng.randrange(2, len(KINDS)))
    return pa.table({f"{k}{i}": _random_array(rng, k, n) for i, k in enumerate(kinds)})


@pytest.mark.parametrize("seed", range(12))
def test_generated_tables_both_directions(tmp_path, seed):
    rng = random.Random(1000 + seed)
    table = random_table(seed)
    group = rng.choice([None, 7, 100, 1024])
    kw = {} if group is None else {"max_rows_per_group": group}
    lance.write_dataset(table, tmp_path / "theirs", data_storage_version="legacy", **kw)
    lancepy.write_dataset(table, tmp_path / "ours", data_storage_version="legacy", **kw)
    expected = lance.dataset(tmp_path / "theirs").to_table()
    # lancepy → pylance
    assert lance.dataset(tmp_path / "ours").to_table().equals(expected)
    # pylance → lancepy: whole, ranges, takes
    ours = lancepy.dataset(tmp_path / "theirs")
    assert ours.to_table().equals(expected)
    n = table.num_rows
    off, lim = rng.randrange(n), rng.randrange(1, n + 1)
    assert ours.to_table(offset=off, limit=lim).equals(expected.slice(off, lim))
    idx = [rng.randrange(n) for _ in range(min(n, 50))]
    assert ours.take(idx).equals(expected.take(idx))
    assert lancepy.dataset(tmp_path / "ours").take(idx).equals(lance.dataset(tmp_path / "theirs").take(idx))


# --------------------------------------------------------------------------------------------
# Write paths of a legacy dataset
# --------------------------------------------------------------------------------------------


def test_fragment_create_and_write_fragments_write_legacy(tmp_path):
    tab = pa.table({"a": range(1024), "s": [str(i) for i in range(1024)]})
    frag = LanceFragment.create(tmp_path / "f", tab, data_storage_version="legacy")
    assert "file_major_version=2" not in str(frag)
    assert (frag.files[0].file_major_version, frag.files[0].file_minor_version) == (0, 2)
    frag2 = LanceFragment.create(tmp_path / "f", tab, data_storage_version="stable")
    assert "file_major_version=2" in str(frag2)
    # pylance commits lancepy's legacy fragment and reads it
    theirs = lance.LanceDataset.commit(
        tmp_path / "f", lance.LanceOperation.Overwrite(pa.schema(tab.schema), [lance.fragment.FragmentMetadata.from_json(json.dumps(frag.to_json()))])
    )
    assert theirs.data_storage_version == "0.1"
    assert theirs.to_table().equals(tab)
    frags = lancepy.fragment.write_fragments(tab, tmp_path / "f", max_rows_per_file=500, max_rows_per_group=100)
    assert {(f.file_major_version, f.file_minor_version) for fr in frags for f in fr.files} == {(0, 2)}
    ds = lancepy.dataset(tmp_path / "f").commit(tmp_path / "f", lancepy.LanceOperation.Append(frags), read_version=1)
    assert lance.dataset(tmp_path / "f").to_table().equals(pa.concat_tables([tab, tab]))
    assert ds.to_table().equals(pa.concat_tables([tab, tab]))


def test_mutations_keep_a_legacy_dataset_legacy(tmp_path):
    tab = pa.table({"id": pa.array(range(300), pa.int64()), "v": [f"v{i}" for i in range(300)]})
    for lib, uri in ((lancepy, tmp_path / "ours"), (lance, tmp_path / "theirs")):
        lib.write_dataset(tab, uri, data_storage_version="legacy", max_rows_per_file=100)
        ds = lib.dataset(uri)
        ds.update({"v": "'changed'"}, where="id % 7 = 0")
        ds.delete("id >= 290")
        new = pa.table({"id": pa.array([5, 1000], pa.int64()), "v": ["five", "thousand"]})
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(new)
        lib.dataset(uri).optimize.compact_files(target_rows_per_fragment=1000)
    ours, theirs = lance.dataset(tmp_path / "ours"), lance.dataset(tmp_path / "theirs")
    assert ours.data_storage_version == "0.1" and _versions(ours) == {(0, 2)}
    key = [("id", "ascending")]
    assert ours.to_table().sort_by(key).equals(theirs.to_table().sort_by(key))
    assert lancepy.dataset(tmp_path / "ours").to_table().sort_by(key).equals(theirs.to_table().sort_by(key))


def test_storage_versions_do_not_mix(tmp_path):
    tab = pa.table({"a": pa.array([1, 2, 3], pa.int64())})
    lancepy.write_dataset(tab, tmp_path / "v1", data_storage_version="legacy")
    with pytest.raises(InvalidArgumentError, match="V1 and V2 storage versions cannot be mixed"):
        lancepy.write_dataset(tab, tmp_path / "v1", mode="append", data_storage_version="stable")
    lancepy.write_dataset(tab, tmp_path / "v2", data_storage_version="stable")
    with pytest.raises(InvalidArgumentError, match="V1 and V2 storage versions cannot be mixed"):
        lancepy.write_dataset(tab, tmp_path / "v2", mode="append", data_storage_version="legacy")
    # pylance refuses the same appends
    for uri, v in ((tmp_path / "v1", "stable"), (tmp_path / "v2", "legacy")):
        with pytest.raises(OSError, match="cannot be mixed"):
            lance.write_dataset(tab, uri, mode="append", data_storage_version=v)
    # an overwrite keeps the dataset's version unless told otherwise (pylance's test_mixed_mode_overwrite)
    assert lancepy.write_dataset(tab, tmp_path / "v1", mode="overwrite").data_storage_version == "0.1"
    assert lancepy.write_dataset(tab, tmp_path / "v1", mode="overwrite", data_storage_version="2.1").data_storage_version == "2.1"
    # a commit of v1 and v2 fragments together fails as pylance's does
    frags = [LanceFragment.create(tmp_path / "mix", tab, data_storage_version=v) for v in ("legacy", "stable")]
    with pytest.raises(LanceError, match="same version"):
        lancepy.LanceDataset.commit(tmp_path / "mix", lancepy.LanceOperation.Overwrite(tab.schema, frags))


def test_what_the_legacy_format_cannot_store_is_refused(tmp_path):
    m = pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64()))
    with pytest.raises(NotSupportedError, match="legacy"):
        lancepy.write_dataset(pa.table({"m": m}), tmp_path / "m", data_storage_version="legacy")
    two = pa.chunked_array(
        [pa.array(["a"], pa.dictionary(pa.int8(), pa.string())), pa.DictionaryArray.from_arrays(pa.array([0], pa.int8()), pa.array(["b"]))]
    )
    with pytest.raises(NotSupportedError, match="dictionar"):
        lancepy.write_dataset(pa.table({"d": two}), tmp_path / "d", data_storage_version="legacy", max_rows_per_group=1)
    # (pylance writes dictionaries of numbers but cannot read them back)
    nd = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.uint8()), pa.array([1.5, 2.5]))
    with pytest.raises(NotSupportedError, match="legacy"):
        lancepy.write_dataset(pa.table({"d": nd}), tmp_path / "nd", data_storage_version="legacy")
    with pytest.raises(NotSupportedError, match="legacy"):
        LanceFileWriter(str(tmp_path / "x.lance"), pa.schema([("a", pa.int64())]), version="legacy")
    with pytest.raises(InvalidArgumentError, match="max_rows_per_group"):
        lancepy.write_dataset(pa.table({"a": [1]}), tmp_path / "g", data_storage_version="legacy", max_rows_per_group=-1)


# --------------------------------------------------------------------------------------------
# Damaged files
# --------------------------------------------------------------------------------------------


def test_the_file_reader_refuses_legacy_files(tmp_path):
    lance.write_dataset(pa.table({"a": [1, 2]}), tmp_path, data_storage_version="legacy")
    with pytest.raises(NotSupportedError, match="legacy"):
        LanceFileReader(_data_files(tmp_path)[0])


@pytest.mark.parametrize("damage", ["truncate_tail", "truncate_front", "metadata_position", "page_table", "positions"])
def test_damaged_legacy_files_raise_lancepy_errors(tmp_path, damage):
    table = pa.table({"a": pa.array(range(3000), pa.int64()), "s": [f"s{i}" for i in range(3000)],
                      "l": [[i] * (i % 3) for i in range(3000)]})
    lancepy.write_dataset(table, tmp_path, data_storage_version="legacy")
    (path,) = _data_files(tmp_path)
    data = bytearray(open(path, "rb").read())
    meta_pos = struct.unpack("<Q", data[-16:-8])[0]
    if damage == "truncate_tail":
        data = data[: len(data) // 2]
    elif damage == "truncate_front":
        data = data[100:]
    elif damage == "metadata_position":
        data[-16:-8] = struct.pack("<Q", len(data) * 4)
    elif damage == "page_table":
        # the metadata's page table position, pointed past the file
        page_table = data.index(b"\x18", meta_pos + 4)
        data[page_table + 1 : page_table + 3] = b"\xff\x7f"
    elif damage == "positions":
        # a string page's positions made to point backwards
        data[3000 * 8 + 100 : 3000 * 8 + 200] = b"\xff" * 100
    open(path, "wb").write(bytes(data))
    ds = None
    with pytest.raises(LanceError) as ei:
        ds = lancepy.dataset(tmp_path)
        ds.to_table()
    assert isinstance(ei.value, (CorruptFileError, LanceError))
    assert "legacy" in str(ei.value) or "Lance file" in str(ei.value) or "corrupt" in str(ei.value)


def test_use_legacy_format_is_pylances_deprecated_flag(tmp_path):
    tab = pa.table({"a": pa.array([1, 2], pa.int64())})
    with pytest.warns(DeprecationWarning):
        ds = lancepy.write_dataset(tab, tmp_path / "a", use_legacy_format=True)
    with pytest.warns(DeprecationWarning):
        theirs = lance.write_dataset(tab, tmp_path / "b", use_legacy_format=True)
    assert ds.data_storage_version == theirs.data_storage_version == "0.1"
    with pytest.warns(DeprecationWarning):
        frags = lancepy.fragment.write_fragments(tab, tmp_path / "c", use_legacy_format=True)
    assert (frags[0].files[0].file_major_version, frags[0].files[0].file_minor_version) == (0, 2)


def test_schema_evolution_of_a_legacy_dataset(tmp_path):
    """add_columns, merge, drop_columns and alter_columns: new files legacy too, and the
    result read the same by both libraries as pylance's own evolution of the same data."""
    t = pa.table({"id": pa.array(range(50), pa.int64()), "s": [f"s{i}" for i in range(50)]})
    for lib, uri in ((lancepy, tmp_path / "ours"), (lance, tmp_path / "theirs")):
        lib.write_dataset(t, uri, data_storage_version="legacy")
        lib.dataset(uri).add_columns({"x": "id * 2"})
        lib.dataset(uri).merge(pa.table({"id": pa.array(range(50), pa.int64()), "y": [i / 2 for i in range(50)]}), "id")
        lib.dataset(uri).drop_columns(["s"])
        lib.dataset(uri).alter_columns({"path": "x", "name": "x2"})
    ours, theirs = lance.dataset(tmp_path / "ours"), lance.dataset(tmp_path / "theirs")
    assert _versions(ours) == {(0, 2)}
    assert ours.to_table().equals(theirs.to_table())
    assert lancepy.dataset(tmp_path / "ours").to_table().equals(theirs.to_table())
    assert lancepy.dataset(tmp_path / "theirs").to_table().equals(theirs.to_table())
    # a dropped column's id stays in a legacy file's fields (sorted ids: pylance checks them)
    for fr in ours.get_fragments():
        for f in fr.metadata.files:
            assert f.fields == sorted(set(f.fields)) and -2 not in f.fields


@pytest.mark.s3
def test_legacy_datasets_on_s3_both_ways(s3):
    """On a real S3 server (moto on 127.0.0.1, explicit keys): lancepy writes a legacy
    dataset that pylance appends to and reads, and the other way round."""
    o = s3.options()
    table = all_types_table(20)
    bucket = s3.create_bucket()
    expected = None
    for first, second, name in ((lancepy, lance, "a"), (lance, lancepy, "b")):
        uri = f"s3://{bucket}/{name}.lance"
        first.write_dataset(table, uri, data_storage_version="legacy", max_rows_per_group=6, storage_options=o)
        second.write_dataset(table, uri, mode="append", storage_options=o)
        theirs = lance.dataset(uri, storage_options=o)
        assert theirs.data_storage_version == "0.1" and _versions(theirs) == {(0, 2)}
        got = theirs.to_table()
        expected = got if expected is None else expected
        assert got.equals(expected)
        assert lancepy.dataset(uri, storage_options=o).to_table().equals(expected)
        assert lancepy.dataset(uri, storage_options=o).take([0, 39, 21]).equals(expected.take([0, 39, 21]))
