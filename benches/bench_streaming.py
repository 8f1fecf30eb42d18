"""Streaming write: time and peak memory of writing a stream larger than memory should need.

Each library runs in a fresh subprocess that generates batches of `id` + a `dim`-d float32
embedding on the fly (never holding the stream) and writes them with `write_dataset`; the
child reports wall time and its peak RSS (ru_maxrss). Repetitions alternate the libraries.

    python benches/bench_streaming.py                # 983,040 rows x 768 (2.9 GB), 3 repetitions
    python benches/bench_streaming.py --rows 200000 --reps 1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time
import numpy as np, pyarrow as pa
lib, uri, rows, dim = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
bs = 8192
schema = pa.schema([("id", pa.int64()), ("emb", pa.list_(pa.float32(), dim))])
block = np.random.default_rng(0).random(bs * dim, dtype=np.float32)
def batches():
    for s in range(0, rows, bs):
        n = min(bs, rows - s)
        vals = pa.array(block[: n * dim] + np.float32(s))
        yield pa.record_batch([pa.array(np.arange(s, s + n)), pa.FixedSizeListArray.from_arrays(vals, dim)], schema=schema)
if lib == "lancepy":
    import lancepy as mod
else:
    import lance as mod
reader = pa.RecordBatchReader.from_batches(schema, batches())
t = time.perf_counter()
mod.write_dataset(reader, uri)
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(lib: str, root: str, rows: int, dim: int) -> dict:
    uri = os.path.join(root, f"{lib}.lance")
    shutil.rmtree(uri, ignore_errors=True)
    out = subprocess.run([sys.executable, "-c", CHILD, lib, uri, str(rows), str(dim)], capture_output=True, text=True, check=True)
    shutil.rmtree(uri, ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=983_040)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where the datasets are written (default: a temporary directory)")
    args = ap.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="bench_streaming_")
    results: dict = {"lancepy": [], "pylance": []}
    for _ in range(args.reps):
        for lib in ("lancepy", "pylance"):
            results[lib].append(run(lib, root, args.rows, args.dim))
    gb = args.rows * args.dim * 4 / 1e9
    print(f"stream: {args.rows:,} rows x {args.dim}-d float32 + int64 id ({gb:.2f} GB), medians of {args.reps}; load {os.getloadavg()}")
    print("| library | write s | MB/s | peak RSS MB |")
    print("|---|---:|---:|---:|")
    med = {}
    for lib, rs in results.items():
        s = statistics.median(r["seconds"] for r in rs)
        m = statistics.median(r["peak_rss_mb"] for r in rs)
        med[lib] = (s, m)
        print(f"| {lib} | {s:.2f} | {gb * 1000 / s:,.0f} | {m:,.0f} |")
    (ls, lm), (ps, pm) = med["lancepy"], med["pylance"]
    print(f"speed lancepy/pylance: {ps / ls:.2f}x (goal >= 1.5x); peak RSS pylance/lancepy: {pm / lm:.2f}x (goal >= 1x)")


if __name__ == "__main__":
    main()
