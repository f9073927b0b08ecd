"""An export made exact now with the table's stream, against DynamoDB Local's real stream: an
export at E, then writes (collections added, emptied, grown), then ``from_export`` lists exactly
the table as it is now and says so; with the stream off, or begun too late, it says "as of E"
and why. (DynamoDB Local rounds a record's time down to the minute: the stream must have begun
a minute before the export, so the test waits that long once.)"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ddbkeys import ListingInterrupted
from ddbkeys._cli.listing_export import export_stopped
from ddbkeys.partition_keys import ExportListing, distinct_partition_keys, enable_stream
from ddbkeys.partition_keys._export.now import now_window
from ddbkeys.partition_keys._proof.evidence import CREATED_ROUNDING
from ddbkeys.testing import TableFactory
from tests.support.exports import export_table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def put(client: DynamoDBClient, table: str, pk: str, sk: str) -> None:
    client.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"S": sk}})


def test_exact_now_from_the_export_and_the_stream(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    enable_stream(ddb_client, table)
    began = time.monotonic()
    for pk in ("a", "b", "c", "d"):
        for sk in ("1", "2"):
            put(ddb_client, table, pk, sk)
    time.sleep(max(0.0, CREATED_ROUNDING + 2 - (time.monotonic() - began)))
    folder = export_table(ddb_client, table, tmp_path)
    put(ddb_client, table, "e", "1")  # a collection added
    for sk in ("1", "2"):  # a collection emptied
        ddb_client.delete_item(TableName=table, Key={"pk": {"S": "b"}, "sk": {"S": sk}})
    put(ddb_client, table, "a", "3")  # a collection grown

    listing = distinct_partition_keys(ddb_client, table, from_export=str(folder), replay_margin=0)
    assert isinstance(listing, ExportListing)
    assert listing.exact_now, listing.as_of
    assert "3 collections to re-check" in listing.as_of  # (none re-checked yet)
    keys = list(listing)
    assert sorted(keys) == ["a", "c", "d", "e"]
    assert listing.as_of.startswith("exact now: the export of ")
    assert "3 collections re-checked" in listing.as_of  # a, b, e
    assert listing.usage.read_units > 0  # the re-checks' consistent Queries
    # The re-checks keep to the read budget (helper-89 F8: 919 RCU at full speed under
    # --max-rcu-per-second 10): at 1 RCU a second, the budget starting empty, each Query
    # waits for the units before it: all but the last's (a unit at most) are waited off.
    began = time.monotonic()
    slow = distinct_partition_keys(
        ddb_client,
        table,
        from_export=str(folder),
        replay_margin=0,
        max_rcu_per_second=1,
        strict_budget=True,
    )
    assert isinstance(slow, ExportListing)
    assert sorted(slow) == ["a", "c", "d", "e"] and "3 collections re-checked" in slow.as_of
    took, units = time.monotonic() - began, slow.usage.read_units
    assert units >= 1.0, units  # (three consistent Queries)
    assert took >= 0.95 * (units - 1.0), (took, units)  # (a loaded machine only slows it)

    # Cut short among its re-checks, it says how many it made, and that a rerun makes them again
    # (helper-91 F8: "260 collections re-checked" after 27, and "its files read no capacity").
    cut = distinct_partition_keys(ddb_client, table, from_export=str(folder), replay_margin=0)
    assert isinstance(cut, ExportListing)
    handed = iter(cut)
    assert [next(handed) for _ in range(3)]  # c, d (the export's), then a or e (re-checked)
    cut.stop()  # (as Ctrl-C in the CLI)
    with pytest.raises(ListingInterrupted):
        next(handed)
    assert re.search(r"\b[12] of 3 collections re-checked", cut.as_of), cut.as_of
    said = export_stopped("Interrupted", cut)
    assert "the 3 collections the stream named are re-checked again, about 1 RCU each" in said

    as_then = distinct_partition_keys(ddb_client, table, from_export=str(folder))
    assert isinstance(as_then, ExportListing)
    # (the default margin, 60 s: the stream began less than 2 minutes before the export)
    assert not as_then.exact_now
    assert "writes between are in no log" in as_then.as_of
    assert sorted(as_then) == ["a", "b", "c", "d"]


def test_with_the_stream_off_it_says_as_of_the_export(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    put(ddb_client, table, "a", "1")
    folder = export_table(ddb_client, table, tmp_path)
    put(ddb_client, table, "b", "1")
    listing = distinct_partition_keys(ddb_client, table, from_export=str(folder))
    assert isinstance(listing, ExportListing)
    assert list(listing) == ["a"]
    assert not listing.exact_now
    assert listing.as_of.endswith("the export's time; not now: the table's stream is off")


def test_the_window_rule(ddb_client: DynamoDBClient, ddb_table_factory: TableFactory) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    enable_stream(ddb_client, table)
    info = distinct_partition_keys(ddb_client, table, "scan").method.info
    label = datetime.fromisoformat(str(info.stream_arn).rsplit("/", 1)[-1]).replace(tzinfo=UTC)
    start = label.timestamp()
    # The stream must have begun at or before E - margin - rounding.
    late = datetime.fromtimestamp(start + 60 + CREATED_ROUNDING - 1, UTC)
    assert "writes between are in no log" in str(now_window(info, late, 60, start + 200))
    ok = datetime.fromtimestamp(start + 60 + CREATED_ROUNDING, UTC)
    assert now_window(info, ok, 60, start + 200) == pytest.approx(start)
    # ... and its records from there still kept (a day, less an hour).
    old = now_window(info, ok, 60, start + 23.5 * 3600)
    assert isinstance(old, str) and "older than the stream keeps" in old
