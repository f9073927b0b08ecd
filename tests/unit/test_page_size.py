"""The skip-pages page-size controller decides from what each page cost (no server)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddbkeys.partition_keys._listing import pages
from ddbkeys.partition_keys._listing.curve import skipping_over
from ddbkeys.partition_keys._listing.notes import how_it_read
from ddbkeys.partition_keys._listing.pages import (
    FIRST_THROUGH,
    GROWTH,
    LOOK_AFTER,
    MAX_PAGE_ITEMS,
    MAX_PROBE_AFTER,
    MAX_TARGET,
    MORE_SAMPLES,
    PROBE_AFTER,
    REGRET,
    SCAN_PAGE_BYTES,
    WASTE,
    PageSize,
)
from ddbkeys.partition_keys._listing.read_on import (
    CUT,
    FLOOR,
    HOLD,
    HOLD_UNMET,
    LEEWAY,
    PAIR_PAGES,
    Ledgers,
)
from ddbkeys.partition_keys._listing.reading import Reading, longest_run, tail_of


@pytest.mark.parametrize(
    ("average_bytes", "limit", "known"),
    [
        (512.0, 8, True),  # 4096 // 512
        (300.0, 13, True),  # rounded down: 13 items of 300 bytes stay within 4 KB
        (5000.0, 1, True),  # items above 4 KB: one a page
        (2.0, MAX_PAGE_ITEMS, True),  # never above the cap
        (0.0, 8, False),  # no size reported: start small and double
        (-1.0, 8, False),
    ],
)
def test_start_from_the_average_item_size(average_bytes: float, limit: int, known: bool) -> None:
    start = PageSize.for_items_of(average_bytes)
    assert (start.limit, start.known, start.target) == (limit, known, 1)


# (state before, the page: items, units, tail) -> (limit, target, ceiling, clean) after it.
# The tail is 1 (small collections, no growth yet) unless a row says otherwise.
DECISIONS: list[tuple[str, dict[str, Any], tuple[int, float, int], tuple[int, int, Any, int]]] = [
    (
        "unknown size: a full page within target doubles",
        {"limit": 8, "known": False},
        (8, 1, 1),
        (16, 1, None, 0),
    ),
    (
        "unknown size: doubling stops at the cap",
        {"limit": 600, "known": False},
        (600, 1, 1),
        (MAX_PAGE_ITEMS, 1, None, 0),
    ),
    (
        "a page that was not full changes nothing",
        {"limit": 8, "clean": 3},
        (5, 1, 1),
        (8, 1, None, 3),
    ),
    (
        "a full page within target counts as clean",
        {"limit": 8, "clean": 3},
        (8, 1, 1),
        (8, 1, None, 4),
    ),
    (
        "probe: one item more after PROBE_AFTER clean pages",
        {"limit": 8, "clean": PROBE_AFTER - 1},
        (8, 1, 1),
        (9, 1, None, 0),
    ),
    (
        "probe clears the ceiling",
        {"limit": 8, "ceiling": 9, "clean": PROBE_AFTER - 1},
        (8, 1, 1),
        (9, 1, None, 0),
    ),
    (
        "probe at the cap stays at the cap",
        {"limit": MAX_PAGE_ITEMS, "clean": PROBE_AFTER - 1},
        (MAX_PAGE_ITEMS, 1, 1),
        (MAX_PAGE_ITEMS, 1, None, 0),
    ),
    (
        "overshoot by one unit: one item less, and a ceiling",
        {"limit": 9, "clean": 5},
        (9, 2, 1),
        (8, 1, 9, 0),
    ),
    ("overshoot by more: back by the share it overshot", {"limit": 16}, (16, 3, 1), (5, 1, 16, 0)),
    ("overshoot never goes below one item", {"limit": 1}, (1, 2, 1), (1, 1, 1, 0)),
    ("overshoot at a two-unit target", {"limit": 16, "target": 2}, (16, 3, 1), (15, 2, 16, 0)),
]


@pytest.mark.parametrize(
    ("before", "page", "after"), [row[1:] for row in DECISIONS], ids=[row[0] for row in DECISIONS]
)
def test_each_page_decision(
    before: dict[str, Any], page: tuple[int, float, int], after: tuple[int, int, Any, int]
) -> None:
    size = PageSize(**before)
    returned = size.observe(*page)
    assert returned == size.limit
    assert (size.limit, size.target, size.ceiling, size.clean) == after


def test_unknown_size_stops_doubling_after_an_overshoot() -> None:
    size = PageSize(limit=8, known=False)
    assert size.observe(8, 1, 1) == 16
    assert size.observe(16, 2, 1) == 15
    assert not size.observe(15, 1, 1) > 15  # a clean page: no doubling any more
    assert size.known


@pytest.fixture
def two_units(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages stay at two units (the probe tests look at the limit alone)."""
    monkeypatch.setattr(pages, "MAX_TARGET", 2)


def clean_page(size: PageSize) -> int:
    """A full two-unit page of 18 items within target, holding several collections."""
    return size.observe(size.limit, 2, 8)


@pytest.mark.usefixtures("two_units")
def test_the_ceiling_holds_until_the_probe() -> None:
    size = PageSize(limit=20, target=2)
    assert size.observe(20, 3, 8) == 19  # 20 overshot
    assert size.observe(19, 3, 8) == 18  # and 19
    limits = [clean_page(size) for _ in range(PROBE_AFTER)]
    assert limits[:-1] == [18] * (PROBE_AFTER - 1)
    assert limits[-1] == 19  # tried again


def test_pages_of_a_single_collection_never_probe() -> None:
    size = PageSize(limit=9)
    limits = {size.observe(9, 1, 9) for _ in range(10 * PROBE_AFTER)}
    assert limits == {9}


@pytest.mark.usefixtures("two_units")
def test_a_probe_that_overshoots_waits_twice_as_long() -> None:
    size = PageSize(limit=18, target=2)
    waits = []
    for _ in range(12):  # 19 items always overshoot: each probe fails
        clean = 0
        while size.limit == 18:
            clean_page(size)
            clean += 1
        waits.append(clean)
        assert size.observe(19, 3, 8) == 18
    assert waits[:4] == [PROBE_AFTER, 2 * PROBE_AFTER, 4 * PROBE_AFTER, 8 * PROBE_AFTER]
    assert waits[-1] == MAX_PROBE_AFTER


@pytest.mark.usefixtures("two_units")
def test_a_probe_that_fits_brings_the_wait_back() -> None:
    size = PageSize(limit=18, target=2, probe_after=4 * PROBE_AFTER)
    for _ in range(4 * PROBE_AFTER):
        clean_page(size)
    assert (size.limit, size.probing) == (19, True)
    clean_page(size)  # the probe fitted
    assert (size.probe_after, size.probing) == (PROBE_AFTER, False)


def test_a_page_that_was_not_full_does_not_judge_a_probe() -> None:
    size = PageSize(limit=10, probing=True, probe_after=2 * PROBE_AFTER)
    size.observe(4, 1, 1)
    assert (size.probing, size.probe_after) == (True, 2 * PROBE_AFTER)


@pytest.mark.parametrize(
    ("target", "credit", "units", "after_target", "after_limit"),
    [
        (1, 2 * REGRET - 1.0, 1.0, 2, 16),  # enough read since the last large collection: grow
        (1, 2 * REGRET - 2.0, 1.0, 1, 8),  # not yet
        (2, 4 * REGRET - 2.0, 2.0, 4, 32),  # doubling again needs twice the credit
        (MAX_TARGET, 10_000.0, 1.0, MAX_TARGET, 8 * MAX_TARGET),  # never above MAX_TARGET
    ],
)
def test_pages_grow_where_collections_are_small(
    target: int, credit: float, units: float, after_target: int, after_limit: int
) -> None:
    size = PageSize(limit=8 * target, target=target, credit=credit)
    size.observe(5, units, 1)  # a page that was not full: the limit itself does not move
    assert (size.target, size.limit) == (after_target, after_limit)


def test_pages_do_not_grow_past_the_item_cap() -> None:
    size = PageSize(limit=MAX_PAGE_ITEMS, credit=10_000.0)
    size.observe(10, 1, 1)
    assert (size.target, size.limit) == (1, MAX_PAGE_ITEMS)


@pytest.mark.parametrize(
    ("target", "limit", "tail", "after_target", "after_limit", "credit_kept"),
    [
        (4, 32, 32, 1, 8, False),  # one key filled the page: back to one unit
        (4, 32, 8, 1, 8, False),  # its last collection filled a unit: back to one unit
        (4, 32, 7, 4, 32, True),  # less than a unit: stays
        (1, 8, 8, 1, 8, False),  # at one unit: the count of what was read starts again
        (1, 8, 7, 1, 8, True),
    ],
)
def test_a_large_collection_brings_pages_back_to_one_unit(
    target: int, limit: int, tail: int, after_target: int, after_limit: int, credit_kept: bool
) -> None:
    size = PageSize(limit=limit, target=target, credit=3.0)
    size.observe(limit, target, tail)
    assert (size.target, size.limit) == (after_target, after_limit)
    assert (size.credit > 3.0) is credit_kept
    assert (size.credit == 0.0) is not credit_kept


@dataclass
class Cost:
    units: float
    requests: int


