"""Markers are known by their key and their attribute: a data item at the marker's sort key is
never taken for a marker, never overwritten or removed, and every command says so (exit 1). Default
markers read back through boto3's resource layer. Exit codes tell the truth."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest
from boto3.dynamodb.types import Binary, TypeDeserializer
from click.testing import CliRunner, Result

from ddbkeys._cli import cli
from ddbkeys._errors import ConfigurationError
from ddbkeys.partition_keys import (
    IndexUnprovenError,
    MarkerClashError,
    MarkerIndex,
    distinct_partition_keys,
)
from ddbkeys.partition_keys._index.index import DEFAULT_MARKER_SORT_KEY
from ddbkeys.testing._tables import TableFactory
from tests.support.resources import resource

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

#: A data value per sort key type, besides the marker's.
DATA: dict[str, dict[str, Any]] = {"S": {"S": "data"}, "N": {"N": "1"}, "B": {"B": b"data"}}


def run(endpoint: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["partition-keys", *args, "--endpoint-url", endpoint])


def clashing_table(
    client: DynamoDBClient, factory: TableFactory, sk_type: str
) -> tuple[str, dict[str, Any]]:
    """Collections a, b, c; a holds a data item at the default marker's sort key."""
    table = factory(("pk", "S"), ("sk", sk_type))
    for pk in ("a", "b", "c"):
        client.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": DATA[sk_type]})
    squatter = {"pk": {"S": "a"}, "sk": DEFAULT_MARKER_SORT_KEY[sk_type], "note": {"S": "mine"}}
    client.put_item(TableName=table, Item=squatter)
    return table, squatter


@pytest.mark.parametrize("sk_type", ["S", "N", "B"])
def test_a_data_item_at_the_markers_key_is_a_clash_everywhere(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, sk_type: str
) -> None:
    table, squatter = clashing_table(ddb_client, ddb_table_factory, sk_type)
    index = MarkerIndex(ddb_client, table)
    index.create()
    report = index.backfill()
    assert (report.written, report.present, report.clashes) == (2, 0, [{"S": "a"}])
    with pytest.raises(MarkerClashError) as raised:
        index.mark("a")
    assert raised.value.key == {"S": "a"}
    assert str(raised.value).startswith(
        f"Collection 'a' of table {table!r} cannot be marked: its item at the marker's sort key "
        "(sk = "
    )
    assert index.unmark("a") is False  # data is never removed as a marker
    key = {"pk": squatter["pk"], "sk": squatter["sk"]}
    assert ddb_client.get_item(TableName=table, Key=key)["Item"] == squatter
    verify = index.verify()
    assert (verify.missing, verify.orphans, verify.clashes) == ([], [], [{"S": "a"}])
    assert not verify.healthy
    repaired = index.repair()
    assert repaired.unfixed == [{"S": "a"}] and not repaired.repaired
    assert ddb_client.get_item(TableName=table, Key=key)["Item"] == squatter
    # The index lists b and c, not a: nothing proves it, and read as it is it misses a.
    with pytest.raises(IndexUnprovenError):
        distinct_partition_keys(ddb_client, table, "index")
    as_is = distinct_partition_keys(ddb_client, table, "index", trust_index=True)
    assert sorted(as_is) == ["b", "c"] and as_is.index_trusted is False
    # A marker sort key of its own mends it.
    data_value = {"S": "data", "N": 1, "B": b"data"}[sk_type]
    other = MarkerIndex(ddb_client, table, marker_sort_key=data_value)
    with pytest.raises(MarkerClashError):
        other.mark("b")  # b's data item is not a marker either
    mended = MarkerIndex(ddb_client, table, marker_sort_key=_another(sk_type))
    assert mended.mark("a") is True


def _another(sk_type: str) -> Any:
    return {"S": "~ddbkeys~", "N": Decimal(-5), "B": b"\x00\x00"}[sk_type]


