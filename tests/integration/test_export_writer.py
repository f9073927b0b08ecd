"""``ddbkeys.testing.write_export`` against DynamoDB Local: checked against AWS's documented
export (tests/support/exports.py, transcribed from AWS's "DynamoDB table export output format"
page) so that the writer and the reader cannot agree on a wrong format, then round trips:
a table → ``write_export`` → ``distinct_partition_keys(from_export=...)`` lists what a scan of
the same table lists, for both formats, string, 38-digit number and binary keys, markers and
counter items."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest
from amazon.ion import simpleion
from amazon.ion.core import IonType

from ddbkeys import ConfigurationError, ExportError, TableNotFoundError
from ddbkeys.partition_keys import ExportListing, distinct_partition_keys
from ddbkeys.testing import TableFactory, write_export
from ddbkeys.testing._export import export_time_text
from tests.support.exports import (
    BIG,
    DOC_FILES_LINE,
    DOC_ION_ITEM,
    DOC_JSON_ITEM,
    DOC_SUMMARY,
)
from tests.support.resources import resource

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Fmt = Literal["DYNAMODB_JSON", "ION"]
FORMATS: list[Fmt] = ["DYNAMODB_JSON", "ION"]
MARKER_SK = {"S": {"S": "#ddbkeys#marker"}, "N": {"N": "-" + "9" * 38}, "B": {"B": b"\x00"}}


def files_of(folder: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    root = Path(folder)
    summary = json.loads((root / "manifest-summary.json").read_text())
    lines = (root / "manifest-files.json").read_text().splitlines()
    return summary, [json.loads(line) for line in lines]


def data_lines(bucket: Path, entry: dict[str, Any]) -> list[str]:
    return gzip.decompress((bucket / entry["dataFileS3Key"]).read_bytes()).decode().splitlines()


def ion_shape(value: Any) -> Any:
    """A loaded Ion value as (type, annotations, value) all the way down, decimals by value."""
    notes = tuple(a.text for a in getattr(value, "ion_annotations", ()))
    kind = value.ion_type
    if kind is IonType.STRUCT:
        return (kind, notes, {k: ion_shape(v) for k, v in value.items()})
    if kind is IonType.LIST:
        return (kind, notes, [ion_shape(v) for v in value])
    if kind is IonType.DECIMAL:
        return (kind, notes, Decimal(value))
    if kind is IonType.NULL:
        return (kind, notes, None)
    return (kind, notes, value)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_documented_product_catalog_item(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, tmp_path: Path, fmt: Fmt
) -> None:
    table = ddb_table_factory(("Id", "N"))
    item = json.loads(DOC_JSON_ITEM)["Item"]
    if fmt == "ION":  # (the page's Ion item has PageCount 6d2 and Price 2d3)
        item.update(PageCount={"N": "600"}, Price={"N": "2000"})
    ddb_client.put_item(TableName=table, Item=item)
    before = datetime.now(UTC)
    folder = write_export(ddb_client, table, tmp_path / "bucket", export_format=fmt)
    after = datetime.now(UTC)

    summary, entries = files_of(folder)
    assert set(summary) == set(DOC_SUMMARY) | {"exportType"}
    assert {k: type(v) for k, v in summary.items() if k != "exportType"} == {
        k: type(v) for k, v in DOC_SUMMARY.items()
    }
    arn = ddb_client.describe_table(TableName=table)["Table"]["TableArn"]
    export_id = Path(folder).name
    assert re.fullmatch(r"\d{14}-[0-9a-f]{8}", export_id)
    assert summary["tableArn"] == arn and summary["exportArn"] == f"{arn}/export/{export_id}"
    key = f"exports/AWSDynamoDB/{export_id}/"
    assert summary["manifestFilesS3Key"] == key + "manifest-files.json"
    assert (summary["s3Bucket"], summary["s3Prefix"]) == ("bucket", "exports")
    assert (summary["outputFormat"], summary["exportType"], summary["itemCount"]) == (
        fmt,
        "FULL_EXPORT",
        1,
    )
    time = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
    for name in ("startTime", "endTime", "exportTime"):
        assert time.fullmatch(summary[name]), name
    exported = datetime.fromisoformat(summary["exportTime"].replace("Z", "+00:00"))
    assert before - timedelta(milliseconds=1) < exported <= after
    assert (Path(folder) / "_started").read_bytes() == b""

    (entry,) = entries
    assert set(entry) == set(DOC_FILES_LINE)
    ext = "json" if fmt == "DYNAMODB_JSON" else "ion"
    assert re.fullmatch(re.escape(key) + rf"data/[a-z0-9]+\.{ext}\.gz", entry["dataFileS3Key"])
    body = (tmp_path / "bucket" / entry["dataFileS3Key"]).read_bytes()
    assert entry["md5Checksum"] == base64.b64encode(hashlib.md5(body).digest()).decode()
    assert re.fullmatch(r"[0-9a-f]{32}-1", entry["etag"]) and entry["itemCount"] == 1

    (line,) = data_lines(tmp_path / "bucket", entry)
    if fmt == "DYNAMODB_JSON":
        assert json.loads(line) == json.loads(DOC_JSON_ITEM)
    else:
        assert line.startswith("$ion_1_0 {Item:{")
        written, documented = simpleion.loads(line), simpleion.loads(DOC_ION_ITEM)
        assert ion_shape(written) == ion_shape(documented)
        assert [a.text for a in written["Item"]["Authors"].ion_annotations] == ["$dynamodb_SS"]


EVERY_TYPE: dict[str, Any] = {
    "pk": {"S": 'every type: é \u2028 😀 "quoted" \\ \n'},
    "n38": {"N": BIG},
    "neg": {"N": "-0.000123"},
    "big": {"N": "1E+100"},
    "bin": {"B": bytes(range(256))},
    "yes": {"BOOL": True},
    "nothing": {"NULL": True},
    "list": {"L": [{"S": "x"}, {"N": "1.5"}, {"L": []}, {"M": {"k": {"B": b"\x01"}}}]},
    "map": {"M": {"null": {"S": "a keyword"}, "a b": {"N": "7"}, "it's": {"BOOL": False}}},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", BIG]},
    "bs": {"BS": [b"\x00", b"\xff"]},
    "empty": {"S": ""},
}


def from_json(value: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB JSON value read back as a low-level client's AttributeValue."""
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": base64.b64decode(inner)}
    if kind == "BS":
        return {"BS": [base64.b64decode(v) for v in inner]}
    if kind == "L":
        return {"L": [from_json(v) for v in inner]}
    if kind == "M":
        return {"M": {k: from_json(v) for k, v in inner.items()}}
    return value


