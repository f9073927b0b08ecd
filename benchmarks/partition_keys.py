"""Benchmark: every partition-key listing method against the article's skip scan, in one run.

    python benchmarks/partition_keys.py            # on an embedded DynamoDB Local
    python benchmarks/partition_keys.py --quick    # smaller tables, for a smoke test

Six table shapes: uniform (2,000 keys x 50 items of about 200 bytes), small (5,000 keys x 1 to
3 items), skewed (1,000 keys x 1 item plus 10 keys x 5,000 items), two shaped like the published
samples' tables: sample-b (900 keys, a binary sort key, 1 to 4 items of 0.3 to 0.7 KB) and
sample-s (the same with a string sort key), and unit-b (2,000 keys x 9 items of about 470 bytes,
a binary sort key: collections of about a 4 KB unit, where skipping saves an item of nine for a
request a key, so ``auto`` should read like a scan). For each: requests, items read, RCU,
wall time and correctness, for the Python sample of "Generate a distinct set of partition keys
for an Amazon DynamoDB table efficiently" (its skip scan: Limit 1, sequential) and every method,
then the same once the marker index is built, backfilled and kept by a running follower of the
table's stream, so that ``auto`` can prove it complete ("x4 of 16": four parallel readers taking
16 Scan segments in turn), and the index and ``auto`` once the follower is held 1,000 changes
behind (the listing reads them from the stream and re-checks what they name, or lists another
way when that costs more; the replay margin is 3 s: DynamoDB Local shows writes in its index at
once). ``ddbkeys.aio``'s listing (``auto``,
before the index is built) with 32 concurrent segments, as tasks of one event loop, follows;
the last row is that backfill (``auto``: the row names the mode it ran) against a plain boto3
Scan of the table's keys and skip-pages of the same table just before it, checked against
issue 33's target (at most 1.2x the cheaper of the two, plus 2 RCU a collection it re-checked;
2 WCU a marker written or removed, the table's and its index's). ``auto``
must stay within 1.05x of the cheapest method's RCU, and where it costs the same (or a scan costs
within 1.05x of it), not take much longer. Then one listing's tasks by one worker, process pools
and Dask, straight to the server and through a proxy holding each request 100 ms, only the
second set checked for speed (benchmarks/listing_workers.py says why; ``--workers-only`` runs
only that part), and the CLI's
peak memory listing 10,000 and 100,000 keys. Requests and RCU carry over to the service; wall
times on DynamoDB Local do not (a deep ExclusiveStartKey is slow there).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiobotocore.config import AioConfig
from listing_workers import bench_workers

from ddbkeys._capacity import Usage
from ddbkeys._connect import make_client
from ddbkeys._demo_keys import DEMO_MARGIN, followed, load_items, non_empty_collections
from ddbkeys._local import DynamoDBLocal
from ddbkeys._plots import grouped_bars, plot_arguments, save_figures, saved_figures
from ddbkeys.aio import make_client as make_aio_client
from ddbkeys.aio._listing import distinct_partition_keys as aio_listing
from ddbkeys.partition_keys import MAX_SORT_KEY, MarkerIndex, distinct_partition_keys
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass
class Row:
    method: str
    requests: int
    items: int
    rcu: float
    seconds: float
    correct: bool


#: 1 to 4 items a collection, each 0.3 to 0.7 KB: the published samples' tables.
SAMPLE_ITEMS = (1, 4)
SAMPLE_BYTES = (280, 680)


@dataclass
class Shape:
    """A table to benchmark: ``sizes`` (key, item count), the sort key's type, and a payload
    of ``pad`` bytes (or, with ``pad`` 0, of ``SAMPLE_BYTES``, drawn per item)."""

    sizes: list[tuple[str, int]]
    pad: int
    sort_type: str = "N"


def sort_value(kind: str, i: int, rng: random.Random) -> dict[str, Any]:
    """The ``i``th sort key of a collection: a number, an ``item#`` string, or 16 random bytes."""
    if kind == "N":
        return {"N": str(i)}
    if kind == "S":
        return {"S": f"item#{i:04}"}
    return {"B": rng.randbytes(16)}


