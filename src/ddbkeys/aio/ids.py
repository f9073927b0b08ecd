"""The id strategies for asyncio: the same names, settings and flows as :mod:`ddbkeys.ids`,
with ``await``."""

from __future__ import annotations

from ddbkeys.aio.base import AsyncIdStrategy
from ddbkeys.ids.base import CounterItem
from ddbkeys.ids.counter import CounterCore, _positive

__all__ = ["AtomicCounter"]


class AtomicCounter(CounterCore, AsyncIdStrategy):
    __doc__ = CounterCore.__doc__

    async def next(self) -> int:
        """The next id."""
        return (await self._run(self._advance(1)))[0]

    async def reserve(self, count: int) -> range:
        """``count`` consecutive ids (``step`` apart), taken with one write."""
        count = _positive("count", count, table=self.table)
        return await self._run(self._advance(count))

    async def current(self) -> int:
        """The last id given out (0 before the first)."""
        return await self._run(self._current())

    async def set(self, value: int, *, force: bool = False) -> int:
        """Make ``value`` the last id given out (see the sync ``AtomicCounter.set``)."""
        return await self._run(self._set(value, force))

    async def counter_item(self) -> CounterItem:
        """Where the counter lives: its table, key and attribute (one DescribeTable the first
        time)."""
        return await self._run(self._counter_item(self._begin()))
