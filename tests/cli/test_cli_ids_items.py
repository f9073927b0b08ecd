"""What ``ddbkeys ids`` stores from the items it is given: DynamoDB JSON round trips, what
PynamoDB's serialize() writes, look-alikes in plain JSON, counter keys, padded ids elsewhere,
and arrays of items for a collection (checked whole before any is written)."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys.testing._tables import TableFactory
from tests.cli.conftest import Run, scan

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


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
    first = ids("next", "-t", table, *plain)
    assert first.stdout == "1\n" and "is --counter-key right?" in first.stderr
    assert ids("next", "-t", table, *typed, "--count", "2").output == "2\n3\n"
    assert ids("current", "-t", table, *typed).output == "3\n"
    result = ids("set", "10", "-t", table, *plain, "--output", "json")
    assert json.loads(result.output) == {
        "table": table,
        "counter_key": {"pk": "counters", "sk": 0},
        "current": 10,
    }
    # The key printed is one --counter-key reads back (helper-77 F3: "sk": "0" was read as a
    # string, and refused: the table's sort key is a number).
    printed = json.dumps(json.loads(result.output)["counter_key"])
    assert ids("next", "-t", table, "--counter-key", printed).output == "11\n"
    assert scan(ddb_client, table) == [
        {
            "pk": {"S": "counters"},
            "sk": {"N": "0"},
            "last_id": {"N": "11"},
            "ddbkeys_type": {"S": "counter"},
        }
    ]
    # A fraction: the whole key in DynamoDB JSON ("1.5" was read back as a string, and plain
    # mixed with DynamoDB JSON is refused: helper-79 F3).
    half = ids("next", "-t", table, "--counter-key", '{"pk": "c", "sk": 1.5}', "--output", "json")
    key = json.loads(half.stdout)["counter_key"]
    assert key == {"pk": {"S": "c"}, "sk": {"N": "1.5"}}, half.output
    assert ids("next", "-t", table, "--counter-key", json.dumps(key)).output == "2\n"


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
    for items, said in (
        ([{}, {"sk": 5}], "Item 2 of 2: The item must not hold 'sk': the sequence sets it"),
        (
            [{}, {}, {"pk": "q"}, {}],
            "Item 3 of 4: The item must not hold 'pk': the sequence sets it",
        ),
    ):
        result = ids(*put, "--item", json.dumps(items))
        assert result.exit_code == 1
        error = said + f" (table {table!r}). Nothing was written."
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
        "names and values included (Item size has exceeded the maximum allowed size)."
    )  # (not "; nothing was written", beside "items 1 to 2 were written": helper-77 F5)
    if output == "text":
        assert result.stdout == "1\n2\n"
    else:
        assert json.loads(result.stdout) == {"table": table, "ids": [1, 2], "error": error}
    assert result.stderr.splitlines() == [f"Error: {error}"]
    assert sorted(i["sk"]["N"] for i in scan(ddb_client, table)) == ["1", "2"]


def test_ctrl_c_in_an_array_s_put_says_what_was_written(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    """helper-89 F9: Ctrl-C during `ids put -s collection` of an array printed none of the ids
    written, nor how many, and the natural rerun wrote those items again under new numbers.
    Now the ids written are printed (stdout) and stderr says where it stopped and what to do."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    items = tmp_path / "many.json"
    items.write_text(json.dumps([{"n": i} for i in range(2000)]))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ddbkeys",
            "ids",
            "put",
            "-t",
            table,
            "-s",
            "collection",
            "-k",
            "sig",
            "--item-file",
            str(items),
            "--endpoint-url",
            ddb_endpoint_url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # (until some are written: the put runs)
        found = ddb_client.query(
            TableName=table,
            KeyConditionExpression="pk = :k",
            ExpressionAttributeValues={":k": {"S": "sig"}},
            Select="COUNT",
        )
        if found["Count"] >= 20:
            break
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, err = (b.decode() for b in process.communicate(timeout=60))
    assert process.returncode == 130, err
    printed = [int(line) for line in out.split()]
    numbers = sorted(
        int(i["sk"]["N"])
        for i in ddb_client.query(
            TableName=table,
            KeyConditionExpression="pk = :k",
            ExpressionAttributeValues={":k": {"S": "sig"}},
            ConsistentRead=True,
        )["Items"]
    )
    assert printed == list(range(1, len(printed) + 1)) and len(printed) >= 20
    # The item in flight was looked at: printed where it was written (helper-91 F2: "may be
    # written" of an item that was), or said not to be (its request may yet be applied).
    assert numbers in (printed, [*printed, len(printed) + 1]), (numbers[-3:], printed[-3:])
    done = len(printed)
    assert re.search(rf"Interrupted at item \d+ of 2000 \(items 1 to {done} were written", err)
    assert f"go on with the rest, not the whole array again, e.g. `jq '.[{done}:]' " in err, err
    assert f"| ddbkeys ids put -t {table} -s collection -k sig`" in err
