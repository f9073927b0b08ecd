"""The demo's second half: list a sample table's distinct partition keys with every method, then
show a marker index kept right from the table's stream while writers add and remove
collections, and ``auto`` declining the index until it can prove it complete.

``ddbkeys._demo.run_demo`` runs it; the tests call the same functions.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ddbkeys.partition_keys import (
    MarkerIndex,
    StreamFollower,
    distinct_partition_keys,
)
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._index.stream_setup import enable_stream

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

__all__ = [
    "KeysResult",
    "MaintainedResult",
    "Progress",
    "followed",
    "load_items",
    "run_maintained",
    "run_partition_keys",
    "sample_collections",
]

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: called as work advances (from several threads)."""


@dataclass
class KeysResult:
    """What one listing method read to find the distinct partition keys."""

    method: str
    keys: int
    requests: int
    items_read: int
    read_units: float
    seconds: float
    correct: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProvenListing:
    """One ``auto`` listing of the maintained table, and what proving the index cost."""

    method: str
    keys: int
    correct: bool  # its key set equals the table's, by a full consistent scan
    read_units: float
    records: int  # stream records read past the maintainer's positions
    rechecked: int  # collections re-checked with a consistent Query


@dataclass
class MaintainedResult:
    """The marker index kept from the stream while writers changed the table."""

    refused_reason: str  # why auto did not use the backfilled index without a maintainer
    added: int  # collections the writers created
    emptied: int  # collections whose every item the writers deleted
    records: int  # stream records the follower handled
    marked: int
    unmarked: int
    margin: float  # the replay margin of the listings below
    right_after: ProvenListing  # auto, right after the writers stopped
    settled: ProvenListing  # auto, once the follower caught up and the margin passed
    healthy: bool  # index verify

    @property
    def ok(self) -> bool:
        return (
            self.right_after.correct
            and self.settled.correct
            and self.healthy
            and self.settled.method == "index"
        )

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


#: The replay margin of the demo's listings. DynamoDB Local shows a write in its index and its
#: stream at once; on the service, keep the default (60 s).
DEMO_MARGIN = 3.0


def load_items(
    client: DynamoDBClient, table: str, items: Sequence[dict[str, Any]], *, threads: int = 8
) -> None:
    """Write ``items`` (DynamoDB JSON) with BatchWriteItem, 25 at a time, resending whatever
    comes back unprocessed (with a short, growing pause)."""
    batches = [list(items[i : i + 25]) for i in range(0, len(items), 25)]

    def write(batch: list[dict[str, Any]]) -> None:
        request: Any = {table: [{"PutRequest": {"Item": item}} for item in batch]}
        pause = 0.01
        while request:
            request = client.batch_write_item(RequestItems=request).get("UnprocessedItems")
            if request:
                time.sleep(pause)
                pause = min(pause * 2, 1.0)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(write, batches))


def sample_collections(keys: int) -> list[tuple[str, int]]:
    """A customer-orders shape: most customers have 1 to 3 orders, one in five has 10 to 40,
    and a few have hundreds. Deterministic."""
    sizes: list[tuple[str, int]] = []
    for k in range(keys):
        if k % 100 == 99:
            n = 300 + (k * 37) % 200
        elif k % 5 == 0:
            n = 10 + (k * 7) % 31
        else:
            n = 1 + k % 3
        sizes.append((f"customer#{k:05}", n))
    return sizes


def _order(pk: str, i: int) -> dict[str, Any]:
    return {
        "pk": {"S": pk},
        "sk": {"N": str(i)},
        "total": {"N": str(i * 3 + 1)},
        "p": {"S": "x" * 120},
    }


def run_partition_keys(
    client: DynamoDBClient,
    factory: TableFactory,
    *,
    keys: int = 1000,
    progress: Progress | None = None,
) -> tuple[str, str, int, dict[str, float], list[KeysResult]]:
    """Load a sample table of ``keys`` collections, then list its partition keys with every
    method (the marker index is created and backfilled on the way). Returns (the table, the
    state table, items in the table, what setting up the index cost, one result per method)."""
    table = factory(("pk", "S"), ("sk", "N"))
    state_table = factory(("id", "S"))  # the index's record: the demo's own, deleted after it
    collections = sample_collections(keys)
    items = [_order(pk, i) for pk, n in collections for i in range(1, n + 1)]
    if progress is not None:
        progress("load the sample table", 0, len(items))
    for start in range(0, len(items), 2000):
        load_items(client, table, items[start : start + 2000])
        if progress is not None:
            progress("load the sample table", min(start + 2000, len(items)), len(items))
    expected = {pk for pk, _ in collections}
    results: list[KeysResult] = []

    def listing(method: str, segments: int = 1) -> None:
        parallel = f" x{segments}" if segments > 1 else ""
        phase = f"keys: {method}{parallel}"
        if progress is not None:
            progress(phase, 0, len(expected))
        started = time.perf_counter()
        found: list[Any] = []
        run = distinct_partition_keys(
            client,
            table,
            method,
            segments=segments,
            state_table=state_table,
            trust_index=method == "index",  # just backfilled, nothing writing: its cost alone
        )
        for key in run:
            found.append(key)
            if progress is not None and len(found) % 25 == 0:
                progress(phase, len(found), len(expected))
        if progress is not None:
            progress(phase, len(found), len(expected))
        name = method if method != "auto" else f"auto ({run.method_name})"
        if method == "index":
            name = "index (read as it is)"
        if method == "auto" and run.index_trusted is False:
            name = f"auto ({run.method_name}: index not proven)"
        usage = run.usage
        results.append(
            KeysResult(
                method=name + parallel,
                keys=len(found),
                requests=usage.requests,
                items_read=usage.items,
                read_units=usage.read_units,
                seconds=time.perf_counter() - started,
                correct=len(found) == len(expected) and set(found) == expected,
            )
        )

    for method in ("scan", "skip", "skip-pages", "auto"):
        listing(method)
    marker = MarkerIndex(client, table)
    if progress is not None:
        progress("create and backfill the marker index", 0, len(expected))
    marker.create()
    # The read mode (one read of the table and its index): the stream is off, so its window
    # cannot be read and it records that it does not count (no maintainer runs yet anyway).
    filled = marker.backfill(
        progress=(lambda n: progress("create and backfill the marker index", n, len(expected)))
        if progress is not None
        else None,
        state_table=state_table,
        mode="read",
        replay_margin=DEMO_MARGIN,
    )
    setup = {**marker.usage.snapshot(), "rechecked": float(filled.rechecked)}
    for method, segments in (("index", 1), ("auto", 1), ("auto", 4)):
        listing(method, segments)
    return table, state_table, len(items), setup, results


