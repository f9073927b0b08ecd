"""What :class:`~ddbkeys.ids.blocks_core.BlockState` tells its driver to do next (the steps of a
take, the reservations to send), the records it keeps of its reservations, and its counts.
Plain data, shared by the thread and asyncio drivers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

__all__ = ["Asked", "BlockStats", "Direct", "Hand", "Refill", "Sent", "Step", "Wait"]


@dataclass(frozen=True, slots=True)
class Hand:
    """Hand ``ids`` out. With ``refill``, this take asked for the next block: the driver starts
    its reservation (:meth:`~ddbkeys.ids.blocks_core.BlockState.claim_refill` gives the size)."""

    ids: range
    refill: bool = False


@dataclass(frozen=True, slots=True)
class Wait:
    """No block holds the ids and one is being reserved (with ``refill``: this take asked for
    it, the driver starts it): wait for an outcome, then take again with ``ticket`` (so that
    the error of a reservation that failed meanwhile reaches this caller)."""

    ticket: int
    refill: bool = False


@dataclass(frozen=True, slots=True)
class Refill:
    """A reservation of a block of ``size`` ids for the driver to send (``number``: which one,
    for the report of its outcome)."""

    number: int
    size: int


class Asked(NamedTuple):
    """A reservation asked for, not sent: its size; ``at``: the reservations ended by then."""

    size: int
    at: int


class Sent(NamedTuple):
    """A reservation in flight: the highest id known when sent (it lands above), ``at``, and
    ``when`` it was sent (by the state's clock: to tell an endpoint that does not answer)."""

    known: int | None
    at: int
    when: float = 0.0


@dataclass(frozen=True, slots=True)
class Direct:
    """More ids than a block holds: reserve ``count`` ids on the counter with one write, then
    report them with :meth:`~ddbkeys.ids.blocks_core.BlockState.reserved` (or report that the
    caller leaves without them with :meth:`~ddbkeys.ids.blocks_core.BlockState.forgone`).
    ``number``: which reservation, for those reports. Until it is answered it counts as in
    flight: no id that may lie above its ids is handed out."""

    count: int
    number: int
    refill: ClassVar[bool] = False


Step = Hand | Wait | Direct


@dataclass(slots=True)
class BlockStats:
    """What an allocator did (counted under its lock; read them at any time)."""

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
