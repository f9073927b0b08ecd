"""Blocks of ids handed out locally (hi/lo), for more ids per second than one item can take.

:class:`~ddbkeys.ids.blocks_core.BlockState` decides and holds the flows; :class:`BlockAllocator`
runs them for threads (a lock per take, a daemon thread per reservation),
:class:`ddbkeys.aio.blocks.BlockAllocator` for asyncio tasks.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import weakref
from typing import Any, TypeVar

from ddbkeys.ids.blocks_core import (
    BlockFlow,
    BlockState,
    BlockStats,
    Call,
    CloseReport,
    Direct,
    Hand,
    HandBack,
    Pause,
    Refill,
    Step,
    Wait,
    Wake,
    adapt_block_size,
    check_block_size,
    plan_hand_back,
)
from ddbkeys.ids.blocks_views import AllocatorViews, warn_unclosed
from ddbkeys.ids.counter import AtomicCounter, _positive

__all__ = [
    "EXIT_TIMEOUT",
    "BlockAllocator",
    "BlockState",
    "BlockStats",
    "CloseReport",
    "Direct",
    "Hand",
    "HandBack",
    "Step",
    "Wait",
    "adapt_block_size",
    "check_block_size",
    "plan_hand_back",
]

#: The most seconds the hand-back of each allocator still open may take at interpreter exit.
EXIT_TIMEOUT = 5.0

T = TypeVar("T")


class BlockAllocator(AllocatorViews[AtomicCounter]):
    """Hands out ids from blocks reserved on an :class:`AtomicCounter`, one write per block.

    Promises: **unique** ids across processes, **increasing within one allocator** (an id
    handed out after a call returned is above every id that call got), **not gapless**: a gap
    only where something was lost, as ``close()`` (``with``, interpreter exit) hands unused ids
    back. Thread-safe. Cost: 1 write unit per block, 2 at close. With ``prefetch``, a daemon
    thread reserves the next block once ``refill_at`` of one is handed out; the size adapts
    between ``min_block_size`` and ``max_block_size``. See docs/ids/blocks.md.
    """

    asynchronous = False

    def _start(self) -> None:
        """The lock and the threads' mechanics (anew in a forked child: :meth:`_forked`)."""
        _ALL.add(self)
        atexit.unregister(_close_at_exit)  # (registered again: it runs before older hooks)
        atexit.register(_close_at_exit)
        self._closing = threading.Lock()
        self._threads = _Threads(self.counter, self._state)
        # Collected without close(): the ids held are left unused (a ResourceWarning).
        self._finalizer = weakref.finalize(self, warn_unclosed, self._state, asynchronous=False)
        self._finalizer.atexit = False

    def _forked(self) -> None:
        """In a forked child: what is held or in flight is the parent's; start anew."""
        self._finalizer.detach()
        if not self._state.closed:
            self._state = self._state.anew()
        self._start()

    def next(self) -> int:
        """The next id of this allocator."""
        state, lock = self._state, self._threads.lock
        # (Nothing is called while the lock is held, so no thread gives up the GIL holding it:
        # a thread woken to take a lock would wait for the GIL, the others queue behind it.)
        with lock:
            position = state.position
            if position < state.stop:  # (a take of one that decides nothing else)
                state.position = position + 1
                return state.block[position]
        return self._take(1)[0]

    def reserve(self, count: int) -> range:
        """``count`` consecutive ids, above those handed out before: from a block (skipping
        the rest of one too short: a gap), or more than a block's with a write of their own."""
        return self._take(_positive("count", count, table=self.table))

    def close(self, timeout: float | None = None) -> CloseReport:
        """Hand the unused ids back (one conditional update, if nobody reserved since) and
        stop; waits for a block in flight and for the write, each within ``timeout`` (default:
        the counter's deadline). Calling it again returns the same report."""
        with self._closing:
            if self._state.report is None:
                flow = self._close_flow(timeout)
                with self._threads.lock:
                    return self._threads.run(flow)
            return self._state.report

    def __enter__(self) -> BlockAllocator:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _take(self, count: int) -> range:
        threads = self._threads
        with threads.lock:
            step = threads.state.take(count)
            if type(step) is Hand and not step.refill:
                return step.ids
            return threads.run(threads.state.taking(count, step, self.counter._begin))


class _Threads:
    """Runs a state's flows for threads, under one lock released to wait, to call the counter
    and to start a daemon thread per reservation (nothing here refers to the allocator)."""

    def __init__(self, counter: AtomicCounter, state: BlockState) -> None:
        self.counter, self.state = counter, state
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.name = f"ddbkeys-blocks-{counter.table}"  # (of each reservation's daemon thread)

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
                elif isinstance(step, Refill):  # (its thread takes the lock once answered)
                    fill = self.state.filling(step)
                    threading.Thread(
                        target=self.fill, args=(fill,), name=self.name, daemon=True
                    ).start()
                else:
                    self.lock.release()
                    try:
                        sent, error = self.call(step)
                    finally:
                        self.lock.acquire()
        except StopIteration as done:
            result: T = done.value
            return result
        except BaseException:
            flow.close()
            self.changed.notify_all()
            raise

    def call(self, step: Call) -> tuple[Any, BaseException | None]:
        """What the counter answered a Call, or its error (the lock not held)."""
        try:
            return step.call(self.counter), None
        except BaseException as exc:  # the flow's to handle
            return None, exc

    def fill(self, flow: BlockFlow[None]) -> None:
        step = next(flow)  # (its Call of the counter reads no state)
        assert isinstance(step, Call)
        sent, error = self.call(step)
        with self.lock:
            self.run(flow, sent, error)


#: Every allocator of this process (weakly held): closed at exit, made anew in a forked child.
_ALL: weakref.WeakSet[BlockAllocator] = weakref.WeakSet()


def _close_at_exit() -> None:
    """Hand back what each open allocator holds (a failure leaves its ids unused)."""
    for allocator in list(_ALL):
        with contextlib.suppress(Exception):  # nothing to tell at exit; the ids stay unused
            allocator.close(timeout=min(EXIT_TIMEOUT, allocator.counter.deadline or EXIT_TIMEOUT))


def _after_fork_in_child() -> None:
    for allocator in list(_ALL):
        allocator._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
