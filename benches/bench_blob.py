"""Blob columns: lancepy vs pylance 14 on one pylance-written dataset (file version 2.2).

    python benches/bench_blob.py

Cases: a 64 MiB dedicated blob read sequentially in 1 MiB slices; 300 small blobs (inline
and packed) opened with take_blobs and read whole; the descriptions as a Table; and writing
(a dataset of 64 blobs of 64 KiB–7.6 MiB, inline, packed and dedicated: 244 MiB), each library
into a fresh directory. Median of repeated runs, warm page cache; ratios are pylance's time /
lancepy's (> 1: lancepy faster).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import pyarrow as pa

import lance
import lancepy

FIELD = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})


def _median(fn, reps=7):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    tmp = tempfile.mkdtemp()
    big, small = os.path.join(tmp, "big.lance"), os.path.join(tmp, "small.lance")
    schema = pa.schema([pa.field("id", pa.int64()), FIELD])
    lance.write_dataset(pa.table({"id": [0], "b": [os.urandom(64 << 20)]}, schema=schema), big)
    values = [os.urandom(1000 if i % 2 else 200_000) for i in range(300)]
    lance.write_dataset(pa.table({"id": list(range(300)), "b": values}, schema=schema), small)
    print(f"load average before: {os.getloadavg()}")

    def slices(ds):
        def run():
            [f] = ds.take_blobs("b", indices=[0])
            while f.read(1 << 20):
                pass
        return run

    def small_all(ds):
        def run():
            for f in ds.take_blobs("b", indices=list(range(300))):
                f.read()
        return run

    rows = []
    for name, make, target in [
        ("64 MiB blob in 1 MiB slices", slices, big),
        ("300 small blobs, take_blobs + read", small_all, small),
        ("descriptions to_table (300 rows)", lambda ds: ds.to_table, small),
    ]:
        ours = _median(make(lancepy.dataset(target)))
        theirs = _median(make(lance.dataset(target)))
        rows.append((name, ours, theirs))
    mixed = [os.urandom((64 << 10) * (1 + (i % 4) * 40)) for i in range(64)]  # 64 KiB .. 7.6 MiB
    write_table = pa.table({"id": list(range(64)), "b": mixed}, schema=schema)
    count = [0]

    def write(lib):
        def run():
            count[0] += 1
            lib.write_dataset(write_table, os.path.join(tmp, f"w{count[0]}.lance"))
        return run

    rows.append(("write 64 blobs (244 MiB: inline, packed, dedicated)", _median(write(lancepy), 5), _median(write(lance), 5)))
    print("| case | lancepy | pylance | pylance/lancepy |")
    print("|---|---|---|---|")
    for name, ours, theirs in rows:
        print(f"| {name} | {ours * 1e3:.2f} ms | {theirs * 1e3:.2f} ms | {theirs / ours:.2f}× |")
    print(f"load average after: {os.getloadavg()}")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
