"""Benchmark: this tree's ddbkeys against an earlier revision's, same server, same run.

    python benchmarks/against_revision.py 764ee4e            # on an embedded DynamoDB Local
    python benchmarks/against_revision.py 764ee4e --endpoint-url http://localhost:8000

The other benchmarks give ratios against the articles' code, which moves with the machine (the
article's 16-thread counter ran at 331 ids/s in one published run and at 840 in another): a
ratio published long ago says little about whether ddbkeys itself got slower. This one runs
the revision's ``src`` (extracted with ``git archive``) and this tree's in child processes,
alternating, on the same server and table, for the rows whose published ratios are compared:
the atomic counter from 1 writer and blocks of 100 from 16 threads (both their defaults, in
every revision). It prints each side's median ids/s and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ddbkeys.connect import make_client
from ddbkeys.local import DynamoDBLocal
from ddbkeys.testing.tables import TableFactory

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "src"

#: The child: mints ``count`` ids with ``threads`` threads after one to warm up; prints ids/s.
CHILD = """
import sys, threading, time, uuid
from ddbkeys.connect import make_client
from ddbkeys.ids import AtomicCounter, BlockAllocator
endpoint, table, kind, threads, count = sys.argv[1:6]
threads, count = int(threads), int(count)
counter = AtomicCounter(make_client(endpoint_url=endpoint, max_attempts=10), table,
                        "c" + uuid.uuid4().hex[:8])
mint = counter.next if kind == "counter" else BlockAllocator(counter, 100).next
mint()
def run(n):
    for _ in range(n):
        mint()
workers = [threading.Thread(target=run, args=(count // threads,)) for _ in range(threads)]
began = time.perf_counter()
for w in workers: w.start()
for w in workers: w.join()
print(count // threads * threads / (time.perf_counter() - began))
"""

#: (label, kind, threads, ids per run)
ROWS = [("counter, 1 writer", "counter", 1, 1500), ("blocks of 100, 16", "blocks", 16, 60_000)]


def rate(source: Path, endpoint: str, table: str, kind: str, threads: int, count: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, endpoint, table, kind, str(threads), str(count)],
        env={"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision", help="A git revision of this repository (e.g. 764ee4e).")
    parser.add_argument("--endpoint-url", help="Default: an embedded DynamoDB Local.")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    server = None if args.endpoint_url else DynamoDBLocal(heap_mb=1024).start()
    endpoint = args.endpoint_url or server.endpoint_url  # type: ignore[union-attr]
    factory = TableFactory(make_client(endpoint_url=endpoint), prefix="ddbkeys-bench")
    try:
        with tempfile.TemporaryDirectory() as tree:
            archive = subprocess.run(
                ["git", "-C", str(HERE.parent), "archive", args.revision, "src"],
                capture_output=True,
                check=True,
            )
            subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
            old = Path(tree) / "src"
            table = factory(("pk", "S"))
            print(
                f"{'row':<20} {args.revision + ' ids/s':>16} {'this tree ids/s':>16} {'ratio':>7}"
            )
            for label, kind, threads, count in ROWS:
                runs: dict[str, list[float]] = {"old": [], "new": []}
                for _ in range(args.rounds):  # alternating: the machine's drift hits both
                    runs["old"].append(rate(old, endpoint, table, kind, threads, count))
                    runs["new"].append(rate(SOURCE, endpoint, table, kind, threads, count))
                before, now = statistics.median(runs["old"]), statistics.median(runs["new"])
                print(f"{label:<20} {before:>16.0f} {now:>16.0f} {now / before:>6.2f}x", flush=True)
    finally:
        factory.delete_all()
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
