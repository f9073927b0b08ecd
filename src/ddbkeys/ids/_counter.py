"""The atomic counter (one UpdateItem per id, as in "Implement resource counters with Amazon
DynamoDB" and "How to generate auto-incrementing IDs in DynamoDB")."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys._capacity import Usage
from ddbkeys._core.reads import Through
from ddbkeys._core.steps import Flow, update_item
from ddbkeys._errors import ConfigurationError, DdbKeysError, error_code, unexpected_answer
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys._schema import check_name
from ddbkeys._translate import error_response
from ddbkeys.ids._base import (
    TYPE_NAMES,
    TYPE_SET,
    TYPE_VALUES,
    CounterItem,
    CounterStateError,
    IdStrategy,
    SequenceExhaustedError,
    StrategyCore,
    check_counter_attribute,
    counter_item_key,
    read_counter,
)
from ddbkeys.ids._counter_plan import Attempts, CounterPlan
from ddbkeys.ids._exact import exact_advance
from ddbkeys.ids._group import GroupCommit
from ddbkeys.ids._slots import CLOCK_MARGIN, MOST_DEADLINE
from ddbkeys.ids._values import MAX_ID, whole_number

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, UpdateItemInputTypeDef

    from ddbkeys.ids._blocks_steps import HandBack

__all__ = [
    "MAX_COALESCED",
    "AtomicCounter",
    "CounterBackwardsError",
    "CounterCore",
    "Want",
    "advance",
    "coalesced",
]

#: At most this many calls share one coalesced write.
MAX_COALESCED = 1000
#: While busy, a coalesced write waits at most this long for the callers of the last one to
#: come back (it goes as soon as they have): fuller writes, fewer of them.
COALESCE_LINGER = 0.001


class CounterBackwardsError(DdbKeysError):
    """``set()`` would move a counter backwards, and ``force`` was not given."""


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


class CounterCore(StrategyCore):
    """Ids from one counter item, moved on by a single UpdateItem per call.

    Promises: **unique** and **increasing** ids, across any number of threads and processes
    (DynamoDB applies writes to one item one at a time). **Not gapless**: an id is used up when
    the counter moves, so a caller that fails before it stores its item leaves a gap, and so does
    a write whose response was lost and that was sent again (the first increment is never seen;
    no id is ever given out twice).

    Cost: ``next()`` and ``reserve(n)`` are one UpdateItem each, 1 write unit (the counter item is
    far below 1 KB), whatever ``n`` is; ``current()`` is one strongly consistent GetItem, 1 read
    unit. Throughput is bounded by one item's partition (about 1,000 writes/s on the service);
    :class:`~ddbkeys.ids._blocks.BlockAllocator` goes past that.

    ``group_commit=True``: concurrent calls of one object
    (threads, or the tasks of one event loop with :mod:`ddbkeys.aio`) share one write: while
    a write is in flight, the calls that arrive wait, and the next write moves the counter by
    all their ids at once (up to :data:`MAX_COALESCED` calls), each caller getting its own
    consecutive run. Ids stay unique across processes and dense among the callers of one write;
    1 write unit per write, however many ids. A write that fails fails each of its callers; a
    lost response retried skips the whole write's ids.

    ``idempotent=True``: a lost response retried never skips an id. Each write is still one
    UpdateItem, conditional on the call's **writer slot** (see :mod:`ddbkeys.ids._exact` and
    :mod:`ddbkeys.ids._slots`): it moves the counter and stamps the slot with the call's request
    number and the value it produced; sent again after a lost response, it is refused if the
    first one was applied, and the refusal's old image gives the call its ids. Writers of other
    objects and processes never make it fail, and nothing is read first. A process has one slot
    per call in progress (one, in a Lambda function); each slot is about 60 bytes of the counter
    item, kept until its call's deadline plus :data:`~ddbkeys.ids._slots.CLOCK_MARGIN` (60 s)
    have passed, then removed by the next write that sees it. Cost: 1 write unit a write while
    the item stays within 1 KB (about a dozen writers in a few minutes), 2 up to 2 KB
    (processes that take one id each and exit leave a slot each: prefer long-lived writers). It
    assumes that writers' clocks agree within 60 s (a writer further behind may skip ids on a
    lost response, never give one twice), and it needs a deadline (at most 900 s: None is
    refused). Writers of earlier releases (a one-item transaction that moves the
    counter from the value it holds) work beside it on one counter. A call that gives up (its
    deadline passed with the last write unanswered) may still have moved the counter: those ids
    are a gap, as with any counter; a call that is retried by its caller is a new call (for "the
    same event, the same id", see docs/ids/lambda.md). Both settings combine.

    The counter item is ``{partition key: name}`` (or ``counter_key``, given whole, for tables with
    a sort key or a non-string partition key) holding ``counter_attribute``, the last id given out,
    and ``ddbkeys_type = "counter"`` (:data:`ddbkeys.ENTITY_ATTRIBUTE`, for other readers: every
    write sets it, nothing reads it; ``counter_attribute`` cannot be that name). It is created on
    first use; a counter holding 0 (seeded by another tool) gives 1 next. A counter holding anything
    but a whole number from 0 to 10**38 - 1 raises :class:`~ddbkeys.ids.CounterStateError` and its
    value is left as it was (a fraction or a negative number is moved, then put back: the item then
    says it is a counter). Ids start at ``start`` and go up by ``step``; with ``maximum``, a call
    that would pass it raises :class:`SequenceExhaustedError` and moves nothing. Each call ends
    within ``deadline`` seconds. Nothing is sent before the first call.
    """

    def __init__(
        self,
        client: object,
        table: str | None = None,
        name: str = "counter",
        *,
        key_attribute: str | None = None,
        counter_key: Mapping[str, Any] | None = None,
        counter_attribute: str = "last_id",
        start: int = 1,
        step: int = 1,
        maximum: int | None = None,
        retry: RetryPolicy | None = None,
        usage: Usage | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        group_commit: bool = False,
        idempotent: bool = False,
    ) -> None:
        super().__init__(client, table, retry=retry, usage=usage, deadline=deadline)
        name = check_name("counter name", name, table=self.table)
        counter_attribute = check_counter_attribute(counter_attribute, table=self.table)
        self.key_attribute = (
            check_name("key attribute", key_attribute, table=self.table) if key_attribute else None
        )
        if counter_key is not None and not isinstance(counter_key, Mapping):
            raise ConfigurationError(
                f"counter_key must be a mapping of key attributes to values, not {counter_key!r}.",
                table=self.table,
            )
        self._key_given = counter_key
        start = whole_number("start", start, minimum=0, table=self.table)
        step = whole_number("step", step, table=self.table)
        if maximum is not None:
            maximum = whole_number("maximum", maximum, minimum=start, table=self.table)
        self._counter: CounterItem | None = None
        self._next_request: UpdateItemInputTypeDef | None = None
        #: Whether concurrent calls share one write (``group_commit=``, as the sequences').
        self.group_commit = _flag("group_commit", group_commit, self.table)
        idempotent = _flag("idempotent", idempotent, self.table)
        if idempotent and (self.deadline is None or self.deadline > MOST_DEADLINE):
            raise ConfigurationError(
                f"idempotent=True needs a deadline of at most {MOST_DEADLINE:g} s, not "
                f"{self.deadline!r}: a retried write is recognised for as long as the call may "
                f"send it (its deadline, plus {CLOCK_MARGIN:g} s for clocks that disagree).",
                table=self.table,
            )
        #: The wall clock (seconds since 1970) that dates the idempotent writes' slots.
        self.wall_clock: Callable[[], float] = time.time
        #: What its writes ask for and what their answers mean (no client in it); the
        #: counter's settings below are its.
        self.plan = CounterPlan(
            self.table, name, counter_attribute, start, step, maximum, idempotent
        )
        self._start_group(self.group_commit)

    def _start_group(self, enabled: bool) -> None:
        """Each driver's class makes its group commit here (threads, or asyncio tasks)."""

    name: Through[str] = Through("plan")
    counter_attribute: Through[str] = Through("plan")
    start: Through[int] = Through("plan")
    step: Through[int] = Through("plan")
    maximum: Through[int | None] = Through("plan")
    idempotent: Through[bool] = Through("plan")

    def _counter_item(self, deadline: Deadline) -> Flow[CounterItem]:
        """Where the counter lives (its key found from the table's key schema on first use)."""
        if self._counter is None:
            key = yield from counter_item_key(
                self, deadline, self.name, self.key_attribute, given=self._key_given
            )
            self._counter = CounterItem(self.table, key, self.counter_attribute)
        return self._counter

    def _forget_table(self, table: str) -> None:
        super()._forget_table(table)
        self._counter = self._next_request = None

    def _request(self, counter: CounterItem, count: int) -> UpdateItemInputTypeDef:
        """The UpdateItem that moves the counter on by ``count`` ids (next()'s is built once)."""
        if count == 1 and self._next_request is not None:
            return self._next_request
        request = self.plan.request(counter, count)
        if count == 1:
            self._next_request = request
        return request

    def _coalesced(self, wants: Sequence[Want]) -> Flow[list[range | BaseException]]:
        """One write for the calls of a group (see :func:`coalesced`)."""
        return (yield from coalesced(wants, self._advance))

    def _advance(self, count: int, deadline: Deadline | None = None) -> Flow[range]:
        """``count`` ids, with one write: the flow of ``next()`` and ``reserve()``."""
        deadline = deadline or self._begin()
        counter = self._counter or (yield from self._counter_item(deadline))
        request = None if self.idempotent else self._request(counter, count)
        return (
            yield from advance(
                self.plan, counter, count, deadline, self._attempts, self.wall_clock, request
            )
        )

    def _current(self) -> Flow[int]:
        """The flow of ``current()``: one strongly consistent GetItem (1 read unit)."""
        deadline = self._begin()
        counter = yield from self._counter_item(deadline)
        value = yield from self._attempts(
            lambda _: read_counter(counter), f"reading counter {self.name!r}", deadline
        )
        return self.plan.check(counter, value) or 0

    def _set(self, value: int, force: bool) -> Flow[int]:
        """The flow of ``set()``: one conditional UpdateItem (1 write unit)."""
        value = whole_number("value", value, minimum=0, table=self.table)
        deadline = self._begin()
        counter = yield from self._counter_item(deadline)
        values: dict[str, AttributeValueTypeDef] = {":value": {"N": str(value)}, **TYPE_VALUES}
        request: UpdateItemInputTypeDef = {
            "TableName": self.table,
            "Key": counter.key,
            "UpdateExpression": f"SET #v = :value, {TYPE_SET}",
            "ExpressionAttributeNames": {"#v": self.counter_attribute, **TYPE_NAMES},
            "ExpressionAttributeValues": values,
            "ReturnConsumedCapacity": "TOTAL",
        }
        if not force:
            request["ConditionExpression"] = (
                "attribute_not_exists(#v) OR "
                "(attribute_type(#v, :number) AND #v BETWEEN :zero AND :value)"
            )
            values[":number"] = {"S": "N"}
            values[":zero"] = {"N": "0"}
            request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"

        def attempt(_: int) -> Flow[int]:
            try:
                yield update_item(request, billed=1.0)  # the counter item is < 1 KB
            except ClientError as exc:
                if error_code(exc) == "ConditionalCheckFailedException":
                    old_value = error_response(exc).get("Item", {}).get(self.counter_attribute)
                    old = self.plan.check(counter, old_value)
                    raise CounterBackwardsError(
                        f"Refusing to move counter {self.name!r} of table {self.table!r} "
                        f"backwards from {old} to {value}: ids after {value} were already given "
                        "out and would be given out again. Pass force=True (--force) if you "
                        "really mean it.",
                        table=self.table,
                        cause=exc,
                    ) from exc
                raise
            return value

        return (yield from self._attempts(attempt, f"setting counter {self.name!r}", deadline))


def advance(
    plan: CounterPlan,
    counter: CounterItem,
    count: int,
    deadline: Deadline,
    attempts: Attempts,
    wall_clock: Callable[[], float],
    request: UpdateItemInputTypeDef | None = None,
) -> Flow[range]:
    """``count`` ids of the counter ``plan`` describes, at ``counter``, with one write (its
    ``request``, when built before), through the retry layer ``attempts``; idempotent writes
    are dated by ``wall_clock`` (:func:`~ddbkeys.ids._exact.exact_advance`)."""
    if plan.idempotent:
        return (yield from exact_advance(plan, counter, count, deadline, attempts, wall_clock))
    increment = count * plan.step
    request = request or plan.request(counter, count)

    def attempt(n: int) -> Flow[range]:
        try:
            response = yield update_item(request, billed=1.0)
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                old = error_response(exc).get("Item", {}).get(plan.counter_attribute)
                at = plan.check(counter, old)  # CounterStateError: no valid counter
                raise plan.exhausted(at, count) from exc
            if error_code(exc) == "ValidationException":
                # A string, a list or a map cannot be added to, and a number past 38 digits
                # cannot be stored: nothing moved. Say what the item holds, or that
                # --count or --step ids would pass 10**38 - 1.
                at = plan.check(counter, (yield from read_counter(counter)))
                if at is not None and at + increment > MAX_ID:
                    raise plan.exhausted(at, count) from exc
            raise
        raw = response.get("Attributes", {}).get(plan.counter_attribute)
        if not isinstance(raw, Mapping):  # (DynamoDB's answer to an ADD or SET holds it)
            what = f"counter attribute {plan.counter_attribute!r}"
            raise unexpected_answer("UpdateItem", plan.table, what, response)
        digits = raw.get("N")
        magnitude = digits.lstrip("-") if isinstance(digits, str) else ""
        if isinstance(digits, str) and magnitude.isdigit() and len(magnitude) <= 38:
            now = int(digits)  # (within 10**38 - 1)
            if now >= increment or (now >= 0 and now - increment == plan.start - plan.step):
                # (or a new counter whose first id is below its step: start=0, say)
                return range(now - increment + plan.step, now + 1, plan.step)
        try:
            plan.check(counter, plan.before(raw, increment))  # what it held before
            last = plan.held(counter, raw)  # and where it is now, within 10**38 - 1
        except CounterStateError:
            # It held a fraction or a negative number, or it is now past the largest
            # number (5.5 + 1 = 6.5): put it back as it was, then say why.
            yield from plan.undo(counter, increment, deadline, attempts)
            raise plan.state_before(counter, raw, increment, retried=n > 0) from None
        return range(last - increment + plan.step, last + 1, plan.step)

    moved: range = yield from attempts(attempt, f"moving counter {plan.name!r}", deadline)
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


def hand_back(counter: CounterCore, plan: HandBack, deadline: Deadline) -> Flow[bool]:
    """A block allocator's ``close()``: the counter set back to ``plan.value`` (None: removed)
    if it still holds ``plan.top``, with one conditional update, True when applied; once (as
    :meth:`~ddbkeys.ids._counter_plan.CounterPlan.once` says), so that a first try arriving after
    a retry was applied and another allocator reserved the same block again does nothing."""
    assert plan.top is not None
    item = yield from counter._counter_item(deadline)
    values: dict[str, AttributeValueTypeDef] = {":top": {"N": str(plan.top)}}
    update = f"REMOVE #v SET {TYPE_SET}"
    if plan.value is not None:
        update, values[":value"] = f"SET #v = :value, {TYPE_SET}", {"N": str(plan.value)}
    what = f"handing ids back to counter {counter.name!r}"
    once = counter.plan.once(
        item, update, values, deadline, counter._attempts, what, condition="#v = :top"
    )
    return (yield from once)


class AtomicCounter(CounterCore, IdStrategy):
    __doc__ = CounterCore.__doc__

    _group: GroupCommit[Want, range] | None

    def _start_group(self, enabled: bool) -> None:
        self._group = (
            GroupCommit(self._commit, MAX_COALESCED, linger=COALESCE_LINGER, fill=True)
            if enabled
            else None
        )

    def _commit(self, wants: Sequence[Want]) -> list[range | BaseException]:
        """One coalesced write (run by the leading thread)."""
        return self._run(self._coalesced(wants))

    def next(self) -> int:
        """The next id."""
        return self.reserve(1)[0]

    def reserve(self, count: int) -> range:
        """``count`` consecutive ids (``step`` apart), taken with one write (shared with
        concurrent calls, with ``group_commit``)."""
        count = whole_number("count", count, table=self.table)
        if self._group is None:
            return self._run(self._advance(count))
        return self._group.submit(Want(count, self._begin()))

    def current(self) -> int:
        """The last id given out (0 before the first)."""
        return self._run(self._current())

    def set(self, value: int, *, force: bool = False) -> int:
        """Make ``value`` the last id given out, so ``next()`` returns ``value + step``.

        Refuses to move the counter backwards (which would give ids out twice) unless ``force``.
        The check is a condition on the write itself, not a read followed by a write. A counter
        that holds what no counter may (a string, a list, a number below 0) is replaced only with
        ``force``; one that holds a fraction from 0 to ``value`` is replaced without it (that
        moves it forward).
        """
        return self._run(self._set(value, force))

    def counter_item(self) -> CounterItem:
        """Where the counter lives: its table, key and attribute (one DescribeTable the first
        time, to find the key from the table's key schema)."""
        return self._run(self._counter_item(self._begin()))


def _flag(name: str, value: object, table: str | None) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True or False, not {value!r}.", table=table)
    return value
