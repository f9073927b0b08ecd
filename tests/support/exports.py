"""Table exports in AWS's layout, written by hand from AWS's documentation, for the tests of the
export reader (and of ``ddbkeys.testing``'s export writer, which must agree with them).

Source: "DynamoDB table export output format", Amazon DynamoDB Developer Guide,
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/S3DataExport.Output.html
(sections "Manifest files", "Summary manifest", "Files manifest", "DynamoDB JSON" and "Amazon
Ion"). ``DOC_*`` below are transcribed from that page: the summary and files manifests of its
ProductCatalog example, and its item 101 in DynamoDB JSON and in Ion. Everything else is ours,
written in the same shapes the page shows (one ``{"Item": ...}`` a line; one Ion value a line
after ``$ion_1_0``; data files gzip-compressed under ``data/``; keys in the manifests relative
to the bucket, under ``<prefix>/AWSDynamoDB/<export id>/``), and names the expected keys
outright, never by running ddbkeys' own code.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

#: The summary manifest of the page's example, as it shows it.
DOC_SUMMARY: dict[str, Any] = {
    "version": "2020-06-30",
    "exportArn": "arn:aws:dynamodb:us-east-1:123456789012:table/ProductCatalog/export/"
    "01234567890123-a1b2c3d4",
    "startTime": "2020-11-04T07:28:34.028Z",
    "endTime": "2020-11-04T07:33:43.897Z",
    "tableArn": "arn:aws:dynamodb:us-east-1:123456789012:table/ProductCatalog",
    "tableId": "12345a12-abcd-123a-ab12-1234abc12345",
    "exportTime": "2020-11-04T07:28:34.028Z",
    "s3Bucket": "ddb-productcatalog-export",
    "s3Prefix": "2020-Nov",
    "s3SseAlgorithm": "AES256",
    "s3SseKmsKeyId": None,
    "manifestFilesS3Key": "2020-Nov/AWSDynamoDB/01234567890123-a1b2c3d4/manifest-files.json",
    "billedSizeBytes": 0,
    "itemCount": 8,
    "outputFormat": "DYNAMODB_JSON",
}
#: A line of the page's files manifest.
DOC_FILES_LINE: dict[str, Any] = {
    "itemCount": 8,
    "md5Checksum": "sQMSpEILNgoQmarvDFonGQ==",
    "etag": "af83d6f217c19b8b0fff8023d8ca4716-1",
    "dataFileS3Key": "2020-Nov/AWSDynamoDB/01234567890123-a1b2c3d4/data/asdl123dasas.json.gz",
}
#: The page's item in DynamoDB JSON.
DOC_JSON_ITEM = (
    '{"Item":{"Authors":{"SS":["Author1","Author2"]},"Dimensions":{"S":"8.5 x 11.0 x 0.5"},'
    '"ISBN":{"S":"111-1111111111"},"Id":{"N":"101"},"InPublication":{"BOOL":false},'
    '"PageCount":{"N":"500"},"Price":{"N":"2"},"ProductCategory":{"S":"Book"},'
    '"Title":{"S":"Book 101 Title"}}}'
)
#: The page's item in Amazon Ion.
DOC_ION_ITEM = (
    '$ion_1_0 {Item:{Authors:$dynamodb_SS::["Author1","Author2"],Dimensions:"8.5 x 11.0 x 0.5",'
    'ISBN:"111-1111111111",Id:101.,InPublication:false,PageCount:6d2,Price:2d3,'
    'ProductCategory:"Book",Title:"Book 101 Title"}}'
)


@dataclass
class Fixture:
    """An export to write: its table, key schema, format, data files (lines each) and the keys
    a listing of it hands out (with and without ddbkeys' own items)."""

    table: str
    key_schema: list[dict[str, str]]
    attributes: list[dict[str, str]]
    fmt: str
    files: list[list[str]]
    keys: set[Any]
    with_own: set[Any] = field(default_factory=set)
    export_id: str = "01234567890123-a1b2c3d4"
    prefix: str = "2020-Nov"
    region: str = "us-east-1"
    account: str = "123456789012"
    export_time: str = "2020-11-04T07:28:34.028Z"

    @property
    def folder_key(self) -> str:
        return f"{self.prefix}/AWSDynamoDB/{self.export_id}/"


def product_catalog(fmt: str) -> Fixture:
    """The page's ProductCatalog: its item 101, and items 102 to 108 like it (Id a number; in
    Ion a decimal, written as the page writes them: ``101.``, ``6d2``)."""
    if fmt == "DYNAMODB_JSON":
        lines = [DOC_JSON_ITEM] + [
            DOC_JSON_ITEM.replace('"Id":{"N":"101"}', f'"Id":{{"N":"{n}"}}')
            for n in range(102, 109)
        ]
    else:
        ion_ids = ["102.", "1.03d2", "104.", "105.0", "10.6d1", "107d0", "0.108d3"]
        lines = [DOC_ION_ITEM] + [DOC_ION_ITEM.replace("Id:101.", f"Id:{n}") for n in ion_ids]
    return Fixture(
        table="ProductCatalog",
        key_schema=[{"AttributeName": "Id", "KeyType": "HASH"}],
        attributes=[{"AttributeName": "Id", "AttributeType": "N"}],
        fmt=fmt,
        files=[lines],
        keys=set(range(101, 109)),
        with_own=set(range(101, 109)),
    )


BIG = "12345678901234567890123456789012345678"  # 38 digits


def own_items(fmt: str, key_type: str) -> Fixture:
    """A table with a sort key whose collections (``pk``) hold data, ddbkeys' markers (``sk`` at
    the markers' sort key, ``ddbkeys_pk`` its own key) and counter items (``ddbkeys_type`` =
    ``"counter"``), spread over three files, one collection split between two of them."""
    python: dict[str, Any]
    if key_type == "S":
        values = {
            "a": "alpha",
            "b": "béta\u2028",
            "c": "c-only-marker",
            "d": "d-only-counter",
            "e": "e-split",
            "f": "f-marker-and-data",
            "g": "g-other-type",
        }
        as_json = {k: json.dumps({"S": v}) for k, v in values.items()}
        as_ion = {k: json.dumps(v) for k, v in values.items()}
        python = dict(values)
    elif key_type == "N":
        numbers = {
            "a": "1",
            "b": BIG,
            "c": "-5",
            "d": "0.001",
            "e": "-" + BIG,
            "f": "100",
            "g": "7",
        }
        ion_text = {
            "a": "1.",
            "b": BIG + ".",
            "c": "-5.",
            "d": "1d-3",
            "e": "-" + BIG + ".",
            "f": "1d2",
            "g": "7.00",
        }
        as_json = {k: json.dumps({"N": v}) for k, v in numbers.items()}
        as_ion = dict(ion_text)
        python = {
            k: (int(Decimal(v)) if Decimal(v) == int(Decimal(v)) else Decimal(v))
            for k, v in numbers.items()
        }
    else:
        raw = {
            "a": b"\x00",
            "b": b"\xff\xfe",
            "c": b"\x01\x02",
            "d": b"d",
            "e": bytes(range(16)),
            "f": b"\x00\x00",
            "g": b"g",
        }
        as_json = {k: json.dumps({"B": base64.b64encode(v).decode()}) for k, v in raw.items()}
        as_ion = {k: "{{" + base64.b64encode(v).decode() + "}}" for k, v in raw.items()}
        python = dict(raw)
    marker_sk = "#ddbkeys#marker"

    def item(k: str, sk: str, extra: dict[str, tuple[str, str]] | None = None) -> str:
        extra = extra or {}
        if fmt == "DYNAMODB_JSON":
            parts = [f'"pk":{as_json[k]}', f'"sk":{json.dumps({"S": sk})}']
            parts += [f'"{name}":{j}' for name, (j, _) in extra.items()]
            return '{"Item":{' + ",".join(parts) + "}}"
        parts = [f"pk:{as_ion[k]}", f"sk:{json.dumps(sk)}"]
        parts += [f"{name}:{i}" for name, (_, i) in extra.items()]
        return "$ion_1_0 {Item:{" + ",".join(parts) + "}}"

    def mark(k: str) -> dict[str, tuple[str, str]]:
        return {"ddbkeys_pk": (as_json[k], as_ion[k])}

    counter = {"ddbkeys_type": ('{"S":"counter"}', '"counter"'), "next": ('{"N":"5"}', "5.")}
    other_type = {"ddbkeys_type": ('{"S":"Counter"}', '"Counter"')}
    files = [
        [
            item("a", "1"),
            item("a", "2"),
            item("a", marker_sk, mark("a")),
            item("c", marker_sk, mark("c")),
        ],
        [item("d", "counter", counter), item("e", marker_sk, mark("e")), item("b", "x")],
        [
            item("e", "9"),
            item("f", marker_sk, mark("f")),
            item("f", "1"),
            item("g", "1", other_type),
        ],
    ]
    mine = {python[k] for k in ("a", "b", "e", "f", "g")}
    return Fixture(
        table=f"own-items-{key_type.lower()}",
        key_schema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        attributes=[
            {"AttributeName": "pk", "AttributeType": key_type},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        fmt=fmt,
        files=files,
        keys=mine,
        with_own=set(python.values()),
    )


def write(fixture: Fixture, root: Path, *, table_arn: str | None = None) -> Path:
    """``fixture`` written as AWS writes an export into a bucket whose root is ``root`` (the
    keys of the manifests are paths below it); returns the export's folder. ``table_arn``
    replaces the fixture's (for a table of another account, region or name)."""
    folder = root / fixture.folder_key
    (folder / "data").mkdir(parents=True, exist_ok=True)
    arn = table_arn or f"arn:aws:dynamodb:{fixture.region}:{fixture.account}:table/{fixture.table}"
    entries = []
    total = 0
    for number, lines in enumerate(fixture.files):
        ext = "json.gz" if fixture.fmt == "DYNAMODB_JSON" else "ion.gz"
        key = f"{fixture.folder_key}data/file{number:02d}x7q.{ext}"
        body = gzip.compress("".join(line + "\n" for line in lines).encode("utf-8"))
        (root / key).write_bytes(body)
        entries.append(
            {
                "itemCount": len(lines),
                "md5Checksum": base64.b64encode(hashlib.md5(body).digest()).decode(),
                "etag": hashlib.md5(body).hexdigest() + "-1",
                "dataFileS3Key": key,
            }
        )
        total += len(lines)
    summary = dict(DOC_SUMMARY)
    summary.update(
        exportArn=f"{arn}/export/{fixture.export_id}",
        tableArn=arn,
        exportTime=fixture.export_time,
        startTime=fixture.export_time,
        s3Prefix=fixture.prefix,
        manifestFilesS3Key=f"{fixture.folder_key}manifest-files.json",
        itemCount=total,
        outputFormat=fixture.fmt,
    )
    (folder / "manifest-summary.json").write_text(json.dumps(summary))
    (folder / "manifest-files.json").write_text("".join(json.dumps(e) + "\n" for e in entries))
    (folder / "_started").write_bytes(b"")
    return folder


def consistent_items(client: Any, table: str) -> list[dict[str, Any]]:
    """Every item of ``table``, from a consistent Scan."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def export_table(client: Any, table: str, root: Path) -> Path:
    """An export of ``table`` in AWS's layout from a consistent scan, at the time it began."""
    began = datetime.now(UTC)
    items = consistent_items(client, table)
    fixture = Fixture(
        table=table,
        key_schema=[],
        attributes=[],
        fmt="DYNAMODB_JSON",
        files=[[json.dumps({"Item": item}) for item in items]],
        keys=set(),
        export_id=f"{int(began.timestamp() * 1000):014d}-0123abcd",
        prefix="exports",
        region="ddblocal",
        account="000000000000",
        export_time=began.isoformat(timespec="milliseconds"),
    )
    return write(fixture, root)
