"""How many items a skipping page asks for, where its items' sizes are known: the limit that
costs the least a key, as the skipping pages read whole show it. Pure.

A skipping page of ``n`` items costs its bytes rounded up to 4 KB and hands out the keys of
its collections. Where item sizes vary, the limit that costs least a key is not the most that
fits one unit: a page that now and then spills into a second unit may hand out more keys a
unit than one kept within it (string sort keys of 1 to 1,000 bytes: pages of 8 items cost
0.34 units a key, pages kept within a unit fell to 4 or 5 items and 0.41, what a scan costs);
where a few huge items carry the mean, one item a page costs a unit a key, and pages of 20
cost 0.4 of that. So each skipping page read whole (its items' sizes: ``item_size``) says
what each shorter page from the same start would have cost and handed out, and
:class:`Curve` keeps their sums for every ``n``: the next page asks for the ``n`` whose units
a key are least (:meth:`Curve.best`), and now and then for more (:meth:`Curve.limit`), to learn
whether a longer page costs less a key still."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

__all__ = [
    "CLOSE",
    "CLOSE_PAGES",
    "EXPLORE",
    "EXPLORED",
    "MAX_EXPLORE_AFTER",
    "ONES",
    "SHOWN",
    "Curve",
    "held",
    "lowered",
    "scaled",
    "skipping_over",
]

#: Pages read whole that must show a limit (hold that many items) before it is chosen.
SHOWN = 3
#: Pages between explorations of longer pages, at first; twice as many after each that showed
#: no better limit, up to ``MAX_EXPLORE_AFTER``.
EXPLORE = 16
MAX_EXPLORE_AFTER = 1024
#: Pages that must show twice the best limit before explorations stop (the curve is known
#: there; they start again where the best limit grows).
EXPLORED = 3
#: ... or ``CLOSE_PAGES``, where they show it costing a key less than ``CLOSE`` times the best
#: limit: three pages say little where it came close (1,500 keys of 1 to 7 items growing from
#: 10 bytes to 40 KB along the sort key: three pages of 4 items cost 1 unit a key where 2
#: items cost 0.87, and the limit stayed at 2 for good, 1.5x the units of 5; simulated over
#: six orders, skip-pages 0.95x what it cost, as on heavy-3k; within 1% elsewhere but the
#: sort-key table, 1.005x).
CLOSE_PAGES = 4 * EXPLORED
CLOSE = 1.25
#: The relative difference in units a key below which a longer page is as good (it takes fewer
#: requests).
TIE = 0.01
#: How much more a key pages grown past the best limit may cost (``WASTE``): they take
#: fewer requests.
WORSE = 0.05
#: Skipping pages in a row of one segment that were one collection each (a run of large
#: collections), after which its next asks for no more items than one unit held of the last
#: (:func:`held`): a longer page would
#: read more of such a collection (the ``runs`` shape of benchmarks/shapes.py: runs of 150
#: single-item keys and of 150 keys of 40 items of 300 bytes, in scan order; the limit over
#: all pages alternated between 12 and 24 items in the runs of large keys, 24 costing two
#: units a key: 1.11x the units of pages kept within a unit, 1.0x with this).
ONES = 2
#: The most items a skipping page asks for (a scan's page of the smallest items).
MOST = 1000
UNIT = 4096


def scaled(sizes: Sequence[float], units: float) -> list[float]:
    """Item ``sizes`` scaled to what their page cost (``units`` of 4 KB) where they miss it
    (DynamoDB counts a byte or so apart from ``item_size``)."""
    total = sum(sizes)
    scale = 1.0
    if total > units * UNIT:
        scale = units * UNIT / total
    elif 0 < total <= (units - 1) * UNIT:
        scale = ((units - 1) * UNIT + 1) / total
    return [size * scale for size in sizes]


@dataclass
class Curve:
    """What the first ``n`` items of the skipping pages read whole would have cost (4 KB
    units) and handed out, for each ``n``; and when to try longer pages."""

    units: list[float] = field(default_factory=list)  # [n - 1]: their units
    keys: list[int] = field(default_factory=list)  # ... the keys they hand out
    pages: list[int] = field(default_factory=list)  # ... the pages that held n items
    most: list[tuple[float, int]] = field(default_factory=list)  # ... the dearest one's
    since: int = 0  # pages since the last exploration
    explore_after: int = EXPLORE  # pages before the next
    exploring: int = 0  # the longer limit being explored (0: none)
    left: int = 0  # ... pages it asks for yet
    before: int = 0  # the best limit when the exploration began
    known: int = 0  # :meth:`best`, since the last page (0: not yet)
    cap: int = 0  # the most items the next page asks for (``ONES``; 0: no cap)
    #: [n - 1]: :meth:`rate` of ``n`` where ``SHOWN`` pages show it, else infinity (kept by
    #: :meth:`add`, which alone changes a rate: :meth:`best` runs after every page)
    rates: list[float] = field(default_factory=list, repr=False)

    def add(self, keys: Sequence[object], sizes: Sequence[float], units: float) -> None:
        """A skipping page read whole: its items' partition keys and sizes, in order, and
        what it cost. (One pass, its rates kept as it goes: the estimate simulates hundreds of
        thousands of pages.)"""
        self.known = 0
        scaled_sizes = scaled(sizes, units)
        if len(scaled_sizes) != len(keys):
            raise ValueError(f"{len(keys)} keys, {len(sizes)} sizes")
        more = len(keys) - len(self.units)
        if more > 0:
            self.units += [0.0] * more
            self.keys += [0] * more
            self.pages += [0] * more
            self.most += [(0.0, 0)] * more
            self.rates += [math.inf] * more
        sums, handed_out, pages, most, rates = (
            self.units,
            self.keys,
            self.pages,
            self.most,
            self.rates,
        )
        total, handed, last = 0.0, 0, None
        for i, (key, size) in enumerate(zip(keys, scaled_sizes, strict=True)):
            total += size
            if i == 0 or key != last:
                handed += 1
            last = key
            cost = math.ceil(total / UNIT - 1e-9) or 1  # (at least one unit)
            sum_i = sums[i] = sums[i] + cost
            keys_i = handed_out[i] = handed_out[i] + handed
            pages_i = pages[i] = pages[i] + 1
            dearest = most[i]
            if cost > dearest[0]:
                dearest = most[i] = (cost, handed)
            if pages_i > SHOWN:  # (as :meth:`rate`, inlined)
                sum_i, keys_i = sum_i - dearest[0], keys_i - dearest[1]
            if pages_i >= SHOWN:
                rates[i] = sum_i / (keys_i if keys_i > 1 else 1)

    def ready(self) -> bool:
        """Whether a limit has been shown by ``SHOWN`` pages."""
        return bool(self.pages) and self.pages[0] >= SHOWN

    def rate(self, n: int) -> float:
        """Units a key of pages of ``n`` items (shown by some page), but for the dearest of
        them, where more than ``SHOWN`` show it: one page that met a huge item says little of
        how often pages of ``n`` items meet one, and where few pages show ``n`` (an
        exploration's), it would hold the limit below it for good (30,000 keys of a 120-byte
        item, 8 of them 300 KB: one page of 12 items that met one held the limit at 7 items,
        3.3 times a scan's units)."""
        units, keys = self.units[n - 1], self.keys[n - 1]
        if self.pages[n - 1] > SHOWN:
            units, keys = units - self.most[n - 1][0], keys - self.most[n - 1][1]
        return units / max(1, keys)

    def best(self) -> int:
        """The limit of the least units a key, among those ``SHOWN`` pages show (the longest
        within ``TIE`` of it: fewer requests)."""
        if not self.known:
            rates = self.rates
            within = min(rates) * (1 + TIE)
            self.known = next(n for n in range(len(rates), 0, -1) if rates[n - 1] <= within)
        return self.known

    def limit(self) -> int:
        """The next skipping page's limit: :meth:`best`, or a longer one while an exploration
        lasts (until ``SHOWN`` pages show it), every ``explore_after`` pages; at most ``cap``
        (after ``ONES`` pages of one collection each, of a segment: :func:`held`)."""
        best = self.best()
        if self.exploring:
            if self.left > 0:
                self.left -= 1
                return self.exploring
            better = best > self.before
            self.explore_after = (
                EXPLORE if better else min(MAX_EXPLORE_AFTER, 2 * self.explore_after)
            )
            self.exploring, self.since = 0, 0
        self.since += 1
        longer = min(MOST, 2 * best)
        thin = len(self.pages) < longer or self.pages[longer - 1] < EXPLORED
        thin = thin or (  # (a few pages said little where it came close: see CLOSE)
            self.pages[longer - 1] < CLOSE_PAGES and self.rate(longer) < CLOSE * self.rate(best)
        )
        # (pages of one collection each: a longer page reads more of it; not at one item)
        several = best == 1 or self.keys[best - 1] > self.pages[best - 1]
        if thin and several and self.since >= self.explore_after and best < MOST:
            self.exploring = min(MOST, 2 * best)
            self.before, self.left = best, SHOWN - 1
            return self.exploring
        return min(best, self.cap) if self.cap else best

    def grows(self, limit: int, *, shared: bool = False) -> bool:
        """Whether pages of twice ``limit`` items may cost a key within ``WORSE`` of the best
        limit's (not ready: no say), as ``SHOWN`` pages of that many show; where none do yet,
        as pages of ``limit`` items do. Larger pages take fewer requests (and grow, past
        ``MAX_TARGET`` units, into reading on as a scan): where skipping saves ``WORSE`` or
        less, it reads as a scan does. Where the target is ``shared`` (segments read at once),
        only once ``SHOWN`` pages of twice ``limit`` items show it (an exploration's): the
        target grows on what every segment read, and a segment whose curve knew nothing of
        the larger pages let it grow where they cost far more (1,500 keys whose items grow
        from 10 bytes to 40 KB within each collection, 8 segments simulated: 1,780-1,910
        units, 1,220-1,240 with this, a unit's items 1,460-1,480)."""
        if not self.pages:  # (no page read whole)
            return True
        if not self.ready() or limit > len(self.pages):
            return not shared
        if shared:
            longer = min(MOST, 2 * limit)
            return self.shown(longer) and not self.worse(longer)
        return not self.worse(2 * limit if self.shown(2 * limit) else limit)

    def worse(self, limit: int) -> bool:
        """Whether ``SHOWN`` pages of ``limit`` items show them costing a key more than
        ``1 + WORSE`` times pages of the best limit."""
        return self.shown(limit) and self.rate(limit) > (1 + WORSE) * self.rate(self.best())

    def shown(self, limit: int) -> bool:
        """Whether ``SHOWN`` pages held ``limit`` items."""
        return 0 < limit <= len(self.pages) and self.pages[limit - 1] >= SHOWN


def held(keys: Sequence[object], sizes: Sequence[float], units: float) -> int:
    """How many of a skipping page's first items one unit held (at least one), where the page
    was one collection of several items (else 0): its items' partition keys and sizes, and
    what it cost."""
    if len(keys) < 2 or any(key != keys[0] for key in keys):
        return 0
    total, most = 0.0, 1
    for n, size in enumerate(scaled(sizes, units), 1):
        total += size
        if total > UNIT:
            break
        most = n
    return most


def skipping_over(
    keys: Sequence[object],
    sizes: Sequence[float],
    units: float,
    limit: int,
    *,
    went: bool = False,
    lowers: bool = True,
) -> Iterator[tuple[float, int, int, float]]:
    """What skipping pages of a unit's ``limit`` items would have cost (4 KB units, at least
    one), handed out and read, one after another, over a page read on: its items' partition
    keys and sizes (``item_size``, in order), and its own 4 KB ``units``. A page over a unit
    lowers the limit as skipping's does (``PageSize``: by the share it overshot): where item
    sizes are heavy-tailed, skipping's limit falls to the largest items' (17 items a unit for
    the keys of a scan-sized page read whole said skipping cost 0.64 of reading on; at one
    item a unit it cost 2.6 times as much). Item sizes are scaled to what the page cost where
    they miss it (DynamoDB counts a byte or so apart). A would-be page that runs past the
    page's last item is left out, as is the collection the page went on in (``went``: its
    start was read before). Last, the share of the page's units its collections cost read on
    (a page read on skips the rest of the collection it ends in, as skipping does)."""
    total = sum(sizes)
    sizes = scaled(sizes, units)
    at = 0
    while went and at < len(keys) and keys[at] == keys[0]:
        at += 1
    while at + limit <= len(keys):
        start, end = at, at + limit
        read = sum(sizes[at:end])
        handed = sum(1 for i in range(at, end) if i == at or keys[i] != keys[i - 1])
        last = keys[end - 1]
        at = end
        while at < len(keys) and keys[at] == last:
            at += 1
        share = units * sum(sizes[start:at]) / total if total else 0.0
        cost = max(1, math.ceil(read / 4096))
        yield float(cost), handed, end - start, share
        if cost > 1 and lowers:  # (over a unit: fewer items, as skipping's limit falls)
            limit = lowered(limit, 1, cost)


def lowered(limit: int, target: int, units: float) -> int:
    """The limit after a page of ``limit`` items cost ``units``, over its ``target``: one
    item less, or the share it overshot where that was more than one unit."""
    step = 1 if units <= target + 1 else max(1, round(limit - limit * target / units))
    return max(1, limit - step)
