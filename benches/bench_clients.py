"""DuckDB over a lancepy dataset vs over pylance's vs over Parquet (DuckDB's own reader).

    python benches/bench_clients.py [--rows 50000] [--reps 5]

One table (id int64, s string of 8 values, x float64, vec 768-d float32), written once by
pylance (one Lance dataset both libraries open) and once as Parquet. Queries, each through
DuckDB's replacement scan of the dataset object (or ``read_parquet``): an aggregate
(``GROUP BY s``), a selective filter (about 1% of the rows), and a projection of one small
column. Median of `reps` runs, warm page cache; ratios are pylance's time / lancepy's
(> 1: lancepy faster) and Parquet's time / lancepy's. The bytes lancepy read per query
(``lancepy.io_counts``) are printed too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import duckdb
import lance
import lancepy
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

QUERIES = {
    "aggregate (GROUP BY s)": "SELECT s, count(*), sum(id), min(x), max(x) FROM {src} GROUP BY s ORDER BY s",
    "selective filter (~1%)": "SELECT id, x FROM {src} WHERE id % 100 = 7 AND x > 0 ORDER BY id",
    "filter pushed (s = 'k3')": "SELECT count(*), max(x), sum(id) FROM {src} WHERE s = 'k3'",
    "one small column": "SELECT sum(id) FROM {src}",
}


def _median(fn, reps: int) -> float:
    fn()  # warm: page cache, footers
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "s": pa.array([f"k{i}" for i in rng.integers(0, 8, n)]),
        "x": pa.array(rng.normal(size=n)),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 768).astype(np.float32)), 768),
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp()
    table = _table(args.rows)
    uri, parquet = os.path.join(tmp, "t.lance"), os.path.join(tmp, "t.parquet")
    lance.write_dataset(table, uri, max_rows_per_file=10_000)
    pq.write_table(table, parquet, row_group_size=10_000)
    del table
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    print(f"rows {args.rows}, load average before: {os.getloadavg()}")
    print("| query | lancepy | pylance | Parquet | pylance/lancepy | Parquet/lancepy | lancepy bytes read |")
    print("|---|---|---|---|---|---|---|")
    for name, sql in QUERIES.items():
        con = duckdb.connect()

        def run(ds, sql=sql, con=con):  # the replacement scan finds `ds` in this frame
            return con.sql(sql.format(src="ds")).fetchall()

        want = con.sql(sql.format(src=f"read_parquet('{parquet}')")).fetchall()
        assert run(ours) == run(theirs) == want, name
        before = lancepy.io_counts()
        run(ours)
        after = lancepy.io_counts()
        read = after["bytes"] - before["bytes"] + after["mapped_bytes"] - before["mapped_bytes"]
        t_ours = _median(lambda: run(ours), args.reps)
        t_theirs = _median(lambda: run(theirs), args.reps)
        t_pq = _median(lambda: con.sql(sql.format(src=f"read_parquet('{parquet}')")).fetchall(), args.reps)
        print(f"| {name} | {t_ours * 1e3:.1f} ms | {t_theirs * 1e3:.1f} ms | {t_pq * 1e3:.1f} ms | "
              f"{t_theirs / t_ours:.2f}× | {t_pq / t_ours:.2f}× | {read / 1e6:.2f} MB |")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
