"""What markers add and what the index costs, where some markers are there already (helper-67:
an index half filled was priced for its missing markers only, and one filled in no longer
warned that its listing costs more than the scan it replaced)."""

from __future__ import annotations

from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.partition_keys._tasks.marker_cost import MarkerCost, marker_cost
from ddbkeys.partition_keys._tasks.ranges import Range

KEYS = Range(300, 300, 300)


def table(size_bytes: int, **changes: object) -> TableInfo:
    fields: dict[str, object] = {
        "name": "half",
        "partition_key": KeyAttribute("pk", "S"),
        "sort_key": KeyAttribute("sk", "N"),
        "replica_regions": (),
        "index_projections": {},
        "item_count": 1500,
        "size_bytes": size_bytes,
    }
    fields.update(changes)
    return TableInfo(**fields)  # type: ignore[arg-type]


def test_a_half_filled_index_is_priced_for_every_marker_it_will_hold() -> None:
    bare = marker_cost(table(120_000), KEYS, 5, "ddbkeys_pk", Range(14, 15, 16))
    # The same table with half its markers written: 150 markers more in its size.
    half_there = 120_000 + int(150 * bare.marker_bytes)
    now = 15 * half_there / 120_000  # (a scan reads in proportion to the bytes)
    half = marker_cost(table(half_there), KEYS, 5, "ddbkeys_pk", Range(now, now, now), bare=0.5)
    assert (half.markers_low, half.markers_high, half.markers_there) == (150, 150, 150)
    assert half.backfill_wcu_high == bare.backfill_wcu_high / 2
    # The listing reads every marker, written or to be written: as on the bare table.
    assert (half.index_low, half.index_rcu, half.index_high) == (
        bare.index_low,
        bare.index_rcu,
        bare.index_high,
    )
    # Weighed against the scan it replaces: the table's without any marker.
    assert abs(half.scan_without - 15) < 0.1
    assert "against a scan without the markers of ~15" in half.summary()
    # Markers added never make a scan cheaper than today's.
    assert half.scan_after_low >= half.scan_now and bare.scan_after_low >= bare.scan_now


def test_an_index_whose_markers_cost_more_than_the_scan_still_warns_once_filled() -> None:
    # 2,000 one-item collections of tiny binary keys: a marker is larger than its item.
    keys = Range(2000, 2000, 2000)
    info = table(14_000, partition_key=KeyAttribute("pk", "B"), item_count=2000)
    before = marker_cost(info, keys, 2, "ddbkeys_pk", Range(1.7, 1.7, 1.7))
    assert before.warning is not None and " would cost ~" in before.warning
    assert "would make every scan of it" in before.warning
    filled = table(14_000 + int(2000 * before.marker_bytes), item_count=4000)
    after = marker_cost(filled, keys, 2, "ddbkeys_pk", Range(17, 17.5, 18), bare=0.0)
    assert after.markers_high == 0 and after.warning is not None
    assert " costs ~" in after.warning and "the markers make every scan of it" in after.warning
    assert after.index_rcu == before.index_rcu


def summarised(scan_after: tuple[float, float]) -> MarkerCost:
    return MarkerCost(
        marker_bytes=85,
        markers_low=3,
        markers_high=3,
        bytes_low=255,
        bytes_high=255,
        scan_now=0.5,
        scan_after_low=scan_after[0],
        scan_after_high=scan_after[1],
        index_low=0.5,
        index_rcu=0.5,
        index_high=0.5,
        backfill_wcu_low=6,
        backfill_wcu_high=6,
        backfill_rcu_low=3,
        backfill_rcu_high=6,
    )


def test_a_scan_the_markers_leave_as_it_is_reads_still_the_same() -> None:
    """helper-89 C6: on a tiny table "a scan would read ~0.5 RCU instead of ~0.5"."""
    same = summarised((0.5, 0.5)).summary()
    assert "a scan would still read ~0.5 RCU, and a listing from the index cost ~0.5 RCU" in same
    dearer = summarised((1.0, 1.5)).summary()
    assert "a scan would read 1-1.5 RCU instead of ~0.5, and a listing" in dearer, dearer


def test_a_tiny_table_with_its_markers_is_not_warned_of_a_scan_under_a_request() -> None:
    """helper-101 F5: 14 keys in 1.9 KB, every marker written: "a listing from the marker index
    costs ~0.5 RCU, more than the ~0.192 RCU of a scan it replaces", where the estimate's own
    table showed ~0.5 for both. A scan costs a request's 0.5 at least."""
    keys = Range(14, 14, 14)
    info = table(1_900, item_count=28)
    got = marker_cost(info, keys, 5, "ddbkeys_pk", Range(0.5, 0.5, 0.5), bare=0.0)
    assert got.scan_without == 0.5 and got.index_rcu == 0.5
    assert got.warning is None, got.warning