def from_ion(value: Any) -> dict[str, Any]:
    """An Ion value of an export read back as a low-level client's AttributeValue (numbers
    compared by value: Decimal)."""
    notes = [a.text for a in getattr(value, "ion_annotations", ())]
    kind = value.ion_type
    if notes:
        tag = notes[0].removeprefix("$dynamodb_")
        return {tag: [from_ion(v)[tag[0]] for v in value]}
    simple = {IonType.STRING: "S", IonType.BLOB: "B", IonType.BOOL: "BOOL"}
    if kind in simple:
        return {
            simple[kind]: str(value)
            if kind is IonType.STRING
            else bytes(value)
            if kind is IonType.BLOB
            else bool(value)
        }
    if kind is IonType.DECIMAL:
        return {"N": Decimal(value)}
    if kind is IonType.NULL:
        return {"NULL": True}
    if kind is IonType.LIST:
        return {"L": [from_ion(v) for v in value]}
    return {"M": {k: from_ion(v) for k, v in value.items()}}


def numbers_by_value(value: Any) -> Any:
    """``value`` with each N (and NS member) a Decimal, to compare numbers by value."""
    if isinstance(value, dict):
        if set(value) == {"N"}:
            return {"N": Decimal(value["N"])}
        if set(value) == {"NS"}:
            return {"NS": sorted(Decimal(v) for v in value["NS"])}
        return {k: numbers_by_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [numbers_by_value(v) for v in value]
    return value


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_type_written_as_the_scan_read_it(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, tmp_path: Path, fmt: Fmt
) -> None:
    table = ddb_table_factory(("pk", "S"))
    ddb_client.put_item(TableName=table, Item=EVERY_TYPE)
    stored = ddb_client.get_item(TableName=table, Key={"pk": EVERY_TYPE["pk"]})["Item"]
    folder = write_export(ddb_client, table, tmp_path, export_format=fmt, prefix="")
    _, (entry,) = files_of(folder)
    assert entry["dataFileS3Key"].startswith("AWSDynamoDB/")
    (line,) = data_lines(tmp_path, entry)
    assert line.isascii()
    if fmt == "DYNAMODB_JSON":
        read = {k: from_json(v) for k, v in json.loads(line)["Item"].items()}
    else:
        read = {k: from_ion(v) for k, v in simpleion.loads(line)["Item"].items()}
    assert numbers_by_value(read) == numbers_by_value(stored)
    if fmt == "DYNAMODB_JSON":  # (the number's text as the scan gave it)
        assert json.loads(line)["Item"]["n38"] == {"N": BIG}


def collections(kind: str) -> dict[str, Any]:
    """Partition key values of ``kind``: a, b, c... as strings, 38-digit numbers or bytes."""
    names = "abcdefgh"
    if kind == "S":
        return {n: {"S": f"{n}-key é"} for n in names}
    if kind == "N":
        numbers = [("-" if i % 2 else "") + str(i + 1) + BIG[1:] for i in range(7)]
        return {n: {"N": v} for n, v in zip(names, [*numbers, "0." + BIG], strict=True)}
    return {n: {"B": bytes([i, 0, 255 - i])} for i, n in enumerate(names)}


def load(client: DynamoDBClient, table: str, kind: str, sort: bool) -> None:
    """Collections with data (a: many items, over several files), one with only a marker (c),
    one with only a counter item (d), one with a marker and data (e), and one with an item
    whose ``ddbkeys_type`` is another value (f: yours)."""
    keys = collections(kind)

    def put(name: str, n: int, **extra: Any) -> None:
        item = {"pk": keys[name], **extra}
        if sort:
            item.setdefault("sk", {kind: {"S": f"s{n}", "N": str(n), "B": bytes([n + 1])}[kind]})
        client.put_item(TableName=table, Item=item)

    for n in range(7):
        put("a", n, payload={"S": "x" * 50})
    put("b", 1)
    put("d" if sort else "c", 1, ddbkeys_type={"S": "counter"}, next={"N": "5"})
    put("f", 1, ddbkeys_type={"S": "Counter"})
    put("g", 2, data={"L": [{"N": BIG}]})
    if sort:
        for name in ("c", "e"):
            put(name, 0, sk=MARKER_SK[kind], ddbkeys_pk=keys[name])
        put("e", 3)


CASES = [(fmt, kind, sort) for fmt in FORMATS for kind in "SNB" for sort in (True, False)]


@pytest.mark.parametrize("fmt, kind, sort", CASES)
def test_round_trip_lists_what_a_scan_lists(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    fmt: Fmt,
    kind: str,
    sort: bool,
) -> None:
    table = ddb_table_factory(("pk", kind), ("sk", kind) if sort else None)
    load(ddb_client, table, kind, sort)
    scanned = list(distinct_partition_keys(ddb_client, table, "scan"))
    everything = set(distinct_partition_keys(ddb_client, table, "scan", include_own_items=True))
    assert len(scanned) == (5 if sort else 4) and len(everything) == (7 if sort else 5)
    spreads: list[Literal["round_robin", "hash"]] = ["round_robin", "hash"]
    for spread in spreads:
        folder = write_export(
            ddb_client, table, tmp_path / spread, export_format=fmt, files=3, spread=spread
        )
        listing = distinct_partition_keys(ddb_client, table, from_export=folder)
        keys = list(listing)
        assert len(keys) == len(set(keys)) and set(keys) == set(scanned), spread
        assert listing.usage.read_units == 0
        with_own = distinct_partition_keys(
            ddb_client, table, from_export=folder, include_own_items=True
        )
        assert set(with_own) == everything
        _, entries = files_of(folder)
        holding_a = [
            e for e in entries if any("x" * 50 in line for line in data_lines(tmp_path / spread, e))
        ]
        assert len(holding_a) == (3 if spread == "round_robin" and sort else 1)


def test_a_table_resource_and_a_clock(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    resource(ddb_endpoint_url).Table(table).put_item(Item={"pk": "p", "sk": 1})
    moment = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=678999)
    folder = write_export(
        resource(ddb_endpoint_url).Table(table),
        None,
        tmp_path,
        clock=lambda: moment,
        s3_bucket="my-bucket",
    )
    summary, _ = files_of(folder)
    assert summary["exportTime"] == summary["startTime"] == export_time_text(moment)
    assert summary["exportTime"].endswith(".678Z") and summary["s3Bucket"] == "my-bucket"
    assert Path(folder).name.startswith(f"{int(moment.timestamp() * 1000):014d}-")
    listing = distinct_partition_keys(ddb_client, table, from_export=folder)
    assert isinstance(listing, ExportListing) and list(listing) == ["p"]
    assert listing.export_time == moment.replace(microsecond=678000)

    # an export timed before the table was made is, to the reader, an earlier table's
    past = datetime(2020, 1, 2, tzinfo=UTC)
    old = write_export(ddb_client, table, tmp_path / "old", clock=lambda: past)
    with pytest.raises(ExportError, match="it is an export of an earlier table of that name"):
        list(distinct_partition_keys(ddb_client, table, from_export=old))


def test_an_empty_table_gives_empty_data_files(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    table = ddb_table_factory(("pk", "B"), ("sk", "S"))
    folder = write_export(ddb_client, table, tmp_path, export_format="ION", files=3)
    summary, entries = files_of(folder)
    assert summary["itemCount"] == 0 and [e["itemCount"] for e in entries] == [0, 0, 0]
    assert all(data_lines(tmp_path, e) == [] for e in entries)  # (AWS: an empty file each)
    assert list(distinct_partition_keys(ddb_client, table, from_export=folder)) == []


def test_bad_arguments_and_a_missing_table(ddb_client: DynamoDBClient, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="export_format='CSV': an export is written"):
        write_export(ddb_client, "t", tmp_path, export_format="CSV")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="files=0: an export has at least one"):
        write_export(ddb_client, "t", tmp_path, files=0)
    with pytest.raises(TableNotFoundError, match="Table 'no-such-table-x' not found"):
        write_export(ddb_client, "no-such-table-x", tmp_path)
    assert list(tmp_path.iterdir()) == []
