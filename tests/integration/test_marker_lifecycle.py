"""The marker lifecycle kept from the stream, against DynamoDB Local: scripted interleavings of
two maintainers (a hand-driven client runs the other one between our requests), replays and
both orders; a follower while writers add and remove collections; a follower killed and
restarted; and ``auto`` trusting the index only with the evidence."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys
from ddbkeys.partition_keys._index.maintain import Outcome, reconcile
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._streams.follower import StreamFollower
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def item(pk: str, sk: int) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"N": str(sk)}}


def marked(client: DynamoDBClient, table: str) -> list[str]:
    """The collections holding a marker, by a scan of the table."""
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted(str(i["pk"]["S"]) for i in items if "ddbkeys_pk" in i)


def non_empty(client: DynamoDBClient, table: str) -> list[str]:
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted({str(i["pk"]["S"]) for i in items if "ddbkeys_pk" not in i})


class Between:
    """A client that runs ``hook`` once, right after the ``n``-th call of ``operation``: the
    other maintainer (or the application) acting between two requests of ours."""

    def __init__(self, client: Any, operation: str, hook: Callable[[], None], n: int = 1) -> None:
        self._client = client
        self._operation = operation
        self._hook: Callable[[], None] | None = hook
        self._left = n

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._client, name)
        if name != self._operation:
            return real

        def call(**kwargs: Any) -> Any:
            answer = real(**kwargs)
            self._left -= 1
            if self._left == 0 and self._hook is not None:
                hook, self._hook = self._hook, None
                hook()
            return answer

        return call


@pytest.fixture
def lifecycle_table(ddb_client: DynamoDBClient, ddb_table_factory: TableFactory) -> str:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    MarkerIndex(ddb_client, table).create()
    return table


def test_replays_and_both_orders(ddb_client: DynamoDBClient, lifecycle_table: str) -> None:
    table = lifecycle_table
    index = MarkerIndex(ddb_client, table)
    a = {"S": "a"}
    ddb_client.put_item(TableName=table, Item=item("a", 1))
    assert reconcile(index, a) is Outcome.MARKED  # INSERT s1
    assert reconcile(index, a) is Outcome.UNCHANGED  # the same record again
    ddb_client.delete_item(TableName=table, Key=item("a", 1))
    assert reconcile(index, a) is Outcome.UNMARKED  # REMOVE s1
    assert reconcile(index, a) is Outcome.UNCHANGED  # INSERT s1 replayed: no marker comes back
    assert marked(ddb_client, table) == []
    # Records of two items of one collection, handled in the other order: same end state.
    ddb_client.put_item(TableName=table, Item=item("b", 1))
    ddb_client.put_item(TableName=table, Item=item("b", 2))
    ddb_client.delete_item(TableName=table, Key=item("b", 1))
    for _ in range(2):  # REMOVE b/1 handled before INSERT b/2, then a duplicate
        reconcile(index, {"S": "b"})
    assert marked(ddb_client, table) == ["b"] == non_empty(ddb_client, table)


def test_aba_the_last_item_goes_between_our_read_and_our_put(
    ddb_client: DynamoDBClient, lifecycle_table: str
) -> None:
    """A reads "data, no marker"; the item is deleted and B reconciles (nothing to do); then A
    puts the marker. A's read after its write sees the empty collection and takes it back."""
    table = lifecycle_table
    ddb_client.put_item(TableName=table, Item=item("c", 1))
    other = MarkerIndex(ddb_client, table)
    outcomes: list[Outcome] = []

    def meanwhile() -> None:
        ddb_client.delete_item(TableName=table, Key=item("c", 1))
        outcomes.append(reconcile(other, {"S": "c"}))

    index = MarkerIndex(ddb_client, table)
    index.client = Between(ddb_client, "query", meanwhile)  # type: ignore[assignment]
    assert reconcile(index, {"S": "c"}) is Outcome.UNMARKED  # marked, then taken back
    assert outcomes == [Outcome.UNCHANGED]
    assert marked(ddb_client, table) == [] == non_empty(ddb_client, table)


