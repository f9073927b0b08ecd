"""What as_client accepts and refuses, make_client's settings and the handler it registers,
each on a real boto3 (or aiobotocore) client, resource or Table: building one sends no request,
so no server is needed.

Not unit tests: what is checked is how ddbkeys meets botocore's own objects (their class, their
service model, the handlers on their event system, the resource layer's conversions), which a
stand-in would only echo. The checks that need no client are in tests/unit/test_clients.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import ClientError, ReadTimeoutError

from ddbkeys._clients import ResourceClient, as_client, deadline_scope, serializes_again
from ddbkeys._connect import make_client
from ddbkeys._errors import ConfigurationError
from ddbkeys._retry import Deadline
from tests.unit.test_clients import ACCEPTED

NO_HEADERS: Any = {}
SETTINGS: dict[str, Any] = {
    "region_name": "us-east-1",
    "aws_access_key_id": "a",
    "aws_secret_access_key": "b",
    "endpoint_url": "http://127.0.0.1:1",
}


def retry_handlers(client: Any) -> int:
    """How many handlers answer a ``needs-retry`` event of ``client``."""
    return len(
        client.meta.events.emit(
            "needs-retry.dynamodb.Scan",
            response=None,
            endpoint=None,
            operation=client.meta.service_model.operation_model("Scan"),
            attempts=1,
            caught_exception=ReadTimeoutError(endpoint_url="http://127.0.0.1:1", error="x"),
            request_dict={"context": {}},
        )
    )


def test_a_low_level_client_is_returned_as_it_is() -> None:
    client = boto3.client("dynamodb", **SETTINGS)
    botocores = retry_handlers(client)
    assert not serializes_again(client)
    assert as_client(client, "orders") == (client, "orders")
    assert as_client(client)[1] is None
    assert retry_handlers(client) == botocores  # none of ddbkeys' on the caller's client


def test_a_resource_and_its_clients_get_the_adapter() -> None:
    service = boto3.resource("dynamodb", **SETTINGS)
    assert serializes_again(service.meta.client)
    for given in (service, service.meta.client, service.Table("orders").meta.client):
        client, table = as_client(given, "orders")
        assert isinstance(client, ResourceClient)
        assert table == "orders"
        assert client.meta is service.meta.client.meta
    adapter, _ = as_client(service)
    assert as_client(adapter)[0] is adapter


def test_a_table_names_itself() -> None:
    table = boto3.resource("dynamodb", **SETTINGS).Table("orders")
    client, name = as_client(table)
    assert isinstance(client, ResourceClient)
    assert name == "orders"
    assert as_client(table, "orders")[1] == "orders"
    with pytest.raises(ConfigurationError) as raised:
        as_client(table, "users")
    assert str(raised.value) == (
        "Two tables named: the Table object is 'orders' but table='users' was given as well; "
        "pass one of them."
    )


def test_another_service_is_refused() -> None:
    s3 = boto3.client("s3", **SETTINGS)
    with pytest.raises(ConfigurationError) as raised:
        as_client(s3)
    assert str(raised.value) == f"{ACCEPTED}, not a boto3 client for 's3'."


def test_the_adapter_converts_by_the_model_and_leaves_the_request_alone() -> None:
    """A resource client with a handler on ``before-call`` that records the wire parameters and
    answers without sending; the public event API gives no other way to see them offline."""
    service = boto3.resource("dynamodb", **SETTINGS)
    seen: list[dict[str, Any]] = []

    def answer(params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        seen.append(json.loads(params["body"]))
        item = {"pk": {"S": "a"}, "n": {"N": "1E+125"}, "b": {"B": b"\x00"}}
        http = AWSResponse("http://127.0.0.1:1", 200, NO_HEADERS, None)
        return (http, {"Item": item, "ResponseMetadata": {"HTTPStatusCode": 200}})

    handler: Any = answer
    service.meta.client.meta.events.register("before-call.dynamodb.GetItem", handler)
    botocores = retry_handlers(service.meta.client)
    client, _ = as_client(service)
    key: Any = {"pk": {"S": "a"}, "m": {"M": {"S": {"S": "x"}}}}
    response = client.get_item(TableName="t", Key=key)
    assert key == {"pk": {"S": "a"}, "m": {"M": {"S": {"S": "x"}}}}  # not changed in place
    assert response["Item"] == {"pk": {"S": "a"}, "n": {"N": "1" + "0" * 125}, "b": {"B": b"\x00"}}
    assert retry_handlers(service.meta.client) == botocores  # none of ddbkeys' added
    assert seen == [{"TableName": "t", "Key": key}]  # on the wire, typed as given


def test_make_client_timeouts_and_no_botocore_retries() -> None:
    client = make_client("http://127.0.0.1:1", timeout=3)
    config: Any = client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (3, 3)
    assert config.retries == {"mode": "standard", "total_max_attempts": 1}
    default: Any = make_client("http://127.0.0.1:1").meta.config
    assert (default.connect_timeout, default.read_timeout) == (5, 30)
    four: Any = make_client("http://127.0.0.1:1", max_attempts=4).meta.config
    assert four.retries == {
        "mode": "standard",
        "total_max_attempts": 4,
    }
    with pytest.raises(ConfigurationError, match="The timeout must be above 0 seconds, not 0"):
        make_client("http://127.0.0.1:1", timeout=0)


def test_no_botocore_retry_once_less_than_one_request_of_the_deadline_is_left() -> None:
    """The handler on a client make_client() built, as botocore calls it (the ``needs-retry``
    event, emitted by hand: a retry decision is not something a real server lets us time
    exactly). Timeouts of 60 s to connect and 60 s to read: a retry needs 120 s of the deadline.
    """
    config = Config(connect_timeout=60, read_timeout=60)
    client = make_client("http://127.0.0.1:1", config=config, max_attempts=3, timeout=None)
    operation = client.meta.service_model.operation_model("Scan")
    failure = ReadTimeoutError(endpoint_url="http://127.0.0.1:1", error="x")
    http = AWSResponse("http://127.0.0.1:1", 400, NO_HEADERS, None)
    throttled: Any = (http, {"Error": {"Code": "ThrottlingException"}})

    def decide(response: Any = None, caught: BaseException | None = None) -> Any:
        """The first answer of the handlers: ours comes first."""
        answers = client.meta.events.emit(
            "needs-retry.dynamodb.Scan",
            response=response,
            endpoint=None,
            operation=operation,
            attempts=1,
            caught_exception=caught,
            request_dict={"context": {}},
        )
        return answers[0][1]

    now = [0.0]
    deadline = Deadline(200, clock=lambda: now[0])
    assert decide(caught=failure) is None  # no scope: botocore decides
    with deadline_scope(deadline):
        assert decide(caught=failure) is None  # in time: 200 s left
        now[0] = 80.0
        assert decide(throttled) is None  # 120 s left
        now[0] = 80.5
        with pytest.raises(ReadTimeoutError):  # no retry: the failure ends the call
            decide(caught=failure)
        with pytest.raises(ClientError) as raised:  # no retry: the error response is the answer
            decide(throttled)
        assert raised.value.response["Error"]["Code"] == "ThrottlingException"
        assert raised.value.operation_name == "Scan"
        ok: Any = (AWSResponse("http://127.0.0.1:1", 200, NO_HEADERS, None), {"Items": []})
        assert decide(ok) is None  # a success is never retried: botocore decides


def test_an_aiobotocore_client_given_to_the_sync_api_is_a_configuration_error() -> None:
    # Its calls return coroutines: without this check the sync API failed with a raw
    # "TypeError: 'coroutine' object is not subscriptable" on the first answer.
    aiobotocore_session = pytest.importorskip("aiobotocore.session")

    async def check() -> str:
        session = aiobotocore_session.get_session()
        async with session.create_client(
            "dynamodb",
            region_name="us-east-1",
            endpoint_url="http://127.0.0.1:9",
            aws_access_key_id="x",
            aws_secret_access_key="x",
        ) as client:
            with pytest.raises(ConfigurationError) as caught:
                as_client(client, "t")
            return str(caught.value)

    message = asyncio.run(check())
    assert "aiobotocore" in message and "from ddbkeys import aio" in message
