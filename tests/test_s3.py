"""Datasets and files on object storage, against a real S3 server on 127.0.0.1 (moto).

* the local dataset tests that take a ``uri`` run again here on ``s3://`` (the ``uri``
  fixture below hands lancepy's entry points this server's storage options);
* every dataset operation runs on a local dataset and on an S3 one side by side, and the
  two must agree version by version; pylance reads the S3 dataset at the end;
* pylance and lancepy write and read the same S3 dataset, both ways;
* 8 processes append concurrently: no commit lost or duplicated, and the server's request
  log shows every manifest PUT is conditional (``If-None-Match: *``);
* bad credentials, a missing bucket, a server that stops in the middle of a write and a store
  that cannot write conditionally all give clear errors, and the dataset stays at its last
  complete version.

Credentials are always passed explicitly and ``AWS_EC2_METADATA_DISABLED`` is set, so no
client ever falls back to the cloud instance-metadata address; only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import subprocess
import sys
import threading
import uuid

import numpy as np
import pyarrow as pa
import pytest

import lancepy
import lancepy.fragment
import test_dataset as local_suite
from lancepy.exceptions import (
    DatasetNotFoundError,
    InvalidArgumentError,
    LanceIOError,
    UnsupportedError,
)
from s3_server import S3Server

pytestmark = pytest.mark.s3


@pytest.fixture
def bucket(s3) -> str:
    return s3.create_bucket()


@pytest.fixture
def opts(s3):
    return s3.options()


# --------------------------------------------------------------------------------------------
# The local suite on s3://
# --------------------------------------------------------------------------------------------


@pytest.fixture
def uri(s3, bucket, monkeypatch):
    """An ``s3://`` dataset URI; lancepy's entry points get the server's options."""
    options = s3.options()
    for owner, name in ((lancepy, "dataset"), (lancepy, "write_dataset"), (lancepy.fragment, "write_fragments")):
        monkeypatch.setattr(owner, name, functools.partial(getattr(owner, name), storage_options=options))
    real_commit = lancepy.LanceDataset.commit
    monkeypatch.setattr(
        lancepy.LanceDataset, "commit", staticmethod(functools.partial(real_commit, storage_options=options))
    )
    return f"s3://{bucket}/ds.lance"


test_create_append_read = local_suite.test_create_append_read
test_take_follows_input_order = local_suite.test_take_follows_input_order
test_filters = local_suite.test_filters
test_versions_checkout_restore_tags = local_suite.test_versions_checkout_restore_tags
test_write_fragments_and_commit = local_suite.test_write_fragments_and_commit
test_nested_columns = local_suite.test_nested_columns


# --------------------------------------------------------------------------------------------
# Every operation, local and S3 side by side
# --------------------------------------------------------------------------------------------


def rows(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "x": (ids % 13).astype(np.float64),
            "s": [f"s{i}" for i in ids],
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(ids, 8).astype(np.float32)), 8),
        }
    )


