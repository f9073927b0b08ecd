"""The estimate of a listing, decided from a table's description and a sample (no server, no
client): the cost model per method, auto's likely choice, the tasks rule, what is said when the
size is unknown; the sample's flow driven by hand; the progress gauge on a fake clock."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from ddbkeys._capacity import item_size
from ddbkeys.partition_keys import ListingOptions
from ddbkeys.partition_keys._listing.base import Reader
from ddbkeys.partition_keys._listing.pages import WHOLE_BYTES
from ddbkeys.partition_keys._listing.progress import MIN_SECONDS, Gauge
from ddbkeys.partition_keys._listing.recognise import is_counter
from ddbkeys.partition_keys._tasks.estimate import REFRESHED, TASK_SECONDS, estimate
from ddbkeys.partition_keys._tasks.ranges import count_range
from ddbkeys.partition_keys._tasks.sample import WHOLE_PAGES, sample_flow, speed_probe
from ddbkeys.partition_keys._tasks.sampled import (
    SAMPLE_PAGE_UNITS,
    Collection,
    PageTime,
    Sample,
    SegmentTally,
    sample_limit,
    sample_segments,
)
from tests.unit.test_index_core import info, play

INDEX = "ddbkeys-partition-keys"
MARKER = "ddbkeys_pk"
MB = 1024 * 1024


def item(pk: str, sk: int, pad: int) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"N": str(sk)}, "pad": {"S": "x" * pad}}


def collection(pk: str, items: int, pad: int) -> list[dict[str, Any]]:
    return [item(pk, n, pad) for n in range(items)]


def sample(**fields: Any) -> Sample:
    """A sample of 4 segments of 1,000 (8 requests): 1,000 items in 100 collections (10 of
    them of 4 KB or more), each read by a one-item page for 0.5 RCU and its first 4 KB for
    1,000 bytes; a request's latency 10 ms and the larger pages reading 1 MB a second."""
    base: dict[str, Any] = {
        "segments": 4,
        "total_segments": 1000,
        "requests": 8,
        "items": 1000,
        "bytes": 400_000,
        "keys": 100,
        "large": 10,
        "capped_bytes": 100_000,
        "key_bytes": 1000,
        "skip_units": 50.0,
        "skip_squares": 25.0,
        "prefix_units": 100_000 / 8192,
        "prefix_squares": 100 * (1000 / 8192) ** 2,
        "read_units": 50.0,
        "latency": 0.01,
        "bytes_per_second": MB,
    }
    return Sample(**{**base, **fields})


def big(**changes: Any) -> Any:
    """A table of 100 MB in 250,000 items, with the marker index."""
    return info(**{"item_count": 250_000, "size_bytes": 100 * MB, **changes})


def estimated(
    table: Any = None, found: Sample | None = None, concurrency: int = 1, **settings: Any
) -> Any:
    options = ListingOptions(index_name=INDEX, marker_attribute=MARKER, **settings)
    return estimate(table or big(), found or sample(), options, concurrency=concurrency)


def test_a_segment_is_summed_up_by_collection() -> None:
    """Keys are collection starts; each collection counts its first item (a one-item page's
    units), its items up to the one that reaches 4 KB (what a page reading into it pays), its
    bytes up to 4 KB and whether it is large; the sample of whole segments is the table when
    it read them all; the latency is the fastest page, the speed the median larger page's."""
    first = [*collection("a", 3, 100), *collection("b", 10, 500)]  # b: over 4 KB
    tally = SegmentTally("pk")
    tally.add(first[:5])
    tally.add(first[5:])  # b goes on across the page
    other = SegmentTally("pk")
    other.add(collection("c", 1, 5000))  # one item past 4 KB: two units for a one-item page
    sizes = {pk: sum(item_size(i) for i in first if i["pk"]["S"] == pk) for pk in "ab"}
    b_items = [item_size(i) for i in first if i["pk"]["S"] == "b"]
    b_prefix = next(sum(b_items[: n + 1]) for n in range(10) if sum(b_items[: n + 1]) >= 4096)
    c = item_size(collection("c", 1, 5000)[0])
    pages = [PageTime(5, 20_000, 0.03), PageTime(8, 10_000, 0.01), PageTime(1, 9000, 0.02)]
    found = Sample.of_segments([tally, other], 2, pages, 3.5)
    assert (found.items, found.keys, found.large, found.requests) == (14, 3, 2, 3)
    assert found.bytes == sizes["a"] + sizes["b"] + c
    assert found.capped_bytes == sizes["a"] + 4096 + 4096
    assert found.skip_units == 0.5 + 0.5 + 1.0 and found.skip_squares == 0.25 + 0.25 + 1.0
    assert found.prefix_units == pytest.approx((sizes["a"] + b_prefix + c) / 8192)
    assert found.latency == 0.01 and found.read_units == 3.5
    # Past the latency: 20,000 B in 0.02 s and 9,000 B in 0.01 s; the median of two: the upper.
    assert found.bytes_per_second == pytest.approx(20_000 / 0.02)
    assert found.whole_table and not Sample.of_segments([tally], 2, pages).whole_table


