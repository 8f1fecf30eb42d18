"""One fragment's reads against pylance 14 on generated cases: ``count_rows`` (with and
without a filter), ``to_table`` with columns, filter, limit and offset, ``take``, ``head``,
``scanner(with_row_id=True)``, ``to_batches`` and ``delete``, each on a random fragment of a
random dataset (vectors, nulls, deletions), the same case given to both libraries. Where
pylance refuses a case it is skipped; everywhere else the answers are equal."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Tuple

import numpy as np
import pyarrow as pa
import pytest

import lancepy

lance = pytest.importorskip("lance", reason="pylance (the reference implementation) is not installed")
pytestmark = pytest.mark.interop

CASES = 300
FILTERS = [None, "x > 50", "k < 0", "s = 'a'", "s IS NULL", "id % 2 = 0", "x IS NULL OR k = 1", "NOT (s = 'b')",
           "s NOT IN ('a', 'c')", "s NOT LIKE 'a%'"]
COLUMNS = [None, ["id"], ["x", "id"], ["s", "k"], ["v", "id"]]


def _table(rng: np.random.Generator, n: int) -> pa.Table:
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "x": pa.array(np.round(rng.random(n) * 100, 1), mask=rng.random(n) < 0.1),
        "k": pa.array(rng.integers(-5, 5, n), pa.int32()),
        "s": pa.array(rng.choice(np.array(["a", "b", "c", None], dtype=object), n)),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 2).astype(np.float32)), 2),
    })


def _answer(fn: Callable[[], Any]) -> Tuple[str, Any]:
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - compared between the libraries
        return "refused", type(e).__name__
    return "ok", out.to_pydict() if isinstance(out, pa.Table) else out


def _case(rng: np.random.Generator, root: Path) -> Tuple[str, Dict[str, Tuple[str, Any]]]:
    n, per = int(rng.integers(5, 40)), int(rng.choice([4, 10, 100]))
    t = _table(rng, n)
    deleted = f"k = {int(rng.integers(-5, 5))}" if rng.random() < 0.5 else None
    uris = {}
    for lib in (lancepy, lance):
        uris[lib] = str(root / lib.__name__)
        lib.write_dataset(t, uris[lib], max_rows_per_file=per)
        if deleted:
            lib.dataset(uris[lib]).delete(deleted)
    count = len(lancepy.dataset(uris[lancepy]).get_fragments())
    if not count:
        return "empty", {}
    which = int(rng.integers(0, count))
    flt = FILTERS[int(rng.integers(0, len(FILTERS)))]
    cols = COLUMNS[int(rng.integers(0, len(COLUMNS)))]
    limit = [None, 0, 1, 3, 100][int(rng.integers(0, 5))]
    offset = [None, 0, 1, 5][int(rng.integers(0, 4))]
    rows = sorted({int(i) for i in rng.integers(0, per, int(rng.integers(1, 5)))})
    kind = str(rng.choice(["count", "rows", "to_table", "take", "head", "scanner", "to_batches", "delete"]))

    def frag(lib: Any) -> Any:
        ds = lib.dataset(uris[lib])
        return ds.get_fragment(ds.get_fragments()[which].fragment_id)

    def deleted_rows(f: Any) -> Any:
        return None if f is None else (f.physical_rows, f.deletion_file is not None and f.deletion_file.num_deleted_rows)

    ops: Dict[str, Callable[[Any], Any]] = {
        "count": lambda lib: frag(lib).count_rows(flt),
        "rows": lambda lib: (frag(lib).physical_rows, frag(lib).num_deletions, frag(lib).count_rows()),
        "to_table": lambda lib: frag(lib).to_table(columns=cols, filter=flt, limit=limit, offset=offset),
        "take": lambda lib: frag(lib).take(rows, columns=cols),
        "head": lambda lib: frag(lib).head(limit or 2, columns=cols),
        "scanner": lambda lib: frag(lib).scanner(columns=cols, filter=flt, with_row_id=True).to_table(),
        "to_batches": lambda lib: pa.Table.from_batches(
            list(frag(lib).to_batches(batch_size=3, columns=cols or ["id", "x", "k", "s"], filter=flt))),
        "delete": lambda lib: deleted_rows(frag(lib).delete(flt or "k = 0")),
    }
    what = f"{kind} of fragment #{which} (filter={flt!r}, columns={cols}, limit={limit}, offset={offset}, rows={rows})"
    return what, {lib.__name__: _answer(lambda: ops[kind](lib)) for lib in (lancepy, lance)}


def test_fragment_reads_equal_pylance(tmp_path: Path) -> None:
    compared = 0
    for i in range(CASES):
        rng = np.random.default_rng(4200 + i)
        what, got = _case(rng, tmp_path / str(i))
        if not got or got["lance"][0] == "refused":
            continue
        compared += 1
        assert got["lancepy"] == got["lance"], f"case {i}: {what}\nlancepy {got['lancepy']}\npylance {got['lance']}"
    assert compared > CASES // 2
