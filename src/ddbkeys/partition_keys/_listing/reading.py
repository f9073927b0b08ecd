"""One segment's reading in skip-pages: which way its next page reads (skipping, or on as a
scan), with the :class:`~ddbkeys.partition_keys._listing.pages.PageSize` every segment shares,
so that each page counts for the way it was asked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby, pairwise

from ddbkeys.partition_keys._listing.curve import ONES, held, skipping_over
from ddbkeys.partition_keys._listing.pages import LOOK_AFTER, MAX_LEAD, WHOLE_OVER, PageSize

__all__ = ["Reading", "longest_run", "tail_of"]


@dataclass
class Reading:
    """One segment's reading, with the :class:`PageSize` every segment shares (the caller
    holds a lock around :meth:`after` where segments run in parallel): which way the next page
    reads (skipping, or on as a scan), so that each page counts for the way it was asked.

    Where collections start with ddbkeys' own items (a marker sorts first in its collection,
    under the default sort key of every type, as does a collection sequence's counter), a
    skipping page of ``limit`` items would read a lone marker where ``limit`` is 1, and the
    next page would have to go on in that collection (one more request and unit a key). So a
    skipping page asks for as many items more as led the last skipping page's first collection
    (``PageSize.lead``, at most ``MAX_LEAD``), and is judged without them: a marker is read
    with its collection's first item, as a page of the same table without markers reads that
    item alone. A page that still ends on a lone own item is followed by one that goes on in
    its collection (no extra); where that reads the collection's rest alone, it counts with
    the page before.

    Every segment feeds one :class:`~ddbkeys.partition_keys._listing.curve.Curve`
    (``PageSize.curve``: what each limit cost a key over the skipping pages read whole; a
    segment is a hash range of the table, so each page is a sample of the same collections),
    and at one unit each asks for the limit it says, judged by the limit the page asked for.
    While several segments are read at once (``PageSize.live``), pages grow past a unit only
    once twice as many items were shown (``Curve.grows``, ``shared``): the target grows on
    every segment's pages (1,500 keys whose items grow from 10 bytes to 40 KB within each
    collection, 4 or 8 segments: 1,519-1,796 RCU, where the limit of a unit read 583-852;
    DynamoDB Local)."""

    pages: PageSize
    reading_on: bool = False  # the next page reads on as a scan
    trial: bool = False  # this segment runs the trial of reading on
    asked: int | None = 0  # the Limit of the page asked for (None: scan-sized), without extra
    extra: int = 0  # items asked for beyond it, for the own items that lead a collection
    last: object = None  # the key of the last item read
    going_on: bool = False  # the last page ended in a collection that showed nothing of yours
    was_on: bool = False  # ... and it was read on as a scan
    opening: bool = False  # the segment's first pages read whole, as a scan (``whole``)
    items_left: int = 0  # ... the most items they may read yet
    units_left: float = 0.0  # ... and 4 KB units
    handed: int = 0  # keys this segment handed out
    joined: int = -1  # the period of reading on (PageSize.went_back) it reads on in
    ones: int = 0  # skipping pages in a row read whole that were one collection each

    def __post_init__(self) -> None:
        if self.pages.whole:
            self.reading_on = self.opening = True
            self.asked = None

    def first_limit(self, segments: int = 1) -> int | None:
        """The Limit of the first page of one of ``segments`` (None: scan-sized). Where the
        table's description puts it at ``WHOLE_BYTES`` or less (``PageSize.whole``), its first
        pages read it whole, as a scan, up to ``WHOLE_OVER`` times the segment's share of the
        described items and bytes: where the description is old and the table larger, the pages
        after them skip (``grew``), having read at most about that many times the described
        table, however many segments. Where every segment reads on as a scan
        (``PageSize.through``), a segment that starts then reads on from its first page (it
        began with a skipping page of one unit: 30 segments of a table read one after another,
        70 requests and 72.5 RCU where one segment took 12 and 53.5)."""
        pages = self.pages
        pages.ledgers.segments = segments
        pages.live += 1
        if not self.opening:
            if pages.through and self._joins():
                self.reading_on = True
                self.asked = pages.through_limit
                return self.asked
            return pages.limit
        self.items_left = WHOLE_OVER * pages.whole_items // segments + 8
        self.units_left = WHOLE_OVER * pages.whole_units / segments + 2
        return self.items_left

    def after(
        self,
        keys: Sequence[object],
        units: float,
        asked: int | None = None,
        *,
        lead: int = 0,
        unhanded: bool = False,
        sizes: Sequence[float] | None = None,
    ) -> tuple[int | None, bool]:
        """After a page of items whose partition keys were ``keys`` (in order), which cost
        ``units`` 4 KB read units and asked for ``asked`` items (its Limit, with any extra): the
        next page's limit (None: scan-sized: DynamoDB's 1 MB), and whether it skips past the
        page's last collection (always: a page read on as a scan starts past it too, which
        costs nothing and saves its rest). ``lead``: the page's first items that are ddbkeys'
        own, in its first collection; ``unhanded``: its last collection showed none of yours
        (the next page goes on in it, and asks no extra). A page read on counts for reading on
        while this segment's trial or reading on lasts; one that skipped counts for skipping;
        each is judged by the way it was asked for, whatever the other segments changed
        meanwhile. A key counts once, in the page that hands it out. ``sizes``: its items'
        sizes (``item_size``), where it was read whole (:attr:`whole_items`)."""
        pages = self.pages
        tail = tail_of(keys)
        if self.opening:
            self._keys(keys, unhanded)
            return self._whole(len(keys), units, unhanded)
        began = not pages.through
        if not self._count(keys, units, asked, lead, unhanded, sizes=sizes):
            return self._next(unhanded)
        if began and pages.through and self.trial:  # (its trial passed: it reads on first)
            self.joined, pages.readers = pages.went_back, 1
        self.trial = self.trial and pages.trying
        if self.trial or (pages.through and self.joined == pages.went_back):
            self.reading_on = self._reads_on()
        elif pages.through:  # (a page of LOOK_AFTER keys or more, one item each, skipped nothing)
            self.reading_on = self._joins(len(keys) >= LOOK_AFTER and longest_run(keys) == 1)
        else:
            self.reading_on = bool(keys) and not pages.skip_past(tail)
            self.trial = self.reading_on
        return self._next(unhanded)

    def _count(
        self,
        keys: Sequence[object],
        units: float,
        asked: int | None,
        lead: int,
        unhanded: bool,
        last: bool = False,
        sizes: Sequence[float] | None = None,
    ) -> bool:
        """Count a page for the way it was read (:meth:`after`); False where it went on in the
        collection the page before ended in on a lone own item, and nothing more (pages of an
        item or so): counted with that page, in the way it was read, not as a page of its own
        (a page of units and no key would say skipping varies widely)."""
        pages = self.pages
        runs, went, new = self._keys(keys, unhanded)
        if self.going_on and not self.reading_on and went and runs == 1:
            self.going_on = unhanded
            pages.ledgers.went_on(units, new, len(keys), read_on=self.was_on)
            return False
        self.going_on, self.was_on = unhanded, self.reading_on
        base = None if asked is None else max(1, asked - self.extra)  # (the Limit, no extra)
        if self.reading_on:
            if self.trial or pages.through:
                if sizes is not None and len(sizes) == len(keys):
                    self._seen(keys, sizes, units, went)
                pages.read_through(
                    units,
                    new,
                    len(keys),
                    asked,
                    longest=longest_run(keys),
                    tail=tail_of(keys),
                    last=last,
                )
        elif keys:
            # (not where ddbkeys' own items lead collections: a marker alone would count as a
            # key handed out, where the next page goes on in its collection)
            if sizes is not None and len(sizes) == len(keys) and not (went or lead or pages.lead):
                self._curve(keys, sizes, units)  # (one segment alone: see whole_items)
            pages.ledgers.skipped(units, new, len(keys))
            pages.observe(
                max(1, len(keys) - self.extra),
                units,
                tail_of(keys),
                base,
                longest_run(keys),
            )
            if not went:
                pages.lead = min(MAX_LEAD, lead)
        else:
            pages.observe(0, units, 0, base)
        return True

    def _curve(self, keys: Sequence[object], sizes: Sequence[float], units: float) -> None:
        """A skipping page read whole, for ``PageSize.curve``: without the own items it asked
        for beyond its limit (their bytes counted with its first item's)."""
        extra = min(self.extra, len(keys) - 1)
        first = [sum(sizes[: extra + 1])] if keys else []
        keys, sizes = keys[extra:], [*first, *sizes[extra + 1 :]]
        self.pages.curve.add(keys, sizes, units)
        most = held(keys, sizes, units)
        self.ones = self.ones + 1 if most else 0
        self.pages.curve.cap = most if self.ones >= ONES else 0  # (for this segment's next)

    def _seen(
        self, keys: Sequence[object], sizes: Sequence[float], units: float, went: bool
    ) -> None:
        """What skipping pages of a unit's items (as skipping starts again) would have cost
        the collections of a page read on whole, and what it cost for them."""
        ledgers, pages = self.pages.ledgers, self.pages
        on = skip = 0.0
        seen = 0
        limit, lowers = max(1, pages.limit // pages.target), True
        if pages.curve.ready():
            limit, lowers = pages.curve.best(), False
        for cost, handed, items, share in skipping_over(
            keys, sizes, units, limit, went=went, lowers=lowers
        ):
            ledgers.seen(cost, handed, items)
            on, skip, seen = on + share, skip + cost, seen + handed
        if seen:
            ledgers.paired(on, skip, seen)

    @property
    def whole_items(self) -> bool:
        """Whether the next page asks for whole items, not the keys alone (the same read
        units, a larger answer), so that its items' sizes say what skipping would have cost
        its collections (``Ledgers.seen``): it reads on as a scan, in a trial or as every
        segment does, and more of what skipping costs may still turn the judgement
        (``Ledgers.undecided``). Where first items' sizes are a lottery (a key's first item 30
        KB one time in seven, else 1 KB), skipping's own pages, one a key, each 1 or 8 units,
        take hundreds to show that it saves 20%; a scan-sized page read on shows it for a
        hundred keys at once. Not on a table of a few scan pages (``PageSize.few_pages``),
        where skipping's own pages do. A skipping page does too (``PageSize.curve``: what
        each limit costs a key), but where ddbkeys' own items lead collections (a marker)."""
        pages = self.pages
        if not self.reading_on:
            return not (self.opening or pages.lead)
        if self.opening or pages.small or pages.few_pages:
            return False
        return (self.trial or pages.through) and pages.ledgers.undecided()

    def _joins(self, at_once: bool = False) -> bool:
        """Whether this segment, skipping while others read on as a scan, joins them now. Once
        a trial passes, its segment reads on alone; each page read on that passes since lets
        one more join (``PageSize.passed``): where a reading on fails, as many pages of it are
        lost as readers read on, and a trial's two small pages say little of a heavy tail (on
        3,000 keys of Pareto counts and sizes, 54,000 items, auto's five readers all read on
        after each trial and read 1.3x what one reader did). All join at once where collections
        proved small (``PageSize.small``), and ``at_once`` (its own skipping page skipped
        nothing: 15,000 one-item keys after 500 of 24 KB in scan order, its 26-key pages
        of a unit read 1.09x one reader's units, where a scan's pages round up less)."""
        pages = self.pages
        if not (pages.small or at_once) and pages.readers >= max(1, pages.passed - 1):
            return False
        self.joined = pages.went_back
        pages.readers += 1
        return True

    def _reads_on(self) -> bool:
        """While this segment's trial or every segment reads on: whether the next page reads
        on (not where every segment reads on and ``PageSize.sampling`` asks for a skipping
        page after a scan-sized one, or ``PageSize.sampling_more`` for another after it)."""
        pages = self.pages
        if self.reading_on and self.asked is None:  # a scan-sized page
            return not (pages.through and pages.sampling())
        return self.reading_on or not (pages.through and pages.sampling_more())

    def _whole(self, items: int, units: float, unhanded: bool) -> tuple[int | None, bool]:
        """After a page read whole (``first_limit``): on, while within twice the segment's
        share of the described table; past it, the table proved larger: skipping from here."""
        self.going_on, self.was_on = unhanded, True
        self.items_left -= items
        self.units_left -= units
        if self.items_left > 0 and self.units_left > 0:
            return self.items_left, True
        self.opening = self.reading_on = False
        self.pages.grew = True
        return self._next(unhanded)

    def _keys(self, keys: Sequence[object], unhanded: bool) -> tuple[int, bool, int]:
        """The page's collections (runs of a key), whether it went on in the collection the
        last ended in, and the keys it handed out: a key counts in the page that hands it
        out, not in one that ends in its collection on own items alone, but in the next,
        which goes on in it (and not twice)."""
        runs = sum(1 for a, b in pairwise(keys) if a != b) + bool(keys)
        went = bool(keys) and keys[0] == self.last
        new = max(0, runs - (went and not self.going_on) - (bool(keys) and unhanded))
        self.handed += new
        if keys:
            self.last = keys[-1]
        return runs, went, new

    def _next(self, unhanded: bool) -> tuple[int | None, bool]:
        """The next page's Limit (with any extra: not where it goes on in a collection that
        showed nothing of yours, past its leading own items), and that it skips past the last
        collection."""
        pages = self.pages
        self.asked = pages.through_limit if self.reading_on else pages.limit
        self.extra = 0 if self.reading_on or unhanded else pages.lead
        return (None if self.asked is None else self.asked + self.extra), True

    def end(
        self,
        keys: Sequence[object] = (),
        units: float = 0.0,
        asked: int | None = None,
        *,
        lead: int = 0,
        unhanded: bool = False,
        sizes: Sequence[float] | None = None,
    ) -> None:
        """The segment was read to its end, by a last page as :meth:`after` takes one: it
        counts for the way it was read, as any page does (a page read on at a segment's end
        cost what it cost: left uncounted, a failed trial that ends a segment would leave
        reading on's ledger clean, and the next segment try again: auto's joined readers read
        four scan-sized trial pages on 1,200 heavy-tailed keys where one reader read one). It
        may fail a trial, but passes none (``PageSize.read_through``'s ``last``); a trial it
        ran ends there; while reading whole, a table read past twice its described share
        proved larger than its description."""
        if self.opening:
            self.opening = False
            self._keys(keys, unhanded)  # (the segment's keys, for Ledgers.table_rate)
            self.pages.grew = self.pages.grew or units > self.units_left
        elif keys or units:
            self._count(keys, units, asked, lead, unhanded, last=True, sizes=sizes)
        if self.trial:
            self.pages.trying = self.trial = False
        if self.joined == self.pages.went_back:  # (its place, for a segment that starts next)
            self.pages.readers = max(0, self.pages.readers - 1)
        self.pages.ledgers.segment_ended(self.handed)
        self.pages.live = max(0, self.pages.live - 1)


def longest_run(keys: Sequence[object]) -> int:
    """The most items of one key in a row in ``keys``."""
    return max((sum(1 for _ in run) for _, run in groupby(keys)), default=0)


def tail_of(keys: Sequence[object]) -> int:
    """How many of ``keys``, at the end, are the same as the last."""
    tail = 0
    while tail < len(keys) and keys[-tail - 1] == keys[-1]:
        tail += 1
    return tail
