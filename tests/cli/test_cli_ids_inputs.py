"""What ``ddbkeys ids`` makes of every input: plain and DynamoDB JSON items from --item, a file
or stdin, counter keys, and bad input of every kind, each refused as one line with nothing
written or moved (checked by scanning the table)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ddbkeys.testing._tables import TableFactory
from tests.cli.conftest import BASE64, Run, fill, last_line, scan, seeded

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

RANGE = "it is out of DynamoDB's range (1E-130 to 9.99E+125 in magnitude, or 0)."
NOT_AV = (
    "which is not a DynamoDB AttributeValue: a mapping with one of S, N, B, SS, NS, BS, M, L, "
    "NULL, BOOL, like {'S': 'text'}."
)
DEEP = "{" + '"a": {' * 40 + '"a": 1' + "}" * 41
PUT = ["put", "-t", "{t}", "-s", "gapless"]


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
        f"Invalid value for --item: Attribute 'n' holds the number {'9' * 40}... (5000 digits "
        "in all): it has 5000 significant digits; DynamoDB keeps at most 38.",
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
        "No item on standard input (it was empty): give the item with --item JSON, "
        "--item-file FILE or as JSON on stdin.",
    ),
    (
        PUT,
        " \n",
        2,
        "No item on standard input (it was empty): give the item with --item JSON, "
        "--item-file FILE or as JSON on stdin.",
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
        # (--item-format is --item's: a key is told how to write it)
        "Invalid value for --counter-key: the key mixes DynamoDB JSON (attribute 'pk') with "
        'plain values (attribute \'x\'): write each value in DynamoDB JSON, like {"pk": {"B": '
        '"AAE="}, "sk": {"N": "1"}}, or each plain, like {"pk": "ctr", "sk": 1} (a binary '
        "value only as DynamoDB JSON).",
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
        "The item already has the id attribute 'id'; the sequence of table {t!r} sets it. "
        "Leave it out.",
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