def _steps():
    """(name, action(ds, uri, options) -> dataset) applied in order to both datasets."""

    def append(ds, uri, o):
        return lancepy.write_dataset(rows(30, 100), uri, mode="append", storage_options=o)

    def delete(ds, uri, o):
        ds.delete("id % 7 = 0")
        return ds

    def update(ds, uri, o):
        ds.update({"x": "x * 2"}, where="id < 20")
        return ds

    def merge_insert(ds, uri, o):
        new = rows(20, 120)
        new = new.set_column(1, "x", pa.array(np.full(20, -1.0)))
        ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(new)
        return ds

    def add_columns(ds, uri, o):
        ds.add_columns({"double": "id * 2"})
        ds.add_columns(pa.field("empty", pa.string()))
        return ds

    def drop_columns(ds, uri, o):
        ds.drop_columns(["empty"])
        return ds

    def alter_columns(ds, uri, o):
        ds.alter_columns({"path": "s", "name": "text"})
        ds.alter_columns({"path": "double", "data_type": pa.int32()})
        return ds

    def fragments_commit(ds, uri, o):
        frags = lancepy.fragment.write_fragments(
            rows(10, 500).rename_columns(["id", "x", "text", "vec"]).append_column("double", pa.array(range(10), pa.int32())),
            uri,
            max_rows_per_file=4,
            storage_options=o,
        )
        return lancepy.LanceDataset.commit(uri, lancepy.LanceOperation.Append(frags), read_version=ds.version, storage_options=o)

    def compact(ds, uri, o):
        ds.optimize.compact_files(target_rows_per_fragment=50)
        return ds

    def tag_and_time_travel(ds, uri, o):
        ds.tags.create("before-cleanup", ds.version - 1)
        old = lancepy.dataset(uri, version="before-cleanup", storage_options=o)
        assert old.version == ds.version - 1
        return ds

    def cleanup(ds, uri, o):
        ds.cleanup_old_versions(older_than=datetime.timedelta(0), error_if_tagged_old_versions=False)
        return ds

    def restore(ds, uri, o):
        old = lancepy.dataset(uri, version="before-cleanup", storage_options=o)
        assert old.restore() is None  # as pylance; the object moves to the new version
        return old

    def overwrite(ds, uri, o):
        return lancepy.write_dataset(rows(7, 1000), uri, mode="overwrite", storage_options=o)

    return [(f.__name__, f) for f in (append, delete, update, merge_insert, add_columns, drop_columns, alter_columns,
                                      fragments_commit, compact, tag_and_time_travel, cleanup, restore, overwrite)]


def _state(ds) -> tuple:
    t = ds.to_table().combine_chunks()
    return ds.version, ds.schema, t, sorted(v["version"] for v in ds.versions()), ds.tags.list().keys()


@pytest.mark.parametrize("storage_version", ["2.0", "2.1", "2.2"])
def test_every_operation_matches_local(s3, bucket, tmp_path, storage_version, pylance):
    o = s3.options()
    remote_uri = f"s3://{bucket}/ops.lance"
    local_uri = str(tmp_path / "ops.lance")
    remote = lancepy.write_dataset(rows(100), remote_uri, max_rows_per_file=40, data_storage_version=storage_version,
                                   storage_options=o)
    local = lancepy.write_dataset(rows(100), local_uri, max_rows_per_file=40, data_storage_version=storage_version)
    assert remote.storage_options == o
    for name, step in _steps():
        remote = step(remote, remote_uri, o)
        local = step(local, local_uri, None)
        r, l = _state(remote), _state(local)
        assert r[0] == l[0], f"after {name}: version {r[0]} != {l[0]}"
        assert r[1] == l[1], f"after {name}: schema differs"
        assert r[2].equals(l[2]), f"after {name}: data differs"
        assert r[3] == l[3] and r[4] == l[4], f"after {name}: versions or tags differ"
        # A fresh open of the S3 dataset sees the same thing.
        again = lancepy.dataset(remote_uri, storage_options=o)
        assert again.version == remote.version and again.to_table().combine_chunks().equals(r[2])
    theirs = pylance.dataset(remote_uri, storage_options=o).to_table()
    assert theirs.replace_schema_metadata(None).combine_chunks().equals(
        remote.to_table().replace_schema_metadata(None).combine_chunks()
    )


# --------------------------------------------------------------------------------------------
# pylance <-> lancepy on one S3 dataset
# --------------------------------------------------------------------------------------------


