"""``ddbkeys ids`` refuses bad counter input (keys, names, values, steps) as one line, and
moves nothing (checked by scanning the table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ddbkeys.testing._tables import TableFactory
from tests.cli.conftest import BASE64, Run, fill, last_line, scan, seeded

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


BAD_COUNTERS: list[tuple[list[str], int, str]] = [
    (
        ["next", "-t", "{t}", "--counter", "c", "--counter-key", '{"pk": "c"}'],
        2,
        "--counter-key and --counter cannot be used together: --counter names the counter by its "
        "partition key value, --counter-key gives its whole key.",
    ),
    (
        ["current", "-t", "{t}", "--counter-key", "{}"],
        2,
        "Invalid value for --counter-key: give "
        'the counter item\'s whole key as a JSON object, like {"pk": "ctr"}',
    ),
    (
        ["set", "9", "-t", "{t}", "--counter-key", "{oops"],
        2,
        "Invalid value for --counter-key: "
        "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1))",
    ),
    (
        ["next", "-t", "{t}", "--counter-key", '{"pk": {"B": "%"}}'],
        2,
        f"Invalid value for --counter-key: Attribute 'pk' holds the binary value \"%\", {BASE64}",
    ),
    (
        ["next", "-t", "{t}", "--counter-key", '{"pk": "c", "sk": NaN}'],
        2,
        "Invalid value for "
        "--counter-key: not valid JSON (NaN is not a JSON number, and DynamoDB has no NaN or "
        "Infinity)",
    ),
    (
        ["next", "-t", "{t}", "--counter-key", '{"pk": "counter"}'],
        1,
        "counter_key= (--counter-key) has no 'sk', a key attribute (N) of table {t!r}.",
    ),
    (
        ["next", "-t", "{t}", "--counter-key", '{"pk": "counter", "sk": "0"}'],
        1,
        "Key attribute 'sk' of table {t!r} is a number (N); counter_key= (--counter-key) "
        "gives a string (S): '0'.",
    ),
    (
        ["next", "-t", "{t}"],
        1,
        "Table {t!r} has the key (pk, sk); a counter item key cannot be "
        "made from a name alone: give the counter item's whole key, as counter_key= "
        """(--counter-key JSON, for example '{"pk": "counter", "sk": 0}').""",
    ),
    (
        ["next", "-t", "{t}", "--counter-key", '{"pk": "odd", "sk": 0}'],
        1,
        "The counter item "
        "{'pk': 'odd', 'sk': 0} of table {t!r} holds last_id = 5.5 (not a whole number): a "
        "counter holds a whole number from 0 to 10**38 - 1. Its value is as it was (this write "
        "was taken back); fix the item, for example with `ddbkeys ids set VALUE -t {t} "
        """--counter-key '{"pk": {"S": "odd"}, "sk": {"N": "0"}}' --force`.""",
    ),
    (
        ["current", "-t", "{t}", "--counter-key", '{"pk": "text", "sk": 0}'],
        1,
        "The counter item "
        "{'pk': 'text', 'sk': 0} of table {t!r} holds last_id = '41' (a string (S), not a "
        "number): a counter holds a whole number from 0 to 10**38 - 1. Nothing was changed; fix "
        "the item, for example with `ddbkeys ids set VALUE -t {t} --counter-key "
        """'{"pk": {"S": "text"}, "sk": {"N": "0"}}' --force`.""",
    ),
    (
        ["set", "3", "-t", "{t}", "--counter-key", '{"pk": {"S": "counter"}, "sk": {"N": "0"}}'],
        1,
        # (named by its key: 'counter', the default name, said the same of every counter
        # given by its key, helper-77 F2)
        "Refusing to move counter {'pk': 'counter', 'sk': 0} of table {t!r} backwards from 7 to "
        "3: ids after 3 were "
        "already given out and would be given out again. Pass force=True (--force) if you really "
        "mean it.",
    ),
]


