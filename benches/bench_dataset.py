"""Dataset benchmark: lancepy vs pylance on the same dataset.

Measures (median of several runs, warm caches):
* take of 1,000 random rows across 20 fragments (all columns, and id + embedding);
* a full scan of one numeric column;
* append + commit latency of a small batch (100 rows);
* delete of a few rows by predicate (deletion files + commit).

Both libraries read the same dataset (written once by pylance, once by lancepy, so each
reader also reads the other's files). Run `python benches/bench_dataset.py [--write-results]`;
with `--write-results` the table is also written to benches/RESULTS.md (dataset section).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from typing import Callable, List, Tuple

import numpy as np
import pyarrow as pa

import lancepy

ROWS_PER_FRAGMENT = 10_000
FRAGMENTS = 20
DIM = 128


def make_table(n: int, start: int = 0) -> pa.Table:
    rng = np.random.default_rng(start)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "text": [f"caption number {i} about a thing" for i in ids],
            "score": rng.random(n),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * DIM, dtype=np.float32)), DIM),
        }
    )


def median_ms(fn: Callable[[], object], repeat: int = 7) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    try:
        import lance
    except ImportError:
        sys.exit("pylance is needed for the comparison: pip install pylance==14.0.2")

    root = tempfile.mkdtemp(prefix="lancepy-bench-")
    rows: List[Tuple[str, float, float]] = []
    try:
        table = make_table(ROWS_PER_FRAGMENT * FRAGMENTS)
        by = {"pylance": os.path.join(root, "pylance.lance"), "lancepy": os.path.join(root, "lancepy.lance")}
        lance.write_dataset(table, by["pylance"], max_rows_per_file=ROWS_PER_FRAGMENT, data_storage_version="2.1")
        lancepy.write_dataset(table, by["lancepy"], max_rows_per_file=ROWS_PER_FRAGMENT, data_storage_version="2.1")
        idx = sorted(random.Random(0).sample(range(table.num_rows), 1000))
        shuffled = random.Random(1).sample(idx, len(idx))
        for writer, uri in by.items():
            ours, theirs = lancepy.dataset(uri), lance.dataset(uri)
            assert len(ours.get_fragments()) == FRAGMENTS
            label = f"(written by {writer})"
            rows.append((f"take 1,000 random rows, all columns {label}",
                         median_ms(lambda: ours.take(shuffled)), median_ms(lambda: theirs.take(shuffled))))
            rows.append((f"take 1,000 random rows, id + embedding {label}",
                         median_ms(lambda: ours.take(shuffled, columns=["id", "embedding"])),
                         median_ms(lambda: theirs.take(shuffled, columns=["id", "embedding"]))))
            rows.append((f"scan column 'score' ({table.num_rows:,} rows) {label}",
                         median_ms(lambda: ours.to_table(columns=["score"])),
                         median_ms(lambda: theirs.to_table(columns=["score"]))))
        small = make_table(100, 10_000_000)
        for name in ("pylance", "lancepy"):
            shutil.copytree(by[name], by[name] + "-w")
        counter = iter(range(10**6))
        rows.append((
            "append 100 rows + commit",
            median_ms(lambda: lancepy.write_dataset(small, by["lancepy"] + "-w", mode="append")),
            median_ms(lambda: lance.write_dataset(small, by["pylance"] + "-w", mode="append")),
        ))
        rows.append((
            "delete 1 row by predicate + commit",
            median_ms(lambda: lancepy.dataset(by["lancepy"] + "-w").delete(f"id = {next(counter) * 7}")),
            median_ms(lambda: lance.dataset(by["pylance"] + "-w").delete(f"id = {next(counter) * 7}")),
        ))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    lines = [
        f"Dataset: {FRAGMENTS} fragments x {ROWS_PER_FRAGMENT:,} rows (int64 id, string, float64, {DIM}-d float32 embedding), "
        "file version 2.1, local disk; median of 7 warm runs; ratio = lancepy / pylance (lower is better for lancepy).",
        "",
        "| operation | lancepy ms | pylance ms | ratio |",
        "|---|---:|---:|---:|",
    ]
    for name, ours_ms, theirs_ms in rows:
        lines.append(f"| {name} | {ours_ms:.2f} | {theirs_ms:.2f} | {ours_ms / theirs_ms:.2f} |")
    text = "\n".join(lines)
    print(text)
    if args.write_results:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
        existing = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
        marker = "## Datasets (benches/bench_dataset.py)"
        before = existing.split(marker)[0].rstrip() + "\n\n"
        after = ""
        if marker in existing:
            rest = existing.split(marker, 1)[1]
            nxt = rest.find("\n## ")
            after = rest[nxt:] if nxt >= 0 else ""
        machine = f"{os.cpu_count()} cores, lancepy {lancepy.__version__}, pylance {lance.__version__}"
        with open(path, "w") as f:
            f.write(before + marker + "\n\n" + machine + "\n\n" + text + "\n" + after)
        print(f"written to {path}")


if __name__ == "__main__":
    main()
