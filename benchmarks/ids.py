"""Benchmark: each id strategy against its article's own code as published, same server, same run.

    python benchmarks/ids.py                 # on an embedded DynamoDB Local
    python benchmarks/ids.py --quick         # smaller runs, for a smoke test
    python benchmarks/ids.py --endpoint-url http://127.0.0.1:8000
    python benchmarks/ids.py --plot docs     # also write docs/ids-throughput.png (and .json)
    python benchmarks/ids.py --rows inserts --rows fleet   # only these groups of rows

It ends with "All targets met." or the rows that missed theirs (and exits 1).

Counter and blocks are compared on minting ids alone (the UpdateItem ADD of "Implement
auto-increment with Amazon DynamoDB", without the put that follows it), and so are two more
counter rows: "coalesced", ``AtomicCounter(group_commit=True)`` (concurrent calls share one
ADD), and "idempotent", ``AtomicCounter(group_commit=True, idempotent=True)`` (each shared write
stamped with a writer slot, so a lost answer retried is recognised), and "boto3", the counter
again with a
client as ``boto3.client("dynamodb")`` makes it, for both (its own retries and 60 s timeouts;
every request is sent from a thread that keeps the deadline, whatever the client); the
item-collection and gapless strategies on whole inserts (id and item written). The whole-insert rows
(benchmarks/inserts.py) measure what a user's insert costs with each strategy (the id and the
item's own write) against the bare PutItem the user would write without ids: throughput (16
threads, median of 5 alternating rounds) and write requests per item as a counting proxy sees
them (targets for blocks and the group-commit counter: at most 1.15 write requests per item,
throughput within 1.15x of PutItem). One more row, "gapless aio 64",
puts from 64 tasks of one event loop with ddbkeys.aio, and its ratio is against the sync gapless
row with 16 threads (target: at least as fast). Each row is a median over rounds that
alternate the article's code and ddbkeys, and every ratio is against the article's code measured
in the same run, because these machines are shared and noisy. The fleet rows
(benchmarks/fleet.py) take ids as a fleet of Lambda functions does: 8 independent processes, one
call at a time each, objects built per call, for the counter, the idempotent counter and
gapless, 4 runs each; they report ids/s, write requests per id as a counting proxy sees them
(cancelled transactions included), write units and DescribeTables per id (targets: the
idempotent counter at most 1.3 write requests and 2 write units per id, gapless at most 2.2
write requests per id on average and 2.5 in any run, and at most 2 DescribeTables per
process). Wall times on DynamoDB Local are
not the service's; the ratios, retries and write units per id are what carry over. (DynamoDB
Local counts a transactional write as 1 unit per item; the service charges 2.)
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from aiobotocore.config import AioConfig
from articles import ArticleStats, article_collection, article_counter, article_gapless
from blocks_latency import linked_row
from blocks_latency import measure_rows as blocks_rows
from fleet import fleet_rows, spawned
from inserts import insert_rows

from ddbkeys._connect import make_client
from ddbkeys._local import DynamoDBLocal
from ddbkeys._plots import grouped_bars, plot_arguments, save_figures, saved_figures
from ddbkeys.aio import make_client as make_aio_client
from ddbkeys.aio._gapless import GaplessSequence as AsyncGaplessSequence
from ddbkeys.ids import AtomicCounter, BlockAllocator, CollectionSequence, GaplessSequence
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from multiprocessing.synchronize import Barrier

    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass
class Tally:
    """What one run measured."""

    ids: int = 0
    seconds: float = 0.0
    retries: int = 0
    write_units: float = 0.0

    @property
    def rate(self) -> float:
        return self.ids / self.seconds if self.seconds else 0.0


# --- ddbkeys ------------------------------------------------------------------------------


def ours(kind: str, client: DynamoDBClient, table: str) -> tuple[Callable[[int], int], Any]:
    if kind in ("counter", "boto3"):
        counter = AtomicCounter(client, table, "orders")
        return lambda _: counter.next(), counter.usage
    if kind in ("coalesced", "idempotent"):
        counter = AtomicCounter(
            client, table, "orders", group_commit=True, idempotent=kind == "idempotent"
        )
        return lambda _: counter.next(), counter.usage
    if kind == "blocks":
        counter = AtomicCounter(client, table, "blocks")
        blocks = BlockAllocator(counter, 100)
        return lambda _: blocks.next(), counter.usage
    if kind == "collection":
        sequence = CollectionSequence(client, table)
        return lambda i: sequence.put("projectA", {"priority": "low", "n": i}), sequence.usage
    gapless = GaplessSequence(client, table, "users")
    tag = uuid.uuid4().hex[:8]
    return lambda i: gapless.put({"pk": f"User#{tag}-{i}"}), gapless.usage


ARTICLES = {
    "counter": article_counter,
    "boto3": article_counter,
    "coalesced": article_counter,
    "idempotent": article_counter,
    "blocks": article_counter,
    "collection": article_collection,
    "gapless": article_gapless,
}


def prepare(client: DynamoDBClient, factory: TableFactory, kind: str) -> str:
    if kind == "collection":
        return factory(("pk", "S"), ("sk", "N"))
    table = factory(("pk", "S"))
    if kind == "gapless":
        client.put_item(TableName=table, Item={"pk": {"S": "UserMetadata"}, "LastID": {"N": "0"}})
    return table


def make_op(
    article: bool, kind: str, client: DynamoDBClient, table: str
) -> tuple[Callable[[int], int], Callable[[], tuple[int, float]]]:
    """The operation, and a function giving (retries, write units) so far."""
    if article:
        stats = ArticleStats()
        op = ARTICLES[kind](client, table, stats)
        return op, lambda: (stats.retries, stats.write_units)
    op, usage = ours(kind, client, table)
    return op, lambda: (usage.retries, usage.billed_write_units)


def run_threads(op: Callable[[int], int], writers: int, count: int, offset: int = 0) -> float:
    """``writers`` threads, each calling ``op`` in a loop for its share of ``count`` ids."""
    shares = [range(offset + w, offset + count, writers) for w in range(writers)]
    got: list[int] = []

    def writer(share: range) -> None:
        mine = [op(i) for i in share]
        got.extend(mine)

    threads = [threading.Thread(target=writer, args=(share,)) for share in shares]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    assert len(got) == count, "a writer failed"
    return elapsed


def process_worker(args: tuple[bool, str, str, str, int, int, Barrier, Any]) -> None:
    article, kind, endpoint, table, threads, count, barrier, results = args
    client = make_client(endpoint_url=endpoint, max_attempts=10)
    op, totals = make_op(article, kind, client, table)
    barrier.wait()
    started = time.time()
    offset = (multiprocessing.current_process().pid or 0) * 10**6
    run_threads(op, threads, count, offset)
    retries, units = totals()
    results.put((started, time.time(), count, retries, units))


def run_processes(
    article: bool, kind: str, endpoint: str, table: str, procs: int, threads: int, count: int
) -> Tally:
    job = (article, kind, endpoint, table, threads, count // procs)
    rows = spawned(process_worker, [job] * procs)
    start = min(r[0] for r in rows)
    end = max(r[1] for r in rows)
    return Tally(
        ids=sum(r[2] for r in rows),
        seconds=end - start,
        retries=sum(r[3] for r in rows),
        write_units=sum(r[4] for r in rows),
    )


def measure(
    article: bool,
    kind: str,
    endpoint: str,
    factory: TableFactory,
    client: DynamoDBClient,
    writers: int,
    count: int,
    procs: int,
) -> Tally:
    table = prepare(client, factory, kind)
    if procs > 1:
        return run_processes(article, kind, endpoint, table, procs, writers // procs, count)
    worker_client = (
        boto3_client(endpoint) if kind == "boto3" else make_client(endpoint, max_attempts=10)
    )
    op, totals = make_op(article, kind, worker_client, table)
    op(-1)  # warm up: the table description, connections
    before = totals()
    seconds = run_threads(op, writers, count)
    retries, units = totals()
    return Tally(count, seconds, retries - before[0], units - before[1])


def boto3_client(endpoint: str) -> DynamoDBClient:
    """A client as a user makes it: boto3's default configuration (credentials given, since
    DynamoDB Local takes any and the machine may have none)."""
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


# --- ddbkeys.aio: gapless from many tasks of one event loop --------------------------------

#: The async row: (kind, tasks), measured in the rounds of the sync row it is compared with.
ASYNC_ROW = ("gapless", 64)
#: ... which is this sync row (kind, writers, processes); target: async ids/s / sync ids/s.
ASYNC_AGAINST = ("gapless", 16, 1)
ASYNC_TARGET = 1.0


async def list_tasks(endpoint: str, table: str, tasks: int, count: int) -> Tally:
    """``tasks`` tasks of one event loop, each putting its share of ``count`` items with one
    ``ddbkeys.aio.GaplessSequence`` (their puts share commits)."""
    config = AioConfig(max_pool_connections=64)
    async with make_aio_client(endpoint, max_attempts=10, config=config) as client:
        gapless = AsyncGaplessSequence(client, table, "users")
        tag = uuid.uuid4().hex[:8]
        await gapless.put({"pk": f"User#{tag}-warm-up"})  # the table description, connections
        before = (gapless.usage.retries, gapless.usage.billed_write_units)

        async def writer(share: range) -> int:
            for i in share:
                await gapless.put({"pk": f"User#{tag}-{i}"})
            return len(share)

        started = time.perf_counter()
        done = await asyncio.gather(*(writer(range(t, count, tasks)) for t in range(tasks)))
        seconds = time.perf_counter() - started
        assert sum(done) == count, "a task failed"
        return Tally(
            count,
            seconds,
            gapless.usage.retries - before[0],
            gapless.usage.billed_write_units - before[1],
        )


def measure_async(
    endpoint: str, factory: TableFactory, client: DynamoDBClient, tasks: int, count: int
) -> Tally:
    table = prepare(client, factory, ASYNC_ROW[0])
    return asyncio.run(list_tasks(endpoint, table, tasks, count))


def run_rounds(
    kind: str,
    writers: int,
    procs: int,
    article_n: int,
    our_n: int,
    rounds: int,
    scale: float,
    endpoint: str,
    factory: TableFactory,
    client: DynamoDBClient,
) -> tuple[list[Tally], list[Tally], list[Tally]]:
    """The rounds of one row, alternating the article's code and ddbkeys (and, for the sync row
    the async row is compared with, ddbkeys.aio): the runs of each."""
    article_runs: list[Tally] = []
    our_runs: list[Tally] = []
    async_runs: list[Tally] = []
    for _ in range(rounds):
        article_count = max(16, int(article_n * scale))
        article_runs.append(
            measure(True, kind, endpoint, factory, client, writers, article_count, procs)
        )
        our_count = max(16, int(our_n * scale))
        our_runs.append(measure(False, kind, endpoint, factory, client, writers, our_count, procs))
        if (kind, writers, procs) == ASYNC_AGAINST:
            tasks = ASYNC_ROW[1]
            count = max(tasks, int(our_n * scale))
            async_runs.append(measure_async(endpoint, factory, client, tasks, count))
        factory.delete_all()
    return article_runs, our_runs, async_runs


#: The strategies of the fleet rows (benchmarks/fleet.py): 8 independent processes, one call at
#: a time each, objects built per call, as a fleet of Lambda functions takes ids.
FLEET_KINDS = ("counter", "idempotent", "gapless")
#: The strategies of the whole-insert rows (benchmarks/inserts.py): the id and the item's own
#: write, against a bare PutItem.
INSERT_KINDS = ("counter", "coalesced", "blocks", "gapless", "collection")
#: The groups of rows (--rows): against the articles' code, whole inserts, the fleet, and the
#: block allocator's latency (benchmarks/blocks_latency.py).
SECTIONS = ("articles", "inserts", "fleet", "latency")

TARGETS = {
    ("counter", 16, 1): 0.95,
    ("coalesced", 16, 1): 8.0,
    ("blocks", 16, 1): 50.0,
    ("gapless", 16, 1): 10.0,
    ("gapless", 16, 4): 3.0,
    ("collection", 16, 1): 3.0,
}


#: (kind, writers, processes, ids per run for the article's code, ids per run for ddbkeys)
PLAN = [
    ("counter", 1, 1, 600, 600),
    ("counter", 16, 1, 2000, 2000),
    ("boto3", 1, 1, 600, 600),
    ("coalesced", 16, 1, 2000, 12000),
    ("idempotent", 16, 1, 2000, 6000),
    ("blocks", 1, 1, 600, 20000),
    ("blocks", 16, 1, 2000, 60000),
    ("collection", 1, 1, 300, 300),
    ("collection", 16, 1, 400, 2000),
    ("gapless", 1, 1, 300, 300),
    ("gapless", 16, 1, 300, 3000),
    ("gapless", 16, 4, 300, 2000),
]


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint-url", help="Default: an embedded DynamoDB Local.")
    parser.add_argument("--quick", action="store_true", help="Small runs (a smoke test).")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--only",
        choices=sorted(ARTICLES),
        action="append",
        help="Run only these strategies (repeatable).",
    )
    parser.add_argument(
        "--rows",
        choices=SECTIONS,
        action="append",
        help="Run only these groups of rows (repeatable; default: all of them).",
    )
    plot_arguments(parser, CHART)
    return parser.parse_args()


def article_rows(
    plan: list[tuple[str, int, int, int, int]],
    rounds: int,
    scale: float,
    endpoint: str,
    factory: TableFactory,
    client: DynamoDBClient,
    measured: list[dict[str, Any]],
) -> list[str]:
    """Print the rows against the articles' code; the rows whose targets were missed."""
    print(
        f"{'strategy':<11} {'writers':>9} {'article ids/s':>13} {'ddbkeys ids/s':>13} "
        f"{'ratio':>7} {'target':>7} {'retries/id':>16} {'WCU/id':>14}"
    )
    print(
        f"{'':<11} {'':>9} {'':>13} {'':>13} {'':>7} {'':>7} {'article / ours':>16} "
        f"{'article / ours':>14}"
    )
    missed: list[str] = []
    for kind, writers, procs, article_n, our_n in plan:
        article_runs, our_runs, async_runs = run_rounds(
            kind, writers, procs, article_n, our_n, rounds, scale, endpoint, factory, client
        )
        article_rate = statistics.median(t.rate for t in article_runs)
        our_rate = statistics.median(t.rate for t in our_runs)
        ratio = our_rate / article_rate
        target = TARGETS.get((kind, writers, procs))
        met = "" if target is None else ("ok" if ratio >= target else "MISSED")
        if met == "MISSED":
            missed.append(f"{kind} {writers} writers: {ratio:.2f}x (at least {target:g}x)")
        article_t, our_t = article_runs[-1], our_runs[-1]
        label = f"{writers}" if procs == 1 else f"{procs}x{writers // procs}"
        measured.append(
            {"strategy": kind, "writers": label, "article": article_rate, "ddbkeys": our_rate}
        )
        print(
            f"{kind:<11} {label:>9} {article_rate:>13.0f} {our_rate:>13.0f} {ratio:>6.2f}x "
            f"{(f'{target:g}x ' + met) if target else '':>7} "
            f"{article_t.retries / article_t.ids:>7.2f} / {our_t.retries / our_t.ids:<6.2f} "
            f"{article_t.write_units / article_t.ids:>6.2f} / "
            f"{our_t.write_units / our_t.ids:<5.2f}",
            flush=True,
        )
        if async_runs and async_row(async_runs, our_rate, measured):
            missed.append(f"{ASYNC_ROW[0]} aio {ASYNC_ROW[1]}")
    return missed


