"""Starting an export and waiting for it, against moto's server (DynamoDB Local has no exports),
on both drivers and from the CLI. What moto does and does not do with exports is in
tests/support/moto_server.py: where it differs from AWS, the test says so."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys._errors import ConfigurationError
from ddbkeys.partition_keys import ExportFailedError, TableExport
from ddbkeys.testing import FaultProxy
from ddbkeys.testing._proxy import Fault, Faults
from tests.support.drivers import Driver
from tests.support.moto_server import moto_client, moto_url
from tests.support.terminal import run_with_terminal_stderr

__all__ = ["moto_url"]  # (the fixture, for the tests of this module)

pytestmark = pytest.mark.integration

BUCKET = "ddbkeys-exports"


@pytest.fixture(scope="module")
def moto(moto_url: str) -> Any:
    """moto's DynamoDB, with the bucket exports go to."""
    moto_client(moto_url, "s3").create_bucket(Bucket=BUCKET)
    return moto_client(moto_url)


def make_table(client: Any, pitr: bool = True) -> str:
    name = f"export-{uuid.uuid4().hex[:8]}"
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.put_item(TableName=name, Item={"pk": {"S": "a"}})
    if pitr:
        client.update_continuous_backups(
            TableName=name,
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
        )
    return name


def export_cli(url: str, *args: str) -> Any:
    """``ddbkeys partition-keys export ARGS`` against moto's server."""
    return CliRunner().invoke(cli, ["partition-keys", "export", *args, "--endpoint-url", url])


def exports_of(client: Any, table: str) -> list[str]:
    arn = client.describe_table(TableName=table)["Table"]["TableArn"]
    return [e["ExportArn"] for e in client.list_exports(TableArn=arn)["ExportSummaries"]]


def test_start_then_wait_until_completed(moto: Any, driver: Driver) -> None:
    table = make_table(moto)
    started = driver.call(
        "start_export", moto, table, BUCKET, s3_prefix="ddbkeys", client_token="run-1"
    )
    assert isinstance(started, TableExport)
    assert exports_of(moto, table) == [started.export_arn]
    # The export's folder: PREFIX/AWSDynamoDB/<the ARN's last part>/ (AWS's layout; moto's own
    # files go to another folder, see tests/support/moto_server.py).
    assert started.uri == f"s3://{BUCKET}/ddbkeys/AWSDynamoDB/{started.export_id}/"
    assert started.export_arn.endswith("/" + started.export_id) and started.export_id
    assert (started.table, started.s3_bucket, started.client_token) == (table, BUCKET, "run-1")
    seen: list[str] = []
    done = driver.call(
        "wait_export",
        moto,
        started.export_arn,
        poll=0.05,
        deadline=30,
        on_progress=lambda e: seen.append(e.status),
    )
    assert done.status == "COMPLETED" and seen[-1] == "COMPLETED"
    assert done.uri == started.uri and done.item_count == 1


@pytest.fixture
def moto_proxy(moto_url: str) -> Iterator[FaultProxy]:
    with FaultProxy(moto_url) as proxy:
        yield proxy


def test_a_lost_answer_is_retried_with_the_same_client_token(
    moto: Any, moto_proxy: FaultProxy
) -> None:
    """The first ExportTableToPointInTime reaches moto and starts an export; its answer is lost;
    the retry layer sends it again with the same ClientToken. AWS answers a request with a token
    it has seen (within 8 hours, same arguments) with that same export: one export. moto ignores
    ClientToken and starts a second one, so the test checks ddbkeys' half: the same token, sent
    twice by one call, and the call's result."""
    table = make_table(moto)
    client = moto_client(moto_proxy.endpoint_url)
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "before-send.dynamodb.ExportTableToPointInTime",
        lambda request, **_: sent.append(json.loads(request.body)),
    )
    moto_proxy.set_faults(
        Faults(
            script=[Fault.LOSE_RESPONSE],
            script_operations=frozenset({"ExportTableToPointInTime"}),
        )
    )
    from ddbkeys.partition_keys import start_export  # noqa: PLC0415

    export = start_export(client, table, BUCKET, s3_prefix="p")
    assert moto_proxy.counts["lose_response"] == 1
    tokens = [body["ClientToken"] for body in sent]
    assert len(tokens) >= 2 and len(set(tokens)) == 1, tokens
    assert export.client_token == tokens[0]
    assert export.export_arn in exports_of(moto, table)
    # A second call with that token sends it again (AWS: the same export, for 8 hours).
    again = start_export(client, table, BUCKET, s3_prefix="p", client_token=tokens[0])
    assert sent[-1]["ClientToken"] == tokens[0] and again.client_token == tokens[0]


def test_pitr_off_is_one_line_and_starts_nothing(moto: Any, moto_url: str, driver: Driver) -> None:
    table = make_table(moto, pitr=False)
    with pytest.raises(ConfigurationError, match=f"Table '{table}' has point-in-time recovery"):
        driver.call("start_export", moto, table, BUCKET, s3_prefix="p")
    result = export_cli(
        moto_url, "start", "-t", table, "--s3-bucket", BUCKET, "--s3-prefix", "p", "--wait"
    )
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"Error: Table '{table}' has point-in-time recovery (PITR) off")
    assert f"update-continuous-backups --table-name {table} " in line
    assert exports_of(moto, table) == []


