"""``MarkerIndex.proof_status()`` on DynamoDB Local, sync and asyncio: the same status from
both; it reads the table's description, the index's record and the stream, never the table,
and writes nothing (the record is the same after, and the requests are counted)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys import DdbKeysError, aio, make_client
from ddbkeys._cli import cli
from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys, estimate_listing
from ddbkeys.partition_keys._proof.report import ProofStatus
from tests.integration.test_index_async import run
from tests.integration.test_index_proof import caught_up, following
from tests.integration.test_marker_lifecycle import MARGIN, item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

INDEX = "ddbkeys-partition-keys"


def record(client: DynamoDBClient, table: str, store: str) -> dict[str, Any]:
    key = {"id": {"S": f"{table}/{INDEX}"}}
    return dict(client.get_item(TableName=store, Key=key, ConsistentRead=True)["Item"])


def test_sync_and_asyncio_tell_the_same_and_read_only_what_a_listing_reads(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    for n in range(5):
        ddb_client.put_item(TableName=table, Item=item(f"k{n}", 1))
    with following(ddb_client, table, store) as follower:
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
    # Nobody follows now: two writes are in the stream only.
    ddb_client.put_item(TableName=table, Item=item("new", 1))
    ddb_client.delete_item(TableName=table, Key=item("k0", 1))
    time.sleep(MARGIN)
    before = record(ddb_client, table, store)
    calls: list[tuple[str, str]] = []
    client = make_client(endpoint_url=ddb_client.meta.endpoint_url)

    def seen(model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if not context.get("is_presign_request"):  # (ddbkeys' probe of a client: not sent)
            calls.append((model.name, params.get("TableName", "")))

    client.meta.events.register("before-parameter-build.dynamodb", seen)
    told = MarkerIndex(client, table).proof_status(state_table=store, replay_margin=MARGIN)
    assert told.provable, told.reason
    assert told.records == 2 and told.rechecks == 2, told
    # DynamoDB's side (the stream's requests go to a Streams client): no Query, no Scan.
    assert calls == [("DescribeTable", table), ("GetItem", store)], calls
    assert record(ddb_client, table, store) == before  # nothing written

    async def body(client: Any) -> ProofStatus:
        index = aio.MarkerIndex(client, table)
        return await index.proof_status(state_table=store, replay_margin=MARGIN)

    also = run(ddb_client, body)
    assert (also.provable, also.records, also.rechecks, also.reason) == (True, 2, 2, None)
    assert [s.shard for s in also.shards] == [s.shard for s in told.shards]


def test_the_estimate_and_auto_price_a_lagging_maintainer_s_replay_as_status_does(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """Two writes past the maintainer's positions: the estimate's index line adds the replay
    ``index status`` prices (replay.replay_units, the same function), the listing from the
    index consumes what the line's range says, and ``auto`` names the figures it weighed."""
    table, store = streamed_table, state_table
    for n in range(30):  # 30 collections of 4 KB: a scan costs 15 RCU, the replay 2
        ddb_client.put_item(TableName=table, Item={**item(f"k{n}", 1), "pad": {"S": "x" * 4000}})
    with following(ddb_client, table, store) as follower:
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
    ddb_client.put_item(TableName=table, Item=item("new", 1))
    ddb_client.delete_item(TableName=table, Key=item("k0", 1))
    time.sleep(MARGIN)
    told = MarkerIndex(ddb_client, table).proof_status(state_table=store, replay_margin=MARGIN)
    found = estimate_listing(ddb_client, table, state_table=store, replay_margin=MARGIN)
    line = found.method("index")
    assert told.rechecks == 2 and told.listing_rcu is not None
    assert line.rcu == pytest.approx(told.listing_rcu)
    assert "2 collection(s) re-checked" in line.note
    assert found.auto == "index", (found.auto_reason, line)
    assert "replay ~" in found.auto_reason
    assert "(2 collection(s)) against a scan's ~" in found.auto_reason
    listing = distinct_partition_keys(
        ddb_client, table, "index", state_table=store, replay_margin=MARGIN
    )
    assert len(list(listing)) == 30
    assert line.rcu_low is not None and line.rcu_high is not None
    assert line.rcu_low <= listing.usage.read_units <= line.rcu_high <= 2 * line.rcu_low
    # Its requests: the index's scan and a Query a re-check (helper-89 F7: ~1 was said).
    assert line.requests == 1 + 2 == listing.usage.requests, (line, listing.usage)
    auto = distinct_partition_keys(ddb_client, table, state_table=store, replay_margin=MARGIN)
    list(auto)
    assert auto.method_name == "index"
    assert "the index: ~" in auto.method_reason and "against a scan's ~" in auto.method_reason
    # At the default margin (60 s) the backfill is too recent to prove: the estimate says auto
    # lists another way, as the listing then does (it said "index"); the command takes the
    # margin as the listing does (it said "No such option '--replay-margin'").
    default = estimate_listing(ddb_client, table, state_table=store)
    assert default.auto == "skip-pages" and "cannot be proven" in default.auto_reason
    declined = distinct_partition_keys(ddb_client, table, state_table=store)
    assert len(list(declined)) == 30 and declined.method_name == default.auto
    # A state table that cannot be read: the listing declines the index, and so says the
    # estimate (it said index, "if its proof succeeds").
    unread = estimate_listing(ddb_client, table, state_table="ddbkeys-no-such-state")
    assert unread.auto == "skip-pages" and "proof cannot be read now" in unread.auto_reason
    # ... and the listing names that state table (it said "no record of a backfill (run
    # `index backfill`...)", as if the name given were right)
    missing = distinct_partition_keys(ddb_client, table, state_table="ddbkeys-no-such-state")
    assert len(list(missing)) == 30 and missing.method_name == "skip-pages"
    assert "nor a state table 'ddbkeys-no-such-state'" in missing.method_reason
    assert f"status -t {table} --state-table ddbkeys-no-such-state` says" in missing.method_reason
    # A table that is not a state table (the listed table itself): the same fall back, naming
    # it (auto and plan failed with "internal error (UnboundLocalError ...)")
    other = distinct_partition_keys(ddb_client, table, state_table=table)
    assert len(list(other)) == 30 and other.method_name == "skip-pages"
    assert f"Table {table!r} is not a ddbkeys state table" in other.method_reason
    with pytest.raises(DdbKeysError, match="is not a ddbkeys state table"):
        MarkerIndex(ddb_client, table).proof_status(state_table=table)
    given = ["-t", table, "--state-table", store, "--replay-margin", str(MARGIN)]
    given += ["--output", "json", "--endpoint-url", ddb_client.meta.endpoint_url]
    said = CliRunner().invoke(cli, ["partition-keys", "estimate", *given])
    assert said.exit_code == 0, said.output
    assert json.loads(said.stdout)["auto"] == "index"
