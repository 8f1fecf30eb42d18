"""lancepy vs pylance on object storage: requests, bytes and time per operation.

A moto S3 server runs on 127.0.0.1 in a child process (so that it competes with neither
client for the GIL) and logs every request; the counts and response bytes below are the
server's. Ranged GETs are served without copying whole objects (``patch_fast_ranges``),
so the timings measure the clients, not moto's copies.

One dataset (``--rows`` × ``--dim``-d float32 ``emb`` + a ``caption`` string + ``id``,
``--fragments`` files), written by pylance, is read by both clients:

* open: a fresh ``dataset(uri)``;
* take of 1 / 100 / 1,000 random rows, of ``emb`` alone and of all columns (a warm dataset:
  one take has touched every file first);
* a full scan of all columns (``to_table``) and the same scan streamed (``to_batches``).

Each figure is the median of ``--repeats`` runs; ratios are pylance / lancepy (above 1:
lancepy does less or is faster). Writes are measured too (each client writes its own copy).

    python benches/bench_object_store.py                 # the issue's size: 200k x 768
    python benches/bench_object_store.py --rows 20000    # a quick run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import lance  # noqa: E402

import lancepy  # noqa: E402
from s3_server import KEY_ID, SECRET  # noqa: E402

_SERVER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from s3_server import S3Server, patch_fast_ranges
patch_fast_ranges()
s = S3Server(control=True, latency=float(sys.argv[2]))
print(s.port, flush=True)
while True:
    time.sleep(3600)
"""

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Server:
    def __init__(self, latency: float = 0.0) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER, os.path.join(HERE, "..", "tests"), str(latency)],
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def requests(self) -> list:
        with _NO_PROXY.open(f"{self.endpoint}/__requests__", timeout=30) as r:
            return json.loads(r.read())

    def create_bucket(self, name: str) -> None:
        req = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with _NO_PROXY.open(req, timeout=30) as r:
            assert r.status == 200

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def measure(server: Server, fn, repeats: int, setup=None):
    """(median seconds, median requests, median bytes, result of the last run)."""
    times, reqs, sent = [], [], []
    out = None
    for i in range(repeats):
        arg = setup(i) if setup else None
        server.requests()  # clear
        t0 = time.perf_counter()
        out = fn(arg) if setup else fn()
        times.append(time.perf_counter() - t0)
        log = server.requests()
        reqs.append(len(log))
        sent.append(sum(r[3] for r in log))
    return statistics.median(times), statistics.median(reqs), statistics.median(sent), out


def make_table(rows: int, dim: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    emb = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(rows * dim, dtype=np.float32)), dim)
    words = np.array("a lance columnar photo of red blue cat dog tree sky river house".split())
    captions = [" ".join(words[rng.integers(0, len(words), size=int(k))]) for k in rng.integers(3, 9, size=rows)]
    return pa.table({"id": np.arange(rows, dtype=np.int64), "emb": emb, "caption": captions})


def fmt_bytes(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--fragments", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--latency-ms", type=float, default=0.0,
                    help="delay before the server answers each request, as a remote object store's time to first byte")
    args = ap.parse_args()
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

    server = Server(args.latency_ms / 1000)
    try:
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        server.create_bucket(bucket)
        opts = {"aws_access_key_id": KEY_ID, "aws_secret_access_key": SECRET, "aws_endpoint": server.endpoint,
                "aws_region": "us-east-1", "allow_http": "true"}
        table = make_table(args.rows, args.dim)
        per_file = -(-args.rows // args.fragments)
        print(f"# {args.rows} rows x {args.dim}-d float32 + caption, {args.fragments} files; "
              f"{args.latency_ms:g} ms latency per request; load average {os.getloadavg()[0]:.2f}", flush=True)

        results = []  # (operation, pylance (t, req, bytes), lancepy (t, req, bytes))

        def row(name, theirs, ours):
            results.append((name, theirs, ours))
            print(f"{name:<26} pylance {theirs[1]:>6.0f} req {fmt_bytes(theirs[2]):>10} {theirs[0]:7.3f} s | "
                  f"lancepy {ours[1]:>6.0f} req {fmt_bytes(ours[2]):>10} {ours[0]:7.3f} s | "
                  f"requests x{theirs[1] / max(ours[1], 1):.2f}, bytes x{theirs[2] / max(ours[2], 1):.2f}, "
                  f"time x{theirs[0] / ours[0]:.2f}", flush=True)

        # Writes: each client writes its own copy (one run: big).
        w_theirs = measure(server, lambda: lance.write_dataset(table, f"s3://{bucket}/pylance.lance",
                                                                max_rows_per_file=per_file, storage_options=opts), 1)
        w_ours = measure(server, lambda: lancepy.write_dataset(table, f"s3://{bucket}/lancepy.lance",
                                                               max_rows_per_file=per_file, storage_options=opts), 1)
        row("write", w_theirs[:3], w_ours[:3])

        uri = f"s3://{bucket}/pylance.lance"
        row("open", measure(server, lambda: lance.dataset(uri, storage_options=opts), args.repeats)[:3],
            measure(server, lambda: lancepy.dataset(uri, storage_options=opts), args.repeats)[:3])

        theirs_ds = lance.dataset(uri, storage_options=opts)
        ours_ds = lancepy.dataset(uri, storage_options=opts)
        warm = list(range(0, args.rows, per_file))
        theirs_ds.take(warm)
        ours_ds.take(warm)
        rng = np.random.default_rng(1)
        for k in (1, 100, 1000):
            for cols in (["emb"], None):
                picks = [rng.choice(args.rows, size=min(k, args.rows), replace=False) for _ in range(args.repeats)]
                label = f"take {k} ({'emb' if cols else 'all columns'})"
                t = measure(server, lambda idx: theirs_ds.take(idx, columns=cols), args.repeats, lambda i: picks[i])
                o = measure(server, lambda idx: ours_ds.take(idx, columns=cols), args.repeats, lambda i: picks[i])
                assert t[3].column("id" if cols is None else "emb").equals(o[3].column("id" if cols is None else "emb"))
                row(label, t[:3], o[:3])
        t = measure(server, lambda: theirs_ds.to_table(), args.repeats)
        o = measure(server, lambda: ours_ds.to_table(), args.repeats)
        assert t[3].num_rows == o[3].num_rows == args.rows
        row("full scan", t[:3], o[:3])

        def stream(ds):
            rows = 0
            for b in ds.to_batches():
                rows += b.num_rows
            return rows

        t = measure(server, lambda: stream(theirs_ds), args.repeats)
        o = measure(server, lambda: stream(ours_ds), args.repeats)
        assert t[3] == o[3] == args.rows
        row("streamed scan (to_batches)", t[:3], o[:3])
        print(f"# load average after: {os.getloadavg()[0]:.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
