"""``partition-keys --from-export`` as a new user runs it, against DynamoDB Local and an S3
endpoint (moto's server): the folder above the export named instead of it, ``~`` and the
manifest's own path, options that read the table, a resume token, no AWS credentials for S3 or
no access to it (a Stubber: moto's server enforces no IAM), a stop between two keys, and a long
listing stopped (SIGTERM) or killed (kill -9) once its keys went to disk."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import aiobotocore.session
import boto3
import pytest
from botocore.stub import Stubber

from ddbkeys import ConfigurationError, ListingInterrupted
from ddbkeys.aio._listing import distinct_partition_keys as aio_keys
from ddbkeys.partition_keys import distinct_partition_keys, read_text_key
from ddbkeys.partition_keys._export.location import export_folder
from ddbkeys.partition_keys._export.manifest import ExportError
from ddbkeys.testing import TableFactory
from tests.integration.test_index_async import run
from tests.support.exports import Fixture, own_items, write
from tests.support.s3 import environ_for, moto_server, s3_client, upload

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture(scope="module")
def s3_url() -> Iterator[str]:
    with moto_server() as url:
        yield url


def of_new_table(fixture: Fixture, factory: TableFactory) -> Fixture:
    """``fixture`` as an export, taken now, of a new table of its key schema."""
    types = {a["AttributeName"]: a["AttributeType"] for a in fixture.attributes}
    keys = {k["KeyType"]: k["AttributeName"] for k in fixture.key_schema}
    sort = keys.get("RANGE")
    fixture.table = factory(
        (keys["HASH"], types[keys["HASH"]]), (sort, types[sort]) if sort else None
    )
    fixture.export_time = datetime.now(UTC).isoformat(timespec="milliseconds")
    return fixture


def many_keys(
    count: int, factory: TableFactory, sort_keys: tuple[str, ...] = ("a", "b")
) -> Fixture:
    """An export of ``count`` collections of an item at each of ``sort_keys``, over four data
    files."""
    files = [
        [
            json.dumps({"Item": {"pk": {"S": f"user#{i:08d}"}, "sk": {"S": sk}}})
            for i in range(part, count, 4)
            for sk in sort_keys
        ]
        for part in range(4)
    ]
    fixture = Fixture(
        table="",
        key_schema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        attributes=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        fmt="DYNAMODB_JSON",
        files=files,
        keys=set(),
    )
    return of_new_table(fixture, factory)


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ddbkeys", *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed command said."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    return lines[0]


def test_the_folder_above_the_export_names_it(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, s3_url: str, tmp_path: Path
) -> None:
    fixture = of_new_table(own_items("ION", "S"), ddb_table_factory)
    write(fixture, tmp_path / "bucket")
    common = ["partition-keys", "-t", fixture.table, "--endpoint-url", ddb_endpoint_url]
    parent = tmp_path / "bucket" / "2020-Nov" / "AWSDynamoDB"
    said = error_line(cli(*common, "--from-export", str(parent)))
    assert said.endswith(f"but it holds one: pass {parent}/{fixture.export_id}/")

    s3 = s3_client(s3_url)
    s3.create_bucket(Bucket="new-user-exports")
    upload(s3, "new-user-exports", tmp_path / "bucket")
    env = {**environ_for(s3_url), "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "x"}
    export = f"s3://new-user-exports/{fixture.folder_key}"
    said = error_line(cli(*common, "--from-export", "s3://new-user-exports/2020-Nov", env=env))
    assert said.endswith(f"but it holds one: pass {export}")
    done = cli(*common, "--from-export", export, env=env)  # (what it said to pass)
    assert done.returncode == 0, done.stderr
    assert {read_text_key(line) for line in done.stdout.splitlines()} == fixture.keys


def test_home_and_the_manifests_own_path(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    fixture = of_new_table(own_items("DYNAMODB_JSON", "S"), ddb_table_factory)
    folder = write(fixture, tmp_path / "home" / "copy")
    common = ["partition-keys", "-t", fixture.table, "--endpoint-url", ddb_endpoint_url, "-q"]
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    for uri, cwd in (
        (f"~/copy/{fixture.folder_key}", None),  # (--from-export=~/... : no shell expands it)
        ("manifest-summary.json", folder),
    ):
        done = cli(*common, "--from-export", uri, env=env, cwd=cwd)
        assert done.returncode == 0, done.stderr
        assert {read_text_key(line) for line in done.stdout.splitlines()} == fixture.keys


def test_options_that_read_the_table_are_refused_read_limits_kept(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    fixture = of_new_table(own_items("DYNAMODB_JSON", "S"), ddb_table_factory)
    folder = str(write(fixture, tmp_path))
    common = ["partition-keys", "-t", fixture.table, "--endpoint-url", ddb_endpoint_url]
    for option, why in (
        (["--segments", "4"], "drop --segments (it reads the export's files one after another)"),
        (["--scan-segments", "8"], "drop --scan-segments"),
        (["--trust-index"], "drop --trust-index (it reads no marker index)"),
    ):
        refused = cli(*common, "--from-export", folder, *option)
        assert refused.returncode == 2 and why in refused.stderr, refused.stderr
    done = cli(*common, "--from-export", folder, "--max-rcu-per-second", "5", "--read-percent", "1")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == len(fixture.keys)


def test_a_resume_token_is_refused_not_ignored(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    fixture = of_new_table(own_items("ION", "B"), ddb_table_factory)
    folder = str(write(fixture, tmp_path))
    token = distinct_partition_keys(ddb_client, fixture.table, "scan").checkpoint()
    with pytest.raises(ConfigurationError, match=r"drop resume \(--resume\)"):
        distinct_partition_keys(ddb_client, fixture.table, from_export=folder, resume=token)

    async def body(client: Any) -> None:
        with pytest.raises(ConfigurationError, match=r"drop resume \(--resume\)"):
            await aio_keys(client, fixture.table, from_export=folder, resume=token)

    run(ddb_client, body)


def test_no_credentials_for_s3_is_one_line_saying_what_to_set(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, s3_url: str, tmp_path: Path
) -> None:
    fixture = of_new_table(own_items("ION", "S"), ddb_table_factory)
    env = {
        name: value
        for name, value in environ_for(s3_url).items()
        if not name.startswith("AWS_") or name == "AWS_ENDPOINT_URL_S3"
    }
    env.update(
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_DEFAULT_REGION="us-east-1",
    )
    uri = f"s3://anywhere/{fixture.folder_key}"
    said = error_line(
        cli(
            "partition-keys",
            *("-t", fixture.table, "--endpoint-url", ddb_endpoint_url, "--from-export", uri),
            env=env,
        )
    )
    assert "no AWS credentials for S3. Set AWS_PROFILE or pass --profile" in said


def started(
    fixture: Fixture, endpoint: str, folder: Path, spill: Path, *options: str
) -> subprocess.Popen[str]:
    """The CLI listing ``folder``, its temporary files in ``spill``."""
    command = ["partition-keys", "-t", fixture.table, "--endpoint-url", endpoint]
    return subprocess.Popen(
        [sys.executable, "-m", "ddbkeys", *command, "--from-export", str(folder), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(spill)},
    )


def past_memory(stream: IO[str] | None) -> None:
    """Read the keys written until more than the 100,000 kept in memory were handed out."""
    assert stream is not None
    for count, _ in enumerate(stream, 1):
        if count > 110_000:
            return
    raise AssertionError("the listing ended before its keys went to disk")


def test_a_kill_9_once_the_keys_went_to_disk_leaves_nothing_there(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    fixture = many_keys(160_000, ddb_table_factory)
    folder = write(fixture, tmp_path / "bucket")
    spill = tmp_path / "tmp"
    spill.mkdir()
    listing = started(fixture, ddb_endpoint_url, folder, spill)
    try:
        past_memory(listing.stdout)
        listing.kill()
    finally:
        listing.communicate(timeout=60)
    assert listing.returncode == -signal.SIGKILL
    assert not list(spill.iterdir())


def test_sigterm_says_no_more_keys_than_items_read(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    fixture = many_keys(600_000, ddb_table_factory, ("a",))  # (150,000 items a file)
    folder = write(fixture, tmp_path / "bucket")
    spill = tmp_path / "tmp"
    spill.mkdir()
    listing = started(fixture, ddb_endpoint_url, folder, spill, "--output", "jsonl")
    try:
        past_memory(listing.stdout)
        listing.send_signal(signal.SIGTERM)
    finally:
        _, stderr = listing.communicate(timeout=60)
    assert listing.returncode == 128 + signal.SIGTERM, stderr
    said = stderr.strip().splitlines()
    assert said[0].startswith("Stopped by SIGTERM after ") and len(said) == 2, stderr
    keys = int(said[0].split(" after ", 1)[1].split(" keys", 1)[0])
    items = int(said[0].split(" data files, ", 1)[1].split(" items read", 1)[0])
    assert 110_000 < keys <= items < 600_000
    assert not list(spill.iterdir())


def test_stop_interrupts_at_the_next_key(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    fixture = of_new_table(own_items("DYNAMODB_JSON", "S"), ddb_table_factory)
    listing = distinct_partition_keys(
        ddb_client, fixture.table, from_export=str(write(fixture, tmp_path))
    )
    keys = iter(listing)
    assert next(keys) in fixture.keys
    listing.stop()
    with pytest.raises(ListingInterrupted):
        next(keys)
    assert listing.keys_found == 1 and not listing.finished


def test_access_denied_on_s3_says_which_permissions() -> None:
    """A Stubber, as moto's server does not enforce IAM or KMS key policies: the error S3
    answers a reader without s3:GetObject (or kms:Decrypt on an SSE-KMS export)."""
    s3 = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
    )
    with Stubber(s3) as stub:
        stub.add_client_error("get_object", "AccessDenied", "Access Denied", 403)
        folder = export_folder("s3://bucket/p/AWSDynamoDB/01234567890123-a1b2c3d4/", s3)
        with pytest.raises(ExportError) as exc:
            folder.read("manifest-summary.json")
    said = str(exc.value)
    assert "\n" not in said
    assert said.startswith("s3://bucket/p/AWSDynamoDB/01234567890123-a1b2c3d4/manifest-summary")
    assert "s3:GetObject" in said and "kms:Decrypt" in said and "iam-policy" not in said


@contextmanager
def cutting_proxy(upstream: str, cut: int) -> Iterator[str]:
    """A TCP proxy to ``upstream`` (http://host:port) that closes each connection after
    ``cut`` bytes of answer: a connection reset in the middle of a large object's body."""
    host, port = upstream.removeprefix("http://").split(":")
    server = socket.create_server(("127.0.0.1", 0))
    stopping = threading.Event()

    def pipe(source: socket.socket, sink: socket.socket, limit: int | None) -> None:
        sent = 0
        try:
            while data := source.recv(65536):
                if limit is not None and sent + len(data) >= limit:
                    sink.sendall(data[: limit - sent])
                    break
                sink.sendall(data)
                sent += len(data)
        except OSError:
            pass
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def serve() -> None:
        while not stopping.is_set():
            try:
                client, _ = server.accept()
            except OSError:
                return
            target = socket.create_connection((host, int(port)))
            threading.Thread(target=pipe, args=(client, target, None), daemon=True).start()
            threading.Thread(target=pipe, args=(target, client, cut), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stopping.set()
        server.close()


def test_a_connection_that_breaks_in_a_data_file_goes_on_where_it_broke(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, s3_url: str, tmp_path: Path
) -> None:
    """Seen through this proxy before: 'file00x7q.json.gz is truncated or not gzip (EOFError
    ...): copy the export again', of a file that was whole on S3."""
    fixture = Fixture(
        table="",
        key_schema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        attributes=[{"AttributeName": "pk", "AttributeType": "S"}],
        fmt="DYNAMODB_JSON",
        files=[[json.dumps({"Item": {"pk": {"S": os.urandom(24).hex()}}}) for _ in range(12_000)]],
        keys=set(),
    )
    fixture = of_new_table(fixture, ddb_table_factory)
    keys = {json.loads(line)["Item"]["pk"]["S"] for line in fixture.files[0]}
    s3 = s3_client(s3_url)
    s3.create_bucket(Bucket="cut-exports")
    folder = write(fixture, tmp_path)
    (data,) = (folder / "data").iterdir()
    assert data.stat().st_size > 300_000  # (three cuts at least)
    upload(s3, "cut-exports", tmp_path)
    with cutting_proxy(s3_url, 100_000) as proxy:
        env = {**environ_for(proxy), "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "x"}
        done = cli(
            "partition-keys",
            *("-t", fixture.table, "--endpoint-url", ddb_endpoint_url),
            *("--from-export", f"s3://cut-exports/{fixture.folder_key}"),
            env=env,
        )
    assert done.returncode == 0, done.stderr
    assert set(done.stdout.splitlines()) == keys and len(done.stdout.splitlines()) == len(keys)


def test_an_aiobotocore_s3_client_is_refused_in_a_line(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, s3_url: str, tmp_path: Path
) -> None:
    """An asyncio user hands the S3 client of their kind: it was a TypeError ('coroutine'
    object is not subscriptable) and a coroutine never awaited."""
    fixture = of_new_table(own_items("ION", "S"), ddb_table_factory)
    session = aiobotocore.session.get_session()

    async def body(client: Any) -> None:
        async with session.create_client(
            "s3",
            endpoint_url=s3_url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ) as s3:
            with pytest.raises(ConfigurationError, match="s3 must be a boto3 S3 client, not aio"):
                await aio_keys(
                    client, fixture.table, from_export=f"s3://b/{fixture.folder_key}", s3=s3
                )

    run(ddb_client, body)


def test_a_cancelled_asyncio_listing_ends_as_cancelled(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, tmp_path: Path
) -> None:
    """asyncio.wait_for over an export listing: a TimeoutError, the thread reading a chunk
    done before the keys are closed (it was 'ValueError: generator already executing', seen
    on 2M keys cancelled after 5 s; here three cancellations, most of a listing's time being
    a chunk read in the thread)."""
    fixture = many_keys(200_000, ddb_table_factory, ("a",))
    folder = str(write(fixture, tmp_path / "bucket"))
    ended: list[str] = []

    async def body(client: Any) -> None:
        for seconds in (0.3, 0.5, 0.8):
            listing = await aio_keys(client, fixture.table, from_export=folder)
            count = [0]

            async def consume(listing: Any = listing, count: list[int] = count) -> None:
                async for _ in listing:
                    count[0] += 1

            try:
                await asyncio.wait_for(consume(), timeout=seconds)
            except TimeoutError:
                ended.append("timeout")
            else:
                ended.append(f"finished after {count[0]} keys")

    run(ddb_client, body)
    assert ended == ["timeout"] * 3


def test_an_s3_uri_that_boto3_refuses_is_one_line(s3_url: str) -> None:
    """botocore checks a bucket's name before it sends anything, in an error of several lines
    (ParamValidationError): one line, naming the object."""
    folder = export_folder("s3://My Bucket/x/", s3_client(s3_url))
    with pytest.raises(ExportError) as exc:
        folder.read("manifest-summary.json")
    said = str(exc.value)
    assert said.startswith("s3://My Bucket/x/manifest-summary.json could not be read: Parameter")
    assert "\n" not in said