def test_own_items_that_lead_a_collection_are_counted_apart() -> None:
    """The sample keeps each item, and counts the own items (a marker) that lead a collection:
    the simulation reads them as items of the listing's pages, which ask for as many more; an
    own item later in a collection does not lead it; a collection of own items alone is all
    lead; a sample that takes every item for yours counts none."""
    marker = {"pk": {"S": "a"}, "sk": {"S": "#m"}, "ddbkeys_type": {"S": "counter"}}
    rest = collection("a", 2, 100)
    tally = SegmentTally("pk", is_counter)
    tally.add([marker, *rest, *collection("b", 1, 100), {**marker, "pk": {"S": "c"}}])
    tally.add([*collection("d", 1, 100), {**marker, "pk": {"S": "d"}}])
    tally.close()
    a = [item_size(i) for i in (marker, *rest)]
    assert tally.collections[0] == Collection(tuple(a), False, 1)
    assert [(len(c.sizes), c.lead) for c in tally.collections[1:]] == [(1, 0), (1, 1), (2, 0)]
    assert tally.items == 7 and tally.owned == 1
    # skip's one-item pages: a's marker, then its first of yours; b; c's own item; d
    assert tally.skip_pages == 5 and tally.skip == 5 * 0.5
    every = SegmentTally("pk")
    every.add([marker, *rest])
    every.close()
    assert every.collections[0] == Collection(tuple(a), False, 0)
    assert every.skip_pages == 1


def test_each_method_costs_what_the_model_says() -> None:
    """Scan: 0.5 RCU per 4 KB of the table; skip: 0.5 RCU a key (keys: the table's items
    times the sample's keys per item), a request each; skip-pages: each collection's bytes up
    to 4 KB, at most a scan; the index: its size; times from the measured speed."""
    table = big(index_sizes={INDEX: 2 * MB})
    found = estimated(table)
    assert found.keys == 25_000 and found.items == 250_000 and found.source == "DescribeTable"
    scan, skip, pages, index = (found.method(m) for m in ("scan", "skip", "skip-pages", "index"))
    # (pages of 20,000 items of 420 bytes would pass 1 MB: a page a MB)
    assert scan.rcu == 100 * MB / 4096 * 0.5 and scan.requests == 100
    # One reader: a request's latency each, and 1 MB a second of reading on top.
    assert scan.seconds == pytest.approx(100 * 0.01 + 100.0)
    assert skip.rcu == 0.5 * 25_000 and skip.requests == 25_001
    average = 100 * MB / 250_000
    assert skip.seconds == pytest.approx(25_001 * (0.01 + average / MB))
    # What pages read into each collection (1,000 bytes), and more while they grow: from 10%
    # where that is far below a scan's to 30% where it is a scan's (the likeliest: half way).
    prefix = 25_000 * 1000 / 8192
    growth = 1.1 + 0.2 * prefix / (100 * MB / 8192)
    assert pages.rcu == pytest.approx(prefix * (1 + growth) / 2)
    assert pages.rcu is not None and scan.rcu is not None and pages.rcu < scan.rcu
    assert index.available and index.rcu == 2 * MB / 4096 * 0.5
    assert index.note.endswith("Its proof cannot be read now: not read")
    for method in (scan, skip, pages, index):  # a range around each
        assert method.rcu_low is not None and method.rcu_high is not None
        assert method.rcu_low <= method.rcu <= method.rcu_high
    # Tasks: about 15 minutes each at one reader's speed, at most one per MB.
    assert scan.tasks == 1 and scan.seconds is not None and scan.seconds < TASK_SECONDS
    huge = estimated(big(size_bytes=10 * 1024 * MB)).method("scan")
    assert huge.seconds is not None
    assert huge.tasks == math.ceil(huge.seconds / TASK_SECONDS) > 1