def test_the_cli_names_what_it_could_not_mark_and_exits_1(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table, squatter = clashing_table(ddb_client, ddb_table_factory, "N")
    assert run(ddb_endpoint_url, "index", "create", "-t", table).exit_code == 0
    clash = (
        f"Error: 1 collection(s) of table {table!r} cannot be marked: a. Each holds a data item "
        "at the marker's sort key (its 'ddbkeys_pk' is not its own partition key), left as it "
        "is; give the markers another sort key value (--marker-sort-key).\n"
    )
    backfill = run(ddb_endpoint_url, "index", "backfill", "-t", table)
    stream_off = (  # (the table has no stream: no listing can prove the index, said first)
        f"Note: the stream of table {table!r} is off, so no listing can prove this backfill's "
        f"markers: turn it on (`ddbkeys partition-keys index stream -t {table}`), start "
        f"`ddbkeys partition-keys index follow -t {table}` (or the Lambda handler), then run "
        f"`ddbkeys partition-keys index backfill -t {table}`.\n"
    )
    assert (backfill.exit_code, backfill.stdout, backfill.stderr) == (
        1,
        "2 marker(s) written, 0 already there\n",
        stream_off + clash,
    )
    mark = run(ddb_endpoint_url, "index", "mark", "-t", table, "a", "b")
    assert (mark.exit_code, mark.stdout, mark.stderr) == (
        1,
        "0 marker(s) written, 1 already there\n",
        clash,
    )
    as_json = run(ddb_endpoint_url, "index", "mark", "-t", table, "a", "--output", "json")
    assert json.loads(as_json.stdout) == {
        "table": table,
        "written": 0,
        "already": 0,
        "clashes": ["a"],
    }
    verify = run(ddb_endpoint_url, "index", "verify", "-t", table)
    assert verify.exit_code == 1
    assert verify.stdout.splitlines() == [
        "3 collections, 2 markers",
        "missing markers: 0",
        "orphaned markers: 0",
        "collections that cannot be marked (data at the marker's key): 1: a",
        # (not `index repair`, which cannot move data: a helper found that advice)
        "NOT HEALTHY: move the data at the marker's key, or give the markers another sort key "
        "(--marker-sort-key) from `index create` on",
    ]
    repair = run(ddb_endpoint_url, "index", "repair", "-t", table)
    assert repair.exit_code == 1
    assert repair.stdout.splitlines()[-3:] == [
        "markers written: 0",
        "orphaned markers removed: 0",
        "NOT REPAIRED: 1: a left as they are",
    ]
    key = {"pk": squatter["pk"], "sk": squatter["sk"]}
    assert ddb_client.get_item(TableName=table, Key=key)["Item"] == squatter


def test_a_binary_table_is_told_of_its_marker_value_and_long_keys_are_cut(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A helper's natural binary data (sort keys 0x00, 0x01, ... and 1 KB partition keys):
    every collection clashed, which it learnt only after the whole setup, and the backfill's
    and verify's lines ran to several KB of whole keys."""
    table = ddb_table_factory(("pk", "B"), ("sk", "B"))
    keys = [bytes([n]) * 1024 for n in (1, 2)]
    for pk in keys:
        for n in (0, 1):
            ddb_client.put_item(TableName=table, Item={"pk": {"B": pk}, "sk": {"B": bytes([n])}})
    create = run(ddb_endpoint_url, "index", "create", "-t", table)
    assert create.exit_code == 0, create.output
    assert (
        f"Note: markers take the sort key 0x00 (one zero byte) of each collection of {table}; "
        in create.stderr
    )
    given = run(ddb_endpoint_url, "index", "create", "-t", table, "--marker-sort-key", "AQE=")
    assert given.exit_code == 0 and "0x00" not in given.output
    backfill = run(ddb_endpoint_url, "index", "backfill", "-t", table)
    assert backfill.exit_code == 1
    error = backfill.stderr.splitlines()[-1]
    assert "2 collection(s) of table" in error and len(error) < 600, error
    verify = run(ddb_endpoint_url, "index", "verify", "-t", table)
    assert verify.exit_code == 1 and max(map(len, verify.stdout.splitlines())) < 200


def test_repair_keeping_orphans_says_so(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    for pk in ("a", "b"):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"S": "x"}})
    index = MarkerIndex(ddb_client, table)
    index.create()
    assert index.backfill().written == 2
    ddb_client.delete_item(TableName=table, Key={"pk": {"S": "b"}, "sk": {"S": "x"}})
    kept = run(ddb_endpoint_url, "index", "repair", "-t", table, "--keep-orphans")
    assert kept.exit_code == 1
    assert kept.stdout.splitlines()[-1] == "NOT REPAIRED: 1: b left as they are"
    fixed = run(ddb_endpoint_url, "index", "repair", "-t", table)
    assert fixed.exit_code == 0
    assert fixed.stdout.splitlines()[-2:] == ["orphaned markers removed: 1: b", "REPAIRED"]
    assert run(ddb_endpoint_url, "index", "verify", "-t", table).exit_code == 0


def test_unmark_without_the_index_is_an_error(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    result = run(ddb_endpoint_url, "index", "unmark", "-t", table, "a")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(
        f"Error: Table {table!r} has no index 'ddbkeys-partition-keys'. Create it with"
    )
    with pytest.raises(ConfigurationError, match="has no index"):
        MarkerIndex(resource(ddb_endpoint_url).Table(table)).unmark("a")


@pytest.mark.parametrize("sk_type", ["S", "N", "B"])
def test_default_markers_read_back_through_boto3s_resource_layer(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, sk_type: str
) -> None:
    """The published sample lister, and every boto3 resource user, reads marked collections
    (the old numeric marker, -9.99...E+125, raised decimal.Rounded there)."""
    table = ddb_table_factory(("pk", "S"), ("sk", sk_type))
    for pk in ("a", "b"):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": DATA[sk_type]})
    index = MarkerIndex(ddb_client, table)
    index.create()
    assert index.backfill().written == 2
    boto3_table = resource(ddb_endpoint_url).Table(table)
    scanned = boto3_table.scan()["Items"]
    markers = [item for item in scanned if "ddbkeys_pk" in item]
    assert sorted(m["ddbkeys_pk"] for m in markers) == ["a", "b"]
    marker_value: Any = DEFAULT_MARKER_SORT_KEY[sk_type]
    expected = TypeDeserializer().deserialize(marker_value)
    assert all(m["sk"] == expected for m in markers)
    if sk_type == "N":
        assert expected == Decimal("-99999999999999999999999999999999999999")
    if sk_type == "B":
        assert expected == Binary(b"\x00")
    queried = boto3_table.query(
        KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": "a"}
    )["Items"]
    assert len(queried) == 2
    # ...and through ddbkeys' own listings, from the same resource.
    as_is = distinct_partition_keys(boto3_table, method="index", trust_index=True)
    assert sorted(as_is) == ["a", "b"]
    assert sorted(distinct_partition_keys(boto3_table, method="skip")) == ["a", "b"]