def load(client: DynamoDBClient, table: str, shape: Shape) -> None:
    """Write ``count`` items for each ``(key, count)`` of ``shape``."""
    rng = random.Random(11)
    load_items(
        client,
        table,
        [
            {
                "pk": {"S": key},
                "sk": sort_value(shape.sort_type, i, rng),
                "p": {"S": "x" * (shape.pad or rng.randint(*SAMPLE_BYTES))},
            }
            for key, count in shape.sizes
            for i in range(count)
        ],
    )


#: The baseline's row: the Python sample of the article the skip scan comes from (see the README,
#: "Where the techniques come from").
ARTICLE = "article's skip scan"


def article_skip_scan(
    client: DynamoDBClient, table: str, sort_type: str
) -> tuple[list[str], Usage]:
    """The article's Python sample (its skip scan), as published but on the low-level client:
    Limit 1, sequential, jumping with the greatest sort key value (its retry branch never runs
    here)."""
    usage = Usage()
    keys: list[str] = []
    last_evaluated_key = None
    while True:
        params: dict[str, Any] = {
            "TableName": table,
            "Limit": 1,
            "ProjectionExpression": "pk",
            "ReturnConsumedCapacity": "TOTAL",
        }
        if last_evaluated_key:
            params["ExclusiveStartKey"] = last_evaluated_key
        response = client.scan(**params)
        usage.add(response, write=False, items=int(response["ScannedCount"]))
        if response["Items"]:
            keys.append(response["Items"][0]["pk"]["S"])
        if "LastEvaluatedKey" not in response:
            break
        last = response["LastEvaluatedKey"]
        last_evaluated_key = {"pk": last["pk"], "sk": MAX_SORT_KEY[sort_type]}
    return keys, usage


def run_method(
    client: DynamoDBClient,
    table: str,
    method: str,
    segments: int,
    expected: set[str],
    *,
    sort_type: str = "N",
    state_table: str,
    suffix: str = "",
) -> Row:
    started = time.perf_counter()
    label = method
    if method == ARTICLE:
        keys, usage = article_skip_scan(client, table, sort_type)
    else:
        listing = distinct_partition_keys(
            client,
            table,
            method,
            segments=segments,
            state_table=state_table,
            replay_margin=DEMO_MARGIN,
        )
        keys = [str(k) for k in listing]
        usage = listing.usage
        if method == "auto":
            label = f"auto ({listing.method_name})"
        if segments > 1:  # readers, and the Scan segments they took in turn
            label += f" x{segments} of {listing.scan_segments}"
        if listing.replay is not None and listing.replay.rechecked:
            label += f", {listing.replay.rechecked} re-checked"
    label += suffix
    seconds = time.perf_counter() - started
    correct = len(keys) == len(expected) and set(keys) == expected
    return Row(label, usage.requests, usage.items, usage.read_units, seconds, correct)


#: Concurrent Scan segments of the asyncio row: tasks of one event loop.
AIO_SEGMENTS = 32


def run_aio(endpoint: str, region: str, table: str, expected: set[str]) -> Row:
    """``ddbkeys.aio``'s listing (``auto``; the row names the method it chose) with
    ``AIO_SEGMENTS`` concurrent segments, as tasks of one event loop over one aiobotocore
    client."""

    async def listed() -> tuple[list[str], Usage, str]:
        config = AioConfig(max_pool_connections=AIO_SEGMENTS)
        async with make_aio_client(endpoint, region, config=config) as client:
            listing = await aio_listing(client, table, segments=AIO_SEGMENTS)
            keys = [str(key) async for key in listing]
            label = f"aio {listing.method_name} x{AIO_SEGMENTS} of {listing.scan_segments}"
            return keys, listing.usage, label

    started = time.perf_counter()
    keys, usage, label = asyncio.run(listed())
    seconds = time.perf_counter() - started
    correct = len(keys) == len(expected) and set(keys) == expected
    return Row(label, usage.requests, usage.items, usage.read_units, seconds, correct)


