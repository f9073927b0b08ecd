"""The demo's first half, as a library: mint ids with every strategy from concurrent writers
while a fault proxy loses responses, and audit what each promised (see :mod:`ddbkeys._demo`)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage, write_units
from ddbkeys._connect import make_client
from ddbkeys._demo_keys import Progress
from ddbkeys._retry import RetryPolicy
from ddbkeys.ids import (
    AtomicCounter,
    BlockAllocator,
    CollectionSequence,
    GaplessSequence,
    audit_attribute,
    audit_collection,
    audit_ids,
)
from ddbkeys.testing._proxy import Fault, FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["PROMISES", "IdsResult", "NaiveReadThenWrite", "Sizes", "run_ids"]


WRITES = frozenset({"UpdateItem", "PutItem", "TransactWriteItems"})

PROMISES = {
    "counter": "unique; may skip",
    "coalesced": "shared writes; may skip",
    "idempotent": "no skip on lost answers",
    "blocks": "unique; may skip",
    "blocks-adaptive": "no skip: lost answers, restart",
    "collection": "gapless per collection",
    "gapless": "gapless, with the item",
    "naive": "none (read, then write)",
}


@dataclass(frozen=True)
class Sizes:
    """How much work each part of the demo does."""

    writers: int = 16
    counter: int = 800
    coalesced: int = 800
    idempotent: int = 800
    blocks: int = 5000
    blocks_adaptive: int = 20000
    block_size: int = 100
    collection: int = 400
    gapless: int = 800
    naive: int = 200
    keys: int = 1000
    changes: int = 80  # collections added or emptied while the follower keeps the index
    lose_response: float = 0.05
    throttle: float = 0.02

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            writers=8,
            counter=80,
            coalesced=80,
            idempotent=80,
            blocks=1000,
            blocks_adaptive=4000,
            collection=40,
            gapless=80,
            naive=40,
            keys=150,
            changes=30,
        )


@dataclass
class IdsResult:
    """What one strategy delivered under concurrent writers and injected faults."""

    strategy: str
    promise: str
    writers: int
    ids: int
    seconds: float
    gaps: int
    duplicates: int
    retries: int
    lost_responses: int
    throttled: int
    billed_write_units: float
    kept: bool
    #: What the row shows beside the table's columns (blocks-adaptive: how the blocks grew,
    #: what close() handed back and where the restart went on).
    note: str = ""

    @property
    def ids_per_second(self) -> float:
        return self.ids / self.seconds if self.seconds else 0.0

    @property
    def write_units_per_id(self) -> float:
        return self.billed_write_units / self.ids if self.ids else 0.0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ids_per_second"] = round(self.ids_per_second, 1)
        data["write_units_per_id"] = round(self.write_units_per_id, 3)
        return data


class NaiveReadThenWrite:
    """The transactional optimistic lock article's "bad solution number 1", kept for contrast
    (and as the tests' negative control): read the last id, write the item with the next one,
    then store that id. Racing writers read the same last id and give it out twice. Never use
    this."""

    def __init__(self, client: DynamoDBClient, table: str, usage: Usage | None = None) -> None:
        self.client = client
        self.table = table
        self.usage = usage or Usage()

    def put(self, item: dict[str, Any]) -> int:
        got = self.client.get_item(
            TableName=self.table,
            Key={"pk": {"S": "naive"}},
            ConsistentRead=True,
            ReturnConsumedCapacity="TOTAL",
        )
        self.usage.add(got, write=False, items=1)
        new = int(got.get("Item", {}).get("last_id", {}).get("N", "0")) + 1
        written: Any = {"pk": {"S": str(item["pk"])}, "id": {"N": str(new)}}
        for key, value in item.items():
            if key != "pk":
                written[key] = {"S": str(value)}
        put = self.client.put_item(TableName=self.table, Item=written)
        self.usage.add(put, write=True, billed=write_units([written]))
        counter: Any = {"pk": {"S": "naive"}, "last_id": {"N": str(new)}}
        update = self.client.update_item(
            TableName=self.table,
            Key={"pk": {"S": "naive"}},
            UpdateExpression="SET last_id = :n",
            ExpressionAttributeValues={":n": {"N": str(new)}},
        )
        self.usage.add(update, write=True, billed=write_units([counter]))
        return new


# --- ids ----------------------------------------------------------------------------------


def _minter(
    kind: str, client: DynamoDBClient, table: str, sizes: Sizes
) -> tuple[Callable[[str], int], Usage]:
    """A function minting one id (writing an item tagged ``tag`` where the strategy writes),
    and the strategy's usage."""
    retry = RetryPolicy(max_attempts=200)
    if kind == "counter":
        counter = AtomicCounter(client, table, "orders", retry=retry)
        return lambda _tag: counter.next(), counter.usage
    if kind in ("coalesced", "idempotent"):
        # The same counter, its concurrent calls sharing writes (and, idempotent, each write a
        # transaction with a token: a lost answer retried skips nothing).
        shared = AtomicCounter(
            client, table, "orders", group_commit=True, idempotent=kind == "idempotent"
        )
        return lambda _tag: shared.next(), shared.usage
    if kind == "blocks":
        tickets = AtomicCounter(client, table, "tickets", retry=retry)
        blocks = BlockAllocator(tickets, sizes.block_size)
        return lambda _tag: blocks.next(), tickets.usage
    if kind == "collection":
        sequence = CollectionSequence(client, table)
        return lambda tag: sequence.put("projectA", {"tag": tag}), sequence.usage
    if kind == "gapless":
        gapless = GaplessSequence(client, table, "users", retry=retry)
        return lambda tag: gapless.put({"pk": f"user#{tag}"}), gapless.usage
    naive = NaiveReadThenWrite(client, table)
    return lambda tag: naive.put({"pk": f"user#{tag}"}), naive.usage


def _delivered(
    kind: str, client: DynamoDBClient, table: str, handed_out: list[int]
) -> tuple[int, int]:
    """(gaps, duplicates), judged where the promise lives: in the table for the strategies that
    write the item with its id, in the ids callers got for the others."""
    if kind == "collection":
        report = audit_collection(client, table, "projectA")
    elif kind == "gapless":
        report = audit_attribute(client, table, "id")
    else:
        report = audit_ids(handed_out)
    return report.missing, sum(n - 1 for n in report.duplicates.values())


def _mint(
    kind: str,
    count: int,
    client: DynamoDBClient,
    table: str,
    sizes: Sizes,
    progress: Progress | None,
) -> tuple[list[int], float, Usage]:
    """Mint ``count`` ids from ``sizes.writers`` threads: (ids got, seconds, usage)."""
    mint, usage = _minter(kind, client, table, sizes)
    started = time.perf_counter()
    handed_out = _in_threads(mint, range(count), count, sizes.writers, f"ids: {kind}", progress)
    return handed_out, time.perf_counter() - started, usage


def _in_threads(
    mint: Callable[[str], int],
    calls: range,
    total: int,
    writers: int,
    phase: str,
    progress: Progress | None,
) -> list[int]:
    """The ids ``mint`` gives for each of ``calls`` (numbers out of ``total``, for progress),
    from ``writers`` threads."""
    tag = uuid.uuid4().hex[:6]
    lock = threading.Lock()
    done = calls.start

    def one(i: int) -> int:
        nonlocal done
        value = mint(f"{tag}-{i}")
        with lock:
            done += 1
            if progress is not None and (done % 10 == 0 or done == total):
                progress(phase, done, total)
        return value

    if progress is not None and not calls.start:
        progress(phase, 0, total)
    with ThreadPoolExecutor(writers) as pool:
        return list(pool.map(one, calls))


def _next_of(blocks: BlockAllocator) -> Callable[[str], int]:
    return lambda _tag: blocks.next()


def _mint_restarted(
    count: int, client: DynamoDBClient, table: str, sizes: Sizes, progress: Progress | None
) -> tuple[list[int], float, Usage, str, bool]:
    """Blocks whose size adapts (from ``sizes.block_size`` up to 1,000 times that), reserved
    on an idempotent counter, closed halfway and restarted as a new allocator on the same
    counter: (ids got, seconds, usage, a
    note on the blocks and the restart, whether each close left the counter at the last id
    handed out, so that the restart wasted nothing)."""
    # Idempotent reservations: a lost answer retried skips no block (grown blocks are big).
    counter = AtomicCounter(client, table, "tickets", idempotent=True)
    phase, half, started = "ids: blocks-adaptive", count // 2, time.perf_counter()
    handed_out: list[int] = []
    notes, exact = [], True
    for calls in (range(half), range(half, count)):
        blocks = BlockAllocator(counter, sizes.block_size, max_block_size=1000 * sizes.block_size)
        with blocks:
            mint = _next_of(blocks)
            got = _in_threads(mint, calls, count, sizes.writers, phase, progress)
        closed = blocks.close()  # (the with block closed it: its report again)
        before, handed_out = handed_out, handed_out + got
        left_at = counter.current()
        exact = exact and left_at == max(handed_out) and min(got) > max(before or [0])
        notes.append(
            (f"restarted at {min(got):,}; " if before else "")
            + f"blocks grew from {sizes.block_size:,} to {blocks.block_size:,} ids; close() "
            f"handed back the {closed.handed_back:,} ids held unused, leaving the counter at "
            f"{left_at:,}" + (" (the last id given out)" if left_at == max(handed_out) else "")
        )
    return handed_out, time.perf_counter() - started, counter.usage, "; ".join(notes), exact


def run_ids(
    endpoint_url: str,
    factory: TableFactory,
    *,
    sizes: Sizes | None = None,
    faults: bool = True,
    kinds: Sequence[str] = (
        "counter",
        "coalesced",
        "idempotent",
        "blocks",
        "blocks-adaptive",
        "collection",
        "gapless",
        "naive",
    ),
    progress: Progress | None = None,
    region: str | None = None,
    profile: str | None = None,
) -> list[IdsResult]:
    """Mint ids with each strategy in ``kinds`` from ``sizes.writers`` threads, through a fault
    proxy losing ``sizes.lose_response`` of the write responses and throttling
    ``sizes.throttle`` of the writes (when ``faults``), and check what was delivered."""
    sizes = sizes or Sizes()
    results: list[IdsResult] = []
    proxy = FaultProxy(endpoint_url).start() if faults else None
    try:
        for kind in kinds:
            count: int = getattr(sizes, kind.replace("-", "_"))
            table = (
                factory(("pk", "S"), ("sk", "N")) if kind == "collection" else factory(("pk", "S"))
            )
            if proxy is not None:
                proxy.set_faults(
                    Faults(
                        lose_response=sizes.lose_response,
                        throttle=sizes.throttle,
                        operations=WRITES,
                        seed=len(results) + 1,
                        # Every strategy meets a lost answer, from its first write.
                        script=[Fault.LOSE_RESPONSE],
                        script_operations=WRITES,
                    )
                )
                proxy.reset()
            url = proxy.endpoint_url if proxy is not None else endpoint_url
            client = make_client(url, region, profile, max_attempts=10)
            note, exact = "", True
            if kind == "blocks-adaptive":
                handed_out, seconds, usage, note, exact = _mint_restarted(
                    count, client, table, sizes, progress
                )
            else:
                handed_out, seconds, usage = _mint(kind, count, client, table, sizes, progress)
            counts = proxy.counts if proxy is not None else {}
            gaps, duplicates = _delivered(kind, client, table, handed_out)
            kept = duplicates == 0 and exact
            kept = kept and (kind in ("counter", "coalesced", "blocks") or gaps == 0)
            if kind in ("collection", "gapless", "idempotent", "blocks-adaptive"):
                # ... and the callers were told exactly 1 to count (the ids the table holds).
                kept = kept and sorted(handed_out) == list(range(1, count + 1))
            results.append(
                IdsResult(
                    strategy=kind,
                    promise=PROMISES[kind],
                    writers=sizes.writers,
                    ids=count,
                    seconds=seconds,
                    gaps=gaps,
                    duplicates=duplicates,
                    retries=usage.retries,
                    lost_responses=int(counts.get("lose_response", 0)),
                    throttled=int(counts.get("throttle", 0)),
                    billed_write_units=usage.billed_write_units,
                    kept=kept if kind != "naive" else False,  # it promises nothing
                    note=note,
                )
            )
    finally:
        if proxy is not None:
            proxy.stop()
    return results
