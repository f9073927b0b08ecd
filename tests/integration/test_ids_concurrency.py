"""Every id strategy under parallel writers (threads, and processes), with and without faults,
checked on the exact set of ids and as histories (each call's start, end and ids, against the
strategy's promise: real-time order where it promises increasing ids), on both drivers (async:
the writers are tasks of one event loop in each process); and an unsafe variant, and a planted
reordering of a real history, that the checkers must catch."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys.ids import AtomicCounter, audit_attribute, audit_collection, audit_ids
from ddbkeys.testing import (
    Fault,
    FaultProxy,
    Faults,
    HistoryReport,
    HistoryViolation,
    Operation,
    check_history,
)
from ddbkeys.testing._tables import TableFactory
from tests.support.drivers import Driver
from tests.support.workers import COLLECTION, NEEDS, STRATEGY, Job, ids_of, run_job

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

KINDS = [
    "counter",
    "counter-coalesce",
    "counter-exact",
    "counter-exact-alone",
    "blocks",
    "collection",
    "collection-nr",
    "gapless",
    "gapless-key",
]
THREADS = 16
PER_THREAD = 25
PROCESSES = 4
PER_PROCESS = 60
WRITES = frozenset({"UpdateItem", "PutItem", "TransactWriteItems"})
# 5% of responses lost and 5% of requests throttled, seeded; the first writes are sure to be
# hit (group commit makes few, large writes, and a run must not pass by meeting no fault).
FAULTS = Faults(
    lose_response=0.05,
    throttle=0.05,
    seed=20261122,
    script=[Fault.LOSE_RESPONSE, Fault.THROTTLE, Fault.LOSE_RESPONSE],
    script_operations=WRITES,
)


def make_table(kind: str, factory: TableFactory) -> str:
    if kind.startswith("collection"):
        return factory(("pk", "S"), ("sk", "N"))
    return factory(("pk", "S"))


def tags_in(client: DynamoDBClient, table: str) -> Counter[str]:
    """How many items carry each tag (every written item has a unique tag)."""
    seen: Counter[str] = Counter()
    kwargs: dict[str, Any] = {"TableName": table, "ProjectionExpression": "tag"}
    while True:
        page = client.scan(**kwargs)
        seen.update(str(item["tag"]["S"]) for item in page["Items"] if "tag" in item)
        if "LastEvaluatedKey" not in page:
            return seen
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def check(
    kind: str,
    client: DynamoDBClient,
    table: str,
    ids: list[int],
    *,
    n: int,
    lost_counter_moves: int,
) -> None:
    """The promise of each strategy, on the exact ids it gave and the items it wrote."""
    report = audit_ids(ids)
    assert len(ids) == n
    assert report.duplicates == {}, f"{kind} gave ids out twice: {report.duplicates}"
    if kind == "counter":
        # Unique and increasing; the only gaps are increments whose response was lost.
        assert report.last == n + lost_counter_moves
        assert report.missing == lost_counter_moves
        assert AtomicCounter(client, table, "orders").current() == report.last
    elif kind == "counter-coalesce":
        # Unique; the only gaps are the runs of coalesced writes whose response was lost (at
        # least one id each, and none without a lost response).
        assert report.missing >= lost_counter_moves
        assert (report.missing == 0) == (lost_counter_moves == 0)
        assert report.last == n + report.missing
        assert AtomicCounter(client, table, "orders").current() == report.last
    elif kind.startswith("counter-exact"):
        # Idempotent: no gap even where responses were lost.
        assert sorted(ids) == list(range(1, n + 1)), f"{kind} skipped ids: {report.gaps}"
        assert AtomicCounter(client, table, "orders").current() == n
    elif kind == "blocks":
        assert report.first is not None and report.first >= 1
        assert AtomicCounter(client, table, "blocks").current() >= report.last  # type: ignore[operator]
    else:
        assert sorted(ids) == list(range(1, n + 1)), f"{kind} is not gapless: {report.gaps}"
        if kind == "gapless":
            stored = audit_attribute(client, table, "id")
        elif kind == "gapless-key":
            stored = audit_attribute(client, table, "pk")  # the counter item is skipped
            assert stored.not_numbers == 0
        else:
            stored = audit_collection(client, table, COLLECTION)
        assert stored.ok and stored.count == n and stored.last == n
        tags = tags_in(client, table)
        assert len(tags) == n and set(tags.values()) == {1}, "an item was written twice"


def run_threads(kind: str, endpoint: str, table: str, driver: str = "sync") -> list[Operation]:
    return run_job(Job(kind, endpoint, table, THREADS * PER_THREAD, THREADS, "t", driver=driver))


def run_processes(kind: str, endpoint: str, table: str, driver: str = "sync") -> list[Operation]:
    jobs = [
        Job(kind, endpoint, table, PER_PROCESS, 4, f"p{i}", driver=driver) for i in range(PROCESSES)
    ]
    # Forked from a server that has only imported the workers' module (no client, no object of
    # ddbkeys): each process builds its own, as a fleet's do, without paying the imports again
    # (with "spawn": ~1 s of CPU a process, 144 processes in this module).
    forked = multiprocessing.get_context("forkserver")
    forked.set_forkserver_preload(["tests.support.workers"])
    with ProcessPoolExecutor(PROCESSES, mp_context=forked) as pool:
        return [op for ops in pool.map(run_job, jobs) for op in ops]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["threads", "processes"])
def test_parallel_writers(
    driver: Driver,
    kind: str,
    how: str,
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    histories: Callable[..., HistoryReport],
) -> None:
    driver.require(*NEEDS[kind])
    table = make_table(kind, ddb_table_factory)
    runner = run_threads if how == "threads" else run_processes
    calls = runner(kind, ddb_endpoint_url, table, driver.name)
    n = THREADS * PER_THREAD if how == "threads" else PROCESSES * PER_PROCESS
    check(kind, ddb_client, table, ids_of(calls), n=n, lost_counter_moves=0)
    assert histories(STRATEGY[kind], calls).operations == n


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["threads", "processes"])
def test_parallel_writers_through_faults(
    driver: Driver,
    kind: str,
    how: str,
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    histories: Callable[..., HistoryReport],
) -> None:
    driver.require(*NEEDS[kind])
    table = make_table(kind, ddb_table_factory)
    fault_proxy.set_faults(FAULTS)
    runner = run_threads if how == "threads" else run_processes
    calls = runner(kind, fault_proxy.endpoint_url, table, driver.name)
    n = THREADS * PER_THREAD if how == "threads" else PROCESSES * PER_PROCESS
    # The faults really happened.
    assert fault_proxy.counts["lose_response"] > 0
    assert fault_proxy.counts["throttle"] > 0
    lost_updates = fault_proxy.counts_by_operation[("UpdateItem", "lose_response")]
    if kind.startswith("counter-exact"):
        # (Its writes are UpdateItems: their lost responses must cost no id.)
        assert lost_updates > 0
    check(kind, ddb_client, table, ids_of(calls), n=n, lost_counter_moves=lost_updates)
    assert histories(STRATEGY[kind], calls).operations == n


def test_unsafe_variant_is_caught(ddb_endpoint_url: str, ddb_table_factory: TableFactory) -> None:
    """The negative control: the same checker must find the unsafe variant's duplicates."""
    table = ddb_table_factory(("pk", "S"))
    ids = ids_of(run_job(Job("unsafe", ddb_endpoint_url, table, 200, THREADS, "u")))
    report = audit_ids(ids)
    assert report.duplicates, "the checker missed the duplicates of the unsafe variant"
    assert not report.ok
    with pytest.raises(AssertionError, match="gave ids out twice"):
        check("gapless", None, table, ids, n=200, lost_counter_moves=0)  # type: ignore[arg-type]


def test_a_planted_reordering_is_caught(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    """The history checker's negative control: a real history of the counter from two
    processes, with the ids of two calls ordered in real time (the first ended before the
    second began) swapped: the checker fails and names both calls."""
    table = make_table("counter", ddb_table_factory)
    calls = run_processes("counter", ddb_endpoint_url, table)
    check_history("AtomicCounter", calls)  # as recorded: it holds
    first = min(calls, key=lambda op: op.end)
    # the first call to end among those that began after it (no other call between them is
    # then out of order, so the checker names these two)
    second = min((op for op in calls if op.start > first.end), key=lambda op: op.end)
    swapped = {id(first): second.ids, id(second): first.ids}
    planted = [replace(op, ids=swapped.get(id(op), op.ids)) for op in calls]
    with pytest.raises(HistoryViolation) as raised:
        check_history("AtomicCounter", planted)
    message = str(raised.value)
    assert "increasing across processes" in message
    assert first.name in message and second.name in message, message
