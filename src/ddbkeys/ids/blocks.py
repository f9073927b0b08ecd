"""Blocks of ids handed out locally (hi/lo), for more ids per second than one item can take.

:class:`~ddbkeys.ids.blocks_core.BlockState` decides and holds the flows; :class:`BlockAllocator`
runs them for threads (a lock per take, a pool of two threads for the reservations),
:class:`ddbkeys.aio.blocks.BlockAllocator` for asyncio tasks.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

from ddbkeys.ids.blocks_core import (
    DEFAULT_BLOCK_LIFETIME,
    DEFAULT_REFILL_AT,
    BlockState,
    BlockStats,
    CloseReport,
    Hand,
)
from ddbkeys.ids.blocks_steps import BlockFlow, Instruction, Pause, Refill, Send, Wake, Write
from ddbkeys.ids.blocks_views import AllocatorViews, check_counter, check_timeout, warn_unclosed
from ddbkeys.ids.counter import AtomicCounter, _positive

__all__ = ["EXIT_TIMEOUT", "BlockAllocator", "BlockStats", "CloseReport"]

#: The most seconds the hand-back of each allocator still open may take at interpreter exit.
EXIT_TIMEOUT = 5.0

T = TypeVar("T")


class BlockAllocator(AllocatorViews):
    """Hands out ids from blocks reserved on an :class:`AtomicCounter`, one write per block.

    Promises: **unique** ids across every process that shares the counter (blocks never
    overlap), **increasing within one allocator** (an id handed out after a call returned is
    greater than every id that call got), but not across processes. **Not gapless**, but a
    gap only where something was lost: ``close()`` (or the end of a ``with`` block, or the
    interpreter's exit) hands the unused ids back when nobody has reserved since, so a clean
    restart leaves none unused; a process that dies leaves at most two blocks unused, and the
    ids of a ``reserve(count)`` of more than a block that had not returned. Thread-safe (a
    lock per take).

    Cost: one UpdateItem (1 write unit) per block, and one conditional update (a one-action
    transaction with a token: 2 write units) at close when there is something to hand back.

    With ``prefetch`` (the default), once ``refill_at`` of the current block is handed out
    (0.1, as Meituan's Leaf), a worker thread reserves the next one, so ``next()`` does not
    wait for DynamoDB while refills keep up; a caller that finds nothing held waits (a stall,
    counted in :attr:`stats`), at most the counter's deadline. The size adapts between
    ``min_block_size`` and ``max_block_size`` (both default to ``block_size``: fixed) so that
    a block lasts ``block_lifetime`` seconds or up to twice that (``clock``: injectable).
    See docs/ids/blocks.md.
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
        self.counter = counter = check_counter(counter, asynchronous=False)
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
        self._start()
        _ALL.add(self)
        atexit.unregister(_close_at_exit)  # (registered again: it runs before older hooks)
        atexit.register(_close_at_exit)

    def _start(self) -> None:
        """The lock and the thread mechanics: made anew in a forked child (see :meth:`_forked`)."""
        self._closing = threading.Lock()
        self._threads = _Threads(self.counter, self._state)
        # Collected without close(): the ids held are left unused (a ResourceWarning).
        self._finalizer = weakref.finalize(self, warn_unclosed, self._state, asynchronous=False)
        self._finalizer.atexit = False

    def _forked(self) -> None:
        """In a forked child: the blocks held and the reservations in flight are the parent's
        to hand out and back, never the child's; it reserves blocks of its own."""
        self._finalizer.detach()
        if not self._state.closed:
            self._state = self._state.anew()
        self._start()

    def next(self) -> int:
        """The next id of this allocator."""
        threads = self._threads
        with threads.mutex:
            got = threads.state.take_one()
        return self._take(1)[0] if got is None else got

    def reserve(self, count: int) -> range:
        """``count`` consecutive ids of this allocator (``step`` apart), all greater than the
        ids handed out before the call: from what is left of the current block when they fit,
        else from the next block (skipping that rest: a gap). More than a block's ids are one
        write of their own, and the blocks held below them are dropped (a gap, too); see
        docs/ids/blocks.md for how such writes in flight keep ids increasing."""
        return self._take(_positive("count", count, table=self.table))

    def close(self, timeout: float | None = None) -> CloseReport:
        """Hand the unused ids back and stop: later calls raise a ConfigurationError.

        Waits for a block being reserved, within ``timeout`` seconds (default: the counter's
        deadline), then sends, within as long again, one conditional update that sets the
        counter back to the last id handed out if nobody reserved since. What cannot go back is
        counted as wasted. Calling it again returns the same report.
        """
        with self._closing:
            report = self._state.report
            if report is None:
                seconds = check_timeout(timeout, self.table)
                flow = self._state.closing(
                    self.counter, self.counter.deadline if seconds is None else seconds
                )
                with self._threads.mutex:
                    report = self._threads.run(flow)
            return report

    def __enter__(self) -> BlockAllocator:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _take(self, count: int) -> range:
        threads = self._threads
        with threads.mutex:
            step = threads.state.take(count)
            if type(step) is Hand and not step.refill:
                return step.ids
            return threads.run(threads.state.taking(count, step, self.counter._begin))


#: Give the CPU to another thread (one that holds the GIL, say).
_yield: Callable[[], None] = getattr(os, "sched_yield", lambda: time.sleep(0))


class _Mutex:
    """A lock whose waiters yield the CPU rather than block on it: a thread woken to own a
    lock must still wait for the GIL, and all the others queue behind it (a convoy: from 16
    threads, next()'s p99.9 went from 2 us to 8 ms)."""

    __slots__ = ("lock",)

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __enter__(self) -> None:
        while not self.lock.acquire(blocking=False):
            _yield()

    def __exit__(self, *_: object) -> None:
        self.lock.release()


class _Threads:
    """Runs a state's flows for threads: every decision under one lock, released while a flow
    waits or sends; the reservations sent by a pool of two threads (they end once the
    allocator is collected: nothing here refers to it)."""

    def __init__(self, counter: AtomicCounter, state: BlockState) -> None:
        self.counter, self.state = counter, state
        self.mutex = _Mutex()
        self.changed = threading.Condition(self.mutex.lock)
        self.pool = ThreadPoolExecutor(2, f"ddbkeys-blocks-{counter.table}")

    def run(self, flow: BlockFlow[T], sent: Any = None, error: BaseException | None = None) -> T:
        """Run ``flow`` to its end (the lock held), from ``sent`` (or ``error``) on."""
        try:
            while True:
                step = flow.send(sent) if error is None else flow.throw(error)
                sent = error = None
                if isinstance(step, Pause):
                    self.changed.wait(step.seconds)
                elif isinstance(step, Wake):
                    self.changed.notify_all()
                elif isinstance(step, Refill):  # sent by a worker, which then takes the lock
                    self.pool.submit(self.fill, self.state.filling(step))
                else:
                    self.mutex.lock.release()
                    try:
                        sent, error = self.send(step)
                    finally:
                        self.mutex.__enter__()
        except StopIteration as done:
            result: T = done.value
            return result
        except BaseException:
            flow.close()
            self.changed.notify_all()
            raise

    def send(self, step: Instruction) -> tuple[Any, BaseException | None]:
        """What ``step`` (a Send or a Write) got from the counter, or its error (sent without
        the lock)."""
        try:
            if isinstance(step, Send):
                return self.counter.reserve(step.count), None
            assert isinstance(step, Write)
            return self.counter._run(step.flow), None
        except BaseException as exc:  # the flow's to handle
            return None, exc

    def fill(self, flow: BlockFlow[None]) -> None:
        sent, error = self.send(next(flow))  # (the flow's first step, a Send, reads no state)
        with self.mutex:
            self.run(flow, sent, error)


#: Every allocator of this process (weakly held): closed at exit, made anew in a forked child.
_ALL: weakref.WeakSet[BlockAllocator] = weakref.WeakSet()


def _close_at_exit() -> None:
    """Hand back what each open allocator holds (within :data:`EXIT_TIMEOUT` each); a failure
    leaves its ids unused, as a crash would."""
    for allocator in list(_ALL):
        with contextlib.suppress(Exception):  # nothing to tell at exit; the ids stay unused
            allocator.close(timeout=min(EXIT_TIMEOUT, allocator.counter.deadline or EXIT_TIMEOUT))


def _after_fork_in_child() -> None:
    for allocator in list(_ALL):
        allocator._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
