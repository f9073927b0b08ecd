"""What both forms of the gapless sequence share, driver aside: its settings made a plan
(:class:`~ddbkeys.ids._gapless_plan.GaplessPlan`, where every decision is), what the object keeps
between calls (the table's description, where the counter lives, the counter's last value), and
the flows of the public calls, which read the description and hand it to the plan.
:mod:`ddbkeys.ids._gapless` runs them on the sync driver and :mod:`ddbkeys.aio._gapless` on the
asyncio one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ddbkeys._capacity import Usage
from ddbkeys._core.reads import Through
from ddbkeys._core.steps import Flow
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys.ids._base import CounterItem, StrategyCore
from ddbkeys.ids._gapless_plan import (
    MAX_BATCH,
    RETRY,
    Commit,
    CounterState,
    GaplessPlan,
    Item,
    Pending,
    earliest,
)

__all__ = ["MAX_BATCH", "GaplessCore", "Pending", "earliest"]


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
    (:mod:`ddbkeys._entity`), which your items never get. Refuses global tables unless
    ``allow_global_tables``. Nothing is sent before the first call.
    """

    refuses_global_tables = True
    default_retry = RETRY

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
        #: Its decisions (no client in it); the sequence's settings below are its.
        self.plan = GaplessPlan(
            self.table,
            name,
            key_attribute,
            counter_key,
            counter_table or "",
            counter_attribute,
            id_attribute,
            width,
            prefix,
            max_batch,
            self.retry,
        )
        #: What it knows of the counter's value between calls.
        self.state = CounterState()
        self._counter: CounterItem | None = None
        self._start_group(group_commit, max_batch, linger)

    def _start_group(self, enabled: bool, max_batch: int, linger: float) -> None:
        """Each driver's class makes its group commit here (threads, or asyncio tasks)."""

    name: Through[str] = Through("plan")
    key_attribute: Through[str | None] = Through("plan")
    counter_table: Through[str] = Through("plan")
    counter_attribute: Through[str] = Through("plan")
    id_attribute: Through[str] = Through("plan")
    width: Through[int] = Through("plan")
    prefix: Through[str] = Through("plan")

    # --- what it keeps between calls -------------------------------------------------------

    def _counter_item(self, deadline: Deadline) -> Flow[CounterItem]:
        """Where the counter lives (its key found from the table's key schema on first use)."""
        if self._counter is None:
            info = yield from self._table_info(deadline, self.counter_table)
            self._counter = self.plan.counter_item(info)
        return self._counter

    def _forget_table(self, table: str) -> None:
        super()._forget_table(table)
        if table == self.counter_table:
            self._counter = None
            self.state.learn(None)

    # --- the public calls' flows -----------------------------------------------------------

    def _prepared(
        self, items: Sequence[Mapping[str, Any]], typed: bool, deadline: Deadline
    ) -> Flow[list[Item]]:
        """The items checked against the table's key schema (before any write), typed."""
        info = yield from self._table_info(deadline)
        prepared = self.plan.prepare(items, typed, info)
        counter = yield from self._counter_item(deadline)
        self.plan.not_the_counter(prepared, info, counter)
        return prepared

    def _pending(self, item: Mapping[str, Any], typed: bool) -> Flow[Pending]:
        """A ``put()`` call begun: its item checked and typed (before any write), and its
        deadline."""
        deadline = self._begin()
        (prepared,) = yield from self._prepared([item], typed, deadline)
        return Pending(prepared, deadline)

    def _put_alone(self, item: Mapping[str, Any], typed: bool) -> Flow[int]:
        """``put()`` without group commit: one transaction of its own."""
        pending = yield from self._pending(item, typed)
        (result,) = yield from self._shared([pending])
        if isinstance(result, BaseException):
            raise result
        return result

    def _put_many(self, items: Sequence[Mapping[str, Any]], typed: bool) -> Flow[list[int]]:
        """``put_many()``: up to 99 items in one transaction, all or none."""
        items = self.plan.many(items)
        deadline = self._begin()
        prepared = yield from self._prepared(items, typed, deadline)
        self.plan.distinct(prepared, (yield from self._table_info(deadline)))
        results = yield from self._commit(prepared, atomic=True, deadline=deadline)
        return [r for r in results if isinstance(r, int)]

    def _current(self) -> Flow[int]:
        """``current()``: one strongly consistent GetItem of the counter (1 read unit)."""
        deadline = self._begin()
        counter = yield from self._counter_item(deadline)
        return (yield from self.plan.current(counter, deadline, self._attempts))

    def _commit(
        self, items: Sequence[Item], *, atomic: bool, deadline: Deadline
    ) -> Flow[list[int | BaseException]]:
        """Write ``items`` with consecutive ids in one transaction (the plan's
        :meth:`~ddbkeys.ids._gapless_plan.GaplessPlan.write`)."""
        info = yield from self._table_info(deadline)
        counter = yield from self._counter_item(deadline)
        commit = Commit(items, info, counter, atomic=atomic)
        return (yield from self.plan.write(commit, deadline, self.state, self._attempts))

    def _shared(self, pending: Sequence[Pending]) -> Flow[list[int | BaseException]]:
        """One shared commit of a group: its callers' items, within the deadline that ends
        first."""
        items = [p.item for p in pending]
        return (yield from self._commit(items, atomic=False, deadline=earliest(pending)))
