"""Bytes DescribeTable counts that the sample's drawn segments did not hold: collections of
large items the draw missed, which skip-pages pays a page each for
(ddbkeys.partition_keys._tasks.missed); a large collection the draw cut, which may be the
table's only one (``lone.cut_once``); and the estimate's skip-pages line that rests on them."""

from __future__ import annotations

import math
import random

import pytest

from ddbkeys.partition_keys import ListingOptions
from ddbkeys.partition_keys._tasks import methods, unseen
from ddbkeys.partition_keys._tasks.estimate import estimate
from ddbkeys.partition_keys._tasks.missed import PAGE_UNITS, TAIL, heavy_rest, missed_bytes
from ddbkeys.partition_keys._tasks.ranges import Range
from ddbkeys.partition_keys._tasks.sampled import Collection, Sample, SegmentTally
from tests.unit.test_estimate_simulate import by_hand, table, whole_sample

SEGMENTS = 788
HUGE = tuple(390_000 if s % 13 == 0 else 100_000 for s in range(40))


def huge_table(seed: int) -> tuple[list[list[Collection]], list[int]]:
    """3,000 collections of 1-3 items of 100 B and six of 40 items of 100-390 KB (29 MB),
    hashed over ``SEGMENTS`` segments; and 30 segments drawn that hold none of the six (a
    new user's table: 30 of 788 segments drawn saw none of them)."""
    rng = random.Random(seed)
    runs: list[list[Collection]] = [[] for _ in range(SEGMENTS)]
    for _ in range(3000):
        runs[rng.randrange(SEGMENTS)].append(Collection((100,) * rng.choice((1, 2, 3))))
    huge = rng.sample(range(SEGMENTS), 6)
    for segment in huge:
        runs[segment].insert(rng.randrange(len(runs[segment]) + 1), Collection(HUGE))
    drawn = rng.sample([n for n in range(SEGMENTS) if n not in huge], 30)
    return runs, sorted(drawn)


def test_the_high_end_holds_what_a_few_huge_collections_the_draw_missed_cost() -> None:
    """The six huge collections hold 97% of the table's bytes; the sample saw none of them.
    skip-pages' range reaches what the table itself costs (written out by hand, in the
    table's own order and in shuffled ones: 685-1,187 RCU here, where the line said 94-190
    before; 892.5 on DynamoDB Local), the note says why, and the low end stays where the
    sample puts it (the bytes may be one collection, a page)."""
    for seed in range(3):
        runs, drawn = huge_table(seed)
        sample = whole_sample([runs[n] for n in drawn], SEGMENTS)
        assert not sample.whole_table and not sample.cut
        collections = [c.sizes for run in runs for c in run]
        size = sum(sum(sizes) for sizes in collections)
        items = sum(len(sizes) for sizes in collections)
        info = table(items, size)
        found = estimate(info, sample, ListingOptions())
        line = found.method("skip-pages")
        assert line.rcu_low is not None and line.rcu_high is not None and line.rcu is not None
        assert (
            "DescribeTable counts ~" in line.note and "collections the sample missed" in line.note
        )
        rng = random.Random(seed)
        for order in range(4):
            laid = list(collections)
            if order:
                rng.shuffle(laid)
            actual = by_hand(laid, size / items)
            assert line.rcu_low <= actual <= line.rcu_high, (seed, order, actual, line)
        scan = found.method("scan")
        assert scan.rcu_high is not None and line.rcu_high <= 1.1 * scan.rcu_high + 1
        assert line.rcu_low < 200  # (as the sample saw it: one collection would cost a page)


