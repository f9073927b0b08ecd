"""``ddbkeys table create`` against DynamoDB Local: a table made ACTIVE with the key schema of
its strategy, left as it is when there already with that schema, refused with another; the
stream when asked; --dry-run sends nothing."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys._errors import KeySchemaError
from ddbkeys._table_setup import create_table_for
from ddbkeys.testing import Fault, FaultProxy, Faults

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


@pytest.fixture
def name(ddb_client: DynamoDBClient) -> Iterator[str]:
    """A table name nobody uses, the table deleted afterwards if made."""
    table = f"ddbkeys-test-create-{uuid.uuid4().hex[:10]}"
    yield table
    if table in ddb_client.list_tables()["TableNames"]:
        ddb_client.delete_table(TableName=table)


def test_a_table_for_a_strategy_then_left_as_it_is(ddb_client: DynamoDBClient, name: str) -> None:
    made = create_table_for(ddb_client, name, "collection")
    assert made.created and made.description["TableStatus"] == "ACTIVE"
    described = ddb_client.describe_table(TableName=name)["Table"]
    assert [(k["AttributeName"], k["KeyType"]) for k in described["KeySchema"]] == [
        ("pk", "HASH"),
        ("sk", "RANGE"),
    ]
    assert described["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    again = create_table_for(ddb_client, name, "collection")
    assert not again.created
    with pytest.raises(KeySchemaError, match=r"exists with the key \(pk:S, sk:N\), not \(pk:S\)"):
        create_table_for(ddb_client, name, "counter")


def test_the_cli_makes_it_with_a_stream_and_says_so(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, name: str
) -> None:
    at = ["--endpoint-url", ddb_endpoint_url]
    dry = CliRunner().invoke(cli, ["table", "create", "-t", name, "--for", "counter", "--dry-run"])
    assert dry.exit_code == 0 and json.loads(dry.output)["TableName"] == name
    assert name not in ddb_client.list_tables()["TableNames"]  # nothing sent
    command = ["table", "create", "-t", name, "--partition-key", "id:N", "--stream", *at]
    made = CliRunner().invoke(cli, command)
    assert (made.exit_code, made.output) == (
        0,
        f"Created table {name} (id:N), on demand: ACTIVE.\n",
    )
    described = ddb_client.describe_table(TableName=name)["Table"]
    assert described["StreamSpecification"] == {
        "StreamEnabled": True,
        "StreamViewType": "KEYS_ONLY",
    }
    there = CliRunner().invoke(cli, [*command, "--output", "json"])
    assert there.exit_code == 0 and json.loads(there.output)["created"] is False
    other = CliRunner().invoke(cli, ["table", "create", "-t", name, "--for", "counter", *at])
    assert other.exit_code == 1
    assert other.stderr == (
        f"Error: Table {name!r} exists with the key (id:N), not (pk:S): pick another name, or "
        "use it as it is.\n"
    )


@pytest.mark.parametrize(
    ("operation", "faults", "failure"),
    [
        (
            "CreateTable",
            Faults(throttle=1.0, operations=frozenset({"CreateTable"})),
            "throttled (ProvisionedThroughputExceededException)",
        ),
        (
            "DescribeTable",
            Faults(error_500=1.0, operations=frozenset({"DescribeTable"})),
            "DynamoDB answered HTTP 500 (InternalServerError)",
        ),
    ],
)
def test_the_deadline_message_names_the_request_and_the_table_once(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    name: str,
    operation: str,
    faults: Faults,
    failure: str,
) -> None:
    # DynamoDB Local never throttles nor fails a CreateTable or DescribeTable, so the fault
    # proxy in front of it does, until the 1 s deadline: the message said "Gave up on table 'T'
    # on table 'T'".
    with FaultProxy(ddb_endpoint_url, faults) as proxy:
        command = ["table", "create", "-t", name, "--for", "counter", "--timeout", "1"]
        result = CliRunner().invoke(cli, [*command, "--endpoint-url", proxy.endpoint_url])
    assert result.exit_code == 1
    line = result.output.strip()
    assert "\n" not in line and line.count(repr(name)) == 1, line
    assert line.startswith(
        f"Error: Gave up on {operation} on table {name!r} after 1.0 s (the deadline; raise it "
        f"with --timeout): {failure}"
    ), line
    refused = proxy.counts["throttle"] + proxy.counts["error_500"]
    assert refused >= 2  # (it was tried again before the deadline ended it)


def test_a_create_whose_answer_was_lost_says_it_created_the_table(
    ddb_endpoint_url: str, name: str
) -> None:
    """The answer to `table create`'s CreateTable lost: the try again found the table and
    said it "was there already" (a helper found it), though this very command made it."""
    faults = Faults(script=[Fault.LOSE_RESPONSE], operations=frozenset({"CreateTable"}))
    with FaultProxy(ddb_endpoint_url, faults) as proxy:
        command = ["table", "create", "-t", name, "--for", "counter"]
        result = CliRunner().invoke(cli, [*command, "--endpoint-url", proxy.endpoint_url])
        assert proxy.counts_by_operation[("CreateTable", "lose_response")] == 1
    assert result.exit_code == 0, result.output
    assert result.output == f"Created table {name} (pk:S), on demand: ACTIVE.\n"
    again = CliRunner().invoke(cli, [*command, "--endpoint-url", ddb_endpoint_url])
    assert again.output == f"Table {name} (pk:S) was there already: left as it is.\n"
