"""Scans, filtered scans and filtered counts: two builds of lancepy side by side (interleaved).

    python benches/bench_scan_ab.py --baseline /path/to/old/checkout/python \\
        --dataset /tmp/meta-bench/ds1k.lance --dataset /tmp/meta-bench/ds10k.lance [--rounds 5]

`--baseline` is a ``python`` folder holding another build of the ``lancepy`` package (a
worktree of an older commit with its compiled extension copied in); the current build is the
one Python imports by default. Each `--dataset` needs a float64 column ``x`` (what
``benches/bench_metadata.py --dir`` writes: many fragments of 100 rows), and without one
``--rows`` rows are written to a temporary dataset of one fragment. Each round runs both
builds in fresh processes, one after the other (load from other work hits both), and prints
the best of ``--calls`` calls per case in milliseconds; the summary is the median over rounds
and current / baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List

_CHILD = r"""
import json, sys, time
import lancepy as L
uri, calls = sys.argv[1], int(sys.argv[2])
def best(f):
    ts = []
    for _ in range(calls):
        ds = L.dataset(uri)  # (a fresh dataset each call: no per-version cache carried over)
        t0 = time.perf_counter(); f(ds); ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3
out = {
    "to_table()": best(lambda ds: ds.to_table()),
    "count_rows(x > 0.5)": best(lambda ds: ds.count_rows("x > 0.5")),
    "to_table(x > 0.5)": best(lambda ds: ds.to_table(filter="x > 0.5")),
    "to_batches(x > 0.5)": best(lambda ds: sum(b.num_rows for b in ds.to_batches(filter="x > 0.5"))),
    "scanner(limit=100, x > 0.5)": best(lambda ds: ds.scanner(filter="x > 0.5", limit=100).to_table()),
}
print(json.dumps(out))
"""


def _one_fragment(rows: int) -> str:
    import numpy as np
    import pyarrow as pa

    import lancepy

    rng = np.random.default_rng(0)
    uri = os.path.join(tempfile.mkdtemp(prefix="bench_scan_ab_"), "one.lance")
    table = pa.table({"id": np.arange(rows), "x": rng.random(rows), "s": [f"s{i % 1000}" for i in range(rows)]})
    lancepy.write_dataset(table, uri)
    return uri


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="python folder of the other build")
    ap.add_argument("--dataset", action="append", default=[], help="a dataset with a float64 column x (repeatable)")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the one-fragment dataset written when no --dataset")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=5)
    args = ap.parse_args()
    datasets = args.dataset or [_one_fragment(args.rows)]
    results: Dict[str, Dict[str, Dict[str, List[float]]]] = {}
    for r in range(args.rounds):
        for uri in datasets:
            for name, path in (("baseline", args.baseline), ("current", None)):
                env = dict(os.environ)
                if path:
                    env["PYTHONPATH"] = path
                out = subprocess.run([sys.executable, "-c", _CHILD, uri, str(args.calls)], env=env,
                                     capture_output=True, text=True)
                if out.returncode:
                    sys.exit(out.stderr[-2000:])
                got = json.loads(out.stdout)
                for case, ms in got.items():
                    results.setdefault(uri, {}).setdefault(case, {}).setdefault(name, []).append(ms)
                print(f"round {r + 1} {os.path.basename(uri)} {name:<9} "
                      + " | ".join(f"{k} {v:.2f}" for k, v in got.items()), flush=True)
    print()
    print(f"{'dataset':<14} {'case':<30} {'baseline ms':>12} {'current ms':>11} {'cur/base':>9}")
    for uri, cases in results.items():
        for case, by in cases.items():
            b, c = statistics.median(by["baseline"]), statistics.median(by["current"])
            print(f"{os.path.basename(uri):<14} {case:<30} {b:12.2f} {c:11.2f} {c / b:9.2f}")


if __name__ == "__main__":
    main()
