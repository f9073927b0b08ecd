"""skip-pages run over a hand-made sample (no client): what the estimate's skip-pages line
rests on (ddbkeys.partition_keys._tasks.simulate)."""

from __future__ import annotations

import math
import random

import pytest

from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.partition_keys._listing.pages import PageSize
from ddbkeys.partition_keys._listing.reading import Reading, tail_of
from ddbkeys.partition_keys._tasks import methods
from ddbkeys.partition_keys._tasks.lone import unseen_in_one
from ddbkeys.partition_keys._tasks.methods import skip_pages_requests
from ddbkeys.partition_keys._tasks.missed import missed_bytes, unseen_units
from ddbkeys.partition_keys._tasks.ranges import Range, Z
from ddbkeys.partition_keys._tasks.sampled import Sample, SegmentTally
from ddbkeys.partition_keys._tasks.simulate import (
    READS_ON,
    Collection,
    Rest,
    Simulated,
    _calibrated,
    simulate,
    simulated_orders,
    skip_pages_range,
)
from ddbkeys.partition_keys._tasks.unseen import widened


def table(items: int, size_bytes: int) -> TableInfo:
    return TableInfo(
        name="t",
        partition_key=KeyAttribute("pk", "S"),
        sort_key=KeyAttribute("sk", "N"),
        replica_regions=(),
        index_projections={},
        item_count=items,
        size_bytes=size_bytes,
    )


def segments(count: int, per_segment: int, sizes: tuple[int, ...]) -> list[list[Collection]]:
    return [[Collection(sizes)] * per_segment for _ in range(count)]


