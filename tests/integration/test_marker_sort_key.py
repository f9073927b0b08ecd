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
from ddbkeys.partition_keys import (
    ListingOptions,
    MarkerIndex,
    StreamFollower,
    distinct_partition_keys,
)
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
        # (not told: the lone marker reads as data, as the docs say; auto reads the index's
        # record, which knows them)
        untold = distinct_partition_keys(ddb_client, table, method)
        assert sorted(untold) == (yours if method == "auto" else KEYS), method
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
    assert code == 1 and f"at sort key {given!r}, not " in out, out  # (it says which)
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


def backfilled_at_minus_5(client: DynamoDBClient, table: str, store: str) -> int:
    """Collections ``KEYS``, marked at sort key -5 by a backfill recorded in ``store``: how
    many items the table then holds."""
    for key in KEYS:
        client.put_item(TableName=table, Item={"pk": {"S": key}, "sk": {"N": "1"}})
    index = MarkerIndex(client, table, marker_sort_key=Decimal(-5))
    assert index.backfill(state_table=store, wait=False).written == len(KEYS)
    return int(client.scan(TableName=table, ConsistentRead=True)["Count"])


def test_verify_and_repair_without_the_value_refuse_and_write_nothing(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """A helper made the index with --marker-sort-key '#mk', then left the flag out of `index
    verify` once: it found every marker missing and advised `index repair`, which wrote a second
    set at the default value; those then kept emptied collections listed, with exit 0. The
    index's record says how it knows its markers: both refuse, writing nothing; so do `index
    mark` and `unmark` by hand."""
    table, store = streamed_table, state_table
    before = backfilled_at_minus_5(ddb_client, table, store)
    told = (
        f"The marker index of table {table!r} was backfilled with markers of attribute "
        "'ddbkeys_pk' at sort key '-5', not attribute 'ddbkeys_pk' at sort key "
        "'-99999999999999999999999999999999999999' as given here"
    )
    for command in ("verify", "repair", "mark p9", "unmark p1"):
        args = ["partition-keys", "index", *command.split(), "-t", table, "--state-table", store]
        result = CliRunner().invoke(cli, [*args, "--endpoint-url", ddb_endpoint_url])
        assert result.exit_code == 1 and told in result.stderr, result.output
        assert "\n" not in result.stderr.strip()
    assert ddb_client.scan(TableName=table, ConsistentRead=True)["Count"] == before
    with pytest.raises(ConfigurationError, match="at sort key '-5', not "):
        MarkerIndex(ddb_client, table).verify(state_table=store)
    args = ["partition-keys", "index", "verify", "-t", table, "--state-table", store]
    args += ["--marker-sort-key", "-5", "--endpoint-url", ddb_endpoint_url]
    right = CliRunner().invoke(cli, args)
    assert right.exit_code == 0 and right.stdout.splitlines()[-1] == "OK", right.output


def test_a_backfill_or_follower_told_other_markers_refuses_and_writes_nothing(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """The same slip with `index backfill` or `index follow` (or the Lambda handler's
    settings): each would keep a second set of markers, the first then read as data. The
    record's last backfill says how the index knows its markers; told that, it runs."""
    table, store = streamed_table, state_table
    before = backfilled_at_minus_5(ddb_client, table, store)
    slip = MarkerIndex(ddb_client, table)  # (the default sort key)
    told = "was backfilled with markers of attribute 'ddbkeys_pk' at sort key '-5', not "
    with pytest.raises(ConfigurationError, match=told):
        slip.backfill(state_table=store, wait=False)
    with pytest.raises(ConfigurationError, match=told):
        StreamFollower(slip, state_table=store).run(until_caught_up=True)
    assert ddb_client.scan(TableName=table, ConsistentRead=True)["Count"] == before
    again = MarkerIndex(ddb_client, table, marker_sort_key=Decimal(-5))
    assert again.backfill(state_table=store, wait=False).present == len(KEYS)  # (its own: runs)


def test_auto_told_the_defaults_knows_the_markers_as_the_record_does(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """A helper's index made with its own marker sort key, then `ddbkeys partition-keys -t T`
    with no flags: auto read the record (and said the markers sat elsewhere), then listed with
    skip-pages knowing the default ones, so a collection emptied but for its marker was listed,
    exit 0. It now knows them as the record does, and says so."""
    table, store = streamed_table, state_table
    backfilled_at_minus_5(ddb_client, table, store)
    ddb_client.delete_item(TableName=table, Key={"pk": {"S": "p0"}, "sk": {"N": "1"}})
    listing = distinct_partition_keys(ddb_client, table, state_table=store)
    assert sorted(listing) == KEYS[1:], listing.method_reason
    assert "as the index's record does (attribute 'ddbkeys_pk' at sort key -5)" in (
        listing.method_reason
    )
    told = distinct_partition_keys(ddb_client, table, "skip-pages", state_table=store)
    assert sorted(told) == KEYS  # (a method named: as told, as the docs say)


def test_status_names_the_fix_with_the_index_s_own_markers(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """`index status` run without the index's --marker-sort-key named a fix (`index follow
    --backfill`) that was then refused for want of it (a helper's finding)."""
    table, store = streamed_table, state_table
    backfilled_at_minus_5(ddb_client, table, store)
    args = ["partition-keys", "index", "status", "-t", table, "--state-table", store]
    result = CliRunner().invoke(cli, [*args, "--endpoint-url", ddb_endpoint_url])
    fix = [line for line in result.stdout.splitlines() if line.startswith("Fix: ")]
    assert fix and fix[0].endswith(f"--state-table {store} --marker-sort-key -5"), result.output


def test_a_backfill_that_changes_the_markers_removes_the_old_ones_first(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """A helper switched a proven index to another marker sort key with `index backfill
    --force`, without removing the old markers by hand as the docs said: they then read as
    data, and a collection emptied later was listed for good, "proven", exit 0. The switch now
    removes them first (those in the index), and says how many."""
    table, store = streamed_table, state_table
    for key in KEYS:
        ddb_client.put_item(TableName=table, Item={"pk": {"S": key}, "sk": {"N": "1"}})
    assert MarkerIndex(ddb_client, table).backfill(state_table=store, wait=False).written == 5
    switched = MarkerIndex(ddb_client, table, marker_sort_key=Decimal(-5))
    report = switched.backfill(state_table=store, wait=False, force=True)
    assert (report.written, report.removed) == (len(KEYS), len(KEYS))
    items = ddb_client.scan(TableName=table, ConsistentRead=True)["Items"]
    sort_keys = sorted(Decimal(i["sk"]["N"]) for i in items)
    assert sort_keys == [Decimal(-5)] * len(KEYS) + [Decimal(1)] * len(KEYS)
    ddb_client.delete_item(TableName=table, Key={"pk": {"S": "p0"}, "sk": {"N": "1"}})
    listed = distinct_partition_keys(
        ddb_client, table, "skip-pages", marker_sort_key=Decimal(-5), state_table=store
    )
    assert sorted(listed) == KEYS[1:]
    # Run again with the same settings: nothing of the old is left to remove.
    assert switched.backfill(state_table=store, wait=False, force=True).removed == 1  # (p0's)
