"""Exports as a new user meets them, with no DynamoDB: the paths a user types (``~``, the
manifest's own path, the ``AWSDynamoDB/`` folder above the export), a files manifest cut
short, the empty data files AWS writes for empty partitions, numbers and null values a key
cannot be, the largest keys, Ion written in binary, the count of items read on the way, the
keys seen leaving nothing on disk after a kill -9, and the settings that do not go with an
export. Fixtures: tests/support/exports.py (AWS's documented layout)."""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import IncompleteReadError

from ddbkeys import ConfigurationError, ListingInterrupted
from ddbkeys._core.stopping import StopFlag
from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.partition_keys import ListingOptions, plain_key, plan_listing
from ddbkeys.partition_keys._export.decode import ion_items
from ddbkeys.partition_keys._export.keys import ExportCounts, export_keys, read_manifest
from ddbkeys.partition_keys._export.keyset import KeySet, key_bytes
from ddbkeys.partition_keys._export.location import export_folder
from ddbkeys.partition_keys._export.manifest import ExportError
from ddbkeys.partition_keys._export.s3body import ATTEMPTS, ResumingBody
from ddbkeys.partition_keys._listing.recognise import markers_of
from tests.support.exports import Fixture, own_items, product_catalog, write

FORMATS = ["DYNAMODB_JSON", "ION"]


def info_of(fixture: Fixture) -> TableInfo:
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
        created="2020-01-01T00:00:00+00:00",
    )


def read_raw(
    uri: str, info: TableInfo, memory_keys: int = 100_000
) -> tuple[list[dict[str, Any]], ExportCounts]:
    """The keys (AttributeValues, as a Scan gives them) an export at ``uri`` lists."""
    folder = export_folder(uri)
    manifest = read_manifest(folder, info)
    counts = ExportCounts()
    with KeySet(memory_keys) as seen:
        keys = list(
            export_keys(
                folder, manifest, info, markers_of(info), own_items=False, seen=seen, counts=counts
            )
        )
    return keys, counts


def one_line(exc: pytest.ExceptionInfo[ExportError]) -> str:
    assert "\n" not in str(exc.value)
    return str(exc.value)


def keyed(table: str, key_type: str, fmt: str, lines: list[str]) -> Fixture:
    """A table keyed by ``pk`` of ``key_type`` alone, its export one file of ``lines``."""
    return Fixture(
        table=table,
        key_schema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        attributes=[{"AttributeName": "pk", "AttributeType": key_type}],
        fmt=fmt,
        files=[lines],
        keys=set(),
    )


# --- the paths a user types --------------------------------------------------------------------


def test_a_home_relative_path_and_the_manifests_own_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture = product_catalog("DYNAMODB_JSON")
    folder = write(fixture, tmp_path / "home" / "copy")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    relative = "~/copy/" + fixture.folder_key
    for uri in (relative, relative + "manifest-summary.json", relative + "manifest-files.json"):
        keys, _ = read_raw(uri, info_of(fixture))
        assert sorted(plain_key(k) for k in keys) == list(range(101, 109)), uri
    monkeypatch.chdir(folder)  # (the manifest named alone: its folder is the current one)
    for uri in ("manifest-summary.json", "./manifest-summary.json", ".", "./"):
        keys, _ = read_raw(uri, info_of(fixture))
        assert len(keys) == 8, uri
        assert export_folder(uri).uri == f"{folder}/", uri  # (what the summary names)


def test_the_folder_above_the_export_names_the_exports_it_holds(tmp_path: Path) -> None:
    fixture = product_catalog("ION")
    write(fixture, tmp_path)
    parent = tmp_path / "2020-Nov" / "AWSDynamoDB"
    export = f"{parent}/{fixture.export_id}/"
    for uri in (str(parent), f"{parent}/", str(tmp_path / "2020-Nov")):
        with pytest.raises(ExportError) as exc:
            read_raw(uri, info_of(fixture))
        assert one_line(exc).endswith(f"not an export's folder, but it holds one: pass {export}")
    later = Fixture(**{**fixture.__dict__, "export_id": "01734567890123-b1b2c3d4"})
    write(later, tmp_path)
    with pytest.raises(ExportError) as exc:
        read_raw(str(parent), info_of(fixture))
    assert f"holds 2 exports: pass one, the latest is {parent}/{later.export_id}/" in one_line(exc)
    with pytest.raises(ExportError) as exc:  # (nothing below: what the URI is, as before)
        read_raw(str(tmp_path), info_of(fixture))
    assert "s3://BUCKET/PREFIX/AWSDynamoDB/EXPORT_ID/" in one_line(exc)


