"""A listing's tasks on PySpark (what AWS Glue and EMR run), against DynamoDB Local: one
partition per task, each key once, the Python workers importing this ddbkeys; and on
``local[2,4]`` (which runs a failed task again; plain ``local[2]`` does not), a Python worker
killed with SIGKILL in the middle of its task: Spark runs that task again and the keys are still
exactly the table's, each once."""

from __future__ import annotations

import importlib
import operator
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("pyspark")

from pyspark import SparkConf, SparkContext

import ddbkeys
from ddbkeys import Usage
from ddbkeys._errors import ConfigurationError
from ddbkeys.engines.spark import keys_rdd, tasks_rdd
from ddbkeys.partition_keys import open_task, plan_listing
from ddbkeys.testing import FaultProxy
from ddbkeys.testing._proxy import Fault, Faults
from tests.integration.test_listing_tasks import fill
from tests.integration.test_marker_lifecycle import non_empty

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

#: How long the proxy holds a Scan (until a worker is killed): time enough to find and kill it.
HOLD = 8.0


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkContext]:
    """One SparkContext for the module (starting it is most of the module's time): 2 cores, a
    task tried up to 4 times, its Python workers running this Python (they inherit
    PYTHONPATH, so they import the ddbkeys under test)."""
    before = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    conf = (
        SparkConf()
        .setMaster("local[2,4]")
        .setAppName("ddbkeys-tests")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
    )
    context = SparkContext(conf=conf)
    context.setLogLevel("FATAL")  # (the killed worker's task failure is expected)
    try:
        yield context
    finally:
        context.stop()
        if before is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = before


def test_one_partition_per_task_and_each_key_once(
    spark: SparkContext, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # The workers import the ddbkeys under test, not another one installed.
    found = (
        spark.parallelize(["ddbkeys"], 1)
        .map(importlib.import_module)
        .map(operator.attrgetter("__file__"))
        .collect()
    )
    assert found == [ddbkeys.__file__]
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table)
    planned = plan_listing(ddb_client, table, tasks=5)
    keys = keys_rdd(spark, planned)
    assert keys.getNumPartitions() == 5
    assert keys.name() == f"ddbkeys listing of {table}: 5 task(s)"
    per_partition = keys.glom().collect()
    assert per_partition == [list(open_task(task)) for task in planned]  # partition i: task i
    union = Counter(key for part in per_partition for key in part)
    assert sorted(union) == non_empty(ddb_client, table) and set(union.values()) == {1}
    # What each task read, to add up (helper-82 F2: on Spark nothing said what a listing read).
    results = tasks_rdd(spark, planned)
    assert results.getNumPartitions() == 5
    usage = Usage()
    for (task_keys, read), part in zip(results.collect(), per_partition, strict=True):
        assert task_keys == part and read["requests"] >= 1
        usage.merge(read)
    scanned = Usage()
    for task in planned:
        listing = open_task(task)
        list(listing)
        scanned.merge(listing.usage)  # (a Usage too, not only its snapshot: helper-82 F3)
    assert usage.read_units == scanned.read_units > 0
    with pytest.raises(ConfigurationError, match=r"tasks_rdd takes a SparkContext"):
        tasks_rdd(object(), planned)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"spark\.sparkContext for a SparkSession"):
        keys_rdd(object(), planned)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"ListingTask.from_json\(line\)"):
        keys_rdd(spark, [planned[0].to_json()])  # type: ignore[list-item]


def test_a_worker_killed_mid_task_has_its_task_run_again(
    spark: SparkContext,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    fault_proxy: FaultProxy,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table)
    # The workers read through the proxy, which holds every Scan until a worker is killed: no
    # task can finish before, so a worker with a connection to the proxy is in its task.
    port = int(fault_proxy.endpoint_url.rsplit(":", 1)[1])
    planned = plan_listing(
        ddb_client, table, "scan", tasks=4, endpoint_url=fault_proxy.endpoint_url
    )
    fault_proxy.set_faults(Faults(delay=1.0, delay_seconds=HOLD, operations=frozenset({"Scan"})))
    killed: list[int] = []
    started = time.monotonic()

    def kill_a_worker_in_its_task() -> None:
        while time.monotonic() < started + 60:
            workers = _connected_to(port) if fault_proxy.counts[Fault.DELAY.value] else []
            if workers:
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])
                fault_proxy.set_faults(Faults())  # the task run again reads at once
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_a_worker_in_its_task, daemon=True)
    killer.start()
    spark.setJobGroup("killed-worker", "a worker killed mid-task")
    try:
        keys = keys_rdd(spark, planned).collect()
    finally:
        spark.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        killer.join(timeout=5)
    assert len(killed) == 1, "no worker was found in its task"
    assert not _alive(killed[0])
    tracker = spark.statusTracker()
    (job,) = tracker.getJobIdsForGroup("killed-worker")
    job_info = tracker.getJobInfo(job)
    assert job_info is not None and job_info.status == "SUCCEEDED"
    stages = [tracker.getStageInfo(stage) for stage in job_info.stageIds]
    # Spark saw one task fail (a worker killed between tasks would fail none) and ran it again.
    assert sum(s.numFailedTasks for s in stages if s is not None) == 1
    assert fault_proxy.counts[Fault.DELAY.value] >= 1
    assert sorted(keys) == non_empty(ddb_client, table) and len(keys) == len(set(keys))


def _connected_to(port: int) -> list[int]:
    """This test's own descendant processes (Spark's Python workers, under its JVM) holding a
    TCP connection to 127.0.0.1:``port``, lowest process id first. Linux: reads /proc."""
    sockets: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as rows:
                next(rows)  # the header
                for row in rows:
                    fields = row.split()
                    remote, state, inode = fields[2], fields[3], fields[9]
                    if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port:
                        sockets.add(f"socket:[{inode}]")  # (01: established)
        except FileNotFoundError:
            continue
    found = []
    for pid in sorted(_descendants(os.getpid())):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in fds}
        except OSError:  # (gone meanwhile)
            continue
        if links & sockets:
            found.append(pid)
    return found


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