def test_pylance_and_lancepy_share_an_s3_dataset(s3, bucket, pylance):
    o = s3.options()
    uri = f"s3://{bucket}/shared.lance"
    pylance.write_dataset(rows(50), uri, max_rows_per_file=20, storage_options=o)
    ours = lancepy.dataset(uri, storage_options=o)
    assert ours.to_table().equals(pylance.dataset(uri, storage_options=o).to_table())
    assert ours.take([49, 0, 7]).column("id").to_pylist() == [49, 0, 7]
    # lancepy appends and deletes on top of pylance's versions ...
    lancepy.write_dataset(rows(30, 50), uri, mode="append", storage_options=o)
    ours = lancepy.dataset(uri, storage_options=o)
    ours.delete("id % 10 = 3")
    theirs = pylance.dataset(uri, storage_options=o)
    assert theirs.version == ours.version == 3
    assert theirs.to_table().equals(ours.to_table())
    # ... and pylance goes on from lancepy's version.
    pylance.write_dataset(rows(5, 900), uri, mode="append", storage_options=o)
    theirs = pylance.dataset(uri, storage_options=o)
    ours = lancepy.dataset(uri, storage_options=o)
    assert ours.version == theirs.version == 4
    assert ours.to_table().equals(theirs.to_table())
    assert ours.count_rows() == 50 + 30 - 8 + 5
    assert lancepy.dataset(uri, version=1, storage_options=o).count_rows() == 50


def test_vector_index_and_blobs_on_s3(s3, bucket, pylance):
    """create_index, optimize_indices and compaction's index remap on s3://, and blob writes
    there, read by both libraries."""
    o = s3.options()
    uri = f"s3://{bucket}/vec.lance"
    v = np.random.default_rng(3).normal(size=(600, 8)).astype(np.float32)

    def table(lo, hi):
        return pa.table({"id": np.arange(lo, hi), "vec": pa.FixedSizeListArray.from_arrays(pa.array(v[lo:hi].ravel()), 8)})

    lancepy.write_dataset(table(0, 400), uri, max_rows_per_file=100, storage_options=o)
    lancepy.dataset(uri, storage_options=o).create_index("vec", "IVF_FLAT", num_partitions=4, seed=1)
    lancepy.write_dataset(table(400, 600), uri, mode="append", storage_options=o)
    lancepy.dataset(uri, storage_options=o).optimize.optimize_indices()
    lancepy.dataset(uri, storage_options=o).delete("id % 9 = 0")
    lancepy.dataset(uri, storage_options=o).optimize.compact_files(target_rows_per_fragment=1000)
    ours, theirs = lancepy.dataset(uri, storage_options=o), pylance.dataset(uri, storage_options=o)
    (entry,) = theirs.list_indices()
    assert entry["fragment_ids"] == {f.fragment_id for f in ours.get_fragments()}
    for q in v[[5, 450, 599]]:
        nearest = {"column": "vec", "q": q, "k": 5, "nprobes": 4}
        got = ours.to_table(columns=["id"], nearest=nearest)["id"].to_pylist()
        assert got == theirs.to_table(columns=["id"], nearest=nearest)["id"].to_pylist()
        assert not any(i % 9 == 0 for i in got)

    blobs = f"s3://{bucket}/blobs.lance"
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    values = [bytes([i]) * n for i, n in enumerate([10, 70_000, 5_000_000, 0])]
    lancepy.write_dataset(pa.table({"id": [0, 1, 2, 3], "b": values}, schema=schema), blobs, storage_options=o)
    for lib in (lancepy, pylance):
        files = lib.dataset(blobs, storage_options=o).take_blobs("b", indices=[0, 1, 2, 3])
        assert [f.read() for f in files] == values


def _object_digests(uri: str, o: dict) -> dict:
    """Every object under `uri` → its bytes' hash."""
    import hashlib

    from lancepy import _lancepy

    store = _lancepy.Store(uri, o)
    return {p: hashlib.sha256(store.read(p)).hexdigest() for p, _size, _mtime in store.list("")}


