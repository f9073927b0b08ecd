"""The block allocator's decisions, without I/O, locks or waiting, and the flows of a take and
of a reservation: both drivers run them (:mod:`ddbkeys.ids._blocks` with a lock and threads,
:mod:`ddbkeys.aio._blocks` with tasks of one event loop), doing what each flow yields."""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from typing import TypeVar

from ddbkeys._errors import ConfigurationError, DeadlineExceededError
from ddbkeys._retry import Deadline
from ddbkeys._translate import fresh
from ddbkeys.ids._blocks_steps import (
    DEFAULT_BLOCK_LIFETIME,
    DEFAULT_REFILL_AT,
    WAKE,
    Asked,
    BlockFlow,
    BlockStats,
    Call,
    CloseReport,
    Direct,
    Hand,
    HandBack,
    Pause,
    Refill,
    Sent,
    Step,
    Wait,
    adapt_block_size,
    check_block_size,
    hand_back_for,
    within,
)
from ddbkeys.ids._values import flag

T = TypeVar("T")


class BlockState:
    """The block allocator's decisions (docs/ids/blocks.md says what they promise), and the
    flows of a take and of a reservation; a driver holds its lock around every call, or runs in
    one event loop. ``clock``: the seconds the adaptive size reads (injectable)."""

    def __init__(
        self,
        block_size: int = 100,
        *,
        prefetch: bool = True,
        refill_at: float = DEFAULT_REFILL_AT,
        min_block_size: int | None = None,
        max_block_size: int | None = None,
        block_lifetime: float = DEFAULT_BLOCK_LIFETIME,
        clock: Callable[[], float] = time.monotonic,
        table: str | None = None,
    ) -> None:
        self.table, self.clock = table, clock
        self.prefetch = flag("prefetch", prefetch, table)
        self.block_size = check_block_size(block_size, table)
        low = block_size if min_block_size is None else min_block_size
        high = block_size if max_block_size is None else max_block_size
        self.min_block_size = check_block_size(low, table, "min_block_size")
        self.max_block_size = check_block_size(high, table, "max_block_size")
        if not self.min_block_size <= block_size <= self.max_block_size:
            raise ConfigurationError(
                f"block_size ({block_size}) must lie between min_block_size "
                f"({self.min_block_size}) and max_block_size ({self.max_block_size}): it is the "
                "size of the first block, which then adapts within those bounds.",
                table=table,
            )
        if not within(refill_at, 1):
            raise ConfigurationError(
                "refill_at must be a number above 0 and at most 1 (the fraction of a block "
                f"handed out when the next one is reserved), not {refill_at!r}.",
                table=table,
            )
        if not within(block_lifetime, 10**9):
            raise ConfigurationError(
                f"block_lifetime must be a number of seconds above 0, not {block_lifetime!r}.",
                table=table,
            )
        self.refill_at, self.block_lifetime = float(refill_at), float(block_lifetime)
        self.adaptive = self.min_block_size < self.max_block_size
        self._empty()

    def anew(self) -> BlockState:
        """The same settings and size reached, nothing held (for a forked child)."""
        fresh = copy.copy(self)
        fresh._empty()
        return fresh

    def _empty(self) -> None:
        self.stats = BlockStats()
        self.block, self.position = range(0), 0  # the current block, and its ids handed out
        self.mark = 1  # ... when this many are, the next block is asked for
        # ... and while fewer than this are, a take of one decides nothing else: the sync
        # next() hands out block[position] without calling take()
        self.stop = 0
        self.since: float | None = None  # when the current block became current (adaptive)
        self.queue: list[range] = []  # blocks reserved, not current yet (lowest first)
        self.asked: list[Asked] = []  # reservations asked for, not sent yet
        self.flight: dict[int, Sent] = {}  # sent, not ended, by number
        # Direct writes by number: unanswered (the highest id known when sent: they land
        # above it), and answered but not handed out yet
        self.directs: dict[int, int | None] = {}
        self.answered: dict[int, range] = {}
        self.sent = 0  # reservations sent (numbers them)
        self.ahead = False  # the one in flight was asked for ahead of need
        self.floor: int | None = None  # no block starting below this is handed out
        self.top: int | None = None  # the last id of the highest reservation
        self.outcomes = 0  # reservations that have ended (tickets count these)
        self.failure: tuple[int, Exception] | None = None  # the last one, if it failed
        self.closed = False  # no more takes
        self.released = False  # the hand-back is decided: what arrives is wasted
        self.report: CloseReport | None = None  # what the close did, once done

    @property
    def left(self) -> int:
        return len(self.block) - self.position

    @property
    def spare(self) -> range | None:
        """The next block to become current (None: none held)."""
        return self.queue[0] if self.queue else None

    @property
    def fetching(self) -> bool:
        """Whether a reservation is asked for or in flight."""
        return bool(self.asked or self.flight)

    @property
    def unused(self) -> int:
        return self.left + sum(len(block) for block in self.queue)

    def take(self, count: int, ticket: int | None = None) -> Step:
        """What a caller wanting ``count`` ids does next; the error of a reservation that failed
        since ``ticket`` (the caller waited for it) when nothing holds the ids."""
        if self.closed:
            raise self._closed_error()
        while True:  # at most twice: the spare becomes current once
            size = len(self.block)
            if count <= size - self.position:
                return self._hand(count, size)
            spare = self.spare
            if count > self.block_size or (spare is not None and count > len(spare)):
                self.sent += 1
                self.directs[self.sent] = self.top  # it lands above every id known now
                return Direct(count, self.sent)
            if spare is None or not self._safe(spare):
                break
            self._current(self.queue.pop(0))
        return self._wait(ticket)

    def _closed_error(self) -> ConfigurationError:
        where = f" on table {self.table!r}" if self.table else ""
        return ConfigurationError(
            f"This BlockAllocator{where} is closed (its unused ids went back to the counter "
            "where they could): make a new BlockAllocator to hand out more ids.",
            table=self.table,
        )

    def _hand(self, count: int, size: int) -> Hand:
        """``count`` ids of the current block (of ``size``), which holds them."""
        first = self.position
        self.position = last = first + count
        refill = last >= self.mark and self._due()
        if refill:
            self._ask(ahead=True)
        if last == size:
            self._retire()
        # (the last id's take measures the block; a take at the mark may ask)
        self.stop = min(size - 1, self.mark - 1 if self._due() else size)
        return Hand(self.block[first:last], refill)

    def _wait(self, ticket: int | None) -> Wait:
        """Nothing held has the ids: wait for a block (asked for now unless one is coming), or
        the error of a reservation that failed since ``ticket``."""
        failure = self.failure
        if ticket is not None and failure and failure[0] > ticket and not self._awaited(ticket):
            raise fresh(failure[1])  # (every caller that waited gets a copy)
        second = False
        if ticket is None:
            self.stats.stalls += 1
            if self.ahead and self.fetching:  # the block asked for ahead did not come in time
                self.ahead = False  # (once for each)
                grown = min(self.block_size * 2, self.max_block_size)
                # the next blocks grow; or, at the largest size, a second reservation goes
                # beside the first (nothing held: never more than two blocks held)
                second = grown == self.block_size and not self.queue
                self.block_size = grown
        # (a spare held back by a Direct write in flight asks for nothing more)
        refill = self.spare is None and (
            not self.fetching
            or (second and self.prefetch and len(self.flight) + len(self.asked) < 2)
        )
        if refill:
            self._ask(ahead=False)
        return Wait(self.outcomes, refill)

    def claim_refill(self) -> Refill | None:
        """The reservation asked for and not sent yet (None: none), counted as sent now."""
        if not self.asked:
            return None
        asked = self.asked.pop(0)
        self.sent += 1
        self.flight[self.sent] = Sent(self.top, asked.at, self.clock())  # lands above the top
        return Refill(self.sent, asked.size)

    def filled(self, refill: Refill, block: range) -> None:
        """A block came: held (dropped below a :class:`Direct`'s ids, wasted after the close)."""
        self._ended(refill)
        self.failure = None
        self.stats.refills += 1
        self._reached(block)
        if self.released:
            self.stats.wasted += len(block)
        elif self.floor is not None and block.start < self.floor:
            self.stats.skipped += len(block)
        else:
            self.queue = sorted([*self.queue, block], key=lambda held: held.start)

    def failed(self, refill: Refill, error: Exception) -> None:
        """Reserving a block failed: the callers waiting for it get ``error``."""
        self.abandoned(refill)
        self.stats.failed_refills += 1
        self.failure = (self.outcomes, error)

    def abandoned(self, refill: Refill) -> None:
        self._ended(refill)
        self.stop = 0  # (the next take asks again)

    def reserved(self, direct: Direct, ids: range) -> range | None:
        self.directs.pop(direct.number, None)
        self._reached(ids)
        self.answered[direct.number] = ids
        return self.collect(direct)

    def collect(self, direct: Direct) -> range | None:
        """A :class:`Direct` write's ids once none of another may come below them (else None);
        the blocks held below them are dropped."""
        ids = self.answered[direct.number]
        if not self._clear(ids[-1], direct.number):
            return None
        del self.answered[direct.number]
        self.floor, self.stop = max(self.floor or ids.stop, ids.stop), 0
        if self.block and self.block.start < self.floor:
            self.stats.skipped += self.left
            self.block, self.position, self.since = range(0), 0, None
        self.stats.skipped += sum(len(held) for held in self.queue if held.start < self.floor)
        self.queue = [held for held in self.queue if held.start >= self.floor]
        return ids

    def forgone(self, direct: Direct) -> None:
        self.directs.pop(direct.number, None)
        self.stats.wasted += len(self.answered.pop(direct.number, range(0)))

    def close(self) -> None:
        self.closed, self.stop = True, 0
        self.asked.clear()

    def release(self) -> HandBack:
        self.closed = self.released = True
        back = hand_back_for([self.block[self.position :], *self.queue], self.top)
        self.block, self.position, self.queue, self.since = range(0), 0, [], None
        return back

    def closed_with(self, back: HandBack, applied: bool) -> CloseReport:
        returned = back.ids if applied else 0
        wasted = back.wasted + back.ids - returned
        self.stats.handed_back += returned
        self.stats.wasted += wasted
        return CloseReport(returned, wasted, back.top is not None)

    # --- the flows both drivers run ----------------------------------------------------------

    def taking(self, count: int, step: Step, begin: Callable[[], Deadline]) -> BlockFlow[range]:
        """The rest of a take whose first step was ``step``: waits within ``begin()``."""
        deadline: Deadline | None = None
        while True:
            if step.refill and (refill := self.claim_refill()) is not None:
                try:
                    yield refill  # (a driver may let others in meanwhile: a wait takes again)
                except BaseException:  # (no thread or task could be started for it)
                    self.abandoned(refill)
                    raise
                if isinstance(step, Wait):
                    step = self.take(count, step.ticket)
                    continue
            if isinstance(step, Hand):
                return step.ids
            if isinstance(step, Direct):
                return (yield from self._direct(step, begin))
            deadline = yield from self._pause(deadline, begin)
            step = self.take(count, step.ticket)

    def _direct(self, direct: Direct, begin: Callable[[], Deadline]) -> BlockFlow[range]:
        got: range | None = None
        try:
            got = self.reserved(direct, (yield Call(lambda c: c.reserve(direct.count))))
            if got is None:
                yield WAKE  # (what waited for its answer goes on)
            deadline: Deadline | None = None
            while got is None:
                deadline = yield from self._pause(deadline, begin, direct)
                got = self.collect(direct)
        finally:
            if got is None:  # the write failed, or the caller leaves
                self.forgone(direct)
        yield WAKE
        return got

    def filling(self, refill: Refill) -> BlockFlow[None]:
        try:
            block = yield Call(lambda c: c.reserve(refill.size))
        except Exception as exc:  # the waiters' error; the next take asks again
            self.failed(refill, exc)
        except BaseException:
            self.abandoned(refill)
            raise
        else:
            self.filled(refill, block)
        yield WAKE

    def _pause(
        self, deadline: Deadline | None, begin: Callable[[], Deadline], direct: Direct | None = None
    ) -> BlockFlow[Deadline]:
        """Wait for a change within the deadline the first wait began (then its error)."""
        if deadline is None:
            deadline = begin()
        elif deadline.expired():
            raise self.late_error(deadline.seconds, direct)
        yield Pause(min(deadline.remaining(), 3600.0))
        return deadline

    def late_error(
        self, seconds: float | None, direct: Direct | None = None
    ) -> DeadlineExceededError:
        where = f" on table {self.table!r}" if self.table else ""
        waited = self.clock() - min((one.when for one in self.flight.values()), default=math.inf)
        message = f"No block of ids came within the {seconds:g} s deadline{where}: "
        if direct is not None:
            message = (
                f"The {direct.count} ids reserved{where} came, but another reservation of more "
                "than a block, whose ids may lie below them, was still unanswered or not handed "
                f"out after the {seconds:g} s deadline: these are left unused (an allocator "
                "hands out increasing ids). Give the counter a longer deadline."
            )
        elif waited >= (seconds or 0.0) / 2:
            # (An endpoint that does not answer: the reservation's own error is on its way.)
            message += (
                f"the block's reservation, sent {waited:.1f} s before, had no answer yet (is the "
                "endpoint slow, or not answering?). Give the counter a longer deadline if the "
                "endpoint is only slow."
            )
        else:
            message += (
                "the allocator's reservations did not keep up with its callers "
                f"({self.stats.stalls} stalls so far). Give the counter a longer deadline, or the "
                "allocator larger blocks (block_size, max_block_size)."
            )
        return DeadlineExceededError(message, seconds=seconds or 0.0, attempts=0, table=self.table)

    # --- the rest ------------------------------------------------------------------------

    def _due(self) -> bool:
        return self.prefetch and not self.queue and not self.fetching and not self.closed

    def _ask(self, *, ahead: bool) -> None:
        self.ahead = ahead or self.ahead
        self.asked.append(Asked(self.block_size, self.outcomes))

    def _awaited(self, ticket: int) -> bool:
        """Whether a reservation asked for by ``ticket``'s time is still on its way."""
        asked = [one.at for one in self.asked] + [one.at for one in self.flight.values()]
        return any(at <= ticket for at in asked)

    def _safe(self, block: range) -> bool:
        """Whether nothing in flight may land below ``block``."""
        known = [sent.known for sent in self.flight.values()]
        return self._clear(block[-1]) and all(k is not None and k >= block[-1] for k in known)

    def _clear(self, last: int, own: int | None = None) -> bool:
        """Whether no :class:`Direct` write (but ``own``) may hand out ids below ``last``."""
        return all(known is not None and known >= last for known in self.directs.values()) and all(
            ids.start > last for number, ids in self.answered.items() if number != own
        )

    def _ended(self, refill: Refill) -> None:
        self.flight.pop(refill.number, None)
        self.ahead = self.ahead and bool(self.flight)
        self.outcomes += 1

    def _reached(self, ids: range) -> None:
        if ids:
            self.top = ids[-1] if self.top is None else max(self.top, ids[-1])

    def _current(self, block: range) -> None:
        """``block`` becomes current; the rest of the current one is skipped."""
        self.stats.skipped += self.left
        self._retire()
        self.block, self.position = block, 0
        self.since = self.clock() if self.adaptive else None
        # the take that hands out this many ids asks for the next block (at least the first)
        self.mark = max(1, math.ceil(round(self.refill_at * len(block), 9)))

    def _retire(self) -> None:
        if self.since is not None and self.position:
            self.block_size = adapt_block_size(
                self.block_size,
                (self.clock() - self.since) * self.block_size / self.position,  # at this rate
                target=self.block_lifetime,
                smallest=self.min_block_size,
                largest=self.max_block_size,
            )
        self.since = None