# --- what the manifests and the data files may hold --------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_files_manifest_cut_short_is_no_smaller_table(tmp_path: Path, fmt: str) -> None:
    fixture = own_items(fmt, "S")
    folder = write(fixture, tmp_path)
    files = folder / "manifest-files.json"
    lines = files.read_text().splitlines()
    for kept, items in ((lines[:1], 4), ([], 0)):  # (the summary says 11 items)
        files.write_text("".join(line + "\n" for line in kept))
        with pytest.raises(ExportError) as exc:
            read_raw(str(folder), info_of(fixture))
        assert f"lists {len(kept)} data files holding {items} items where " in one_line(exc)
        assert "manifest-summary.json says 11" in str(exc.value)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "body",
    [b"", gzip.compress(b"", mtime=0), gzip.compress(b"\n", mtime=0)],
    ids=["zero-bytes", "empty-gzip", "a-newline"],
)
def test_the_empty_files_of_empty_partitions(tmp_path: Path, fmt: str, body: bytes) -> None:
    fixture = own_items(fmt, "N")
    folder = write(fixture, tmp_path)
    name = f"data/empty.{'ion' if fmt == 'ION' else 'json'}.gz"
    (folder / name).write_bytes(body)
    entry = {"itemCount": 0, "md5Checksum": "", "etag": "", "dataFileS3Key": ""}
    entry["dataFileS3Key"] = fixture.folder_key + name
    with (folder / "manifest-files.json").open("a") as files:
        files.write(json.dumps(entry) + "\n")
    keys, counts = read_raw(str(folder), info_of(fixture))
    assert {plain_key(k) for k in keys} == fixture.keys and len(keys) == len(fixture.keys)
    assert (counts.files, counts.items) == (4, 11)


def test_an_export_of_an_empty_table(tmp_path: Path) -> None:
    fixture = keyed("Empty", "S", "DYNAMODB_JSON", [])
    fixture.files = []
    keys, counts = read_raw(str(write(fixture, tmp_path)), info_of(fixture))
    assert keys == [] and (counts.files, counts.items) == (0, 0)


def test_numbers_one_text_whatever_the_format(tmp_path: Path) -> None:
    """DynamoDB JSON's number text is DynamoDB's own, but a key is the same key in both formats
    and each once: -0 is 0, 1.50 is 1.5, and 10**125 is written out as a Scan writes it."""
    json_lines = [
        json.dumps({"Item": {"pk": {"N": n}}})
        for n in ("-0", "0", "1.50", "1.5", "1E+125", "-1E-130")
    ]
    ion_lines = [
        "$ion_1_0 {Item:{pk:" + n + "}}"
        for n in ("-0.", "0d0", "1.50", "15d-1", "1d125", "-1d-130")
    ]
    texts = ["0", "1.5", "1" + "0" * 125, "-0." + "0" * 129 + "1"]
    for fmt, lines in (("DYNAMODB_JSON", json_lines), ("ION", ion_lines)):
        fixture = keyed("Numbers", "N", fmt, lines)
        keys, _ = read_raw(str(write(fixture, tmp_path / fmt)), info_of(fixture))
        assert keys == [{"N": text} for text in texts], fmt


@pytest.mark.parametrize("value", ["NaN", "Infinity", "12abc"])
def test_a_number_that_is_none_is_one_line(tmp_path: Path, value: str) -> None:
    fixture = keyed("Numbers", "N", "DYNAMODB_JSON", [json.dumps({"Item": {"pk": {"N": value}}})])
    with pytest.raises(ExportError) as exc:
        read_raw(str(write(fixture, tmp_path)), info_of(fixture))
    assert "item 1 has a value that is no key" in one_line(exc)


@pytest.mark.parametrize("null", ["null.string", "null.decimal", "null.blob", "null"])
def test_an_ion_null_is_no_key(tmp_path: Path, null: str) -> None:
    key_type = {"null.decimal": "N", "null.blob": "B"}.get(null, "S")
    lines = [
        '$ion_1_0 {Item:{pk:"a",ddbkeys_type:null.string}}',
        f"$ion_1_0 {{Item:{{pk:{null}}}}}",
    ]
    fixture = keyed("Nulls", key_type, "ION", lines if key_type == "S" else lines[1:])
    with pytest.raises(ExportError) as exc:
        read_raw(str(write(fixture, tmp_path)), info_of(fixture))
    assert f"item {len(fixture.files[0])} has a value that is no key" in one_line(exc)


