"""Benchmark: one listing's tasks by one worker, a process pool and Dask, in one run.

    python benchmarks/listing_workers.py            # on an embedded DynamoDB Local
    python benchmarks/listing_workers.py --quick    # a smaller table, for a smoke test

(``python benchmarks/partition_keys.py`` runs it too, after its table shapes.) One table of
``KEYS`` single-item collections, planned once into ``TASKS`` tasks (``plan_listing``, method
``scan``), then listed by: one worker (a pool of one process, reading one task at a time), a
process pool of 2 and 4 (``run_tasks``) and Dask's LocalCluster of 2 and 4 worker processes
(``ddbkeys.engines.dask``; the cluster is started, and ddbkeys imported on its workers, before
the clock starts, as on a cluster already running). Each row gives keys/s and the read units
the workers sent back, against the one worker's in the same run; the targets: 2 workers at
least ``TARGETS[2]`` times its keys/s, 4 workers ``TARGETS[4]`` times, the RCU within
``RCU_WITHIN``. With an embedded DynamoDB Local, its CPU seconds per row are shown: it shares
this machine's cores with the workers, which a service does not.

The method is ``scan``: DynamoDB Local spends about 20 ms of CPU on each request that starts
deep in a table (``ExclusiveStartKey``), so ``skip-pages``' many small pages would measure the
server more than the workers.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ddbkeys.capacity import Usage
from ddbkeys.connect import make_client
from ddbkeys.demo import load_items
from ddbkeys.local import DynamoDBLocal
from ddbkeys.partition_keys import ListingTask, plan_listing, run_tasks
from ddbkeys.testing.tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: The table: this many collections of one item (about 150 bytes each), in this many tasks.
KEYS = 200_000
TASKS = 16
METHOD = "scan"
#: Workers -> the least keys/s against one worker; and how far the RCU may move (a fraction).
TARGETS = {2: 1.6, 4: 2.5}
RCU_WITHIN = 0.03
#: Rounds of every row, one after the other; each row keeps its fastest (the machine is shared).
ROUNDS = 2


@dataclass
class WorkerRow:
    label: str
    workers: int
    keys: int
    rcu: float
    seconds: float
    server_cpu: float | None
    correct: bool


def cpu_seconds(pid: int | None) -> float | None:
    """The CPU seconds (user and system) process ``pid`` has used, if it can be read."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(
    label: str,
    workers: int,
    listed: Callable[[Usage], list[Any]],
    expected: set[str],
    server_pid: int | None,
) -> WorkerRow:
    """One row: ``listed`` lists every task (adding what they read to the usage it is given)."""
    usage = Usage()
    cpu = cpu_seconds(server_pid)
    started = time.perf_counter()
    keys = listed(usage)
    seconds = time.perf_counter() - started
    after = cpu_seconds(server_pid)
    server = after - cpu if after is not None and cpu is not None else None
    correct = len(keys) == len(expected) and set(keys) == expected
    return WorkerRow(label, workers, len(keys), usage.read_units, seconds, server, correct)


def pool(tasks: list[ListingTask], workers: int) -> Callable[[Usage], list[Any]]:
    return lambda usage: list(run_tasks(tasks, workers=workers, usage=usage))


def _import_ddbkeys() -> None:
    import ddbkeys.partition_keys.tasks  # noqa: F401, PLC0415 (on a Dask worker)


def dask_rows(
    tasks: list[ListingTask], expected: set[str], server_pid: int | None
) -> list[WorkerRow]:
    """The LocalCluster rows, or none (said) when Dask is not installed."""
    try:
        from distributed import Client, LocalCluster  # noqa: PLC0415 (an optional extra)

        from ddbkeys.engines.dask import tasks_bag  # noqa: PLC0415
    except ImportError as exc:
        print(f"(no Dask rows: {exc})")
        return []

    def on_dask(usage: Usage) -> list[Any]:
        keys: list[Any] = []
        for found, read in tasks_bag(tasks).compute():
            keys += found
            usage.merge(read)
        return keys

    rows = []
    for workers in (2, 4):
        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            ) as cluster,
            Client(cluster) as client,
        ):
            client.wait_for_workers(workers)
            client.run(_import_ddbkeys)
            label = f"Dask LocalCluster, {workers} workers"
            rows.append(measured(label, workers, on_dask, expected, server_pid))
    return rows


