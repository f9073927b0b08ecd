"""The item-collection sequence (the AWS post on auto-increment, "with a sort key"): the number
is the sort key. The flows of its calls, each of its core
(:class:`~ddbkeys.ids._collection_core.CollectionCore`, where every decision is) through its link
(:class:`~ddbkeys.ids._link.Link`), and the sync :class:`CollectionSequence` that runs them on the
sync driver (threads share commits through :class:`~ddbkeys.ids._group.GroupCommit`);
:mod:`ddbkeys.aio._collection` runs the same flows on the asyncio one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage
from ddbkeys._clients import as_client
from ddbkeys._core.reads import Settable, Through
from ddbkeys._core.steps import Flow
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.ids._base import IdStrategy, earliest
from ddbkeys.ids._collection_core import (
    CollectionCore,
    Keys,
    OnConflict,
    PartitionKeyValue,
    Pending,
)
from ddbkeys.ids._group import GroupCommit, GroupsInUse
from ddbkeys.ids._link import Link, afresh, once_more, sequence_link
from ddbkeys.ids._remembered import REMEMBERED, Remembered
from ddbkeys.ids._values import flag

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["RETRY", "CollectionSequence", "OnConflict"]

#: The sequence's retry policy when none is given.
RETRY = RetryPolicy(max_attempts=400, base_delay=0.002, max_delay=0.05)


# --- the flows of its calls --------------------------------------------------------------------


def keys(core: CollectionCore, link: Link, deadline: Deadline) -> Flow[Keys]:
    """The table's partition and sort key (one DescribeTable the first time)."""
    info = yield from link.table_info(deadline)
    return core.keys(info)


@afresh
def prepare(
    core: CollectionCore,
    link: Link,
    partition_key_value: PartitionKeyValue,
    item: Mapping[str, Any] | None,
    typed: bool,
) -> Flow[Pending]:
    """The typed item to write, with its partition key set, or the error that refuses it."""
    deadline = link.begin()
    table_keys = yield from keys(core, link, deadline)
    return core.prepare(table_keys, partition_key_value, item, typed, deadline)


@afresh
def put_alone(
    core: CollectionCore,
    link: Link,
    highest: Remembered,
    partition_key_value: PartitionKeyValue,
    item: Mapping[str, Any] | None,
    typed: bool,
) -> Flow[int]:
    """``put()`` without group commit: a write of its own."""
    pending = yield from prepare(core, link, partition_key_value, item, typed)
    (number,) = yield from commit(core, link, highest, [pending])
    return number


@afresh
def current(core: CollectionCore, link: Link, partition_key_value: PartitionKeyValue) -> Flow[int]:
    """The flow of ``current()`` (see :meth:`CollectionCore.current`)."""
    deadline = link.begin()
    table_keys = yield from keys(core, link, deadline)
    return (yield from core.current(table_keys, partition_key_value, deadline, link.attempts))


def commit(
    core: CollectionCore, link: Link, highest: Remembered, batch: Sequence[Pending]
) -> Flow[list[int]]:
    """Write the batch (of one collection) with its next numbers (see
    :meth:`CollectionCore.commit`)."""
    table_keys = yield from keys(core, link, earliest(batch))
    return (yield from core.commit(batch, table_keys, highest, link.attempts))


