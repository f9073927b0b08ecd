"""``ddbkeys partition-keys plan`` and ``run-task`` from the shell (issue 22, "Done when"), as
a shell loop, ``xargs -P`` or AWS Batch drive them: through the fault proxy (throttles, lost
answers, 5xx, and every Scan answered late), one ``run-task`` process is killed with SIGKILL
mid-task, the tasks are run (that one again, from its start), and the union of their outputs
is exactly the table's keys, each once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ddbkeys.testing import FaultProxy, Faults
from tests.integration.test_listing_tasks_faults import FAULTS, faulty, fill_wide
from tests.integration.test_marker_lifecycle import non_empty

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

TASKS = 3


def shell_env() -> dict[str, str]:
    """The environment of the shell: the ddbkeys command beside this Python (the virtual
    environment's) first on PATH, and unbuffered output, so a killed run-task leaves on disk
    the keys it had written."""
    path = f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "PYTHONUNBUFFERED": "1"}


def shell(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=shell_env(),
    )


def started(command: str, cwd: Path) -> subprocess.Popen[str]:
    """``command`` running in the shell's environment (as its own process: no shell left
    between it and a signal), its stderr piped."""
    return subprocess.Popen(
        ["bash", "-c", f"exec {command}"],
        cwd=cwd,
        env=shell_env(),
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_run_task_killed_mid_task_and_run_again_leaves_the_exact_keys(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill_wide(ddb_client, table, 45)  # a 4 KB page holds a key or two: many Scans a task
    # The plan, through the faults: the whole listing reads at most 6 RCU a second, 2 a task.
    fault_proxy.set_faults(faulty(1, frozenset({"DescribeTable"})))
    planned = shell(
        f"ddbkeys partition-keys plan -t {table} --tasks {TASKS} --method skip-pages"
        f" --max-rcu-per-second 6 --endpoint-url {fault_proxy.endpoint_url} > tasks.jsonl"
        " && split -l 1 -a 1 -d tasks.jsonl task.",
        tmp_path,
    )
    assert planned.returncode == 0, planned.stderr
    assert f"{TASKS} task(s), method skip-pages" in planned.stderr
    assert sorted(p.name for p in tmp_path.glob("task.?")) == ["task.0", "task.1", "task.2"]
    for fault in FAULTS:
        assert fault_proxy.counts_by_operation[("DescribeTable", fault.value)] >= 1
    # Task 0 alone, each Scan answered 50 ms late and meeting every fault first; killed with
    # SIGKILL once it has written 3 keys.
    fault_proxy.reset()
    fault_proxy.set_faults(
        Faults(
            script=list(FAULTS),
            script_operations=frozenset({"Scan"}),
            delay_answer=1.0,
            delay_seconds=0.05,
            operations=frozenset({"Scan"}),
        )
    )
    killed = started("ddbkeys partition-keys run-task < task.0 > keys.0", tmp_path)
    partial = tmp_path / "keys.0"
    deadline = time.monotonic() + 60
    while not partial.exists() or partial.read_text().count("\n") < 3:
        assert killed.poll() is None, killed.communicate()
        assert time.monotonic() < deadline, "the task wrote no 3 keys in 60 s"
        time.sleep(0.01)
    killed.send_signal(signal.SIGKILL)
    _, err = killed.communicate(timeout=30)
    assert killed.returncode == -signal.SIGKILL, err  # it died by the signal, mid-task
    assert err == ""  # no summary: it never finished
    before = partial.read_text().splitlines()
    for fault in FAULTS:
        assert fault_proxy.counts_by_operation[("Scan", fault.value)] == 1
    # Every task, the killed one again from its start, 3 at once, through random faults.
    fault_proxy.set_faults(faulty(2, chance=0.1))
    done = shell(
        "printf '%s\\n' 0 1 2 | xargs -P 3 -I{} sh -c"
        " 'ddbkeys partition-keys run-task < task.{} > keys.{}'",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("keys (skip-pages):") == TASKS
    outputs = [(tmp_path / f"keys.{n}").read_text().splitlines() for n in range(TASKS)]
    union = Counter(key for keys in outputs for key in keys)
    assert sorted(union) == non_empty(ddb_client, table)
    assert set(union.values()) == {1}  # each key in one task's output, once
    assert 3 <= len(before) < len(outputs[0]) and set(before) < set(outputs[0])  # mid-task
    for fault in FAULTS:
        assert fault_proxy.counts_by_operation[("Scan", fault.value)] >= 2  # and then more


def test_a_run_task_killed_with_a_checkpoint_goes_on_and_writes_each_key_once(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    """With --checkpoint and --output-file, a run-task killed with SIGKILL mid-task goes on
    from its checkpoint when the same command runs again: its output holds each of its keys
    exactly once; another task's checkpoint is refused."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill_wide(ddb_client, table, 45)
    planned = shell(
        f"ddbkeys partition-keys plan -t {table} --tasks 2 --method skip-pages"
        f" --max-rcu-per-second 4 --endpoint-url {fault_proxy.endpoint_url} > tasks.jsonl"
        " && split -l 1 -a 1 -d tasks.jsonl task.",
        tmp_path,
    )
    assert planned.returncode == 0, planned.stderr
    fault_proxy.set_faults(
        Faults(delay_answer=1.0, delay_seconds=0.05, operations=frozenset({"Scan"}))
    )
    command = "ddbkeys partition-keys run-task --checkpoint t0.ckpt --output-file keys.0 < task.0"
    killed = started(command, tmp_path)
    out, checkpoint = tmp_path / "keys.0", tmp_path / "t0.ckpt"
    deadline = time.monotonic() + 60
    while not out.exists() or out.read_text().count("\n") < 3 or not checkpoint.exists():
        assert killed.poll() is None, killed.communicate()
        assert time.monotonic() < deadline, "the task wrote no 3 keys in 60 s"
        time.sleep(0.01)
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)
    assert killed.returncode == -signal.SIGKILL
    assert fault_proxy.counts_by_operation[("Scan", "delay_answer")] >= 1
    # Another task on this checkpoint: refused, nothing written.
    other = shell("ddbkeys partition-keys run-task --checkpoint t0.ckpt < task.1", tmp_path)
    assert other.returncode == 1 and other.stdout == "", other.stderr
    assert "Error: " in other.stderr and "\n" not in other.stderr.strip(), other.stderr
    # ... and with the same output too: refused in the command's words (the file it was
    # given, not the library's resume token), the output as it was.
    before = out.read_text()
    other = shell(
        "ddbkeys partition-keys run-task --checkpoint t0.ckpt --output-file keys.0 < task.1",
        tmp_path,
    )
    assert other.returncode == 1 and out.read_text() == before, other.stderr
    assert other.stderr.startswith("Error: --checkpoint t0.ckpt is not a checkpoint of task 1")
    assert "own checkpoint file" in other.stderr and "checkpoint()" not in other.stderr
    fault_proxy.set_faults(faulty(3, chance=0.1))
    again = shell(command, tmp_path)
    assert again.returncode == 0, again.stderr
    assert "Going on from t0.ckpt" in again.stderr
    assert not checkpoint.exists()  # removed once the task ended
    alone = shell("ddbkeys partition-keys run-task < task.0", tmp_path)
    task_keys = alone.stdout.splitlines()
    written = out.read_text().splitlines()
    assert Counter(written) == Counter(task_keys) and len(set(written)) == len(written)
    assert 0 < len(task_keys) < len(non_empty(ddb_client, table))