def bench_workers(
    client: DynamoDBClient, factory: TableFactory, pid: int | None, scale: float
) -> list[str]:
    """Load the table, print the rows, and return the targets they missed."""
    count = max(200, int(KEYS * scale))
    table = factory(("pk", "S"), ("sk", "N"))
    load_items(
        client,
        table,
        [{"pk": {"S": f"w{k:07}"}, "sk": {"N": "1"}, "p": {"S": "x" * 120}} for k in range(count)],
    )
    expected = {f"w{k:07}" for k in range(count)}
    tasks = plan_listing(client, table, METHOD, tasks=TASKS)
    load = os.getloadavg()[0]
    print(
        f"One listing ({METHOD}, {count:,} keys, {len(tasks)} tasks) by workers; this machine: "
        f"{os.cpu_count()} cores, load average {load:.1f} at the start"
    )
    print(
        f"{'workers (the fastest of ' + str(ROUNDS) + ' rounds)':<36} {'keys':>8} {'RCU':>8} "
        f"{'x RCU':>6} {'wall s':>7} {'keys/s':>8} {'x keys/s':>8} {'server CPU s':>12} "
        f"{'correct':>7}"
    )
    rounds = []
    for _ in range(ROUNDS):
        rows = [measured("one worker (run_tasks, 1 process)", 1, pool(tasks, 1), expected, pid)]
        rows += [
            measured(f"process pool (run_tasks), {n} workers", n, pool(tasks, n), expected, pid)
            for n in (2, 4)
        ]
        rounds.append(rows + dask_rows(tasks, expected, pid))
    factory.delete_all()
    rows = [fastest(runs) for runs in zip(*rounds, strict=True)]
    for row in rows:
        print_row(row, rows[0])
    return check_workers(rows)


def fastest(runs: tuple[WorkerRow, ...]) -> WorkerRow:
    """A row's fastest run, correct only if every run was."""
    best = min(runs, key=lambda r: r.seconds)
    return replace(best, correct=all(r.correct for r in runs))


def print_row(row: WorkerRow, one: WorkerRow) -> None:
    server = "" if row.server_cpu is None else f"{row.server_cpu:.1f}"
    print(
        f"{row.label:<36} {row.keys:>8} {row.rcu:>8.1f} {row.rcu / one.rcu:>6.3f} "
        f"{row.seconds:>7.2f} {row.keys / row.seconds:>8.0f} "
        f"{one.seconds / row.seconds:>8.2f} {server:>12} {'yes' if row.correct else 'NO':>7}",
        flush=True,
    )


def check_workers(rows: list[WorkerRow]) -> list[str]:
    """The targets ``rows`` missed (the first row is the one worker)."""
    one = rows[0]
    problems = [f"workers: {r.label} listed the wrong keys" for r in rows if not r.correct]
    for row in rows[1:]:
        speedup = one.seconds / row.seconds
        if speedup < TARGETS[row.workers]:
            problems.append(
                f"workers: {row.label} at {speedup:.2f}x one worker's keys/s "
                f"< {TARGETS[row.workers]}x"
            )
        if abs(row.rcu - one.rcu) > RCU_WITHIN * one.rcu:
            problems.append(
                f"workers: {row.label} RCU {row.rcu:.1f}, not within {RCU_WITHIN:.0%} of one "
                f"worker's {one.rcu:.1f}"
            )
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint-url", help="Default: an embedded DynamoDB Local.")
    parser.add_argument("--quick", action="store_true", help="A small table (a smoke test).")
    args = parser.parse_args()
    server = None if args.endpoint_url else DynamoDBLocal(heap_mb=2048).start()
    endpoint = args.endpoint_url or server.endpoint_url  # type: ignore[union-attr]
    factory = TableFactory(make_client(endpoint_url=endpoint), prefix="ddbkeys-bench")
    try:
        problems = bench_workers(
            factory.client, factory, server.pid if server else None, 0.05 if args.quick else 1.0
        )
    finally:
        factory.delete_all()
        if server is not None:
            server.stop()
    print()
    print("\n".join(["Targets missed:", *problems]) if problems else "All targets met.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
