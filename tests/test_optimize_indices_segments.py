"""Which segments ``optimize_indices`` merges, against pylance 14 on twin datasets.

pylance merges the last ``num_indices_to_merge`` segments of a scalar index (default one)
with the rows of fragments no segment covers, leaves the others as they are, keeps the
oldest dataset version of the merged segments, and rewrites nothing when there are no new
rows and at most one trailing segment; under stable row ids older segments covering a
fragment with deleted rows are merged too. Each case runs the same steps on a dataset of
each library and compares the version reached, the segments (fragments covered, dataset
version) and filtered reads through the index.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pytest

import lancepy

lance = pytest.importorskip("lance")

N = 200

STEPS: Dict[str, Tuple[List[Tuple[Any, ...]], Optional[int]]] = {
    "nothing new": ([], None),
    "new rows": ([("append",)], None),
    "two segments": ([("append",), ("delta",)], None),
    "two segments, new rows": ([("append",), ("delta",), ("append",)], None),
    "three segments, new rows, merge 1": ([("append",), ("delta",), ("append",), ("delta",), ("append",)], 1),
    "three segments, new rows, merge 2": ([("append",), ("delta",), ("append",), ("delta",), ("append",)], 2),
    "three segments, merge 1": ([("append",), ("delta",), ("append",), ("delta",)], 1),
    "three segments, merge 2": ([("append",), ("delta",), ("append",), ("delta",)], 2),
    "merge 0, nothing new": ([], 0),
    "fragment deleted, new rows": ([("delete", "a < 200")], None),
    "two segments, a row deleted": ([("append",), ("delta",), ("delete", "a = 5")], None),
    "two segments, a row deleted, new rows": ([("append",), ("delta",), ("delete", "a = 5"), ("append",)], None),
}

KINDS = {"BTREE": ("a", "a < 300"), "BITMAP": ("k", "k = 'k3'"), "INVERTED": ("s", None)}


def _rows(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table({
        "a": pa.array(ids, pa.int64()),
        "k": [f"k{i % 7}" for i in ids],
        "s": [f"w{i % 5} x{i % 3}" for i in ids],
    })


def _segments(uri: str) -> List[Tuple[List[int], int]]:
    return [(sorted(e["fragment_ids"]), e["dataset_version"]) for e in lancepy.dataset(uri)._index_entries()]


def _run(lib: Any, uri: str, kind: str, steps: List[Tuple[Any, ...]], merge: Optional[int], stable: bool) -> None:
    lib.write_dataset(_rows(0, 3 * N), uri, max_rows_per_file=N, enable_stable_row_ids=stable)
    lib.dataset(uri).create_scalar_index(KINDS[kind][0], kind)
    written = 3 * N
    for step in steps:
        if step[0] == "append":
            lib.write_dataset(_rows(written, N), uri, mode="append")
            written += N
        elif step[0] == "delta":
            lib.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
        else:
            lib.dataset(uri).delete(step[1])
    kwargs = {} if merge is None else {"num_indices_to_merge": merge}
    lib.dataset(uri).optimize.optimize_indices(**kwargs)


CASES = [(k, c, False) for k in KINDS for c in STEPS] + [(k, c, True) for k in ("BTREE", "INVERTED") for c in STEPS]


@pytest.mark.parametrize("kind,case,stable", CASES, ids=[f"{k}-{c}-{'stable' if s else 'plain'}" for k, c, s in CASES])
def test_segments_merged_as_pylance_merges_them(tmp_path: Any, kind: str, case: str, stable: bool) -> None:
    steps, merge = STEPS[case]
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _run(lancepy, ours, kind, steps, merge, stable)
    _run(lance, theirs, kind, steps, merge, stable)
    assert lancepy.dataset(ours).version == lance.dataset(theirs).version
    assert _segments(ours) == _segments(theirs)
    column, flt = KINDS[kind]
    for uri in (ours, theirs):
        ds = lancepy.dataset(uri)
        if flt is not None:
            want = ds.to_table(filter=flt, use_scalar_index=False).sort_by("a")
            assert ds.to_table(filter=flt).sort_by("a").equals(want)
            assert lance.dataset(uri).to_table(filter=flt).sort_by("a").equals(want)
        else:
            got = ds.to_table(full_text_query="w3", columns=["a"]).sort_by("a")
            want = lance.dataset(uri).to_table(full_text_query="w3", columns=["a"]).sort_by("a")
            assert got["a"].equals(want["a"])
            assert got.num_rows == ds.count_rows("s LIKE 'w3 %'")
