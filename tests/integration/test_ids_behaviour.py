"""What each id strategy promises, call by call, against DynamoDB: options, admin, bad input,
lost responses placed exactly where they hurt, and what they cost."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._errors import ConfigurationError, DdbKeysError, KeySchemaError, TableNotFoundError
from ddbkeys.ids import (
    CounterBackwardsError,
    ItemExistsError,
    SequenceExhaustedError,
)
from ddbkeys.testing import Fault, FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory
from tests.conftest import proxied_client
from tests.support.drivers import Driver

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def item_count(client: DynamoDBClient, table: str) -> int:
    return int(client.scan(TableName=table, Select="COUNT")["Count"])


# --- atomic counter ------------------------------------------------------------------------


def test_counter_basics(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    orders = driver.make("AtomicCounter", ddb_client, table, "orders")
    tickets = driver.make("AtomicCounter", ddb_client, table, "tickets", start=1000, step=10)
    assert orders.current() == 0
    assert [orders.next(), orders.next()] == [1, 2]
    assert list(orders.reserve(3)) == [3, 4, 5]
    assert orders.current() == 5
    assert [tickets.next(), tickets.next()] == [1000, 1010]
    assert list(tickets.reserve(2)) == [1020, 1030]
    assert orders.next() == 6  # named counters are independent
    usage = orders.usage.snapshot()
    assert usage["billed_write_units"] == 4  # one write per call, reserve included
    assert usage["requests"] == 6


MODES = [
    {},
    {"group_commit": True},
    {"idempotent": True},
    {"group_commit": True, "idempotent": True},
]


@pytest.mark.parametrize("mode", MODES, ids=["plain", "group_commit", "idempotent", "both"])
@pytest.mark.parametrize(("start", "step"), [(0, 1), (2, 5), (1, 1), (1000, 10)])
def test_counter_starts_where_asked_in_every_mode(
    driver: Driver,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    mode: dict[str, bool],
    start: int,
    step: int,
) -> None:
    """A new counter gives ``start`` first, even below its step (start=0), in every mode, and
    every mode continues the same counter item."""
    table = ddb_table_factory()
    first = driver.make("AtomicCounter", ddb_client, table, "c", start=start, step=step, **mode)
    assert [first.next(), first.next()] == [start, start + step]
    assert list(first.reserve(2)) == [start + 2 * step, start + 3 * step]
    assert first.current() == start + 3 * step
    for other in MODES:
        again = driver.make(
            "AtomicCounter", ddb_client, table, "c", start=start, step=step, **other
        )
        assert again.next() == first.current()
    stored = ddb_client.get_item(TableName=table, Key={"pk": {"S": "c"}})["Item"]["last_id"]
    assert stored == {"N": str(start + 7 * step)}


def test_counter_custom_key_and_attribute(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("id", "N"), ("kind", "S"))
    counter = driver.make(
        "AtomicCounter",
        ddb_client,
        table,
        counter_key={"id": 0, "kind": "counter"},
        counter_attribute="n",
    )
    assert counter.next() == 1
    item = ddb_client.get_item(TableName=table, Key={"id": {"N": "0"}, "kind": {"S": "counter"}})
    assert item["Item"]["n"] == {"N": "1"}
    with pytest.raises(KeySchemaError, match=r"whole key, as counter_key= \(--counter-key JSON"):
        driver.make("AtomicCounter", ddb_client, table, "x").next()


def test_counter_maximum(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    counter = driver.make("AtomicCounter", ddb_client, table, "small", maximum=3)
    assert list(counter.reserve(2)) == [1, 2]
    with pytest.raises(
        SequenceExhaustedError, match=r"is at 2: 2 more id\(s\) would pass its maximum 3"
    ):
        counter.reserve(2)
    assert counter.next() == 3
    with pytest.raises(SequenceExhaustedError):
        counter.next()
    assert counter.current() == 3  # nothing moved


def test_counter_set(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    counter = driver.make("AtomicCounter", ddb_client, table, "c")
    counter.set(41)
    assert counter.next() == 42
    with pytest.raises(CounterBackwardsError) as raised:
        counter.set(10)
    assert str(raised.value).startswith(
        f"Refusing to move counter 'c' of table {table!r} backwards from 42 to 10"
    )
    assert raised.value.code == "ConditionalCheckFailedException"
    assert counter.current() == 42
    counter.set(10, force=True)
    assert counter.next() == 11


def test_counter_wrong_key_attribute(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("id", "S"))
    with pytest.raises(KeySchemaError, match="has partition key 'id', not 'pk'") as wrong:
        driver.make("AtomicCounter", ddb_client, table, "c", key_attribute="pk").next()
    assert "--key-attribute" not in str(wrong.value)  # (no such option: it pointed nowhere)
    assert str(wrong.value).endswith("or leave it out (it is read from the table).")
    assert driver.make("AtomicCounter", ddb_client, table, "c", key_attribute="id").next() == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, "Invalid counter name ''"),
        ({"counter_attribute": ""}, "Invalid counter attribute ''"),
        ({"step": 0}, "step must be a whole number from 1"),
        ({"start": -1}, "start must be a whole number from 0"),
        ({"maximum": 0}, "maximum must be a whole number from 1"),
        ({"step": True}, "step must be a whole number"),
        ({"group_commit": "yes"}, "group_commit must be True or False"),
        ({"idempotent": 1}, "idempotent must be True or False"),
        ({"idempotent": True, "deadline": None}, "idempotent=True needs a deadline of at most 900"),
        ({"idempotent": True, "deadline": 901}, "idempotent=True needs a deadline of at most 900"),
        ({"deadline": 0}, "deadline must be a number of seconds above 0"),  # (every strategy's)
    ],
)
def test_counter_bad_input(
    driver: Driver,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    kwargs: dict[str, Any],
    message: str,
) -> None:
    table = ddb_table_factory()
    with pytest.raises(ConfigurationError, match=message):
        driver.make("AtomicCounter", ddb_client, table, **kwargs)
    assert item_count(ddb_client, table) == 0


@pytest.mark.parametrize(
    ("strategy", "setting"),
    [
        ("BlockAllocator", "prefetch"),
        ("GaplessSequence", "group_commit"),
        ("GaplessSequence", "allow_global_tables"),
        ("CollectionSequence", "group_commit"),
        ("CollectionSequence", "consistent_read"),
        ("CollectionSequence", "never_reuse"),
        ("CollectionSequence", "allow_global_tables"),
    ],
)
@pytest.mark.parametrize("value", ["no", 0, None])
def test_a_setting_that_is_true_or_false_takes_nothing_else(
    driver: Driver,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    strategy: str,
    setting: str,
    value: object,
) -> None:
    # prefetch="no" ran with prefetch on (bool("no") is True): a one-line error instead.
    table = ddb_table_factory()
    message = f"{setting} must be True or False, not {value!r}."
    with pytest.raises(ConfigurationError) as raised:
        if strategy == "BlockAllocator":
            counter = driver.make("AtomicCounter", ddb_client, table, "b")
            driver.make("BlockAllocator", counter, 10, **{setting: value})
        elif strategy == "CollectionSequence":
            driver.make(strategy, ddb_client, table, **{setting: value})
        else:
            driver.make(strategy, ddb_client, table, "c", **{setting: value})
    assert str(raised.value) == message
    assert raised.value.table == table
    assert item_count(ddb_client, table) == 0


@pytest.mark.parametrize("strategy", ["AtomicCounter", "GaplessSequence"])
def test_a_name_and_a_counter_key_that_disagree_are_refused(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, strategy: str
) -> None:
    # AtomicCounter(name="a", counter_key={"pk": "b"}) used b, silently: now a one-line error
    # (as --counter with --counter-key is on the CLI); a name that is the key's value agrees.
    table = ddb_table_factory()
    with pytest.raises(ConfigurationError) as raised:
        driver.make(strategy, ddb_client, table, "a", counter_key={"pk": "b"})
    assert str(raised.value) == (
        f"{strategy}(name='a', counter_key={{'pk': 'b'}}) names two counter items of table "
        f"{table!r}: name= makes the key {{partition key: 'a'}}, counter_key= gives the whole "
        "key; pass one of them (or a name that is the key's partition key value)."
    )
    assert item_count(ddb_client, table) == 0
    agreed = driver.make(strategy, ddb_client, table, "a", counter_key={"pk": "a"})
    assert (agreed.next() if strategy == "AtomicCounter" else agreed.put({"pk": "x"})) == 1
    counter = ddb_client.get_item(TableName=table, Key={"pk": {"S": "a"}}, ConsistentRead=True)
    assert counter["Item"]["last_id"] == {"N": "1"}  # (the counter both of them name)


def test_counter_bad_calls(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    counter = driver.make("AtomicCounter", ddb_client, table, "c")
    with pytest.raises(ConfigurationError, match="count must be a whole number from 1"):
        counter.reserve(0)
    with pytest.raises(ConfigurationError, match="value must be a whole number from 0"):
        counter.set(-5)
    assert item_count(ddb_client, table) == 0
    with pytest.raises(ConfigurationError, match="Invalid table name 'x'"):
        driver.make("AtomicCounter", ddb_client, "x")
    with pytest.raises(TableNotFoundError, match="Table 'no-such-table' not found"):
        driver.make("AtomicCounter", ddb_client, "no-such-table").next()


# --- blocks --------------------------------------------------------------------------------


def test_blocks_increase_and_use_one_write_per_block(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    counter = driver.make("AtomicCounter", ddb_client, table, "b")
    first = driver.make("BlockAllocator", counter, 100)
    second = driver.make(
        "BlockAllocator", driver.make("AtomicCounter", ddb_client, table, "b"), 100, prefetch=False
    )
    a = [first.next() for _ in range(250)]
    b = [second.next() for _ in range(150)]
    assert a == sorted(a) and b == sorted(b)
    assert not set(a) & set(b)
    assert counter.usage.snapshot()["requests"] <= 4  # 250 ids in 3 blocks (+1 prefetched)
    with pytest.raises(ConfigurationError, match="block_size must be a whole number"):
        driver.make("BlockAllocator", counter, 0)


# --- item-collection sequence --------------------------------------------------------------


@pytest.mark.parametrize("pk_type", ["S", "N", "B"])
def test_collection_numbers_per_collection(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, pk_type: str
) -> None:
    table = ddb_table_factory(("project", pk_type), ("issue", "N"))
    keys: dict[str, tuple[Any, Any]] = {
        "S": ("projectA", "projectB"),
        "N": (Decimal(7), 8),
        "B": (b"\x00a", b"\xffb"),
    }
    a, b = keys[pk_type]
    sequence = driver.make("CollectionSequence", ddb_client, table, group_commit=False)
    assert [sequence.put(a, {"priority": "low"}) for _ in range(3)] == [1, 2, 3]
    assert sequence.put(b) == 1
    assert sequence.current(a) == 3
    assert sequence.current(b) == 1
    assert sequence.current(b"\x01" if pk_type == "B" else ("none" if pk_type == "S" else 9)) == 0
    assert driver.call("audit_collection", ddb_client, table, a).ok


def test_collection_string_sort_keys(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": {"S": "PROFILE"}})
    sequence = driver.make("CollectionSequence", ddb_client, table, width=2, prefix="ISSUE#")
    assert [sequence.put("p") for _ in range(99)] == list(range(1, 100))
    got = ddb_client.get_item(TableName=table, Key={"pk": {"S": "p"}, "sk": {"S": "ISSUE#07"}})
    assert "Item" in got
    with pytest.raises(SequenceExhaustedError, match="Number 100 no longer fits the 2-digit"):
        sequence.put("p")
    report = driver.call("audit_collection", ddb_client, table, "p", width=2, prefix="ISSUE#")
    assert report.ok and report.count == 99 and report.not_numbers == 1


@pytest.mark.parametrize("on_conflict", ["next", "requery"])
def test_collection_lost_race(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, on_conflict: Any
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    sequence = driver.make(
        "CollectionSequence", ddb_client, table, on_conflict=on_conflict, group_commit=False
    )
    assert sequence.put("p") == 1
    # Another writer takes 2 and 3 behind our back: our remembered highest (1) is stale.
    for n in (2, 3):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": {"N": str(n)}})
    assert sequence.put("p") == 4
    assert sequence.usage.snapshot()["conflicts"] >= 1


def test_collection_bad_input(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    sequence = driver.make("CollectionSequence", ddb_client, table)
    with pytest.raises(ConfigurationError, match="must not hold 'sk'"):
        sequence.put("p", {"sk": 5})
    with pytest.raises(
        KeySchemaError,
        match=r"Key attribute 'pk' of table .* is a string \(S\); the partition key value "
        r"gives a number \(N\): 5",
    ):
        sequence.put(5)
    with pytest.raises(DdbKeysError, match=r"Attribute 'x' holds the float 1\.5"):
        sequence.put("p", {"x": 1.5})
    with pytest.raises(ConfigurationError, match="width must be 1 to 38"):
        driver.make("CollectionSequence", ddb_client, table, width=0)
    with pytest.raises(ConfigurationError, match="on_conflict must be"):
        driver.make("CollectionSequence", ddb_client, table, on_conflict="later")
    no_sort = ddb_table_factory(("pk", "S"))
    with pytest.raises(KeySchemaError, match=r"needs a number \(N\) or string \(S\) sort key"):
        driver.make("CollectionSequence", ddb_client, no_sort).put("p")
    assert item_count(ddb_client, table) == 0


# --- gapless -------------------------------------------------------------------------------


def test_gapless_existing_item_uses_no_id(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    users = driver.make("GaplessSequence", ddb_client, table, "users", group_commit=False)
    assert users.put({"pk": "User#Kirk", "name": "Kirk"}) == 1
    with pytest.raises(ItemExistsError) as raised:
        users.put({"pk": "User#Kirk"})
    assert str(raised.value) == (
        f"An item with the key {{'pk': 'User#Kirk'}} already exists in table {table!r}; it was not "
        "written and "
        "used up no id."
    )
    assert users.put({"pk": "User#Spock"}) == 2
    assert users.current() == 2
    report = driver.call("audit_attribute", ddb_client, table, "id")
    assert report.ok and report.count == 2


def test_gapless_put_many_is_all_or_nothing(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    users = driver.make("GaplessSequence", ddb_client, table, "users")
    assert users.put_many([{"pk": f"u{i}"} for i in range(99)]) == list(range(1, 100))
    with pytest.raises(ItemExistsError, match="'u5'} already exists"):
        users.put_many([{"pk": "new1"}, {"pk": "u5"}, {"pk": "new2"}])
    assert users.current() == 99
    assert "Item" not in ddb_client.get_item(TableName=table, Key={"pk": {"S": "new1"}})
    with pytest.raises(ConfigurationError, match="put_many takes 1 to 99 items, not 100"):
        users.put_many([{"pk": f"x{i}"} for i in range(100)])
    assert users.put_many([{"pk": "new1"}]) == [100]


def test_gapless_id_as_the_key(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("ticket", "N"))
    tickets = driver.make(
        "GaplessSequence", ddb_client, table, counter_key={"ticket": 0}, id_attribute="ticket"
    )
    assert [tickets.put({"title": f"t{i}"}) for i in range(3)] == [1, 2, 3]
    got = ddb_client.get_item(TableName=table, Key={"ticket": {"N": "2"}})
    assert got["Item"]["title"] == {"S": "t1"}


def test_gapless_bad_input(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    users = driver.make("GaplessSequence", ddb_client, table, "users")
    with pytest.raises(KeySchemaError, match="The item has no 'pk', a key attribute"):
        users.put({"name": "Kirk"})
    with pytest.raises(ConfigurationError, match="already has the id attribute 'id'"):
        users.put({"pk": "a", "id": 5})
    with pytest.raises(DdbKeysError, match="An item must be a mapping"):
        users.put(["pk", "a"])
    assert item_count(ddb_client, table) == 0
    assert users.current() == 0


# --- lost responses, exactly where they hurt -----------------------------------------------


def test_lost_put_response_is_recognised(
    driver: Driver,
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fault_proxy.set_faults(Faults(script=[Fault.LOSE_RESPONSE], operations=frozenset({"PutItem"})))
    sequence = driver.make(
        "CollectionSequence", proxied_client(fault_proxy), table, group_commit=False
    )
    assert sequence.put("p", {"v": "first"}) == 1
    assert sequence.put("p", {"v": "second"}) == 2
    assert fault_proxy.counts_by_operation[("PutItem", "lose_response")] == 1
    items = ddb_client.query(
        TableName=table,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "p"}},
    )["Items"]
    assert [(i["sk"]["N"], i["v"]["S"]) for i in items] == [("1", "first"), ("2", "second")]


def test_lost_transaction_response_is_applied_once(
    driver: Driver,
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    table = ddb_table_factory()
    fault_proxy.set_faults(
        Faults(
            script=[Fault.LOSE_RESPONSE, Fault.LOSE_RESPONSE],
            operations=frozenset({"TransactWriteItems"}),
        )
    )
    users = driver.make("GaplessSequence", proxied_client(fault_proxy), table, "users")
    assert users.put({"pk": "a"}) == 1
    assert users.put({"pk": "b"}) == 2
    assert fault_proxy.counts_by_operation[("TransactWriteItems", "lose_response")] == 2
    report = driver.call("audit_attribute", ddb_client, table, "id")
    assert report.ok and report.count == 2
    assert driver.make("GaplessSequence", ddb_client, table, "users").current() == 2


def test_lost_counter_response_leaves_a_gap_never_a_duplicate(
    driver: Driver, fault_proxy: FaultProxy, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    fault_proxy.set_faults(
        Faults(script=[Fault.FORWARD, Fault.LOSE_RESPONSE], operations=frozenset({"UpdateItem"}))
    )
    counter = driver.make("AtomicCounter", proxied_client(fault_proxy), table, "c")
    # The second increment is applied, its answer lost, and sent again by botocore: id 2 is
    # skipped, and never given to anyone.
    assert [counter.next(), counter.next(), counter.next()] == [1, 3, 4]
    assert fault_proxy.counts_by_operation[("UpdateItem", "lose_response")] == 1


def test_a_second_counter_attribute_on_a_counter_item_is_warned_of(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A misspelt counter_attribute= on a counter in use began a second counter on its item,
    at 1, silently (helper-77): every strategy that writes the counter warns, once, as the
    attribute is made; none where the item is new or already holds it."""
    from ddbkeys.ids import (  # noqa: PLC0415
        AtomicCounter,
        BlockAllocator,
        GaplessSequence,
        NewCounterAttributeWarning,
    )

    table = ddb_table_factory(("pk", "S"))
    assert GaplessSequence(ddb_client, table, "users").put({"pk": "u1"}) == 1
    assert AtomicCounter(ddb_client, table, "order").next() == 1
    blocks = BlockAllocator(AtomicCounter(ddb_client, table, "order", counter_attribute="b"), 10)
    users = iter(range(2, 10))
    made: dict[str, Callable[[], int]] = {
        "gapless": lambda: GaplessSequence(
            ddb_client, table, "users", counter_attribute="lastid"
        ).put({"pk": f"u{next(users)}"}),
        "counter": lambda: AtomicCounter(ddb_client, table, "order", counter_attribute="n").next(),
        "blocks": blocks.next,
    }
    for name, first in made.items():
        with pytest.warns(
            NewCounterAttributeWarning,
            match=r"holds 'last_id' = 1(, '\w+' = 1)*, and its counter '\w+' began with this "
            r"call, at 1\.",
        ) as said:
            assert first() == 1, name
        warned = [w for w in said if w.category is NewCounterAttributeWarning]
        assert len(warned) == 1, name
        if name != "blocks":  # (your line, not ours; blocks are fetched in a thread of theirs)
            assert warned[0].filename == __file__, (name, warned[0].filename)
    blocks.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", NewCounterAttributeWarning)
        assert made["gapless"]() == 2 and made["counter"]() == 2  # (it holds them now)
        assert AtomicCounter(ddb_client, table, "fresh", counter_attribute="n").next() == 1


