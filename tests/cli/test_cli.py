"""The CLI as a user meets it: exit codes, exact error lines, --help everywhere, no tracebacks."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click
import pytest
from click.testing import CliRunner

from ddbkeys import __version__
from ddbkeys._cli import cli
from ddbkeys.partition_keys._index.state import StateStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory


INDEX = "ddbkeys-partition-keys"  # (the marker index's default name)


def run(*args: str, env: dict[str, str | None] | None = None) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), env=env)


def all_commands(group: click.Group = cli, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # (loading each: the root's commands load on demand)
        command = group.get_command(ctx, name)
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found.extend(all_commands(command, (*prefix, name)))
    return found


@pytest.mark.parametrize("path", [(), *all_commands()], ids=lambda p: " ".join(p) or "ddbkeys")
def test_help_for_every_command(path: tuple[str, ...]) -> None:
    result = run(*path, "--help")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: ddbkeys {' '.join(path)}".rstrip())
    # Each command has a real description, not just the usage line, and an example to copy
    # (tests/docs/test_examples.py runs them).
    assert len(result.output.splitlines()) > 5
    lines = result.output.splitlines()
    assert any(line.strip().startswith("ddbkeys ") for line in lines), "no example"


@pytest.mark.parametrize("name", ["index", "estimate", "export"])
def test_a_command_of_a_group_named_at_the_top_says_where_it_is(name: str) -> None:
    # (`ddbkeys index --help` said only "No such command 'index'", to a new user who had read
    # of "the marker index")
    result = run(name, "--help")
    assert result.exit_code == 2
    assert f"did you mean `ddbkeys partition-keys {name}`?" in result.output
    assert "did you mean" not in run("nosuch").output


def commands_taking(option: str) -> list[tuple[str, ...]]:
    """Every command that takes ``option``."""
    found = []
    for path in all_commands():
        command: click.Command | None = cli
        for name in path:
            assert isinstance(command, click.Group)
            command = command.get_command(click.Context(command), name)
        assert command is not None
        if any(option in getattr(param, "opts", ()) for param in command.params):
            found.append(path)
    return found


def table_commands() -> list[tuple[str, ...]]:
    """Every command that takes a table's name (-t)."""
    return commands_taking("--table-name")


@pytest.mark.parametrize("path", table_commands(), ids=" ".join)
def test_a_table_name_dynamodb_refuses_is_a_usage_error_before_any_request(
    path: tuple[str, ...],
) -> None:
    """A helper's find: `-t 'bad name!'` exited 1 with the library's line, as a failure of the
    work would; it is the command line at fault (exit 2, the option named)."""
    # (iam-policy sends no request: it takes the command it writes a policy for)
    rest = (
        ("partition-keys",) if path == ("iam-policy",) else ("--endpoint-url", "http://127.0.0.1:1")
    )
    result = run(*path, "-t", "no way!", *rest)
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--table-name' / '-t': 'no way!' is not a table's name" in (
        result.output
    )
    assert len(table_commands()) >= 15  # (every command of a table, not a few)


def index_commands() -> list[tuple[str, ...]]:
    """Every command that takes a marker index's name (--index-name)."""
    return commands_taking("--index-name")


@pytest.mark.parametrize("path", index_commands(), ids=" ".join)
def test_an_index_name_dynamodb_refuses_is_a_usage_error_before_any_request(
    path: tuple[str, ...],
) -> None:
    """A helper's find: `--index-name 'a b'` was sent to DynamoDB (or failed to connect)."""
    rest = (
        ("partition-keys",) if path == ("iam-policy",) else ("--endpoint-url", "http://127.0.0.1:1")
    )
    result = run(*path, "-t", "orders", "--index-name", "a b", *rest)
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--index-name': 'a b' is not an index's name" in result.output
    assert len(index_commands()) >= 8


def test_a_state_table_name_dynamodb_refuses_is_a_usage_error() -> None:
    result = run("partition-keys", "-t", "orders", "--state-table", "x", "--endpoint-url", "x")
    assert result.exit_code == 2 and "Invalid value for '--state-table': 'x'" in result.output
    # From the environment: the line names the variable the user set, not an option not given.
    env: dict[str, str | None] = {"DDBKEYS_STATE_TABLE": "x"}
    hidden = run("partition-keys", "-t", "orders", "--endpoint-url", "x", env=env)
    assert hidden.exit_code == 2
    assert "DDBKEYS_STATE_TABLE='x' (from the environment) is not a table's name" in hidden.output


