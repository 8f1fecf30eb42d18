"""Commit cost at many fragments: one-row appends, deletes and updates, lancepy vs pylance.

    python benches/bench_metadata.py --fragments 10000 --versions 100 --dir /tmp/meta-bench/ds10k.lance
    python benches/bench_commit.py --dataset /tmp/meta-bench/ds10k.lance [--repeat 5]

`--dataset` is a dataset with columns ``x`` (float64) and ``id`` (int64), such as
``bench_metadata.py --dir`` writes (many fragments of 100 rows). Each library works on its
own copy, in a process of its own; each call opens the dataset afresh (not timed) and
commits one version: an append of one row, a delete of one row (``id = k``), an update of
one row. Prints the best of `--repeat` calls in milliseconds and lancepy's speed relative
to pylance (pylance time / lancepy time; above 1 means lancepy is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, sys, time
import pyarrow as pa
lib, uri, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
L = __import__("lancepy" if lib == "lancepy" else "lance")
schema = L.dataset(uri).schema
row = pa.table({f.name: pa.array([0.5 if pa.types.is_floating(f.type) else -1], f.type) for f in schema})
def best(op):
    ts = []
    for i in range(repeat):
        ds = L.dataset(uri)
        t0 = time.perf_counter(); op(ds, i); ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3
out = {
    "append 1 row": best(lambda ds, i: L.write_dataset(row, uri, mode="append")),
    "delete 1 row": best(lambda ds, i: ds.delete(f"id = {7 * i + 3}")),
    "update 1 row": best(lambda ds, i: ds.update({"x": "0.25"}, where=f"id = {7 * i + 500}")),
}
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bench_commit_")
    try:
        got = {}
        for lib in ("lancepy", "pylance"):
            uri = os.path.join(root, lib + ".lance")
            shutil.copytree(args.dataset, uri)
            out = subprocess.run([sys.executable, "-c", _CHILD, lib, uri, str(args.repeat)], capture_output=True, text=True)
            if out.returncode:
                sys.exit(out.stderr[-3000:])
            got[lib] = json.loads(out.stdout)
            shutil.rmtree(uri)
        print(f"dataset {args.dataset}, best of {args.repeat}")
        print(f"{'operation':<16} {'lancepy ms':>11} {'pylance ms':>11} {'speed vs pylance':>17}")
        for op, ms in got["lancepy"].items():
            theirs = got["pylance"][op]
            print(f"{op:<16} {ms:11.1f} {theirs:11.1f} {theirs / ms:16.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
