"""Building a commit's manifest at many fragments: the paths that keep the base's fragments
native (deltas, header-only) against the generic path that decodes the whole base manifest.

``python benches/bench_commit_build.py [--fragments 10000] [--dir PATH] [--repeat 5]``: a
dataset of ``--fragments`` one-row fragments (written once by lancepy into ``--dir``, reused when
it is there), then, per operation, the best of ``--repeat`` builds and encodings of one
synthetic transaction onto the latest manifest (``build_manifest(...).encode()``), each path
on a freshly loaded base. Operations: an append of 2 fragments, a delete of 2, a rewrite of 2
into 1, a data replacement of 1 fragment's file, a merge (every fragment listed, as
``add_columns`` commits), a restore of version 1, a projection onto the first column
(``drop_columns``: every fragment changes), a config change. Prints milliseconds and the
speed-up; the two manifests are checked equal.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import tempfile
import time

import pyarrow as pa

import lancepy
from lancepy import _lancepy
from lancepy._table import commit as C
from lancepy._table.manifest import load_manifest


def _bodies(base) -> dict:
    frags = json.loads(base.native.json())["fragments"]
    for f in frags:
        f.pop("row_id_sequence", None)
    two = copy.deepcopy(frags[:2])
    new_file = dict(frags[5]["files"][0], path="replaced.lance")
    return {
        "Append": {"fragments": [dict(f, id=0) for f in two]},
        "Delete": {"updated_fragments": [], "deleted_fragment_ids": [frags[3]["id"], frags[4]["id"]], "predicate": "x"},
        "Rewrite": {"groups": [{"old_fragments": frags[6:8], "new_fragments": [dict(frags[6], id=0)]}]},
        "DataReplacement": {"replacements": [{"fragment_id": frags[5]["id"], "new_file": new_file}]},
        "Merge": {"fragments": frags, "schema": json.loads(base.native.fields_json()), "schema_metadata": {}},
        "Restore": {"version": 1},
        "Project": {"schema": json.loads(base.native.fields_json())[:1]},
        "UpdateConfig": {"upsert_values": {"k": "v"}},
    }


def _decoded(data: bytes) -> dict:
    m = json.loads(_lancepy.read_manifest(data, "bench.manifest")[0])
    m.pop("timestamp")
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fragments", type=int, default=10_000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    uri = args.dir or os.path.join(tempfile.gettempdir(), f"bench_commit_build_{args.fragments}")
    if not os.path.exists(uri):
        n = args.fragments
        lancepy.write_dataset(pa.table({"id": pa.array(range(n), pa.int64()), "x": pa.array([float(i) for i in range(n)])}),
                              uri, max_rows_per_file=1)
    ds = lancepy.dataset(uri)
    store = ds._view.store
    base = load_manifest(store, ds.version)
    print(f"{len(base.native.fragment_ids)} fragments, version {ds.version} ({uri})")
    keeps, header = C._keeps_fragments, C._HEADER_OPERATIONS

    def build(txn, fast: bool):
        C._keeps_fragments = keeps if fast else (lambda *a: False)
        C._HEADER_OPERATIONS = header if fast else ()
        best, out = float("inf"), b""
        try:
            for _ in range(args.repeat):
                b = load_manifest(store, ds.version)
                t = time.perf_counter()
                out = C.build_manifest(b, txn, ds.version + 1, "bench.txn", store=store).encode(b"")
                best = min(best, time.perf_counter() - t)
        finally:
            C._keeps_fragments, C._HEADER_OPERATIONS = keeps, header
        return best, out

    print(f"{'operation':<16} {'fast path':>10} {'generic':>10} {'speed-up':>9}")
    for name, body in _bodies(base).items():
        txn = C.new_transaction(ds.version, name, body)
        fast, a = build(txn, True)
        slow, b = build(txn, False)
        assert _decoded(a) == _decoded(b), f"{name}: the two paths built different manifests"
        print(f"{name:<16} {fast * 1e3:8.1f} ms {slow * 1e3:7.1f} ms {slow / fast:8.1f}x")


if __name__ == "__main__":
    main()