def shapes(scale: float) -> dict[str, Shape]:
    rng = random.Random(4)

    def n(x: int) -> int:
        return max(2, int(x * scale))

    def sample() -> list[tuple[str, int]]:
        return [
            (f"user#{rng.getrandbits(40):010x}", rng.randint(*SAMPLE_ITEMS)) for _ in range(n(900))
        ]

    return {
        "uniform": Shape([(f"u{k:05}", 50) for k in range(n(2000))], 200),
        "small": Shape([(f"s{k:05}", rng.randint(1, 3)) for k in range(n(5000))], 100),
        "skewed": Shape(
            [(f"k{k:05}", 1) for k in range(n(1000))]
            + [(f"big{k:02}", n(5000)) for k in range(10)],
            100,
        ),
        "sample-b": Shape(sample(), 0, "B"),
        "sample-s": Shape(sample(), 0, "S"),
        # Collections of about a unit each: skipping saves an item of nine, for a request a key.
        "unit-b": Shape([(f"user#{k:05}", 9) for k in range(n(2000))], 430, "B"),
    }


def print_rows(shape: str, rows: list[Row]) -> None:
    article, scan = rows[0], rows[1]
    for row in rows:
        print(
            f"{shape:<9} {row.method:<52} {row.requests:>8} {row.items:>8} {row.rcu:>9.1f} "
            f"{row.rcu / article.rcu if article.rcu else 0:>9.3f} "
            f"{row.rcu / scan.rcu if scan.rcu else 0:>7.3f} {row.seconds:>7.2f} "
            f"{'yes' if row.correct else 'NO':>7}",
            flush=True,
        )
        if isinstance(row, BackfillRow):
            print(
                f"{'':<9}   {row.rcu:.1f} RCU against a plain Scan's {row.scan_rcu:g} and "
                f"skip-pages' {row.skip_rcu:g} ({row.rcu / min(row.scan_rcu, row.skip_rcu):.2f}x "
                f"the cheaper), {row.rechecked:,} collections re-checked: target <= "
                f"{row.target:.1f}; {row.wcu:g} WCU for {row.markers:,} markers written or "
                "removed (the table's and the marker index's)",
                flush=True,
            )


# Runs the CLI, then reports its own peak RSS (VmHWM) on stderr. (ru_maxrss would not do: it
# keeps the high-water mark of the benchmark process it was forked from.)
_MEASURED_CLI = """
import atexit, sys
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            sys.stderr.write("VmHWM " + line.split()[1] + "\\n")
atexit.register(hwm)
from ddbkeys._cli import main
sys.argv = ["ddbkeys", *sys.argv[1:]]
main()
"""


def peak_memory(endpoint: str, table: str) -> tuple[int, float]:
    """The CLI's peak RSS (KiB) and wall time listing ``table`` to /dev/null."""
    started = time.perf_counter()
    with open(os.devnull, "w") as sink:
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                _MEASURED_CLI,
                "partition-keys",
                "-t",
                table,
                "--method",
                "scan",
                "--quiet",
                "--endpoint-url",
                endpoint,
            ],
            stdout=sink,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
        )
    kib = int(result.stderr.split("VmHWM ")[1].split()[0])
    return kib, time.perf_counter() - started


def memory(client: DynamoDBClient, factory: TableFactory, endpoint: str, scale: float) -> None:
    """The CLI's peak memory listing 10k and 100k keys (flat is the target)."""
    for keys in (10_000, 100_000):
        count = max(100, int(keys * scale))
        table = factory(("pk", "S"), ("sk", "N"))
        load(client, table, Shape([(f"m{k:06}", 1) for k in range(count)], 20))
        rss, seconds = peak_memory(endpoint, table)
        print(
            f"CLI peak memory listing {count:>7} keys: {rss / 1024:6.1f} MiB ({seconds:.1f} s)",
            flush=True,
        )
        factory.delete_all()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint-url", help="Default: an embedded DynamoDB Local.")
    parser.add_argument("--quick", action="store_true", help="Small tables (a smoke test).")
    parser.add_argument("--memory-only", action="store_true", help="Only the CLI's memory.")
    parser.add_argument("--workers-only", action="store_true", help="Only the workers' rows.")
    parser.add_argument(
        "--shape",
        action="append",
        choices=["uniform", "small", "skewed", "sample-b", "sample-s", "unit-b"],
        help="Only this table shape (repeatable), then the memory and workers' rows.",
    )
    plot_arguments(parser, CHART)
    return parser.parse_args()


