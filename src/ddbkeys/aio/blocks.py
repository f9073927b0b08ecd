"""Blocks of ids handed out locally (hi/lo), for asyncio: the decisions and flows of
:class:`ddbkeys.ids.blocks_core.BlockState`, run by tasks of one event loop."""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from ddbkeys.aio.ids import AtomicCounter
from ddbkeys.core.loops import LoopBinding
from ddbkeys.ids.blocks_core import (
    DEFAULT_BLOCK_LIFETIME,
    DEFAULT_REFILL_AT,
    BlockState,
    BlockStats,
    CloseReport,
    Hand,
)
from ddbkeys.ids.blocks_steps import BlockFlow, Pause, Refill, Send, Wake
from ddbkeys.ids.blocks_views import AllocatorViews, check_counter, check_timeout, warn_unclosed
from ddbkeys.ids.counter import _positive

__all__ = ["BlockAllocator", "BlockStats", "CloseReport"]

T = TypeVar("T")


class BlockAllocator(AllocatorViews):
    """Hands out ids from blocks reserved on a :class:`ddbkeys.aio.AtomicCounter`, one write
    per block: the asyncio form of :class:`ddbkeys.ids.BlockAllocator`, with the same settings,
    promises and cost.

    ``await aclose()`` (or the end of ``async with``) hands the unused ids back. Nothing is
    handed back at interpreter exit (the event loop and its client are gone by then), nor when
    it is collected (a ResourceWarning says how many ids it left unused): close it. Safe for
    any number of tasks of one event loop: the allocator belongs to the loop of its first call
    that needs a block (its reservations are tasks of that loop), and a call from another loop
    is a ConfigurationError. A caller that is cancelled does not cancel the reservation other
    callers wait for.
    """

    counter: AtomicCounter

    def __init__(
        self,
        counter: AtomicCounter,
        block_size: int = 100,
        *,
        prefetch: bool = True,
        refill_at: float = DEFAULT_REFILL_AT,
        min_block_size: int | None = None,
        max_block_size: int | None = None,
        block_lifetime: float = DEFAULT_BLOCK_LIFETIME,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.counter = counter = check_counter(counter, asynchronous=True)
        self.prefetch = prefetch
        self._state = BlockState(
            block_size,
            prefetch=prefetch,
            refill_at=refill_at,
            min_block_size=min_block_size,
            max_block_size=max_block_size,
            block_lifetime=block_lifetime,
            clock=clock,
            table=counter.table,
        )
        self._tasks = _Tasks(counter, self._state)
        self._closing: asyncio.Task[CloseReport] | None = None
        self._loop = LoopBinding(
            "ddbkeys.aio.BlockAllocator", "its blocks are reserved by tasks of that loop"
        )
        # Collected without aclose(): the ids held are left unused (a ResourceWarning).
        weakref.finalize(self, warn_unclosed, self._state, asynchronous=True).atexit = False

    async def next(self) -> int:
        """The next id of this allocator."""
        self._loop.check()
        got = self._state.take_one()
        return (await self._take(1))[0] if got is None else got

    async def reserve(self, count: int) -> range:
        """``count`` consecutive ids (as the sync ``BlockAllocator.reserve``)."""
        return await self._take(_positive("count", count, table=self.table))

    async def aclose(self, timeout: float | None = None) -> CloseReport:
        """Hand the unused ids back and stop (as the sync ``BlockAllocator.close``). The
        closing is a task of its own: a caller cancelled while it waits does not stop it, and
        the next ``aclose()`` gets its report."""
        if self._state.report is not None:
            return self._state.report
        seconds = check_timeout(timeout, self.table)
        if self._closing is None:
            self._loop.check()
            flow = self._state.closing(
                self.counter, self.counter.deadline if seconds is None else seconds
            )
            self._closing = asyncio.get_running_loop().create_task(self._tasks.run(flow))
        return await asyncio.shield(self._closing)

    async def __aenter__(self) -> BlockAllocator:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _take(self, count: int) -> range:
        self._loop.check()
        step = self._state.take(count)
        if type(step) is Hand and not step.refill:
            return step.ids
        return await self._tasks.run(self._state.taking(count, step, self.counter._begin))


class _Tasks:
    """Runs a state's flows for the tasks of one event loop (no await between a decision and
    the wait it asks for); each reservation sent by a task of its own."""

    def __init__(self, counter: AtomicCounter, state: BlockState) -> None:
        self.counter, self.state = counter, state
        self.changed: asyncio.Event | None = None  # set (and replaced) on a WAKE
        self.tasks: set[asyncio.Task[None]] = set()  # the reservations in flight

    async def run(self, flow: BlockFlow[T]) -> T:
        """Run ``flow`` to its end."""
        sent: Any = None
        error: Exception | None = None
        try:
            while True:
                step = flow.send(sent) if error is None else flow.throw(error)
                sent = error = None
                if isinstance(step, Pause):
                    changed = self.changed = self.changed or asyncio.Event()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(step.seconds):
                            await changed.wait()
                elif isinstance(step, Wake):
                    self.wake()
                elif isinstance(step, Refill):
                    task = asyncio.get_running_loop().create_task(
                        self.run(self.state.filling(step))
                    )
                    self.tasks.add(task)
                    task.add_done_callback(self.tasks.discard)
                else:
                    try:
                        if isinstance(step, Send):
                            sent = await self.counter.reserve(step.count)
                        else:
                            sent = await self.counter._run(step.flow)
                    except Exception as exc:  # the flow's to handle
                        error = exc
        except StopIteration as done:
            result: T = done.value
            return result
        except BaseException:
            flow.close()
            self.wake()
            raise

    def wake(self) -> None:
        changed, self.changed = self.changed, None
        if changed is not None:
            changed.set()
