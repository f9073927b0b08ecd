"""The id strategies by composition, on real objects (a client, nothing sent until a call):
the sync ones show the ``IdStrategy`` shape, their settings read through to their core and link,
and ``deadline`` set on the strategy is the one its calls keep to."""

from __future__ import annotations

import asyncio
from collections import Counter
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
    ItemExistsError,
)
from ddbkeys.testing._proxy import FaultProxy, Faults
from tests.support.drivers import async_client_for

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
    """One counter and one sequence across their table made again with another key: the call
    that finds the key schema changed describes the table again and goes on, with its counter
    item's new key (its link dropped the old one, and the sequence what it knew of its
    counter's value); an item of the old key is refused, named by the new one."""
    table = ddb_table_factory(("pk", "S"))
    counter = AtomicCounter(ddb_client, table, "c")
    sequence = GaplessSequence(ddb_client, table, "s")
    assert (counter.next(), sequence.put({"pk": "a"})) == (1, 1)
    assert counter.counter_item().key == {"pk": {"S": "c"}}
    ddb_client.delete_table(TableName=table)
    ddb_client.get_waiter("table_not_exists").wait(TableName=table)
    ddb_table_factory(("name", "S"), name=table)
    assert counter.next() == 1
    with pytest.raises(KeySchemaError, match="no 'name'"):  # (the table described afresh)
        sequence.put({"pk": "b"})
    assert (counter.next(), sequence.put({"name": "b"})) == (2, 1)
    assert counter.counter_item().key == {"name": {"S": "c"}}
    assert sequence.counter_key == {"name": {"S": "s"}}


