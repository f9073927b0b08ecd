"""The id strategies by composition, on real objects (a client, nothing sent until a call):
the sync ones show the ``IdStrategy`` shape, their settings read through to their core and link,
and ``deadline`` set on the strategy is the one its calls keep to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._connect import make_client
from ddbkeys._errors import DeadlineExceededError
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