def test_connection_options_after_the_command_name() -> None:
    for option in ("--endpoint-url", "--region", "--profile", "--local", "--output"):
        assert option in run("demo", "--help").output


def test_the_demo_says_where_it_runs_and_never_reads_the_endpoint_from_the_environment() -> None:
    """The demo makes and deletes tables: it runs on an embedded DynamoDB Local unless given
    --endpoint-url, and its --help says so (it used to promise AWS_ENDPOINT_URL_DYNAMODB)."""
    text = " ".join(run("demo", "--help").output.split())
    assert "Default: an embedded DynamoDB Local (AWS_ENDPOINT_URL_DYNAMODB is not read" in text
    assert "Default: AWS_ENDPOINT_URL_DYNAMODB" not in text
    assert "Default: AWS_ENDPOINT_URL_DYNAMODB" in " ".join(
        run("ids", "next", "--help").output.split()
    )


def test_local_is_offered_only_where_a_table_need_not_exist() -> None:
    """--local starts an empty server: on a command whose table must exist it is not in
    --help, and given anyway it says what to do instead (it failed with "table not found")."""
    assert "--local" not in run("ids", "next", "--help").output
    result = run("ids", "next", "-t", "orders", "--local")
    assert result.exit_code == 2
    assert "run `ddbkeys local` in another shell and pass the --endpoint-url" in result.output


def test_version() -> None:
    result = run("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"ddbkeys, version {__version__}"


def test_unknown_option_is_a_usage_error() -> None:
    result = run("demo", "--no-such-option")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == "Error: No such option '--no-such-option'."


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("-5", "-5 is not in the range 0<=x<=" + "9" * 38 + "."),
        ("-1.5", "'-1.5' is not a valid integer."),
        ("-1e3", "'-1e3' is not a valid integer."),
    ],
)
def test_a_negative_value_is_judged_as_the_value_not_taken_for_an_option(
    given: str, said: str
) -> None:
    """``ids set -5``: click took -5 for an option ("No such option '-5'"); it is VALUE's."""
    result = run("ids", "set", "-t", "orders", given)
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == f"Error: Invalid value for 'VALUE': {said}"
    typo = run("ids", "set", "-t", "orders", "-x", "5")
    assert typo.output.splitlines()[-1] == "Error: No such option '-x'."


def test_bad_output_choice_is_a_usage_error() -> None:
    result = run("demo", "--output", "yaml")
    assert result.exit_code == 2
    assert "Error: Invalid value for '--output'" in result.output


def test_local_and_endpoint_together_is_a_usage_error() -> None:
    result = run("demo", "--local", "--endpoint-url", "http://127.0.0.1:8000")
    assert result.exit_code == 2
    assert (
        result.output.splitlines()[-1]
        == "Error: --local and --endpoint-url cannot be used together."
    )


def test_unreachable_endpoint_is_a_runtime_error() -> None:
    result = run("demo", "--endpoint-url", "http://127.0.0.1:9")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        "Error: Could not connect to the DynamoDB endpoint http://127.0.0.1:9/: is it running, "
        "and is the URL right? Check --endpoint-url or AWS_ENDPOINT_URL_DYNAMODB."
    )
    assert "Traceback" not in result.output


def test_bad_endpoint_url() -> None:
    result = run("demo", "--endpoint-url", "localhost:8000")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        "Error: Endpoint URL 'localhost:8000' is not an http:// or https:// URL, for example "
        "http://127.0.0.1:8000."
    )


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://[::1", " (Invalid IPv6 URL)"),
        ("http://127.0.0.1:99999", " (Port out of range 0-65535)"),
        ("http://127.0.0.1:abc", " (Port could not be cast to integer value as 'abc')"),
        ("https://x y", " (it holds a space or a control character)"),
        ("http://:8000", ""),
    ],
)
def test_malformed_endpoint_url_is_no_internal_error(url: str, why: str) -> None:
    result = run("ids", "current", "-t", "orders", "--endpoint-url", url)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"Error: Endpoint URL {url!r} is not an http:// or https:// URL{why}, for example "
        "http://127.0.0.1:8000."
    ]


