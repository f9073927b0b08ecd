"""The item-collection sequence for asyncio: the same name, settings and flows as
:class:`ddbkeys.ids.CollectionSequence` (:mod:`ddbkeys.ids._collection`), run on the asyncio
driver, with ``await``. Concurrent ``put()`` calls of one event loop on one collection share
commits through :class:`~ddbkeys.ids._group.AsyncGroupCommit`: one group per collection and event
loop, so that the sequence may be used from one loop after another (with a client that is open in
each)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage
from ddbkeys._core.reads import Settable, Through
from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._retry import DEFAULT_DEADLINE, RetryPolicy
from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.aio._client import as_async_client
from ddbkeys.ids import _collection as flows
from ddbkeys.ids._collection_core import CollectionCore, OnConflict, PartitionKeyValue, Pending
from ddbkeys.ids._group import AsyncGroupCommit, GroupsInUse
from ddbkeys.ids._link import once_more_async, sequence_link
from ddbkeys.ids._remembered import REMEMBERED, Remembered
from ddbkeys.ids._values import flag

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["CollectionSequence", "OnConflict"]

#: A group's key: its event loop (a new loop may get the id of one that is gone) and collection.
GroupKey = tuple[asyncio.AbstractEventLoop, str]


class CollectionSequence:
    __doc__ = flows.CollectionSequence.__doc__

    refuses_global_tables = flows.CollectionSequence.refuses_global_tables
    default_retry = flows.CollectionSequence.default_retry

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
        connected = as_async_client(client, table)
        self._link = sequence_link(
            flows.CollectionSequence, connected, retry, usage, allow_global_tables, deadline
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
        self._driver = AsyncDriver(
            self._link.client,
            self._link.usage,
            "ddbkeys.aio.CollectionSequence",
            self._link.guarded,
        )
        self.group_commit = flag("group_commit", group_commit, self._link.table)
        #: The highest number written, per collection used last (at most ``remembered``).
        self._highest = Remembered(remembered)
        self._link.forgot = lambda _: self._highest.clear()
        #: The group commits of the collections that calls are using now, by event loop; a
        #: group of a loop that was closed with calls still waiting (they never end) is gone.
        self._groups: GroupsInUse[GroupKey, AsyncGroupCommit[Pending, int]] = GroupsInUse(
            self._new_group, lambda key: bool(key[0].is_closed())
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

    def _new_group(self) -> AsyncGroupCommit[Pending, int]:
        async def write(batch: Sequence[Pending]) -> list[int]:
            commit = flows.commit(self.core, self._link, self._highest, batch)
            return await self._driver.run(commit)

        return AsyncGroupCommit(write, self.core.max_batch)

    async def put(
        self,
        partition_key_value: PartitionKeyValue,
        item: Mapping[str, Any] | None = None,
        *,
        typed: bool = False,
    ) -> int:
        """Store ``item`` in the collection ``partition_key_value`` with the next number as its
        sort key, and return the number (see the sync ``CollectionSequence.put``)."""
        core, link = self.core, self._link
        if not self.group_commit:
            alone = flows.put_alone(core, link, self._highest, partition_key_value, item, typed)
            return await self._driver.run(alone)

        async def grouped() -> int:
            pending = await self._driver.run(
                flows.prepare(core, link, partition_key_value, item, typed)
            )
            # One group per collection and event loop (its futures belong to one loop), keyed
            # by the loop itself: a new loop may get the id of one that is gone.
            with self._groups.using((asyncio.get_running_loop(), pending.collection)) as group:
                number: int = await group.submit(pending)
            return number

        return await once_more_async(link, grouped)

    async def check(
        self,
        partition_key_value: PartitionKeyValue,
        item: Mapping[str, Any] | None = None,
        *,
        typed: bool = False,
    ) -> None:
        """Raise the error :meth:`put` would raise for this item before sending it; at most 1
        DescribeTable, once per object."""
        await self._driver.run(
            flows.prepare(self.core, self._link, partition_key_value, item, typed)
        )

    async def current(self, partition_key_value: PartitionKeyValue) -> int:
        """The last number given out in the collection, 0 before the first (see the sync
        ``CollectionSequence.current``)."""
        return await self._driver.run(flows.current(self.core, self._link, partition_key_value))

    async def keys(self) -> tuple[KeyAttribute, KeyAttribute]:
        """The table's partition and sort key (one DescribeTable the first time)."""
        return await self._driver.run(flows.keys(self.core, self._link, self._link.begin()))

    async def sort_key_value(self, number: int) -> AttributeValueTypeDef:
        """The sort key that holds ``number`` (one DescribeTable the first time)."""
        return self.core.sort_key((await self.keys())[1], number)

    async def counter_key(self, partition_key_value: AttributeValueTypeDef) -> dict[str, Any]:
        """The key of a collection's counter item (``never_reuse``): the number 0."""
        return self.core.counter_key(await self.keys(), partition_key_value)

    def number_of(self, value: Mapping[str, Any]) -> int:
        """The number a sort key holds, or a clear error naming the value (no request)."""
        return self.core.number_of(value)

    async def table_info(self, table: str | None = None) -> TableInfo:
        """A table's description (this sequence's table by default): one DescribeTable the
        first time, within the sequence's deadline; the global-table guard applied."""
        return await self._driver.run(self._link.table_info(self._link.begin(), table))
