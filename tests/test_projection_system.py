"""Projections as pylance accepts them: system columns (``_rowid``, ``_rowaddr``,
``_rowoffset``) by name and in the order asked, nested struct paths, repeated names, list
subscripts, computed columns in takes, and filters on ``_rowid`` / ``_rowaddr``. Every case
is compared with pylance on the same dataset."""

from __future__ import annotations

import random

import lance
import pyarrow as pa
import pytest

import lancepy


@pytest.fixture()
def uri(tmp_path):
    n = 300
    t = pa.table({
        "a": pa.array(range(n), pa.int64()),
        "s": pa.array([{"x": i, "y": i % 2 == 0} for i in range(n)]),
        "ls": pa.array([[{"x": i}] * (i % 3) for i in range(n)]),
        "vec": pa.array([[float(i), 1.0] for i in range(n)], pa.list_(pa.float32(), 2)),
    })
    path = str(tmp_path / "d.lance")
    lance.write_dataset(t, path, max_rows_per_file=70)
    # Deletions in two fragments: offsets shift, row ids / addresses do not.
    lance.dataset(path).delete("a % 7 = 3 AND a < 200")
    return path


PROJECTIONS = [
    ["_rowid"],
    ["_rowaddr", "_rowid"],
    ["_rowoffset"],
    ["_rowoffset", "a", "_rowid", "_rowaddr"],
    ["s.x", "a"],
    ["s.y"],
]


def test_scans_refuse_repeated_names_as_pylance_does(uri):
    with pytest.raises(ValueError):
        lance.dataset(uri).to_table(columns=["a", "a"])
    with pytest.raises(lancepy.exceptions.InvalidArgumentError):
        lancepy.dataset(uri).to_table(columns=["a", "a"])


@pytest.mark.parametrize("columns", PROJECTIONS)
def test_scan_projections_equal_pylance(uri, columns):
    ours = lancepy.dataset(uri).to_table(columns=columns)
    theirs = lance.dataset(uri).to_table(columns=columns)
    assert ours.schema.names == columns
    assert ours.combine_chunks().equals(theirs.combine_chunks())


@pytest.mark.parametrize("columns", PROJECTIONS)
def test_filtered_scan_projections_equal_pylance(uri, columns):
    flt = "a > 150 OR a < 12"
    ours = lancepy.dataset(uri).to_table(columns=columns, filter=flt)
    theirs = lance.dataset(uri).to_table(columns=columns, filter=flt)
    assert ours.combine_chunks().equals(theirs.combine_chunks())


@pytest.mark.parametrize("columns", [["_rowid"], ["_rowaddr", "a"], ["_rowoffset", "a"], ["a", "_rowid", "_rowid"]])
def test_take_projections_equal_pylance(uri, columns):
    rng = random.Random(5)
    n = lancepy.dataset(uri).count_rows()
    idx = [rng.randrange(n) for _ in range(40)]
    ours = lancepy.dataset(uri).take(idx, columns=columns)
    theirs = lance.dataset(uri).take(idx, columns=columns)
    assert ours.schema.names == columns
    assert ours.equals(theirs)


def test_flags_go_last_and_projection_keeps_its_order(uri):
    ds = lancepy.dataset(uri)
    assert ds.scanner(with_row_id=True).to_table().schema.names[-1] == "_rowid"
    assert ds.scanner(with_row_address=True, with_row_id=True).to_table().schema.names[-2:] == ["_rowid", "_rowaddr"]
    assert ds.scanner(columns=["_rowoffset", "_rowid", "a"]).projected_schema.names == ["_rowoffset", "_rowid", "a"]


def test_filter_on_row_id_and_address(uri):
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    ids = ours.to_table(columns=["_rowid", "_rowaddr"])
    rng = random.Random(1)
    for _ in range(10):
        i = rng.randrange(ids.num_rows)
        rid, addr = ids.column(0)[i].as_py(), ids.column(1)[i].as_py()
        for flt in (f"_rowid = {rid}", f"_rowaddr >= {addr}", f"_rowid < {rid} AND a > 20"):
            got = ours.to_table(filter=flt, with_row_id=True)
            want = theirs.to_table(filter=flt, with_row_id=True)
            assert got.combine_chunks().equals(want.combine_chunks()), flt
            # The row id read for the filter is not returned unless asked for.
            assert "_rowid" not in ours.to_table(filter=flt).schema.names


def test_list_subscripts_count_from_one_and_are_null_past_the_end(uri):
    cols = {"first": "ls[1]['x']", "second": "ls[2]['x']", "v": "vec[2]"}
    ours = lancepy.dataset(uri).to_table(columns=cols)
    theirs = lance.dataset(uri).to_table(columns=cols)
    assert ours.equals(theirs)
    flt = "ls[2]['x'] > 100"
    assert lancepy.dataset(uri).to_table(filter=flt).equals(lance.dataset(uri).to_table(filter=flt))


