"""The atomic counter for asyncio: the same settings and flows as :class:`ddbkeys.ids.AtomicCounter`
(:mod:`ddbkeys.ids._counter`), run on the asyncio driver, with ``await``."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage
from ddbkeys._core.loops import PerLoop
from ddbkeys._core.reads import Settable, Through
from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys._schema import TableInfo
from ddbkeys.aio._client import as_async_client
from ddbkeys.ids import _counter as flows
from ddbkeys.ids._base import CounterItem
from ddbkeys.ids._counter import COALESCE_LINGER, MAX_COALESCED
from ddbkeys.ids._counter_writes import Want
from ddbkeys.ids._group import AsyncGroupCommit
from ddbkeys.ids._values import whole_number

if TYPE_CHECKING:
    from ddbkeys.ids._blocks_steps import HandBack

__all__ = ["AtomicCounter"]


class AtomicCounter:
    __doc__ = flows.AtomicCounter.__doc__

    refuses_global_tables = flows.AtomicCounter.refuses_global_tables
    default_retry = flows.AtomicCounter.default_retry

    def __init__(
        self,
        client: object,
        table: str | None = None,
        name: str = "counter",
        *,
        key_attribute: str | None = None,
        counter_key: Mapping[str, Any] | None = None,
        counter_attribute: str = "last_id",
        start: int = 1,
        step: int = 1,
        maximum: int | None = None,
        retry: RetryPolicy | None = None,
        usage: Usage | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        group_commit: bool = False,
        idempotent: bool = False,
    ) -> None:
        self._link = link = flows.counter_link(
            as_async_client(client, table), retry, usage, deadline
        )
        #: Its decisions (no client in it); the counter's settings below are its.
        self.core = flows.counter_core(
            link,
            name,
            key_attribute,
            counter_key,
            counter_attribute,
            start,
            step,
            maximum,
            idempotent,
        )
        self._driver = AsyncDriver(
            link.client, link.usage, "ddbkeys.aio.AtomicCounter", link.guarded
        )
        #: Whether concurrent calls share one write (``group_commit=``, as the sequences').
        self.group_commit = flows.flag("group_commit", group_commit, link.table)

        # One group per event loop (with group_commit): the counter holds no task or future of a
        # loop between calls, and may be used from one loop after another.
        def group() -> AsyncGroupCommit[Want, range]:
            return AsyncGroupCommit(self._commit, MAX_COALESCED, linger=COALESCE_LINGER, fill=True)

        self._group = PerLoop(group) if self.group_commit else None
        #: The wall clock (seconds since 1970) that dates the idempotent writes' slots.
        self.wall_clock: Callable[[], float] = time.time

    client: Through[Any] = Through("_link")
    table: Through[str] = Through("_link")
    retry: Through[RetryPolicy] = Through("_link")
    usage: Through[Usage] = Through("_link")
    deadline: Settable[float | None] = Settable("_link")
    allow_global_tables: Through[bool] = Through("_link")
    name: Through[str] = Through("core")
    key_attribute: Through[str | None] = Through("core")
    counter_attribute: Through[str] = Through("core")
    start: Through[int] = Through("core")
    step: Through[int] = Through("core")
    maximum: Through[int | None] = Through("core")
    idempotent: Through[bool] = Through("core")

    async def _commit(self, wants: Sequence[Want]) -> list[range | BaseException]:
        """One coalesced write (run by the group's committing task)."""
        return await self._driver.run(
            flows.taking_for(self.core, self._link, wants, self.wall_clock)
        )

    async def next(self) -> int:
        """The next id."""
        return (await self.reserve(1))[0]

    async def reserve(self, count: int) -> range:
        """``count`` consecutive ids (``step`` apart), taken with one write (shared with
        concurrent calls of the event loop, with ``group_commit``)."""
        count = whole_number("count", count, table=self._link.table)
        if self._group is None:
            return await self._driver.run(
                flows.taking(self.core, self._link, count, self.wall_clock)
            )
        return await self._group.get().submit(Want(count, self._link.begin()))

    async def current(self) -> int:
        """The last id given out (0 before the first)."""
        return await self._driver.run(flows.reading(self.core, self._link))

    async def set(self, value: int, *, force: bool = False) -> int:
        """Make ``value`` the last id given out (see the sync ``AtomicCounter.set``)."""
        return await self._driver.run(flows.setting(self.core, self._link, value, force))

    async def counter_item(self) -> CounterItem:
        """Where the counter lives: its table, key and attribute (one DescribeTable the first
        time)."""
        return await self._driver.run(flows.counter_item(self.core, self._link, self._link.begin()))

    async def table_info(self, table: str | None = None) -> TableInfo:
        """A table's description (this counter's table by default): one DescribeTable the
        first time, within the counter's deadline."""
        return await self._driver.run(self._link.table_info(self._link.begin(), table))

    def _begin(self) -> Deadline:
        """The deadline of a call that begins now (a block allocator's waits keep to it)."""
        return self._link.begin()

    async def _hand_back(self, back: HandBack, deadline: Deadline) -> bool:
        """A block allocator's close: its unused ids handed back (see the sync one's)."""
        return await self._driver.run(flows.hand_back(self.core, self._link, back, deadline))
