"""Fork safety: PyTorch DataLoader workers fork a process that has already used lancepy."""

from __future__ import annotations

import os
import sys

import numpy as np
import pyarrow as pa
import pytest

from lancepy.file import LanceFileReader, LanceFileWriter


@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX-only")
def test_reader_works_in_forked_children(tmp_path):
    n = 200_000
    t = pa.table({"a": pa.array(np.arange(n)), "b": pa.array([f"s{i % 1000}" for i in range(n)])})
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path) as w:
        w.write_batch(t)
    reader = LanceFileReader(path)
    # Use the thread pool in the parent first (a multi-column read runs in parallel).
    assert reader.read_all().to_table().equals(t)
    children = []
    for k in range(3):
        pid = os.fork()
        if pid == 0:  # child: must not hang on the parent's (now thread-less) pools
            code = 1
            try:
                got = reader.read_all().to_table()
                idx = [k, n - 1 - k, 12345]
                ok = got.equals(t) and reader.take_rows(idx).to_table().equals(t.take(idx))
                code = 0 if ok else 2
            finally:
                os._exit(code)
        children.append(pid)
    for pid in children:
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX-only")
def test_full_text_search_and_build_work_in_forked_children(tmp_path):
    """A search large enough to run its partitions on the CPU pool, and an index build, in a
    child forked after the parent used them: rayon's global pool has no threads in a fork, so
    everything parallel runs on lancepy's own pools, which a child rebuilds."""
    import signal

    import lancepy
    from lancepy import query as lq

    rng = np.random.default_rng(7)
    words = ["alpha", "beta", "gamma", "delta", "omega"]
    docs = [" ".join(["common", "usual"] + list(rng.choice(words, 6))) for _ in range(40_000)]
    path = str(tmp_path / "fts")
    lancepy.write_dataset(pa.table({"id": np.arange(len(docs)), "text": docs}), path)
    ds = lancepy.dataset(path)
    ds.create_scalar_index("text", "INVERTED", with_position=True, memory_limit=1)  # (several partitions)

    def answers(d):
        match = d.to_table(full_text_query="common usual gamma", columns=["id"], limit=10)
        phrase = d.to_table(full_text_query=lq.PhraseQuery("common usual", "text"), columns=["id"], limit=10)
        return match.to_pylist(), phrase.to_pylist()

    want = answers(ds)  # (the parent's pools are busy before the fork)
    assert len(want[0]) == 10 and len(want[1]) == 10
    pid = os.fork()
    if pid == 0:  # child: must not hang on a pool without threads
        code = 1
        try:
            signal.alarm(120)  # (a hang fails the test instead of stalling the suite)
            ok = answers(lancepy.dataset(path)) == want
            child = lancepy.dataset(path)
            child.drop_index("text_idx")
            child.create_scalar_index("text", "INVERTED", with_position=True, memory_limit=1)
            code = 0 if ok and answers(lancepy.dataset(path)) == want else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