def test_a_typed_null_ddbkeys_type_is_your_item() -> None:
    stream = gzip.decompress(gzip.compress(b'$ion_1_0 {Item:{pk:"a",ddbkeys_type:null.string}}'))
    (item,) = ion_items(io.BytesIO(stream), {"pk", "ddbkeys_type"}, "w")
    assert item == {"pk": {"S": "a"}, "ddbkeys_type": {"?": None}}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("key_type", ["S", "B"])
def test_the_largest_keys_on_disk_too(tmp_path: Path, fmt: str, key_type: str) -> None:
    """A partition key holds up to 2048 bytes: a string of 1024 two-byte characters, a binary
    value of 2048 bytes, past the keys kept in memory (memory_keys=1) and each once."""
    values: list[Any] = (
        ["é" * 1024, "x" * 2048, "é" * 1023 + "x"]
        if key_type == "S"
        else [bytes(range(256)) * 8, bytes(range(256)) * 4, b"\xff" * 2048]
    )

    def text(value: Any) -> str:
        if key_type == "S":
            return json.dumps({"S": value}) if fmt != "ION" else json.dumps(value)
        encoded = base64.b64encode(value).decode()
        return json.dumps({"B": encoded}) if fmt != "ION" else "{{" + encoded + "}}"

    shape = '{"Item":{"pk":%s}}' if fmt != "ION" else "$ion_1_0 {Item:{pk:%s}}"
    lines = [shape % text(v) for v in values + values]
    fixture = keyed("Large", key_type, fmt, lines)
    keys, counts = read_raw(str(write(fixture, tmp_path)), info_of(fixture), memory_keys=1)
    assert keys == [{key_type: v} for v in values] and counts.items == 6


def test_binary_ion_reads_as_text_ion(tmp_path: Path) -> None:
    from amazon.ion import simpleion  # noqa: PLC0415

    fixture = own_items("ION", "B")
    folder = write(fixture, tmp_path)
    text_keys, _ = read_raw(str(folder), info_of(fixture))
    for path in (folder / "data").iterdir():
        values = simpleion.loads(gzip.decompress(path.read_bytes()).decode(), single_value=False)
        path.write_bytes(
            gzip.compress(simpleion.dumps(values, binary=True, sequence_as_stream=True))
        )
    binary_keys, _ = read_raw(str(folder), info_of(fixture))
    assert binary_keys == text_keys and {plain_key(k) for k in text_keys} == fixture.keys


def test_items_are_counted_as_they_are_read(tmp_path: Path) -> None:
    """A summary on the way (Ctrl-C) never says more keys than items read."""
    lines = [json.dumps({"Item": {"pk": {"S": f"k{i:05d}"}}}) for i in range(25_000)]
    fixture = keyed("Many", "S", "DYNAMODB_JSON", lines)
    folder = export_folder(str(write(fixture, tmp_path)))
    info = info_of(fixture)
    counts = ExportCounts()
    with KeySet() as seen:
        keys = export_keys(
            folder,
            read_manifest(folder, info),
            info,
            None,
            own_items=False,
            seen=seen,
            counts=counts,
        )
        for _ in keys:
            assert counts.items >= counts.keys
    assert (counts.files, counts.items, counts.keys) == (1, 25_000, 25_000)


# --- the keys seen, on disk ---------------------------------------------------------------------


def test_the_keys_on_disk_leave_nothing_behind_even_a_kill(tmp_path: Path) -> None:
    with KeySet(memory_keys=2, folder=str(tmp_path)) as seen:
        assert seen.new([key_bytes({"S": str(i)}) for i in range(5)])
        assert seen.on_disk and not list(tmp_path.iterdir())
        assert seen.new([key_bytes({"S": "4"}), key_bytes({"S": "5"})]) == [b"S5"]
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal, sys\n"
            "from ddbkeys.partition_keys._export.keyset import KeySet\n"
            "seen = KeySet(memory_keys=2, folder=sys.argv[1])\n"
            "seen.new([b'S%d' % i for i in range(5)])\n"
            "assert seen.on_disk\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n",
            str(tmp_path),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not list(tmp_path.iterdir())


# --- the settings that do not go with an export ------------------------------------------------


@pytest.mark.parametrize(
    "setting, flag",
    [
        ({"segments": 4}, "drop segments=4 (--segments)"),
        ({"scan_segments": 8}, "drop scan_segments=8 (--scan-segments)"),
        ({"trust_index": True}, "drop trust_index=True (--trust-index)"),
    ],
)
def test_settings_that_read_the_table_are_refused(setting: dict[str, Any], flag: str) -> None:
    with pytest.raises(ConfigurationError, match="from_export reads the export's files") as exc:
        ListingOptions(from_export="s3://b/p/", **setting)
    assert str(exc.value).endswith(flag + ".")


