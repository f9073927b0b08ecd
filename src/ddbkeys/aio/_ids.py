"""The id strategies for asyncio: the same names, settings and flows as :mod:`ddbkeys.ids`,
with ``await``."""

from __future__ import annotations

from collections.abc import Sequence

from ddbkeys._core.loops import PerLoop
from ddbkeys.aio._base import AsyncIdStrategy
from ddbkeys.ids._base import CounterItem
from ddbkeys.ids._counter import COALESCE_LINGER, MAX_COALESCED, CounterCore, Want
from ddbkeys.ids._group import AsyncGroupCommit
from ddbkeys.ids._values import whole_number

__all__ = ["AtomicCounter"]


class AtomicCounter(CounterCore, AsyncIdStrategy):
    __doc__ = CounterCore.__doc__

    _group: PerLoop[AsyncGroupCommit[Want, range]] | None

    def _start_group(self, enabled: bool) -> None:
        # One group per event loop (with group_commit): the counter holds no task or future of a
        # loop between calls, and may be used from one loop after another.
        def group() -> AsyncGroupCommit[Want, range]:
            return AsyncGroupCommit(self._commit, MAX_COALESCED, linger=COALESCE_LINGER, fill=True)

        self._group = PerLoop(group) if enabled else None

    async def _commit(self, wants: Sequence[Want]) -> list[range | BaseException]:
        """One coalesced write (run by the group's committing task)."""
        return await self._run(self._coalesced(wants))

    async def next(self) -> int:
        """The next id."""
        return (await self.reserve(1))[0]

    async def reserve(self, count: int) -> range:
        """``count`` consecutive ids (``step`` apart), taken with one write (shared with
        concurrent calls of the event loop, with ``group_commit``)."""
        count = whole_number("count", count, table=self.table)
        if self._group is None:
            return await self._run(self._advance(count))
        return await self._group.get().submit(Want(count, self._begin()))

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
