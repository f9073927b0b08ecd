"""Blocks of ids handed out locally (hi/lo), for more ids per second than one item can take.

:class:`BlockState` decides (which block is current, when to reserve the next one, where the
hand-out is, which error a failed reservation hands its waiters); :class:`BlockAllocator` runs
it for threads, :class:`ddbkeys.aio.blocks.BlockAllocator` for asyncio tasks. Only the waiting
and the spawning differ.
"""

from __future__ import annotations

import inspect
import threading
from dataclasses import dataclass
from typing import Any, TypeVar

from ddbkeys.errors import ConfigurationError
from ddbkeys.ids.counter import AtomicCounter, _positive

__all__ = [
    "BlockAllocator",
    "BlockState",
    "Direct",
    "Fetch",
    "Hand",
    "Wait",
    "check_block_size",
    "check_counter",
]

C = TypeVar("C")


@dataclass(frozen=True)
class Hand:
    """Hand ``ids`` out; with ``prefetch``, this caller then reserves the next block (after
    taking its ids, and it is the only one doing so: report the outcome with
    :meth:`BlockState.filled`, :meth:`~BlockState.failed` or :meth:`~BlockState.abandoned`)."""

    ids: range
    prefetch: bool = False


@dataclass(frozen=True)
class Fetch:
    """No block holds the ids: this caller reserves the next block now (the only one doing so),
    reports the outcome, and takes again."""


@dataclass(frozen=True)
class Wait:
    """Another caller is reserving the next block: wait until an outcome is reported, then take
    again with this ``ticket`` (so the error of that reservation reaches this caller)."""

    ticket: int


@dataclass(frozen=True)
class Direct:
    """More ids than a block holds: reserve ``count`` ids on the counter with one write, then
    report them with :meth:`BlockState.reserved`."""

    count: int


Step = Hand | Fetch | Wait | Direct


def check_block_size(block_size: object, table: str | None) -> int:
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1:
        raise ConfigurationError(
            f"block_size must be a whole number of at least 1, not {block_size!r}.", table=table
        )
    return block_size


def check_counter(counter: C, *, asynchronous: bool) -> C:
    """``counter`` when it is the kind of counter the allocator awaits (``asynchronous``) or
    calls: the sync allocator takes a :class:`ddbkeys.ids.AtomicCounter`, the asyncio one a
    :class:`ddbkeys.aio.AtomicCounter`; the other kind is a :class:`ConfigurationError`."""
    reserve: Any = getattr(counter, "reserve", None)
    if reserve is None or not hasattr(counter, "table"):
        raise ConfigurationError(
            "BlockAllocator takes an AtomicCounter (BlockAllocator(AtomicCounter(client, table, "
            f"name), block_size=100)), not {type(counter).__name__}."
        )
    if inspect.iscoroutinefunction(reserve) != asynchronous:
        given, wanted = (
            ("ddbkeys.aio", "ddbkeys.ids") if not asynchronous else ("ddbkeys.ids", "ddbkeys.aio")
        )
        raise ConfigurationError(
            f"{wanted}.BlockAllocator takes a {wanted}.AtomicCounter, not a {given} one: use "
            f"{given}.BlockAllocator with it, or make the counter with {wanted}.AtomicCounter.",
            table=getattr(counter, "table", None),
        )
    return counter


