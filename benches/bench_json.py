"""JSON columns (``pa.json_()``, stored as JSONB): lancepy vs pylance on the same data.

``python benches/bench_json.py [--docs 200000] [--repeats 3] [--queries 100]``: synthetic
documents (seeded, nothing downloaded) of a nested shape typical of event or metadata
columns: ``{"id", "user": {"name", "age"}, "tags": [...], "text": 10-40 words, "score",
"ok"}``. Timed, best of ``--repeats``:

- write: each library writes the same Arrow table of JSON text (parsed and stored as JSONB);
- read: the whole JSON column of pylance's dataset, as JSON text, by each library;
- take: 1,000 random rows of it;
- filters: ``json_get_int`` / ``json_extract`` / ``json_array_contains`` predicates
  (``count_rows``), and a ``to_table`` of the rows one keeps, each library on pylance's
  dataset;
- JSON-path indices (``IndexConfig("json", ...)``): a BTREE over ``id`` and a BITMAP over
  ``ok``, built by each library on its own copy; point lookups, 0.1% ranges and a boolean,
  each library on its own index (the unindexed scan's time for scale);
- FTS: an INVERTED index on the column (JSON documents flattened into
  ``<path>,<type>,<value>`` tokens), built once by each library on its own copy, and
  ``--queries`` triplet queries (``limit=10``), each library on its own index; the top-10
  rows are checked against pylance's.

Checked: reads and takes equal pylance's; filter counts equal. Ratios: lancepy time /
pylance time (below 1: lancepy is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa

import lance
import lancepy


def make_docs(n: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, rng.integers(3, 9))) for _ in range(5000)]
    p = 1.0 / np.arange(1, len(words) + 1)
    p /= p.sum()
    lengths = rng.integers(10, 41, n)
    picks = rng.choice(len(words), size=int(lengths.sum()) + 4 * n, p=p)
    out, at = [], 0
    for i, ln in enumerate(lengths):
        text = " ".join(words[j] for j in picks[at:at + ln])
        at += ln
        tags = [words[j] for j in picks[at:at + 3]]
        at += 3
        doc = {"id": i, "user": {"name": words[picks[at]], "age": int(rng.integers(18, 90))}, "tags": tags,
               "text": text, "score": round(float(rng.random()) * 100, 3), "ok": bool(i % 3)}
        at += 1
        out.append(json.dumps(doc))
    return out, words


def best(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def row(name: str, lp: float, pl: float) -> None:
    print(f"| {name} | {lp * 1000:,.1f} ms | {pl * 1000:,.1f} ms | {lp / pl:.2f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()

    docs, words = make_docs(args.docs)
    table = pa.table({"i": pa.array(range(len(docs)), pa.int64()), "doc": pa.array(docs, type=pa.json_())})
    root = tempfile.mkdtemp(prefix="bench_json_")
    try:
        print(f"{args.docs:,} documents, {sum(map(len, docs)) / 2**20:.1f} MiB of JSON text; best of {args.repeats}")
        print("| step | lancepy | pylance | lancepy / pylance |")
        print("|---|---:|---:|---:|")

        def write(lib, name):
            def go():
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)
                lib.write_dataset(table, os.path.join(root, name))
            return go

        t_lp, _ = best(write(lancepy, "w_lp"), args.repeats)
        t_pl, _ = best(write(lance, "w_pl"), args.repeats)
        row("write (JSON text → JSONB)", t_lp, t_pl)
        uri = os.path.join(root, "w_pl")

        t_lp, got = best(lambda: lancepy.dataset(uri).to_table(columns=["doc"]), args.repeats)
        t_pl, want = best(lambda: lance.dataset(uri).to_table(columns=["doc"]), args.repeats)
        assert got.column("doc").to_pylist() == want.column("doc").to_pylist()
        row("read the column (JSONB → text)", t_lp, t_pl)

        idx = np.sort(np.random.default_rng(1).choice(len(docs), 1000, replace=False))
        t_lp, got = best(lambda: lancepy.dataset(uri).take(idx, columns=["doc"]), args.repeats)
        t_pl, want = best(lambda: lance.dataset(uri).take(idx, columns=["doc"]), args.repeats)
        assert got.column("doc").to_pylist() == want.column("doc").to_pylist()
        row("take 1,000 rows", t_lp, t_pl)

        for flt in ["json_get_int(doc, 'id') < 1000", "json_extract(doc, '$.user.age') = '42'",
                    f"json_array_contains(doc, '$.tags', '{words[3]}')"]:
            t_lp, n_lp = best(lambda: lancepy.dataset(uri).count_rows(filter=flt), args.repeats)
            t_pl, n_pl = best(lambda: lance.dataset(uri).count_rows(filter=flt), args.repeats)
            assert n_lp == n_pl, (flt, n_lp, n_pl)
            row(f"count_rows({flt}) = {n_pl:,}", t_lp, t_pl)

        flt = "json_get_int(doc, 'id') % 50 = 0"
        t_lp, got = best(lambda: lancepy.dataset(uri).to_table(filter=flt), args.repeats)
        t_pl, want = best(lambda: lance.dataset(uri).to_table(filter=flt), args.repeats)
        assert got.equals(want)
        row(f"to_table(filter={flt}) = {want.num_rows:,} rows", t_lp, t_pl)

        json_index_rows(root, uri, args, len(docs))

        for name in ("f_lp", "f_pl"):
            shutil.copytree(uri, os.path.join(root, name))
        t0 = time.perf_counter()
        lancepy.dataset(os.path.join(root, "f_lp")).create_scalar_index("doc", "INVERTED")
        t_lp = time.perf_counter() - t0
        t0 = time.perf_counter()
        lance.dataset(os.path.join(root, "f_pl")).create_scalar_index("doc", "INVERTED")
        t_pl = time.perf_counter() - t0
        row("FTS build (once)", t_lp, t_pl)

        rng = np.random.default_rng(2)
        queries = []
        for _ in range(args.queries):
            k = rng.integers(0, 4)
            if k == 0:
                queries.append(f"text,str,{words[rng.integers(0, 300)]} {words[rng.integers(0, 3000)]}")
            elif k == 1:
                queries.append(f"tags,str,{words[rng.integers(0, 500)]};ok,bool,true")
            elif k == 2:
                queries.append(f"user.age,number,{rng.integers(18, 90)};user.name,str,{words[rng.integers(0, 200)]}")
            else:
                queries.append(f"text,str,{words[rng.integers(0, 50)]}")
        ds_lp, ds_pl = lancepy.dataset(os.path.join(root, "f_lp")), lance.dataset(os.path.join(root, "f_pl"))

        def search(ds):
            return [ds.to_table(full_text_query=q, columns=["i"], limit=10) for q in queries]

        t_lp, got = best(lambda: search(ds_lp), args.repeats)
        t_pl, want = best(lambda: search(ds_pl), args.repeats)
        same = 0
        for a, b in zip(got, want):
            sa, sb = a.column("_score").to_numpy(), b.column("_score").to_numpy()
            if len(sa) == len(sb) and np.allclose(sa, sb, rtol=1e-4):
                same += 1
        row(f"FTS {len(queries)} queries (same top-10 scores: {same}/{len(queries)})", t_lp, t_pl)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def json_index_rows(root: str, uri: str, args, n: int) -> None:
    """JSON-path indices (``IndexConfig("json", ...)``): built by each library on its own copy,
    queried by each on its own index; the unindexed scan (lancepy) for scale."""
    from lance.indices import IndexConfig as PyIndexConfig
    from lancepy.indices import IndexConfig

    for name in ("j_lp", "j_pl"):
        shutil.copytree(uri, os.path.join(root, name))
    for target, path in (("btree", "id"), ("bitmap", "ok")):
        params = {"target_index_type": target, "path": path}
        t0 = time.perf_counter()
        lancepy.dataset(os.path.join(root, "j_lp")).create_scalar_index("doc", IndexConfig("json", params), name=path)
        t_lp = time.perf_counter() - t0
        t0 = time.perf_counter()
        lance.dataset(os.path.join(root, "j_pl")).create_scalar_index("doc", PyIndexConfig("json", params), name=path)
        t_pl = time.perf_counter() - t0
        row(f"JSON-path {target.upper()} build on '{path}' (once)", t_lp, t_pl)
    ds_lp, ds_pl = lancepy.dataset(os.path.join(root, "j_lp")), lance.dataset(os.path.join(root, "j_pl"))
    plain = lancepy.dataset(uri)
    keys = np.random.default_rng(3).integers(0, n, args.queries)
    width = max(1, n // 1000)
    cases = [
        (f"{args.queries} × json_get_int(doc, 'id') = k", [f"json_get_int(doc, 'id') = {k}" for k in keys]),
        (f"{args.queries} × 0.1% range of 'id'",
         [f"json_get_int(doc, 'id') BETWEEN {k} AND {k + width - 1}" for k in keys]),
        ("json_get_bool(doc, 'ok') = false (a third of the rows)", ["json_get_bool(doc, 'ok') = false"]),
    ]
    for label, filters in cases:
        def run(ds):
            return [ds.to_table(columns=["i"], filter=f).num_rows for f in filters]

        t_lp, got = best(lambda: run(ds_lp), args.repeats)
        t_pl, want = best(lambda: run(ds_pl), args.repeats)
        assert got == want, label
        t_scan, scanned = best(lambda: run(plain), 1)
        assert scanned == want, label
        assert "Json(" in ds_lp.scanner(filter=filters[0]).explain_plan() or "ok" in label
        row(f"{label} (unindexed scan: {t_scan * 1000:,.0f} ms)", t_lp, t_pl)


if __name__ == "__main__":
    main()
