"""Filtered scans: lancepy vs pylance vs Parquet (pyarrow.dataset) on the same data.

``python benches/bench_filter.py [--rows 1000000]``: rows of (id int64, x float64, s string,
v 16 x float32), written by each library (Parquet: pyarrow defaults); ``to_table(filter=...)``
at several selectivities, every column projected, best of ``--repeats`` warm runs; lancepy also
with ``late_materialization=False`` (every column read for every row, then filtered).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

import lance
import lancepy


def best(fn, repeats: int) -> float:
    out = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    n = args.rows
    rng = np.random.default_rng(0)
    table = pa.table({
        "id": np.arange(n, dtype=np.int64),
        "x": rng.standard_normal(n),
        "s": [f"row-{i}-{'z' * (i % 17)}" for i in range(n)],
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 16).astype(np.float32)), 16),
    })
    d = tempfile.mkdtemp(prefix="bench-filter-")
    try:
        lancepy.write_dataset(table, f"{d}/lancepy.lance", max_rows_per_file=n // 4)
        lance.write_dataset(table, f"{d}/pylance.lance", max_rows_per_file=n // 4)
        os.makedirs(f"{d}/pq")
        for i in range(4):
            pq.write_table(table.slice(i * n // 4, n // 4), f"{d}/pq/{i}.parquet")
        ours, theirs = lancepy.dataset(f"{d}/lancepy.lance"), lance.dataset(f"{d}/pylance.lance")
        par = pads.dataset(f"{d}/pq")
        filters = {
            "one row (id = 777)": ("id = 777", pads.field("id") == 777),
            "0.01% (id range, x > 0)": (f"id >= {n // 2} AND id < {n // 2 + n // 5000} AND x > 0",
                                        (pads.field("id") >= n // 2) & (pads.field("id") < n // 2 + n // 5000) & (pads.field("x") > 0)),
            "1% (x > 2.33)": ("x > 2.33", pads.field("x") > 2.33),
            "50% (x > 0)": ("x > 0", pads.field("x") > 0),
            "100% (id >= 0)": ("id >= 0", pads.field("id") >= 0),
        }
        print(f"# {n:,} rows (id, x, s, v[16]) in 4 files; best of {args.repeats}; load average {os.getloadavg()[0]:.2f}")
        print("| filter | rows | lancepy ms | lancepy, late_materialization=False ms | pylance ms | Parquet ms | lancepy ÷ pylance | lancepy ÷ Parquet |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, (sql, expr) in filters.items():
            a = ours.to_table(filter=sql)
            assert a.equals(theirs.to_table(filter=sql)), name
            t_ours = best(lambda: ours.to_table(filter=sql), args.repeats)
            t_plain = best(lambda: ours.to_table(filter=sql, late_materialization=False), args.repeats)
            t_theirs = best(lambda: theirs.to_table(filter=sql), args.repeats)
            t_par = best(lambda: par.to_table(filter=expr), args.repeats)
            print(f"| {name} | {a.num_rows:,} | {t_ours * 1e3:.1f} | {t_plain * 1e3:.1f} | {t_theirs * 1e3:.1f} | {t_par * 1e3:.1f} | "
                  f"{t_theirs / t_ours:.2f}× | {t_par / t_ours:.2f}× |", flush=True)
        print(f"# load average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
