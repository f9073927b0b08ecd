"""Plain data of the block allocator: the steps of a take, the instructions its flows give a
driver, its records of the reservations, and its counts."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, TypeVar

__all__ = [
    "WAKE",
    "Asked",
    "BlockFlow",
    "BlockStats",
    "Direct",
    "Hand",
    "Instruction",
    "Pause",
    "Refill",
    "Send",
    "Sent",
    "Step",
    "Wait",
    "Wake",
    "Write",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Hand:
    """Hand ``ids`` out. With ``refill``, this take asked for the next block."""

    ids: range
    refill: bool = False


@dataclass(frozen=True, slots=True)
class Wait:
    """Wait for a reservation (``refill``: this take asked for it), then take with ``ticket``."""

    ticket: int
    refill: bool = False


@dataclass(frozen=True, slots=True)
class Direct:
    """More ids than a block: ``count`` ids with one write of their own (``number``: which)."""

    count: int
    number: int
    refill: ClassVar[bool] = False


Step = Hand | Wait | Direct


@dataclass(frozen=True, slots=True)
class Refill:
    """Reserve a block of ``size`` ids (``number``: which) in the background (``filling``)."""

    number: int
    size: int


@dataclass(frozen=True, slots=True)
class Send:
    """Call ``counter.reserve(count)`` now (no lock held); send its ids in, or throw its error."""

    count: int


@dataclass(frozen=True, slots=True)
class Write:
    """Run the counter's ``flow`` now (``counter._run``; no lock held) and send its result in."""

    flow: Generator[Any, Any, bool]


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait at most ``seconds`` for a :data:`WAKE` (another flow changed the state)."""

    seconds: float


class Wake:
    """Wake every flow paused."""


WAKE = Wake()

Instruction = Refill | Send | Write | Pause | Wake
#: A flow of the state: yields instructions, gets what a Send or Write gave, returns a T.
BlockFlow = Generator[Instruction, Any, T]


class Asked(NamedTuple):
    """A reservation asked for, not sent; ``at``: the reservations ended by then."""

    size: int
    at: int


class Sent(NamedTuple):
    """A reservation in flight: the highest id known when sent (it lands above), and when."""

    known: int | None
    at: int
    when: float = 0.0


@dataclass(slots=True)
class BlockStats:
    """What an allocator did (read them at any time)."""

    #: Calls that had to wait for a block to be reserved (nothing held, or not enough).
    stalls: int = 0
    #: Blocks reserved (one UpdateItem each), ahead of need or on demand.
    refills: int = 0
    #: Reservations of a block that failed (their error went to the callers waiting for them).
    failed_refills: int = 0
    #: Ids skipped while open: the rest of a block too short for ``reserve(count)``, and blocks
    #: held below a reservation of more than a block (so that ids keep increasing).
    skipped: int = 0
    #: Ids given back to the counter by ``close()`` (the next reservation starts with them).
    handed_back: int = 0
    #: Ids reserved and neither handed out nor handed back (at close, or arriving after it,
    #: or reserved with one write for a caller that left without them).
    wasted: int = 0