def test_missed_bytes_are_a_page_each_of_as_many_collections_as_the_draw_could_miss() -> None:
    """From one collection (a page, ``PAGE_UNITS``) to as many as 30 segments of 788 could all
    miss but half a percent of the time (``(1 - p)**n >= TAIL``: 136), each a page, and no
    more than the missed bytes cost a scan; the likeliest between them (geometric middle)."""
    runs, drawn = huge_table(0)
    sample = whole_sample([runs[n] for n in drawn], SEGMENTS)
    size = sum(sum(c.sizes) for run in runs for c in run)
    items = sum(len(c.sizes) for run in runs for c in run)
    scan = Range(size / 8192 * 0.95, size / 8192, size / 8192 * 1.05)
    missed = missed_bytes(table(items, size), sample, scan)
    assert missed is not None
    p = 30 / SEGMENTS
    assert missed.most == math.floor(math.log(TAIL) / math.log(1 - p))
    assert (1 - p) ** missed.most >= TAIL > (1 - p) ** (missed.most + 1)
    assert abs(missed.bytes - (size * p - sample.bytes) / p) < 1
    assert missed.units.low == PAGE_UNITS
    assert PAGE_UNITS < missed.units.high <= 1.02 * scan.value  # (the bytes' own, at most)
    assert missed.units.value == math.sqrt(missed.units.low * missed.units.high)


def test_nothing_is_missed_where_the_sample_s_bytes_are_the_table_s_share() -> None:
    """A table whose drawn segments held their share of its bytes (within the sampling
    error and ``SLACK``), a sample of the whole table, or one whose items are short too (the
    simulation lays those out as a collection of their own): no missed bytes."""
    rng = random.Random(5)
    runs: list[list[Collection]] = [[] for _ in range(100)]
    for _ in range(3000):
        runs[rng.randrange(100)].append(Collection((100,) * rng.choice((1, 2, 3))))
    size = sum(sum(c.sizes) for run in runs for c in run)
    items = sum(len(c.sizes) for run in runs for c in run)
    scan = Range(1.0, size / 8192, size / 8192 + 10)
    drawn = whole_sample(runs[:10], 100)
    assert missed_bytes(table(items, size), drawn, scan) is None
    assert missed_bytes(table(items, size), whole_sample(runs), scan) is None
    # Ten times the items the drawn segments' share held, of the same bytes each: a count
    # missed too (``simulate._unseen``'s), not bytes alone.
    assert missed_bytes(table(10 * items, 10 * size), drawn, scan) is None
    # The same items, 1.3 times the bytes: beyond the error, so missed.
    assert missed_bytes(table(items, int(1.3 * size)), drawn, scan) is not None


def cut_sample(runs: list[list[Collection]], drawn: list[int], huge: int) -> Sample:
    """The sample of the ``drawn`` segments, as the estimate reads it: a huge collection's
    first items up to 400 KB, then its rest skipped (cut)."""
    tallies = []
    for number in drawn:
        tally = SegmentTally("pk", segment=number)
        for key, (sizes, _, _) in enumerate(runs[number]):
            items = [{"pk": {"S": f"{number}-{key}"}, "p": {"S": "x" * (s - 3)}} for s in sizes]
            if len(sizes) == len(HUGE_ONE) and number == huge:
                tally.add(items[:1])
                tally.skip_rest()
            else:
                tally.add(items)
        tally.close()
        tallies.append(tally)
    return Sample.of_segments(tallies, SEGMENTS)


HUGE_ONE = (390_000,) * 60


def test_a_huge_collection_the_sample_cut_may_be_the_table_s_only_one() -> None:
    """3,000 small collections and one of 60 items of 390 KB (23 MB), the one in a drawn
    segment, read in part (cut). The orders lay each drawn segment once for each pass over the
    drawn share, the huge collection with it: some 25 of them, where the table holds one (a
    helper's draw said 1,714-3,372 RCU, where the listing read 230.5). The low end reaches
    what the table costs with the one laid once (``lone.cut_once``), and the note says so;
    where the simulated orders' own spread put the low end at 0.5 RCU for 3,000 keys, it is
    no lower than the least of such layouts (times the key count's low end over its value)."""
    rng = random.Random(3)
    runs: list[list[Collection]] = [[] for _ in range(SEGMENTS)]
    for _ in range(3000):
        runs[rng.randrange(SEGMENTS)].append(Collection((100,) * rng.choice((1, 2, 3))))
    huge = rng.randrange(SEGMENTS)
    runs[huge].insert(0, Collection(HUGE_ONE))
    drawn = sorted([huge, *rng.sample([n for n in range(SEGMENTS) if n != huge], 29)])
    sample = cut_sample(runs, drawn, huge)
    assert sample.cut == 1 and not sample.whole_table
    collections = [c.sizes for run in runs for c in run]
    size = sum(sum(sizes) for sizes in collections)
    items = sum(len(sizes) for sizes in collections)
    line = estimate(table(items, size), sample, ListingOptions()).method("skip-pages")
    assert line.rcu_low is not None and line.rcu_high is not None
    assert "the large collection the sample read in part is the table's only one" in line.note
    for order in range(4):
        laid = list(collections)
        if order:
            random.Random(order).shuffle(laid)
        actual = by_hand(laid, size / items)
        assert line.rcu_low <= actual <= line.rcu_high, (order, actual, line)
    assert line.rcu_low > 50  # (a floor: 3,000 keys cannot be listed for 0.5 RCU)


