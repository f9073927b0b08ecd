"""The skipping pages' limit that costs least a key (``_listing.curve``; no server)."""

from __future__ import annotations

import math
import random

from ddbkeys.partition_keys._listing.curve import (
    CLOSE_PAGES,
    EXPLORE,
    MAX_EXPLORE_AFTER,
    SHOWN,
    Curve,
    held,
    scaled,
)
from ddbkeys.partition_keys._listing.pages import PageSize
from ddbkeys.partition_keys._listing.reading import Reading
from tests.unit.test_page_size import simulate_sized, sized_scan


def page(curve: Curve, keys: list[int], sizes: list[float]) -> None:
    """A skipping page read whole, costing its bytes rounded up to 4 KB."""
    curve.add(keys, sizes, max(1, math.ceil(sum(sizes) / 4096)))


def test_each_shorter_page_from_the_same_start_is_priced() -> None:
    """A page of 4 items (keys a, a, b, c; 1,500 bytes each): its first item costs a unit for
    a key, two cost a unit for one key (the second is a's too), three a unit for two keys,
    four two units for three keys."""
    curve = Curve()
    page(curve, [1, 1, 2, 3], [1500.0] * 4)
    assert curve.units == [1, 1, 2, 2] and curve.keys == [1, 1, 2, 3] and curve.pages == [1] * 4
    assert not curve.ready()
    for _ in range(SHOWN - 1):
        page(curve, [1, 1, 2, 3], [1500.0] * 4)
    assert curve.ready()
    assert curve.best() == 4  # (2/3 a key, against 1 and 1)


def test_sizes_are_scaled_to_what_the_page_cost() -> None:
    """``item_size`` counts a byte or so apart from DynamoDB: sizes that miss the page's units
    are scaled into them."""
    assert scaled([2048.0, 2048.0], 1) == [2048.0, 2048.0]
    assert sum(scaled([2000.0, 2000.0], 2)) == 4097.0
    assert sum(scaled([3000.0, 3000.0], 1)) == 4096.0


def test_a_page_that_spills_may_cost_less_a_key() -> None:
    """Single-item keys of 1,000 bytes but every fifth of 3,000: pages of 4 fit a unit (a
    unit for 4 keys, or two where one is large); pages of 8 cost 2 or 3 units for 8 keys.
    The limit is the one that costs least a key, not the most that fits a unit."""
    curve = Curve()
    rng = random.Random(1)
    key = 0
    for _ in range(40):
        sizes = [3000.0 if rng.random() < 0.2 else 1000.0 for _ in range(16)]
        page(curve, list(range(key, key + 16)), sizes)
        key += 16
    rates = {n: curve.rate(n) for n in range(1, 17)}
    assert curve.best() == min(rates, key=lambda n: (round(rates[n], 9), -n))
    assert curve.best() > 4


def test_the_dearest_page_is_left_out_where_more_show_a_limit() -> None:
    """One page of ten that met a 300 KB item: pages of its length, which few show, are not
    held dearer for it than shorter ones that missed it."""
    curve = Curve()
    for start in range(0, 90, 10):
        page(curve, list(range(start, start + 10)), [100.0] * 10)
    page(curve, list(range(90, 100)), [100.0] * 9 + [300_000.0])
    assert curve.rate(10) <= curve.rate(9) and curve.best() == 10


def test_explorations_try_twice_the_best_and_wait_twice_as_long_when_not_better() -> None:
    """Every ``EXPLORE`` pages (where pages hand out several keys), ``SHOWN`` pages at twice
    the best limit; one that shows no better limit doubles the wait, up to
    ``MAX_EXPLORE_AFTER``."""
    curve = Curve()
    # Single-item keys of 2,000 bytes, then 3,000: 2 items cost a unit for 2 keys, 4 cost 3
    # units for 4 keys.
    for start in range(0, 2 * SHOWN, 2):
        page(curve, [start, start + 1], [2000.0, 2000.0])
    limits = [curve.limit() for _ in range(EXPLORE + SHOWN - 1)]
    assert limits[: EXPLORE - 1] == [2] * (EXPLORE - 1)
    assert limits[EXPLORE - 1 :] == [4] * SHOWN
    for start in range(100, 100 + 4 * SHOWN, 4):
        page(curve, list(range(start, start + 4)), [2000.0, 2000.0, 3000.0, 3000.0])
    curve.limit()
    assert curve.explore_after == 2 * EXPLORE
    curve.explore_after = MAX_EXPLORE_AFTER
    curve.exploring, curve.left, curve.before = 4, 0, 2
    curve.limit()
    assert curve.explore_after == MAX_EXPLORE_AFTER


