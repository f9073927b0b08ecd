"""``ddbkeys ids`` as a user meets it, against DynamoDB."""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

import pytest

from ddbkeys._cli.common import stored_number
from ddbkeys.testing._tables import TableFactory
from tests.cli.conftest import Run

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def test_next_current_set(ids: Run, ddb_table_factory: TableFactory) -> None:
    table = ddb_table_factory()
    assert ids("current", "-t", table).stdout == "0\n"  # (and a note: no counter yet)
    first = ids("next", "-t", table, "--counter", "order")
    assert first.stdout == "1\n"  # (a misspelt --counter begins a new counter too: said)
    assert first.stderr == (
        f"Note: counter 'order' of table {table!r} gave out its first id, 1, with this call (a "
        "new counter, or one set to 0): if it had given out ids before, is --counter right?\n"
    )
    more = ids("next", "-t", table, "--counter", "order", "--count", "3")
    assert more.output == "2\n3\n4\n"  # (not new: no note)
    result = ids("next", "-t", table, "--counter", "order", "--output", "json")
    assert json.loads(result.output) == {"table": table, "counter": "order", "ids": [5]}
    assert ids("current", "-t", table, "--counter", "order").output == "5\n"
    back = ids("set", "2", "-t", table, "--counter", "order")
    assert back.exit_code == 1
    assert back.output.splitlines()[-1] == (
        f"Error: Refusing to move counter 'order' of table {table!r} backwards from 5 to 2: ids "
        "after 2 were already given out and would be given out again. Pass force=True (--force) "
        "if you really mean it."
    )
    assert ids("set", "2", "-t", table, "--counter", "order", "--force").exit_code == 0
    assert ids("next", "-t", table, "--counter", "order").output == "3\n"
    # Past what DynamoDB holds: a usage error (2), as -1 is, nothing sent (a helper had 1).
    past = ids("set", str(10**38), "-t", table, "--counter", "order")
    assert past.exit_code == 2 and "is not in the range 0<=x<=" in past.output, past.output
    # Not a whole number: said so (click's own words were "not a valid integer range").
    written = ids("set", "1e3", "-t", table, "--counter", "order")
    assert written.exit_code == 2, written.output
    assert written.output.splitlines()[-1].endswith("'1e3' is not a valid integer."), written.output
    assert ids("current", "-t", table, "--counter", "order").output == "3\n"


def test_next_idempotent_shares_the_counter(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    assert ids("next", "-t", table, "--counter", "order", "--idempotent").stdout == "1\n"
    assert ids("next", "-t", table, "--counter", "order").output == "2\n"
    assert ids("next", "-t", table, "--counter", "order", "--idempotent", "-n", "2").output == (
        "3\n4\n"
    )
    # A counter that another tool seeded with a string: refused, nothing written.
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "order"}, "last_id": {"S": "12"}})
    bad = ids("next", "-t", table, "--counter", "order", "--idempotent")
    assert bad.exit_code == 1
    assert "holds last_id = '12' (a string (S), not a number)" in bad.output.splitlines()[-1]
    item = ddb_client.get_item(TableName=table, Key={"pk": {"S": "order"}})["Item"]
    assert item["last_id"] == {"S": "12"}


