"""Filtered scans read in two passes (late materialization) give pylance's rows and order."""

import pyarrow as pa
import pytest

import lancepy

lance = pytest.importorskip("lance")


def _table(n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "x": pa.array([None if i % 7 == 0 else (i % 11) - 5 for i in range(n)], pa.int32()),
            "text": pa.array([None if i % 13 == 0 else f"row {i}" for i in range(n)]),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array([float(i % 97) for i in range(n * 4)], pa.float32()), 4),
        }
    )


@pytest.fixture(params=["2.0", "2.1", "2.2"])
def ds_path(tmp_path, request):
    path = str(tmp_path / "ds.lance")
    lance.write_dataset(_table(3000), path, max_rows_per_file=1000, data_storage_version=request.param)
    lance.dataset(path).delete("id % 5 = 1 OR (id >= 1200 AND id < 1400)")
    return path


FILTERS = [
    "id >= 500 AND id < 2600 AND x > 0",
    "id = 1777",
    "x IS NULL",
    "id < 0",
    "x > 100 OR id >= 2990",
]


@pytest.mark.parametrize("flt", FILTERS)
@pytest.mark.parametrize("late", [None, True, False, ["vec"], ["text", "vec"]])
@pytest.mark.parametrize("columns", [None, ["id", "text"], ["vec", "x"], ["text", "vec"]])
def test_late_materialization_matches_pylance(ds_path, flt, late, columns):
    got = lancepy.dataset(ds_path).to_table(columns=columns, filter=flt, late_materialization=late)
    want = lance.dataset(ds_path).to_table(columns=columns, filter=flt)
    assert got.equals(want)


@pytest.mark.parametrize("late", [None, True])
@pytest.mark.parametrize("kw", [{"with_row_id": True}, {"with_row_address": True}, {"offset": 37},
                                {"with_row_id": True, "with_row_address": True, "offset": 5}])
def test_late_materialization_row_ids_offset(ds_path, late, kw):
    flt = "id >= 100 AND id < 2900 AND x > 1"
    got = lancepy.dataset(ds_path).to_table(columns=["text", "vec"], filter=flt, late_materialization=late, **kw)
    want = lance.dataset(ds_path).to_table(columns=["text", "vec"], filter=flt, **kw)
    assert got.equals(want)


def test_late_materialization_with_limit_and_batches(ds_path):
    flt = "id >= 100 AND x > 1"
    lp, pl = lancepy.dataset(ds_path), lance.dataset(ds_path)
    got = lp.to_table(columns=["vec"], filter=flt, limit=50, offset=10, late_materialization=True)
    assert got.equals(pl.to_table(columns=["vec"], filter=flt, limit=50, offset=10))
    assert lp.count_rows(filter=flt) == pl.count_rows(filter=flt)


def test_late_materialization_unknown_column(ds_path):
    from lancepy.exceptions import ColumnNotFoundError

    with pytest.raises(ColumnNotFoundError):
        lancepy.dataset(ds_path).to_table(filter="id > 3", late_materialization=["nope"])


@pytest.mark.parametrize("late", [None, True, False, ["vec"]])
@pytest.mark.parametrize("kw", [{}, {"limit": 40, "offset": 300}, {"with_row_id": True, "with_row_address": True}])
def test_late_materialization_batches(ds_path, late, kw):
    flt = "id >= 100 AND id < 2900 AND x > 1"
    batches = list(lancepy.dataset(ds_path).to_batches(columns=["id", "text", "vec"], filter=flt, batch_size=300,
                                                       late_materialization=late, **kw))
    want = lance.dataset(ds_path).to_table(columns=["id", "text", "vec"], filter=flt, **kw)
    if not batches:
        assert want.num_rows == 0
        return
    assert pa.Table.from_batches(batches).equals(want)
