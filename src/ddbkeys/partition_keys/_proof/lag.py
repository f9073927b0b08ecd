"""A lagging maintainer, said before the listing reads (issue 35, point 4): what a listing from
the marker index pays for the stream records its maintainer has not applied yet, priced as
``index status`` prices it (:func:`replay_cost`), and the one line that says so when that costs
more than a scan of the table (:func:`lag_note`). Pure: no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddbkeys.partition_keys._proof.replay import estimate, index_listing_units

if TYPE_CHECKING:
    from ddbkeys._schema import TableInfo
    from ddbkeys.partition_keys._proof.shard_read import Replay

__all__ = ["IndexReplayWarning", "lag_note", "replay_cost"]


class IndexReplayWarning(UserWarning):
    """A listing from the marker index (``method="index"``) whose maintainer has stream
    records to apply, where the records past its positions held back the replay margin name
    more collections to re-check than a scan of the table would cost: the line says whether
    its lag or the margin's writes cost that. The listing goes on, exact; ``listing.notes``
    holds the same line."""


def replay_cost(info: TableInfo, index: str, rechecks: int) -> tuple[float, float]:
    """Read units of a listing from ``index`` that re-checks ``rechecks`` collections (the
    index's scan, and a consistent Query each), and of a scan of the table (0.5 per 4 KB, by
    DescribeTable): what ``index status`` shows, and what ``--method index`` warns of."""
    return index_listing_units(info, index, rechecks), estimate(info, index)[0]


def lag_note(info: TableInfo, index: str, replay: Replay, now: float) -> str | None:
    """The line a listing from ``index`` says before it re-checks what ``replay`` read, when its
    maintainer is behind (records it has not applied) and the re-checks cost more than a scan
    of the table (None: it does not): how far behind (records, how long ago the oldest was
    written, and the collections they name), the read units against the scan's, and what
    costs them: the lag, or the margin's writes where the lag alone would cost less than a
    scan."""
    rechecks = len(replay.touched)
    listing, scan = replay_cost(info, index, rechecks)
    if not replay.unapplied or listing <= scan:
        return None
    oldest = replay.oldest_unapplied
    # (ApproximateCreationDateTime is rounded down: to the second on the service, to the
    # minute on DynamoDB Local, where a record just written reads as up to 60 s old)
    age = f", the oldest written at most {max(now - oldest, 0.0):,.0f} s ago" if oldest else ""
    lagging = len(replay.lagging)
    # What costs it: the lag alone, or the margin's writes, which are re-checked whatever the
    # maintainer has applied (helper-87 F1: a caught-up maintainer's 13 records in flight
    # were said to name the 377 collections the margin's 1,300 named)
    if replay_cost(info, index, lagging)[0] > scan:
        cause = "its maintainer is behind"
    else:
        cause = (
            f"the writes of the last {replay.margin:g} s, re-checked whatever the maintainer "
            "has applied, not its lag"
        )
    return (
        f"Marker index {index!r}: {replay.records:,} stream record(s) read from its "
        f"maintainer's positions held back {replay.margin:g} s ({replay.unapplied:,} of "
        f"them not applied yet{age}, naming {lagging:,} collection(s)) name "
        f"{rechecks:,} collection(s) to re-check, so this listing costs about "
        f"{listing:,.1f} read units against {scan:,.1f} for a scan of table {info.name!r} "
        f"({cause}; --method auto would list another way); listing from the index all the "
        "same."
    )
