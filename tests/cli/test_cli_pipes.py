"""A reader of standard output that goes away (``| head``, ``| true``): no error line, and not
exit 0 where the output was cut (a verdict such as ``index verify``'s may be unread), but 141 as
the shell says of a writer SIGPIPE stopped. A listing ends with 0 (every key it printed is
right: tests/cli/test_cli_listing_kills.py).

The pipe's reading end is closed before the command starts, so the first write breaks it every
time (``| true`` races the writer)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from ddbkeys._cli.group import rich_console

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


def without(endpoint: str, descriptor: int, *args: str) -> subprocess.CompletedProcess[str]:
    """``ddbkeys ARGS --endpoint-url ENDPOINT`` begun with standard output (1) or error (2)
    closed (``>&-``, ``2>&-``), the other captured."""
    return subprocess.run(
        [sys.executable, "-m", "ddbkeys", *args, "--endpoint-url", endpoint],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.close(descriptor),
        check=False,
    )


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
    ):
        cut = into_closed_pipe(ddb_endpoint_url, *args)
        assert (cut.returncode, cut.stderr) == (SIGPIPE_EXIT, ""), (args, cut)
    counter = '{"pk": "ids", "sk": "n"}'
    taken = into_closed_pipe(ddb_endpoint_url, "ids", "next", "-t", table, "--counter-key", counter)
    assert (taken.returncode, taken.stderr) == (  # (what it took, said: ids are not lost unsaid)
        SIGPIPE_EXIT,
        f"Id 1 taken from the counter at {counter} of table {table!r}; the output was cut before "
        "all of it was read.\n",
    )
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


def test_ids_cut_off_say_what_was_taken(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    # (helper-67: `ids next -n 100000 | head -1` exited 0, 99,999 ids unread and unsaid: Python's
    # buffered stdout took the write the pipe cut short for a whole one)
    table = ddb_table_factory(("pk", "S"))
    command = [sys.executable, "-m", "ddbkeys", "ids", "next", "-t", table, "--counter", "c"]
    command += ["--endpoint-url", ddb_endpoint_url]
    reader = subprocess.Popen(
        [*command, "-n", "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert reader.stdout is not None and reader.stderr is not None
    assert reader.stdout.readline() == "1\n"
    reader.stdout.close()  # as `head -1` does, with most of the ids still to write
    assert reader.wait(timeout=120) == SIGPIPE_EXIT
    assert reader.stderr.read() == (
        f"100000 ids, 1 to 100000, taken from counter 'c' of table {table!r}; the output was "
        "cut before all of it was read.\n"
    )
    reader.stderr.close()
    cut = into_closed_pipe(ddb_endpoint_url, "ids", "next", "-t", table, "--counter", "c")
    assert (cut.returncode, cut.stderr) == (
        SIGPIPE_EXIT,
        f"Id 100001 taken from counter 'c' of table {table!r}; the output was cut before all of "
        "it was read.\n",
    )
    # A standard output closed before it began (`>&-`): nothing taken, rather than an id lost.
    closed = subprocess.run(
        [*command, "-n", "5"],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),
        check=False,
    )
    assert (closed.returncode, closed.stderr) == (
        1,
        "Error: Standard output is closed, so the ids would be printed nowhere: none taken.\n",
    )
    current = subprocess.run(
        [*command[:4], "current", *command[5:]], capture_output=True, text=True, check=True
    )
    assert current.stdout == "100001\n"


def test_a_rich_line_into_a_pipe_no_one_reads_is_a_broken_pipe() -> None:
    # (helper-67: `demo | head -1` exited 1, which the demo says means a broken promise: rich's
    # own handler raised SystemExit(1) before the group's could say 141)
    read, write = os.pipe()
    os.close(read)
    stream = os.fdopen(write, "w")
    console = rich_console(file=stream)
    with pytest.raises(BrokenPipeError):
        console.print("every promise kept")
    assert console.quiet  # nothing more is tried
    with contextlib.suppress(BrokenPipeError):  # (what the stream still holds)
        stream.close()


def test_a_rich_line_off_a_terminal_is_one_line() -> None:
    # (helper-67: `index backfill 2>file` wrapped its "does not count" line at 80 columns)
    stream = io.StringIO()
    line = "The backfill does not count: " + "the table's stream began late; " * 8
    rich_console(file=stream).print(line, markup=False)
    assert stream.getvalue() == line + "\n"


def test_a_closed_stdout_is_said_not_written_to(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # (helper-68: a listing with `>&-` was an internal error; `ids put` said nothing of the
    # id it wrote, closed or cut)
    table = ddb_table_factory(("pk", "S"))
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}})

    def closed(*args: str) -> subprocess.CompletedProcess[str]:
        return without(ddb_endpoint_url, 1, *args)

    listed = closed("partition-keys", "-t", table)
    assert (listed.returncode, listed.stderr) == (
        1,
        "Error: Standard output is closed, so the keys would be written nowhere: nothing read. "
        "Give --output-file FILE, or leave standard output open.\n",
    )
    put = closed("ids", "put", "-t", table, "-s", "gapless", "--item", '{"pk": "u"}')
    assert (put.returncode, put.stderr) == (
        0,
        f"Id 1 written to table {table!r}, with its item; standard output is closed.\n",
    )
    cut = into_closed_pipe(
        ddb_endpoint_url, "ids", "put", "-t", table, "-s", "gapless", "--item", '{"pk": "v"}'
    )
    assert (cut.returncode, cut.stderr) == (
        SIGPIPE_EXIT,
        f"Id 2 written to table {table!r}, with its item; the output was cut before all of it "
        "was read.\n",
    )


def test_a_closed_stderr_keeps_error_lines_out_of_the_output(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # (helper-69: with `2>&-`, click wrote its Error and usage lines to standard output, into
    # the ids a script reads)
    table = ddb_table_factory(("pk", "S"))

    def without_stderr(*args: str) -> subprocess.CompletedProcess[str]:
        return without(ddb_endpoint_url, 2, *args)

    usage = without_stderr("ids", "next")
    missing = without_stderr("ids", "next", "-t", f"{table}-nosuch")
    passes = without_stderr("ids", "next", "-t", table, "-n", "2", "--maximum", "1")
    taken = without_stderr("ids", "next", "-t", table)
    assert [(r.returncode, r.stdout) for r in (usage, missing, passes, taken)] == [
        (2, ""),
        (1, ""),
        (1, ""),
        (0, "1\n"),
    ]


def test_a_closed_stdout_sends_what_a_command_says_to_stderr(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    # (helper-69: `ids current >&-` and `ids set >&-` ended 0 having said nothing anywhere)
    table = ddb_table_factory(("pk", "S"))

    def closed(*args: str) -> subprocess.CompletedProcess[str]:
        return without(ddb_endpoint_url, 1, *args)

    said = [closed("ids", "set", "-t", table, "41"), closed("ids", "current", "-t", table)]
    assert [(r.returncode, r.stderr) for r in said] == [(0, "41\n"), (0, "41\n")]


def test_a_usage_error_into_a_pipe_no_one_reads_is_141(ddb_endpoint_url: str) -> None:
    # (helper-69: `ids next 2>&1 | true` ended 1: click's usage line met the broken pipe
    # outside the group's handler)
    usage = into_closed_pipe(ddb_endpoint_url, "ids", "next", stderr_too=True)
    assert usage.returncode == SIGPIPE_EXIT
