"""Blocks of ids handed out locally (hi/lo), for more ids per second than one item can take:
the flows of :class:`~ddbkeys.ids._blocks_core.BlockState` run for threads (:class:`BlockAllocator`)
or asyncio tasks (:mod:`ddbkeys.aio._blocks`), each allocator its state, its counter and its
driver; how a state is made and checked, and the close, are here for both."""

from __future__ import annotations

import contextlib
import inspect
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from ddbkeys._core import lifecycle as _lifecycle
from ddbkeys._core.reads import Through
from ddbkeys._errors import ConfigurationError
from ddbkeys._retry import Deadline, RetryPolicy
from ddbkeys.ids import _blocks_core as core
from ddbkeys.ids import _blocks_steps as steps
from ddbkeys.ids._blocks_steps import BlockStats, CloseReport
from ddbkeys.ids._counter import AtomicCounter
from ddbkeys.ids._values import whole_number

__all__ = [
    "EXIT_TIMEOUT",
    "BlockAllocator",
    "BlockStats",
    "CloseReport",
    "Counter",
    "block_state",
    "close_flow",
    "watch_unclosed",
]

#: The most seconds the hand-back of each allocator still open may take at interpreter exit.
EXIT_TIMEOUT = 5.0

T = TypeVar("T")


class Counter(Protocol):
    """What an allocator reads of its counter (sync or asyncio); it reserves blocks with the
    counter's ``reserve(n)`` and hands ids back with its ``_hand_back(back, deadline)``."""

    @property
    def table(self) -> str: ...
    @property
    def deadline(self) -> float | None: ...
    @property
    def retry(self) -> RetryPolicy: ...
    def _begin(self) -> Deadline: ...


def block_state(
    counter: Counter,
    asynchronous: bool,
    block_size: int,
    *,
    prefetch: bool,
    refill_at: float,
    min_block_size: int | None,
    max_block_size: int | None,
    block_lifetime: float,
    clock: Callable[[], float],
) -> core.BlockState:
    """An allocator's state from its settings, over ``counter`` (an AtomicCounter of the
    allocator's own kind, ``asynchronous`` or not: a ConfigurationError says which it takes)."""
    reserve = getattr(counter, "reserve", None)
    if reserve is None or not hasattr(counter, "table"):
        raise ConfigurationError(
            "BlockAllocator takes an AtomicCounter (BlockAllocator(AtomicCounter(client, "
            f"table, name), block_size=100)), not {type(counter).__name__}."
        )
    if inspect.iscoroutinefunction(reserve) != asynchronous:
        given, wanted = ("ids", "aio") if asynchronous else ("aio", "ids")
        raise ConfigurationError(
            f"ddbkeys.{wanted}.BlockAllocator takes a ddbkeys.{wanted}.AtomicCounter, not a "
            f"ddbkeys.{given} one: use ddbkeys.{given}.BlockAllocator with it, or make the "
            f"counter with ddbkeys.{wanted}.AtomicCounter.",
            table=counter.table,
        )
    return core.BlockState(
        block_size,
        prefetch=prefetch,
        refill_at=refill_at,
        min_block_size=min_block_size,
        max_block_size=max_block_size,
        block_lifetime=block_lifetime,
        clock=clock,
        table=counter.table,
    )


def watch_unclosed(
    allocator: object, state: core.BlockState, asynchronous: bool
) -> weakref.finalize[Any, Any]:
    """A warning if ``allocator`` is collected unclosed (:func:`warn_unclosed`), not at exit."""
    finalizer = weakref.finalize(allocator, warn_unclosed, state, asynchronous)
    finalizer.atexit = False
    return finalizer


def close_flow(
    state: core.BlockState, counter: Counter, timeout: float | None
) -> steps.BlockFlow[CloseReport]:
    """The flow of ``close(timeout)``: None waits the counter's deadline, else seconds."""
    if timeout is not None and not steps.within(timeout, float("inf")):
        raise ConfigurationError(
            "close(timeout=...) must be a number of seconds above 0 (how long to wait for a "
            "block in flight, then for the hand-back), or None for the counter's deadline; "
            f"not {timeout!r}.",
            table=counter.table,
        )
    seconds = counter.deadline if timeout is None else float(timeout)
    return closing(state, counter, seconds)


