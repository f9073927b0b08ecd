"""What ``auto`` would likely choose, as the estimate says it, and its own line where it reads
otherwise than the method it chooses does when asked for. Pure."""

from __future__ import annotations

from dataclasses import replace

from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._listing.choice import choose, most_keys, not_active
from ddbkeys.partition_keys._proof.replay import estimate as scan_costs
from ddbkeys.partition_keys._proof.replay import index_weighed
from ddbkeys.partition_keys._proof.report import (
    FOLLOWER_BACKFILLS,
    ProofStatus,
    follower_backfills,
)
from ddbkeys.partition_keys._tasks.figures import duration, figure, span
from ddbkeys.partition_keys._tasks.methods import MethodEstimate

__all__ = ["auto_choice", "in_segments"]


def in_segments(alone: MethodEstimate, split: MethodEstimate, segments: int) -> MethodEstimate:
    """auto's line where it lists by skipping in ``segments`` Scan segments (``split``, its
    simulation), against skip-pages' in one (``alone``): each segment starts skipping again,
    so where a large collection lies against a segment's start turns on where the table's
    hash ranges split (helper-83: 500 small keys and three of 600 x 4 KB, skip-pages 183.5
    RCU in one segment, 49.5 in auto's six). The range spans both: the likeliest is the
    split's, the ends the farther of each."""
    if None in (alone.rcu, alone.rcu_low, alone.rcu_high, split.rcu, split.rcu_low, split.rcu_high):
        return split
    assert alone.rcu_low is not None and alone.rcu_high is not None  # (for mypy)
    assert split.rcu_low is not None and split.rcu_high is not None and split.rcu is not None
    low, high = min(alone.rcu_low, split.rcu_low), max(alone.rcu_high, split.rcu_high)
    return replace(
        split,
        rcu=min(max(low, split.rcu), high),
        rcu_low=low,
        rcu_high=high,
        note=f"skip-pages in {segments} Scan segments, one reader at first, each segment "
        f"skipping anew (in one, as asked for: {span(alone.rcu_low, alone.rcu, alone.rcu_high)} "
        f"RCU); {split.note}",
    )


def auto_choice(
    info: TableInfo,
    index: str,
    attribute: str,
    methods: tuple[MethodEstimate, ...],
    replay: float | None,
    own_items: bool = False,
    proof: ProofStatus | str | None = None,
) -> tuple[str, str]:
    """The method ``auto`` would likely choose, and why, naming the figures it weighs (the
    same as these lines: ``replay.estimate`` and ``replay.replay_units``); with ``own_items``
    (``include_own_items``) never the index, nor where the index's ``proof`` status, read
    with the listing's margin, says a listing cannot prove it now (a listing started now
    would decline it as that status does)."""
    scan = methods[0]
    against = f"a scan's ~{figure(scan.rcu)} RCU" if scan.rcu is not None else "a scan"
    planned = choose("auto", info, index, attribute, own_items=own_items)
    if planned is not None:
        pages = methods[2]
        if pages.available and pages.rcu is not None:
            return planned.method.name, (
                f"{planned.reason}: skip-pages, ~{figure(pages.rcu)} RCU against {against}"
            )
        return planned.method.name, planned.reason
    why = not_active(info, index) or (
        "the table's stream is off" if info.stream_arn is None else None
    )
    if why is None and isinstance(proof, str):  # (its evidence could not be read)
        why = f"its proof cannot be read now: {proof}"
    if why is None and isinstance(proof, ProofStatus) and not proof.provable:
        why = proof.reason or "its proof does not hold now"
        if proof.provable_in is not None:
            why += f" (provable in about {duration(proof.provable_in)}, by waiting)"
        if follower_backfills(proof):
            why += f" (or {FOLLOWER_BACKFILLS})"
    if why is not None:
        return "skip-pages", f"the marker index {index!r} cannot be proven: {why}"
    if replay is None:
        return "index", (
            f"the marker index {index!r}, if its proof succeeds when the listing starts (else "
            f"skip-pages): {index_weighed(info, index, None)}"
        )
    _, _, per_key = scan_costs(info, index)
    most = most_keys("auto", info, index) or 0
    rechecks = round(replay / per_key)
    weighed = index_weighed(info, index, rechecks)
    if rechecks > most:
        return "skip-pages", f"{weighed}: more than listing another way"
    return "index", f"{weighed}, if its proof succeeds when the listing starts (else skip-pages)"
