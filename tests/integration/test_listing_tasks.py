"""A listing as tasks (issue 22, its first step), against DynamoDB Local: the tasks' key sets are
disjoint and their union is the listing, for every method that splits; a task run again yields
the same keys; a task goes on from its checkpoint; the proven marker index is replayed once, in
the plan; and a process pool whose worker is killed runs that worker's task again."""

from __future__ import annotations

import os
import re
import signal
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._capacity import Usage
from ddbkeys._errors import ConfigurationError
from ddbkeys.partition_keys import (
    ListingTask,
    MarkerIndex,
    list_tasks,
    open_task,
    plan_listing,
)
from ddbkeys.partition_keys._tasks import tasks as tasks_module
from ddbkeys.partition_keys._tasks.tasks import list_task
from tests.integration.test_index_proof import caught_up, following
from tests.integration.test_marker_lifecycle import MARGIN, item, non_empty

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


def fill(client: DynamoDBClient, table: str, keys: int = 60) -> None:
    for n in range(keys):
        for i in range(1 + n % 3):
            client.put_item(TableName=table, Item=item(f"k{n:03}", i))


@pytest.mark.parametrize("method", ["scan", "skip", "skip-pages", "auto"])
def test_the_tasks_split_the_listing_exactly(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, method: str
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table)
    planned = plan_listing(ddb_client, table, method, tasks=5)
    assert len(planned) == 5 and {t.segment for t in planned} == set(range(5))
    assert all(t.options.method == planned[0].options.method for t in planned)
    per_task = [list(open_task(ListingTask.from_json(t.to_json()))) for t in planned]
    union = Counter(k for keys in per_task for k in keys)
    assert sorted(union) == non_empty(ddb_client, table)
    assert set(union.values()) == {1}  # disjoint: no key in two tasks
    assert list(open_task(planned[2])) == per_task[2]  # run again: the same keys


def test_a_task_goes_on_from_its_checkpoint(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table)
    (task,) = plan_listing(ddb_client, table, "skip-pages", tasks=1)
    listing = open_task(task)
    keys = iter(listing)
    first = [next(keys) for _ in range(7)]
    rest = list(open_task(task.going_on(listing.checkpoint())))
    assert sorted(first + rest) == non_empty(ddb_client, table)
    assert len(first + rest) == len(set(first + rest))