def non_empty_collections(client: DynamoDBClient, table: str) -> set[str]:
    """The non-empty collections, by a full consistent scan (markers left out)."""
    found: set[str] = set()
    request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**request)
        found.update(str(i["pk"]["S"]) for i in page["Items"] if "ddbkeys_pk" not in i)
        if "LastEvaluatedKey" not in page:
            return found
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def run_maintained(
    client: DynamoDBClient,
    table: str,
    state_table: str,
    *,
    keys: int,
    changes: int = 60,
    writers: int = 4,
    progress: Progress | None = None,
) -> MaintainedResult:
    """On the sample table of ``keys`` collections, whose index was backfilled with no
    maintainer: ask ``auto`` (it refuses the index, and says why); turn the stream on, start a
    follower, backfill again; let ``writers`` threads add and empty ``changes`` collections
    while the follower runs; list with ``auto`` right after (the index, proven by replaying
    the stream past the follower's positions), and again once the follower caught up and the
    margin passed (the index, nothing to replay); check each by a consistent scan."""
    refused = distinct_partition_keys(client, table, state_table=state_table)
    reason = refused.method_reason
    list(refused)
    phase = "keys: a follower keeps the index"
    if progress is not None:
        progress(phase, 0, changes)
    with followed(client, table, state_table) as (index, follower, settle):
        index.backfill(state_table=state_table, replay_margin=DEMO_MARGIN)
        settle()
        # Small collections to empty (their items one by one), new ones to add (1 to 3 items).
        small = [pk for pk, n in sample_collections(keys) if n <= 3]
        rng = random.Random(7)
        to_empty = rng.sample(small, min(changes // 2, len(small)))
        to_add = [f"new#{n:04}" for n in range(changes - len(to_empty))]
        work = [("empty", pk) for pk in to_empty] + [("add", pk) for pk in to_add]
        rng.shuffle(work)
        done = [0]
        lock = threading.Lock()

        def change(job: tuple[str, str]) -> None:
            kind, pk = job
            for i in range(1, 4):
                if kind == "add" and i <= 1 + int(pk[-4:]) % 3:
                    client.put_item(TableName=table, Item=_order(pk, i))
                elif kind == "empty":
                    client.delete_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"N": str(i)}})
            with lock:
                done[0] += 1
                if progress is not None:
                    progress(phase, done[0], len(work))

        with ThreadPoolExecutor(writers) as pool:
            list(pool.map(change, work))
        right_after = _proven(client, table, state_table)
        settle()
        settled = _proven(client, table, state_table)
    return MaintainedResult(
        refused_reason=reason,
        added=len(to_add),
        emptied=len(to_empty),
        records=follower.report.records,
        marked=follower.report.marked,
        unmarked=follower.report.unmarked,
        margin=DEMO_MARGIN,
        right_after=right_after,
        settled=settled,
        healthy=index.verify(state_table=state_table).healthy,
    )


def _proven(client: DynamoDBClient, table: str, state_table: str) -> ProvenListing:
    listing = distinct_partition_keys(
        client, table, state_table=state_table, replay_margin=DEMO_MARGIN
    )
    found = list(listing)
    truth = non_empty_collections(client, table)
    replay = listing.replay
    return ProvenListing(
        method=listing.method_name,
        keys=len(found),
        correct=len(found) == len(truth) and set(map(str, found)) == truth,
        read_units=listing.usage.read_units,
        records=replay.records if replay is not None else 0,
        rechecked=replay.rechecked if replay is not None else 0,
    )


@contextmanager
def followed(
    client: DynamoDBClient, table: str, state_table: str
) -> Iterator[tuple[MarkerIndex, StreamFollower, Callable[[], None]]]:
    """Turn ``table``'s stream on and run a follower of it in a thread (stopped on leaving),
    once it has recorded its positions and the demo's margin has passed (so a backfill begun
    now counts). Gives the marker index, the follower, and ``settle()``, which waits until the
    follower has caught up after the call and the margin has passed since."""
    enable_stream(client, table)
    index = MarkerIndex(client, table)
    follower = StreamFollower(index, state_table=state_table, poll=0.1)
    stop = threading.Event()
    runner = threading.Thread(target=follower.run, args=(stop,), daemon=True)
    runner.start()
    store = StateStore(client, state_table)

    def settle() -> None:
        moment = time.time()
        _wait(lambda: (follower.report.caught_up_at or 0) > moment or not runner.is_alive())
        time.sleep(DEMO_MARGIN + 0.1)

    try:
        _wait(lambda: (state := store.load(table, index.name)) is not None and bool(state.shards))
        time.sleep(DEMO_MARGIN + 0.1)
        yield index, follower, settle
    finally:
        stop.set()
        runner.join(timeout=60)


def _wait(condition: Callable[[], bool], seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the demo's follower did not catch up within two minutes")
        time.sleep(0.1)
