"""What a block allocator's close() hands back to the counter: the plan (which unused ids can
go back, pure) and the flow of its one conditional update (a transaction with a token), for
both drivers."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddbkeys.core.attempts import Contention, Throttled
from ddbkeys.core.steps import Flow
from ddbkeys.ids.base import TYPE_NAMES, TYPE_SET, TYPE_VALUES, cancelled_error, transact
from ddbkeys.ids.cancellation import Verdict

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, TransactWriteItemTypeDef

    from ddbkeys.ids.counter import CounterCore
    from ddbkeys.retry import Deadline

__all__ = ["CloseReport", "HandBack", "hand_back", "plan_hand_back"]


@dataclass(frozen=True, slots=True)
class HandBack:
    """``close()``'s write: the counter set to ``value`` (None: removed) if it holds ``top``
    (None: no write); ``ids`` go back if it succeeds, ``wasted`` cannot either way."""

    top: int | None
    value: int | None
    ids: int
    wasted: int

    @property
    def write(self) -> bool:
        return self.top is not None


@dataclass(frozen=True, slots=True)
class CloseReport:
    """What ``close()`` did: ids handed back, ids wasted, and whether it sent its write."""

    handed_back: int
    wasted: int
    sent: bool


def plan_hand_back(unused: Iterable[range], top: int | None) -> HandBack:
    """What can go back: the unused ranges that end at ``top`` (the allocator's highest id,
    which the counter holds if nobody reserved since) and those below them without a gap. The
    counter is set to the id below the lowest of them (removed below 0: "no id yet")."""
    held = sorted((r for r in unused if r), key=lambda r: r.start, reverse=True)
    total = sum(len(r) for r in held)
    if not held or top is None or held[0][-1] != top:
        return HandBack(None, None, 0, total)
    lowest, back = held[0], len(held[0])
    for lower in held[1:]:
        if lower[-1] + lower.step != lowest.start:
            break
        lowest, back = lower, back + len(lower)
    value = lowest.start - lowest.step
    return HandBack(top, value if value >= 0 else None, back, total - back)


def hand_back(counter: CounterCore, plan: HandBack, deadline: Deadline) -> Flow[bool]:
    """``close()``'s one conditional update, True when applied: a one-action transaction
    with a token (2 write units), so that a first try arriving late, after a retry was applied
    and another allocator reserved the same block again, is not applied a second time."""
    assert plan.top is not None
    item = yield from counter._counter_item(deadline)
    values: dict[str, AttributeValueTypeDef] = {":top": {"N": str(plan.top)}, **TYPE_VALUES}
    if plan.value is None:
        update = f"REMOVE #v SET {TYPE_SET}"
    else:
        update = f"SET #v = :value, {TYPE_SET}"
        values[":value"] = {"N": str(plan.value)}
    action: TransactWriteItemTypeDef = {
        "Update": {
            "TableName": item.table,
            "Key": item.key,
            "UpdateExpression": update,
            "ConditionExpression": "#v = :top",
            "ExpressionAttributeNames": {"#v": item.attribute, **TYPE_NAMES},
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }
    token = str(uuid.uuid4())

    def attempt(_: int) -> Flow[bool]:
        cancellation = yield from transact([action], token, items=0, billed=2.0)
        if cancellation is None:
            return True
        if cancellation.verdict is Verdict.INVALID:
            raise cancelled_error(counter, cancellation)
        if cancellation.failed(0):
            return False  # the counter moved on: someone reserved since
        if cancellation.verdict is Verdict.THROTTLED:
            raise Throttled(cancellation.describe())
        raise Contention()

    return (
        yield from counter._attempts(
            attempt, f"handing ids back to counter {counter.name!r}", deadline
        )
    )