def latency_rows(
    endpoint: str, factory: TableFactory, client: DynamoDBClient, rounds: int, scale: float
) -> list[str]:
    """Print the block allocator's latency rows (benchmarks/blocks_latency.py); what missed."""
    latency_missed = blocks_rows(
        endpoint,
        factory,
        client,
        lambda n: measure(True, "blocks", endpoint, factory, client, 16, n, 1).rate,
        rounds,
        scale,
    )
    linked_row(
        endpoint,
        lambda article, url, n: measure(article, "blocks", url, factory, client, 16, n, 1).rate,
        rounds,
        scale,
    )
    return [f"blocks latency: {latency_missed} target(s)"] if latency_missed else []


def main() -> int:
    args = arguments()
    if args.replot:
        saved = saved_figures(args.replot, CHART)
        print(f"wrote {plot(saved['rows'], args.replot, quick=saved['quick'])}")
        return 0
    rounds = 1 if args.quick else args.rounds
    scale = 0.1 if args.quick else 1.0
    sections = set(args.rows or SECTIONS)
    plan = [row for row in PLAN if row[0] in (args.only or [row[0]])]

    def chosen(kinds: tuple[str, ...]) -> list[str]:
        return [k for k in kinds if k in (args.only or [k])]

    server = None if args.endpoint_url else DynamoDBLocal(heap_mb=1024).start()
    endpoint = args.endpoint_url or server.endpoint_url  # type: ignore[union-attr]
    client = make_client(endpoint_url=endpoint)
    factory = TableFactory(client, prefix="ddbkeys-bench")
    missed: list[str] = []
    measured: list[dict[str, Any]] = []
    try:
        if "articles" in sections:
            missed += article_rows(plan, rounds, scale, endpoint, factory, client, measured)
        if "inserts" in sections:
            missed += insert_rows(endpoint, factory, quick=args.quick, kinds=chosen(INSERT_KINDS))
        if "fleet" in sections:
            missed += fleet_rows(endpoint, factory, scale, chosen(FLEET_KINDS))
        if "latency" in sections and chosen(("blocks",)):
            missed += latency_rows(endpoint, factory, client, rounds, scale)
    finally:
        factory.delete_all()
        if server is not None:
            server.stop()
    if args.plot and measured:
        print(f"wrote {plot(measured, args.plot, quick=args.quick)}")
    if missed:
        print(f"\n{len(missed)} target(s) missed:")
        for row in missed:
            print(f"  {row}")
        return 1
    print("\nAll targets met.")
    return 0


