"""What a gapless sequence knows of its counter between calls (:class:`CounterState`), shared
by its core's flows (:mod:`ddbkeys.ids._gapless_core`) and the sequence that keeps it."""

from __future__ import annotations

import threading

__all__ = ["CounterState"]


class CounterState:
    """What a sequence knows of its counter between calls: the value its last commit left it
    at, or a refusal showed (None: read it before the next commit). Shared by the sequence's
    concurrent commits (threads); its lock is held for a line, never across a request."""

    def __init__(self, last: int | None = None) -> None:
        self._lock = threading.Lock()
        self._last = last

    @property
    def last(self) -> int | None:
        with self._lock:
            return self._last

    def learn(self, value: int | None) -> None:
        """The counter holds ``value`` (None: not known any more)."""
        with self._lock:
            self._last = value

    def passed(self, value: int) -> None:
        """A commit moved the counter to ``value``: kept unless a later one went further."""
        with self._lock:
            if self._last is None or self._last < value:
                self._last = value