class BlockState:
    """The block allocator's decisions, without I/O, locks or waiting (the caller holds its own
    lock around every method, or runs in one event loop).

    ``take(count)`` hands out ``count`` consecutive ids from the current block when they fit in
    what is left of it. When they do not and ``count`` is at most ``block_size``, the rest of the
    current block is skipped (a gap) and the next block becomes current: the spare one already
    reserved, or one the caller is told to reserve (:class:`Fetch`) or to wait for
    (:class:`Wait`): one reservation at a time. More than ``block_size`` ids are one write of
    their own (:class:`Direct`), after which the blocks held below them are dropped, so that
    ids stay increasing within the allocator. With ``prefetch``, the next block is reserved
    once half of the current one is handed out.
    """

    def __init__(self, block_size: int, *, prefetch: bool = True) -> None:
        self.block_size = block_size
        self.prefetch = prefetch
        self.block: range = range(0)
        self.position = 0
        self.spare: range | None = None
        self.fetching = False
        self.floor: int | None = None  # no block starting below this is handed out
        self.outcomes = 0  # reservations of a block that have ended (tickets count these)
        self.failure: tuple[int, Exception] | None = None  # the last one, if it failed

    @property
    def left(self) -> int:
        return len(self.block) - self.position

    def take(self, count: int, ticket: int | None = None) -> Step:
        """What a caller wanting ``count`` ids does next. Raises the error of a reservation
        that ended since ``ticket`` (the caller waited for it) when no block holds the ids."""
        if count <= self.left:
            ids = self.block[self.position : self.position + count]
            self.position += count
            prefetch = (
                self.prefetch
                and self.left <= self.block_size // 2
                and self.spare is None
                and not self.fetching
            )
            self.fetching = self.fetching or prefetch
            return Hand(ids, prefetch)
        if count > self.block_size:
            return Direct(count)
        if self.spare is not None:  # the rest of the current block (fewer than count) is skipped
            self.block, self.position, self.spare = self.spare, 0, None
            return self.take(count, ticket)
        if ticket is not None and self.failure is not None and self.failure[0] > ticket:
            raise self.failure[1]
        if self.fetching:
            return Wait(self.outcomes)
        self.fetching = True
        return Fetch()

    def _ended(self) -> None:
        self.fetching = False
        self.outcomes += 1

    def filled(self, block: range) -> None:
        """A block was reserved: it becomes the spare (dropped if below ids already handed out
        by a :class:`Direct` reservation)."""
        self._ended()
        self.failure = None
        if self.floor is None or block.start >= self.floor:
            self.spare = block

    def failed(self, error: Exception) -> None:
        """Reserving a block failed: the callers waiting for it get ``error``."""
        self._ended()
        self.failure = (self.outcomes, error)

    def abandoned(self) -> None:
        """Reserving a block was given up (the thread interrupted, the task cancelled): the
        callers waiting for it take again, and one of them reserves."""
        self._ended()

    def reserved(self, ids: range) -> range:
        """A :class:`Direct` reservation's ``ids``: the blocks held below them are dropped."""
        if ids:
            self.floor = max(self.floor or ids.stop, ids.stop)
            if self.block and self.block.start < self.floor:
                self.block, self.position = range(0), 0
            if self.spare is not None and self.spare.start < self.floor:
                self.spare = None
        return ids


class BlockAllocator:
    """Hands out ids from blocks reserved on an :class:`AtomicCounter`, one write per block.

    Promises: **unique** ids across every process that shares the counter (blocks never
    overlap), **increasing within one process** (and within one allocator: an id handed out
    after a call returned is greater than every id that call got), but not across processes:
    two processes interleave their blocks. **Not gapless**: a process that stops (or dies)
    leaves the rest of its block unused forever, and so does a block whose reservation
    response was lost. Thread-safe.

    Cost: one UpdateItem (1 write unit) per ``block_size`` ids, so 0.01 write units an id with
    blocks of 100, and ``block_size`` times the throughput the counter item alone allows.

    With ``prefetch`` (the default) the next block is reserved by one caller, outside the lock,
    once half of the current block is used, so other threads rarely wait for DynamoDB. When a
    reservation fails, every caller waiting for it gets its error (a failed prefetch is its
    waiters' error, not the error of the caller that sent it, which has its id already).
    """

    def __init__(
        self, counter: AtomicCounter, block_size: int = 100, *, prefetch: bool = True
    ) -> None:
        self.counter = check_counter(counter, asynchronous=False)
        self.block_size = check_block_size(block_size, counter.table)
        self.prefetch = prefetch
        self._state = BlockState(self.block_size, prefetch=prefetch)
        self._cond = threading.Condition()

    @property
    def table(self) -> str:
        return self.counter.table

    def next(self) -> int:
        """The next id of this process."""
        return self._take(1)[0]

    def reserve(self, count: int) -> range:
        """``count`` consecutive ids of this process (``step`` apart), all greater than the ids
        handed out before the call.

        Up to ``block_size`` ids come from a block (what is left of the current block when they
        fit, or else the next block, skipping that rest: a gap). More are one write of their own
        (``counter.reserve(count)``), and the blocks this allocator holds below them are no
        longer handed out (a gap, too), so that ids stay increasing within the process.
        """
        count = _positive("count", count, table=self.table)
        return self._take(count)

    def _take(self, count: int) -> range:
        ticket: int | None = None
        with self._cond:
            while True:
                step = self._state.take(count, ticket)
                if isinstance(step, Hand | Direct):
                    break
                if isinstance(step, Wait):
                    ticket = step.ticket
                    self._cond.wait()
                    continue
                self._cond.release()  # Fetch: reserve the next block without the lock
                try:
                    self._fill(demand=True)
                finally:
                    self._cond.acquire()
        if isinstance(step, Direct):
            ids = self.counter.reserve(step.count)
            with self._cond:
                return self._state.reserved(ids)
        if step.prefetch:
            self._fill(demand=False)
        return step.ids

    def _fill(self, *, demand: bool) -> None:
        """Reserve one block into the spare slot (called without the lock held). A prefetch
        that fails hands its error to the callers waiting for it, not to its own caller."""
        try:
            block = self.counter.reserve(self.block_size)
        except Exception as exc:
            with self._cond:
                self._state.failed(exc)
                self._cond.notify_all()
            if demand:
                raise
            return
        except BaseException:
            with self._cond:
                self._state.abandoned()
                self._cond.notify_all()
            raise
        with self._cond:
            self._state.filled(block)
            self._cond.notify_all()
