"""array_has_any / array_has_all with constant arrays and CURRENT_DATE in filters, against
pylance on generated cases (seeded): the same rows for every filter, NOT and IS NULL included."""

from __future__ import annotations

import datetime
import random

import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import InvalidArgumentError, NotSupportedError

WORDS = ["a", "b", "c", "d"]


def _lists(rng: random.Random, n: int, pool):
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.1:
            out.append(None)
        elif r < 0.2:
            out.append([])
        else:
            out.append([rng.choice(pool + [None]) if rng.random() < 0.9 else None for _ in range(rng.randint(1, 4))])
    return out


@pytest.fixture(scope="module")
def both(tmp_path_factory, pylance):
    rng = random.Random(7)
    n = 300
    t = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array(_lists(rng, n, WORDS), pa.list_(pa.string())),
        "i": pa.array(_lists(rng, n, [1, 2, 3, 40]), pa.list_(pa.int32())),
        "big": pa.array(_lists(rng, n, [5, 6, 7]), pa.large_list(pa.int64())),
    })
    path = str(tmp_path_factory.mktemp("arrsets") / "d.lance")
    lancepy.write_dataset(t, path, max_rows_per_file=120)
    return lancepy.dataset(path), pylance.dataset(path)


def _ids(ds, f):
    return sorted(ds.to_table(columns=["id"], filter=f).column("id").to_pylist())


def test_generated_filters_match_pylance(both):
    ours, theirs = both
    rng = random.Random(11)
    pools = {"s": ["'a'", "'b'", "'c'", "'z'", "NULL"], "i": ["1", "2", "40", "9", "NULL"], "big": ["5", "7", "8", "NULL"]}
    checked = 0
    for _ in range(400):
        col = rng.choice(list(pools))
        elements = ", ".join(rng.choice(pools[col]) for _ in range(rng.randint(0, 3)))
        fn = rng.choice(["array_has_any", "array_has_all"])
        spelled = rng.choice([f"Array[{elements}]", f"[{elements}]"] + ([f"make_array({elements})"] if elements else []))
        f = f"{fn}({col}, {spelled})"
        f = rng.choice([f, f"NOT {f}", f"({f}) IS NULL", f"{f} AND id % 2 = 0", f"{f} OR id < 10"])
        assert _ids(ours, f) == _ids(theirs, f), f
        checked += 1
    assert checked == 400


def test_current_date_and_errors(tmp_path, pylance):
    today = datetime.datetime.now(datetime.timezone.utc).date()
    days = [today - datetime.timedelta(days=1), today, today + datetime.timedelta(days=1), None]
    path = str(tmp_path / "dates.lance")
    lancepy.write_dataset(pa.table({"id": [0, 1, 2, 3], "d": pa.array(days, pa.date32())}), path)
    ours, theirs = lancepy.dataset(path), pylance.dataset(path)
    for f in ("d = CURRENT_DATE", "d < current_date()", "d >= CURRENT_DATE", "NOT (d = CURRENT_DATE)"):
        assert _ids(ours, f) == _ids(theirs, f), f
    lists = str(tmp_path / "lists.lance")
    lancepy.write_dataset(pa.table({"s": pa.array([["a"]], pa.list_(pa.string())), "x": [1], "f": pa.array([[1.5]])}), lists)
    ds = lancepy.dataset(lists)
    with pytest.raises(InvalidArgumentError, match="needs a list"):
        ds.to_table(filter="array_has_any(x, Array[1])")
    with pytest.raises(NotSupportedError, match="constant array"):
        ds.to_table(filter="array_has_any(s, s)")
    with pytest.raises(NotSupportedError, match="constant array elements"):
        ds.to_table(filter="array_has_all(s, Array[x])")
    with pytest.raises(NotSupportedError, match="floats"):
        ds.to_table(filter="array_has_any(f, Array[1.5])")
    with pytest.raises((NotSupportedError, InvalidArgumentError)):
        ds.to_table(filter="array_has_any(s, Array[1])")  # pylance: a cast error


def test_array_length_and_array_empty_match_pylance(both, tmp_path, pylance):
    """``array_length`` / ``list_length`` (UInt64, NULL for a NULL list) and ``array_empty`` /
    ``empty`` on list, large-list, nested and fixed-size lists: rows and projected values."""
    ours, theirs = both
    rng = random.Random(12)
    for _ in range(200):
        col = rng.choice(["s", "i", "big"])
        fn = rng.choice(["array_length", "list_length", "array_empty", "empty", "array_length"])
        if fn in ("array_empty", "empty"):
            f = rng.choice([f"{fn}({col})", f"NOT {fn}({col})", f"{fn}({col}) IS NULL"])
        else:
            arg = rng.choice([col, col, f"{col}, 1"]) if fn == "array_length" else col
            f = f"{fn}({arg}) {rng.choice(['=', '<', '>=', '!='])} {rng.randint(0, 4)}"
            f = rng.choice([f, f"NOT ({f})", f"{fn}({col}) IS NULL", f"{f} OR id < 10"])
        assert _ids(ours, f) == _ids(theirs, f), f
    projected = {"n": "array_length(i)", "m": "list_length(big)", "e": "array_empty(s)"}
    assert ours.to_table(columns=projected) == theirs.to_table(columns=projected)

    path = str(tmp_path / "shapes.lance")
    lancepy.write_dataset(pa.table({
        "id": pa.array(range(4), pa.int64()),
        "nested": pa.array([[[1], [2, 3]], [], None, [[]]], pa.list_(pa.list_(pa.int32()))),
        "fixed": pa.array([[1, 2], [3, None], None, [0, 0]], pa.list_(pa.int64(), 2)),
        "x": pa.array([1, 2, 3, 4], pa.int64()),
    }), path)
    ours, theirs = lancepy.dataset(path), pylance.dataset(path)
    for f in ("array_length(nested) = 2", "array_length(nested) = 0", "array_empty(nested)", "array_length(fixed) = 2",
              "array_length(fixed) IS NULL", "NOT array_empty(fixed)"):
        assert _ids(ours, f) == _ids(theirs, f), f
    with pytest.raises(InvalidArgumentError, match="needs a list"):
        ours.to_table(filter="array_length(x) = 1")
    with pytest.raises(NotSupportedError, match="dimension"):
        ours.to_table(filter="array_length(nested, 2) = 1")  # (a nested dimension: not built)
