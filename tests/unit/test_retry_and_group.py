"""The retry policy (bounded, jittered, injectable), the retry layer run by the sync driver, and
group commit, without a server."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import Contention, attempts
from ddbkeys._core.steps import Flow, update_item
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import DeadlineExceededError, ServiceError
from ddbkeys._retry import Deadline, RetriesExhaustedError, RetryPolicy, is_unavailable
from ddbkeys.ids import (
    AtomicCounter,
    AuditReport,
    CollectionSequence,
    GaplessSequence,
    GlobalTableError,
    audit_ids,
)
from ddbkeys.ids._base import GroupCommit
from ddbkeys.ids._group import AsyncGroupCommit
from ddbkeys.ids._link import read_description, refuse_global
from tests.support.hand import GLOBAL, description, drive


def recording_policy(waits: list[float], attempts: int = 5) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=attempts,
        base_delay=0.01,
        max_delay=0.1,
        sleep=waits.append,
        random=lambda: 0.5,
    )


def test_full_jitter_and_exponential_waits() -> None:
    policy = recording_policy([])
    assert [policy.full_jitter(n) for n in range(6)] == pytest.approx(
        [0.005, 0.01, 0.02, 0.04, 0.05, 0.05]
    )
    assert [policy.exponential(n) for n in range(5)] == pytest.approx(
        [0.0075, 0.015, 0.03, 0.06, 0.12]
    )
    # Waits after throttling grow to max_unavailable_delay (5 s), not max_delay (helper-86
    # F2: 25 attempts within 0.5 s each spanned 9 s of a 60 s deadline, under a 30 s throttle).
    assert RetryPolicy().exponential(20) == pytest.approx(3.75, abs=1.25)
    assert sum(RetryPolicy(random=lambda: 0.5).exponential(n) for n in range(24)) > 45
    short = replace(policy, max_unavailable_delay=0.1)
    assert [short.exponential(n) for n in range(5)] == pytest.approx(
        [0.0075, 0.015, 0.03, 0.06, 0.075]
    )


def test_bad_policies() -> None:
    with pytest.raises(ValueError, match="max_attempts must be at least 1"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="base_delay <= max_delay"):
        RetryPolicy(base_delay=1, max_delay=0.1)
    with pytest.raises(ValueError, match="base_delay <= max_unavailable_delay"):
        RetryPolicy(base_delay=0.5, max_unavailable_delay=0.1)


def test_unavailable_errors() -> None:
    throttled: Any = {
        "Error": {"Code": "ThrottlingException"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    server: Any = {"Error": {"Code": "Whatever"}, "ResponseMetadata": {"HTTPStatusCode": 503}}
    failed: Any = {
        "Error": {"Code": "ValidationException"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    assert is_unavailable(ClientError(throttled, "PutItem"))
    assert is_unavailable(ClientError(server, "PutItem"))
    assert is_unavailable(ConnectionClosedError(endpoint_url="http://x"))
    assert not is_unavailable(ClientError(failed, "PutItem"))


class StubClient:
    """A client whose update_item answers with ``answer(n)`` for the n-th request (0-based):
    an exception is raised, a value is the answer's ``outcome``."""

    def __init__(self, answer: Callable[[int], Any]) -> None:
        self.answer = answer
        self.sent = 0

    def update_item(self, **params: Any) -> Any:
        n, self.sent = self.sent, self.sent + 1
        outcome = self.answer(n)
        if isinstance(outcome, BaseException):
            raise outcome
        return {"outcome": outcome}


def run_attempts(
    answer: Callable[[int], Any],
    policy: RetryPolicy,
    *,
    what: str = "testing",
    deadline: float | None = None,
    usage: Usage | None = None,
) -> Any:
    """``attempts()`` of one UpdateItem per attempt (a lost race when the answer says so), run
    by the sync driver on a stub client."""
    usage = usage or Usage()

    def attempt(_: int) -> Flow[Any]:
        answer = yield update_item({"TableName": "some-table", "Key": {}})
        if answer["outcome"] == "lost":
            raise Contention
        return answer["outcome"]

    flow = attempts(
        attempt,
        what=what,
        table="some-table",
        policy=policy,
        deadline=Deadline(deadline, clock=policy.clock),
        usage=usage,
    )
    return SyncDriver(StubClient(answer), usage).run(flow)


