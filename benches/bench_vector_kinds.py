"""IVF_FLAT over binary vectors (hamming), 4-bit IVF_PQ and a vector nested in a struct:
lancepy vs pylance, building and searching the same data.

    python benches/bench_vector_kinds.py [--rows 100000] [--queries 20] [--rounds 3]

For each kind, one dataset is written with pylance and copied; pylance builds the index of
one copy and lancepy the other's (build time each). Then both libraries search each index
with the same queries (``k=10``, every partition probed) and an exact search without the
index; queries per second and lancepy / pylance ratios are printed. Rows are checked: the
same distance multisets (hamming distances are integers: exactly; PQ ones to float rounding).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from typing import Any, Callable, Dict, List

import numpy as np
import pyarrow as pa


def _qps(fn: Callable[[Any], object], queries: List[Any], rounds: int) -> float:
    fn(queries[0])
    per = []
    for _ in range(rounds):
        t = time.perf_counter()
        for q in queries:
            fn(q)
        per.append(len(queries) / (time.perf_counter() - t))
    return statistics.median(per)


def _kinds(rows: int) -> Dict[str, Dict[str, Any]]:
    rng = np.random.default_rng(42)
    b = rng.integers(0, 256, (rows, 32)).astype(np.uint8)  # 256-bit binary vectors
    binary = pa.table({"id": np.arange(rows), "vector": pa.FixedSizeListArray.from_arrays(pa.array(b.ravel(), pa.uint8()), 32)})
    centers = rng.standard_normal((64, 128)).astype(np.float32) * 3
    v = (centers[rng.integers(0, 64, rows)] + rng.standard_normal((rows, 128))).astype(np.float32)
    floats = pa.table({"id": np.arange(rows), "vector": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), 128)})
    st = pa.StructArray.from_arrays([floats.column("vector").combine_chunks(), pa.array(np.arange(rows) % 7)],
                                    names=["embedding", "tag"])
    nested = pa.table({"id": np.arange(rows), "data": st})
    return {
        "hamming IVF_FLAT": {"table": binary, "column": "vector", "queries": [b[i] for i in rng.integers(0, rows, 50)],
                             "index": dict(index_type="IVF_FLAT", num_partitions=16, metric="hamming"), "parts": 16,
                             "exact": True},
        "4-bit IVF_PQ": {"table": floats, "column": "vector", "queries": [v[i] for i in rng.integers(0, rows, 50)],
                         "index": dict(index_type="IVF_PQ", num_partitions=16, num_sub_vectors=32, num_bits=4), "parts": 16,
                         "exact": False},
        "nested IVF_PQ (8-bit)": {"table": nested, "column": "data.embedding",
                                  "queries": [v[i] for i in rng.integers(0, rows, 50)],
                                  "index": dict(index_type="IVF_PQ", num_partitions=16, num_sub_vectors=16), "parts": 16,
                                  "exact": False},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    import lance

    import lancepy

    libs = {"lancepy": lancepy, "pylance": lance}
    root = tempfile.mkdtemp(prefix="bench_vector_kinds_")
    try:
        for kind, spec in _kinds(args.rows).items():
            print(f"\n== {kind}: {args.rows} rows, column {spec['column']!r}")
            base = f"{root}/{kind.split()[0]}"
            lance.write_dataset(spec["table"], base + "_pylance", max_rows_per_file=(args.rows + 1) // 2)
            shutil.copytree(base + "_pylance", base + "_lancepy")
            builds = {}
            for name, lib in libs.items():
                t = time.perf_counter()
                lib.dataset(base + "_" + name).create_index(spec["column"], **spec["index"])
                builds[name] = time.perf_counter() - t
            print(f"build: lancepy {builds['lancepy']:.2f} s, pylance {builds['pylance']:.2f} s, "
                  f"ratio lancepy/pylance {builds['lancepy'] / builds['pylance']:.2f}")
            queries = spec["queries"][: args.queries]
            for index_by in libs:
                path = base + "_" + index_by
                for use_index in (True, False):
                    qps = {}
                    for name, lib in libs.items():
                        ds = lib.dataset(path)
                        nearest = lambda q: {"column": spec["column"], "q": q, "k": 10, "nprobes": spec["parts"],  # noqa: E731
                                             "use_index": use_index}
                        got = [ds.to_table(nearest=nearest(q), columns=["id"])["_distance"].to_pylist() for q in queries]
                        qps[name] = (_qps(lambda q: ds.to_table(nearest=nearest(q), columns=["id"]), queries, args.rounds), got)
                    a, b = qps["lancepy"][1], qps["pylance"][1]
                    if spec["exact"] or not use_index:
                        ok = all(np.allclose(sorted(x), sorted(y), rtol=1e-5) for x, y in zip(a, b))
                    else:
                        ok = all(np.allclose(sorted(x), sorted(y), rtol=1e-4, atol=1e-4) for x, y in zip(a, b))
                    what = f"{index_by}'s index" if use_index else "exact (use_index=False)"
                    print(f"search, {what:24s}: lancepy {qps['lancepy'][0]:8.1f} q/s, pylance {qps['pylance'][0]:8.1f} q/s, "
                          f"ratio {qps['lancepy'][0] / qps['pylance'][0]:.2f}, same distances: {ok}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
