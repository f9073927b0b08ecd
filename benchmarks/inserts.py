"""The whole-insert rows of benchmarks/ids.py: what a user's insert costs with each id strategy,
against the bare ``PutItem`` the user would write without ids.

An inserted item is an order (a customer, a total, a note of about 60 bytes). Without ids, the
user writes it with one ``PutItem`` under a key of their own (a UUID). With ids, each insert is
the id and the item's own write:

- ``counter``: ``AtomicCounter.next()``, then ``PutItem`` with the id as the key;
- ``coalesced``: the same with ``AtomicCounter(group_commit=True)`` (concurrent calls share one
  ``UpdateItem``);
- ``blocks``: ``BlockAllocator(counter, 100).next()`` (ids from blocks held in memory), then
  ``PutItem``;
- ``gapless``: ``GaplessSequence.put(item)``, the transaction that writes the item and moves the
  counter together (group commit, as by default: concurrent puts share a transaction);
- ``collection``: ``CollectionSequence.put(collection, item)`` over 8 collections (the next sort
  key of a collection, written with the item in one conditional put), against a ``PutItem`` of
  the same items under a random sort key.

:data:`THREADS` threads of one process insert, as a service's request handlers would. Each
row runs :data:`ROUNDS` timed rounds straight to DynamoDB that alternate which side goes first
(each round inserts half its items on each side, then half again in the reverse order);
its throughput ratio is the median of the rounds' ratios (items/s with ids over items/s of
``PutItem`` in the same round). Then one more round of each side goes through a counting proxy
(:mod:`counting_proxy`, in its own process), which counts the write requests as DynamoDB sees
them: the row's write requests per item. (Timed through the proxy, each round trip would carry
the proxy's own delay, which a service does not have: a strategy that makes two round trips in a
row would pay it twice.)

Targets (blocks and the group-commit counter): at most 1.15 write requests per inserted item,
and throughput within 1.15x of ``PutItem`` (a ratio of at least 1 / 1.15).
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from counting_proxy import CountingProxy

from ddbkeys._connect import make_client
from ddbkeys.ids import AtomicCounter, BlockAllocator, CollectionSequence, GaplessSequence

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

THREADS = 16
ROUNDS = 5
#: Items each side inserts per round in a full run (--quick: a tenth, at least 200).
ITEMS = 2000
COLLECTIONS = 8
#: strategy: (most write requests per item, least throughput against PutItem), or None.
TARGETS: dict[str, tuple[float, float] | None] = {
    "counter": None,
    "coalesced": (1.15, 1 / 1.15),
    "blocks": (1.15, 1 / 1.15),
    "gapless": None,
    "collection": None,
}

Insert = Callable[[int], object]


@dataclass
class Side:
    """What one side of one round measured."""

    items: int
    seconds: float
    writes: int

    @property
    def rate(self) -> float:
        return self.items / self.seconds


def order(n: int) -> dict[str, Any]:
    """The item a user inserts (the key apart)."""
    return {"customer": f"customer-{n % 97}", "total": n * 7 % 1000, "note": "x" * 60}


def typed(item: dict[str, Any], **key: str) -> dict[str, Any]:
    """``item`` with ``key`` (string attributes) in DynamoDB's typed form."""
    out: dict[str, Any] = {name: {"S": value} for name, value in key.items()}
    for name, value in item.items():
        out[name] = {"N": str(value)} if isinstance(value, int) else {"S": value}
    return out


def bare(kind: str, client: DynamoDBClient, table: str) -> Insert:
    """What a user writes without ids: one PutItem under a key of their own."""
    if kind == "collection":

        def put_sorted(n: int) -> None:
            item = typed(order(n), pk=f"project{n % COLLECTIONS}")
            item["sk"] = {"N": str(uuid.uuid4().int % 10**15)}
            client.put_item(TableName=table, Item=item)

        return put_sorted

    def put(n: int) -> None:
        client.put_item(TableName=table, Item=typed(order(n), pk=f"order#{uuid.uuid4().hex}"))

    return put


def with_ids(kind: str, client: DynamoDBClient, table: str) -> Insert:
    """The id and the item's own write, as a user writes them with ``kind``."""
    if kind == "gapless":
        sequence = GaplessSequence(client, table, "orders", id_attribute="pk", prefix="order#")
        return lambda n: sequence.put(order(n))
    if kind == "collection":
        collection = CollectionSequence(client, table)
        return lambda n: collection.put(f"project{n % COLLECTIONS}", order(n))
    counter = AtomicCounter(client, table, "orders", group_commit=kind == "coalesced")
    next_id: Callable[[], int] = counter.next
    if kind == "blocks":
        next_id = BlockAllocator(counter, 100).next

    def insert(n: int) -> int:
        number = next_id()
        client.put_item(TableName=table, Item=typed(order(n), pk=f"order#{number:010d}"))
        return number

    return insert


