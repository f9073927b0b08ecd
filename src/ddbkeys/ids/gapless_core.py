"""The gapless sequence's decisions, without I/O: which request comes next and what each
answer means (see :mod:`ddbkeys.core`). :mod:`ddbkeys.ids.gapless` runs them on the sync
driver and :mod:`ddbkeys.aio.gapless` on the asyncio one."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddbkeys.capacity import Usage, write_units
from ddbkeys.core.steps import Flow
from ddbkeys.errors import ConfigurationError
from ddbkeys.ids.base import (
    Contention,
    CounterItem,
    ItemExistsError,
    ItemKeyClashError,
    SequenceExhaustedError,
    StrategyCore,
    Throttled,
    cancelled_error,
    check_counter_attribute,
    counter_item_key,
    counter_written,
    put_if_new,
    read_counter,
    transact,
)
from ddbkeys.ids.cancellation import Cancellation, Verdict
from ddbkeys.ids.exact import exact_update
from ddbkeys.ids.values import (
    MAX_ID,
    check_item_key,
    check_padding,
    counter_value,
    id_value,
    item_key,
    show_key,
)
from ddbkeys.retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys.schema import KeyAttribute, TableInfo, check_name, check_table_name, to_attributes

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        TransactWriteItemTypeDef,
    )

__all__ = ["MAX_BATCH", "GaplessCore", "Pending", "earliest"]

Item = dict[str, "AttributeValueTypeDef"]
MAX_BATCH = 99  # TransactWriteItems takes 100 actions: the counter and 99 items


@dataclass
class _Plan:
    """One commit's plan: the counter value it builds on and the transaction's token."""

    last: int | None = None
    token: str | None = None
    streak: int = 0  # lost races in a row
    reread: bool = False  # read the counter before the next attempt (it waited)
    rtt: float = 0.0  # how long the last transaction took (seconds)


@dataclass(frozen=True)
class Pending:
    """A ``put()`` waiting for a group commit: its prepared item and its call's deadline."""

    item: Item
    deadline: Deadline


def earliest(pending: Sequence[Pending]) -> Deadline:
    """The deadline a shared commit keeps to: the one that ends first, so that no caller of
    the batch waits past its own."""
    return min((p.deadline for p in pending), key=lambda d: d.remaining())


