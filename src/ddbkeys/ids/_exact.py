"""The idempotent counter's increment (``AtomicCounter(idempotent=True)``): which request comes
next and what each answer means, without I/O.

A plain increment (UpdateItem ADD) whose response is lost cannot be told from one that never
arrived: sent again, it moves the counter twice and the first ids are never seen (a gap).
Here the increment is one plain conditional UpdateItem that moves the counter
(``SET #v = if_not_exists(#v, :base) + :inc``) and, in the same write, stamps the call's
**writer slot** (see :mod:`ddbkeys.ids._slots`): the call's request number, and the value the
write produced (``if_not_exists(#v, :base) + :inc`` again: every operand of a SET is read
from the item as it was before the write). It is applied only while the slot holds a lower
number. Sent again after a lost response, it is refused if the first one was applied, and
the refusal's old image (``ReturnValuesOnConditionCheckFailure=ALL_OLD``) shows the slot at
this number with its value: those are the call's ids. No read first, no race to lose: writers
of other objects and processes do not make it fail. The same write removes up to
:data:`~ddbkeys.ids._slots.MOST_REMOVED` slots the process saw stale, each on condition that it
still is; one renewed meanwhile makes the write fail, and it goes again at once without it.

It works beside writers of earlier releases, whose increment is a one-item transaction that
moves the counter from the value it holds on condition that it still does
(:func:`exact_update`, which the gapless sequence uses too): they see the counter move, and
build on its new value.

Cost: one UpdateItem per call (a lost response costs one more), billed by the counter item's
size: 1 write unit up to 1 KB, which holds about a dozen writers' slots (about 60 bytes each),
2 up to 2 KB. Nothing is read first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys._core.attempts import Contention
from ddbkeys._core.steps import Flow, update_item
from ddbkeys._entity import COUNTER, ENTITY_ATTRIBUTE
from ddbkeys._errors import DdbKeysError, error_code, unexpected_answer
from ddbkeys._translate import error_message, error_response
from ddbkeys.ids._base import (
    TYPE_NAMES,
    TYPE_SET,
    TYPE_VALUES,
    Attempts,
    CounterItem,
    CounterStateError,
)
from ddbkeys.ids._counter_core import VALID, CounterCore
from ddbkeys.ids._counter_item import (
    COUNTER_ONLY,
    counter_names,
    not_a_counter,
    read_counter,
    warn_if_new,
)
from ddbkeys.ids._slots import (
    CLOCK_MARGIN,
    MOST_DEADLINE,
    SEEN,
    SLOTS,
    Seen,
    keep_until,
    number_name,
    slots_in,
    value_name,
)
from ddbkeys.ids._values import show_key, show_value

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        TransactWriteItemTypeDef,
        UpdateItemInputTypeDef,
        UpdateTypeDef,
    )

    from ddbkeys._retry import Deadline

__all__ = ["VALID", "exact_advance", "exact_update", "item_name", "slot_update"]

_MOVED = "if_not_exists(#v, :base) + :inc"


def exact_update(
    counter: CounterItem, last: int, new: int, *, base: int
) -> TransactWriteItemTypeDef:
    """A transaction action that moves the counter from ``last`` to ``new`` on condition that
    it still holds ``last`` (or holds nothing, when ``last`` is the value a missing counter
    stands for, ``base``); it also sets what the item is (``ddbkeys_type``). The gapless
    sequence's counter write, and the idempotent counter's of earlier releases."""
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
    if last == base:  # (and an item of yours is not made a counter: COUNTER_ONLY)
        update["ConditionExpression"] = (
            f"{COUNTER_ONLY} AND (attribute_not_exists(#v) OR #v = :last)"
        )
        update["ExpressionAttributeNames"] = counter_names(counter)
    return {"Update": update}


def item_name(counter: CounterItem) -> str:
    """What the process's memory of seen slots calls a counter item: its table and key."""
    return counter.table + "\n" + json.dumps(counter.key, sort_keys=True, default=str)