def test_read_limits_go_with_an_export_having_nothing_to_limit() -> None:
    options = ListingOptions(from_export="x", max_rcu_per_second=5, read_percent=0.5)
    assert options.max_rcu_per_second == 5.0 and os.fspath(options.from_export or "") == "x"


def test_a_stop_between_two_keys_hands_out_no_more(tmp_path: Path) -> None:
    """Listing.stop() promises ListingInterrupted at the next key, not the rest of a batch of
    10,000 keys (nor a listing ended as if complete, when the stop came in its last batch)."""
    fixture = own_items("ION", "S")
    folder = export_folder(str(write(fixture, tmp_path)))
    info = info_of(fixture)
    flag = StopFlag()
    counts = ExportCounts()
    with KeySet() as seen:
        keys = export_keys(
            folder,
            read_manifest(folder, info),
            info,
            markers_of(info),
            own_items=False,
            seen=seen,
            counts=counts,
            check=flag.check,
        )
        assert next(keys)
        flag.set()
        with pytest.raises(ListingInterrupted):
            next(keys)
    assert counts.keys == 1


def test_no_room_for_the_keys_on_disk_is_one_line(tmp_path: Path) -> None:
    """Seen on a full TMPDIR (a 1 MB tmpfs, by hand): 'internal error (OperationalError:
    database or disk is full); please report it'. A folder that cannot hold the file fails
    the same way, which a test can make without mounting anything."""
    nowhere = tmp_path / "a-file"
    nowhere.write_text("")
    seen = KeySet(memory_keys=1, folder=str(nowhere))
    assert seen.new([b"Sa"]) == [b"Sa"]
    with pytest.raises(ExportError) as exc:
        seen.new([b"Sb"])
    said = one_line(exc)
    assert said.startswith(
        f"The keys seen, past 1 keys or 16,777,216 bytes, go to a file in {nowhere}"
    )
    assert "set TMPDIR to a folder with room" in str(exc.value) and not seen.on_disk


def test_one_segment_is_how_an_export_is_read_and_a_plan_is_refused() -> None:
    assert ListingOptions(from_export="x", segments=1, scan_segments=1).segments == 1
    with pytest.raises(ConfigurationError, match=r"drop trust_index=True \(--trust-index\)"):
        ListingOptions(from_export="x", trust_index=True)  # (True == 1: refused all the same)
    with pytest.raises(ConfigurationError, match="an export is read whole: list it with"):
        plan_listing(object(), "t", from_export="s3://b/p/AWSDynamoDB/01234567890123-a1b2c3d4/")


@pytest.mark.parametrize(
    "table_arn, refused",
    [
        ("arn:aws:dynamodb:us-east-1:123456789012:table/ProductCatalog", False),
        ("arn:aws:dynamodb:us-east-1:999999999999:table/ProductCatalog", True),  # (account)
        ("arn:aws:dynamodb:eu-west-1:123456789012:table/ProductCatalog", True),  # (region)
        ("arn:aws:dynamodb:ap-south-1:123456789012:table/ProductCatalog", False),  # (a replica)
    ],
)
def test_a_table_of_that_name_elsewhere_is_another_table(
    tmp_path: Path, table_arn: str, refused: bool
) -> None:
    """The issue: the manifest's table must be T, by its tableArn; a name alone let the export
    of a staging account's table list the production table (DynamoDB Local's own tables are
    in no account: an export read against one is a copy of AWS's, and not checked)."""
    fixture = product_catalog("DYNAMODB_JSON")
    folder = str(write(fixture, tmp_path, table_arn=table_arn))
    info = info_of(fixture)
    here = "arn:aws:dynamodb:us-east-1:123456789012:table/ProductCatalog"
    info = TableInfo(**{**info.__dict__, "arn": here, "replica_regions": ("ap-south-1",)})
    if not refused:
        assert len(read_raw(folder, info)[0]) == 8
        return
    with pytest.raises(ExportError) as exc:
        read_raw(folder, info)
    assert f"is an export of {table_arn}, not of {here}: another table" in one_line(exc)
    local = TableInfo(**{**info.__dict__, "arn": "arn:aws:dynamodb:ddblocal:000000000000:table/x"})
    assert len(read_raw(folder, local)[0]) == 8


# --- a read of S3 that breaks ------------------------------------------------------------------


