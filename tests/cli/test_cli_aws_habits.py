"""AWS CLI habits work (issue 23, point 2), against DynamoDB Local: ``--output table``,
``--query`` (JMESPath), ``AWS_DEFAULT_OUTPUT`` and the profile's ``output`` for the commands that
print one document (never for the listing's keys), global options before the command's name,
and ``-o`` (once ``--output-file``: ``-o json`` is a usage error that says what was meant)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner, Result

from ddbkeys._cli import cli

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

COUNTER = ["--counter", "order"]


def run(*args: str, env: Mapping[str, str | None] | None = None) -> Result:
    base: dict[str, str | None] = {"AWS_DEFAULT_OUTPUT": None, "AWS_CONFIG_FILE": "/nonexistent"}
    return CliRunner().invoke(cli, list(args), env={**base, **(env or {})})


@pytest.fixture
def table(ddb_client: DynamoDBClient, ddb_table_factory: TableFactory) -> str:
    name = ddb_table_factory(("pk", "S"))
    for n in range(3):
        ddb_client.put_item(TableName=name, Item={"pk": {"S": f"c{n}"}})
    return name


def test_output_table_and_query(ddb_endpoint_url: str, table: str) -> None:
    at = ["--endpoint-url", ddb_endpoint_url]
    boxed = run("ids", "next", "-t", table, *COUNTER, "-n", "2", "--output", "table", *at)
    assert boxed.exit_code == 0, boxed.output
    lines = boxed.output.splitlines()
    assert lines[0].strip() == "ids next" and lines[1].startswith("+---")
    assert any(line.startswith("| ids ") and "[1,2]" in line for line in lines), boxed.output
    only = run("ids", "next", "-t", table, *COUNTER, "-n", "2", "--query", "ids", *at)
    assert (only.exit_code, only.output) == (0, "3\t4\n")  # text: as the AWS CLI's
    as_json = run(
        "ids", "current", "-t", table, *COUNTER, "--output", "json", "--query", "current", *at
    )
    assert (as_json.exit_code, as_json.output) == (0, "4\n")
    bad = run("ids", "current", "-t", table, *COUNTER, "--query", "ids[", *at)
    assert bad.exit_code == 2 and "is not a JMESPath expression" in bad.output
    listing = ["partition-keys", "-t", table, "-q", *at]
    keys = run(*listing, "--output", "json", "--query", "length(keys)")
    # 3 collections; the counter's item is ddbkeys' own, not a key (--include-own-items lists it)
    assert (keys.exit_code, keys.stdout) == (0, "3\n")
    own = run(*listing, "--include-own-items", "--output", "json", "--query", "length(keys)")
    assert (own.exit_code, own.stdout) == (0, "4\n")
    assert run(*listing, "--query", "keys").exit_code == 2  # (text: each key as it comes)
    boxed_keys = run(*listing, "--output", "table")
    assert boxed_keys.exit_code == 0 and "| c0 " in boxed_keys.stdout, boxed_keys.stdout


def test_the_default_output_of_aws_config_for_documents_never_for_keys(
    ddb_endpoint_url: str, table: str, tmp_path: Path
) -> None:
    at = ["--endpoint-url", ddb_endpoint_url]
    current = ["ids", "current", "-t", table, *COUNTER, *at]
    assert run(*current).stdout == "0\n"
    from_env = run(*current, env={"AWS_DEFAULT_OUTPUT": "json"})
    assert json.loads(from_env.stdout)["current"] == 0
    config = tmp_path / "config"
    config.write_text("[default]\noutput = table\n")
    from_profile = run(*current, env={"AWS_CONFIG_FILE": str(config)})
    assert from_profile.stdout.splitlines()[1].startswith("+---"), from_profile.stdout
    assert run(*current, "--output", "text", env={"AWS_DEFAULT_OUTPUT": "json"}).stdout == "0\n"
    # --profile picks that profile's output, after the command's name or before it.
    config.write_text("[default]\noutput = table\n[profile j]\noutput = json\n")
    for named in ([*current, "--profile", "j"], ["--profile", "j", *current]):
        picked = run(*named, env={"AWS_CONFIG_FILE": str(config)})
        assert json.loads(picked.stdout)["current"] == 0, picked.stdout
    assert run(*current, env={"AWS_DEFAULT_OUTPUT": "yaml"}).stdout == "0\n"  # not ours: text
    for env in ({"AWS_DEFAULT_OUTPUT": "json"}, {"AWS_CONFIG_FILE": str(config)}):
        keys = run("partition-keys", "-t", table, "-q", *at, env=env)
        assert sorted(keys.stdout.split()) == ["c0", "c1", "c2"], keys.stdout


def test_global_options_before_the_command(ddb_endpoint_url: str, table: str) -> None:
    before = run("--endpoint-url", ddb_endpoint_url, "--output", "json", "ids", "next", "-t", table)
    assert before.exit_code == 0, before.output
    assert json.loads(before.stdout)["ids"] == [1]
    # After the command's name, an option wins over the one before it.
    after = run(
        "--endpoint-url",
        "http://127.0.0.1:1",
        "--output",
        "json",
        "ids",
        "current",
        "-t",
        table,
        "--endpoint-url",
        ddb_endpoint_url,
        "--output",
        "text",
    )
    assert (after.exit_code, after.output) == (0, "1\n")
    nested = run("--endpoint-url", ddb_endpoint_url, "partition-keys", "-t", table, "-q")
    assert nested.exit_code == 0 and len(nested.stdout.split()) == 3  # the counter's is not listed
    deeper = run(
        "--endpoint-url", ddb_endpoint_url, "--query", "changed", "--output", "json",
        "partition-keys", "index", "stream", "-t", table,
    )  # fmt: skip
    assert (deeper.exit_code, deeper.output) == (0, "true\n"), deeper.output


def test_run_task_refuses_a_whole_plan_on_stdin(ddb_endpoint_url: str, table: str) -> None:
    """run-task runs one task: given several lines (`plan --tasks 3 | run-task`), running the
    first alone would print a part of the keys with exit 0; it says so instead."""
    at = ["--endpoint-url", ddb_endpoint_url]
    plan = run("partition-keys", "plan", "-t", table, "--tasks", "3", *at)
    assert plan.exit_code == 0 and len(plan.stdout.splitlines()) == 3
    ran = CliRunner().invoke(cli, ["partition-keys", "run-task"], input=plan.stdout)
    assert ran.exit_code == 2 and ran.stdout == ""
    assert "stdin holds 3 tasks; run-task runs one" in ran.output
    one = CliRunner().invoke(
        cli, ["partition-keys", "run-task"], input=plan.stdout.splitlines()[0] + "\n"
    )
    assert one.exit_code == 0, one.output


def test_run_task_reaches_the_table_the_way_it_is_told(ddb_endpoint_url: str, table: str) -> None:
    """A task says how its plan reached the table; a worker that reaches it another way says
    so with --endpoint-url (--region, --profile, --timeout), after the command's name or
    before it, as every command takes them (run-task said "No such option", and before the
    name it was ignored without a word)."""
    plan = run(
        "partition-keys",
        "plan",
        "-t",
        table,
        "--tasks",
        "1",
        "--endpoint-url",
        "http://127.0.0.1:9",
    )
    assert plan.exit_code == 1 and "Could not connect" in plan.output  # (plan reads the table)
    planned = run(
        "partition-keys", "plan", "-t", table, "--tasks", "1", "--endpoint-url", ddb_endpoint_url
    )
    elsewhere = planned.stdout.replace(ddb_endpoint_url, "http://127.0.0.1:9")
    assert elsewhere != planned.stdout
    runner = CliRunner()
    stale = runner.invoke(cli, ["partition-keys", "run-task", "--timeout", "2"], input=elsewhere)
    assert stale.exit_code == 1 and "http://127.0.0.1:9" in stale.output
    for args in (
        ["partition-keys", "run-task", "--endpoint-url", ddb_endpoint_url],
        ["--endpoint-url", ddb_endpoint_url, "partition-keys", "run-task"],
    ):
        told = runner.invoke(cli, args, input=elsewhere)
        assert told.exit_code == 0, told.output
        assert sorted(told.stdout.split()) == ["c0", "c1", "c2"], args
