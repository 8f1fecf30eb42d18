"""Full-text search (INVERTED index): lancepy vs pylance on the same data.

``python benches/bench_fts.py [--docs 100000] [--queries 200] [--repeats 3]``: synthetic
documents of 20-200 words drawn from a Zipf vocabulary of 50,000 made-up words (seeded,
nothing downloaded), written once by pylance and copied so both libraries index the same
files. Timed: the INVERTED build (default options) by each library on its own copy, once, in
a fresh process (its peak resident memory above what it held before the call, ``VmHWM`` less
``VmRSS``, is reported too); the
``--queries`` random queries of 1-3 words (``limit=10``), each library on its own index, best
of ``--repeats`` passes over all of them. Checked: for each query the top-10 rows and scores
lancepy finds on its index against pylance's on pylance's index (same rows, allowing rows
whose score ties the 10th; scores within 1e-4). Ratios: lancepy time / pylance time.

With ``--prefilter`` (default on; ``--no-prefilter`` skips it) the match queries run again
with ``filter="id % 10 < 3", prefilter=True`` (30% of the rows pass; one filter for all
queries, as a tenant or category filter is).

With ``--phrases N`` (default 100; 0 skips it) the same is done for ``with_position=True``
indices (build time) and N phrase queries of 2-3 consecutive words cut from the documents
(``PhraseQuery``, slop 0, ``limit=10``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

import lance
import lancepy
import lancepy.query


def make_docs(n: int, vocab: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, rng.integers(3, 10))) for _ in range(vocab)]
    ranks = np.arange(1, vocab + 1, dtype=np.float64)
    p = 1.0 / ranks
    p /= p.sum()
    lengths = rng.integers(20, 201, n)
    picks = rng.choice(vocab, size=int(lengths.sum()), p=p)
    out, at = [], 0
    for ln in lengths:
        out.append(" ".join(words[i] for i in picks[at:at + ln]))
        at += ln
    return out, words, p


HERE = os.path.dirname(os.path.abspath(__file__))

_BUILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[4])
from _child import status
L = __import__("lance" if sys.argv[1] == "pylance" else "lancepy")
ds = L.dataset(sys.argv[2])
before = status("VmRSS")
t = time.perf_counter()
ds.create_scalar_index("text", "INVERTED", with_position=sys.argv[3] == "1")
print(json.dumps({"seconds": time.perf_counter() - t, "peak": status("VmHWM") - before}))
"""


def build(lib: str, path: str, with_position: bool) -> dict:
    """Builds the index in a fresh process: its seconds and peak bytes."""
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(HERE), "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", _BUILD, lib, path, "1" if with_position else "0", HERE],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--phrases", type=int, default=100)
    ap.add_argument("--prefilter", action=argparse.BooleanOptionalAction, default=True)
    args = ap.parse_args()
    docs, words, p = make_docs(args.docs, 50_000)
    rng = np.random.default_rng(1)
    qs = [" ".join(words[i] for i in rng.choice(len(words), rng.integers(1, 4), p=p)) for _ in range(args.queries)]
    root = tempfile.mkdtemp(prefix="bench_fts_")
    try:
        ours, theirs = os.path.join(root, "ours"), os.path.join(root, "theirs")
        lance.write_dataset(pa.table({"id": np.arange(len(docs)), "text": docs}), theirs)
        shutil.copytree(theirs, ours)
        build_pl = build("pylance", theirs, False)
        build_lp = build("lancepy", ours, False)
        pl, lp = lance.dataset(theirs), lancepy.dataset(ours)

        def run(ds) -> list:
            return [ds.to_table(full_text_query=q, columns=["id"], limit=10) for q in qs]

        report(pl, lp, run, len(docs), len(qs), build_lp, build_pl, args.repeats, "match")
        if args.prefilter:
            def run_prefiltered(ds) -> list:
                return [ds.to_table(full_text_query=q, columns=["id"], limit=10, filter="id % 10 < 3", prefilter=True)
                        for q in qs]

            report(pl, lp, run_prefiltered, len(docs), len(qs), build_lp, build_pl, args.repeats,
                   "match, prefilter id % 10 < 3")
        if args.phrases:
            prng = np.random.default_rng(2)
            phrases = []
            for _ in range(args.phrases):
                w = docs[int(prng.integers(len(docs)))].split()
                at = int(prng.integers(len(w) - 3))
                phrases.append(" ".join(w[at:at + int(prng.integers(2, 4))]))
            for d in (ours, theirs):
                lance.dataset(d).drop_index("text_idx")
            build_pl = build("pylance", theirs, True)
            build_lp = build("lancepy", ours, True)
            pl, lp = lance.dataset(theirs), lancepy.dataset(ours)

            def run_phrases(ds) -> list:
                mod = lancepy.query if isinstance(ds, lancepy.LanceDataset) else lance.query
                return [ds.to_table(full_text_query=mod.PhraseQuery(q, "text"), columns=["id"], limit=10) for q in phrases]

            report(pl, lp, run_phrases, len(docs), len(phrases), build_lp, build_pl, args.repeats, "phrase (with_position)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def report(pl, lp, run, n_docs: int, n_queries: int, build_lp: dict, build_pl: dict, repeats: int, what: str) -> None:
    """Checks lancepy's top-10 against pylance's and prints build and query times."""
    same, worst = 0, 0.0
    for a, b in zip(run(pl), run(lp)):
        sa, sb = a.column("_score").to_numpy(), b.column("_score").to_numpy()
        ok = len(sa) == len(sb)
        if ok and len(sa):
            worst = max(worst, float(np.max(np.abs(sa - sb))))
            cut = sa[-1]
            da = dict(zip(a.column("id").to_pylist(), sa))
            db = dict(zip(b.column("id").to_pylist(), sb))
            ok = np.allclose(sa, sb, atol=1e-4) and all(
                (k in da and k in db and abs(da[k] - db[k]) <= 1e-4) or abs(da.get(k, db.get(k)) - cut) <= 1e-4
                for k in set(da) | set(db)
            )
        same += ok
    times = {}
    for name, ds in (("pylance", pl), ("lancepy", lp)):
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            run(ds)
            best = min(best, time.perf_counter() - t0)
        times[name] = best / n_queries
    print(f"[{what}] docs={n_docs} queries={n_queries} (limit 10)")
    print(f"same top-10 rows and scores: {same}/{n_queries}; largest score difference {worst:.2e}")
    lt, pt, lm, pm = build_lp["seconds"], build_pl["seconds"], build_lp["peak"] / 2**20, build_pl["peak"] / 2**20
    print(f"build: lancepy {lt:.2f} s, pylance {pt:.2f} s, ratio {lt / pt:.2f}; "
          f"peak memory lancepy {lm:.0f} MiB, pylance {pm:.0f} MiB, ratio {lm / max(pm, 1e-9):.2f}")
    print(
        f"query: lancepy {times['lancepy'] * 1e3:.2f} ms, pylance {times['pylance'] * 1e3:.2f} ms, "
        f"ratio {times['lancepy'] / times['pylance']:.2f} (first query of lancepy includes opening the index: "
        "best of the passes is reported)"
    )
    print(f"queries/s: lancepy {1 / times['lancepy']:.0f}, pylance {1 / times['pylance']:.0f}, "
          f"lancepy / pylance {times['pylance'] / times['lancepy']:.2f} (goal: at least 1.5)")


if __name__ == "__main__":
    main()
