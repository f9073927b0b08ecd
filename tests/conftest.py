"""Shared fixtures. The DynamoDB fixtures (ddb_endpoint_url, ddb_client, ddb_table_factory) come
from ddbkeys' own pytest plugin, so the tests use it the way our users do."""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ddbkeys._connect import is_loopback, make_client
from ddbkeys.testing import FaultProxy, HistoryReport, Operation, check_history
from ddbkeys.testing._plugin import ENDPOINT_ENV
from tests.support.drivers import DRIVERS, Driver

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


#: The AWS settings a test of client settings starts without (see ``clean_env``).
AWS_VARS = [
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No AWS variables, and config files that we write ourselves."""
    for var in AWS_VARS:
        monkeypatch.delenv(var, raising=False)
    config = tmp_path / "config"
    config.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return config


@pytest.fixture
def fault_proxy(ddb_endpoint_url: str) -> Iterator[FaultProxy]:
    """A fault-injecting proxy in front of the test endpoint (forwarding until given a plan)."""
    if not (is_loopback(ddb_endpoint_url) and ddb_endpoint_url.startswith("http://")):
        pytest.skip(
            "the fault proxy rewrites the Host header, which breaks SigV4 on real AWS: it only "
            "runs in front of a plain-http loopback endpoint"
        )
    with FaultProxy(ddb_endpoint_url) as proxy:
        yield proxy


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> Iterator[Driver]:
    """The driver a test body runs on: ``sync`` (the classes of ddbkeys) and ``async`` (those of
    ddbkeys.aio, on an event loop of their own; see tests/support/drivers.py). Build with
    ``driver.make("AtomicCounter", client, table, ...)``; a name not in ddbkeys.aio yet skips."""
    with Driver(request.param) as chosen:
        yield chosen


class ServerURL(str):
    """A local server's URL; ``connected`` is set once a client has connected (a process
    under test got as far as sending its request)."""

    connected: threading.Event
    requests: list[int]  # (web_page_endpoint: the answers it gave)


@contextmanager
def _local_server(
    handle: Callable[[socket.socket, threading.Event], None],
) -> Iterator[ServerURL]:
    """http://127.0.0.1:PORT of a server that runs ``handle(connection, stopping)`` in a thread
    of its own for each connection, until the block ends (then ``stopping`` is set)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    stop = threading.Event()
    url = ServerURL(f"http://127.0.0.1:{server.getsockname()[1]}")
    url.connected = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:  # the timeout, or the socket closed
                continue
            url.connected.set()
            threading.Thread(target=handle, args=(connection, stop), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield url
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


@pytest.fixture
def silent_endpoint() -> Iterator[ServerURL]:
    """http://127.0.0.1:PORT where a server accepts connections and never answers."""

    def hold(connection: socket.socket, stop: threading.Event) -> None:
        with connection:  # kept open, never read, never answered
            stop.wait()

    with _local_server(hold) as url:
        yield url


@pytest.fixture
def trickling_endpoint() -> Iterator[ServerURL]:
    """http://127.0.0.1:PORT where a server answers 200 with a body that comes one byte every
    0.5 s: no single read ever times out, and the whole answer would take hours."""

    def drip(connection: socket.socket, stop: threading.Event) -> None:
        with connection:
            try:
                connection.recv(65536)
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\n"
                    b"Content-Length: 100000\r\n\r\n"
                )
                while not stop.wait(0.5):
                    connection.sendall(b" ")
            except OSError:
                return

    with _local_server(drip) as url:
        yield url


@pytest.fixture(params=[b"<html>hello</html>", b"{}", b""], ids=["html", "empty-json", "empty"])
def not_dynamodb_endpoint(request: pytest.FixtureRequest) -> Iterator[ServerURL]:
    """http://127.0.0.1:PORT where a web server that is not DynamoDB answers every request
    with HTTP 200 and a body that holds none of DynamoDB's answers."""
    body: bytes = request.param

    def answer(connection: socket.socket, stop: threading.Event) -> None:
        with connection:
            try:
                while not stop.is_set() and connection.recv(65536):
                    connection.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                        + f"Content-Length: {len(body)}\r\n\r\n".encode()
                        + body
                    )
            except OSError:
                return

    with _local_server(answer) as url:
        yield url


@pytest.fixture(params=[404, 502])
def web_page_endpoint(request: pytest.FixtureRequest) -> Iterator[ServerURL]:
    """http://127.0.0.1:PORT where a web server answers every request with an HTML error page
    (HTTP 404 or 502: a proxy, a portal, the wrong port); ``url.requests`` counts them."""
    status: int = request.param
    body = b"<html><head><title>Not here</title></head><body>" + b"x" * 400 + b"</body></html>"
    answered: list[int] = []

    def answer(connection: socket.socket, stop: threading.Event) -> None:
        with connection:
            try:
                while not stop.is_set():
                    data = connection.recv(65536)
                    if not data:
                        return
                    if not data.startswith(b"POST "):
                        continue  # (the rest of a request: its body)
                    answered.append(status)
                    connection.sendall(
                        f"HTTP/1.1 {status} Oops\r\nContent-Type: text/html; charset=utf-8\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n".encode()
                        + body
                    )
            except OSError:
                return

    with _local_server(answer) as url:
        url.requests = answered
        yield url


@pytest.fixture
def closed_endpoint() -> str:
    """http://127.0.0.1:PORT where nothing listens (the port was free a moment ago)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}"


def proxied_client(proxy: FaultProxy, max_attempts: int = 5) -> DynamoDBClient:
    """A client that talks to DynamoDB through the proxy."""
    return make_client(endpoint_url=proxy.endpoint_url, max_attempts=max_attempts)


def pytest_configure(config: pytest.Config) -> None:
    """A shell that starts a job in the background (``cmd &`` without job control) sets it to
    ignore SIGINT, and an ignored signal stays ignored in every child. Tests that interrupt a
    child (``ddbkeys local`` until Ctrl-C) would then hang, so give SIGINT back its default."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


