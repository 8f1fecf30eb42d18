"""Index files in pylance's legacy layouts: lancepy vs pylance on the same data, in one run.

Measures (median of `--repeat` runs, warm page cache, caches of a fresh dataset object
excluded by a warm-up run):

* BTREE segments in the legacy (v1) file format (what pylance < 0.21 wrote; generated here
  with lancepy's legacy writer in pylance 0.20's layout): an equality filter and a narrow
  range filter answered from the index, each library on the same dataset; the same queries
  on a Lance 2.x BTREE segment (pylance-built) for reference;
* IVF_PQ indices in the legacy index layout (``index_file_version="Legacy"``): build time
  (lancepy vs pylance), and k=10 searches (nprobes=20) of `--queries` queries with each
  library, on the index pylance wrote and on the one lancepy wrote.

Run: ``python benches/bench_legacy_index.py [--rows N] [--vectors N] [--repeat R] [--queries Q]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid as _uuid
from typing import Callable

import lance
import lancepy
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lancepy import _lancepy

PAGE = 4096


def median_s(fn: Callable[[], object], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def legacy_btree(path: str, name: str) -> None:
    """Replaces the BTREE index `name` by a legacy segment over the same rows (pylance 0.20's
    layout: sorted rows in 4096-row batches of a legacy page_data.lance, a legacy
    page_lookup.lance), committed without a file list as pylance 0.20 did."""
    from lancepy._table import commit as _commit

    ds = lancepy.dataset(path)
    entry = next(e for e in ds._index_entries() if e["name"] == name)
    column = ds.schema.field(entry["fields"][0]).name
    t = ds.to_table(columns=[column], with_row_address=True)
    values, ids = t.column(column).combine_chunks(), t.column("_rowaddr").combine_chunks()
    order = pc.array_sort_indices(values, null_placement="at_start")
    values, ids = values.take(order), ids.take(order)
    uid = str(_uuid.uuid4())
    base = os.path.join(path, "_indices", uid)
    os.makedirs(base)
    dschema = pa.schema([pa.field("values", values.type), pa.field("row_ids", pa.uint64())])
    w = _lancepy.LegacyFileWriter(os.path.join(base, "page_data.lance"), dschema, PAGE)
    mins, maxs, nulls = [], [], []
    for s in range(0, len(values), PAGE):
        page = values.slice(s, PAGE)
        w.write_batch(pa.record_batch([page, ids.slice(s, PAGE)], schema=dschema))
        mm = pc.min_max(page)
        mins.append(mm["min"].as_py())
        maxs.append(mm["max"].as_py())
        nulls.append(page.null_count)
    w.finish()
    lschema = pa.schema([pa.field("min", values.type), pa.field("max", values.type),
                         pa.field("null_count", pa.uint32(), nullable=False), pa.field("page_idx", pa.uint32(), nullable=False)])
    w = _lancepy.LegacyFileWriter(os.path.join(base, "page_lookup.lance"), lschema, len(mins))
    w.write_batch(pa.record_batch([pa.array(mins, values.type), pa.array(maxs, values.type), pa.array(nulls, pa.uint32()),
                                   pa.array(range(len(mins)), pa.uint32())], schema=lschema))
    w.finish()
    raw = {_commit._uuid_str(e["uuid"]): e for e in json.loads(_lancepy.index_section_to_json(ds._view.loaded.index_section))["indices"]}
    old = raw[entry["uuid"]]
    new = {k: v for k, v in old.items() if k not in ("files", "index_version")}
    new.update({"uuid": {"uuid": list(_uuid.UUID(uid).bytes)}, "created_at": int(time.time() * 1000)})
    ds._commit("CreateIndex", {"new_indices": [new], "removed_indices": [old]}, [])


def bench_btree(root: str, rows: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    table = pa.table({"id": np.arange(rows, dtype=np.int64), "v": rng.integers(0, rows // 4, rows)})
    filters = {"eq": f"v = {int(table['v'][rows // 2].as_py())}", "range": f"v BETWEEN 1000 AND {1000 + rows // 800}"}
    print(f"BTREE, {rows:,} rows (legacy segment vs Lance 2.x segment); seconds per query, median of {repeat}")
    print(f"{'query':<8} {'segment':<8} {'rows':>6} {'lancepy':>9} {'pylance':>9} {'lancepy/pylance':>16}")
    for layout in ("legacy", "2.x"):
        path = os.path.join(root, f"btree_{layout}")
        lance.write_dataset(table, path)
        lance.dataset(path).create_scalar_index("v", "BTREE", name="v_idx")
        if layout == "legacy":
            legacy_btree(path, "v_idx")
        mine, theirs = lancepy.dataset(path), lance.dataset(path)
        for q, flt in filters.items():
            a, b = mine.to_table(filter=flt), theirs.to_table(filter=flt)
            assert a.sort_by("id") == b.sort_by("id"), flt
            assert "ScalarIndexQuery" in mine.scanner(filter=flt).explain_plan()
            tm = median_s(lambda: mine.to_table(filter=flt), repeat)
            tp = median_s(lambda: theirs.to_table(filter=flt), repeat)
            print(f"{q:<8} {layout:<8} {a.num_rows:>6} {tm:>9.4f} {tp:>9.4f} {tm / tp:>16.2f}")


def bench_ivf_pq(root: str, n: int, queries: int, repeat: int) -> None:
    dim = 64
    rng = np.random.default_rng(1)
    vec = rng.random((n, dim), dtype=np.float32)
    table = pa.table({"id": np.arange(n, dtype=np.int64),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), dim)})
    qs = [rng.random(dim, dtype=np.float32) for _ in range(queries)]
    kw = {"index_type": "IVF_PQ", "num_partitions": 64, "num_sub_vectors": 16, "index_file_version": "Legacy"}
    print(f"\nIVF_PQ legacy layout, {n:,} vectors of {dim} float32, 64 partitions, 16 sub-vectors")
    built = {}
    for who, lib in (("pylance", lance), ("lancepy", lancepy)):
        path = os.path.join(root, f"ivf_{who}")
        lib.write_dataset(table, path)
        t0 = time.perf_counter()
        lib.dataset(path).create_index("vector", **kw)
        built[who] = (path, time.perf_counter() - t0)
    print(f"build (s, one run): lancepy {built['lancepy'][1]:.2f}, pylance {built['pylance'][1]:.2f}, "
          f"ratio {built['lancepy'][1] / built['pylance'][1]:.2f}")
    print(f"{queries} searches, k=10, nprobes=20; seconds for all, median of {repeat}")
    print(f"{'index by':<9} {'lancepy':>9} {'pylance':>9} {'lancepy/pylance':>16} {'same rows':>10}")
    for who, (path, _) in built.items():
        mine, theirs = lancepy.dataset(path), lance.dataset(path)

        def run(ds) -> list:
            return [ds.to_table(nearest={"column": "vector", "q": q, "k": 10, "nprobes": 20}, columns=["id"]) for q in qs]

        same = all(a["id"] == b["id"] for a, b in zip(run(mine), run(theirs)))
        tm, tp = median_s(lambda: run(mine), repeat), median_s(lambda: run(theirs), repeat)
        print(f"{who:<9} {tm:>9.3f} {tp:>9.3f} {tm / tp:>16.2f} {str(same):>10}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--vectors", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="bench_legacy_index_")
    try:
        bench_btree(root, args.rows, args.repeat)
        bench_ivf_pq(root, args.vectors, args.queries, args.repeat)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
