"""Benchmark: plain boto3 Scans of one table on DynamoDB Local, by segments and by processes.

    python benchmarks/scan_segments.py             # on an embedded DynamoDB Local
    python benchmarks/scan_segments.py --quick     # a smaller table, for a smoke test

The table of ``benchmarks/listing_workers.py`` (one-item collections of about 150 bytes), read
with plain boto3 (no ddbkeys): one process reading it as 1 segment; 2 and 4 segments read one
after the other by one process, and one segment each by 2 and 4 processes; then 16 segments in
one process with page Limits from 1,000 to none. Each line gives the wall time and the CPU
seconds DynamoDB Local used. It shows where the ratios of "N processes against one" come from
on this server: its work for a page grows with how deep the page's start key lies in the
segment, so the same table costs it less CPU in more, shorter segments, whoever reads them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable
from functools import partial
from multiprocessing import get_context
from typing import Any

import boto3

from ddbkeys._connect import make_client
from ddbkeys._demo_keys import load_items
from ddbkeys._local import DynamoDBLocal
from ddbkeys.testing._tables import TableFactory

KEYS = 200_000


def server_cpu(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scan(endpoint: str, table: str, total: int, segments: Iterable[int], limit: int = 0) -> int:
    """Items read scanning ``segments`` of ``total`` (plain boto3; ``limit``: a page's Limit)."""
    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    items = 0
    for segment in segments:
        request: dict[str, object] = {"TableName": table, "ProjectionExpression": "pk"}
        if total > 1:
            request.update(Segment=segment, TotalSegments=total)
        if limit:
            request["Limit"] = limit
        while True:
            page = client.scan(**request)  # type: ignore[arg-type]
            items += len(page["Items"])
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return items


def spread(pool: Any, jobs: list[tuple[str, str, int, list[int]]]) -> int:
    """Items read by the pool's processes, one job each."""
    return sum(pool.starmap(scan, jobs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="A small table (a smoke test).")
    keys = KEYS // 20 if parser.parse_args().quick else KEYS
    server = DynamoDBLocal(heap_mb=1024).start()
    try:
        client = make_client(endpoint_url=server.endpoint_url)
        table = TableFactory(client, prefix="segments")(("pk", "S"), ("sk", "N"))
        items = [
            {"pk": {"S": f"w{k:07}"}, "sk": {"N": "1"}, "p": {"S": "x" * 120}} for k in range(keys)
        ]
        load_items(client, table, items)
        endpoint, pid = server.endpoint_url, server.pid
        assert pid is not None

        def timed(label: str, read: Callable[[], int]) -> float:
            cpu, began = server_cpu(pid), time.perf_counter()
            count = read()
            wall, used = time.perf_counter() - began, server_cpu(pid) - cpu
            print(f"{label:<46} {count:>8} items {wall:7.2f} s  server CPU {used:6.2f} s")
            assert count == keys, f"read {count} items of {keys}"
            return wall

        print(f"Plain boto3 Scans of {keys:,} items ({os.cpu_count()} cores)", flush=True)
        one = timed("1 process, 1 segment", partial(scan, endpoint, table, 1, [0]))
        with get_context("spawn").Pool(4) as pool:
            for n in (2, 4):
                alone = timed(
                    f"1 process, {n} segments in turn", partial(scan, endpoint, table, n, range(n))
                )
                jobs = [(endpoint, table, n, [i]) for i in range(n)]
                apart = timed(f"{n} processes, 1 segment of {n} each", partial(spread, pool, jobs))
                ratios = f"{one / alone:.2f}x in turn, {one / apart:.2f}x in {n} processes"
                print(f"  against 1 process, 1 segment: {ratios}")
        for limit in (1000, 2500, 5000, 10_000, 0):
            label = f"1 process, 16 segments in turn, Limit {limit or 'none'}"
            timed(label, partial(scan, endpoint, table, 16, range(16), limit))
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
