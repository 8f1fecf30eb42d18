"""Scalar index queries and builds: lancepy vs pylance (vs an unindexed scan, and Parquet via
pyarrow.dataset) on the same data.

``python benches/bench_scalar_index.py [--rows 1000000] [--repeats 5]``: rows of (id int64
shuffled 0..n-1, cat int64 of 100 values, x float64), written once by pylance and copied, so
both libraries index and read the same files. Timed (best of ``--repeats`` warm runs):
BTREE build on ``id`` and BITMAP build on ``cat`` (each library on its own copy, once);
``id = k`` and a 0.1% range ``id >= a AND id < a + n/1000`` with BTREE, and ``cat = 17``
with BITMAP, each by lancepy and pylance on their own index, and unindexed (a copy without
indices) by lancepy, pylance and Parquet. Ratios: lancepy time / pylance time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

import lance
import lancepy


def best(fn, repeats: int) -> float:
    out = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def once(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    n, r = args.rows, args.repeats
    rng = np.random.default_rng(0)
    table = pa.table(
        {"id": rng.permutation(n).astype(np.int64), "cat": rng.integers(0, 100, n), "x": rng.normal(size=n)}
    )
    root = tempfile.mkdtemp(prefix="bench_scalar_index_")
    try:
        plain, ours, theirs = (os.path.join(root, d) for d in ("plain", "ours", "theirs"))
        lance.write_dataset(table, plain)
        shutil.copytree(plain, ours)
        shutil.copytree(plain, theirs)
        parquet = os.path.join(root, "t.parquet")
        pq.write_table(table, parquet)
        print(f"rows={n} repeats={r}")
        builds = {
            "BTREE build (id)": (
                once(lambda: lancepy.dataset(ours).create_scalar_index("id", "BTREE")),
                once(lambda: lance.dataset(theirs).create_scalar_index("id", "BTREE")),
            ),
            "BITMAP build (cat, 100 values)": (
                once(lambda: lancepy.dataset(ours).create_scalar_index("cat", "BITMAP")),
                once(lambda: lance.dataset(theirs).create_scalar_index("cat", "BITMAP")),
            ),
        }
        print(f"{'':34s} {'lancepy':>9s} {'pylance':>9s} {'ratio':>6s}")
        for name, (a, b) in builds.items():
            print(f"{name:34s} {a:9.3f} {b:9.3f} {a / b:6.2f}")
        k, a = int(n // 3), int(n // 2)
        queries = {
            "id = k (BTREE)": f"id = {k}",
            "0.1% range of id (BTREE)": f"id >= {a} AND id < {a + max(1, n // 1000)}",
            "cat = 17 (BITMAP, 1% of rows)": "cat = 17",
        }
        pqds = pads.dataset(parquet)
        pq_filters = {
            "id = k (BTREE)": pads.field("id") == k,
            "0.1% range of id (BTREE)": (pads.field("id") >= a) & (pads.field("id") < a + max(1, n // 1000)),
            "cat = 17 (BITMAP, 1% of rows)": pads.field("cat") == 17,
        }
        lp, ll, lp_plain, ll_plain = lancepy.dataset(ours), lance.dataset(theirs), lancepy.dataset(plain), lance.dataset(plain)
        print(
            f"\n{'query (seconds)':34s} {'lancepy':>9s} {'pylance':>9s} {'ratio':>6s}"
            f" {'lp scan':>9s} {'pl scan':>9s} {'parquet':>9s} {'scan/idx lp':>11s}"
        )
        for name, flt in queries.items():
            want = ll_plain.to_table(filter=flt).num_rows
            assert lp.to_table(filter=flt).num_rows == ll.to_table(filter=flt).num_rows == want, name
            assert "ScalarIndexQuery" in lp.scanner(filter=flt).explain_plan(), name
            assert "ScalarIndexQuery" in ll.scanner(filter=flt).explain_plan(), name
            t_lp = best(lambda flt=flt: lp.to_table(filter=flt), r)
            t_ll = best(lambda flt=flt: ll.to_table(filter=flt), r)
            t_lp_scan = best(lambda flt=flt: lp_plain.to_table(filter=flt), r)
            t_ll_scan = best(lambda flt=flt: ll_plain.to_table(filter=flt), r)
            t_pq = best(lambda f=pq_filters[name]: pqds.to_table(filter=f), r)
            print(
                f"{name:34s} {t_lp:9.4f} {t_ll:9.4f} {t_lp / t_ll:6.2f}"
                f" {t_lp_scan:9.4f} {t_ll_scan:9.4f} {t_pq:9.4f} {t_lp_scan / t_lp:11.1f}"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
