"""The Lambda handler, fed the events Lambda would deliver: real records read from DynamoDB
Local's stream, in Lambda's JSON shape (numbers for times, base64 for binary), delivered once,
twice, in reverse, and with a failure reported for Lambda to send again."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys.partition_keys import (
    IndexUnprovenError,
    MarkerIndex,
    distinct_partition_keys,
    enable_stream,
)
from ddbkeys.partition_keys.aws_lambda import table_of
from ddbkeys.testing._tables import TableFactory
from tests.support.stream_events import InvokedHandler, ShardReader

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


class Stream:
    """Reads a table's stream from where it was last read, as Lambda event records."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self.arn, _ = enable_stream(client, table)
        self.reader = ShardReader(client, self.arn)

    def events(self) -> list[dict[str, Any]]:
        """The new records of every shard, as one plain event's records (no shard named)."""
        return [r for _, records in self.batches() for r in records]

    def windowed(self) -> list[dict[str, Any]]:
        """The new records as tumbling-window events, one per shard (each names its shard)."""
        return [
            {"Records": records, "shardId": shard, "window": {"start": "", "end": ""}, "state": {}}
            for shard, records in self.batches()
        ]

    def batches(self) -> list[tuple[str, list[dict[str, Any]]]]:
        found: list[tuple[str, list[dict[str, Any]]]] = []
        for shard in self.reader.shards():
            records: list[dict[str, Any]] = []
            while True:
                page, more = self.reader.page(shard)
                records.extend(page)
                if not page or not more:
                    break
            found.append((shard, records))
        return found


def markers(client: DynamoDBClient, table: str) -> list[Any]:
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted(bytes(i["pk"]["B"]) for i in items if "ddbkeys_pk" in i)


def collections(client: DynamoDBClient, table: str) -> list[Any]:
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted({bytes(i["pk"]["B"]) for i in items if "ddbkeys_pk" not in i})


def put(client: DynamoDBClient, table: str, pk: bytes, sk: int) -> None:
    client.put_item(TableName=table, Item={"pk": {"B": pk}, "sk": {"N": str(sk)}})


def delete(client: DynamoDBClient, table: str, pk: bytes, sk: int) -> None:
    client.delete_item(TableName=table, Key={"pk": {"B": pk}, "sk": {"N": str(sk)}})


def test_lambda_events_keep_the_markers_exact(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "B"), ("sk", "N"))  # binary keys: base64 in the events
    MarkerIndex(ddb_client, table).create()
    stream = Stream(ddb_client, table)
    assert table_of(stream.arn) == table
    store = f"ddbkeys-state-{table[-12:]}"
    handler = InvokedHandler(ddb_client, stream.arn, state_table=store)
    for pk in (b"\x00a", b"b", b"c"):
        put(ddb_client, table, pk, 1)
    put(ddb_client, table, b"b", 2)
    delete(ddb_client, table, b"c", 1)
    first = stream.events()
    assert len(first) == 5
    assert handler.handle({"Records": first}) == {"batchItemFailures": []}
    assert markers(ddb_client, table) == [b"\x00a", b"b"] == collections(ddb_client, table)
    # At-least-once, any order: the same batch again, reversed, changes nothing.
    assert handler.handle({"Records": list(reversed(first))}) == {"batchItemFailures": []}
    assert markers(ddb_client, table) == [b"\x00a", b"b"]
    # The handler's own marker writes come back as records: handled, and nothing changes.
    delete(ddb_client, table, b"b", 1)
    delete(ddb_client, table, b"b", 2)
    put(ddb_client, table, b"d", 1)
    assert handler.handle({"Records": stream.events()}) == {"batchItemFailures": []}
    assert markers(ddb_client, table) == [b"\x00a", b"d"] == collections(ddb_client, table)
    ddb_client.delete_table(TableName=store)


MARGIN = 1.0


def index_listing(client: DynamoDBClient, table: str, store: str) -> Any:
    return distinct_partition_keys(client, table, "index", state_table=store, replay_margin=MARGIN)