@pytest.mark.parametrize("idempotent", [False, True])
def test_a_misspelt_attribute_whose_first_write_was_lost_is_warned_of(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    idempotent: bool,
) -> None:
    """helper-79 F1: the first write of a misspelt counter_attribute= lost its answer; the
    retry found the attribute (its own lost write made it) and no call ever warned."""
    from ddbkeys.ids import AtomicCounter, NewCounterAttributeWarning  # noqa: PLC0415

    table = ddb_table_factory(("pk", "S"))
    assert list(AtomicCounter(ddb_client, table, "order").reserve(5)) == [1, 2, 3, 4, 5]
    fault_proxy.set_faults(
        Faults(script=[Fault.LOSE_RESPONSE], operations=frozenset({"UpdateItem"}))
    )
    typo = AtomicCounter(
        proxied_client(fault_proxy, max_attempts=1),  # (ddbkeys' retries, which see the loss)
        table,
        "order",
        counter_attribute="lastid",
        idempotent=idempotent,
    )
    with pytest.warns(NewCounterAttributeWarning, match="may have begun with this call, at 1"):
        first = typo.next()
    assert first == (1 if idempotent else 2)  # (the plain counter's lost write skipped 1)
    assert fault_proxy.counts["lose_response"] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", NewCounterAttributeWarning)
        assert typo.next() == first + 1  # (once)


