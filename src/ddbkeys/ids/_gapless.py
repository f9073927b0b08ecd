"""The gapless sequence (the transactional optimistic lock): the counter and the item move
together, in one transaction. The flows of its calls, each of its core
(:class:`~ddbkeys.ids._gapless_core.GaplessCore`, where every decision is) through its link
(:class:`~ddbkeys.ids._link.Link`), and the sync :class:`GaplessSequence` that runs them on the
sync driver (threads share commits through :class:`GroupCommit`); :mod:`ddbkeys.aio._gapless`
runs the same flows on the asyncio one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage
from ddbkeys._clients import as_client
from ddbkeys._core.reads import Settable, Through
from ddbkeys._core.steps import Flow
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import ConfigurationError
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys._schema import TableInfo
from ddbkeys.ids._base import CounterItem, IdStrategy
from ddbkeys.ids._gapless_core import (
    MAX_BATCH,
    RETRY,
    Commit,
    GaplessCore,
    Item,
    Pending,
    earliest,
)
from ddbkeys.ids._gapless_state import CounterState
from ddbkeys.ids._group import GroupCommit
from ddbkeys.ids._link import Link, afresh, once_more, sequence_link
from ddbkeys.ids._values import flag

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["MAX_BATCH", "GaplessSequence", "counter_state", "gapless_core"]


# --- what both forms are made of ---------------------------------------------------------------


def gapless_core(
    link: Link,
    name: str,
    key_attribute: str | None,
    counter_key: Mapping[str, Any] | None,
    counter_table: str | None,
    counter_attribute: str,
    id_attribute: str,
    width: int,
    prefix: str,
    max_batch: int,
) -> GaplessCore:
    """The sequence's core from its settings (each checked)."""
    return GaplessCore(
        link.table,
        name,
        key_attribute,
        counter_key,
        counter_table or "",
        counter_attribute,
        id_attribute,
        width,
        prefix,
        max_batch,
        link.retry,
    )


def counter_state(core: GaplessCore, link: Link) -> CounterState:
    """What a sequence knows of its counter between calls, forgotten with the counter table's
    description."""
    state = CounterState()

    def forgot(table: str) -> None:
        if table == core.counter_table:
            state.learn(None)

    link.forgot = forgot
    return state


# --- the flows of its calls --------------------------------------------------------------------


def counter_item(core: GaplessCore, link: Link, deadline: Deadline) -> Flow[CounterItem]:
    """Where the counter lives (its key found from the counter table's key schema on first use,
    kept by the link until a description is dropped)."""
    counter = link.known.counter
    if counter is None:
        info = yield from link.table_info(deadline, core.counter_table)
        counter = link.known.counter = core.counter_item(info)
    return counter


def known_key(core: GaplessCore, link: Link, later: str) -> dict[str, AttributeValueTypeDef]:
    """The counter item's key, once a call has found it (no request); ``later`` says how to
    read it when it is not known yet."""
    counter = link.known.counter
    if counter is None:
        raise ConfigurationError(
            f"The counter key of sequence {core.label} is not known yet (it comes from the "
            f"table's key schema): use {later}.",
            table=core.table,
        )
    return counter.key


def prepared(
    core: GaplessCore,
    link: Link,
    items: Sequence[Mapping[str, Any]],
    typed: bool,
    deadline: Deadline,
) -> Flow[list[Item]]:
    """The items checked against the table's key schema (before any write), typed."""
    info = yield from link.table_info(deadline)
    ready = core.prepare(items, typed, info)
    counter = yield from counter_item(core, link, deadline)
    core.not_the_counter(ready, info, counter)
    return ready


@afresh
def pending(core: GaplessCore, link: Link, item: Mapping[str, Any], typed: bool) -> Flow[Pending]:
    """A ``put()`` call begun: its item checked and typed (before any write), and its
    deadline."""
    deadline = link.begin()
    (ready,) = yield from prepared(core, link, [item], typed, deadline)
    return Pending(ready, deadline)


@afresh
def put_alone(
    core: GaplessCore, link: Link, state: CounterState, item: Mapping[str, Any], typed: bool
) -> Flow[int]:
    """``put()`` without group commit: one transaction of its own."""
    call = yield from pending(core, link, item, typed)
    (result,) = yield from shared(core, link, state, [call])
    if isinstance(result, BaseException):
        raise result
    return result


@afresh
def put_many(
    core: GaplessCore,
    link: Link,
    state: CounterState,
    items: Sequence[Mapping[str, Any]],
    typed: bool,
) -> Flow[list[int]]:
    """``put_many()``: up to 99 items in one transaction, all or none."""
    items = core.many(items)
    deadline = link.begin()
    ready = yield from prepared(core, link, items, typed, deadline)
    core.distinct(ready, (yield from link.table_info(deadline)))
    results = yield from commit(core, link, state, ready, atomic=True, deadline=deadline)
    return [r for r in results if isinstance(r, int)]