def explored(fours: list[tuple[list[int], list[float]]], pages: int = 8 * EXPLORE) -> list[int]:
    """The limits of ``pages`` pages after a first exploration of 4 items, where pages of 2
    single-item keys of 1,500 bytes (2 keys a unit) came first: each page of 4 items is the
    next of ``fours`` in turn, each page of 2 is 2 single-item keys again."""
    curve = Curve()
    for start in range(0, 2 * SHOWN, 2):
        page(curve, [start, start + 1], [1500.0, 1500.0])
    limits = [curve.limit() for _ in range(EXPLORE + SHOWN - 1)]
    assert limits[-SHOWN:] == [4] * SHOWN
    for keys, sizes in fours[:SHOWN]:
        page(curve, keys, sizes)
    limits = []
    for n in range(pages):
        limits.append(curve.limit())
        if limits[-1] == 4:
            page(curve, *fours[limits.count(4) % len(fours)])
        else:
            page(curve, [1000 + 2 * n, 1001 + 2 * n], [1500.0, 1500.0])
    return limits


def test_a_longer_limit_that_came_close_is_explored_again() -> None:
    """Three pages say little where a longer limit came close to the best (within ``CLOSE``).
    Pages of 4 items of one key each (a unit a key, against 0.5 for pages of 2 single-item
    keys: not close) are not tried again; pages of 4 that cost 0.55 a key (4 keys in 2 units,
    twice, then 3: close, and dearer) are, until ``CLOSE_PAGES`` pages show them."""
    assert 4 not in explored([([100 + n] * 4, [500.0] * 4) for n in range(SHOWN)])
    four = ([1, 2, 3, 4], [1500.0] * 4)
    three = ([5, 6, 7, 7], [1500.0] * 4)
    limits = explored([four, four, three], 1200)  # (waits of 32, 64 and 128 pages)
    assert set(limits) == {2, 4} and limits.count(4) == CLOSE_PAGES - SHOWN


def test_pages_of_one_collection_each_explore_nothing() -> None:
    """Where every page was one collection (its items all of one key), a longer page would
    only read more of it: no exploration; but at one item, where a longer page may hold more
    than one key, it does."""
    curve = Curve()
    for key in range(SHOWN):
        page(curve, [key] * 6, [200.0] * 6)
    assert all(curve.limit() == 6 for _ in range(3 * EXPLORE))
    ones = Curve()
    for key in range(SHOWN):
        page(ones, [key], [4000.0])
    assert 2 in [ones.limit() for _ in range(EXPLORE + 1)]