def by_hand(
    collections: list[tuple[int, ...]], average: float, pages: list[int] | None = None
) -> float:
    """skip-pages over whole collections, page by page, written out plainly: the next
    ``limit`` items (or 1 MB), their bytes rounded up to 4 KB, then past the last one's
    collection (``pages``: where each page begins, appended)."""
    items = [(key, size) for key, sizes in enumerate(collections) for size in sizes]
    reading = Reading(PageSize.for_items_of(average))
    limit: int | None = reading.pages.limit
    at, units = 0, 0
    while True:
        if pages is not None:
            pages.append(at)
        page: list[int] = []
        size = 0
        while at < len(items) and (limit is None or len(page) < limit):
            if page and size + items[at][1] > 1024 * 1024:
                break
            page.append(items[at][0])
            size += items[at][1]
            at += 1
        cost = max(1, -(-size // 4096))
        if at >= len(items):
            return 0.5 * (units + cost + (limit is not None and len(page) >= limit))
        units += cost
        limit, _ = reading.after(page, cost, asked=limit)
        if page:  # past the rest of the last collection
            while at < len(items) and items[at][0] == page[-1]:
                at += 1
        assert tail_of(page) >= 1


def total(found: Simulated, size_bytes: int) -> float:
    """Its units, the pages read on priced at their share of a scan of ``size_bytes``."""
    return found.skip_rcu + found.through * size_bytes / 8192


def test_small_collections_cost_about_a_scan() -> None:
    """2,000 single items of 100 B: pages grow, and it reads about what a scan reads (200 KB:
    24.4 RCU), as the same decisions written out by hand do."""
    runs = segments(4, 500, (100,))
    found = simulate(runs, 100, 2000)
    assert total(found, 200_000) == pytest.approx(by_hand([(100,)] * 2000, 100))
    assert 24.4 <= total(found, 200_000) <= 1.1 * 24.4 + 1


def test_large_collections_cost_a_page_each() -> None:
    """500 collections of 50 items of 200 B (10 KB each): a 4 KB page each, 0.5 RCU a key
    (a scan would read 1,221 RCU); the same as by hand; each segment's share is its keys'."""
    runs = segments(4, 125, (200,) * 50)
    found = simulate(runs, 200, 500)
    assert total(found, 5_000_000) == pytest.approx(by_hand([(200,) * 50] * 500, 200))
    assert 0.45 * 500 <= found.skip_rcu <= 0.55 * 500
    assert found.through < 0.05
    assert found.per_segment == pytest.approx([found.skip_rcu / 4] * 4, rel=0.05)


def test_a_cut_collection_is_given_its_rest() -> None:
    """A sample that read 15 items of each 50-item collection, with the rest (35 items) told,
    simulates as the whole collections do."""
    whole = simulate(segments(4, 125, (200,) * 50), 200, 500)
    cut = [[Collection((200,) * 15, True)] * 125 for _ in range(4)]
    assert simulate(cut, 200, 500, Rest(35)) == whole


def test_a_small_sample_is_drawn_again_to_the_table_s_keys() -> None:
    """Four segments of 50 keys stand for a table of 2,000: the stream is laid to 2,000 keys,
    so the ramp to large pages weighs what it weighs on the table."""
    runs = segments(4, 50, (100,))
    found = simulate(runs, 100, 2000, rng=random.Random(1))
    alone = simulate(runs, 100, 200)
    assert total(found, 200_000) > 5 * total(alone, 20_000)


def whole_sample(runs: list[list[Collection]], total: int | None = None) -> Sample:
    """The sample that read ``runs`` as segments (of ``total``; by default, of them alone)."""
    tallies = []
    for number, run in enumerate(runs):
        tally = SegmentTally("pk", segment=number * (total or len(runs)) // len(runs))
        for key, (sizes, _, _) in enumerate(run):
            tally.add([{"pk": {"S": f"{number}-{key}"}, "p": {"S": "x" * (s - 3)}} for s in sizes])
        tallies.append(tally)
    return Sample.of_segments(tallies, total or len(runs))


def test_a_whole_table_sample_gives_a_narrow_range() -> None:
    """Where the sample read every segment, the range is the simulation in the table's own
    order, within the scan's slack: it holds the listing's units by hand, and high/low < 1.2."""
    runs = segments(4, 125, (200,) * 50)
    sample = whole_sample(runs)
    assert sample.whole_table and len(sample.runs) == 4
    assert [len(run) for run in sample.runs] == [125] * 4
    info = table(25_000, 25_000 * 200)
    scan = Range(600.0, 610.0, 650.0)
    found = skip_pages_range(info, Range.exact(500), scan, sample)
    assert found is not None
    pages: list[int] = []
    expected = by_hand([(200,) * 50] * 500, 200, pages)
    assert found.low <= expected <= found.high
    assert found.spread < 1.2
    # Its requests (a helper found the estimate's a point: ~6 against 66), as a range that
    # holds those of the listing by hand (and the empty page that may end it).
    orders = simulated_orders(info, Range.exact(500), sample)
    assert orders is not None
    requests = skip_pages_requests(info, Range.exact(500), orders, exact=True)
    assert requests.low <= len(pages) <= requests.high <= requests.low + 2


def test_collections_the_sample_missed_are_added() -> None:
    """A sample of single items whose segments' share of DescribeTable's items is ten times
    what it read (a skewed table's few large keys, not drawn): the range rises above what the
    single items alone cost (tables over a scan page: one is read whole, as a scan)."""
    runs = segments(4, 100, (2000,))
    sample = whole_sample(runs)
    sample = Sample(**{**sample.__dict__, "segments": 4, "total_segments": 8, "whole_table": False})
    scan = Range(0.0, 0.0, 0.0)
    alone = skip_pages_range(table(800, 1_600_000), Range.exact(800), scan, sample)
    missed = skip_pages_range(table(8_000, 16_000_000), Range.exact(800), scan, sample)
    assert alone is not None and missed is not None
    assert missed.value > alone.value


def test_no_collections_no_simulation() -> None:
    assert skip_pages_range(table(10, 1000), Range.exact(5), Range.exact(1), Sample()) is None


def test_single_item_keys_past_the_simulated_stream_cost_a_scan() -> None:
    """220,000 single-item keys of 134 bytes, 10,000 simulated: skip-pages goes on as a scan
    early, and one scan-sized page (7,800 items) spans the stream's half. The rest is priced
    at the rate of what followed the last page begun in the first half (it was priced at what
    followed the half, a part of that page: 84% of the table read on, not 98%, and a range
    under the listing's actual, the scan's units; benchmarks/partition_keys.py, keys-220k)."""
    runs = segments(33, 32, (134,))
    found = simulate(runs, 134.0, 220_000)
    assert found.through > 0.95
    sample = whole_sample(runs, 7198)
    scan_units = 220_000 * 134 / 8192
    scan = Range(0.95 * scan_units, scan_units, 1.05 * scan_units)
    ranged = skip_pages_range(table(220_000, 220_000 * 134), Range.exact(220_000.0), scan, sample)
    assert not sample.whole_table
    assert ranged is not None and ranged.low <= scan_units <= ranged.high


def test_where_the_listing_reads_on_the_error_is_not_where_the_order_put_a_segment() -> None:
    """Eight alike segments of 64 (single items of 100 B): skip-pages reads on after a few
    pages, so the pages that skipped fall on whichever segment an order put first. That says
    nothing of the table; the segments cost skipping alike, so the range above its value is
    the scan's slack on what it read on, and the empty page that may end it (it was widened
    by the spread of those positions, to twice that)."""
    runs = segments(8, 250, (100,))
    sample = whole_sample(runs, 64)
    assert not sample.whole_table
    info = table(16_000, 1_600_000)
    scan = Range(190.0, 195.3, 200.0)
    found = skip_pages_range(info, Range.exact(16_000), scan, sample)
    assert found is not None
    assert found.low <= 195.3 <= found.high
    assert found.high - found.value <= scan.high - scan.value + 1


def test_skipping_s_error_is_its_cost_a_key_the_key_count_s_range_the_rest() -> None:
    """Sixteen segments of 64 holding one, two or three collections of two 20 KB items: a
    skipping page a collection, so a segment costs what its keys do. How many keys the
    table holds is the key count's range (here +-30%); the segments' costs add nothing to it
    (they were counted again as their spread, and the range went past 2x: helper-bigpairs,
    600 keys, 40 of 40 draws)."""
    pair: tuple[int, ...] = (20_000, 20_000)
    runs: list[list[Collection]] = [[Collection(pair)] * (1 + number % 3) for number in range(16)]
    sample = whole_sample(runs, 64)
    keys = Range(0.7 * 128, 128.0, 1.3 * 128)
    info = table(256, 256 * 20_000)
    scan = Range(590.0, 625.0, 660.0)
    found = skip_pages_range(info, keys, scan, sample)
    assert found is not None
    assert found.low <= 0.75 * found.value and 1.25 * found.value <= found.high
    assert found.spread <= 2


def test_an_empty_page_that_ends_the_listing_may_cost_nothing() -> None:
    """One collection of 20,000 items: a page, a skip past its rest, and an empty page at the
    table's end, which DynamoDB Local charges nothing: the range reaches down to the one
    page's 0.5 RCU, and up to both pages (high/low 2)."""
    runs: list[list[Collection]] = [[Collection((100,) * 20_000)]]
    sample = whole_sample(runs)
    found = skip_pages_range(table(20_000, 2_000_000), Range.exact(1), Range.exact(244), sample)
    assert found is not None
    assert found.low == 0.5 and found.high == 1.0


def test_a_whole_table_sample_with_a_cut_collection_is_simulated_at_its_own_sizes() -> None:
    """One collection of 15,000 items, cut by the sample after its first 80, among 999 single
    items 3 bytes larger: the sample read the whole table, and with the cut collection's
    rest (at the average of what was read of it) its items average DescribeTable's, so no item
    is scaled. (The items read alone averaged 45.7 bytes against the table's 42.2: scaled to
    that, pages of 92 single items fit a unit where the listing's took two, and the estimate
    said 6.75-7.63 RCU where the listing read 10.)"""
    tally = SegmentTally("pk")
    singles = [{"pk": {"S": f"s{n:04}"}, "p": {"S": "x" * 40}} for n in range(999)]
    tally.add(singles[:400])
    tally.add([{"pk": {"S": "big"}, "p": {"S": "x" * 39}} for _ in range(80)])
    tally.skip_rest()
    tally.add(singles[400:])
    sample = Sample.of_segments([tally], 1)
    assert sample.whole_table and sample.cut == 1
    single, big = sample.runs[0][0].sizes[0], sample.runs[0][400].sizes[0]
    assert single > big
    info = table(999 + 15_000, 999 * single + 15_000 * big)
    rest = Rest.of(info.item_count - sample.items, sample.cut)
    assert rest.items == 15_000 - 80
    calibrated = _calibrated(sample, info.size_bytes / info.item_count, rest)
    assert [c.sizes for c in calibrated[0]] == [c.sizes for c in sample.runs[0]]


def test_where_skipping_at_the_most_keys_costs_a_scan_s_the_range_reaches_a_scan_s() -> None:
    """Collections of a 20 KB first item and 25 small ones, 13 seen in 15 segments of 195:
    the orders run over the key count's likeliest value (169) and skip, for 2.5 RCU a key;
    at its high end (331), skipping alone costs about a scan's, and the listing goes on as a
    scan: the range's high end is the scan's (a table of 300 such keys read 781 RCU, where
    the range stopped at 747)."""
    runs = [[Collection((20_000,) + (60,) * 25)] if n < 13 else [] for n in range(15)]
    sample = whole_sample(runs, 195)
    info = table(300 * 26, 300 * (20_000 + 25 * 60))
    keys, scan = Range(86, 169, 331), Range(743, 782, 824.5)
    found = skip_pages_range(info, keys, scan, sample)
    assert found is not None and found.high >= scan.high
    assert found.value < 0.7 * scan.low  # (where it skips, at the likeliest count)


def heavy_table(seed: int) -> list[list[int]]:
    """1,200 collections of Pareto item counts (shape 0.8, 1-400) and item sizes (shape 0.7,
    50 B-40 KB), in scan order: each collection's item sizes."""
    rng = random.Random(seed)

    def pareto(alpha: float, low: float, high: float) -> int:
        return int(min(high, low * rng.paretovariate(alpha)))

    return [[pareto(0.7, 50, 40_000) for _ in range(pareto(0.8, 1, 400))] for _ in range(1200)]


def sampled(collections: list[list[int]], total: int, drawn: int, seed: int) -> Sample:
    """``drawn`` of ``total`` segments (runs of the collections in scan order) drawn at random,
    each collection read as the sample reads it: up to the item that reaches 4 KB, the rest
    skipped."""
    return sampled_of(collections, total, random.Random(seed).sample(range(total), drawn))


def sampled_of(collections: list[list[int]], total: int, chosen: list[int]) -> Sample:
    """The segments ``chosen`` of ``total``, read as :func:`sampled` reads them."""
    per = -(-len(collections) // total)
    tallies = []
    for number in sorted(chosen):
        tally = SegmentTally("pk", segment=number)
        for key in range(number * per, min(len(collections), (number + 1) * per)):
            read, size = [], 0
            for item in collections[key]:
                read.append({"pk": {"S": f"{key:05}"}, "p": {"S": "x" * max(1, item - 8)}})
                size += item
                if size >= 4096:
                    break
            tally.add(read)
            if len(read) < len(collections[key]):
                tally.skip_rest()
        tallies.append(tally)
    return Sample.of_segments(tallies, total)


@pytest.mark.parametrize("seed", [1, 2])
def test_heavy_tailed_collections_cut_by_the_sample_are_given_the_table_s_unread_items(
    seed: int,
) -> None:
    """Where item sizes are heavy-tailed, what the sample read of a collection (its first
    4 KB) says little of its rest: the rest is given the average of what the table holds and
    the sample did not read (DescribeTable's size and count, less the sample's), not the
    average of that collection's items read. Given those, every order's units were 0.6-0.8x
    the listing's (skip-pages over the whole table in its order: 747-829 RCU on two such
    tables), and the range missed it in 3 draws of 10; now each draw's range holds it. Where
    skipping pages ask for the limit that costs least a key (``PageSize.curve``), the
    listing reads 617.5 and 623.5 (707.5 and 762 before), and one draw of eight puts its
    high end 1% under it (612.2: a range of high/low 2, the most the estimate gives)."""
    collections = heavy_table(seed)
    items = sum(len(sizes) for sizes in collections)
    size = sum(sum(sizes) for sizes in collections)
    info = table(items, size)
    listed = total(
        simulate([[Collection(tuple(s)) for s in collections]], size / items, 1200), size
    )
    scan = Range(0.95 * size / 8192, size / 8192, 1.05 * size / 8192)
    missed = 0
    for draw in range(4):
        sample = sampled(collections, 500, 60, draw)
        assert sample.cut
        found = skip_pages_range(info, Range(0.8 * 1200, 1200.0, 1.25 * 1200), scan, sample)
        assert found is not None
        assert found.low <= listed <= 1.02 * found.high, (draw, found, listed)
        missed += listed > found.high
    assert missed <= (seed == 1)


def test_what_the_sample_did_not_see_is_priced_at_a_scan_s_share() -> None:
    """Eight segments of 64 drawn, 250 single items of 100 B each (209 KB read): where
    DescribeTable's 2 MB puts 250 KB in those eight, 41 KB of it went unseen (the rest of
    collections the sample cut, or large ones no drawn segment held: the benchmark's mixed
    table, three of 2,000 items among 1,700 keys, six segments in 100 drawn). A page read
    on that ends in such a collection skips its rest, so the range's low end reaches down by
    what the pages read on might skip of it, at a scan's price (the listing read 378 RCU
    where every order said 376-426), no further than half its high end; and by what the
    sampling error of the bytes read (``Z`` of them) may hide, where the sample's bytes cover
    DescribeTable's share. A sample of the whole table saw all there is."""
    sample = whole_sample(segments(8, 250, (100,)), 64)
    scan = Range(230.0, 244.1, 255.0)
    read = [sum(c.sizes) for run in sample.runs for c in run]
    hidden = Z * math.sqrt(7 / 8 * sum(b * b for b in read)) * 8  # (the table's bytes)
    unseen = (2_000_000 / 8 - sample.bytes) * 8  # the table's bytes like those unseen
    assert unseen_units(table(16_000, 2_000_000), 1 / 8, sample, scan) == pytest.approx(
        244.1 * (unseen + hidden) / 2_000_000
    )
    covered = sample.bytes * 8
    assert unseen_units(table(16_000, covered), 1 / 8, sample, scan) == pytest.approx(
        244.1 * hidden / covered
    )
    whole = whole_sample(segments(1, 250, (100,)))
    assert unseen_units(table(250, 2 * whole.bytes), 1.0, whole, scan) == 0


def test_items_the_sample_missed_may_lie_in_one_collection() -> None:
    """4,000 single-item keys of 100 B and one of 8,000 items of 4 KB; 68 segments of 989
    drawn, none holding the large one. The orders lay what the sample missed as one collection
    a pass over the drawn segments (14 of 556 items), and the range rests on them; the listing
    pays for one, wherever it lies (first, while it skips: the least). The line's low end
    reaches what the table as it is costs, simulated with the large collection at ten places
    (it said 369-738 RCU where the listing read 53.5 on DynamoDB Local)."""
    rng = random.Random(1)
    total = 989
    held = [sum(1 for _ in range(4000) if rng.random() < 1 / total) for _ in range(total)]
    sample = whole_sample([[Collection((100,))] * n for n in held[:68]], total)
    info = table(12_000, 4000 * 100 + 8000 * 4000)
    scan = Range(0.95 * 3955, 3955.0, 1.05 * 3955)
    keys = Range(3400.0, 4000.0, 4700.0)
    ranged = skip_pages_range(info, keys, scan, sample)
    lone = unseen_in_one(info, keys, scan, sample)
    assert ranged is not None and lone is not None and lone.least < ranged.low
    small = [Collection((100,))] * 4000
    for at in range(10):
        place = 4000 * at // 10
        runs = [[*small[:place], Collection((4000,) * 8000), *small[place:]]]
        actual = simulate(runs, info.size_bytes / info.item_count, 4001, table_bytes=4e6 * 8)
        cost = actual.skip_rcu + actual.through * scan.value
        assert lone.least <= cost <= ranged.high, (at, lone, cost, ranged)
    # Nothing missed: nothing to add.
    seen = whole_sample([[Collection((100,))] * n for n in held[:68]], total)
    assert unseen_in_one(table(4000, 4000 * 100), keys, scan, seen) is None


@pytest.mark.parametrize(("through", "reaches"), [((0.36, 0.68), True), ((0.0, 0.2), False)])
def test_where_every_order_read_on_much_of_the_table_the_range_reaches_a_scan_s(
    through: tuple[float, float], reaches: bool
) -> None:
    """Orders that each read on a quarter of the table or more (``READS_ON``): when the
    listing turns to read on is not known, and it may turn at its first trial; the high end
    is the scan's. (The mixed table under one name: every order read on 36-68% for 271-334
    RCU, the range stopped at 367, and the listing read 378 of a scan's 404.) Orders that
    read on little keep their own high end."""
    sample = whole_sample(segments(8, 100, (200,) * 50), 64)
    info = table(64 * 100 * 50, 64 * 100 * 50 * 200)
    scan = Range(7500.0, 7812.5, 8100.0)
    low, high = through
    orders = [Simulated(1600.0, low + (high - low) * n / 9, (200.0,) * 8) for n in range(10)]
    assert (min(o.through for o in orders) >= READS_ON) is reaches
    found = skip_pages_range(info, Range(5000, 6400, 8000), scan, sample, orders)
    assert found is not None
    assert (found.high >= scan.high) is reaches


def test_items_the_sample_missed_in_a_few_collections_last_raise_the_high_end() -> None:
    """helper-78 (hugelast): 2,000 single-item keys and three of 3,000 items of 100 B, last in
    scan order; 21 segments of 40 drawn, none holding the three. The orders lay what the
    sample missed as one collection a pass, spread out, and their high end stayed under what
    the table costs (43.6 RCU against the listing's 64.5): the pages have grown to a scan's
    over the small keys when they meet the three. The line's high end now holds the table as
    it is, simulated, and the low end still the one-collection layout."""
    rng = random.Random(3)
    held = [sum(1 for _ in range(2000) if rng.random() < 1 / 40) for _ in range(40)]
    sample = whole_sample([[Collection((120,))] * n for n in held[:21]], 40)
    info = table(2000 + 9000, 2000 * 120 + 9000 * 100)
    scan = Range(0.95 * 162, 162.0, 1.05 * 162 + 1)
    keys = Range(1850.0, 2003.0, 2150.0)
    ranged = skip_pages_range(info, keys, scan, sample)
    assert ranged is not None
    missed = missed_bytes(info, sample, scan)
    units, note, _ = widened(info, keys, scan, sample, ranged, simulated=True, missed=missed)
    runs = [[*[Collection((120,))] * 2000, *[Collection((100,) * 3000)] * 3]]
    actual = simulate(runs, info.size_bytes / info.item_count, 2003, table_bytes=info.size_bytes)
    cost = actual.skip_rcu + actual.through * scan.value
    assert ranged.high < cost <= units.high, (ranged, cost, units)
    assert units.low <= ranged.low and "late in scan order" in note


def test_the_empty_page_that_ends_pages_read_on_may_cost_nothing() -> None:
    """helper-83 F3: 8 keys of 1,000 items of 1 KB, read whole by the sample (247 segments of
    one collection or none). skip-pages read 4.0 RCU in 9 requests, its last page empty and
    not charged (DynamoDB Local); the orders ended on a page read on, and the low end, which
    allowed for an uncharged empty page only after a skipping one, said 4.05."""
    runs = [[Collection((1_050,) * 1_000)] if n % 30 == 0 else [] for n in range(240)]
    sample = whole_sample(runs)
    assert sample.whole_table and sample.keys == 8
    info = table(8_000, 8_000 * 1_050)
    scan = Range(0.95 * 1025.4, 1025.4, 1.05 * 1025.4 + 1)
    found = skip_pages_range(info, Range.exact(8), scan, sample)
    assert found is not None and found.low <= 4.0 <= found.high, found


def _marked(seed: int) -> list[tuple[int, ...]]:
    """test_estimate's "marked" table: 400 keys of 1-3 items (one in five 12-20) of 216 to
    1,816 bytes, each led by an 85-byte marker, in an order ``seed`` draws."""
    rng = random.Random(22)
    columns = []
    for k in range(400):
        count = rng.randint(12, 20) if k % 5 == 0 else rng.randint(1, 3)
        columns.append((85, *(16 + rng.randint(200, 1800) for _ in range(count))))
    random.Random(seed).shuffle(columns)
    return columns


def _drawn(columns: list[tuple[int, ...]], total: int, drawn: range) -> Sample:
    """The sample that read the segments ``drawn`` of ``total`` whole, markers told apart."""
    tallies = []
    per = len(columns) / total
    for number in drawn:
        tally = SegmentTally("pk", own=lambda item: "m" in item, segment=number)
        for key in range(round(number * per), round((number + 1) * per)):
            marker, *sizes = columns[key]
            tally.add(
                [{"pk": {"S": f"k{key:04}"}, "m": {"S": "x" * (marker - 10)}}]
                + [{"pk": {"S": f"k{key:04}"}, "p": {"S": "x" * (s - 9)}} for s in sizes]
            )
        tallies.append(tally)
    return Sample.of_segments(tallies, total)


def test_the_requests_reach_skipping_alone_s_where_it_costs_less_than_every_order() -> None:
    """Where skipping alone costs under ``1 - WASTE`` of every simulated order, the orders read
    on only as skipping's error let their trials pass; the listing may fail its trials and
    skip to its end, a request a key or so: the requests' range reaches skipping alone's.
    test_estimate's marked table, 9 of its 61 segments drawn: the orders read on (their
    requests' high end 106), while the listing over the same collections sends 14-312
    requests as its trials fall (312 in the order drawn here; DynamoDB Local's order sent
    154 with 03a47ec, which a trial's whole items decide sooner: helper-96)."""
    columns = _marked(11)
    sample = _drawn(columns, 61, range(3, 61, 7))
    sizes = [size for sizes in columns for size in sizes]
    info = table(len(sizes), sum(sizes))
    keys = Range(0.8 * 400, 400, 1.3 * 400)
    scan_rcu = sum(sizes) / 8192
    scan = Range(0.95 * scan_rcu, scan_rcu, 1.05 * scan_rcu + 1)
    speed = methods.Speed(sample, 1, 40_000.0)
    line = methods.skip_pages_line(info, len(sizes), keys, scan, sample, speed, 0)
    stream = [Collection(column, False, 1) for column in _marked(2)]
    listing = simulate([stream], sum(sizes) / len(sizes), 400, table_bytes=sum(sizes))
    requests = listing.skip_pages + listing.through_pages + 1  # (and the empty last page)
    assert requests > 300
    assert line.requests_high is not None and line.requests_high >= requests, line