class GaplessCore(StrategyCore):
    """Ids with no gaps: each item is written in the same transaction that moves the counter.

    Promises: **unique**, **increasing** and **gapless** ids (exactly 1, 2, 3, ... with one
    item per id), across threads and processes, through lost responses (each transaction
    carries a ClientRequestToken, so a retry of an applied one is not applied again) and
    failed writes (an item that already exists raises :class:`ItemExistsError` and uses up no
    id). Ids are given in commit order.

    How: the counter item's ``counter_attribute`` holds the last id; a commit reads it (or
    knows it from its own last commit, or from the old value a failed condition returns), then
    writes the items with ids ``last+1 ... last+k`` and sets the counter to ``last+k`` on
    condition that it still is ``last``. A lost race (the counter moved, or TransactionConflict)
    is retried with full-jitter backoff, at most ``retry.max_attempts`` times, within
    ``deadline`` seconds a call. When the counter moved, every writer that lost to that commit
    learnt the same value from the old image, and only one could win with it: each waits a
    full-jitter time up to the lost transaction's round trip (a measure of the contention),
    doubled with each loss in a row (at most ``retry.max_delay``, 0.25 s by default), then reads
    the counter afresh. From 8 independent processes taking one id at a time, that is 1.6 to 1.9
    transactions per id (benchmarks/ids.py, fleet row), where going again at once cost 3 to 4.

    Group commit: concurrent ``put()`` calls of one process (threads, or the tasks of one event
    loop with :mod:`ddbkeys.aio`) are combined into one transaction of up to 99 items, so
    contention on the counter falls as load rises. While busy, the committer lingers ``linger``
    seconds before each commit: batches grow, and writers in other processes get a window
    instead of being starved.

    Cost: a transaction of ``k`` items and the counter: on the service ``2 * (k + 1)`` write
    units (transactional writes cost double; DynamoDB Local reports half), so between 4 units
    (one item alone) and about 2.02 units per id (full batches). A lost race costs a cancelled
    transaction and a read. The counter's read is 1 read unit and is skipped when the last
    value is known.

    Where things go: the id goes into ``id_attribute`` of each item. When that is the table's
    partition (or sort) key, the id is the key: a number key holds the number, a string key
    ``prefix`` + the id padded with zeros to ``width`` digits (so key order is id order); a
    binary key cannot hold an id. Items carry the rest of the key. The counter item is
    ``{partition key: name}`` in the same table, or ``counter_key`` (the whole key) in
    ``counter_table`` (default: the same table; a transaction spans tables, so the counter need
    not be a row among your items); every commit also sets its ``ddbkeys_type = "counter"``
    (:mod:`ddbkeys.entity`), which your items never get. Refuses global tables unless
    ``allow_global_tables``. Nothing is sent before the first call.
    """

    refuses_global_tables = True
    default_retry = RetryPolicy(max_attempts=400, base_delay=0.002, max_delay=0.25)

    def __init__(
        self,
        client: object,
        table: str | None = None,
        name: str = "sequence",
        *,
        key_attribute: str | None = None,
        counter_key: Mapping[str, Any] | None = None,
        counter_table: str | None = None,
        counter_attribute: str = "last_id",
        id_attribute: str = "id",
        width: int = 10,
        prefix: str = "",
        group_commit: bool = True,
        max_batch: int = MAX_BATCH,
        linger: float = 0.002,
        retry: RetryPolicy | None = None,
        usage: Usage | None = None,
        allow_global_tables: bool = False,
        deadline: float | None = DEFAULT_DEADLINE,
    ) -> None:
        super().__init__(
            client,
            table,
            retry=retry,
            usage=usage,
            allow_global_tables=allow_global_tables,
            deadline=deadline,
        )
        self.name = check_name("sequence name", name, table=self.table)
        self.key_attribute = key_attribute
        self.counter_table = check_table_name(counter_table) if counter_table else self.table
        self.counter_attribute = check_counter_attribute(counter_attribute, table=self.table)
        self.id_attribute = check_name("id attribute", id_attribute, table=self.table)
        check_padding(width, prefix, table=self.table)
        self.width = width
        self.prefix = prefix
        if not isinstance(max_batch, int) or not 1 <= max_batch <= MAX_BATCH:
            raise ConfigurationError(f"max_batch must be 1 to {MAX_BATCH}, not {max_batch!r}.")
        if counter_key is not None and not isinstance(counter_key, Mapping):
            raise ConfigurationError(
                f"counter_key must be a mapping of key attributes to values, not {counter_key!r}.",
                table=self.table,
            )
        self._counter_key_given = counter_key
        self._counter: CounterItem | None = None
        self._last: int | None = None  # the counter's value after our last commit
        self._last_lock = threading.Lock()  # short sections only, never across a yield
        self._start_group(group_commit, max_batch, linger)

    def _start_group(self, enabled: bool, max_batch: int, linger: float) -> None:
        """Each driver's class makes its group commit here (threads, or asyncio tasks)."""

    # --- where things are ------------------------------------------------------------------

    def _counter_item(self, deadline: Deadline) -> Flow[CounterItem]:
        """Where the counter lives (its key found from the table's key schema on first use)."""
        if self._counter is None:
            key = yield from counter_item_key(
                self,
                deadline,
                self.name,
                self.key_attribute,
                given=self._counter_key_given,
                table=self.counter_table,
                key_parameter="counter_key",
            )
            self._counter = CounterItem(self.counter_table, key, self.counter_attribute)
        return self._counter

    def _forget_table(self, table: str) -> None:
        super()._forget_table(table)
        if table == self.counter_table:
            self._counter = None
            with self._last_lock:
                self._last = None

    def _known(self) -> tuple[TableInfo, CounterItem]:
        """The table's description and the counter item, which every commit reads first."""
        info = self._known_info()
        assert info is not None and self._counter is not None, "read at the start of the call"
        return info, self._counter

    def _id_target(self, info: TableInfo) -> KeyAttribute | None:
        """The key attribute that receives the id, or None when the id is not part of the key."""
        for key in (info.partition_key, info.sort_key):
            if key is not None and key.name == self.id_attribute:
                return key
        return None

    def _value(self, counter: CounterItem, value: Mapping[str, Any] | None) -> int:
        """The counter's number (0 when it is missing); CounterStateError for anything else."""
        number = counter_value(
            value, table=counter.table, key=counter.key, attribute=counter.attribute
        )
        return number or 0

    # --- preparing items -------------------------------------------------------------------

    def _prepared(
        self, items: Sequence[Mapping[str, Any]], typed: bool, deadline: Deadline
    ) -> Flow[list[Item]]:
        """The items checked against the table's key schema (before any write), typed."""
        info = yield from self._table_info(deadline)
        prepared = [
            self._prepare(item, info, typed=typed, position=n) for n, item in enumerate(items)
        ]
        counter = yield from self._counter_item(deadline)
        for n, item in enumerate(prepared):
            self._not_the_counter(item, info, counter, position=n)
        return prepared

    def _prepare(
        self, item: Mapping[str, Any], info: TableInfo, *, typed: bool, position: int = 0
    ) -> Item:
        prepared = to_attributes(item, table=self.table, typed=typed)
        where = _where(position)
        if self.id_attribute in prepared:
            raise ConfigurationError(
                f"{where} already has the id attribute {self.id_attribute!r}; the sequence "
                "sets it. Leave it out.",
                table=self.table,
            )
        check_item_key(prepared, info, skip=self.id_attribute, where=where)
        id_value(1, self._id_target(info), width=self.width, prefix=self.prefix, table=self.table)
        return prepared

    def _not_the_counter(
        self, item: Item, info: TableInfo, counter: CounterItem, *, position: int = 0
    ) -> None:
        if self._id_target(info) is not None or counter.table != self.table:
            return
        key = item_key(item, info)
        if key == counter.key:
            raise ItemKeyClashError(
                f"{_where(position)} has the key {show_key(key)}, which is the counter item's "
                f"key of sequence {self.name!r} in table {self.table!r}: give the item another "
                "key, or keep the counter elsewhere (counter_table=, counter_key=).",
                table=self.table,
            )

    def _distinct(self, prepared: Sequence[Item], info: TableInfo) -> None:
        """put_many's items have distinct keys (when the id is not part of the key)."""
        if self._id_target(info) is not None:
            return
        seen: dict[str, int] = {}
        for n, item in enumerate(prepared):
            shown = show_key(item_key(item, info))
            if shown in seen:
                raise ItemKeyClashError(
                    f"Items {seen[shown] + 1} and {n + 1} of put_many have the same key "
                    f"{shown} in table {self.table!r}: one transaction cannot write an item "
                    "twice. Nothing was written.",
                    table=self.table,
                )
            seen[shown] = n

    # --- the public calls' flows -----------------------------------------------------------

    def _put_alone(self, item: Item, deadline: Deadline) -> Flow[int]:
        """``put()`` without group commit: one transaction of its own."""
        (result,) = yield from self._commit([item], atomic=False, deadline=deadline)
        if isinstance(result, BaseException):
            raise result
        return result

    def _put_many(self, items: Sequence[Mapping[str, Any]], typed: bool) -> Flow[list[int]]:
        """``put_many()``: up to 99 items in one transaction, all or none."""
        if isinstance(items, Mapping) or not isinstance(items, Sequence):
            raise ConfigurationError(
                f"put_many takes a list of items, not {type(items).__name__}.", table=self.table
            )
        if not 1 <= len(items) <= MAX_BATCH:
            raise ConfigurationError(
                f"put_many takes 1 to {MAX_BATCH} items, not {len(items)}.", table=self.table
            )
        deadline = self._begin()
        prepared = yield from self._prepared(items, typed, deadline)
        self._distinct(prepared, self._known()[0])
        results = yield from self._commit(prepared, atomic=True, deadline=deadline)
        return [r for r in results if isinstance(r, int)]

    def _current(self) -> Flow[int]:
        """``current()``: one strongly consistent GetItem of the counter (1 read unit)."""
        deadline = self._begin()
        counter = yield from self._counter_item(deadline)
        value = yield from self._attempts(
            lambda _: read_counter(counter), f"reading sequence {self.name!r}", deadline
        )
        return self._value(counter, value)

    # --- the commit ------------------------------------------------------------------------

    def _commit(
        self, items: Sequence[Item], *, atomic: bool, deadline: Deadline
    ) -> Flow[list[int | BaseException]]:
        """Write ``items`` with consecutive ids in one transaction (retrying lost races).

        With ``atomic=False`` (group commit) an item that exists fails alone and the rest are
        written; with ``atomic=True`` it fails them all.
        """
        info = yield from self._table_info(deadline)
        counter = yield from self._counter_item(deadline)
        results: list[int | BaseException | None] = [None] * len(items)
        live = list(range(len(items)))
        plan = _Plan()

        def attempt(_: int) -> Flow[None]:
            if plan.token is None:
                with self._last_lock:
                    known = None if plan.reread else self._last
                if known is None:
                    known = self._value(counter, (yield from read_counter(counter)))
                plan.reread = False
                plan.last, plan.token = known, str(uuid.uuid4())
            last = plan.last
            assert last is not None
            actions, new, billed = self._transaction(items, live, last, info, counter)
            began = self.retry.clock()
            cancellation = yield from transact(actions, plan.token, items=len(live), billed=billed)
            plan.rtt = self.retry.clock() - began
            if cancellation is not None:
                self._cancelled(cancellation, items, live, results, plan, atomic=atomic)
                return
            for offset, index in enumerate(live, start=1):
                results[index] = last + offset
            live.clear()
            with self._last_lock:
                if self._last is None or self._last < new:
                    self._last = new

        while live:
            yield from self._attempts(
                attempt, f"writing {len(live)} item(s) with sequence {self.name!r}", deadline
            )
        return [r for r in results if r is not None]

    def _transaction(
        self,
        items: Sequence[Item],
        live: Sequence[int],
        last: int,
        info: TableInfo,
        counter: CounterItem,
    ) -> tuple[list[TransactWriteItemTypeDef], int, float]:
        """The transaction that writes the ``live`` items after ``last``: its actions, the
        counter's new value and the units it is billed."""
        new = last + len(live)
        if new > MAX_ID:
            raise self._exhausted(last, len(live))
        # (at 0: a new counter, or one that holds 0, seeded by another tool)
        update = exact_update(counter, last, new, base=0)
        target = self._id_target(info)
        written = []
        for offset, index in enumerate(live, start=1):
            item = dict(items[index])
            item[self.id_attribute] = id_value(
                last + offset, target, width=self.width, prefix=self.prefix, table=self.table
            )
            if target is not None and counter.table == self.table:
                self._check_not_counter(item_key(item, info), counter, last + offset)
            written.append(item)
        counter_image = counter_written(counter.key, counter.attribute, new)
        actions: list[TransactWriteItemTypeDef] = [update]
        actions += [put_if_new(self.table, i, info.partition_key.name) for i in written]
        return actions, new, write_units([counter_image, *written], transactional=True)

    def _exhausted(self, last: int, count: int) -> SequenceExhaustedError:
        return SequenceExhaustedError(
            f"Sequence {self.name!r} of table {self.table!r} is at {last}: {count} more id(s) "
            "would pass 10**38 - 1, the largest DynamoDB number.",
            table=self.table,
        )

    def _check_not_counter(self, key: Mapping[str, Any], counter: CounterItem, number: int) -> None:
        if key == counter.key:
            raise ItemKeyClashError(
                f"Id {number} would give the item the key {show_key(key)}, which is the counter "
                f"item's key of sequence {self.name!r} in table {self.table!r}: keep the counter "
                "outside the ids' range (counter_key=) or in another table (counter_table=).",
                table=self.table,
            )

    def _cancelled(
        self,
        cancellation: Cancellation,
        items: Sequence[Item],
        live: list[int],
        results: list[int | BaseException | None],
        plan: _Plan,
        *,
        atomic: bool,
    ) -> None:
        """What cancelled the transaction, and what to do next; updates the plan (a cancelled
        plan is never sent again), ``live`` and ``results``. Raises :class:`Contention` or
        :class:`Throttled` for the retry layer, or the error; returns to go on with the items
        left at once."""
        if cancellation.verdict is Verdict.INVALID:
            raise cancelled_error(self, cancellation)
        info, counter = self._known()
        last = plan.last
        plan.last = plan.token = None
        plan.streak += 1
        counter_moved = cancellation.failed(0)
        taken = [live[i - 1] for i in cancellation.failed_conditions if i >= 1]
        target = self._id_target(info)
        if counter_moved:
            old = cancellation.old_item(0) or {}
            # Another writer moved the counter: its old image says where it is now (or that it
            # holds something no counter may hold, which raises CounterStateError).
            now = self._value(counter, old.get(counter.attribute))
            with self._last_lock:
                self._last = now
            if now + len(live) > MAX_ID:  # (no wait for that news)
                raise self._exhausted(now, len(live))
        else:
            with self._last_lock:
                self._last = last if cancellation.verdict is Verdict.CONDITIONS else None
        if taken and (target is None or not counter_moved):
            # The key is taken and not by a racing writer of this sequence: either the item
            # exists (its key does not hold the id), or the id's key holds an item the sequence
            # did not write (the counter is behind the table).
            blocked = taken if target is None else list(live)
            for index in blocked:
                results[index] = self._exists_error(items[index], cancellation, last)
            if atomic:
                raise results[blocked[0]]  # type: ignore[misc]
            live[:] = [i for i in live if results[i] is None]
            if not counter_moved:
                return
        if counter_moved or (taken and target is not None):
            # Everyone who lost to the same commit learnt the same value from the old image:
            # going again at once with it, only one of them can win. Wait instead, a full-jitter
            # time scaled by the contention seen (how long the lost transaction took, doubled
            # with each loss in a row), then read the counter afresh.
            plan.reread = True
            raise Contention(wait=self._backoff(plan))
        if cancellation.verdict is Verdict.THROTTLED:
            raise Throttled(cancellation.describe())
        raise Contention(immediate=False)

    def _backoff(self, plan: _Plan) -> float:
        """The wait after a lost race: uniform up to the lost transaction's round trip (at
        least the policy's ``base_delay``) doubled with each loss in a row, at most the policy's
        ``max_delay``."""
        policy = self.retry
        ceiling = max(plan.rtt, policy.base_delay) * 2 ** min(plan.streak, 30)
        return float(policy.random() * min(policy.max_delay, ceiling))

    def _exists_error(
        self, item: Item, cancellation: Cancellation, last: int | None
    ) -> ItemExistsError:
        info, _ = self._known()
        if self._id_target(info) is None:
            key = item_key(item, info)
            return ItemExistsError(
                f"An item with the key {show_key(key)} already exists in table {self.table!r}; "
                "it was not written and used up no id.",
                key=dict(key),
                table=self.table,
            )
        failed = min(i for i in cancellation.failed_conditions if i >= 1)
        number = (last or 0) + failed
        old = cancellation.old_item(failed)
        key = item_key(old, info) if old else {}
        return ItemExistsError(
            f"Id {number} is taken: an item with the key {show_key(key) if key else number} "
            f"already exists in table {self.table!r}, but sequence {self.name!r} is at "
            f"{last or 0} (the counter is behind the ids in the table: was it set back?). The "
            "item was not written and used up no id.",
            key=dict(key),
            table=self.table,
        )


def _where(position: int) -> str:
    return "The item" if not position else f"Item {position + 1}"
