"""A state record no maintainer wrote (the state table is part of what a proof trusts): a
position before its shard's first sequence number is ruled out by DescribeStream's range, and
one far past the shard's tip, which DynamoDB Local answers with InternalFailure (HTTP 500),
declines after three such answers in a row, not after the 60 s deadline; a newest position
past the tip, read towards from a real one, is never reached and declines after 1,000 empty
pages. On DynamoDB Local, with the real follower and backfill, timed. (A forged position a
listing reads *from*, that the stream accepts, is trusted: by design, see the assumptions.)"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._proof.evidence import SHARD_PREFIX, ShardMark
from tests.integration.test_index_proof import caught_up, following
from tests.integration.test_marker_lifecycle import MARGIN, item, non_empty

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

INDEX = "ddbkeys-partition-keys"


def proven_then_forged(
    client: DynamoDBClient, table: str, store: str, sequence: str, newest: bool
) -> None:
    """A proven index (follower, backfill, caught up), then its first shard's positions
    replaced by one at ``sequence``, saved long enough ago to be the one a listing reads from
    (``newest``: saved just now, after the maintainer's real position, which is read from)."""
    for n in range(6):
        client.put_item(TableName=table, Item=item(f"k{n}", 1))
    with following(client, table, store) as follower:
        MarkerIndex(client, table).backfill(state_table=store, replay_margin=MARGIN)
        client.put_item(TableName=table, Item=item("late", 1))
        caught_up(follower)
    before = distinct_partition_keys(client, table, state_table=store, replay_margin=MARGIN)
    assert before.method_name == "index", before.method_reason
    saved = StateStore(client, store).load(table, INDEX)
    assert saved is not None and saved.shards
    mark = next(iter(saved.shards.values()))
    real = mark.marks[-1][0]
    assert real is not None
    marks: tuple[tuple[str | None, float], ...] = (
        ((real, time.time() - 30), (sequence, time.time()))
        if newest
        else ((sequence, time.time() - 30),)
    )
    forged = ShardMark(mark.shard, mark.stream, mark.since, marks)
    StateStore(client, store).update(table, INDEX, {SHARD_PREFIX + mark.shard: forged.to_json()})


@pytest.mark.parametrize(
    ("sequence", "newest", "why"),
    [
        # DynamoDB Local answers up to ~0.9 s a refusal: three, and their backoff.
        ("9" * 21, False, "the stream refused 3 times in a row to read shard"),
        ("0" * 21, False, "lies before its first"),
        # The newest position past the tip, the real one before it held back: the read from
        # the real one never reaches it (1,000 empty pages, ~3 s here; on the service
        # GetRecords takes 5 requests a second a shard, so that takes minutes).
        ("9" * 15 + "0" * 6, True, "empty pages in a row before the maintainer's position"),
    ],
    ids=["past-the-tip", "before-the-first", "newest-past-the-tip"],
)
def test_a_forged_position_declines_at_once(
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    sequence: str,
    newest: bool,
    why: str,
) -> None:
    table, store = streamed_table, state_table
    proven_then_forged(ddb_client, table, store, sequence, newest)
    began = time.monotonic()
    listed = distinct_partition_keys(ddb_client, table, state_table=store, replay_margin=MARGIN)
    keys = sorted(listed)
    took = time.monotonic() - began
    assert listed.method_name == "skip-pages" and listed.index_trusted is False
    assert why in listed.method_reason, listed.method_reason
    assert keys == non_empty(ddb_client, table)
    # The reason above says it declined by its own bound (refusals, the first position, 1,000
    # empty pages), which load cannot change; the ceiling only fails a hang: 1-5 s here on a
    # quiet machine, 36.6 s once on a loaded one (four CPU hogs and other suites on 2 cores).
    assert took < 120.0, took
