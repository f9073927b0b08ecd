"""A collection that does not settle never stops a maintainer (issue 33, point 5), against
DynamoDB Local: several writers put and empty one collection 200 times under a running follower
(sync, and asyncio in a thread of its own); the follower keeps running, and the proven listing is
exact at the end. With reconciliations that give up at once (``MAX_ROUNDS`` set to 0 by the
test: on DynamoDB Local one seldom meets 8 changes in a row), every collection the follower
reconciles is recorded pending: the listing re-checks those, and once the follower tries them
again, they settle and leave the set."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys.aio._index import MarkerIndex as AsyncMarkerIndex
from ddbkeys.aio._index import StreamFollower as AsyncStreamFollower
from ddbkeys.partition_keys import MarkerIndex, StreamFollower, distinct_partition_keys
from ddbkeys.partition_keys._index import maintain
from ddbkeys.partition_keys._index.pending import MAX_PENDING, element, pending_keys
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._streams.follow_state import FollowReport
from ddbkeys.partition_keys.aws_lambda import StreamHandler
from tests.integration.test_index_async import async_client
from tests.integration.test_marker_follow_faults import wait_for_record
from tests.integration.test_marker_lambda import Stream
from tests.integration.test_marker_lifecycle import MARGIN, item, non_empty

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

WRITERS = 4
CYCLES = 200  # puts and empties of the hot collection, over all writers


class Running:
    """A follower (``kind``: sync or asyncio) running in a thread until ``stop``; what ended it,
    if anything did, in ``error``, and what it did in ``report``."""

    def __init__(self, client: DynamoDBClient, table: str, store: str, kind: str) -> None:
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.report: FollowReport | None = None
        self.follower: StreamFollower | AsyncStreamFollower | None = None
        self.thread = threading.Thread(target=self._run, args=(client, table, store, kind))
        self.thread.start()

    def _run(self, client: DynamoDBClient, table: str, store: str, kind: str) -> None:
        try:
            if kind == "sync":
                follower = StreamFollower(MarkerIndex(client, table), state_table=store, poll=0.05)
                self.follower, self.report = follower, follower.report
                follower.run(self.stop)
            else:
                asyncio.run(self._run_async(client, table, store))
        except BaseException as exc:  # what ended it: the test says so
            self.error = exc

    async def _run_async(self, client: DynamoDBClient, table: str, store: str) -> None:
        async with async_client(client) as aio:
            index = AsyncMarkerIndex(aio, table)
            follower = AsyncStreamFollower(index, state_table=store, poll=0.05)
            self.follower, self.report = follower, follower.report
            await follower.run(self.stop)

    def caught_up(self) -> None:
        """Wait until it has read every shard to its end since now, then the margin."""
        moment = time.time()
        deadline = time.monotonic() + 60
        while self.report is None or (self.report.caught_up_at or 0) <= moment:
            assert self.error is None, self.error
            assert time.monotonic() < deadline, "the follower did not catch up in 60 s"
            time.sleep(0.05)
        time.sleep(MARGIN)

    def end(self) -> None:
        self.stop.set()
        self.thread.join(timeout=60)
        assert not self.thread.is_alive()


def hot_writers(client: DynamoDBClient, table: str) -> None:
    """``WRITERS`` threads put and empty the collection ``hot`` ``CYCLES`` times in all."""

    def writer(n: int) -> None:
        for _ in range(CYCLES // WRITERS):
            client.put_item(TableName=table, Item=item("hot", n))
            client.delete_item(TableName=table, Key=item("hot", n))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def proven(client: DynamoDBClient, table: str, store: str) -> Any:
    listing = distinct_partition_keys(
        client, table, "index", state_table=store, replay_margin=MARGIN
    )
    assert listing.index_trusted is True, listing.method_reason
    return listing


def started(client: DynamoDBClient, table: str, store: str, kind: str) -> Running:
    """Ten collections, a follower running, and a backfill begun a margin after its start."""
    for n in range(10):
        client.put_item(TableName=table, Item=item(f"k{n}", 1))
    running = Running(client, table, store, kind)
    wait_for_record(client, table, store)
    time.sleep(MARGIN)
    MarkerIndex(client, table).backfill(state_table=store, replay_margin=MARGIN)
    return running


@pytest.mark.parametrize(
    ("kind", "rounds"), [("sync", 8), ("asyncio", 8), ("sync", 2), ("asyncio", 2)]
)
def test_a_collection_put_and_emptied_200_times_does_not_stop_the_follower(
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    kind: str,
    rounds: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With 8 rounds (the default) DynamoDB Local seldom makes a reconciliation give up; with
    2, the writers do, now and then (how often: timing decides, printed)."""
    table, store = streamed_table, state_table
    monkeypatch.setattr(maintain, "MAX_ROUNDS", rounds)
    running = started(ddb_client, table, store, kind)
    try:
        hot_writers(ddb_client, table)
        ddb_client.put_item(TableName=table, Item=item("hot", 99))  # left holding one item
        assert running.thread.is_alive(), running.error
        running.caught_up()
        listing = proven(ddb_client, table, store)
        assert sorted(listing) == non_empty(ddb_client, table)
        assert "hot" in non_empty(ddb_client, table)
    finally:
        running.end()
    assert running.error is None, running.error
    assert running.report is not None and running.report.records >= 2 * CYCLES
    print(f"{kind}, {rounds} rounds: {running.report}")  # (how many gave up: timing decides)


