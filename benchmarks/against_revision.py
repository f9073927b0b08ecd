"""Benchmark: this tree's ddbkeys against an earlier revision's, same server, same run.

    python benchmarks/against_revision.py 764ee4e            # on an embedded DynamoDB Local
    python benchmarks/against_revision.py 764ee4e --endpoint-url http://localhost:8000

The other benchmarks give ratios against the articles' code, which moves with the machine (the
article's 16-thread counter ran at 331 ids/s in one published run and at 840 in another): a
ratio published long ago says little about whether ddbkeys itself got slower. This one runs
the revision's ``src`` (extracted with ``git archive``) and this tree's in child processes,
alternating, on the same server and table, for each sync row of ``benchmarks/ids.py`` that every
revision since 764ee4e has (the counter, blocks of 100, the item collection and the gapless
sequence, with their defaults, from 1 and 16 threads, and gapless from 4 processes of 4 threads),
and the "boto3" row: the counter on a client as ``boto3.client("dynamodb")`` makes it.
It prints each side's median ids/s and their ratio, and the lowest and highest ratio of one round's
pair of runs (how far the machine's noise moves it), and the ratio of the CPU time spent per id
(median against median: a loaded machine moves it less than ids/s). The side that runs first
alternates from round to round (a row's runs share one table, which grows). ``--row`` picks rows by
label (``--row "gapless, 4x4"``); ``--each`` prints every run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import NamedTuple

from ddbkeys._connect import make_client
from ddbkeys._local import DynamoDBLocal
from ddbkeys.testing._tables import TableFactory

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "src"

#: The child: after one call to warm up, says it is ready and waits for the parent's go (every
#: child of the run ready: none still importing while the others work), then calls with
#: ``threads`` threads; prints when it began and ended (epoch seconds), how many calls, the CPU
#: seconds the process spent on them and the races its strategy lost (``usage.conflicts``).
#: It runs an earlier revision's ddbkeys too, so it imports from the package faces only (whose
#: names every revision since 764ee4e has): a private module's name moves from one to another.
CHILD = """
import os, sys, threading, time
from ddbkeys import make_client  # public at every revision (ddbkeys._connect is new)
from ddbkeys.ids import AtomicCounter, BlockAllocator, CollectionSequence, GaplessSequence
endpoint, table, kind, name, threads, count = sys.argv[1:7]
threads, count = int(threads), int(count)
client = make_client(endpoint_url=endpoint, max_attempts=10)
if kind == "boto3":  # a client as boto3 makes it: its timeouts are longer than the deadline
    import boto3
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="local", aws_secret_access_key="local")
if kind in ("counter", "blocks", "boto3"):
    counter = AtomicCounter(client, table, name)
    mint = BlockAllocator(counter, 100).next if kind == "blocks" else counter.next
elif kind == "collection":
    sequence = CollectionSequence(client, table)
    mint = lambda: sequence.put(name, {"priority": "low"})
else:
    gapless, made = GaplessSequence(client, table, name), iter(range(10**9))
    mint = lambda: gapless.put({"pk": f"User#{name}-{os.getpid()}-{next(made)}"})
mint()
owner = gapless if kind == "gapless" else sequence if kind == "collection" else counter
usage = getattr(owner, "usage", None)
lost = usage.conflicts if usage is not None else 0
def run(n):
    for _ in range(n):
        mint()
