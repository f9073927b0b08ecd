"""How DynamoDB Local's Scan time depends on where the ExclusiveStartKey lies, with and without
parallel segments: the measurement behind issue 4's open wall-time target.

    python benchmarks/local_start_key.py            # on an embedded DynamoDB Local
    python benchmarks/local_start_key.py --keys 500 # a smaller table (50 items a key)
    python benchmarks/local_start_key.py --db-path /tmp/ddb  # on SQLite files, not in memory

It builds the benchmark's uniform shape (2,000 keys x 50 items of about 200 bytes), then times
one-item Scans that start after a key at several depths of the scan order, the same for each of
4 segments, a batch of such Scans sent from 1, 2, 4 and 8 threads, and a whole skip listing by
4 threads over 4, 8 and 16 segments (what ``segments=4`` splits a table into).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ddbkeys._connect import make_client
from ddbkeys._demo_keys import load_items
from ddbkeys._local import DynamoDBLocal
from ddbkeys.partition_keys import MAX_SORT_KEY
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DEPTHS = (0.01, 0.25, 0.5, 0.75, 0.99)


def keys_in_order(client: DynamoDBClient, table: str, **segment: int) -> list[str]:
    """The partition keys in scan order (of one segment when given), by skipping."""
    keys: list[str] = []
    start: dict[str, Any] | None = None
    while True:
        request: dict[str, Any] = {
            "TableName": table,
            "Limit": 1,
            "ProjectionExpression": "pk",
            **segment,
        }
        if start:
            request["ExclusiveStartKey"] = start
        page = client.scan(**request)
        keys += [item["pk"]["S"] for item in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return keys
        start = {"pk": page["LastEvaluatedKey"]["pk"], "sk": MAX_SORT_KEY["N"]}


def one_scan_ms(client: DynamoDBClient, table: str, after: str, **segment: int) -> float:
    request: dict[str, Any] = {
        "TableName": table,
        "Limit": 1,
        "ProjectionExpression": "pk",
        "ExclusiveStartKey": {"pk": {"S": after}, "sk": MAX_SORT_KEY["N"]},
        **segment,
    }
    started = time.perf_counter()
    client.scan(**request)
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=2000, help="Partition keys (50 items each).")
    parser.add_argument(
        "--db-path", help="Run DynamoDB Local on SQLite files in this folder, not -inMemory."
    )
    args = parser.parse_args()
    with DynamoDBLocal(heap_mb=2048, db_path=args.db_path) as server:
        client = make_client(endpoint_url=server.endpoint_url)
        table = TableFactory(client, prefix="ddbkeys-bench")(("pk", "S"), ("sk", "N"))
        items = [
            {"pk": {"S": f"u{k:05}"}, "sk": {"N": str(i)}, "p": {"S": "x" * 200}}
            for k in range(args.keys)
            for i in range(50)
        ]
        load_items(client, table, items)
        print(f"{len(items):,} items, {args.keys:,} keys")
        keys = keys_in_order(client, table)
        print("\nOne-item Scan after a key at this depth of the scan order (median of 9):")
        for depth in DEPTHS:
            after = keys[int(depth * (len(keys) - 1))]
            ms = statistics.median(one_scan_ms(client, table, after) for _ in range(9))
            print(f"  whole table, depth {depth:4.2f}: {ms:6.1f} ms")
        for segment in range(4):
            seg = {"Segment": segment, "TotalSegments": 4}
            own = keys_in_order(client, table, **seg)
            times = [
                statistics.median(
                    one_scan_ms(client, table, own[int(d * (len(own) - 1))], **seg)
                    for _ in range(9)
                )
                for d in (0.01, 0.5, 0.99)
            ]
            print(
                f"  segment {segment} of 4, depth 0.01 / 0.50 / 0.99 in the segment: "
                + " / ".join(f"{t:.1f}" for t in times)
                + " ms"
            )
        sample = [keys[int(i * (len(keys) - 1) / 199)] for i in range(200)]
        print("\n200 such Scans (depths spread over the table) sent from N threads:")
        for threads in (1, 2, 4, 8):
            started = time.perf_counter()
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(lambda k: one_scan_ms(client, table, k), sample))
            rate = len(sample) / (time.perf_counter() - started)
            print(f"  {threads} thread(s): {rate:6.1f} Scans/s")
        print("\nA whole skip listing (Limit 1) by 4 threads taking N segments in turn:")
        for total in (4, 8, 16):
            started = time.perf_counter()
            segments = [{"Segment": s, "TotalSegments": total} for s in range(total)]
            with ThreadPoolExecutor(4) as pool:
                found = sum(
                    pool.map(lambda seg: len(keys_in_order(client, table, **seg)), segments)
                )
            took = time.perf_counter() - started
            print(f"  {total:2} segments: {took:6.1f} s for {found:,} keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
