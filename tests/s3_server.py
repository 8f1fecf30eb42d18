"""A real S3-compatible server on 127.0.0.1 for tests and benchmarks: moto's
``ThreadedMotoServer`` with a request log.

Fixes to stock moto, all to the *server* (the clients under test are untouched):

* a conditional PUT (``If-None-Match: *``) checks for the object and then writes it, as two
  steps; real S3 does both atomically. PUTs are serialised here so that racing writers see
  S3's semantics (exactly one of them gets 412);
* a ranged GET copies the whole object before slicing it out; :func:`patch_fast_ranges`
  makes it read only the range (benchmarks on 100 MB objects need it; tests keep objects
  small and run stock moto).

Nothing here talks to any address but 127.0.0.1.
"""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

KEY_ID = "lancepy-test-key"
SECRET = "lancepy-test-secret"


@dataclass
class Request:
    method: str
    path: str
    query: str
    status: int
    sent: int
    """Response body bytes."""
    headers: Dict[str, str]


@dataclass
class RequestLog:
    """WSGI middleware that records every request (method, path, status, bytes sent)."""

    app: Callable
    requests: List[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    put_lock: threading.Lock = field(default_factory=threading.Lock)
    hook: Optional[Callable[[Request], None]] = None
    control: bool = False
    """Answer ``GET /__requests__`` with the log as JSON (and clear it): for a server that
    runs in another process (benchmarks)."""
    latency: float = 0.0
    """Seconds every request waits before it is served (each on its own server thread, so
    concurrent requests wait together): a loopback server that answers like a remote object
    store, where the time to first byte, not the server's CPU, bounds a client."""

    def __call__(self, environ, start_response):
        if self.control and environ.get("PATH_INFO") == "/__requests__":
            import json

            with self.lock:
                body = json.dumps([[r.method, r.path, r.status, r.sent] for r in self.requests]).encode()
                self.requests.clear()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        if self.latency:
            import time

            time.sleep(self.latency)
        status_box: List[int] = [0]

        def _start(status, headers, exc_info=None):
            status_box[0] = int(status.split()[0])
            return start_response(status, headers, exc_info)

        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        method = environ.get("REQUEST_METHOD", "")
        if method == "PUT":
            with self.put_lock:  # atomic check-and-write for If-None-Match (see module doc)
                body = b"".join(self.app(environ, _start))
            chunks = [body]
        else:
            chunks = list(self.app(environ, _start))
        req = Request(method, environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""), status_box[0],
                      sum(len(c) for c in chunks), headers)
        with self.lock:
            self.requests.append(req)
        if self.hook is not None:
            self.hook(req)
        return chunks

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()

    def snapshot(self) -> List[Request]:
        with self.lock:
            return list(self.requests)


_LAZY = threading.local()


def patch_fast_ranges() -> None:
    """Serve ranged GETs by reading only the range from the object's buffer."""
    from moto.s3 import models, responses

    if getattr(responses.S3Response, "_lancepy_fast_ranges", False):
        return
    stock_value = models.FakeKey.value
    stock_get = responses.S3Response.get_object

    class LazyValue:
        """An object's bytes: ``len`` and slicing without reading the rest."""

        def __init__(self, key):
            self._key = key

        def __len__(self):
            return self._key.size

        def __bool__(self):
            return self._key.size > 0

        def __getitem__(self, s):
            with self._key.lock:
                buf = self._key._value_buffer
                buf.seek(s.start)
                return buf.read(s.stop - s.start)

    def value(self):
        if getattr(_LAZY, "on", False):
            return LazyValue(self)
        return stock_value.fget(self)

    def get_object(self):
        ranged = any(k.lower() == "range" for k in self.headers.keys())
        _LAZY.on = ranged
        try:
            return stock_get(self)
        finally:
            _LAZY.on = False

    models.FakeKey.value = property(value, stock_value.fset)
    responses.S3Response.get_object = get_object
    responses.S3Response._lancepy_fast_ranges = True