def test_put_gapless_and_collection(ids: Run, ddb_table_factory: TableFactory) -> None:
    users = ddb_table_factory()
    # The default counter and the default gapless sequence are different items.
    assert ids("next", "-t", users).stdout == "1\n"
    assert ids("put", "-t", users, "-s", "gapless", "--item", '{"pk": "User#Kirk"}').output == "1\n"
    assert ids("current", "-t", users, "--counter", "sequence").output == "1\n"
    typed = '{"pk": {"S": "User#Spock"}, "rank": {"N": "2"}}'
    assert ids("put", "-t", users, "-s", "gapless", "--item", typed).output == "2\n"
    many = ids("put", "-t", users, "-s", "gapless", input='[{"pk": "a"}, {"pk": "b"}]')
    assert many.output == "3\n4\n"
    exists = ids("put", "-t", users, "-s", "gapless", "--item", '{"pk": "a"}')
    assert exists.exit_code == 1
    assert exists.output.splitlines()[-1] == (
        f"Error: An item with the key {{'pk': 'a'}} already exists in table {users!r}; it was not "
        "written and "
        "used up no id."
    )
    audit = ids("audit", "-t", users, "--strict")
    assert audit.exit_code == 0, audit.output
    assert audit.output.splitlines()[-1] == "OK"
    # helper-87 F4: a misspelt or forgotten --sequence begins another sequence writing the same
    # id attribute: id 1 again, with a note (a first sequence on its own table has none, above).
    again = ids(
        "put", "-t", users, "-s", "gapless", "--sequence", "sequnce", "--item", '{"pk": "c"}'
    )
    assert again.exit_code == 0 and again.stdout == "1\n"
    assert again.stderr == (
        f"Note: sequence 'sequnce' of table {users!r} began with this call, at 1, and the "
        "table's items hold 'id' already (4 of the first 50 read): if they come from another "
        "sequence (a misspelt or forgotten --sequence), these ids repeat theirs (`ddbkeys ids "
        f"audit -t {users} --strict` finds duplicates).\n"
    )
    assert ids("audit", "-t", users, "--strict").exit_code == 1  # (id 1 twice)
    then = ids(
        "put", "-t", users, "-s", "gapless", "--sequence", "sequnce", "--item", '{"pk": "d"}'
    )
    assert then.stdout == "2\n" and then.stderr == ""  # (said once, as it began)

    issues = ddb_table_factory(("pk", "S"), ("sk", "N"))
    put = ["put", "-t", issues, "-s", "collection", "-k", "projectA"]
    assert ids(*put, "--item", '{"priority": "low"}').output == "1\n"
    assert ids(*put, "--item", "[{}, {}]").output == "2\n3\n"
    report = json.loads(ids("audit", "-t", issues, "-k", "projectA", "--output", "json").output)
    assert report["count"] == 3 and report["ok"] is True


def test_audit_reports_problems(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    for pk, n in [("a", 1), ("b", 2), ("c", 2), ("d", 5)]:
        ddb_client.put_item(TableName=table, Item={"pk": {"S": pk}, "id": {"N": str(n)}})
    result = ids("audit", "-t", table, "--strict")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"attribute id of table {table}: 4 ids, from 1 to 5",
        "gaps: 2 missing: 3-4",
        "duplicates: 1: 2 x2",
        "PROBLEMS FOUND",
    ]


def test_audit_of_an_attribute_no_item_holds_warns(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A typo (--attribute nosuch) audited nothing and said OK, with nothing else: a
    warning on stderr asks whether the name is right, stdout says NOTHING AUDITED, and
    --strict fails (helper-89 F5: a CI job's typo passed for good); an empty table passes."""
    table = ddb_table_factory()
    empty = ids("audit", "-t", table, "--strict")
    assert empty.exit_code == 0 and empty.stdout.splitlines()[-1] == "NOTHING AUDITED"
    assert empty.stderr == f"Warning: table {table!r} holds no items of yours: nothing to audit.\n"
    assert ids("next", "-t", table, "--counter", "id").exit_code == 0  # (ddbkeys' own item)
    assert ids("audit", "-t", table, "--strict").exit_code == 0, "a counter is no item of yours"
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}, "id": {"N": "1"}})
    result = ids("audit", "-t", table, "--attribute", "nosuch", "--strict")
    assert result.exit_code == 1 and result.stdout.splitlines()[-1] == "NOTHING AUDITED"
    assert result.stderr == (
        f"Warning: no item holds 'nosuch' among the 2 item(s) of table {table!r}: is the name "
        "right; a collection's sequence: -k PARTITION? (nothing audited; --strict fails on it)\n"
    )
    assert ids("audit", "-t", table, "--attribute", "nosuch").exit_code == 0  # (not --strict)
    # The document says what the exit code says (helper-91 F1: "ok": true beside exit 1).
    document = ids("audit", "-t", table, "--attribute", "nosuch", "--strict", "--output", "json")
    assert document.exit_code == 1
    assert json.loads(document.stdout) | {"usage": None} == json.loads(document.stdout) | {
        "ok": False,
        "nothing_audited": True,
        "count": 0,
        "usage": None,
    }
    held = ids("audit", "-t", table, "--strict")
    assert held.exit_code == 0 and held.stdout.splitlines()[-1] == "OK" and held.stderr == ""


