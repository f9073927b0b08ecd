"""The item-collection sequence for asyncio: the same name, settings and flows as
:class:`ddbkeys.ids.CollectionSequence`, with ``await``. Concurrent ``put()`` calls of one event
loop on one collection share commits through :class:`~ddbkeys.ids._group.AsyncGroupCommit`: one
group per collection and event loop, so that the sequence may be used from one loop after
another (with a client that is open in each)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ddbkeys._schema import KeyAttribute
from ddbkeys.aio._base import AsyncIdStrategy
from ddbkeys.ids._collection_core import CollectionCore
from ddbkeys.ids._collection_plan import OnConflict, PartitionKeyValue, Pending
from ddbkeys.ids._group import AsyncGroupCommit

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["CollectionSequence", "OnConflict"]


class CollectionSequence(CollectionCore, AsyncIdStrategy):
    __doc__ = CollectionCore.__doc__

    async def put(
        self,
        partition_key_value: PartitionKeyValue,
        item: Mapping[str, Any] | None = None,
        *,
        typed: bool = False,
    ) -> int:
        """Store ``item`` in the collection ``partition_key_value`` with the next number as its
        sort key, and return the number (see the sync ``CollectionSequence.put``)."""
        if not self.group_commit:
            return await self._run(self._put_alone(partition_key_value, item, typed))
        pending = await self._run(self._prepare(self._begin(), partition_key_value, item, typed))
        # One group per collection and event loop (its futures belong to one loop), keyed by
        # the loop itself: a new loop may get the id of one that is gone.
        with self._groups.using((asyncio.get_running_loop(), pending.collection)) as group:
            number: int = await group.submit(pending)
        return number

    def _new_group(self) -> AsyncGroupCommit[Pending, int]:
        return AsyncGroupCommit(lambda batch: self._run(self._commit(batch)), self.plan.max_batch)

    def _group_gone(self, key: Any) -> bool:
        """A group of a loop that was closed with calls still waiting (they never end)."""
        return bool(key[0].is_closed())

    async def check(
        self,
        partition_key_value: PartitionKeyValue,
        item: Mapping[str, Any] | None = None,
        *,
        typed: bool = False,
    ) -> None:
        """Raise the error :meth:`put` would raise for this item before sending it; at most 1
        DescribeTable, once per object."""
        await self._run(self._prepare(self._begin(), partition_key_value, item, typed))

    async def current(self, partition_key_value: PartitionKeyValue) -> int:
        """The last number given out in the collection, 0 before the first (see the sync
        ``CollectionSequence.current``)."""
        return await self._run(self._current(partition_key_value))

    async def keys(self) -> tuple[KeyAttribute, KeyAttribute]:
        """The table's partition and sort key (one DescribeTable the first time)."""
        return await self._run(self._keys(self._begin()))

    async def sort_key_value(self, number: int) -> AttributeValueTypeDef:
        """The sort key that holds ``number`` (one DescribeTable the first time)."""
        return self.plan.sort_key((await self.keys())[1], number)

    async def counter_key(self, partition_key_value: AttributeValueTypeDef) -> dict[str, Any]:
        """The key of a collection's counter item (``never_reuse``): the number 0."""
        return self.plan.counter_key(await self.keys(), partition_key_value)
