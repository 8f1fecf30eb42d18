"""Array literals (``[1.0, 2.0]``) and ``arrow_cast(value, 'Type')`` in filters, computed
columns and updates, compared with pylance on the same data."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError
from lancepy.filters.casts import arrow_type_from_string


@pytest.fixture()
def uri(tmp_path):
    vecs = pa.FixedSizeListArray.from_arrays(pa.array(range(40), type=pa.float32()), 2)
    t = pa.table({"a": range(20), "vec": vecs, "l": [[i, i + 1] for i in range(20)]})
    path = str(tmp_path / "d.lance")
    lance.write_dataset(t, path)
    return path


@pytest.mark.parametrize("text, want", [
    ("Int8", pa.int8()), ("UInt64", pa.uint64()), ("Float16", pa.float16()), ("Utf8", pa.string()),
    ("LargeBinary", pa.large_binary()), ("FixedSizeBinary(16)", pa.binary(16)),
    ("FixedSizeList(32, Float32)", pa.list_(pa.float32(), 32)), ("List(Int64)", pa.list_(pa.int64())),
    ("Timestamp(Microsecond, None)", pa.timestamp("us")), ('Timestamp(Millisecond, Some("UTC"))', pa.timestamp("ms", "UTC")),
    ("Decimal128(10, 2)", pa.decimal128(10, 2)), ("Date32", pa.date32()),
])
def test_arrow_type_names(text, want):
    assert arrow_type_from_string(text) == want


@pytest.mark.parametrize("bad", ["", "Int", "FixedSizeList(3)", "Timestamp(Hour, None)", "Int32)", "List(Int64"])
def test_bad_arrow_type_names_are_refused(bad):
    with pytest.raises(InvalidArgumentError):
        arrow_type_from_string(bad)


@pytest.mark.parametrize("exprs", [
    {"a": "a", "v": "arrow_cast(NULL, 'FixedSizeList(4, Float32)')"},
    {"v": "arrow_cast(a, 'Int8')", "w": "arrow_cast(a, 'Float32')", "s": "arrow_cast(a, 'Utf8')"},
    {"a": "a", "v": "[1, 2, 3]", "w": "[1.5, 2]"},
])
def test_computed_columns_equal_pylance(uri, exprs):
    ours = lancepy.dataset(uri).to_table(columns=exprs)
    theirs = lance.dataset(uri).to_table(columns=exprs)
    assert ours.column_names == theirs.column_names
    for name in exprs:
        assert ours.column(name).type == theirs.column(name).type
        assert ours.column(name).to_pylist() == theirs.column(name).to_pylist()


def test_filters_equal_pylance(uri):
    for flt in ("arrow_cast(a, 'Int8') > 5", "arrow_cast(a, 'Utf8') = '7'", "array_has_any(l, [3, 30])"):
        assert lancepy.dataset(uri).to_table(filter=flt).equals(lance.dataset(uri).to_table(filter=flt)), flt


def test_update_with_an_array_literal_equals_pylance(tmp_path, uri):
    import shutil

    other = str(tmp_path / "other.lance")
    shutil.copytree(uri, other)
    got = lancepy.dataset(uri).update({"vec": "[42.0, 43.0]"}, where="a < 5")
    want = lance.dataset(other).update({"vec": "[42.0, 43.0]"}, where="a < 5")
    assert got["num_rows_updated"] == want["num_rows_updated"] == 5
    assert lancepy.dataset(uri).to_table().sort_by("a").equals(lance.dataset(other).to_table().sort_by("a"))
    with pytest.raises(InvalidArgumentError):
        lancepy.dataset(uri).to_table(columns={"x": "[1, 'a']"})
