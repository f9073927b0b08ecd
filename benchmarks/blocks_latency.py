"""The block allocator's rows of benchmarks/ids.py: ``next()`` from many callers of one process,
starting from blocks of 100 that adapt up to :data:`MAX_BLOCK`.

Each round measures ids/s (its ratio is against the article's counter code, measured in the
same round), the latency of each ``next()`` call (p99.9 and worst), the stalls (calls that
waited for a block), and the ids a clean restart wastes: the allocator is closed, a new one
takes the next id on the same counter, and every id between the last one handed out and that
one is waste (with the ids close() reported as wasted). The asyncio row runs 64 tasks of one
event loop; each task awaits ``asyncio.sleep(0)`` after each id (as a task that does any I/O
between ids would), without which no task would ever give the loop to the refill task.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddbkeys._connect import make_client
from ddbkeys.aio import make_client as make_aio_client
from ddbkeys.aio._blocks import BlockAllocator as AsyncBlockAllocator
from ddbkeys.aio._ids import AtomicCounter as AsyncAtomicCounter
from ddbkeys.ids import AtomicCounter, BlockAllocator
from ddbkeys.testing._proxy import FaultProxy, Faults

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

START_BLOCK = 100
MAX_BLOCK = 100_000
TARGET_RATE = 100_000.0  # ids/s from 16 threads of one process
TARGET_P999_MS = 1.0
TARGET_WASTE = 0
#: (label, threads or tasks, ids per round); ids per round for the article's counter code.
ROWS = [("16", 16, 400_000), ("aio 64", 64, 200_000)]
ARTICLE_IDS = 2000


@dataclass
class Run:
    """What one round of one row measured."""

    ids: int
    seconds: float
    latencies: list[int]  # ns, one per next()
    stalls: int
    refills: int
    wasted: int  # by the clean restart
    block_size: int  # at the end
    write_units: float

    @property
    def rate(self) -> float:
        return self.ids / self.seconds

    def percentile(self, fraction: float) -> float:
        """The latency below which ``fraction`` of the calls took, in ms."""
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] / 1e6

    @property
    def worst(self) -> float:
        return max(self.latencies) / 1e6


def restart_waste(handed: list[int], wasted: int, first_after: int) -> int:
    """The ids a clean restart leaves unused: between the last id handed out and the first id
    of the next allocator, plus what close() could not hand back."""
    assert len(set(handed)) == len(handed), "an id was handed out twice"
    return wasted + (first_after - max(handed) - 1)


def run_threads(endpoint: str, table: str, threads: int, count: int) -> Run:
    client = make_client(endpoint_url=endpoint, max_attempts=10)
    counter = AtomicCounter(client, table, "blocks")
    blocks = BlockAllocator(counter, START_BLOCK, max_block_size=MAX_BLOCK)
    handed = [blocks.next()]  # the table's description, a connection, the first block
    before = blocks.stats.stalls, blocks.stats.refills, counter.usage.billed_write_units
    got: list[list[int]] = [[] for _ in range(threads)]
    waits: list[list[int]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads + 1)

    def call(n: int) -> None:
        mine, lat = got[n], waits[n]
        take, clock = blocks.next, time.perf_counter_ns
        start.wait()
        for _ in range(count // threads):
            began = clock()
            mine.append(take())
            lat.append(clock() - began)

    workers = [threading.Thread(target=call, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    start.wait()
    began = time.perf_counter()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - began
    handed += [i for mine in got for i in mine]
    stats = blocks.stats
    report = blocks.close()
    again = BlockAllocator(AtomicCounter(client, table, "blocks"), START_BLOCK)
    first_after = again.next()
    again.close()
    return Run(
        ids=len(handed) - 1,
        seconds=seconds,
        latencies=[ns for lat in waits for ns in lat],
        stalls=stats.stalls - before[0],
        refills=stats.refills - before[1],
        wasted=restart_waste(handed, report.wasted, first_after),
        block_size=blocks.block_size,
        write_units=counter.usage.billed_write_units - before[2],
    )


async def list_tasks(endpoint: str, table: str, tasks: int, count: int) -> Run:
    async with make_aio_client(endpoint, max_attempts=10) as client:
        counter = AsyncAtomicCounter(client, table, "blocks")
        blocks = AsyncBlockAllocator(counter, START_BLOCK, max_block_size=MAX_BLOCK)
        handed = [await blocks.next()]
        before = blocks.stats.stalls, blocks.stats.refills, counter.usage.billed_write_units
        waits: list[list[int]] = [[] for _ in range(tasks)]

        async def call(n: int) -> list[int]:
            mine, lat = [], waits[n]
            take, clock, pause = blocks.next, time.perf_counter_ns, asyncio.sleep
            for _ in range(count // tasks):
                began = clock()
                mine.append(await take())
                lat.append(clock() - began)
                await pause(0)
            return mine

        began = time.perf_counter()
        got = await asyncio.gather(*(call(n) for n in range(tasks)))
        seconds = time.perf_counter() - began
        handed += [i for mine in got for i in mine]
        stats = blocks.stats
        report = await blocks.aclose()
        again = AsyncBlockAllocator(AsyncAtomicCounter(client, table, "blocks"), START_BLOCK)
        first_after = await again.next()
        await again.aclose()
        return Run(
            ids=len(handed) - 1,
            seconds=seconds,
            latencies=[ns for lat in waits for ns in lat],
            stalls=stats.stalls - before[0],
            refills=stats.refills - before[1],
            wasted=restart_waste(handed, report.wasted, first_after),
            block_size=blocks.block_size,
            write_units=counter.usage.billed_write_units - before[2],
        )


def measure_rows(
    endpoint: str,
    factory: TableFactory,
    client: DynamoDBClient,
    article_rate: Callable[[int], float],
    rounds: int,
    scale: float,
) -> int:
    """Print the blocks rows (rounds alternate the article's counter and ddbkeys); the number
    of targets missed. ``article_rate(ids)``: the article's counter code's ids/s from 16
    threads, on a table of its own."""
    print(
        f"\nblocks from one process: next() latency, stalls, restart waste (blocks of "
        f"{START_BLOCK} adapting up to {MAX_BLOCK}; medians of {rounds} round(s), worst: of all)"
    )
    print(
        f"{'writers':>9} {'article ids/s':>13} {'ddbkeys ids/s':>13} {'ratio':>7} "
        f"{'ids/s target':>14} {'p99.9 ms':>9} {'<1 ms':>6} {'worst ms':>9} {'stalls':>11} "
        f"{'blocks':>7} {'last size':>9} {'WCU/id':>8} {'restart waste':>14}"
    )
    missed = 0
    for label, writers, ids in ROWS:
        count = max(writers * 100, int(ids * scale))
        articles: list[float] = []
        runs: list[Run] = []
        for _ in range(rounds):
            articles.append(article_rate(max(16, int(ARTICLE_IDS * scale))))
            table = factory(("pk", "S"))
            if label.startswith("aio"):
                runs.append(asyncio.run(list_tasks(endpoint, table, writers, count)))
            else:
                runs.append(run_threads(endpoint, table, writers, count))
            factory.delete_all()
        article = statistics.median(articles)
        rate = statistics.median(r.rate for r in runs)
        p999 = statistics.median(r.percentile(0.999) for r in runs)
        waste = max(r.wasted for r in runs)
        fast = "ok" if rate >= TARGET_RATE else "MISSED"
        quick = "ok" if p999 < TARGET_P999_MS else "MISSED"
        clean = "ok" if waste <= TARGET_WASTE else "MISSED"
        missed += [fast, quick, clean].count("MISSED")
        last = runs[-1]
        print(
            f"{label:>9} {article:>13.0f} {rate:>13.0f} {rate / article:>6.0f}x "
            f"{f'{TARGET_RATE:.0f} {fast}':>14} {p999:>9.4f} {quick:>6} "
            f"{max(r.worst for r in runs):>9.1f} "
            f"{'/'.join(str(r.stalls) for r in runs):>11} "
            f"{'/'.join(str(r.refills) for r in runs):>7} {last.block_size:>9} "
            f"{last.write_units / last.ids:>8.5f} {f'{waste} {clean}':>14}",
            flush=True,
        )
    print(
        "  (stalls and blocks: of each round, the stalls while the blocks grow from 100; worst: a"
        " stalled call, in our runs; an aio task awaits asyncio.sleep(0) after each id; restart"
        " waste: ids left unused between two allocators closed cleanly, target 0)"
    )
    return missed


#: The round trip a real DynamoDB adds (a few ms), against DynamoDB Local's fraction of one.
LINK_DELAY = 0.005


def linked_row(
    endpoint: str, rate: Callable[[bool, str, int], float], rounds: int, scale: float
) -> None:
    """The fixed blocks row (blocks of 100, 16 threads) again, through the fault proxy adding
    :data:`LINK_DELAY` to every request, the article's counter code through the same link.
    ``rate(article, endpoint, ids)``: the ids/s of the article's code or of ddbkeys. No
    target: it shows what the link does to blocks of a fixed size (a round trip or two per
    block), and why sizes adapt."""
    with FaultProxy(endpoint, Faults(delay=1.0, delay_seconds=LINK_DELAY)) as proxy:
        articles, ours = [], []
        for _ in range(rounds):
            articles.append(rate(True, proxy.endpoint_url, max(16, int(1000 * scale))))
            ours.append(rate(False, proxy.endpoint_url, max(1600, int(40_000 * scale))))
        delayed = proxy.counts["delay"]
    assert delayed > 0, "the proxy delayed nothing"
    article, rate_ = statistics.median(articles), statistics.median(ours)
    print(
        f"\nblocks of {START_BLOCK} (fixed), 16 threads, every request {LINK_DELAY * 1000:.0f} ms "
        f"later (the fault proxy; {delayed} requests delayed): article {article:.0f} ids/s, "
        f"ddbkeys {rate_:.0f} ids/s, {rate_ / article:.1f}x (two reservations overlap when the "
        "callers outrun one)",
        flush=True,
    )
