"""Random batches from a dataset twice the memory the process may use (issue 29).

Each library reads uniform random batches (1,024 rows of a 768-d float32 vector + int64 label)
in a fresh process placed in a memory cgroup whose limit is half the dataset's size (plus what
the process itself needs: ``--process-mb``), after the
page cache was dropped: the page cache the process fills counts against its limit, so the
kernel keeps evicting, and most reads go to the disk, as when a dataset outgrows the machine.
Rows:

* ``lancepy Loader``: ``lancepy.torch.Loader(uri, 1024, shuffle=True, threads=T)``, native
  reading threads ahead of the loop;
* ``lancepy dataloader``: ``lancepy.torch.LanceDataset`` + ``ShuffleSampler`` in a DataLoader
  (``num_workers=0``);
* ``lancepy take``: a loop of ``ds.take(sorted batch)`` (one thread);
* ``pylance take``: the same loop over pylance 14's ``ds.take`` — pylance's random-take path.

For each: rows/s over a fixed number of batches and the bytes the process read from storage
per row (``/proc/self/io`` ``read_bytes``: every thread, page faults included). The same run
measures the disk's random-read ceiling with ``fio`` (4 KiB direct reads, depth 1 and 32).

    python benches/bench_memlimit.py                      # 700,000 rows (~2.2 GB), limit 1.1 GB
    python benches/bench_memlimit.py --rows 200000 --batches 60

Needs root (drop_caches, a cgroup v1 memory controller at /sys/fs/cgroup/memory or cgroup v2).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_cold import build, fio_iops  # noqa: E402

_CHILD = r"""
import json, os, sys, time
import numpy as np
mode, uri, rows, batches, batch, threads, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
cols = ["vec", "label"]
import torch  # every reader runs in a training process: the same baseline memory for all
if mode == "pylance_take":
    import lance as L
else:
    import lancepy as L
    import lancepy.torch as lt

def io():
    with open("/proc/self/io") as f:
        d = dict(line.split(": ") for line in f.read().splitlines())
    return int(d["read_bytes"])

os.sync()
with open("/proc/sys/vm/drop_caches", "w") as f:
    f.write("3\n")
rng = np.random.default_rng(seed)
order = rng.permutation(rows)
b0 = io()
t0 = time.perf_counter()
n = 0
if mode in ("lancepy_loader", "lancepy_dataloader"):
    if mode == "lancepy_loader":
        loader = lt.Loader(uri, batch, columns=cols, shuffle=True, seed=seed, threads=threads)
    else:  # the map-style dataset in a DataLoader (no workers: reading is what is measured)
        data = lt.LanceDataset(uri, columns=cols)
        loader = torch.utils.data.DataLoader(data, batch_size=batch, sampler=lt.ShuffleSampler(data, seed=seed),
                                             collate_fn=lt.collate_fn)
    for i, b in enumerate(loader):
        n += len(b["label"])
        if i + 1 == batches:
            break
else:
    ds = L.dataset(uri)
    for i in range(batches):
        idx = np.sort(order[i * batch:(i + 1) * batch])
        n += ds.take(idx.tolist(), columns=cols).num_rows