def test_skip_pages_where_collections_are_about_a_unit_reads_like_a_scan() -> None:
    """Every collection about 4 KB (100 MB in 25,000 of them): skipping would save under 5%
    a key, so skip-pages reads through, a scan's read units in pages of up to 256 KB, not a
    request a key."""
    units = 4000 / 8192
    found = estimated(
        big(size_bytes=25_000 * 4000),
        sample(large=100, prefix_units=100 * units, prefix_squares=100 * units**2),
    )
    scan, pages = found.method("scan"), found.method("skip-pages")
    assert pages.rcu == scan.rcu
    assert pages.requests is not None and pages.requests <= 25_000 * 4000 // (256 * 1024) + 20
    assert "reads on like a scan" in pages.note
    assert scan.rcu_high is not None and pages.rcu_high is not None
    assert pages.rcu_high <= 1.1 * scan.rcu_high + 1


def test_skip_pages_reads_a_table_of_128_kb_or_less_whole() -> None:
    """A table of ``WHOLE_BYTES`` or less is read whole, in one request: skip-pages' range is
    the scan's, whatever the sample says skipping would save (here a tenth of the items are
    in large collections); over it, the simulation decides."""
    small = big(item_count=1000, size_bytes=WHOLE_BYTES)
    found = estimated(
        small, sample(segments=4, total_segments=4, whole_table=True, bytes=WHOLE_BYTES)
    )
    scan, pages = found.method("scan"), found.method("skip-pages")
    assert (pages.rcu_low, pages.rcu, pages.rcu_high) == (scan.rcu_low, scan.rcu, scan.rcu_high)
    assert pages.requests == 1
    assert "read whole, as a scan" in pages.note
    larger = estimated(big(item_count=1000, size_bytes=WHOLE_BYTES + 1), sample())
    assert "read whole" not in larger.method("skip-pages").note
    # A description hours old, which the sample of the whole table finds 4 times too small.
    stale = big(item_count=250, size_bytes=100_000)
    found = estimated(stale, sample(segments=4, total_segments=4, whole_table=True))
    assert "read whole" not in found.method("skip-pages").note


def test_a_large_item_costs_the_skip_scan_more_than_a_unit() -> None:
    # 10 KB items: 3 units each
    found = estimated(big(size_bytes=250_000 * 10_000), sample(skip_units=150.0))
    assert found.method("skip").rcu == 0.5 * 3 * found.keys


def test_the_time_keeps_to_the_budget_and_shares_the_readers() -> None:
    """The time is the longer of one reader's time shared by the readers and the read units
    over the budget (or the table's provisioned limit)."""
    alone = estimated().method("scan")
    four = estimated(concurrency=4).method("scan")
    assert alone.seconds is not None and alone.rcu is not None
    assert four.seconds == pytest.approx(alone.seconds / 4)
    slow = estimated(max_rcu_per_second=10).method("scan")
    assert slow.seconds == pytest.approx(alone.rcu / 10)
    provisioned = estimated(big(billing_mode="PROVISIONED", provisioned_reads=20.0))
    assert provisioned.limit == 20.0
    assert provisioned.method("scan").seconds == pytest.approx(alone.rcu / 20)
    shared = estimated(big(billing_mode="PROVISIONED", provisioned_reads=400.0), read_percent=0.5)
    assert shared.rate == 200.0 and shared.read_capacity == 400.0
    on_demand = estimated(big(billing_mode="PAY_PER_REQUEST"))
    assert on_demand.limit is None and on_demand.capacity_source.startswith("assumed")


@pytest.mark.parametrize(
    ("changes", "auto", "why"),
    [
        ({"sort_key": None}, "scan", "no sort key"),
        ({"index_projections": {}}, "skip-pages", "no marker index"),
        ({}, "skip-pages", "the table's stream is off"),
        ({"stream_arn": "arn:s", "index_statuses": {INDEX: "CREATING"}}, "skip-pages", "ACTIVE"),
        ({"stream_arn": "arn:s"}, "index", "if its proof succeeds"),
    ],
)
def test_auto_s_likely_choice_and_why(changes: dict[str, Any], auto: str, why: str) -> None:
    found = estimated(big(**changes, index_sizes={INDEX: MB}))
    assert found.auto == auto and why in found.auto_reason
    assert found.method("auto").method == auto


