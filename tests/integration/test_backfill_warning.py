"""helper-87 F3: a marker index set up in Python the way the README shows it first (create,
then backfill) on a table whose stream is off writes its markers, and no listing can prove the
index from them: the command line said so in notes, Python said nothing (``report.counts``
False, the reason only in ``report.advice``). Now an ``IndexBackfillWarning`` names your line,
in sync and asyncio, and the command line keeps to its notes (no Python warning form)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys import aio
from ddbkeys._cli import cli
from ddbkeys.partition_keys import IndexBackfillWarning, MarkerIndex, distinct_partition_keys
from tests.integration.test_index_async import run

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


def filled(client: DynamoDBClient, factory: TableFactory) -> str:
    table = factory(("pk", "S"), ("sk", "S"))
    for n in range(20):
        client.put_item(TableName=table, Item={"pk": {"S": f"k{n % 7}"}, "sk": {"S": f"s{n}"}})
    return table


def test_a_backfill_no_listing_can_prove_warns_in_python(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, own_state_table: str
) -> None:
    table = filled(ddb_client, ddb_table_factory)
    index = MarkerIndex(ddb_client, table)
    index.create()
    with pytest.warns(IndexBackfillWarning, match=f"Backfill of table '{table}'") as met:
        report = index.backfill()
    (warned,) = [w for w in met if issubclass(w.category, IndexBackfillWarning)]
    assert warned.filename == __file__  # (your line, not ddbkeys')
    assert report.counts is False and report.advice is not None
    assert report.advice in str(warned.message) and "stream" in report.advice
    assert report.written == 7
    # What the warning is about: auto lists another way.
    assert distinct_partition_keys(ddb_client, table).method_name != "index"

    async def body(client: Any) -> Any:
        with pytest.warns(IndexBackfillWarning, match="no listing can prove") as seen:
            again = await aio.MarkerIndex(client, table).backfill()
        (also,) = [w for w in seen if issubclass(w.category, IndexBackfillWarning)]
        assert also.filename == __file__
        return again

    assert run(ddb_client, body).counts is False


def test_a_backfill_that_is_not_recorded_does_not_warn(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """``record=False`` asks for markers alone (no snapshot to prove from): nothing to warn."""
    table = filled(ddb_client, ddb_table_factory)
    index = MarkerIndex(ddb_client, table)
    index.create()
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexBackfillWarning)
        report = index.backfill(record=False)
    assert report.counts is None and report.written == 7


def test_the_command_line_says_it_in_its_notes_not_as_a_python_warning(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    own_state_table: str,
    ddb_endpoint_url: str,
) -> None:
    table = filled(ddb_client, ddb_table_factory)
    MarkerIndex(ddb_client, table).create()
    args = ["partition-keys", "index", "backfill", "-t", table, "--endpoint-url", ddb_endpoint_url]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "IndexBackfillWarning" not in result.stderr, result.stderr
    assert "no listing can prove" in result.stderr, result.stderr