def bench_shape(
    client: DynamoDBClient, table: str, spec: Shape, state_table: str, lag: int
) -> list[Row]:
    """The article's skip scan, every method and ``auto``; then, with the index maintained,
    index and auto; then both with the maintainer ``lag`` changes behind."""
    expected = {key for key, _ in spec.sizes}

    def run(method: str, segments: int, suffix: str = "") -> Row:
        return run_method(
            client,
            table,
            method,
            segments,
            expected,
            sort_type=spec.sort_type,
            state_table=state_table,
            suffix=suffix,
        )

    plan = [(ARTICLE, 1), ("scan", 1), ("skip", 1), ("skip-pages", 1), ("auto", 1), ("auto", 4)]
    rows = [run(m, s) for m, s in plan]
    # The asyncio row, without the index (which ddbkeys.aio does not read yet); printed last.
    endpoint = client.meta.endpoint_url
    aio = run_aio(endpoint, client.meta.region_name, table, expected)
    MarkerIndex(client, table).create()
    # A follower of the table's stream, then a backfill: auto can prove the index complete.
    with followed(client, table, state_table) as (index, _, settle):
        filled = backfill_row(client, table, state_table, index, rows[3])
        settle()
        rows += [run(m, s) for m, s in [("index", 1), ("auto", 1), ("auto", 4)]]
    # The follower stopped, and held that many changes behind: a listing reads them from the
    # stream itself (and re-checks what they name), or lists another way when that costs more.
    behind = changes_behind(client, table, spec, lag)
    expected = non_empty_collections(client, table)
    suffix = f", maintainer {behind:,} behind"
    rows += [run("index", 1, suffix), run("auto", 1, suffix)]
    return [*rows, aio, filled]


def plain_scan(client: DynamoDBClient, table: str) -> Usage:
    """A plain boto3 Scan of ``table``'s keys (ProjectionExpression on the partition key,
    eventually consistent, page by page): what the backfill's read is measured against."""
    usage = Usage()
    request: dict[str, Any] = {
        "TableName": table,
        "ProjectionExpression": "pk",
        "ReturnConsumedCapacity": "TOTAL",
    }
    while True:
        page = client.scan(**request)
        usage.requests += 1
        usage.items += len(page.get("Items", []))
        usage.read_units += float(page["ConsumedCapacity"]["CapacityUnits"])
        if "LastEvaluatedKey" not in page:
            return usage
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


#: The backfill's target (issue 33): its read units at most this times the cheaper of a plain
#: Scan and skip-pages of the table as it is when it begins, plus ``PER_RECHECK`` a collection
#: it re-checked; a write unit per marker written or removed on the table, and one on the
#: marker index (ConsumedCapacity TOTAL counts the GSI's write too), and its record's few writes.
BACKFILL_WITHIN = 1.2
PER_RECHECK = 2.0
WCU_PER_MARKER = 2.0
RECORD_WRITES = 4


@dataclass
class BackfillRow(Row):
    """The backfill's row, with what its target is measured against."""

    scan_rcu: float = 0.0
    skip_rcu: float = 0.0
    rechecked: int = 0
    wcu: float = 0.0
    markers: int = 0

    @property
    def target(self) -> float:
        return BACKFILL_WITHIN * min(self.scan_rcu, self.skip_rcu) + PER_RECHECK * self.rechecked


def backfill_row(
    client: DynamoDBClient, table: str, state_table: str, index: MarkerIndex, skip: Row
) -> BackfillRow:
    """``index backfill`` (``auto``: the row names the mode it ran), after a plain Scan of the
    table as it is when the backfill begins; ``skip`` is skip-pages' row of the same table."""
    scan = plain_scan(client, table)
    usage = Usage()
    measured = MarkerIndex(client, table, usage=usage)
    started = time.perf_counter()
    report = measured.backfill(state_table=state_table, replay_margin=DEMO_MARGIN)
    seconds = time.perf_counter() - started
    rechecked = report.rechecked if report.mode == "read" else report.written + report.present
    markers = report.written + report.removed
    return BackfillRow(
        f"backfill ({report.mode})",
        usage.requests,
        usage.items,
        usage.read_units,
        seconds,
        not report.clashes and report.uncounted is None,
        scan_rcu=scan.read_units,
        skip_rcu=skip.rcu,
        rechecked=rechecked,
        wcu=usage.write_units,
        markers=markers,
    )


