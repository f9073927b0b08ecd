"""Benchmark: one listing's tasks by one worker, a process pool and Dask, in one run.

    python benchmarks/listing_workers.py               # on an embedded DynamoDB Local
    python benchmarks/listing_workers.py --quick       # a smaller table, for a smoke test
    python benchmarks/listing_workers.py --latency 30  # the second set's requests held 30 ms

(``python benchmarks/partition_keys.py`` runs it too, after its table shapes.) One table of
``KEYS`` single-item collections, planned into ``TASKS`` tasks (``plan_listing``, method
``scan``), then listed by: one worker (a pool of one process, reading one task at a time), a
process pool of 2 and 4 (``list_tasks``) and Dask's LocalCluster of 2 and 4 worker processes
(``ddbkeys.engines.dask``; the cluster is started, and ddbkeys imported on its workers, before
the clock starts, as on a cluster already running). Each row gives keys/s and the read units
the workers sent back, against the one worker's in the same run. The CPU seconds the workers
used are shown, and with an embedded DynamoDB Local its own.

The rows come in two sets, on the same table:

1. **Straight to the server.** Checked: every row lists exactly the table's keys, its RCU within
   ``RCU_WITHIN`` of the one worker's. Not checked: the speed. DynamoDB Local is not the
   service: it shares this machine's 2 cores with the workers, and it does a request's work on
   one thread, one request at a time (with 4 clients sending at once, one of its threads used
   90% of its CPU time, and it answered no more requests a second than for one client). Each
   page costs it about 15 ms of CPU on this table, so no row can be faster than the one worker's
   wall time over the server's CPU seconds: the set's last line says how fast that is, about
   1.9x here, below the 4-workers target whatever the workers do.
2. **Through the fault proxy,** which holds each request ``LATENCY_MS`` (100 ms; ``--latency``),
   as the service's network and its own work on a page of up to 20,000 items take, so that
   the server's work is mostly not on these cores. Checked as the first set, and the speed too:
   2 workers at least ``TARGETS[2]`` times the one worker's keys/s, 4 workers ``TARGETS[4]``
   times. The proxy's count of held requests is checked, so a proxy that held none fails.

The issue's reference ratios (plain boto3 scans from 2 and 4 processes, 1.8-2.3x and 3.1-3.2x)
were measured against one process reading the table as one segment, and the server's work
grows faster than the segment's length: on this table, one process scanning the whole table as
one segment used 17.6 s of the server's CPU, as 2 segments one after the other 8.7 s, as 4
segments 4.7 s, as 16 segments about 2 s. So plain boto3 scans from 2 and 4 processes (one
segment each) come out 2.1x and 3.7x one process reading one segment, when one process reading
the same 2 or 4 segments in turn already gets 1.9x and 3.3x: those ratios are mostly the
segments, not the processes. The one worker here already reads 16.
``python benchmarks/scan_segments.py`` measures this.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage
from ddbkeys._connect import make_client
from ddbkeys._demo_keys import load_items
from ddbkeys._local import DynamoDBLocal
from ddbkeys.partition_keys import ListingTask, list_tasks, plan_listing
from ddbkeys.testing._proxy import FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: The table: this many collections of one item (about 150 bytes each), in this many tasks.
KEYS = 200_000
TASKS = 16
METHOD = "scan"
#: Workers -> the least keys/s against one worker; and how far the RCU may move (a fraction).
TARGETS = {2: 1.6, 4: 2.5}
RCU_WITHIN = 0.03
#: How long the proxy holds each request of the rows checked against the targets (ms).
LATENCY_MS = 100.0
#: Rounds of every row, one after the other; each row keeps its fastest (the machine is shared).
ROUNDS = 2


@dataclass
class WorkerRow:
    label: str
    workers: int
    keys: int
    rcu: float
    seconds: float
    workers_cpu: float
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


def own_cpu(who: int = resource.RUSAGE_SELF) -> float:
    """The CPU seconds of this process (or of its children that ended)."""
    used = resource.getrusage(who)
    return used.ru_utime + used.ru_stime


def measured(
    label: str,
    workers: int,
    listed: Callable[[Usage], tuple[list[Any], float]],
    expected: set[str],
    server_pid: int | None,
) -> WorkerRow:
    """One row: ``listed`` lists every task, adds what they read to the usage it is given, and
    returns the keys and the workers' CPU seconds."""
    usage = Usage()
    cpu = cpu_seconds(server_pid)
    started = time.perf_counter()
    keys, workers_cpu = listed(usage)
    seconds = time.perf_counter() - started
    after = cpu_seconds(server_pid)
    server = after - cpu if after is not None and cpu is not None else None
    correct = len(keys) == len(expected) and set(keys) == expected
    read = usage.read_units
    return WorkerRow(label, workers, len(keys), read, seconds, workers_cpu, server, correct)