def test_attempt_loop_is_bounded_and_waits_by_kind() -> None:
    waits: list[float] = []
    usage = Usage()
    calls: list[int] = []

    def always_lose(n: int) -> Any:
        calls.append(n)
        return "lost"

    lost = r"after 4 attempts \(RetryPolicy.max_attempts\): lost 4 races"
    with pytest.raises(RetriesExhaustedError, match=lost) as raised:
        run_attempts(always_lose, recording_policy(waits, attempts=4), usage=usage)
    assert calls == [0, 1, 2, 3]
    assert waits == pytest.approx([0.005, 0.01, 0.02])  # no wait after the last attempt
    assert raised.value.attempts == 4
    assert raised.value.table == "some-table"
    assert usage.conflicts == 4 and usage.retries == 3

    waits.clear()
    throttled: Any = {
        "Error": {"Code": "ThrottlingException"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }

    def throttled_then_ok(n: int) -> Any:
        return ClientError(throttled, "UpdateItem") if n < 2 else "done"

    assert run_attempts(throttled_then_ok, recording_policy(waits)) == "done"
    assert waits == pytest.approx([0.0075, 0.015])


def test_other_errors_go_up_at_once() -> None:
    usage = Usage()
    bad: Any = {"Error": {"Code": "ValidationException", "Message": "nope"}}

    with pytest.raises(ServiceError) as raised:
        run_attempts(lambda _: ClientError(bad, "PutItem"), recording_policy([]), usage=usage)
    assert str(raised.value) == (
        "DynamoDB refused PutItem on table 'some-table' as invalid (ValidationException): nope"
    )
    assert (
        isinstance(raised.value.cause, ClientError) and raised.value.code == "ValidationException"
    )
    assert usage.retries == 0


def test_group_commit_combines_concurrent_calls() -> None:
    batches: list[int] = []
    gate = threading.Event()

    def commit(values: Sequence[int]) -> list[int | BaseException]:
        gate.wait(1)
        batches.append(len(values))
        time.sleep(0.01)
        return [v * 10 if v != 13 else ValueError("13") for v in values]

    group: GroupCommit[int, int] = GroupCommit(commit, max_batch=8)
    results: dict[int, Any] = {}

    def call(v: int) -> None:
        try:
            results[v] = group.submit(v)
        except ValueError as exc:
            results[v] = exc

    threads = [threading.Thread(target=call, args=(v,)) for v in range(40)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    gate.set()
    for t in threads:
        t.join(5)
    assert sorted(k for k in results if not isinstance(results[k], Exception)) == [
        v for v in range(40) if v != 13
    ]
    assert all(results[v] == v * 10 for v in range(40) if v != 13)
    assert isinstance(results[13], ValueError)
    assert sum(batches) == 40
    assert max(batches) == 8  # the waiting calls were combined, 8 at a time
    assert len(batches) < 40


@pytest.mark.parametrize(("bad", "split"), [(13, True), (99, False)])
def test_a_batch_refused_as_invalid_is_committed_one_by_one(bad: int, split: bool) -> None:
    """One caller's item over 400 KB makes DynamoDB refuse the whole batch: every other caller
    still gets its own answer. An error of another kind is every caller's."""
    batches: list[list[int]] = []
    gate = threading.Event()

    def commit(values: Sequence[int]) -> list[int | BaseException]:
        gate.wait(1)
        batches.append(list(values))
        if 13 in values:
            raise ServiceError("An item is too large", code="ValidationException")
        if 99 in values:
            raise ServiceError("Access denied", code="AccessDeniedException")
        return [v * 10 for v in values]

    group: GroupCommit[int, int] = GroupCommit(commit, max_batch=8)
    results: dict[int, Any] = {}

    def call(v: int) -> None:
        try:
            results[v] = group.submit(v)
        except ServiceError as exc:
            results[v] = exc.code

    values = [*range(5), bad, *range(5, 10)]
    threads = [threading.Thread(target=call, args=(v,)) for v in values]
    for t in threads:
        t.start()
    time.sleep(0.05)
    gate.set()
    for t in threads:
        t.join(5)
    refused = [b for b in batches if bad in b and len(b) > 1]
    assert refused, "the bad value must have been committed with others"
    if split:
        assert results == {v: v * 10 for v in values if v != bad} | {bad: "ValidationException"}
        assert [bad] in batches  # retried alone, and refused alone
    else:
        assert all(results[v] == "AccessDeniedException" for v in refused[0])
        assert [bad] not in batches


def test_global_tables_are_refused() -> None:
    """The description an id strategy reads (read_description, driven by hand: one
    DescribeTable, then what the process kept) and the guard the sequences apply to it (the
    strategies themselves refusing one: tests/integration/test_global_tables.py)."""
    usage = Usage()

    def tries(attempt: Callable[[int], Flow[Any]], what: str, deadline: Deadline) -> Flow[Any]:
        return attempts(
            attempt,
            what=what,
            table="users-global",
            policy=recording_policy([]),
            deadline=deadline,
            usage=usage,
        )

    where = ("http://127.0.0.1:9", "us-east-1", "users-global")
    answer = description(GLOBAL)
    read = drive(read_description("users-global", where, Deadline(None), tries), [answer])
    assert read.operations == ["describe_table"]
    info = read.result
    assert info.replica_regions == ("eu-west-1", "us-west-2")
    again = drive(read_description("users-global", where, Deadline(None), tries), [])
    assert again.result is info and again.operations == []  # kept: nothing sent
    with pytest.raises(GlobalTableError) as raised:
        refuse_global(info, "users-global", "GaplessSequence")
    assert "Table 'users-global' is a global table (replicas in eu-west-1, us-west-2)" in str(
        raised.value
    )
    assert "allow_global_tables=True" in str(raised.value)
    with pytest.raises(GlobalTableError, match="CollectionSequence relies on conditional"):
        refuse_global(info, "users-global", "CollectionSequence")
    refuse_global(replace(info, replica_regions=()), "users", "GaplessSequence")  # one region
    assert GaplessSequence.refuses_global_tables and CollectionSequence.refuses_global_tables
    assert not AtomicCounter.refuses_global_tables


def test_audit_ids_finds_gaps_and_duplicates() -> None:
    report = audit_ids([1, 2, 2, 5, 6, 9, 9, 9])
    assert isinstance(report, AuditReport)
    assert report.gaps == [(3, 4), (7, 8)]
    assert report.missing == 4
    assert report.duplicates == {2: 2, 9: 3}
    assert not report.ok
    assert audit_ids(range(1, 100)).ok
    assert audit_ids([3, 4], start=1).gaps == [(1, 2)]
    assert audit_ids([]).ok


def test_the_deadline_bounds_the_attempts_and_the_waits() -> None:
    """With a deadline, the loop gives up before a wait that would pass it, and says why."""
    now = [0.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    policy = RetryPolicy(
        max_attempts=1000,
        base_delay=1.0,
        max_delay=4.0,
        sleep=sleep,
        random=lambda: 1.0,
        clock=lambda: now[0],
    )
    throttled: Any = {
        "Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }

    def always_throttled(n: int) -> Any:
        now[0] += 0.5  # each request takes half a second
        return ClientError(throttled, "UpdateItem")

    with pytest.raises(DeadlineExceededError) as raised:
        run_attempts(always_throttled, policy, what="moving counter 'c'", deadline=10.0)
    # 0.5 + 1 + 0.5 + 2 + 0.5 + 4 + 0.5 = 9 s; the next wait (4 s) would pass 10 s: no more.
    assert waits == [1.0, 2.0, 4.0]
    assert now[0] == 9.0 and raised.value.attempts == 4 and raised.value.seconds == 10.0
    assert str(raised.value) == (
        "Gave up on moving counter 'c' on table 'some-table' after 10.0 s (the deadline; raise "
        "it with deadline=): throttled (ThrottlingException) 4 times, 4 attempts."
    )
    # (A deadline of 0 refused by a strategy: test_ids_behaviour.py::test_counter_bad_input.)


class Interrupted(BaseException):
    """An interrupt (as KeyboardInterrupt) raised inside a commit."""


def test_an_interrupted_commit_is_told_to_its_callers_and_the_rest_go_on() -> None:
    """A batch refused as invalid goes one by one; an interrupt in one of those commits ends
    the batch: each of its callers is told, none waits for ever, and the callers after it are
    committed by the next leader (before, the interrupted leader went on committing)."""
    gate = threading.Event()

    def commit(values: Sequence[int]) -> list[int | BaseException]:
        gate.wait(1)
        if len(values) > 1 and 13 in values:
            raise ServiceError("An item is too large", code="ValidationException")
        if values == [13]:
            raise Interrupted
        return [v * 10 for v in values]

    group: GroupCommit[int, int] = GroupCommit(commit, max_batch=4)
    results: dict[int, Any] = {}

    def call(v: int) -> None:
        try:
            results[v] = group.submit(v)
        except Interrupted:
            results[v] = "interrupted"

    threads = [threading.Thread(target=call, args=(v,)) for v in (0, 1, 13, 2, 3, 4, 5, 6)]
    for t in threads:
        t.start()
        time.sleep(0.01)  # (in this order)
    gate.set()
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads)
    assert results[0] == 0  # the first batch, alone
    # Committed one by one by 1's thread: 1 done, then 13 interrupted; 2 and 3 are told so,
    # and the leader's thread itself raises the interrupt (its own id taken: a gap).
    assert [results[v] for v in (1, 13, 2, 3)] == ["interrupted"] * 4
    assert [results[v] for v in (4, 5, 6)] == [40, 50, 60]  # the next leader's


def test_a_cancelled_commit_is_told_to_its_callers_in_asyncio() -> None:
    """The same in asyncio: a cancellation inside the one-by-one commits of a batch reaches
    each of its callers (before, it left them waiting for ever)."""

    async def commit(values: Sequence[int]) -> list[int | BaseException]:
        await asyncio.sleep(0)
        if len(values) > 1 and 13 in values:
            raise ServiceError("An item is too large", code="ValidationException")
        if values == [13]:
            raise asyncio.CancelledError
        return [v * 10 for v in values]

    async def main() -> list[Any]:
        group: AsyncGroupCommit[int, int] = AsyncGroupCommit(commit, max_batch=4)
        calls = [group.submit(v) for v in (1, 13, 2)]
        async with asyncio.timeout(5):
            return await asyncio.gather(*calls, return_exceptions=True)

    results = asyncio.run(main())
    assert results[0] == 10
    assert all(isinstance(r, asyncio.CancelledError) for r in results[1:])