def test_auto_s_likely_choice_with_ddbkeys_own_items_is_never_the_index() -> None:
    found = estimated(big(stream_arn="arn:s", index_sizes={INDEX: MB}), include_own_items=True)
    assert found.auto == "skip-pages" and "include_own_items" in found.auto_reason


def test_methods_the_table_cannot_be_listed_with_are_said() -> None:
    found = estimated(big(sort_key=None, index_projections={}))
    assert [m.method for m in found.methods if not m.available] == ["skip", "skip-pages", "index"]
    assert "no sort key" in found.method("skip").note
    assert "cannot list it" in found.summary("skip")


def test_a_table_without_a_sort_key_has_a_key_an_item() -> None:
    """Its key count is its item count (DescribeTable's), less ddbkeys' own items as the sample
    found them (a counter item is one): not a count scaled up from the sample, which gave a
    helper 4,569-5,000 keys for a table of 5,000 items. (None seen: the range still allows the
    few the draw may have missed.)"""
    table = big(sort_key=None, index_projections={})
    found = estimated(table, sample(items=1000, keys=1000, large=0))
    assert found.keys == found.keys_high == 250_000
    assert "skip-pages" not in found.basis and "index" not in found.basis  # (neither lists it)
    scaled = count_range(1000, 4, 1000)  # (what it was)
    assert found.keys_low is not None and found.keys_low > 250_000 - (scaled.high - scaled.low) / 10
    owned = estimated(table, sample(items=1000, keys=1000, owned=10, large=0))
    assert owned.keys_low is not None and owned.keys_high is not None
    assert owned.keys_low < 250_000 - 2_500 < owned.keys_high < 250_000
    assert owned.keys == 250_000 - 2_500


def test_no_total_is_made_up_when_the_table_reports_nothing() -> None:
    """A table that says 0 items (on AWS, until its size is refreshed) and a sample that did
    not reach its end: no numbers, and a note saying why."""
    found = estimated(info(item_count=0, size_bytes=0))
    assert (found.items, found.size_bytes, found.keys) == (None, None, None)
    for method in found.methods:
        assert method.rcu is None and method.seconds is None and method.tasks is None
    assert any("no total can be estimated" in note for note in found.notes)
    assert "size unknown" in found.summary() and "cost unknown" in found.summary()


def test_a_description_older_than_the_table_makes_up_no_total() -> None:
    """A helper's proxy said a table of 7,689 items held 76 (as for hours after a bulk load):
    the estimate said 204 keys exactly and a scan of 3.3-4 RCU; the listing found 1,500 keys
    for 348.5 RCU. The sample alone had read 671 items: it says the description is stale."""
    for stale in (info(item_count=76, size_bytes=28_000), info(item_count=5000, size_bytes=9000)):
        found = estimated(stale, sample(items=671, bytes=65 * 8192))
        assert (found.items, found.size_bytes, found.keys) == (None, None, None)
        assert all(m.rcu is None for m in found.methods)
        assert any("the description is older than the table" in n for n in found.notes)
    fresh = estimated(info(item_count=671, size_bytes=65 * 8192), sample(items=671))
    assert fresh.items == 671


def test_a_sample_that_read_the_whole_table_is_its_truth() -> None:
    whole = sample(whole_table=True, items=12, bytes=3000, keys=4)
    found = estimated(info(item_count=0, size_bytes=0), whole)
    assert (found.items, found.size_bytes, found.keys) == (12, 3000, 4)
    assert found.source.startswith("the sample")
    empty = estimated(
        info(item_count=0, size_bytes=0), Sample(segments=4, requests=4, whole_table=True)
    )
    assert empty.keys == 0 and empty.method("scan").rcu == 0.0


def test_no_time_when_nothing_was_measured() -> None:
    """A clock that did not move: no speed, so no time and no tasks (never a made-up one)."""
    found = estimated(found=sample(latency=0.0, bytes_per_second=0.0))
    assert found.method("scan").seconds is None and found.method("scan").tasks is None
    assert found.method("scan").rcu is not None


