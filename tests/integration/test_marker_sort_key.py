"""An index made with its own marker sort key (``MarkerIndex(marker_sort_key=...)``, for a table
whose data sits at the default's value), against DynamoDB Local: every listing method, the
estimate, the CLI and the Lambda handler's settings know its markers once told the value
(``marker_sort_key=``, ``--marker-sort-key``, ``DDBKEYS_MARKER_SORT_KEY``), in the sync and
the asyncio forms. Before, a listing could not be told: a trusted index listing read none of
its markers (an empty answer), and a collection left holding only its marker was listed."""

from __future__ import annotations

import base64
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys._errors import ConfigurationError
from ddbkeys.aio._listing import distinct_partition_keys as aio_keys
from ddbkeys.partition_keys import ListingOptions, MarkerIndex, distinct_partition_keys
from ddbkeys.partition_keys.aws_lambda import environment_settings
from ddbkeys.testing._tables import TableFactory
from tests.integration.test_index_async import run

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

#: The markers' own sort key, where data holds the default (b"\x00").
MARKER = b"\x01\x01"
KEYS = [f"p{n}" for n in range(5)]


def marked(client: DynamoDBClient, factory: TableFactory) -> str:
    """Collections p0 to p4, each with an item at the default marker value and another,
    marked at ``MARKER``; then p0 emptied of its data (its marker left alone, as a stopped
    maintainer leaves it)."""
    table = factory(("pk", "S"), ("sk", "B"))
    for key in KEYS:
        for sort in (b"\x00", b"\x05"):
            client.put_item(TableName=table, Item={"pk": {"S": key}, "sk": {"B": sort}})
    index = MarkerIndex(client, table, marker_sort_key=MARKER)
    index.create()
    report = index.backfill()
    assert report.written == len(KEYS) and not report.clashes
    assert index.verify().healthy
    for sort in (b"\x00", b"\x05"):
        client.delete_item(TableName=table, Key={"pk": {"S": "p0"}, "sk": {"B": sort}})
    return table


def test_every_method_knows_the_markers_by_the_value_given(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = marked(ddb_client, ddb_table_factory)
    yours = KEYS[1:]
    for method in ("scan", "skip", "skip-pages", "auto"):
        listed = distinct_partition_keys(ddb_client, table, method, marker_sort_key=MARKER)
        assert sorted(listed) == yours, method
        # (not told: the lone marker reads as data, as the docs say)
        assert sorted(distinct_partition_keys(ddb_client, table, method)) == KEYS, method
    trusted = distinct_partition_keys(
        ddb_client, table, "index", trust_index=True, marker_sort_key=MARKER
    )
    assert sorted(trusted) == KEYS  # (the index as it is: p0's marker is still in it)

    async def aio_listed(client: Any) -> list[str]:
        keys = await aio_keys(client, table, "skip-pages", marker_sort_key=MARKER)
        return sorted([str(key) async for key in keys])

    assert run(ddb_client, aio_listed) == yours


def test_the_cli_takes_the_value_in_the_sort_key_s_type(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = marked(ddb_client, ddb_table_factory)
    given = base64.b64encode(MARKER).decode()

    def ddbkeys(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(
            cli, ["partition-keys", *args, "-t", table, "--endpoint-url", ddb_endpoint_url]
        )
        return result.exit_code, result.stdout if result.exit_code == 0 else result.output

    code, out = ddbkeys("--method", "skip-pages", "--marker-sort-key", given)
    assert code == 0 and sorted(out.split()) == KEYS[1:]
    code, out = ddbkeys("index", "verify", "--marker-sort-key", given)  # (p0's: orphaned)
    assert "4 collections, 5 markers" in out and "orphaned markers: 1: p0" in out, out
    code, out = ddbkeys("index", "verify")  # (the default value: none of its markers)
    assert "5 collections, 0 markers" in out, out  # (p0: its marker read as data)
    code, out = ddbkeys("--method", "scan", "--marker-sort-key", "not base64!")
    assert code == 2 and "--marker-sort-key" in out and "binary sort key" in out, out


def test_the_value_goes_through_a_task_s_json() -> None:
    for value in (MARKER, Decimal("-1.5"), 7, "#mine"):
        options = ListingOptions(marker_sort_key=value)
        assert ListingOptions.from_dict(options.to_dict()) == options
    with pytest.raises(ConfigurationError, match="marker_sort_key"):
        ListingOptions(marker_sort_key=b"")


def test_the_lambda_handler_reads_it_from_its_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DDBKEYS_MARKER_SORT_KEY", base64.b64encode(MARKER).decode())
    assert environment_settings()["marker_sort_key"] == base64.b64encode(MARKER).decode()
    monkeypatch.delenv("DDBKEYS_MARKER_SORT_KEY")
    assert environment_settings()["marker_sort_key"] is None
