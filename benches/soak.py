"""Soak test: many writer processes on one local dataset, killed with SIGKILL at random moments.

    python benches/soak.py --writers 16 --commits 50 [--kill-every 2.0] [--dir DIR] [--seed 1]

`--writers` processes each commit `--commits` operations on one dataset (appends, deletes
and increments of shared rows, merge_insert upserts of their own rows, deletes of their own
rows, compaction), retrying conflicts (`conflict_retries`). A driver kills a random writer
with SIGKILL about every `--kill-every` seconds and starts it again; the restarted writer
continues from its log. A reader process checks every version it sees while they run.

Each writer logs an operation *before* running it (``begin``) and again after the call
returned (``done``, with what it reported) or raised a conflict (``failed``), each line
fsynced. An operation begun but neither done nor failed was cut by a kill: it may or may
not have committed, and must have committed entirely or not at all.

Checks, afterwards:
* the dataset opens at its latest version, every version from 1 to it opens;
* every id is there at most once, every row's ``chk`` column equals ``3 * id + val`` (a row
  is never a mix of two versions of itself);
* each writer's own rows are exactly what its certain operations imply (uncertain ones: one
  of the possible outcomes; appends all-or-nothing);
* shared rows: a certainly deleted row is gone, a present row's ``val`` lies between its
  certain increments and those plus the uncertain ones (no lost update), no row was
  reported deleted twice;
* pylance reads the same rows and ``lance.dataset(uri).validate()`` passes;
* lancepy's ``cleanup_old_versions(retain_versions=3, delete_unverified=True)`` leaves
  exactly the files the kept versions use (pylance lists their data and deletion files):
  every file a killed writer left behind is gone, and the kept versions still read the same.

Exit status 0 when every check passes; a summary line for benches/RESULTS.md is printed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from typing import Any, Dict, List, Optional, Set, Tuple

import pyarrow as pa

SHARED = 3000  # shared rows: ids 0..SHARED-1 (id % 3: 0 delete only, 1 increment only, 2 both)
OWN_BASE = 10**9  # writer w owns ids w*OWN_BASE + op*1000 + i
APPEND_ROWS = 50
RETRIES = 100
RETRY_TIMEOUT = datetime.timedelta(seconds=300)


def rows(ids: List[int], vals: List[int]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "val": pa.array(vals, pa.int64()),
            "chk": pa.array([3 * i + v for i, v in zip(ids, vals)], pa.int64()),
        }
    )


def own_id(w: int, op: int, i: int) -> int:
    return (w + 1) * OWN_BASE + op * 1000 + i


def owner(i: int) -> int:
    return i // OWN_BASE - 1


# -- writer log ------------------------------------------------------------------------------


def read_log(path: str) -> Tuple[List[Dict[str, Any]], int]:
    """The entries of a writer's log and the length of the file they fill; a last line cut
    by a kill (no newline, or not JSON) never happened."""
    entries: List[Dict[str, Any]] = []
    good = 0
    if os.path.exists(path):
        with open(path, "rb") as f:
            data = f.read()
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                entries.append(json.loads(line))
            except ValueError:
                break
            good += len(line)
    return entries, good


class Log:
    """A writer's operation log: JSON lines, each fsynced before the writer goes on."""

    def __init__(self, path: str) -> None:
        self.entries, good = read_log(path)
        self.f = open(path, "a")
        self.f.truncate(good)  # drop a line cut by the last kill

    def add(self, entry: Dict[str, Any]) -> None:
        self.entries.append(entry)
        self.f.write(json.dumps(entry) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())