def test_the_estimate_as_json_and_in_one_line() -> None:
    runs = tuple(Collection((100,) * n) for n in range(1, 60))
    found = estimated(found=sample(runs=(runs,) * 4))
    data = json.loads(found.to_json())
    assert "runs" not in data["sample"] and len(found.to_json()) < 8000  # (106 KB with them)
    assert data["auto"] == "skip-pages" and data["keys"] == 25_000
    assert [m["method"] for m in data["methods"]] == ["scan", "skip", "skip-pages", "index"]
    assert data["sample"]["requests"] == 8 and REFRESHED in data["notes"]
    line = found.summary()
    assert line.startswith(
        f"Estimate for orders: ~100 MB, ~250,000 items, {data['keys_low']:,}-{data['keys_high']:,}"
        " keys;"
    )
    assert data["keys_low"] < 25_000 < data["keys_high"] < 2 * data["keys_low"]
    assert "segments drawn at random" in data["basis"]
    assert "skip-pages (auto's likely choice): " in line and "refreshed" in line
    assert "\n" not in line and found.summary("scan").count("scan:") == 1


def test_a_sampled_page_and_segment_are_about_4_kb_units() -> None:
    assert (
        sample_limit(info(item_count=1000, size_bytes=1000 * 100))
        == SAMPLE_PAGE_UNITS * 4096 // 100
        == 40
    )
    assert sample_limit(info(item_count=10, size_bytes=10 * 400_000)) == 1
    assert sample_limit(info(item_count=10**6, size_bytes=10**6)) == 1000
    assert sample_limit(info(item_count=0, size_bytes=0)) == 100
    assert sample_segments(info(item_count=1000, size_bytes=1000 * 100)) == 25
    assert sample_segments(info(item_count=10, size_bytes=10 * 400_000)) == 10
    assert sample_segments(info(item_count=0, size_bytes=0)) == 1024


def test_the_sample_reads_whole_segments_drawn_at_random() -> None:
    """Segments drawn by the random source, each read to its end; past a collection's first
    4 KB the next page jumps to the next collection; no new segment once the read units are
    spent. Times come from the given clock."""
    table = info(item_count=1000, size_bytes=100_000)  # 25 segments, pages of 40 items
    reader = Reader(None, "orders")
    ticks = iter(range(100))
    rng = random.Random(5)
    order = random.Random(5).sample(range(25), min(25, 5 + 400))
    flow = sample_flow(
        reader, table, clock=lambda: float(next(ticks)), rng=rng, rcu=2.5, probe=False
    )
    big_one = collection("a", 12, 500)  # 4 KB and more in its first page
    more = {"LastEvaluatedKey": {"pk": {"S": "a"}, "sk": {"N": "11"}}}
    cost = {"ConsumedCapacity": {"CapacityUnits": 1.0}}
    script = [
        ("scan", {"Items": big_one, **more, **cost}),
        ("scan", {"Items": collection("b", 2, 10), **cost}),
        ("scan", {"Items": [item("c", 0, 10)], **cost}),
    ]
    found, sent = play(flow, script)
    params = [dict(r.params) for r in sent]
    assert [(p["Segment"], p["TotalSegments"]) for p in params] == [
        (order[0], 25),
        (order[0], 25),
        (order[1], 25),
    ]
    assert params[0]["Limit"] == 40 and "ProjectionExpression" not in params[0]
    assert params[1]["ExclusiveStartKey"]["pk"] == {"S": "a"}  # past the rest of a
    assert params[1]["ExclusiveStartKey"]["sk"] != more["LastEvaluatedKey"]["sk"]
    assert (found.segments, found.total_segments, found.keys, found.items) == (2, 25, 3, 15)
    assert found.read_units == 3.0 and found.requests == 3 and not found.whole_table


# --- the progress gauge ---------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_scan_s_progress_is_its_read_units_against_the_size() -> None:
    clock = Clock()
    gauge = Gauge("scan", 8192 * 100, 1, clock=clock)  # 100 RCU to scan
    assert gauge.read(0.0, 0).done == 0.0
    clock.now += MIN_SECONDS / 2
    early = gauge.read(50.0, 0)
    assert early.done == 0.5 and early.by == "size" and early.seconds_left is None
    clock.now += MIN_SECONDS * 1.5  # 2 x MIN_SECONDS for half: as long again
    assert gauge.read(50.0, 0).seconds_left == pytest.approx(2 * MIN_SECONDS)
    past = gauge.read(120.0, 0)  # more than the estimate: ~100%, and no time left is said
    assert past.done == 1.0 and past.capped and past.seconds_left is None
    assert gauge.read(120.0, 1).done == 1.0 and not gauge.read(120.0, 1).capped


