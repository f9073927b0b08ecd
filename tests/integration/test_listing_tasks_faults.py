"""A listing's tasks under the faults their workers meet (issue 22, point 4), against DynamoDB
Local through the fault proxy: every task of a plan made through a proxied client builds its
client from the task's endpoint (the proxy's), meets throttling, lost answers (the request
answered by DynamoDB, the answer dropped) and 5xx, and still gives exactly its keys: the union
of the tasks is the truth, each key once, for every method that splits (scan, skip-pages,
auto, and the marker index with its proof replayed once in the plan, no task reading the
stream). A worker killed with SIGKILL mid-task, then continued from its last checkpoint or run
again from the start, gives the same keys; so does a process pool whose worker dies mid-task."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys import ResumeTokenError
from ddbkeys.partition_keys import ListingTask, MarkerIndex, list_tasks, open_task, plan_listing
from ddbkeys.partition_keys._tasks import tasks as tasks_module
from ddbkeys.testing import Fault, FaultProxy, Faults
from tests.conftest import proxied_client
from tests.integration.test_index_proof import caught_up, following
from tests.integration.test_listing_tasks import fill
from tests.integration.test_marker_lifecycle import MARGIN, item, non_empty
from tests.support.progress import PROGRESS_CEILING

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

#: The three faults each task meets first, on its first reads, then again at random.
FAULTS = (Fault.THROTTLE, Fault.LOSE_RESPONSE, Fault.ERROR_500)
READS = frozenset({"Scan", "Query", "GetItem", "BatchGetItem"})
STREAM_OPERATIONS = {"DescribeStream", "GetShardIterator", "GetRecords", "ListStreams"}


def fill_wide(client: DynamoDBClient, table: str, keys: int) -> None:
    """``keys`` collections of 1 to 3 items of 1.5 KB each: a 4 KB page holds a key or two, so
    skip-pages reads a task in many requests, and a scan costs more than re-checking a few
    collections (so auto proves the marker index)."""
    requests: list[Any] = [
        {"PutRequest": {"Item": {**item(f"k{n:03}", i), "pad": {"S": "x" * 1500}}}}
        for n in range(keys)
        for i in range(1 + n % 3)
    ]
    for start in range(0, len(requests), 25):
        client.batch_write_item(RequestItems={table: requests[start : start + 25]})


def faulty(seed: int, first: frozenset[str] = READS, chance: float = 0.08) -> Faults:
    """Each fault once on the first request of ``first`` (its reads: so on every task, which
    may read one page), then each at ``chance`` on every request (the table's description
    included)."""
    return Faults(
        throttle=chance,
        lose_response=chance,
        error_500=chance,
        script=list(FAULTS),
        script_operations=first,
        seed=seed,
    )


def run_under_faults(
    proxy: FaultProxy, planned: list[ListingTask], seed: int, reading: int | None = None
) -> list[list[Any]]:
    """Each task (as JSON, so the way a worker gets it) run with the client it builds itself,
    under faults of its own; asserts each met every fault and read no stream. The first
    ``reading`` tasks read the table (by default all); the others (the proven index's
    re-checked collections, known from the plan) only describe it, and meet the faults there."""
    found: list[list[Any]] = []
    for n, task in enumerate(planned):
        assert task.endpoint_url == proxy.endpoint_url  # the workers' clients go through it
        reads = READS if reading is None or n < reading else frozenset({"DescribeTable"})
        proxy.reset()
        proxy.set_faults(faulty(seed + n, reads))
        found.append(list(open_task(ListingTask.from_json(task.to_json()))))
        counts = proxy.counts_by_operation
        for fault in FAULTS:
            met = sum(counts[(op, fault.value)] for op in reads)
            assert met >= 1, (task.segment, fault, counts)
        assert sum(counts[(op, "forward")] for op in reads) >= 1  # and then got through
        # No task reads the stream (the proven index's replay was done once, in the plan).
        assert not {op for op, _ in counts} & STREAM_OPERATIONS, counts
        assert not any(call.stream for call in proxy.calls)
    proxy.set_faults(Faults())
    return found


def assert_exact(client: DynamoDBClient, table: str, per_task: list[list[Any]]) -> None:
    union = Counter(key for keys in per_task for key in keys)
    assert sorted(union) == non_empty(client, table)
    assert set(union.values()) == {1}, [k for k, n in union.items() if n > 1]  # each key once


@pytest.mark.parametrize("method", ["scan", "skip-pages", "auto"])
def test_every_task_gets_through_throttles_lost_answers_and_5xx(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    method: str,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table)
    # The plan too is made through the faults.
    fault_proxy.set_faults(faulty(3, frozenset({"DescribeTable"})))
    planned = plan_listing(proxied_client(fault_proxy, max_attempts=1), table, method, tasks=4)
    for fault in FAULTS:
        assert fault_proxy.counts_by_operation[("DescribeTable", fault.value)] >= 1
    assert [t.segment for t in planned] == [0, 1, 2, 3]
    per_task = run_under_faults(fault_proxy, planned, seed=10)
    assert_exact(ddb_client, table, per_task)
    # A task run again (an engine's retry), through other faults: the same keys.
    again = run_under_faults(fault_proxy, planned[1:2], seed=50)
    assert sorted(again[0]) == sorted(per_task[1])


@pytest.mark.parametrize("method", ["index", "auto"])
def test_the_proven_index_under_faults_reads_no_stream_in_the_tasks(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    method: str,
) -> None:
    table, store = streamed_table, state_table
    fill_wide(ddb_client, table, 24)
    with following(ddb_client, table, store) as follower:
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
    # Since the follower stopped: a new collection, one emptied (its marker stays) and one
    # written again (its marker in the index, and its key among those re-checked).
    ddb_client.put_item(TableName=table, Item=item("late", 1))
    ddb_client.put_item(TableName=table, Item=item("k001", 9))
    ddb_client.delete_item(TableName=table, Key=item("k000", 0))
    assert "k000" not in non_empty(ddb_client, table)
    fault_proxy.set_faults(faulty(4, frozenset({"GetRecords"}), 0.1))
    planned = plan_listing(
        proxied_client(fault_proxy, max_attempts=1),
        table,
        method,
        tasks=3,
        state_table=store,
        replay_margin=MARGIN,
    )
    # The plan read the stream (once), through the proxy and its faults.
    for fault in FAULTS:
        assert fault_proxy.counts_by_operation[("GetRecords", fault.value)] >= 1
    assert fault_proxy.counts_by_operation[("GetRecords", "forward")] >= 1
    assert len(planned) == 4 and all(t.options.method == "index" for t in planned), planned[
        0
    ].reason
    assert "proven" in planned[0].reason
    per_task = run_under_faults(fault_proxy, planned, seed=20, reading=3)
    assert_exact(ddb_client, table, per_task)
    assert sorted(per_task[3]) == ["k001", "late"]  # the re-checked collections that exist
    # Each task stopped after a key goes on from its checkpoint (its proof carried along);
    # another task's checkpoint is refused.
    for task, keys in zip(planned, per_task, strict=True):
        listing = open_task(task)
        first = next(iter(listing))
        rest = list(open_task(task.going_on(listing.checkpoint())))
        assert sorted([first, *rest]) == sorted(keys)
        other = planned[task.segment - 1]
        with pytest.raises(ResumeTokenError, match=f"not a checkpoint of task {other.segment} "):
            other.going_on(listing.checkpoint())


#: A worker: runs the task on its stdin, writing for each key one JSON line of the key and the
#: listing's checkpoint right after it (an engine's record of where the task stands).
WORKER = """
import json, sys
from ddbkeys.partition_keys import ListingTask, open_task
listing = open_task(ListingTask.from_json(sys.stdin.readline()))
for key in listing:
    print(json.dumps({"key": key, "token": listing.checkpoint()}), flush=True)
