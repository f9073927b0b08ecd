"""What a block allocator's close() hands back to the counter: the plan (which unused ids can
go back, pure) and the flow of its one conditional UpdateItem, for both drivers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys.core.steps import Flow, update_item
from ddbkeys.errors import error_code, error_response

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, UpdateItemInputTypeDef

    from ddbkeys.ids.counter import CounterCore
    from ddbkeys.retry import Deadline

__all__ = ["CloseReport", "HandBack", "hand_back", "plan_hand_back"]


@dataclass(frozen=True, slots=True)
class HandBack:
    """What ``close()`` writes: ``SET counter = value`` (``REMOVE`` it when ``value`` is None:
    the counter holds no id yet) on condition that the counter still holds ``top``; ``ids`` go
    back if that succeeds, ``wasted`` cannot go back either way. ``top`` None: nothing to send."""

    top: int | None
    value: int | None
    ids: int
    wasted: int

    @property
    def write(self) -> bool:
        return self.top is not None


@dataclass(frozen=True, slots=True)
class CloseReport:
    """What ``close()`` did: ``handed_back`` ids went back to the counter, ``wasted`` ids (held,
    never handed out) could not; ``sent``: whether it sent its one conditional UpdateItem."""

    handed_back: int
    wasted: int
    sent: bool


def plan_hand_back(unused: Iterable[range], top: int | None) -> HandBack:
    """What can go back to the counter: the unused ranges (the current block's tail, the
    spare) that end at ``top`` (the last id of the highest reservation of the allocator, which
    the counter holds if nobody reserved since), and the ones below them without a gap. Ids are
    ``step`` apart (the ranges' own step): the counter is set to the id just below the lowest of
    them, the last id handed out from there; below 0 (``start`` under ``step``), it is removed,
    which a counter reads as "no id yet"."""
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
    """The flow of ``close()``: one conditional UpdateItem (1 write unit, a refused one too)
    that sets the counter to ``plan.value`` if it still holds ``plan.top`` (nobody reserved
    since). True when it was applied. A retry that finds the counter at ``plan.value`` already
    (the first try was applied, its answer lost) counts as applied."""
    assert plan.top is not None
    item = yield from counter._counter_item(deadline)
    values: dict[str, AttributeValueTypeDef] = {":top": {"N": str(plan.top)}}
    if plan.value is None:
        update = "REMOVE #v"
    else:
        update = "SET #v = :value"
        values[":value"] = {"N": str(plan.value)}
    request: UpdateItemInputTypeDef = {
        "TableName": item.table,
        "Key": item.key,
        "UpdateExpression": update,
        "ConditionExpression": "#v = :top",
        "ExpressionAttributeNames": {"#v": item.attribute},
        "ExpressionAttributeValues": values,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }

    def attempt(n: int) -> Flow[bool]:
        try:
            yield update_item(request, billed=1.0, count_refused=True, bill_refused=True)
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            held: Any = error_response(exc).get("Item", {}).get(item.attribute)
            return n > 0 and _holds(held, plan.value)
        return True

    return (
        yield from counter._attempts(
            attempt, f"handing ids back to counter {counter.name!r}", deadline
        )
    )


def _holds(value: Any, expected: int | None) -> bool:
    """Whether a counter attribute as DynamoDB returned it is ``expected`` (None: missing)."""
    if expected is None:
        return value is None
    digits = value.get("N") if isinstance(value, dict) else None
    return isinstance(digits, str) and digits.isdigit() and int(digits) == expected