def changes_behind(client: DynamoDBClient, table: str, spec: Shape, count: int) -> int:
    """``count`` writes nobody applies: items added to collections, new collections, and
    collections emptied (each a write in the stream)."""
    rng = random.Random(11)
    sizes = dict(spec.sizes)
    small = [k for k, n in spec.sizes if n == 1]
    done = 0
    while done < count:
        roll = rng.random()
        if roll < 0.4:
            key = f"lag#{done:05}"
            client.put_item(
                TableName=table, Item={"pk": {"S": key}, "sk": sort_value(spec.sort_type, 0, rng)}
            )
        elif roll < 0.6 and small:
            key = small.pop()
            emptied = client.query(
                TableName=table,
                KeyConditionExpression="pk = :p",
                ExpressionAttributeValues={":p": {"S": key}},
                ConsistentRead=True,
            )["Items"]
            for item in emptied:
                client.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
                done += 1
            continue
        else:
            key = rng.choice(list(sizes))
            client.put_item(
                TableName=table,
                Item={"pk": {"S": key}, "sk": sort_value(spec.sort_type, 10_000 + done, rng)},
            )
        done += 1
    return done


#: How many changes the maintainer is held behind, in the last two rows of each shape.
LAG = 1000

#: ``auto`` may cost at most this times the cheapest method's read units.
AUTO_WITHIN = 1.05
#: ... and take at most this times the article's requests (skip-pages' trials of reading
#: through cost a request or so each, at exponentially longer intervals).
ARTICLE_REQUESTS = 1.01
#: Where ``auto`` costs what the cheapest costs, it may take at most this times its wall time
#: (plus ``SLACK_SECONDS``, for timings too short to compare).
SLOWER_AT_EQUAL = 3.0
SLACK_SECONDS = 0.25


def check(shape: str, rows: list[Row]) -> list[str]:
    """The targets ``rows`` (in ``bench_shape``'s order) missed."""
    problems: list[str] = []
    article = rows[0]
    cheapest_plain = min(rows[1:4], key=lambda r: r.rcu)
    cheapest_all = min([cheapest_plain, rows[6]], key=lambda r: r.rcu)
    for row, cheapest in ((rows[4], cheapest_plain), (rows[7], cheapest_all)):
        if row.rcu > AUTO_WITHIN * cheapest.rcu:
            problems.append(
                f"{shape}: {row.method} RCU {row.rcu} > {AUTO_WITHIN} x {cheapest.method}'s "
                f"{cheapest.rcu}"
            )
        elif row.seconds > SLOWER_AT_EQUAL * cheapest.seconds + SLACK_SECONDS:
            problems.append(
                f"{shape}: {row.method} wall {row.seconds:.2f}s, at {cheapest.method}'s cost, "
                f"> {SLOWER_AT_EQUAL} x its {cheapest.seconds:.2f}s"
            )
        scan = rows[1]
        if scan.rcu <= AUTO_WITHIN * row.rcu and row.seconds > (
            SLOWER_AT_EQUAL * scan.seconds + SLACK_SECONDS
        ):  # within a few percent of the read units, time counts
            problems.append(
                f"{shape}: {row.method} wall {row.seconds:.2f}s, where a scan within "
                f"{AUTO_WITHIN}x its RCU took {scan.seconds:.2f}s"
            )
        if (
            row.rcu > AUTO_WITHIN * article.rcu
            or row.requests > ARTICLE_REQUESTS * article.requests
        ):
            problems.append(
                f"{shape}: {row.method} above {AUTO_WITHIN}x the article's RCU or "
                f"{ARTICLE_REQUESTS}x its requests"
            )
    if not rows[7].method.startswith("auto (index)"):
        problems.append(f"{shape}: auto did not vouch for the maintained index")
    for row in (rows[5], rows[8]):
        if row.seconds > article.seconds / 4:
            problems.append(
                f"{shape}: {row.method} wall {row.seconds:.2f}s > 1/4 of the article's "
                f"{article.seconds:.2f}s"
            )
    for row in rows:
        if isinstance(row, BackfillRow) and row.rcu > row.target:
            problems.append(
                f"{shape}: {row.method} RCU {row.rcu:g} > {BACKFILL_WITHIN} x min(scan "
                f"{row.scan_rcu:g}, skip-pages {row.skip_rcu:g}) + {PER_RECHECK:g} x "
                f"{row.rechecked} re-checked"
            )
        if isinstance(row, BackfillRow) and row.wcu > WCU_PER_MARKER * row.markers + RECORD_WRITES:
            problems.append(f"{shape}: {row.method} WCU {row.wcu:g} > {row.markers} markers")
    return problems + [f"{shape}: {r.method} listed the wrong keys" for r in rows if not r.correct]


