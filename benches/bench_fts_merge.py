"""Merging a partitioned INVERTED index (``optimize_indices``) after an append: wall time and
peak memory of the merge, lancepy against pylance 14 on the same data.

The same documents (Zipf-distributed words, seeded) are written twice; each library builds
its own INVERTED index with a small ``memory_limit`` (several partitions), then a tenth more
rows are appended. Each merge runs in a fresh process: ``optimize_indices()`` on the dataset,
timed, with the process's peak resident memory above what it held before the call
(``VmHWM`` less ``VmRSS`` before, from ``/proc/self/status``). Rows:

* ``lancepy``: the merge as it is (partitions copied one at a time);
* ``lancepy (whole)``: the merge as it was before (the whole index read into memory, merged,
  written as one partition): this checkout's package with ``_ops/inverted.py`` from
  ``--before`` (a commit);
* ``pylance``: pylance 14's merge of its own index.

    python benches/bench_fts_merge.py                       # 300,000 documents
    python benches/bench_fts_merge.py --docs 50000 --before efebbc3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

_CHILD = r"""
import json, sys, time
lib, path = sys.argv[1], sys.argv[2]
L = __import__("lance" if lib == "pylance" else "lancepy")

sys.path.insert(0, sys.argv[-1])
from _child import status

ds = L.dataset(path)
before = status("VmRSS")
t = time.perf_counter()
ds.optimize.optimize_indices()
dt = time.perf_counter() - t
n = L.dataset(path).to_table(full_text_query="data index", columns=["id"]).num_rows
print(json.dumps({"seconds": dt, "peak_above": status("VmHWM") - before, "hits": n}))
"""


def corpus(seed: int, n: int, words: list) -> list:
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(words))]
    return [" ".join(rng.choices(words, weights, k=rng.randint(3, 50))) for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=300_000)
    ap.add_argument("--memory-limit", type=int, default=16, help="MiB, for the build (several partitions)")
    ap.add_argument("--before", default="efebbc3", help="commit whose _ops/inverted.py is the whole-index merge")
    args = ap.parse_args()

    import lance
    import pyarrow as pa

    sys.path.insert(0, os.path.join(ROOT, "python"))
    import lancepy

    vocab = [f"w{i}" for i in range(20000)] + ["data", "index", "lance", "search"]
    random.Random(1).shuffle(vocab)
    docs = corpus(7, args.docs, vocab)
    extra = corpus(8, args.docs // 10, vocab)
    tmp = tempfile.mkdtemp(prefix="bench_fts_merge_")
    old_pkg = os.path.join(tmp, "old")
    shutil.copytree(os.path.join(ROOT, "python", "lancepy"), os.path.join(old_pkg, "lancepy"))
    with open(os.path.join(old_pkg, "lancepy", "_ops", "inverted.py"), "wb") as f:
        f.write(subprocess.check_output(["git", "-C", ROOT, "show", f"{args.before}:python/lancepy/_ops/inverted.py"]))
    rows = {}
    for name, builder, pkg in (
        ("lancepy", lancepy, os.path.join(ROOT, "python")),
        ("lancepy (whole)", lancepy, old_pkg),
        ("pylance", lance, None),
    ):
        path = os.path.join(tmp, name.replace(" ", "_").replace("(", "").replace(")", ""))
        lance.write_dataset(pa.table({"id": list(range(len(docs))), "text": docs}), path, max_rows_per_file=10_000)
        builder.dataset(path).create_scalar_index("text", "INVERTED", memory_limit=args.memory_limit)
        (seg,) = [i for i in lance.dataset(path).describe_indices() if i.name == "text_idx"]
        parts = len([n for n in os.listdir(os.path.join(path, "_indices", seg.segments[0].uuid)) if n.endswith("_docs.lance")])
        lance.write_dataset(pa.table({"id": list(range(len(docs), len(docs) + len(extra))), "text": extra}), path, mode="append")
        env = dict(os.environ, PYTHONPATH=pkg) if pkg else dict(os.environ)
        lib = "pylance" if builder is lance else "lancepy"
        out = subprocess.run([sys.executable, "-c", _CHILD, lib, path, HERE], env=env, capture_output=True, text=True, check=True)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        got["partitions"] = parts
        rows[name] = got
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"merge of a partitioned INVERTED index: {args.docs:,} documents + {len(extra):,} appended, "
          f"build memory_limit={args.memory_limit} MiB")
    print(f"{'':18}{'partitions':>11}{'seconds':>10}{'peak MiB':>10}{'hits':>8}")
    for name, r in rows.items():
        print(f"{name:18}{r['partitions']:>11}{r['seconds']:>10.2f}{r['peak_above'] / 2**20:>10.1f}{r['hits']:>8}")
    lp, old, pl = rows["lancepy"], rows["lancepy (whole)"], rows["pylance"]
    print(f"lancepy / pylance: time x{lp['seconds'] / pl['seconds']:.2f}, peak x{lp['peak_above'] / max(pl['peak_above'], 1):.2f}")
    print(f"lancepy / lancepy (whole): time x{lp['seconds'] / old['seconds']:.2f}, "
          f"peak x{lp['peak_above'] / max(old['peak_above'], 1):.2f}")


if __name__ == "__main__":
    main()
