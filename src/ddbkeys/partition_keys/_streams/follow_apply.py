"""How a follower applies the collections a batch of stream records names (``apply_keys``),
and tries its pending collections again (``retry_pending``): flows on its
:class:`~ddbkeys.partition_keys._streams.follow.FollowCore` and where it stands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ddbkeys._core.steps import Flow
from ddbkeys._core.stopping import StopFlag
from ddbkeys.partition_keys._index.maintain import Outcome
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._index.pending import Nonces, apply_flow, retry_flow, unpend_flow
from ddbkeys.partition_keys._index.state import StateCore, key_json
from ddbkeys.partition_keys._listing.base import Key
from ddbkeys.partition_keys._streams.follow_state import FollowState, count

__all__ = ["FollowParts", "apply_keys", "retry_pending"]


class FollowParts(Protocol):
    """What these flows read of a follower's core
    (:class:`~ddbkeys.partition_keys._streams.follow.FollowCore`)."""

    index: MarkerCore
    store: StateCore
    nonce: Nonces
    max_pending: int
    retry_every: float
    clock: Callable[[], float]


def apply_keys(
    core: FollowParts, state: FollowState, keys: list[Key], stop: StopFlag | None = None
) -> Flow[list[Key]]:
    """Reconcile each collection of ``keys`` (one that does not settle recorded pending),
    until ``stop`` is set; the pending elements known before that name one that settled
    are taken out. Those neither settled nor recorded (the pending set full)."""
    known = frozenset(state.pending)
    clashes: list[Key] = []
    settled: list[Key] = []
    owed: list[Key] = []
    for key in keys:
        if stop is not None and stop.requested:
            break  # (what it applied is recorded below; the batch is read again)
        applied = yield from apply_flow(
            core.index, core.store, key, core.nonce, core.max_pending, known
        )
        if applied.outcome is not None:
            count(state.report, applied.outcome)
            (clashes if applied.outcome is Outcome.CLASH else settled).append(key)
        elif applied.element is not None:
            state.pending.add(applied.element)
            state.pending.difference_update(applied.replaced)
            state.report.pending += 1
        else:
            owed.append(key)
    clashed = [key_json(k) for k in clashes]
    yield from core.store.clashes(core.index.table, core.index.name, clashed, add=True)
    gone = yield from unpend_flow(core.store, core.index.table, core.index.name, known, settled)
    state.pending.difference_update(gone)
    state.report.unpended += len(gone)
    return owed


def retry_pending(core: FollowParts, state: FollowState) -> Flow[None]:
    """Reconcile the pending collections this follower knows of (at most once every
    ``retry_every`` seconds): those that settle leave the set."""
    now, tried = core.clock(), state.pending_tried
    if not state.pending or (tried is not None and now - tried < core.retry_every):
        return
    state.pending_tried = now
    outcomes, gone = yield from retry_flow(core.index, core.store, state.pending)
    for outcome in outcomes:
        count(state.report, outcome)
    state.pending.difference_update(gone)
    state.report.unpended += len(gone)
