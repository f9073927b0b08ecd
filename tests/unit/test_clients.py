"""What as_client refuses and how send() keeps to the deadline scope, without a client (a
stand-in has what send() reads of one). The checks on real boto3 and aiobotocore clients are
in tests/transport/test_clients.py."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from ddbkeys._clients import as_client, deadline_scope, send
from ddbkeys._errors import ConfigurationError, NoAnswerInTime
from ddbkeys._retry import Deadline

ACCEPTED = (
    "ddbkeys takes a boto3 DynamoDB client (boto3.client('dynamodb') or ddbkeys.make_client()), "
    "a DynamoDB resource (boto3.resource('dynamodb')) or one of its Tables"
)


@pytest.mark.parametrize(
    ("given", "what"),
    [
        (None, "None"),
        ("orders", "the string 'orders'"),
        (42, "a builtins.int"),
    ],
)
def test_anything_else_is_refused(given: object, what: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        as_client(given, "orders")
    assert str(raised.value) == f"{ACCEPTED}, not {what}."


def test_deadline_scope_nests_and_ends() -> None:
    """send() keeps to the innermost scope's deadline, and to none once the scopes end: with a
    stand-in client whose timeouts are unknown, a request under a deadline is sent from a
    request thread (given up at once when the deadline has passed), one under none from here."""
    client = SimpleNamespace(
        meta=SimpleNamespace(config=None, endpoint_url="http://127.0.0.1:1"),
        op=threading.get_ident,
    )
    now = [0.0]
    passed = Deadline(1, clock=lambda: now[0])
    now[0] = 2.0
    here = threading.get_ident()
    assert send(client, "op", {}) == here
    with deadline_scope(Deadline(60)) as outer:
        assert outer is not None and send(client, "op", {}) != here
        with deadline_scope(passed), pytest.raises(NoAnswerInTime):
            send(client, "op", {})
        assert send(client, "op", {}) != here
    assert send(client, "op", {}) == here
