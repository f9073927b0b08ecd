"""A lagging maintainer, said before the listing reads (issue 35, point 4): what a listing from
the marker index pays for the stream records its maintainer has not applied yet, priced as
``index status`` prices it (:func:`replay_cost`), and the one line that says so when the
re-checks cost more than a scan of the table, whether its lag or the margin's writes cost them
(:func:`lag_note`). Pure: no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddbkeys.partition_keys._proof.replay import estimate, index_listing_units

if TYPE_CHECKING:
    from ddbkeys._schema import TableInfo
    from ddbkeys.partition_keys._proof.shard_read import Replay

__all__ = ["IndexReplayWarning", "lag_note", "replay_cost"]


class IndexReplayWarning(UserWarning):
    """A listing from the marker index (``method="index"``) where the stream records past its
    maintainer's positions held back the replay margin name more collections to re-check than
    a scan of the table would cost: the line says whether its lag (records it has not applied)
    or the margin's writes cost that. The listing goes on, exact; ``listing.notes``
    holds the same line."""


def replay_cost(info: TableInfo, index: str, rechecks: int) -> tuple[float, float]:
    """Read units of a listing from ``index`` that re-checks ``rechecks`` collections (the
    index's scan, and a consistent Query each), and of a scan of the table (0.5 per 4 KB, by
    DescribeTable): what ``index status`` shows, and what ``--method index`` warns of."""
    return index_listing_units(info, index, rechecks), estimate(info, index)[0]


def lag_note(info: TableInfo, index: str, replay: Replay, now: float) -> str | None:
    """The line a listing from ``index`` says before it re-checks what ``replay`` read, where
    the re-checks cost more than a scan of the table (None: they do not): how far behind its
    maintainer is (records it has not applied, how long ago the oldest was written, and the
    collections they name; or that it applied them all), the read units against the scan's,
    and what costs them: the lag, or the margin's writes where the lag alone would cost less
    than a scan (a busy table: with the maintainer caught up, helper-89 F1 read 12 times a
    scan's units with no word, the line given only while a record was in flight)."""
    rechecks = len(replay.touched)
    listing, scan = replay_cost(info, index, rechecks)
    if listing <= scan:
        return None
    lagging = len(replay.lagging)
    # What costs it: the lag alone, or the margin's writes, which are re-checked whatever the
    # maintainer has applied (helper-87 F1: a caught-up maintainer's 13 records in flight
    # were said to name the 377 collections the margin's 1,300 named)
    if replay.unapplied and replay_cost(info, index, lagging)[0] > scan:
        cause = "its maintainer is behind"
    else:
        cause = (
            f"the writes of the last {replay.margin:g} s, re-checked whatever the maintainer "
            "has applied, not its lag"
        )
    return (
        f"Marker index {index!r}: {replay.records:,} stream record(s) read from its "
        f"maintainer's positions held back {replay.margin:g} s ({_behind(replay, now)}) name "
        f"{rechecks:,} collection(s) to re-check, so this listing costs about "
        f"{listing:,.1f} read units against {scan:,.1f} for a scan of table {info.name!r} "
        f"({cause}; --method auto would list another way); listing from the index all the "
        "same."
    )


def _behind(replay: Replay, now: float) -> str:
    """How far behind the maintainer is, as the line says it: the records it has not applied
    (how long ago the oldest was written, and the collections they name), or none."""
    if not replay.unapplied:
        return "all of them applied"
    oldest = replay.oldest_unapplied
    # (ApproximateCreationDateTime is rounded down: to the second on the service, to the
    # minute on DynamoDB Local, where a record just written reads as up to 60 s old)
    age = f", the oldest written at most {max(now - oldest, 0.0):,.0f} s ago" if oldest else ""
    return (
        f"{replay.unapplied:,} of them not applied yet{age}, naming "
        f"{len(replay.lagging):,} collection(s)"
    )
