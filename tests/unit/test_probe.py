"""A request given up at its deadline is said as refused where nothing listens (one connect tells).

No server is needed: a port nobody listens on refuses, a socket that listens and never answers
is the slow endpoint. (The whole case, a plain boto3 and aiobotocore client at a closed port, is
in tests/integration/test_transport.py: unit tests build no client.)"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from botocore.exceptions import EndpointConnectionError

from ddbkeys._errors import NoAnswerInTime
from ddbkeys._probe import PROBE_TIMEOUT, address, not_answered, not_answered_async, proxied


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield int(sock.getsockname()[1])


def test_address_of_an_endpoint() -> None:
    assert address("http://127.0.0.1:8000") == ("127.0.0.1", 8000)
    assert address("https://dynamodb.eu-west-1.amazonaws.com") == (
        "dynamodb.eu-west-1.amazonaws.com",
        443,
    )
    assert address("http://localhost/") == ("localhost", 80)
    assert address(None) is None
    assert address("ftp://host") is None
    assert address("http://host:notaport") is None


def test_refused_is_told_from_slow(closed_port: int, silent_port: int) -> None:
    refused = not_answered(f"http://127.0.0.1:{closed_port}", 2.0)
    assert isinstance(refused, EndpointConnectionError)
    slow = not_answered(f"http://127.0.0.1:{silent_port}", 2.0)
    assert isinstance(slow, NoAnswerInTime)
    assert str(slow).endswith("had not answered when the deadline came, after 2.0 s")
    assert isinstance(
        asyncio.run(not_answered_async(f"http://127.0.0.1:{closed_port}", 1.0)),
        EndpointConnectionError,
    )
    assert isinstance(
        asyncio.run(not_answered_async(f"http://127.0.0.1:{silent_port}", 1.0)), NoAnswerInTime
    )


def test_a_name_lookup_that_hangs_holds_no_one_past_the_probe(
    monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    # (helper-67: with a resolver that never answered, the probe took 8 s and `ids next
    # --timeout 3` 11.4 s; the socket's timeout does not cover the name's lookup)
    def hangs(*_: object, **__: object) -> None:
        time.sleep(5)
        raise socket.gaierror("the resolver gave up")  # (as a real lookup ends, in its thread)

    monkeypatch.setattr(socket, "create_connection", hangs)
    began = time.monotonic()
    said = not_answered(f"http://127.0.0.1:{closed_port}", 3.0)
    assert time.monotonic() - began < PROBE_TIMEOUT + 0.5
    assert isinstance(said, NoAnswerInTime)


def test_no_probe_where_a_proxy_carries_the_requests(
    monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    # (helper-67: behind a proxy that accepted and never answered, the probe went straight to
    # the endpoint and said "Could not connect ... is the URL right?")
    url = f"http://127.0.0.1:{closed_port}"
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert not proxied(url) and isinstance(not_answered(url, 1.0), EndpointConnectionError)
    config = SimpleNamespace(proxies={"http": "http://127.0.0.1:3128"})
    assert proxied(url, config) and isinstance(not_answered(url, 1.0, config), NoAnswerInTime)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    assert proxied(url) and isinstance(not_answered(url, 1.0), NoAnswerInTime)
    assert not proxied(f"https://127.0.0.1:{closed_port}")  # (no proxy for https)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert not proxied(url)