def test_computed_columns_in_takes(uri):
    cols = {"a2": "a * 2", "sx": "s.x + 1"}
    ours = lancepy.dataset(uri)
    assert ours.take([0, 5, 9], columns=cols).equals(lance.dataset(uri).take([0, 5, 9], columns=cols))
    addrs = ours.to_table(columns=["_rowaddr"]).column(0).to_pylist()[:3]
    assert ours._take_rows(addrs, columns=cols).equals(lance.dataset(uri)._take_rows(addrs, columns=cols))


def test_unknown_names_are_refused(uri):
    with pytest.raises(lancepy.exceptions.ColumnNotFoundError):
        lancepy.dataset(uri).to_table(columns=["s.nope"])
    with pytest.raises(lancepy.exceptions.ColumnNotFoundError):
        lancepy.dataset(uri).take([0], columns=["_rowidx"])


def test_disable_scoring_autoprojection(uri):
    ds = lancepy.dataset(uri)
    q = {"column": "vec", "q": [1.0, 1.0], "k": 5, "use_index": False}
    assert ds.to_table(nearest=q).schema.names == ["a", "s", "ls", "vec", "_distance"]
    assert ds.to_table(nearest=q, columns=["_rowid", "a"]).schema.names == ["_rowid", "a", "_distance"]
    assert ds.to_table(nearest=q, columns=["a"], disable_scoring_autoprojection=True).schema.names == ["a"]
    assert ds.to_table(nearest=q, with_row_id=True).schema.names[-2:] == ["_distance", "_rowid"]


def test_analyze_plan_reports_rows_scanned_and_io(uri):
    ds = lancepy.dataset(uri)
    n = ds.count_rows("a < 50")
    plan = ds.scanner(columns=["a"], filter="a < 50", use_scalar_index=False).analyze_plan()
    read = [line for line in plan.splitlines() if line.strip().startswith("LanceRead:")][0]
    assert f"output_rows={n}" in read and f"rows_scanned={ds.count_rows()}" in read
    assert "bytes_read=" in read and "requests=" in read


def test_plans_name_what_pylance_plans_name(uri, tmp_path):
    """explain_plan keeps lancepy's steps but names the facts pylance's text names, in a form
    the same greps find: the read's projection, the nprobes bounds of a vector search."""
    ds = lancepy.dataset(uri)
    for lib in (lance, lancepy):
        assert "projection=[a]" in lib.dataset(uri).scanner(columns=[], filter="a < 50", with_row_id=True).explain_plan(True)
    q = {"column": "vec", "q": [1.0, 1.0], "k": 3}
    assert "minimum_nprobes=7" in ds.scanner(nearest=dict(q, nprobes=7)).explain_plan()
    assert "maximum_nprobes=Some(7)" in ds.scanner(nearest=dict(q, nprobes=7)).explain_plan()
    plan = ds.scanner(nearest=dict(q, minimum_nprobes=7)).explain_plan()
    assert "minimum_nprobes=7" in plan and "maximum_nprobes=None" in plan
    assert "maximum_nprobes=Some(10)" in ds.scanner(nearest=dict(q, minimum_nprobes=7, maximum_nprobes=10)).explain_plan()


@pytest.mark.parametrize("extra", [{}, {"with_row_id": True}, {"filter": "a > 100"}, {"filter": "a > 100", "prefilter": True}])
def test_nearest_with_computed_columns_equals_pylance(uri, extra):
    """Expressions in a vector search's projection, ``_cast_list_f16`` among them: the
    expressions' columns, then ``_distance`` and the system columns asked for."""
    cols = {"twice": "a * 2", "v16": "_cast_list_f16(vec)", "sx": "s.x"}
    nearest = {"column": "vec", "q": [150.5, 1.0], "k": 7}
    ours = lancepy.dataset(uri).to_table(columns=cols, nearest=nearest, **extra)
    theirs = lance.dataset(uri).to_table(columns=cols, nearest=nearest, **extra)
    assert ours.schema.field("v16").type == pa.list_(pa.float16(), 2)
    assert ours == theirs


def test_cast_list_f16_takes_only_float_lists(uri):
    ds = lancepy.dataset(uri)
    assert ds.to_table(columns={"v": "_cast_list_f16(vec)"}) == lance.dataset(uri).to_table(columns={"v": "_cast_list_f16(vec)"})
    with pytest.raises(lancepy.exceptions.InvalidArgumentError, match="_cast_list_f16"):
        ds.to_table(columns={"v": "_cast_list_f16(a)"})
