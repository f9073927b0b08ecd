"""skip-pages against a scan on the shapes where skipping saves little (issue 35, points 1-2).

    python benchmarks/skip_pages_shapes.py --endpoint-url http://127.0.0.1:8000
    python benchmarks/skip_pages_shapes.py --endpoint-url ... --shape heavy --latency 100

For each shape: a plain boto3 Scan of the keys (ProjectionExpression on the partition key), the
scan and skip-pages methods (one reader), their requests, read units and wall time, the ratios
of skip-pages to the plain Scan, and the listing's reason. The targets: where skipping saves 5%
or less of a scan's read units, skip-pages takes at most 2x the Scan's requests + 10 and at most
1.05x its read units; elsewhere (skewed, uniform) it keeps what skipping saves. Tables are kept
(named ``skip-shapes-<shape>``) and reused when their item count matches, so a second run does
not load them again; ``--latency`` runs the rows through the fault proxy holding each request
that many milliseconds (as a service's network would), for their wall times.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ddbkeys._connect import make_client
from ddbkeys._demo_keys import load_items
from ddbkeys.partition_keys import distinct_partition_keys
from ddbkeys.testing._proxy import FaultProxy, Faults

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]


def heavy(rng: random.Random) -> list[Item]:
    """1,000 keys, Pareto item counts 1-400, Pareto item sizes 50 B-40 KB (about 4,000 items)."""
    items = []
    for k in range(1000):
        count = min(400, int(rng.paretovariate(1.25)))
        for i in range(count):
            size = min(40_000, int(50 * rng.paretovariate(1.2)))
            items.append(_item({"S": f"h#{k:05}"}, {"N": str(i)}, size))
    return items


def sample_b(rng: random.Random) -> list[Item]:
    """The seed's binary-sort-key sample: 900 keys, 1-10 items of 0.3-0.7 KB (about 5,000)."""
    items = []
    for _ in range(911):
        key = {"S": f"user#{rng.getrandbits(40):010x}"}
        for _ in range(rng.randint(1, 10)):
            items.append(_item(key, {"B": rng.randbytes(16)}, rng.randint(280, 680)))
    return items


def tiny_binary(rng: random.Random) -> list[Item]:
    """5,000 single-item collections with 4-byte binary keys."""
    return [{"pk": {"B": k.to_bytes(4, "big")}, "sk": {"B": b"\0\0\0\1"}} for k in range(5000)]


def skewed(rng: random.Random) -> list[Item]:
    """2,000 single-item keys and 5 keys of 4,000 items, 100 bytes each."""
    items = [_item({"S": f"k{k:05}"}, {"N": "0"}, 100) for k in range(2000)]
    for k in range(5):
        items += [_item({"S": f"big{k}"}, {"N": str(i)}, 100) for i in range(4000)]
    return items


def uniform(rng: random.Random) -> list[Item]:
    """2,000 keys x 50 items of about 200 bytes."""
    return [_item({"S": f"u{k:05}"}, {"N": str(i)}, 200) for k in range(2000) for i in range(50)]


def unit_b(rng: random.Random) -> list[Item]:
    """2,000 keys x 9 items of about 470 bytes, a binary sort key: collections of a unit."""
    return [
        _item({"S": f"user#{k:05}"}, {"B": rng.randbytes(16)}, 430)
        for k in range(2000)
        for _ in range(9)
    ]


def single(rng: random.Random) -> list[Item]:
    """220,000 single-item keys (a table with a sort key, one item a partition key)."""
    return [_item({"S": f"one#{k:07}"}, {"N": "0"}, 40) for k in range(220_000)]


def _item(pk: dict[str, Any], sk: dict[str, Any], size: int) -> Item:
    return {"pk": pk, "sk": sk, "p": {"S": "x" * size}}


Kind = Literal["S", "N", "B"]
SHAPES: dict[str, tuple[Callable[[random.Random], list[Item]], Kind, Kind]] = {
    "heavy": (heavy, "S", "N"),
    "sample-b": (sample_b, "S", "B"),
    "tiny-binary": (tiny_binary, "B", "B"),
    "skewed": (skewed, "S", "N"),
    "uniform": (uniform, "S", "N"),
    "unit-b": (unit_b, "S", "B"),
    "single-220k": (single, "S", "N"),
}
#: Where skipping saves (much) more than 5%: skip-pages may take many requests there.
SKIPPING_WINS = {"skewed", "uniform"}