def test_a_resumed_scan_counts_the_segments_it_had_done() -> None:
    clock = Clock()
    gauge = Gauge("index", 8192 * 100, 8, done_at_start=4, units_at_start=7.0, clock=clock)
    assert gauge.read(7.0 + 25.0, 4).done == pytest.approx(0.5 + 0.25 * 0.5)


def test_a_skip_scan_s_progress_is_its_segments_or_nothing() -> None:
    clock = Clock()
    gauge = Gauge("skip-pages", 8192 * 100, 8, clock=clock)
    clock.now += 10
    found = gauge.read(999.0, 2)
    assert found.done == 0.25 and found.by == "segments" and found.seconds_left == 30.0
    assert Gauge("skip", 8192 * 100, 1, clock=clock).read(5.0, 0).done is None
    # (as many readers as segments: each reads its one to the end; "0 done" would stand)
    assert Gauge("skip-pages", 8192 * 100, 7, clock=clock, readers=7).read(5.0, 0).done is None
    assert Gauge("skip-pages", 8192 * 100, 8, clock=clock, readers=2).read(5.0, 4).done == 0.5
    unknown = Gauge("scan", 0, 1, clock=clock)  # DescribeTable gave no size: nothing said
    assert unknown.read(5.0, 0).done is None


def test_a_sample_of_nearly_empty_segments_splits_the_table_in_fewer() -> None:
    """Where most bytes lie in a few large collections, the segments of 4 KB of the table's
    size hold a few small ones: after four such segments the table is split in eight times
    fewer, drawn again; only the new segments count (the units spent all do)."""
    table = info(item_count=10_000, size_bytes=10_000 * 100)  # 245 segments
    reader = Reader(None, "orders")
    flow = sample_flow(reader, table, clock=lambda: 0.0, rng=random.Random(1), rcu=4.0, probe=False)
    cost = {"ConsumedCapacity": {"CapacityUnits": 0.5}}
    thin = [("scan", {"Items": [item(f"t{n}", 0, 10)], **cost}) for n in range(4)]
    full = [("scan", {"Items": collection(f"f{n}", 1, 10), **cost}) for n in range(4)]
    found, sent = play(flow, [*thin, *full])
    totals = [dict(r.params)["TotalSegments"] for r in sent]
    assert totals == [245] * 4 + [30] * 4
    assert (found.total_segments, found.segments, found.keys) == (30, 4, 4)
    assert found.read_units == 4.0


@pytest.mark.parametrize("items", [0, 1, 3])
def test_a_table_the_speed_probe_read_to_its_end_is_sampled_whole_in_one_segment(
    items: int,
) -> None:
    """An empty table (DescribeTable: no size, as a new table's) or one of a few items: the
    probe's pages reached its end, so they are the sample (the table as one segment), not a
    draw of the 1,024 segments of a table of unknown size (each an empty page: 0.5 RCU on the
    service), nor the table read again."""
    table = info(item_count=0, size_bytes=0)
    reader = Reader(None, "orders")
    flow = sample_flow(reader, table, clock=lambda: 0.0, rng=random.Random(1))
    held = collection("a", items, 40)
    more = {"LastEvaluatedKey": {"pk": {"S": "a"}, "sk": {"N": "0"}}} if items else {}
    cost = {"ConsumedCapacity": {"CapacityUnits": 0.5}}
    script = [("scan", {"Items": held[:1], **more, **cost})]
    if items:
        script.append(("scan", {"Items": held[1:], **cost}))
    found, sent = play(flow, script)
    assert len(sent) == len(script) and all("TotalSegments" not in r.params for r in sent)
    assert found.whole_table and (found.keys, found.items) == (min(items, 1), items)
    assert found.read_units == 0.5 * len(script)


