"""A block allocator's close(), for both drivers: the flow that waits for the reservations in
flight and hands the unused ids back, and the one conditional update that hands them back (a
transaction with a token)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from ddbkeys.core.attempts import Contention, Throttled
from ddbkeys.core.steps import Flow
from ddbkeys.ids.base import TYPE_NAMES, TYPE_SET, TYPE_VALUES, cancelled_error, transact
from ddbkeys.ids.blocks_core import WAKE, BlockFlow, BlockState, Call, CloseReport, HandBack, Pause
from ddbkeys.ids.cancellation import Verdict
from ddbkeys.retry import Deadline

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, TransactWriteItemTypeDef

    from ddbkeys.ids.counter import CounterCore

__all__ = ["closing", "hand_back"]


def closing(
    state: BlockState, counter: CounterCore, seconds: float | None
) -> BlockFlow[CloseReport]:
    """``close()``: waits for the reservations in flight, then hands back what it can (each
    within ``seconds``); what the counter's write did is in the report, and in ``state``."""
    state.close()
    yield WAKE
    deadline = Deadline(seconds, clock=counter.retry.clock)
    while state.fetching and not deadline.expired():
        yield Pause(min(deadline.remaining(), 3600.0))
    plan, applied = state.release(), False
    try:
        if plan.top is not None:
            write = hand_back(counter, plan, Deadline(seconds, clock=counter.retry.clock))
            applied = yield Call(lambda c: c._run(write))
    finally:
        state.report = state.closed_with(plan, applied)
    return state.report


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

    what = f"handing ids back to counter {counter.name!r}"
    return (yield from counter._attempts(attempt, what, deadline))