class CollectionSequence(IdStrategy):
    """Numbers 1, 2, 3, ... per item collection, kept in the sort key: no counter item at all.

    Promises, within one item collection (one partition key value): **unique**, **increasing**
    and **gapless** numbers, across threads, tasks and processes, through lost responses. Each
    number is written only if its item does not exist yet, and only after the number below it
    exists, so no number is skipped; a single put carries a token attribute by which a retried
    write whose response was lost recognises itself (ReturnValuesOnConditionCheckFailure), and
    a batch is one transaction with a ClientRequestToken.

    How: read the highest sort key of the collection (Query, newest first, Limit 1; strongly
    consistent when ``consistent_read``), then write ``highest + 1`` on condition that it does
    not exist. A lost race is retried, at most ``retry.max_attempts`` times, by
    ``on_conflict``: ``"next"`` tries the next number at once (the article's loop; every third
    lost race in a row it reads the highest again, since another writer is then far ahead),
    ``"requery"`` reads the highest again after a full-jitter wait. Within one process (one
    event loop for the asyncio form), concurrent ``put()`` calls on the same collection are
    combined: one caller writes them all, as one PutItem (one item) or one TransactWriteItems
    (several), and the highest number it wrote is remembered so the next write needs no query.

    Cost: the query is 0.5 read units (1 when consistent) and is skipped while the remembered
    number holds; a single put is 1 write unit per KB; a batch of ``k`` is ``2k`` write units on
    the service (transactional). A lost race costs a rejected write. Throughput is that of one
    partition per collection.

    Reuse: without a counter, the next number is the highest one *in the table* plus one. So
    after the highest item of a collection is deleted, its number is handed out again (5
    deleted, the next put gets 5), and an audit cannot see it. ``never_reuse=True`` prevents
    that: the highest number is also kept in a counter item of the collection (sort key number
    0, attribute ``counter_attribute``, and ``ddbkeys_type = "counter"``, see
    :mod:`ddbkeys._entity`) written in the same transaction as the items, so a
    number once given is never given again. Its cost: every put is a transaction of the items
    and the counter item, ``2 * (k + 1)`` write units on the service for ``k`` items (4 for one
    item, against 1 without), and the counter's strongly consistent read (1 read unit) replaces
    the query when the highest number is not known. The counter item stays when the
    collection's items are all deleted; it is ddbkeys' own item, so a partition-key listing
    leaves such a collection out (unless ``include_own_items``).

    Memory: the highest number written is remembered for the ``remembered`` collections
    written to last (10,000 by default, about 150 bytes each), a group commit only for the
    collections that calls are writing to now; so a long-lived sequence writing to ever new
    collections stays bounded. A collection forgotten is read again (the query, or the
    counter) by its next write: as for a new instance, a deleted highest number may then be
    given again (without ``never_reuse``).

    Numbers start at 1: items whose number sort key is 0 or negative (written by another tool)
    are left alone and not counted, so the next number is ``max(highest, 0) + 1``; the first
    put to a collection holding only such items gets 1, and a ``never_reuse`` counter is never
    set below 0.

    Sort keys: a number sort key holds the number itself; a string sort key holds
    ``prefix`` + the number padded with zeros to ``width`` digits (an error once it no longer
    fits). Refuses global tables unless ``allow_global_tables``. Each call ends within
    ``deadline`` seconds. Nothing is sent before the first call: the table's description is
    read then, once per object.
    """

    #: The strategy's shape, whatever the driver (see :class:`~ddbkeys.ids.IdStrategy`).
    refuses_global_tables = True
    default_retry = RETRY

    def __init__(
        self,
        client: object,
        table: str | None = None,
        *,
        width: int = 10,
        prefix: str = "",
        consistent_read: bool = True,
        on_conflict: OnConflict = "next",
        token_attribute: str = "ddbkeys_token",
        group_commit: bool = True,
        never_reuse: bool = False,
        counter_attribute: str = "last_number",
        retry: RetryPolicy | None = None,
        usage: Usage | None = None,
        allow_global_tables: bool = False,
        deadline: float | None = DEFAULT_DEADLINE,
        remembered: int = REMEMBERED,
    ) -> None:
        connected = as_client(client, table)
        self._link = sequence_link(
            CollectionSequence, connected, retry, usage, allow_global_tables, deadline
        )
        #: Its decisions (no client in it); the sequence's settings below are its.
        self.core = CollectionCore(
            self._link.table,
            width,
            prefix,
            consistent_read,
            on_conflict,
            token_attribute,
            never_reuse,
            counter_attribute,
            remembered,
        )
        self._driver = SyncDriver(self._link.client, self._link.usage, self._link.guarded)
        self.group_commit = flag("group_commit", group_commit, self._link.table)
        #: The highest number written, per collection used last (at most ``remembered``).
        self._highest = Remembered(remembered)
        self._link.forgot = lambda _: self._highest.clear()
        #: The group commits of the collections that calls are using now.
        self._groups: GroupsInUse[str, GroupCommit[Pending, int]] = GroupsInUse(
            self._new_group, lambda _: False
        )

    client: Through[Any] = Through("_link")
    table: Through[str] = Through("_link")
    retry: Through[RetryPolicy] = Through("_link")
    usage: Through[Usage] = Through("_link")
    deadline: Settable[float | None] = Settable("_link")
    allow_global_tables: Through[bool] = Through("_link")
    width: Through[int] = Through("core")
    prefix: Through[str] = Through("core")
    consistent_read: Through[bool] = Through("core")
    on_conflict: Through[OnConflict] = Through("core")
    token_attribute: Through[str] = Through("core")
    never_reuse: Through[bool] = Through("core")
    counter_attribute: Through[str] = Through("core")

    def _new_group(self) -> GroupCommit[Pending, int]:
        def write(batch: Sequence[Pending]) -> list[int]:
            return self._driver.run(commit(self.core, self._link, self._highest, batch))

        return GroupCommit(write, self.core.max_batch)

    def put(
        self,
        partition_key_value: PartitionKeyValue,
        item: Mapping[str, Any] | None = None,
        *,
        typed: bool = False,
    ) -> int:
        """Store ``item`` in the collection ``partition_key_value`` with the next number as its
        sort key, and return the number.

        ``typed=True``: the item is in DynamoDB's typed form (``{"name": {"S": "x"}}``).
        """
        core, link = self.core, self._link
        if not self.group_commit:
            alone = put_alone(core, link, self._highest, partition_key_value, item, typed)
            return self._driver.run(alone)

        def grouped() -> int:
            pending = self._driver.run(prepare(core, link, partition_key_value, item, typed))
            with self._groups.using(pending.collection) as group:
                number: int = group.submit(pending)
            return number

        return once_more(link, grouped)

    def check(
        self,
        partition_key_value: PartitionKeyValue,
        item: Mapping[str, Any] | None = None,
        *,
        typed: bool = False,
    ) -> None:
        """Raise the error :meth:`put` would raise for this item before sending it (a key of the
        wrong type, a value DynamoDB cannot store, an attribute the sequence sets); at most 1
        DescribeTable, once per object. Check every item of a batch first, then write them."""
        self._driver.run(prepare(self.core, self._link, partition_key_value, item, typed))

    def current(self, partition_key_value: PartitionKeyValue) -> int:
        """The last number given out in the collection, 0 before the first: the highest sort
        key (one Query of one item, 0.5 or 1 read unit), or with ``never_reuse`` the
        collection's counter (one strongly consistent GetItem, 1 read unit)."""
        return self._driver.run(current(self.core, self._link, partition_key_value))

    def keys(self) -> tuple[KeyAttribute, KeyAttribute]:
        """The table's partition and sort key (one DescribeTable the first time)."""
        return self._driver.run(keys(self.core, self._link, self._link.begin()))

    def sort_key_value(self, number: int) -> AttributeValueTypeDef:
        """The sort key that holds ``number`` (one DescribeTable the first time, to learn the
        sort key's type)."""
        return self.core.sort_key(self.keys()[1], number)

    def counter_key(self, partition_key_value: AttributeValueTypeDef) -> dict[str, Any]:
        """The key of a collection's counter item (``never_reuse``): the number 0."""
        return self.core.counter_key(self.keys(), partition_key_value)

    def number_of(self, value: Mapping[str, Any]) -> int:
        """The number a sort key holds, or a clear error naming the value (no request)."""
        return self.core.number_of(value)

    def table_info(self, table: str | None = None) -> TableInfo:
        """A table's description (this sequence's table by default): one DescribeTable the
        first time, within the sequence's deadline; the global-table guard applied."""
        return self._driver.run(self._link.table_info(self._link.begin(), table))
