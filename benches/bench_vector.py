"""Exact nearest-neighbour search: lancepy vs pylance (brute force) vs numpy, same files.

    python benches/bench_vector.py [--rows 1000000] [--dim 128] [--k 10] [--queries 20]

Writes one dataset (float32 vectors of `dim` in 4 fragments, clustered so that results are
not ties) with pylance, then times ``to_table(nearest={"column": "emb", "q": q, "k": k},
columns=["id"])`` for the same random queries with lancepy and pylance (no index: pylance
searches by brute force too), and the same search done with numpy on vectors already in
memory (a ceiling that reads nothing). Checks that lancepy's rows equal pylance's, prints
queries per second and ratios.

    python benches/bench_vector.py --index IVF_PQ [--rows 200000] [--partitions 256] [--sub-vectors 16]

Index build and search instead: pylance builds the index of one copy of the dataset and
lancepy the other's (both timed, sizes printed); then, for each index and each ``nprobes``
(and ``refine_factor``), both libraries search with that same index; recall@k is measured
against the exact answer (numpy), rows are checked equal between the two libraries, and
queries per second and ratios are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Callable, List

import numpy as np
import pyarrow as pa


def _dataset(path: str, rows: int, dim: int) -> np.ndarray:
    import lance

    rng = np.random.default_rng(42)
    centers = rng.standard_normal((256, dim)).astype(np.float32) * 4
    v = centers[rng.integers(0, 256, rows)] + rng.standard_normal((rows, dim)).astype(np.float32)
    emb = pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), dim)
    table = pa.table({"id": np.arange(rows), "caption": [f"row {i}" for i in range(rows)], "emb": emb})
    lance.write_dataset(table, path, max_rows_per_file=(rows + 3) // 4)
    return v


def _qps(fn: Callable[[np.ndarray], object], queries: List[np.ndarray], rounds: int) -> float:
    fn(queries[0])  # warm: open files, page cache
    per_round = []
    for _ in range(rounds):
        t = time.perf_counter()
        for q in queries:
            fn(q)
        per_round.append(len(queries) / (time.perf_counter() - t))
    return statistics.median(per_round)


def _recall(got: List[List[int]], truth: List[np.ndarray]) -> float:
    return sum(len(set(g) & set(t.tolist())) for g, t in zip(got, truth)) / sum(len(t) for t in truth)


def _index_size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(os.path.join(path, "_indices")) for f in fs)


def _index_bench(args: argparse.Namespace, path: str, vectors: np.ndarray, queries: List[np.ndarray]) -> None:
    import shutil

    import lance

    import lancepy

    kw = {"num_sub_vectors": args.sub_vectors} if args.index == "IVF_PQ" else {}
    # The same dataset twice: pylance builds the index of one copy, lancepy the other's.
    paths = {"pylance": path, "lancepy": path + ".lancepy-index"}
    shutil.copytree(path, paths["lancepy"])
    build = {}
    for who, lib in (("pylance", lance), ("lancepy", lancepy)):
        t = time.perf_counter()
        lib.dataset(paths[who]).create_index("emb", index_type=args.index, num_partitions=args.partitions, **kw)
        build[who] = time.perf_counter() - t
    print(f"{args.index}, {args.partitions} partitions{', %d sub-vectors' % args.sub_vectors if kw else ''}:")
    print(f"build: lancepy {build['lancepy']:.1f} s, pylance {build['pylance']:.1f} s "
          f"({build['pylance'] / build['lancepy']:.2f}x); index size lancepy {_index_size(paths['lancepy']) / 1e6:.1f} MB, "
          f"pylance {_index_size(paths['pylance']) / 1e6:.1f} MB")
    truth = []
    for q in queries:
        d = ((vectors - q) ** 2).sum(axis=1)
        top = np.argpartition(d, args.k)[: args.k]
        truth.append(top[np.argsort(d[top])])
    print(f"\nk={args.k}, {args.queries} queries x {args.rounds} rounds (median), load average {os.getloadavg()[0]:.2f}\n")
    print("| index built by | nprobes | refine_factor | recall@k lancepy / pylance | same result as pylance | lancepy q/s "
          "| pylance q/s | lancepy / pylance |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    for builder in ("lancepy", "pylance"):
        ours_ds, theirs_ds = lancepy.dataset(paths[builder]), lance.dataset(paths[builder])
        for nprobes in args.nprobes:
            for refine in ([None, 10] if args.index == "IVF_PQ" else [None]):
                nearest = {"column": "emb", "k": args.k, "nprobes": nprobes, "refine_factor": refine}

                def ours(q: np.ndarray) -> pa.Table:
                    return ours_ds.to_table(nearest={**nearest, "q": q}, columns=["id"])

                def theirs(q: np.ndarray) -> pa.Table:
                    return theirs_ds.to_table(nearest={**nearest, "q": q}, columns=["id"])

                got = [ours(q)["id"].to_pylist() for q in queries]
                equal = 0
                for q, g in zip(queries, got):
                    ref, mine = theirs(q), ours(q)
                    da, db = mine["_distance"].to_numpy(), ref["_distance"].to_numpy()
                    untied = [i for i in range(len(da)) if np.isclose(da, da[i], rtol=1e-6, atol=0).sum() == 1]
                    # (rows tied on a PQ distance may be ordered or cut at k, or k * refine_factor, differently)
                    equal += bool(np.allclose(da, db, rtol=1e-4, atol=1e-4) and all(g[i] == ref["id"][i].as_py() for i in untied))
                truth_ref = _recall([theirs(q)["id"].to_pylist() for q in queries], truth)
                a, b = _qps(ours, queries, args.rounds), _qps(theirs, queries, args.rounds)
                print(f"| {builder} | {nprobes} | {refine or '-'} | {_recall(got, truth):.3f} / {truth_ref:.3f} | "
                      f"{equal}/{len(queries)} | {a:.1f} | {b:.1f} | {a / b:.2f}x |")
    shutil.rmtree(paths["lancepy"], ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--index", choices=["IVF_PQ", "IVF_FLAT"], default=None)
    ap.add_argument("--partitions", type=int, default=256)
    ap.add_argument("--sub-vectors", type=int, default=16)
    ap.add_argument("--nprobes", type=int, nargs="+", default=[5, 10, 20, 40])
    args = ap.parse_args()
    try:
        import lance
    except ImportError:
        sys.exit("pylance is needed for the comparison: pip install pylance==14.0.2")
    import lancepy

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "vectors.lance")
        t = time.perf_counter()
        vectors = _dataset(path, args.rows, args.dim)
        print(f"dataset: {args.rows:,} x {args.dim}-d float32 + caption, 4 fragments (written in {time.perf_counter() - t:.1f} s)")
        rng = np.random.default_rng(7)
        queries = [vectors[i] + 0.1 * rng.standard_normal(args.dim).astype(np.float32) for i in rng.integers(0, args.rows, args.queries)]

        if args.index:
            return _index_bench(args, path, vectors, queries)
        ours_ds, theirs_ds = lancepy.dataset(path), lance.dataset(path)

        def ours(q: np.ndarray) -> pa.Table:
            return ours_ds.to_table(nearest={"column": "emb", "q": q, "k": args.k}, columns=["id"])

        def theirs(q: np.ndarray) -> pa.Table:
            return theirs_ds.to_table(nearest={"column": "emb", "q": q, "k": args.k}, columns=["id"])

        def ceiling(q: np.ndarray) -> np.ndarray:
            d = ((vectors - q) ** 2).sum(axis=1)
            top = np.argpartition(d, args.k)[: args.k]
            return top[np.argsort(d[top])]

        for q in queries:
            a, b = ours(q)["id"].to_pylist(), theirs(q)["id"].to_pylist()
            if a != b:
                sys.exit(f"results differ: lancepy {a} vs pylance {b}")
        res = {
            "lancepy exact search": _qps(ours, queries, args.rounds),
            "pylance exact search (no index)": _qps(theirs, queries, args.rounds),
            "numpy on in-memory vectors (reads nothing)": _qps(ceiling, queries, args.rounds),
        }
        print(f"\nk={args.k}, {args.queries} queries x {args.rounds} rounds (median), load average {os.getloadavg()[0]:.2f}\n")
        print("| search | queries/s |\n|---|---:|")
        for name, qps in res.items():
            print(f"| {name} | {qps:.2f} |")
        ratio = res["lancepy exact search"] / res["pylance exact search (no index)"]
        print(f"\nlancepy / pylance: {ratio:.2f}x (goal >= 2x); lancepy / numpy: "
              f"{res['lancepy exact search'] / res['numpy on in-memory vectors (reads nothing)']:.2f}x; rows equal pylance's")


if __name__ == "__main__":
    main()
