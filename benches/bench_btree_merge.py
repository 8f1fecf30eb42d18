"""Merging a BTREE or BITMAP index after an append (``optimize_indices``): wall time and peak memory,
lancepy's page-streaming merge against its in-memory merge and pylance 14's.

One int64 column of `--rows` random values (1,000 distinct ones with `--kind BITMAP`; with
`--kind LABEL_LIST`, lists of 1-3 of 1,000 labels); the
index built by each library on its own copy), then `--append` more rows; each merge runs in a fresh process: ``optimize_indices()``,
timed, with the process's peak resident memory above what it held before the call (``VmHWM``
less ``VmRSS`` before, from ``/proc/self/status``).

    python benches/bench_btree_merge.py --rows 8000000 --append 800000
    python benches/bench_btree_merge.py --rows 8000000 --append 800000 --kind BITMAP
    python benches/bench_btree_merge.py --rows 4000000 --append 400000 --kind LABEL_LIST
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

_CHILD = r"""
import json, sys, time
lib, path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
L = __import__("lance" if lib == "pylance" else "lancepy")
if mode == "in-memory":
    from lancepy._ops import extsort
    extsort.merge_btree = extsort.merge_bitmap = lambda *a, **k: None

sys.path.insert(0, sys.argv[-1])
from _child import status

ds = L.dataset(path)
before = status("VmRSS")
t = time.perf_counter()
ds.optimize.optimize_indices()
secs = time.perf_counter() - t
print(json.dumps({"seconds": secs, "peak": status("VmHWM") - before, "rows": L.dataset(path).count_rows({"BTREE": "v < 1099511627", "BITMAP": "v < 1"}.get(sys.argv[4], "array_has_any(v, [0])"))}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8_000_000)
    ap.add_argument("--append", type=int, default=800_000)
    ap.add_argument("--kind", choices=["BTREE", "BITMAP", "LABEL_LIST"], default="BTREE")
    a = ap.parse_args()
    import lance
    import numpy as np
    import pyarrow as pa

    import lancepy

    root = tempfile.mkdtemp(prefix="btree-merge-")
    try:
        rng = np.random.default_rng(0)
        top = 1 << 40 if a.kind == "BTREE" else 1000

        def column(n: int) -> pa.Table:
            if a.kind != "LABEL_LIST":
                return pa.table({"v": rng.integers(0, top, n)})
            offsets = np.concatenate([[0], np.cumsum(rng.integers(1, 4, n))]).astype(np.int32)
            return pa.table({"v": pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, top, offsets[-1])))})

        base, extra = column(a.rows), column(a.append)
        paths = {}
        for name, lib in (("lancepy", lancepy), ("lancepy (in memory)", lancepy), ("pylance", lance)):
            path = os.path.join(root, name.replace(" ", "_").replace("(", "").replace(")", ""))
            lance.write_dataset(base, path, max_rows_per_file=1_000_000)
            lib.dataset(path).create_scalar_index("v", a.kind)
            lance.write_dataset(extra, path, mode="append")
            paths[name] = path
        print(f"merge of a {a.kind} index: {a.rows:,} rows + {a.append:,} appended ({'list<int64>' if a.kind == 'LABEL_LIST' else 'int64'})")
        print(f"{'':22}{'seconds':>9}{'peak MiB':>10}{'hits':>7}")
        out = {}
        for name, path in paths.items():
            lib = "pylance" if name == "pylance" else "lancepy"
            mode = "in-memory" if "memory" in name else "stream"
            env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(HERE), "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
            res = subprocess.run([sys.executable, "-c", _CHILD, lib, path, mode, a.kind, HERE], capture_output=True, text=True, env=env, check=True)
            r = json.loads(res.stdout.strip().splitlines()[-1])
            out[name] = r
            print(f"{name:22}{r['seconds']:9.2f}{r['peak'] / 2**20:10.1f}{r['rows']:7}")
        s, m, p = out["lancepy"], out["lancepy (in memory)"], out["pylance"]
        print(f"lancepy / pylance: time x{s['seconds'] / p['seconds']:.2f}, peak x{s['peak'] / max(p['peak'], 1):.2f}")
        print(f"lancepy / in memory: time x{s['seconds'] / m['seconds']:.2f}, peak x{s['peak'] / max(m['peak'], 1):.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
