"""A request given up at its deadline is said as refused where nothing listens (one connect tells).

No server is needed: a port nobody listens on refuses, a socket that listens and never answers
is the slow endpoint. (The whole case, a plain boto3 and aiobotocore client at a closed port, is
in tests/integration/test_transport.py: unit tests build no client.)"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest
from botocore.exceptions import EndpointConnectionError

from ddbkeys._errors import NoAnswerInTime
from ddbkeys._probe import address, not_answered, not_answered_async


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
    assert slow.kwargs["waited"] == 2.0
    assert isinstance(
        asyncio.run(not_answered_async(f"http://127.0.0.1:{closed_port}", 1.0)),
        EndpointConnectionError,
    )
    assert isinstance(
        asyncio.run(not_answered_async(f"http://127.0.0.1:{silent_port}", 1.0)), NoAnswerInTime
    )
