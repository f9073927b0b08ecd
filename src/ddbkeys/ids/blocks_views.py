"""What both block allocators share outside :class:`~ddbkeys.ids.blocks_core.BlockState`: the
checks of the counter and the settings they are given, the read-only views of their settings
and stats, the deadline of a caller that waits, and the warning of one collected unclosed."""

from __future__ import annotations

import inspect
import warnings
from typing import TYPE_CHECKING, Any, TypeVar

from ddbkeys.errors import ConfigurationError
from ddbkeys.ids.values import MAX_ID

if TYPE_CHECKING:
    from ddbkeys.ids.blocks_core import BlockState, BlockStats
    from ddbkeys.ids.blocks_steps import Direct
    from ddbkeys.retry import Deadline

__all__ = [
    "AllocatorViews",
    "check_block_size",
    "check_counter",
    "check_fraction",
    "check_timeout",
    "warn_unclosed",
]

C = TypeVar("C")


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


class AllocatorViews:
    """What both allocators show of their counter and :class:`BlockState` (read-only), and
    the deadline of their callers that wait."""

    counter: Any
    _state: BlockState

    def _waiting(self, deadline: Deadline | None, direct: Direct | None = None) -> Deadline:
        """The deadline of a caller about to wait (for a block, or to hand out the ids of its
        ``direct`` write): the counter's, begun when it first waits; a DeadlineExceededError
        once it has waited through it."""
        if deadline is None:
            begun: Deadline = self.counter._begin()
            return begun
        if deadline.expired():
            raise self._state.late_error(deadline.seconds, direct)
        return deadline

    @property
    def table(self) -> str:
        return str(self.counter.table)

    @property
    def block_size(self) -> int:
        """The size of the next block (``block_size`` as given, until it adapts)."""
        return self._state.block_size

    @property
    def min_block_size(self) -> int:
        return self._state.min_block_size

    @property
    def max_block_size(self) -> int:
        return self._state.max_block_size

    @property
    def refill_at(self) -> float:
        return self._state.refill_at

    @property
    def block_lifetime(self) -> float:
        return self._state.block_lifetime

    @property
    def stats(self) -> BlockStats:
        """Stalls, blocks reserved, ids skipped, handed back and wasted (see
        :class:`BlockStats`)."""
        return self._state.stats

    @property
    def stalls(self) -> int:
        """Calls that waited for a block to be reserved."""
        return self._state.stats.stalls

    @property
    def closed(self) -> bool:
        return self._state.closed


def check_timeout(timeout: object, table: str | None) -> float | None:
    """``close(timeout=...)``: None (the counter's deadline) or seconds above 0."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ConfigurationError(
            f"close(timeout=...) must be a number of seconds above 0 (how long to wait for a "
            f"block in flight, then for the hand-back), or None for the counter's deadline; "
            f"not {timeout!r}.",
            table=table,
        )
    return float(timeout)


def check_block_size(block_size: object, table: str | None, what: str = "block_size") -> int:
    """A block size (or one of its bounds): a whole number from 1 to the largest id."""
    if (
        not isinstance(block_size, int)
        or isinstance(block_size, bool)
        or not 1 <= block_size <= MAX_ID
    ):
        raise ConfigurationError(
            f"{what} must be a whole number of at least 1, not {block_size!r}.", table=table
        )
    return block_size


def check_fraction(what: str, value: object, table: str | None, hint: str) -> float:
    """A fraction of a block (``refill_at``): above 0 and at most 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ConfigurationError(
            f"{what} must be a number above 0 and at most 1 ({hint}), not {value!r}.", table=table
        )
    return float(value)


def warn_unclosed(state: BlockState, unused: int, *, asynchronous: bool) -> None:
    """An allocator was collected without being closed, holding ``unused`` ids: say so (a
    ResourceWarning, shown in development mode), when there are any."""
    if not unused:
        return
    close, block = ("aclose()", "an async with") if asynchronous else ("close()", "a with")
    warnings.warn(
        f"A BlockAllocator on table {state.table!r} was collected without {close}: "
        f"{unused} ids it held are left unused. Close it (or use it in {block} block) to "
        "hand them back.",
        ResourceWarning,
        stacklevel=3,
    )
