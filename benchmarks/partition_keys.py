"""Benchmark: every partition-key listing method against what a user writes, on every shape.

    python benchmarks/partition_keys.py --endpoint-url URL     # or an embedded DynamoDB Local
    python benchmarks/partition_keys.py --quick                # smaller tables, a smoke test
    python benchmarks/partition_keys.py --only skewed --only runs

The shapes (benchmarks/shapes.py says each one's make-up and what it attacks): uniform, skewed,
tiny-binary, heavy-tailed, mixed, the aws-samples loader's three tables (sample-s, sample-n,
sample-b), two adversarial ones (unit-edge: collections right at a 4 KB unit; runs: alternating
runs of tiny and large collections in scan order), and keys-220k (220,000 single-item keys).

On each: a plain boto3 Scan (the paginator, ``ProjectionExpression`` on the key, the consumed
capacity asked for, keys in a set: what a user writes), ddbkeys' scan, skip, skip-pages and auto
(as a user calls it: no ``segments``, auto decides its readers; and "x4": four readers),
each three times in alternating order, its median kept: requests, items read, RCU, wall
time and whether it listed exactly the table's keys (a row whose first run
takes over 30 s is run once: ``measure.LONG_SECONDS``). skip reads with 16 readers
(``SKIP_READERS`` says why; its time is not compared). ``--article`` adds the article's skip
scan (its Python sample: Limit 1, one reader; as many requests and RCU as skip). Printed with
each shape, and checked (issue 35):

1. auto at most 1.05x the cheapest row's RCU and 2x the fastest row's time (+0.05 s);
2. where skip-pages saves at most 5% of the plain Scan's RCU: its requests at most 2x the plain
   Scan's + 10, and its time behind a proxy holding each request 100 ms
   (benchmarks/listing_workers.py's latency) at most 1.5x ddbkeys' scan's there;
3. ``estimate_listing()`` before the listing: the actual RCU of scan, skip-pages (and index,
   once built) and the key count inside its range, high/low at most 2 (an estimate without
   ranges is read as a point: ``measure.span``).

Then, on the shapes of ``INDEXED`` (all but uniform, runs and keys-220k; ``--index-all``: all but
keys-220k), the marker index is built, backfilled (issue 33's target) and kept by a running
follower of the table's stream: index and auto (which must then prove the index), three rounds
each, against the cheapest and fastest way to list the table as it now is (the index, and the
plain Scan, scan and skip-pages again, which now read the markers too: "markers kept"); where
the index costs more than listing the table did before the markers, the estimate of the table
without them must have warned so (what ``index create`` says); then the follower held 1,000
changes behind (the index and auto once each: the listing replays them from the stream or lists
another way). ``ddbkeys.aio``'s listing (32 concurrent segments, one event loop) runs once on
each shape but keys-220k. On keys-220k's table: the CLI's peak memory (10,000 keys and that
table) and one listing's tasks by workers (benchmarks/listing_workers.py). Methods that may
send a request a key are stopped at a cap (25x the plain Scan's requests + 500, + 2 a key but
on keys-220k; behind the proxy 3x ddbkeys' scan's + 20): such a row's figures are marked ">="
and its targets count as missed.

Requests and RCU carry over to the service; wall times on DynamoDB Local do not (a deep
ExclusiveStartKey is slow there). The run ends with "All targets met." or the targets missed
(exit status 1).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiobotocore.config import AioConfig
from index_rows import BackfillRow, backfill_row, changes_behind
from listing_workers import bench_workers
from measure import ARTICLE, PLAIN, Row, key_value, plain_scan, rounds, run_method
from memory import memory
from shapes import Key, Shape, load, shapes
from targets import (
    Actual,
    article_missed,
    auto_lines,
    estimate_lines,
    markers_lines,
    pages_lines,
    proxied_lines,
    saves_little,
)

from ddbkeys._capacity import Usage
from ddbkeys._connect import make_client
from ddbkeys._demo_keys import followed
from ddbkeys._local import DynamoDBLocal
from ddbkeys._plots import grouped_bars, plot_arguments, save_figures, saved_figures
from ddbkeys.aio import make_client as make_aio_client
from ddbkeys.aio._listing import distinct_partition_keys as aio_listing
from ddbkeys.partition_keys import ListingEstimate, MarkerIndex, estimate_listing
from ddbkeys.testing._proxy import FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: skip sends a request a key, each from a start key deep in the table (slow on DynamoDB Local):
#: it reads with this many readers, whose segments make each start key shallower (on unit-edge:
#: 74 s with one reader, 9 s with eight). Its requests and RCU are a reader's, plus at most one
#: request a segment; its time is not compared (it is left out of "the fastest").
SKIP_READERS = 16
#: The rows of each shape: name -> (method, readers).
METHODS = {
    PLAIN: (PLAIN, 1),
    ARTICLE: (ARTICLE, 1),
    "scan": ("scan", 1),
    "skip": ("skip", SKIP_READERS),
    "skip-pages": ("skip-pages", 1),
    "auto": ("auto", None),  # as a user calls it: auto decides its readers
    "auto x4": ("auto", 4),
    "index": ("index", 1),
}
#: Those that may send a request a key (capped), and those not run on keys-220k (they would
#: send 220,000 requests).
CAPPED = {"skip-pages", "auto", "auto x4", "index auto", "index auto x4"}
PER_KEY = {ARTICLE, "skip"}
BIG = "keys-220k"
#: The shapes the marker index is built on by default (``--index-all``: every one but keys-220k):
#: the backfill finds each collection with a request from a start key deep in the table, which
#: DynamoDB Local serves slowly (minutes on uniform's 100,000 items).
INDEXED = {
    "skewed",
    "tiny-binary",
    "heavy-tailed",
    "mixed",
    "sample-s",
    "sample-n",
    "sample-b",
    "unit-edge",
}
#: The rows run again once the markers are in the table (named ``MARKED`` + the row's name):
#: what listing the table as it now is costs without the index.
MARKED = "marked "
MARKED_ROWS = (PLAIN, "scan", "skip-pages")
#: How many changes the maintainer is held behind, in the last two rows of each shape.
LAG = 1000
#: Concurrent Scan segments of the asyncio row: tasks of one event loop.
AIO_SEGMENTS = 32
#: The latency proxy's hold on each request (benchmarks/listing_workers.py's).
LATENCY = 0.1


class Bench:
    """One run's server, tables and settings."""

    def __init__(
        self, client: DynamoDBClient, state_table: str, scale: float, args: argparse.Namespace
    ):
        self.client = client
        self.state_table = state_table
        self.scale = scale
        self.rounds = args.rounds
        self.article = args.article
        self.index_all = args.index_all
        self.no_index = args.no_index
        self.missed: list[str] = []

    def row_runner(
        self,
        table: str,
        spec: Shape,
        expected: set[Key],
        caps: dict[str, int | None],
        client: DynamoDBClient | None = None,
    ) -> Callable[[str], Row]:
        def run(name: str) -> Row:
            method, readers = METHODS[name.removeprefix("index ").removeprefix(MARKED)]
            row = run_method(
                client or self.client,
                table,
                method,
                expected,
                segments=readers,
                sort_type=spec.sort_type,
                state_table=self.state_table,
                suffix=", markers kept" if name.startswith(MARKED) else "",
                cap=caps.get(name),
            )
            print(f"  ({name}: {row.requests} requests, {row.seconds:.1f} s)", file=sys.stderr)
            return row

        return run

    def shape(self, table: str, spec: Shape) -> tuple[dict[str, Row], list[str]]:
        """Every row of ``spec``'s table, and the lines about its targets."""
        expected = spec.keys
        lines: list[str] = []
        _, warm = plain_scan(self.client, table)  # (also warms the server's caches)
        cap = 25 * warm.requests + 500 + (0 if spec.name == BIG else 2 * len(expected))
        caps: dict[str, int | None] = {name: cap for name in CAPPED}
        caps |= {name: 2 * len(expected) + 500 for name in PER_KEY}
        estimate = estimate_listing(self.client, table)
        plan = [
            n
            for n in METHODS
            if n != "index"
            and (n != ARTICLE or self.article)
            and not (spec.name == BIG and n in PER_KEY)
        ]
        rows = rounds(plan, self.row_runner(table, spec, expected, caps), self.rounds)
        found, missed = auto_lines(spec.name, rows["auto"], _others(rows))
        lines += found
        found, more = pages_lines(spec.name, rows["skip-pages"], rows[PLAIN])
        lines, missed = lines + found, missed + more
        if saves_little(rows["skip-pages"], rows["scan"]):
            found, more = self.proxied(table, spec, expected, rows["scan"])
            lines, missed = lines + found, missed + more
        actuals = [
            Actual("scan's RCU", estimate.method("scan"), "rcu", rows["scan"].rcu),
            Actual("the key count", estimate, "keys", len(expected)),
        ]
        if not rows["skip-pages"].stopped:
            pages = rows["skip-pages"].rcu
            actuals.insert(
                1, Actual("skip-pages' RCU", estimate.method("skip-pages"), "rcu", pages)
            )
        if not rows["auto"].stopped:
            auto = rows["auto"].rcu
            actuals.append(Actual("auto's RCU", estimate.method("auto"), "rcu", auto, narrow=False))
        found, more = estimate_lines(spec.name, actuals)
        lines, missed = lines + found, missed + more
        if spec.name != BIG:
            endpoint = self.client.meta.endpoint_url
            rows["aio"] = run_aio(endpoint, self.client.meta.region_name, table, expected)
        if not self.no_index and (spec.name in INDEXED or (self.index_all and spec.name != BIG)):
            found, more = self.indexed(table, spec, rows, caps, estimate)
            lines, missed = lines + found, missed + more
        missed += article_missed(spec.name, rows)
        missed += [
            f"{spec.name}: {r.method} listed the wrong keys"
            for r in rows.values()
            if not r.correct and not r.stopped
        ]
        self.missed += missed
        return rows, lines

    def proxied(
        self, table: str, spec: Shape, expected: set[Key], scan: Row
    ) -> tuple[list[str], list[str]]:
        """Scan and skip-pages behind the latency proxy."""
        faults = Faults(delay=1.0, delay_seconds=LATENCY)
        with FaultProxy(self.client.meta.endpoint_url, faults) as proxy:
            client = make_client(endpoint_url=proxy.endpoint_url)
            caps: dict[str, int | None] = {"skip-pages": 3 * scan.requests + 20}
            run = self.row_runner(table, spec, expected, caps, client)
            rows = rounds(["scan", "skip-pages"], run, self.rounds)
        return proxied_lines(spec.name, rows["skip-pages"], rows["scan"])

    def indexed(
        self,
        table: str,
        spec: Shape,
        rows: dict[str, Row],
        caps: dict[str, int | None],
        unmarked: ListingEstimate,
    ) -> tuple[list[str], list[str]]:
        """The rows once the marker index is built and maintained, then with the maintainer
        held behind; added to ``rows``. With the index kept, auto is measured against every
        way of listing the table as it now is (the index, and the scans that now read the
        markers too): the markers' own cost is the warning the estimate gave before
        (``unmarked``, of the table without them), checked where the index costs more than
        listing the table did before."""
        before = _others(rows)
        expected = spec.keys
        MarkerIndex(self.client, table).create()
        with followed(self.client, table, self.state_table) as (_, _, settle):
            rows["backfill"] = backfill_row(
                self.client, table, self.state_table, rows["skip-pages"]
            )
            settle()
            estimate = estimate_listing(self.client, table, state_table=self.state_table)
            run = self.row_runner(table, spec, expected, caps)
            marked = [MARKED + n for n in MARKED_ROWS]
            rows |= rounds(["index", "index auto", "index auto x4", *marked], run, self.rounds)
        now = {n: rows[n] for n in ("index", *marked)}
        lines, missed = auto_lines(spec.name, rows["index auto"], now, " (index kept)")
        found, more = markers_lines(spec.name, rows["index"], before, now, unmarked.warning)
        lines, missed = lines + found, missed + more
        cheapest = min(now.values(), key=lambda r: r.rcu)
        if cheapest is rows["index"] and not rows["index auto"].method.startswith("auto (index"):
            missed.append(f"{spec.name}: auto did not use the maintained index, the cheapest")
        actual = Actual("index's RCU", estimate.method("index"), "rcu", rows["index"].rcu)
        found, more = estimate_lines(spec.name, [actual])
        lines, missed = lines + found, missed + more
        assert isinstance(rows["backfill"], BackfillRow)
        lines.append("  backfill: " + rows["backfill"].line())
        missed += rows["backfill"].problems(spec.name)
        behind = changes_behind(self.client, table, spec, max(50, int(LAG * self.scale)))
        held = non_empty(self.client, table)
        suffix = f", maintainer {behind:,} behind"
        for name in ("index", "auto"):
            rows[f"lagging {name}"] = run_method(
                self.client,
                table,
                name,
                held,
                sort_type=spec.sort_type,
                state_table=self.state_table,
                suffix=suffix,
            )
        return lines, missed


