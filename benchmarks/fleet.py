"""The fleet rows of benchmarks/ids.py: ids from independent processes, as a fleet of Lambda
functions takes them.

Each of :data:`PROCESSES` spawned processes makes one client (as a Lambda function does at
init), then takes its ids one call at a time, building the strategy object in every call (as a
handler does), with no state shared between processes but the table. Every HTTP request each
process sends is counted by operation through botocore's ``before-send`` event (a resent
request, after a lost answer or a throttle, counts again), and the write units the service
would bill through one :class:`~ddbkeys._capacity.Usage` per process, handed to each object.

Reported per strategy: ids/s over the whole run (the first call of the first process to the
end of the last), write requests per id, write units per id (the service's rules), and
DescribeTables per process.
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

if TYPE_CHECKING:
    from multiprocessing.synchronize import Barrier

    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

PROCESSES = 8
#: Ids each process takes (one call each) in a full run.
PER_PROCESS = 50
WRITES = frozenset({"UpdateItem", "PutItem", "TransactWriteItems", "DeleteItem"})
#: strategy: (most write requests per id, most write units per id), None where no target.
TARGETS: dict[str, tuple[float | None, float | None]] = {
    "counter": (None, None),
    "idempotent": (1.3, 2.0),
    "gapless": (2.5, None),
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


def count_requests(client: DynamoDBClient, counts: Counter[str]) -> None:
    """Count every HTTP request ``client`` sends, by operation (resent ones included)."""

    def sent(request: Any, **_: Any) -> None:
        target = request.headers.get("X-Amz-Target", b"")
        name = target.decode() if isinstance(target, bytes) else str(target)
        counts[name.rpartition(".")[2]] += 1

    client.meta.events.register("before-send.dynamodb", sent)


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
    counts: Counter[str] = Counter()
    count_requests(client, counts)
    usage = Usage()
    barrier.wait()
    started = time.time()
    ids = [take(kind, client, table, usage, n) for n in range(count)]
    results.put((started, time.time(), ids, dict(counts), usage.billed_write_units))


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
    rows = spawned(fleet_worker, [(kind, endpoint, table, per_process)] * PROCESSES)
    requests: Counter[str] = Counter()
    for row in rows:
        requests.update(row[3])
    return FleetRun(
        ids=[i for row in rows for i in row[2]],
        seconds=max(r[1] for r in rows) - min(r[0] for r in rows),
        requests=requests,
        billed=sum(r[4] for r in rows),
        processes=PROCESSES,
    )


def fleet_rows(
    endpoint: str, factory: TableFactory, rounds: int, scale: float, kinds: list[str]
) -> int:
    """Print the fleet rows of ``kinds`` (medians of ``rounds``); the number of targets
    missed."""
    if not kinds:
        return 0
    print(
        f"\nfleet: {PROCESSES} independent processes, one call at a time each, objects built "
        "per call\n"
        f"{'strategy':<11} {'ids/s':>8} {'writes/id':>10} {'WCU/id':>7} {'Describe/proc':>14} "
        f"{'target':>20}"
    )
    missed = 0
    per_process = max(5, int(PER_PROCESS * scale))
    for kind in kinds:
        runs = []
        for _ in range(rounds):
            table = factory(("pk", "S"))
            run = measure_fleet(kind, endpoint, table, per_process)
            report = audit_ids(run.ids)
            assert report.duplicates == {}, f"{kind}: ids given out twice"
            if kind != "counter":
                assert sorted(run.ids) == list(range(1, len(run.ids) + 1)), f"{kind}: gaps"
            runs.append(run)
            factory.delete_all()
        runs.sort(key=lambda r: r.rate)
        run = runs[len(runs) // 2]
        writes, units = TARGETS[kind]
        verdicts = []
        if writes is not None:
            verdicts.append(max(r.writes_per_id for r in runs) <= writes)
        if units is not None:
            verdicts.append(max(r.units_per_id for r in runs) <= units)
        verdicts.append(max(r.describes_per_process for r in runs) <= MOST_DESCRIBES)
        met = all(verdicts)
        missed += not met
        limits = [f"w<={writes:g}" if writes is not None else "", f"u<={units:g}" if units else ""]
        target = ", ".join([*filter(None, limits), f"d<={MOST_DESCRIBES}"])
        print(
            f"{kind:<11} {run.rate:>8.0f} {run.writes_per_id:>10.2f} {run.units_per_id:>7.2f} "
            f"{run.describes_per_process:>14.1f} {target + (' ok' if met else ' MISSED'):>20}",
            flush=True,
        )
    return missed
