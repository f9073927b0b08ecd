"""Ids you can trust, whatever the table holds: counters other tools wrote, every key type, the
counter in another table, items that collide, collections that lose their highest item. Each bad
case asserts the exact error and, by scanning the tables, that nothing was written or moved."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys._entity import COUNTER, ENTITY_ATTRIBUTE
from ddbkeys._errors import KeySchemaError, ServiceError
from ddbkeys.ids import (
    CounterStateError,
    ItemExistsError,
    ItemKeyClashError,
    SequenceExhaustedError,
)
from ddbkeys.testing._tables import TableFactory
from tests.support.drivers import Driver

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


#: What a counter item gains from a refused call that moved it and put it back (a counter holding
#: 5.5, or at the maximum): the attribute that says what it is, for other readers.
COUNTER_TYPE = (ENTITY_ATTRIBUTE, {"S": COUNTER})


def snapshot(client: DynamoDBClient, *tables: str) -> list[Any]:
    """Every item of the tables, in a stable order (a counter item's type left out)."""
    items: list[Any] = []
    for table in tables:
        kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        while True:
            page = client.scan(**kwargs)
            items.extend(
                (table, sorted((a for a in i.items() if a != COUNTER_TYPE), key=str))
                for i in page["Items"]
            )
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return sorted(items, key=str)


def unchanged(client: DynamoDBClient, *tables: str) -> Callable[[], None]:
    """A check that the tables still hold what they hold now."""
    before = snapshot(client, *tables)

    def check() -> None:
        assert snapshot(client, *tables) == before, "something was written or moved"

    return check


# --- point 2: counter states other tools write ---------------------------------------------

BAD_COUNTERS = [
    ({"S": "41"}, "'41' (a string (S), not a number)"),
    ({"N": "5.5"}, "5.5 (not a whole number)"),
    ({"N": "-3"}, "-3 (below 0)"),
    ({"N": "100000000000000000000000000000000000000"}, None),
    ({"L": [{"N": "1"}]}, "{'L': [{'N': '1'}]} (a list (L), not a number)"),
    ({"BOOL": True}, "{'BOOL': True} (a boolean (BOOL), not a number)"),
]


def counter_message(table: str, name: str, shown: str) -> str:
    return (
        f"The counter item {{'pk': {name!r}}} of table {table!r} holds last_id = {shown}: a "
        "counter holds a whole number from 0 to 10**38 - 1. Nothing was changed; fix the item, "
        f"for example with `ddbkeys ids set VALUE -t {table} --counter-key "
        f'\'{{"pk": {{"S": "{name}"}}}}\' --force`.'
    )


@pytest.mark.parametrize(("value", "shown"), BAD_COUNTERS)
def test_a_bad_counter_is_reported_and_never_moved(
    driver: Driver,
    value: dict[str, Any],
    shown: str | None,
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    table = ddb_table_factory()
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "c"}, "last_id": value})
    if shown is None:  # DynamoDB writes the number as it likes: show what it holds
        held = ddb_client.get_item(TableName=table, Key={"pk": {"S": "c"}})["Item"]["last_id"]
        shown = f"{held['N']} (past the maximum 10**38 - 1)"
    expected = counter_message(table, "c", shown)
    others = unchanged(ddb_client, table)
    key = {"pk": {"S": "c"}}
    item = ddb_client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]

    def same() -> None:
        # The counter item exactly as it was (no ddbkeys_type added), and nothing else written.
        assert ddb_client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"] == item
        others()

    calls: list[Callable[[], object]] = [
        driver.make("AtomicCounter", ddb_client, table, "c").next,
        lambda: driver.make("AtomicCounter", ddb_client, table, "c").reserve(5),
        driver.make("AtomicCounter", ddb_client, table, "c").current,
        lambda: driver.make("AtomicCounter", ddb_client, table, "c", start=10).next(),
        # (idempotent: refused by its write's condition, or moved and put back with its slot)
        driver.make("AtomicCounter", ddb_client, table, "c", idempotent=True).next,
        lambda: driver.make(
            "AtomicCounter", ddb_client, table, "c", idempotent=True, group_commit=True
        ).reserve(2),
        lambda: driver.make("GaplessSequence", ddb_client, table, "c").put({"pk": "x"}),
        lambda: driver.make("GaplessSequence", ddb_client, table, "c", group_commit=False).put(
            {"pk": "x"}
        ),
        lambda: driver.make("GaplessSequence", ddb_client, table, "c").put_many(
            [{"pk": "x"}, {"pk": "y"}]
        ),
        driver.make("GaplessSequence", ddb_client, table, "c").current,
    ]
    # (a write that moved it and was taken back says so; one refused, or a read, changed nothing)
    # (a fraction passes every condition: the write that moved it is taken back exactly)
    back = "Its value is as it was (this write was taken back)"
    taken_back = expected.replace("Nothing was changed", back)
    for call in calls:
        with pytest.raises(CounterStateError) as raised:
            call()
        assert str(raised.value) in (expected, taken_back)
        assert raised.value.table == table
        same()
    commands = [
        ["next", "--counter", "c"],
        ["next", "--counter", "c", "--idempotent"],
        ["current", "--counter", "c"],
        ["put", "-s", "gapless", "--item", '{"pk": "x"}', "--sequence", "c"],
    ]
    for args in [] if driver.is_async else commands:  # (the CLI runs on the sync driver)
        result = CliRunner().invoke(
            cli, ["ids", *args, "-t", table, "--endpoint-url", ddb_endpoint_url]
        )
        assert result.exit_code == 1
        assert result.output.splitlines()[-1] in (f"Error: {expected}", f"Error: {taken_back}")
        same()
    # Moving it backwards is refused the same way; --force replaces it.
    with pytest.raises(CounterStateError):
        driver.make("AtomicCounter", ddb_client, table, "c").set(2)
    same()
    assert driver.make("AtomicCounter", ddb_client, table, "c").set(2, force=True) == 2
    assert driver.make("AtomicCounter", ddb_client, table, "c").next() == 3


