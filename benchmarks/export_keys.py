"""Benchmark: the distinct keys of a table's export, memory flat from 10k to 1M keys (issue 36).

    python benchmarks/export_keys.py                      # on an embedded DynamoDB Local
    python benchmarks/export_keys.py --endpoint-url URL   # or a running one
    python benchmarks/export_keys.py --quick              # smaller exports, for a smoke test

Exports in AWS's layout are written here directly (``ddbkeys.testing``'s writer core, not
through DynamoDB Local: a million items would take too long to load): 10k, 100k and 1M distinct
keys, two items a key (random 25-character string keys, in random order as a partition's
hashed keyspace holds them), spread over 8 gzip data files in turn, so that each key's two items
lie in two files; DynamoDB JSON at each size, Amazon Ion at one (``--ion-keys``). Each export is
then listed by ``distinct_partition_keys(client, T, from_export=folder)`` in a fresh process,
against an empty table of the same key schema (the reader only describes it), and the
process's peak RSS is read: VmHWM, the high-water mark of its own memory. (``ru_maxrss`` would
not do: Linux carries it over from the process it was started from, the benchmark's, whatever
that held.) The baseline is what a user writes instead: the same files read with ``gzip`` and
``json.loads`` into a Python ``set``, also in a fresh process.

The target: peak RSS at 1M keys at most 1.5 times that at 10k (the reader keeps up to 100,000
keys in a Python set, then the keys seen go to SQLite on disk).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ddbkeys._connect import make_client
from ddbkeys._local import DynamoDBLocal
from ddbkeys.testing._export import ExportLayout, write_export_files
from ddbkeys.testing._export_lines import ExportFormat
from ddbkeys.testing._tables import TableFactory

SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (2_000, 20_000, 200_000)
FILES = 8
FLAT_WITHIN = 1.5

# A fresh process: lists the export (ddbkeys, or the baseline) and prints what it measured.
_CHILD = """
import json, sys, time
mode, endpoint, table, folder = sys.argv[1:5]
if mode == "ddbkeys":
    from ddbkeys import make_client
    from ddbkeys.partition_keys import distinct_partition_keys
    client = make_client(endpoint_url=endpoint)
    started = time.perf_counter()
    keys = sum(1 for _ in distinct_partition_keys(client, table, from_export=folder))
else:
    import gzip, os
    started = time.perf_counter()
    seen = set()
    for line in open(os.path.join(folder, "manifest-files.json")):
        name = json.loads(line)["dataFileS3Key"].rsplit("/", 1)[-1]
        with gzip.open(os.path.join(folder, "data", name), "rt", encoding="utf-8") as data:
            for item in data:
                seen.add(json.loads(item)["Item"]["pk"]["S"])
    keys = len(seen)
seconds = time.perf_counter() - started
hwm = next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"keys": keys, "seconds": seconds, "peak_kib": int(hwm)}))
"""


@dataclass
class Run:
    keys: int
    seconds: float
    peak_mib: float

    @property
    def rate(self) -> float:
        return self.keys / self.seconds if self.seconds else 0.0


def measure(mode: str, endpoint: str, table: str, folder: str) -> Run:
    """One listing of the export at ``folder`` in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, endpoint, table, folder],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"the {mode} listing of {folder} failed:\n{done.stderr}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return Run(found["keys"], found["seconds"], found["peak_kib"] / 1024)


def items(keys: int) -> Iterator[dict[str, Any]]:
    """Two items a key, ``keys`` random string keys (md5 of the key's number: random order)."""
    for number in range(keys):
        pk = {"S": "u-" + hashlib.md5(str(number).encode()).hexdigest()[:23]}
        for sort in (1, 2):
            yield {"pk": pk, "sk": {"N": str(sort)}, "v": {"S": "payload-of-24-characters"}}


def synthesize(root: Path, table_arn: str, keys: int, fmt: ExportFormat) -> str:
    """An export of ``keys`` keys (2 items each) over ``FILES`` files, in ``root``."""
    layout = ExportLayout(
        folder=root / f"{fmt.lower()}-{keys}",
        table_arn=table_arn,
        table_id="benchmark",
        export_time=datetime.now(UTC),
        fmt=fmt,
        prefix="bench",
    )
    return write_export_files(layout, items(keys), partition_key="pk", files=FILES)


def size_of(folder: str) -> float:
    return sum(p.stat().st_size for p in Path(folder, "data").iterdir()) / 2**20


