"""Blocks of ids handed out locally (hi/lo), for asyncio: the decisions of
:class:`ddbkeys.ids.blocks.BlockState`, with the reservations sent as tasks of the event loop."""

from __future__ import annotations

import asyncio

from ddbkeys.aio.ids import AtomicCounter
from ddbkeys.core.loops import LoopBinding
from ddbkeys.ids.blocks import BlockState, Direct, Fetch, Hand, check_block_size, check_counter
from ddbkeys.ids.counter import _positive

__all__ = ["BlockAllocator"]


class BlockAllocator:
    """Hands out ids from blocks reserved on a :class:`ddbkeys.aio.AtomicCounter`, one write
    per block: the asyncio form of :class:`ddbkeys.ids.BlockAllocator`, with the same promises
    and cost.

    The same signature as the sync one, ``BlockAllocator(counter, block_size=100, *,
    prefetch=True)``; ``counter`` is a :class:`ddbkeys.aio.AtomicCounter` (a sync
    :class:`ddbkeys.ids.AtomicCounter` is a :class:`~ddbkeys.errors.ConfigurationError`).

    Promises: **unique** ids across every process that shares the counter, **increasing
    within one process** (an id handed out after a call returned is greater than every id that
    call got), **not gapless** (a stopped process leaves the rest of its block unused, and so
    does a lost reservation response). Safe for any number of tasks of one event loop: the
    allocator belongs to the loop of its first ``next()`` or ``reserve()`` (its reservations
    are tasks of that loop), and a call from another loop is a ConfigurationError; create one
    allocator per event loop.

    Cost: one UpdateItem (1 write unit) per ``block_size`` ids.

    Each block is reserved by a task of its own (with ``prefetch``, the default, once half of
    the current block is handed out), and callers with nothing to hand out wait on an
    :class:`asyncio.Event`, never on a thread lock; a caller that is cancelled does not cancel
    the reservation other callers wait for. When a reservation fails, every caller waiting for
    it gets its error.
    """

    def __init__(
        self, counter: AtomicCounter, block_size: int = 100, *, prefetch: bool = True
    ) -> None:
        self.counter = check_counter(counter, asynchronous=True)
        self.block_size = check_block_size(block_size, counter.table)
        self.prefetch = prefetch
        self._state = BlockState(self.block_size, prefetch=prefetch)
        self._changed: asyncio.Event | None = None  # set when a reservation ends
        self._task: asyncio.Task[None] | None = None
        self._loop = LoopBinding(
            "ddbkeys.aio.BlockAllocator", "its blocks are reserved by tasks of that loop"
        )

    @property
    def table(self) -> str:
        return self.counter.table

    async def next(self) -> int:
        """The next id of this process."""
        return (await self._take(1))[0]

    async def reserve(self, count: int) -> range:
        """``count`` consecutive ids (see the sync ``BlockAllocator.reserve``: up to
        ``block_size`` ids from a block, more with one write of their own; a gap is allowed)."""
        count = _positive("count", count, table=self.table)
        return await self._take(count)

    async def _take(self, count: int) -> range:
        self._loop.check()
        ticket: int | None = None
        while True:  # no await between a decision and the wait it asks for
            step = self._state.take(count, ticket)
            if isinstance(step, Hand):
                if step.prefetch:
                    self._spawn()
                return step.ids
            if isinstance(step, Direct):
                return self._state.reserved(await self.counter.reserve(step.count))
            if isinstance(step, Fetch):
                self._spawn()
                ticket = self._state.outcomes
            else:
                ticket = step.ticket
            if self._changed is None:
                self._changed = asyncio.Event()
            await self._changed.wait()

    def _spawn(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._fill())

    async def _fill(self) -> None:
        """Reserve one block into the spare slot; wake every caller waiting when it ends."""
        try:
            block = await self.counter.reserve(self.block_size)
        except Exception as exc:  # the waiters' error (the task itself ends quietly)
            self._state.failed(exc)
        except BaseException:  # cancelled: the waiters take again, one of them reserves
            self._state.abandoned()
            raise
        else:
            self._state.filled(block)
        finally:
            changed, self._changed = self._changed, None
            if changed is not None:
                changed.set()