def test_a_counter_seeded_with_zero_just_works(
    driver: Driver,
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    table = ddb_table_factory()
    for name in ("a", "g"):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": name}, "last_id": {"N": "0"}})
    assert driver.make("AtomicCounter", ddb_client, table, "a").next() == 1
    gapless = driver.make("GaplessSequence", ddb_client, table, "g", group_commit=False)
    assert gapless.put({"pk": "x"}) == 1
    assert gapless.usage.conflicts == 0, "a counter holding 0 must not look like a lost race"
    if driver.is_async:
        return  # (the CLI runs on the sync driver)
    # `ids set 0` on a fresh sequence, then a put, as a user seeds it from the shell.
    url = ["--endpoint-url", ddb_endpoint_url]
    seeded = CliRunner().invoke(cli, ["ids", "set", "0", "-t", table, "-c", "h", *url])
    assert (seeded.exit_code, seeded.output) == (0, "0\n")
    item = ["--item", '{"pk": "y"}']
    put = CliRunner().invoke(
        cli, ["ids", "put", "-t", table, "-s", "gapless", "--sequence", "h", *item, *url]
    )
    assert (put.exit_code, put.stdout) == (0, "1\n")
    # (sequence 'g' wrote 'id' into the table's items already: the new one's note says so)
    assert put.stderr.startswith("Note: sequence 'h' of table "), put.stderr


def test_a_counter_at_the_maximum(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    top = 10**38 - 1
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "c"}, "last_id": {"N": str(top)}})
    same = unchanged(ddb_client, table)
    with pytest.raises(Exception, match=r"is at 9{38}: 1 more id\(s\) would pass its maximum"):
        driver.make("AtomicCounter", ddb_client, table, "c").next()
    with pytest.raises(Exception, match=r"1 more id\(s\) would pass 10\*\*38 - 1"):
        driver.make("GaplessSequence", ddb_client, table, "c").put({"pk": "x"})
    same()
    assert driver.make("AtomicCounter", ddb_client, table, "c").current() == top


