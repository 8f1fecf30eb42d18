"""File version 2.0: lancepy vs pylance reading the same pylance-written 2.0 files.

    python benches/bench_file_v2_0.py [--rows 1000000] [--repeats 7]

(benches/bench_file.py covers 2.1 / 2.2.) Two files, written by pylance's
``LanceFileWriter(version="2.0")``: *tabular* (`rows` rows: int64, float64 with nulls, a
string column with nulls) and *embeddings* (`rows / 10` rows of 768-d float32). For each:
random takes of 100 and 1,000 rows (sorted indices, as a sampler sends them) and a full
scan. Values are checked equal between the libraries first. Median of `repeats` runs, warm
page cache; ratio = pylance's time / lancepy's (> 1: lancepy faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Callable, Dict, List, Tuple

import numpy as np
import pyarrow as pa


def _tables(rows: int) -> Dict[str, pa.Table]:
    rng = np.random.default_rng(7)
    floats = rng.standard_normal(rows)
    strings = [None if i % 11 == 0 else f"item-{i % 5003}-{'x' * (i % 17)}" for i in range(rows)]
    tabular = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "value": pa.array(floats, mask=np.arange(rows) % 13 == 0),
        "name": pa.array(strings, pa.string()),
    })
    n = max(1, rows // 10)
    emb = rng.standard_normal((n, 768)).astype(np.float32)
    embeddings = pa.table({"emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.ravel()), 768)})
    return {"tabular": tabular, "embeddings": embeddings}


def _median(fn: Callable[[], object], repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()

    import lance.file

    import lancepy
    import lancepy.file

    tmp = tempfile.mkdtemp()
    results: List[Tuple[str, str, float, float]] = []
    for name, table in _tables(args.rows).items():
        path = os.path.join(tmp, f"{name}.lance")
        with lance.file.LanceFileWriter(path, table.schema, version="2.0") as w:
            w.write_batch(table)
        ours, theirs = lancepy.file.LanceFileReader(path), lance.file.LanceFileReader(path)
        rng = np.random.default_rng(1)
        for count in (100, 1000):
            idx = np.sort(rng.choice(table.num_rows, size=min(count, table.num_rows), replace=False)).tolist()
            a = ours.take_rows(idx).to_table()
            b = theirs.take_rows(idx).to_table()
            assert a.equals(b), f"{name}: take of {count} rows differs from pylance's"
            results.append((name, f"take {count} random rows",
                            _median(lambda: ours.take_rows(idx).to_table(), args.repeats),
                            _median(lambda: theirs.take_rows(idx).to_table(), args.repeats)))
        assert ours.read_all().to_table().equals(theirs.read_all().to_table()), f"{name}: scan differs"
        results.append((name, "full scan", _median(lambda: ours.read_all().to_table(), args.repeats),
                        _median(lambda: theirs.read_all().to_table(), args.repeats)))
    print(f"lancepy {lancepy.__version__}, rows {args.rows}, repeats {args.repeats}, load {os.getloadavg()[0]:.2f}\n")
    print("| file | operation | lancepy | pylance | pylance / lancepy |\n|---|---|---:|---:|---:|")
    for name, op, a, b in results:
        print(f"| {name} | {op} | {a * 1e3:.2f} ms | {b * 1e3:.2f} ms | {b / a:.2f}× |")


if __name__ == "__main__":
    main()
