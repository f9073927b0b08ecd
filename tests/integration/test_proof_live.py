"""The proven marker index on DynamoDB Local, under a few dozen random steps: the application
puts and deletes, the real StreamFollower (in a thread) is stopped and started again, the real
StreamHandler gets the events a tumbling-window trigger would carry (read from the table's
stream with GetRecords, with their shardId), backfills run, and time passes. After every step
``distinct_partition_keys(..., replay_margin=...)`` either declines the index with a reason
(``index_trusted`` False) or lists exactly the collections a consistent scan finds holding
something besides a marker.

DynamoDB Local updates its index at once, so a small margin (1 s) is enough. Its stream's
ApproximateCreationDateTime is rounded to the minute, which the proof allows for."""

from __future__ import annotations

import random
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys, enable_stream
from ddbkeys.partition_keys._listing import choice
from ddbkeys.partition_keys._listing.choice import IndexUnprovenError
from ddbkeys.partition_keys._listing.index_method import IndexMethod
from ddbkeys.partition_keys._streams.follower import StreamFollower
from ddbkeys.partition_keys.aws_lambda import StreamHandler
from tests.support.stream_events import InvokedHandler, ShardReader

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys._schema import TableInfo
    from ddbkeys.partition_keys._index.marker_core import MarkerCore
    from ddbkeys.partition_keys._proof.shard_read import Replay
    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

MARGIN = 1.0
KEYS = ("a", "b", "c", "d", "e")


class Trigger:
    """Lambda's event source mapping with a tumbling window: per shard, from TRIM_HORIZON, a
    batch at a time, each event naming its shard."""

    def __init__(self, client: DynamoDBClient, arn: str, handler: StreamHandler) -> None:
        self.reader = ShardReader(client, arn)
        self.handler = handler

    def deliver(self, most: int) -> None:
        """Every shard's records so far, in batches of at most ``most``."""
        for shard in self.reader.shards():
            while True:
                records, more = self.reader.page(shard, most)
                if records:
                    event = {"Records": records, "shardId": shard, "window": {}, "state": {}}
                    answer = self.handler.handle(event)
                    assert answer["batchItemFailures"] == [], answer
                if not records or not more:
                    break


class Follower:
    """The real follower in a thread, stopped and started again (a new process each time)."""

    def __init__(self, client: DynamoDBClient, table: str, store: str) -> None:
        self.client, self.table, self.store = client, table, store
        self.stop: threading.Event | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        if self.thread is not None:
            return
        follower = StreamFollower(
            MarkerIndex(self.client, self.table), state_table=self.store, poll=0.05
        )
        self.stop = threading.Event()
        self.thread = threading.Thread(target=follower.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def halt(self) -> None:
        if self.thread is None or self.stop is None:
            return
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()
        self.thread = None


def non_empty(client: DynamoDBClient, table: str) -> list[str]:
    """The truth: collections holding an item that is not a marker, by a consistent scan."""
    found: set[str] = set()
    request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**request)
        found.update(
            str(i["pk"]["S"])
            for i in page["Items"]
            if not ("ddbkeys_pk" in i and i["sk"]["N"] == "-" + "9" * 38)
        )
        if "LastEvaluatedKey" not in page:
            return sorted(found)
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


@pytest.mark.parametrize("seed", [1, 2])
def test_random_steps_the_listing_is_exact_or_declines(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, seed: int
) -> None:
    seen = run_steps(ddb_client, ddb_table_factory(("pk", "S"), ("sk", "N")), seed, 30)
    # The checker saw the index proven, with re-checks too, not only declined.
    assert seen["proven"] >= 5 and seen["re-checked"] >= 2, seen


class Unchecked(IndexMethod):
    """The negative control: the index as it is, once the replay has proven it (the
    collections the stream names are not re-checked)."""

    def __init__(self, info: TableInfo, index: MarkerCore, replay: Replay) -> None:
        super().__init__(info, index)


