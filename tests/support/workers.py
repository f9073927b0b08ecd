"""Writers for the concurrency tests: the same code runs as threads and as spawned processes, on
either driver (``async``: the threads' calls are concurrent tasks of one event loop). Each call
is recorded (start, end, ids) in a :class:`~ddbkeys.testing.History` for the history checker."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from ddbkeys._connect import make_client
from ddbkeys._demo_ids import NaiveReadThenWrite
from ddbkeys._retry import RetryPolicy
from ddbkeys.testing import History, Operation
from tests.support.drivers import Driver

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

COLLECTION = "projectA"


@dataclass(frozen=True)
class Job:
    """One writer's work: ``count`` ids from strategy ``kind`` on ``table``, with ``threads``."""

    kind: str
    endpoint_url: str
    table: str
    count: int
    threads: int
    tag: str
    max_attempts: int = 10
    driver: str = "sync"


#: The public names each kind is built from (what the async driver must have).
NEEDS = {
    "counter": ("AtomicCounter",),
    "counter-coalesce": ("AtomicCounter",),
    "counter-exact": ("AtomicCounter",),
    "counter-exact-alone": ("AtomicCounter",),
    "blocks": ("AtomicCounter", "BlockAllocator"),
    "collection": ("CollectionSequence",),
    "collection-nr": ("CollectionSequence",),
    "gapless": ("GaplessSequence",),
    "gapless-key": ("GaplessSequence",),
}


def make_writer(
    kind: str, client: DynamoDBClient, table: str, driver: Driver | None = None
) -> Callable[[str], int]:
    """A function that mints one id (writing an item tagged ``tag`` where the strategy writes)."""
    driver = driver or Driver("sync")
    make = driver.make
    retry = RetryPolicy(max_attempts=60)
    if kind == "counter":
        counter = make("AtomicCounter", client, table, "orders", retry=retry)
        return lambda _tag: int(counter.next())
    if kind.startswith("counter-"):
        coalesce = kind in ("counter-coalesce", "counter-exact")
        idempotent = kind.startswith("counter-exact")
        counter = make(
            "AtomicCounter",
            client,
            table,
            "orders",
            group_commit=coalesce,
            idempotent=idempotent,
            **({} if idempotent else {"retry": retry}),
        )
        return lambda _tag: int(counter.next())
    if kind == "blocks":
        blocks = make(
            "BlockAllocator", make("AtomicCounter", client, table, "blocks", retry=retry), 10
        )
        return lambda _tag: int(blocks.next())
    if kind in ("collection", "collection-nr"):
        sequence = make(
            "CollectionSequence", client, table, retry=retry, never_reuse=kind == "collection-nr"
        )
        return lambda tag: int(sequence.put(COLLECTION, {"tag": tag}))
    if kind == "gapless":
        gapless = make("GaplessSequence", client, table, "users", retry=retry)
        return lambda tag: int(gapless.put({"pk": f"user#{tag}", "tag": tag}))
    if kind == "gapless-key":
        # The id is the partition key (a zero-padded string): racing writers take the same key.
        # (16 such writers race for each id, 5% of responses lost and 5% throttled: a put
        # may lose many races in a row; once in CI one lost them past the default 60 s)
        keyed = make(
            "GaplessSequence", client, table, "users", id_attribute="pk", retry=retry, deadline=180
        )
        return lambda tag: int(keyed.put({"tag": tag}))
    if kind == "unsafe":
        unsafe = NaiveReadThenWrite(client, table)
        return lambda tag: unsafe.put({"pk": f"user#{tag}"})
    raise ValueError(kind)


#: Kinds whose every thread makes its own strategy object (independent writers, as separate
#: services would be), rather than sharing one (and its group commit).
INDEPENDENT = frozenset({"gapless-key", "counter-exact-alone"})


#: The strategy (its class name, for the promises) each kind is.
STRATEGY = {kind: NEEDS[kind][-1] for kind in NEEDS}


def scope_of(kind: str) -> str:
    """Where a kind's promise is scoped: its collection, or this process's one allocator."""
    if kind.startswith("collection"):
        return COLLECTION
    return f"allocator of process {os.getpid()}" if kind == "blocks" else ""


def run_job(job: Job) -> list[Operation]:
    """Run one job (in this process, with its own client) and return its calls (start, end and
    the id each got). With the async driver, one event loop runs every writer: the threads'
    calls are its tasks."""
    client = make_client(endpoint_url=job.endpoint_url, max_attempts=job.max_attempts)
    tags = [f"{job.tag}-{i}" for i in range(job.count)]
    history = History(scope_of(job.kind))
    with Driver(job.driver) as driver:
        if job.kind in INDEPENDENT:
            shares = [tags[i :: job.threads] for i in range(job.threads)]

            def run_alone(share: list[str]) -> None:
                write = make_writer(job.kind, client, job.table, driver)
                for tag in share:
                    history.call(partial(write, tag))

            with ThreadPoolExecutor(job.threads) as pool:
                list(pool.map(run_alone, shares))
        else:
            write = make_writer(job.kind, client, job.table, driver)
            with ThreadPoolExecutor(job.threads) as pool:
                list(pool.map(lambda tag: history.call(partial(write, tag)), tags))
    return history.operations


def ids_of(operations: list[Operation]) -> list[int]:
    """The ids the calls got."""
    return [i for op in operations for i in op.ids]
