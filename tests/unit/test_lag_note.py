"""The line a listing from the marker index says before it reads when its maintainer is behind
(issue 35, point 4), decided without a server: only when re-checking what the records past its
held-back positions name costs more than a scan (priced as ``index status`` prices it), with
what costs it: the maintainer's lag, or the margin's writes."""

from __future__ import annotations

from dataclasses import replace

from ddbkeys.partition_keys._proof.lag import lag_note, replay_cost
from ddbkeys.partition_keys._proof.shard_read import Replay
from tests.unit.test_listing_core import info

INDEX = "ddbkeys-partition-keys"


def replay(
    touched: int,
    unapplied: int,
    records: int,
    oldest: float | None = 100.0,
    lagging: int | None = None,
) -> Replay:
    """``lagging``: of the ``touched``, those the unapplied records name (all by default)."""
    found = Replay(1.0, records=records, unapplied=unapplied, oldest_unapplied=oldest)
    for n in range(touched):
        found.touched[("S", f"k{n}")] = {"S": f"k{n}"}
    found.lagging = set(list(found.touched)[: touched if lagging is None else lagging])
    return found


def test_it_is_said_only_when_the_replay_costs_more_than_a_scan() -> None:
    table = replace(info(), size_bytes=8 * 4096, item_count=400, index_sizes={INDEX: 4096})
    listing, scan = replay_cost(table, INDEX, 30)
    assert (listing, scan) == (0.5 + 30 * 1.0, 4.0)
    said = lag_note(table, INDEX, replay(30, 30, 32), now=142.4)
    assert said == (
        "Marker index 'ddbkeys-partition-keys': 32 stream record(s) read from its maintainer's "
        "positions held back 1 s (30 of them not applied yet, the oldest written at most 42 s "
        "ago, naming 30 collection(s)) name 30 collection(s) to re-check, so this listing "
        "costs about 30.5 read units against 4.0 for a scan of table 'orders' (its maintainer "
        "is behind; --method auto would list another way); listing from the index all the "
        "same."
    )
    assert lag_note(table, INDEX, replay(3, 3, 3), now=142.4) is None  # 3.5 <= 4.0
    # Records past the held-back positions but none unapplied: the margin's, not a lag, said
    # all the same (helper-89 F1: a caught-up maintainer, 12 times a scan's units, no word).
    margin = lag_note(table, INDEX, replay(30, 0, 30), now=142.4)
    assert margin is not None
    assert "positions held back 1 s (all of them applied) name 30 collection(s)" in margin
    assert "(the writes of the last 1 s, re-checked whatever the maintainer has applied" in margin
    assert lag_note(table, INDEX, replay(3, 0, 3), now=142.4) is None  # 3.5 <= 4.0
    # No time known for the records: said without it.
    unknown = lag_note(table, INDEX, replay(30, 30, 30, oldest=None), now=142.4)
    assert unknown is not None and "(30 of them not applied yet, naming 30" in unknown


def test_a_caught_up_maintainer_is_not_blamed_for_the_margin_s_writes() -> None:
    """helper-87 F1: on a busy table with its follower caught up, 13 records in flight (named
    2 collections) were said to be why 377 collections were re-checked: the margin's 1,300
    records, applied, named them. Where the lag alone costs no more than a scan, the line
    says the margin's writes cost it."""
    table = replace(info(), size_bytes=8 * 4096, item_count=400, index_sizes={INDEX: 4096})
    said = lag_note(table, INDEX, replay(377, 13, 1300, lagging=2), now=111.0)
    assert said is not None
    assert "(13 of them not applied yet, the oldest written at most 11 s ago, naming 2" in said
    assert "(the writes of the last 1 s, re-checked whatever the maintainer has applied" in said
    assert "its maintainer is behind" not in said
    behind = lag_note(table, INDEX, replay(377, 300, 1300, lagging=200), now=111.0)
    assert behind is not None and "(its maintainer is behind;" in behind