def test_the_handler_records_positions_and_listings_prove_the_index_from_them(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "B"), ("sk", "N"))
    MarkerIndex(ddb_client, table).create()
    stream = Stream(ddb_client, table)
    store = f"ddbkeys-state-{table[-12:]}"
    handler = InvokedHandler(ddb_client, stream.arn, state_table=store)
    put(ddb_client, table, b"a", 1)
    # A plain event names no shard: the markers are kept, but nothing can be proven.
    assert handler.handle({"Records": stream.events()}) == {"batchItemFailures": []}
    unproven = MarkerIndex(ddb_client, table).backfill(
        state_table=store, replay_margin=MARGIN, wait=False
    )
    assert unproven.counts is False and "no maintainer" in str(unproven.advice)
    with pytest.raises(IndexUnprovenError, match="no maintainer had recorded a position"):
        index_listing(ddb_client, table, store)
    # With a tumbling window: the position is recorded, and the window's state answered.
    put(ddb_client, table, b"b", 1)
    for event in stream.windowed():
        assert handler.handle(event) == {"batchItemFailures": [], "state": {}}
    time.sleep(MARGIN)
    MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
    proven = index_listing(ddb_client, table, store)
    assert proven.index_trusted is True, proven.method_reason
    assert sorted(proven) == [b"a", b"b"] == collections(ddb_client, table)
    # The handler falls behind (its records not handled yet, as under a backlog): the listing
    # reads them past the handler's position itself and stays exact.
    put(ddb_client, table, b"c", 1)
    delete(ddb_client, table, b"a", 1)
    behind = index_listing(ddb_client, table, store)
    assert sorted(behind) == [b"b", b"c"] == collections(ddb_client, table)
    assert behind.replay is not None and behind.replay.rechecked >= 2
    for event in stream.windowed():
        handler.handle(event)
    # The stream off and on: what happened meanwhile is in no log. One batch of the new stream
    # does not make the old backfill count.
    ddb_client.update_table(TableName=table, StreamSpecification={"StreamEnabled": False})
    put(ddb_client, table, b"unseen", 1)
    stream = Stream(ddb_client, table)
    put(ddb_client, table, b"e", 1)
    for event in stream.windowed():
        handler.handle(event)
    time.sleep(MARGIN)
    with pytest.raises(IndexUnprovenError, match="another stream"):
        index_listing(ddb_client, table, store)
    auto = distinct_partition_keys(ddb_client, table, state_table=store)
    assert auto.method_name == "skip-pages" and b"unseen" in list(auto)
    ddb_client.delete_table(TableName=store)


class FailingFor:
    """A client whose Query fails for one partition key: the reconciliation of that
    collection fails, as on a throttled or unreachable table."""

    def __init__(self, client: DynamoDBClient, pk: dict[str, Any]) -> None:
        self._client = client
        self._pk = pk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def query(self, **request: Any) -> Any:
        if request["ExpressionAttributeValues"][":pk"] == self._pk:
            raise RuntimeError("no answer")
        return self._client.query(**request)


def test_a_failed_collection_is_reported_for_lambda_to_send_again(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "B"), ("sk", "N"))
    index = MarkerIndex(ddb_client, table)
    index.create()
    stream = Stream(ddb_client, table)
    store = f"ddbkeys-state-{table[-12:]}"
    for pk in (b"a", b"b", b"c"):
        put(ddb_client, table, pk, 1)
    events = stream.events()
    handler = InvokedHandler(ddb_client, stream.arn, state_table=store)
    handler._indexes[table] = index
    index.client = FailingFor(ddb_client, {"B": b"b"})  # type: ignore[assignment]
    answer = handler.handle({"Records": events})
    assert answer == {
        "batchItemFailures": [{"itemIdentifier": events[1]["dynamodb"]["SequenceNumber"]}]
    }
    assert markers(ddb_client, table) == [b"a", b"c"]
    index.client = ddb_client
    assert handler.handle({"Records": events[1:]}) == {"batchItemFailures": []}  # sent again
    assert markers(ddb_client, table) == [b"a", b"b", b"c"]
    ddb_client.delete_table(TableName=store)


