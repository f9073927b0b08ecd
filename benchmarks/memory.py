"""The CLI's peak memory listing a table (benchmarks/partition_keys.py's last rows): flat is the
target, whatever the table's size."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from shapes import Shape, load

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

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


def memory(
    client: DynamoDBClient,
    factory: TableFactory,
    endpoint: str,
    scale: float,
    big: str,
    big_keys: int,
) -> None:
    """The CLI's peak memory listing 10,000 keys (a table made here) and ``big`` (of
    ``big_keys`` keys, already loaded)."""
    count = max(100, int(10_000 * scale))
    small = factory(("pk", "S"), ("sk", "N"))
    load(client, small, Shape("memory", [(f"m{k:06}", [20]) for k in range(count)]))
    for table, keys in ((small, count), (big, big_keys)):
        rss, seconds = peak_memory(endpoint, table)
        print(
            f"CLI peak memory listing {keys:>7} keys: {rss / 1024:6.1f} MiB ({seconds:.1f} s)",
            flush=True,
        )
