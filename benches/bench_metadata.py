"""Metadata cost at many fragments and versions: lancepy vs pylance on the same dataset.

The dataset is written by `--writer` (lancepy by default) as `--versions` appends of
`--fragments / --versions` fragments of 100 rows each, so it has `--fragments` fragments and
`--versions` versions. Then, each library in a process of its own, best of `--repeat`:

* open latest, open version 1 (a fresh dataset object each time);
* ``count_rows()`` and ``count_rows("x > 0.5")`` (also ``... again``: on one dataset object
  reused, as a training loop or a service would); ``to_table(filter="x > 0.5")``;
* ``versions()``; ``get_fragments()``;
* ``take`` of 100 rows spread over the fragments;
* ``to_pandas(columns=["x"], limit=5)``, ``get_version()``, the metadata of the middle fragment;
* opening ``asof`` now (the newest version committed by then: every version's time read);
* ``cleanup_old_versions`` that finds nothing old enough to remove (every version read).

``--config-commits N`` adds N commits that change only the dataset's config after the appends:
versions grow while the fragments stay (``versions()`` then reads N more manifests of the same
size; in the default shape, version v has v fragments, so its manifests grow with it).

``--ops`` picks some of them by name (``--ops "versions()" "open asof now"``): a cleanup
of 10,000 versions of 10,000 fragments reads 50M file entries, minutes for both libraries.

Operations other than the opens and ``... again`` run on a freshly opened dataset each time (the open is not
timed), so no per-dataset cache carries over between repeats; process-wide caches (lancepy's
reader cache, pylance's default session) stay warm, as in a long-running program.

    python benches/bench_metadata.py --fragments 1000 --versions 1000
    python benches/bench_metadata.py --fragments 10000 --versions 10000 --repeat 3

Prints one table: milliseconds per call and lancepy's speed relative to pylance
(pylance time / lancepy time; above 1 means lancepy is faster).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List

OPS = [
    "open latest",
    "open version 1",
    "count_rows()",
    'count_rows("x > 0.5")',
    'count_rows("x > 0.5") again',
    'to_table(filter="x > 0.5")',
    "versions()",
    "get_fragments()",
    "take 100 rows",
    "to_pandas(limit=5)",
    "get_version()",
    "get_fragment(k).metadata",
    "open asof now",
    "cleanup (nothing old)",
]


def build(uri: str, fragments: int, versions: int, writer: str, config_commits: int = 0) -> None:
    """Writes the dataset: `versions` appends of `fragments // versions` fragments each, then
    `config_commits` commits of one config key each."""
    import numpy as np
    import pyarrow as pa

    if fragments % versions:
        raise SystemExit("--fragments must be a multiple of --versions")
    per = fragments // versions
    lib: Any
    if writer == "pylance":
        import lance as lib
    else:
        import lancepy as lib
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for v in range(versions):
        rows = 100 * per
        table = pa.table({"x": rng.random(rows), "id": np.arange(v * rows, (v + 1) * rows, dtype=np.int64)})
        lib.write_dataset(table, uri, mode="append" if v else "create", max_rows_per_file=100)
        if v and v % 1000 == 0:
            print(f"  wrote {v} versions ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    ds = lib.dataset(uri)
    for k in range(config_commits):
        ds.update_config({"bench.commit": str(k)})
        if k and k % 1000 == 0:
            print(f"  committed {k} config changes ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)


def measure(lib_name: str, uri: str, repeat: int, ops: List[str]) -> Dict[str, float]:
    """Runs in the child process: best-of-`repeat` milliseconds for each operation."""
    lib: Any
    if lib_name == "pylance":
        import lance as lib
    else:
        import lancepy as lib

    def best(fn: Callable[[Any], object], fresh: bool = True) -> float:
        times = []
        for _ in range(repeat + 1):  # the first run warms process-wide state up
            ds = lib.dataset(uri) if fresh else None
            t0 = time.perf_counter()
            fn(ds)
            times.append((time.perf_counter() - t0) * 1e3)
        return min(times[1:])

    first = lib.dataset(uri)
    n = first.count_rows()
    rows = [int(i * (n - 1) / 99) for i in range(100)]
    runs: Dict[str, Callable[[], float]] = {
        "open latest": lambda: best(lambda _: lib.dataset(uri), fresh=False),
        "open version 1": lambda: best(lambda _: lib.dataset(uri, version=1), fresh=False),
        "count_rows()": lambda: best(lambda ds: ds.count_rows()),
        'count_rows("x > 0.5")': lambda: best(lambda ds: ds.count_rows("x > 0.5")),
        # The same dataset object each time (what a training loop or a service does).
        'count_rows("x > 0.5") again': lambda: best(lambda _: first.count_rows("x > 0.5"), fresh=False),
        'to_table(filter="x > 0.5")': lambda: best(lambda ds: ds.to_table(filter="x > 0.5")),
        "versions()": lambda: best(lambda ds: ds.versions()),
        "get_fragments()": lambda: best(lambda ds: ds.get_fragments()),
        "take 100 rows": lambda: best(lambda ds: ds.take(rows)),
        "to_pandas(limit=5)": lambda: best(lambda ds: ds.to_pandas(columns=["x"], limit=5)),
        "get_version()": lambda: best(lambda ds: ds.get_version()),
        "get_fragment(k).metadata": lambda: best(lambda ds: ds.get_fragment(n // 200).metadata),
        "open asof now": lambda: best(lambda _: lib.dataset(uri, asof=datetime.datetime.now()), fresh=False),
        "cleanup (nothing old)": lambda: best(lambda ds: ds.cleanup_old_versions(older_than=datetime.timedelta(days=36500))),
    }
    out = {op: runs[op]() for op in ops}
    # The answers must agree between the libraries (checked by the parent).
    out["_check"] = [
        n,
        first.count_rows("x > 0.5"),
        first.to_table(filter="x > 0.5").num_rows,
        first.version,  # (the number of versions: the bench's datasets have every version)
        len(first.get_fragments()),
    ]  # type: ignore[assignment]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fragments", type=int, default=1000)
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--config-commits", type=int, default=0, help="config-only commits after the appends")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--writer", choices=["lancepy", "pylance"], default="lancepy")
    parser.add_argument("--dir", help="keep the dataset here (reused when it exists)")
    parser.add_argument("--ops", nargs="+", choices=OPS, default=OPS, metavar="OP", help="operations to time (default: all)")
    parser.add_argument("--child", nargs=2, metavar=("LIB", "URI"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], args.child[1], args.repeat, args.ops)))
        return

    tmp = None
    if args.dir:
        uri = args.dir
    else:
        tmp = tempfile.mkdtemp(prefix="bench_metadata_")
        uri = os.path.join(tmp, "ds.lance")
    try:
        if not os.path.exists(uri):
            t0 = time.perf_counter()
            build(uri, args.fragments, args.versions, args.writer, args.config_commits)
            print(f"wrote {args.fragments} fragments / {args.versions} versions (+{args.config_commits} config) with {args.writer} "
                  f"in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        results = {}
        for lib in ("lancepy", "pylance"):
            got = subprocess.run(
                [sys.executable, __file__, "--repeat", str(args.repeat), "--child", lib, uri, "--ops", *args.ops],
                check=True, capture_output=True, text=True,
            )
            results[lib] = json.loads(got.stdout.strip().splitlines()[-1])
        if results["lancepy"]["_check"] != results["pylance"]["_check"]:
            raise SystemExit(f"answers differ: {results['lancepy']['_check']} vs {results['pylance']['_check']}")
        _, _, _, versions, fragments = results["lancepy"]["_check"]
        print(f"\n{fragments} fragments, {versions} versions, best of {args.repeat}\n")
        print("| operation | lancepy ms | pylance ms | lancepy speed vs pylance |")
        print("|---|---:|---:|---:|")
        for op in args.ops:
            a, b = results["lancepy"][op], results["pylance"][op]
            print(f"| {op} | {a:.2f} | {b:.2f} | {b / a:.2f}x |")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