def test_the_proven_index_is_replayed_once_in_the_plan(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    fill(ddb_client, table, 20)
    with following(ddb_client, table, store) as follower:
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
    ddb_client.put_item(TableName=table, Item=item("late", 1))  # nobody follows now
    planned = plan_listing(
        ddb_client, table, "index", tasks=3, state_table=store, replay_margin=MARGIN
    )
    assert len(planned) == 4 and "proven" in planned[0].reason  # 3 index segments + re-checked
    shared = plan_listing(
        ddb_client,
        table,
        "index",
        tasks=3,
        state_table=store,
        replay_margin=MARGIN,
        max_rcu_per_second=100,
    )
    assert [task.options.max_rcu_per_second for task in shared] == [
        25.0
    ] * 4  # all 4 at once share the budget
    sent: list[str] = []
    found: list[Any] = []
    for task in planned:
        listing = open_task(task)
        listing.reader.client.meta.events.register(
            "provide-client-params.*.*", lambda model, **_: sent.append(model.name)
        )
        found.extend(listing)
    assert sorted(found) == non_empty(ddb_client, table) and len(found) == len(set(found))
    assert "GetRecords" not in sent and "DescribeStream" not in sent  # no task reads the stream


def test_a_pool_runs_again_the_task_of_a_worker_that_died(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table)
    planned = plan_listing(ddb_client, table, "scan", tasks=4)
    # The first worker to start a task kills itself (once: a file says it did).
    monkeypatch.setenv("DDBKEYS_TEST_KILL_ONCE", str(tmp_path / "killed"))
    monkeypatch.setattr(tasks_module, "list_task", _dies_once)
    usage = Usage()
    keys = list(list_tasks(planned, workers=2, usage=usage))
    assert (tmp_path / "killed").exists()  # a worker did die
    assert usage.requests >= 4 and usage.read_units > 0  # each task's usage, sent back
    assert sorted(keys) == non_empty(ddb_client, table) and len(keys) == len(set(keys))
    with pytest.raises(ConfigurationError, match="workers must be a whole number"):
        list(list_tasks(planned, workers=0))
    with pytest.raises(ConfigurationError, match="Not a listing task"):
        ListingTask.from_json('{"table": "x"}')


def test_a_pool_runs_the_tasks_of_two_plans(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Two plans' tasks share their segment numbers: each task is run, not one per segment."""
    tables = [ddb_table_factory(("pk", "S"), ("sk", "N")) for _ in range(2)]
    for table in tables:
        fill(ddb_client, table, 12)
    planned = [task for table in tables for task in plan_listing(ddb_client, table, tasks=2)]
    assert [task.segment for task in planned] == [0, 1, 0, 1]
    keys = list(list_tasks(planned, workers=2))
    assert sorted(keys) == sorted(non_empty(ddb_client, tables[0]) * 2)  # the same keys in both


def test_tasks_run_one_after_another_keep_to_their_share(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Each task reads at most its rate times the seconds it ran, however little it reads (its
    budget starts empty, and its listing waits off the last page's units before it ends)."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for n in range(40):  # about 10 read units in all, a page a task
        ddb_client.put_item(
            TableName=table, Item={"pk": {"S": f"k{n:02}"}, "sk": {"N": "1"}, "p": {"S": "x" * 900}}
        )
    planned = plan_listing(ddb_client, table, "scan", tasks=4, max_rcu_per_second=8)
    assert [task.options.max_rcu_per_second for task in planned] == [2.0] * 4
    started, read, keys = time.monotonic(), 0.0, []
    for task in planned:
        began = time.monotonic()
        listing = open_task(task)
        keys += list(listing)
        units = listing.usage.read_units
        assert units > 0 and time.monotonic() - began >= units / 2.0 - 0.01
        read += units
    assert sorted(keys) == non_empty(ddb_client, table)
    assert time.monotonic() - started >= read / 2.0 - 0.01  # one at a time: 2 RCU/s in all


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"resume": "x"}, "plan_listing does not take resume: a task goes on from its own"),
        ({"scan_segments": 8}, "plan_listing does not take scan_segments: a plan has one"),
        ({"segments": 4}, "plan_listing does not take segments"),
        ({"max_rcu_per_second": float("inf")}, "max_rcu_per_second must be a number"),
        ({"max_rcu_per_second": 0}, "max_rcu_per_second must be a number"),
        ({"concurrency": 0}, "concurrency must be a whole number from 1, not 0"),
    ],
)
def test_a_plan_refuses_what_its_tasks_could_not_keep(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, given: dict[str, Any], message: str
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    with pytest.raises(ConfigurationError, match=message):
        plan_listing(ddb_client, table, "scan", tasks=2, **given)
    defaults: dict[str, Any] = dict.fromkeys(["resume", "scan_segments", "usage", "on_key"])
    defaults.update(retry=None, streams=None, segments=1)  # (a shared set of arguments)
    assert len(plan_listing(ddb_client, table, "scan", tasks=2, **defaults)) == 2


def _dies_once(line: str) -> tuple[list[Any], dict[str, float]]:
    marker = os.environ["DDBKEYS_TEST_KILL_ONCE"]
    try:
        with open(marker, "x"):
            pass
    except FileExistsError:
        return list_task(line)
    time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def test_one_read_budget_as_a_share_of_the_capacity(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, ddb_endpoint_url: str
) -> None:
    from click.testing import CliRunner  # noqa: PLC0415

    from ddbkeys._cli import cli  # noqa: PLC0415
    from ddbkeys.partition_keys import distinct_partition_keys  # noqa: PLC0415
    from ddbkeys.partition_keys._listing.read_share import read_capacity  # noqa: PLC0415

    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 10)
    listing = distinct_partition_keys(ddb_client, table, read_percent=0.5, read_capacity=40)
    assert listing.reader.budget is not None and listing.reader.budget.rate == 20.0
    assert sorted(listing) == non_empty(ddb_client, table)
    capacity, _ = read_capacity(listing.method.info)
    lower = distinct_partition_keys(ddb_client, table, read_percent=1.0, max_rcu_per_second=3)
    assert lower.reader.budget is not None and lower.reader.budget.rate == min(3.0, capacity)
    # The plan shares the whole listing's budget among the tasks that run at once.
    planned = plan_listing(
        ddb_client, table, tasks=4, concurrency=2, read_percent=0.5, read_capacity=40
    )
    assert {t.options.max_rcu_per_second for t in planned} == {10.0}
    run = CliRunner().invoke(
        cli,
        [
            "partition-keys",
            "-t",
            table,
            "--read-percent",
            "0.2",
            "--endpoint-url",
            ddb_endpoint_url,
        ],
    )
    assert run.exit_code == 0 and sorted(run.stdout.split()) == non_empty(ddb_client, table)
    bad = CliRunner().invoke(
        cli,
        ["partition-keys", "-t", table, "--read-percent", "2", "--endpoint-url", ddb_endpoint_url],
    )
    assert bad.exit_code == 2 and "0.1<=x<=1.5" in bad.output


def test_plan_and_run_task_from_the_shell(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    ddb_endpoint_url: str,
    tmp_path: Any,
) -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    # The ddbkeys command beside this Python (the virtual environment's).
    path = f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path}
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 30)
    script = (
        f"ddbkeys partition-keys plan -t {table} --tasks 3 --endpoint-url {ddb_endpoint_url}"
        " > tasks.jsonl && while read -r task; do"
        ' echo "$task" | ddbkeys partition-keys run-task; done < tasks.jsonl'
    )
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert len((tmp_path / "tasks.jsonl").read_text().splitlines()) == 3
    keys = done.stdout.split()
    assert sorted(keys) == non_empty(ddb_client, table) and len(keys) == len(set(keys))
    assert "3 task(s), method skip-pages" in done.stderr
    # Each task's summary, as a listing's: keys, method, requests ("1 request"), items, RCU.
    summaries = re.findall(
        r"^(\d+) keys? \(skip-pages\): (\d+) requests?, .* RCU", done.stderr, re.M
    )
    assert len(summaries) == 3 and sum(int(k) for k, _ in summaries) == len(keys), done.stderr
    assert "1 requests" not in done.stderr
    empty = subprocess.run(
        ["bash", "-c", "ddbkeys partition-keys run-task < /dev/null"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert empty.returncode == 2 and "No task on stdin" in empty.stderr


def test_a_process_builds_one_client_for_its_tasks(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    import multiprocessing  # noqa: PLC0415

    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 6)
    first, second = plan_listing(ddb_client, table, "scan", tasks=2)
    one, two = open_task(first), open_task(second)
    assert one.reader.client is two.reader.client and one.reader.client is not ddb_client
    assert sorted([*one, *two]) == non_empty(ddb_client, table)
    # A forked worker builds its own (a client's connections are not shared across processes).
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_clients_built) == 0
    assert _clients_built() >= 1


def _clients_built() -> int:
    return len(tasks_module._CLIENTS)