def pool(tasks: list[ListingTask], workers: int) -> Callable[[Usage], tuple[list[Any], float]]:
    def listed(usage: Usage) -> tuple[list[Any], float]:
        before = own_cpu(resource.RUSAGE_CHILDREN)  # the pool's, once it has ended
        keys = list(list_tasks(tasks, workers=workers, usage=usage))
        return keys, own_cpu(resource.RUSAGE_CHILDREN) - before

    return listed


def _import_ddbkeys() -> None:
    import ddbkeys.partition_keys._tasks.tasks  # noqa: F401, PLC0415 (on a Dask worker)


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

    def on_dask(client: Client) -> Callable[[Usage], tuple[list[Any], float]]:
        def listed(usage: Usage) -> tuple[list[Any], float]:
            before = sum(client.run(own_cpu).values())
            keys: list[Any] = []
            for found, read in tasks_bag(tasks).compute():
                keys += found
                usage.merge(read)
            return keys, sum(client.run(own_cpu).values()) - before

        return listed

    rows = []
    for workers in (2, 4):
        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,  # (a closing cluster may log a lost heartbeat)
            ) as cluster,
            Client(cluster) as client,
        ):
            client.wait_for_workers(workers)
            client.run(_import_ddbkeys)
            label = f"Dask LocalCluster, {workers} workers"
            rows.append(measured(label, workers, on_dask(client), expected, server_pid))
    return rows


def bench_workers(
    client: DynamoDBClient,
    factory: TableFactory,
    pid: int | None,
    scale: float,
    latency_ms: float = LATENCY_MS,
    table: str | None = None,
    count: int | None = None,
) -> list[str]:
    """Load the table (or take ``table``, already holding ``count`` keys named as this one's),
    print both sets of rows, and return what they missed: the workers straight to the server
    (their keys and RCU checked; their speed shown against the bound the server's CPU sets),
    then, with ``latency_ms``, through the fault proxy holding each request that long (their
    speed checked against the targets too)."""
    made = table is None or count is None
    if table is None or count is None:
        count = max(200, int(KEYS * scale))
        table = factory(("pk", "S"), ("sk", "N"))
        load_items(
            client,
            table,
            [
                {"pk": {"S": f"w{k:07}"}, "sk": {"N": "1"}, "p": {"S": "x" * 120}}
                for k in range(count)
            ],
        )
    expected = {f"w{k:07}" for k in range(count)}
    print(
        f"One listing ({METHOD}, {count:,} keys, {TASKS} tasks) by workers; this machine: "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start"
    )
    try:
        problems = rows_of(client, table, expected, pid, None)
        if latency_ms:
            plan = Faults(delay=1.0, delay_seconds=latency_ms / 1000)
            with FaultProxy(client.meta.endpoint_url, plan) as proxy:
                print()
                problems += rows_of(client, table, expected, pid, (proxy, latency_ms))
    finally:
        if made:
            factory.delete_all()
    return problems


