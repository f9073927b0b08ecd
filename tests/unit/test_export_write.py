"""The export writer's core (ddbkeys.testing._export_lines, write_export_files) with no
DynamoDB: Ion numbers exact at 38 digits, any string and field name read back by amazon-ion,
and an export of synthetic items read back by the reader's core, each key once."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from amazon.ion import simpleion

from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.partition_keys import plain_key
from ddbkeys.partition_keys._export.keys import ExportCounts, export_keys, read_manifest
from ddbkeys.partition_keys._export.keyset import KeySet
from ddbkeys.partition_keys._export.location import export_folder
from ddbkeys.testing._export import ExportLayout, write_export_files
from ddbkeys.testing._export_lines import ion_decimal, ion_line, json_line
from tests.support.exports import BIG


@pytest.mark.parametrize(
    "number, text",
    [
        ("101", "101."),
        ("2E+3", "2d3"),
        ("2000", "2000."),
        ("0.001", "1d-3"),
        ("-5", "-5."),
        (BIG, BIG + "."),
        ("-" + BIG, "-" + BIG + "."),
        ("0." + BIG, BIG + "d-38"),
        ("1E+125", "1d125"),
        ("1E-130", "1d-130"),
        ("0", "0."),
    ],
)
def test_ion_decimals_keep_every_digit(number: str, text: str) -> None:
    assert ion_decimal(number) == text
    loaded = simpleion.loads(text)
    assert Decimal(loaded) == Decimal(number)
    assert Decimal(loaded).as_tuple() == Decimal(number).as_tuple()


STRINGS = ["", "plain", 'q"uote', "back\\slash", "new\nline\r\t", "é", "\u2028", "😀", "\x00\x7f"]


@pytest.mark.parametrize("text", STRINGS)
def test_strings_and_field_names_read_back(text: str) -> None:
    item: dict[str, Any] = {"pk": {"S": text}, text or "e": {"M": {text: {"SS": [text or "x"]}}}}
    line = ion_line(item)
    assert line.isascii() and "\n" not in line
    read = simpleion.loads(line)["Item"]
    assert str(read["pk"]) == text
    assert list(read[text or "e"][text]) == [text or "x"]
    as_json = json.loads(json_line(item))["Item"]
    assert as_json["pk"] == {"S": text}


def test_keywords_are_quoted_field_names() -> None:
    line = ion_line({"null": {"S": "a"}, "true": {"N": "1"}, "Id": {"N": "101"}})
    assert line == "$ion_1_0 {Item:{'null':\"a\",'true':1.,Id:101.}}"
    assert dict(simpleion.loads(line)["Item"]) == {"null": "a", "true": 1, "Id": 101}


def info(kind: str) -> TableInfo:
    return TableInfo(
        name="synthetic",
        partition_key=KeyAttribute("pk", kind),
        sort_key=KeyAttribute("sk", "N"),
        replica_regions=(),
        index_projections={},
        item_count=0,
        size_bytes=0,
        created="2020-01-01T00:00:00+00:00",
    )


def items(kind: str, keys: int) -> list[dict[str, Any]]:
    def key(n: int) -> dict[str, Any]:
        if kind == "S":
            return {"S": f"k{n:05d}"}
        if kind == "N":
            return {"N": str(int(BIG) + n * 7919)}  # (38 digits)
        return {"B": n.to_bytes(3, "big")}

    return [{"pk": key(n), "sk": {"N": str(s)}} for n in range(keys) for s in range(3)]


@pytest.mark.parametrize("kind", ["S", "N", "B"])
@pytest.mark.parametrize("fmt", ["DYNAMODB_JSON", "ION"])
@pytest.mark.parametrize("spread", ["round_robin", "hash"])
def test_synthetic_export_read_back(tmp_path: Path, kind: str, fmt: Any, spread: Any) -> None:
    layout = ExportLayout(
        folder=tmp_path,
        table_arn="arn:aws:dynamodb:us-east-1:123456789012:table/synthetic",
        table_id="t",
        export_time=datetime(2021, 1, 1, tzinfo=UTC),
        fmt=fmt,
    )
    written = items(kind, 300)
    folder = write_export_files(layout, written, partition_key="pk", files=4, spread=spread)
    where = export_folder(folder)
    manifest = read_manifest(where, info(kind))
    assert len(manifest.files) == 4 and manifest.items == 900
    counts = ExportCounts()
    with KeySet(memory_keys=50) as seen:  # (past 50 keys, on disk)
        got = [
            plain_key(k)
            for k in export_keys(
                where, manifest, info(kind), None, own_items=False, seen=seen, counts=counts
            )
        ]
    assert len(got) == len(set(got)) == 300
    assert set(got) == {plain_key(item["pk"]) for item in written}
    per_file = 0
    for data in manifest.files:
        lines = gzip.decompress((Path(folder) / data.path).read_bytes()).decode().splitlines()
        loads = json.loads if fmt == "DYNAMODB_JSON" else simpleion.loads
        per_file += len({repr(loads(line)["Item"]["pk"]) for line in lines})
    # each key's three items in three files in turn, or all in the file its hash names
    assert per_file == (900 if spread == "round_robin" else 300)
