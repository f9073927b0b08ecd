"""Reading an export's keys, with no DynamoDB: the documented fixtures (tests/support/exports.py)
on disk, DynamoDB JSON and Amazon Ion, string, 38-digit number and binary keys, ddbkeys' own
items; each key once, as a Scan gives it; every kind of bad input a one-line ExportError."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.partition_keys import plain_key
from ddbkeys.partition_keys._export.decode import number_text
from ddbkeys.partition_keys._export.keys import ExportCounts, export_keys, read_manifest
from ddbkeys.partition_keys._export.keyset import KeySet, bytes_key, key_bytes
from ddbkeys.partition_keys._export.location import export_folder
from ddbkeys.partition_keys._export.manifest import ExportError
from ddbkeys.partition_keys._listing.recognise import markers_of
from tests.support.exports import Fixture, own_items, product_catalog, write

FORMATS = ["DYNAMODB_JSON", "ION"]


def info_of(fixture: Fixture, created: str = "2020-01-01T00:00:00+00:00") -> TableInfo:
    types = {a["AttributeName"]: a["AttributeType"] for a in fixture.attributes}
    keys = {k["KeyType"]: k["AttributeName"] for k in fixture.key_schema}
    sort = keys.get("RANGE")
    return TableInfo(
        name=fixture.table,
        partition_key=KeyAttribute(keys["HASH"], types[keys["HASH"]]),
        sort_key=KeyAttribute(sort, types[sort]) if sort else None,
        replica_regions=(),
        index_projections={},
        item_count=0,
        size_bytes=0,
        created=created,
    )


def read_keys(
    folder: Path | str, info: TableInfo, *, own: bool = False, memory_keys: int = 100_000
) -> tuple[list[Any], ExportCounts]:
    where = export_folder(str(folder))
    manifest = read_manifest(where, info)
    counts = ExportCounts()
    with KeySet(memory_keys) as seen:
        keys = [
            plain_key(k)
            for k in export_keys(
                where, manifest, info, markers_of(info), own_items=own, seen=seen, counts=counts
            )
        ]
    return keys, counts


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_documented_product_catalog(tmp_path: Path, fmt: str) -> None:
    fixture = product_catalog(fmt)
    keys, counts = read_keys(write(fixture, tmp_path), info_of(fixture))
    assert sorted(keys) == sorted(fixture.keys)
    assert len(keys) == len(set(keys)) == 8
    assert (counts.files, counts.items, counts.keys) == (1, 8, 8)


@pytest.mark.parametrize("key_type", ["S", "N", "B"])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("memory_keys", [100_000, 1])
def test_own_items_left_out_each_key_once(
    tmp_path: Path, fmt: str, key_type: str, memory_keys: int
) -> None:
    fixture = own_items(fmt, key_type)
    info = info_of(fixture)
    folder = write(fixture, tmp_path)
    keys, counts = read_keys(folder, info, memory_keys=memory_keys)
    assert len(keys) == len(set(keys))
    assert set(keys) == fixture.keys
    assert counts.own_items == 5  # four markers and a counter item
    assert counts.items == 11
    everything, _ = read_keys(folder, info, own=True, memory_keys=memory_keys)
    assert set(everything) == fixture.with_own
    assert len(everything) == len(set(everything)) == 7


def test_numbers_as_dynamodb_writes_them() -> None:
    for given, text in [
        ("2E+3", "2000"),
        ("-0.0100", "-0.01"),
        ("0.0", "0"),
        ("-0", "0"),
        ("1.0E2", "100"),
        ("12345678901234567890123456789012345678", "12345678901234567890123456789012345678"),
        ("1E-130", "0." + "0" * 129 + "1"),
        ("1E+125", "1" + "0" * 125),
    ]:
        assert number_text(Decimal(given)) == text, given


def test_the_keyset_on_disk_keeps_order_and_forgets(tmp_path: Path) -> None:
    keys = [key_bytes({"S": f"k{i % 7}"}) for i in range(20)]
    with KeySet(memory_keys=3, folder=str(tmp_path)) as seen:
        first = seen.new(keys[:5])
        assert [bytes_key(k)["S"] for k in first] == ["k0", "k1", "k2", "k3", "k4"]
        assert seen.on_disk
        later = seen.new(keys[5:])
        assert [bytes_key(k)["S"] for k in later] == ["k5", "k6"]
        assert not list(tmp_path.iterdir())  # (open, but out of its folder: a kill leaves none)
    assert not list(tmp_path.iterdir())
    assert bytes_key(key_bytes({"B": b"\x00S"})) == {"B": b"\x00S"}
    assert bytes_key(key_bytes({"N": "-1.5"})) == {"N": "-1.5"}


# --- bad input: one line, naming what is at fault ----------------------------------------------


def one_line(exc: pytest.ExceptionInfo[ExportError]) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_a_folder_that_is_not_an_export(tmp_path: Path) -> None:
    fixture = product_catalog("DYNAMODB_JSON")
    with pytest.raises(ExportError) as exc:
        read_keys(tmp_path, info_of(fixture))
    assert "manifest-summary.json" in one_line(exc)
    with pytest.raises(ExportError) as exc:
        read_keys(tmp_path / "nowhere", info_of(fixture))
    assert "not a folder" in one_line(exc)
    (tmp_path / "manifest-summary.json").write_text("{not json")
    with pytest.raises(ExportError) as exc:
        read_keys(tmp_path, info_of(fixture))
    assert "not JSON" in one_line(exc)


def test_a_manifest_of_another_table(tmp_path: Path) -> None:
    fixture = product_catalog("DYNAMODB_JSON")
    folder = write(fixture, tmp_path, table_arn="arn:aws:dynamodb:us-east-1:1:table/Orders")
    with pytest.raises(ExportError) as exc:
        read_keys(folder, info_of(fixture))
    assert "'Orders', not 'ProductCatalog'" in one_line(exc)


def test_an_export_of_an_earlier_table_of_that_name(tmp_path: Path) -> None:
    fixture = product_catalog("DYNAMODB_JSON")
    folder = write(fixture, tmp_path)
    with pytest.raises(ExportError) as exc:
        read_keys(folder, info_of(fixture, created="2021-01-01T00:00:00+00:00"))
    assert "earlier table of that name" in one_line(exc)


def data_file(folder: Path) -> Path:
    (path,) = (folder / "data").iterdir()
    return path


def test_a_truncated_gzip(tmp_path: Path) -> None:
    for fmt in FORMATS:
        fixture = product_catalog(fmt)
        folder = write(fixture, tmp_path / fmt)
        path = data_file(folder)
        path.write_bytes(path.read_bytes()[:-12])
        with pytest.raises(ExportError) as exc:
            read_keys(folder, info_of(fixture))
        assert "truncated or not gzip" in one_line(exc) and path.name in str(exc.value)


def test_a_data_file_the_manifest_names_but_is_missing(tmp_path: Path) -> None:
    fixture = product_catalog("DYNAMODB_JSON")
    folder = write(fixture, tmp_path)
    path = data_file(folder)
    path.unlink()
    with pytest.raises(ExportError) as exc:
        read_keys(folder, info_of(fixture))
    assert path.name in one_line(exc) and "missing" in str(exc.value)


def test_a_file_holding_fewer_items_than_its_manifest_says(tmp_path: Path) -> None:
    fixture = product_catalog("DYNAMODB_JSON")
    folder = write(fixture, tmp_path)
    path = data_file(folder)
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    path.write_bytes(gzip.compress(("\n".join(lines[:5]) + "\n").encode()))
    with pytest.raises(ExportError) as exc:
        read_keys(folder, info_of(fixture))
    assert "holds 5 items where the manifest says 8" in one_line(exc)


@pytest.mark.parametrize("written, said", [("ION", "DYNAMODB_JSON"), ("DYNAMODB_JSON", "ION")])
def test_a_format_mismatch(tmp_path: Path, written: str, said: str) -> None:
    fixture = own_items(written, "S")
    folder = write(fixture, tmp_path)
    summary = folder / "manifest-summary.json"
    raw: dict[str, Any] = json.loads(summary.read_text())
    summary.write_text(json.dumps({**raw, "outputFormat": said}))
    with pytest.raises(ExportError) as exc:
        read_keys(folder, info_of(fixture))
    assert "outputFormat" in one_line(exc)


def test_a_key_of_another_type(tmp_path: Path) -> None:
    fixture = own_items("DYNAMODB_JSON", "S")
    info = info_of(fixture)
    info = TableInfo(**{**info.__dict__, "partition_key": KeyAttribute("pk", "N")})
    with pytest.raises(ExportError) as exc:
        read_keys(write(fixture, tmp_path), info)
    assert "'S' for partition key 'pk', whose type in table" in one_line(exc)


def test_an_incremental_export_is_refused(tmp_path: Path) -> None:
    fixture = product_catalog("DYNAMODB_JSON")
    folder = write(fixture, tmp_path)
    summary = folder / "manifest-summary.json"
    summary.write_text(
        json.dumps({**json.loads(summary.read_text()), "exportType": "INCREMENTAL_EXPORT"})
    )
    with pytest.raises(ExportError) as exc:
        read_keys(folder, info_of(fixture))
    assert "INCREMENTAL_EXPORT" in one_line(exc)


def test_the_stream_named_collections_keep_to_disk_past_the_limit(tmp_path: Path) -> None:
    from ddbkeys.partition_keys._export.keyset import TouchedKeys  # noqa: PLC0415

    touched = TouchedKeys(KeySet(memory_keys=2, folder=str(tmp_path)))
    for name in ("b", "a", "c", "a"):
        touched.setdefault(("S", name), {"S": name})
    touched.setdefault(("B", b"\x00"), {"B": b"\x00"})
    touched.setdefault(("N", "-1.5"), {"N": "-1.5"})
    assert touched.seen.on_disk and len(touched) == 5
    assert ("S", "a") in touched and ("S", "z") not in touched
    assert not touched.__contains__("x")  # (not a hashed key at all)
    assert touched[("N", "-1.5")] == {"N": "-1.5"}
    assert list(touched) == [("B", b"\x00"), ("N", "-1.5"), ("S", "a"), ("S", "b"), ("S", "c")]
    with pytest.raises(KeyError):
        touched[("S", "z")]
    touched.close()
    assert not list(tmp_path.iterdir())