workers = [threading.Thread(target=run, args=(count // threads,)) for _ in range(threads)]
print("ready", flush=True)
sys.stdin.readline()
cpu, began = os.times(), time.time()
for w in workers: w.start()
for w in workers: w.join()
ended, spent = time.time(), os.times()
cpu = spent.user - cpu.user + spent.system - cpu.system
lost = (usage.conflicts if usage is not None else 0) - lost
print(began, ended, count // threads * threads, cpu, lost)
"""

#: The sync rows of benchmarks/ids.py: (label, kind, processes, threads each, ids per run).
ROWS = [
    ("counter, 1", "counter", 1, 1, 1500),
    ("counter, 16", "counter", 1, 16, 3000),
    ("boto3, 1", "boto3", 1, 1, 600),
    ("boto3, 16", "boto3", 1, 16, 3000),
    ("blocks of 100, 1", "blocks", 1, 1, 20_000),
    ("blocks of 100, 16", "blocks", 1, 16, 60_000),
    ("collection, 1", "collection", 1, 1, 400),
    ("collection, 16", "collection", 1, 16, 2000),
    ("gapless, 1", "gapless", 1, 1, 400),
    ("gapless, 16", "gapless", 1, 16, 3000),
    ("gapless, 4x4", "gapless", 4, 4, 2000),
]


class Run(NamedTuple):
    """One run of a row: ids/s, and two measures the machine's load moves less: the CPU time its
    processes spent per id (ms) and the races lost to other writers per id."""

    rate: float
    cpu_ms: float
    conflicts: float


def rate(source: Path, endpoint: str, table: str, row: tuple[str, str, int, int, int]) -> Run:
    """One run of ``row`` with the ddbkeys in ``source``: its processes start together once
    all are ready (on the same counter, collection or sequence) and the run lasts from the
    first start to the last end."""
    _, kind, procs, threads, count = row
    name = "r" + uuid.uuid4().hex[:8]
    command = [sys.executable, "-c", CHILD, endpoint, table, kind, name, str(threads)]
    children = [
        subprocess.Popen(
            [*command, str(count // procs)],
            env={"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(procs)
    ]
    for child in children:  # each has imported ddbkeys and made its warm-up call
        assert child.stdin is not None and child.stdout is not None
        if child.stdout.readline() != "ready\n":
            raise SystemExit(f"a child failed to start on {row[0]} with {source}")
    for child in children:  # then all go at once
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    outs = [child.communicate()[0].split() for child in children]
    if any(child.returncode for child in children):
        raise SystemExit(f"a child failed on {row[0]} with {source}")
    began, ended = min(float(o[0]) for o in outs), max(float(o[1]) for o in outs)
    ids = sum(int(o[2]) for o in outs)
    cpu, lost = sum(float(o[3]) for o in outs), sum(int(o[4]) for o in outs)
    return Run(ids / (ended - began), 1000 * cpu / ids, lost / ids)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision", help="A git revision of this repository (e.g. 764ee4e).")
    parser.add_argument("--endpoint-url", help="Default: an embedded DynamoDB Local.")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--only",
        choices=sorted({row[1] for row in ROWS}),
        action="append",
        help="Run only these strategies (repeatable).",
    )
    parser.add_argument(
        "--row",
        choices=[row[0] for row in ROWS],
        action="append",
        help='Run only these rows, by label (repeatable), e.g. --row "gapless, 4x4".',
    )
    parser.add_argument("--each", action="store_true", help="Print every run's ids/s.")
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
            print(
                f"{'row':<20} {args.revision + ' ids/s':>16} {'this tree ids/s':>16} {'ratio':>7}"
                f" {'rounds':>11} {'cpu/id':>7}"
            )
            for row in ROWS:
                if (args.only and row[1] not in args.only) or (args.row and row[0] not in args.row):
                    continue
                keys = [("pk", "S"), ("sk", "N")] if row[1] == "collection" else [("pk", "S")]
                table = factory(*keys)
                runs: dict[str, list[Run]] = {"old": [], "new": []}
                for n in range(args.rounds):  # alternating: the machine's drift hits both
                    sides = [("old", old), ("new", SOURCE)]
                    for side, source in sides if n % 2 == 0 else sides[::-1]:
                        runs[side].append(rate(source, endpoint, table, row))
                        if args.each:
                            one = runs[side][-1]
                            print(
                                f"  round {n + 1} {side}: {one.rate:.0f} ids/s, "
                                f"{one.cpu_ms:.3f} CPU ms/id, {one.conflicts:.3f} conflicts/id",
                                flush=True,
                            )
                old_runs, new_runs = runs["old"], runs["new"]
                before = statistics.median(r.rate for r in old_runs)
                now = statistics.median(r.rate for r in new_runs)
                # each round's pair of runs, one after the other: how far the ratio moves
                pairs = [n.rate / o.rate for o, n in zip(old_runs, new_runs, strict=True)]
                cpu = statistics.median(r.cpu_ms for r in new_runs) / statistics.median(
                    r.cpu_ms for r in old_runs
                )
                print(
                    f"{row[0]:<20} {before:>16.0f} {now:>16.0f} {now / before:>6.2f}x "
                    f"{min(pairs):>6.2f}-{max(pairs):.2f}x {cpu:>6.2f}x",
                    flush=True,
                )
    finally:
        factory.delete_all()
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