def rows_of(
    client: DynamoDBClient,
    table: str,
    expected: set[str],
    pid: int | None,
    held: tuple[FaultProxy, float] | None,
) -> list[str]:
    """One set of rows, printed; what it missed (the speed only when ``held``: the workers
    through that proxy, holding each request that many milliseconds)."""
    endpoint = held[0].endpoint_url if held else None
    tasks = plan_listing(client, table, METHOD, tasks=TASKS, endpoint_url=endpoint)
    if held:
        print(
            f"Through the fault proxy, each request held {held[1]:g} ms (as a service's network "
            "and its own work would take): checked against the targets"
        )
    else:
        print("Straight to the server, which shares these cores: the speed is not checked")
    print(
        f"{'workers (the fastest of ' + str(ROUNDS) + ' rounds)':<36} {'keys':>8} {'RCU':>8} "
        f"{'x RCU':>6} {'wall s':>7} {'keys/s':>8} {'x keys/s':>8} {'workers CPU s':>13} "
        f"{'server CPU s':>12} {'correct':>7}"
    )
    rounds = []
    for _ in range(ROUNDS):
        rows = [measured("one worker (list_tasks, 1 process)", 1, pool(tasks, 1), expected, pid)]
        rows += [
            measured(f"process pool (list_tasks), {n} workers", n, pool(tasks, n), expected, pid)
            for n in (2, 4)
        ]
        rounds.append(rows + dask_rows(tasks, expected, pid))
    rows = [fastest(runs) for runs in zip(*rounds, strict=True)]
    for row in rows:
        print_row(row, rows[0])
    one = rows[0]
    if one.server_cpu:
        print(
            f"(the server used {one.server_cpu:.1f} CPU s in the one worker's {one.seconds:.1f} s,"
            f" one request at a time: no row can be faster than "
            f"{one.seconds / one.server_cpu:.2f}x)"
        )
    if held and not held[0].counts["delay"]:
        return ["workers: the fault proxy held no request (the rows are not the proxied ones)"]
    return check_workers(rows, speed=held is not None)


def fastest(runs: tuple[WorkerRow, ...]) -> WorkerRow:
    """A row's fastest run, correct only if every run was."""
    best = min(runs, key=lambda r: r.seconds)
    return replace(best, correct=all(r.correct for r in runs))


def print_row(row: WorkerRow, one: WorkerRow) -> None:
    server = "" if row.server_cpu is None else f"{row.server_cpu:.1f}"
    print(
        f"{row.label:<36} {row.keys:>8} {row.rcu:>8.1f} {row.rcu / one.rcu:>6.3f} "
        f"{row.seconds:>7.2f} {row.keys / row.seconds:>8.0f} "
        f"{one.seconds / row.seconds:>8.2f} {row.workers_cpu:>13.1f} {server:>12} "
        f"{'yes' if row.correct else 'NO':>7}",
        flush=True,
    )


def check_workers(rows: list[WorkerRow], speed: bool = True) -> list[str]:
    """The targets ``rows`` missed (the first row is the one worker); keys/s only if ``speed``."""
    one = rows[0]
    problems = [f"workers: {r.label} listed the wrong keys" for r in rows if not r.correct]
    for row in rows[1:]:
        speedup = one.seconds / row.seconds
        if speed and speedup < TARGETS[row.workers]:
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
    parser.add_argument(
        "--latency",
        type=float,
        metavar="MS",
        default=LATENCY_MS,
        help=f"How long the proxy holds each request of the second set (default {LATENCY_MS:g};"
        " 0: no second set).",
    )
    args = parser.parse_args()
    server = None if args.endpoint_url else DynamoDBLocal(heap_mb=2048).start()
    endpoint = args.endpoint_url or server.endpoint_url  # type: ignore[union-attr]
    factory = TableFactory(make_client(endpoint_url=endpoint), prefix="ddbkeys-bench")
    try:
        problems = bench_workers(
            factory.client,
            factory,
            server.pid if server else None,
            0.05 if args.quick else 1.0,
            args.latency,
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
