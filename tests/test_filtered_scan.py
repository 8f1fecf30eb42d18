"""Filtered scans with late materialization: the columns a filter does not use are read only
for the rows that pass it (taken by row address when few pass, else scanned and picked).
Every answer must equal the plain filtered scan's (`late_materialization=False`) and
pylance's, whatever the selectivity, deletions, nulls, offset/limit or file version."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import ColumnNotFoundError, InvalidArgumentError

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
pytestmark = pytest.mark.interop

N = 6000


def _table() -> pa.Table:
    ids = list(range(N))
    return pa.table(
        {
            "id": ids,
            "x": [None if i % 11 == 0 else (i * 37 % 101) - 50.0 for i in ids],
            "s": [f"row-{i}-{'z' * (i % 7)}" for i in ids],
            "v": pa.FixedSizeListArray.from_arrays(pa.array([float(i % 13) for i in range(N * 4)], pa.float32()), 4),
            "tags": [[f"t{i % 3}"] * (i % 4) for i in ids],
        }
    )


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2"])
def uri(request, tmp_path_factory):
    u = str(tmp_path_factory.mktemp("late") / "d.lance")
    lancepy.write_dataset(_table(), u, max_rows_per_file=1500, data_storage_version=request.param)
    lancepy.dataset(u).delete("id % 5 = 2 OR (id >= 3000 AND id < 3200)")
    return u


FILTERS = [
    "id = 77",  # one row
    "id >= 1000 AND id < 1100 AND x > 0",  # a few rows in one fragment
    "x > 45",  # ~5%, scattered
    "x > 0",  # half
    "x IS NULL",  # nulls in the filter column
    "id >= 0",  # every live row
    "id < 0",  # none
    "s LIKE 'row-1%'",
]


@pytest.mark.parametrize("flt", FILTERS)
def test_late_materialized_scan_equals_plain_and_pylance(uri, flt) -> None:
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    want = theirs.to_table(filter=flt)
    assert ours.to_table(filter=flt).equals(want)
    assert ours.to_table(filter=flt, late_materialization=False).equals(want)
    assert ours.to_table(filter=flt, late_materialization=True).equals(want)
    assert ours.to_table(filter=flt, late_materialization=["s"]).equals(want)
    cols = ["s", "v", "id"]
    assert ours.to_table(columns=cols, filter=flt).equals(theirs.to_table(columns=cols, filter=flt))


@pytest.mark.parametrize("flt", ["x > 45", "x > 0", "id = 77"])
@pytest.mark.parametrize("offset,limit", [(0, 10), (7, 100), (50, None), (0, 0)])
def test_offset_limit_row_ids_and_batches(uri, flt, offset, limit) -> None:
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    kw = dict(filter=flt, offset=offset, limit=limit, with_row_id=True)
    want = theirs.to_table(**kw)
    for late in (None, True, False, ["v", "tags"]):
        assert ours.to_table(late_materialization=late, **kw).equals(want), late
        got = pa.Table.from_batches(list(ours.to_batches(late_materialization=late, batch_size=64, **kw)), schema=want.schema)
        assert got.equals(want), late
    addr = ours.to_table(filter=flt, with_row_address=True, columns=["id", "s"])
    assert addr.equals(ours.to_table(filter=flt, with_row_address=True, columns=["id", "s"], late_materialization=False))


def test_computed_columns_and_fragments(uri) -> None:
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    frags = [f.fragment_id for f in ours.get_fragments()][1:3]
    cols = {"twice": "id * 2", "s": "s"}
    got = ours.scanner(columns=cols, filter="x > 40", fragments=[ours.get_fragment(f) for f in frags]).to_table()
    want = theirs.scanner(columns=cols, filter="x > 40", fragments=[theirs.get_fragment(f) for f in frags]).to_table()
    assert got.equals(want)


def test_bad_late_materialization_arguments(uri) -> None:
    ds = lancepy.dataset(uri)
    with pytest.raises(ColumnNotFoundError):
        ds.to_table(filter="x > 0", late_materialization=["nope"])
    with pytest.raises(InvalidArgumentError):
        ds.to_table(filter="x > 0", late_materialization="s")


def test_explain_and_analyze_plan_describe_what_runs(uri) -> None:
    ds = lancepy.dataset(uri)
    plan = ds.scanner(columns=["s", "v"], filter="x > 45").explain_plan()
    assert isinstance(plan, str)
    lines = plan.splitlines()
    assert lines[0].startswith("Project: ['s', 'v']")
    assert any("LateMaterialize: ['s', 'v']" in line for line in lines)
    assert lines[-1].strip().startswith("LanceRead:") and "projection=[x]" in lines[-1]
    assert "LateMaterialize" not in ds.scanner(columns=["s"], filter="x > 45", late_materialization=False).explain_plan()
    assert "(pushed down)" in ds.scanner(columns=["s"], limit=3).explain_plan()
    verbose = ds.scanner(filter="x > 45").explain_plan(verbose=True)
    assert str([f.fragment_id for f in ds.get_fragments()]) in verbose
    analyzed = ds.scanner(columns=["s"], filter="x > 45").analyze_plan()
    assert analyzed.startswith("Analyze: elapsed=") and f"output_rows={ds.count_rows('x > 45')}" in analyzed
    counted = ds.scanner(filter="x > 45").analyze_plan(count_rows=True)
    assert "Count" in counted and "projection=[x]" in counted
    # pylance's returns a plan string too (its own operators).
    assert isinstance(lance.dataset(uri).scanner(filter="x > 45").explain_plan(), str)
