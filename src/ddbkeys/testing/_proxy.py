"""A fault-injecting HTTP proxy on 127.0.0.1 in front of a DynamoDB endpoint.

Point a client at :attr:`FaultProxy.endpoint_url` instead of the server. For each request the
proxy takes the next action of its :class:`Faults`' script, or else draws one from its seeded
probabilities:

- ``lose_response``: forward the request, let the server apply it, then close the connection
  before the client sees the response, so the client retries a write that was applied;
- ``throttle``: answer a throttling error in DynamoDB's JSON format without forwarding;
- ``error_500``: answer HTTP 500 InternalServerError without forwarding;
- ``delay``: wait ``delay_seconds``, then forward;
- ``delay_answer``: forward, let the server apply it, then wait ``delay_seconds`` before
  answering (a slow answer, as on a congested connection: the write is applied long before the
  client hears of it);
- ``forward``: pass it through.

It counts what it did (:attr:`FaultProxy.counts`), so a test can assert that the faults really
happened: a proxy that did nothing cannot pass such a test. It also records which operation each
request made on which table and index (:attr:`FaultProxy.calls`), which is how the tests check
the IAM policies of :mod:`ddbkeys.iam` against what the commands really do.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import socket
import sys
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlparse

__all__ = ["Call", "Fault", "FaultProxy", "Faults", "calls_in"]

_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Fault(StrEnum):
    """What the proxy does with one request."""

    FORWARD = "forward"
    LOSE_RESPONSE = "lose_response"
    THROTTLE = "throttle"
    ERROR_500 = "error_500"
    DELAY = "delay"
    DELAY_ANSWER = "delay_answer"


@dataclass
class Faults:
    """Which faults to inject.

    The ``script`` is used first, one action per request, in order (only by requests whose
    operation is in ``script_operations``, when that is given); after it, each request draws
    from the probabilities with a ``random.Random(seed)``. Only requests whose operation is in
    ``operations`` (for example ``{"PutItem", "TransactWriteItems"}``) are subject to faults when
    it is given; the rest are forwarded and counted as ``forward``.
    """

    lose_response: float = 0.0
    throttle: float = 0.0
    error_500: float = 0.0
    delay: float = 0.0
    delay_answer: float = 0.0
    delay_seconds: float = 0.05
    script: list[Fault] = field(default_factory=list)
    operations: frozenset[str] | None = None
    script_operations: frozenset[str] | None = None
    throttle_code: str = "ProvisionedThroughputExceededException"
    seed: int = 0

    def __post_init__(self) -> None:
        chances = (self.lose_response, self.throttle, self.error_500, self.delay, self.delay_answer)
        total = sum(chances)
        if min(chances) < 0 or total > 1:
            raise ValueError(f"fault probabilities must be >= 0 and add up to <= 1, not {total}")
        if self.throttle_code not in {
            "ProvisionedThroughputExceededException",
            "ThrottlingException",
        }:
            raise ValueError(f"unknown throttle_code {self.throttle_code!r}")


def _operation(target: str | None) -> str:
    return (target or "").rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Call:
    """One operation on one table (and index) that a request named, as an IAM check sees it."""

    operation: str
    table: str | None
    index: str | None = None
    stream: bool = False  # on the table's stream (DynamoDB Streams); GetRecords names no table
    export: bool = False  # on one of the table's exports (DescribeExport names its ARN)


#: The IAM action of each kind of transaction action.
_TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


def calls_in(operation: str, body: bytes) -> list[Call]:
    """The (operation, table, index) triples a request names, as IAM authorizes it: one for most
    operations, one per table for the batch operations, and for TransactWriteItems and
    TransactGetItems one per kind of action and table, named as IAM knows it (an Update is an
    UpdateItem: IAM has no action for a transaction)."""
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        return [Call(operation, None)]
    if not isinstance(request, dict):
        return [Call(operation, None)]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        # IAM authorizes each action of a transaction as the request it stands for.
        named = {
            (str(_TRANSACT_ACTIONS.get(kind, kind)), str(action.get("TableName")))
            for entry in request.get("TransactItems", [])
            if isinstance(entry, dict)
            for kind, action in entry.items()
            if isinstance(action, dict)
        }
        return [Call(name, t) for name, t in sorted(named)]
    if operation in ("BatchWriteItem", "BatchGetItem"):
        return [Call(operation, t) for t in sorted(request.get("RequestItems", {}))]
    if "StreamArn" in request or "ShardIterator" in request:
        arn = str(request.get("StreamArn", ""))
        table = arn.split(":table/", 1)[1].split("/stream/", 1)[0] if ":table/" in arn else None
        return [Call(operation, table, stream=True)]
    if "ExportArn" in request or "TableArn" in request:  # (an export's ARN holds its table's)
        arn = str(request.get("ExportArn") or request.get("TableArn"))
        table = arn.rsplit(":table/", 1)[1].split("/", 1)[0] if ":table/" in arn else None
        return [Call(operation, table, export="ExportArn" in request)]
    table = request.get("TableName")
    return [Call(operation, table, request.get("IndexName"))]


class FaultProxy:
    """The proxy. Use as a context manager, or call :meth:`start` and :meth:`stop`."""

    def __init__(self, upstream_url: str, faults: Faults | None = None) -> None:
        parsed = urlparse(upstream_url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise ValueError(f"upstream must be an http:// URL, not {upstream_url!r}")
        self.upstream_host = parsed.hostname
        self.upstream_port = parsed.port or 80
        self._lock = threading.Lock()
        self._local = threading.local()
        self.counts: Counter[str] = Counter()
        self.counts_by_operation: Counter[tuple[str, str]] = Counter()
        self.calls: list[Call] = []
        #: Every request's HTTP method and path (with its query): what a REST service's
        #: requests (S3's) name, where :attr:`calls` reads DynamoDB's JSON bodies.
        self.requests: list[tuple[str, str]] = []
        self.set_faults(faults or Faults())
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        #: Set by stop(): delayed answers are dropped at once instead of being slept out.
        self.stopping = threading.Event()
        self._open: set[socket.socket] = set()  # the clients' connections (closed by stop())

    def set_faults(self, faults: Faults) -> None:
        """Replace the faults to inject (the counts are kept; see :meth:`reset`)."""
        with self._lock:
            self.faults = faults
            self._script = list(faults.script)
            self._random = random.Random(faults.seed)

    def reset(self) -> None:
        """Zero the counts."""
        with self._lock:
            self.counts.clear()
            self.counts_by_operation.clear()
            self.calls.clear()
            self.requests.clear()

    @property
    def endpoint_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the proxy is not running: call start() first")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def record(self, operation: str, body: bytes, method: str = "POST", path: str = "/") -> None:
        """Note the operation, table and index that one request names (see :attr:`calls`), and
        its method and path (see :attr:`requests`)."""
        named = calls_in(operation, body)
        with self._lock:
            self.calls.extend(named)
            self.requests.append((method, path))

    def decide(self, operation: str) -> Fault:
        """The action for one request of this operation; counts it."""
        with self._lock:
            faults = self.faults
            fault = Fault.FORWARD
            if faults.operations is None or operation in faults.operations:
                scripted = faults.script_operations is None or operation in faults.script_operations
                if self._script and scripted:
                    fault = self._script.pop(0)
                else:
                    draw = self._random.random()
                    for candidate, p in (
                        (Fault.LOSE_RESPONSE, faults.lose_response),
                        (Fault.THROTTLE, faults.throttle),
                        (Fault.ERROR_500, faults.error_500),
                        (Fault.DELAY, faults.delay),
                        (Fault.DELAY_ANSWER, faults.delay_answer),
                    ):
                        if draw < p:
                            fault = candidate
                            break
                        draw -= p
            self.counts["requests"] += 1
            self.counts[fault.value] += 1
            self.counts_by_operation[(operation, fault.value)] += 1
            return fault

    def forward(
        self, method: str, path: str, headers: Iterable[tuple[str, str]], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Send one request upstream on this thread's kept-alive connection."""
        sent = {k: v for k, v in headers if k.lower() not in _HOP_HEADERS}
        sent["Host"] = f"{self.upstream_host}:{self.upstream_port}"
        for attempt in range(2):
            conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
            if conn is None:
                conn = http.client.HTTPConnection(
                    self.upstream_host, self.upstream_port, timeout=60
                )
                self._local.conn = conn
            try:
                conn.request(method, path, body=body, headers=sent)
                response = conn.getresponse()
                data = response.read()
                return response.status, response.getheaders(), data
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def start(self, port: int = 0) -> FaultProxy:
        """Listen on ``port`` of 127.0.0.1 (0: a free one). Stopped, then started again on the
        port it had, it is an endpoint that refused connections for a while and came back."""
        if self._server is not None:
            return self
        self.stopping.clear()
        self._server = _QuietServer(("127.0.0.1", port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ddbkeys-fault-proxy", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        with self._lock:  # (a kept-alive connection would go on being served)
            connections, self._open = list(self._open), set()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class _QuietServer(ThreadingHTTPServer):
    """A client that went away before its (delayed) answer is no error worth a traceback."""

    request_queue_size = 128  # (many threads connecting at once are not refused)

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


def _error_body(code: str, message: str) -> bytes:
    prefix = {
        "ProvisionedThroughputExceededException": "com.amazonaws.dynamodb.v20120810#",
        "ThrottlingException": "com.amazon.coral.availability#",
        "InternalServerError": "com.amazon.coral.service#",
    }[code]
    return json.dumps({"__type": prefix + code, "message": message}).encode()


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The headers and the body go out as two writes: with Nagle's algorithm the second
        # waits for the client's delayed acknowledgement of the first, about 40 ms, on every
        # answer (a "delay" of 5 ms became 45).
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: object) -> None:
            return  # quiet

        def setup(self) -> None:
            super().setup()
            with proxy._lock:
                proxy._open.add(self.connection)

        def finish(self) -> None:
            with proxy._lock:
                proxy._open.discard(self.connection)
            super().finish()

        def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
            self.send_response(status)
            for key, value in headers:
                if key.lower() not in _HOP_HEADERS and key.lower() not in {"server", "date"}:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            operation = _operation(self.headers.get("X-Amz-Target"))
            proxy.record(operation, body, self.command, self.path)
            fault = proxy.decide(operation)
            json_type = [("Content-Type", "application/x-amz-json-1.0")]
            if fault is Fault.THROTTLE:
                code = proxy.faults.throttle_code
                message = "Rate exceeded (injected by the ddbkeys fault proxy)"
                self._answer(400, json_type, _error_body(code, message))
                return
            if fault is Fault.ERROR_500:
                message = "Internal server error (injected by the ddbkeys fault proxy)"
                self._answer(500, json_type, _error_body("InternalServerError", message))
                return
            if fault is Fault.DELAY and proxy.stopping.wait(proxy.faults.delay_seconds):
                self.close_connection = True  # the proxy stops: no answer
                return
            try:
                status, headers, data = proxy.forward(
                    self.command, self.path, self.headers.items(), body
                )
            except (http.client.HTTPException, OSError):
                message = "Upstream unreachable (ddbkeys fault proxy)"
                self._answer(502, json_type, _error_body("InternalServerError", message))
                return
            if fault is Fault.LOSE_RESPONSE:
                # The server has applied the request; the client never hears of it.
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault is Fault.DELAY_ANSWER and proxy.stopping.wait(proxy.faults.delay_seconds):
                self.close_connection = True  # the proxy stops: no answer
                return
            self._answer(status, headers, data)

        def do_POST(self) -> None:
            self._handle()

        def do_GET(self) -> None:
            self._handle()

    return Handler
