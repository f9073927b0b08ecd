"""What belongs to one event loop: asyncio locks, futures, tasks and events are bound to the loop
they were made in (or first waited in), and misbehave in any other (a ``RuntimeError`` about a
different loop, or a waiter that is never woken because it was set from another thread).

Two answers, chosen per class of :mod:`ddbkeys.aio` by what it holds:

- :class:`PerLoop`: a value made in each loop that asks for it (an :class:`asyncio.Lock`, a
  group commit), so that the object itself holds nothing bound to a loop and may be used from
  one loop after another;
- :class:`LoopBinding`: the object is bound to the loop of its first call that needs one, and a
  call from another loop is a :class:`~ddbkeys.ConfigurationError` (state shared by all
  its callers is tied to tasks of that loop: a block allocator's reservation, a listing's
  readers).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from ddbkeys._errors import ConfigurationError

__all__ = ["LoopBinding", "PerLoop", "loop_state"]

V = TypeVar("V")


class PerLoop(Generic[V]):
    """One value per event loop, made by ``make()`` the first time a loop asks for it.

    Keyed by the loop itself, not by ``id(loop)``: a new loop may get the id of one that is
    gone, and must not inherit its lock or its group. The values of loops that are closed are
    dropped at the next call (a value that holds tasks of its loop would keep the loop alive in
    a weak mapping)."""

    __slots__ = ("_guard", "_make", "_values")

    def __init__(self, make: Callable[[], V]) -> None:
        self._make = make
        self._values: dict[asyncio.AbstractEventLoop, V] = {}
        self._guard = threading.Lock()

    def get(self) -> V:
        """The value of the running loop (made now if it has none yet)."""
        loop = asyncio.get_running_loop()
        with self._guard:
            value = self._values.get(loop)
            if value is None:
                for closed in [other for other in self._values if other.is_closed()]:
                    del self._values[closed]
                value = self._values[loop] = self._make()
            return value

    def __len__(self) -> int:
        with self._guard:
            return len(self._values)


def loop_state(loop: asyncio.AbstractEventLoop) -> str:
    """How another loop stands, for an error message."""
    if loop.is_closed():
        return "one that has ended"
    if loop.is_running():
        return "one still running, in another thread"
    return "one still open"


class LoopBinding:
    """The event loop an object belongs to: the loop of its first :meth:`check`; a check from
    any other loop raises a :class:`ConfigurationError` naming ``owner`` (its full name) and
    saying why it is bound (``holds``: "its blocks are reserved by tasks of that loop").

    The loop is held (not weakly: a loop that is gone is another loop all the same)."""

    __slots__ = ("_guard", "_loop", "holds", "owner")

    def __init__(self, owner: str, holds: str) -> None:
        self.owner = owner
        self.holds = holds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._guard = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The loop bound to, or None before the first check."""
        return self._loop

    def check(self) -> asyncio.AbstractEventLoop:
        """The running loop, bound to on the first call; from another loop, the error."""
        loop = asyncio.get_running_loop()
        with self._guard:
            if self._loop is None:
                self._loop = loop
            bound = self._loop
        if bound is not loop:
            short = self.owner.rsplit(".", 1)[-1]
            raise ConfigurationError(
                f"{self.owner} was called in an event loop other than the one of its first call "
                f"({loop_state(bound)}), and {self.holds}: create one {short} per event loop "
                "(each over a client opened in that loop)."
            )
        return loop