def test_the_checker_catches_a_listing_without_its_rechecks(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(choice, "ReplayedIndexMethod", Unchecked)
    # Which schedule shows the broken listing wrong hangs on timing and on how often the
    # maintainers' rules make a listing decline (seed 3 caught it until the backfill waited
    # for its margin and the Lambda handler checked its trigger; 4 to 10 did then): the first
    # of a few seeds that the checker catches ends the test.
    missed = []
    for seed in (3, 4, 5, 6):
        try:
            seen = run_steps(ddb_client, ddb_table_factory(("pk", "S"), ("sk", "N")), seed, 60)
        except AssertionError as caught:
            assert "the listing answered" in str(caught)
            return
        missed.append((seed, seen))
    pytest.fail(f"the checker caught no broken listing: {missed}")


def run_steps(client: DynamoDBClient, table: str, seed: int, steps: int) -> dict[str, int]:
    """``steps`` random steps, the listing checked after each; how often it was proven."""
    rng = random.Random(seed)
    MarkerIndex(client, table).create()
    for n in range(3):  # history from before the stream: the backfill's to mark
        client.put_item(TableName=table, Item={"pk": {"S": f"old{n}"}, "sk": {"N": "1"}})
    arn, _ = enable_stream(client, table)
    store = f"ddbkeys-state-{table[-12:]}"
    follower = Follower(client, table, store)
    trigger = Trigger(client, arn, InvokedHandler(client, arn, state_table=store))
    seen = {"proven": 0, "declined": 0, "re-checked": 0}
    try:
        follower.start()
        time.sleep(MARGIN + 0.5)
        MarkerIndex(client, table).backfill(state_table=store, replay_margin=MARGIN)
        for _ in range(steps):
            step = rng.choice(
                ["put", "put", "delete", "delete", "stop", "start", "lambda", "backfill", "wait"]
            )
            pk, sk = rng.choice(KEYS), rng.randrange(3)
            key = {"pk": {"S": pk}, "sk": {"N": str(sk)}}
            if step == "put":
                client.put_item(TableName=table, Item=key)
            elif step == "delete":
                client.delete_item(TableName=table, Key=key)
            elif step == "stop":
                follower.halt()
            elif step == "start":
                follower.start()
            elif step == "lambda":
                trigger.deliver(most=rng.randrange(1, 4))
            elif step == "backfill":
                MarkerIndex(client, table).backfill(state_table=store, replay_margin=MARGIN)
            else:
                time.sleep(MARGIN + 0.2)
            check(client, table, store, seen)
        time.sleep(MARGIN + 0.5)  # quiet: whatever maintains the index catches up
        trigger.deliver(most=100)
        time.sleep(MARGIN + 0.2)
        check(client, table, store, seen)
    finally:
        follower.halt()
        client.delete_table(TableName=store)
    return seen


def check(client: DynamoDBClient, table: str, store: str, seen: dict[str, int]) -> None:
    """The listing, ``auto`` (which declines the index when re-checking would cost more than
    the skip scan: on a small table, any collection to re-check) and ``index`` (no such
    limit, so the re-checks are exercised): declined with a reason, or exact."""
    for method in ("auto", "index"):
        try:
            listing = distinct_partition_keys(
                client, table, method, state_table=store, replay_margin=MARGIN
            )
        except IndexUnprovenError as declined:
            assert method == "index" and "cannot be proven complete now" in str(declined)
            seen["declined"] += 1
            continue
        keys = sorted(str(k) for k in listing)
        if listing.index_trusted is not True:
            assert listing.index_trusted is False and listing.method_reason.strip(), listing
            seen["declined"] += 1
            continue
        seen["proven"] += 1
        seen["re-checked"] += bool(listing.replay is not None and listing.replay.rechecked)
        truth = non_empty(client, table)
        assert keys == truth, f"the listing answered {keys}, not {truth}: {listing.method_reason}"