def async_row(runs: list[Tally], sync_rate: float, measured: list[dict[str, Any]]) -> int:
    """Print the async row under the sync row it is compared with (its "article ids/s" column is
    that sync row's ddbkeys ids/s); 1 if its target was missed."""
    kind, tasks = ASYNC_ROW
    rate = statistics.median(t.rate for t in runs)
    ratio = rate / sync_rate if sync_rate else 0.0
    met = "ok" if ratio >= ASYNC_TARGET else "MISSED"
    last = runs[-1]
    label = f"aio {tasks}"
    measured.append({"strategy": kind, "writers": label, "article": None, "ddbkeys": rate})
    print(
        f"{kind:<11} {label:>9} {sync_rate:>13.0f} {rate:>13.0f} {ratio:>6.2f}x "
        f"{f'{ASYNC_TARGET:g}x ' + met:>7} {'-':>7} / {last.retries / last.ids:<6.2f} "
        f"{'-':>5} / {last.write_units / last.ids:<5.2f}",
        flush=True,
    )
    print(
        f"  (aio {tasks}: {tasks} tasks of one event loop, ddbkeys.aio; its ratio is against the "
        f"sync row above, {ASYNC_AGAINST[1]} threads, not the article's code)",
        flush=True,
    )
    return met == "MISSED"


CHART = "ids-throughput"


def plot(measured: list[dict[str, Any]], folder: Path, *, quick: bool) -> Path:
    """ids/s by strategy and number of writers, the articles' code beside ddbkeys (log scale)."""
    save_figures(folder, CHART, {"quick": quick, "rows": measured})
    return grouped_bars(
        folder / f"{CHART}.png",
        title="Ids per second, by strategy and writers (threads; 4x4 = 4 processes x 4)",
        groups=[
            f"{m['strategy']}\n{m['writers']} writer{'' if m['writers'] == '1' else 's'}"
            for m in measured
        ],
        series={
            "the articles' code": [m["article"] for m in measured],
            "ddbkeys": [m["ddbkeys"] for m in measured],
        },
        ylabel="ids/s (log scale)",
        log=True,
        note="benchmarks/ids.py"
        + (" --quick" if quick else "")
        + " on DynamoDB Local, 2 shared cores; medians of rounds alternating the articles' code"
        + " and ddbkeys",
    )


if __name__ == "__main__":
    sys.exit(main())
