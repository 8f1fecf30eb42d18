"""Warm takes and scans, two builds of lancepy side by side (interleaved runs).

    python benches/bench_take_ab.py --dataset benches/data/cold_200000x768_4.lance \\
        --baseline /path/to/old/checkout/python [--rounds 3]

`--baseline` is a ``python`` folder holding another build of the ``lancepy`` package (a
worktree of an older commit with its compiled extension copied in); the current build is the
one Python imports by default. Each round runs both in fresh processes, one after the other,
and prints the 10th percentile of many calls for each case (the dataset must have a `vec`
fixed-size-list column and a `label` column; ``benches/bench_cold.py`` writes one).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

_CHILD = r"""
import sys, time, numpy as np
import lancepy as L
ds = L.dataset(sys.argv[1])
n = ds.count_rows()
rng = np.random.default_rng(1)
def p10(f, calls):
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    return np.percentile(ts, 10) * 1e3
batches = [rng.choice(n, 1024, replace=False).tolist() for _ in range(50)]
out = {}
out["take 1 row"] = p10(lambda: ds.take([int(rng.integers(n))], columns=["vec", "label"]), 2000)
for cols in (["vec"], ["vec", "label"]):
    it = iter(batches * 20)
    out["take 1024 unsorted " + "+".join(cols)] = p10(lambda: ds.take(next(it), columns=cols), 500)
out["scan label"] = p10(lambda: ds.to_table(columns=["label"]), 50)
print(" | ".join(f"{k} {v:.3f} ms" for k, v in out.items()))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--baseline", required=True, help="python folder of the other build")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    for r in range(args.rounds):
        for name, path in (("baseline", args.baseline), ("current", None)):
            env = dict(os.environ)
            if path:
                env["PYTHONPATH"] = path
            out = subprocess.run([sys.executable, "-c", _CHILD, args.dataset], env=env, capture_output=True, text=True)
            if out.returncode:
                sys.exit(out.stderr[-2000:])
            print(f"round {r + 1} {name:<9} {out.stdout.strip()}")


if __name__ == "__main__":
    main()