@pytest.mark.parametrize("client_retries", [1, 5])
def test_a_young_counter_throttled_once_is_not_warned_of(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    client_retries: int,
) -> None:
    """helper-80 F1: a counter at 1 on an item that holds another number, its next write
    throttled once and sent again (by ddbkeys, or by the client itself), was warned of as a
    counter that "may have begun with this call": a throttled write is not applied."""
    from ddbkeys.ids import AtomicCounter, NewCounterAttributeWarning  # noqa: PLC0415

    table = ddb_table_factory(("pk", "S"))
    key = {"pk": "cfg"}
    assert AtomicCounter(ddb_client, table, counter_key=key).next() == 1
    ddb_client.update_item(  # (a number of the user's own on the counter item)
        TableName=table,
        Key={"pk": {"S": "cfg"}},
        UpdateExpression="SET version = :v",
        ExpressionAttributeValues={":v": {"N": "7"}},
    )
    fault_proxy.set_faults(Faults(script=[Fault.THROTTLE], operations=frozenset({"UpdateItem"})))
    counter = AtomicCounter(
        proxied_client(fault_proxy, max_attempts=client_retries), table, counter_key=key
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", NewCounterAttributeWarning)
        assert counter.next() == 2
    assert fault_proxy.counts["throttle"] == 1
