"""Reads from several Python threads sharing one dataset object: correctness and throughput.

    python benches/threads.py [--rows 200000] [--tasks 240] [--threads 1,2,4,8]

A list of tasks (random ``take`` of 200 rows, filtered scans of a random id range, projected
scans with an offset and limit) is answered once on one thread: the reference. Then for
each thread count the same tasks run on a ThreadPoolExecutor, all threads sharing ONE
``lancepy.dataset(...)`` object (and, for comparison, one ``lance.dataset(...)`` object),
every answer compared with the reference. Prints tasks/s per thread count and the speed-up
over one thread, for each kind of task alone and for the mix. The native calls release the GIL, so the speed-up is bounded by the cores
(and by the Python-side work between the calls); `uptime` is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, List, Tuple

import pyarrow as pa


def make_table(n: int) -> pa.Table:
    import numpy as np

    rng = np.random.default_rng(0)
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "x": pa.array(rng.standard_normal(n)),
            "s": pa.array([f"row-{i}-{'z' * (i % 17)}" for i in range(n)]),
            "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 8).astype("float32")), 8),
        }
    )


def make_tasks(n_rows: int, n_tasks: int, seed: int = 1) -> List[Tuple[str, Any]]:
    rng = random.Random(seed)
    tasks: List[Tuple[str, Any]] = []
    for i in range(n_tasks):
        kind = ("take", "scan", "slice")[i % 3]
        if kind == "take":
            tasks.append((kind, sorted(rng.sample(range(n_rows), 200)) if i % 2 else rng.sample(range(n_rows), 200)))
        elif kind == "scan":
            a = rng.randrange(n_rows)
            tasks.append((kind, f"id >= {a} AND id < {a + 2000} AND x > 0"))
        else:
            tasks.append((kind, (rng.randrange(n_rows), 1000)))
    return tasks


def run_task(ds: Any, task: Tuple[str, Any]) -> pa.Table:
    kind, arg = task
    if kind == "take":
        return ds.take(arg)
    if kind == "scan":
        return ds.to_table(filter=arg)
    offset, limit = arg
    return ds.to_table(columns=["id", "s"], offset=offset, limit=limit)


def run_all(ds: Any, tasks: List[Tuple[str, Any]], threads: int) -> Tuple[float, List[pa.Table]]:
    t0 = time.perf_counter()
    if threads == 1:
        out = [run_task(ds, t) for t in tasks]
    else:
        with ThreadPoolExecutor(threads) as ex:
            out = list(ex.map(lambda t: run_task(ds, t), tasks))
    return time.perf_counter() - t0, out


def check(name: str, got: List[pa.Table], want: List[pa.Table]) -> int:
    bad = sum(not g.equals(w) for g, w in zip(got, want))
    if bad:
        print(f"  MISMATCH: {name}: {bad} of {len(want)} answers differ from the single-threaded ones")
    return bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--tasks", type=int, default=240)
    ap.add_argument("--threads", default="1,2,4,8")
    ap.add_argument("--repeat", type=int, default=2, help="best of N timed runs per thread count")
    args = ap.parse_args()

    import lance
    import lancepy

    uri = os.path.join(tempfile.mkdtemp(prefix="lancepy-threads-"), "t.lance")
    lancepy.write_dataset(make_table(args.rows), uri, max_rows_per_file=50_000)
    tasks = make_tasks(args.rows, args.tasks)
    ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
    _, reference = run_all(lancepy.dataset(uri), tasks, 1)
    _, their_ref = run_all(theirs, tasks, 1)
    mismatches = check("pylance vs lancepy (1 thread)", their_ref, reference)
    counts = [int(x) for x in args.threads.split(",")]
    print(f"{args.tasks} tasks on {args.rows} rows, one shared dataset object per library; tasks/s (speed-up over 1 thread)")
    for mix in ("take", "scan", "slice", "all"):
        idx = [i for i, t in enumerate(tasks) if mix in ("all", t[0])]
        some, want = [tasks[i] for i in idx], [reference[i] for i in idx]
        rate = {}
        for name, ds in (("lancepy", ours), ("pylance", theirs)):
            for n in counts:
                best = float("inf")
                for _ in range(args.repeat):
                    secs, got = run_all(ds, some, n)
                    mismatches += check(f"{name} {mix} {n} threads", got, want)
                    best = min(best, secs)
                rate[(name, n)] = len(some) / best
        for name in ("lancepy", "pylance"):
            line = ", ".join(f"{n} thr {rate[(name, n)]:.0f}/s (x{rate[(name, n)] / rate[(name, counts[0])]:.2f})" for n in counts)
            print(f"  {mix:5} {name}: {line}")
        line = ", ".join(f"{n} thr {rate[('lancepy', n)] / rate[('pylance', n)]:.2f}" for n in counts)
        print(f"  {mix:5} lancepy/pylance: {line}")
    print(f"  mismatches: {mismatches}; cores: {os.cpu_count()}; load average: {os.getloadavg()}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