def test_shallow_clones_on_s3(s3, bucket, pylance):
    """Clones across buckets, both ways: writes and cleanup in the clone leave the source's
    objects as they were; each library reads the other's clone exactly."""
    o = s3.options()
    other = s3.create_bucket()
    src = f"s3://{bucket}/src.lance"
    pylance.write_dataset(rows(40), src, max_rows_per_file=15, storage_options=o)
    pylance.dataset(src, storage_options=o).delete("id % 10 = 3")
    before = _object_digests(src, o)

    clone = f"s3://{other}/clone.lance"
    ours = lancepy.dataset(src, storage_options=o).shallow_clone(clone, 2)
    assert ours.version == 2 and ours.count_rows() == 36
    assert ours.base_paths()[0].path == src
    lancepy.write_dataset(rows(5, 100), clone, mode="append", storage_options=o)
    ours = lancepy.dataset(clone, storage_options=o)
    ours.delete("id = 0 or id = 101")
    ours.optimize.compact_files()
    assert lancepy.dataset(clone, version=2, storage_options=o).to_table().equals(
        pylance.dataset(src, version=2, storage_options=o).to_table()
    )
    ours.cleanup_old_versions(older_than=datetime.timedelta(0), delete_unverified=True)
    ours = lancepy.dataset(clone, storage_options=o)
    theirs = pylance.dataset(clone, storage_options=o)
    assert ours.to_table().equals(theirs.to_table())
    assert ours.count_rows() == 36 + 5 - 2

    # (pylance 14.0.2 writes a clone into another bucket under the source's bucket instead,
    # so its clone stays in the source's bucket here.)
    theirs_clone = f"s3://{bucket}/theirs.lance"
    pylance.dataset(src, storage_options=o).shallow_clone(theirs_clone, 2, storage_options=o)
    assert lancepy.dataset(theirs_clone, storage_options=o).to_table().equals(
        pylance.dataset(theirs_clone, storage_options=o).to_table()
    )
    assert _object_digests(src, o) == before


def test_files_on_s3_both_ways(s3, bucket, pylance_file):
    from lancepy.file import LanceFileReader, LanceFileWriter

    o = s3.options()
    # Over 5 MiB: a multipart upload.
    big = pa.table({"id": np.arange(200_000, dtype=np.int64), "v": np.random.default_rng(0).random(200_000)})
    small = rows(100)
    for name, t in (("small", small), ("big", big)):
        path = f"s3://{bucket}/{name}.lance"
        with LanceFileWriter(path, t.schema, storage_options=o) as w:
            w.write_batch(t)
        assert LanceFileReader(path, o).read_all().to_table().equals(t)
        assert pylance_file.LanceFileReader(path, storage_options=o).read_all().to_table().equals(t)
        got = LanceFileReader(path, storage_options=o).take_rows([t.num_rows - 1, 0, 3]).to_table()
        assert got.column("id").to_pylist() == [t.num_rows - 1, 0, 3]
    w = pylance_file.LanceFileWriter(f"s3://{bucket}/theirs.lance", small.schema, storage_options=o)
    w.write_batch(small)
    w.close()
    assert LanceFileReader(f"s3://{bucket}/theirs.lance", storage_options=o).read_all().to_table().equals(small)


# --------------------------------------------------------------------------------------------
# Concurrent writers
# --------------------------------------------------------------------------------------------

_APPENDER = """
import sys, json, lancepy, pyarrow as pa
uri, opts, worker, n = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for i in range(n):
    ident = worker * 1000 + i
    lancepy.write_dataset(pa.table({"id": [ident], "w": [worker]}), uri, mode="append", storage_options=opts)
"""


