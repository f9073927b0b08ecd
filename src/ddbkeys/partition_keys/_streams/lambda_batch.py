"""What the Lambda handler records before it applies a batch of a named shard, decided from the
state record alone (:mod:`ddbkeys.partition_keys.aws_lambda` reads and writes it). Pure.

Before the batch, the shard's mark says its first record is not known applied (``failed``), so
a batch Lambda gives up on, whatever ends the invocation (a crash included), leaves a trace. A
batch that begins past such a record, or whose records are nearly a day old (earlier ones may
have been trimmed), is a gap; one that begins before the handler's own position, and is no
batch it handled sent again, came out of order (a ParallelizationFactor above 1): listings
decline until a backfill begun after either."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ddbkeys.partition_keys._index.backfill_wait import same_markers
from ddbkeys.partition_keys._proof.evidence import (
    GONE_AFTER,
    SHARD_PREFIX,
    Evidence,
    ShardMark,
    nearly_a_day_old,
)
from ddbkeys.partition_keys._proof.marks import advance
from ddbkeys.partition_keys._streams.lambda_trigger import (
    LAMBDA_PREFIX,
    Parallelized,
    TriggerCheck,
    out_of_order,
    same_stream,
    went_past,
)
from ddbkeys.partition_keys._streams.streams import shard_born

# (``same_markers``: what a batch checks first, with the backfill and the follower)
__all__ = ["BatchStart", "begin_batch", "same_markers"]


@dataclass(frozen=True)
class BatchStart:
    """What the handler records as a batch begins: the shard's ``mark`` (its first record not
    known applied yet), the handler's ``check`` of the shard as stored (None: none under this
    stream), the record's ``bad`` trigger reading, whether the batch came ``backwards`` (out of
    order) or past ``lost`` records, the attributes of shards ``gone`` a day and more, and since
    when the shard's positions may be a handler's ``unchecked`` ones."""

    mark: ShardMark
    check: TriggerCheck | None
    bad: Parallelized | None
    backwards: bool
    lost: bool
    gone: tuple[str, ...]
    unchecked: float | None


def begin_batch(
    saved: Evidence | None,
    shard: str,
    stream: str,
    first: str,
    oldest: float | None,
    now: float,
) -> BatchStart:
    """The record as a batch of ``shard`` whose first record is ``first`` (written at
    ``oldest``, if known) begins at ``now``, from the ``saved`` state record."""
    previous = saved.shards.get(shard) if saved is not None else None
    if previous is not None and previous.stream != stream:
        previous = None
    check = saved.triggers.get(shard) if saved is not None else None
    if check is not None and not same_stream(check.stream, stream):
        check = None
    lost = _lost(previous, check, shard, first, oldest, now)
    backwards = out_of_order(check, first)
    gap = now if lost or backwards else (previous.gap if previous is not None else None)
    mark = replace(advance(previous, shard, stream, "start", None, now), failed=first, gap=gap)
    return BatchStart(
        mark=mark,
        check=check,
        bad=saved.parallelized if saved is not None else None,
        backwards=backwards,
        lost=lost,
        gone=_gone(saved, shard, now),
        unchecked=_unchecked_since(saved, previous, stream),
    )


def _lost(
    previous: ShardMark | None,
    check: TriggerCheck | None,
    shard: str,
    first: str,
    oldest: float | None,
    now: float,
) -> bool:
    """Whether the state record shows records of ``shard`` lost before this batch (whose
    first record is ``first``, written at ``oldest``)."""
    # Past a record of a batch it began and never applied: by its mark, or by its own record
    # (a follower on the same shard saves its own mark over the handler's).
    skipped = went_past(check, previous.failed if previous is not None else None, first)
    # The shard's last batch nearly a day ago: records written after it may have been trimmed
    # before Lambda read them (the handler cannot tell which, so it says so).
    stale = (
        previous is not None
        and bool(previous.marks)
        and nearly_a_day_old(previous.marks[-1][1], now)
    )
    # A shard it never applied, made nearly a day ago: its records from before what the
    # stream keeps may be gone (Lambda a day behind, or off, across a shard's close: its
    # child's first records trimmed unread, and nothing left in the batch to say so).
    born = shard_born(shard)
    unread = previous is None and born is not None and nearly_a_day_old(born, now)
    return skipped or stale or unread or (oldest is not None and nearly_a_day_old(oldest, now))


def _gone(saved: Evidence | None, shard: str, now: float) -> tuple[str, ...]:
    """The attributes of the other shards whose last position is over a day and an hour old
    (their records are trimmed: nothing they vouch for is read any more), but for those with
    a gap (records lost before they were applied: a listing declines for it until a backfill
    begun after, as the follower keeps them)."""
    if saved is None:
        return ()
    return tuple(
        prefix + s
        for s, m in saved.shards.items()
        if s != shard and m.gap is None and m.marks and now - m.marks[-1][1] > GONE_AFTER
        for prefix in (SHARD_PREFIX, LAMBDA_PREFIX)
        if prefix == SHARD_PREFIX or s in saved.triggers
    )


def _unchecked_since(
    saved: Evidence | None, previous: ShardMark | None, stream: str
) -> float | None:
    """When a shard the handler has no check of yet got positions that may be a handler's
    unchecked ones (a ddbkeys that did not check its trigger): its oldest position, if a
    handler said last that it keeps the index and no handler had checked when it was saved."""
    if saved is None or previous is None or not previous.marks or saved.maintainer != "lambda":
        return None
    if previous.shard in saved.triggers and same_stream(
        saved.triggers[previous.shard].stream, stream
    ):
        return None
    began = [c.first for c in saved.triggers.values() if same_stream(c.stream, stream) and c.first]
    oldest = previous.marks[0][1]
    return oldest if not began or oldest < min(began) else None
