"""The fleet rows of benchmarks/ids.py: ids from independent processes, as a fleet of Lambda
functions takes them.

Each of :data:`PROCESSES` spawned processes makes one client (as a Lambda function does at
init), then takes its ids one call at a time, building the strategy object in every call (as a
handler does), with no state shared between processes but the table. Every request reaches
DynamoDB through a counting proxy (:class:`~ddbkeys.testing.FaultProxy`, forwarding all), which
counts them by operation as the server would see them: a resent request and a cancelled
transaction count like any other. The write units the service would bill are summed through one
:class:`~ddbkeys._capacity.Usage` per process, handed to each object.

Reported per strategy, over :data:`RUNS` runs: ids/s (median; a run from the first call of the
first process to the end of the last), write requests per id (the mean over the runs, and the
most in one), write units per id (the most) and DescribeTables per process (the most). Targets:
gapless at most 2.2 write requests per id on average and 2.5 in any run; the idempotent counter
at most 1.3 write requests and 2 write units per id; at most 2 DescribeTables per process.
"""

from __future__ import annotations

import multiprocessing
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage
from ddbkeys._connect import make_client
from ddbkeys.ids import AtomicCounter, GaplessSequence, audit_ids
from ddbkeys.testing._proxy import FaultProxy

if TYPE_CHECKING:
    from multiprocessing.synchronize import Barrier

    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

PROCESSES = 8
#: Ids each process takes (one call each) in a full run.
PER_PROCESS = 50
#: Runs of each strategy (their mean and worst are what the targets hold to).
RUNS = 4
WRITES = frozenset({"UpdateItem", "PutItem", "TransactWriteItems", "DeleteItem", "BatchWriteItem"})


@dataclass(frozen=True)
class Target:
    """A strategy's targets (None: none): write requests per id, on average over the runs and
    in the worst run, and write units per id in the worst run."""

    mean_writes: float | None = None
    most_writes: float | None = None
    most_units: float | None = None

    def met(self, runs: list[FleetRun]) -> bool:
        writes = [r.writes_per_id for r in runs]
        return all(
            limit is None or seen <= limit
            for limit, seen in (
                (self.mean_writes, sum(writes) / len(writes)),
                (self.most_writes, max(writes)),
                (self.most_units, max(r.units_per_id for r in runs)),
                (MOST_DESCRIBES, max(r.describes_per_process for r in runs)),
            )
        )

    def __str__(self) -> str:
        limits = [
            f"w<={self.mean_writes:g} avg" if self.mean_writes is not None else "",
            f"w<={self.most_writes:g}" if self.most_writes is not None else "",
            f"u<={self.most_units:g}" if self.most_units is not None else "",
            f"d<={MOST_DESCRIBES}",
        ]
        return ", ".join(filter(None, limits))


TARGETS = {
    "counter": Target(),
    "idempotent": Target(most_writes=1.3, most_units=2.0),
    "gapless": Target(mean_writes=2.2, most_writes=2.5),
}
#: DescribeTables each process may send in all.
MOST_DESCRIBES = 2


@dataclass
class FleetRun:
    """What one fleet run measured, summed over its processes."""

    ids: list[int]
    seconds: float
    requests: Counter[str]
    billed: float
    processes: int

    @property
    def rate(self) -> float:
        return len(self.ids) / self.seconds if self.seconds else 0.0

    @property
    def writes_per_id(self) -> float:
        return sum(self.requests[op] for op in WRITES) / len(self.ids)

    @property
    def units_per_id(self) -> float:
        return self.billed / len(self.ids)

    @property
    def describes_per_process(self) -> float:
        return self.requests["DescribeTable"] / self.processes


def take(kind: str, client: DynamoDBClient, table: str, usage: Usage, n: int) -> int:
    """One call, as a handler makes it: the object built, one id taken."""
    if kind == "counter":
        return AtomicCounter(client, table, "orders", usage=usage).next()
    if kind == "idempotent":
        return AtomicCounter(client, table, "orders", idempotent=True, usage=usage).next()
    gapless = GaplessSequence(client, table, "orders", usage=usage)
    return gapless.put({"pk": f"order#{uuid.uuid4().hex}", "n": n})


