"""How a maintainer records its positions in a shard: a mark per save, the marks thinned to a
few spaced out by age (:func:`thin`), never going back (:func:`advance`); and a stream record's
creation time (:func:`created_at`). What the marks prove is :mod:`.evidence`'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ddbkeys.partition_keys._proof.evidence import DAY, ShardMark

__all__ = ["MAX_MARKS", "advance", "created_at", "thin"]

#: The most marks kept per shard (the newest, and older ones spaced out by age).
MAX_MARKS = 24


def created_at(record: Mapping[str, Any]) -> float | None:
    """A stream record's ApproximateCreationDateTime in seconds (None when it has none); see
    ``CREATED_ROUNDING``."""
    value = record.get("dynamodb", {}).get("ApproximateCreationDateTime")
    if value is None:
        return None
    return float(value.timestamp()) if hasattr(value, "timestamp") else float(value)


def thin(
    marks: Sequence[tuple[str | None, float]], now: float
) -> tuple[tuple[str | None, float], ...]:
    """At most ``MAX_MARKS`` marks: the newest; the newest of those over a day old; and, from
    the oldest on, each mark at least a third of its age (and 2 s) after the last one kept,
    or the last before a lull (``_before_a_lull``). Spaced from the older side, the marks of a
    shard saved every second reach back as they should: a position about the replay margin old
    (within 1.5 to 1.9 times it) is there when a listing looks. (Spaced from the newer side,
    as before, the newest but one was dropped at every save: a follower saving every second
    kept its first and newest marks only, and every listing replayed the stream from its
    first position, a helper found.) The first mark,
    while not a day old, is kept: it says when coverage of the shard was first recorded
    (``ShardMark.first_saved``, where a backfill's margin starts), which must not move later
    (dropped for a mark 0.8 s after it, it did: a backfill begun the margin after the first
    position was then read as begun 0.2 s after it, and listings declined). Any subset of the
    marks is still right (a listing that finds no mark old enough reads more of the stream),
    so thinning costs replay, never correctness."""
    if not marks:
        return ()
    *older, newest = marks
    kept = [m for m in older if now - m[1] > DAY][-1:]
    for mark, after in zip(older, marks[1:], strict=True):
        if now - mark[1] <= DAY and (
            not kept
            or mark[1] - kept[-1][1] >= max(2.0, (now - mark[1]) / 3)
            or _before_a_lull(mark[1], after[1], now)
        ):
            kept.append(mark)
    kept.append(newest)
    if len(kept) > MAX_MARKS:
        first = kept[:1] if now - kept[0][1] <= DAY else []
        kept = first + kept[len(kept) - MAX_MARKS + len(first) :]
    return tuple(kept)


def _before_a_lull(saved: float, after: float, now: float) -> bool:
    """Whether a mark ``saved`` then is the last before a lull: the next came ``after`` it by
    more than that one's age (and 2 s). Until marks after the lull are old enough, it is the
    newest a listing can use (a helper's follower saved 2 marks for one write after 7 quiet
    minutes: spaced from the first mark, the one before the lull went, and listings replayed
    all since the follower began for a margin: 304.5 RCU against 3.5)."""
    return after - saved >= max(2.0, now - after)


def advance(
    previous: ShardMark | None,
    shard: str,
    stream: str,
    since: str | float,
    sequence: str | None,
    now: float,
) -> ShardMark:
    """``previous`` with a new mark: every record of ``shard`` up to ``sequence`` applied by
    ``now``. A mark of another stream is dropped; a mark never goes back (a sequence number
    older than the newest is ignored, as a batch delivered again)."""
    if previous is None or previous.stream != stream:
        return ShardMark(shard, stream, since, thin([(sequence, now)], now))
    if sequence is None and not previous.marks:
        return previous
    if previous.marks and sequence is not None:
        newest = previous.marks[-1][0]
        if newest is not None and int(newest) >= int(sequence):
            sequence = newest
    elif previous.marks and sequence is None:
        sequence = previous.marks[-1][0]
    return ShardMark(
        shard,
        stream,
        previous.since,
        thin([*previous.marks, (sequence, now)], now),
        previous.failed,
        previous.gap,
    )
