"""The table shapes of benchmarks/partition_keys.py: how each is generated and loaded.

Every shape is seeded (the same tables every run). Sizes are the bytes of a payload attribute
``p`` on top of the keys (``0``: no payload).

- **uniform**: 2,000 keys x 50 items of about 200 B. Large collections of small items: skipping
  pays, a scan reads 50 items a key.
- **skewed**: 2,000 single-item keys + 5 keys of 4,000 items. Attacks the estimate (a sample of
  a few pages sees either the small keys or a big one, never the mix) and any method that decides
  on the first pages.
- **tiny-binary**: 5,000 single-item collections, 4-byte binary partition keys, a number sort
  key. Nothing to skip: a scan is cheapest; markers would cost more than they save.
- **heavy-tailed**: 1,000 keys, Pareto item counts (1-400) and Pareto item sizes (50 B-40 KB).
  Attacks estimates that assume one item size and one collection size: the mean is carried by a
  few huge items and a few long collections.
- **mixed**: a blend, its keys interleaved in scan order: 1,000 single-item keys, 500 keys x 20
  items of 200 B, 200 heavy-tailed keys, 3 keys of 2,000 items. Neither a scan nor skipping wins
  everywhere.
- **sample-s**, **sample-n**, **sample-b**: the tables of the aws-samples loader that comes with
  the article ("RandomLoader/load_random_data.py"): 5,000 puts, random 10-character partition
  keys with 1 to 10 items each, no payload, the sort key a random number 1-100,000 (as a
  string, as a number) or ``b"\\xff"`` times a random 1-1,024 (binary: items of ~0.5 KB); puts
  on a key and sort key already written overwrite, as there.
- **unit-edge** (adversarial): 2,000 keys x 9 items of ~455 B, a binary sort key: each
  collection sits right at one 4 KB read unit. Attacks skip-pages (a skip saves one item of nine
  but costs a request a key: it must read as a scan does) and any estimate that rounds a
  collection up or down to whole units.
- **runs** (adversarial): 3,000 keys in alternating runs, in the table's own scan order, of 150
  single-item keys and 150 keys x 40 items of 300 B (about 12 KB). Attacks decisions taken on
  what was read so far (whatever skip-pages learns on a run is wrong on the next) and a sample
  of a few pages (each page sees one kind of run).
- **keys-220k**: 220,000 single-item keys of ~150 B: skip-pages' requests against a scan's where
  skipping saves nothing, at a size where a request a key would be ruinous.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

#: A partition key's value, as the listing yields it.
Key = str | bytes


@dataclass
class Shape:
    """A table: ``collections`` (partition key, each item's payload bytes), the key types, and
    how its items are made (``loader``: the aws-samples loader's sort keys, no payload).
    ``runs``: the shape's keys are reordered, once the table holds one item each, into
    alternating runs (in the table's scan order) of that many single-item keys and that many
    keys of ``run_items`` items."""

    name: str
    collections: list[tuple[Key, list[int]]]
    pk_type: str = "S"
    sort_type: str = "N"
    loader: bool = False
    runs: int = 0
    run_items: tuple[int, int] = (40, 300)

    @property
    def keys(self) -> set[Key]:
        return {key for key, _ in self.collections}

    @property
    def items(self) -> int:
        return sum(len(sizes) for _, sizes in self.collections)

    def describe(self) -> str:
        sizes = [s for _, ss in self.collections for s in ss]
        return f"{len(self.collections):,} keys, {len(sizes):,} items"


def sort_value(kind: str, i: int, rng: random.Random) -> dict[str, Any]:
    """The ``i``th sort key of a collection: a number, an ``item#`` string, or 16 random bytes."""
    if kind == "N":
        return {"N": str(i)}
    if kind == "S":
        return {"S": f"item#{i:04}"}
    return {"B": rng.randbytes(16)}


def typed(kind: str, value: Key) -> dict[str, Any]:
    return {kind: value}


def item(shape: Shape, key: Key, i: int, size: int, rng: random.Random) -> dict[str, Any]:
    """The ``i``th item of ``key``'s collection (``size``: the payload's bytes, or with a
    loader's shape the value its sort key is made from)."""
    made: dict[str, Any] = {"pk": typed(shape.pk_type, key)}
    if shape.loader:
        made["sk"] = {"S": str(size)} if shape.sort_type == "S" else {"N": str(size)}
        if shape.sort_type == "B":
            made["sk"] = {"B": b"\xff" * size}
        return made
    made["sk"] = sort_value(shape.sort_type, i, rng)
    if size:
        made["p"] = {"S": "x" * size}
    return made


def items_of(shape: Shape, collections: list[tuple[Key, list[int]]]) -> Iterator[dict[str, Any]]:
    rng = random.Random(11)
    for key, sizes in collections:
        for i, size in enumerate(sizes):
            yield item(shape, key, i, size, rng)


def write_all(
    client: DynamoDBClient, table: str, items: Iterator[dict[str, Any]], *, threads: int = 8
) -> None:
    """BatchWriteItem, 25 items a request, from ``threads`` threads, resending what comes back
    unprocessed; the items are drawn as the threads need them (220,000 items are never all in
    memory)."""
    lock = threading.Lock()

    def batches() -> Iterator[list[dict[str, Any]]]:
        while True:
            with lock:
                batch = [made for _, made in zip(range(25), items, strict=False)]
            if not batch:
                return
            yield batch

    def worker() -> None:
        for batch in batches():
            request: Any = {table: [{"PutRequest": {"Item": made}} for made in batch]}
            pause = 0.01
            while request:
                request = client.batch_write_item(RequestItems=request).get("UnprocessedItems")
                if request:
                    threading.Event().wait(pause)
                    pause = min(pause * 2, 1.0)

    with ThreadPoolExecutor(threads) as pool:
        for done in [pool.submit(worker) for _ in range(threads)]:
            done.result()


def scan_order(client: DynamoDBClient, table: str) -> list[Any]:
    """The partition keys of ``table`` (one item each) in the order a Scan returns them."""
    order: list[Any] = []
    request: dict[str, Any] = {"TableName": table, "ProjectionExpression": "pk"}
    while True:
        page = client.scan(**request)
        order += [next(iter(found["pk"].values())) for found in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return order
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def load(client: DynamoDBClient, table: str, shape: Shape) -> None:
    """Write ``shape``'s items into ``table`` (a ``runs`` shape: first one item a key, then,
    in the scan order that gives, the rest of each run's collections)."""
    if not shape.runs:
        write_all(client, table, items_of(shape, shape.collections))
        return
    write_all(client, table, items_of(shape, shape.collections))
    count, pad = shape.run_items
    order = scan_order(client, table)
    big = [key for at, key in enumerate(order) if (at // shape.runs) % 2 == 1]
    write_all(
        client,
        table,
        (item(shape, key, i, pad, random.Random(i)) for key in big for i in range(1, count)),
    )
    chosen = set(big)
    shape.collections = [
        (key, [pad] * count if key in chosen else sizes) for key, sizes in shape.collections
    ]


def pareto(rng: random.Random, alpha: float, low: float, high: float) -> int:
    """A Pareto draw of shape ``alpha`` from ``low``, cut at ``high``."""
    return int(min(high, low * rng.paretovariate(alpha)))


def heavy_tailed(rng: random.Random, keys: int, prefix: str) -> list[tuple[Key, list[int]]]:
    """Pareto item counts (1-400) and Pareto item sizes (50 B-40 KB)."""
    return [
        (
            f"{prefix}{k:05}",
            [pareto(rng, 1.1, 50, 40_000) for _ in range(pareto(rng, 1.25, 1, 400))],
        )
        for k in range(keys)
    ]


def sample_loader(rng: random.Random, puts: int, sort_type: str) -> list[tuple[Key, list[int]]]:
    """The aws-samples RandomLoader: ``puts`` puts, random 10-character keys of 1 to 10 items,
    each sort key made from a random value (an overwrite where a key repeats one)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    collections: list[tuple[Key, list[int]]] = []
    done = 0
    while done < puts:
        key = "".join(rng.choices(alphabet, k=10))
        values: dict[int, None] = {}
        for _ in range(rng.randint(1, 10)):
            values[rng.randint(1, 1024) if sort_type == "B" else rng.randint(1, 100_000)] = None
            done += 1
        collections.append((key, list(values)))
    return collections


#: The shapes, by name, and what makes each (``scale`` < 1: smaller tables, for --quick).
def shapes(scale: float) -> dict[str, Callable[[], Shape]]:
    def n(x: int) -> int:
        return max(2, int(x * scale))

    def uniform() -> Shape:
        return Shape("uniform", [(f"u{k:05}", [200] * 50) for k in range(n(2000))])

    def skewed() -> Shape:
        small: list[tuple[Key, list[int]]] = [(f"k{k:05}", [100]) for k in range(n(2000))]
        return Shape("skewed", small + [(f"big{k}", [100] * n(4000)) for k in range(5)])

    def tiny_binary() -> Shape:
        rng = random.Random(5)
        keys: set[bytes] = set()
        while len(keys) < n(5000):
            keys.add(rng.randbytes(4))
        return Shape("tiny-binary", [(key, [10]) for key in sorted(keys)], pk_type="B")

    def heavy() -> Shape:
        return Shape("heavy-tailed", heavy_tailed(random.Random(35), n(1000), "h"))

    def mixed() -> Shape:
        rng = random.Random(6)
        parts: list[tuple[Key, list[int]]] = [(f"m1-{k:05}", [150]) for k in range(n(1000))]
        parts += [(f"m20-{k:05}", [200] * 20) for k in range(n(500))]
        parts += heavy_tailed(rng, n(200), "mh-")
        parts += [(f"mbig-{k}", [100] * n(2000)) for k in range(3)]
        return Shape("mixed", parts)

    def sample(kind: str) -> Callable[[], Shape]:
        def made() -> Shape:
            rng = random.Random(4)
            collections = sample_loader(rng, n(5000), kind)
            return Shape(f"sample-{kind.lower()}", collections, sort_type=kind, loader=True)

        return made

    def unit_edge() -> Shape:
        return Shape("unit-edge", [(f"user#{k:05}", [430] * 9) for k in range(n(2000))], "S", "B")

    def runs() -> Shape:
        return Shape("runs", [(f"r{k:05}", [100]) for k in range(n(3000))], runs=max(2, n(150)))

    def keys_220k() -> Shape:
        return Shape("keys-220k", [(f"w{k:07}", [120]) for k in range(n(220_000))])

    return {
        "uniform": uniform,
        "skewed": skewed,
        "tiny-binary": tiny_binary,
        "heavy-tailed": heavy,
        "mixed": mixed,
        "sample-s": sample("S"),
        "sample-n": sample("N"),
        "sample-b": sample("B"),
        "unit-edge": unit_edge,
        "runs": runs,
        "keys-220k": keys_220k,
    }
