"""Seeded sequences of appends, deletes, index merges and compactions over BITMAP, LABEL_LIST
and BTREE indices (built by lancepy or pylance): after every step, random filters answered
through the indices equal the unindexed scan, lancepy's and pylance's (the oracle) on the
same files. The merges are the streamed / key-by-key ones of ``_ops/extsort``."""

from __future__ import annotations

from typing import Any, List

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from conftest import assert_tables_equal

lance = pytest.importorskip("lance")

SEEDS = range(24)


def _rows(rng: np.random.Generator, start: int, n: int) -> pa.Table:
    cat = pa.array(rng.integers(0, 12, n), pa.int64(), mask=rng.random(n) < 0.05)
    tags: List[Any] = []
    for _ in range(n):
        if rng.random() < 0.06:
            tags.append(None)
        else:
            tags.append([None if rng.random() < 0.03 else f"t{v}" for v in rng.integers(0, 15, rng.integers(0, 4))])
    key = pa.array(rng.integers(-50, 50, n), pa.int64(), mask=rng.random(n) < 0.05)
    return pa.table({"id": np.arange(start, start + n), "cat": cat, "tags": pa.array(tags, pa.list_(pa.string())), "key": key})


def _filter(rng: np.random.Generator) -> str:
    c = int(rng.integers(0, 12))
    t = [f"'t{int(v)}'" for v in rng.integers(0, 15, int(rng.integers(1, 3)))]
    k = int(rng.integers(-50, 50))
    return str(rng.choice([
        f"cat = {c}", f"cat IN ({c}, {(c + 5) % 12})", "cat IS NULL", f"cat >= {c}", f"NOT (cat = {c})",
        f"array_has_any(tags, [{', '.join(t)}])", f"array_has_all(tags, [{', '.join(t)}])", "tags IS NULL",
        f"key < {k}", f"key BETWEEN {k} AND {k + 10}", "key IS NULL", f"cat = {c} AND key > {k}",
        f"array_has_any(tags, [{t[0]}]) OR cat = {c}",
    ]))


def _check(uri: str, rng: np.random.Generator, step: str) -> None:
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    for _ in range(4):
        flt = _filter(rng)
        scan = ours.to_table(filter=flt, use_scalar_index=False, with_row_address=True).sort_by("_rowaddr")
        assert_tables_equal(scan, ours.to_table(filter=flt, with_row_address=True).sort_by("_rowaddr"), f"{step}: {flt}")
        assert_tables_equal(scan, theirs.to_table(filter=flt, with_row_address=True).sort_by("_rowaddr"), f"{step}: {flt} (pylance)")


@pytest.mark.parametrize("seed", SEEDS)
def test_index_merges_over_random_sequences(tmp_path: Any, seed: int, monkeypatch: Any) -> None:
    from lancepy._ops import bitmap as _bitmap
    from lancepy._ops import btree as _btree

    in_memory: List[str] = []  # (every merge here streams: the in-memory merge is a fallback)
    for mod in (_bitmap, _btree):
        extend = mod.extend
        monkeypatch.setattr(mod, "extend", lambda *a, _e=extend, _m=mod.__name__, **k: (
            in_memory.append(_m) if a[-1] else None) or _e(*a, **k))
    rng = np.random.default_rng(seed)
    uri = str(tmp_path / "ds")
    n = 0
    size = int(rng.integers(300, 900))
    lance.write_dataset(_rows(rng, n, size), uri, max_rows_per_file=int(rng.integers(100, 400)))
    n += size
    builder = lancepy if seed % 2 == 0 else lance
    for column, kind in (("cat", "BITMAP"), ("tags", "LABEL_LIST"), ("key", "BTREE")):
        builder.dataset(uri).create_scalar_index(column, kind)
    _check(uri, rng, "built")
    for step in range(6):
        op = str(rng.choice(["append", "append", "delete", "merge", "merge_none", "compact"]))
        ds = lancepy.dataset(uri)
        if op == "append":
            size = int(rng.integers(20, 300))
            lancepy.write_dataset(_rows(rng, n, size), uri, mode="append", max_rows_per_file=int(rng.integers(50, 200)))
            n += size
        elif op == "delete":
            ds.delete(f"id % {int(rng.integers(3, 9))} = {int(rng.integers(0, 3))} OR id < {int(rng.integers(0, n // 4 + 1))}")
        elif op == "merge":
            ds.optimize.optimize_indices()
        elif op == "merge_none":
            ds.optimize.optimize_indices(num_indices_to_merge=0)  # (a new segment beside the old)
        else:
            ds.optimize.compact_files(target_rows_per_fragment=int(rng.integers(200, 800)))
        _check(uri, rng, f"step {step} ({op})")
    lancepy.dataset(uri).optimize.optimize_indices()
    _check(uri, rng, "final merge")
    lance.dataset(uri).validate()
    assert in_memory == []
