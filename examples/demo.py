"""lancepy demo: write a real Lance file with several encodings, read it back, sample rows.

Run with `bash scripts/demo.sh`.
"""

from __future__ import annotations

import os
import random
import tempfile
import time

import numpy as np
import pyarrow as pa

from lancepy.file import LanceFileReader, LanceFileWriter


def make_table(n: int) -> pa.Table:
    rng = np.random.default_rng(42)
    words = ["red", "green", "blue", "cyan", "magenta", "yellow", "black", "white"]
    return pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "category": pa.array(rng.integers(0, 100, n, dtype=np.int32)),
            "score": pa.array(rng.random(n)),
            "color": pa.array([words[i % len(words)] for i in range(n)]),
            "caption": pa.array([f"a photo of a {words[i % 8]} thing number {i}" for i in range(n)]),
            "maybe": pa.array([None if i % 5 == 0 else i % 3 == 0 for i in range(n)]),
            "embedding": pa.FixedSizeListArray.from_arrays(
                pa.array(rng.random(n * 64, dtype=np.float32)), 64
            ),
            "thumbnail": pa.array([rng.bytes(300 + i % 200) for i in range(n)], pa.binary()),
            "flag": pa.array([1] * n, pa.int8()),
        }
    )


def main() -> None:
    n = 200_000
    table = make_table(n)
    with tempfile.TemporaryDirectory() as d:
        for version in ["2.1", "2.2"]:
            path = os.path.join(d, f"demo-{version}.lance")
            t0 = time.perf_counter()
            with LanceFileWriter(path, version=version) as w:
                w.write_batch(table)
            t_write = time.perf_counter() - t0
            size = os.path.getsize(path)
            print(f"\n== file version {version}: wrote {n:,} rows, {size / 1e6:.1f} MB in {t_write:.2f}s")

            reader = LanceFileReader(path)
            print("encodings chosen (first page of each column):")
            for field, col in zip(reader.schema, reader.metadata().columns):
                print(f"  {field.name:10s} {str(field.type)[:28]:28s} {col.pages[0].encoding}  ({len(col.pages)} pages)")

            t0 = time.perf_counter()
            back = reader.read_all().to_table()
            t_read = time.perf_counter() - t0
            assert back.equals(table), "round trip mismatch"
            print(f"full read: {t_read * 1e3:.0f} ms, equal to what was written")

            idx = random.Random(0).sample(range(n), 1000)
            t0 = time.perf_counter()
            sample = reader.take_rows(idx).to_table()
            t_take = time.perf_counter() - t0
            assert sample.equals(table.take(idx))
            print(f"take 1,000 random rows: {t_take * 1e3:.2f} ms ({1000 / t_take:,.0f} rows/s)")
            t0 = time.perf_counter()
            for i in idx[:200]:
                reader.take_rows([i], columns=["id", "embedding"])
            print(f"single-row take (id + embedding): {(time.perf_counter() - t0) / 200 * 1e6:.0f} µs")
            print("row 12345:", {k: v[0] for k, v in reader.take_rows([12345], columns=["id", "color", "caption"]).to_table().to_pydict().items()})

            try:
                import lance.file  # the reference implementation, if installed

                theirs = lance.file.LanceFileReader(path).read_all().to_table()
                print("pylance reads the same file:", "equal" if theirs.equals(table) else "DIFFERENT")
            except ImportError:
                pass


if __name__ == "__main__":
    main()
