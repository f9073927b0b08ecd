"""Nothing is written without the marker index (issue 21), against DynamoDB Local: ``mark``,
``mark_many``, ``backfill`` and ``follow`` refuse, as ``unmark`` and ``verify`` do, when the
table has no KEYS_ONLY index keyed on the marker attribute, with a one-line error naming the
table, the index and the attribute. ``follow`` takes the attribute from the index itself; one
given that differs (a typo) is refused before anything is written: no marker, no state table."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner, Result

from ddbkeys._cli import cli
from ddbkeys._errors import ConfigurationError
from ddbkeys.aio import _index as aio_index
from ddbkeys.partition_keys import MarkerIndex
from ddbkeys.partition_keys._streams.follower import StreamFollower
from ddbkeys.testing._tables import TableFactory
from tests.integration.test_index_async import run as run_async

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def cli_run(endpoint: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["partition-keys", "index", *args, "--endpoint-url", endpoint])


def everything(client: DynamoDBClient, table: str) -> list[dict[str, Any]]:
    return sorted(
        client.scan(TableName=table, ConsistentRead=True)["Items"], key=lambda i: str(i["pk"])
    )


def exists(client: DynamoDBClient, table: str) -> bool:
    try:
        client.describe_table(TableName=table)
    except client.exceptions.ResourceNotFoundException:
        return False
    return True


@pytest.fixture
def store(ddb_client: DynamoDBClient, ddb_table_factory: TableFactory) -> Iterator[str]:
    """A state table's name, deleted after the test if something made it."""
    name = f"ddbkeys-state-refusals-{id(ddb_table_factory) % 10**8}"
    yield name
    with contextlib.suppress(ddb_client.exceptions.ResourceNotFoundException):
        ddb_client.delete_table(TableName=name)


def collections(client: DynamoDBClient, factory: TableFactory, *, stream: bool = False) -> str:
    table = factory(("pk", "S"), ("sk", "S"))
    if stream:
        client.update_table(
            TableName=table,
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
        )
    for pk in ("a", "b", "c"):
        client.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"S": "x"}})
    return table


def test_marking_without_the_index_writes_nothing(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, store: str
) -> None:
    table = collections(ddb_client, ddb_table_factory)
    before = everything(ddb_client, table)
    index = MarkerIndex(ddb_client, table)
    missing = (
        f"Table {table!r} has no index 'ddbkeys-partition-keys'. Create it with `ddbkeys "
        f"partition-keys index create --table-name {table}` (KEYS_ONLY, keyed on the marker "
        "attribute 'ddbkeys_pk'), then backfill the markers."
    )
    for call in (
        lambda: index.mark("a"),
        lambda: index.mark_many(["a", "b"]),
        lambda: index.backfill(state_table=store),
    ):
        with pytest.raises(ConfigurationError) as refused:
            call()
        assert str(refused.value) == missing
    for args in (("mark", "-t", table, "a"), ("backfill", "-t", table)):
        result = cli_run(ddb_endpoint_url, *args)
        assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: {missing}\n")
    assert everything(ddb_client, table) == before
    assert not exists(ddb_client, store)


def test_an_index_keyed_on_another_attribute_is_refused(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = collections(ddb_client, ddb_table_factory)
    MarkerIndex(ddb_client, table, marker_attribute="owner").create()
    before = everything(ddb_client, table)
    refused = (
        f"Index 'ddbkeys-partition-keys' of table {table!r} is keyed on 'owner', not on the "
        "marker attribute 'ddbkeys_pk': pass the marker attribute 'owner' (marker_attribute=) "
        "if it is the marker index, or name the marker index (index_name=)."
    )
    with pytest.raises(ConfigurationError) as raised:
        MarkerIndex(ddb_client, table).mark("a")
    assert str(raised.value) == refused
    result = cli_run(ddb_endpoint_url, "backfill", "-t", table)
    said = refused.replace("marker_attribute=", "--marker-attribute").replace(
        "index_name=", "--index-name"
    )  # (the CLI names its options)
    assert (result.exit_code, result.stderr) == (1, f"Error: {said}\n")
    assert everything(ddb_client, table) == before
    # With the index's own attribute, it marks.
    assert MarkerIndex(ddb_client, table, marker_attribute="owner").mark("a") is True


def test_follow_with_a_mistyped_attribute_writes_nothing(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, store: str
) -> None:
    table = collections(ddb_client, ddb_table_factory, stream=True)
    MarkerIndex(ddb_client, table).create()
    before = everything(ddb_client, table)
    args = ("follow", "-t", table, "--state-table", store, "--from-start", "--until-caught-up")
    typo = cli_run(ddb_endpoint_url, *args, "--marker-attribute", "ddbkeys_pkk")
    assert (typo.exit_code, typo.stdout) == (1, "")
    assert typo.stderr == (
        f"Error: Index 'ddbkeys-partition-keys' of table {table!r} is keyed on 'ddbkeys_pk', "
        "not on the marker attribute 'ddbkeys_pkk': pass the marker attribute 'ddbkeys_pk' "
        "(--marker-attribute) if it is the marker index, or name the marker index "
        "(--index-name).\n"
    )
    assert everything(ddb_client, table) == before
    assert not exists(ddb_client, store)
    with pytest.raises(ConfigurationError, match="keyed on 'ddbkeys_pk', not on the marker"):
        index = MarkerIndex(ddb_client, table, marker_attribute="ddbkeys_pkk")
        StreamFollower(index, state_table=store).run(until_caught_up=True, from_start=True)
    absent = cli_run(ddb_endpoint_url, *args, "--index-name", "nope")
    assert absent.exit_code == 1 and f"Table {table!r} has no index 'nope'" in absent.stderr
    assert everything(ddb_client, table) == before
    assert not exists(ddb_client, store)


def test_follow_takes_the_attribute_from_the_index(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, store: str
) -> None:
    table = collections(ddb_client, ddb_table_factory, stream=True)
    MarkerIndex(ddb_client, table, marker_attribute="owner").create()
    args = ("follow", "-t", table, "--state-table", store, "--from-start", "--until-caught-up")
    result = cli_run(ddb_endpoint_url, *args)
    assert result.exit_code == 0, result.stderr
    assert " record(s) handled: 3 marked, 0 unmarked, 0 clash(es); caught up" in result.stdout
    markers = [i for i in everything(ddb_client, table) if "owner" in i]
    assert [m["owner"] for m in markers] == [{"S": "a"}, {"S": "b"}, {"S": "c"}]
    assert not any("ddbkeys_pk" in i for i in everything(ddb_client, table))
    assert MarkerIndex(ddb_client, table, marker_attribute="owner").verify().healthy


def test_the_asyncio_follower_refuses_and_adopts_alike(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, store: str
) -> None:
    table = collections(ddb_client, ddb_table_factory, stream=True)
    MarkerIndex(ddb_client, table, marker_attribute="owner").create()
    before = everything(ddb_client, table)

    async def body(client: Any) -> int:
        typo = aio_index.MarkerIndex(client, table, marker_attribute="ownr")
        with pytest.raises(ConfigurationError, match="keyed on 'owner', not on the marker"):
            await aio_index.StreamFollower(typo, state_table=store).run(until_caught_up=True)
        assert everything(ddb_client, table) == before and not exists(ddb_client, store)
        index = aio_index.MarkerIndex(client, table)
        follower = aio_index.StreamFollower(index, state_table=store)
        report = await follower.run(until_caught_up=True, from_start=True)
        assert index.attribute == "owner"
        return report.marked

    assert run_async(ddb_client, body) == 3
    assert MarkerIndex(ddb_client, table, marker_attribute="owner").verify().healthy