@pytest.mark.parametrize(("count", "step"), [(3, 1), (4, 1), (1, 4)])
def test_a_counter_near_the_maximum_says_so_for_several_ids(
    driver: Driver,
    count: int,
    step: int,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    # 3 more is 1E+38 (DynamoDB stores it, then it is taken back), 4 more needs 39 digits:
    # DynamoDB refuses the update as invalid. Either way the error is the counter's own.
    table = ddb_table_factory()
    near = 10**38 - 3
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "c"}, "last_id": {"N": str(near)}})
    same = unchanged(ddb_client, table)
    counter = driver.make("AtomicCounter", ddb_client, table, "c", step=step)
    with pytest.raises(Exception) as raised:
        counter.reserve(count)
    assert str(raised.value) == (
        f"Counter 'c' of table {table!r} is at {near}: {count} more id(s) would pass its "
        "maximum 10**38 - 1."
    )
    same()


@pytest.mark.parametrize("never_reuse", [False, True])
def test_a_collection_at_the_maximum(
    driver: Driver, never_reuse: bool, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # The highest item (or the never_reuse counter) at 10**38 - 1: the next number is 1E+38,
    # which DynamoDB would store; it must be refused like a counter's, and nothing written.
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    top = str(10**38 - 1)
    held: dict[str, Any] = {"sk": {"N": "0"}, "last_number": {"N": top}}
    item = held if never_reuse else {"sk": {"N": top}}
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}, **item})
    same = unchanged(ddb_client, table)
    with pytest.raises(SequenceExhaustedError) as raised:
        driver.make("CollectionSequence", ddb_client, table, never_reuse=never_reuse).put(
            "a", {"x": 1}
        )
    assert str(raised.value) == (
        f"Collection {{'pk': 'a'}} of table {table!r} is at {top}: 1 more number(s) would pass "
        "10**38 - 1, the largest DynamoDB number."
    )
    same()


