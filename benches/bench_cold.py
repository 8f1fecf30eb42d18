"""Random access from storage, not from the page cache: cold open + take, lancepy vs pylance.

Each measurement runs in a fresh process (no reader, metadata or index cache of either
library survives), which imports everything, drops the kernel's page cache
(``sync; echo 3 > /proc/sys/vm/drop_caches``: needs root), then times ``dataset(uri)`` +
``take(random rows)``. Bytes fetched from storage are the bytes of the dataset's files in the
page cache right after the cold run (``fincore``, util-linux): everything read from those
files, read-ahead included, and nothing else (a process's own ``read_bytes`` also counts the
library code it pages in). The same run measures the
disk's random-read ceiling with ``fio`` (4 KiB direct reads of one data file at queue
depth 1 and 32), and the warm case (the same take again in the same process).

    python benches/bench_cold.py                      # 200,000 x 768-d + label, 4 files
    python benches/bench_cold.py --rows 50000 --repeats 1

Prints one row per (library, case) and the ratios; paste the output into RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

_CHILD = r"""
import json, os, sys, time
import numpy as np
import pyarrow as pa
lib, uri, n, cols, seed, total, warm_repeats, warmup_uri = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(","), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
if lib == "lancepy":
    import lancepy as L
else:
    import lance as L
# The same calls on another (small) dataset first: the library's code is paged in, as in a
# process that has been reading for a while; only the measured dataset's bytes are cold.
L.dataset(warmup_uri).take(list(range(0, 1000, 3)), columns=cols)
idx = np.sort(np.random.default_rng(seed).choice(total, n, replace=False)).tolist() if n else []

def io():
    with open("/proc/self/io") as f:
        d = dict(line.split(": ") for line in f.read().splitlines())
    return int(d["read_bytes"]), int(d["syscr"])

os.sync()
with open("/proc/sys/vm/drop_caches", "w") as f:
    f.write("3\n")
# Native code back into the page cache: a library's first use of a code path would otherwise
# page it in from disk (megabytes of read-ahead per fault) inside the measurement; in a process
# that has been training for a while, the code is warm and only the data is cold.
import pyarrow, numpy
for mod in (L, pyarrow, numpy):
    for d, _, fs in os.walk(os.path.dirname(mod.__file__)):
        for fn in fs:
            if ".so" in fn:
                with open(os.path.join(d, fn), "rb") as f:
                    while f.read(1 << 24):
                        pass
def read(ds):
    if n == 0:  # a full scan of the columns
        return ds.to_table(columns=cols)
    return ds.take(idx, columns=cols)

b0, c0 = io()
t0 = time.perf_counter()
ds = L.dataset(uri)
t = read(ds)
t1 = time.perf_counter()
b1, c1 = io()
assert t.num_rows == (n or total)
warm = []
for _ in range(warm_repeats):
    w0 = time.perf_counter()
    read(ds)
    warm.append(time.perf_counter() - w0)
