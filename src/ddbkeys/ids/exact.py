"""The idempotent counter's increment (``AtomicCounter(idempotent=True)``), without I/O.

A plain increment (UpdateItem ADD) whose response is lost cannot be told from one that never
arrived: sent again, it moves the counter twice and the first ids are never seen (a gap).
Here the increment is a one-item transaction with a ClientRequestToken that moves the counter
from the value it is known to hold to that value plus the increment, on condition that it
still holds it. Sent again after a lost response, the same transaction with the same token is
not applied twice (DynamoDB answers it as done, for 10 minutes), so no id is skipped. When the
counter moved meanwhile (another writer), the condition fails, the cancellation's old image
says where it is, and a new transaction with a new token goes at once.

Cost: a transactional write is 2 write units on the service (DynamoDB Local reports 1); a lost
race costs a cancelled transaction, and the first call of an object one strongly consistent
read (1 read unit) unless the counter's value is already known from an earlier commit.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddbkeys.core.attempts import Contention, Throttled
from ddbkeys.core.steps import Flow
from ddbkeys.ids.base import (
    TYPE_NAMES,
    TYPE_SET,
    TYPE_VALUES,
    CounterItem,
    cancelled_error,
    read_counter,
    transact,
)
from ddbkeys.ids.cancellation import Cancellation, Verdict

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef, UpdateTypeDef

    from ddbkeys.ids.counter import CounterCore
    from ddbkeys.retry import Deadline

__all__ = ["Known", "exact_advance", "exact_update"]


class Known:
    """The counter value this object last saw (after its own commit, or from a failed
    condition's old image): the next transaction builds on it without a read. Shared by the
    threads of one object; a stale value only costs a lost race."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value: int | None = None

    def get(self) -> int | None:
        with self._lock:
            return self.value

    def set(self, value: int | None, *, only_up: bool = False) -> None:
        with self._lock:
            if not only_up or value is None or self.value is None or value > self.value:
                self.value = value


@dataclass
class _Plan:
    """One transaction's plan: the value it builds on and its token (kept for its retries,
    dropped once it is cancelled, so a cancelled plan is never sent again)."""

    last: int | None = None
    token: str | None = None
    streak: int = 0  # lost races in a row
    fresh: bool = False  # the value was read (or seen in an old image) during this call


def exact_update(
    counter: CounterItem, last: int, new: int, *, base: int
) -> TransactWriteItemTypeDef:
    """The transaction's one action: the counter from ``last`` to ``new``, on condition that it
    still holds ``last`` (or holds nothing, when ``last`` is the value a missing counter
    stands for, ``base``). It also sets what the item is (``ddbkeys_type``)."""
    update: UpdateTypeDef = {
        "TableName": counter.table,
        "Key": counter.key,
        "UpdateExpression": f"SET #v = :new, {TYPE_SET}",
        "ExpressionAttributeNames": {"#v": counter.attribute, **TYPE_NAMES},
        "ExpressionAttributeValues": {
            ":new": {"N": str(new)},
            ":last": {"N": str(last)},
            **TYPE_VALUES,
        },
        "ConditionExpression": "#v = :last",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    if last == base:
        update["ConditionExpression"] = "attribute_not_exists(#v) OR #v = :last"
    return {"Update": update}


def exact_advance(
    core: CounterCore,
    counter: CounterItem,
    count: int,
    deadline: Deadline,
) -> Flow[range]:
    """``count`` ids (``core.step`` apart) taken with one idempotent transaction, retried
    through lost responses with the same token, and through lost races with a new one.
    ``core._held(raw)`` is the number a raw counter value stands for (the base when it is
    missing; :class:`~ddbkeys.ids.errors.CounterStateError` for what no counter may hold)."""
    known, held = core._known, core._held
    increment = count * core.step
    base = core.start - core.step
    plan = _Plan()

    def attempt(_: int) -> Flow[range]:
        if plan.token is None:
            last = known.get()
            if last is None or (last + increment > core._limit and not plan.fresh):
                # Unknown; or known from an earlier call and too high for these ids: the
                # counter may have been set back since (set(force=True) elsewhere), and only
                # what it holds now may refuse the call.
                last = held((yield from read_counter(counter)))
                known.set(last)
                plan.fresh = True
            if last + increment > core._limit:
                raise core._exhausted(last, count)
            plan.last, plan.token = last, str(uuid.uuid4())
        last = plan.last
        assert last is not None
        new = last + increment
        action = exact_update(counter, last, new, base=base)
        cancellation = yield from transact([action], plan.token, items=0, billed=2.0)
        if cancellation is None:
            known.set(new, only_up=True)
            return range(last + core.step, new + 1, core.step)
        _cancelled(core, cancellation, plan, known, held)
        raise AssertionError("unreachable")  # _cancelled always raises

    return (yield from core._attempts(attempt, f"moving counter {core.name!r}", deadline))


def _cancelled(
    core: CounterCore,
    cancellation: Cancellation,
    plan: _Plan,
    known: Known,
    held: Callable[[Mapping[str, Any] | None], int],
) -> None:
    """What a cancelled transaction means: raises :class:`Contention` (go again with the value
    the old image gave, at once the first time in a row), :class:`Throttled`, or the error."""
    if cancellation.verdict is Verdict.INVALID:
        raise cancelled_error(core, cancellation)
    plan.token = None
    plan.streak += 1
    if cancellation.failed(0):
        old = cancellation.old_item(0) or {}
        known.set(held(old.get(core.counter_attribute)))  # CounterStateError: not a counter
        plan.fresh = True
        raise Contention(immediate=bool(plan.streak % 2))
    if cancellation.verdict is Verdict.THROTTLED:
        raise Throttled(cancellation.describe())
    raise Contention(immediate=False)