def table_for(client: DynamoDBClient, shape: str) -> tuple[str, int]:
    """The shape's table, loaded (reused when it holds the right number of items)."""
    build, pk_type, sk_type = SHAPES[shape]
    items = build(random.Random(35))
    name = f"skip-shapes-{shape}"
    try:
        count = client.describe_table(TableName=name)["Table"]["ItemCount"]
        if count == len(items):
            return name, len(items)
        client.delete_table(TableName=name)
        client.get_waiter("table_not_exists").wait(TableName=name)
    except client.exceptions.ResourceNotFoundException:
        pass
    client.create_table(
        TableName=name,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": pk_type},
            {"AttributeName": "sk", "AttributeType": sk_type},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=name)
    load_items(client, name, items)
    return name, len(items)


@dataclass
class Row:
    name: str
    requests: int
    rcu: float
    seconds: float
    keys: int
    reason: str = ""


def plain_scan(client: DynamoDBClient, table: str) -> Row:
    started = time.perf_counter()
    request: dict[str, Any] = {
        "TableName": table,
        "ProjectionExpression": "pk",
        "ReturnConsumedCapacity": "TOTAL",
    }
    requests, rcu, keys = 0, 0.0, set[str]()
    while True:
        page = client.scan(**request)
        requests += 1
        rcu += float(page["ConsumedCapacity"]["CapacityUnits"])
        keys.update(repr(item["pk"]) for item in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return Row("boto3 Scan", requests, rcu, time.perf_counter() - started, len(keys))
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def listed(client: DynamoDBClient, table: str, method: str, segments: int) -> Row:
    started = time.perf_counter()
    listing = distinct_partition_keys(client, table, method, segments=segments)
    keys = sum(1 for _ in listing)
    usage = listing.usage
    name = method if segments == 1 else f"{method} x{segments}"
    seconds = time.perf_counter() - started
    return Row(name, usage.requests, usage.read_units, seconds, keys, listing.method_note)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint-url", required=True)
    parser.add_argument("--shape", action="append", choices=list(SHAPES))
    parser.add_argument("--latency", type=float, default=0.0, help="ms the proxy holds a request")
    parser.add_argument("--segments", type=int, default=1)
    args = parser.parse_args()
    client = make_client(endpoint_url=args.endpoint_url)
    missed = []
    print(f"{'shape':<12} {'row':<14} {'requests':>8} {'RCU':>8} {'x Scan':>7} {'wall s':>7} note")
    for shape in args.shape or [s for s in SHAPES if s != "single-220k"]:
        table, _ = table_for(client, shape)
        held = (
            FaultProxy(args.endpoint_url, Faults(delay=1.0, delay_seconds=args.latency / 1000))
            if args.latency
            else nullcontext()
        )
        with held as proxy:
            reader = make_client(endpoint_url=proxy.endpoint_url) if proxy else client
            base = plain_scan(reader, table)
            rows = [base, listed(reader, table, "scan", 1)]
            rows.append(listed(reader, table, "skip-pages", 1))
            if args.segments > 1:
                rows.append(listed(reader, table, "skip-pages", args.segments))
        for row in rows:
            ratio = row.rcu / base.rcu
            print(
                f"{shape:<12} {row.name:<14} {row.requests:>8} {row.rcu:>8.1f} {ratio:>7.2f} "
                f"{row.seconds:>7.2f} {row.reason}"
            )
            if row.keys != base.keys:
                missed.append(f"{shape}: {row.name} listed {row.keys} keys, not {base.keys}")
        for row in rows[2:]:
            if shape in SKIPPING_WINS:
                continue
            if row.requests > 2 * base.requests + 10:
                missed.append(f"{shape}: {row.name} {row.requests} requests > 2x Scan + 10")
            if row.rcu > 1.05 * base.rcu:
                missed.append(f"{shape}: {row.name} {row.rcu:g} RCU > 1.05x Scan")
            if args.latency and row.seconds > 1.5 * base.seconds:
                missed.append(f"{shape}: {row.name} {row.seconds:.2f}s > 1.5x Scan's")
    print("\n".join(["Targets missed:", *missed]) if missed else "All targets met.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