class S3Server:
    """A moto S3 server on 127.0.0.1 (random free port) with a request log."""

    def __init__(self, port: int = 0, *, control: bool = False, latency: float = 0.0) -> None:
        import logging

        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self._server.start()
        host, self.port = self._server.get_host_and_port()
        assert host == "127.0.0.1"
        # The server object's WSGI app is looked up per request: wrap it to log requests.
        self.log = RequestLog(self._server._server.app, control=control, latency=latency)
        self._server._server.app = self.log
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.running = True

    def options(self, **extra: str) -> Dict[str, str]:
        """Storage options with explicit keys for this server (path-style, plain HTTP)."""
        opts = {
            "aws_access_key_id": KEY_ID,
            "aws_secret_access_key": SECRET,
            "aws_endpoint": self.endpoint,
            "aws_region": "us-east-1",
            "allow_http": "true",
        }
        opts.update(extra)
        return opts

    def create_bucket(self, name: Optional[str] = None) -> str:
        """Creates a bucket (through the server's own API) and returns its name."""
        import urllib.request

        name = name or f"b-{uuid.uuid4().hex[:12]}"
        req = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        # No proxy, whatever the environment says: only 127.0.0.1 is ever contacted.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        # moto accepts unsigned requests unless IAM authentication is switched on.
        with opener.open(req, timeout=10) as r:
            assert r.status == 200
        return name

    def stop(self) -> None:
        if self.running:
            self._server.stop()
            self.running = False


def require_no_metadata_service() -> None:
    """Clients must never fall back to the cloud instance-metadata address."""
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"


_PROCESS_SERVER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from s3_server import S3Server, patch_fast_ranges
if sys.argv[3] == "1":
    patch_fast_ranges()
s = S3Server(control=True, latency=float(sys.argv[2]))
print(s.port, flush=True)
while True:
    time.sleep(3600)
"""


class S3ServerProcess:
    """A moto S3 server in a process of its own (moto keeps its buckets in process-wide
    state: two servers in one process would serve one set of buckets).

    ``auth_after`` switches moto's IAM authentication on after that many requests
    (``INITIAL_NO_AUTH_ACTION_COUNT``): the first ones create users and keys through the
    server's IAM API (:meth:`create_user`), every later request must be signed by a key that
    exists and whose user's policy allows it.
    """

    def __init__(self, *, latency: float = 0.0, fast_ranges: bool = False, auth_after: Optional[int] = None) -> None:
        import subprocess
        import sys

        env = dict(os.environ)
        if auth_after is not None:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(auth_after)
        here = os.path.dirname(os.path.abspath(__file__))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _PROCESS_SERVER, here, str(latency), "1" if fast_ranges else "0"],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        line = self.proc.stdout.readline()
        if not line.strip():
            self.proc.kill()
            raise RuntimeError("the moto server process did not start")
        self.port = int(line)
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.running = True

    def options(self, key_id: str = KEY_ID, secret: str = SECRET, **extra: str) -> Dict[str, str]:
        """Storage options with explicit keys for this server (path-style, plain HTTP)."""
        opts = {
            "aws_access_key_id": key_id,
            "aws_secret_access_key": secret,
            "aws_endpoint": self.endpoint,
            "aws_region": "us-east-1",
            "allow_http": "true",
        }
        opts.update(extra)
        return opts

    def client(self, service: str = "s3", key_id: str = KEY_ID, secret: str = SECRET):
        """A boto3 client for this server (only 127.0.0.1 is contacted)."""
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=key_id,
            aws_secret_access_key=secret,
        )

    def create_user(self, name: str, policy: Optional[str] = None) -> Dict[str, str]:
        """Creates an IAM user (with an inline `policy` document, if given) and an access key
        for it: three requests with a policy, two without. Returns its storage options."""
        iam = self.client("iam")
        iam.create_user(UserName=name)
        key = iam.create_access_key(UserName=name)["AccessKey"]
        if policy is not None:
            iam.put_user_policy(UserName=name, PolicyName=f"{name}-policy", PolicyDocument=policy)
        return self.options(key["AccessKeyId"], key["SecretAccessKey"])

    def requests(self) -> list:
        """The requests served since the last call: ``[method, path, status, bytes]``."""
        import json
        import urllib.request

        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{self.endpoint}/__requests__", timeout=30) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        if self.running:
            self.proc.kill()
            self.proc.wait()
            self.running = False
