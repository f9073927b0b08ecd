"""``ddbkeys partition-keys index status`` as a user meets it, against DynamoDB: exit 1 with the
listing's reason and the command that fixes it until the index can be proven, 0 once it can;
exit 2 and one line, nothing written, when there is no table, no index or no state table."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner, Result

from ddbkeys.cli import cli
from ddbkeys.partition_keys import MarkerIndex, StreamFollower
from ddbkeys.partition_keys.stream_setup import enable_stream
from ddbkeys.testing.tables import TableFactory
from tests.integration.test_marker_follow_faults import wait_for_record

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

MARGIN = "1"


def status(endpoint: str, table: str, *args: str) -> Result:
    return CliRunner().invoke(
        cli, ["partition-keys", "index", "status", "-t", table, *args, "--endpoint-url", endpoint]
    )


@pytest.fixture
def store(ddb_client: DynamoDBClient) -> Iterator[str]:
    name = f"ddbkeys-state-status-{time.monotonic_ns() % 10**9}"
    yield name
    with contextlib.suppress(ddb_client.exceptions.ResourceNotFoundException):
        ddb_client.delete_table(TableName=name)


@contextlib.contextmanager
def following(client: DynamoDBClient, table: str, store: str) -> Iterator[None]:
    follower = StreamFollower(MarkerIndex(client, table), state_table=store, poll=0.05)
    stop = threading.Event()
    runner = threading.Thread(target=follower.run, args=(stop,))
    runner.start()
    try:
        wait_for_record(client, table, store)
        yield
    finally:
        stop.set()
        runner.join(timeout=30)


def document(result: Result) -> dict[str, Any]:
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_status_tells_until_the_index_is_provable_then_exits_0(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    store: str,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for n in range(5):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"k{n}"}, "sk": {"N": "1"}})
    MarkerIndex(ddb_client, table).create()
    enable_stream(ddb_client, table)
    args = ("--state-table", store, "--replay-margin", MARGIN)
    with following(ddb_client, table, store):
        before = status(ddb_endpoint_url, table, *args)
        assert before.exit_code == 1, before.output
        assert "Provable: no: there is no record of a backfill" in before.stdout
        fix = f"Fix: ddbkeys partition-keys index backfill -t {table} --state-table {store}"
        assert fix in before.stdout
        assert "Maintainer: follow" in before.stdout
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=float(MARGIN))
        ddb_client.put_item(TableName=table, Item={"pk": {"S": "new"}, "sk": {"N": "1"}})
        after = status(ddb_endpoint_url, table, *args, "--output", "json")
        assert after.exit_code == 0, after.output
        proven = document(after)
        assert proven["provable"] is True and proven["reason"] is None and proven["fix"] is None
        assert proven["view_type"] == "KEYS_ONLY" and proven["maintainer"] == "follow"
        assert proven["backfill"]["after_first"] >= float(MARGIN)
        assert proven["records"] >= 1 and proven["rechecks"] >= 1  # "new", past the positions
        assert proven["listing_rcu"] is not None and proven["scan_rcu"] > 0
        # With the default margin (60 s), the backfill begun for 1 s does not count: the
        # listing's words, and a backfill that waits out the rest of the 60 s.
        strict = status(ddb_endpoint_url, table, "--state-table", store, "--output", "json")
        assert strict.exit_code == 1
        assert "begun for a replay margin of 1 s, less than" in document(strict)["reason"]
        assert document(strict)["fix"].startswith("ddbkeys partition-keys index backfill")
        assert 0 < document(strict)["fix_in"] <= 60
        assert document(strict)["backfill"]["margin"] == 1.0


def tables(client: DynamoDBClient) -> list[str]:
    return sorted(client.list_tables()["TableNames"])


def test_bad_input_is_one_line_exit_2_and_nothing_written(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    store: str,
) -> None:
    bare = ddb_table_factory(("pk", "S"), ("sk", "N"))
    indexed = ddb_table_factory(("pk", "S"), ("sk", "N"))
    MarkerIndex(ddb_client, indexed).create()
    enable_stream(ddb_client, indexed)
    cases = {
        "ddbkeys-no-such-table": "Error: Table 'ddbkeys-no-such-table' not found",
        bare: f"Error: Table {bare!r} has no index 'ddbkeys-partition-keys'. Create it with",
        indexed: f"Error: There is no state table {store!r}, so nothing proves marker index",
    }
    for table, line in cases.items():
        result = status(ddb_endpoint_url, table, "--state-table", store)
        assert result.exit_code == 2, result.output
        assert result.stdout == "" and len(result.stderr.splitlines()) == 1, result.stderr
        assert result.stderr.startswith(line), result.stderr
    # No state table made (the server may be shared: other tables come and go meanwhile).
    assert store not in tables(ddb_client)
    assert ddb_client.scan(TableName=indexed)["Items"] == []
    usage = status(ddb_endpoint_url, indexed, "--replay-margin", "-1")
    assert usage.exit_code == 2
