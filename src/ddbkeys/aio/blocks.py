"""Blocks of ids handed out locally (hi/lo), for asyncio: the decisions of
:class:`ddbkeys.ids.blocks_core.BlockState`, with the reservations sent as tasks of the event
loop."""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Callable
from types import TracebackType

from ddbkeys.aio.ids import AtomicCounter
from ddbkeys.core.loops import LoopBinding
from ddbkeys.ids.blocks_close import hand_back
from ddbkeys.ids.blocks_core import (
    DEFAULT_BLOCK_LIFETIME,
    DEFAULT_REFILL_AT,
    BlockState,
    BlockStats,
    CloseReport,
    Direct,
    Hand,
    Refill,
)
from ddbkeys.ids.blocks_views import (
    AllocatorViews,
    check_counter,
    check_timeout,
    warn_unclosed,
)
from ddbkeys.ids.counter import _positive
from ddbkeys.retry import Deadline

__all__ = ["BlockAllocator", "BlockStats", "CloseReport"]


class BlockAllocator(AllocatorViews):
    """Hands out ids from blocks reserved on a :class:`ddbkeys.aio.AtomicCounter`, one write
    per block: the asyncio form of :class:`ddbkeys.ids.BlockAllocator`, with the same settings,
    promises and cost.

    Promises: **unique** ids across every process that shares the counter, **increasing
    within one allocator** (an id handed out after a call returned is greater than every id
    that call got), **not gapless**, but with a gap only where something was lost:
    ``await aclose()`` (or the end of ``async with``) hands the unused ids back when nobody
    has reserved since. Nothing is handed back at interpreter exit (the event loop is gone by
    then), nor when it is collected (a ResourceWarning says how many ids it left unused):
    close it. Safe for any number of tasks of one event loop: the allocator belongs to
    the loop of its first ``next()`` or ``reserve()`` that needs a block (its reservations are
    tasks of that loop), and a call from another loop is a ConfigurationError; create one
    allocator per event loop. ``counter`` is a :class:`ddbkeys.aio.AtomicCounter` (a sync
    one is a ConfigurationError).

    Cost: one UpdateItem (1 write unit) per block, and one conditional update (a transaction
    with a token, 2 write units) at close.

    Each block is reserved by a task of its own, once ``refill_at`` of the current block is
    handed out (with ``prefetch``, the default), so ``await next()`` does not wait for
    DynamoDB while refills keep up; callers with nothing to hand out wait on an
    :class:`asyncio.Event` (a stall, counted in :attr:`stats`), and a caller that is cancelled
    does not cancel the reservation other callers wait for. When a reservation fails, every
    caller waiting for it gets its error, and the next take that needs a block asks again.
    The size adapts between ``min_block_size`` and ``max_block_size`` as in the sync form.
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
        self._changed: asyncio.Event | None = None  # set when a reservation ends
        self._tasks: set[asyncio.Task[None]] = set()  # the reservations in flight
        self._report: CloseReport | None = None
        self._closing: asyncio.Task[CloseReport] | None = None
        self._loop = LoopBinding(
            "ddbkeys.aio.BlockAllocator", "its blocks are reserved by tasks of that loop"
        )
        # Collected without aclose(): the ids held are left unused (a ResourceWarning).
        weakref.finalize(self, _forgotten, self._state).atexit = False

    async def next(self) -> int:
        """The next id of this allocator."""
        self._loop.check()
        got = self._state.take_one()
        if got is not None:
            return got
        return (await self._take(1))[0]

    async def reserve(self, count: int) -> range:
        """``count`` consecutive ids (see the sync ``BlockAllocator.reserve``: up to
        ``block_size`` ids from a block, more with one write of their own; a gap is allowed)."""
        count = _positive("count", count, table=self.table)
        return await self._take(count)

    async def aclose(self, timeout: float | None = None) -> CloseReport:
        """Hand the unused ids back and stop (see the sync ``BlockAllocator.close``): waits
        for the block being reserved within ``timeout`` seconds (default: the counter's
        deadline), then sends one conditional update. Calling it again returns the same
        report. The closing is a task of its own: a caller cancelled while it waits (a
        ``wait_for`` that times out) does not stop it, and the next ``aclose()`` gets its
        report."""
        if self._report is not None:
            return self._report
        timeout = check_timeout(timeout, self.table)
        if self._closing is None:
            self._loop.check()
            self._closing = asyncio.get_running_loop().create_task(self._close(timeout))
        return await asyncio.shield(self._closing)

    async def _close(self, timeout: float | None) -> CloseReport:
        seconds = timeout if timeout is not None else self.counter.deadline
        self._state.close()
        self._wake()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=seconds)
        plan = self._state.release()
        applied = False
        try:
            if plan.write:
                write = Deadline(seconds, clock=self.counter.retry.clock)
                applied = await self.counter._run(hand_back(self.counter, plan, write))
        finally:
            self._report = self._state.closed_with(plan, applied)
        return self._report

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
        ticket: int | None = None
        deadline: Deadline | None = None  # (of a call that waits: the counter's)
        while True:  # no await between a decision and the wait it asks for
            step = self._state.take(count, ticket)
            if step.refill:
                self._spawn()
            if isinstance(step, Hand):
                return step.ids
            if isinstance(step, Direct):
                return await self._direct(step)
            deadline = self._waiting(deadline)
            ticket = step.ticket
            await self._change(deadline)

    async def _direct(self, direct: Direct) -> range:
        """More than a block's ids, with one write of their own; handed out once the state
        says (the blocks' callers waiting meanwhile are woken after)."""
        got: range | None = None
        try:
            got = self._state.reserved(direct, await self.counter.reserve(direct.count))
            deadline: Deadline | None = None  # (of a call that waits: the counter's)
            if got is None:
                self._wake()  # (what waited for its answer goes on)
            while got is None:
                deadline = self._waiting(deadline, direct)
                await self._change(deadline)
                got = self._state.collect(direct)
            return got
        finally:
            if got is None:  # the write failed, or the caller leaves (cancelled, say)
                self._state.forgone(direct)
            self._wake()

    async def _change(self, deadline: Deadline) -> None:
        """Wait for a reservation to end (or the allocator to close), within ``deadline``."""
        if self._changed is None:
            self._changed = asyncio.Event()
        with contextlib.suppress(TimeoutError):  # (wait_for may swallow a cancellation)
            async with asyncio.timeout(min(deadline.remaining(), 3600.0)):
                await self._changed.wait()

    def _spawn(self) -> None:
        refill = self._state.claim_refill()
        if refill is not None:
            task = asyncio.get_running_loop().create_task(self._fill(refill))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _wake(self) -> None:
        """Wake every caller waiting (a reservation ended, or the allocator closed)."""
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    async def _fill(self, refill: Refill) -> None:
        """Reserve one block; wake every caller waiting when it ends."""
        try:
            block = await self.counter.reserve(refill.size)
        except Exception as exc:  # the waiters' error (the task itself ends quietly)
            self._state.failed(refill, exc)
        except BaseException:  # cancelled: the waiters take again, one of them asks again
            self._state.abandoned(refill)
            raise
        else:
            self._state.filled(refill, block)
        finally:
            self._wake()


def _forgotten(state: BlockState) -> None:
    """The allocator was collected without aclose(): say how many ids are left unused (a
    ResourceWarning, as the sync allocator's)."""
    warn_unclosed(state, 0 if state.closed else state.unused, asynchronous=True)