@afresh
def current(core: GaplessCore, link: Link) -> Flow[int]:
    """``current()``: one strongly consistent GetItem of the counter (1 read unit)."""
    deadline = link.begin()
    counter = yield from counter_item(core, link, deadline)
    return (yield from core.current(counter, deadline, link.attempts))


def commit(
    core: GaplessCore,
    link: Link,
    state: CounterState,
    items: Sequence[Item],
    *,
    atomic: bool,
    deadline: Deadline,
) -> Flow[list[int | BaseException]]:
    """Write ``items`` with consecutive ids in one transaction (the core's
    :meth:`~ddbkeys.ids._gapless_core.GaplessCore.write`)."""
    info = yield from link.table_info(deadline)
    counter = yield from counter_item(core, link, deadline)
    batch = Commit(items, info, counter, atomic=atomic)
    return (yield from core.write(batch, deadline, state, link.attempts))


def shared(
    core: GaplessCore, link: Link, state: CounterState, calls: Sequence[Pending]
) -> Flow[list[int | BaseException]]:
    """One shared commit of a group: its callers' items, within the deadline that ends
    first."""
    items = [p.item for p in calls]
    return (yield from commit(core, link, state, items, atomic=False, deadline=earliest(calls)))


class GaplessSequence(IdStrategy):
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
    full-jitter time up to 4 times its lost attempt's round trip (the counter's read and the
    transaction: a measure of the contention), doubled with each further loss in a row (at most
    ``retry.max_delay``, 0.25 s by default, or 16 round trips, whichever is longer), then reads
    the counter afresh. From 8 independent processes taking one id at a time, a counting proxy
    sees about 1.5 to 1.7 transactions per id, cancelled ones included (benchmarks/ids.py, fleet
    row), where a wait of one round trip cost 2.4 to 2.9 and going again at once 3 to 4.

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

    #: The strategy's shape, whatever the driver (see :class:`~ddbkeys.ids.IdStrategy`).
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
        connected = as_client(client, table)
        self._link = sequence_link(
            GaplessSequence, connected, retry, usage, allow_global_tables, deadline
        )
        #: Its decisions (no client in it); the sequence's settings below are its.
        self.core = gapless_core(
            self._link,
            name,
            key_attribute,
            counter_key,
            counter_table,
            counter_attribute,
            id_attribute,
            width,
            prefix,
            max_batch,
        )
        #: What it knows of the counter's value between calls.
        self.state = counter_state(self.core, self._link)
        self._driver = SyncDriver(self._link.client, self._link.usage, self._link.guarded)
        self._group = (
            GroupCommit(self._commit, max_batch, linger=linger)
            if flag("group_commit", group_commit, self._link.table)
            else None
        )

    client: Through[Any] = Through("_link")
    table: Through[str] = Through("_link")
    retry: Through[RetryPolicy] = Through("_link")
    usage: Through[Usage] = Through("_link")
    deadline: Settable[float | None] = Settable("_link")
    allow_global_tables: Through[bool] = Through("_link")
    name: Through[str] = Through("core")
    key_attribute: Through[str | None] = Through("core")
    counter_table: Through[str] = Through("core")
    counter_attribute: Through[str] = Through("core")
    id_attribute: Through[str] = Through("core")
    width: Through[int] = Through("core")
    prefix: Through[str] = Through("core")

    def _commit(self, calls: Sequence[Pending]) -> list[int | BaseException]:
        """One shared commit of the group (run by the leading thread)."""
        return self._driver.run(shared(self.core, self._link, self.state, calls))

    def put(self, item: Mapping[str, Any], *, typed: bool = False) -> int:
        """Write ``item`` with the next id, and return the id.

        ``typed=True``: the item is in DynamoDB's typed form (``{"name": {"S": "x"}}``).
        """
        if self._group is None:
            return self._driver.run(put_alone(self.core, self._link, self.state, item, typed))
        group, link = self._group, self._link
        return once_more(
            link, lambda: group.submit(self._driver.run(pending(self.core, link, item, typed)))
        )

    def put_many(self, items: Sequence[Mapping[str, Any]], *, typed: bool = False) -> list[int]:
        """Write up to 99 items in one transaction with consecutive ids; all or none.

        If one of them already exists, :class:`ItemExistsError` names it and nothing is written.
        """
        return self._driver.run(put_many(self.core, self._link, self.state, items, typed))

    def current(self) -> int:
        """The last id given out (0 before the first)."""
        return self._driver.run(current(self.core, self._link))

    def counter_item(self) -> CounterItem:
        """Where the counter lives: its table, key and attribute (one DescribeTable the first
        time, to find the key from the table's key schema)."""
        return self._driver.run(counter_item(self.core, self._link, self._link.begin()))

    @property
    def counter_key(self) -> dict[str, AttributeValueTypeDef]:
        """The counter item's key, once a call has found it (a property sends no request)."""
        return known_key(self.core, self._link, "counter_item().key, which reads it")

    def table_info(self, table: str | None = None) -> TableInfo:
        """A table's description (this sequence's table by default): one DescribeTable the
        first time, within the sequence's deadline; the global-table guard applied."""
        return self._driver.run(self._link.table_info(self._link.begin(), table))