def test_a_table_object_names_its_table(moto: Any, moto_url: str) -> None:
    """A boto3 ``Table`` (a resource's) is taken as everywhere in ddbkeys: its name is the
    table's."""
    import boto3.session  # noqa: PLC0415

    table = make_table(moto)
    session: Any = boto3.session.Session()
    resource = session.resource(
        "dynamodb",
        endpoint_url=moto_url,
        region_name="us-east-1",
        aws_access_key_id="moto",
        aws_secret_access_key="moto",
    )
    from ddbkeys.partition_keys import start_export  # noqa: PLC0415

    export = start_export(resource.Table(table), None, BUCKET, s3_prefix="resource")
    assert export.table == table and export.export_arn in exports_of(moto, table)


def test_a_failed_export_is_one_line_with_its_reason(moto: Any, moto_url: str) -> None:
    """moto fails an export to a bucket that does not exist (FailureCode S3NoSuchBucket), as
    AWS would: no Stubber needed."""
    table = make_table(moto)
    from ddbkeys.partition_keys import start_export, wait_export  # noqa: PLC0415

    started = start_export(moto, table, "no-such-bucket-here", s3_prefix="p")
    with pytest.raises(ExportFailedError) as caught:
        wait_export(moto, started.export_arn, poll=0.05, deadline=30)
    assert str(caught.value) == (
        f"Export {started.export_arn} of table '{table}' FAILED (S3NoSuchBucket): "
        "The specified bucket does not exist."
    )
    result = export_cli(moto_url, "wait", "--export-arn", started.export_arn, "--poll", "0.05")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [f"Error: {caught.value}"]


def test_cli_start_wait_prints_the_uri_and_the_listing_to_run(moto: Any, moto_url: str) -> None:
    table = make_table(moto)
    result = export_cli(
        moto_url,
        "start",
        "-t",
        table,
        "--s3-bucket",
        BUCKET,
        "--s3-prefix",
        "ddbkeys",
        "--wait",
        "--poll",
        "0.05",
    )
    assert result.exit_code == 0, result.output
    (uri,) = result.stdout.splitlines()
    assert uri.startswith(f"s3://{BUCKET}/ddbkeys/AWSDynamoDB/") and uri.endswith("/")
    assert result.stderr.splitlines()[-1] == (
        f"List its keys: ddbkeys partition-keys -t {table} --from-export {uri}"
    )
    result = export_cli(
        moto_url,
        "start",
        "-t",
        table,
        "--s3-bucket",
        BUCKET,
        "--s3-prefix",
        "p",
        "--output",
        "json",
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["table"] == table and document["status"] in ("IN_PROGRESS", "COMPLETED")
    assert document["uri"] == f"s3://{BUCKET}/p/AWSDynamoDB/{document['export_id']}/"
    waited = export_cli(moto_url, "wait", "--export-arn", document["export_arn"], "--poll", "0.05")
    assert waited.exit_code == 0, waited.output
    assert waited.stdout.splitlines() == [document["uri"]]


def test_help_teaches_with_examples() -> None:
    runner = CliRunner()
    for args in (["export"], ["export", "start"], ["export", "wait"]):
        result = runner.invoke(cli, ["partition-keys", *args, "--help"])
        assert result.exit_code == 0, result.output
        assert "Examples:" in result.output
        assert "ddbkeys partition-keys export " in result.output
    start = " ".join(
        runner.invoke(cli, ["partition-keys", "export", "start", "--help"]).output.split()
    )
    assert "point-in-time recovery (PITR)" in start and "--s3-prefix" in start
    bad = runner.invoke(cli, ["partition-keys", "export", "wait", "--export-arn", "orders"])
    assert bad.exit_code == 2  # a usage error, before any client is made
    assert bad.stderr.splitlines()[-1].startswith(
        "Error: Invalid value for '--export-arn': 'orders' is not an export's ARN"
    )


def test_the_wait_is_drawn_on_a_terminal_and_stdout_has_the_uri_alone(
    moto: Any, moto_url: str
) -> None:
    """With stderr on a terminal, a status line (the project's StatusLine) while waiting; stdout
    carries the URI only. (moto's exports complete at once: one poll, drawn, then cleared.)"""
    table = make_table(moto)
    from ddbkeys.partition_keys import start_export  # noqa: PLC0415

    started = start_export(moto, table, BUCKET, s3_prefix="tty")
    command = [sys.executable, "-m", "ddbkeys", "partition-keys", "export", "wait"]
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160"}
    result, terminal = run_with_terminal_stderr(
        [*command, "--export-arn", started.export_arn, "--endpoint-url", moto_url], env
    )
    assert result.returncode == 0, terminal
    assert result.stdout.splitlines() == [started.uri]
    # What DescribeExport said, drawn as it came (then cleared).
    assert f"export {started.export_id} of {table}: COMPLETED (waited 0m 00s;" in terminal
    assert f"List its keys: ddbkeys partition-keys -t {table} --from-export {started.uri}" in (
        terminal.replace("\r\n", "\n")
    )
