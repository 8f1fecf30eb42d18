"""Isolation: what one dataset object opened with its storage options reads is never served
to another opened with different ones.

Two real S3 servers on 127.0.0.1 (moto, each in a process of its own) hold the same dataset
at the same ``s3://bucket/ds.lance``; server B then loses its data files. Every read API
opened on A first (filling every cache there is) and then on B must fail on B: a reader
opened for A's endpoint must never answer for B's. A third server checks credentials (moto's
IAM): a key without read rights gets an access error, not bytes fetched earlier with a key
that had them.

Credentials are always passed explicitly and ``AWS_EC2_METADATA_DISABLED`` is set: only
127.0.0.1 is contacted.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import LanceError
from s3_server import S3ServerProcess, require_no_metadata_service

pytestmark = pytest.mark.s3

N = 600
DIM = 8
BUCKET = "mirrored"
URI = f"s3://{BUCKET}/ds.lance"
BLOB = pa.field("img", pa.large_binary(), metadata={"lance-encoding:blob": "true"})


def _table(start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    rng = np.random.default_rng(start)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    return pa.table(
        {
            "id": pa.array(ids),
            "s": pa.array([f"row {i}" for i in ids]),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), DIM),
            "img": pa.array([bytes([i % 251]) * (16 + i % 40) for i in ids], pa.large_binary()),
        },
        schema=pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string()), pa.field("vec", pa.list_(pa.float32(), DIM)), BLOB]),
    )


def _mirror(src: S3ServerProcess, dst: S3ServerProcess, bucket: str) -> None:
    a, b = src.client(), dst.client()
    b.create_bucket(Bucket=bucket)
    for page in a.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            body = a.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
            b.put_object(Bucket=bucket, Key=obj["Key"], Body=body)


def _delete_prefix(server: S3ServerProcess, bucket: str, prefix: str) -> int:
    c = server.client()
    keys = [o["Key"] for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for o in page.get("Contents", [])]
    for k in keys:
        c.delete_object(Bucket=bucket, Key=k)
    return len(keys)


@pytest.fixture(scope="module")
def mirrored():
    """Servers A and B, both holding the dataset at URI; B has lost its data files."""
    pytest.importorskip("moto.server", reason="moto[server] is a test dependency (scripts/setup.sh)")
    pytest.importorskip("boto3", reason="boto3 comes with moto[server]")
    require_no_metadata_service()
    os.environ["NO_PROXY"] = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"]))
    a, b = S3ServerProcess(), S3ServerProcess()
    try:
        a.client().create_bucket(Bucket=BUCKET)
        lancepy.write_dataset(_table(0, N // 2), URI, storage_options=a.options())
        ds = lancepy.write_dataset(_table(N // 2, N // 2), URI, mode="append", storage_options=a.options())
        ds.create_index("vec", "IVF_FLAT", num_partitions=2)
        _mirror(a, b, BUCKET)
        assert _delete_prefix(b, BUCKET, "ds.lance/data/") >= 2
        yield a, b
    finally:
        a.stop()
        b.stop()


def _reads():
    """Each read API, as (name, function of an open dataset)."""
    q = np.ones(DIM, dtype=np.float32)

    def torch_map(ds):
        torch_mod = pytest.importorskip("lancepy.torch")
        return torch_mod.LanceDataset(ds, columns=["id", "vec"]).__getitems__([0, 5, 400])

    def torch_iter(ds):
        torch_mod = pytest.importorskip("lancepy.torch")
        return next(iter(torch_mod.LanceIterableDataset(ds, batch_size=64, columns=["id"])))

    return [
        ("take", lambda ds: ds.take([0, 5, 400], columns=["id", "s"])),
        ("take_rows", lambda ds: ds._take_rows([0, 5, (ds.get_fragments()[-1].fragment_id << 32) | 3], columns=["id"])),
        ("scan", lambda ds: ds.to_table(columns=["id", "s"])),
        ("filter", lambda ds: ds.to_table(columns=["id"], filter="id % 7 = 3")),
        ("count_filter", lambda ds: ds.count_rows("s LIKE 'row 1%'")),
        ("stream", lambda ds: next(iter(ds.to_batches(columns=["vec"])))),
        ("blobs", lambda ds: [f.read() for f in ds.take_blobs("img", indices=[0, 401])]),
        ("search", lambda ds: ds.to_table(nearest={"column": "vec", "q": q, "k": 5}, columns=["id"])),
        ("torch_map", torch_map),
        ("torch_iter", torch_iter),
    ]


@pytest.mark.parametrize("name,read", _reads(), ids=[n for n, _ in _reads()])
def test_reads_of_another_endpoint_never_use_what_this_one_opened(mirrored, name, read):
    a, b = mirrored
    on_a = lancepy.dataset(URI, storage_options=a.options())
    first = read(on_a)
    assert read(on_a) is not None and first is not None  # cached now, and served from the cache
    on_b = lancepy.dataset(URI, storage_options=b.options())
    assert on_b.version == on_a.version  # B's manifests are there; its data files are not
    with pytest.raises(LanceError):
        read(on_b)
    # ...and A still answers from its own store.
    read(lancepy.dataset(URI, storage_options=a.options()))


def test_take_rows_equal_on_the_endpoint_that_has_them(mirrored):
    a, _ = mirrored
    got = lancepy.dataset(URI, storage_options=a.options()).take([0, 5, 400], columns=["id", "s"])
    assert got.column("id").to_pylist() == [0, 5, 400]
    assert got.column("s").to_pylist() == ["row 0", "row 5", "row 400"]


ALL_POLICY = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}'
# May list the bucket and read the manifests, not the data files.
MANIFESTS_ONLY_POLICY = (
    '{"Version": "2012-10-17", "Statement": ['
    '{"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::%s"},'
    '{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::%s/ds.lance/_versions/*"}]}'
) % (BUCKET, BUCKET)


@pytest.fixture(scope="module")
def checked():
    """A server that checks credentials (moto's IAM): user ``owner`` may do anything, user
    ``auditor`` may list the bucket and read the manifests but not the data files. Both keys
    are real, so a refusal is about rights, not about a key the server does not know."""
    pytest.importorskip("moto.server", reason="moto[server] is a test dependency (scripts/setup.sh)")
    pytest.importorskip("boto3", reason="boto3 comes with moto[server]")
    require_no_metadata_service()
    # Exactly the user set-up goes through unauthenticated: user, key and policy for each.
    server = S3ServerProcess(auth_after=6)
    try:
        owner = server.create_user("owner", ALL_POLICY)
        auditor = server.create_user("auditor", MANIFESTS_ONLY_POLICY)
        server.client(key_id=owner["aws_access_key_id"], secret=owner["aws_secret_access_key"]).create_bucket(
            Bucket=BUCKET
        )
        lancepy.write_dataset(_table(0, N), URI, storage_options=owner)
        yield server, owner, auditor
    finally:
        server.stop()


@pytest.mark.parametrize("name,read", _reads()[:6], ids=[n for n, _ in _reads()[:6]])
def test_credentials_without_rights_get_an_access_error_not_cached_bytes(checked, name, read):
    _, owner, auditor = checked
    ds = lancepy.dataset(URI, storage_options=owner)
    read(ds)
    read(ds)  # now served by cached readers
    limited = lancepy.dataset(URI, storage_options=auditor)  # the manifests it may read
    assert limited.version == ds.version
    with pytest.raises(LanceError) as e:
        read(limited)
    assert "denied" in str(e.value).lower() or "403" in str(e.value), str(e.value)


def test_reader_cache_stays_within_its_byte_budget(tmp_path):
    before = lancepy.reader_cache_info()
    try:
        lancepy.set_reader_cache_limits(max_bytes=1 << 40, max_files=1 << 20)
        uri = str(tmp_path / "many.lance")
        for i in range(12):
            lancepy.write_dataset(_table(i * 50, 50).drop_columns(["img"]), uri, mode="append" if i else "create")
        ds = lancepy.dataset(uri)
        ds.to_table()
        full = lancepy.reader_cache_info()
        assert full["files"] >= 12
        per_file = full["bytes"] / full["files"]
        budget = int(per_file * 4)
        lancepy.set_reader_cache_limits(max_bytes=budget)
        assert lancepy.reader_cache_info()["bytes"] <= budget
        for _ in range(3):  # reads keep working, and the cache never passes its budget
            assert ds.to_table(columns=["id"]).num_rows == 600
            assert ds.take(list(range(0, 600, 37)), columns=["s"]).num_rows == len(range(0, 600, 37))
            info = lancepy.reader_cache_info()
            assert info["bytes"] <= budget and info["files"] >= 1
        lancepy.set_reader_cache_limits(max_files=2)
        assert lancepy.reader_cache_info()["open_files"] <= 2
        ds.to_table(columns=["id"])
        assert lancepy.reader_cache_info()["open_files"] <= 2
        # Dropping the dataset forgets its readers.
        lancepy.set_reader_cache_limits(max_bytes=1 << 40, max_files=1 << 20)
        ds.to_table()
        assert lancepy.reader_cache_info()["files"] >= 12
        lancepy.LanceDataset.drop(uri)
        assert lancepy.reader_cache_info()["files"] == 0
    finally:
        lancepy.set_reader_cache_limits(max_bytes=before["max_bytes"], max_files=before["max_files"])


def test_reader_cache_limits_are_checked():
    with pytest.raises(lancepy.exceptions.InvalidArgumentError):
        lancepy.set_reader_cache_limits(max_bytes=-1)
    with pytest.raises(lancepy.exceptions.InvalidArgumentError):
        lancepy.set_reader_cache_limits(max_files=1.5)
