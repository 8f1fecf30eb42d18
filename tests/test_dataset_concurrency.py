"""Concurrent writers, conflict rules and crash safety."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

import lancepy
from lancepy._table import commit
from lancepy.exceptions import CommitConflictError


def rows(writer: int, batch: int, n: int = 20) -> pa.Table:
    base = writer * 1_000_000 + batch * 1000
    return pa.table({"id": pa.array(range(base, base + n), pa.int64()), "writer": pa.array([writer] * n, pa.int32())})


def _worker(uri: str, writer: int, rounds: int, queue: "mp.Queue") -> None:
    try:
        _work(uri, writer, rounds, queue)
    except BaseException:
        import traceback

        queue.put((writer, "failed", traceback.format_exc()))  # fail the test now, not at its timeout
        raise


def _work(uri: str, writer: int, rounds: int, queue: "mp.Queue") -> None:
    """Appends `rounds` batches; every third round also deletes one of its own rows."""
    committed, conflicts = [], 0
    deleted: set = set()
    rng = random.Random(writer)
    for r in range(rounds):
        while True:
            try:
                lancepy.write_dataset(rows(writer, r), uri, mode="append")
                committed.append(("append", writer, r))
                break
            except CommitConflictError:  # appends never conflict with appends or deletes
                conflicts += 1
                raise
        if r % 3 == 2:
            victim = writer * 1_000_000 + rng.randrange(r) * 1000 + 5
            # A delete that loses a race with another delete of the same fragment re-applies
            # itself to the latest version (conflict_retries): it must never raise here.
            expected = 0 if ("delete", victim) in deleted else 1  # only this writer deletes its rows
            assert lancepy.dataset(uri).delete(f"id = {victim}", conflict_retries=50) == {"num_deleted_rows": expected}
            deleted.add(("delete", victim))
            committed.append(("delete", victim, r))
    queue.put((writer, committed, conflicts))


def test_eight_processes_append_and_delete(tmp_path):
    uri = str(tmp_path / "conc.lance")
    lancepy.write_dataset(rows(99, 0, 1), uri)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(uri, w, 6, queue)) for w in range(8)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    failed = [r[2] for r in results if r[1] == "failed"]
    assert not failed, failed[0]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    ds = lancepy.dataset(uri)
    ids = set(ds.to_table().column("id").to_pylist())
    deleted = {c[1] for _, committed, _ in results for c in committed if c[0] == "delete"}
    for _, committed, _ in results:
        for kind, writer, r in committed:
            if kind == "append":
                expected = set(rows(writer, r).column("id").to_pylist()) - deleted
                assert expected <= ids, f"rows of writer {writer} batch {r} are missing"
    assert not (ids & deleted)
    # versions are contiguous and every manifest decodes
    versions, _ = commit.list_versions(lancepy._lancepy.Store(uri))
    assert sorted(versions) == list(range(1, max(versions) + 1))
    appends = sum(1 for _, c, _ in results for k in c if k[0] == "append")
    deletes = sum(1 for _, c, _ in results for k in c if k[0] == "delete")
    assert max(versions) == 1 + appends + deletes
    for v in versions:
        lancepy.dataset(uri, version=v).count_rows()
    assert ds.count_rows() == 1 + 8 * 6 * 20 - len(deleted)


def test_conflict_rules():
    def txn(op, body):
        return commit.new_transaction(1, op, body)

    append = txn("Append", {"fragments": []})
    delete_f1 = txn("Delete", {"updated_fragments": [{"id": 1}], "deleted_fragment_ids": []})
    delete_f2 = txn("Delete", {"updated_fragments": [], "deleted_fragment_ids": [2]})
    overwrite = txn("Overwrite", {"fragments": []})
    rewrite_f1 = txn("Rewrite", {"groups": [{"old_fragments": [{"id": 1}], "new_fragments": []}]})
    merge = txn("Merge", {"fragments": []})
    project = txn("Project", {"schema": []})
    assert commit.conflicts(append, append) is None
    assert commit.conflicts(append, delete_f1) is None
    assert commit.conflicts(delete_f1, append) is None
    assert commit.conflicts(append, overwrite) is not None
    assert commit.conflicts(overwrite, append) is None
    assert commit.conflicts(overwrite, overwrite) is not None
    assert commit.conflicts(delete_f1, delete_f1) is not None
    assert commit.conflicts(delete_f1, delete_f2) is None
    assert commit.conflicts(delete_f1, rewrite_f1) is not None
    assert commit.conflicts(rewrite_f1, delete_f2) is None
    assert commit.conflicts(merge, append) is not None
    assert commit.conflicts(append, merge) is None
    assert commit.conflicts(project, project) is not None
    assert commit.conflicts(append, None) is not None  # missing transaction
    assert commit.conflicts(append, {"operation": {}}) is not None  # unknown operation


def test_conflicting_commit_leaves_no_trace(tmp_path):
    uri = str(tmp_path / "c.lance")
    lancepy.write_dataset(rows(0, 0, 100), uri, max_rows_per_file=100)
    a = lancepy.dataset(uri)
    b = lancepy.dataset(uri)
    a.delete("id = 3")
    before = {d: sorted(os.listdir(os.path.join(uri, d))) for d in ("data", "_deletions", "_transactions", "_versions")}
    with pytest.raises(CommitConflictError, match="same fragments"):
        b.delete("id = 4", conflict_retries=0)  # same fragment, based on version 1
    after = {d: sorted(os.listdir(os.path.join(uri, d))) for d in ("data", "_deletions", "_transactions", "_versions")}
    assert before == after
    assert lancepy.dataset(uri).to_table().column("id").to_pylist() == [i for i in range(100) if i != 3]
    # an append based on an old version is rebased instead
    frags = lancepy.fragment.write_fragments(rows(1, 0), uri)
    ds = lancepy.LanceDataset.commit(uri, lancepy.LanceOperation.Append(frags), read_version=1)
    assert ds.version == 3 and ds.count_rows() == 99 + 20
    # an append after an overwrite it did not see conflicts
    lancepy.write_dataset(rows(2, 0), uri, mode="overwrite")
    frags = lancepy.fragment.write_fragments(rows(1, 1), uri)
    with pytest.raises(CommitConflictError, match="Overwrite"):
        lancepy.LanceDataset.commit(uri, lancepy.LanceOperation.Append(frags), read_version=3)
    assert lancepy.dataset(uri).count_rows() == 20


def test_losing_writers_reapply_themselves(tmp_path):
    """delete / update / merge_insert based on a version that a conflicting commit has
    superseded re-read the latest version and apply again (pylance's conflict_retries)."""
    uri = str(tmp_path / "r.lance")
    lancepy.write_dataset(pa.table({"id": pa.array(range(100), pa.int64()), "v": pa.array([0] * 100, pa.int64())}), uri)
    stale = [lancepy.dataset(uri) for _ in range(4)]
    assert stale[0].delete("id = 1") == {"num_deleted_rows": 1}
    # each of these touches fragment 0, which version 2 changed: a conflict, then a retry
    assert stale[1].delete("id < 3") == {"num_deleted_rows": 2}  # id 1 is already gone at the latest version
    assert stale[2].update({"v": "v + 1"}, where="id >= 90") == {"num_rows_updated": 10}
    src = pa.table({"id": pa.array([95, 200], pa.int64()), "v": pa.array([7, 7], pa.int64())})
    res = stale[3].merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(src)
    assert res == {"num_updated_rows": 1, "num_inserted_rows": 1, "num_deleted_rows": 0}
    final = lancepy.dataset(uri)
    assert final.version == 5
    got = dict(zip(*final.to_table().sort_by("id").to_pydict().values()))
    want = {i: 0 for i in range(3, 100)}
    want.update({i: 1 for i in range(90, 100)})
    want.update({95: 7, 200: 7})
    assert got == want
    # with no retries left the conflict surfaces and leaves nothing behind
    stale_again = lancepy.dataset(uri, version=4)
    before = sorted(os.listdir(os.path.join(uri, "_deletions")))
    with pytest.raises(CommitConflictError):
        stale_again.merge_insert("id").when_matched_update_all().conflict_retries(0).execute(src)
    assert sorted(os.listdir(os.path.join(uri, "_deletions"))) == before
    assert lancepy.dataset(uri).version == 5


CRASH_WRITER = textwrap.dedent(
    """
    import sys, pyarrow as pa, lancepy
    uri = sys.argv[1]
    i = 0
    while True:
        i += 1
        t = pa.table({"id": pa.array(range(i * 1000, i * 1000 + 500), pa.int64()),
                      "blob": pa.array([b"x" * 200] * 500)})
        lancepy.write_dataset(t, uri, mode="append", max_rows_per_file=200)
        if i % 2 == 0:
            lancepy.dataset(uri).delete(f"id % 7 = {i % 7}")
        print(i, flush=True)
    """
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_leaves_last_complete_version(tmp_path, seed):
    uri = str(tmp_path / "crash.lance")
    lancepy.write_dataset(pa.table({"id": pa.array([0], pa.int64()), "blob": pa.array([b""])}), uri)
    script = tmp_path / "writer.py"
    script.write_text(CRASH_WRITER)
    rng = random.Random(seed)
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, str(script), uri], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.3, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        ds = lancepy.dataset(uri)
        # The latest version reads completely and agrees with its own history.
        t = ds.to_table()
        assert t.num_rows == ds.count_rows()
        versions, _ = commit.list_versions(lancepy._lancepy.Store(uri))
        assert sorted(versions) == list(range(1, max(versions) + 1))
        for v in versions:
            lancepy.dataset(uri, version=v).to_table(columns=["id"])
        # and the next writer carries on from it
        lancepy.write_dataset(pa.table({"id": pa.array([-1], pa.int64()), "blob": pa.array([b"y"])}), uri, mode="append")
        assert lancepy.dataset(uri).count_rows() == t.num_rows + 1


def test_threads_share_one_dataset_object(tmp_path):
    """Eight threads take and scan through ONE dataset object (the native calls release the
    GIL, so they really overlap); every answer equals the single-threaded one."""
    from concurrent.futures import ThreadPoolExecutor

    n = 30_000
    uri = str(tmp_path / "threads.lance")
    table = pa.table({"id": pa.array(range(n), pa.int64()), "s": pa.array([f"s{i % 101}-{i}" for i in range(n)])})
    lancepy.write_dataset(table, uri, max_rows_per_file=7_000)
    ds = lancepy.dataset(uri)
    ds.delete("id % 13 = 0")  # deletion vectors are shared state too
    ds = lancepy.dataset(uri)
    rng = random.Random(5)
    live = ds.count_rows()
    tasks = []
    for i in range(160):
        if i % 2:
            tasks.append(("take", [rng.randrange(live) for _ in range(50)]))
        else:
            a = rng.randrange(n)
            tasks.append(("scan", f"id >= {a} AND id < {a + 3000}"))

    def run(task):
        kind, arg = task
        return ds.take(arg) if kind == "take" else ds.to_table(filter=arg)

    expected = [run(t) for t in tasks]
    # The reference itself is right: takes by position among live rows, scans by range.
    live_ids = [i for i in range(n) if i % 13]
    for (kind, arg), want in zip(tasks, expected):
        if kind == "take":
            assert want.column("id").to_pylist() == [live_ids[j] for j in arg]
        else:
            a = int(arg.split()[2])
            assert want.column("id").to_pylist() == [i for i in range(a, min(a + 3000, n)) if i % 13]
    with ThreadPoolExecutor(8) as ex:
        for _ in range(3):
            got = list(ex.map(run, tasks))
            assert all(g.equals(w) for g, w in zip(got, expected))
