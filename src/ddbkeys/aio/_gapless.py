"""The gapless sequence for asyncio: the same settings and flows as
:class:`ddbkeys.ids.GaplessSequence`, with ``await``. Concurrent ``put()`` calls of one event
loop share commits (:class:`~ddbkeys.ids._group.AsyncGroupCommit`): one group per event loop, so
that the sequence holds no task or future of a loop between calls and may be used from one loop
after another (with a client that is open in each)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ddbkeys._core.loops import PerLoop
from ddbkeys._errors import ConfigurationError
from ddbkeys.aio._base import AsyncIdStrategy
from ddbkeys.ids._base import CounterItem
from ddbkeys.ids._gapless_core import GaplessCore, Pending
from ddbkeys.ids._group import AsyncGroupCommit

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["GaplessSequence"]


class GaplessSequence(GaplessCore, AsyncIdStrategy):
    __doc__ = GaplessCore.__doc__

    _group: PerLoop[AsyncGroupCommit[Pending, int]] | None

    def _start_group(self, enabled: bool, max_batch: int, linger: float) -> None:
        def group() -> AsyncGroupCommit[Pending, int]:
            return AsyncGroupCommit(self._commit_batch, max_batch, linger=linger)

        self._group = PerLoop(group) if enabled else None

    async def _commit_batch(self, pending: Sequence[Pending]) -> list[int | BaseException]:
        """One shared commit of the group (run by the committing task)."""
        return await self._run(self._shared(pending))

    async def put(self, item: Mapping[str, Any], *, typed: bool = False) -> int:
        """Write ``item`` with the next id, and return the id.

        ``typed=True``: the item is in DynamoDB's typed form (``{"name": {"S": "x"}}``).
        """
        if self._group is None:
            return await self._run(self._put_alone(item, typed))
        return await self._group.get().submit(await self._run(self._pending(item, typed)))

    async def put_many(
        self, items: Sequence[Mapping[str, Any]], *, typed: bool = False
    ) -> list[int]:
        """Write up to 99 items in one transaction with consecutive ids; all or none.

        If one of them already exists, :class:`~ddbkeys.ids.ItemExistsError` names it and
        nothing is written.
        """
        return await self._run(self._put_many(items, typed))

    async def current(self) -> int:
        """The last id given out (0 before the first)."""
        return await self._run(self._current())

    async def counter_item(self) -> CounterItem:
        """Where the counter lives: its table, key and attribute (one DescribeTable the first
        time, to find the key from the table's key schema)."""
        return await self._run(self._counter_item(self._begin()))

    @property
    def counter_key(self) -> dict[str, AttributeValueTypeDef]:
        """The counter item's key, once a call has found it (a property sends no request)."""
        if self._counter is None:
            raise ConfigurationError(
                f"The counter key of sequence {self.name!r} is not known yet (it comes from the "
                "table's key schema): use (await counter_item()).key.",
                table=self.table,
            )
        return self._counter.key
