"""``distinct_partition_keys(..., from_export=URI)`` and ``partition-keys --from-export``: the
documented fixtures (tests/support/exports.py), DynamoDB JSON and Ion, on disk and through an S3
endpoint (moto's server), for a table in DynamoDB Local with their key schema; no read unit."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys import ConfigurationError, ListingInterrupted
from ddbkeys.aio import AsyncExportListing
from ddbkeys.aio._listing import distinct_partition_keys as aio_keys
from ddbkeys.partition_keys import ExportListing, distinct_partition_keys, read_text_key
from ddbkeys.testing import TableFactory
from tests.integration.test_index_async import run
from tests.support.exports import Fixture, own_items, product_catalog, write
from tests.support.s3 import environ_for, moto_server, s3_client, upload

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture(scope="module")
def s3_url() -> Iterator[str]:
    with moto_server() as url:
        yield url


def table_for(fixture: Fixture, factory: TableFactory) -> Fixture:
    """``fixture`` as an export of a new table of its key schema, taken now."""
    types = {a["AttributeName"]: a["AttributeType"] for a in fixture.attributes}
    keys = {k["KeyType"]: k["AttributeName"] for k in fixture.key_schema}
    sort = keys.get("RANGE")
    fixture.table = factory(
        (keys["HASH"], types[keys["HASH"]]), (sort, types[sort]) if sort else None
    )
    fixture.export_time = datetime.now(UTC).isoformat(timespec="milliseconds")
    return fixture


CASES = [
    ("DYNAMODB_JSON", None),
    ("ION", None),
    ("DYNAMODB_JSON", "S"),
    ("ION", "N"),
    ("DYNAMODB_JSON", "B"),
    ("ION", "B"),
]


@pytest.mark.parametrize("fmt, key_type", CASES)
def test_on_disk_and_through_s3(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    s3_url: str,
    tmp_path: Path,
    fmt: str,
    key_type: str | None,
) -> None:
    fixture = product_catalog(fmt) if key_type is None else own_items(fmt, key_type)
    fixture = table_for(fixture, ddb_table_factory)
    folder = write(fixture, tmp_path)
    listing = distinct_partition_keys(ddb_client, fixture.table, from_export=str(folder))
    assert isinstance(listing, ExportListing)
    keys = list(listing)
    assert len(keys) == len(set(keys)) and set(keys) == fixture.keys
    assert listing.usage.read_units == 0 and listing.usage.requests == 0  # (no read)
    assert listing.finished and listing.method_name == "export"
    assert "the table as it was at" in listing.method_reason
    with pytest.raises(ConfigurationError, match="does not resume: run it again"):
        listing.checkpoint()

    s3 = s3_client(s3_url)
    bucket = f"exports-{fmt.lower().replace('_', '-')}-{(key_type or 'x').lower()}"
    s3.create_bucket(Bucket=bucket)
    upload(s3, bucket, tmp_path)
    uri = f"s3://{bucket}/{fixture.folder_key}"
    through_s3 = distinct_partition_keys(ddb_client, fixture.table, from_export=uri, s3=s3)
    assert sorted(map(repr, through_s3)) == sorted(map(repr, keys))
    with_own = distinct_partition_keys(
        ddb_client, fixture.table, from_export=uri, s3=s3, include_own_items=True
    )
    assert set(with_own) == fixture.with_own


def test_asyncio_reads_the_export_in_a_thread(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    fixture = table_for(own_items("ION", "N"), ddb_table_factory)
    folder = write(fixture, tmp_path)
    seen: list[int] = []

    async def body(client: Any) -> None:
        async def noted(listing: Any) -> None:
            seen.append(listing.keys_found)

        listing = await aio_keys(client, fixture.table, from_export=str(folder), on_key=noted)
        assert isinstance(listing, AsyncExportListing)
        keys = [k async for k in listing]
        assert len(keys) == len(set(keys)) and set(keys) == fixture.keys
        assert isinstance(listing, AsyncExportListing)
        assert listing.finished and listing.as_of.startswith("exact as of ")
        with pytest.raises(ConfigurationError, match="does not resume"):
            listing.checkpoint()

    run(ddb_client, body)
    assert seen[: len(fixture.keys)] == list(range(1, len(fixture.keys) + 1))


def test_settings_that_read_the_table_do_not_go_with_an_export(
    ddb_client: DynamoDBClient, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError, match="drop method='scan'"):
        distinct_partition_keys(ddb_client, "t", "scan", from_export=str(tmp_path))


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ddbkeys", *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_cli_lists_an_export_and_says_as_of_when(
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    s3_url: str,
    tmp_path: Path,
) -> None:
    fixture = table_for(own_items("ION", "S"), ddb_table_factory)
    folder = write(fixture, tmp_path / "bucket")
    common = ["partition-keys", "-t", fixture.table, "--endpoint-url", ddb_endpoint_url]
    done = cli(*common, "--from-export", str(folder))
    assert done.returncode == 0, done.stderr
    assert {read_text_key(line) for line in done.stdout.splitlines()} == fixture.keys
    summary = done.stderr.strip().splitlines()[-1]
    assert summary.startswith(f"{len(fixture.keys)} keys (export, exact as of ")
    assert "3 of 3 data files, 11 items read, 0 RCU" in summary

    s3 = s3_client(s3_url)
    s3.create_bucket(Bucket="cli-exports")
    upload(s3, "cli-exports", tmp_path / "bucket")
    env = {**environ_for(s3_url), "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "x"}
    uri = f"s3://cli-exports/{fixture.folder_key}"
    done = cli(*common, "--from-export", uri, "--output", "json", env=env)
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    assert set(document["keys"]) == fixture.keys and document["method"] == "export"
    assert document["export"]["uri"] == uri and document["export"]["files"] == 3

    refused = cli(*common, "--from-export", str(folder), "--method", "scan")
    assert refused.returncode == 2 and "drop --method" in refused.stderr
    other = cli(*common, "--from-export", str(tmp_path))
    assert other.returncode == 1
    assert len(other.stderr.strip().splitlines()) == 1, other.stderr
    assert "manifest-summary.json" in other.stderr
    missing = cli(*common, "--from-export", "s3://cli-exports/nothing-here/", env=env)
    assert missing.returncode == 1 and "not an export's folder" in missing.stderr, missing.stderr


def test_a_stopped_export_listing_says_to_run_it_again(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    fixture = table_for(own_items("DYNAMODB_JSON", "S"), ddb_table_factory)
    listing = distinct_partition_keys(
        ddb_client, fixture.table, from_export=str(write(fixture, tmp_path))
    )
    keys = iter(listing)
    next(keys)
    listing.stop()
    with pytest.raises(ListingInterrupted):
        next(keys)
    with pytest.raises(ListingInterrupted, match="Run it again") as said:
        next(keys)
    assert "checkpoint" not in str(said.value)