def test_missing_region(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("")
    env: dict[str, str | None] = {
        "AWS_CONFIG_FILE": str(config),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "nope"),
        "AWS_REGION": None,
        "AWS_DEFAULT_REGION": None,
        "AWS_PROFILE": None,
        "AWS_ENDPOINT_URL": None,
        "AWS_ENDPOINT_URL_DYNAMODB": None,
    }
    result = run("demo", "--endpoint-url", "https://dynamodb.example.com", env=env)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith("Error: No AWS region set. Pass --region")


def test_python_dash_m() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ddbkeys", "--version"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"ddbkeys, version {__version__}"


@pytest.mark.embedded
def test_local_fetch_only_prints_the_jar() -> None:
    result = run("local", "--fetch-only", "--output", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["jar"].endswith(".jar")


@pytest.mark.embedded
def test_local_runs_in_the_foreground_until_interrupted() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "ddbkeys", "local"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        second = process.stdout.readline()
        assert first.startswith("DynamoDB Local is running on http://127.0.0.1:")
        endpoint = first.split(" on ", 1)[1].split(" ", 1)[0]
        assert second.strip() == f"export AWS_ENDPOINT_URL_DYNAMODB={endpoint}"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        assert process.stderr is not None
        assert "Traceback" not in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.integration
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a disk always full)")
def test_a_full_disk_is_named_not_reported_as_an_internal_error(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Keys or an id written where no space is left: the system's words in one line, exit 1
    (it was "internal error ... please report it")."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for n in range(3):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"k{n}"}, "sk": {"N": "1"}})
    commands = [
        ["partition-keys", "-t", table, "-q"],
        ["partition-keys", "-t", table, "-q", "--output-file", "/dev/full"],
        ["ids", "next", "-t", table, "--counter-key", '{"pk": "c", "sk": 0}'],
    ]
    for command in commands:
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "ddbkeys", *command, "--endpoint-url", ddb_endpoint_url],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                timeout=60,
                check=False,
            )
        assert done.returncode == 1, done.stderr
        assert done.stderr == (
            "Error: No space left on device (ENOSPC), writing the output (standard output, or "
            "the file it goes to).\n"
        ), command


@pytest.mark.integration
def test_follow_says_when_the_tables_stream_is_off_and_waits(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """(A running follower ended with "has no stream" when it looked at the table between the
    two updates that change the stream's view type.) It says so in a line, and goes on."""
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    where = ["-t", table, "--endpoint-url", ddb_endpoint_url]
    for command in ("stream", "create"):
        done = subprocess.run(
            [sys.executable, "-m", "ddbkeys", "partition-keys", "index", command, *where],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    follow = ["partition-keys", "index", "follow", *where, "--poll", "0.1"]
    process = subprocess.Popen(
        [sys.executable, "-m", "ddbkeys", *follow, "--state-table", f"{table}-state"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.SimpleQueue[str] = queue.SimpleQueue()

    def read(stream: IO[str]) -> None:
        for line in stream:
            lines.put(line)

    assert process.stderr is not None
    threading.Thread(target=read, args=(process.stderr,), daemon=True).start()
    try:
        deadline = time.monotonic() + 60  # (its first start records where each shard stands)
        while StateStore(ddb_client, f"{table}-state").load(table, INDEX) is None:
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.1)
        ddb_client.update_table(TableName=table, StreamSpecification={"StreamEnabled": False})
        said = lines.get(timeout=30)
        while said.startswith("Note: no backfill"):  # (said at its start: none counts yet)
            said = lines.get(timeout=30)
        assert said.strip() == (
            "0 records, 0 marked, 0 unmarked; the table's stream is off: waiting for it to be "
            f"turned on (`ddbkeys partition-keys index stream -t {table}`)"
        )
        assert process.poll() is None  # still running
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
        assert process.returncode == 0
        assert out.strip().endswith(
            "the table's stream is off: waiting for it to be turned on "
            f"(`ddbkeys partition-keys index stream -t {table}`)"
        )
    finally:
        if process.poll() is None:
            process.kill()
