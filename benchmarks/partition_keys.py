"""Benchmark: every partition-key listing method against seed 004's algorithm, in one run.

    python benchmarks/partition_keys.py            # on an embedded DynamoDB Local
    python benchmarks/partition_keys.py --quick    # smaller tables, for a smoke test

Three table shapes: uniform (2,000 keys x 50 items of about 200 bytes), small (5,000 keys x 1 to
3 items) and skewed (1,000 keys x 1 item plus 10 keys x 5,000 items). For each: requests, items
read, read units (RCU), wall time and correctness, for seed 004's Python sample (Limit 1,
sequential) and every method, then the same after the marker index is built ("x4 of 16": four
parallel readers taking 16 Scan segments in turn). Then the CLI's peak memory listing 10,000 and
100,000 keys. Requests and RCU carry over to the service; wall times on DynamoDB Local do not (a
deep ExclusiveStartKey is slow there).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddbkeys.capacity import Usage
from ddbkeys.connect import make_client
from ddbkeys.demo import load_items
from ddbkeys.local import DynamoDBLocal
from ddbkeys.partition_keys import MAX_SORT_KEY, MarkerIndex, distinct_partition_keys
from ddbkeys.plots import grouped_bars, plot_arguments, save_figures, saved_figures
from ddbkeys.testing.tables import TableFactory

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


def load(client: DynamoDBClient, table: str, sizes: list[tuple[str, int]], pad: int) -> None:
    """Write ``count`` items for each ``(key, count)``, with a ``pad``-byte payload."""
    load_items(
        client,
        table,
        [
            {"pk": {"S": key}, "sk": {"N": str(i)}, "p": {"S": "x" * pad}}
            for key, count in sizes
            for i in range(count)
        ],
    )


def seed_004(client: DynamoDBClient, table: str) -> tuple[list[str], Usage]:
    """Seed 004's Python sample, as published but on the low-level client: Limit 1, sequential,
    jumping with the greatest sort key value (its retry branch never runs here)."""
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
        last_evaluated_key = {"pk": last["pk"], "sk": MAX_SORT_KEY["N"]}
    return keys, usage


def run_method(
    client: DynamoDBClient, table: str, method: str, segments: int, expected: set[str]
) -> Row:
    started = time.perf_counter()
    label = method
    if method == "seed 004":
        keys, usage = seed_004(client, table)
    else:
        listing = distinct_partition_keys(client, table, method, segments=segments)
        keys = [str(k) for k in listing]
        usage = listing.usage
        if method == "auto":
            label = f"auto ({listing.method_name})"
        if segments > 1:  # readers, and the Scan segments they took in turn
            label += f" x{segments} of {listing.scan_segments}"
    seconds = time.perf_counter() - started
    correct = len(keys) == len(expected) and set(keys) == expected
    return Row(label, usage.requests, usage.items, usage.read_units, seconds, correct)


def shapes(scale: float) -> dict[str, tuple[list[tuple[str, int]], int]]:
    rng = random.Random(4)

    def n(x: int) -> int:
        return max(2, int(x * scale))

    return {
        "uniform": ([(f"u{k:05}", 50) for k in range(n(2000))], 200),
        "small": ([(f"s{k:05}", rng.randint(1, 3)) for k in range(n(5000))], 100),
        "skewed": (
            [(f"k{k:05}", 1) for k in range(n(1000))]
            + [(f"big{k:02}", n(5000)) for k in range(10)],
            100,
        ),
    }


def print_rows(shape: str, rows: list[Row]) -> None:
    seed = rows[0]
    for row in rows:
        print(
            f"{shape:<8} {row.method:<28} {row.requests:>8} {row.items:>8} {row.rcu:>9.1f} "
            f"{row.rcu / seed.rcu if seed.rcu else 0:>7.3f} {row.seconds:>7.2f} "
            f"{'yes' if row.correct else 'NO':>7}",
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
from ddbkeys.cli import main
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
        load(client, table, [(f"m{k:06}", 1) for k in range(count)], 20)
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
    plot_arguments(parser, CHART)
    return parser.parse_args()


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
    print(
        f"{'shape':<8} {'method':<28} {'requests':>8} {'items':>8} {'RCU':>9} "
        f"{'x seed':>7} {'wall s':>7} {'correct':>7}"
    )
    try:
        for shape, (sizes, pad) in [] if args.memory_only else shapes(scale).items():
            table = factory(("pk", "S"), ("sk", "N"))
            load(client, table, sizes, pad)
            expected = {key for key, _ in sizes}
            plan = [
                ("seed 004", 1),
                ("scan", 1),
                ("skip", 1),
                ("skip-pages", 1),
                ("auto", 1),
                ("auto", 4),
            ]
            rows = [run_method(client, table, m, s, expected) for m, s in plan]
            index = MarkerIndex(client, table)
            index.create()
            index.backfill()
            rows += [
                run_method(client, table, m, s, expected | set())
                for m, s in [("index", 1), ("auto", 1), ("auto", 4)]
            ]
            print_rows(shape, rows)
            measured[shape] = {r.method: r.rcu / len(expected) for r in rows}
            labels[shape] = f"{shape}\n{len(sizes):,} keys, {sum(n for _, n in sizes):,} items"
            seed = rows[0]
            cheapest_plain = min(r.rcu for r in rows[1:4])
            cheapest_all = min(cheapest_plain, rows[6].rcu)
            for row, cheapest in ((rows[4], cheapest_plain), (rows[7], cheapest_all)):
                if row.rcu > 1.1 * cheapest:
                    problems.append(f"{shape}: {row.method} RCU {row.rcu} > 1.1 x {cheapest}")
                if row.rcu > seed.rcu or row.requests > seed.requests:
                    problems.append(f"{shape}: {row.method} above the seed's RCU or requests")
            for row in (rows[5], rows[8]):
                if row.seconds > seed.seconds / 4:
                    problems.append(
                        f"{shape}: {row.method} wall {row.seconds:.2f}s > 1/4 of the seed's "
                        f"{seed.seconds:.2f}s"
                    )
            problems += [
                f"{shape}: {r.method} listed the wrong keys" for r in rows if not r.correct
            ]
            factory.delete_all()
        print()
        memory(client, factory, endpoint, scale)
    finally:
        factory.delete_all()
        if server is not None:
            server.stop()
    print()
    print("\n".join(["Targets missed:", *problems]) if problems else "All targets met.")
    if args.plot and measured:
        print(f"wrote {plot(measured, labels, args.plot, quick=args.quick)}")
    return 0


CHART = "partition-keys-rcu"
PLOTTED = ["seed 004", "scan", "skip", "skip-pages", "index"]


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