def slot_update(
    counter: CounterItem,
    *,
    slot: str,
    number: int,
    increment: int,
    base: int,
    limit: int,
    stale: list[str] = [],  # noqa: B006 (never changed)
    now_ms: int = 0,
) -> UpdateItemInputTypeDef:
    """The UpdateItem that moves the counter by ``increment`` (from ``base`` when it holds
    nothing) and stamps writer slot ``slot`` with request number ``number`` and the value it
    produced; applied only while the slot holds a lower number, the counter a number from 0
    to ``limit - increment``, and each slot of ``stale`` (removed) a number below ``now_ms``.
    """
    names = {
        "#v": counter.attribute,
        "#w": number_name(slot),
        "#wv": value_name(slot),
        **TYPE_NAMES,
    }
    values: dict[str, AttributeValueTypeDef] = {
        ":base": {"N": str(base)},
        ":inc": {"N": str(increment)},
        ":seq": {"N": str(number)},
        ":number": {"S": "N"},
        ":zero": {"N": "0"},
        ":limit": {"N": str(limit - increment)},
        **TYPE_VALUES,
    }
    update = f"SET #v = {_MOVED}, #wv = {_MOVED}, #w = :seq, {TYPE_SET}"
    names["#k"] = counter_names(counter)["#k"]
    conditions = ["(attribute_not_exists(#w) OR #w < :seq)", f"({VALID})", COUNTER_ONLY]
    if stale:
        values[":now"] = {"N": str(now_ms)}
        removed = []
        for n, name in enumerate(stale):
            names[f"#r{n}"], names[f"#r{n}v"] = number_name(name), value_name(name)
            removed += [f"#r{n}", f"#r{n}v"]
            conditions.append(f"(attribute_not_exists(#r{n}) OR #r{n} < :now)")
        update += " REMOVE " + ", ".join(removed)
    return {
        "TableName": counter.table,
        "Key": counter.key,
        "UpdateExpression": update,
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        # (the item as it was: a counter holding a fraction, which no condition refuses, is
        # put back exactly, every attribute the write changed as it was)
        "ReturnValues": "ALL_OLD",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        "ReturnConsumedCapacity": "TOTAL",
    }


