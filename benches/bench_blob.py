"""Blob columns: lancepy vs pylance 14 on pylance-written datasets, per file version.

    python benches/bench_blob.py [--versions 2.2,2.1]

Cases, per version (2.2: blob v2, values inline / in sidecars; 2.1: values in the data
file): a 64 MiB blob read sequentially in 1 MiB slices; 300 small blobs opened with
take_blobs and read whole; the descriptions as a Table; the values as a Table
(``blob_handling="all_binary"``); and writing a dataset of 64 blobs of 64 KiB–7.6 MiB
(244 MiB), each library into a fresh directory. Median of repeated runs, warm page cache;
ratios are pylance's time / lancepy's (> 1: lancepy faster).
"""

from __future__ import annotations

import argparse
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default="2.2,2.1", help="file versions, comma-separated")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    rows = []
    for version in args.versions.split(","):
        rows += cases(version.strip())
    print("| case | lancepy | pylance | pylance/lancepy |")
    print("|---|---|---|---|")
    for name, ours, theirs in rows:
        print(f"| {name} | {ours * 1e3:.2f} ms | {theirs * 1e3:.2f} ms | {theirs / ours:.2f}× |")
    print(f"load average after: {os.getloadavg()}")


def cases(version: str) -> list:
    tmp = tempfile.mkdtemp()
    big, small = os.path.join(tmp, "big.lance"), os.path.join(tmp, "small.lance")
    schema = pa.schema([pa.field("id", pa.int64()), FIELD])
    lance.write_dataset(pa.table({"id": [0], "b": [os.urandom(64 << 20)]}, schema=schema), big,
                        data_storage_version=version)
    values = [os.urandom(1000 if i % 2 else 200_000) for i in range(300)]
    lance.write_dataset(pa.table({"id": list(range(300)), "b": values}, schema=schema), small,
                        data_storage_version=version)

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
        ("values to_table, all_binary (300 rows)", lambda ds: lambda: ds.to_table(blob_handling="all_binary"), small),
    ]:
        ours = _median(make(lancepy.dataset(target)))
        theirs = _median(make(lance.dataset(target)))
        rows.append((f"{version}: {name}", ours, theirs))
    mixed = [os.urandom((64 << 10) * (1 + (i % 4) * 40)) for i in range(64)]  # 64 KiB .. 7.6 MiB
    write_table = pa.table({"id": list(range(64)), "b": mixed}, schema=schema)
    count = [0]

    def write(lib):
        def run():
            count[0] += 1
            lib.write_dataset(write_table, os.path.join(tmp, f"w{count[0]}.lance"), data_storage_version=version)
        return run

    rows.append((f"{version}: write 64 blobs (244 MiB)", _median(write(lancepy), 5), _median(write(lance), 5)))
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    main()
