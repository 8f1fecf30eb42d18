"""Upserts and updates: lancepy, pylance and Parquet on the same data, in one run.

`python benches/bench_mutations.py [--rows 1000000] [--source-rows 200000] [--repeats 5]`

The dataset: `--rows` rows of (id, x, s) in fragments of 100,000 rows. Each step runs on a fresh
copy of it (copying not timed), the variants interleaved round by round; the median is
printed, and each variant's result is checked against the others.

- upsert: `merge_insert("id").when_matched_update_all().when_not_matched_insert_all()` of
  `--source-rows` rows, half of them matching. Parquet has no upsert: its row is the same
  result made by hand with pyarrow (read the table, drop the matched keys, append the source,
  write it again).
- update: `update({"x": "x + 1"}, where="id % 100 = 0")` (1% of the rows). Parquet: read,
  compute, write again.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import lancepy  # noqa: E402


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "id": np.arange(rows, dtype=np.int64),
        "x": rng.normal(size=rows),
        "s": pa.array([f"s{i % 1000}" for i in range(rows)]),
    })


def _source(rows: int, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = np.concatenate([rng.choice(rows, n // 2, replace=False), np.arange(rows, rows + n - n // 2)])
    return pa.table({"id": keys.astype(np.int64), "x": rng.normal(size=n), "s": pa.array([f"new{i % 97}" for i in range(n)])})


def _parquet_upsert(path: str, source: pa.Table) -> None:
    t = pq.read_table(path)
    kept = t.filter(pc.invert(pc.is_in(t.column("id"), value_set=source.column("id"))))
    pq.write_table(pa.concat_tables([kept, source.cast(t.schema)]), path)


def _parquet_update(path: str) -> None:
    t = pq.read_table(path)
    hit = pc.equal(pc.remainder(t.column("id"), 100), 0)
    t = t.set_column(1, "x", pc.if_else(hit, pc.add(t.column("x"), 1.0), t.column("x")))
    pq.write_table(t, path)


def _summary(kind: str, path: str) -> Any:
    if kind == "parquet":
        t = pq.read_table(path, columns=["id", "x"])
    else:
        t = lancepy.dataset(path).to_table(columns=["id", "x"])
    return t.num_rows, round(float(pc.sum(t.column("x")).as_py()), 6), int(pc.sum(t.column("id")).as_py())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--source-rows", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--stable-row-ids", action="store_true",
                    help="datasets with stable row ids (the warm-up also checks each row's ids and versions equal)")
    args = ap.parse_args()
    import lance

    base = tempfile.mkdtemp(prefix="bench-mutations-")
    try:
        table = _table(args.rows, 0)
        seeds = {"lancepy": os.path.join(base, "lancepy"), "pylance": os.path.join(base, "pylance"),
                 "parquet": os.path.join(base, "seed.parquet")}
        stable = {"enable_stable_row_ids": True} if args.stable_row_ids else {}
        lancepy.write_dataset(table, seeds["lancepy"], max_rows_per_file=100_000, **stable)
        lance.write_dataset(table, seeds["pylance"], max_rows_per_file=100_000, **stable)
        pq.write_table(table, seeds["parquet"])
        source = _source(args.rows, args.source_rows, 1)

        def upsert(lib: Any) -> Callable[[str], Any]:
            return lambda u: lib.dataset(u).merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(source)

        def update(lib: Any) -> Callable[[str], Any]:
            return lambda u: lib.dataset(u).update({"x": "x + 1"}, where="id % 100 = 0")

        steps: Dict[str, Dict[str, Callable[[str], Any]]] = {
            f"upsert {args.source_rows:,} rows (half matching) into {args.rows:,}": {
                "lancepy": upsert(lancepy), "pylance": upsert(lance), "parquet": lambda p: _parquet_upsert(p, source)},
            f"update 1% of {args.rows:,} rows": {
                "lancepy": update(lancepy), "pylance": update(lance), "parquet": _parquet_update},
        }
        counter = iter(range(10**6))

        def fresh(kind: str) -> str:
            dst = os.path.join(base, f"run{next(counter)}" + (".parquet" if kind == "parquet" else ""))
            (shutil.copy if kind == "parquet" else shutil.copytree)(seeds[kind], dst)
            return dst

        print(f"rows={args.rows} source_rows={args.source_rows} repeats={args.repeats} stable_row_ids={args.stable_row_ids}")
        print(f"{'step':<52} {'lancepy':>9} {'pylance':>9} {'parquet':>9} {'lp/pl':>7} {'lp/pq':>7}")
        for name, variants in steps.items():
            results = {}
            lineage_paths = {}
            for kind, fn in variants.items():  # warm-up, and a check of the results
                path = lineage_paths[kind] = fresh(kind)
                fn(path)
                results[kind] = _summary(kind, path)
            assert len(set(results.values())) == 1, (name, results)
            if args.stable_row_ids:
                # The same row lineage: each row's created and last-updated versions, and the
                # ids of the rows that were there before (inserted rows are numbered in the
                # order each library writes them, pylance's following its join).
                lineage = ["id", "_rowid", "_row_created_at_version", "_row_last_updated_at_version"]
                got = [lancepy.dataset(lineage_paths[k]).to_table(columns=lineage).sort_by("id") for k in ("lancepy", "pylance")]
                assert got[0].drop_columns(["_rowid"]).equals(got[1].drop_columns(["_rowid"])), name
                old = [g.filter(pc.less(g.column("id"), args.rows)).column("_rowid") for g in got]
                assert old[0].equals(old[1]), name
            times: Dict[str, List[float]] = {k: [] for k in variants}
            for _ in range(args.repeats):  # interleaved rounds
                for kind, fn in variants.items():
                    path = fresh(kind)
                    t0 = time.perf_counter()
                    fn(path)
                    times[kind].append(time.perf_counter() - t0)
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"{name:<52} {med['lancepy']:>9.3f} {med['pylance']:>9.3f} {med['parquet']:>9.3f} "
                  f"{med['lancepy'] / med['pylance']:>7.2f} {med['lancepy'] / med['parquet']:>7.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
