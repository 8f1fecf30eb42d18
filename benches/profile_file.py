"""Runs one lancepy file operation in a loop, for a profiler to watch.

    python benches/bench_file.py --datasets tabular --keep-files      # writes benches/data/files/
    perf record -g -o perf.data -- \\
        python benches/profile_file.py benches/data/files/tabular-2.1-lancepy.lance take:1000 --seconds 10
    perf report -i perf.data --no-children --percent-limit 1 --stdio

Operations: ``scan`` (read_all), ``scan:COLUMN``, ``take:N`` (N random rows in random order,
a fresh set each time, as in bench_file.py), ``take-native:N`` (without ``.to_table()``),
``write:DATASET`` (writes the cached DATASET table to the given path),
``batches`` (to_batches).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# numpy's OpenBLAS threads (unused here) would otherwise spin on the 2 cores we measure.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from lancepy.file import LanceFileReader


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("path")
    p.add_argument("op")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--quick", action="store_true", help="with write:DATASET, the --quick size")
    args = p.parse_args()
    kind, _, arg = args.op.partition(":")

    if kind == "write":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_file

        spec = bench_file.SPECS[arg]
        table = bench_file.load_dataset(spec, spec.quick_rows if args.quick else spec.rows, bench_file.DATA_DIR)
        lib = bench_file.LancepyLib("2.1")
        op = lambda i: lib.write(table, args.path)  # noqa: E731
    else:
        r = LanceFileReader(args.path)
        n = r.num_rows()
        if kind == "scan":
            cols = [arg] if arg else None
            op = lambda i: r.read_all(columns=cols).to_table()  # noqa: E731
        elif kind == "batches":
            op = lambda i: sum(b.num_rows for b in r.to_batches())  # noqa: E731
        elif kind in ("take", "take-native"):
            size = int(arg)
            rng = np.random.default_rng(1234)
            pool = [rng.choice(n, size, replace=False).astype(np.int64) for _ in range(64)]
            if kind == "take":
                op = lambda i: r.take_rows(pool[i % 64]).to_table()  # noqa: E731
            else:
                op = lambda i: r.take_rows(pool[i % 64])  # noqa: E731
        else:
            sys.exit(f"unknown operation {args.op!r}")

    t0 = time.perf_counter()
    i = 0
    while time.perf_counter() - t0 < args.seconds:
        op(i)
        i += 1
    el = time.perf_counter() - t0
    print(f"{args.op}: {i} iterations, {el / i * 1e3:.3f} ms each", file=sys.stderr)


if __name__ == "__main__":
    main()
