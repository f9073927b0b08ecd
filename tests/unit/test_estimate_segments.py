"""skip-pages simulated in several Scan segments, as ``auto`` reads a table of 4 MB or more
(no client): each segment starts its own reading of the one page size, and ends on a page of
its own (ddbkeys.partition_keys._tasks.simulate, ``segments``), and auto's estimate line
(ddbkeys.partition_keys._tasks.auto.in_segments, _listing.opening.auto_segments)."""

from __future__ import annotations

import pytest

from ddbkeys.partition_keys._listing.opening import auto_readers, auto_segments
from ddbkeys.partition_keys._listing.options import ListingOptions
from ddbkeys.partition_keys._listing.pages import PageSize
from ddbkeys.partition_keys._listing.reading import Reading
from ddbkeys.partition_keys._tasks.auto import in_segments
from ddbkeys.partition_keys._tasks.methods import MethodEstimate
from ddbkeys.partition_keys._tasks.simulate import Collection, simulate
from ddbkeys.partition_keys._tasks.stream import NO_REST, Stream

MB = 1024 * 1024


def by_hand(collections: list[tuple[int, ...]], average: float, segments: int) -> float:
    """skip-pages over whole collections in ``segments`` equal runs of them, one after
    another, skipping only, written out plainly: each a new ``Reading`` of one ``PageSize``,
    its first Limit ``first_limit``'s, then the next ``limit`` items (or 1 MB) of the segment, their
    bytes rounded up to 4 KB, then past the last one's collection; the segment's last page
    told to ``end`` (and an empty page after a full one at its end)."""
    pages = PageSize.for_items_of(average)
    pages.may_read_on = False  # (skipping only, as the simulation with read_on=False)
    units = 0
    length = len(collections) / segments
    for number in range(segments):
        start, stop = round(number * length), round((number + 1) * length)
        items = [(key, size) for key in range(start, stop) for size in collections[key]]
        reading = Reading(pages)
        limit = reading.first_limit(segments)
        at = 0
        while True:
            page: list[int] = []
            sizes: list[float] = []
            while at < len(items) and (limit is None or len(page) < limit):
                if page and sum(sizes) + items[at][1] > MB:
                    break
                page.append(items[at][0])
                sizes.append(items[at][1])
                at += 1
            cost = max(1, -(-int(sum(sizes)) // 4096))
            told = sizes if reading.whole_items else None  # (a page of whole items)
            if at >= len(items):
                units += cost + (limit is not None and len(page) >= limit)
                reading.end(page, cost, asked=limit, sizes=told)
                break
            units += cost
            limit, _ = reading.after(page, cost, asked=limit, sizes=told)
            if page:  # past the rest of the last collection
                while at < len(items) and items[at][0] == page[-1]:
                    at += 1
    return 0.5 * units


def total(runs: list[list[Collection]], average: float, keys: int, segments: int) -> float:
    found = simulate(runs, average, keys, segments=segments, read_on=False)
    return found.skip_rcu


@pytest.mark.parametrize("segments", [1, 2, 3, 6])
def test_segments_read_one_after_another_as_by_hand(segments: int) -> None:
    """Small keys with three large collections among them, skipping only: the simulation in
    ``segments`` segments is the plain by-hand reading of them."""
    collections: list[tuple[int, ...]] = [(100,)] * 500
    for at in (90, 250, 410):
        collections[at] = (4000,) * 600
    runs = [[Collection(sizes) for sizes in collections]]
    average = sum(map(sum, collections)) / sum(map(len, collections))
    expected = by_hand(collections, average, segments)
    assert total(runs, average, 500, segments) == pytest.approx(expected)


def test_a_page_never_reads_past_its_segment_s_end() -> None:
    stream = Stream([Collection((100,) * 3)] * 4, [0] * 4, NO_REST, stop=2)
    keys, _, _, _ = stream.page(None)
    assert keys == [0, 0, 0, 1, 1, 1]
    assert not stream.more()


def test_each_segment_ends_on_a_page_of_its_own() -> None:
    """2,000 single-item keys: one segment's pages grow to a few; ten segments take at
    least one page each."""
    runs = [[Collection((100,))] * 2000]
    one = simulate(runs, 100, 2000, read_on=False)
    ten = simulate(runs, 100, 2000, read_on=False, segments=10)
    assert ten.skip_pages >= 10
    assert ten.skip_pages > one.skip_pages


def test_auto_reads_a_table_of_4_mb_or_more_in_segments() -> None:
    """One reader every 2 MB (up to 8), up to four segments each, one a MB: as readers_for
    and default_scan_segments say; scan_segments as given; a read budget of under a page's
    units a second keeps one reader, and one segment."""
    options = ListingOptions()
    assert auto_readers(3 * MB) == (1, "one every 2 MB of the table")
    assert auto_segments(options, 3 * MB) == 1
    assert auto_segments(options, 7 * MB) == 7  # (3 readers: 12 segments, at most 7 pages)
    assert auto_segments(options, 100 * MB) == 32
    assert auto_segments(options.replace(scan_segments=5), 100 * MB) == 5
    assert auto_segments(options.replace(segments=2), 100 * MB) == 8
    assert auto_readers(100 * MB, rate=100.0)[0] == 1
    assert auto_segments(options, 100 * MB, rate=100.0) == 1


def test_auto_s_line_spans_both_readings() -> None:
    """auto's line where it reads in segments: the likeliest is the split reading's, the
    range from the lower low to the higher high, and the note says so."""
    alone = MethodEstimate("skip-pages", True, rcu=183.0, rcu_low=62.0, rcu_high=257.0)
    split = MethodEstimate("skip-pages", True, rcu=136.0, rcu_low=37.0, rcu_high=250.0)
    found = in_segments(alone, split, 6)
    assert (found.rcu_low, found.rcu, found.rcu_high) == (37.0, 136.0, 257.0)
    assert found.note.startswith("skip-pages in 6 Scan segments")
    assert "62-257" in found.note
