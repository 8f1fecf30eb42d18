"""Ctrl-C during a long native call: scans, takes and writes raise KeyboardInterrupt promptly.

Each case runs in a subprocess that times one uninterrupted call, then starts the same call
again and gets SIGINT shortly after it began. The call must end in KeyboardInterrupt, the
child must exit well within a generous bound, and, when the uninterrupted call is long enough
to tell, the interrupted one must have stopped early (inside the native call, not after it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

CHILD = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    import pyarrow as pa
    from lancepy import LanceFileReader, LanceFileWriter

    op, path = sys.argv[1], sys.argv[2]
    rows = int(sys.argv[3])
    rng = np.random.default_rng(0)
    text = pa.array([f"value-{i:012d}-" + "x" * (i % 97) for i in range(rows)])
    table = pa.table({"id": np.arange(rows, dtype=np.int64), "f": rng.random(rows), "text": text})
    if op == "scan-2.0-nested":
        lengths = np.arange(rows) % 5
        items = pa.array(np.arange(int(lengths.sum()), dtype=np.int64))
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
        table = pa.table({"id": table.column("id"), "tags": pa.ListArray.from_arrays(offsets, items),
                          "pair": pa.StructArray.from_arrays([table.column("f").combine_chunks(), text], ["f", "text"])})
    if op != "write":
        with LanceFileWriter(path, version="2.0" if op == "scan-2.0-nested" else None) as w:
            w.write_batch(table)
        reader = LanceFileReader(path)
    order = rng.permutation(rows).tolist()
    batch = table.combine_chunks().to_batches()[0]

    def call(i):
        if op == "take":
            reader.take_rows(order).to_table()
        elif op in ("scan", "scan-2.0-nested"):
            reader.read_all().to_table()
        else:
            w = LanceFileWriter(f"{path}.{i}.lance")
            w.write_batch(batch)
            w.close()

    t0 = time.perf_counter()
    call(0)
    print("full", time.perf_counter() - t0, flush=True)
    print("go", flush=True)
    t0 = time.perf_counter()
    try:
        call(1)
    except KeyboardInterrupt:
        print("interrupted", time.perf_counter() - t0, flush=True)
        sys.exit(3)
    print("finished", time.perf_counter() - t0, flush=True)
    """
)


@pytest.mark.parametrize("op", ["take", "scan", "scan-2.0-nested", "write"])
def test_ctrl_c_stops_a_long_call(tmp_path, op):
    rows = {"take": 2_000_000, "scan": 4_000_000, "scan-2.0-nested": 4_000_000, "write": 4_000_000}[op]
    env = dict(os.environ, LANCEPY_THREADS="1")
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, op, str(tmp_path / "data.lance"), str(rows)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        full = None
        for line in proc.stdout:
            if line.startswith("full"):
                full = float(line.split()[1])
            if line.startswith("go"):
                break
        else:
            pytest.fail(f"the child ended early: {proc.stderr.read()}")
        time.sleep(min(0.2, full / 10))
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        exited_after = time.perf_counter() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, f"rc={proc.returncode}\n{out}\n{err}"
    interrupted = float(out.split("interrupted")[1].split()[0])
    # The call began at most a moment before "go" was read; SIGINT came ~0.2 s later.
    assert interrupted < 10, f"KeyboardInterrupt {interrupted:.1f} s into the call (full call: {full:.1f} s)"
    assert exited_after < 60, f"the child exited {exited_after:.1f} s after SIGINT"
    if full >= 2.0:
        # Uninterrupted, the call takes `full` seconds: stopping well before that
        # shows it stopped inside the native call rather than after it returned.
        assert interrupted < 0.8 * full, f"interrupted after {interrupted:.2f} s of a {full:.2f} s call\n{out}"
