"""Where a listing reads each shard of the table's stream from to prove the marker index (the
rule is the one :mod:`ddbkeys.partition_keys._proof.evidence` states), or why it cannot. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ddbkeys.partition_keys._proof.evidence import (
    DAY,
    DEFAULT_REPLAY_MARGIN,
    Decline,
    Evidence,
    ShardMark,
    nearly_a_day_old,
)
from ddbkeys.partition_keys._proof.precheck import basis, precheck
from ddbkeys.partition_keys._streams.lambda_trigger import checked_cut
from ddbkeys.partition_keys._streams.streams import closed_leaves, shard_born

__all__ = [
    "ReplayWindow",
    "ShardRead",
    "out_of_range",
    "replay_window",
    "trimmed",
    "unlisted_child",
]


@dataclass(frozen=True)
class ShardRead:
    """Read ``shard`` after ``after`` (None: from its start, TRIM_HORIZON). ``skip_before``:
    records created before it (seconds) are covered by the backfill and need no re-check.
    ``only_after``: the shard is accepted only if it has no record created before it (its
    first record's ApproximateCreationDateTime): a shard nobody named."""

    shard: str
    after: str | None
    skip_before: float | None = None
    only_after: float | None = None
    #: The maintainer's newest position in the shard: the read goes on to it, whatever empty
    #: pages come before (None: no position to reach).
    reach: str | None = None
    #: When the maintainer began at the shard's end (its mark's ``since``; None: it did not),
    #: or its newest word on the tip there, while it has applied no record: a record created
    #: before (surely, its time rounded down) is history the backfill covers, not one it has
    #: yet to apply (what is said of it, not what is re-checked).
    began: float | None = None
    #: Whether a read from the shard's start must find its first record younger than the
    #: stream keeps records (a day less ``TRIM_SAFETY``): False where only the records after
    #: ``skip_before``, which is itself that recent, are needed (a listing from an export).
    whole_history: bool = True


@dataclass(frozen=True)
class ReplayWindow:
    """Where to read each shard of ``stream`` from; ``cut`` is the newest time a mark may have
    been saved at to be used (the listing's start less the margin)."""

    stream: str
    reads: tuple[ShardRead, ...]
    margin: float
    cut: float


def replay_window(
    evidence: Evidence | None,
    stream: str | None,
    shards: Sequence[Mapping[str, Any]],
    now: float,
    margin: float = DEFAULT_REPLAY_MARGIN,
    markers: str | None = None,
) -> ReplayWindow | Decline:
    """Where to read each shard of the table's ``stream`` (DescribeStream's ``shards``) from,
    for a listing starting ``now``; or why the index cannot be proven complete. Pure."""
    if evidence is not None:
        evidence = basis(evidence, stream, margin)  # (the backfill the proof rests on, once)
    declined = precheck(evidence, stream, margin, markers)
    if declined is not None:
        return declined
    assert evidence is not None and evidence.backfill is not None and stream is not None
    backfill = evidence.backfill
    cut = now - margin
    named = {s: m for s, m in evidence.shards.items() if m.stream == stream}
    listed = {str(s["ShardId"]): s for s in shards}
    declined = _gone(named, listed, backfill.started, margin, cut) or unlisted_child(shards)
    if declined is not None:
        return declined
    reads: list[ShardRead] = []
    accepted: set[str] = set()
    for shard in _parents_first(listed):
        mark = named.get(shard)
        parent = listed[shard].get("ParentShardId")
        if mark is not None:
            read = _marked(evidence, stream, mark, listed[shard], now, margin)
        elif parent is not None and (parent in accepted or parent in named) and parent in listed:
            read = ShardRead(shard, None)  # a child of a shard read: every record from its first
        elif now - backfill.started < DAY - margin:
            read = ShardRead(shard, None, only_after=backfill.started)
        else:
            hint = (
                " (the Lambda handler gets events without a shard id: give its trigger a "
                "tumbling window)"
                if evidence.unnamed_batches is not None
                else ""
            )
            read = Decline(
                f"no maintainer recorded a position in shard {shard} of the stream{hint}"
            )
        if isinstance(read, Decline):
            return read
        reads.append(read)
        accepted.add(shard)
    return ReplayWindow(stream, tuple(reads), margin, cut)


def unlisted_child(shards: Sequence[Mapping[str, Any]]) -> Decline | None:
    """Why the stream's ``shards`` (DescribeStream's) may leave records out: a closed shard
    listed with none after it (``closed_leaves``: its child not listed yet). Pure."""
    leaves = closed_leaves(shards)
    if not leaves:
        return None
    return Decline(
        f"shard {leaves[0]} of the table's stream is closed and DescribeStream lists no shard "
        "after it yet (a new shard a moment from being listed): try again in a moment"
    )


def _gone(
    named: Mapping[str, ShardMark],
    listed: Mapping[str, Mapping[str, Any]],
    started: float,
    margin: float,
    cut: float,
) -> Decline | None:
    """Why the records of a shard the maintainers named may be missing, if so: lost before
    they were applied since the backfill began, or the shard left the stream within the margin."""
    for shard, gone in named.items():
        if gone.gap is not None and gone.gap > started - margin:
            return Decline(
                f"records of shard {shard} were lost before the maintainer applied them (its "
                "position older than the stream keeps, or Lambda went on past them): run "
                "`index backfill` again"
            )
        if shard not in listed and gone.marks and gone.marks[-1][1] > cut:
            return Decline(
                f"shard {shard} left the stream less than {margin:g} s after the maintainer "
                "applied its records"
            )
    return None


def _marked(
    evidence: Evidence,
    stream: str,
    mark: ShardMark,
    described: Mapping[str, Any],
    now: float,
    margin: float,
) -> ShardRead | Decline:
    """The read of a shard a maintainer recorded positions in (``mark``; ``described``, the
    shard as DescribeStream lists it), or why its positions cannot be used."""
    shard, cut = mark.shard, now - margin
    assert evidence.backfill is not None
    declined = _begun(mark, evidence.backfill.started, margin) or out_of_range(mark, described, now)
    if declined is not None:
        return declined
    # While the Lambda handler keeps the index, a position counts once a check of its trigger
    # vouches for it (see ``lambda_trigger``).
    held = cut
    if evidence.maintainer == "lambda":
        held = checked_cut(evidence.triggers.get(shard), stream, cut)
    sequence, found = mark.held_back(held)
    began = since = float(mark.since) if isinstance(mark.since, int | float) else None
    if began is not None and mark.marks and mark.marks[-1][0] is None:
        began = max(began, mark.marks[-1][1])
    if since is not None and found and sequence is None:
        # (the tip a follower begun at the shard's end read with nothing since: the rule)
        since = max(since, *(t for _, t in mark.marks if t <= held))
    skip = since - margin if since is not None else None
    declined = _trimmed(mark, held, found and sequence is None, skip, now)
    if declined is not None:
        return declined
    newest = mark.marks[-1][0] if mark.marks else None
    return ShardRead(
        shard, sequence if found else None, skip_before=skip, reach=newest, began=began
    )


def _begun(mark: ShardMark, started: float, margin: float) -> Decline | None:
    """Why the maintainer's coverage of the shard began too late for the backfill that
    ``started`` to cover what came before it, if so."""
    shard = mark.shard
    if isinstance(mark.since, int | float) and mark.since > started - margin:
        return Decline(
            f"the maintainer began reading shard {shard} after the backfill began: run "
            "`index backfill` again"
        )
    if mark.since == "start" and _began_late(shard, mark, started, margin):
        return Decline(
            f"the maintainer began reading shard {shard} from its oldest record nearly a day "
            "after the shard was made, and after the backfill began: records trimmed before "
            "it read them were never applied: run `index backfill` again"
        )
    return None


def _trimmed(
    mark: ShardMark, held: float, none_applied: bool, skip: float | None, now: float
) -> Decline | None:
    """Why records of the shard may have been trimmed before its maintainer applied them, if
    so: its marks (``held``: the newest time a usable one may have been saved; whether the one
    held back had applied ``none`` of its records), or, read from its start for want of a
    usable mark, the shard's own age."""
    shard = mark.shard
    newest = mark.marks[-1][0] if mark.marks else None
    if newest is None and mark.marks and nearly_a_day_old(mark.marks[-1][1], now):
        return Decline(
            f"the maintainer has said nothing of shard {shard} for nearly a day, and applied "
            "none of its records: records may have been trimmed unapplied"
        )
    usable = [t for _, t in mark.marks if t <= held]
    if none_applied and nearly_a_day_old(max(usable), now):
        # (read from the shard's start: a record trimmed since leaves no trace there)
        return Decline(
            f"the maintainer's position in shard {shard} held back the margin is nearly a day "
            "old, and had applied none of its records: records may have been trimmed unapplied"
        )
    if not usable and _lost_before(shard, mark, skip, now):
        return Decline(
            f"no position the maintainer recorded in shard {shard} is old enough to use (held "
            "back the margin, or to the Lambda trigger's last check), and the shard is nearly a "
            "day old: read from its start, records trimmed unapplied would leave no trace"
        )
    return None


def _began_late(shard: str, mark: ShardMark, started: float, margin: float) -> bool:
    """Whether a maintainer that covers ``shard`` from its oldest record ("start") first
    saved it nearly a day after the shard was made (its id's time): records trimmed before it
    read them were never applied, and, its first save after the backfill began (less the
    margin), the backfill does not cover them either."""
    born, first = shard_born(shard), mark.first_saved
    if born is None or first is None:
        return False
    return nearly_a_day_old(born, first) and first > started - margin


def _lost_before(shard: str, mark: ShardMark, skip: float | None, now: float) -> bool:
    """Whether a read of ``shard`` from its start (TRIM_HORIZON), for want of a position old
    enough, may miss records a listing needs: the shard made nearly a day ago (by its id,
    else by its first mark), and the records since then not all before ``skip`` (those the
    backfill covers). A trimmed record leaves no trace there: the first record read may be a
    minute old. (Where the held-back position applied none, the maintainer vouches for the
    shard up to then: its age decides, above. A read from a position finds out itself: the
    stream refuses a trimmed one.)"""
    made = _made(mark)
    if made is None or not nearly_a_day_old(made, now):
        return False
    return skip is None or nearly_a_day_old(skip, now)


def _made(mark: ShardMark) -> float | None:
    """When ``mark``'s shard was made: by its id, else by its first mark (None: unknown)."""
    born = shard_born(mark.shard)
    return born if born is not None else min((t for _, t in mark.marks), default=None)


def trimmed(shard: str) -> Decline:
    """A position in ``shard`` older than the stream keeps."""
    return Decline(
        f"the maintainer's position in shard {shard} is older than the stream keeps (24 h): run "
        "`index backfill` again once the maintainer runs"
    )


def out_of_range(
    mark: ShardMark, shard: Mapping[str, Any], now: float | None = None
) -> Decline | None:
    """Why ``mark`` cannot be a maintainer's, if so: a recorded position outside the shard's
    ``SequenceNumberRange`` (DescribeStream): before its first sequence number, or after the
    last of a closed shard. No maintainer applies a record that is not in the shard, so such a
    position was written by something else (the state table is part of what a proof trusts).
    An open shard has no last number: a position past its tip is found by reading it. Where
    the shard may have lost a day's records by ``now`` (made nearly a day before, by its id
    or its first mark), a position before its first is taken for one trimmed since: the
    reference says only "the first sequence number for the stream records contained within a
    shard", which may move as they go."""
    limits = shard.get("SequenceNumberRange") or {}
    first, last = limits.get("StartingSequenceNumber"), limits.get("EndingSequenceNumber")
    made = _made(mark)
    old = now is not None and made is not None and nearly_a_day_old(made, now)
    for sequence, _ in mark.marks:
        if sequence is None:
            continue
        before = first is not None and str(first).isdigit() and int(sequence) < int(first)
        after = last is not None and str(last).isdigit() and int(sequence) > int(last)
        if before and old:
            return trimmed(mark.shard)
        if before or after:
            bound = f"before its first, {first}" if before else f"after its last, {last}"
            return Decline(
                f"the position recorded for shard {mark.shard}, {sequence}, lies {bound}: no "
                "maintainer wrote it (only the maintainer's role may write the state table); "
                "remove that shard's attribute from the index's record, restart the maintainer, "
                "then run `index backfill` again"
            )
    return None


def _parents_first(listed: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The shard ids, each after its parent when the parent is listed."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(shard: str, depth: int = 0) -> None:
        if shard in seen:
            return
        parent = listed[shard].get("ParentShardId")
        if parent in listed and depth < len(listed):
            visit(str(parent), depth + 1)
        seen.add(shard)
        order.append(shard)

    for shard in sorted(listed):
        visit(shard)
    return order