@pytest.mark.parametrize(("value", "shown"), [v for v in BAD_COUNTERS if v[1] is not None])
def test_a_bad_counter_of_a_block_allocator_or_a_collection_is_left_as_it_was(
    driver: Driver,
    value: dict[str, Any],
    shown: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    # A BlockAllocator's reservation (its counter's write) and a never_reuse collection's
    # counter item (read before its transaction): the same error, the item whole as it was.
    blocks = ddb_table_factory()
    ddb_client.put_item(TableName=blocks, Item={"pk": {"S": "c"}, "last_id": value})
    collections = ddb_table_factory(("pk", "S"), ("sk", "N"))
    counter_item = {"pk": {"S": "a"}, "sk": {"N": "0"}, "last_number": value}
    ddb_client.put_item(TableName=collections, Item=counter_item)
    same = unchanged(ddb_client, blocks, collections)
    where = ((blocks, {"pk": {"S": "c"}}), (collections, {"pk": {"S": "a"}, "sk": {"N": "0"}}))

    def whole() -> list[Any]:  # (the counter items, ddbkeys_type included)
        return [ddb_client.get_item(TableName=t, Key=k, ConsistentRead=True) for t, k in where]

    items = whole()
    counter = driver.make("AtomicCounter", ddb_client, blocks, "c")
    with pytest.raises(CounterStateError) as raised:
        driver.make("BlockAllocator", counter, 10, prefetch=False).next()
    back = "Its value is as it was (this write was taken back)"
    expected = counter_message(blocks, "c", shown)
    assert str(raised.value) in (expected, expected.replace("Nothing was changed", back))
    sequence = driver.make("CollectionSequence", ddb_client, collections, never_reuse=True)
    with pytest.raises(CounterStateError) as raised:
        sequence.put("a", {"x": 1})
    assert f"of table {collections!r} holds last_number = {shown}" in str(raised.value)
    assert "\n" not in str(raised.value)
    same()
    assert [i["Item"] for i in whole()] == [i["Item"] for i in items]


def test_a_collection_other_tools_numbered_is_refused_not_numbered_twice(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Found by a helper, with PynamoDB: tickets numbered '1' to '12' in a string sort key
    made the next put 10 (beside '10', as '0000000010'); one '2' among ddbkeys' own numbers
    made every put try '0000000003' 400 times and blame other writers; a readme at number 0
    became a `never_reuse` counter. Each is refused in one line, the table as it was."""
    strings = ddb_table_factory(("pk", "S"), ("sk", "S"))
    for n in range(1, 13):
        ddb_client.put_item(TableName=strings, Item={"pk": {"S": "a"}, "sk": {"S": str(n)}})
    ddb_client.put_item(TableName=strings, Item={"pk": {"S": "b"}, "sk": {"S": "0000000001"}})
    ddb_client.put_item(TableName=strings, Item={"pk": {"S": "b"}, "sk": {"S": "2"}})
    numbers = ddb_table_factory(("pk", "S"), ("sk", "N"))
    readme = {"pk": {"S": "c"}, "sk": {"N": "0"}, "title": {"S": "readme"}}
    ddb_client.put_item(TableName=numbers, Item=readme)
    same = unchanged(ddb_client, strings, numbers)
    for key, found in (("a", "9"), ("b", "2")):
        sequence = driver.make("CollectionSequence", ddb_client, strings)
        with pytest.raises(KeySchemaError) as raised:
            sequence.put(key, {"x": 1})
        said = str(raised.value)
        assert f"Sort key {found!r} of table {strings!r} is not 10 digits, zero-padded" in said
        assert f"It is the highest of collection {{'pk': {key!r}}}" in said and "\n" not in said
    sequence = driver.make("CollectionSequence", ddb_client, numbers, never_reuse=True)
    with pytest.raises(CounterStateError, match="is an item of yours, not a counter"):
        sequence.put("c", {"x": 1})
    same()


@pytest.mark.parametrize("kind", ["gapless", "collection"])
def test_one_oversized_item_fails_only_its_own_put(
    driver: Driver, kind: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # Threads share one instance, so their puts are committed together; the item over 400 KB
    # must not make DynamoDB's refusal of the batch every caller's.
    table = ddb_table_factory(("pk", "S"), ("sk", "N")) if kind == "collection" else None
    table = table or ddb_table_factory()
    gapless = driver.make("GaplessSequence", ddb_client, table, "s", linger=0.05)
    collection = driver.make("CollectionSequence", ddb_client, table)
    results: dict[int, Any] = {}

    def put(k: int) -> None:
        item = {"big": "x" * (410_000 if k == 3 else 1)}
        try:
            if kind == "gapless":
                results[k] = gapless.put({"pk": f"k{k}", **item})
            else:
                results[k] = collection.put("a", item)
        except ServiceError as exc:
            results[k] = exc.code

    threads = [threading.Thread(target=put, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results.pop(3) == "ValidationException"
    assert sorted(results.values()) == list(range(1, 8))


# --- point 1: the id as the key; a real existing item still raises ----------------------------


def test_an_existing_item_at_the_ids_key_is_named(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    users = driver.make("GaplessSequence", ddb_client, table, "users", id_attribute="pk", width=4)
    assert users.put({"name": "Kirk"}) == 1
    # Another tool wrote the item the next id would be.
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "0002"}, "name": {"S": "Spock"}})
    same = unchanged(ddb_client, table)
    with pytest.raises(ItemExistsError) as raised:
        users.put({"name": "Uhura"})
    assert str(raised.value) == (
        f"Id 2 is taken: an item with the key {{'pk': '0002'}} already exists in table {table!r}, "
        "but sequence 'users' is at 1 (the counter is behind the ids in the table: was it set "
        "back?). The item was not written and used up no id."
    )
    assert raised.value.key == {"pk": {"S": "0002"}}
    same()


def test_put_many_with_the_same_key_twice_or_the_counters_key(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    users = driver.make("GaplessSequence", ddb_client, table, "users")
    same = unchanged(ddb_client, table)
    with pytest.raises(ItemKeyClashError) as raised:
        users.put_many([{"pk": "a"}, {"pk": "b"}, {"pk": "a"}])
    assert str(raised.value) == (
        f"Items 1 and 3 of put_many have the same key {{'pk': 'a'}} in table {table!r}: one "
        "transaction cannot write an item twice. Nothing was written."
    )
    with pytest.raises(ItemKeyClashError) as raised:
        users.put({"pk": "users"})
    assert str(raised.value) == (
        f"The item has the key {{'pk': 'users'}}, which is the counter item's key of sequence "
        f"'users' in table {table!r}: give the item another key, or keep the counter elsewhere "
        "(counter_table=, counter_key=)."
    )
    same()


def test_an_id_key_that_would_be_the_counters_key(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "N"))
    ids = driver.make(
        "GaplessSequence", ddb_client, table, id_attribute="pk", counter_key={"pk": 2}
    )
    assert ids.put({"n": "one"}) == 1
    same = unchanged(ddb_client, table)
    with pytest.raises(ItemKeyClashError, match=r"Id 2 would give the item the key \{'pk': 2\}"):
        ids.put({"n": "two"})
    same()


# --- point 3: every key type in every key position -------------------------------------------


def test_every_key_type_in_every_position(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    counters = ddb_table_factory()
    # N and B keys that are not the id.
    nb = ddb_table_factory(("pk", "N"), ("sk", "B"))
    seq = driver.make("GaplessSequence", ddb_client, nb, counter_table=counters)
    assert seq.put({"pk": 7, "sk": b"\x01x"}) == 1
    assert seq.put({"pk": {"N": "7"}, "sk": {"B": b"\x02"}}, typed=True) == 2
    got = ddb_client.get_item(TableName=nb, Key={"pk": {"N": "7"}, "sk": {"B": b"\x02"}})
    assert got["Item"]["id"] == {"N": "2"}
    # The id as a number partition key; the counter item at key 0 of the same table.
    n = ddb_table_factory(("pk", "N"))
    numbered = driver.make(
        "GaplessSequence", ddb_client, n, id_attribute="pk", counter_key={"pk": 0}
    )
    assert [numbered.put({"v": i}) for i in range(3)] == [1, 2, 3]
    assert ddb_client.get_item(TableName=n, Key={"pk": {"N": "3"}})["Item"]["v"] == {"N": "2"}
    # The id as a string sort key, padded, after a prefix: key order is id order.
    ss = ddb_table_factory(("pk", "S"), ("sk", "S"))
    invoices = driver.make(
        "GaplessSequence",
        ddb_client,
        ss,
        id_attribute="sk",
        prefix="INV#",
        width=6,
        counter_table=counters,
        counter_key={"pk": "invoices"},
    )
    assert [invoices.put({"pk": "acct"}) for _ in range(11)] == list(range(1, 12))
    page = ddb_client.query(
        TableName=ss,
        KeyConditionExpression="pk = :a",
        ExpressionAttributeValues={":a": {"S": "acct"}},
        ScanIndexForward=False,
        Limit=1,
    )
    assert page["Items"][0]["sk"] == {"S": "INV#000011"}
    report = driver.call("audit_attribute", ddb_client, ss, "sk", prefix="INV#", width=6)
    assert (report.ok, report.count, report.last) == (True, 11, 11)
    # Another width: no string is an id then, and that is a problem.
    wrong = driver.call("audit_attribute", ddb_client, ss, "sk", prefix="INV#")
    assert (wrong.ok, wrong.count, wrong.not_numbers) == (False, 0, 11)
    # The id as a number sort key beside a binary partition key.
    bn = ddb_table_factory(("pk", "B"), ("sk", "N"))
    binary = driver.make(
        "GaplessSequence",
        ddb_client,
        bn,
        id_attribute="sk",
        counter_table=counters,
        counter_key={"pk": "binary"},
    )
    assert binary.put({"pk": b"\x00\xff"}) == 1


KEY_TYPE_CASES = [
    # (table key, id attribute, item, message after "Key attribute ")
    (
        (("pk", "S"),),
        "id",
        {"pk": 7},
        "'pk' of table {t!r} is a string (S); the item gives a number (N): 7.",
    ),
    (
        (("pk", "N"),),
        "id",
        {"pk": "7"},
        "'pk' of table {t!r} is a number (N); the item gives a string (S): '7'.",
    ),
    (
        (("pk", "B"),),
        "id",
        {"pk": "x"},
        "'pk' of table {t!r} is binary (B); the item gives a string (S): 'x'.",
    ),
    (
        (("pk", "S"), ("sk", "N")),
        "id",
        {"pk": "a", "sk": b"1"},
        "'sk' of table {t!r} is a number (N); the item gives binary (B): b'1'.",
    ),
    (
        (("pk", "S"),),
        "id",
        {"pk": ""},
        "'pk' of table {t!r} is a string (S); the item gives an empty value, which DynamoDB "
        "does not allow in a key.",
    ),
    (
        (("pk", "B"),),
        "pk",
        {"v": 1},
        "'pk' of table {t!r} is binary (B); an id goes in a number (N) or string (S) "
        "attribute: choose another id_attribute.",
    ),
]


@pytest.mark.parametrize(("keys", "id_attribute", "item", "message"), KEY_TYPE_CASES)
def test_a_key_of_the_wrong_type_is_refused_before_any_request(
    driver: Driver,
    keys: tuple[tuple[str, str], ...],
    id_attribute: str,
    item: dict[str, Any],
    message: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    table = ddb_table_factory(*keys)
    counters = ddb_table_factory()
    same = unchanged(ddb_client, table, counters)
    sequence = driver.make(
        "GaplessSequence", ddb_client, table, id_attribute=id_attribute, counter_table=counters
    )
    with pytest.raises(KeySchemaError) as raised:
        sequence.put(item)
    assert str(raised.value) == "Key attribute " + message.format(t=table)
    assert sequence.usage.requests == 0, "refused before any request"
    same()


def test_counter_key_errors_name_the_real_parameter(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    with pytest.raises(KeySchemaError, match=r"whole key, as counter_key= \(--counter-key JSON"):
        driver.make("AtomicCounter", ddb_client, table).next()
    with pytest.raises(KeySchemaError, match=r"whole key, as counter_key= \(--counter-key JSON"):
        driver.make("GaplessSequence", ddb_client, table).put({"pk": "a", "sk": 1})
    with pytest.raises(KeySchemaError) as raised:
        driver.make("AtomicCounter", ddb_client, table, counter_key={"pk": "c", "sk": "x"}).next()
    assert str(raised.value) == (
        f"Key attribute 'sk' of table {table!r} is a number (N); counter_key= (--counter-key) "
        "gives a "
        "string (S): 'x'."
    )
    not_a_key = r"counter_key= \(--counter-key\) names 'other', which is not a key"
    with pytest.raises(KeySchemaError, match=not_a_key):
        driver.make(
            "GaplessSequence", ddb_client, table, counter_key={"pk": "c", "sk": 0, "other": 1}
        ).current()
    assert (
        driver.make("AtomicCounter", ddb_client, table, counter_key={"pk": "c", "sk": 0}).next()
        == 1
    )


# --- point 6: the counter in another table ----------------------------------------------------


def test_the_counter_in_another_table_leaves_no_phantom_row(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    items = ddb_table_factory()
    counters = ddb_table_factory()
    users = driver.make("GaplessSequence", ddb_client, items, "users", counter_table=counters)
    assert users.put_many([{"pk": "a"}, {"pk": "b"}]) == [1, 2]
    assert users.put({"pk": "users"}) == 3  # no clash: the counter lives elsewhere
    assert {i["pk"]["S"] for i in ddb_client.scan(TableName=items)["Items"]} == {"a", "b", "users"}
    assert ddb_client.scan(TableName=counters)["Items"] == [
        {"pk": {"S": "users"}, "last_id": {"N": "3"}, "ddbkeys_type": {"S": "counter"}}
    ]
    assert users.current() == 3
