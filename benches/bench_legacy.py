"""Legacy (v1) data files: lancepy vs pylance (vs Parquet) on the same data, in one run.

Measures (median of `--repeat` runs, warm page cache):
* write of the table as a legacy dataset (``data_storage_version="legacy"``);
* a full scan of every column, and of one numeric column;
* a take of 1,000 random rows (all columns);

each library reading the dataset pylance wrote (so lancepy is timed on pylance's files) and
the one lancepy wrote, plus Parquet (pyarrow) write and scan of the same table.

Run: ``python benches/bench_legacy.py [--rows N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import lance
import lancepy


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(0)
    return pa.table(
        {
            "id": np.arange(n, dtype=np.int64),
            "score": rng.random(n),
            "text": [f"caption number {i} about a thing" for i in range(n)],
            "tags": pa.array([[f"t{j}" for j in range(i % 4)] for i in range(n)], pa.list_(pa.string())),
            "cat": pa.array([["red", "green", "blue"][i % 3] for i in range(n)], pa.dictionary(pa.int8(), pa.string())),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 32, dtype=np.float32)), 32),
        }
    )


def median_s(fn: Callable[[], object], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    table = make_table(args.rows)
    root = Path(tempfile.mkdtemp(prefix="bench-legacy-"))
    try:
        def write(lib, name):
            def go():
                shutil.rmtree(root / name, ignore_errors=True)
                lib.write_dataset(table, root / name, data_storage_version="legacy")
            return go

        rows = []
        rows.append(("write (legacy dataset)", median_s(write(lancepy, "lp"), args.repeat),
                     median_s(write(lance, "pl"), args.repeat),
                     median_s(lambda: pq.write_table(table, root / "t.parquet"), args.repeat)))
        rng = random.Random(1)
        idx = sorted(rng.sample(range(args.rows), 1000))
        for files in ("pl", "lp"):
            ours, theirs = lancepy.dataset(root / files), lance.dataset(root / files)
            assert ours.to_table().equals(theirs.to_table())
            rows.append((f"scan all columns ({files} files)", median_s(ours.to_table, args.repeat),
                         median_s(theirs.to_table, args.repeat),
                         median_s(lambda: pq.read_table(root / "t.parquet"), args.repeat)))
            rows.append((f"scan id ({files} files)", median_s(lambda: ours.to_table(columns=["id"]), args.repeat),
                         median_s(lambda: theirs.to_table(columns=["id"]), args.repeat),
                         median_s(lambda: pq.read_table(root / "t.parquet", columns=["id"]), args.repeat)))
            rows.append((f"take 1000 rows ({files} files)", median_s(lambda: ours.take(idx), args.repeat),
                         median_s(lambda: theirs.take(idx), args.repeat), float("nan")))
        print(f"rows={args.rows} repeat={args.repeat}")
        print(f"{'seconds':36} {'lancepy':>9} {'pylance':>9} {'ratio':>6} {'parquet':>9}")
        for name, lp, pl, pa_ in rows:
            print(f"{name:36} {lp:9.4f} {pl:9.4f} {lp / pl:6.2f} {pa_:9.4f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