def test_records_lambda_gave_up_on_are_a_gap_until_a_new_backfill(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "B"), ("sk", "N"))
    index = MarkerIndex(ddb_client, table)
    index.create()
    stream = Stream(ddb_client, table)
    store = f"ddbkeys-state-{table[-12:]}"
    handler = InvokedHandler(ddb_client, stream.arn, state_table=store)
    put(ddb_client, table, b"a", 1)
    for event in stream.windowed():
        handler.handle(event)
    time.sleep(MARGIN)
    MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
    for event in stream.windowed():
        handler.handle(event)
    assert index_listing(ddb_client, table, store).index_trusted is True
    put(ddb_client, table, b"b", 1)
    put(ddb_client, table, b"c", 1)
    (event,) = stream.windowed()
    handler._indexes[table] = failing = MarkerIndex(ddb_client, table)
    failing.client = FailingFor(ddb_client, {"B": b"b"})  # type: ignore[assignment]
    answer = handler.handle(event)
    skipped = event["Records"][0]["dynamodb"]["SequenceNumber"]
    assert answer == {"batchItemFailures": [{"itemIdentifier": skipped}], "state": {}}
    # Lambda's retries run out: it goes on with the records after the failed one.
    handler._indexes[table] = MarkerIndex(ddb_client, table)
    rest = {**event, "Records": event["Records"][1:]}
    assert handler.handle(rest) == {"batchItemFailures": [], "state": {}}
    time.sleep(MARGIN)
    with pytest.raises(IndexUnprovenError, match="were lost before the maintainer applied them"):
        index_listing(ddb_client, table, store)
    time.sleep(MARGIN)
    # b is marked by the backfill
    MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
    proven = index_listing(ddb_client, table, store)
    assert sorted(proven) == [b"a", b"b", b"c"] == collections(ddb_client, table)
    ddb_client.delete_table(TableName=store)


def test_a_warm_handler_after_a_drop_fails_its_batch_in_one_line_and_marks_nothing(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """helper-98 F2: a handler environment that had read the table's description before the
    drop (and written no marker yet) trusted it, put back every marker the drop removed and
    reported the batch a success. F5: once it did fail, it logged a traceback and sent a
    DescribeTable for every collection. Now: described again (its description is older than
    ``recheck``), the batch failed at its first collection, one line, nothing written."""
    table = ddb_table_factory(("pk", "B"), ("sk", "N"))
    index = MarkerIndex(ddb_client, table)
    index.create()
    stream = Stream(ddb_client, table)
    store = f"ddbkeys-state-{table[-12:]}"
    for pk in (b"a", b"b", b"c"):
        put(ddb_client, table, pk, 1)
    handler = InvokedHandler(ddb_client, stream.arn, state_table=store)
    assert handler.handle({"Records": stream.events()}) == {"batchItemFailures": []}
    assert markers(ddb_client, table) == [b"a", b"b", b"c"]
    warm = handler._indexes[table]
    dropper = MarkerIndex(ddb_client, table)
    dropper.core.recheck = 0.0  # (the drop's wait: 1 s)
    assert dropper.drop() == 3
    events = stream.events()  # (its markers' puts, then the drop's deletes)
    assert len(events) == 6
    warm.core.looked_at -= warm.core.recheck  # (its description as old as that)
    with caplog.at_level("ERROR", logger="ddbkeys"):
        answer = handler.handle({"Records": events})
    first = events[0]["dynamodb"]["SequenceNumber"]
    assert answer == {"batchItemFailures": [{"itemIdentifier": first}]}
    assert markers(ddb_client, table) == []
    said = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(said) == 1 and not said[0].exc_info, said  # (one line: no traceback)
    assert "is gone (`index drop`?)" in said[0].getMessage()
    ddb_client.delete_table(TableName=store)