def run_threads(insert: Insert, count: int) -> float:
    """:data:`THREADS` threads inserting ``count`` items between them; the seconds it took."""
    failures: list[BaseException] = []

    def writer(share: range) -> None:
        try:
            for n in share:
                insert(n)
        except BaseException as exc:  # (reported below, after the others finish)
            failures.append(exc)

    threads = [
        threading.Thread(target=writer, args=(range(w, count, THREADS),)) for w in range(THREADS)
    ]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return time.perf_counter() - started


def side(make: Callable[[], Insert], count: int, proxy: CountingProxy | None = None) -> Side:
    """One side of a round: the insert made (and warmed up by one insert: the table's
    description, connections), then ``count`` more; with a ``proxy``, every write request
    counted."""
    if proxy is not None:
        proxy.reset()
    insert = make()
    insert(-1)
    seconds = run_threads(insert, count)
    return Side(count + 1, seconds, proxy.writes() if proxy is not None else 0)


@dataclass
class Row:
    """A strategy's timed rounds, each (PutItem's side, the side with ids), and its counted
    round (the same, through the counting proxy)."""

    kind: str
    rounds: list[tuple[Side, Side]]
    counted: tuple[Side, Side]

    @property
    def ratio(self) -> float:
        return statistics.median(ours.rate / put.rate for put, ours in self.rounds)

    @property
    def writes_per_item(self) -> float:
        return self.counted[1].writes / self.counted[1].items

    @property
    def put_writes_per_item(self) -> float:
        return self.counted[0].writes / self.counted[0].items


def measure_row(kind: str, endpoint: str, factory: TableFactory, rounds: int, count: int) -> Row:
    """The rounds of one strategy on one table: timed, alternating which side goes first; then
    counted."""
    keys = [("pk", "S"), ("sk", "N")] if kind == "collection" else [("pk", "S")]
    table = factory(*keys)
    client = make_client(endpoint_url=endpoint, max_attempts=10)
    measured: list[tuple[Side, Side]] = []

    def put() -> Insert:
        return bare(kind, client, table)

    def ids() -> Insert:
        return with_ids(kind, client, table)

    half = count // 2
    for n in range(rounds):
        # put, ids, ids, put (then ids, put, put, ids): a load that drifts during the round
        # weighs on both sides alike.
        a, b = (put, ids) if n % 2 == 0 else (ids, put)
        first = [side(a, half), side(b, half)]
        second = [side(b, half), side(a, half)]
        pairs = list(zip(first, reversed(second), strict=True))  # (a's sides, b's sides)
        joined = [Side(x.items + y.items, x.seconds + y.seconds, 0) for x, y in pairs]
        measured.append((joined[0], joined[1]) if a is put else (joined[1], joined[0]))
    with CountingProxy(endpoint) as proxy:
        # (put() and ids() use this client from now on)
        client = make_client(endpoint_url=proxy.endpoint_url, max_attempts=10)
        counted = (side(put, count, proxy), side(ids, count, proxy))
    factory.delete_all()
    return Row(kind, measured, counted)


def insert_rows(
    endpoint: str, factory: TableFactory, *, quick: bool, kinds: list[str]
) -> list[str]:
    """Print the whole-insert rows of ``kinds``; the rows whose targets were missed."""
    if not kinds:
        return []
    count = max(200, ITEMS // 10) if quick else ITEMS
    print(
        f"\nwhole inserts: the id and the item's own write, against a bare PutItem of the same "
        f"items; {THREADS} threads, {count} items a side, median of {ROUNDS} alternating rounds; "
        "write requests as a counting proxy sees them (one more round through it)\n"
        f"{'strategy':<11} {'PutItem/s':>10} {'ids/s':>8} {'ratio':>6} {'writes/item':>12} "
        f"{'PutItem':>8}  target"
    )
    missed: list[str] = []
    for kind in kinds:
        row = measure_row(kind, endpoint, factory, ROUNDS, count)
        put_rate = statistics.median(p.rate for p, _ in row.rounds)
        our_rate = statistics.median(o.rate for _, o in row.rounds)
        target = TARGETS[kind]
        verdict = ""
        if target is not None:
            most_writes, least_ratio = target
            met = row.writes_per_item <= most_writes and row.ratio >= least_ratio
            if not met:
                missed.append(
                    f"whole insert {kind}: {row.writes_per_item:.3f} writes/item (at most "
                    f"{most_writes:g}), {row.ratio:.2f}x PutItem (at least {least_ratio:.2f})"
                )
            verdict = f"writes<={most_writes:g}, ratio>={least_ratio:.2f} (1/1.15): " + (
                "ok" if met else "MISSED"
            )
        print(
            f"{kind:<11} {put_rate:>10.0f} {our_rate:>8.0f} {row.ratio:>5.2f}x "
            f"{row.writes_per_item:>12.3f} {row.put_writes_per_item:>8.3f}  {verdict}",
            flush=True,
        )
    return missed
