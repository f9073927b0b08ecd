"""The Lambda handler, fed the events Lambda would deliver: real records read from DynamoDB
Local's stream, in Lambda's JSON shape (numbers for times, base64 for binary), delivered once,
twice, in reverse, and with a failure reported for Lambda to send again."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys, enable_stream
from ddbkeys.partition_keys.aws_lambda import StreamHandler, table_of
from ddbkeys.testing.tables import TableFactory
from tests.support.stream_events import ShardReader

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


class Stream:
    """Reads a table's stream from where it was last read, as Lambda event records."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self.arn, _ = enable_stream(client, table)
        self.reader = ShardReader(client, self.arn)

    def events(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        for shard in self.reader.shards():
            while True:
                page, _ = self.reader.page(shard)
                if not page:
                    break
                records.extend(page)
        return records


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
    handler = StreamHandler(ddb_client, state_table=store)
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
    # Backfill once the handler runs; then auto trusts the index while the handler is fresh.
    MarkerIndex(ddb_client, table).backfill(state_table=store)
    handler.handle({"Records": stream.events()})
    listing = distinct_partition_keys(ddb_client, table, state_table=store)
    assert (listing.method_name, listing.index_trusted) == ("index", True), listing.method_reason
    assert sorted(listing) == [b"\x00a", b"d"]
    time.sleep(0.05)
    quiet = distinct_partition_keys(ddb_client, table, state_table=store, max_lag=0.01)
    assert quiet.method_name == "skip-pages"
    assert "cannot tell that from a trigger that stopped" in quiet.method_reason
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
    handler = StreamHandler(ddb_client, state_table=store)
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