def warn_unclosed(state: core.BlockState, asynchronous: bool) -> None:
    """An allocator was collected without being closed: say how many ids it left unused (a
    ResourceWarning, shown in development mode), when there are any."""
    unused = 0 if state.closed else state.unused
    if unused:
        close, block = ("aclose()", "an async with") if asynchronous else ("close()", "a with")
        warnings.warn(
            f"A BlockAllocator on table {state.table!r} was collected without {close}: "
            f"{unused} ids it held are left unused. Close it (or use it in {block} block) to "
            "hand them back.",
            ResourceWarning,
            stacklevel=3,
        )


def closing(
    state: core.BlockState, counter: Counter, seconds: float | None
) -> steps.BlockFlow[CloseReport]:
    """``close()``: waits for the reservations in flight, then hands back what it can (each
    within ``seconds``); what the counter's write did is in the report, and in ``state``."""
    state.close()
    yield steps.WAKE
    deadline = Deadline(seconds, clock=counter.retry.clock)
    while state.fetching and not deadline.expired():
        yield steps.Pause(min(deadline.remaining(), 3600.0))
    back, applied = state.release(), False
    try:
        if back.top is not None:
            ends = Deadline(seconds, clock=counter.retry.clock)  # (the write's own)
            applied = yield steps.Call(lambda c: c._hand_back(back, ends))
    finally:
        state.report = state.closed_with(back, applied)
    return state.report


class BlockAllocator:
    """Hands out ids from blocks reserved on an :class:`AtomicCounter`, one write per block.

    Promises: **unique** ids across processes, **increasing within one allocator** (an id
    handed out after a call returned is above every id that call got), **not gapless**: a gap
    only where something was lost, as ``close()`` (``with``, interpreter exit) hands unused ids
    back. Thread-safe. Cost: 1 write unit per block, 2 at close. With ``prefetch``, a thread of
    its own (a daemon) reserves the next block once ``refill_at`` of one is handed out; the
    size adapts between ``min_block_size`` and ``max_block_size``. See docs/ids/blocks.md.
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
        #: Its decisions and what it holds (no lock, thread or client in it).
        self._state = block_state(
            counter,
            False,
            block_size,
            prefetch=prefetch,
            refill_at=refill_at,
            min_block_size=min_block_size,
            max_block_size=max_block_size,
            block_lifetime=block_lifetime,
            clock=clock,
        )
        self._start()

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

    def _start(self) -> None:
        """The lock and the threads' mechanics (anew in a forked child: :meth:`_forked`); a
        warning if collected unclosed."""
        self._finalizer = watch_unclosed(self, self._state, False)
        _ALL.add(self)
        _lifecycle.at_exit(_close_at_exit)  # (again: it runs before older hooks)
        self._closing = threading.Lock()
        self._threads = _Threads(self.counter, self._state)
        weakref.finalize(self, self._threads.end).atexit = False

    def _forked(self) -> None:
        """In a forked child: what is held or in flight is the parent's; start anew."""
        self._finalizer.detach()
        if not self._state.closed:
            self._state = self._state.anew()
        self._start()

    def next(self) -> int:
        """The next id of this allocator."""
        state = self._state
        # (Nothing is called while the lock is held, so no thread gives up the GIL holding it:
        # a thread woken to take a lock would wait for the GIL, the others queue behind it.)
        with self._threads.lock:
            position = state.position
            if position < state.stop:  # (a take of one that decides nothing else)
                state.position = position + 1
                return state.block[position]
        return self._take(1)[0]

    def reserve(self, count: int) -> range:
        """``count`` consecutive ids, above those handed out before: from a block (skipping
        the rest of one too short: a gap), or more than a block's with a write of their own."""
        return self._take(whole_number("count", count, table=self.table))

    def close(self, timeout: float | None = None) -> CloseReport:
        """Hand the unused ids back (one conditional update, if nobody reserved since) and
        stop; waits for a block in flight and for the write, each within ``timeout`` (default:
        the counter's deadline). Calling it again returns the same report."""
        with self._closing:
            if self._state.report is None:
                flow = close_flow(self._state, self.counter, timeout)
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
            if type(step) is steps.Hand and not step.refill:
                return step.ids
            return threads.run(threads.state.taking(count, step, self.counter._begin))


