"""Blocks of ids handed out locally (hi/lo), for asyncio: the flows of
:class:`ddbkeys.ids._blocks_core.BlockState`, run by tasks of one event loop."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from ddbkeys._core.loops import LoopBinding
from ddbkeys._core.reads import Through
from ddbkeys.aio._ids import AtomicCounter
from ddbkeys.ids import _blocks_core as core
from ddbkeys.ids import _blocks_steps as steps
from ddbkeys.ids._blocks import block_state, close_flow, watch_unclosed
from ddbkeys.ids._blocks_steps import BlockStats, CloseReport
from ddbkeys.ids._values import whole_number

__all__ = ["BlockAllocator", "BlockStats", "CloseReport"]

T = TypeVar("T")


class BlockAllocator:
    """The asyncio form of :class:`ddbkeys.ids.BlockAllocator` (same settings, promises, cost)
    over a :class:`ddbkeys.aio.AtomicCounter`, for the tasks of one event loop.

    ``await aclose()`` (``async with``) hands the unused ids back; nothing is at interpreter
    exit (its loop and client are gone by then) or when collected (a ResourceWarning says how
    many ids are left unused). A call from another loop is a ConfigurationError.
    """

    def __init__(
        self,
        counter: AtomicCounter,
        block_size: int = 100,
        *,
        prefetch: bool = True,
        refill_at: float = steps.DEFAULT_REFILL_AT,
        min_block_size: int | None = None,
        max_block_size: int | None = None,
        block_lifetime: float = steps.DEFAULT_BLOCK_LIFETIME,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.counter, self.prefetch = counter, prefetch
        #: Its decisions and what it holds (no task or loop in it).
        self._state = block_state(
            counter,
            True,
            block_size,
            prefetch=prefetch,
            refill_at=refill_at,
            min_block_size=min_block_size,
            max_block_size=max_block_size,
            block_lifetime=block_lifetime,
            clock=clock,
        )
        self._finalizer = watch_unclosed(self, self._state, True)
        self._tasks = _Tasks(self.counter, self._state)
        self._closing: asyncio.Task[CloseReport] | None = None
        self._loop = LoopBinding(
            "ddbkeys.aio.BlockAllocator", "its blocks are reserved by tasks of that loop"
        )

    table: Through[str] = Through("counter")
    block_size: Through[int] = Through(
        "_state", "The size of the next block (``block_size`` as given, until it adapts)."
    )
    min_block_size: Through[int] = Through("_state")
    max_block_size: Through[int] = Through("_state")
    refill_at: Through[float] = Through("_state")
    block_lifetime: Through[float] = Through("_state")
    stats: Through[BlockStats] = Through(
        "_state", "Stalls, blocks reserved, ids skipped, handed back and wasted."
    )
    closed: Through[bool] = Through("_state")

    @property
    def stalls(self) -> int:
        """Calls that waited for a block to be reserved."""
        return self._state.stats.stalls

    async def next(self) -> int:
        """The next id of this allocator."""
        return (await self._take(1))[0]

    async def reserve(self, count: int) -> range:
        """``count`` consecutive ids (as the sync ``BlockAllocator.reserve``)."""
        return await self._take(whole_number("count", count, table=self.table))

    async def aclose(self, timeout: float | None = None) -> CloseReport:
        """As the sync ``close()``; a task of its own: a caller cancelled does not stop it."""
        if self._state.report is not None:
            return self._state.report
        flow = close_flow(self._state, self.counter, timeout)
        if self._closing is None:
            self._loop.check()
            self._closing = asyncio.get_running_loop().create_task(self._tasks.run(flow))
        return await asyncio.shield(self._closing)

    async def __aenter__(self) -> BlockAllocator:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def _take(self, count: int) -> range:
        self._loop.check()
        step = self._state.take(count)
        if type(step) is steps.Hand and not step.refill:
            return step.ids
        return await self._tasks.run(self._state.taking(count, step, self.counter._begin))


class _Tasks:
    """Runs a state's flows for the tasks of one loop; a task of its own per reservation."""

    def __init__(self, counter: AtomicCounter, state: core.BlockState) -> None:
        self.counter, self.state = counter, state
        self.changed: asyncio.Event | None = None  # set (and replaced) on a WAKE
        self.tasks: set[asyncio.Task[None]] = set()  # the reservations in flight

    async def run(self, flow: steps.BlockFlow[T]) -> T:
        """Run ``flow`` to its end."""
        sent: Any = None
        error: Exception | None = None
        try:
            while True:
                step = flow.send(sent) if error is None else flow.throw(error)
                sent = error = None
                if isinstance(step, steps.Pause):
                    changed = self.changed = self.changed or asyncio.Event()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(step.seconds):
                            await changed.wait()
                elif isinstance(step, steps.Wake):
                    self.wake()
                elif isinstance(step, steps.Refill):
                    fill = self.state.filling(step)
                    task = asyncio.get_running_loop().create_task(self.run(fill))
                    self.tasks.add(task)
                    task.add_done_callback(self.tasks.discard)
                else:
                    try:
                        sent = await step.call(self.counter)
                    except Exception as exc:  # the flow's to handle
                        error = exc
        except StopIteration as done:
            return cast(T, done.value)
        except BaseException:
            flow.close()
            self.wake()
            raise

    def wake(self) -> None:
        changed, self.changed = self.changed, None
        if changed is not None:
            changed.set()