def test_concurrent_appends_from_processes(s3, bucket):
    o = s3.options()
    uri = f"s3://{bucket}/race.lance"
    lancepy.write_dataset(pa.table({"id": pa.array([-1], pa.int64()), "w": pa.array([-1], pa.int64())}), uri,
                          storage_options=o)
    s3.log.clear()
    workers, each = 8, 3
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    procs = [
        subprocess.Popen([sys.executable, "-c", _APPENDER, uri, json.dumps(o), str(w), str(each)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for w in range(workers)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    ds = lancepy.dataset(uri, storage_options=o)
    assert ds.version == 1 + workers * each
    ids = sorted(ds.to_table().column("id").to_pylist())
    assert ids == sorted([-1] + [w * 1000 + i for w in range(workers) for i in range(each)])  # none lost, none twice
    manifest_puts = [r for r in s3.log.snapshot() if r.method == "PUT" and "/_versions/" in r.path
                     and r.path.endswith(".manifest")]
    assert len([r for r in manifest_puts if r.status == 200]) == workers * each
    assert all(r.headers.get("if-none-match") == "*" for r in manifest_puts), "every manifest PUT is conditional"
    # Writers that lost a race were told so by the server (412) and retried.
    lost = [r for r in manifest_puts if r.status == 412]
    assert len(manifest_puts) == workers * each + len(lost)


def test_conditional_put_is_refused_by_the_server(s3, bucket):
    o = s3.options()
    store = lancepy._lancepy.Store(f"s3://{bucket}/cp", o)
    s3.log.clear()
    assert store.put_if_not_exists("_versions/1.manifest", b"first")
    assert not store.put_if_not_exists("_versions/1.manifest", b"second")
    assert store.read("_versions/1.manifest") == b"first"
    puts = [r for r in s3.log.snapshot() if r.method == "PUT"]
    assert [r.status for r in puts] == [200, 412]
    assert all(r.headers.get("if-none-match") == "*" for r in puts)


# --------------------------------------------------------------------------------------------
# Failures: clear errors, dataset unchanged
# --------------------------------------------------------------------------------------------


def _expect_unchanged(uri: str, o, version: int, table: pa.Table) -> None:
    ds = lancepy.dataset(uri, storage_options=o)
    assert ds.version == version
    assert ds.to_table().equals(table)


def test_bad_credentials(s3, bucket):
    from moto.core.authorization import enable_iam_authentication

    o = s3.options()
    uri = f"s3://{bucket}/auth.lance"
    before = lancepy.write_dataset(rows(10), uri, storage_options=o).to_table()
    bad = s3.options(aws_access_key_id="AKIANOTAREALKEY00000", aws_secret_access_key="wrong", client_max_retries="0")
    with enable_iam_authentication():
        with pytest.raises(LanceIOError, match="(?i)denied|forbidden|403|invalid|security token"):
            lancepy.dataset(uri, storage_options=bad)
        with pytest.raises(LanceIOError, match="(?i)denied|forbidden|403|invalid|security token"):
            lancepy.write_dataset(rows(5, 10), uri, mode="append", storage_options=bad)
    _expect_unchanged(uri, o, 1, before)


def test_missing_bucket(s3):
    o = s3.options(client_max_retries="0")
    uri = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/ds.lance"
    with pytest.raises((DatasetNotFoundError, LanceIOError), match="(?i)no.such.bucket|not found|no lance dataset"):
        lancepy.dataset(uri, storage_options=o)
    with pytest.raises(LanceIOError, match="(?i)no.?such.?bucket|not found|404"):
        lancepy.write_dataset(rows(3), uri, storage_options=o)


def test_server_stops_mid_write(tmp_path):
    """A second server on its own port is stopped after a few data-file PUTs."""
    server = S3Server()
    try:
        name = server.create_bucket()
        o = server.options(client_max_retries="1", client_retry_timeout="2", connect_timeout="2s")
        uri = f"s3://{name}/stop.lance"
        before = lancepy.write_dataset(rows(20), uri, storage_options=o).to_table()
        puts = []

        def stop_after_three_data_puts(req):
            if req.method == "PUT" and "/data/" in req.path:
                puts.append(req)
                if len(puts) == 3:
                    threading.Thread(target=server.stop).start()

        server.log.hook = stop_after_three_data_puts
        with pytest.raises(LanceIOError):
            lancepy.write_dataset(rows(200, 20), uri, mode="append", max_rows_per_file=10, storage_options=o)
        assert len(puts) >= 3
    finally:
        server.stop()
    # The same data, served again: the dataset is at its last complete version.
    again = S3Server(port=server.port)
    try:
        _expect_unchanged(uri, o, 1, before)
    finally:
        again.stop()


def test_store_without_conditional_put_refuses_to_commit(s3, bucket):
    o = s3.options()
    uri = f"s3://{bucket}/nocas.lance"
    before = lancepy.write_dataset(rows(10), uri, storage_options=o).to_table()
    unsafe = s3.options(aws_conditional_put="disabled")
    with pytest.raises(UnsupportedError, match="conditional"):
        lancepy.write_dataset(rows(5, 10), uri, mode="append", storage_options=unsafe)
    _expect_unchanged(uri, o, 1, before)


def test_bad_storage_options(s3, bucket, monkeypatch):
    uri = f"s3://{bucket}/opts.lance"
    with pytest.raises(UnsupportedError, match="aws_acess_key_id"):
        lancepy.dataset(uri, storage_options={"aws_acess_key_id": "x"})
    with pytest.raises(InvalidArgumentError, match="storage_options"):
        lancepy.dataset(uri, storage_options={"allow_http": object()})
    with pytest.raises(UnsupportedError, match="storage option"):
        lancepy.write_dataset(rows(3), "/tmp/never-written.lance", storage_options={"region": "x"})
    # No credentials at all: refused up front instead of asking the instance-metadata service.
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(InvalidArgumentError, match="AWS_EC2_METADATA_DISABLED"):
        lancepy.dataset(uri, storage_options={"aws_endpoint": s3.endpoint, "allow_http": "true"})
    with pytest.raises(UnsupportedError, match="block_size"):
        lancepy.dataset(uri, storage_options=s3.options(), block_size=4096)


def _take_in_child(uri, o, q):
    ds = lancepy.dataset(uri, storage_options=o)
    q.put(ds.take([3, 1]).column("id").to_pylist())


def test_forked_children_read_s3(s3, bucket):
    """DataLoader workers fork: a child must not reuse the parent's connections or runtime."""
    import multiprocessing as mp

    o = s3.options()
    uri = f"s3://{bucket}/fork.lance"
    ds = lancepy.write_dataset(rows(10), uri, storage_options=o)
    assert ds.take([3, 1]).column("id").to_pylist() == [3, 1]  # parent's client and readers are warm
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    children = [ctx.Process(target=_take_in_child, args=(uri, o, q)) for _ in range(2)]
    for c in children:
        c.start()
    got = [q.get(timeout=60) for _ in children]
    for c in children:
        c.join(timeout=60)
        assert c.exitcode == 0
    assert got == [[3, 1], [3, 1]]


# --------------------------------------------------------------------------------------------
# Streamed scans read the next round ahead
# --------------------------------------------------------------------------------------------

_STREAM_CHILD = r"""
import sys
import lancepy
uri, opts = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
it = lancepy.dataset(uri, storage_options=opts).to_batches(batch_size=100)
ids = next(it).column("id").to_pylist()
print("first", flush=True)
sys.stdin.readline()
for b in it:
    ids += b.column("id").to_pylist()
print(len(ids), ids == list(range(len(ids))), flush=True)
"""


def _files_read(server, files) -> set:
    return {f for f in files for r in server.log.snapshot() if r.method == "GET" and r.path.endswith(f)}


def test_streamed_scan_reads_one_round_ahead(s3, bucket):
    """On object storage ``to_batches`` reads the round of tasks after the one it hands out
    while the consumer works on it, and no further (memory stays bounded): with two threads,
    a round is two fragments here, so the first batch has read exactly four files."""
    import time

    o = s3.options()
    uri = f"s3://{bucket}/ahead.lance"
    ds = lancepy.write_dataset(rows(1000), uri, max_rows_per_file=100, storage_options=o)
    files = [os.path.basename(f.data_files()[0].path) for f in ds.get_fragments()]
    assert len(files) == 10
    env = dict(os.environ, LANCEPY_THREADS="2")
    s3.log.clear()
    child = subprocess.Popen([sys.executable, "-c", _STREAM_CHILD, uri, *(f"{k}={v}" for k, v in o.items())],
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "first"
        deadline = time.monotonic() + 30
        while len(_files_read(s3, files)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # nothing more is read while the consumer holds its batch
        assert _files_read(s3, files) == set(files[:4])
        out, _ = child.communicate("go\n", timeout=60)
    finally:
        child.kill()
    assert out.split() == ["1000", "True"]
    assert _files_read(s3, files) == set(files)


def _consume(it, q):
    q.put([i for b in it for i in b.column("id").to_pylist()])


def test_streamed_scan_continues_in_a_forked_child(s3, bucket):
    """A stream whose next round is being read ahead, continued in a forked child (whose
    process has none of the parent's read-ahead jobs), and in the parent: both get every row."""
    import multiprocessing as mp

    o = s3.options()
    uri = f"s3://{bucket}/fork-stream.lance"
    lancepy.write_dataset(rows(1200), uri, max_rows_per_file=100, storage_options=o)
    it = lancepy.dataset(uri, storage_options=o).to_batches(batch_size=50)
    first = next(it).column("id").to_pylist()
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    child = ctx.Process(target=_consume, args=(it, q))
    child.start()
    theirs = q.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    ours = [i for b in it for i in b.column("id").to_pylist()]
    assert first + theirs == first + ours == list(range(1200))


def test_server_stops_mid_stream():
    """A streamed scan whose server goes away raises a clear error, not a hang."""
    server = S3Server()
    try:
        name = server.create_bucket()
        o = server.options(client_max_retries="1", client_retry_timeout="2", connect_timeout="2s")
        uri = f"s3://{name}/stream-stop.lance"
        lancepy.write_dataset(rows(2000), uri, max_rows_per_file=100, storage_options=o)
        it = lancepy.dataset(uri, storage_options=o).to_batches(batch_size=100)
        assert next(it).num_rows == 100
        server.stop()
        with pytest.raises(LanceIOError):
            for _ in it:
                pass
    finally:
        server.stop()


def test_cli_on_s3(s3, bucket, opts, capsys):
    """The ``lancepy`` command reaches object storage with ``--storage-option KEY=VALUE``."""
    import json

    from lancepy import cli

    uri = f"s3://{bucket}/cli.lance"
    ds = lancepy.write_dataset(pa.table({"id": list(range(50))}), uri, max_rows_per_file=20, storage_options=opts)
    ds.delete("id < 5")
    flags = [a for k, v in opts.items() for a in ("-o", f"{k}={v}")]
    assert cli.main(["validate", uri, "--json", *flags]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["checked"] == {"manifests": 2, "data_files": 3, "deletion_files": 1}
    assert cli.main(["inspect", uri, "--json", *flags]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["kind"] == "dataset" and info["rows"] == 45
    path = f"{uri}/data/{ds.get_fragments()[0].data_files()[0].path}"
    assert cli.main(["inspect", path, "--json", *flags]) == 0
    assert json.loads(capsys.readouterr().out)["num_rows"] == 20
    assert cli.main(["versions", uri, "--json", *flags]) == 0
    assert [v["operation"] for v in json.loads(capsys.readouterr().out)] == ["Overwrite", "Delete"]


def test_torch_loader_on_s3_with_forkserver_workers(s3, bucket, opts):
    """lancepy.torch over object storage: the dataset pickles its URI, version and storage
    options, and each forkserver worker reopens it from the server; every live row once."""
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from lancepy.torch import LanceDataset, LanceIterableDataset, ShuffleSampler, collate_fn

    uri = f"s3://{bucket}/torch.lance"
    n, dim = 400, 4
    blobs = [bytes([i % 256]) * (300 + i) for i in range(n)]  # a few hundred bytes: stored row by row
    table = pa.table(
        {
            "id": pa.array(np.arange(n)),
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(n * dim, dtype=np.float32)), dim),
            "image": pa.array(blobs, type=pa.large_binary()),
        }
    )
    lancepy.write_dataset(table, uri, max_rows_per_file=150, storage_options=opts).delete("id % 9 = 2")
    live = [i for i in range(n) if i % 9 != 2]
    ds = LanceDataset(uri, storage_options=opts)
    assert len(ds) == len(live)
    loader = DataLoader(
        ds, batch_size=32, sampler=ShuffleSampler(ds, seed=3), collate_fn=collate_fn, num_workers=2,
        multiprocessing_context="forkserver",
    )
    seen = []
    for batch in loader:
        ids = batch["id"].tolist()
        seen.extend(ids)
        assert torch.equal(batch["emb"], torch.tensor([[float(i * dim + j) for j in range(dim)] for i in ids]))
        assert batch["image"] == [blobs[i] for i in ids]
    assert sorted(seen) == live
    it = LanceIterableDataset(uri, batch_size=50, columns=["id"], storage_options=opts)
    got = [i for b in DataLoader(it, batch_size=None, num_workers=2, multiprocessing_context="forkserver") for i in b["id"].tolist()]
    assert sorted(got) == live


def test_base_store_params_are_used_for_files_under_their_base(s3, bucket):
    """`base_store_params` (options per base path URI, instead of the dataset's): every
    request for a file under the base is signed with the base's key, every other one with
    the dataset's — seen in the server's request log; pylance reads the result."""
    from lancepy import DatasetBasePath

    root, base = f"s3://{bucket}/ds", f"s3://{bucket}/files"
    params = {base: s3.options(aws_access_key_id="base-key")}
    table = pa.table({"id": list(range(20)), "s": [f"v{i}" for i in range(20)]})
    opts = s3.options()

    def keys_by_place():
        seen = {}
        for r in s3.log.snapshot():
            if f"/{bucket}/" not in r.path:
                continue
            key = r.headers.get("authorization", "").split("Credential=")[-1].split("/")[0]
            seen.setdefault("base" if r.path.startswith(f"/{bucket}/files/") else "root", set()).add(key)
        return seen

    s3.log.clear()
    ds = lancepy.write_dataset(table, root, storage_options=opts, initial_bases=[DatasetBasePath(base, name="s3")],
                               target_bases=["s3"], base_store_params=params, max_rows_per_file=8)
    assert ds.to_table() == table  # (the returned dataset keeps the parameters)
    ds = lancepy.dataset(root, storage_options=opts, base_store_params=params)
    assert ds.take([3, 17]).column("id").to_pylist() == [3, 17]
    assert keys_by_place() == {"root": {"lancepy-test-key"}, "base": {"base-key"}}
    # Without them, the dataset's own options reach the base too.
    assert lancepy.dataset(root, storage_options=opts).to_table() == table
    pylance = pytest.importorskip("lance")
    assert pylance.dataset(root, storage_options=opts, base_store_params=params).to_table().sort_by("id") == table
    with pytest.raises(InvalidArgumentError):
        lancepy.dataset(root, storage_options=opts, base_store_params={base: "not a dict"})


def test_io_stats_on_s3_count_what_each_dataset_sent_and_fetched(s3, bucket, pylance):
    """Per-dataset I/O statistics against an S3 server: a write counts every byte it put
    (the objects' sizes as listed), a read counts exactly the GETs the server answered and
    the bytes it sent, and two dataset objects keep their counts apart."""
    o = s3.options()
    uri = f"s3://{bucket}/stats.lance"
    ds = lancepy.write_dataset(rows(3000), uri, max_rows_per_file=1000, storage_options=o)
    listed = lancepy._lancepy.Store(uri, o).list("")
    s = ds.io_stats_incremental()
    assert s.write_iops == len(listed) and s.written_bytes == sum(size for _, size, _ in listed)
    a, b = lancepy.dataset(uri, storage_options=o), lancepy.dataset(uri, storage_options=o)
    a.io_stats_incremental(), b.io_stats_incremental()
    with s3.log.lock:
        s3.log.requests.clear()
    assert a.to_table().num_rows == 3000
    assert a.take([2999, 5]).column("id").to_pylist() == [2999, 5]
    with s3.log.lock:
        gets = [r for r in s3.log.requests if r.method == "GET" and "/stats.lance/" in r.path]
    got = a.io_stats_incremental()
    assert got.read_iops == len(gets) > 0 and got.read_bytes == sum(r.sent for r in gets)
    assert b.io_stats_snapshot().read_iops == 0
    theirs = pylance.dataset(uri, storage_options=o)
    theirs.to_table()
    assert theirs.io_stats_snapshot().read_iops > 0  # the same API on pylance's side
