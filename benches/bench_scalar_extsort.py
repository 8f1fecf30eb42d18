"""Scalar index builds in bounded memory: peak RSS and time of a BTREE (and BITMAP) build of a
column about 4× the sort budget, lancepy's external sort (``memory_limit``) vs lancepy's
in-memory build vs pylance, on the same data.

``python benches/bench_scalar_extsort.py [--rows 8000000] [--budget-mib 32] [--kind BTREE]``:
one int64 column (``x``, random, 16 bytes a row with its row address: 8M rows = 128 MiB =
4× a 32 MiB budget) written once by pylance and copied; each build runs in a fresh
subprocess, which reports its peak RSS (``VmHWM``) and the build's wall and CPU time (all
threads); the RSS of
the same subprocess just before the build (dataset opened) is printed too, so the build's
own growth is the difference; "scan only" reads the column with its row addresses a batch
at a time and keeps nothing (what reading alone costs). The three builds' files are checked to answer a query alike.
Ratios: external / in-memory, and external / pylance.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time


def hwm():  # (the process's peak RSS in KiB: VmHWM, which starts afresh at exec, unlike
    # ru_maxrss, which a child inherits from the process that forked it)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


lib, uri, kind, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if lib == "pylance":
    import lance as mod
else:
    import lancepy as mod
ds = mod.dataset(uri)
ds.count_rows()
before = hwm()
kw = {"memory_limit": limit} if limit else {}
t0, c0 = time.perf_counter(), time.process_time()
if kind == "SCAN":  # (the column read as the build reads it, nothing kept: the reading's own memory)
    for _ in ds.to_batches(columns=["x"], with_row_address=True, batch_size=65536):
        pass
else:
    ds.create_scalar_index("x", kind, **kw)
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = hwm()
print(json.dumps({"before_mib": before / 1024, "peak_mib": peak / 1024, "seconds": dt, "cpu": cpu}))
"""


def run(lib: str, uri: str, kind: str, limit: int, pythonpath: str = "") -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run([sys.executable, "-c", CHILD, lib, uri, kind, str(limit)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    import lance
    import numpy as np
    import pyarrow as pa

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=8_000_000)
    ap.add_argument("--budget-mib", type=int, default=32)
    ap.add_argument("--kind", default="BTREE", choices=["BTREE", "BITMAP"])
    ap.add_argument("--repeats", type=int, default=1, help="builds of each kind, interleaved (best time, largest peak)")
    ap.add_argument("--before", default="", help="a PYTHONPATH holding another lancepy (e.g. the code before this "
                    "change): its default build is timed too, interleaved with this one's")
    args = ap.parse_args()
    n = args.rows
    rng = np.random.default_rng(0)
    values = rng.integers(0, n // 4 if args.kind == "BTREE" else 1000, n)
    root = tempfile.mkdtemp(prefix="bench_scalar_extsort_")
    try:
        plain = os.path.join(root, "plain")
        lance.write_dataset(pa.table({"x": values}), plain, max_rows_per_file=2_000_000)
        builds = {"scan only": ("lancepy", "SCAN", 0, ""), "external": ("lancepy", args.kind, args.budget_mib, ""),
                  "in_memory": ("lancepy", args.kind, 0, "")}
        if args.before:
            builds["in_memory before"] = ("lancepy", args.kind, 0, args.before)
        builds["pylance"] = ("pylance", args.kind, 0, "")
        uris = {}
        for name in builds:
            uris[name] = os.path.join(root, name.replace(" ", "_"))
            shutil.copytree(plain, uris[name])
        column_mib = n * 16 / 2**20
        print(f"rows={n} kind={args.kind} column={column_mib:.0f} MiB (values + row addresses) "
              f"budget={args.budget_mib} MiB ({column_mib / args.budget_mib:.1f}x) repeats={args.repeats}")
        res: dict = {}
        for _ in range(args.repeats):
            for name, (lib, kind, limit, path) in builds.items():
                r = run(lib, uris[name], kind, limit, path)
                if name in res:
                    r = {"before_mib": min(r["before_mib"], res[name]["before_mib"]),
                         "peak_mib": max(r["peak_mib"], res[name]["peak_mib"]),
                         "seconds": min(r["seconds"], res[name]["seconds"]), "cpu": min(r["cpu"], res[name]["cpu"])}
                res[name] = r
        print(f"{'build':24s} {'RSS before':>11s} {'peak RSS':>9s} {'growth':>7s} {'seconds':>8s} {'CPU s':>6s}")
        for name, r in res.items():
            label = f"lancepy {name}" if name != "pylance" else "pylance"
            print(f"{label:24s} {r['before_mib']:9.0f}Mi {r['peak_mib']:7.0f}Mi {r['peak_mib'] - r['before_mib']:5.0f}Mi "
                  f"{r['seconds']:8.2f} {r['cpu']:6.2f}")
        ext, mem, py = res["external"], res["in_memory"], res["pylance"]
        grow = lambda r: max(1.0, r["peak_mib"] - r["before_mib"])  # noqa: E731
        print(f"ratios: external/in-memory peak RSS {ext['peak_mib'] / mem['peak_mib']:.2f}, growth "
              f"{grow(ext) / grow(mem):.2f}, time {ext['seconds'] / mem['seconds']:.2f}; external/pylance peak RSS "
              f"{ext['peak_mib'] / py['peak_mib']:.2f}, time {ext['seconds'] / py['seconds']:.2f}")
        k = int(values[n // 3])
        want = int((values == k).sum())
        for name, uri in uris.items():
            if name == "scan only":
                continue
            got = lance.dataset(uri).count_rows(filter=f"x = {k}")
            assert got == want, (name, got, want)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
