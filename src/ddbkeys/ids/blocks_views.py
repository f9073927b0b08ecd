"""What both block allocators share apart from the decisions of
:class:`~ddbkeys.ids.blocks_core.BlockState`: how they are made and checked, what they show,
and the warning of one collected unclosed."""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from ddbkeys.errors import ConfigurationError
from ddbkeys.ids.blocks_close import closing
from ddbkeys.ids.blocks_core import (
    DEFAULT_BLOCK_LIFETIME,
    DEFAULT_REFILL_AT,
    BlockFlow,
    BlockState,
    BlockStats,
    CloseReport,
)
from ddbkeys.ids.counter import CounterCore

__all__ = ["AllocatorViews", "check_counter", "warn_unclosed"]


def check_counter(counter: Any, *, asynchronous: bool) -> None:
    """Refuse a ``counter`` that is not the kind the allocator awaits (``asynchronous``) or
    calls: the sync allocator takes a :class:`ddbkeys.ids.AtomicCounter`, the asyncio one a
    :class:`ddbkeys.aio.AtomicCounter` (a :class:`ConfigurationError` that says which)."""
    reserve: Any = getattr(counter, "reserve", None)
    if reserve is None or not hasattr(counter, "table"):
        raise ConfigurationError(
            "BlockAllocator takes an AtomicCounter (BlockAllocator(AtomicCounter(client, table, "
            f"name), block_size=100)), not {type(counter).__name__}."
        )
    if inspect.iscoroutinefunction(reserve) != asynchronous:
        given, wanted = ("ids", "aio") if asynchronous else ("aio", "ids")
        raise ConfigurationError(
            f"ddbkeys.{wanted}.BlockAllocator takes a ddbkeys.{wanted}.AtomicCounter, not a "
            f"ddbkeys.{given} one: use ddbkeys.{given}.BlockAllocator with it, or make the "
            f"counter with ddbkeys.{wanted}.AtomicCounter.",
            table=counter.table,
        )


def warn_unclosed(state: BlockState, *, asynchronous: bool) -> None:
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


C = TypeVar("C", bound=CounterCore)


class AllocatorViews(Generic[C]):
    """What both allocators share: how they are made, what they show (read-only), and the
    flow of their close."""

    asynchronous: ClassVar[bool]
    counter: C
    _state: BlockState

    def __init__(
        self,
        counter: C,
        block_size: int = 100,
        *,
        prefetch: bool = True,
        refill_at: float = DEFAULT_REFILL_AT,
        min_block_size: int | None = None,
        max_block_size: int | None = None,
        block_lifetime: float = DEFAULT_BLOCK_LIFETIME,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_counter(counter, asynchronous=self.asynchronous)
        self.counter, self.prefetch = counter, prefetch
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

    def _start(self) -> None:
        """The driver's own parts (locks, threads, tasks)."""
        raise NotImplementedError

    def _close_flow(self, timeout: object) -> BlockFlow[CloseReport]:
        """The flow of ``close(timeout)``: None waits the counter's deadline, else seconds."""
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
        ):
            raise ConfigurationError(
                "close(timeout=...) must be a number of seconds above 0 (how long to wait for a "
                "block in flight, then for the hand-back), or None for the counter's deadline; "
                f"not {timeout!r}.",
                table=self.table,
            )
        seconds = self.counter.deadline if timeout is None else float(timeout)
        return closing(self._state, self.counter, seconds)

    @property
    def table(self) -> str:
        return self.counter.table

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
        """Stalls, blocks reserved, ids skipped, handed back and wasted."""
        return self._state.stats

    @property
    def stalls(self) -> int:
        """Calls that waited for a block to be reserved."""
        return self._state.stats.stalls

    @property
    def closed(self) -> bool:
        return self._state.closed