def test_pages_grow_while_twice_as_many_items_cost_a_key_within_waste() -> None:
    """Single-item keys of 40 bytes: pages of 100 and 200 items cost a unit a hundred keys
    alike, so they may grow; where pages twice as large showed a fifth more a key, not."""
    curve = Curve()
    for start in range(0, 600, 200):
        page(curve, list(range(start, start + 200)), [40.0] * 200)
    assert curve.grows(100)
    dear = Curve()
    for start in range(0, 60, 20):  # keys of 2 items: 10 keys a page of 20 items
        keys = [start + k // 2 for k in range(20)]
        page(dear, keys, [400.0] * 10 + [1000.0] * 10)
    assert dear.worse(20) and not dear.grows(10)


def sortkey_sizes(seed: int) -> list[tuple[int, int]]:
    """6,000 keys of 1 to 20 items whose string sort keys are 1 to 1,000 bytes (a helper's
    "sortkey_sizes"), in an order ``seed`` draws."""
    rng = random.Random(8)
    collections = [
        [34 + rng.choice([1, 10, 200, 1000]) for _ in range(rng.choice([1, 1, 1, 2, 5, 20]))]
        for _ in range(6000)
    ]
    random.Random(seed).shuffle(collections)
    return [(key, size) for key, sizes in enumerate(collections) for size in sizes]


def test_skipping_where_sort_keys_vary_costs_less_than_a_scan() -> None:
    """Pages kept within a unit fell to 4 or 5 items and cost about what a scan does (0.97x
    to 0.99x its units, in 2,300 to 2,370 requests; skip-pages read on in two orders of three,
    and in the third sent 2,231 requests for a scan's 10, to save 2%); pages of the limit that
    costs least a key, spilling into a second unit now and then, cost 0.82x to 0.84x, and
    skip-pages reads no more than 0.85x (DynamoDB Local: 1,215 RCU, now 1,051.5; a scan
    1,250.5)."""
    for seed in range(3):
        sizes = sortkey_sizes(seed)
        skipping, scan = simulate_sized(sizes, through=False), sized_scan(sizes)
        assert skipping.units <= 0.86 * scan.units, seed
        assert simulate_sized(sizes).units <= 0.86 * scan.units, seed


def test_held_is_what_one_unit_held_of_a_page_of_one_collection() -> None:
    """Twelve items of 400 bytes of one key: ten fit 4 KB. A page of several keys, or of one
    item, holds no such run: 0."""
    assert held([7] * 12, [400.0] * 12, 2) == 10
    assert held([7, 7, 8], [400.0] * 3, 1) == 0
    assert held([7], [9000.0], 3) == 0


def runs_table(runs: int = 10, keys: int = 150) -> list[tuple[int, int]]:
    """benchmarks/shapes.py's runs, in scan order: runs of ``keys`` single-item keys of 70
    bytes and of ``keys`` keys of 40 items of 330 bytes (13 KB), one after another."""
    sizes: list[tuple[int, int]] = []
    for key in range(runs * keys):
        sizes += [(key, 330)] * 40 if (key // keys) % 2 else [(key, 70)]
    return sizes


def test_in_a_run_of_large_collections_pages_ask_for_what_a_unit_holds() -> None:
    """Over all pages, the limit that costs least a key is set by the runs of small keys (a
    unit for 58 keys), and alternated between 12 and 24 items in the runs of large ones, 24
    costing two units a key there: skipping alone read 855 units, 1.12x a unit a large key
    and the small keys' bytes (763). After ``ONES`` pages of one collection each, a
    segment's next asks for what one unit held of the last (12 items): 806 units (804 with
    pages kept within a unit)."""
    sizes = runs_table()
    listed = simulate_sized(sizes, through=False)
    large = sum(1 for key in range(1500) if (key // 150) % 2)
    assert listed.units <= 1.06 * (large + sized_scan([s for s in sizes if s[1] == 70]).units)


def test_shared_pages_grow_only_once_twice_as_many_items_were_shown() -> None:
    """Where several segments are read at once (``shared``), one segment's pages say nothing
    of pages twice as large until they were tried: no growth till then; once shown within
    ``WORSE``, growth."""
    curve = Curve()
    for start in range(0, 3 * 20, 20):
        page(curve, list(range(start, start + 20)), [40.0] * 20)
    assert curve.grows(20) and not curve.grows(20, shared=True)
    for start in range(100, 100 + 3 * 40, 40):
        page(curve, list(range(start, start + 40)), [40.0] * 40)
    assert curve.grows(20, shared=True)


def test_segments_read_at_once_share_the_target_as_live_says() -> None:
    """Segments share one PageSize and its Curve (each a hash range of the same table); the
    count of segments being read (``PageSize.live``, from ``first_limit`` to ``end``) says
    whether the target is shared: a segment that starts after another ended is not."""
    pages = PageSize.for_items_of(400.0)
    first, second = Reading(pages), Reading(pages)
    limit = first.first_limit(4)
    second.first_limit(4)
    assert pages.live == 2
    for start in range(0, 40, 10):
        keys = list(range(start, start + 10))
        limit, _ = first.after(keys, 1.0, limit, sizes=[400.0] * 10)
    assert pages.curve.ready()
    first.end()
    second.end()
    assert pages.live == 0
    Reading(pages).first_limit(4)
    assert pages.live == 1
