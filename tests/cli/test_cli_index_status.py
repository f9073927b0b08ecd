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

from ddbkeys._cli import cli
from ddbkeys._connect import make_client
from ddbkeys.partition_keys import MarkerIndex, StreamFollower, estimate_listing
from ddbkeys.partition_keys._index.backfill_wait import began
from ddbkeys.partition_keys._index.stream_setup import enable_stream
from ddbkeys.testing._proxy import FaultProxy
from ddbkeys.testing._tables import TableFactory
from tests.integration.test_backfill_alive import SLOW, at_work
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
        # Within the default margin of the follower's start: the backfill waits out the rest,
        # or `index follow --backfill` backfills by itself (a new user was told to run it
        # beside one; the record cannot say which follower runs).
        waiting = status(ddb_endpoint_url, table, "--state-table", store)
        assert f"{fix} (it waits " in waiting.stdout, waiting.output
        assert "\nOr nothing, if `index follow --backfill` is what runs: it backfills by " in (
            waiting.stdout
        )
        # ... and so says the estimate (it named `index backfill` alone)
        guess = estimate_listing(ddb_client, table, state_table=store)
        assert "or nothing, if `index follow --backfill` is what runs" in guess.auto_reason
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=float(MARGIN))
        ddb_client.put_item(TableName=table, Item={"pk": {"S": "new"}, "sk": {"N": "1"}})
        after = status(ddb_endpoint_url, table, *args, "--output", "json")
        assert after.exit_code == 0, after.output
        proven = document(after)
        assert proven["provable"] is True and proven["reason"] is None and proven["fix"] is None
        assert proven["view_type"] == "KEYS_ONLY" and proven["maintainer"] == "follow"
        assert proven["backfill"]["after_first"] >= float(MARGIN)
        # (Whether "new" lies past the position held back 1 s depends on when the follower
        # applied it: it asserted one at least while the marks' thinning held every listing
        # back to the follower's first position, a bug; now it is about the margin old.)
        assert proven["records"] is not None and proven["rechecks"] is not None
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


def test_while_a_backfill_is_at_work_status_says_so_and_names_no_command(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    store: str,
    fault_proxy: FaultProxy,
) -> None:
    """Not the listing's "run `index backfill`" (that would only wait for it): who runs it,
    how far it is, and that the index is provable once it finishes; then 0 once it has."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for n in range(20):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"k{n}"}, "sk": {"N": "1"}})
    MarkerIndex(ddb_client, table).create()
    enable_stream(ddb_client, table)
    args = ("--state-table", store, "--replay-margin", MARGIN)
    with following(ddb_client, table, store):
        fault_proxy.set_faults(SLOW)  # 20 collections, 2 Queries each: 8 s and more
        slowed = MarkerIndex(make_client(fault_proxy.endpoint_url), table)
        done: list[Any] = []
        worker = threading.Thread(
            target=lambda: done.append(
                slowed.backfill(state_table=store, replay_margin=1.0, mode="reconcile")
            )
        )
        worker.start()
        try:
            theirs = at_work(ddb_client, table, store)
            text = status(ddb_endpoint_url, table, *args)
            as_json = status(ddb_endpoint_url, table, *args, "--output", "json")
            # A listing meanwhile says the same, not "run `index backfill`" (issue 35).
            endpoint = ("--endpoint-url", ddb_endpoint_url)
            listed = {
                method: CliRunner().invoke(
                    cli,
                    ["partition-keys", "-t", table, "--method", method, *args, *endpoint],
                )
                for method in ("index", "auto")
            }
        finally:
            worker.join(timeout=60)
        assert text.exit_code == 1, text.output
        verdict = next(line for line in text.stdout.splitlines() if line.startswith("Provable:"))
        assert verdict.startswith(f"Provable: no: a backfill is at work ({began(theirs)}; ")
        assert verdict.endswith(
            "listings can prove the index once it finishes, if it meets no clash (nothing to "
            "run: `index backfill` would wait for it)"
        ), verdict
        assert "Fix:" not in text.stdout and "Provable in" not in text.stdout
        assert as_json.exit_code == 1, as_json.output
        told = document(as_json)
        assert told["provable"] is False and told["fix"] is None and told["fix_in"] is None
        assert told["reason"].startswith("a backfill is at work (begun ")
        assert told["backfill"]["at_work"] is True and told["backfill"]["handled"] >= 0
        working = f"cannot be proven complete now: a backfill is at work ({began(theirs)}; "
        assert listed["index"].exit_code == 1 and working in listed["index"].stderr
        assert "run `" not in listed["index"].stderr, listed["index"].stderr
        assert listed["auto"].exit_code == 0 and working in listed["auto"].stderr
        assert len(listed["auto"].stdout.split()) == 20, listed["auto"].output
        assert done and done[0].counts
        after = status(ddb_endpoint_url, table, *args)
        assert after.exit_code == 0, after.output