def _others(rows: dict[str, Row]) -> dict[str, Row]:
    """The rows auto is measured against (every way of listing the table; skip's time is left
    out of the fastest: see ``SKIP_READERS``)."""
    return {n: rows[n] for n in (PLAIN, ARTICLE, "scan", "skip", "skip-pages") if n in rows}


def non_empty(client: DynamoDBClient, table: str) -> set[Key]:
    """The keys of collections holding an item that is not ddbkeys' own (a consistent scan)."""
    found: set[Key] = set()
    request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**request)
        found.update(
            key_value(i["pk"])
            for i in page["Items"]
            if not {"ddbkeys_pk", "ddbkeys_type"} & i.keys()
        )
        if "LastEvaluatedKey" not in page:
            return found
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def run_aio(endpoint: str, region: str, table: str, expected: set[Key]) -> Row:
    """``ddbkeys.aio``'s listing (``auto``; the row names the method it chose) with
    ``AIO_SEGMENTS`` concurrent segments, as tasks of one event loop over one aiobotocore
    client."""

    async def listed() -> tuple[list[Key], Usage, str]:
        config = AioConfig(max_pool_connections=AIO_SEGMENTS)
        async with make_aio_client(endpoint, region, config=config) as client:
            listing = await aio_listing(client, table, segments=AIO_SEGMENTS)
            keys: list[Key] = [k if isinstance(k, bytes) else str(k) async for k in listing]
            label = f"aio {listing.method_name} x{AIO_SEGMENTS} of {listing.scan_segments}"
            return keys, listing.usage, label

    started = time.perf_counter()
    keys, usage, label = asyncio.run(listed())
    seconds = time.perf_counter() - started
    correct = len(keys) == len(expected) and set(keys) == expected
    return Row(label, usage.requests, usage.items, usage.read_units, seconds, correct)