def test_an_insert_between_our_read_and_our_delete(
    ddb_client: DynamoDBClient, lifecycle_table: str
) -> None:
    """A handles the removal of the last item and reads "marker, no data"; an insert comes, and
    B (its record) sees "data and marker": nothing to do. A deletes the marker; its read after
    the delete sees the data and puts the marker back."""
    table = lifecycle_table
    index = MarkerIndex(ddb_client, table)
    ddb_client.put_item(TableName=table, Item=item("d", 1))
    assert reconcile(index, {"S": "d"}) is Outcome.MARKED
    ddb_client.delete_item(TableName=table, Key=item("d", 1))
    outcomes: list[Outcome] = []

    def meanwhile() -> None:
        ddb_client.put_item(TableName=table, Item=item("d", 2))
        outcomes.append(reconcile(MarkerIndex(ddb_client, table), {"S": "d"}))

    racing = MarkerIndex(ddb_client, table)
    racing.client = Between(ddb_client, "query", meanwhile)  # type: ignore[assignment]
    assert reconcile(racing, {"S": "d"}) is Outcome.MARKED  # deleted, then marked again
    assert outcomes == [Outcome.UNCHANGED]
    assert marked(ddb_client, table) == ["d"] == non_empty(ddb_client, table)


def test_a_marker_written_again_is_not_deleted_by_an_old_read(
    ddb_client: DynamoDBClient, lifecycle_table: str
) -> None:
    """A reads "marker v1, no data"; meanwhile the marker is deleted and written again (v2)
    with data: A's delete is conditional on v1 and does nothing."""
    table = lifecycle_table
    index = MarkerIndex(ddb_client, table)
    index.mark("e")  # a marker on an empty collection (as after a crash)

    def meanwhile() -> None:
        index.unmark("e")
        ddb_client.put_item(TableName=table, Item=item("e", 1))
        assert reconcile(MarkerIndex(ddb_client, table), {"S": "e"}) is Outcome.MARKED

    racing = MarkerIndex(ddb_client, table)
    racing.client = Between(ddb_client, "query", meanwhile)  # type: ignore[assignment]
    assert reconcile(racing, {"S": "e"}) is Outcome.UNCHANGED
    assert marked(ddb_client, table) == ["e"] == non_empty(ddb_client, table)


#: The replay margin of these tests: DynamoDB Local shows a write in its index at once.
MARGIN = 1.0


def enable_stream(client: DynamoDBClient, table: str) -> None:
    client.update_table(
        TableName=table,
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
    )


def test_follower_keeps_markers_exact_while_writers_run(
    ddb_client: DynamoDBClient, lifecycle_table: str
) -> None:
    table = lifecycle_table
    enable_stream(ddb_client, table)
    for n in range(10):  # collections from before the follower: the backfill's job
        ddb_client.put_item(TableName=table, Item=item(f"old{n}", 1))
    store = f"ddbkeys-state-{table[-12:]}"
    index = MarkerIndex(ddb_client, table)
    follower = StreamFollower(index, state_table=store, poll=0.1)
    stop = threading.Event()
    runner = threading.Thread(target=follower.run, args=(stop,))
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while StateStore(ddb_client, store).load(table, index.name) is None:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(MARGIN)  # a backfill counts once the margin has passed since the positions
        assert index.backfill(state_table=store, replay_margin=MARGIN).written == 10

        def writer(seed: int) -> None:
            rng = random.Random(seed)
            for _ in range(60):
                pk = f"w{rng.randrange(12)}"
                sk = rng.randrange(3)
                if rng.random() < 0.55:
                    ddb_client.put_item(TableName=table, Item=item(pk, sk))
                else:
                    ddb_client.delete_item(TableName=table, Key=item(pk, sk))

        writers = [threading.Thread(target=writer, args=(seed,)) for seed in range(4)]
        for w in writers:
            w.start()
        for w in writers:
            w.join()
        # Whatever the threads' interleaving left, one collection is certainly emptied after
        # the follower marked it: its marker must go.
        ddb_client.put_item(TableName=table, Item=item("gone", 0))
        wait_for = time.monotonic() + 60
        while "gone" not in marked(ddb_client, table):
            assert time.monotonic() < wait_for
            time.sleep(0.1)
        ddb_client.delete_item(TableName=table, Key=item("gone", 0))
        # Wait until the follower is caught up with every write above.
        settle = time.monotonic() + 60
        while marked(ddb_client, table) != non_empty(ddb_client, table):
            assert time.monotonic() < settle, (
                marked(ddb_client, table),
                non_empty(ddb_client, table),
            )
            time.sleep(0.2)
    finally:
        stop.set()
        runner.join(timeout=30)
    assert not runner.is_alive()
    assert follower.report.records > 0 and follower.report.unmarked > 0
    assert MarkerIndex(ddb_client, table).verify().healthy
    listing = distinct_partition_keys(
        ddb_client, table, "index", state_table=store, replay_margin=MARGIN
    )
    assert listing.index_trusted is True, listing.method_reason
    assert sorted(listing) == non_empty(ddb_client, table)
    ddb_client.delete_table(TableName=store)