#: Tests that take half a minute or more (seconds, ``--durations`` of a whole `.ci/run` with
#: six workers on 2 cores): started first, one worker each, so that no worker meets one of
#: them at the end of its share while the others sit idle (the run's length was theirs, not
#: the suite's). Mostly tests that wait (a margin, a minute's rounding): those that compute
#: for half a minute, started together, slowed each other (a run with four more of them in
#: took 784 s of pytest against 720).
LONG_TESTS = {
    "tests/integration/test_index_setup.py::"
    "test_the_natural_order_with_the_default_margin_ends_with_a_proven_index": 140,
    "tests/integration/test_iam.py::test_each_policy_allows_exactly_what_its_command_calls": 140,
    "tests/docs/test_examples.py::test_help_examples_run": 105,
    "tests/docs/test_examples.py::test_examples_run[docs/partition-keys/index.md]": 101,
    "tests/unit/test_proof_schedules.py::"
    "test_the_listing_is_exact_or_declines_under_random_schedules": 93,
    "tests/packaging/test_wheel.py::test_the_wheel_in_a_clean_environment_runs_the_demo": 69,
    "tests/integration/test_index_all_at_once.py::"
    "test_a_direct_backfill_then_a_follower_stops_re_checking_its_writes_once_quiet": 69,
    "tests/integration/test_export_backfill.py::"
    "test_backfill_from_an_export_then_the_default_listing_is_proven_and_exact": 68,
    "tests/integration/test_export_now.py::test_exact_now_from_the_export_and_the_stream": 63,
    "tests/cli/test_demo.py::test_the_demo_keeps_every_promise_and_reports_it": 60,
    "tests/integration/test_index_all_at_once.py::"
    "test_a_follower_stopped_mid_backfill_is_the_fix_and_its_wait_needs_nothing": 47,
    "tests/docs/test_examples.py::test_examples_run[docs/partition-keys/at-scale.md]": 34,
    "tests/docs/test_examples.py::test_examples_run[README.md]": 28,
    "tests/integration/test_follow_outage.py::"
    "test_an_outage_mid_backfill_and_the_follower_takes_its_own_backfill_again_at_once": 40,
}


def long_first(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """``items`` in the order that starts each of ``LONG_TESTS`` at once: xdist's worksteal
    hands each of ``workers`` workers an equal run of the collection at the start (in order),
    so the long tests are dealt, longest first, to the front of the run with the least of them
    so far; the rest keep their order."""
    if workers < 1:
        return items
    long = sorted(
        (item for item in items if item.nodeid in LONG_TESTS),
        key=lambda item: -LONG_TESTS[item.nodeid],
    )
    if not long:
        return items
    rest = [item for item in items if item.nodeid not in LONG_TESTS]
    dealt: list[list[pytest.Item]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for item in long:
        least = loads.index(min(loads))
        dealt[least].append(item)
        loads[least] += LONG_TESTS[item.nodeid]
    ordered: list[pytest.Item] = []
    left = len(items)
    for worker in range(workers):  # (worksteal's shares: what is left over those still to serve)
        share = left // (workers - worker)
        left -= share
        take = max(share - len(dealt[worker]), 0)
        ordered += dealt[worker] + rest[:take]
        rest = rest[take:]
    return ordered + rest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long tests first (see :func:`long_first`); against another endpoint
    (DDBKEYS_TEST_ENDPOINT_URL), the tests of the embedded server skipped."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    items[:] = long_first(items, workers)
    if not os.environ.get(ENDPOINT_ENV):
        return
    skip = pytest.mark.skip(
        reason=f"{ENDPOINT_ENV} is set: the embedded DynamoDB Local is not used"
    )
    for item in items:
        if "embedded" in item.keywords:
            item.add_marker(skip)


#: The user properties under which a test's checked histories are reported: one line each, and
#: [calls, ids, ordered pairs] for the total.
HISTORY_PROPERTY = "history checked"
HISTORY_COUNTS = "history counts"


@pytest.fixture
def histories(record_property: Callable[[str, object], None]) -> Callable[..., HistoryReport]:
    """:func:`ddbkeys.testing.check_history`, whose report's line is kept for the terminal
    summary ("histories checked"), so ``make test`` shows how many calls each test checked."""

    def check(strategy: str, operations: Iterable[Operation], **kwargs: bool) -> HistoryReport:
        report = check_history(strategy, operations, **kwargs)
        record_property(HISTORY_PROPERTY, report.summary())
        record_property(HISTORY_COUNTS, [report.operations, report.ids, report.ordered_pairs])
        return report

    return check


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per history a test checked (the reports come back from xdist's workers too)."""
    properties = [
        (report.nodeid, name, value)
        for outcome in ("passed", "failed")
        for report in terminalreporter.stats.get(outcome, [])
        if getattr(report, "when", "") == "call"
        for name, value in getattr(report, "user_properties", [])
    ]
    lines = sorted(f"{node}: {v}" for node, name, v in properties if name == HISTORY_PROPERTY)
    if lines:
        counts = [value for _, name, value in properties if name == HISTORY_COUNTS]
        calls, ids, pairs = (sum(int(c[k]) for c in counts) for k in range(3))
        terminalreporter.section("histories checked")
        for line in lines:
            terminalreporter.write_line(line)
        terminalreporter.write_line(
            f"{len(lines)} histories: {calls:,} calls, {ids:,} ids, {pairs:,} ordered pairs checked"
        )
