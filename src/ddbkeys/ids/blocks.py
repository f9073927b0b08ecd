"""Blocks of ids handed out locally (hi/lo), for more ids per second than one item can take.

:class:`~ddbkeys.ids.blocks_core.BlockState` decides (which block is current, when to reserve
the next one and how big, what goes back to the counter on close); :class:`BlockAllocator`
runs it for threads, :class:`ddbkeys.aio.blocks.BlockAllocator` for asyncio tasks. Only the
waiting and the sending differ.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from types import TracebackType

from ddbkeys.ids.blocks_close import hand_back
from ddbkeys.ids.blocks_core import (
    DEFAULT_BLOCK_LIFETIME,
    DEFAULT_REFILL_AT,
    BlockState,
    BlockStats,
    CloseReport,
    Direct,
    Hand,
    HandBack,
    Step,
    Wait,
    adapt_block_size,
    check_block_size,
    plan_hand_back,
)
from ddbkeys.ids.blocks_views import (
    AllocatorViews,
    check_counter,
    check_timeout,
    warn_unclosed,
)
from ddbkeys.ids.counter import AtomicCounter, _positive
from ddbkeys.retry import Deadline

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


class BlockAllocator(AllocatorViews):
    """Hands out ids from blocks reserved on an :class:`AtomicCounter`, one write per block.

    Promises: **unique** ids across every process that shares the counter (blocks never
    overlap), **increasing within one allocator** (an id handed out after a call returned is
    greater than every id that call got), but not across processes: two processes interleave
    their blocks. **Not gapless**, but a gap only where something was lost: ``close()`` (or
    the end of a ``with`` block, or the interpreter's exit) hands the unused ids back to the
    counter when nobody has reserved since, so a clean restart leaves none unused; a process
    that dies leaves at most two blocks unused (its current block's rest and the block
    reserved after it, or the two reserved after it), and the ids of a ``reserve(count)`` of
    more than a block that had not returned; a block whose reservation response was lost is
    never seen. Thread-safe.

    Cost: one UpdateItem (1 write unit) per block, and one conditional update (a one-action
    transaction with a token: 2 write units) at close when there is something to hand back.

    **Never waiting while refills keep up.** With ``prefetch`` (the default) the next block is
    reserved by a worker thread of the allocator (a daemon, started with the first block) once
    ``refill_at`` of the current block is handed out (default 0.1, as Meituan's Leaf), so
    ``next()`` takes an id from memory, without even a lock (the ids up to the next decision
    come from a range iterator); every block is reserved by a worker. A caller that finds
    no id held waits for the block being reserved: a stall, counted in :attr:`stats` (with the
    blocks reserved, the ids skipped, handed back and wasted). When callers outrun the block
    reserved ahead and the size cannot grow (fixed, or at ``max_block_size``), a second
    worker reserves another beside it (two round trips overlap), still never more than two
    blocks held. When a reservation fails, every caller waiting gets its error (once no other
    reservation is in flight), and the next take that needs a block asks again.
    ``prefetch=False`` reserves a block only when one is needed (every block is a stall).

    **Adaptive size.** Blocks start at ``block_size`` ids. Given bounds wider than that
    (``min_block_size``, ``max_block_size``; both default to ``block_size``: a fixed size),
    the size doubles when a block lasted less than ``block_lifetime`` seconds (default 60) and
    halves when it lasted more than twice that, so a block lasts a minute or two at any rate;
    it also doubles when callers stall while the block reserved ahead is on its way. A crash
    then loses at most two blocks: ``2 * max_block_size`` ids, a few minutes' worth
    at the rate it had. ``clock`` is injectable (``time.monotonic``).
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
        self._report: CloseReport | None = None
        self._start()
        _ALL.add(self)

    def _start(self) -> None:
        """The locks, the fast path and the worker's state: made anew in a forked child."""
        self._fast = _Fast()  # the ids lent to next()'s fast path
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)  # callers waiting for a reservation
        self._work = threading.Condition(self._lock)  # the worker waiting for one to send
        self._workers: list[threading.Thread] = []
        self._closing = threading.Lock()
        self._pid = os.getpid()
        self._stopped = threading.Event()  # collected: the worker ends
        # Collected without close(): the worker ends, the ids held are left unused.
        self._finalizer = weakref.finalize(
            self, _stop, self._lock, self._work, self._stopped, self._state, self._fast
        )
        self._finalizer.atexit = False

    def _forked(self) -> None:
        """In a forked child: the blocks held (and the reservation the parent's worker had in
        flight) are the parent's to hand out, never the child's. The child drops them, and
        reserves blocks of its own when asked for ids."""
        self._finalizer.detach()
        if not self._state.closed:
            self._state = self._state.anew()
        self._start()

    def next(self) -> int:
        """The next id of this allocator."""
        try:
            return _next(self._fast.ids)  # (no lock: one C call, atomic under the GIL)
        except StopIteration:
            return self._take(1)[0]

    def reserve(self, count: int) -> range:
        """``count`` consecutive ids of this allocator (``step`` apart), all greater than the
        ids handed out before the call.

        Up to ``block_size`` ids come from a block (what is left of the current block when they
        fit, or else the next block, skipping that rest: a gap). More are one write of their own
        (``counter.reserve(count)``), and the blocks this allocator holds below them are no
        longer handed out (a gap, too), so that ids stay increasing. While that write is
        unanswered, a block that may lie above its ids is not handed out (a caller that needs
        one waits for the answer), and such writes at once are handed out lowest first: one
        answered above another still unanswered waits for it, at most the counter's deadline
        (then a DeadlineExceededError, its ids unused).
        """
        count = _positive("count", count, table=self.table)
        return self._take(count)

    def close(self, timeout: float | None = None) -> CloseReport:
        """Hand the unused ids back and stop: later calls raise a ConfigurationError (make a
        new allocator to go on).

        Waits for a block being reserved, within ``timeout`` seconds (default: the counter's
        deadline), then sends, within as long again, one conditional update that sets the
        counter back to the last id handed out if it still holds the end of this allocator's
        highest block (nobody reserved since). The current block's rest and the spare go back
        together when they follow each other; what cannot go back (or all, when the condition
        fails) is counted as wasted. Calling it again returns the same report.
        """
        with self._closing:
            if self._report is not None:
                return self._report
            timeout = check_timeout(timeout, self.table)
            seconds = timeout if timeout is not None else self.counter.deadline
            deadline = Deadline(seconds, clock=self.counter.retry.clock)
            with self._lock:
                self._fast.reclaim(self._state)
                self._state.close()
                self._work.notify_all()
                self._ready.notify_all()
                while self._state.fetching and not deadline.expired():
                    self._ready.wait(min(deadline.remaining(), 3600.0))
                plan = self._state.release()
            _OPEN.discard(self)
            if os.getpid() != self._pid:  # a forked child: the ids are its parent's
                plan = HandBack(None, None, 0, 0)
            applied = False
            try:
                if plan.write:
                    write = Deadline(seconds, clock=self.counter.retry.clock)
                    applied = self.counter._run(hand_back(self.counter, plan, write))
            finally:
                with self._lock:
                    self._report = self._state.closed_with(plan, applied)
            return self._report

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
        ticket: int | None = None
        state, fast = self._state, self._fast
        deadline: Deadline | None = None  # (of a call that waits: the counter's)
        with self._lock:
            fast.reclaim(state)
            while True:
                step = state.take(count, ticket)
                if step.refill:
                    self._wake()
                if isinstance(step, Hand):
                    fast.lend(state)
                    return step.ids
                if isinstance(step, Direct):
                    break
                deadline = self._waiting(deadline)
                ticket = step.ticket
                self._ready.wait(min(deadline.remaining(), 3600.0))
                fast.reclaim(state)
        return self._direct(step)

    def _direct(self, direct: Direct) -> range:
        """More than a block's ids, with one write of their own; handed out once the state
        says (the blocks' callers waiting meanwhile are woken after)."""
        state, fast = self._state, self._fast
        got: range | None = None
        try:
            ids = self.counter.reserve(direct.count)
            deadline: Deadline | None = None  # (of a call that waits: the counter's)
            with self._lock:
                fast.reclaim(state)
                got = state.reserved(direct, ids)
                if got is None:
                    self._ready.notify_all()  # (what waited for its answer goes on)
                while got is None:
                    deadline = self._waiting(deadline, direct)
                    self._ready.wait(min(deadline.remaining(), 3600.0))
                    fast.reclaim(state)
                    got = state.collect(direct)
            return got
        finally:
            with self._lock:
                fast.reclaim(state)
                if got is None:  # the write failed, or the caller leaves
                    state.forgone(direct)
                fast.lend(state)
                self._ready.notify_all()

    def _wake(self) -> None:
        """Have a worker send the reservation asked for (the lock held): a worker for each
        reservation asked for or in flight (at most two at once), started when first needed."""
        self._workers = workers = [worker for worker in self._workers if worker.is_alive()]
        if len(workers) < len(self._state.asked) + len(self._state.flight):
            worker = threading.Thread(
                target=_work,
                args=(
                    self._lock,
                    self._work,
                    self._ready,
                    self._stopped,
                    self._state,
                    self._fast,
                    self.counter,
                ),
                name=f"ddbkeys-blocks-{self.table}",
                daemon=True,
            )
            worker.start()
            workers.append(worker)
            _track(self)
        self._work.notify()


_next = next
#: Whether one C call (next() of a range iterator, list() of one) runs without another
#: thread running: true with the GIL. Without it (free-threaded builds), nothing is lent.
_ATOMIC: bool = getattr(sys, "_is_gil_enabled", lambda: True)()


class _Fast:
    """The ids lent to ``next()``'s fast path (see :meth:`BlockState.lend`), as an iterator
    taken without the lock: next() of a range iterator is one C call, so no id goes to two
    threads. Lent and reclaimed with the lock held."""

    __slots__ = ("ids",)

    def __init__(self) -> None:
        self.ids: Iterator[int] = iter(())

    def lend(self, state: BlockState) -> None:
        if _ATOMIC:
            self.ids = iter(state.lend())

    def reclaim(self, state: BlockState) -> None:
        """Take back what the fast path has not handed out: the iterator is swapped for an
        empty one and emptied with list(), one C call, so that a thread still holding it gets
        either an id before the rest or none."""
        lent, self.ids = self.ids, iter(())
        rest = len(list(lent))
        if rest:
            state.unlend(rest)


def _work(
    lock: threading.Lock,
    work: threading.Condition,
    ready: threading.Condition,
    stopped: threading.Event,
    state: BlockState,
    fast: _Fast,
    counter: AtomicCounter,
) -> None:
    """The worker thread: sends each reservation asked for, reports its outcome, wakes the
    callers waiting; ends when the allocator is closed or collected. It holds no reference to
    the allocator, so that an allocator nobody holds can be collected."""
    while True:
        with lock:
            refill = state.claim_refill()
            while refill is None:
                if state.closed or stopped.is_set():
                    return
                work.wait()
                refill = state.claim_refill()
        try:
            block = counter.reserve(refill.size)
        except Exception as exc:  # the waiters' error, and the next take asks again
            with lock:
                fast.reclaim(state)  # (so that the next take decides)
                state.failed(refill, exc)
                ready.notify_all()
        except BaseException:
            with lock:
                state.abandoned(refill)
                ready.notify_all()
            raise
        else:
            with lock:
                state.filled(refill, block)
                ready.notify_all()


def _stop(
    lock: threading.Lock,
    work: threading.Condition,
    stopped: threading.Event,
    state: BlockState,
    fast: _Fast,
) -> None:
    """The allocator was collected without close(): end its worker (without waiting for the
    lock, which only the worker can hold now: it looks at ``stopped`` before it waits), and say
    how many ids are left unused (a ResourceWarning, shown in development mode)."""
    stopped.set()
    if lock.acquire(blocking=False):
        try:
            work.notify_all()
        finally:
            lock.release()
    unused = 0 if state.closed else state.unused + len(list(fast.ids))
    warn_unclosed(state, unused, asynchronous=False)


#: Every allocator of this process (weakly held): a forked child makes each drop its parent's
#: blocks (see BlockAllocator._forked).
_ALL: weakref.WeakSet[BlockAllocator] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for allocator in list(_ALL):
        allocator._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

#: The allocators holding blocks and not closed, closed at interpreter exit (weakly held).
_OPEN: weakref.WeakSet[BlockAllocator] = weakref.WeakSet()
_hooked = False
_hooking = threading.Lock()


def _track(allocator: BlockAllocator) -> None:
    global _hooked  # noqa: PLW0603 - registered once per process
    with _hooking:
        if not _hooked:
            atexit.register(_close_at_exit)
            # A forked child must not hand back its parent's ids.
            os.register_at_fork(after_in_child=_OPEN.clear)
            _hooked = True
        _OPEN.add(allocator)


def _close_at_exit() -> None:
    """Hand back what each open allocator holds (within :data:`EXIT_TIMEOUT` each); a failure
    leaves its ids unused, as a crash would."""
    for allocator in list(_OPEN):
        with contextlib.suppress(Exception):  # nothing to tell at exit; the ids stay unused
            allocator.close(timeout=min(EXIT_TIMEOUT, allocator.counter.deadline or EXIT_TIMEOUT))
