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
    """A listing from the marker index (``method="index"``) whose maintainer is behind: the
    stream records past its positions name more collections to re-check than a scan of the
    table would cost. The listing goes on, exact; ``listing.notes`` holds the same line."""


def replay_cost(info: TableInfo, index: str, rechecks: int) -> tuple[float, float]:
    """Read units of a listing from ``index`` that re-checks ``rechecks`` collections (the
    index's scan, and a consistent Query each), and of a scan of the table (0.5 per 4 KB, by
    DescribeTable): what ``index status`` shows, and what ``--method index`` warns of."""
    return index_listing_units(info, index, rechecks), estimate(info, index)[0]


def lag_note(info: TableInfo, index: str, replay: Replay, now: float) -> str | None:
    """The line a listing from ``index`` says before it re-checks what ``replay`` read, when its
    maintainer is behind (records it has not applied) and the re-checks cost more than a scan
    of the table (None: it does not): how far behind (records, and how long ago the oldest was
    written) and the read units against the scan's."""
    rechecks = len(replay.touched)
    listing, scan = replay_cost(info, index, rechecks)
    if not replay.unapplied or listing <= scan:
        return None
    oldest = replay.oldest_unapplied
    # (ApproximateCreationDateTime is rounded down: to the second on the service, to the
    # minute on DynamoDB Local, where a record just written reads as up to 60 s old)
    age = f", the oldest written at most {max(now - oldest, 0.0):,.0f} s ago" if oldest else ""
    return (
        f"Marker index {index!r}: {replay.unapplied:,} stream record(s) its maintainer has not "
        f"applied yet{age} ({replay.records:,} read from its positions held back "
        f"{replay.margin:g} s) name {rechecks:,} collection(s) to re-check, so this "
        f"listing costs about {listing:,.1f} read units against {scan:,.1f} for a scan of "
        f"table {info.name!r} (--method auto would list another way); listing from the index "
        "all the same."
    )
