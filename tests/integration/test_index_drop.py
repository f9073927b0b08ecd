"""``index drop`` / ``MarkerIndex.drop``: the index and its markers taken away, nothing of
yours with them, on DynamoDB Local (helper-89 C1: `index create` sent the user to the AWS CLI,
which deletes the GSI and leaves a marker in every collection, read by every later scan)."""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys.aio import MarkerIndex as AsyncMarkerIndex
from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys
from ddbkeys.partition_keys._index.markers import DEFAULT_MARKER_SORT_KEY
from ddbkeys.testing import Fault, FaultProxy, Faults
from tests.conftest import proxied_client
from tests.integration.test_index_async import run
from tests.support.exports import consistent_items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


def indexes(client: DynamoDBClient, table: str) -> list[str]:
    described = client.describe_table(TableName=table)["Table"]
    return [i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])]


def marked_table(client: DynamoDBClient, factory: TableFactory) -> tuple[str, list[Any]]:
    """A table with 30 collections of 2 items each and the marker index backfilled, and an
    item of yours at the marker's key of collection c000 (a clash: data, never removed)."""
    table = factory(("pk", "S"), ("sk", "N"))
    for k in range(30):
        for sk in ("1", "2"):
            client.put_item(TableName=table, Item={"pk": {"S": f"c{k:03}"}, "sk": {"N": sk}})
    at_marker = {"pk": {"S": "c000"}, "sk": DEFAULT_MARKER_SORT_KEY["N"], "note": {"S": "mine"}}
    client.put_item(TableName=table, Item=at_marker)
    index = MarkerIndex(client, table)
    index.create()
    report = index.backfill(record=False)
    assert report.written == 29 and len(report.clashes) == 1
    return table, sorted(consistent_items(client, table), key=json.dumps)


def test_drop_takes_the_index_and_its_markers_and_nothing_of_yours(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table, before = marked_table(ddb_client, ddb_table_factory)
    assert len(before) == 61 + 29  # (yours, and the markers)
    told: list[int] = []
    assert MarkerIndex(ddb_client, table).drop(told.append) == 29
    assert told == list(range(1, 30)) and indexes(ddb_client, table) == []
    left = consistent_items(ddb_client, table)
    assert len(left) == 61 and not [i for i in left if "ddbkeys_type" in i]
    assert {"S": "mine"} in [i.get("note") for i in left]  # (the clash: yours, kept)
    listing = distinct_partition_keys(ddb_client, table)
    assert sorted(listing) == [f"c{k:03}" for k in range(30)]
    # Again: nothing there, nothing removed (and no error); asyncio the same.
    assert MarkerIndex(ddb_client, table).drop() == 0

    async def again(client: Any) -> int:
        return await AsyncMarkerIndex(client, table).drop()

    assert run(ddb_client, again) == 0


def test_drop_whose_answers_were_lost_still_drops(
    fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """The UpdateTable's answer lost (the retry finds the index DELETING or gone), and a
    DeleteItem's (the retry's condition fails on a marker already gone): all removed."""
    for operation in ("UpdateTable", "DeleteItem"):
        table, _ = marked_table(ddb_client, ddb_table_factory)
        fault_proxy.set_faults(
            Faults(script=[Fault.LOSE_RESPONSE], operations=frozenset({operation}))
        )
        removed = MarkerIndex(proxied_client(fault_proxy), table).drop()
        assert fault_proxy.counts_by_operation[(operation, "lose_response")] == 1
        # (a lost DeleteItem's retry finds the marker gone: counted short, never over)
        assert removed == (29 if operation == "UpdateTable" else 28)
        assert indexes(ddb_client, table) == []
        assert not [i for i in consistent_items(ddb_client, table) if "ddbkeys_type" in i]


def test_the_cli_asks_first_and_create_names_it(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table, before = marked_table(ddb_client, ddb_table_factory)
    runner = CliRunner()
    args = ["partition-keys", "index", "drop", "-t", table, "--endpoint-url", ddb_endpoint_url]
    refused = runner.invoke(cli, args)  # (off a terminal, without --yes)
    assert refused.exit_code == 2, refused.output
    assert "add --yes to go on" in refused.output
    assert sorted(consistent_items(ddb_client, table), key=json.dumps) == before
    dropped = runner.invoke(cli, [*args, "--yes"])
    assert dropped.exit_code == 0, dropped.output
    assert dropped.stdout == (
        f"Index ddbkeys-partition-keys of table {table} deleted; 29 marker(s) removed.\n"
    )
    again = json.loads(runner.invoke(cli, [*args, "--yes", "--output", "json"]).stdout)
    assert (again["deleted"], again["removed"]) == (False, 0)
    # `index create`'s warning sends the user here (it named the AWS CLI, which left the
    # markers): the command it prints, pasted as printed, takes the index away.
    small = ddb_table_factory(("pk", "B"), ("sk", "B"))
    for k in range(300):  # (tiny binary keys: markers dearer than what they save)
        ddb_client.put_item(
            TableName=small, Item={"pk": {"B": k.to_bytes(2, "big")}, "sk": {"B": b"\x01"}}
        )
    created = runner.invoke(
        cli, ["partition-keys", "index", "create", "-t", small, "--endpoint-url", ddb_endpoint_url]
    )
    assert created.exit_code == 0, created.output
    line = created.stderr.splitlines()[-1]
    assert "take it away with `ddbkeys partition-keys index drop" in line, line
    pasted = shlex.split(line.split("`")[1])
    assert pasted[:4] == ["ddbkeys", "partition-keys", "index", "drop"]
    assert runner.invoke(cli, pasted[1:]).exit_code == 0
    assert indexes(ddb_client, small) == []
