"""What per-dataset I/O statistics cost: a dataset method run with its tracker current
(as every call is) against the same function unwrapped (``__wrapped__``), interleaved, best
of many rounds; pylance's take on the same data for scale.

    python benches/bench_io_tracking.py [--rows 200000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import tempfile
import timeit

import numpy as np
import pyarrow as pa

import lancepy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    import lance

    n = args.rows
    rng = np.random.default_rng(0)
    t = pa.table({"vec": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 768, dtype=np.float32)), 768),
                  "label": pa.array(np.arange(n))})
    uri = tempfile.mkdtemp() + "/d.lance"
    ds = lancepy.write_dataset(t, uri, max_rows_per_file=max(n // 4, 1))
    theirs = lance.dataset(uri)
    one = [n // 2]
    many = sorted(rng.choice(n, 1024, replace=False).tolist())
    raw = lancepy.LanceDataset.take.__wrapped__
    print(f"{n:,} rows x (768-d float32 + int64), 4 files; microseconds per call, best of {args.rounds} rounds")
    print(f"{'case':28} {'tracked':>9} {'untracked':>10} {'ratio':>7} {'pylance':>9}")
    for name, rows, number in (("take 1 row", one, 3000), ("take 1024 rows vec+label", many, 200)):
        w, u, p = [], [], []
        for _ in range(args.rounds):
            w.append(min(timeit.repeat(lambda: ds.take(rows), number=number, repeat=3)) / number * 1e6)
            u.append(min(timeit.repeat(lambda: raw(ds, rows), number=number, repeat=3)) / number * 1e6)
            p.append(min(timeit.repeat(lambda: theirs.take(rows), number=max(number // 10, 1), repeat=3)) / max(number // 10, 1) * 1e6)
        print(f"{name:28} {min(w):9.2f} {min(u):10.2f} {min(w) / min(u):7.3f} {min(p):9.2f}")


if __name__ == "__main__":
    main()
