"""``ddbkeys partition-keys plan`` on what its tasks could not keep, and with many tasks: a
clear error and a non-zero exit before any task is written; a line a task that stays short."""

from __future__ import annotations

import json
import signal
import time
from typing import TYPE_CHECKING

import pytest

from tests.cli.test_cli_listing_tasks_kills import shell, started
from tests.support.progress import PROGRESS_CEILING

if TYPE_CHECKING:
    from pathlib import Path

    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("rate", ["inf", "nan", "0", "-5"])
def test_a_budget_no_task_could_keep_is_refused_by_the_plan(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, tmp_path: Path, rate: str
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    done = shell(
        f"ddbkeys partition-keys plan -t {table} --tasks 2 --max-rcu-per-second={rate}"
        f" --endpoint-url {ddb_endpoint_url}",
        tmp_path,
    )
    assert done.returncode != 0 and done.stdout == ""
    error = done.stderr.strip().splitlines()[-1]  # (click's usage errors come after a usage)
    assert error.startswith("Error:") and "max" in error and "rcu" in error.lower()
    assert "Traceback" not in done.stderr


def test_many_tasks_each_stay_one_short_line(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    """Every task's token names its own segment only (the others: one run of done ones), so a
    plan of 20,000 tasks is 20,000 short lines, not 20,000 lines of 20,000 positions each."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"N": "1"}})
    done = shell(
        f"ddbkeys partition-keys plan -t {table} --tasks 20000 --method scan"
        f" --endpoint-url {ddb_endpoint_url} > tasks.jsonl && sed -n 12345p tasks.jsonl"
        " | ddbkeys partition-keys run-task",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "tasks.jsonl").read_text().splitlines()
    assert len(lines) == 20000 and max(len(line) for line in lines) < 1000
    assert json.loads(lines[12344])["segment"] == 12344


def test_a_run_task_stopped_in_its_budgets_last_wait_says_how_to_go_on(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    """A task of one page at 1 RCU a second waits off that page before it ends; Ctrl-C there
    stops it at once, and the note names what run-task takes (no --resume)."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    planned = shell(
        f"ddbkeys partition-keys plan -t {table} --tasks 1 --method scan --max-rcu-per-second 1"
        f" --endpoint-url {ddb_endpoint_url} > task.jsonl",
        tmp_path,
    )
    assert planned.returncode == 0, planned.stderr
    # The items come after the plan (whose own reads keep to the budget too): the task reads
    # what the table holds when it runs.
    for n in range(20):
        ddb_client.put_item(
            TableName=table, Item={"pk": {"S": f"k{n}"}, "sk": {"N": "1"}, "p": {"S": "x" * 20000}}
        )
    running = started("ddbkeys partition-keys run-task < task.jsonl > keys.txt", tmp_path)
    # The page (400 KB: about 50 units) is read at once and its 20 keys written (unbuffered);
    # the wait for its units is then about 50 s. A sign it is in that wait, not a fixed time
    # (on a busy machine the start alone can take seconds).
    keys = tmp_path / "keys.txt"
    deadline = time.monotonic() + PROGRESS_CEILING
    while not keys.exists() or keys.read_text().count("\n") < 20:
        assert running.poll() is None, running.communicate()
        assert time.monotonic() < deadline, f"run-task wrote no 20 keys in {PROGRESS_CEILING} s"
        time.sleep(0.02)
    signalled = time.monotonic()
    running.send_signal(signal.SIGINT)
    _, err = running.communicate(timeout=60)
    # (At once on a quiet machine; 10 s leaves a busy one room, far below the 50 s wait.)
    assert running.returncode == 130 and time.monotonic() - signalled < 10, err
    assert "open_task(task.going_on(" in err and "--resume" not in err
    assert "Traceback" not in err


def test_run_task_writes_the_formats_the_listing_writes(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    """`ddbkeys --output json partition-keys run-task` (the global option, as with every
    command) writes one document of the task's keys; table a boxed table; a checkpoint with
    either is a usage error naming both (it said "'json' is not one of 'text', 'jsonl'")."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for key in ("a", "b", "c"):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": key}, "sk": {"N": "1"}})
    at = f"--endpoint-url {ddb_endpoint_url}"
    planned = shell(f"ddbkeys partition-keys plan -t {table} --tasks 1 {at} > t.jsonl", tmp_path)
    assert planned.returncode == 0, planned.stderr
    done = shell(f"ddbkeys --output json partition-keys run-task {at} < t.jsonl", tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert sorted(document["keys"]) == ["a", "b", "c"] and document["table"] == table
    assert (document["segment"], document["segments"]) == (0, 1)
    assert document["usage"]["read_units"] > 0 and document["warnings"] == []
    queried = shell(
        f"ddbkeys --output json --query 'keys' partition-keys run-task {at} < t.jsonl", tmp_path
    )
    assert queried.returncode == 0, queried.stderr
    assert sorted(json.loads(queried.stdout)) == ["a", "b", "c"]  # (it was ignored)
    boxed = shell(f"ddbkeys partition-keys run-task --output table {at} < t.jsonl", tmp_path)
    assert boxed.returncode == 0, boxed.stderr
    assert all(f"| {key} " in boxed.stdout for key in "abc")
    refused = shell(
        f"ddbkeys --output json partition-keys run-task --checkpoint c.ckpt {at} < t.jsonl",
        tmp_path,
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.strip().splitlines()[-1] == (
        "Error: --checkpoint goes with --output text or jsonl (json is one document at the end)."
    )