def main() -> int:
    args = parse_args()
    if args.replot:
        saved = saved_figures(args.replot, CHART)
        drawn = plot(saved["rcu_per_key"], saved["labels"], args.replot, quick=saved["quick"])
        print(f"wrote {drawn}")
        return 0
    scale = 0.05 if args.quick else 1.0
    server = None if args.endpoint_url else DynamoDBLocal(heap_mb=2048).start()
    endpoint = args.endpoint_url or server.endpoint_url  # type: ignore[union-attr]
    client = make_client(endpoint_url=endpoint)
    factory = TableFactory(client, prefix="ddbkeys-bench")
    problems: list[str] = []
    measured: dict[str, dict[str, float]] = {}
    labels: dict[str, str] = {}
    only = args.memory_only or args.workers_only
    if not only:
        print(
            f"{'shape':<9} {'method':<52} {'requests':>8} {'items':>8} {'RCU':>9} "
            f"{'x article':>9} {'x scan':>7} {'wall s':>7} {'correct':>7}"
        )
    states = TableFactory(client, prefix="ddbkeys-bench-state")
    state_table = states(("id", "S"))  # the indexes' records (a follower's, a backfill's)
    try:
        chosen = [(s, spec) for s, spec in shapes(scale).items() if s in (args.shape or [s])]
        for shape, spec in [] if only else chosen:
            sizes = spec.sizes
            table = factory(("pk", "S"), ("sk", spec.sort_type))
            load(client, table, spec)
            rows = bench_shape(client, table, spec, state_table, max(50, int(LAG * scale)))
            print_rows(shape, rows)
            measured[shape] = {r.method: r.rcu / len(sizes) for r in rows}
            labels[shape] = f"{shape}\n{len(sizes):,} keys, {sum(n for _, n in sizes):,} items"
            problems += check(shape, rows)
            factory.delete_all()
        print()
        if not args.memory_only:
            problems += bench_workers(client, factory, server.pid if server else None, scale)
            print()
        if not args.workers_only:
            memory(client, factory, endpoint, scale)
    finally:
        factory.delete_all()
        states.delete_all()
        if server is not None:
            server.stop()
    print()
    print("\n".join(["Targets missed:", *problems]) if problems else "All targets met.")
    if args.plot and measured:
        print(f"wrote {plot(measured, labels, args.plot, quick=args.quick)}")
    return 0


CHART = "partition-keys-rcu"
PLOTTED = [ARTICLE, "scan", "skip", "skip-pages", "index"]


def plot(
    measured: dict[str, dict[str, float]], labels: dict[str, str], folder: Path, *, quick: bool
) -> Path:
    """Read units per distinct key, by method and table shape (log scale)."""
    save_figures(folder, CHART, {"quick": quick, "labels": labels, "rcu_per_key": measured})
    shapes = list(measured)
    series: dict[str, list[float | None]] = {
        method: [measured[shape].get(method) for shape in shapes] for method in PLOTTED
    }
    series["auto (no index)"] = [
        next((v for m, v in measured[s].items() if m.startswith("auto (skip")), None)
        for s in shapes
    ]
    return grouped_bars(
        folder / f"{CHART}.png",
        title="Read units per distinct partition key, by method and table shape",
        groups=[labels[s] for s in shapes],
        series=series,
        ylabel="RCU per key (log scale)",
        log=True,
        note="benchmarks/partition_keys.py"
        + (" --quick" if quick else "")
        + "; consumed capacity as DynamoDB Local reports it (same rules as the service)",
    )


if __name__ == "__main__":
    sys.exit(main())