#: Why no thread could be started to send a reservation (the DdbKeysError says).
_MORE_THREADS = "give the allocator a larger block_size, or make fewer allocators"


class _Reservation:
    """A reservation for a thread of the process's pool: it sends the ones that follow too,
    until none came for IDLE_SECONDS, or the allocator closed or went."""

    name, why = "ddbkeys-blocks", _MORE_THREADS

    def __init__(self, threads: _Threads, refill: steps.Refill) -> None:
        self.threads, self.refill = threads, refill

    def run(self) -> None:
        self.threads.send(self.refill)
        del self.threads  # (the pool's thread holds nothing of the allocator once it is done)

    def finish(self) -> None:
        pass


class _Threads:
    """Runs a state's flows for threads, under one lock released to wait and to call the
    counter; threads of the process's pool send the reservations, each keeping to this
    allocator while it has more to send (nothing here refers to the allocator)."""

    # (A thread for each reservation in flight at once, waiting on this allocator's condition
    # for the next: the process's request threads, a queue away, which sent each reservation
    # before, made one caller's ids about 10% slower against DynamoDB Local. Only a thread's
    # start, or its reuse once this allocator has nothing more for it, goes through the pool.)

    def __init__(self, counter: AtomicCounter, state: core.BlockState) -> None:
        self.counter, self.state = counter, state
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # (callers wait on it)
        self.work = threading.Condition(self.lock)  # (idle threads wait on it)
        self.refills: list[steps.Refill] = []
        self.idle = 0  # threads waiting for a reservation (never fewer than self.refills)
        self.ended = False  # the allocator was collected

    def run(self, flow: steps.BlockFlow[T]) -> T:
        """Run ``flow`` to its end, the lock held."""
        sent: Any = None
        error: BaseException | None = None
        try:
            while True:
                step = flow.send(sent) if error is None else flow.throw(error)
                sent = error = None
                if isinstance(step, steps.Pause):
                    self.changed.wait(step.seconds)
                elif isinstance(step, steps.Wake):
                    self.changed.notify_all()
                    if self.state.closed:  # (the idle threads end)
                        self.work.notify_all()
                elif isinstance(step, steps.Refill) and self.idle > len(self.refills):
                    self.refills.append(step)  # (a thread waiting sends it)
                    self.work.notify()
                else:  # (the lock released: a new thread sends the reservation)
                    self.lock.release()
                    try:
                        if isinstance(step, steps.Refill):
                            _lifecycle.POOL.hand(_Reservation(self, step))
                        else:
                            sent = step.call(self.counter)
                    except BaseException as exc:  # the flow's to handle
                        error = exc
                    finally:
                        self.lock.acquire()
        except StopIteration as done:
            return cast(T, done.value)
        except BaseException:
            flow.close()
            self.changed.notify_all()
            raise

    def end(self) -> None:
        """The allocator was collected: the threads waiting end (not waiting for the lock: a
        collection in a thread holding it would wait for itself; they leave after IDLE_SECONDS)."""
        self.ended = True
        if self.lock.acquire(blocking=False):
            self.work.notify_all()
            self.lock.release()

    def send(self, refill: steps.Refill | None) -> None:
        """Send reservations until none came for IDLE_SECONDS, or the allocator closed or went."""
        with self.lock:
            while refill is not None:
                self.run(self.state.filling(refill))
                self.idle += 1
                if not self.refills and not (self.state.closed or self.ended):
                    self.work.wait(_lifecycle.IDLE_SECONDS)
                self.idle -= 1
                refill = self.refills.pop(0) if self.refills else None


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


_lifecycle.at_fork(after_in_child=_after_fork_in_child)
