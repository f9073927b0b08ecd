"""Every counter item an id strategy writes says what it is, ``ddbkeys_type = "counter"`` (see
:mod:`ddbkeys._entity`), set by the write that moves it (no request of its own); the items you
write never carry it. ddbkeys never reads it back: a counter another tool wrote without it works
as before, and gets it with its next write."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._entity import COUNTER, ENTITY_ATTRIBUTE
from ddbkeys._errors import ConfigurationError
from ddbkeys.ids import AtomicCounter, CounterStateError
from ddbkeys.ids._blocks_steps import HandBack
from ddbkeys.testing._tables import TableFactory
from tests.support.drivers import Driver

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

TYPE = {ENTITY_ATTRIBUTE: {"S": COUNTER}}
MODES = [
    {},
    {"group_commit": True},
    {"idempotent": True},
    {"group_commit": True, "idempotent": True},
]


def item(client: DynamoDBClient, table: str, **key: Any) -> dict[str, Any]:
    typed = {k: {"N": str(v)} if isinstance(v, int) else {"S": v} for k, v in key.items()}
    return dict(client.get_item(TableName=table, Key=typed, ConsistentRead=True)["Item"])


def without_slots(item: dict[str, Any]) -> dict[str, Any]:
    """A counter item without the writer slots the idempotent counter stamps on it."""
    return {k: v for k, v in item.items() if not k.startswith(("ddbkeys_w.", "ddbkeys_v."))}


def everything(client: DynamoDBClient, table: str) -> list[dict[str, Any]]:
    return list(client.scan(TableName=table, ConsistentRead=True)["Items"])


@pytest.mark.parametrize("mode", MODES, ids=["plain", "group_commit", "idempotent", "both"])
@pytest.mark.parametrize(("start", "step"), [(1, 1), (1000, 10)], ids=["add", "set"])
def test_the_atomic_counter_says_what_it_is(
    driver: Driver,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    mode: dict[str, bool],
    start: int,
    step: int,
) -> None:
    table = ddb_table_factory()
    counter = driver.make(
        "AtomicCounter", ddb_client, table, "orders", start=start, step=step, **mode
    )
    assert counter.next() == start
    written = item(ddb_client, table, pk="orders")
    assert without_slots(written) == {"pk": {"S": "orders"}, "last_id": {"N": str(start)}, **TYPE}
    # (The idempotent write also stamps its writer slot: its request number and value.)
    assert len(written) - len(without_slots(written)) == (2 if mode.get("idempotent") else 0)
    assert counter.reserve(3)[-1] == start + 3 * step
    assert item(ddb_client, table, pk="orders")[ENTITY_ATTRIBUTE] == {"S": COUNTER}
    # No request of its own: one write a call, in every mode.
    assert counter.usage.snapshot()["requests"] == 2


def test_set_and_a_counter_with_a_maximum_say_it_too(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    assert driver.make("AtomicCounter", ddb_client, table, "set").set(41) == 41
    assert item(ddb_client, table, pk="set") == {"pk": {"S": "set"}, "last_id": {"N": "41"}, **TYPE}
    capped = driver.make("AtomicCounter", ddb_client, table, "capped", maximum=10)
    assert capped.next() == 1  # the conditional form of the update
    assert item(ddb_client, table, pk="capped")[ENTITY_ATTRIBUTE] == {"S": COUNTER}


def test_blocks_reserve_and_hand_back_on_a_counter_that_says_what_it_is(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    counter = driver.make("AtomicCounter", ddb_client, table, "tickets")
    blocks = driver.make("BlockAllocator", counter, 10, prefetch=False)
    assert [blocks.next() for _ in range(3)] == [1, 2, 3]
    report = blocks.aclose() if driver.is_async else blocks.close()
    assert report.sent and report.handed_back == 7
    assert item(ddb_client, table, pk="tickets") == {
        "pk": {"S": "tickets"},
        "last_id": {"N": "3"},
        **TYPE,
    }


def test_a_hand_back_that_removes_the_number_keeps_the_type(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A block from 0 of which nothing was handed out: the counter goes back to holding no id
    (``REMOVE``), and stays a counter item."""
    table = ddb_table_factory()
    counter = AtomicCounter(ddb_client, table, "from-zero", start=0)
    assert counter.reserve(10) == range(0, 10)
    applied = counter._hand_back(HandBack(9, None, 10, 0), counter._begin())
    assert applied
    assert item(ddb_client, table, pk="from-zero") == {"pk": {"S": "from-zero"}, **TYPE}
    assert counter.next() == 0