def test_audit_reports_ids_below_start_and_values_that_are_not_ids(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    values = [("a", {"N": "-1"}), ("b", {"N": "0"}), ("c", {"N": "1"}), ("d", {"S": "2"})]
    for pk, value in values:
        ddb_client.put_item(TableName=table, Item={"pk": {"S": pk}, "id": value})
    result = ids("audit", "-t", table, "--strict")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"attribute id of table {table}: 1 ids, from 1 to 1",
        "gaps: 0 missing",
        "duplicates: 0",
        "below 1: 2: -1, 0",
        "not whole numbers: 1",
        "PROBLEMS FOUND",
    ]
    report = json.loads(ids("audit", "-t", table, "--start", "0", "--output", "json").output)
    assert (report["below_start"], report["not_numbers"], report["ok"]) == ([-1], 1, False)


def test_audit_that_finds_no_number(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    put = ["put", "-t", table, "-s", "gapless", "--id-attribute", "pk", "--prefix", "order#"]
    assert ids(*put, "--item", "[{}, {}]").output == "1\n2\n"
    result = ids("audit", "-t", table, "--attribute", "pk")
    assert result.output.splitlines() == [
        f"attribute pk of table {table}: 0 ids",
        "gaps: 0 missing",
        "duplicates: 0",
        "not whole numbers: 2 (ids in a string key: give their --prefix and --width)",
        "PROBLEMS FOUND",
    ]
    prefixed = ids("audit", "-t", table, "--attribute", "pk", "--prefix", "order#")
    assert prefixed.output.splitlines()[0] == f"attribute pk of table {table}: 2 ids, from 1 to 2"


def test_audit_of_a_collection_names_a_highest_key_the_sequence_cannot_go_on_from(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # (helper-68: `ids put` refused a highest sort key 1.5 and sent the user to `ids audit -k`,
    # which said OK, with a hint for string keys)
    numbers = ddb_table_factory(("pk", "S"), ("sk", "N"))
    strings = ddb_table_factory(("pk", "S"), ("sk", "S"))
    for table, keys in (
        (numbers, [{"N": "1"}, {"N": "2"}, {"N": "2.5"}]),
        (strings, [{"S": "0000000001"}, {"S": "00000000025"}, {"S": "profile"}]),
    ):
        for sk in keys:
            ddb_client.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": sk})
    refused = ids("put", "-t", numbers, "-s", "collection", "-k", "p", "--item", "{}")
    assert refused.exit_code == 1 and "`ddbkeys ids audit -k`" in refused.output
    audited = ids("audit", "-t", numbers, "-k", "p", "--strict")
    assert (audited.exit_code, audited.output.splitlines()) == (
        1,
        [
            f"collection 'p' of table {numbers}: 2 ids, from 1 to 2",
            "gaps: 0 missing",
            "duplicates: 0",
            "not whole numbers: 1",
            "highest sort key: 2.5 holds no number the sequence writes, so `ids put` cannot go "
            "on from it: move or renumber that item",
            "PROBLEMS FOUND",
        ],
    )
    assert ids("put", "-t", strings, "-s", "collection", "-k", "p", "--item", "{}").exit_code == 1
    report = json.loads(ids("audit", "-t", strings, "-k", "p", "--output", "json").output)
    assert (report["blocking_sort_key"], report["ok"]) == ("'00000000025'", False)
    # Renumbered, the sequence goes on, and the audit agrees.
    ddb_client.delete_item(TableName=strings, Key={"pk": {"S": "p"}, "sk": {"S": "00000000025"}})
    assert ids("put", "-t", strings, "-s", "collection", "-k", "p", "--item", "{}").output == "2\n"
    report = json.loads(ids("audit", "-t", strings, "-k", "p", "--output", "json").output)
    assert (report["blocking_sort_key"], report["count"], report["ok"]) == (None, 2, True)


def test_bad_input(ids: Run, ddb_table_factory: TableFactory) -> None:
    table = ddb_table_factory()
    missing = ids("next", "-t", "no-such-table")
    assert missing.exit_code == 1
    assert missing.output.splitlines()[-1].startswith("Error: Table 'no-such-table' not found")
    zero = ids("next", "-t", table, "--count", "0")
    assert zero.exit_code == 2
    assert "Invalid value for '--count' / '-n'" in zero.output
    bad_json = ids("put", "-t", table, "-s", "gapless", "--item", "{bad")
    assert bad_json.exit_code == 2
    assert bad_json.output.splitlines()[-1].startswith(
        "Error: Invalid value for --item: not valid JSON"
    )
    not_object = ids("put", "-t", table, "-s", "gapless", "--item", "42")
    assert not_object.exit_code == 2
    no_key = ids("put", "-t", table, "-s", "collection", "--item", "{}")
    assert no_key.exit_code == 2
    assert no_key.output.splitlines()[-1] == "Error: --strategy collection needs --partition-key."
    no_pk = ids("put", "-t", table, "-s", "gapless", "--item", '{"name": "x"}')
    assert no_pk.exit_code == 1
    assert no_pk.output.splitlines()[-1] == (
        f"Error: The item has no 'pk', a key attribute (S) of table {table!r}."
    )
    assert ids("current", "-t", table).stdout == "0\n"  # nothing was written


def test_a_number_key_is_named_as_the_table_holds_it(
    ids: Run, ddb_table_factory: TableFactory
) -> None:
    # (helper-89 C7: `-k 1.0` on a number key was named "collection Decimal('1.0')" where
    # DynamoDB holds 1; 1.0, 1e0 and 1 are one collection)
    table = ddb_table_factory(("pk", "N"), ("sk", "N"))
    assert ids("put", "-t", table, "-s", "collection", "-k", "1.0", "--item", "{}").stdout == "1\n"
    assert ids("put", "-t", table, "-s", "collection", "-k", "1e0", "--item", "{}").stdout == "2\n"
    audited = ids("audit", "-t", table, "-k", "1.00")
    assert audited.stdout.splitlines()[0] == f"collection 1 of table {table}: 2 ids, from 1 to 2"
    big = ids("audit", "-t", table, "-k", "1e40")  # (helper-94 F5: named cut at 40 characters)
    assert big.stdout.splitlines()[0] == f"collection 1{'0' * 40} of table {table}: 0 ids"
    assert (
        stored_number(Decimal("1E+2")) == Decimal(100)
        and str(stored_number(Decimal("1E+2"))) == "100"
    )
    assert (
        str(stored_number(Decimal("-0.0"))) == "0" and str(stored_number(Decimal("2.50"))) == "2.5"
    )
    with pytest.raises(InvalidOperation):
        stored_number(Decimal("NaN"))


def test_an_attribute_audit_leaves_the_counter_items_out(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # (helper-91 F5: `--attribute last_id` audited a gapless sequence's counter, 3, as an id:
    # "gaps: 2 missing: 1-2", PROBLEMS FOUND)
    table = ddb_table_factory(("pk", "S"))
    for n in (1, 2, 3):
        put = ids("put", "-t", table, "-s", "gapless", "--item", json.dumps({"pk": f"u{n}"}))
        assert put.exit_code == 0, put.output
    counter = ddb_client.get_item(TableName=table, Key={"pk": {"S": "sequence"}})["Item"]
    assert counter["last_id"] == {"N": "3"} and counter["ddbkeys_type"] == {"S": "counter"}
    audited = ids("audit", "-t", table, "--attribute", "last_id", "--strict")
    assert audited.exit_code == 1, audited.output
    assert audited.stdout.splitlines()[0] == f"attribute last_id of table {table}: 0 ids"
    assert audited.stdout.splitlines()[-1] == "NOTHING AUDITED"
    # An item of yours holding last_id is audited as before.
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "x"}, "last_id": {"N": "1"}})
    mine = ids("audit", "-t", table, "--attribute", "last_id", "--strict")
    assert (mine.exit_code, mine.stdout.splitlines()[-1]) == (0, "OK"), mine.output
