"""A reader of standard output that goes away (``| head``, ``| true``): no error line, and not
exit 0 where the output was cut (a verdict such as ``index verify``'s may be unread), but 141 as
the shell says of a writer SIGPIPE stopped. A listing ends with 0 (every key it printed is
right: tests/cli/test_cli_listing_kills.py).

The pipe's reading end is closed before the command starts, so the first write breaks it every
time (``| true`` races the writer)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

#: 128 + SIGPIPE.
SIGPIPE_EXIT = 141


def into_closed_pipe(
    endpoint: str, *args: str, stderr_too: bool = False
) -> subprocess.CompletedProcess[str]:
    """``ddbkeys ARGS --endpoint-url ENDPOINT`` writing into a pipe nobody reads (its standard
    error too with ``stderr_too``, as ``2>&1 | head`` does; else captured)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "ddbkeys", *args, "--endpoint-url", endpoint],
            stdout=write,
            stderr=write if stderr_too else subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)


def test_a_reader_gone_away_is_no_error(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # (helper-66: `index verify | head` printed "Error: Broken pipe (EPIPE), writing the
    # output", as did estimate and ids next)
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    for n in range(30):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"c{n}"}, "sk": {"S": "a"}})
    created = into_closed_pipe(ddb_endpoint_url, "partition-keys", "index", "create", "-t", table)
    assert (created.returncode, created.stderr.count("Error")) == (SIGPIPE_EXIT, 0), created
    for args in (
        ("partition-keys", "index", "verify", "-t", table),  # unhealthy: 1 where read
        ("partition-keys", "index", "verify", "-t", table, "--output", "json"),
        ("partition-keys", "estimate", "-t", table),
        ("ids", "next", "-t", table, "--counter-key", '{"pk": "ids", "sk": "n"}', "-n", "3"),
    ):
        cut = into_closed_pipe(ddb_endpoint_url, *args)
        assert (cut.returncode, cut.stderr) == (SIGPIPE_EXIT, ""), (args, cut)
    listed = into_closed_pipe(ddb_endpoint_url, "partition-keys", "-t", table, "--method", "scan")
    assert listed.returncode == 0 and "Error" not in listed.stderr, listed


def test_a_follower_whose_reader_went_away_still_backfills(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # (helper-67: `index follow --backfill 2>&1 | head -1` ran on, but rich's SystemExit on the
    # broken pipe ended its backfill thread: the index never became provable, and nothing said)
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    for n in range(20):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"c{n}"}, "sk": {"S": "a"}})
    state = f"{table}-state"
    for step in ("create", "stream"):
        made = subprocess.run(
            [sys.executable, "-m", "ddbkeys", "partition-keys", "index", step, "-t", table],
            capture_output=True,
            text=True,
            env={**os.environ, "AWS_ENDPOINT_URL_DYNAMODB": ddb_endpoint_url},
            check=False,
        )
        assert made.returncode == 0, made.stderr
    followed = into_closed_pipe(
        ddb_endpoint_url,
        *("partition-keys", "index", "follow", "-t", table, "--backfill", "--until-caught-up"),
        *("--replay-margin", "1", "--state-table", state),
        stderr_too=True,
    )
    assert followed.returncode in (0, SIGPIPE_EXIT)
    status = subprocess.run(
        [
            sys.executable,
            "-m",
            "ddbkeys",
            "partition-keys",
            "index",
            "status",
            "-t",
            table,
            "--replay-margin",
            "1",
            "--state-table",
            state,
            "--endpoint-url",
            ddb_endpoint_url,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert status.returncode == 0 and "Provable: yes" in status.stdout, status
