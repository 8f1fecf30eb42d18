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