def simulate(collections: list[int], item_bytes: int, *, through: bool = True) -> Cost:
    """What skip-pages pays on a table of ``collections`` (item counts), every item
    ``item_bytes``, in scan order, one segment: each page reads up to ``limit`` items (None: a
    scan-sized page, 1 MB) from where the last one stopped, or from the collection after its
    last key when it skips (never reading on as a scan, unless it may read ``through``)."""
    keys = [c for c, count in enumerate(collections) for _ in range(count)]
    reading = Reading(PageSize.for_items_of(item_bytes))
    reading.pages.may_read_on = through
    units, requests, at = 0.0, 0, 0
    limit: int | None = reading.pages.limit
    while at < len(keys):
        read = keys[at : at + (limit or MB // item_bytes)]
        cost = float(math.ceil(len(read) * item_bytes / 4096))
        units, requests = units + cost, requests + 1
        limit, skip = reading.after(read, cost, asked=limit)
        at += len(read)
        if skip:
            while at < len(keys) and keys[at] == read[-1]:
                at += 1
    return Cost(units, requests)


MB = 1024 * 1024


def scan(collections: list[int], item_bytes: int) -> Cost:
    """What a plain scan pays: pages of 1 MB."""
    items = sum(collections)
    per_page = MB // item_bytes
    return Cost(math.ceil(items * item_bytes / 4096), math.ceil(items / per_page))


@pytest.mark.parametrize(
    "collections",
    [
        [2] * 900,  # every collection small
        ([1] * 40 + [5000]) * 20,  # a large collection whenever pages have grown a little
        ([1] * 300 + [5000]) * 10,  # ... or a lot
        [1, 2, 3, 4] * 300,
        [9] * 500,  # collections about one unit each
        [50] * 500,  # collections of several units
    ],
    ids=["small", "large-often", "large-rarely", "mixed", "unit-sized", "large"],
)
def test_growing_costs_at_most_one_regret_more(
    collections: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    grown = simulate(collections, 500).units
    monkeypatch.setattr(pages, "MAX_TARGET", 1)  # the same controller, never growing
    one_unit = simulate(collections, 500, through=False).units  # ... nor reading through
    assert grown <= one_unit * (1 + 1 / REGRET)


def test_large_collections_cost_about_a_unit_each() -> None:
    """Items of 4096 // 9 bytes: 9 fill a unit exactly, 10 overshoot; probing stays rare."""
    collections = [50] * 2000
    assert simulate(collections, 4096 // 9).units <= 1.01 * len(collections)


def test_growing_reads_small_collections_at_about_a_scans_cost() -> None:
    collections = [1, 2, 3, 4] * 300
    assert simulate(collections, 500).units <= 1.05 * scan(collections, 500).units


def test_tail_of_counts_the_last_keys_run() -> None:
    assert tail_of([]) == 0
    keys = [{"S": k} for k in ("a", "a", "b", "c", "c", "c")]
    assert tail_of(keys) == 3
    assert tail_of(keys[:3]) == 1
    assert tail_of(keys[:2]) == 2


def test_a_page_asked_for_under_another_limit_does_not_move_the_limit() -> None:
    """Segments read in parallel share one PageSize: a page asked for before another segment's
    page changed the limit neither shrinks nor probes it; its collections still count."""
    pages = PageSize.for_items_of(400)  # 10 items a unit
    pages.met_large = True  # (pages grow by REGRET: as after a large collection)
    assert pages.limit == 10
    # Overshot (2 units for a 1-unit target), but asked for 20 items, not the present 10.
    assert pages.observe(20, 2.0, 1, asked=20) == 10
    assert pages.ceiling is None and pages.clean == 0
    before = pages.credit
    pages.observe(20, 2.0, 1, asked=20)
    assert pages.credit == before + 2.0  # its cost still counts towards larger pages
    # The same page asked for under the present limit is judged.
    assert pages.observe(10, 2.0, 1, asked=10) == 9
    assert pages.ceiling == 10


# --- reading on as a scan where skips save little ---------------------------------------------


def unit_pages(reading: Reading, first: int, count: int) -> list[bool]:
    """``count`` pages of one whole collection each (8 items of 512 bytes: a unit exactly),
    keys from ``first`` on: whether the next page reads on as a scan, after each."""
    after = []
    for key in range(first, first + count):
        assert reading.after([key] * 8, 1.0)[1]  # every page starts past the last collection
        after.append(reading.reading_on)
    return after


def test_a_trial_of_reading_on_starts_after_skips_past_full_pages() -> None:
    reading = Reading(PageSize.for_items_of(512))
    assert unit_pages(reading, 0, LOOK_AFTER) == [False] * (LOOK_AFTER - 1) + [True]
    assert reading.pages.trying and reading.trial and not reading.pages.through
    assert reading.pages.through_limit == 8 * FIRST_THROUGH


def test_a_trial_starts_where_small_pages_pay_more_than_their_items() -> None:
    """Pages of 3 items of 512 bytes (3/8 of a unit) that cost a unit each: no collection
    fills a page, but the items' share of a unit is under what the pages cost, so reading on
    may be cheaper: a trial after ``LOOK_AFTER`` such pages. Pages that cost what their items
    do (8 items of 512 bytes, a unit) start none."""
    rounding = Reading(PageSize.for_items_of(512))
    after = []
    for k in range(0, 2 * LOOK_AFTER, 2):
        rounding.after([k, k, k + 1], 1.0, asked=8)
        after.append(rounding.reading_on)
    assert after == [False] * (LOOK_AFTER - 1) + [True]
    full = Reading(PageSize.for_items_of(512))
    for k in range(0, 4 * LOOK_AFTER, 2):
        full.after([k] * 4 + [k + 1] * 4, 1.0, asked=8)
        assert not full.reading_on


def test_trials_whose_first_page_fails_inside_one_key_wait_twice_as_long() -> None:
    """1,000 keys of 3-12 items of 2-4 KB (a helper's table; documents in
    benchmarks/new_user_shapes.py): a one-item page costs a unit, more than its item, so
    skipping is ``promising``; a trial's first page, 2 units inside one key, fails. Trials
    every ``LOOK_AFTER`` pages read 1.12x skipping alone's units (over ``WASTE`` plus
    ``LEEWAY``); waiting twice as long after each such failure past the first, at most 1.02x,
    with no more requests than skipping's one a key (and a scan costs 5x)."""
    rng = random.Random(6)
    collections = [
        [rng.randint(2000, 4000) for _ in range(rng.randint(3, 12))] for _ in range(1000)
    ]
    for seed in range(4):
        order = list(range(1000))
        random.Random(seed).shuffle(order)
        sizes = [(key, size) for key in order for size in collections[key]]
        listed, alone = simulate_sized(sizes), simulate_sized(sizes, through=False)
        assert listed.units <= 1.02 * alone.units and listed.requests <= alone.requests + 2
        assert 5 * listed.units < sized_scan(sizes).units


def test_one_lost_trial_is_let_pass_and_each_later_doubles_the_wait() -> None:
    pages = PageSize.for_items_of(3000)
    assert pages.promising_after == LOOK_AFTER
    for _ in range(20):  # (skipping: a unit a key, known to within FLOOR / 20)
        pages.ledgers.skipped(1.0, 1, 1)
    waits = []
    for _ in range(3):
        pages.trying = True
        pages.read_through(2.0, 1, 2, asked=2)  # (2 units for a key: skipping costs 1)
        waits.append(pages.promising_after)
    assert waits == [LOOK_AFTER, 2 * LOOK_AFTER, 4 * LOOK_AFTER]
    pages.trying = True
    pages.read_through(0.5, 1, 2, asked=2)  # (failed, but cheaper a key than skipping)
    assert not pages.trying and pages.promising_after == LOOK_AFTER
    for _ in range(3):
        pages.trying = True
        pages.read_through(8.0, 2, 4, asked=4)  # (failed, dearer, but past its first key)
        assert not pages.trying and pages.promising_after == LOOK_AFTER


def test_a_trial_that_passes_reads_on_in_pages_growing_to_scan_sized() -> None:
    reading = Reading(PageSize.for_items_of(512))
    unit_pages(reading, 0, LOOK_AFTER)  # skipping: a unit a key; the next page reads on
    limits: list[int | None] = []
    key, limit = LOOK_AFTER, reading.pages.through_limit
    for _ in range(5):  # read on: still a unit a key
        count = (limit or MB // 512) // 8
        page = [k for k in range(key, key + count) for _ in range(8)]
        key += count
        limit, skip = reading.after(page, float(count))
        assert skip
        limits.append(limit)
    first = 8 * FIRST_THROUGH
    # Scan-sized pages, each followed by a skipping page while skipping's keys are few.
    assert limits == [first * GROWTH, first * GROWTH**2, None, 8, None]
    assert reading.pages.through and not reading.pages.trying
    assert reading.pages.read_on_after == LOOK_AFTER and not reading.pages.small


def test_a_trial_into_large_collections_ends_and_the_next_waits_twice_as_long() -> None:
    """Collections of 50 items (6.25 units): skipping pays a unit a key, reading on 6.25. The
    trial's first page (16 items of one collection: 2 units for a key) costs more than
    skipping's rate allows, even with its error after 8 pages, and skipping starts again at a
    unit. The next trial waits twice as many skips."""
    reading = Reading(PageSize.for_items_of(512))
    for key in range(LOOK_AFTER):
        reading.after([key] * 8, 1.0)
    assert reading.pages.trying and reading.pages.through_limit == 16
    reading.after([100] * 16, 2.0)
    assert not reading.pages.through and not reading.pages.trying and not reading.reading_on
    assert (reading.pages.limit, reading.pages.look_after) == (8, 2 * LOOK_AFTER)
    assert reading.pages.ledgers.excess() == pytest.approx(2 - 1)
    # (The page that ended it counts: its last collection filled a unit.)
    assert unit_pages(reading, 200, 2 * LOOK_AFTER - 1) == [False] * (2 * LOOK_AFTER - 2) + [True]


def test_a_trial_page_that_ends_its_segment_counts_and_fails_the_trial() -> None:
    """As above, but the trial's page is its segment's last (its collection ends the
    segment): it counts all the same (what it cost beyond skipping is reading on's), the trial
    fails and the next waits twice as long, in every segment. Left uncounted, the next
    segment tried again at once: auto's readers read four scan-sized trial pages on 1,200
    heavy-tailed keys where one reader read one (896 RCU against 794 now, 5 runs)."""
    pages = PageSize.for_items_of(512)
    ended, other = Reading(pages), Reading(pages)
    for key in range(LOOK_AFTER):
        ended.after([key] * 8, 1.0)
    assert pages.trying and ended.trial
    ended.end([100] * 16, 2.0, asked=16)
    assert not pages.trying and not pages.through and not ended.trial
    assert pages.look_after == 2 * LOOK_AFTER and pages.ledgers.excess() == pytest.approx(1)
    assert unit_pages(other, 200, 2 * LOOK_AFTER) == [False] * (2 * LOOK_AFTER - 1) + [True]


def test_a_trial_page_that_ends_its_segment_passes_no_trial() -> None:
    """A trial's page that ends its segment and costs what skipping does counts, but passes
    nothing: the short rest of a segment shows little, and every segment reading on on its
    word would pay scan-sized pages (8 readers on the heavy-tailed keys: 1.3x the units)."""
    pages = PageSize.for_items_of(512)
    ended, other = Reading(pages), Reading(pages)
    for key in range(LOOK_AFTER):
        ended.after([key] * 8, 1.0)
    ended.after([100] * 8 + [101] * 8, 2.0, asked=16)  # a first page that passes
    assert pages.passed == 1 and ended.reading_on
    ended.end([102] * 8 + [103] * 8, 2.0, asked=16)
    assert not pages.through and not pages.trying and pages.passed == 1
    assert pages.ledgers.through_keys == 4
    assert not other.reading_on


def test_a_trial_waits_until_waste_of_all_read_covers_what_reading_on_cost_beyond() -> None:
    """Reading on cost 150 units beyond skipping's rate (200 units for 50 keys, skipping a
    unit a key): no trial until ``WASTE`` of all read, with ``LEEWAY``, covers it."""
    pages = PageSize.for_items_of(512)
    pages.ledgers.skip_units, pages.ledgers.skip_keys, pages.ledgers.skip_pages = 100.0, 100, 100
    pages.ledgers.through_units = pages.ledgers.through_cost = 200.0
    pages.ledgers.through_keys = 50
    reading = Reading(pages)
    key = 0
    while not reading.reading_on:
        unit_pages(reading, key, 1)
        key += 1
    assert pages.ledgers.excess() == pytest.approx(150)
    total = pages.ledgers.skip_units + pages.ledgers.through_units
    assert (150 - LEEWAY) / WASTE <= total < (150 - LEEWAY) / WASTE + 1


def test_unit_sized_collections_are_read_in_a_scans_requests_and_units() -> None:
    """The table where skip-pages sent a request a collection for a scan's read units: each
    collection about a unit, ending with its page (or one item later)."""
    for collections in ([8] * 2000, [8 if k % 5 else 9 for k in range(3000)]):
        listed = simulate(collections, 500)
        assert listed.units <= 1.02 * scan(collections, 500).units
        assert listed.requests <= 0.05 * simulate(collections, 500, through=False).requests


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([1, 3, 7, 8, 9, 16, 50, 400]), st.integers(1, 300)),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([100, 450, 500, 1000]),
)
def test_reading_on_costs_at_most_its_share_more_than_skipping(
    runs: list[tuple[int, int]], item_bytes: int
) -> None:
    """Whatever the mix and order of collection sizes (runs of ``count`` collections of
    ``size`` items), trials of reading on as a scan cost at most ``WASTE`` more read units
    than skipping always, plus a scan-sized page (1 MB, 256 units) where the table changes
    under them (in scan order, the keys' hash order, a table's shape does not change)."""
    collections = [size for size, count in runs for _ in range(count)]
    listed = simulate(collections, item_bytes)
    skipping = simulate(collections, item_bytes, through=False)
    assert listed.units <= (1 + WASTE) * skipping.units + MB / 4096 * len(runs)


def simulate_segments(collections: list[int], item_bytes: int, segments: int) -> Cost:
    """As :func:`simulate`, with the collections split among ``segments`` segments that share
    one PageSize: each round, every segment asks for its next page before any answer comes
    back (as readers in parallel do), then the answers come in turn."""
    shared = PageSize.for_items_of(item_bytes)
    per = math.ceil(len(collections) / segments)
    parts = [collections[i : i + per] for i in range(0, len(collections), per)]
    tables = [[c for c, count in enumerate(part) for _ in range(count)] for part in parts]
    readings = [Reading(shared) for _ in parts]
    at = [0] * len(parts)
    limits: list[int | None] = [shared.limit] * len(parts)
    units, requests = 0.0, 0
    while any(at[n] < len(keys) for n, keys in enumerate(tables)):
        asked = [
            (n, keys[at[n] : at[n] + (limits[n] or MB // item_bytes)])
            for n, keys in enumerate(tables)
        ]
        for n, read in asked:
            if not read:
                continue
            cost = float(math.ceil(len(read) * item_bytes / 4096))
            units, requests = units + cost, requests + 1
            at[n] += len(read)
            if at[n] >= len(tables[n]):
                readings[n].end(read, cost, asked=len(read))
                continue
            limits[n], skip = readings[n].after(read, cost, asked=len(read))
            while skip and at[n] < len(tables[n]) and tables[n][at[n]] == read[-1]:
                at[n] += 1
    return Cost(units, requests)


@pytest.mark.parametrize("segments", [4, 32])
def test_segments_in_parallel_try_one_at_a_time(segments: int) -> None:
    """One segment runs a trial while the others skip: where collections are large, trials
    cost what one segment's pages cost, not every segment's; where they are about a unit, every
    segment reads through once the trial has passed."""
    large = [50] * 2000
    alone = simulate(large, 500, through=False)
    assert simulate_segments(large, 500, segments).units <= 1.02 * alone.units
    unit = [8] * 4000
    listed = simulate_segments(unit, 500, segments)
    assert listed.units <= 1.03 * scan(unit, 500).units
    assert listed.requests <= 0.2 * len(unit)


def read_on_pages(reading: Reading, first: int, count: int, pages: int = 1) -> int:
    """``pages`` pages of ``count`` whole collections of 8 items of 512 bytes (a unit each),
    keys from ``first`` on, asked for as pages read on are (the trial's, or ``through``'s
    limit): the next key."""
    for _ in range(pages):
        page = [k for k in range(first, first + count) for _ in range(8)]
        first += count
        reading.after(page, float(count), asked=len(page))
    return first


def test_once_a_trial_passes_its_segment_reads_on_first_and_others_join_as_pages_pass() -> None:
    """Where a reading on fails, every segment reading on loses a page of it, and a trial's two
    small pages say little of larger ones (on 3,000 keys of Pareto counts and sizes auto's
    readers all read on after each trial: 1.1-1.4x one reader's units; now 1.0-1.07x). So
    the trial's segment reads on alone, one more joins for each page read on that passes
    after, and a segment that ends gives its place to one that starts or skips."""
    pages = PageSize.for_items_of(512)
    trial, second, third = Reading(pages), Reading(pages), Reading(pages)
    unit_pages(trial, 0, LOOK_AFTER)
    key = read_on_pages(trial, 100, 2, pages=2)  # (the trial's two pages pass)
    assert pages.through and trial.reading_on and not pages.small
    assert unit_pages(second, 1000, 3) == [False] * 3  # (still skipping, a unit a page)
    assert pages.limit == 8
    key = read_on_pages(trial, key, 8)  # a third page passes: one more may read on
    assert unit_pages(second, 1003, 1) == [True] and second.reading_on
    assert unit_pages(third, 2000, 1) == [False]
    trial.end([key] * 8, 1.0, asked=8)  # the trial's segment ends: its place is free
    assert unit_pages(third, 2001, 1) == [True]


def test_a_segment_whose_skipping_page_skipped_nothing_joins_at_once() -> None:
    """A waiting segment whose own page handed out ``LOOK_AFTER`` keys or more, an item each,
    skipped nothing there: it joins at once, whatever the count (500 keys of 24 KB, then
    15,000 one-item keys in scan order: its 26-key pages of a unit cost 1.09x one reader's
    units, where a scan's pages round up less). A page of fewer, or with a collection of two
    items, waits its turn."""
    pages = PageSize.for_items_of(512)
    trial, waiting, single = Reading(pages), Reading(pages), Reading(pages)
    unit_pages(trial, 0, LOOK_AFTER)
    read_on_pages(trial, 100, 2, pages=2)
    assert pages.through and trial.reading_on
    waiting.after([1000, 1001, 1002, 1002, *range(1003, 1010)], 1.0, asked=11)
    assert not waiting.reading_on
    waiting.after(list(range(1010, 1010 + LOOK_AFTER - 1)), 1.0, asked=LOOK_AFTER - 1)
    assert not waiting.reading_on
    single.after(list(range(2000, 2000 + LOOK_AFTER)), 1.0, asked=LOOK_AFTER)
    assert single.reading_on


def test_where_pages_can_grow_no_more_every_segment_reads_on_at_once() -> None:
    """Where collections proved small (pages that could no longer double go on as a scan:
    ``PageSize.small``), every segment joins at its next page: nothing large was met."""
    pages = PageSize.for_items_of(40)
    first, other = Reading(pages), Reading(pages)
    key = 0
    while not pages.through:
        first.after(list(range(key, key + pages.limit)), float(pages.target))
        key += pages.limit
    assert pages.small
    other.after([10**6], 1.0)
    assert other.reading_on


def test_each_time_every_segment_read_on_and_went_back_the_next_trial_waits_twice_as_long() -> None:
    """Trials on skipping pages that cost more than their items wait ``promising_after`` pages:
    twice as many for each time every segment read on, then went back (a trial's small pages
    passed where larger ones failed: heavy-tailed collection counts restarted trials every 8
    skipping pages)."""
    pages = PageSize.for_items_of(3000)
    for _ in range(20):  # (skipping: a unit a key)
        pages.ledgers.skipped(1.0, 1, 1)
    waits = [pages.promising_after]
    for _ in range(3):
        pages.through = True
        pages.read_through(64.0, 1, 2, asked=2)  # (a page read on far dearer than skipping)
        waits.append(pages.promising_after)
    assert pages.went_back == 3 and not pages.through
    assert waits == [LOOK_AFTER, 2 * LOOK_AFTER, 4 * LOOK_AFTER, 8 * LOOK_AFTER]


def test_items_larger_than_the_average_are_priced_by_what_they_cost_past_a_bound() -> None:
    """The table's average item is 1,000 bytes, but here collections hold ten items of 20 KB:
    a skip reads one (5 units a key). Read on, pages are priced at the average until what they
    cost exceeds that by ``MAX_TARGET`` units; then at what they cost, and the trial ends."""
    reading = Reading(PageSize.for_items_of(1000))  # 4 items a unit, by the average
    for key in range(LOOK_AFTER):  # one 20 KB item a page: 5 units, full
        reading.after([key], 5.0)
    assert reading.reading_on and reading.pages.trying
    key, pages_read = 100, 0
    while reading.reading_on:
        limit = reading.pages.through_limit
        assert limit is not None
        page = [key + i // 10 for i in range(limit)]
        reading.after(page, 5.0 * len(page))
        key, pages_read = page[-1] + 1, pages_read + 1
    assert pages_read == 2 and not reading.pages.through
    assert reading.pages.ledgers.through_cost - reading.pages.ledgers.through_units > MAX_TARGET


def simulate_sized(
    sizes: list[tuple[int, int]],
    *,
    through: bool = True,
    described: bool = False,
    curve: bool = True,
) -> Cost:
    """What skip-pages pays on a table of items ``(key, bytes)`` in scan order, one segment:
    each page reads up to ``limit`` items, or up to 1 MB (None), and costs their bytes rounded
    up to the next 4 KB. ``described``: the listing knows the table's size (as from
    DescribeTable: ``PageSize.few_pages``), not only its average item's. ``curve``: skipping
    pages read whole items (False: as where several segments share the limit, a unit's)."""
    total = sum(size for _, size in sizes)
    reading = Reading(PageSize.for_items_of(total / len(sizes), total if described else 0.0))
    reading.pages.may_read_on = through
    units, requests, at = 0.0, 0, 0
    limit: int | None = reading.pages.limit
    while at < len(sizes):
        end, held = at, 0
        while end < len(sizes) and (end - at < limit if limit else held < MB):
            held, end = held + sizes[end][1], end + 1
        read = sizes[at:end]
        cost = float(max(1, math.ceil(sum(size for _, size in read) / 4096)))
        keys = [key for key, _ in read]
        units, requests = units + cost, requests + 1
        whole = [size for _, size in read] if reading.whole_items else None
        if not (curve or reading.reading_on):
            whole = None
        limit, skip = reading.after(keys, cost, asked=limit, sizes=whole)
        at = end
        while skip and at < len(sizes) and sizes[at][0] == keys[-1]:
            at += 1
    return Cost(units, requests)


def sized_scan(sizes: list[tuple[int, int]]) -> Cost:
    total = sum(size for _, size in sizes)
    return Cost(math.ceil(total / 4096), math.ceil(total / MB))


def test_where_item_sizes_vary_trials_read_on_in_pages_of_the_average() -> None:
    """A quarter of the collections hold items of 3 KB, the rest tiny ones (40 bytes), in ten
    orders: the skipping pages' item count fits the large items (one a page), so reading on
    starts from a unit's items at the table's average size, priced at that average. Skipping
    costs 1.12x to 1.63x a scan here; the listing reads 0.98x to 1.01x a scan's units (it was
    1.02x to 1.43x, 1.19x on average, with the short windows of reading through of before),
    in at most twice a scan's requests and ten more in seven orders of ten; in three, the
    first skipping pages cost less a key than the later ones (before the limit learned the
    3 KB items), reading on stopped after a page, and it took 22 to 25 requests for 3 or 4.
    Where skipping pages ask for the limit that costs least a key (``PageSize.curve``),
    skipping alone costs 0.82x to 1.16x a scan; the listing 0.95x to 1.0x (0.99x of its units
    before, over the ten), and more requests only in one order, where skipping alone saves
    15% and the listing, skipping part of the way, 4.7% (144 requests)."""
    ratios, over = [], []
    for seed in range(10):
        rng = random.Random(seed)
        collections = [
            (rng.choice([1, 1, 1, 2, 3, 5, 15]), rng.choice([40, 40, 40, 3040]))
            for _ in range(1000)
        ]
        sizes = [(key, size) for key, (count, size) in enumerate(collections) for _ in range(count)]
        listed, scan = simulate_sized(sizes), sized_scan(sizes)
        saved = simulate_sized(sizes, through=False).units <= (1 - WASTE) * scan.units
        over.append(listed.requests > 2 * scan.requests + 10 and not saved)
        assert listed.requests <= 2 * scan.requests + 20 or saved
        ratios.append(listed.units / scan.units)
    assert max(ratios) <= 1.02 and sum(over) <= 3


def test_heavy_tailed_item_sizes_read_on_at_a_scans_cost() -> None:
    """1,000 keys of 1 to 400 items and 50 bytes to 40 KB each (both Pareto), in ten orders:
    skipping costs 1.8x to 4.4x a scan (small pages pay the rounding, and a page's few keys
    say little of the next), so the listing reads on as a scan, within 1.05x of its units
    (0.92x to 1.03x) and at most twice its requests and ten more (12 for a scan's 1 or 2), but
    for one order (13 for 1: a held page of 64 units before the scan-sized ones). Skipping
    pages that ask for the limit that costs least a key (``PageSize.curve``: 20 to 40 items,
    not one) cost 0.67x to 1.12x a scan; on these tables of one or two scan pages the listing
    still reads on after its first trial, whose small pages pass (0.90x to 1.03x a scan, at
    most 1.44x skipping alone), but in one order of ten (0.79x a scan, in 63 requests: it
    saved more than ``WASTE``)."""
    over = []
    for seed in range(10):
        rng = random.Random(seed)
        sizes = [
            (key, min(40_000, int(50 * rng.paretovariate(1.2))))
            for key in range(1000)
            for _ in range(min(400, int(rng.paretovariate(1.25))))
        ]
        listed, scan = simulate_sized(sizes), sized_scan(sizes)
        skipping = simulate_sized(sizes, through=False)
        assert listed.units <= 1.05 * scan.units and listed.units <= 1.5 * skipping.units, seed
        saved = listed.units <= (1 - WASTE) * scan.units
        over.append(listed.requests > 2 * scan.requests + 10 and not saved)
        assert listed.requests <= 2 * scan.requests + 12 or saved, seed
    assert sum(over) <= 1


def heavier_tailed(seed: int) -> list[tuple[int, int]]:
    """1,200 keys of Pareto item counts (shape 0.8, up to 400) and sizes (shape 0.7, 50 B-40
    KB), each key's items in a random order, the keys in an order ``seed`` draws."""
    rng = random.Random(seed)

    def pareto(alpha: float, low: int, high: int) -> int:
        return int(min(high, low * (1 - rng.random()) ** (-1 / alpha)))

    sizes = [(k, pareto(0.7, 50, 40_000)) for k in range(1200) for _ in range(pareto(0.8, 1, 400))]
    rng.shuffle(sizes)
    sizes.sort(key=lambda pair: hash((pair[0], seed)))  # (a key's items together)
    return sizes


def test_heavier_tailed_first_items_do_not_let_reading_on_run_past_its_bound() -> None:
    """1,200 keys of Pareto item counts (shape 0.8, up to 400) and sizes (shape 0.7, 50 B-40 KB),
    each key's items in a random order, in ten orders: skipping costs a third of a scan, but
    one skipping page that met a 40 KB first item doubles skipping's rate and its error, and
    let pages read on at three times skipping's cost a key pass, scan-sized ones among them
    (1.24x and 1.40x skipping's units in two orders of ten; a DynamoDB Local table of this
    shape read 1.49x). While skipping's rate is unsettled (``Ledgers.settled``), reading on
    stops once it cost beyond skipping more than its bound: 1.09x to 1.17x. (The issue's
    1.05x is not met here: each order still pays one trial's scan-sized page.) Skipping pages
    that ask for the limit that costs least a key (``PageSize.curve``) cost a quarter of a
    scan, 0.87x what they did; the listing 0.67x to 1.06x what it did, within the bound (a
    scan-sized page, ``WASTE`` and ``LEEWAY``) of skipping alone: 0.87x to 1.26x, 1.09x on
    average (1.09x before)."""
    ratios = []
    for seed in range(10):
        sizes = heavier_tailed(seed)
        listed, skipping = simulate_sized(sizes), simulate_sized(sizes, through=False)
        assert skipping.units < sized_scan(sizes).units / 3
        bound = WASTE * listed.units + LEEWAY + SCAN_PAGE_BYTES / 4096
        assert listed.units <= skipping.units + bound, seed
        ratios.append(listed.units / skipping.units)
    assert max(ratios) <= 1.3 and sum(ratios) / len(ratios) <= 1.12, ratios


def test_a_trials_unit_of_items_keeps_to_the_item_cap() -> None:
    """Items of 2 bytes on average: a unit would hold 2,048, but no page asks for more than
    ``MAX_PAGE_ITEMS`` (the skipping pages go back to it when a trial fails)."""
    size = PageSize.for_items_of(2.0)
    size.ledgers.skip_keys, size.skips = 1, size.look_after
    assert size.skip_past(size.limit) is False and size.trying
    assert size.unit_items == MAX_PAGE_ITEMS


def test_before_any_large_collection_pages_double_each_page() -> None:
    """Single-item collections of 500 bytes: until a page's last collection fills a unit,
    pages double as soon as what was read covers the new target (at each page, once past the
    first unit); after one, only once ``REGRET`` times the new target was read since."""
    reading = Reading(PageSize.for_items_of(500))
    key, limits = 0, []
    for _ in range(4):
        limit = reading.pages.limit
        cost = float(math.ceil(limit * 500 / 4096))
        limits.append(reading.after(list(range(key, key + limit)), cost)[0])
        key += limit
    assert limits == [8, 16, 32, 64]
    reading.after([key] * 8, 1.0)  # a large collection: one unit again, and REGRET from now
    assert (reading.pages.limit, reading.pages.met_large) == (8, True)
    assert reading.after([key + 1, key + 2], 1.0)[0] == 8


def test_where_pages_can_grow_no_more_they_go_on_as_a_scan_and_say_so() -> None:
    """Single-item collections of 40 bytes: pages grow to ``MAX_PAGE_ITEMS`` items, then go
    on as a scan (scan-sized once twice as many keys were read on as skipping met)."""
    reading = Reading(PageSize.for_items_of(40))
    key = 0
    limit: int | None = reading.pages.limit
    limits: list[int | None] = []
    for _ in range(20):
        count = limit or MB // 40
        limit, _ = reading.after(list(range(key, key + count)), count * 40 / 4096, asked=limit)
        limits.append(limit)
        key += count
    assert reading.pages.through and reading.pages.small and None in limits
    assert how_it_read(reading.pages).endswith(
        "keys: its collections proved small (a page read on still skips the rest of the "
        "collection it ends in)"
    )
    assert how_it_read(reading.pages).startswith("read on as a scan after ")
    # A page read on that costs far more than skipping would (a large collection): back to
    # skipping, and a later note says it went back.
    reading.pages.read_through(10_000.0, 1, 400, None)
    assert not reading.pages.through and how_it_read(reading.pages) == ""
    reading.pages.through = True
    assert " (and went back to skipping once before, where pages met large collections): " in (
        how_it_read(reading.pages)
    )


def test_where_pages_could_no_longer_double_they_go_on_as_a_scan_at_once() -> None:
    """5,000 single-item keys of 17 bytes (the aws-samples loader's number table): pages of 1,
    1, 2 and 4 units; the next would hold 1,824 items, above ``MAX_PAGE_ITEMS``, so it reads on
    as a scan rather than growing to 1,000 items first (8 requests for a scan's 1, and 24 units
    for its 21; now 6 and 21)."""
    sizes = [(key, 17) for key in range(5000)]
    listed, scan = simulate_sized(sizes), sized_scan(sizes)
    assert scan == Cost(21, 1)
    assert listed.requests <= 6 and listed.units <= scan.units


@pytest.mark.parametrize(("keys", "restarts"), [(6, True), (3, False)])
def test_a_trial_that_failed_on_enough_keys_starts_again_once_skipping_costs_as_much(
    keys: int, restarts: bool
) -> None:
    """Skipping's first pages cost less a key (one unit) than its later ones (1.5): a trial
    that failed against the first pages, having read on over ``LOOK_AFTER`` keys, starts
    again, scan-sized, as soon as those keys pass against skipping's rate as it now stands,
    rather than after ``look_after`` (doubled: 16) more skips. One that read on over fewer
    keys proves little, and waits."""
    reading = Reading(PageSize.for_items_of(2000))
    key = 0
    for _ in range(LOOK_AFTER):  # one unit a key, each collection filling its page
        reading.after([key, key], 1.0)
        key += 1
    assert reading.reading_on and reading.pages.trying
    reading.after([key, key, key + 1, key + 1], 2.0, asked=4)  # the trial's first page passes
    key += 2
    page = [key + i * keys // 16 for i in range(16)]
    assert reading.after(page, 8.0, asked=16) == (reading.pages.limit, True)  # ... its second not
    key += keys
    assert not reading.reading_on and not reading.pages.trying
    assert reading.pages.ledgers.through_keys == 2 + keys
    assert reading.pages.look_after == 2 * LOOK_AFTER
    limit, _ = reading.after([key, key], 1.5)
    assert reading.reading_on is restarts
    assert (limit is None) is restarts


def test_where_collections_proved_small_no_skipping_page_samples_between_scan_pages() -> None:
    """Reading on because collections proved small, every scan-sized page is followed by
    another (on 220,000 single-item keys: 41 requests against a scan's 29, not 51); reading on
    after a trial, every other one is followed by a skipping page while skipping's pages are
    few (``SAMPLE_PAGES``)."""
    reading = Reading(PageSize.for_items_of(40))
    key = 0
    limit: int | None = reading.pages.limit
    while limit is not None:
        count = limit
        limit, _ = reading.after(list(range(key, key + count)), count * 40 / 4096, asked=limit)
        key += count
    assert reading.pages.small
    for _ in range(6):
        count = MB // 40
        limit, _ = reading.after(list(range(key, key + count)), 256.0, asked=None)
        key += count
        assert limit is None and reading.reading_on
    tried = PageSize.for_items_of(40)
    tried.through = True
    assert [tried.sampling() for _ in range(4)] == [True, False, True, False]


def test_a_large_page_that_costs_far_more_a_key_ends_reading_on() -> None:
    """Reading on, over all, at a key a unit (skipping: 1.75): then a scan-sized page of 27
    collections of 400 items (10 units each). Over all still within what passes, but the page
    alone costs more than twice that a key: the table changed under it, and skipping starts
    again."""
    pages = PageSize.for_items_of(100)
    for _ in range(400):  # a unit a key, and a page a key in two a key and a half
        pages.ledgers.skipped(1.0, 1, 10)
        pages.ledgers.skipped(2.5, 1, 25)
    pages.ledgers.through_units = pages.ledgers.through_cost = 2000.0
    pages.ledgers.through_keys, pages.through, pages.unit_items = 2000, True, 40
    pages.read_through(256.0, 27, 10_485)
    assert pages.ledgers.passing() and not pages.through  # (over all it would pass)
    assert how_it_read(pages) == ""


@pytest.mark.parametrize("count", [12, 16, 50])
def test_where_skipping_pages_agree_reading_on_is_held_to_their_rate(count: int) -> None:
    """Collections of ``count`` items of 450 bytes (1.3 to 5.5 units): skipping pays a unit a
    key, and its pages all say so, so its rate's error is small and reading on, 1.3x to 5.5x
    that a key, ends at its trial's first pages: within 5% of skipping alone."""
    collections = [count] * 297
    listed, skipping = simulate(collections, 450), simulate(collections, 450, through=False)
    assert listed.units <= 1.05 * skipping.units


def test_pages_read_on_ask_for_what_a_unit_holds_where_they_are_read() -> None:
    """Single-item collections of 100 bytes, the table's average raised by a few 300 KB
    items, and the last skipping page's limit lowered by one of them: a unit's items taken
    from that limit are a fraction of what a unit holds. A page read on that fills its Limit
    at a fraction of its aim says how many a unit holds, and the next asks for that many
    (numeric-30k in benchmarks/new_user_shapes.py: 33 requests against a scan's 6, now 22)."""
    pages = PageSize.for_items_of(190)
    pages.ledgers.skipped(101.0, 1000, 1000)
    pages.through, pages.small, pages.unit_items = True, True, 9
    pages.through_target = 2 * MAX_TARGET
    reading = Reading(pages, reading_on=True)
    asked = pages.through_limit
    assert asked == 9 * MAX_TARGET
    limit, _ = reading.after(list(range(asked)), asked * 100 / 4096, asked=asked)
    assert pages.unit_items == 40 and limit == 40 * MAX_TARGET  # (4096 // 100 a unit)
    # A page that did not fill its Limit (the segment's end) says nothing of a unit's items.
    reading.after(list(range(30)), 1.0, asked=limit)
    assert pages.unit_items == 40


# --- collections whose first item is ddbkeys' own (a marker that sorts first) -----------------


def test_a_marker_that_leads_its_collection_is_read_with_its_first_item() -> None:
    """Collections of one 30 KB item, each led by its marker (as the default marker sorts first
    under every key type): items average 15 KB, a limit of one. The first page reads a lone
    marker, and the next goes on in that collection (its one item), counted with the page
    before, not as a skip of its own; from then on each skipping page asks for one item
    more, marker and item at once: a page and 8 units a key, as without markers, and the pages
    judged as of one item (the limit stays at one)."""
    reading = Reading(PageSize.for_items_of(15_000))
    assert reading.pages.limit == 1
    assert reading.after([0], 1.0, asked=1, lead=1, unhanded=True) == (1, True)
    assert reading.after([0], 8.0, asked=1) == (2, True)  # the rest of the collection
    ledgers = reading.pages.ledgers
    assert (ledgers.skip_pages, ledgers.skip_keys, ledgers.skip_units) == (1, 1, 9.0)
    limit: int | None = 2
    for key in range(1, 6):
        limit, _ = reading.after([key, key], 8.0, asked=limit, lead=1)
        assert limit == 2 and reading.pages.limit == 1
    assert (ledgers.skip_pages, ledgers.skip_keys, ledgers.skip_units) == (6, 6, 49.0)
    # A collection without a marker (lead 0): the next page asks for the limit alone.
    assert reading.after([6], 8.0, asked=2, lead=0)[0] == 1


def test_a_continuation_after_a_page_read_on_counts_for_reading_on() -> None:
    """A page read on that ended on a lone marker, and the trial failed: the next page goes on
    in that collection (asking for no extra); where it reads that collection's rest alone, it
    counts for reading on, not as a skipping page."""
    reading = Reading(PageSize.for_items_of(512))
    for key in range(LOOK_AFTER):
        reading.after([key] * 8, 1.0)
    assert reading.reading_on
    ledgers = reading.pages.ledgers
    skipped = (ledgers.skip_units, ledgers.skip_keys, ledgers.skip_pages)
    # 100 keys of 8 items, 50 units a key: the trial fails; its last collection shows only a
    # marker, so the next page goes on in it for one item
    page = [k for k in range(100, 116) for _ in range(8)][:16]
    limit, _ = reading.after(page, 100.0, asked=16, unhanded=True)
    assert not reading.reading_on and limit == reading.pages.limit == 8  # (no extra)
    through = ledgers.through_cost
    reading.after([101], 1.0, asked=8)  # the collection's rest alone (its last item)
    assert ledgers.through_cost == through + 1.0
    assert (ledgers.skip_units, ledgers.skip_keys, ledgers.skip_pages) == skipped
    # A page that goes on past that collection is a skipping page as any other.
    reading.after([102, 102], 1.0, asked=8, unhanded=True)
    reading.after([102, 103, 103], 1.0, asked=8)
    assert (ledgers.skip_keys, ledgers.skip_pages) == (skipped[1] + 2, skipped[2] + 2)


def test_a_failed_trial_keeps_the_limit_skipping_learned() -> None:
    """The limit learned down from the table's average (a marker in every collection makes the
    average half a data item) is kept after a trial fails: it is not set back to the average's,
    which would overshoot again."""
    reading = Reading(PageSize.for_items_of(2000))  # 2 items a unit by the average
    limit: int | None = reading.pages.limit
    assert limit == 2
    for key in range(LOOK_AFTER + 2):
        limit, _ = reading.after([key] * 2, 2.0 if key == 0 else 1.0, asked=limit)
        if reading.reading_on:
            break
    assert reading.pages.limit == 1 and reading.reading_on
    reading.after([200] * 4, 40.0, asked=limit)  # the trial costs far more a key: it fails
    assert not reading.reading_on and reading.pages.limit == 1


def test_a_key_counts_in_the_page_that_hands_it_out() -> None:
    """A page that ends in a collection on its marker alone has not handed that key out: the
    next page, which goes on in it, counts it, and no page counts it twice (counting it in
    both, or in the first, made a trial's first page read on look a key short)."""
    reading = Reading(PageSize.for_items_of(512))
    ledgers = reading.pages.ledgers
    reading.after([1, 1, 2], 1.0, asked=8, lead=1, unhanded=True)  # 2: its marker alone
    assert ledgers.skip_keys == 1
    reading.after([2, 2, 3, 3], 1.0, asked=8)  # goes on in 2: counts 2 and 3
    assert ledgers.skip_keys == 3
    reading.after([4, 4, 5], 1.0, asked=8)  # a fresh page, handed out to its end
    assert ledgers.skip_keys == 5


def test_skipping_is_priced_at_its_present_limit_where_that_fell() -> None:
    """Skipping's pages handed out 200 keys for 40 units (0.2 a key), 4 keys a page of 10
    items; then a large item brought its limit down to 2 items a unit. Pages of 2 items hand out
    about a key each (0.8 at 0.4 keys an item: one at least, as a skipping page starts a
    collection), so skipping costs a unit a key from here, and reading on is judged by that."""
    ledgers = PageSize.for_items_of(300).ledgers
    for _ in range(40):
        ledgers.skipped(1.0, 5, 12)
    ledgers.through_units = ledgers.through_cost = 30.0
    ledgers.through_keys = 60  # 0.5 a key: 2.5x skipping's rate over all
    assert ledgers.skip_rate() == pytest.approx(40 / 200)
    assert not ledgers.passing()
    ledgers.unit_items = 12  # the limit it had: no more than the rate over all
    assert ledgers.skip_rate() == pytest.approx(40 / 200)
    ledgers.unit_items = 2
    assert ledgers.skip_rate() == 1.0 and ledgers.passing()


def test_a_skipping_page_sets_the_limit_skipping_is_priced_at() -> None:
    pages = PageSize.for_items_of(300)
    pages.limit = 3
    pages.skip_past(0)
    assert pages.ledgers.unit_items == 3


def test_heavy_tailed_item_sizes_in_many_orders_read_on_within_a_few_requests() -> None:
    """benchmarks/shapes.py's heavy-tailed table (1,000 keys, Pareto item counts 1-400 and
    sizes 50 B-40 KB, random.Random(35)) in 20 scan orders (other key hashes, as another
    prefix gives it). Where a large item brought skipping's limit down, its first pages' rate
    (0.22 units a key) had failed trial after trial of reading on, though skipping now cost a
    unit a key: 43, 70 and 85 requests where a scan takes 2, and 1.04x a scan's units; seven
    orders of 20 over twice a scan's requests and ten while saving under 5%. Priced at the
    present limit: at most 46 requests and 1.03x, five orders over (a key of 90 items among
    the first six read on still ends a trial: skipping does save on it). As the listing reads
    it, knowing the table's size (``described``): a scan reads it in a few pages, and pages
    read on do not ask for whole items there (``Reading.whole_items``). Skipping pages that
    ask for the limit that costs least a key (``PageSize.curve``) cost 0.84x to 1.14x a scan
    alone, and the listing 0.92x to 1.03x a scan (0.99x of what it read before, over the 20
    orders), in at most 43 requests; six orders over (15 to 43 requests, saving 1.0% to 4.5%).
    """
    rng = random.Random(35)
    collections = [
        [min(40_000, int(50 * rng.paretovariate(1.1))) + 15 for _ in range(n)]
        for n in (min(400, int(rng.paretovariate(1.25))) for _ in range(1000))
    ]
    over, most, dearest = 0, 0, 0.0
    for seed in range(20):
        order = list(range(1000))
        random.Random(seed).shuffle(order)
        sizes = [(key, size) for key in order for size in collections[key]]
        listed, scan = simulate_sized(sizes, described=True), sized_scan(sizes)
        ratio = listed.units / scan.units
        over += listed.requests > 2 * scan.requests + 10 and ratio > 1 - WASTE
        most, dearest = max(most, listed.requests), max(dearest, ratio)
    assert over <= 6 and most <= 50 and dearest <= 1.03


def test_a_page_whose_collections_fit_a_skipping_page_is_not_charged_its_large_items() -> None:
    """A page read on that cost more than its items at the table's average size counts that
    cost against reading on (an average that misleads), but not where each of its
    collections fits a skipping page: skipping would read the same items, large ones too."""
    for fits, charged in ((False, 100.0), (True, 10.0)):
        ledgers = PageSize.for_items_of(4096).ledgers
        ledgers.skipped(1.0, 1, 1)
        ledgers.read(100.0, 10, 10, fits=fits)  # (10 items of the average 4 KB: 10 units)
        assert ledgers.through_units == 10.0 and ledgers.through_cost == charged


def test_longest_run_counts_the_most_items_of_one_key_in_a_row() -> None:
    assert longest_run([]) == 0
    assert longest_run(["a", "b", "b", "c", "c", "c", "a"]) == 3


def test_a_few_huge_items_among_single_item_keys_read_on_in_many_orders() -> None:
    """benchmarks/new_user_shapes.py's numeric-30k: 30,000 keys of one 100-byte item, but 8
    of them a 300 KB item, in 20 orders. A page read on that met one cost 111 units for 38 at
    the average size, past the MAX_TARGET that an average may mislead by, so it ended
    reading on, though skipping would read that item too (every key is one item): 32 to 61
    requests for a scan's 6 in four orders, 1.02x its units. Not charged where every
    collection of the page fits a skipping page: at most 22 requests and 1.01x. Where
    skipping pages ask for the limit that costs least a key (``PageSize.curve``: 34 items,
    not 20), the pages read on whole price skipping at a unit for 34 keys, and a page read on
    priced at the table's average item (its huge items' share: 1.65x what such a page costs)
    runs past what reading on may cost beyond skipping while its rate is unsettled, in one
    order of 20: 29 requests (18 before)."""
    keys = 30_000
    every = keys // 8
    sizes = [300_020 if k % every == every // 2 else 120 for k in range(keys)]
    over = 0
    for seed in range(20):
        order = list(range(keys))
        random.Random(seed).shuffle(order)
        table = [(key, sizes[key]) for key in order]
        listed, scan = simulate_sized(table), sized_scan(table)
        over += listed.requests > 2 * scan.requests + 10
        assert listed.requests <= 5 * scan.requests, seed
        assert listed.units <= 1.01 * scan.units, seed
    assert over <= 1


def test_doubt_samples_a_skipping_page_after_every_scan_sized_page() -> None:
    """Reading on at 7.4 units a key where skipping's pages say 6 (1.23x: more than WASTE
    over, but within what its error allows): a skipping page after each scan-sized page read
    on, up to MORE_SAMPLES in a row; not where reading on costs as much as skipping."""
    pages = PageSize.for_items_of(300)
    for units in (8.0, 8.0, 1.0, 8.0, 8.0, 8.0, 8.0, 1.0):  # 50 units for 8 keys, 6.25 a key
        pages.ledgers.skipped(units, 1, 1)
    pages.ledgers.through_units = pages.ledgers.through_cost = 74.0
    pages.ledgers.through_keys, pages.through, pages.scan_pages = 10, True, 1
    assert pages.ledgers.passing() and pages.ledgers.doubtful()
    assert pages.sampling()  # (the second scan-sized page: not sampled without doubt)
    assert [pages.sampling_more() for _ in range(MORE_SAMPLES)] == [True] * (MORE_SAMPLES - 1) + [
        False
    ]
    pages.ledgers.through_units = pages.ledgers.through_cost = 62.5  # skipping's rate
    pages.scan_pages = 1  # (the next is the second: even)
    assert not pages.ledgers.doubtful() and not pages.sampling() and not pages.sampling_more()


def test_skipping_pages_of_one_or_eight_units_are_sampled_until_known() -> None:
    """600 keys of a 30 KB item and a 70-byte one (either first, at random: the pairs-30k
    shape of benchmarks/new_user_shapes.py), in 20 orders. A skipping page costs 1 or 8 units
    (4.5 a key), reading on 7.4: skipping alone reads 0.60x a scan's units. Eight skipping
    pages that happened to say 6 a key let reading on pass, and with a skipping page only
    after every other scan-sized one their error stayed wide: 0.99x to 1.00x a scan in three
    orders, 0.84x to 0.90x in three more. Sampled after every scan-sized page while reading
    on costs more than 1 + WASTE times skipping: at most 0.86x, and 0.70x or less in 17."""
    rng = random.Random(3)
    pairs = [[30_020, 70] if rng.random() < 0.5 else [70, 30_020] for _ in range(600)]
    ratios = []
    for seed in range(20):
        order = list(range(600))
        random.Random(seed).shuffle(order)
        sizes = [(key, size) for key in order for size in pairs[key]]
        ratios.append(simulate_sized(sizes).units / sized_scan(sizes).units)
    assert max(ratios) <= 0.86 and sum(r <= 0.70 for r in ratios) >= 17


def test_a_large_collection_read_whole_inside_a_page_slows_the_growth() -> None:
    """Before the first sign of a large collection, pages grow once they cost the new target;
    a collection of a unit or more read whole inside a page (not only at its end) is such a
    sign: pages then grow after ``REGRET`` times as much (over collections of 1, 2 and 50
    items of 310 bytes, pages of 53, 105 and 208 items had read collections of 50 whole)."""
    for longest, target in ((0, 2), (13, 1)):
        size = PageSize.for_items_of(310)
        assert (size.limit, size.met_large) == (13, False)
        size.observe(13, 1.0, tail=1, longest=longest)
        size.observe(13, 1.0, tail=1)
        assert size.target == target and size.met_large is bool(longest)


def simulate_in_turn(collections: list[int], item_bytes: int, segments: int) -> Cost:
    """As :func:`simulate`, with the collections split among ``segments`` segments read one
    after another (one reader taking the segments in turn), sharing one PageSize: each
    segment's first page asks for what ``Reading.first_limit`` says."""
    shared = PageSize.for_items_of(item_bytes)
    per = math.ceil(len(collections) / segments)
    units, requests = 0.0, 0
    for first in range(0, len(collections), per):
        keys = [c for c, count in enumerate(collections[first : first + per]) for _ in range(count)]
        reading = Reading(shared)
        limit = reading.first_limit(segments)
        at = 0
        while at < len(keys):
            read = keys[at : at + (limit or MB // item_bytes)]
            cost = float(math.ceil(len(read) * item_bytes / 4096))
            units, requests = units + cost, requests + 1
            at += len(read)
            if at >= len(keys):
                reading.end(read, cost, asked=limit)
                break
            limit, skip = reading.after(read, cost, asked=limit)
            while skip and at < len(keys) and keys[at] == read[-1]:
                at += 1
            if at >= len(keys):  # (skipped to its end: DynamoDB's last page is empty)
                reading.end()
    return Cost(units, requests)


def test_a_segment_that_starts_once_every_segment_reads_on_reads_on_from_its_first_page() -> None:
    """One reader takes 30 segments in turn (auto's split of a 32 MB table): once skip-pages
    reads on as a scan, each segment it starts reads on from its first page; it began each with
    a skipping page of a unit (a helper's table of 4,000 small keys and one of 32 MB: 70
    requests and 72.5 RCU, where one segment took 12 and 53.5)."""
    small = [1] * 30_000
    one, thirty = simulate_in_turn(small, 100, 1), simulate_in_turn(small, 100, 30)
    assert thirty.requests <= one.requests + 30 + 2  # (a page a segment, no skipping one)
    assert thirty.units <= one.units + 30
    shared = PageSize.for_items_of(100)
    shared.through = True
    started = Reading(shared)
    assert started.first_limit(30) == shared.through_limit and started.reading_on


def simulate_sized_in_turn(sizes: list[tuple[int, int]], segments: int) -> Cost:
    """As :func:`simulate_sized`, with the keys split in order among ``segments`` segments
    that one reader takes in turn, sharing one PageSize that knows the table's size (as
    auto's split of a table reads it)."""
    total = sum(size for _, size in sizes)
    shared = PageSize.for_items_of(total / len(sizes), total)
    order = list(dict.fromkeys(key for key, _ in sizes))
    per = math.ceil(len(order) / segments)
    where = {key: at // per for at, key in enumerate(order)}
    parts: list[list[tuple[int, int]]] = [[] for _ in range(segments)]
    for key, size in sizes:
        parts[where[key]].append((key, size))
    units, requests = 0.0, 0
    for part in parts:
        reading = Reading(shared)
        limit = reading.first_limit(segments)
        at = 0
        while at < len(part):
            end, held = at, 0
            while end < len(part) and (end - at < limit if limit else held < MB):
                held, end = held + part[end][1], end + 1
            cost = float(max(1, math.ceil(held / 4096)))
            keys = [key for key, _ in part[at:end]]
            whole = [size for _, size in part[at:end]] if reading.whole_items else None
            units, requests, at = units + cost, requests + 1, end
            if at >= len(part):
                reading.end(keys, cost, asked=limit, sizes=whole)
                break
            limit, skip = reading.after(keys, cost, asked=limit, sizes=whole)
            while skip and at < len(part) and part[at][0] == keys[-1]:
                at += 1
            if at >= len(part):  # (skipped to its end: DynamoDB's last page is empty)
                reading.end()
    return Cost(units, requests)


def test_the_table_s_own_rate_holds_reading_on_back_on_heavier_tailed_sizes() -> None:
    """1,200 keys of Pareto item counts (shape 0.8) and sizes (0.7), as auto's split reads
    them (30 segments in turn): once a segment has ended, what reading on costs a key over
    the whole table (its size over the keys the ended segments show) weighs as ``PRIOR`` keys
    read on, so that a few pages of small collections no longer pass a trial that the table's
    heavy tail then fails with a scan-sized page. Twenty orders: the median 1.08x skipping's
    units before, 1.02x now (the first segment's trial, before any ended, still costs a page
    in a few: up to 1.12x, and 1.08x since each time reading on went back doubles the wait
    before the next trial, which moves the median from 1.015x to 1.022x: 40 orders, 1.029x
    of skipping's units in all before, 1.022x now). Segments that share the limit keep it to a
    unit's items (``Reading.whole_items``): so does skipping alone here."""
    ratios = []
    for seed in range(20):
        sizes = heavier_tailed(seed)
        skipping = simulate_sized(sizes, through=False, curve=False)
        ratios.append(simulate_sized_in_turn(sizes, 30).units / skipping.units)
    ratios.sort()
    assert ratios[len(ratios) // 2] <= 1.025, ratios
    assert sum(ratios) / len(ratios) <= 1.025, ratios
    assert max(ratios) <= 1.1, ratios
    # Where collections are small the table's rate agrees: it reads as a scan (and a unit at
    # most at each segment's end, its rounding), as before.
    small = [(key, 150) for key in range(30_000)]
    assert simulate_sized_in_turn(small, 30).units <= sized_scan(small).units + 30


def test_every_segment_that_ends_counts_the_keys_it_handed_out() -> None:
    """What the table's own rate rests on (``Ledgers.table_rate``): each ended segment's keys,
    those of a segment read whole (a small table's opening pages) too, over the segments."""
    pages = PageSize.for_items_of(100, 10_000)  # (read whole: 10 KB)
    first = Reading(pages)
    assert first.opening and (first.first_limit(2) or 0) > 0
    first.after([1, 2, 2, 3], 1.0, asked=4)
    first.end([4, 5], 1.0, asked=4)
    assert (pages.ledgers.ended, pages.ledgers.ended_keys) == (1, 5)
    assert pages.ledgers.table_rate == pytest.approx(10_000 / 4096 / (5 * 2))
    second = Reading(pages)
    second.first_limit(2)
    second.end([6], 1.0, asked=4)
    assert (pages.ledgers.ended, pages.ledgers.ended_keys) == (2, 6)
    alone = PageSize.for_items_of(100, 10_000)
    only = Reading(alone)
    only.first_limit(1)
    only.end([1, 2], 1.0, asked=4)
    assert alone.ledgers.table_rate == 0.0  # (one segment: nothing to weigh it by)


def test_pages_that_pass_on_skipping_s_error_alone_grow_only_within_the_room_left() -> None:
    """Reading on that costs a key more than ``1 + WASTE`` times skipping's (``doubtful``)
    passes only on that rate's error: its pages grow no larger than what keeps the excess
    within ``may_try``'s bound, at the share of reading on's units that were excess so far."""
    ledgers = Ledgers(item_bytes=4096.0)
    for units in (8.0, 1.0, 8.0, 8.0, 1.0, 8.0, 8.0, 1.0):  # 8 pages of a key each: 5.375 a key
        ledgers.skipped(units, 1, 1)
    assert ledgers.room() == math.inf  # (nothing read on yet)
    ledgers.read(30.0, 4, 30)  # 7.5 a key read on: 1.4x skipping's
    assert ledgers.doubtful()
    excess = 30.0 - 43 / 8 * 4
    left = WASTE * (43 + 30) + LEEWAY - excess
    assert ledgers.room() == pytest.approx(left / (excess / 30 - WASTE))
    even = Ledgers(item_bytes=4096.0)
    even.skipped(8.0, 1, 2)
    even.skipped(8.0, 1, 2)
    even.read(16.0, 2, 4)  # what skipping costs: no limit
    assert not even.doubtful() and even.room() == math.inf


def test_pairs_of_a_30kb_and_a_50_byte_item_read_about_what_skipping_reads() -> None:
    """600 keys of a 30 KB item and a 50-byte one, either first (a new user's table): skipping
    reads 1 or 8 units a key, reading on 7.5. Eight skipping pages may say 5.4 and a rate's
    error of 0.24, so a trial passed and grew to scan-sized pages at 1.4 times skipping's
    units a key: 1.34x skipping's units in one segment and 1.46x over 17 read in turn (auto's
    split), in 12 scan orders. Within ``Ledgers.room``: at most 1.22x and 1.15x, and the median
    order within 1.04x; with the sizes of whole items read on (``Ledgers.seen``), at most 1.053x
    and 1.039x, the median 1.014x."""
    rng = random.Random(30)
    pairs = [[30_000, 50] if rng.random() < 0.5 else [50, 30_000] for _ in range(600)]
    one, many = against_skipping(pairs, 12, 17, described=False)
    assert max(one) <= 1.07 and max(many) <= 1.05, (one, many)
    assert one[len(one) // 2] <= 1.03 and many[len(many) // 2] <= 1.03, (one, many)


def against_skipping(
    collections: list[list[int]], orders: int, segments: int, *, described: bool = True
) -> tuple[list[float], list[float]]:
    """skip-pages' units over skipping's alone, in ``orders`` scan orders of ``collections``
    (item sizes): in one segment, and in ``segments`` read in turn (against skipping alone as
    they would, sharing a unit's items: ``Reading.whole_items``); each sorted."""
    one, many = [], []
    for seed in range(orders):
        order = list(range(len(collections)))
        random.Random(seed).shuffle(order)
        sizes = [(key, size) for key in order for size in collections[key]]
        skipping = simulate_sized(sizes, through=False).units
        one.append(simulate_sized(sizes, described=described).units / skipping)
        shared = simulate_sized(sizes, through=False, curve=False).units  # (see Reading)
        many.append(simulate_sized_in_turn(sizes, segments).units / shared)
    return sorted(one), sorted(many)


def lottery(keys: int, share: float, large: int, items: int, seed: int) -> list[list[int]]:
    """``keys`` collections of ``items`` items of 1 KB, whose first is ``large`` bytes for
    ``share`` of them (a key's first item a lottery)."""
    rng = random.Random(seed)
    return [[large if rng.random() < share else 1000] + [1000] * (items - 1) for _ in range(keys)]


@pytest.mark.parametrize(
    ("keys", "share", "large", "items", "seed"),
    [(2500, 0.15, 30_000, 6, 130), (2500, 0.25, 20_000, 6, 131), (3000, 0.15, 30_000, 5, 120)],
    ids=["15% of 6", "25% of 6", "15% of 5"],
)
def test_where_first_items_are_a_lottery_whole_items_read_on_show_what_skipping_saves(
    keys: int, share: float, large: int, items: int, seed: int
) -> None:
    """2,500 keys of 6 items of 1 KB, whose first is 30 KB for 15% of them (or 20 KB for
    25%; or 3,000 keys of 5 items): a skipping page of a key costs 1 unit or 8 (or 5), so
    hundreds show what skipping saves (19%, 24%, 10%), while a few pages let reading on pass
    on their error. It read on after 8 keys: 1.22x, 1.31x and 1.11x skipping's units in one
    segment and over 25 read in turn (auto's split), in 4 scan orders. The pages read on now
    read whole items, whose sizes say what skipping would have cost each of their collections
    (``Ledgers.seen``), and what reading on cost them (``Ledgers.pair``): at most 1.03x."""
    one, many = against_skipping(lottery(keys, share, large, items, seed), 4, 25)
    assert max(one) <= 1.05 and max(many) <= 1.05, (one, many)


def test_pages_read_on_go_scan_sized_once_they_met_a_large_collection_or_many_keys() -> None:
    """3,000 keys of 1-3 items of 400 bytes, one in 300 of 3,000 items (1.2 MB). Where the
    pages read on met none of the large collections, at the keys that would meet two at the
    skipping pages' rate, one time in seven, then the first scan-sized page read into one:
    1.36x skipping's units in one segment, in 1 of 8 scan orders. Until the pages read on
    meet one, they stay within ``MAX_TARGET`` units three times as long: one such page that
    meets one is what is left over skipping (at most 1.07x). Where skipping pages ask for the
    limit that costs least a key (``PageSize.curve``), skipping alone costs 0.86x to 1.0x what
    it did, and so does one segment, which no longer reads on; 25 segments read in turn
    share the limit of a unit's items (``Reading.whole_items``), as before."""
    rng = random.Random(3)
    few_huge = [[400] * (3000 if k % 300 == 0 else rng.randint(1, 3)) for k in range(3000)]
    one, many = against_skipping(few_huge, 8, 25)
    assert max(one) <= 1.07 and max(many) <= 1.07, (one, many)
    assert one[3] <= 1.05 and many[3] <= 1.05, (one, many)


def test_scan_sized_pages_wait_for_keys_that_would_have_shown_a_large_collection() -> None:
    """``Ledgers.met_enough``: ``HOLD`` times the keys of a large collection at the skipping
    pages' rate where the pages read on met one; ``HOLD_UNMET`` times where they met none,
    and as many keys as a scan-sized page holds; never while a scan-sized page would end in a
    collection of ``CUT`` units or more more than once; not on a table of a few pages."""
    ledgers = Ledgers(400.0, unit_items=10, skip_keys=300, large=3)
    ledgers.read(32.0, HOLD * 100, 320)  # 200 keys, a large collection's 100 twice: none met
    assert not ledgers.met_enough()
    ledgers.read(32.0, (HOLD_UNMET - HOLD) * 100, 320, longest=10)  # one met, 600 keys in all
    assert ledgers.through_large == 1 and ledgers.met_enough()
    unmet = Ledgers(400.0, unit_items=10, skip_keys=300, large=3)
    unmet.read(64.0, HOLD_UNMET * 100, 640)  # (900 keys read; a scan-sized page holds 2,400)
    assert not unmet.met_enough()
    for _ in range(3):
        unmet.read(64.0, HOLD_UNMET * 100, 640)
    assert unmet.through_large == 0 and unmet.met_enough()  # (2,700 keys read)
    none = Ledgers(400.0, unit_items=10, skip_keys=50)  # no large collection anywhere
    few = Ledgers(400.0, unit_items=10, skip_keys=50, few_pages=True)
    few.read(64.0, 640, 640)
    assert few.met_enough()  # (a table of a few scan pages)
    assert pages_until_met(none) == 4  # 50 + 4 * 640 keys: a scan-sized page's 2,560 at 10 a unit
    # A page read on ended in a collection of CUT units and 80 items (a met large one): not
    # while a scan-sized page (2,560 keys) would meet more than one at that rate.
    cut = Ledgers(400.0, unit_items=10, skip_keys=50, large=1)
    cut.read(64.0, 640, 640, longest=CUT * 10, tail=CUT * 10)
    assert cut.through_cut == 1 and cut.through_large == 1
    assert pages_until_met(cut) == 3  # (2,560 keys read on: one such a scan-sized page)


def pages_until_met(ledgers: Ledgers) -> int:
    """Pages of 64 units and 640 keys read on until ``ledgers.met_enough()``."""
    count = 0
    while not ledgers.met_enough():
        ledgers.read(64.0, 640, 640)
        count += 1
    return count


def test_a_huge_collection_past_the_first_small_keys_costs_a_page_of_max_target() -> None:
    """3,000 keys of 1-3 items of 430 bytes (a unit's 9 items cost more than their share),
    and among them a collection of 3,000 items every 290 keys, past the first 300, 450 or 600:
    the pages read on, in a trial that began on the first 41 keys, went scan-sized and read
    1 MB into one (1.29x, 1.28x and 1.19x skipping's units in one segment). Until the keys
    read would show one, and while pages read on end in one, they stay within
    ``MAX_TARGET`` units (1.10x at most). Where skipping pages ask for the limit that costs
    least a key (``PageSize.curve``), skipping alone costs 0.82x to 0.93x what it did; the
    listing 0.87x to 1.004x what it did, at most 1.12x skipping alone."""
    rng = random.Random(5)
    for first in (100, 200, 300, 450, 600):
        small = [[430] * rng.randint(1, 3) for _ in range(2990)]
        table = small[:first]
        for k, collection in enumerate(small[first:]):
            table += [[430] * 3000] * (k % 290 == 0) + [collection]
        sizes = [(key, size) for key, c in enumerate(table) for size in c]
        ratio = (
            simulate_sized(sizes, described=True).units / simulate_sized(sizes, through=False).units
        )
        assert ratio <= 1.15, (first, ratio)


def test_a_limit_of_one_item_probes_where_the_average_misleads() -> None:
    """One collection of 6,000 items of 4 KB among 3,000 keys of one 300-byte item (a
    helper's "onehuge"): the table's average item is 2.7 KB, so skipping pages start at one
    item, and a page of one item of one key never probed a second (a page of one collection
    would gain nothing from it, where that collection is larger): 1,327 requests of a unit
    on DynamoDB Local, 842.5 RCU where the small keys make 112.5; with the huge collection
    124th in scan order, 3,028 units in 2,770 requests here. At one item, a page probes."""
    collections = [[4000] * 6000] + [[300] for _ in range(3000)]
    for seed in range(6):
        order = list(range(len(collections)))
        random.Random(seed).shuffle(order)
        sizes = [(key, size) for key in order for size in collections[key]]
        small = sized_scan([(key, size) for key, size in sizes if key != 0])
        listed = simulate_sized(sizes, described=True)
        assert listed.units <= small.units + 2 * SCAN_PAGE_BYTES / 4096, (seed, listed)
        assert listed.requests <= 150, (seed, listed)


@pytest.mark.parametrize("where", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_segments_that_ended_small_hold_pages_read_on_where_the_bytes_lie(where: float) -> None:
    """3,001 keys of one 300-byte item, but one of 6,000 items of 4 KB (24 MB), in auto's 23
    segments read in turn (a helper's "hugeat"): every segment read on as a scan, and the
    huge key's in a 1 MB page, 491-554 units where the small keys make 220. A key of the
    whole table costs 85 times one read on, so most of its bytes lie in collections not met:
    pages read on stay within 64 units of the table's average item (``Ledgers.met_enough``,
    ``PageSize.through_limit``): 265-318 units (on DynamoDB Local, 259 RCU -> 140)."""
    at = int(where * 3001)
    sizes = [(key, size) for key in range(3001) for size in [4000] * (6000 if key == at else 0)]
    sizes = [(key, 300) for key in range(at)] + sizes + [(key, 300) for key in range(at + 1, 3001)]
    listed = simulate_sized_in_turn(sizes, 23)
    assert listed.units <= 1.5 * 220, listed


def test_what_skipping_would_have_cost_a_page_read_on_whole() -> None:
    """Skipping pages of a unit's ``limit`` items, one after another over the page's items:
    each skips the rest of its last collection, and one over a unit lowers the limit (as
    skipping's does); one that would run past the page is left out; so is the collection the
    page went on in; sizes are scaled to what the page cost. Each comes with the share of the
    page's units its collections cost read on."""
    keys = list("aaabbcccd")
    sizes = [30_000, 1000, 1000, 1000, 1000, 5000, 1000, 1000, 1000]  # 42,000 bytes: 11 units
    seen = list(skipping_over(keys, sizes, 11.0, 2))
    # a's first 2 items: 8 units, and the limit falls to 1; then b, c (5 KB: 2 units), d.
    assert [page[:3] for page in seen] == [(8.0, 1, 2), (1.0, 1, 1), (2.0, 1, 1), (1.0, 1, 1)]
    assert [page[3] for page in seen] == pytest.approx([11 * b / 42 for b in (32, 2, 7, 1)])
    went = [page[:3] for page in skipping_over(keys, sizes, 11.0, 2, went=True)]
    assert went == [(1.0, 1, 2), (2.0, 1, 2), (1.0, 1, 1)]
    # The page cost 5 units: its items were half the size item_size gave.
    assert next(skipping_over(keys, sizes, 5.0, 2))[:3] == (4.0, 1, 2)
    # A page of a unit's items hands out every key it starts; the last (d) would run past.
    assert list(skipping_over(list("abccd"), [100] * 5, 1.0, 3)) == [(1.0, 3, 3, 0.8)]
    assert list(skipping_over(list("ab"), [100] * 2, 1.0, 3)) == []


def test_what_pages_read_on_show_of_skipping_weighs_in_its_rate_not_in_what_was_read() -> None:
    """``Ledgers.seen`` samples skipping's rate and error as skipping pages do; what was read
    (the allowance), the large collections met and the trials' starts (``promising``) count
    skipping's own pages alone."""
    ledgers = Ledgers(item_bytes=1000.0)
    for units in (8.0, 1.0, 8.0, 1.0):
        ledgers.skipped(units, 1, 2)
    assert ledgers.skip_rate() == 4.5 and ledgers.samples() == 4
    error, allowance, promising = ledgers.error(), ledgers.allowance(), ledgers.promising()
    for _ in range(100):
        ledgers.seen(1.0, 1, 2)
    ledgers.seen(8.0, 1, 2)
    assert ledgers.skip_rate() == pytest.approx(126 / 105)
    assert ledgers.samples() == 105 and ledgers.error() < error / 3
    assert ledgers.allowance() == allowance and ledgers.promising() == promising
    assert (ledgers.skip_keys, ledgers.skip_pages) == (4, 4)


def test_both_ways_on_the_same_keys_judge_reading_on_once_enough_were_read_whole() -> None:
    """``Ledgers.pair``: reading on's units over what skipping would have cost the same
    collections, from ``PAIR_PAGES`` pages read whole and ``PAIR_KEYS`` keys, while they hold
    half the keys read on or more. Then it, not the two ways' rates, judges: a ratio of 1.11
    known to a percent fails, though skipping's own pages (1 or 8 units a key) pass it."""
    ledgers = Ledgers(item_bytes=1400.0)
    for units in (1.0, 8.0, 1.0, 1.0, 1.0, 8.0, 1.0, 1.0):
        ledgers.skipped(units, 1, 2)
    for _ in range(PAIR_PAGES - 1):
        ledgers.read(240.0, 100, 700)
        ledgers.paired(222.0, 200.0, 100)
    assert ledgers.pair() is None and ledgers.passing()  # (3 pages: the rates judge)
    ledgers.read(240.0, 100, 700)
    ledgers.paired(222.0, 200.0, 100)
    ratio, error = ledgers.pair() or (0.0, 0.0)
    assert ratio == pytest.approx(1.11) and error == pytest.approx(FLOOR / 20)  # (400 keys)
    for _ in range(12):
        ledgers.read(240.0, 100, 700)
        ledgers.paired(222.0, 200.0, 100)
    ratio, error = ledgers.pair() or (0.0, 0.0)
    assert error == pytest.approx(FLOOR / 40)  # (pages that agree: the floor, 1,600 keys)
    assert not ledgers.passing() and ledgers.doubtful() and ledgers.fails()
    assert not ledgers.undecided()
    # Pages read on for their keys alone, past twice those read whole: the rates judge again.
    ledgers.read(2000.0, 1700, 5000)
    assert ledgers.pair() is None
    few = Ledgers(item_bytes=1400.0)
    few.skipped(1.0, 1, 2)
    for _ in range(PAIR_PAGES):
        few.read(10.0, 10, 30)
        few.paired(10.0, 9.0, 10)
    assert few.pair() is None  # (40 keys: under PAIR_KEYS)
    free = Ledgers(item_bytes=1400.0)
    free.skipped(1.0, 1, 2)
    for _ in range(PAIR_PAGES):
        free.read(0.0, 100, 300)
        free.paired(0.0, 50.0, 100)
    assert free.pair() is None  # (pages that said they cost nothing: no ratio to judge by)


def test_pages_read_on_read_whole_items_while_their_sizes_may_turn_the_judgement() -> None:
    """``Reading.whole_items``: while skipping (their sizes say what each limit would cost a
    key: ``PageSize.curve``); while reading on (in a trial, or as every segment does) and
    ``Ledgers.undecided``; not where collections proved small, nor on a table of a few scan
    pages."""
    reading = Reading(PageSize.for_items_of(2000.0, 30 * SCAN_PAGE_BYTES))
    assert reading.whole_items  # skipping
    for units in (1.0, 8.0) * 4:
        reading.pages.ledgers.skipped(units, 1, 2)
    reading.reading_on, reading.trial = True, True
    assert reading.whole_items  # nothing read on yet
    reading.pages.ledgers.read(39.0, 40, 80)  # 1 a key against 4.5: decided, it passes
    assert not reading.pages.ledgers.undecided() and not reading.whole_items
    reading.pages.ledgers.read(430.0, 60, 880)  # 4.7 a key over all: within the error
    assert reading.pages.ledgers.undecided() and reading.whole_items
    reading.pages.small = True
    assert not reading.whole_items
    few = Reading(PageSize.for_items_of(2000.0, 3 * SCAN_PAGE_BYTES))
    few.reading_on, few.trial = True, True
    assert not few.whole_items


def test_on_a_table_of_a_few_scan_pages_doubtful_pages_read_on_are_not_held_to_the_room() -> None:
    """There a page held to the room would multiply a scan's few requests (the sample table
    with a binary sort key: 32 against its 3, to save 0.6% of its units)."""

    def doubtful(table_bytes: float) -> PageSize:
        pages = PageSize.for_items_of(4096.0, table_bytes)
        for units in (8.0, 1.0, 8.0, 8.0, 1.0, 8.0, 8.0, 1.0):
            pages.ledgers.skipped(units, 1, 1)
        pages.ledgers.read(200.0, 26, 200)  # 7.7 a key against skipping's 5.4: doubtful
        pages.through_target, pages.unit_items = 128, 1  # (scan-sized next)
        return pages

    large, few = doubtful(20 * SCAN_PAGE_BYTES), doubtful(3 * SCAN_PAGE_BYTES)
    assert large.ledgers.doubtful() and large.ledgers.room() < MAX_TARGET
    assert large.through_limit == max(1, int(large.ledgers.room()))
    assert few.few_pages and few.through_limit is None
