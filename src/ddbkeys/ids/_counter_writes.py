"""The counter's writes, as flows of its core (:class:`~ddbkeys.ids._counter_core.CounterCore`)
through a retry layer, with no link or client: :func:`advance` moves the counter by ``count`` ids
with one UpdateItem (or the idempotent write of :mod:`ddbkeys.ids._exact`), and :func:`coalesced`
makes one such write for the calls of a group."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from ddbkeys._core.steps import Flow, update_item
from ddbkeys._entity import ENTITY_ATTRIBUTE
from ddbkeys._errors import DdbKeysError, error_code, unexpected_answer
from ddbkeys._retry import Deadline
from ddbkeys._translate import error_response, unanswered
from ddbkeys.ids._base import Attempts, CounterItem, CounterStateError, SequenceExhaustedError
from ddbkeys.ids._counter_core import CounterCore
from ddbkeys.ids._counter_item import not_a_counter, read_counter, warn_if_new
from ddbkeys.ids._exact import exact_advance
from ddbkeys.ids._values import MAX_ID

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import UpdateItemInputTypeDef

__all__ = ["Want", "advance", "coalesced", "split"]


@dataclass(frozen=True)
class Want:
    """A call waiting for a coalesced write: how many ids it wants, and its deadline."""

    count: int
    deadline: Deadline


def split(ids: range, counts: Sequence[int]) -> list[range]:
    """One coalesced write's ``ids``, handed out in order: consecutive runs of ``counts``."""
    runs = []
    offset = 0
    for count in counts:
        runs.append(ids[offset : offset + count])
        offset += count
    return runs


def advance(
    core: CounterCore,
    counter: CounterItem,
    count: int,
    deadline: Deadline,
    attempts: Attempts,
    wall_clock: Callable[[], float],
    request: UpdateItemInputTypeDef | None = None,
) -> Flow[range]:
    """``count`` ids of the counter ``core`` describes, at ``counter``, with one write (its
    ``request``, when built before), through the retry layer ``attempts``; idempotent writes
    are dated by ``wall_clock`` (:func:`~ddbkeys.ids._exact.exact_advance`)."""
    if core.idempotent:
        return (yield from exact_advance(core, counter, count, deadline, attempts, wall_clock))
    increment = count * core.step
    request = request or core.request(counter, count)
    lost = [0]  # the call's writes that got no answer (each the same: ``increment``)

    def attempt(n: int) -> Flow[range]:
        try:
            response = yield update_item(request, billed=1.0)
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                item = error_response(exc).get("Item", {})
                mine = not_a_counter(counter, item)  # (an item of yours: left as it is)
                if mine is not None:
                    raise mine from exc
                old = item.get(core.counter_attribute)
                at = core.check(counter, old)  # CounterStateError: no valid counter
                raise core.exhausted(at, count) from exc
            if error_code(exc) == "ValidationException":
                # (The condition keeps a counter that holds no number from moving; if a
                # service ever says so this way instead: nothing moved. Say what the item
                # holds, or that --count or --step ids would pass 10**38 - 1.)
                at = core.check(counter, (yield from read_counter(counter)))
                if at is not None and at + increment > MAX_ID:
                    raise core.exhausted(at, count) from exc
            raise
        except Exception as exc:
            lost[0] += unanswered(exc)
            raise
        # The answer holds the item as it was (ALL_OLD): the counter's value (none when it
        # was missing), its ddbkeys_type (none when it had none), and any other counter.
        before = response.get("Attributes", {})
        if not isinstance(before, Mapping):
            what = f"counter attribute {core.counter_attribute!r}"
            raise unexpected_answer("UpdateItem", core.table, what, response)
        raw = before.get(core.counter_attribute)
        try:
            at = core.held(counter, raw)  # within 0..limit - increment, by the condition
        except CounterStateError:
            # It held a fraction (5.5: no condition tells it from a whole number), so it
            # moved: put it back as it was, ddbkeys_type too, then say why.
            restore = {ENTITY_ATTRIBUTE: before.get(ENTITY_ATTRIBUTE)}
            yield from core.undo(counter, increment, deadline, attempts, restore=restore)
            raise core.state_before(
                counter, core.after(raw or {}, increment), increment, retried=n > 0, typed=False
            ) from None
        # A write of the call that got no answer may have made the attribute: where the
        # counter holds just what such writes would have made of none, whether it was new is
        # not known. (Not the client's own retries, RetryAttempts: a throttle retried counts
        # there too, and young counters were warned of, helper-80 F1.)
        made = at - (core.start - core.step)
        resent = bool(lost[0]) and made % increment == 0 and 0 < made // increment <= lost[0]
        warn_if_new(counter, before, core.start if resent else at + core.step, resent=resent)
        return range(at + core.step, at + increment + 1, core.step)

    moved: range = yield from attempts(attempt, f"moving counter {core.label}", deadline)
    return moved


def coalesced(
    wants: Sequence[Want], advance_by: Callable[[int, Deadline], Flow[range]]
) -> Flow[list[range | BaseException]]:
    """One write (``advance_by(count, deadline)``) for the calls of a group, each its own run
    of ids in order, within the deadline that ends first. When all of them would pass the
    maximum, each goes alone, so the ones that fit get their ids."""
    deadline = min((w.deadline for w in wants), key=lambda d: d.remaining())
    total = sum(w.count for w in wants)
    try:
        ids = yield from advance_by(total, deadline)
    except SequenceExhaustedError as exhausted:
        if len(wants) == 1:
            return [exhausted]
        alone: list[range | BaseException] = []
        for want in wants:
            try:
                alone.append((yield from advance_by(want.count, want.deadline)))
            except DdbKeysError as exc:
                alone.append(exc)
        return alone
    return list(split(ids, [w.count for w in wants]))
