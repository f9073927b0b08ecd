"""A listing's tasks on Dask (ddbkeys.engines.dask), against DynamoDB Local: a plan run on a
distributed LocalCluster (worker processes under nannies) lists every key once, even when a
worker is killed (SIGKILL) in the middle of a task and the cluster runs its task again."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._capacity import Usage
from ddbkeys._errors import ConfigurationError
from ddbkeys.partition_keys import plan_listing
from ddbkeys.partition_keys._tasks.tasks import list_task
from tests.integration.test_listing_tasks import fill
from tests.integration.test_marker_lifecycle import non_empty

pytest.importorskip("dask.bag")
distributed = pytest.importorskip("distributed")

from ddbkeys.engines.dask import keys_bag, tasks_bag  # noqa: E402 (after the skips)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


def cluster(workers: int) -> Any:
    """A LocalCluster of ``workers`` processes (each under a nanny that starts it again when it
    dies), one thread each, no dashboard (other runs may share this machine)."""
    return distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=50,  # logging.CRITICAL: the killed worker's warnings are expected
    )


def test_a_plan_on_a_local_cluster_with_a_worker_killed_mid_task(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 48)
    truth = non_empty(ddb_client, table)
    # skip reads one key a request, 0.5 RCU each; a budget of 2 RCU/s a task makes each of the
    # 4 tasks (about 12 keys) run for about 2 s: a task is surely running when the kill comes.
    planned = plan_listing(ddb_client, table, "skip", tasks=4, max_rcu_per_second=4, concurrency=2)
    assert {t.options.max_rcu_per_second for t in planned} == {2.0}
    with cluster(2) as local, distributed.Client(local) as client:
        pids: dict[str, int] = client.run(os.getpid)
        assert len(pids) == 2 and os.getpid() not in pids.values()
        bag = keys_bag(planned).persist()  # runs in the background from now
        victim = busy_worker(client)
        os.kill(pids[victim], signal.SIGKILL)
        assert gone(pids[victim])  # it really died
        keys = bag.compute()
        # The scheduler counted our task in a worker's death, and ran it again elsewhere.
        deaths = client.run_on_scheduler(
            lambda dask_scheduler: max(ts.suspicious for ts in dask_scheduler.tasks.values())
        )
        assert deaths >= 1
        assert pids[victim] not in client.run(os.getpid).values()  # a new worker took its place
    counted = Counter(keys)
    assert sorted(counted) == truth and set(counted.values()) == {1}  # each key once


def busy_worker(client: Any, timeout: float = 15.0) -> str:
    """The address of a worker running one of our tasks now."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = client.run(lambda dask_worker: dask_worker.state.executing_count)
        for address, count in running.items():
            if count:
                time.sleep(0.3)  # well into the task: its first requests answered
                return str(address)
        time.sleep(0.05)
    raise AssertionError("no worker started a task")


def gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether process ``pid`` has ended (its nanny reaps it) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_the_tasks_bag_reports_what_each_task_read(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 30)
    planned = plan_listing(ddb_client, table, "skip-pages", tasks=3)
    bag = tasks_bag(planned)
    assert bag.npartitions == 3  # one partition per task
    results = bag.compute(scheduler="sync")
    usage = Usage()
    for _, read in results:
        usage.merge(read)
    alone = [list_task(task) for task in planned]  # the same tasks, here
    assert [keys for keys, _ in results] == [keys for keys, _ in alone]
    assert usage.read_units == pytest.approx(sum(r["read_units"] for _, r in alone))
    assert usage.requests == sum(r["requests"] for _, r in alone) > 0
    assert sorted(k for keys, _ in results for k in keys) == non_empty(ddb_client, table)
    with pytest.raises(ConfigurationError, match=r"pass ListingTask\.from_json\(line\)"):
        keys_bag([planned[0].to_json()])  # type: ignore[list-item]