el = time.perf_counter() - t0
print(json.dumps({"rows": n, "s": el, "bytes": io() - b0}))
"""


class MemoryCgroup:
    """A memory cgroup (v1, else v2) limiting the processes put in it to `limit` bytes."""

    def __init__(self, limit: int) -> None:
        name = f"lancepy_bench_{uuid.uuid4().hex[:8]}"
        v1 = "/sys/fs/cgroup/memory"
        v2 = "/sys/fs/cgroup"
        if os.path.isfile(os.path.join(v1, "memory.limit_in_bytes")):
            self.path = os.path.join(v1, name)
            os.mkdir(self.path)
            self._write("memory.limit_in_bytes", limit)
        elif os.path.isfile(os.path.join(v2, "cgroup.controllers")):
            self.path = os.path.join(v2, name)
            os.mkdir(self.path)
            self._write("memory.max", limit)
        else:
            sys.exit("no cgroup memory controller found")

    def _write(self, what: str, value: int) -> None:
        with open(os.path.join(self.path, what), "w") as f:
            f.write(f"{value}\n")

    def enter(self) -> None:
        """preexec_fn: moves the child into the group before it runs anything."""
        self._write("cgroup.procs", os.getpid())

    def close(self) -> None:
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=700_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--batches", type=int, default=150, help="batches read per measurement")
    ap.add_argument("--threads", default="2", help="comma list: Loader threads")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--limit-ratio", type=float, default=0.5,
                    help="page cache the process may hold, as a fraction of the data size")
    ap.add_argument("--process-mb", type=int, default=700,
                    help="memory allowed on top for the process itself (torch, pyarrow, the libraries)")
    ap.add_argument("--fio-seconds", type=int, default=3)
    ap.add_argument("--libs", default="lancepy,pylance")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_memlimit.py drops the page cache and makes a cgroup: run it as root")
    uri = os.path.join(args.data, f"cold_{args.rows}x{args.dim}_{args.files}.lance")
    build(uri, args.rows, args.dim, args.files)
    files = sorted(os.path.join(uri, "data", f) for f in os.listdir(os.path.join(uri, "data")))
    size = sum(os.path.getsize(f) for f in files)
    limit = int(size * args.limit_ratio) + args.process_mb * 1_000_000
    iops1 = fio_iops(files[0], 1, args.fio_seconds)
    iops32 = fio_iops(files[0], 32, args.fio_seconds)
    print(f"dataset: {args.rows:,} rows x ({args.dim}-d float32 + int64 label) in {len(files)} files, {size / 1e9:.2f} GB; "
          f"memory limit {limit / 1e9:.2f} GB ({args.limit_ratio:g} of the data + {args.process_mb} MB for the process); batches of {args.batch} uniform random rows, {args.batches} per run")
    print(f"fio 4 KiB random reads (direct): {iops1:,.0f} IOPS at depth 1, {iops32:,.0f} at depth 32 "
          f"(~{iops32 / (1 + args.dim * 4 / 4096):,.0f} rows/s of ~{1 + args.dim * 4 / 4096:.2f} pages each at depth 32)")
    modes = []
    libs = args.libs.split(",")
    if "lancepy" in libs:
        modes += [f"lancepy_loader:{t}" for t in args.threads.split(",")] + ["lancepy_dataloader:1", "lancepy_take:1"]
    if "pylance" in libs:
        modes.append("pylance_take:1")
    print(f"{'reader':<24}{'rows/s':>10}{'KB read/row':>13}")
    best = {}
    cg = MemoryCgroup(limit)
    try:
        for m in modes:
            mode, threads = m.split(":")
            runs = []
            for r in range(args.repeats):
                out = subprocess.run(
                    [sys.executable, "-c", _CHILD, mode, uri, str(args.rows), str(args.batches), str(args.batch), threads, str(r)],
                    capture_output=True, text=True, preexec_fn=cg.enter,
                )
                if out.returncode:
                    sys.exit(f"{m} failed (exit {out.returncode}; -9: killed at the memory limit):\n{out.stderr[-3000:]}")
                runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            rate = sorted(x["rows"] / x["s"] for x in runs)[len(runs) // 2]
            per_row = sorted(x["bytes"] / x["rows"] for x in runs)[len(runs) // 2]
            best[m] = rate
            label = mode.replace("_", " ") + (f", threads {threads}" if mode == "lancepy_loader" else "")
            print(f"{label:<24}{rate:>10,.0f}{per_row / 1e3:>13.1f}")
    finally:
        cg.close()
    if "pylance_take:1" in best:
        base = best["pylance_take:1"]
        print("ratios (rows/s ÷ pylance take): " + ", ".join(f"{m} {v / base:.2f}x" for m, v in best.items() if m != "pylance_take:1"))


if __name__ == "__main__":
    main()
