"""An item given in the shape ``aws dynamodb get-item`` prints (``{"Item": {<DynamoDB JSON>}}``):
the CLI writes the item it holds (with --item, --item-file or stdin, --item-format auto or
dynamodb) and refuses it with --item-format plain; the library refuses a GetItem answer given as
an item. Before, the wrapper was stored as one map attribute ``Item`` (exit 0). Each case reads
the table back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys import GaplessSequence
from ddbkeys._errors import DdbKeysError
from ddbkeys.testing._tables import TableFactory
from tests.cli.conftest import Run, last_line, ordered, scan, seeded

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

#: What ``aws dynamodb get-item --return-consumed-capacity TOTAL`` prints (binary in base64).
ITEM = {"pk": {"S": "User#9"}, "pic": {"B": "AAE="}, "n": {"N": "1.50"}, "Item": {"S": "x"}}
ANSWER = {"Item": ITEM, "ConsumedCapacity": {"TableName": "t", "CapacityUnits": 0.5}}
#: The item as the table holds it once written with the sequence's next id (the seeded
#: sequence is at 5).
STORED = {**ITEM, "pic": {"B": b"\x00\x01"}, "n": {"N": "1.5"}, "id": {"N": "6"}}


@pytest.mark.parametrize("source", ["--item", "--item-file", "stdin"])
@pytest.mark.parametrize("item_format", [None, "auto", "dynamodb"])
def test_get_item_output_is_read_as_the_item_it_holds(
    ids: Run,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    source: str,
    item_format: str | None,
) -> None:
    table = seeded(ddb_client, ddb_table_factory)
    before = scan(ddb_client, table)
    text = json.dumps(ANSWER, indent=4)  # (as the AWS CLI prints it)
    (tmp_path / "item.json").write_text(text)
    given = {
        "--item": ["--item", text],
        "--item-file": ["--item-file", str(tmp_path / "item.json")],
    }
    args = ["put", "-t", table, "-s", "gapless", *given.get(source, [])]
    args += ["--item-format", item_format] if item_format else []
    result = ids(*args, input=text if source == "stdin" else None)
    assert (result.exit_code, result.output) == (0, "6\n")
    written = [i for i in scan(ddb_client, table) if i not in before]
    sequence = {"pk": {"S": "sequence"}, "last_id": {"N": "6"}}
    assert ordered(written) == ordered([STORED, {**sequence, "ddbkeys_type": {"S": "counter"}}])


def test_get_item_output_with_item_format_plain_is_refused_and_writes_nothing(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = seeded(ddb_client, ddb_table_factory)
    before = scan(ddb_client, table)
    for text in (json.dumps(ANSWER), json.dumps([{"pk": {"S": "a"}}, {"Item": ITEM}])):
        args = ["put", "-t", table, "-s", "gapless", "--item-format", "plain", "--item", text]
        result = ids(*args)
        assert result.exit_code == 2
        where = "item 2 of 2: " if text.startswith("[") else ""
        assert last_line(result) == (
            f"Error: Invalid value for --item: {where}this is the AWS CLI's get-item output "
            '({"Item": {...}}), which --item-format plain would store as one attribute '
            "'Item': leave --item-format out (or pass dynamodb) to write the item it holds"
        )
        assert scan(ddb_client, table) == before


def test_an_item_with_a_map_attribute_named_item_is_still_an_item(
    ids: Run, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # {"Item": {"M": ...}} is DynamoDB JSON of an item whose attribute Item is a map, and a
    # plain {"Item": {"a": 1}} an item whose Item is a map too: neither is an answer.
    table = seeded(ddb_client, ddb_table_factory)
    typed = {"pk": {"S": "a"}, "Item": {"M": {"a": {"N": "1"}}}}
    assert ids("put", "-t", table, "-s", "gapless", "--item", json.dumps(typed)).exit_code == 0
    plain = {"pk": "b", "Item": {"a": 1}}
    assert ids("put", "-t", table, "-s", "gapless", "--item", json.dumps(plain)).exit_code == 0
    items = {i["pk"]["S"]: i for i in scan(ddb_client, table)}
    assert items["a"]["Item"] == items["b"]["Item"] == {"M": {"a": {"N": "1"}}}


@pytest.mark.parametrize("typed", [True, False])
def test_the_library_refuses_a_get_item_answer_given_as_an_item(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, typed: bool
) -> None:
    table = seeded(ddb_client, ddb_table_factory)
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "from"}, "name": {"S": "Kirk"}})
    answer: Any = ddb_client.get_item(TableName=table, Key={"pk": {"S": "from"}})
    answer["Item"]["pk"] = {"S": "User#2"}  # (boto3's answer: with its ResponseMetadata)
    before = scan(ddb_client, table)
    sequence = GaplessSequence(ddb_client, table, "sequence")
    with pytest.raises(DdbKeysError) as raised:
        sequence.put(answer, typed=typed)
    assert str(raised.value) == (
        f"The item given for table {table!r} is a GetItem answer ({{'Item': {{...}}}}), not an "
        "item: pass its Item (answer['Item']) with typed=True; as it is, it would be stored as "
        "one attribute 'Item'."
    )
    assert scan(ddb_client, table) == before  # nothing written, the counter not moved
    assert sequence.put(answer["Item"], typed=True) == 6