def test_many_cut_collections_laid_together_are_no_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """A draw of a heavy-tailed table cuts dozens of collections. Laid together once (the
    layout of ``lone.cut_once``), their run can cost more than every order of the simulation;
    taken as a floor, it raised the low end to the likeliest value. On DynamoDB Local, three
    Pareto and lognormal tables of 14-35 MB, 12 draws each: the listing's units fell outside
    the range in 15 of 36 draws so, in 4 without it. No draw could catch every such collection
    (``p ** cut`` < ``TAIL``), so that layout neither lowers nor raises the low end; where a
    draw could (one cut, of a few segments), it still does both."""
    units, keys, scan = (
        Range(600.0, 900.0, 1300.0),
        Range(2500, 3000, 3600),
        Range(1700, 1800, 1900),
    )
    info = table(35_000, 14_000_000)
    monkeypatch.setattr(unseen, "unseen_in_one", lambda *_: None)
    laid = 1_200.0  # (more than the likeliest)
    monkeypatch.setattr(unseen, "cut_once", lambda *_: laid)
    many = Sample(segments=40, total_segments=400, keys=300, cut=30)
    assert TAIL > 0.1**30 and unseen.layouts(info, keys, scan, many) == (None, None)
    one = Sample(segments=40, total_segments=400, keys=300, cut=1)
    assert unseen.layouts(info, keys, scan, one) == (None, laid)
    raised, _ = unseen.fewer(keys, one, units, None, laid)
    assert raised == Range(900.0, 900.0, 1300.0)  # (no higher than the likeliest)
    lowered, note = unseen.fewer(keys, one, units, None, 200.0)
    assert lowered == Range(200.0, 900.0, 1300.0) and "the table's only one" in note


def test_large_items_the_sample_saw_but_not_first_raise_skips_high_end() -> None:
    """helper-78 (bimodal): 600 keys of lognormal item counts, items of 100 B but 1% of them
    300 KB; 12 segments of 361 drew 22 keys and 162 items, one of them large, none first. The
    key-level range (each key's first item) said 194-565 RCU; the skip scan read 628.5, nine
    keys being led by a large item. The high end now holds first items drawn like the
    sample's items; where first items are like the others it is as before."""
    rng = random.Random(1)  # (of 40 seeds, the most keys led by a large item: 18)
    big = 300_000

    def collection() -> Collection:
        count = max(1, round(math.exp(rng.gauss(1.5, 1.0))))
        return Collection(tuple(big if rng.random() < 0.01 else 124 for _ in range(count)))

    table_keys = [collection() for _ in range(600)]
    truth = sum(0.5 * math.ceil(c.sizes[0] / 4096) for c in table_keys)
    runs = [[Collection((124,) * 5), Collection((124, 124, big, 124))]] + [
        [Collection((124,) * n)] for n in (18, 14, 1, 7, 1, 25, 5, 1, 16, 1, 1, 8, 6, 2, 13)
    ]
    sample = whole_sample(runs, 361)
    items = sum(len(c.sizes) for c in table_keys)
    info = table(items, sum(sum(c.sizes) for c in table_keys))
    keys = Range(388.0, 661.8, 1128.5)
    speed = methods.Speed(sample, 1, 40_000.0)
    line = methods.skip_line(info, keys, sample, speed)
    assert line.rcu_low is not None and line.rcu_high is not None
    assert line.rcu_low <= truth <= line.rcu_high, (line, truth)
    assert "its first items were lighter" in line.note
    alike = whole_sample([[Collection((124,) * n)] for n in (5, 18, 4, 14, 1, 7)], 361)
    plain = methods.skip_line(info, keys, alike, methods.Speed(alike, 1, 40_000.0))
    assert "lighter" not in plain.note and plain.rcu_high is not None
    assert plain.rcu_high < truth  # (where nothing the sample saw says otherwise: a miss)


