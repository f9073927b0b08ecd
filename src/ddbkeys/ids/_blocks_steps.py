"""The block allocator's vocabulary: what a take does next (a :data:`Step`), the instructions
a flow gives its driver, what ``close()`` hands back, and the block size's rules. Values and
pure functions; :mod:`ddbkeys.ids._blocks_core` decides with them."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, TypeVar

from ddbkeys.ids._values import whole_number

T = TypeVar("T")

#: The fraction of a block handed out when the next one is reserved (Meituan Leaf's 10%).
DEFAULT_REFILL_AT = 0.1
#: How long a block should last, in seconds, when its size adapts (see :func:`adapt_block_size`).
DEFAULT_BLOCK_LIFETIME = 60.0


# --- what a take does next (Step), and the instructions a flow gives its driver -------------------


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


class Refill(NamedTuple):
    """Reserve a block of ``size`` ids (``number``: which) in the background (:meth:`filling`)."""

    number: int
    size: int


class Call(NamedTuple):
    """Call ``call(counter)`` (awaited, in asyncio), no lock held; its result or error goes in."""

    call: Callable[[Any], Any]


class Pause(NamedTuple):
    """Wait at most ``seconds`` for a :data:`WAKE` (another flow changed the state)."""

    seconds: float


class Wake(NamedTuple):
    """Wake every flow paused."""


WAKE = Wake()
#: A flow of the state: yields instructions, gets what a Call gave, returns a T.
BlockFlow = Generator[Refill | Call | Pause | Wake, Any, T]


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


# --- what close() hands back -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HandBack:
    """``close()``'s write: the counter set to ``value`` (None: removed) if it holds ``top``
    (None: no write); ``ids`` go back if it succeeds, ``wasted`` cannot either way."""

    top: int | None
    value: int | None
    ids: int
    wasted: int


@dataclass(frozen=True, slots=True)
class CloseReport:
    """What ``close()`` did: ids handed back, ids wasted, and whether it sent its write."""

    handed_back: int
    wasted: int
    sent: bool


def hand_back_for(unused: Iterable[range], top: int | None) -> HandBack:
    """What can go back: the unused ranges that end at ``top`` (the allocator's highest id,
    which the counter holds if nobody reserved since) and those below them without a gap. The
    counter is set to the id below the lowest of them (removed below 0: "no id yet")."""
    held = sorted((r for r in unused if r), key=lambda r: r.start, reverse=True)
    total = sum(len(r) for r in held)
    if not held or top is None or held[0][-1] != top:
        return HandBack(None, None, 0, total)
    lowest, back = held[0], len(held[0])
    for lower in held[1:]:
        if lower[-1] + lower.step != lowest.start:
            break
        lowest, back = lower, back + len(lower)
    value = lowest.start - lowest.step
    return HandBack(top, value if value >= 0 else None, back, total - back)


# --- the decisions --------------------------------------------------------------------------------


def adapt_block_size(
    size: int, lifetime: float, *, target: float, smallest: int, largest: int
) -> int:
    """The next size, when a block of ``size`` would last ``lifetime`` seconds: doubled under
    ``target``, halved over twice that, within ``smallest`` and ``largest``."""
    if lifetime < target:
        return max(min(size * 2, largest), smallest)
    if lifetime > 2 * target:
        size //= 2
    return min(max(size, smallest), largest)


def check_block_size(block_size: object, table: str | None, what: str = "block_size") -> int:
    return whole_number(what, block_size, table=table)


def within(value: object, most: float) -> bool:
    """Whether ``value`` is a number above 0 and at most ``most``."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 < value <= most