HEADER = (
    f"{'shape':<12} {'method (median of rounds)':<50} {'requests':>8} {'items':>8} {'RCU':>9} "
    f"{'x plain':>7} {'wall s':>7} {'correct':>7}"
)


def print_rows(shape: str, rows: dict[str, Row], lines: list[str]) -> None:
    plain = rows[PLAIN]
    for row in rows.values():
        right = "stopped" if row.stopped else "yes" if row.correct else "NO"
        mark = ">=" if row.stopped else ""
        print(
            f"{shape:<12} {row.method[:50]:<50} {mark + str(row.requests):>8} {row.items:>8} "
            f"{row.rcu:>9.1f} {row.rcu / plain.rcu if plain.rcu else 0:>7.3f} "
            f"{row.seconds:>7.2f} {right:>7}",
            flush=True,
        )
    print("\n".join(lines), flush=True)


def per_key(rows: dict[str, Row], keys: int) -> dict[str, float]:
    """RCU per key, by each row's label and by its name ("skip" for "skip x16 of 20")."""
    found = {r.method: r.rcu / keys for r in rows.values()}
    return found | {name: r.rcu / keys for name, r in rows.items()}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint-url", help="Default: an embedded DynamoDB Local.")
    parser.add_argument("--quick", action="store_true", help="Small tables (a smoke test).")
    parser.add_argument("--rounds", type=int, default=3, help="Rounds of each row (default 3).")
    parser.add_argument(
        "--only",
        "--shape",
        action="append",
        choices=list(shapes(1.0)),
        help=f"Only this table shape (repeatable); memory and workers come with {BIG}.",
    )
    parser.add_argument(
        "--article",
        action="store_true",
        help="Add the article's skip scan (its Python sample, one reader: as many requests and "
        "RCU as skip, and on DynamoDB Local over a minute a 2,000-key table).",
    )
    parser.add_argument(
        "--index-all",
        action="store_true",
        help="Build the marker index on uniform and runs too (their backfills take minutes).",
    )
    parser.add_argument(
        "--no-index", action="store_true", help="Build no marker index (no index rows)."
    )
    parser.add_argument(
        "--no-workers", action="store_true", help=f"No workers' rows (on {BIG}'s table)."
    )
    parser.add_argument("--memory-only", action="store_true", help="Only the CLI's memory.")
    parser.add_argument("--workers-only", action="store_true", help="Only the workers' rows.")
    plot_arguments(parser, CHART)
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if args.replot:
        saved = saved_figures(args.replot, CHART)
        drawn = plot(saved["rcu_per_key"], saved["labels"], args.replot, quick=saved["quick"])
        print(f"wrote {drawn}")
        return 0
    started = time.perf_counter()
    scale = 0.05 if args.quick else 1.0
    server = None if args.endpoint_url else DynamoDBLocal(heap_mb=2048).start()
    endpoint = args.endpoint_url or server.endpoint_url  # type: ignore[union-attr]
    client = make_client(endpoint_url=endpoint)
    factory = TableFactory(client, prefix="ddbkeys-bench")
    states = TableFactory(client, prefix="ddbkeys-bench-state")
    bench = Bench(client, states(("id", "S")), scale, args)
    measured: dict[str, dict[str, float]] = {}
    labels: dict[str, str] = {}
    only = args.memory_only or args.workers_only
    chosen = [BIG] if only else args.only or list(shapes(scale))
    try:
        print(HEADER)
        for name in chosen:
            spec = shapes(scale)[name]()
            table = factory(("pk", spec.pk_type), ("sk", spec.sort_type))
            loading = time.perf_counter()
            load(client, table, spec)
            print(f"{name}: {spec.describe()}, loaded in {time.perf_counter() - loading:.1f} s")
            if not only:
                rows, lines = bench.shape(table, spec)
                print_rows(name, rows, lines)
                print(f"({name} took {time.perf_counter() - loading:.0f} s)", flush=True)
                measured[name] = per_key(rows, len(spec.collections))
                labels[name] = f"{name}\n{spec.describe()}"
            if name == BIG:
                count = len(spec.collections)
                if not args.workers_only:
                    print()
                    memory(client, factory, endpoint, scale, table, count)
                if not args.memory_only and not args.no_workers:
                    print()
                    pid = server.pid if server else None
                    bench.missed += bench_workers(
                        client, factory, pid, scale, table=table, count=count
                    )
            factory.delete_all()
    finally:
        factory.delete_all()
        states.delete_all()
        if server is not None:
            server.stop()
    print(f"\n(the whole run: {time.perf_counter() - started:.0f} s)")
    print("\n".join(["Targets missed:", *bench.missed]) if bench.missed else "All targets met.")
    if args.plot and measured:
        print(f"wrote {plot(measured, labels, args.plot, quick=args.quick)}")
    return 1 if bench.missed else 0


CHART = "partition-keys-rcu"
PLOTTED = [PLAIN, ARTICLE, "scan", "skip", "skip-pages", "index"]


def plot(
    measured: dict[str, dict[str, float]], labels: dict[str, str], folder: Path, *, quick: bool
) -> Path:
    """Read units per distinct key, by method and table shape (log scale)."""
    save_figures(folder, CHART, {"quick": quick, "labels": labels, "rcu_per_key": measured})
    names = list(measured)
    series: dict[str, list[float | None]] = {
        method: [measured[shape].get(method) for shape in names] for method in PLOTTED
    }
    series["auto (no index)"] = [
        next((v for m, v in measured[s].items() if m.startswith("auto (skip")), None) for s in names
    ]
    return grouped_bars(
        folder / f"{CHART}.png",
        title="Read units per distinct partition key, by method and table shape",
        groups=[labels[s] for s in names],
        series=series,
        ylabel="RCU per key (log scale)",
        log=True,
        note="benchmarks/partition_keys.py"
        + (" --quick" if quick else "")
        + "; consumed capacity as DynamoDB Local reports it (same rules as the service)",
    )


if __name__ == "__main__":
    sys.exit(main())