def drawn_runs(runs: list[list[Collection]], total: int, every: int, placed: bool = True) -> Sample:
    """The sample that drew ``runs`` (their collections as given, cut ones too), one segment
    every ``every`` of ``total`` (``placed``: where they lie is known)."""
    return Sample(
        segments=len(runs),
        total_segments=total,
        items=sum(len(c.sizes) for run in runs for c in run),
        bytes=sum(sum(c.sizes) for run in runs for c in run),
        keys=sum(len(run) for run in runs),
        cut=sum(c.cut for run in runs for c in run),
        runs=tuple(tuple(run) for run in runs),
        places=tuple(n * every / total for n in range(len(runs))) if placed else (),
    )


def bimodal_sample() -> Sample:
    """helper-78's bimodal table as 17 segments of 355 drew it: 27 keys of 160 items of 123 B,
    two collections of 25-26 such items cut (a page each), no 300 KB item among them."""
    counts = [[26], [6], [1], [2], [], [10, 4, 2], [4, 6], [1, 2], [4, 12, 7], [2, 1, 1], [5, 3]]
    counts += [[25, 4], [], [5], [1, 1], [9, 1, 15], []]
    runs = [[Collection((123,) * n, cut=n >= 25) for n in run if n] for run in counts]
    return drawn_runs(runs, 355, every=20)


def test_unread_bytes_heavier_than_what_the_sample_read_may_be_read_whole() -> None:
    """helper-78 (bimodal, 600 keys of 100 B items, 1% of them 300 KB): the drawn share of
    DescribeTable's size held 538 KB beyond the 19.7 KB the sample read, in 53 items of 10 KB
    on average where it read items of 123 B. The line took those bytes for the two cut
    collections' rests, which skip-pages skips, and said 6.4-456 RCU; skip-pages read 893,
    reading 20 of the large items in the small collections it read whole. Now its high end
    reaches the scan's (the bytes read whole); where the rest is like what the sample read,
    nothing changes."""
    sample = bimodal_sample()
    info = table(4447, 11_646_893)
    scan = Range(1350.7, 1422.7, 1498.5)
    heavy = heavy_rest(info, sample, scan)
    assert heavy is not None and 1_000 < heavy <= scan.value
    line = estimate(info, sample, ListingOptions()).method("skip-pages")
    assert line.rcu_low is not None and line.rcu_high is not None
    assert line.rcu_low <= 893 <= line.rcu_high and "large items of collections" in line.note
    light = table(4447, round(sample.bytes / sample.items * 4447))  # (the rest like the sample)
    assert heavy_rest(light, sample, scan) is None


def test_a_sample_of_few_collections_lets_skip_pages_reach_a_scan() -> None:
    """helper-78 (bimodal-3): 3 segments of 372 drew 6 keys of 600 (1% of items 300 KB, one of
    them read). skip-pages read 738.5 to 1,259.5 RCU as its trials of reading on went, turning
    on which segments it split the table in; the line said up to 1,009. Fewer than 30
    collections say too little of that: the high end reaches a scan's."""
    big = (124,) * 12 + (300_000,)
    runs = [
        [Collection(big, cut=True), Collection((124,) * 2)],
        [Collection((124,) * 8)],
        [Collection((124,) * 8), Collection((124,) * 16), Collection((124,) * 24)],
    ]
    sample = drawn_runs(runs, 372, every=100)
    assert sample.keys == 6 < unseen.FEW_COLLECTIONS
    info = table(4078, 12_201_079)
    found = estimate(info, sample, ListingOptions())
    line, scan = found.method("skip-pages"), found.method("scan")
    assert line.rcu_high is not None and scan.rcu_high is not None
    assert line.rcu_high >= scan.rcu_high > 1_259.5 and "say too little" in line.note


