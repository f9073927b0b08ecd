"""The atomic counter (one UpdateItem per id, as in "Implement resource counters with Amazon
DynamoDB" and "How to generate auto-incrementing IDs in DynamoDB"): the flows of its calls, each
of its core (:class:`~ddbkeys.ids._counter_core.CounterCore`) through its link
(:class:`~ddbkeys.ids._link.Link`), and the sync :class:`AtomicCounter` that runs them on the sync
driver (:mod:`ddbkeys.aio._ids` runs the same flows on the asyncio one)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys._capacity import Usage
from ddbkeys._clients import as_client
from ddbkeys._core.reads import Settable, Through
from ddbkeys._core.steps import Flow, update_item
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import ConfigurationError, DdbKeysError, error_code
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys._schema import TableInfo, check_name
from ddbkeys._translate import error_response
from ddbkeys.ids._base import (
    TYPE_SET,
    TYPE_VALUES,
    CounterItem,
    IdStrategy,
    check_counter_attribute,
    counter_key_from,
)
from ddbkeys.ids._counter_core import CounterCore
from ddbkeys.ids._counter_item import COUNTER_ONLY, counter_names, not_a_counter, read_counter
from ddbkeys.ids._counter_writes import Want, advance, coalesced
from ddbkeys.ids._group import GroupCommit
from ddbkeys.ids._link import Link, afresh
from ddbkeys.ids._slots import CLOCK_MARGIN, MOST_DEADLINE
from ddbkeys.ids._values import check_name_and_key, flag, whole_number

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, UpdateItemInputTypeDef

    from ddbkeys.ids._blocks_steps import HandBack

__all__ = [
    "MAX_COALESCED",
    "AtomicCounter",
    "CounterBackwardsError",
    "counter_core",
    "counter_item",
    "counter_link",
    "flag",
    "hand_back",
    "reading",
    "setting",
    "taking",
    "taking_for",
]

#: At most this many calls share one coalesced write.
MAX_COALESCED = 1000
#: While busy, a coalesced write waits at most this long for the callers of the last one to
#: come back (it goes as soon as they have): fuller writes, fewer of them.
COALESCE_LINGER = 0.001


class CounterBackwardsError(DdbKeysError):
    """``set()`` would move a counter backwards, and ``force`` was not given."""


# --- what both forms are made of ---------------------------------------------------------------


def counter_link(
    connected: tuple[Any, str | None],
    retry: RetryPolicy | None,
    usage: Usage | None,
    deadline: float | None,
) -> Link:
    """The counter's link to its table (global tables are allowed: its single-item writes are
    safe on them)."""
    return Link(*connected, "AtomicCounter", retry=retry, usage=usage, deadline=deadline)


def counter_core(
    link: Link,
    name: object,
    key_attribute: object,
    counter_key: object,
    counter_attribute: object,
    start: object,
    step: object,
    maximum: object,
    idempotent: object,
) -> CounterCore:
    """The counter's core from its settings, each checked (a :class:`ConfigurationError` names
    the one at fault)."""
    table = link.table
    name = check_name("counter name", name, table=table)
    attribute = check_counter_attribute(counter_attribute, table=table)
    key_name = check_name("key attribute", key_attribute, table=table) if key_attribute else None
    if counter_key is not None and not isinstance(counter_key, Mapping):
        raise ConfigurationError(
            f"counter_key must be a mapping of key attributes to values, not {counter_key!r}.",
            table=table,
        )
    check_name_and_key("AtomicCounter", name, "counter", counter_key, table=table)
    first = whole_number("start", start, minimum=0, table=table)
    apart = whole_number("step", step, table=table)
    most = None if maximum is None else whole_number("maximum", maximum, minimum=first, table=table)
    exact = flag("idempotent", idempotent, table)
    if exact and (link.deadline is None or link.deadline > MOST_DEADLINE):
        raise ConfigurationError(
            f"idempotent=True needs a deadline of at most {MOST_DEADLINE:g} s, not "
            f"{link.deadline!r}: a retried write is recognised for as long as the call may "
            f"send it (its deadline, plus {CLOCK_MARGIN:g} s for clocks that disagree).",
            table=table,
        )
    return CounterCore(table, name, attribute, first, apart, most, exact, key_name, counter_key)


# --- the flows of its calls --------------------------------------------------------------------


def counter_item(core: CounterCore, link: Link, deadline: Deadline) -> Flow[CounterItem]:
    """Where the counter lives (its key found from the table's key schema on first use, kept by
    the link until the table's description is dropped)."""
    counter = link.known.counter
    if counter is None:
        info = yield from link.table_info(deadline)
        key = counter_key_from(info, core.table, core.name, core.key_attribute, core.counter_key)
        counter = link.known.counter = CounterItem(core.table, key, core.counter_attribute)
    return counter


@afresh
def taking(
    core: CounterCore,
    link: Link,
    count: int,
    wall_clock: Callable[[], float],
    deadline: Deadline | None = None,
) -> Flow[range]:
    """``count`` ids, with one write: the flow of ``next()`` and ``reserve()`` (next()'s
    request is built once)."""
    deadline = deadline or link.begin()
    known = link.known
    counter = known.counter or (yield from counter_item(core, link, deadline))
    request = None
    if not core.idempotent:
        request = known.request if count == 1 else None
        if request is None:
            request = core.request(counter, count)
            if count == 1:
                known.request = request
    return (yield from advance(core, counter, count, deadline, link.attempts, wall_clock, request))


@afresh
def taking_for(
    core: CounterCore, link: Link, wants: Sequence[Want], wall_clock: Callable[[], float]
) -> Flow[list[range | BaseException]]:
    """One write for the calls of a group (see :func:`coalesced`)."""

    def advance_by(count: int, deadline: Deadline) -> Flow[range]:
        return taking(core, link, count, wall_clock, deadline)

    return (yield from coalesced(wants, advance_by))


@afresh
def reading(core: CounterCore, link: Link) -> Flow[int]:
    """The flow of ``current()``: one strongly consistent GetItem (1 read unit)."""
    deadline = link.begin()
    counter = yield from counter_item(core, link, deadline)
    value = yield from link.attempts(
        lambda _: read_counter(counter), f"reading counter {core.label}", deadline
    )
    return core.check(counter, value) or 0


@afresh
def setting(core: CounterCore, link: Link, value: int, force: bool) -> Flow[int]:
    """The flow of ``set()``: one conditional UpdateItem (1 write unit)."""
    value = whole_number("value", value, minimum=0, table=core.table)
    deadline = link.begin()
    counter = yield from counter_item(core, link, deadline)
    values: dict[str, AttributeValueTypeDef] = {":value": {"N": str(value)}, **TYPE_VALUES}
    request: UpdateItemInputTypeDef = {
        "TableName": core.table,
        "Key": counter.key,
        "UpdateExpression": f"SET #v = :value, {TYPE_SET}",
        "ExpressionAttributeNames": counter_names(counter),
        "ExpressionAttributeValues": values,
        "ConditionExpression": COUNTER_ONLY,  # (an item of yours is not made a counter)
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        "ReturnConsumedCapacity": "TOTAL",
    }
    if not force:
        request["ConditionExpression"] = (
            f"{COUNTER_ONLY} AND (attribute_not_exists(#v) OR "
            "(attribute_type(#v, :number) AND #v BETWEEN :zero AND :value))"
        )
        values[":number"] = {"S": "N"}
        values[":zero"] = {"N": "0"}
        request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"

    def attempt(_: int) -> Flow[int]:
        try:
            yield update_item(request, billed=1.0)  # the counter item is < 1 KB
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                item = error_response(exc).get("Item", {})
                mine = not_a_counter(counter, item)  # (an item of yours: left as it is)
                if mine is not None:
                    raise mine from exc
                old_value = item.get(core.counter_attribute)
                old = core.check(counter, old_value)
                raise CounterBackwardsError(
                    f"Refusing to move counter {core.label} of table {core.table!r} "
                    f"backwards from {old} to {value}: ids after {value} were already given "
                    "out and would be given out again. Pass force=True (--force) if you "
                    "really mean it.",
                    table=core.table,
                    cause=exc,
                ) from exc
            raise
        return value

    return (yield from link.attempts(attempt, f"setting counter {core.label}", deadline))


@afresh
def hand_back(core: CounterCore, link: Link, back: HandBack, deadline: Deadline) -> Flow[bool]:
    """A block allocator's ``close()``: the counter set back to ``back.value`` (None: removed)
    if it still holds ``back.top``, with one conditional update, True when applied; once (as
    :meth:`~ddbkeys.ids._counter_core.CounterCore.once` says), so that a first try arriving
    after a retry was applied and another allocator reserved the same block again does
    nothing."""
    assert back.top is not None
    item = yield from counter_item(core, link, deadline)
    values: dict[str, AttributeValueTypeDef] = {":top": {"N": str(back.top)}}
    update = f"REMOVE #v SET {TYPE_SET}"
    if back.value is not None:
        update, values[":value"] = f"SET #v = :value, {TYPE_SET}", {"N": str(back.value)}
    what = f"handing ids back to counter {core.label}"
    once = core.once(item, update, values, deadline, link.attempts, what, condition="#v = :top")
    return (yield from once)


class AtomicCounter(IdStrategy):
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
    but a whole number from 0 to 10**38 - 1 raises :class:`~ddbkeys.ids.CounterStateError` and the
    item is left as it was (the write's condition refuses a string, a map, a negative number or one
    past the maximum; a fraction, which no condition tells from a whole number, is moved, then put
    back exactly, ``ddbkeys_type`` too). Ids start at ``start`` and go up by ``step``; with
    ``maximum``, a call that would pass it raises :class:`SequenceExhaustedError` and moves
    nothing. Each call ends within ``deadline`` seconds. Nothing is sent before the first call.
    """

    #: The strategy's shape, whatever the driver (see :class:`~ddbkeys.ids.IdStrategy`).
    refuses_global_tables = False
    default_retry = RetryPolicy()

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
        self._link = link = counter_link(as_client(client, table), retry, usage, deadline)
        #: Its decisions (no client in it); the counter's settings below are its.
        self.core = counter_core(
            link,
            name,
            key_attribute,
            counter_key,
            counter_attribute,
            start,
            step,
            maximum,
            idempotent,
        )
        self._driver = SyncDriver(link.client, link.usage, link.guarded)
        #: Whether concurrent calls share one write (``group_commit=``, as the sequences').
        self.group_commit = flag("group_commit", group_commit, link.table)
        self._group = (
            GroupCommit(self._commit, MAX_COALESCED, linger=COALESCE_LINGER, fill=True)
            if self.group_commit
            else None
        )
        #: The wall clock (seconds since 1970) that dates the idempotent writes' slots.
        self.wall_clock: Callable[[], float] = time.time

    client: Through[Any] = Through("_link")
    table: Through[str] = Through("_link")
    retry: Through[RetryPolicy] = Through("_link")
    usage: Through[Usage] = Through("_link")
    deadline: Settable[float | None] = Settable("_link")
    allow_global_tables: Through[bool] = Through("_link")
    name: Through[str] = Through("core")
    key_attribute: Through[str | None] = Through("core")
    counter_attribute: Through[str] = Through("core")
    start: Through[int] = Through("core")
    step: Through[int] = Through("core")
    maximum: Through[int | None] = Through("core")
    idempotent: Through[bool] = Through("core")

    def _commit(self, wants: Sequence[Want]) -> list[range | BaseException]:
        """One coalesced write (run by the leading thread)."""
        return self._driver.run(taking_for(self.core, self._link, wants, self.wall_clock))

    def next(self) -> int:
        """The next id."""
        return self.reserve(1)[0]

    def reserve(self, count: int) -> range:
        """``count`` consecutive ids (``step`` apart), taken with one write (shared with
        concurrent calls, with ``group_commit``)."""
        count = whole_number("count", count, table=self._link.table)
        if self._group is None:
            return self._driver.run(taking(self.core, self._link, count, self.wall_clock))
        return self._group.submit(Want(count, self._link.begin()))

    def current(self) -> int:
        """The last id given out (0 before the first)."""
        return self._driver.run(reading(self.core, self._link))

    def set(self, value: int, *, force: bool = False) -> int:
        """Make ``value`` the last id given out, so ``next()`` returns ``value + step``.

        Refuses to move the counter backwards (which would give ids out twice) unless ``force``.
        The check is a condition on the write itself, not a read followed by a write. A counter
        that holds what no counter may (a string, a list, a number below 0) is replaced only with
        ``force``; one that holds a fraction from 0 to ``value`` is replaced without it (that
        moves it forward).
        """
        return self._driver.run(setting(self.core, self._link, value, force))

    def counter_item(self) -> CounterItem:
        """Where the counter lives: its table, key and attribute (one DescribeTable the first
        time, to find the key from the table's key schema)."""
        return self._driver.run(counter_item(self.core, self._link, self._link.begin()))

    def table_info(self, table: str | None = None) -> TableInfo:
        """A table's description (this counter's table by default): one DescribeTable the
        first time, within the counter's deadline."""
        return self._driver.run(self._link.table_info(self._link.begin(), table))

    def _begin(self) -> Deadline:
        """The deadline of a call that begins now (a block allocator's waits keep to it)."""
        return self._link.begin()

    def _hand_back(self, back: HandBack, deadline: Deadline) -> bool:
        """A block allocator's close: its unused ids handed back (see :func:`hand_back`)."""
        return self._driver.run(hand_back(self.core, self._link, back, deadline))