def billed(seen: Seen | None, counter: CounterItem, slot: str) -> float:
    """The write units the service will charge, as far as this process knows the item: its
    size when last seen (or the counter alone), with this slot's two attributes if new."""
    size = seen.size if seen is not None else 40 + len(json.dumps(counter.key))
    if seen is None or slot not in seen.slots:
        size += len(number_name(slot)) + len(value_name(slot)) + 30
    return float(max(1, -(-size // 1024)))


def exact_advance(
    core: CounterCore,
    counter: CounterItem,
    count: int,
    deadline: Deadline,
    attempts: Attempts,
    wall_clock: Callable[[], float],
) -> Flow[range]:
    """``count`` ids (``core.step`` apart) taken with one conditional UpdateItem stamped with
    a writer slot of this process (dated by ``wall_clock``), sent again with the same request
    number after a lost response, through the retry layer ``attempts``."""
    increment = count * core.step
    base = core.start - core.step
    if base + increment > core.limit:
        raise core.exhausted(None, count)
    item = item_name(counter)
    slot = SLOTS.take()
    try:
        left = min(deadline.remaining(), MOST_DEADLINE)  # (the constructor refuses more)
        number = slot.number(keep_until(wall_clock(), left))
        skip: set[str] = {slot.name}  # stale slots not to remove in this call

        def attempt(n: int) -> Flow[range]:
            now_ms = int(wall_clock() * 1000)
            stale = SEEN.stale(item, now_ms, skip=skip)
            request = slot_update(
                counter,
                slot=slot.name,
                number=number,
                increment=increment,
                base=base,
                limit=core.limit,
                stale=stale,
                now_ms=now_ms,
            )
            try:
                answer = yield update_item(
                    request, billed=billed(SEEN.get(item), counter, slot.name)
                )
            except ClientError as exc:
                if error_code(exc) == "ConditionalCheckFailedException":
                    old = error_response(exc).get("Item") or {}
                    done = _refused(core, counter, old, slot.name, number, count)
                    if done is not None:
                        return done
                    skip.update(stale)  # (one was renewed: leave them to later writes)
                    raise Contention(immediate=bool(stale)) from None
                if error_code(exc) == "ValidationException" and _TOO_LARGE in error_message(exc):
                    raise _full(counter) from exc
                if error_code(exc) == "ValidationException":
                    # (The condition keeps a counter that holds no number from moving; if a
                    # service ever says so this way instead: what it holds, or that it is full.)
                    at = core.check(counter, (yield from read_counter(counter)))
                    if at is not None and at + increment > core.limit:
                        raise core.exhausted(at, count) from exc
                raise
            old = answer.get("Attributes", {})  # (none for a new item)
            if not isinstance(old, Mapping):
                what = f"counter attribute {counter.attribute!r}"
                raise unexpected_answer("UpdateItem", counter.table, what, answer)
            mine = [number_name(slot.name), value_name(slot.name)]
            try:
                at = core.held(counter, old.get(counter.attribute))
            except DdbKeysError:
                # It held a fraction (a number the condition cannot tell from a whole one):
                # moved, so put it back as it was (its slot, the stale slots it removed and
                # its type too), then say why.
                changed = [*mine, *_names_of(stale), ENTITY_ATTRIBUTE]
                restore = {a: old.get(a) for a in changed}
                yield from core.undo(counter, increment, deadline, attempts, restore=restore)
                raw = core.after(old[counter.attribute], increment)
                raise core.state_before(
                    counter, raw, increment, retried=n > 0, typed=False
                ) from None
            warn_if_new(counter, old, at + core.step)
            SEEN.saw(item, _written(old, counter, mine, number, at + increment, stale))
            return range(at + core.step, at + increment + 1, core.step)

        moved: range = yield from attempts(attempt, f"moving counter {core.label}", deadline)
        return moved
    finally:
        SLOTS.give(slot)


def _written(
    old: Mapping[str, Any],
    counter: CounterItem,
    mine: list[str],
    number: int,
    last: int,
    stale: list[str],
) -> dict[str, Any]:
    """The counter item after a slot's write, from the item before it (``old``): the counter
    at ``last``, the slot ``mine`` stamped with ``number`` and ``last``, the ``stale`` slots
    removed, its type set."""
    image = {k: v for k, v in old.items() if k not in _names_of(stale)}
    image.update(
        {
            **counter.key,
            counter.attribute: {"N": str(last)},
            mine[0]: {"N": str(number)},
            mine[1]: {"N": str(last)},
            ENTITY_ATTRIBUTE: {"S": COUNTER},
        }
    )
    return image


#: DynamoDB's words for an UpdateItem that would pass 400 KB.
_TOO_LARGE = "size to update has exceeded the maximum allowed size"


def _full(counter: CounterItem) -> CounterStateError:
    """The error for a counter item too full of writer slots to take one more (a helper's
    ~7,000 idempotent writers within a minute said only "Item size to update has exceeded")."""
    return CounterStateError(
        f"Counter item {show_key(counter.key)} of table {counter.table!r} is full of writer "
        "slots: each idempotent call that wrote it keeps one until its deadline plus "
        f"{CLOCK_MARGIN:g} s, and 400 KB holds about 7,000. Nothing was written: take ids "
        "from fewer idempotent writers at once (a long-lived one reuses its slots), with a "
        "shorter deadline, or from the plain counter (idempotent=False).",
        table=counter.table,
    )


def _names_of(slots: list[str]) -> list[str]:
    """The attributes of writer slots ``slots``: each one's number and value."""
    return [a for slot in slots for a in (number_name(slot), value_name(slot))]


def _refused(
    core: CounterCore,
    counter: CounterItem,
    old: Mapping[str, Any],
    slot: str,
    number: int,
    count: int,
) -> range | None:
    """What a refused write means, from the item's old image: the call's ids (its write was
    applied before: a lost response), or an error (the counter holds no valid number, or
    would pass its maximum), or None (a stale slot it was to remove was renewed: go again)."""
    increment = count * core.step
    mine = not_a_counter(counter, old)  # (an item of yours: left as it is)
    if mine is not None:
        raise mine
    if old:
        SEEN.saw(item_name(counter), old)
    held = slots_in(old).get(slot, -1)
    if held == number:
        raw = old.get(value_name(slot))
        last = core.check(counter, raw) if isinstance(raw, Mapping) else None
        if last is None:
            raise unexpected_answer(
                "UpdateItem", counter.table, f"the value of writer slot {slot!r}", old
            )
        if last - increment + core.step == core.start:  # (its lost write may have begun it)
            warn_if_new(counter, old, core.start, resent=True)
        return range(last - increment + core.step, last + 1, core.step)
    if held is None or held > number:
        # Another process with the same slot name (72 random bits: not expected), or a tool.
        raise CounterStateError(
            f"The counter item {show_key(counter.key)} of table {counter.table!r} holds "
            f"{number_name(slot)} = {show_value(old.get(number_name(slot)))}, past the request "
            f"number {number} this process gave that writer slot: is another tool writing "
            "ddbkeys_w.* attributes? Nothing was moved; remove the attribute to go on.",
            table=counter.table,
        )
    at = core.held(counter, old.get(counter.attribute))  # CounterStateError: not a counter
    if at + increment > core.limit:
        raise core.exhausted(at, count)
    return None