def fleet_worker(args: tuple[str, str, str, int, Barrier, Any]) -> None:
    kind, endpoint, table, count, barrier, results = args
    client = make_client(endpoint_url=endpoint, max_attempts=10)
    usage = Usage()
    barrier.wait()
    started = time.time()
    ids = [take(kind, client, table, usage, n) for n in range(count)]
    results.put((started, time.time(), ids, usage.billed_write_units))


def spawned(target: Callable[[Any], None], jobs: list[tuple[Any, ...]]) -> list[Any]:
    """Run ``target((*job, barrier, results))`` in a spawned process per job (each waits at
    the barrier for all the others, then puts one row on ``results``); the rows."""
    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(len(jobs))
    results = spawn.Queue()
    workers = [spawn.Process(target=target, args=((*job, barrier, results),)) for job in jobs]
    for w in workers:
        w.start()
    rows = [results.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    return rows


def measure_fleet(kind: str, endpoint: str, table: str, per_process: int) -> FleetRun:
    """One run: the processes take their ids through a counting proxy in front of
    ``endpoint``."""
    with FaultProxy(endpoint) as proxy:
        rows = spawned(fleet_worker, [(kind, proxy.endpoint_url, table, per_process)] * PROCESSES)
        requests: Counter[str] = Counter()
        for (operation, _), n in proxy.counts_by_operation.items():
            requests[operation] += n
    return FleetRun(
        ids=[i for row in rows for i in row[2]],
        seconds=max(r[1] for r in rows) - min(r[0] for r in rows),
        requests=requests,
        billed=sum(r[3] for r in rows),
        processes=PROCESSES,
    )


def fleet_rows(endpoint: str, factory: TableFactory, scale: float, kinds: list[str]) -> list[str]:
    """Print the fleet rows of ``kinds`` (:data:`RUNS` runs each); the rows whose targets were
    missed."""
    if not kinds:
        return []
    print(
        f"\nfleet: {PROCESSES} independent processes, one call at a time each, objects built "
        f"per call; write requests as a counting proxy sees them; {RUNS} runs\n"
        f"{'strategy':<11} {'ids/s':>8} {'writes/id avg':>14} {'worst':>6} {'WCU/id':>7} "
        f"{'Describe/proc':>14}  target"
    )
    missed: list[str] = []
    per_process = max(5, int(PER_PROCESS * scale))
    for kind in kinds:
        runs = []
        for _ in range(RUNS):
            table = factory(("pk", "S"))
            run = measure_fleet(kind, endpoint, table, per_process)
            report = audit_ids(run.ids)
            assert report.duplicates == {}, f"{kind}: ids given out twice"
            if kind != "counter":
                assert sorted(run.ids) == list(range(1, len(run.ids) + 1)), f"{kind}: gaps"
            runs.append(run)
            factory.delete_all()
        target = TARGETS[kind]
        met = target.met(runs)
        writes = [r.writes_per_id for r in runs]
        if not met:
            missed.append(
                f"fleet {kind}: writes/id by run {', '.join(f'{w:.2f}' for w in writes)} ({target})"
            )
        rate = sorted(r.rate for r in runs)[len(runs) // 2]
        print(
            f"{kind:<11} {rate:>8.0f} {sum(writes) / len(writes):>14.2f} {max(writes):>6.2f} "
            f"{max(r.units_per_id for r in runs):>7.2f} "
            f"{max(r.describes_per_process for r in runs):>14.1f}  "
            f"{target}: {'ok' if met else 'MISSED'}",
            flush=True,
        )
        print(f"  (writes/id by run: {', '.join(f'{w:.2f}' for w in writes)})", flush=True)
    return missed
