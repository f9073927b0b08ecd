"""Each of the proxy's behaviours, against a real DynamoDB Local, with its counts asserted."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pytest
from botocore.exceptions import ClientError

from ddbkeys.testing import Fault, FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory
from tests.conftest import proxied_client

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def add_one(client: object, table: str) -> int:
    response = client.update_item(  # type: ignore[attr-defined]
        TableName=table,
        Key={"pk": {"S": "counter"}},
        UpdateExpression="ADD #n :one",
        ExpressionAttributeNames={"#n": "n"},
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="UPDATED_NEW",
    )
    return int(response["Attributes"]["n"]["N"])


def test_forward(fault_proxy: FaultProxy, ddb_table_factory: TableFactory) -> None:
    table = ddb_table_factory()
    client = proxied_client(fault_proxy)
    assert [add_one(client, table) for _ in range(3)] == [1, 2, 3]
    assert fault_proxy.counts["forward"] == 3
    assert fault_proxy.counts["requests"] == 3


def test_lost_response_is_applied_and_retried(
    fault_proxy: FaultProxy, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    client = proxied_client(fault_proxy)
    fault_proxy.set_faults(Faults(script=[Fault.LOSE_RESPONSE]))
    # The first ADD is applied but its answer is lost; botocore retries, so the counter moves twice:
    # exactly the hazard that the id strategies must survive.
    assert add_one(client, table) == 2
    assert fault_proxy.counts["lose_response"] == 1
    assert fault_proxy.counts["requests"] == 2
    # Without retries the client sees the connection drop.
    fault_proxy.set_faults(Faults(script=[Fault.LOSE_RESPONSE]))
    once = proxied_client(fault_proxy, max_attempts=1)
    with pytest.raises(Exception, match=r"Connection was closed|closed|reset") as raised:
        add_one(once, table)
    assert not isinstance(raised.value, ClientError)
    assert fault_proxy.counts["lose_response"] == 2


@pytest.mark.parametrize("code", ["ProvisionedThroughputExceededException", "ThrottlingException"])
def test_throttle_is_not_forwarded(
    fault_proxy: FaultProxy, ddb_table_factory: TableFactory, code: str
) -> None:
    table = ddb_table_factory()
    fault_proxy.set_faults(Faults(script=[Fault.THROTTLE], throttle_code=code))
    once = proxied_client(fault_proxy, max_attempts=1)
    with pytest.raises(ClientError) as raised:
        add_one(once, table)
    assert raised.value.response["Error"]["Code"] == code
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    # Not forwarded: the counter was never created.
    assert add_one(once, table) == 1
    assert fault_proxy.counts["throttle"] == 1


def test_error_500_is_retried_by_botocore(
    fault_proxy: FaultProxy, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    fault_proxy.set_faults(Faults(script=[Fault.ERROR_500]))
    once = proxied_client(fault_proxy, max_attempts=1)
    with pytest.raises(ClientError) as raised:
        add_one(once, table)
    assert raised.value.response["Error"]["Code"] == "InternalServerError"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    fault_proxy.set_faults(Faults(script=[Fault.ERROR_500, Fault.ERROR_500]))
    assert add_one(proxied_client(fault_proxy), table) == 1
    assert fault_proxy.counts["error_500"] == 3


def test_delay_adds_latency(fault_proxy: FaultProxy, ddb_table_factory: TableFactory) -> None:
    table = ddb_table_factory()
    client = proxied_client(fault_proxy)
    fault_proxy.set_faults(Faults(delay=1.0, delay_seconds=0.3))
    started = time.monotonic()
    assert add_one(client, table) == 1
    assert time.monotonic() - started >= 0.3
    assert fault_proxy.counts["delay"] == 1


def test_delay_answer_applies_first_then_answers_late(
    fault_proxy: FaultProxy, ddb_table_factory: TableFactory, ddb_client: DynamoDBClient
) -> None:
    table = ddb_table_factory()
    fault_proxy.set_faults(Faults(script=[Fault.DELAY_ANSWER], delay_seconds=0.5))
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        answer = pool.submit(add_one, proxied_client(fault_proxy), table)
        while "Item" not in ddb_client.get_item(TableName=table, Key={"pk": {"S": "counter"}}):
            assert time.monotonic() - started < 5, "never applied"
        assert not answer.done()  # applied, its answer on its way
        assert answer.result(5) == 1
    assert time.monotonic() - started >= 0.5
    assert fault_proxy.counts["delay_answer"] == 1


def test_seeded_mix_under_load(fault_proxy: FaultProxy, ddb_table_factory: TableFactory) -> None:
    table = ddb_table_factory()
    fault_proxy.set_faults(Faults(throttle=0.1, error_500=0.05, seed=3))
    client = proxied_client(fault_proxy, max_attempts=10)
    for _ in range(100):
        client.put_item(TableName=table, Item={"pk": {"S": "x"}})
    assert fault_proxy.counts["throttle"] > 0
    assert fault_proxy.counts["error_500"] > 0
    assert fault_proxy.counts["forward"] == 100
    assert (
        fault_proxy.counts["requests"]
        == 100 + fault_proxy.counts["throttle"] + fault_proxy.counts["error_500"]
    )