print(json.dumps({"cold_s": t1 - t0, "bytes": b1 - b0, "read_calls": c1 - c0, "warm_s": min(warm) if warm else None}))
"""


def cached_bytes(root: str) -> int:
    """Bytes of the files under `root` now in the page cache."""
    files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", *files],
                         capture_output=True, text=True, check=True).stdout
    return sum(int(x) for x in out.split())


def fio_iops(path: str, depth: int, seconds: int) -> float:
    if shutil.which("fio") is None:
        return float("nan")
    out = subprocess.run(
        ["fio", "--name=r", f"--filename={path}", "--rw=randread", "--bs=4k", "--direct=1", "--ioengine=libaio",
         f"--iodepth={depth}", f"--runtime={seconds}", "--time_based", "--output-format=json", "--readonly"],
        capture_output=True, text=True, check=True,
    ).stdout
    return float(json.loads(out)["jobs"][0]["read"]["iops"])


def build(uri: str, rows: int, dim: int, files: int, seed: int = 0) -> None:
    import numpy as np
    import pyarrow as pa

    import lancepy

    if os.path.exists(uri):
        return
    rng = np.random.default_rng(seed)
    per_file = rows // files

    def batches():
        for start in range(0, rows, 10_000):
            n = min(10_000, rows - start)
            vecs = rng.standard_normal((n, dim), dtype=np.float32)
            yield pa.record_batch(
                [pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), dim), pa.array(np.arange(start, start + n))],
                names=["vec", "label"],
            )

    schema = pa.schema([pa.field("vec", pa.list_(pa.float32(), dim)), pa.field("label", pa.int64())])
    lancepy.write_dataset(batches(), uri, schema=schema, max_rows_per_file=per_file)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3, help="cold runs per case (median reported)")
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--fio-seconds", type=int, default=5)
    ap.add_argument("--libs", default="lancepy,pylance")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_cold.py drops the page cache: run it as root")
    if shutil.which("fincore") is None:
        sys.exit("bench_cold.py counts cached bytes with fincore (util-linux)")
    uri = os.path.join(args.data, f"cold_{args.rows}x{args.dim}_{args.files}.lance")
    build(uri, args.rows, args.dim, args.files)
    warmup_uri = os.path.join(args.data, f"cold_warmup_{args.dim}.lance")
    build(warmup_uri, 1000, args.dim, 1, seed=1)
    data_files = sorted(os.path.join(uri, "data", f) for f in os.listdir(os.path.join(uri, "data")))
    size = sum(os.path.getsize(f) for f in data_files)
    print(f"dataset: {args.rows:,} rows x ({args.dim}-d float32 + int64 label) in {len(data_files)} files, "
          f"{size / 1e6:.0f} MB; read_ahead_kb={open('/sys/block/vda/queue/read_ahead_kb').read().strip() if os.path.exists('/sys/block/vda/queue/read_ahead_kb') else '?'}")
    iops1 = fio_iops(data_files[0], 1, args.fio_seconds)
    iops32 = fio_iops(data_files[0], 32, args.fio_seconds)
    print(f"fio 4 KiB random reads (direct): {iops1:,.0f} IOPS at depth 1, {iops32:,.0f} at depth 32")
    # n = 0: a full scan of the columns (cold scans must keep reading sequentially).
    cases = [(100, "vec"), (1000, "vec"), (1000, "vec,label"), (1000, "label"), (0, "label"), (0, "vec,label")]
    print(f"{'case':<26}{'lib':<9}{'cold ms':>9}{'MB read':>9}{'B/row':>9}{'warm ms':>9}")
    results = {}
    for n, cols in cases:
        for lib in args.libs.split(","):
            runs = []
            for r in range(args.repeats):
                out = subprocess.run(
                    [sys.executable, "-c", _CHILD, lib, uri, str(n), cols, str(r), str(args.rows), "5", warmup_uri],
                    capture_output=True, text=True,
                )
                if out.returncode:
                    sys.exit(f"{lib} failed:\n{out.stderr[-3000:]}")
                run = json.loads(out.stdout.strip().splitlines()[-1])
                run["bytes"] = cached_bytes(uri)
                runs.append(run)
            cold = statistics.median(x["cold_s"] for x in runs)
            nbytes = statistics.median(x["bytes"] for x in runs)
            warm = statistics.median(x["warm_s"] for x in runs)
            results[(n, cols, lib)] = (cold, nbytes, warm)
            what = f"{n} rows of {cols}" if n else f"scan of {cols}"
            per_row = nbytes / (n or args.rows)
            print(f"{what:<26}{lib:<9}{cold * 1e3:>9.1f}{nbytes / 1e6:>9.2f}{per_row:>9.0f}{warm * 1e3:>9.2f}")
    libs = args.libs.split(",")
    if len(libs) == 2:
        print("ratios (pylance time / lancepy time; lancepy bytes / pylance bytes):")
        for n, cols in cases:
            a, b = results[(n, cols, libs[0])], results[(n, cols, libs[1])]
            what = f"{n} rows of {cols}" if n else f"scan of {cols}"
            print(f"  {what}: cold {b[0] / a[0]:.2f}x, bytes {a[1] / max(b[1], 1):.2f}x, warm {b[2] / a[2]:.2f}x")
    if iops32 == iops32:  # not NaN
        pages_per_row = 1 + args.dim * 4 / 4096
        n = 1000
        print(f"disk ceiling for {n} cold {args.dim}-d rows (~{pages_per_row:.2f} pages each): "
              f"{n * pages_per_row / iops32 * 1e3:.1f} ms at depth 32, {n * pages_per_row / iops1 * 1e3:.1f} ms at depth 1")


if __name__ == "__main__":
    main()
