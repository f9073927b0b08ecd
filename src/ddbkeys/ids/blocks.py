"""Blocks of ids handed out locally (hi/lo), for more ids per second than one item can take."""

from __future__ import annotations

import threading

from ddbkeys.errors import ConfigurationError
from ddbkeys.ids.counter import AtomicCounter

__all__ = ["BlockAllocator"]


class BlockAllocator:
    """Hands out ids from blocks reserved on an :class:`AtomicCounter`, one write per block.

    Promises: **unique** ids across every process that shares the counter (blocks never
    overlap), **increasing within one process** (and within one allocator), but not across
    processes: two processes interleave their blocks. **Not gapless**: a process that stops
    (or dies) leaves the rest of its block unused forever, and so does a block whose reservation
    response was lost. Thread-safe.

    Cost: one UpdateItem (1 write unit) per ``block_size`` ids, so 0.01 write units an id with
    blocks of 100, and ``block_size`` times the throughput the counter item alone allows.

    With ``prefetch`` (the default) the next block is reserved by one caller, outside the lock,
    once half of the current block is used, so other threads rarely wait for DynamoDB.
    """

    def __init__(
        self, counter: AtomicCounter, block_size: int = 100, *, prefetch: bool = True
    ) -> None:
        if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1:
            raise ConfigurationError(
                f"block_size must be a whole number of at least 1, not {block_size!r}.",
                table=counter.table,
            )
        self.counter = counter
        self.block_size = block_size
        self.prefetch = prefetch
        self._cond = threading.Condition()
        self._block: range = range(0)
        self._position = 0
        self._spare: range | None = None
        self._fetching = False
        self._error: BaseException | None = None

    @property
    def table(self) -> str:
        return self.counter.table

    def next(self) -> int:
        """The next id of this process."""
        fetch_now = False
        with self._cond:
            while True:
                if self._position < len(self._block):
                    value = self._block[self._position]
                    self._position += 1
                    left = len(self._block) - self._position
                    if (
                        self.prefetch
                        and left <= self.block_size // 2
                        and self._spare is None
                        and not self._fetching
                    ):
                        self._fetching = True
                        fetch_now = True
                    break
                if self._spare is not None:
                    self._block, self._position, self._spare = self._spare, 0, None
                    continue
                if self._fetching:
                    self._cond.wait()
                    if self._error is not None:
                        error, self._error = self._error, None
                        raise error
                    continue
                self._fetching = True
                self._cond.release()
                try:
                    self._fill()
                finally:
                    self._cond.acquire()
        if fetch_now:
            self._fill()
        return value

    def _fill(self) -> None:
        """Reserve one block into the spare slot (called without the lock held)."""
        try:
            block = self.counter.reserve(self.block_size)
        except BaseException as exc:
            with self._cond:
                self._fetching = False
                self._error = exc
                self._cond.notify_all()
            raise
        with self._cond:
            self._spare = block
            self._fetching = False
            self._error = None
            self._cond.notify_all()

    def reserve(self, count: int) -> list[int]:
        """``count`` ids of this process, in increasing order."""
        return [self.next() for _ in range(count)]