def test_a_table_of_a_few_kb_is_read_whole_by_the_probe_at_a_scan_s_cost() -> None:
    """A helper's find: on a table of a few KB the sample (1-unit pages of drawn segments, on
    top of the probe) cost 12.5 RCU against a listing's 5.5. DescribeTable says it is small:
    the probe's second page asks for all of it, and what it read is the sample."""
    table = info(item_count=40, size_bytes=20_000)
    reader = Reader(None, "orders")
    flow = sample_flow(reader, table, clock=lambda: 0.0, rng=random.Random(1))
    held = [item for k in range(20) for item in collection(f"k{k:02}", 2, 480)]
    first = {"Items": held[:1], "LastEvaluatedKey": {"pk": {"S": "k00"}, "sk": {"N": "0"}}}
    script = [
        ("scan", {**first, "ConsumedCapacity": {"CapacityUnits": 0.5}}),
        ("scan", {"Items": held[1:], "ConsumedCapacity": {"CapacityUnits": 2.5}}),
    ]
    found, sent = play(flow, script)
    assert dict(sent[1].params)["Limit"] == 2 * 40 + 100  # (its count may lag a little)
    assert found.whole_table and (found.keys, found.items, found.read_units) == (20, 40, 3.0)


def test_a_table_of_a_mb_or_less_is_read_whole_in_up_to_three_pages() -> None:
    """helper-86: a 375 KB table took 66 sampled Scans (135 s behind a 2 s endpoint) where
    reading it whole takes a request of a MB or two. A table of a MB or less by DescribeTable
    is read whole by the probe's pages, page after page to its end (its size may lag the
    table's); past ``WHOLE_PAGES`` pages it is left to the draw of segments."""
    table = info(item_count=10_000, size_bytes=1_000_000)
    more = {"LastEvaluatedKey": {"pk": {"S": "a"}, "sk": {"N": "0"}}}
    rest = collection("a", 4, 100)
    script = [
        ("scan", {"Items": rest[:1], **more, "ConsumedCapacity": {"CapacityUnits": 0.5}}),
        ("scan", {"Items": rest[1:2], **more, "ConsumedCapacity": {"CapacityUnits": 128.0}}),
        ("scan", {"Items": rest[2:], "ConsumedCapacity": {"CapacityUnits": 2.0}}),
    ]
    ticks = iter(range(100))
    pages: list[PageTime] = []
    flow = speed_probe(Reader(None, "orders"), table, lambda: float(next(ticks)), pages)
    (spent, ended), sent = play(flow, script)
    assert ended and spent == 130.5 and len(pages) == 3
    assert [dict(r.params)["Limit"] for r in sent] == [1, 20_100, 20_100]
    assert sent[2].params["ExclusiveStartKey"] == more["LastEvaluatedKey"]
    endless = [("scan", {"Items": rest[:1], **more, "ConsumedCapacity": {"CapacityUnits": 0.5}})]
    flow = speed_probe(Reader(None, "orders"), table, lambda: float(next(ticks)), [])
    (spent, ended), sent = play(flow, endless * (1 + WHOLE_PAGES))
    assert not ended and len(sent) == 1 + WHOLE_PAGES


def test_one_reader_s_speed_is_timed_at_the_table_s_start() -> None:
    """A page of one item (a request's latency), then one of about 32 KB from there (its
    bytes over its time past the latency); their items are not counted, their units are."""
    table = info(item_count=20_000, size_bytes=2_000_000)  # (larger than the probe reads whole)
    reader = Reader(None, "orders")
    ticks = iter([0.0, 0.01, 1.0, 1.51])
    pages: list[PageTime] = []
    flow = speed_probe(reader, table, lambda: next(ticks), pages)
    more = {"LastEvaluatedKey": {"pk": {"S": "a"}, "sk": {"N": "0"}}}
    rest = collection("a", 5, 3000)  # 12 KB past the first
    script = [
        ("scan", {"Items": rest[:1], **more, "ConsumedCapacity": {"CapacityUnits": 0.5}}),
        ("scan", {"Items": rest[1:], "ConsumedCapacity": {"CapacityUnits": 1.0}}),
    ]
    (spent, ended), sent = play(flow, script)
    assert spent == 1.5 and [dict(r.params)["Limit"] for r in sent] == [1, 32 * 1024 // 100]
    assert ended  # (the second page held no LastEvaluatedKey: the table's end)
    found = Sample.of_segments([], 10, pages)
    assert found.latency == pytest.approx(0.01)
    assert found.bytes_per_second == pytest.approx(sum(item_size(i) for i in rest[1:]) / 0.5)