def test_where_the_draw_missed_most_of_the_bytes_the_low_end_is_what_the_rest_costs() -> None:
    """helper-88: 3,000 keys of one 50 B item and one collection of 1,000 items of 4 KB (95%
    of the bytes), the draw missing it. The simulation's pages read on were priced at the
    whole table's scan, the missed bytes again on top: 283-597 RCU said where skip-pages read
    29.5 (a page of the large collection: it skips the rest). They are priced apart now:
    from a page of theirs to all of them."""
    total = 1000
    rng = random.Random(88)
    runs: list[list[Collection]] = [[] for _ in range(total)]
    for _ in range(3000):
        runs[rng.randrange(total)].append(Collection((50,)))
    giant = rng.randrange(total)
    runs[giant].insert(rng.randrange(len(runs[giant]) + 1), Collection((4000,) * 1000))
    drawn = rng.sample([n for n in range(total) if n != giant], 40)
    sample = whole_sample([runs[n] for n in sorted(drawn)], total)
    collections = [c.sizes for run in runs for c in run]
    size = sum(sum(sizes) for sizes in collections)
    items = sum(len(sizes) for sizes in collections)
    found = estimate(table(items, size), sample, ListingOptions())
    line, scan = found.method("skip-pages"), found.method("scan")
    assert line.rcu_low is not None and line.rcu_high is not None and scan.rcu is not None
    assert "DescribeTable counts ~" in line.note
    for order in range(4):
        laid = list(collections)
        if order:
            rng.shuffle(laid)
        actual = by_hand(laid, size / items)
        assert line.rcu_low <= actual <= line.rcu_high, (order, actual, line)
    assert line.rcu_low < 0.1 * scan.rcu  # (was about half a scan's)
    assert line.rcu_high >= 0.9 * scan.rcu  # (the bytes may lie in many collections)


def packed(drawn_dense: bool) -> tuple[Sample, int, int, int]:
    """10,000 single-item keys of 100 B: 2,000 spread over 122 of 136 segments, 8,000 packed
    in the other 14 (helper-88's clump: keys packed in a part of the hash space); the sample
    draws 14 segments of the spread ones (``drawn_dense``: 7 of the packed ones). Its items,
    bytes and keys."""
    total, dense = 136, range(14)
    rng = random.Random(5)
    runs: list[list[Collection]] = [[] for _ in range(total)]
    for _ in range(2000):
        runs[rng.randrange(14, total)].append(Collection((100,)))
    for _ in range(8000):
        runs[rng.choice(dense)].append(Collection((100,)))
    drawn = list(dense)[:7] if drawn_dense else rng.sample(range(14, total), 14)
    return whole_sample([runs[n] for n in sorted(drawn)], total), 10_000, 1_000_000, 10_000


def test_keys_packed_where_no_drawn_segment_lay_are_in_the_key_count_s_range() -> None:
    """The draw saw none of the packed keys: DescribeTable's items beyond the drawn segments'
    share may each be a key, so the key count's high end and skip's hold them (the estimate
    said 179-442 keys of 10,250 on helper-88's table); the low end stays where the sample
    puts it."""
    sample, items, size, keys = packed(drawn_dense=False)
    assert not sample.cut and not sample.whole_table
    found = estimate(table(items, size), sample, ListingOptions())
    assert found.keys_low is not None and found.keys_high is not None
    assert found.keys_low < 4000 and found.keys_high >= keys
    skip = found.method("skip")
    assert skip.rcu_low is not None and skip.rcu_high is not None
    assert skip.rcu_low <= 0.5 * keys <= skip.rcu_high  # (a one-item page a key)


def test_skip_s_range_spans_the_key_count_s() -> None:
    """The draw held packed segments: the key count's range is wide (and at most the items),
    and skip's is no narrower (it was the sampled keys' scaled up alone: 12,915-14,754 RCU
    where skip read 5,125 on helper-88's table, whose items allow 10,125 at most)."""
    sample, items, size, keys = packed(drawn_dense=True)
    found = estimate(table(items, size), sample, ListingOptions())
    skip = found.method("skip")
    assert found.keys_low is not None and found.keys_high is not None
    assert skip.rcu_low is not None and skip.rcu_high is not None
    assert found.keys_low <= keys <= found.keys_high
    assert skip.rcu_low <= 0.5 * keys <= skip.rcu_high