def test_collections_that_do_not_settle_are_recorded_and_re_checked(
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No round at all per reconciliation (``MAX_ROUNDS`` 0): every collection the follower
    reconciles gives up at once, with no write, so no later record names it: the pending set
    alone says its marker may be wrong, and the proven listing is exact only by re-checking it
    (the index read as it is is wrong meanwhile)."""
    table, store = streamed_table, state_table
    running = started(ddb_client, table, store, "sync")
    assert running.follower is not None
    running.follower.core.retry_every = 3600.0  # (not tried again until told below)
    try:
        running.caught_up()  # (the backfill's marker writes applied)
        monkeypatch.setattr(maintain, "MAX_ROUNDS", 0)
        for n in range(3):
            ddb_client.put_item(TableName=table, Item=item(f"new{n}", 1))
        ddb_client.delete_item(TableName=table, Key=item("k0", 1))
        hot_writers(ddb_client, table)
        running.caught_up()
        assert running.thread.is_alive(), running.error
        assert running.report is not None and running.report.pending >= 5
        waiting = {key["S"] for key in pending_keys(_pending(ddb_client, table, store))}
        assert waiting == {"new0", "new1", "new2", "k0", "hot"}, waiting
        assert len(_pending(ddb_client, table, store)) == 5  # one element each: replaced
        as_is = distinct_partition_keys(
            ddb_client, table, "index", state_table=store, trust_index=True
        )
        assert sorted(as_is) != non_empty(ddb_client, table)  # markers missing, and k0's left
        listing = proven(ddb_client, table, store)
        assert listing.replay is not None and listing.replay.pending == 5
        assert sorted(listing) == non_empty(ddb_client, table)
        # Reconciliations settle again: the follower tries the pending ones, which leave.
        monkeypatch.setattr(maintain, "MAX_ROUNDS", 8)
        running.follower.core.retry_every = 0.5
        until(lambda: not _pending(ddb_client, table, store), 30)
        # (the follower counts them just after its write takes them out: a loaded run read
        # its report in between, unpended 0)
        until(lambda: running.report is not None and running.report.unpended >= 5, 5)
        assert running.report.unpended >= 5
        running.caught_up()
        assert sorted(MarkerIndex(ddb_client, table).verify().missing) == []
        again = proven(ddb_client, table, store)
        assert again.replay is not None and again.replay.pending == 0
        assert sorted(again) == non_empty(ddb_client, table)
    finally:
        running.end()
    assert running.error is None, running.error


def _pending(client: DynamoDBClient, table: str, store: str) -> tuple[str, ...]:
    saved = StateStore(client, store).load(table, "ddbkeys-partition-keys")
    return saved.pending if saved is not None else ()


def until(done: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"not done in {seconds} s"
        time.sleep(0.2)


def test_index_follow_says_once_that_a_full_pending_set_holds_a_position(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pending set full (left so by other maintainers), and reconciliations that give up:
    the follower holds the shard's position, and `index follow` says so once."""
    table, store = streamed_table, state_table
    StateStore(ddb_client, store).ensure()
    others = [element({"S": f"ghost{n}"}, 1.0, "another-1") for n in range(MAX_PENDING)]
    ddb_client.update_item(
        TableName=store,
        Key={"id": {"S": f"{table}/ddbkeys-partition-keys"}},
        UpdateExpression="ADD #p :p",
        ExpressionAttributeNames={"#p": "pending"},
        ExpressionAttributeValues={":p": {"SS": others}},
    )
    for pk in ("a", "b"):
        ddb_client.put_item(TableName=table, Item=item(pk, 1))
    monkeypatch.setattr(maintain, "MAX_ROUNDS", 0)
    args = ["partition-keys", "index", "follow", "-t", table, "--state-table", store]
    args += ["--from-start", "--until-caught-up", "--endpoint-url", ddb_endpoint_url]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.stderr
    full = f"the pending set of {table}'s index is full"
    assert result.stderr.count(full) == 1, result.stderr
    assert full in result.stdout and "0 marked" in result.stdout
    saved = StateStore(ddb_client, store).load(table, "ddbkeys-partition-keys")
    assert saved is not None and len(saved.pending) == MAX_PENDING
    (mark,) = saved.shards.values()
    assert [sequence for sequence, _ in mark.marks] == [None]  # held before a's record
    as_json = CliRunner().invoke(cli, [*args, "--output", "json"])
    assert as_json.exit_code == 0, as_json.stderr
    assert json.loads(as_json.stdout)["held"] is True


def test_the_lambda_handler_records_what_does_not_settle_and_goes_on(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Real records of DynamoDB Local's stream, as tumbling-window events: collections whose
    reconciliation gives up are recorded pending and the batch is applied; with the set full,
    the record is reported failed; once they settle, they leave the set."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    MarkerIndex(ddb_client, table).create()
    stream = Stream(ddb_client, table)
    store = f"ddbkeys-state-{table[-12:]}"
    later = [0.0]  # (the handler's clock, moved on to try the pending ones again)
    handler = StreamHandler(ddb_client, state_table=store, clock=lambda: time.time() + later[0])
    try:
        monkeypatch.setattr(maintain, "MAX_ROUNDS", 0)
        for pk in ("a", "b"):
            ddb_client.put_item(TableName=table, Item=item(pk, 1))
        (event,) = stream.windowed()
        assert handler.handle(event)["batchItemFailures"] == []  # applied
        assert {k["S"] for k in pending_keys(_pending(ddb_client, table, store))} == {"a", "b"}
        assert (
            _newest(ddb_client, table, store) == event["Records"][-1]["dynamodb"]["SequenceNumber"]
        )
        # The set full: the record is reported, and the shard's position stays before it.
        handler.max_pending = 2
        ddb_client.put_item(TableName=table, Item=item("c", 1))
        (event,) = stream.windowed()
        c_at = event["Records"][0]["dynamodb"]["SequenceNumber"]
        assert handler.handle(event)["batchItemFailures"] == [{"itemIdentifier": c_at}]
        assert len(_pending(ddb_client, table, store)) == 2
        assert int(_newest(ddb_client, table, store) or 0) < int(c_at)
        # Reconciliations settle again: Lambda sends c's batch again; a, b and c settle.
        monkeypatch.setattr(maintain, "MAX_ROUNDS", 8)
        later[0] = 60.0
        assert handler.handle(event)["batchItemFailures"] == []
        assert _pending(ddb_client, table, store) == ()
        assert _newest(ddb_client, table, store) == c_at
        assert MarkerIndex(ddb_client, table).verify().healthy
    finally:
        with contextlib.suppress(ddb_client.exceptions.ResourceNotFoundException):
            ddb_client.delete_table(TableName=store)


def _newest(client: DynamoDBClient, table: str, store: str) -> str | None:
    saved = StateStore(client, store).load(table, "ddbkeys-partition-keys")
    assert saved is not None
    (mark,) = saved.shards.values()
    return mark.marks[-1][0]
