"""The id strategies by composition, on real objects (a client, nothing sent until a call):
the sync ones show the ``IdStrategy`` shape, their settings read through to their core and link,
and ``deadline`` set on the strategy is the one its calls keep to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._connect import make_client
from ddbkeys._errors import DeadlineExceededError, KeySchemaError
from ddbkeys.ids import (
    AtomicCounter,
    BlockAllocator,
    CollectionSequence,
    GaplessSequence,
    IdStrategy,
)
from ddbkeys.testing._proxy import FaultProxy, Faults

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory


def strategies(client: Any, table: str) -> list[Any]:
    return [
        AtomicCounter(client, table, "orders", start=5),
        GaplessSequence(client, table, "users", width=6),
        CollectionSequence(client, table, width=4),
    ]


def test_the_sync_strategies_are_id_strategies(ddb_client: DynamoDBClient) -> None:
    for strategy in strategies(ddb_client, "any-table"):
        assert strategy.table == strategy.core.table == "any-table"
        assert strategy.client is ddb_client
        assert isinstance(strategy, IdStrategy)
    counter = AtomicCounter(ddb_client, "any-table")
    assert not isinstance(BlockAllocator(counter), IdStrategy)  # (closed below: nothing held)


def test_settings_read_through_and_cannot_be_set_apart(ddb_client: DynamoDBClient) -> None:
    counter, sequence, collection = strategies(ddb_client, "any-table")
    assert (counter.name, counter.start) == (counter.core.name, counter.core.start) == ("orders", 5)
    assert sequence.width == sequence.core.width == 6
    assert collection.width == collection.core.width == 4
    with pytest.raises(AttributeError, match="read-only"):
        counter.start = 7


def test_a_deadline_set_on_the_strategy_is_the_one_its_calls_keep(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    with FaultProxy(ddb_endpoint_url, Faults(delay=1.0, delay_seconds=0.5)) as proxy:
        client = make_client(endpoint_url=proxy.endpoint_url, max_attempts=1)
        counter = AtomicCounter(client, table, deadline=60.0)
        counter.deadline = 0.2
        with pytest.raises(DeadlineExceededError):
            counter.next()


def test_what_a_strategy_made_of_a_description_goes_with_it(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """One counter and one sequence across their table made again with another key: the write
    that finds the key schema changed fails, and the next call of the same object describes
    the table again and finds its counter item's new key (its link dropped the old one, and the
    sequence what it knew of its counter's value)."""
    table = ddb_table_factory(("pk", "S"))
    counter = AtomicCounter(ddb_client, table, "c")
    sequence = GaplessSequence(ddb_client, table, "s")
    assert (counter.next(), sequence.put({"pk": "a"})) == (1, 1)
    assert counter.counter_item().key == {"pk": {"S": "c"}}
    ddb_client.delete_table(TableName=table)
    ddb_client.get_waiter("table_not_exists").wait(TableName=table)
    ddb_table_factory(("name", "S"), name=table)
    with pytest.raises(KeySchemaError):
        counter.next()
    with pytest.raises(KeySchemaError):  # (checked against the kept key schema, then written)
        sequence.put({"pk": "b"})
    assert (counter.next(), sequence.put({"name": "b"})) == (1, 1)
    assert counter.counter_item().key == {"name": {"S": "c"}}
    assert sequence.counter_key == {"name": {"S": "s"}}
