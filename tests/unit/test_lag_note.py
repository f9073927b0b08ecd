"""The line a listing from the marker index says before it reads when its maintainer is behind
(issue 35, point 4), decided without a server: only when records are unapplied and re-checking
what they name costs more than a scan (priced as ``index status`` prices it)."""

from __future__ import annotations

from dataclasses import replace

from ddbkeys.partition_keys._proof.lag import lag_note, replay_cost
from ddbkeys.partition_keys._proof.shard_read import Replay
from tests.unit.test_listing_core import info

INDEX = "ddbkeys-partition-keys"


def replay(touched: int, unapplied: int, records: int, oldest: float | None = 100.0) -> Replay:
    found = Replay(1.0, records=records, unapplied=unapplied, oldest_unapplied=oldest)
    for n in range(touched):
        found.touched[("S", f"k{n}")] = {"S": f"k{n}"}
    return found


def test_it_is_said_only_when_the_replay_costs_more_than_a_scan() -> None:
    table = replace(info(), size_bytes=8 * 4096, item_count=400, index_sizes={INDEX: 4096})
    listing, scan = replay_cost(table, INDEX, 30)
    assert (listing, scan) == (0.5 + 30 * 1.0, 4.0)
    said = lag_note(table, INDEX, replay(30, 30, 32), now=142.4)
    assert said == (
        "Marker index 'ddbkeys-partition-keys': 30 stream record(s) its maintainer has not "
        "applied yet, the oldest written at most 42 s ago (32 read from its positions held "
        "back 1 s) name 30 collection(s) to re-check, so this listing costs about 30.5 "
        "read units against 4.0 for a scan of table 'orders' (--method auto would list another "
        "way); listing from the index all the same."
    )
    assert lag_note(table, INDEX, replay(3, 3, 3), now=142.4) is None  # 3.5 <= 4.0
    # Records past the held-back positions but none unapplied: the margin's, not a lag.
    assert lag_note(table, INDEX, replay(30, 0, 30), now=142.4) is None
    # No time known for the records: said without it.
    unknown = lag_note(table, INDEX, replay(30, 30, 30, oldest=None), now=142.4)
    assert unknown is not None and "applied yet (30 read" in unknown
