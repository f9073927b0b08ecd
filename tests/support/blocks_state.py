"""A block allocator's state (BlockState) driven by hand in the unit tests: a clock moved by
hand, and the driver's moves (claim a reservation, its answer, its failure)."""

from __future__ import annotations

from typing import Any

from ddbkeys.ids._blocks_core import BlockState
from ddbkeys.ids._blocks_steps import Hand, Refill, Wait


class Clock:
    """A clock moved by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def claimed(state: BlockState) -> Refill:
    """The reservation asked for, as the driver sends it."""
    refill = state.claim_refill()
    assert refill is not None, "nothing was asked for"
    return refill


def in_flight(state: BlockState, refill: Refill | None) -> Refill:
    """``refill``, or else the first reservation sent and not ended (sending the first one
    asked for when none is in flight)."""
    if refill is not None:
        return refill
    if not state.flight:
        return claimed(state)
    return Refill(min(state.flight), 0)


def arrive(state: BlockState, block: range, refill: Refill | None = None) -> None:
    state.filled(in_flight(state, refill), block)


def fail(state: BlockState, error: Exception, refill: Refill | None = None) -> None:
    state.failed(in_flight(state, refill), error)


def held(block: range, block_size: int | None = None, **settings: Any) -> BlockState:
    """A state with ``block`` reserved (the spare: the next take makes it current)."""
    state = BlockState(block_size or len(block), **settings)
    assert state.take(1) == Wait(0, refill=True)
    assert claimed(state).size == (block_size or len(block))
    arrive(state, block)
    state.stats.stalls = 0
    return state


def next_id(state: BlockState) -> tuple[int, str]:
    """What ``next()`` does, ``take(1)``: (the id, "S" when it asked for the next block, or
    "s")."""
    step = state.take(1)
    assert isinstance(step, Hand)
    return step.ids[0], "S" if step.refill else "s"