def ops_of(entries: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The operations of a log in order: the begin entry with ``status`` done / failed /
    uncertain and the done entry's ``result``."""
    ops: Dict[int, Dict[str, Any]] = {}
    for e in entries:
        if "begin" in e:
            ops[e["begin"]] = dict(e, status="uncertain")
        elif "done" in e:
            ops[e["done"]].update(status="done", result=e.get("result"))
        elif "failed" in e:
            ops[e["failed"]].update(status="failed")
    return [ops[k] for k in sorted(ops)]


def live_own_ids(ops: List[Dict[str, Any]]) -> List[int]:
    """Own ids certainly present after the certain operations (what a writer may touch)."""
    live: Set[int] = set()
    for op in ops:
        if op["status"] != "done":
            continue
        if op["kind"] in ("append", "merge"):
            live.update(op["ids"])
        elif op["kind"] == "delete_own":
            live.difference_update(op["ids"])
    # An uncertain delete may have removed rows; touching them again is still well defined
    # (merge re-inserts, delete deletes nothing), so they stay candidates.
    return sorted(live)


# -- writer process -------------------------------------------------------------------------


def writer_main(uri: str, w: int, commits: int, logdir: str, compact_every: float) -> None:
    import lancepy
    from lancepy.exceptions import CommitConflictError

    log = Log(os.path.join(logdir, f"writer-{w}.log"))
    ops = ops_of(log.entries)
    rng = random.Random(w * 7919 + len(log.entries))
    next_op = (max(op["begin"] for op in ops) + 1) if ops else 0
    done = sum(op["status"] == "done" for op in ops)
    live = live_own_ids(ops)
    while done < commits:
        op = next_op
        next_op += 1
        r = rng.random()
        if r < compact_every:
            kind = "compact"
        else:
            kind = rng.choices(["append", "delete_shared", "increment", "merge", "delete_own"], [30, 20, 20, 18, 12])[0]
        if kind in ("merge", "delete_own") and len(live) < 5:
            kind = "append"
        entry: Dict[str, Any] = {"begin": op, "kind": kind}
        if kind == "append":
            entry["ids"] = [own_id(w, op, i) for i in range(APPEND_ROWS)]
            entry["val"] = op
        elif kind == "delete_shared":
            entry["key"] = 3 * rng.randrange(SHARED // 3) + rng.choice([0, 2])
        elif kind == "increment":
            entry["key"] = 3 * rng.randrange(SHARED // 3) + rng.choice([1, 2])
        elif kind == "merge":
            old = rng.sample(live, min(len(live), 20))
            entry["ids"] = old + [own_id(w, op, i) for i in range(10)]
            entry["val"] = op
        elif kind == "delete_own":
            entry["ids"] = rng.sample(live, min(len(live), 5))
        log.add(entry)
        ds = lancepy.dataset(uri)
        try:
            if kind == "append":
                lancepy.write_dataset(rows(entry["ids"], [op] * APPEND_ROWS), uri, mode="append", max_rows_per_file=1000)
                result: Any = APPEND_ROWS
            elif kind == "delete_shared":
                result = ds.delete(f"id = {entry['key']}", conflict_retries=RETRIES, retry_timeout=RETRY_TIMEOUT)["num_deleted_rows"]
            elif kind == "increment":
                result = ds.update(
                    {"val": "val + 1", "chk": "chk + 1"}, where=f"id = {entry['key']}", conflict_retries=RETRIES, retry_timeout=RETRY_TIMEOUT
                )["num_rows_updated"]
            elif kind == "merge":
                result = (
                    ds.merge_insert("id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .conflict_retries(RETRIES)
                    .retry_timeout(RETRY_TIMEOUT)
                    .execute(rows(entry["ids"], [op] * len(entry["ids"])))
                )
            elif kind == "delete_own":
                ids = ", ".join(map(str, entry["ids"]))
                result = ds.delete(f"id IN ({ids})", conflict_retries=RETRIES, retry_timeout=RETRY_TIMEOUT)["num_deleted_rows"]
            else:
                m = ds.optimize.compact_files(target_rows_per_fragment=2000)
                result = {"removed": m.fragments_removed, "added": m.fragments_added}
        except CommitConflictError as e:
            log.add({"failed": op, "error": str(e)[:200]})
            continue
        log.add({"done": op, "result": result})
        done += 1
        if kind in ("append", "merge"):
            live = sorted(set(live) | set(entry["ids"]))
        elif kind == "delete_own":
            live = sorted(set(live) - set(entry["ids"]))


# -- checks ---------------------------------------------------------------------------------


def all_ops(logdir: str) -> Dict[int, List[Dict[str, Any]]]:
    out = {}
    for name in os.listdir(logdir):
        if name.startswith("writer-") and name.endswith(".log"):
            out[int(name[7:-4])] = ops_of(read_log(os.path.join(logdir, name))[0])
    return out


def begun_ids(ops: Dict[int, List[Dict[str, Any]]]) -> Set[int]:
    return {i for wops in ops.values() for op in wops if op["kind"] in ("append", "merge") for i in op["ids"]}


def check_table(t: pa.Table, where: str) -> List[str]:
    """Checks every version must pass: unique ids, chk = 3 * id + val."""
    errors = []
    ids = t.column("id").to_pylist()
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5] if len(ids) < 20000 else "?"
        errors.append(f"{where}: {len(ids) - len(set(ids))} duplicate ids (e.g. {dup})")
    bad = [(i, v, c) for i, v, c in zip(ids, t.column("val").to_pylist(), t.column("chk").to_pylist()) if c != 3 * i + v]
    if bad:
        errors.append(f"{where}: {len(bad)} rows whose chk != 3*id+val (a mixed row), e.g. {bad[:3]}")
    return errors


def expected_own(wops: List[Dict[str, Any]]) -> Dict[int, Set[Optional[int]]]:
    """Per own id, the possible final values (None: absent) after the logged operations."""
    states: Dict[int, Set[Optional[int]]] = defaultdict(lambda: {None})
    for op in wops:
        if op["status"] == "failed" or op["kind"] not in ("append", "merge", "delete_own"):
            continue
        for i in op["ids"]:
            after = None if op["kind"] == "delete_own" else op["val"]
            states[i] = {after} if op["status"] == "done" else states[i] | {after}
    return states


def check_final(t: pa.Table, ops: Dict[int, List[Dict[str, Any]]]) -> Tuple[List[str], Dict[str, int]]:
    errors = check_table(t, "latest")
    present = dict(zip(t.column("id").to_pylist(), t.column("val").to_pylist()))
    stats: Dict[str, int] = defaultdict(int)
    for wops in ops.values():
        for op in wops:
            stats[op["status"]] += 1
    # Own rows.
    begun = begun_ids(ops)
    strays = [i for i in present if i >= OWN_BASE and i not in begun]
    if strays:
        errors.append(f"{len(strays)} rows no writer ever wrote, e.g. {strays[:3]}")
    for w, wops in ops.items():
        for i, possible in expected_own(wops).items():
            if present.get(i) not in possible:
                errors.append(f"writer {w}: id {i} is {present.get(i)!r}, expected one of {sorted(possible, key=str)}")
        for op in wops:
            if op["kind"] == "append" and op["status"] == "uncertain":
                there = sum(i in present for i in op["ids"])
                stats["uncertain appends committed" if there else "uncertain appends not committed"] += 1
                if there not in (0, len(op["ids"])):
                    errors.append(f"writer {w}: append {op['begin']} committed {there} of {len(op['ids'])} rows (not atomic)")
    # Shared rows.
    dels: Dict[int, List[Dict[str, Any]]] = defaultdict(list)
    incs: Dict[int, List[Dict[str, Any]]] = defaultdict(list)
    for wops in ops.values():
        for op in wops:
            if op["kind"] == "delete_shared" and op["status"] != "failed":
                dels[op["key"]].append(op)
            elif op["kind"] == "increment" and op["status"] != "failed":
                incs[op["key"]].append(op)
    for k in range(SHARED):
        d, inc = dels[k], incs[k]
        certain_deleted = [op for op in d if op["status"] == "done" and op["result"] == 1]
        if len(certain_deleted) > 1:
            errors.append(f"shared id {k}: {len(certain_deleted)} deletes each reported deleting it")
        if k not in present:
            if not d:
                errors.append(f"shared id {k} is gone but nobody deleted it")
            elif not certain_deleted and all(op["status"] == "done" for op in d):
                errors.append(f"shared id {k} is gone but every delete of it reported 0 rows")
            continue
        if any(op["status"] == "done" for op in d):
            errors.append(f"shared id {k} survived a delete that returned")
        if any(op["status"] == "done" and op["result"] == 0 for op in inc):
            errors.append(f"shared id {k} is present but an increment found no row")
        low = sum(op["status"] == "done" and op["result"] == 1 for op in inc)
        high = low + sum(op["status"] == "uncertain" for op in inc)
        if not low <= present[k] <= high:
            errors.append(f"shared id {k}: val {present[k]} outside [{low}, {high}] (lost or phantom increment)")
    return errors, stats


def check_version(uri: str, v: int, begun: Set[int]) -> List[str]:
    import lancepy

    ds = lancepy.dataset(uri, version=v)
    t = ds.to_table()
    errors = check_table(t, f"version {v}")
    if ds.count_rows() != t.num_rows:
        errors.append(f"version {v}: count_rows {ds.count_rows()} != {t.num_rows} rows scanned")
    strays = [i for i in t.column("id").to_pylist() if i >= OWN_BASE and i not in begun]
    if strays:
        errors.append(f"version {v}: {len(strays)} rows no writer had begun writing, e.g. {strays[:3]}")
    return errors


def reader_main(uri: str, logdir: str, stop_file: str) -> None:
    """Checks each version as it appears (the newest first, then any it skipped)."""
    import lancepy

    seen: Set[int] = set()
    errors: List[str] = []
    last_latest = 0
    while True:
        stopping = os.path.exists(stop_file)
        latest = lancepy.dataset(uri).version
        if latest < last_latest:
            errors.append(f"the latest version went back from {last_latest} to {latest}")
        last_latest = latest
        todo = [v for v in range(latest, 0, -1) if v not in seen]
        if not todo and stopping:
            break
        if not todo:
            time.sleep(0.2)
            continue
        begun = begun_ids(all_ops(logdir))  # read after the version: its writers' begins are logged
        for v in todo[: 1 if not stopping else len(todo)]:
            errors += check_version(uri, v, begun)
            seen.add(v)
    with open(os.path.join(logdir, "reader.json"), "w") as f:
        json.dump({"versions_checked": len(seen), "errors": errors[:50], "num_errors": len(errors)}, f)


# -- driver ---------------------------------------------------------------------------------


def referenced_by_pylance(uri: str, versions: List[int]) -> Set[str]:
    """Data and deletion files (relative paths) the given versions use, as pylance lists them."""
    import lance

    out: Set[str] = set()
    for v in versions:
        ds = lance.dataset(uri, version=v)
        for frag in ds.get_fragments():
            md = frag.metadata
            out.update(f"data/{f.path}" for f in md.files)
            if md.deletion_file is not None:
                out.add(md.deletion_file.path(md.id))
    return out


def listing(root: str) -> Set[str]:
    out = set()
    for d, _, files in os.walk(root):
        for name in files:
            out.add(os.path.relpath(os.path.join(d, name), root))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--writers", type=int, default=16)
    ap.add_argument("--commits", type=int, default=50)
    ap.add_argument("--kill-every", type=float, default=2.0, help="mean seconds between kills (0: none)")
    ap.add_argument("--compact", type=float, default=0.04, help="share of operations that compact")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--role", default="driver", help=argparse.SUPPRESS)
    ap.add_argument("--id", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    work = args.dir or tempfile.mkdtemp(prefix="lancepy-soak-")
    uri, logdir = os.path.join(work, "ds.lance"), os.path.join(work, "logs")
    if args.role == "writer":
        writer_main(uri, args.id, args.commits, logdir, args.compact)
        return 0
    if args.role == "reader":
        reader_main(uri, logdir, os.path.join(logdir, "stop"))
        return 0

    import lance
    import lancepy

    os.makedirs(logdir, exist_ok=True)
    lancepy.write_dataset(rows(list(range(SHARED)), [0] * SHARED), uri, max_rows_per_file=500)
    rng = random.Random(args.seed)
    me = [sys.executable, os.path.abspath(__file__), "--dir", work, "--commits", str(args.commits), "--compact", str(args.compact)]

    def start(w: int) -> subprocess.Popen:
        err = open(os.path.join(logdir, f"writer-{w}.err"), "a")
        return subprocess.Popen(me + ["--role", "writer", "--id", str(w)], stdout=err, stderr=subprocess.STDOUT)

    t0 = time.time()
    procs = {w: start(w) for w in range(args.writers)}
    reader = subprocess.Popen(me + ["--role", "reader"], stderr=open(os.path.join(logdir, "reader.err"), "w"))
    kills, failures = 0, []
    next_kill = time.time() + rng.expovariate(1 / args.kill_every) if args.kill_every else float("inf")
    while procs:
        time.sleep(0.05)
        for w, p in list(procs.items()):
            if p.poll() is not None:
                del procs[w]
                if p.returncode != 0:
                    failures.append(f"writer {w} exited with {p.returncode} (see {logdir}/writer-{w}.err)")
        if time.time() >= next_kill and procs:
            w = rng.choice(sorted(procs))
            os.kill(procs[w].pid, signal.SIGKILL)
            procs[w].wait()
            kills += 1
            procs[w] = start(w)
            next_kill = time.time() + rng.expovariate(1 / args.kill_every)
    write_secs = time.time() - t0
    open(os.path.join(logdir, "stop"), "w").close()
    reader.wait()
    with open(os.path.join(logdir, "reader.json")) as f:
        rdr = json.load(f)

    ops = all_ops(logdir)
    ds = lancepy.dataset(uri)
    latest = ds.version
    t = ds.to_table()
    errors, stats = check_final(t, ops)
    errors += failures + rdr["errors"]
    theirs = lance.dataset(uri)
    if theirs.version != latest:
        errors.append(f"pylance opens version {theirs.version}, lancepy {latest}")
    if not theirs.to_table().sort_by("id").equals(t.sort_by("id")):
        errors.append("pylance reads other rows than lancepy at the latest version")
    try:
        theirs.validate()
    except Exception as e:  # noqa: BLE001 (report, do not stop the checks)
        errors.append(f"pylance validate() before cleanup: {e}")

    before = listing(uri)
    all_versions = sorted(v["version"] for v in ds.versions())
    used_any = referenced_by_pylance(uri, all_versions)
    orphans = {p for p in before if p.startswith(("data/", "_deletions/")) and p not in used_any}
    kept = all_versions[-3:]
    stats_cleanup = ds.cleanup_old_versions(retain_versions=3, delete_unverified=True)
    after = listing(uri)
    expected = referenced_by_pylance(uri, kept)
    kept_txn = set()
    for v in kept:
        tf = lancepy.dataset(uri, version=v)._view.loaded.manifest.get("transaction_file")
        if tf:
            kept_txn.add(f"_transactions/{tf}")
    manifests = {p for p in after if p.startswith("_versions/") and p.endswith(".manifest")}
    if len(manifests) != len(kept):
        errors.append(f"{len(manifests)} manifests after cleanup, {len(kept)} versions kept")
    other = {p for p in after if not p.startswith("_versions/")}
    extra = other - expected - kept_txn
    missing = (expected | kept_txn) - after
    if extra:
        errors.append(f"cleanup left {len(extra)} files no kept version uses, e.g. {sorted(extra)[:3]}")
    if missing:
        errors.append(f"cleanup removed {len(missing)} files a kept version uses, e.g. {sorted(missing)[:3]}")
    for v in kept:
        errors += check_version(uri, v, begun_ids(ops))
    if not lancepy.dataset(uri).to_table().sort_by("id").equals(t.sort_by("id")):
        errors.append("the latest version reads differently after cleanup")
    try:
        lance.dataset(uri).validate()
    except Exception as e:  # noqa: BLE001
        errors.append(f"pylance validate() after cleanup: {e}")

    print(
        f"soak: {args.writers} writers x {args.commits} commits, {kills} kills, {write_secs:.0f} s; "
        f"ops done {stats['done']}, failed (conflict) {stats['failed']}, cut by a kill {stats['uncertain']} "
        f"(committed {stats['uncertain appends committed']} / not {stats['uncertain appends not committed']} of the appends); "
        f"latest version {latest}, {t.num_rows} rows; reader checked {rdr['versions_checked']} versions; "
        f"cleanup: {len(before)} -> {len(after)} files ({stats_cleanup.old_versions} versions, "
        f"{stats_cleanup.data_files_removed} data, {stats_cleanup.deletion_files_removed} deletion, "
        f"{stats_cleanup.transaction_files_removed} transaction files removed); "
        f"orphan data/deletion files before cleanup {len(orphans)}, left after {len(extra)}; errors {len(errors)}"
    )
    for e in errors[:40]:
        print("  ERROR", e)
    print(f"work dir: {work}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