@pytest.mark.parametrize("group_commit", [True, False])
def test_the_gapless_counter_says_what_it_is_and_your_items_do_not(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, group_commit: bool
) -> None:
    table = ddb_table_factory()
    users = driver.make("GaplessSequence", ddb_client, table, "users", group_commit=group_commit)
    assert users.put({"pk": "User#Kirk"}) == 1
    assert users.put_many([{"pk": "User#Spock"}, {"pk": "User#Uhura"}]) == [2, 3]
    assert item(ddb_client, table, pk="users") == {
        "pk": {"S": "users"},
        "last_id": {"N": "3"},
        **TYPE,
    }
    yours = [i for i in everything(ddb_client, table) if i["pk"] != {"S": "users"}]
    assert len(yours) == 3 and not [i for i in yours if ENTITY_ATTRIBUTE in i]
    report = driver.call("audit_attribute", ddb_client, table, "id")
    assert report.ok and report.count == 3


def test_a_gapless_counter_in_its_own_table_or_among_the_ids(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    items, counters = ddb_table_factory(), ddb_table_factory()
    users = driver.make("GaplessSequence", ddb_client, items, "users", counter_table=counters)
    assert users.put({"pk": "a"}) == 1
    assert everything(ddb_client, counters) == [
        {"pk": {"S": "users"}, "last_id": {"N": "1"}, **TYPE}
    ]
    assert ENTITY_ATTRIBUTE not in item(ddb_client, items, pk="a")
    # The ids are the key, and the counter is the item with key 0: the audit still skips it.
    tickets_table = ddb_table_factory(("ticket", "N"))
    tickets = driver.make(
        "GaplessSequence",
        ddb_client,
        tickets_table,
        counter_key={"ticket": 0},
        id_attribute="ticket",
    )
    assert [tickets.put({"title": t}) for t in "ab"] == [1, 2]
    assert item(ddb_client, tickets_table, ticket=0)[ENTITY_ATTRIBUTE] == {"S": COUNTER}
    assert ENTITY_ATTRIBUTE not in item(ddb_client, tickets_table, ticket=2)
    report = driver.call("audit_attribute", ddb_client, tickets_table, "ticket")
    assert report.ok and report.count == 2


@pytest.mark.parametrize("group_commit", [True, False])
def test_the_collection_counter_says_what_it_is_and_your_items_do_not(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, group_commit: bool
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    kept = driver.make(
        "CollectionSequence", ddb_client, table, never_reuse=True, group_commit=group_commit
    )
    assert [kept.put("kept") for _ in range(2)] == [1, 2]
    assert item(ddb_client, table, pk="kept", sk=0) == {
        "pk": {"S": "kept"},
        "sk": {"N": "0"},
        "last_number": {"N": "2"},
        **TYPE,
    }
    plain = driver.make("CollectionSequence", ddb_client, table, group_commit=group_commit)
    assert plain.put("plain") == 1  # no counter item at all
    typed = [i for i in everything(ddb_client, table) if ENTITY_ATTRIBUTE in i]
    assert [(i["pk"], i["sk"]) for i in typed] == [({"S": "kept"}, {"N": "0"})]
    report = driver.call("audit_collection", ddb_client, table, "kept")
    assert report.ok and report.count == 2


def test_counters_another_tool_wrote_work_and_get_the_type(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    for name in ("plain", "idempotent", "users"):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": name}, "last_id": {"N": "5"}})
    assert driver.make("AtomicCounter", ddb_client, table, "plain").next() == 6
    assert (
        driver.make("AtomicCounter", ddb_client, table, "idempotent", idempotent=True).next() == 6
    )
    assert driver.make("GaplessSequence", ddb_client, table, "users").put({"pk": "u"}) == 6
    for name in ("plain", "idempotent", "users"):
        written = item(ddb_client, table, pk=name)
        assert without_slots(written) == {"pk": {"S": name}, "last_id": {"N": "6"}, **TYPE}
        assert len(written) - len(without_slots(written)) == 2 * (name == "idempotent")
    issues = ddb_table_factory(("pk", "S"), ("sk", "N"))
    seeded = {"pk": {"S": "p"}, "sk": {"N": "0"}, "last_number": {"N": "5"}}
    ddb_client.put_item(TableName=issues, Item=seeded)
    sequence = driver.make("CollectionSequence", ddb_client, issues, never_reuse=True)
    assert sequence.put("p") == 6
    assert item(ddb_client, issues, pk="p", sk=0) == {**seeded, "last_number": {"N": "6"}, **TYPE}


@pytest.mark.parametrize("name", ["AtomicCounter", "GaplessSequence", "CollectionSequence"])
def test_the_type_attribute_cannot_be_the_counter_attribute(
    driver: Driver, ddb_client: DynamoDBClient, name: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        driver.make(name, ddb_client, "any", counter_attribute="ddbkeys_type")
    assert str(raised.value) == (
        "Invalid counter attribute 'ddbkeys_type': ddbkeys sets it on the counter item to say "
        "what the item is (see ddbkeys._entity). Choose another name."
    )


@pytest.mark.parametrize("mode", MODES, ids=["plain", "group_commit", "idempotent", "both"])
def test_an_item_of_yours_at_the_counter_key_is_never_made_a_counter(
    driver: Driver,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    mode: dict[str, bool],
) -> None:
    """A counter named like one of your items (or given its key) is refused in one line, and
    the item is left as it was (a helper's `ids next --counter-key` on an existing item typed
    it a counter: its key vanished from every listing)."""
    table = ddb_table_factory()
    yours = {"pk": {"S": "c1"}, "name": {"S": "Kirk"}}
    ddb_client.put_item(TableName=table, Item=yours)
    counter = driver.make("AtomicCounter", ddb_client, table, "c1", **mode)
    refused = r"Item .*'c1'.* is an item of yours, not a counter"
    with pytest.raises(CounterStateError, match=refused):
        counter.next()
    with pytest.raises(CounterStateError, match="is an item of yours"):
        counter.set(5)
    with pytest.raises(CounterStateError, match="is an item of yours"):
        counter.current()
    assert item(ddb_client, table, pk="c1") == yours
    # A counter another tool wrote (its attribute there, no type) is still one.
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "theirs"}, "last_id": {"N": "7"}})
    assert driver.make("AtomicCounter", ddb_client, table, "theirs", **mode).next() == 8
    # An item you typed otherwise is yours, a last_id or not (a helper's `ids next` retyped
    # one a counter, and its key left every listing).
    typed = {"pk": {"S": "typed"}, "last_id": {"N": "10"}, ENTITY_ATTRIBUTE: {"S": "order"}}
    ddb_client.put_item(TableName=table, Item=typed)
    retyped = driver.make("AtomicCounter", ddb_client, table, "typed", **mode)
    refused = r"Item .*'typed'.* is an item of yours, not a counter \(its ddbkeys_type is 'order'"
    with pytest.raises(CounterStateError, match=refused):
        retyped.next()
    with pytest.raises(CounterStateError, match=refused):
        retyped.set(50)
    with pytest.raises(CounterStateError, match=refused):
        retyped.current()
    assert item(ddb_client, table, pk="typed") == typed


def test_the_gapless_sequence_leaves_an_item_of_yours_at_its_counter_key(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    yours = {"pk": {"S": "users"}, "name": {"S": "Kirk"}}
    ddb_client.put_item(TableName=table, Item=yours)
    users = driver.make("GaplessSequence", ddb_client, table, "users")
    with pytest.raises(CounterStateError, match="is an item of yours, not a counter"):
        users.put({"pk": "User#Spock"})
    assert everything(ddb_client, table) == [yours]
    typed = {"pk": {"S": "typed"}, "last_id": {"N": "3"}, ENTITY_ATTRIBUTE: {"N": "1"}}
    ddb_client.put_item(TableName=table, Item=typed)
    numbered = driver.make("GaplessSequence", ddb_client, table, "typed")
    number = r"its ddbkeys_type is a number \(N\), not 'counter'"
    with pytest.raises(CounterStateError, match=number):
        numbered.put({"pk": "User#Uhura"})
    by_key = sorted(everything(ddb_client, table), key=lambda i: str(i["pk"]))
    assert by_key == [typed, yours]