class Breaking(io.RawIOBase):
    """An object's body from ``offset`` that breaks (as a reset connection does) after
    ``cut`` bytes: what botocore's body raises, IncompleteReadError, is a BotoCoreError."""

    def __init__(self, data: bytes, offset: int, cut: int) -> None:
        self.data, self.at, self.end = data, offset, min(len(data), offset + cut)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.at >= self.end and self.end < len(self.data):
            raise IncompleteReadError(actual_bytes=self.at, expected_bytes=len(self.data))
        count = min(len(buffer), self.end - self.at)
        buffer[:count] = self.data[self.at : self.at + count]
        self.at += count
        return count


def test_a_broken_read_goes_on_from_where_it_broke() -> None:
    data = bytes(range(256)) * 400
    asked: list[int] = []
    waits: list[float] = []

    def body_at(offset: int) -> Breaking:
        asked.append(offset)
        return Breaking(data, offset, 30_000)

    body = ResumingBody(body_at, "s3://b/k", sleep=waits.append)
    assert io.BufferedReader(body).read() == data
    assert asked == [0, 30_000, 60_000, 90_000] and body.resumed == 3
    assert waits == [0.4, 0.4, 0.4]  # (each attempt read something: no longer waits)


def test_a_read_that_never_goes_on_is_one_line() -> None:
    data = b"x" * 1000
    waits: list[float] = []
    body = ResumingBody(
        lambda offset: Breaking(data, offset, 0 if offset else 10), "s3://b/k", sleep=waits.append
    )
    with pytest.raises(ExportError) as exc:
        io.BufferedReader(body).read()
    assert one_line(exc).startswith("s3://b/k could not be read past byte 10 (IncompleteReadError")
    assert f"{ATTEMPTS} attempts in a row" in str(exc.value)
    assert len(waits) == ATTEMPTS - 1 and waits == sorted(waits)


def test_long_keys_go_to_disk_by_their_bytes(tmp_path: Path) -> None:
    """100,000 keys of 2,000 bytes held 281 MB (RSS) in memory: past ``memory_bytes`` of keys
    they go to disk, however few."""
    with KeySet(memory_bytes=10_000, folder=str(tmp_path)) as seen:
        long = [key_bytes({"S": f"{i:04d}" + "x" * 1996}) for i in range(4)]
        assert seen.new(long) == long and not seen.on_disk  # (8,004 bytes)
        assert seen.new([*long[:1], key_bytes({"S": "y" * 2000})]) == [b"S" + b"y" * 2000]
        assert seen.on_disk and seen.new(long) == [] and seen.count == 5


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_ddbkeys_type_of_another_type_is_your_item(tmp_path: Path, fmt: str) -> None:
    """Only the string "counter" makes an item a counter: a number, a set holding "counter",
    the bytes of "counter", a null or a map are your data, and their collections are listed."""
    counter = base64.b64encode(b"counter").decode()
    values = (
        [
            '{"S":"counter"}',
            '{"N":"1"}',
            '{"SS":["counter"]}',
            f'{{"B":"{counter}"}}',
            '{"NULL":true}',
            '{"M":{"S":{"S":"counter"}}}',
        ]
        if fmt == "DYNAMODB_JSON"
        else [
            '"counter"',
            "1.",
            '$dynamodb_SS::["counter"]',
            f"{{{{{counter}}}}}",
            "null",
            '{S:"counter"}',
        ]
    )
    shape = (
        '{"Item":{"pk":{"S":"k%d"},"ddbkeys_type":%s}}'
        if fmt == "DYNAMODB_JSON"
        else '$ion_1_0 {Item:{pk:"k%d",ddbkeys_type:%s}}'
    )
    lines = [shape % (number, value) for number, value in enumerate(values)]
    fixture = keyed("Types", "S", fmt, lines)
    keys, counts = read_raw(str(write(fixture, tmp_path)), info_of(fixture))
    assert [plain_key(k) for k in keys] == ["k1", "k2", "k3", "k4", "k5"]
    assert counts.own_items == 1


def test_data_files_gunzipped_after_the_copy_say_so(tmp_path: Path) -> None:
    """A user who ran gunzip -r over the copy: the manifest's .json.gz files are now .json."""
    fixture = own_items("DYNAMODB_JSON", "S")
    folder = write(fixture, tmp_path)
    for path in (folder / "data").iterdir():
        path.with_suffix("").write_bytes(gzip.decompress(path.read_bytes()))
        path.unlink()
    with pytest.raises(ExportError) as exc:
        read_raw(str(folder), info_of(fixture))
    assert "file00x7q.json.gz is missing, but file00x7q.json is beside it" in one_line(exc)
