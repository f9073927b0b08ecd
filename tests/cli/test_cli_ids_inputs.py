"""What ``ddbkeys ids`` makes of every input: plain and DynamoDB JSON items from --item, a file
or stdin, counter keys, and bad input of every kind, each refused as one line with nothing
written or moved (checked by scanning the table)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner, Result

from ddbkeys.cli import cli
from ddbkeys.testing.tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration
Run = Callable[..., Result]

RANGE = "it is out of DynamoDB's range (1E-130 to 9.99E+125 in magnitude, or 0)."
NOT_AV = (
    "which is not a DynamoDB AttributeValue: a mapping with one of S, N, B, SS, NS, BS, M, L, "
    "NULL, BOOL, like {'S': 'text'}."
)
BASE64 = "which is not base64: DynamoDB JSON gives binary values (B, BS) in base64."
DEEP = "{" + '"a": {' * 40 + '"a": 1' + "}" * 41
PUT = ["put", "-t", "{t}", "-s", "gapless"]


@pytest.fixture
def ids(ddb_endpoint_url: str) -> Run:
    def run(*args: str, input: str | bytes | None = None) -> Result:
        return CliRunner().invoke(
            cli, ["ids", *args, "--endpoint-url", ddb_endpoint_url], input=input
        )

    return run


def scan(client: DynamoDBClient, table: str) -> list[dict[str, Any]]:
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))


def seeded(client: DynamoDBClient, factory: TableFactory, *keys: tuple[str, str]) -> str:
    """A table holding a gapless sequence at 5, an atomic counter at 7 and one item."""
    table = factory(*keys)
    extra = {"sk": {"N": "0"}} if len(keys) > 1 else {}
    for item in (
        {"pk": {"S": "sequence"}, "last_id": {"N": "5"}},
        {"pk": {"S": "counter"}, "last_id": {"N": "7"}},
        {"pk": {"S": "User#1"}, "id": {"N": "1"}},
    ):
        client.put_item(TableName=table, Item={**item, **extra})
    return table


def fill(message: str, table: str) -> str:
    return message.replace("{t!r}", repr(table))


def last_line(result: Result) -> str:
    lines = result.output.splitlines()
    return lines[-1] if lines else ""


# (arguments, standard input, exit code, the error line). {t} is the table.
BAD_PUTS: list[tuple[list[str], str | bytes | None, int, str]] = [
    (
        [*PUT, "--item", "{bad"],
        None,
        2,
        "Invalid value for --item: not valid JSON (Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1))",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "n": NaN}'],
        None,
        2,
        "Invalid value for --item: not valid JSON (NaN is not a JSON number, and DynamoDB has "
        "no NaN or Infinity)",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "n": -Infinity}'],
        None,
        2,
        "Invalid value for --item: not valid JSON (-Infinity is not a JSON number, and DynamoDB "
        "has no NaN or Infinity)",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "n": 1e9999999999999999999}'],
        None,
        2,
        "Invalid value for --item: not valid JSON (the number 1e9999999999999999999 is too "
        "large to read)",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "n": 1e400}'],
        None,
        2,
        f"Invalid value for --item: Attribute 'n' holds the number 1E+400: {RANGE}",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "n": -1e-131}'],
        None,
        2,
        f"Invalid value for --item: Attribute 'n' holds the number -1E-131: {RANGE}",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "n": ' + "1" * 39 + "}"],
        None,
        2,
        f"Invalid value for --item: Attribute 'n' holds the number {'1' * 39}: it has 39 "
        "significant digits; DynamoDB keeps at most 38.",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "n": ' + "9" * 5000 + "}"],
        None,
        2,
        f"Invalid value for --item: Attribute 'n' holds the number {'9' * 57}...: it has 5000 "
        "significant digits; DynamoDB keeps at most 38.",
    ),
    (
        [*PUT, "--item", "[" * 100_000],
        None,
        2,
        "Invalid value for --item: JSON nested too deeply (DynamoDB allows 32 levels)",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "d": ' + DEEP + "}"],
        None,
        2,
        "Invalid value for --item: Attribute 'd" + ".a" * 31 + "' nests maps, lists or sets more "
        "than 31 deep: DynamoDB allows 32 levels in all, the item included.",
    ),
    (
        [*PUT, "--item", "42"],
        None,
        2,
        "Invalid value for --item: must be a JSON object, or an array of objects, not a number",
    ),
    (
        [*PUT, "--item", '"x"'],
        None,
        2,
        "Invalid value for --item: must be a JSON object, or an array of objects, not a string",
    ),
    (
        [*PUT, "--item", "null"],
        None,
        2,
        "Invalid value for --item: must be a JSON object, or an array of objects, not null",
    ),
    (
        [*PUT, "--item", "[]"],
        None,
        2,
        "Invalid value for --item: an empty array: give at least one item",
    ),
    (
        [*PUT, "--item", '[{"pk": "a"}, 3]'],
        None,
        2,
        "Invalid value for --item: item 2 of 2: a number, not an object",
    ),
    (
        [*PUT, "--item", '[{"pk": "a"}, [{"pk": "b"}]]'],
        None,
        2,
        "Invalid value for --item: item 2 of 2: an array, not an object",
    ),
    (
        [*PUT, "--item", json.dumps([{"pk": f"u{n}"} for n in range(100)])],
        None,
        2,
        "Invalid value for --item: an array of 100 items: --strategy gapless writes 1 to 99 "
        "items, in one transaction",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "name": {"S": "x"}}'],
        None,
        2,
        "Invalid value for --item: the item mixes DynamoDB JSON (attribute 'name') with plain "
        "values (attribute 'pk'): pass --item-format dynamodb or --item-format plain.",
    ),
    (
        [*PUT, "--item", '[{"pk": "b"}, {"pk": {"S": "a"}, "n": 1}]'],
        None,
        2,
        "Invalid value for --item: item 2 of 2: the item mixes DynamoDB JSON (attribute 'pk') "
        "with plain values (attribute 'n'): pass --item-format dynamodb or --item-format plain.",
    ),
    (
        [*PUT, "--item", '{"pk": {"S": "a"}, "pic": {"B": "%%%"}}'],
        None,
        2,
        f"Invalid value for --item: Attribute 'pic' holds the binary value \"%%%\", {BASE64}",
    ),
    (
        [*PUT, "--item", '{"pk": {"S": "a"}, "pics": {"BS": ["aGk=", 5]}}'],
        None,
        2,
        f"Invalid value for --item: Attribute 'pics' holds the binary value 5, {BASE64}",
    ),
    (
        [*PUT, "--item", '{"pk": {"S": "a"}, "m": {"M": {"l": {"L": [{"B": "!!"}]}}}}'],
        None,
        2,
        f"Invalid value for --item: Attribute 'm.l[0]' holds the binary value \"!!\", {BASE64}",
    ),
    (
        [*PUT, "--item", '{"pk": {"S": "a"}, "n": {"N": "abc"}}'],
        None,
        2,
        "Invalid value for --item: Attribute 'n' holds the N value 'abc': not a number written "
        "as a string.",
    ),
    (
        [*PUT, "--item", '{"pk": {"S": "a"}, "n": {"N": "1E126"}}'],
        None,
        2,
        f"Invalid value for --item: Attribute 'n' holds the number 1E126: {RANGE}",
    ),
    (
        [*PUT, "--item", '{"pk": {"S": "a"}, "s": {"SS": []}}'],
        None,
        2,
        "Invalid value for --item: Attribute 's' holds an empty set: DynamoDB sets hold at least "
        "one value (leave it out, or use None).",
    ),
    (
        [*PUT, "--item", '{"pk": {"S": "a"}, "s": {"NS": ["1", "1.0"]}}'],
        None,
        2,
        "Invalid value for --item: Attribute 's' holds '1.0' twice in its NS: set members are "
        "unique.",
    ),
    (
        [*PUT, "--item", '{"pk": {"S": "a"}, "x": {"NULL": false}}'],
        None,
        2,
        "Invalid value for --item: Attribute 'x' holds {'NULL': False}: a NULL value must be True.",
    ),
    (
        [*PUT, "--item-format", "dynamodb", "--item", '{"pk": "a"}'],
        None,
        2,
        f"Invalid value for --item: Attribute 'pk' holds 'a', {NOT_AV}",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "s": "\\ud800"}'],
        None,
        2,
        "Invalid value for --item: not valid Unicode (a lone surrogate '\\ud800')",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "": 1}'],
        None,
        2,
        "Invalid value for --item: Invalid attribute name '': it must be a non-empty string of "
        "at most 255 bytes.",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "m": {"": 1}}'],
        None,
        2,
        "Invalid value for --item: Attribute 'm' holds a map with the key '': map keys must be "
        "non-empty strings.",
    ),
    (
        PUT,
        b'{"pk": "\xfe"}',
        2,
        "Invalid value for standard input: not UTF-8 text (byte 0xfe at position 8)",
    ),
    (
        PUT,
        "",
        2,
        "Invalid value for standard input: not valid JSON (Expecting value: line 1 "
        "column 1 (char 0))",
    ),
    (
        [*PUT, "--item", "{}", "--item-file", "{file}"],
        None,
        2,
        "Give the item with --item or --item-file, not both.",
    ),
    (
        [*PUT, "--item-format", "xml", "--item", "{}"],
        None,
        2,
        "Invalid value for '--item-format': 'xml' is not one of 'auto', 'plain', 'dynamodb'.",
    ),
    (
        [*PUT, "-k", "p", "--item", "{}"],
        None,
        2,
        "--partition-key applies to --strategy collection, not gapless.",
    ),
    (
        [*PUT, "--never-reuse", "--item", "{}"],
        None,
        2,
        "--never-reuse applies to --strategy collection, not gapless.",
    ),
    (
        ["put", "-t", "{t}", "-s", "collection", "-k", "p", "--counter-table", "x", "--item", "{}"],
        None,
        2,
        "--counter-table applies to --strategy gapless, not collection.",
    ),
    (
        ["put", "-t", "{t}", "-s", "collection", "-k", "p", "--sequence", "s", "--item", "{}"],
        None,
        2,
        "--sequence applies to --strategy gapless, not collection.",
    ),
    (
        [*PUT, "--sequence", "s", "--counter-key", '{"pk": "s"}', "--item", '{"pk": "b"}'],
        None,
        2,
        "--counter-key and --sequence cannot be used together: --sequence names the counter by "
        "its partition key value, --counter-key gives its whole key.",
    ),
    (
        [*PUT, "--counter-key", "[1]", "--item", '{"pk": "b"}'],
        None,
        2,
        "Invalid value for --counter-key: give the counter item's whole key as a JSON object, "
        'like {"pk": "ctr"}',
    ),
    (
        [*PUT, "--counter-key", '{"pk": {"S": "s"}, "x": 1}', "--item", '{"pk": "b"}'],
        None,
        2,
        "Invalid value for --counter-key: the item mixes DynamoDB JSON (attribute 'pk') with "
        "plain values (attribute 'x'): pass --item-format dynamodb or --item-format plain.",
    ),
    (
        [*PUT, "--width", "0", "--item", "{}"],
        None,
        2,
        "Invalid value for '--width': 0 is not in the range 1<=x<=38.",
    ),
    # Errors the library finds (it needs the table): exit code 1.
    ([*PUT, "--item", "{}"], None, 1, "The item has no 'pk', a key attribute (S) of table {t!r}."),
    (
        [*PUT, "--item", '{"pk": 5}'],
        None,
        1,
        "Key attribute 'pk' of table {t!r} is a string (S); the item gives a number (N): 5.",
    ),
    (
        [*PUT, "--item", '{"pk": "a", "id": 3}'],
        None,
        1,
        "The item already has the id attribute 'id'; the sequence sets it. Leave it out.",
    ),
    (
        [*PUT, "--item", '[{"pk": "a"}, {"pk": "a"}]'],
        None,
        1,
        "Items 1 and 2 of put_many have the same key {'pk': 'a'} in table {t!r}: one "
        "transaction cannot write an item twice. Nothing was written.",
    ),
    (
        [*PUT, "--item", '{"pk": "User#1"}'],
        None,
        1,
        "An item with the key {'pk': 'User#1'} already exists in table {t!r}; it was not "
        "written and used up no id.",
    ),
    (
        [*PUT, "--item", json.dumps({"pk": "big", "x": "x" * 410_000})],
        None,
        1,
        "An item is too large for table {t!r}: DynamoDB items are at most 400 KB, attribute "
        "names and values included; nothing was written (Item size has exceeded the maximum "
        "allowed size).",
    ),
    (
        [*PUT, "--counter-key", '{"pk": "sequence", "sk": 1}', "--item", '{"pk": "b"}'],
        None,
        1,
        "counter_key= (--counter-key) names 'sk', which is not a key attribute of table {t!r}; "
        "its key is (pk).",
    ),
    (
        [*PUT, "--counter-table", "no-such-table", "--item", '{"pk": "b"}'],
        None,
        1,
        "Table 'no-such-table' not found: check the name, the region and the endpoint (Cannot "
        "do operations on a non-existent table).",
    ),
    (
        ["put", "-t", "{t}", "-s", "collection", "-k", "p", "--item", "{}"],
        None,
        1,
        "Table {t!r} needs a number (N) or string (S) sort key to keep a sequence per item "
        "collection; its key is (pk).",
    ),
]


@pytest.mark.parametrize(
    ("args", "stdin", "code", "message"),
    BAD_PUTS,
    ids=[f"{n}-{' '.join(case[0][5:7])[:30]}" for n, case in enumerate(BAD_PUTS)],
)
def test_bad_put_is_one_line_and_writes_nothing(
    ids: Run,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    args: list[str],
    stdin: str | bytes | None,
    code: int,
    message: str,
) -> None:
    table = seeded(ddb_client, ddb_table_factory)
    before = scan(ddb_client, table)
    (tmp_path / "item.json").write_text("{}")
    argv = [{"{t}": table, "{file}": str(tmp_path / "item.json")}.get(a, a) for a in args]
    result = ids(*argv, input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, result.output
    assert last_line(result) == "Error: " + fill(message, table)
    assert not result.stdout  # errors go to stderr only
    assert scan(ddb_client, table) == before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"pk": "\xff"}', "not UTF-8 text (byte 0xff at position 8)"),
        (b"\xef\xbb\xbf\xc3", "not UTF-8 text (byte 0xc3 at position 3)"),
        (
            b'{"pk": NaN}',
            "not valid JSON (NaN is not a JSON number, and DynamoDB has no NaN or Infinity)",
        ),
        (None, "File '{path}' does not exist."),
        ("dir", "File '{path}' is a directory."),
    ],
)
def test_bad_item_file(
    ids: Run,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    content: bytes | str | None,
    message: str,
) -> None:
    table = seeded(ddb_client, ddb_table_factory)
    before = scan(ddb_client, table)
    path = tmp_path / "item.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "dir":
        path.mkdir()
    result = ids("put", "-t", table, "-s", "gapless", "--item-file", str(path))
    assert result.exit_code == 2
    hint = "'--item-file'" if content is None or content == "dir" else "--item-file"
    assert last_line(result) == f"Error: Invalid value for {hint}: " + message.format(path=path)
    assert scan(ddb_client, table) == before


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
        "made from a name alone: pass counter_key= with the whole key of the counter item "
        "(--counter-key JSON on the CLI).",
    ),
    (
        ["next", "-t", "{t}", "--counter-key", '{"pk": "odd", "sk": 0}'],
        1,
        "The counter item "
        "{'pk': 'odd', 'sk': 0} of table {t!r} holds last_id = 5.5 (not a whole number): a "
        "counter holds a whole number from 0 to 10**38 - 1. Nothing was changed; fix the item, for "
        "example with `ddbkeys ids set VALUE --force`.",
    ),
    (
        ["current", "-t", "{t}", "--counter-key", '{"pk": "text", "sk": 0}'],
        1,
        "The counter item "
        "{'pk': 'text', 'sk': 0} of table {t!r} holds last_id = '41' (a string (S), not a "
        "number): a counter holds a whole number from 0 to 10**38 - 1. Nothing was changed; fix "
        "the item, for example with `ddbkeys ids set VALUE --force`.",
    ),
    (
        ["set", "3", "-t", "{t}", "--counter-key", '{"pk": {"S": "counter"}, "sk": {"N": "0"}}'],
        1,
        "Refusing to move counter 'counter' of table {t!r} backwards from 7 to 3: ids after 3 were "
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
    assert scan(ddb_client, table) == before


def typed_item(client: DynamoDBClient, table: str, pk: str) -> dict[str, Any]:
    item = client.get_item(TableName=table, Key={"pk": {"S": pk}}, ConsistentRead=True)["Item"]
    return dict(item)


def test_dynamodb_json_round_trips(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    blob, other = b"\x00\xffbinary", b"\x01"
    b64 = base64.b64encode(blob).decode()
    item = {
        "pk": {"S": "p1"},
        "pic": {"B": b64},
        "pics": {"BS": [b64, base64.b64encode(other).decode()]},
        "price": {"N": "12.50"},
        "big": {"N": "9.9999999999999999999999999999999999999E+125"},
        "tags": {"SS": ["a", "b"]},
        "m": {"M": {"b": {"B": b64}, "l": {"L": [{"N": "1"}, {"NULL": True}, {"BOOL": False}]}}},
    }
    result = ids("put", "-t", table, "-s", "gapless", "--item", json.dumps(item))
    assert (result.exit_code, result.stdout) == (0, "1\n"), result.output
    back = typed_item(ddb_client, table, "p1")
    assert back["pic"] == {"B": blob}
    assert sorted(back["pics"]["BS"]) == sorted([blob, other])
    assert back["price"] == {"N": "12.5"}
    assert back["big"]["N"] == "99999999999999999999999999999999999999" + "0" * 88
    assert sorted(back["tags"]["SS"]) == ["a", "b"]
    assert back["m"] == {
        "M": {"b": {"B": blob}, "l": {"L": [{"N": "1"}, {"NULL": True}, {"BOOL": False}]}}
    }
    assert back["id"] == {"N": "1"}


@pytest.mark.parametrize("item_format", [None, "dynamodb"])
def test_pynamodb_serialize_output_is_accepted(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, item_format: str | None
) -> None:
    table = ddb_table_factory()
    # What PynamoDB's Model.serialize() returns, written by hand.
    item = {"pk": {"S": "User#Uhura"}, "name": {"S": "x"}, "tags": {"SS": ["a"]}}
    fmt = ["--item-format", item_format] if item_format else []
    result = ids("put", "-t", table, "-s", "gapless", *fmt, "--item", json.dumps(item))
    assert (result.exit_code, result.output) == (0, "1\n")
    back = typed_item(ddb_client, table, "User#Uhura")
    assert back == {**item, "id": {"N": "1"}}


def test_plain_format_stores_look_alikes_as_maps(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    item = '{"pk": "a", "unit": {"S": "small"}}'
    result = ids("put", "-t", table, "-s", "gapless", "--item-format", "plain", "--item", item)
    assert result.exit_code == 0, result.output
    assert typed_item(ddb_client, table, "a")["unit"] == {"M": {"S": {"S": "small"}}}
    bom = "\ufeff" + json.dumps({"pk": "b", "n": 10**40, "d": 0.1, "none": None, "t": True})
    assert ids("put", "-t", table, "-s", "gapless", input=bom.encode()).output == "2\n"
    back = typed_item(ddb_client, table, "b")
    assert back["n"] == {"N": "1" + "0" * 40} and back["d"] == {"N": "0.1"}
    assert back["none"] == {"NULL": True} and back["t"] == {"BOOL": True}


def test_counter_key(ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    plain = ["--counter-key", '{"pk": "counters", "sk": 0}']
    typed = ["--counter-key", '{"pk": {"S": "counters"}, "sk": {"N": "0"}}']
    assert ids("next", "-t", table, *plain).output == "1\n"
    assert ids("next", "-t", table, *typed, "--count", "2").output == "2\n3\n"
    assert ids("current", "-t", table, *typed).output == "3\n"
    result = ids("set", "10", "-t", table, *plain, "--output", "json")
    assert json.loads(result.output) == {
        "table": table,
        "counter_key": {"pk": "counters", "sk": "0"},
        "current": 10,
    }
    assert ids("next", "-t", table, *plain).output == "11\n"
    assert scan(ddb_client, table) == [
        {"pk": {"S": "counters"}, "sk": {"N": "0"}, "last_id": {"N": "11"}}
    ]


def test_gapless_counter_elsewhere_and_padded_ids(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    users, counters = ddb_table_factory(), ddb_table_factory(("pk", "N"))
    where = ["--counter-table", counters, "--counter-key", '{"pk": 7}']
    put = ["put", "-t", users, "-s", "gapless", *where]
    assert ids(*put, "--item", '{"pk": "User#Kirk"}').output == "1\n"
    assert ids(*put, input='[{"pk": "a"}, {"pk": "b"}]').output == "2\n3\n"
    assert [i["pk"]["S"] for i in scan(ddb_client, users)] == ["User#Kirk", "a", "b"]  # no counter
    assert ids("current", "-t", counters, "--counter-key", '{"pk": 7}').output == "3\n"

    orders = ddb_table_factory()
    padded = ["put", "-t", orders, "-s", "gapless", "--id-attribute", "pk"]
    assert ids(*padded, "--prefix", "order#", "--width", "6", "--item", "{}").output == "1\n"
    assert {"pk": {"S": "order#000001"}} in scan(ddb_client, orders)


def test_collection_never_reuse(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for flag in ([], ["--never-reuse"]):
        put = ["put", "-t", table, "-s", "collection", "-k", f"p{len(flag)}", *flag]
        assert ids(*put, "--item", "[{}, {}]").output == "1\n2\n"
        key = {"pk": {"S": f"p{len(flag)}"}, "sk": {"N": "2"}}
        ddb_client.delete_item(TableName=table, Key=key)
        assert ids(*put, "--item", "{}").output == ("3\n" if flag else "2\n")


@pytest.mark.parametrize("output", ["text", "json"])
def test_collection_array_is_checked_before_any_item_is_written(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, output: str
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    put = ["put", "-t", table, "-s", "collection", "-k", "p", "--output", output]
    for items, reason in (
        ([{}, {"sk": 5}], "Item 2 of 2: The item must not hold 'sk': the sequence sets it."),
        (
            [{}, {}, {"pk": "q"}, {}],
            "Item 3 of 4: The item must not hold 'pk': the sequence sets it.",
        ),
    ):
        result = ids(*put, "--item", json.dumps(items))
        assert result.exit_code == 1
        error = reason + " Nothing was written."
        if output == "text":
            assert result.stdout == ""
        else:
            assert json.loads(result.stdout) == {"table": table, "ids": [], "error": error}
        assert result.stderr.splitlines() == [f"Error: {error}"]
        assert scan(ddb_client, table) == []


@pytest.mark.parametrize("output", ["text", "json"])
def test_collection_array_that_fails_midway(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, output: str
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    items = [{"n": 1}, {"n": 2}, {"big": "x" * 410_000}, {"n": 4}]
    put = ["put", "-t", table, "-s", "collection", "-k", "p", "--output", output]
    result = ids(*put, "--item", json.dumps(items))
    assert result.exit_code == 1
    error = (
        "Item 3 of 4 was not written (items 1 to 2 were written; item 4 was not tried): An "
        f"item is too large for table {table!r}: DynamoDB items are at most 400 KB, attribute "
        "names and values included; nothing was written (Item size has exceeded the maximum "
        "allowed size)."
    )
    if output == "text":
        assert result.stdout == "1\n2\n"
    else:
        assert json.loads(result.stdout) == {"table": table, "ids": [1, 2], "error": error}
    assert result.stderr.splitlines() == [f"Error: {error}"]
    assert sorted(i["sk"]["N"] for i in scan(ddb_client, table)) == ["1", "2"]