@pytest.mark.parametrize(("args", "code", "message"), BAD_COUNTERS)
def test_bad_counter_input_moves_nothing(
    ids: Run,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    args: list[str],
    code: int,
    message: str,
) -> None:
    table = seeded(ddb_client, ddb_table_factory, ("pk", "S"), ("sk", "N"))
    for pk, value in (("odd", {"N": "5.5"}), ("text", {"S": "41"})):
        item = {"pk": {"S": pk}, "sk": {"N": "0"}, "last_id": value}
        ddb_client.put_item(TableName=table, Item=item)
    before = scan(ddb_client, table)
    result = ids(*[table if a == "{t}" else a for a in args])
    assert result.exit_code == code, result.output
    assert last_line(result) == "Error: " + fill(message, table)
    # (the counter holding 5.5 was moved and put back exactly: no ddbkeys_type added either)
    assert scan(ddb_client, table) == before


def test_a_second_attribute_on_a_counter_item_is_warned_of_once(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """helper-77: `ids next --attribute lastid` (for last_id) on a counter in use began a
    second counter on its item, at 1, silently: ids the first had given out, again."""
    table = ddb_table_factory(("pk", "S"))
    assert ids("next", "-t", table, "--counter", "order", "--count", "3").stdout == "1\n2\n3\n"
    held = "'last_id' = 3"
    for idempotent in ([], ["--idempotent"]):
        attribute = "lastid" + "".join(idempotent)[2:4]
        typo = ids("next", "-t", table, "--counter", "order", "--attribute", attribute, *idempotent)
        assert typo.exit_code == 0 and typo.stdout == "1\n", typo.output
        assert typo.stderr == (
            f"Warning: Counter item {{'pk': 'order'}} of table {table!r} holds {held}, and "
            f"its counter {attribute!r} began with this call, at 1. If --attribute is "
            "misspelt, these ids may repeat those given from the other.\n"
        )
        again = ids("next", "-t", table, "--counter", "order", "--attribute", attribute)
        assert again.stdout == "2\n" and again.stderr == ""  # (once: as it is made)
        held += f", {attribute!r} = 2"
    fresh = ids("next", "-t", table, "--counter", "new", "--attribute", "lastid")
    assert fresh.stdout == "1\n"  # (a new item: no other counter; only the note of a new one)
    assert fresh.stderr.startswith("Note: counter 'new' of table"), fresh.stderr


def test_a_counter_that_is_not_there_reads_0_with_a_note(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """`ids current --counter ordr` (for order) printed 0 with no word, as a counter before its
    first id does: a misspelt name, counter key or attribute is now noted on stderr (stdout
    and the exit code as before); a counter set to 0 is there, and reads 0 silently."""
    table = ddb_table_factory(("pk", "S"))
    assert ids("next", "-t", table, "--counter", "order").stdout == "1\n"
    typo = ids("current", "-t", table, "--counter", "ordr")
    assert (typo.exit_code, typo.stdout) == (0, "0\n")
    assert typo.stderr == (
        f"Note: table {table!r} holds no counter 'ordr' (none has given out an id yet): is "
        "--counter right?\n"
    )
    keyed = ids("current", "-t", table, "--counter-key", '{"pk": "ordr"}', "--output", "json")
    assert keyed.exit_code == 0 and '"current": 0' in keyed.stdout
    assert keyed.stderr.endswith("is --counter-key right?\n"), keyed.stderr
    attribute = ids("current", "-t", table, "--counter", "order", "--attribute", "lastid")
    assert attribute.stdout == "0\n"
    assert attribute.stderr == (
        f"Note: counter 'order' of table {table!r} holds no 'lastid' (no id given out from it "
        "yet): is --attribute right?\n"
    )
    default = ids("current", "-t", table)  # (helper-81 F5: a gapless sequence's is "sequence")
    assert default.stdout == "0\n" and default.stderr.endswith(
        "is --counter right? (`ids put -s gapless` keeps its sequence as --counter sequence)\n"
    )
    assert ids("set", "0", "-t", table, "--counter", "zero").exit_code == 0
    for name, shown in (("order", "1\n"), ("zero", "0\n")):
        there = ids("current", "-t", table, "--counter", name)
        assert (there.stdout, there.stderr) == (shown, "")