def test_a_table_made_again_with_another_key_is_described_afresh_by_the_first_call(
    ddb_client: DynamoDBClient, ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    """As a fleet of Lambda functions, or a test suite, meets it: a new object per call, in a
    process that kept the table's description (``ddbkeys.ids._described``). Across the table
    made again with another key, each strategy's first call goes on (it failed with "has no
    'pk'" or "the key does not match the key schema"), with one more DescribeTable (counted by
    a proxy); where the description was read by the call itself, a wrong key is the caller's,
    refused at once."""
    simple = ddb_table_factory(("pk", "S"))
    pairs = ddb_table_factory(("pk", "S"), ("sk", "N"))
    with FaultProxy(ddb_endpoint_url, Faults()) as proxy:
        client = make_client(endpoint_url=proxy.endpoint_url)
        assert AtomicCounter(client, simple, "c").next() == 1
        assert GaplessSequence(client, simple, "s").put({"pk": "a"}) == 1
        assert CollectionSequence(client, pairs).put("b") == 1
        for table in (simple, pairs):
            ddb_client.delete_table(TableName=table)
            ddb_client.get_waiter("table_not_exists").wait(TableName=table)
        ddb_table_factory(("ref", "S"), name=simple)
        ddb_table_factory(("ref", "S"), ("n", "N"), name=pairs)
        proxy.reset()
        assert AtomicCounter(client, simple, "c").next() == 1
        sent = Counter(op for (op, _), n in proxy.counts_by_operation.items() for _ in range(n))
        # (The first UpdateItem refused, and the GetItem that looks why: of the old key.)
        assert sent == {"UpdateItem": 2, "GetItem": 1, "DescribeTable": 1}
        assert GaplessSequence(client, simple, "s").put({"ref": "a"}) == 1
        assert CollectionSequence(client, pairs).put("b") == 1
        assert ddb_client.get_item(TableName=pairs, Key={"ref": {"S": "b"}, "n": {"N": "1"}})
        with pytest.raises(KeySchemaError, match="no 'ref'"):
            GaplessSequence(client, simple, "s").put({"pk": "b"})


def test_the_asyncio_strategies_describe_a_table_made_again_afresh_too(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """The same with ``ddbkeys.aio``'s strategies (group commit, their default, included):
    the first call after the table was made again with another key goes on."""
    from ddbkeys import aio  # noqa: PLC0415 (an optional extra)

    simple = ddb_table_factory(("pk", "S"))
    pairs = ddb_table_factory(("pk", "S"), ("sk", "N"))

    async def calls(item_key: str) -> tuple[int, int, list[int]]:
        client = await async_client_for(ddb_client)
        try:
            counter = aio.AtomicCounter(client, simple, "c")
            sequence = aio.GaplessSequence(client, simple, "s")
            collection = aio.CollectionSequence(client, pairs)
            numbers = await asyncio.gather(*(collection.put("b") for _ in range(3)))
            return await counter.next(), await sequence.put({item_key: "a"}), sorted(numbers)
        finally:
            await client.__aexit__(None, None, None)

    assert asyncio.run(calls("pk")) == (1, 1, [1, 2, 3])
    for table in (simple, pairs):
        ddb_client.delete_table(TableName=table)
        ddb_client.get_waiter("table_not_exists").wait(TableName=table)
    ddb_table_factory(("ref", "S"), name=simple)
    ddb_table_factory(("ref", "S"), ("n", "N"), name=pairs)
    assert asyncio.run(calls("ref")) == (1, 1, [1, 2, 3])


def made_again(
    client: DynamoDBClient, factory: TableFactory, keys: dict[str, tuple[tuple[str, str], ...]]
) -> None:
    """Each table deleted, then made again under its name with its new ``keys``."""
    for table in keys:
        client.delete_table(TableName=table)
        client.get_waiter("table_not_exists").wait(TableName=table)
    for table, key in keys.items():
        factory(*key, name=table)


def two_sequences(
    client: DynamoDBClient,
    factory: TableFactory,
    items_key: tuple[str, str],
    sort_type: str,
    first: dict[str, Any],
) -> tuple[str, str, str, GaplessSequence, CollectionSequence]:
    """An items table of ``items_key`` whose sequence keeps its counter in a table of its
    own, and a collection table of a ``sort_type`` sort key, each given its first id (the
    sequence's on ``first``): the tables' names, then the two sequences."""
    items, counters = factory(items_key), factory(("pk", "S"))
    pairs = factory(("pk", "S"), ("sk", sort_type))
    sequence = GaplessSequence(client, items, "s", counter_table=counters)
    collection = CollectionSequence(client, pairs)
    assert (sequence.put(first), collection.put("c")) == (1, 1)
    return items, counters, pairs, sequence, collection


def test_a_stale_description_never_has_a_put_write_over_an_item(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A sequence whose counter lives in another table, across its items table made again
    with a key that no longer holds the id: the description it kept says the id is the key,
    and nothing in its transaction is refused for it (the counter's table did not change).
    Its put conditions on every attribute that could be the key, so an item another tool
    wrote at the new key is kept and the put refused as a fresh process refuses it (a
    helper's sequence wrote over it); the counter did not move."""
    items = ddb_table_factory(("id", "N"))
    counters = ddb_table_factory(("pk", "S"))
    sequence = GaplessSequence(ddb_client, items, "s", counter_table=counters)
    assert sequence.put({"order": "o-1"}) == 1
    made_again(ddb_client, ddb_table_factory, {items: (("order", "S"),)})
    theirs = {"order": {"S": "o-2"}, "note": {"S": "another tool's"}}
    ddb_client.put_item(TableName=items, Item=theirs)
    with pytest.raises(ItemExistsError):
        sequence.put({"order": "o-2", "note": "mine"})
    kept = ddb_client.get_item(TableName=items, Key={"order": {"S": "o-2"}}, ConsistentRead=True)
    assert kept["Item"] == theirs
    assert sequence.current() == 1
    assert sequence.put({"order": "o-3"}) == 2


def test_a_key_made_another_type_is_described_afresh_too(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Tables made again with a key of the same name and another type: DynamoDB names it in
    a transaction's cancellation reason ("Type mismatch for key", a sequence whose counter
    lives in another table) and in a Query's refusal ("Condition parameter type does not
    match schema type", a collection's sort key): both are the key schema's, and the call
    goes on with the table described afresh (each failed for the process's life). What a
    collection's object remembered of its highest number goes with the description (it
    wrote 2 into a new table that held no 1)."""
    items, _, pairs, sequence, collection = two_sequences(
        ddb_client, ddb_table_factory, ("id", "N"), "S", {"note": "a"}
    )
    made_again(
        ddb_client, ddb_table_factory, {items: (("id", "S"),), pairs: (("pk", "S"), ("sk", "N"))}
    )
    assert sequence.put({"note": "b"}) == 2  # (its counter's table was not made again)
    assert ddb_client.get_item(TableName=items, Key={"id": {"S": "0000000002"}})["Item"]
    assert CollectionSequence(ddb_client, pairs).put("d") == 1  # (a new object queries first)
    assert collection.put("c") == 1
    assert ddb_client.get_item(TableName=pairs, Key={"pk": {"S": "c"}, "sk": {"N": "1"}})["Item"]


def test_a_counter_table_or_sort_key_made_again_is_described_afresh(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A sequence's counter table made again with another key: DynamoDB refuses the
    transaction without naming a table, and the call forgets every table of the sequence
    (it forgot the items table alone, and failed for the process's life). A collection's
    sort key renamed, read by a new object of a process that kept the old description: the
    Query's item has no such attribute, a key schema's refusal (a helper's KeyError)."""
    _, counters, pairs, sequence, _ = two_sequences(
        ddb_client, ddb_table_factory, ("id", "N"), "N", {"note": "a"}
    )
    made_again(
        ddb_client,
        ddb_table_factory,
        {counters: (("name", "S"),), pairs: (("pk", "S"), ("n", "N"))},
    )
    ddb_client.put_item(TableName=pairs, Item={"pk": {"S": "c"}, "n": {"N": "5"}})
    # (the new counter table is read: its counter, at 0, is behind the items table's id 1)
    for _ in range(2):
        with pytest.raises(ItemExistsError, match="sequence 's' is at 0"):
            sequence.put({"note": "b"})
    assert sequence.counter_key == {"name": {"S": "s"}}
    assert CollectionSequence(ddb_client, pairs).put("c") == 6


def test_an_item_found_at_the_key_without_the_key_written_is_a_stale_description(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A put's condition fails only on an item at the key: where that item does not hold the
    key written, the description is stale, and the call describes the table afresh. A
    sequence's id, set last on an item of 70 numbers, is in the condition (a helper's escaped
    a bound of 64 and wrote over another tool's item at the new key); a collection whose
    table lost its sort key is told so at its next call (it spun on lost races to its
    deadline; its first, a number in no key, it cannot see)."""
    items, _, pairs, sequence, collection = two_sequences(
        ddb_client, ddb_table_factory, ("pk", "S"), "N", {"pk": "a"}
    )
    made_again(ddb_client, ddb_table_factory, {items: (("id", "N"),), pairs: (("pk", "S"),)})
    theirs = {"id": {"N": "2"}, "note": {"S": "another tool's"}}
    ddb_client.put_item(TableName=items, Item=theirs)
    with pytest.raises(ItemExistsError, match="Id 2 is taken"):
        sequence.put({"pk": "b", **{f"a{n:02}": n for n in range(70)}})
    kept = ddb_client.get_item(TableName=items, Key={"id": {"N": "2"}}, ConsistentRead=True)
    assert kept["Item"] == theirs
    assert collection.put("c") == 2  # (the new table has no sort key: a put it cannot see)
    with pytest.raises(KeySchemaError, match="needs a number"):
        collection.put("c")
