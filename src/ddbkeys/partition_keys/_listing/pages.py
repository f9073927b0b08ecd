"""How many items the next skip-scan page asks for: the decision, apart from the requests.

A Scan page costs its bytes rounded up to the next 4 KB (0.5 read units each, eventually
consistent), however few items it holds. So a page that asks for too few items pays for room it
does not use, and one that asks for too many spills into a second unit for a few bytes. Item
sizes vary, so the right number moves: :class:`PageSize` keeps it near the largest that stays
within its target, learning from what each page cost.

- A table of ``WHOLE_BYTES`` or less by its description (128 KB: skipping could save at most
  ``LEEWAY``, 16 RCU, what the bound below allows) is read whole, as a scan, in one request,
  not six or more: up to twice each segment's share of the described table
  (:meth:`~ddbkeys.partition_keys._listing.reading.Reading.first_limit`). Where it proves
  larger (a description hours old), the pages after that skip and learn as below.
- It starts from the table's average item size (DescribeTable), or from 8 items and doubling
  while pages come back full and within target when the table reports no size.
- A page that cost more than its target lowers the limit by one item (by the share it overshot,
  when that was more than one unit), and that limit is not tried again until the next probe.
- After ``PROBE_AFTER`` full pages within target in a row, each holding more than one
  collection or a single item, it tries one item more (a page of a single collection would
  gain nothing from it: one item more there only reads more of a collection that is skipped
  anyway; at one item, where one huge collection makes the average item, it may). A probe that
  overshoots doubles the wait before the next (up to ``MAX_PROBE_AFTER`` pages), and one that
  fits brings it back to ``PROBE_AFTER``: where the limit is already the most that fits, probing
  costs a few units a listing, not one unit every ``PROBE_AFTER`` pages.
- Skipping pages ask for whole items (the same read units), and at one unit the limit is,
  from their third on, the one that costs least a key as their items show it
  (:class:`~ddbkeys.partition_keys._listing.curve.Curve`), not the most that fits a unit:
  where item sizes vary, a page that now and then spills into a second unit hands out more
  keys a unit. The two rules above hold where sizes are not known (an IAM policy that
  allows some attributes alone: keys alone), before that third page, and while the target
  is over one unit.
- Where collections prove small, pages grow: the target (4 KB units a page aims at) doubles
  each time the pages read since the last sign of a large collection cost ``REGRET`` times the
  new target (before the first sign, and while pages cost about what their items do, once
  they cost the new target; a collection of a unit or more read whole inside a page is such a
  sign too), up to what ``MAX_PAGE_ITEMS`` items hold, and while the skipping pages read
  whole show pages twice as large (or, before any did, the present ones) costing a key within
  ``WASTE`` of the least (``Curve.grows``; pages that prove dearer go back to one unit).
  Larger pages pay the rounding up to the next 4 KB less often and take fewer requests, so
  where every collection is small the listing reads like a plain scan, at about its cost and
  speed.
- A page whose last collection filled a unit or more (its ``tail``: the items of the page's
  last key, a collection as large as a one-unit page or larger, whose rest is skipped) brings the
  target back to one unit and starts the count again. Such a page cost at most ``target - 1``
  units more than a one-unit page would have, and the target got there only after ``REGRET``
  times as much was read: so growing costs at most about ``1 / REGRET`` more than never growing
  (plus, once, what was read before the first large collection), wherever the large
  collections lie, and where they are frequent the pages stay small.
- Skipping saves little where collections end about where a small page does, or where item
  sizes vary so much that small pages pay the rounding up to 4 KB more often than skips save:
  the listing would read what a scan reads, or more, a request a page. So it tries going on *as
  a scan* (:class:`~ddbkeys.partition_keys._listing.reading.Reading`), from where it stands:
  pages of ``FIRST_THROUGH`` units, ``GROWTH`` times larger with each that passes, then
  scan-sized (DynamoDB's 1 MB, sent with a scan's Limit), each starting past the last one's
  last collection (which costs nothing and saves its rest). A trial starts (one segment at a
  time) after ``LOOK_AFTER`` skips past a collection that filled its page, or as many skipping
  pages that cost more than their items would at the table's average size (twice as many after
  each trial in a row, past the first, whose first page failed on one key, dearer than skipping,
  and each time all read on, then went back: :attr:`PageSize.promising_after`), or at once
  (:meth:`PageSize.skip_past`); where pages can no longer double, they go on as a scan.

**What decides** whether reading on goes on: two ledgers kept over the whole listing
(:mod:`~ddbkeys.partition_keys._listing.read_on`, which says how they judge).

**The bound**: against skipping alone, at most ``WASTE`` of all read more, plus ``LEEWAY`` (16
RCU), plus the page that failed the last trial (at most 1 MB, 128 RCU, once enough keys were
read on; ``MAX_TARGET`` units before), plus ``MAX_TARGET`` units where the average item size
misleads; while few skipping pages were read, and skipping's rate is settled, reading on may
cost up to ``SPREAD`` times skipping's error more. Where skipping saves ``WASTE`` or less, it
goes on as a scan after about ``LOOK_AFTER`` skipping pages and a ramp of three (2, 8, 32
units): a scan's requests plus about ``LOOK_AFTER + 4`` (and a skipping page every other
scan-sized one while skipping's pages are under ``SAMPLE_PAGES``), a scan's units plus what the
skipping pages cost beyond it; more where the first skipping pages cost less a key than the
later ones (a limit still learning large items), and a trial stops early.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ddbkeys.partition_keys._listing.curve import Curve, lowered
from ddbkeys.partition_keys._listing.read_on import LEEWAY, MAX_TARGET, WASTE, Ledgers

__all__ = [
    "FIRST_THROUGH",
    "GROWTH",
    "LOOK_AFTER",
    "MAX_LEAD",
    "MAX_PAGE_ITEMS",
    "MAX_PROBE_AFTER",
    "MAX_TARGET",
    "MORE_SAMPLES",
    "PROBE_AFTER",
    "REGRET",
    "SAMPLE_PAGES",
    "SCAN_PAGE_BYTES",
    "WASTE",
    "WHOLE_BYTES",
    "WHOLE_OVER",
    "PageSize",
    "few_pages",
]

MAX_PAGE_ITEMS = 1000
#: Full pages within target, in a row, before one more item is tried.
PROBE_AFTER = 16
#: The longest wait between probes, after probes that overshot.
MAX_PROBE_AFTER = 1024
#: Units read since the last such sign, as a multiple of the new target, before pages grow.
REGRET = 4
#: Skips past a collection that filled its page (or skipping pages, see ``Ledgers.promising``)
#: before a trial of reading on as a scan.
LOOK_AFTER = 8
#: Read units of a trial's first page past the collection looked past, and how much larger
#: each page that passes makes the next.
FIRST_THROUGH = 2
GROWTH = 4
#: Skipping pages, below which every other scan-sized page read on is followed by one.
SAMPLE_PAGES = 400
#: Skipping pages in a row, at most, after a scan-sized page read on while reading on costs a
#: key more than ``1 + WASTE`` times what skipping does (``Ledgers.doubtful``).
MORE_SAMPLES = 4
#: DynamoDB's page of a scan (1 MB).
SCAN_PAGE_BYTES = 1024 * 1024
#: A table of at most this many bytes (DescribeTable) is read whole, as a scan, in one request:
#: ``LEEWAY`` read units (16 RCU, 128 KB), what skip-pages may read beyond skipping alone.
WHOLE_BYTES = LEEWAY * 4096
#: ... reading it whole stops at this many times the described table (its items, or its units:
#: a description hours old, of a table grown since).
WHOLE_OVER = 2
#: The most items a skipping page asks for beyond its limit, for ddbkeys' own items that lead
#: a collection (its marker, and a collection sequence's counter).
MAX_LEAD = 2


def few_pages(table_bytes: float) -> bool:
    """Whether a scan reads ``table_bytes`` (0: unknown) in ``LOOK_AFTER - 2`` pages or fewer."""
    return 0 < table_bytes <= (LOOK_AFTER - 2) * SCAN_PAGE_BYTES


def items_a_unit(average_bytes: float) -> int:
    """How many items of ``average_bytes`` (above 0) a 4 KB page holds: 1 to ``MAX_PAGE_ITEMS``."""
    return max(1, min(MAX_PAGE_ITEMS, int(4096 // average_bytes)))


@dataclass
class PageSize:
    """The Limit of the next page (``limit``) and what it learned from the pages so far."""

    limit: int
    known: bool = True  # the start came from the table's average item size
    target: int = 1  # read units (4 KB) a page aims at
    ceiling: int | None = None  # a limit that overshot: not tried again until the next probe
    clean: int = 0  # full pages within target since the last change
    probe_after: int = PROBE_AFTER  # clean pages before the next probe
    probing: bool = False  # the limit is a probe, not yet judged
    credit: float = 0.0  # units read since the last page whose last collection filled a unit
    met_large: bool = True  # a page's last collection filled a unit (for_items_of: not yet)
    ledgers: Ledgers = field(default_factory=Ledgers)  # what skipping and reading on cost
    through: bool = False  # every segment reads on as a scan
    trying: bool = False  # one segment's trial of reading on is under way
    unit_items: int = 0  # the items of a unit, when reading on last began
    passed: int = 0  # pages read on that passed, since it last began
    through_target: int = FIRST_THROUGH  # read units (4 KB) the next page read on aims at
    skips: int = 0  # skips past a collection that filled its page, since the last trial
    pages_since: int = 0  # skipping pages since the last trial
    look_after: int = LOOK_AFTER  # such skips before the next trial
    lost: int = 0  # trials in a row whose first page failed on one key, dearer than skipping
    few_pages: bool = False  # a scan reads the table in a few pages (few_pages)
    may_read_on: bool = True  # False: always skip (a baseline for tests)
    scan_pages: int = 0  # scan-sized pages read on
    read_on_after: int = -1  # keys handed out when reading on last began
    small: bool = False  # it began because collections proved small (not by a trial)
    full_items: int = 0  # items of the pages read on that filled their Limit
    full_units: float = 0.0  # ... and their read units
    lead: int = 0  # own items that led the last skipping page's first collection
    whole: int = 0  # the table's bytes, where at most WHOLE_BYTES (its description; 0: over)
    whole_items: int = 0  # ... and its items (by its description)
    grew: bool = False  # ... and it proved larger: reading whole ran past twice that
    samples: int = 0  # skipping pages in a row since the last scan-sized page read on
    went_back: int = 0  # times every segment read on, then went back to skipping
    readers: int = 0  # segments reading on since every segment may (Reading)
    live: int = 0  # segments being read (Reading.first_limit, to Reading.end)
    curve: Curve = field(default_factory=Curve)  # skipping pages read whole, by their limit

    @classmethod
    def for_items_of(cls, average_bytes: float, table_bytes: float = 0.0) -> PageSize:
        """Start from the table's average item size (0 when it reports none), and its size
        (``few_pages``)."""
        few = few_pages(table_bytes)
        if average_bytes <= 0:
            return cls(limit=8, known=False, met_large=False, few_pages=few)
        ledgers = Ledgers(average_bytes, table_units=table_bytes / 4096, few_pages=few)
        whole = int(table_bytes) if 0 < table_bytes <= WHOLE_BYTES else 0
        return cls(
            limit=items_a_unit(average_bytes),
            ledgers=ledgers,
            met_large=False,
            few_pages=few,
            whole=whole,
            whole_items=round(whole / average_bytes),
        )

    @property
    def whole_units(self) -> int:
        """The 4 KB units of the table read whole, by its description (``whole``)."""
        return math.ceil(self.whole / 4096)

    def observe(
        self,
        items: int,
        units: float,
        tail: int,
        asked: int | None = None,
        longest: int = 0,
    ) -> int:
        """After a page that asked for ``asked`` items (default: ``limit``), read ``items``,
        cost ``units`` 4 KB read units and ended with ``tail`` items of its last key: the next
        page's limit. A page asked for under another limit (segments read in parallel share
        one PageSize) says nothing about the present limit: only its collections count.
        Where pages would grow but can no longer double (``MAX_TARGET`` units or
        ``MAX_PAGE_ITEMS`` items), every segment reads on as a scan. ``longest``: the most
        items of one collection in the page; one of a unit or more read whole inside a page is
        a large collection too: pages grow no faster than after one (``REGRET``), rather than
        reading more whole (pages of 53, 105 and 208 items over collections of 50, before the
        first that filled a page's end: a listing that then judged reading on against them).
        At one unit, once ``curve`` is ready, it sets the next limit."""
        if self.through:
            return self.limit
        curve = self.curve
        own = self.target == 1 and curve.ready()  # (its segment's limit: ``asked``)
        per_unit = (asked or self.limit) if own else self.limit / self.target
        if own:
            self.limit = curve.limit()
        elif asked is None or asked == self.limit:
            self._fit(items, units, several=tail < items)
        if tail >= per_unit or (self.target > 1 and curve.worse(self.limit)):
            self.credit, self.met_large = 0.0, self.met_large or tail >= per_unit
            if self.target > 1:
                self._retarget(1)
        else:
            self.met_large = self.met_large or longest >= per_unit
            self._grow(units)
        return self.limit

    def _grow(self, units: float) -> None:
        """The target doubles as :meth:`observe` says, where ``curve`` lets it (``grows``)."""
        self.credit += units
        grown = self.target * 2
        fast = not self.met_large and not self.ledgers.promising()
        shown = self.curve.grows(self.limit, shared=self.live > 1)  # (segments read at once)
        if self.credit >= (1 if fast else REGRET) * grown and shown:
            if grown <= MAX_TARGET and 2 * self.limit <= MAX_PAGE_ITEMS:
                self._retarget(grown)
            elif self.may_read_on and self.ledgers.skip_keys and not self.trying:
                self._read_on(max(1, self.limit // self.target), grown)
                self.through, self.small = True, True

    def skip_past(self, tail: int) -> bool:
        """Whether the next page goes on skipping, after a page that ended with ``tail`` items
        of its last key (after :meth:`observe`). False (that segment's next page starts a trial
        of reading on: ``trying``; one at a time, the other segments skip meanwhile) after
        ``look_after`` skips past a collection that filled its page, or
        :attr:`promising_after` skipping pages that cost more than their items
        (``Ledgers.promising``), while ``Ledgers.may_try``;
        at once, scan-sized, where the pages read on before (``LOOK_AFTER`` keys or more, and
        ``Ledgers.met_enough``) pass against skipping's rate as it now stands."""
        ledgers = self.ledgers
        ledgers.unit_items = self.limit / self.target  # (skipping's rate from here)
        self.pages_since += 1
        filled = tail >= self.limit / self.target  # the last collection filled a unit
        self.skips += filled
        ledgers.large += filled
        if self.trying or not ledgers.skip_keys or not self.may_read_on:
            return True
        # Scan-sized where the pages read on before met enough keys and now pass.
        known = ledgers.through_keys and ledgers.met_enough() and ledgers.passing()
        if (
            self.skips < self.look_after
            and not (self.pages_since >= self.promising_after and ledgers.promising())
            and not (known and ledgers.through_keys >= LOOK_AFTER)
        ):
            return True
        if not ledgers.may_try():
            return True
        # (A unit's items at the table's average size where known: where item sizes vary, the
        # limit fits the largest items.)
        average = items_a_unit(ledgers.item_bytes) if ledgers.item_bytes else 0
        first = 2 * MAX_TARGET if known else FIRST_THROUGH
        self._read_on(max(1, self.limit // self.target, average), first)
        self.trying = True
        return False

    @property
    def promising_after(self) -> int:
        """Skipping pages, since the last trial, before one starts because they cost more
        than their items (``Ledgers.promising``): ``LOOK_AFTER``, twice as many for each trial
        in a row, past the first, whose first page failed inside the collection it began (one
        key) at more than skipping costs a key (``lost``), and for each time every segment read
        on and went back (``went_back``: a trial's small pages pass where larger ones fail, as
        on heavy-tailed collection counts), up to ``MAX_PROBE_AFTER``. On 1,000 keys of 3-12
        items of 2-4 KB a trial's first page, 2 units of one key, failed every 8 pages: 1.12x
        skipping's units, 1.01x with this. One such failure is let pass, and so is a first
        page that handed out more than one key or cost less than skipping (the next trials
        often read on there: a 2-unit page that met a large item)."""
        return min(MAX_PROBE_AFTER, LOOK_AFTER << min(max(0, self.lost - 1) + self.went_back, 7))

    @property
    def through_limit(self) -> int | None:
        """The Limit of a page read on (None: scan-sized, not held to ``MAX_PAGE_ITEMS``).
        Within ``MAX_TARGET`` units until ``Ledgers.met_enough`` (of the table's average
        item or smaller, once a segment of several ended): a rare large collection costs at
        most such a page till then; within ``Ledgers.room`` where :meth:`_held_to_room`."""
        ledgers = self.ledgers
        room = ledgers.room() if self._held_to_room() else math.inf
        met, unit = ledgers.met_enough(), self.unit_items
        if ledgers.item_bytes and ledgers.table_rate and not met:
            unit = min(unit, items_a_unit(ledgers.item_bytes))
        if room < SCAN_PAGE_BYTES / 4096:
            return unit * min(self.through_target, MAX_TARGET, max(1, int(room)))
        if self.through_target <= MAX_TARGET:
            return unit * self.through_target
        return None if met else unit * MAX_TARGET

    def sampling(self) -> bool:
        """After a scan-sized page read on: whether the next is a skipping page, to learn more
        of what skipping costs (after every other such page, until its samples, those of whole
        items read on too, are ``SAMPLE_PAGES``: ``Ledgers.samples``). Not where collections
        proved small (``small``): a large collection met later shows in the pages read on
        (on 220,000 single-item keys, 10 requests more to a scan's 29). Nor on a table of a
        few scan pages (``few_pages``: 18 requests to a scan's 3). After every such page,
        while ``Ledgers.doubtful`` (up to ``MORE_SAMPLES`` in a row: :meth:`sampling_more`)."""
        self.scan_pages += 1
        self.samples = 0
        if self.small or self.few_pages or self.ledgers.samples() >= SAMPLE_PAGES:
            return False
        return self.scan_pages % 2 == 1 or self.ledgers.doubtful()

    def sampling_more(self) -> bool:
        """After a skipping page that :meth:`sampling` asked for: whether another follows
        (while ``Ledgers.doubtful``, up to ``MORE_SAMPLES`` in a row)."""
        self.samples += 1
        return (
            self.samples < MORE_SAMPLES
            and self.ledgers.samples() < SAMPLE_PAGES
            and self.ledgers.doubtful()
        )

    def read_through(
        self,
        units: float,
        keys: int,
        items: int,
        asked: int | None = None,
        *,
        longest: int = 0,
        tail: int = 0,
        last: bool = False,
    ) -> None:
        """A page read on (in the trial, or by any segment once ``through``) cost ``units``,
        read ``items`` (of ``asked``: its Limit, None when scan-sized) and handed out
        ``keys``. While ``Ledgers.passing``, the next page is ``GROWTH`` times larger (once a
        trial's second page passes, every segment reads on: its own first, the others as
        pages pass, ``Reading``), and while they pass on skipping's
        error alone (``Ledgers.doubtful``) only within ``Ledgers.may_try``; else skipping starts
        again at one unit, and the next trial waits twice as long. Once every segment reads
        on, a page that filled its Limit shows how many items a unit holds there: where such
        pages show more than ``unit_items`` (a limit lowered by one huge item, or an average
        that counts a few), the next pages ask that many a unit, so that they cost what they
        aim at rather than a fraction of it. ``longest``: the most items of one key in the
        page (within a skipping page's limit, what it cost beyond its items' average is not
        charged to it: ``Ledgers.read``), ``tail``: of the key it ended in. ``last``: the page
        ended its segment (it counts, and may fail a trial, but passes none: the short rest
        of a segment shows little)."""
        if self.through and asked is not None and items >= asked and units >= 1:
            self.full_items += items
            self.full_units += units
            held = int(self.full_items // self.full_units)  # (over all such pages: sizes vary)
            self.unit_items = max(self.unit_items, min(MAX_PAGE_ITEMS, held))
        fits = 0 < longest <= self.limit
        ledgers = self.ledgers
        if (
            ledgers.read(units, keys, items, fits=fits, longest=longest, tail=tail)
            and ledgers.passing()
            and (
                self.small or ledgers.may_try() or (ledgers.settled() and not self._held_to_room())
            )
        ):
            if last:
                return
            self.passed += 1
            self.lost = 0
            if self.trying and self.passed >= 2:
                self.through, self.trying, self.small = True, False, False
            self.through_target = min(2 * MAX_TARGET, self.through_target * GROWTH)
            return
        self.went_back += self.through
        lost = self.trying and not self.passed and keys <= 1 and units > ledgers.skip_rate()
        self.lost = self.lost + 1 if lost or ledgers.fails() else 0
        self.through, self.trying, self.readers = False, False, 0
        self.look_after = min(MAX_PROBE_AFTER, self.look_after * 2)
        self._retarget(1)  # skipping again, at one unit
        self.credit = 0.0

    def _held_to_room(self) -> bool:
        """Whether pages read on are held to ``Ledgers.room`` and ``may_try``: they pass on
        skipping's error alone (``doubtful``), and the table is not of ``few_pages``."""
        return not (self.small or self.few_pages) and self.ledgers.doubtful()

    def _read_on(self, unit_items: int, target: int) -> None:
        self.unit_items, self.through_target = unit_items, target
        self.skips = self.pages_since = self.passed = 0
        self.read_on_after = self.ledgers.skip_keys + self.ledgers.through_keys

    def _fit(self, items: int, units: float, *, several: bool) -> None:
        """Keep the limit near the most items that stay within the target."""
        k = self.limit
        if units > self.target:  # overshot: one item less, or the share it overshot
            if self.probing:
                self.probe_after = min(MAX_PROBE_AFTER, self.probe_after * 2)
            self.probing = False
            self.ceiling = k
            self.limit = lowered(k, self.target, units)
            self.clean = 0
            self.known = True  # no more doubling
        elif items >= k:  # a full page within target
            if self.probing:
                self.probe_after = PROBE_AFTER
            self.probing = False
            if several or k == 1:
                self.clean += 1
            if not self.known:
                self.limit = min(MAX_PAGE_ITEMS, k * 2)
                self.clean = 0
            elif self.clean >= self.probe_after:
                self.ceiling = None
                self.limit = min(MAX_PAGE_ITEMS, k + 1)
                self.probing = self.limit > k
                self.clean = 0
        if self.ceiling is not None and self.limit >= self.ceiling:
            self.limit = max(1, self.ceiling - 1)

    def _retarget(self, target: int) -> None:
        self.limit = max(1, min(MAX_PAGE_ITEMS, self.limit * target // self.target))
        self.ceiling = None
        self.target = target
        self.clean = 0
        self.probing = False
