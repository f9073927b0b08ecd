"""What both forms of the item-collection sequence share, driver aside (the AWS post on
auto-increment, "with a sort key"): its settings made a plan
(:class:`~ddbkeys.ids._collection_plan.CollectionPlan`, where every decision is), what the object
keeps between calls (the table's description, the highest numbers it wrote, the group commits in
use), and the flows of the public calls, which read the description and hand the table's keys to
the plan. The sync :class:`~ddbkeys.ids._collection.CollectionSequence` and the asyncio one
(:mod:`ddbkeys.aio._collection`) run them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage
from ddbkeys._core.reads import Through
from ddbkeys._core.steps import Flow
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys.ids._base import StrategyCore, earliest
from ddbkeys.ids._collection_plan import (
    MAX_BATCH,
    REQUERY_EVERY,
    CollectionPlan,
    Keys,
    OnConflict,
    PartitionKeyValue,
    Pending,
)
from ddbkeys.ids._group import GroupsInUse
from ddbkeys.ids._remembered import REMEMBERED, Remembered

if TYPE_CHECKING:
    pass

__all__ = ["MAX_BATCH", "REQUERY_EVERY", "CollectionCore", "OnConflict", "Pending"]


class CollectionCore(StrategyCore):
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
    collection's items are all deleted (it keeps the collection's partition key listed).

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

    refuses_global_tables = True
    default_retry = RetryPolicy(max_attempts=400, base_delay=0.002, max_delay=0.05)

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
        super().__init__(
            client,
            table,
            retry=retry,
            usage=usage,
            allow_global_tables=allow_global_tables,
            deadline=deadline,
        )
        #: Its decisions (no client in it); the sequence's settings below are its.
        self.plan = CollectionPlan(
            self.table,
            width,
            prefix,
            consistent_read,
            on_conflict,
            token_attribute,
            never_reuse,
            counter_attribute,
            remembered,
        )
        self.group_commit = group_commit
        #: The highest number written, per collection used last (at most ``remembered``).
        self._highest = Remembered(remembered)
        #: The group commits of the collections that calls are using now.
        self._groups: GroupsInUse[Any, Any] = GroupsInUse(self._new_group, self._group_gone)

    width: Through[int] = Through("plan")
    prefix: Through[str] = Through("plan")
    consistent_read: Through[bool] = Through("plan")
    on_conflict: Through[OnConflict] = Through("plan")
    token_attribute: Through[str] = Through("plan")
    never_reuse: Through[bool] = Through("plan")
    counter_attribute: Through[str] = Through("plan")

    def number_of(self, value: Mapping[str, Any]) -> int:
        """The number a sort key holds, or a clear error naming the value (no request)."""
        return self.plan.number_of(value)

    def _new_group(self) -> Any:
        """A group commit for one collection, in the driver's form."""
        raise NotImplementedError

    def _group_gone(self, key: Any) -> bool:
        """Whether the calls of a group's ``key`` can no longer end (none, in threads)."""
        return False

    # --- the public calls' flows -----------------------------------------------------------

    def _keys(self, deadline: Deadline) -> Flow[Keys]:
        """The table's partition and sort key (one DescribeTable the first time)."""
        info = yield from self._table_info(deadline)
        return self.plan.keys(info)

    def _prepare(
        self,
        deadline: Deadline,
        partition_key_value: PartitionKeyValue,
        item: Mapping[str, Any] | None,
        typed: bool,
    ) -> Flow[Pending]:
        """The typed item to write, with its partition key set, or the error that refuses it."""
        keys = yield from self._keys(deadline)
        return self.plan.prepare(keys, partition_key_value, item, typed, deadline)

    def _put_alone(
        self, partition_key_value: PartitionKeyValue, item: Mapping[str, Any] | None, typed: bool
    ) -> Flow[int]:
        """``put()`` without group commit: a write of its own."""
        pending = yield from self._prepare(self._begin(), partition_key_value, item, typed)
        (number,) = yield from self._commit([pending])
        return number

    def _current(self, partition_key_value: PartitionKeyValue) -> Flow[int]:
        """The flow of ``current()`` (see :meth:`CollectionPlan.current`)."""
        deadline = self._begin()
        keys = yield from self._keys(deadline)
        return (yield from self.plan.current(keys, partition_key_value, deadline, self._attempts))

    def _commit(self, batch: Sequence[Pending]) -> Flow[list[int]]:
        """Write the batch (of one collection) with its next numbers (see
        :meth:`CollectionPlan.commit`)."""
        keys = yield from self._keys(earliest(batch))
        return (yield from self.plan.commit(batch, keys, self._highest, self._attempts))