"""


def kill_mid_task(task: ListingTask, out: Path, keys: int) -> None:
    """Run ``task`` in a worker process and SIGKILL it once ``keys`` keys are written."""
    with open(out, "w") as sink:
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=sink, text=True
        )
        assert worker.stdin is not None
        worker.stdin.write(task.to_json() + "\n")
        worker.stdin.close()
        deadline = time.monotonic() + PROGRESS_CEILING
        while out.read_text().count("\n") < keys:
            assert worker.poll() is None, "the worker ended before it was killed"
            assert time.monotonic() < deadline, f"the worker wrote no {keys} keys"
            time.sleep(0.01)
        worker.send_signal(signal.SIGKILL)
        assert worker.wait(timeout=10) == -signal.SIGKILL  # it died by the signal


def test_a_worker_killed_mid_task_goes_on_from_its_checkpoint_or_again_from_the_start(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill_wide(ddb_client, table, 60)
    planned = plan_listing(
        proxied_client(fault_proxy, max_attempts=1), table, "skip-pages", tasks=2
    )
    truth = [sorted(open_task(task)) for task in planned]
    # Every answer 30 ms late, and faults: the worker is surely mid-task when killed.
    fault_proxy.set_faults(
        Faults(
            delay_answer=0.7,
            throttle=0.1,
            lose_response=0.1,
            error_500=0.1,
            delay_seconds=0.03,
            seed=7,
        )
    )
    out = tmp_path / "task0.jsonl"
    kill_mid_task(planned[0], out, keys=5)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    before = [r["key"] for r in records]
    assert 5 <= len(before) < len(truth[0])  # killed mid-task
    rest = list(open_task(planned[0].going_on(records[-1]["token"])))
    assert sorted(before + rest) == truth[0]  # each key once: none repeated, none lost
    # Run again from its start (as an engine re-runs a lost task): the same keys.
    assert sorted(open_task(planned[0])) == truth[0]
    for fault in ("delay_answer", "throttle", "lose_response", "error_500"):
        assert fault_proxy.counts[fault] >= 1, fault_proxy.counts
    assert_exact(ddb_client, table, [before + rest, truth[1]])


def test_a_pool_whose_worker_dies_mid_task_under_faults_is_exact(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table)
    planned = plan_listing(proxied_client(fault_proxy, max_attempts=1), table, "scan", tasks=4)
    fault_proxy.set_faults(faulty(seed=9))
    monkeypatch.setenv("DDBKEYS_TEST_KILL_ONCE", str(tmp_path / "killed"))
    monkeypatch.setattr(tasks_module, "list_task", _dies_mid_task_once)
    keys = list(list_tasks(planned, workers=2))
    assert (tmp_path / "killed").read_text() == "3"  # a worker died, 3 keys into its task
    assert sorted(keys) == non_empty(ddb_client, table) and len(keys) == len(set(keys))
    for fault in ("throttle", "lose_response", "error_500"):
        assert fault_proxy.counts_by_operation[("Scan", fault)] >= 1, fault_proxy.counts


def _dies_mid_task_once(line: str) -> tuple[list[Any], dict[str, float]]:
    """A worker's part that, the first time (a file says it did), dies 3 keys into its task."""
    listing = open_task(ListingTask.from_json(line))
    keys: list[Any] = []
    for key in listing:
        keys.append(key)
        if len(keys) == 3:
            try:
                with open(os.environ["DDBKEYS_TEST_KILL_ONCE"], "x") as marker:
                    marker.write("3")
            except FileExistsError:
                continue
            os.kill(os.getpid(), signal.SIGKILL)
    return keys, listing.usage.snapshot()
