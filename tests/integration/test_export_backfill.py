"""``index backfill --from-export`` (``MarkerIndex.backfill(from_export=...)``) against DynamoDB
Local: the user's order (create the index, follow, export, backfill from the export), with
changes after the export; the default listing then proves the index and lists exactly the
table, and the backfill read no more of the table than the collections the stream named.
(DynamoDB Local rounds a record's time down to the minute: the stream must have begun a minute
before the export, so the test waits that long once.)"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ddbkeys._connect import make_client
from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys
from ddbkeys.partition_keys._index.backfill_wait import TIP, Readiness
from ddbkeys.partition_keys._index.markers import DEFAULT_MARKER_SORT_KEY
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._proof.evidence import CREATED_ROUNDING
from ddbkeys.testing import FaultProxy, TableFactory
from tests.integration.test_index_proof import caught_up, following
from tests.integration.test_marker_lifecycle import MARGIN, item, marked, non_empty
from tests.support.exports import export_table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def test_backfill_from_an_export_then_the_default_listing_is_proven_and_exact(
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    tmp_path: Path,
    fault_proxy: FaultProxy,
) -> None:
    table, store = streamed_table, state_table
    began = time.monotonic()
    index = MarkerIndex(ddb_client, table)
    for n in range(40):
        for sk in range(1 + n % 3):
            ddb_client.put_item(TableName=table, Item=item(f"k{n:03d}", sk))
    index.mark("orphan")  # a marker on a collection that holds nothing else
    index.mark("k000")  # one already right
    time.sleep(max(0.0, CREATED_ROUNDING + MARGIN + 1 - (time.monotonic() - began)))
    folder = export_table(ddb_client, table, tmp_path)
    with following(ddb_client, table, store) as follower:
        ddb_client.put_item(TableName=table, Item=item("late", 0))  # a collection added
        for sk in range(2):  # a collection emptied
            ddb_client.delete_item(TableName=table, Key=item("k001", sk))
        before = index.verify(from_export=str(folder), replay_margin=MARGIN)
        assert before.as_of is not None and before.as_of.startswith("exact now"), before.as_of
        changed = {k["S"] for k in before.not_compared}
        assert {"late", "k001"} <= changed
        assert {k["S"] for k in before.orphans} == {"orphan"} - changed
        assert {k["S"] for k in before.missing} == {f"k{n:03d}" for n in range(1, 40)} - changed
        counted = MarkerIndex(make_client(fault_proxy.endpoint_url), table)  # (its requests seen)
        told: list[Readiness] = []
        report = counted.backfill(
            state_table=store,
            replay_margin=MARGIN,
            from_export=str(folder),
            on_wait=told.append,
        )
        # Its wait for the stream's tip is told, as the read mode's (helper-89 F10: silent)
        tips = [r for r in told if r.state == TIP]
        assert tips and all(0 < r.left <= MARGIN for r in tips), told
        assert "the markers are written; the stream is read in" in tips[0].advice()
        caught_up(follower)
        assert report.mode == "export" and report.uncounted is None, report
        assert report.counts is not False, report.advice
        assert report.written == 39 and report.present == 1 and report.removed == 1
        assert report.rechecked >= 2  # late, k001 (and what the stream held before the export)
        # No read of the table but the collections the stream named: no Scan, a consistent
        # Query (or two) of each collection the stream named, none of the others.
        reads = Counter(c.operation for c in fault_proxy.calls if c.table == table and not c.stream)
        assert reads["Scan"] == 0 and reads["GetItem"] == 0, reads
        assert 1 <= reads["Query"] <= 2 * report.rechecked, (reads, report.rechecked)
        record = StateStore(ddb_client, store).load(table, index.name)
        assert record is not None and record.backfill is not None
        assert record.backfill.uncounted is None and record.backfill.finished is not None
        listed = distinct_partition_keys(ddb_client, table, state_table=store, replay_margin=MARGIN)
        assert listed.index_trusted is True, listed.method_reason
        assert sorted(listed) == non_empty(ddb_client, table)
        assert "late" in non_empty(ddb_client, table) and "k001" not in non_empty(ddb_client, table)
    assert marked(ddb_client, table) == non_empty(ddb_client, table)


def test_the_cli_backfills_from_an_export_of_another_table_with_one_line(
    ddb_endpoint_url: str, streamed_table: str, state_table: str, tmp_path: Path
) -> None:
    from tests.support.exports import product_catalog, write  # noqa: PLC0415

    folder = write(product_catalog("DYNAMODB_JSON"), tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ddbkeys",
            "partition-keys",
            "index",
            "backfill",
            "-t",
            streamed_table,
            "--state-table",
            state_table,
            "--from-export",
            str(folder),
            "--endpoint-url",
            ddb_endpoint_url,
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"export of table 'ProductCatalog', not {streamed_table!r}" in done.stderr


def test_verify_from_an_export_reads_neither_table_nor_index(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    fault_proxy: FaultProxy,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    index = MarkerIndex(ddb_client, table)
    index.create()
    for pk in ("a", "b", "c", "d"):
        ddb_client.put_item(TableName=table, Item=item(pk, 1))
    index.mark("a")  # right
    index.mark("z")  # an orphan: its collection holds nothing else
    clash = {"pk": {"S": "d"}, "sk": DEFAULT_MARKER_SORT_KEY["N"]}  # data at the marker's key
    ddb_client.put_item(TableName=table, Item=clash)
    folder = export_table(ddb_client, table, tmp_path)
    counted = MarkerIndex(make_client(fault_proxy.endpoint_url), table)
    report = counted.verify(from_export=str(folder))
    assert [k["S"] for k in report.missing] == ["b", "c"]
    assert [k["S"] for k in report.orphans] == ["z"]
    assert [k["S"] for k in report.clashes] == ["d"]
    assert report.not_compared == [] and report.collections == 4 and report.markers == 2
    assert report.as_of is not None and report.as_of.endswith("the table's stream is off")
    reads = [c.operation for c in fault_proxy.calls if c.table == table and not c.stream]
    assert set(reads) <= {"DescribeTable"}, reads  # (no Scan, Query or GetItem)