def line(name: str, fmt: str, run: Run, expected: int) -> str:
    right = "" if run.keys == expected else f"  WRONG: {run.keys:,} keys, not {expected:,}"
    return (
        f"  {name:<26} {fmt:<13} {expected:>9,} {run.seconds:>8.1f} {run.rate:>10,.0f} "
        f"{run.peak_mib:>10.1f}{right}"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--endpoint-url", help="Default: an embedded DynamoDB Local.")
    parser.add_argument("--quick", action="store_true", help=f"Sizes {QUICK_SIZES} (a smoke test).")
    parser.add_argument(
        "--ion-keys",
        type=int,
        help="Keys of the one Ion export (default: the largest size).",
    )
    parser.add_argument("--folder", help="Write the exports here and keep them (default: a temp).")
    return parser.parse_args()


Peaks = dict[tuple[str, str], dict[int, float]]


def run_plan(
    plan: list[tuple[int, ExportFormat]],
    endpoint: str,
    table: str,
    arn: str,
    root: Path,
    keep: bool,
) -> tuple[Peaks, list[str]]:
    """Each export of ``plan`` written, then listed by ddbkeys (and, in JSON, the baseline)."""
    peaks: Peaks = {}
    missed: list[str] = []
    print(
        f"  {'listing':<26} {'format':<13} {'keys':>9} {'seconds':>8} {'keys/s':>10} "
        f"{'peak MiB':>10}"
    )
    for keys, fmt in plan:
        writing = time.perf_counter()
        folder = synthesize(root, arn, keys, fmt)
        wrote = time.perf_counter() - writing
        print(
            f"  (export of {keys:,} keys, {fmt}: {size_of(folder):.1f} MiB of gzip, "
            f"written in {wrote:.1f} s)",
            flush=True,
        )
        modes = ["ddbkeys", "baseline"] if fmt == "DYNAMODB_JSON" else ["ddbkeys"]
        for mode in modes:
            run = measure(mode, endpoint, table, folder)
            name = "ddbkeys from_export" if mode == "ddbkeys" else "gzip + json.loads + set"
            print(line(name, fmt, run, keys), flush=True)
            peaks.setdefault((name, fmt), {})[keys] = run.peak_mib
            if run.keys != keys:
                missed.append(f"{name} {fmt} at {keys:,} keys found {run.keys:,}")
        if not keep:
            shutil.rmtree(Path(folder).parents[2], ignore_errors=True)
    return peaks, missed


def judge(peaks: Peaks, small: int, big: int) -> list[str]:
    """The ratios of peak RSS, largest size to smallest, and whether ddbkeys' is flat."""
    print()
    for (name, kind), by_size in peaks.items():
        if small in by_size and big in by_size:
            ratio = by_size[big] / by_size[small]
            print(
                f"  {name} ({kind}): peak RSS at {big:,} keys / at {small:,}: {ratio:.2f}x "
                f"({by_size[big]:.1f} / {by_size[small]:.1f} MiB)"
            )
    measured = peaks[("ddbkeys from_export", "DYNAMODB_JSON")]
    ratio = measured[big] / measured[small]
    met = ratio <= FLAT_WITHIN
    print(
        f"\nTarget: memory flat: peak RSS at {big:,} keys <= {FLAT_WITHIN}x at {small:,}: "
        f"{ratio:.2f}x, {'met' if met else 'MISSED'}"
    )
    return [] if met else [f"memory flat: {ratio:.2f}x > {FLAT_WITHIN}x"]


def main() -> int:
    args = parse_args()
    sizes = QUICK_SIZES if args.quick else SIZES
    started = time.perf_counter()
    server = None if args.endpoint_url else DynamoDBLocal().start()
    endpoint = args.endpoint_url or server.endpoint_url  # type: ignore[union-attr]
    client = make_client(endpoint_url=endpoint)
    factory = TableFactory(client, prefix="ddbkeys-bench-export")
    root = Path(args.folder or tempfile.mkdtemp(prefix="ddbkeys-export-bench-"))
    try:
        table = factory(("pk", "S"), ("sk", "N"))  # empty: the reader only describes it
        arn = client.describe_table(TableName=table)["Table"]["TableArn"]
        print(
            f"Exports of {', '.join(f'{s:,}' for s in sizes)} keys (2 items a key, {FILES} gzip "
            f"files, each key in 2 of them); one process a listing; peak RSS is its VmHWM.\n"
        )
        plan: list[tuple[int, ExportFormat]] = [(s, "DYNAMODB_JSON") for s in sizes]
        plan.append((args.ion_keys or sizes[-1], "ION"))
        peaks, missed = run_plan(plan, endpoint, table, arn, root, keep=bool(args.folder))
        missed += judge(peaks, sizes[0], sizes[-1])
    finally:
        factory.delete_all()
        if not args.folder:
            shutil.rmtree(root, ignore_errors=True)
        if server is not None:
            server.stop()
    print(f"\n(the whole run: {time.perf_counter() - started:.0f} s)")
    print("\n".join(["Targets missed:", *missed]) if missed else "All targets met.")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
