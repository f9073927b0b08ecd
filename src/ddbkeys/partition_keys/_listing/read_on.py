"""Whether skip-pages goes on as a scan: the two ledgers it keeps, and what they say. Pure.

:class:`Ledgers` holds, for the whole listing, the read units, keys and pages of the pages that
skipped, and of those read on as a scan (:mod:`ddbkeys.partition_keys._listing.pages` says when
each is read, and the bound this judgement keeps). Scan order is the partition keys' hash
order, which says nothing of a collection's size, so each ledger's units a key is a sample,
growing with the listing, of what that way costs a key on the whole table.

**What decides**: the ledgers are kept over the whole listing, not short windows (noise, where
sizes are heavy-tailed). Pages read on are priced at the table's average item size (their items'
share of ``TableSizeBytes``: what the whole scan costs), so one 40 KB item among 300-byte ones
adds no noise; once they cost ``MAX_TARGET`` units more than that (an average that misleads), at
their cost, but for pages whose every collection fits a skipping page (skipping would read their
large items too). Skipping's rate is the higher of its units a key over all its pages and what
a unit of its present limit costs a key (``Ledgers.skip_rate``: a limit fallen to a large
item's).
Reading on goes on while its units a key are within ``1 + WASTE`` of skipping's plus ``SPREAD``
times that rate's relative standard error, as its pages show it (pages that agree say it
exactly; at least ``FLOOR / pages``), and no page of ``MAX_TARGET`` units or more costs twice
that a key on its own; while that error is over ``SETTLED`` (``Ledgers.settled``), or the pages
read on cost a key more than ``1 + WASTE`` times skipping's (``Ledgers.doubtful``: they pass on
that error alone), only as long as what reading on cost beyond skipping is within ``WASTE`` of
all read, plus ``LEEWAY``, in pages no larger than that bound leaves room for
(``Ledgers.room``).
Once a Scan segment of several has ended, what reading on costs a key over the whole table
weighs in too (``Ledgers.table_rate``).
Skipping's rate keeps learning from a skipping page after every other scan-sized page (while
under ``SAMPLE_PAGES``; not where reading on began because collections proved small), and from
the pages read on that asked for whole items (``Reading.whole_items``): their items' sizes say
what skipping would have cost their collections (``Ledgers.seen``), a hundred samples a page
for no request. Pages stay
within ``MAX_TARGET`` units until the keys read on would have met large collections at the rate
the skipping pages did (``HOLD``). A trial that fails sends the listing back to skipping at one
unit; the next waits twice as many skips, and until what reading on cost beyond skipping's rate
is within ``WASTE`` of all read, plus ``LEEWAY``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "CUT",
    "FLOOR",
    "HOLD",
    "HOLD_UNMET",
    "LEEWAY",
    "MAX_TARGET",
    "PAIR_KEYS",
    "PAIR_PAGES",
    "PRIOR",
    "SCAN_UNITS",
    "SETTLED",
    "SPREAD",
    "WASTE",
    "Ledgers",
    "ratio_error",
    "squared",
]

#: The most 4 KB units a page with a Limit aims at (256 KB); read on as a scan, the next is
#: scan-sized (DynamoDB's 1 MB).
MAX_TARGET = 64
#: How much more a key may cost read on as a scan than skipping (it saves requests).
WASTE = 0.05
#: Read units a trial may start with beyond ``WASTE`` of all read (see the bound).
LEEWAY = MAX_TARGET / 2
#: How many times its standard error skipping's rate may be off.
SPREAD = 2
#: The least relative error skipping's rate is taken to have, times sqrt(pages): a few pages
#: that happen to agree (a run of tiny items) do not prove it.
FLOOR = 0.5
#: Keys read on, as a multiple of those that make one large collection at the skipping pages'
#: rate, before pages read on are scan-sized; ``HOLD_UNMET`` where the pages read on have met
#: none yet (at that many expected, all are missed about one time in 400).
HOLD = 2
HOLD_UNMET = 6
#: The least 4 KB units, and skipping units' items, of a collection a page read on ended in
#: that counts as cut (``through_cut``): a larger page would have read more of it.
CUT = 8
#: A scan-sized page's 4 KB units (DynamoDB's 1 MB).
SCAN_UNITS = 256
#: Keys of the table's own rate a reading on is judged with, once known (``table_rate``).
PRIOR = 64
#: Pages read on whole, and their keys, before what they show of both ways on the same keys
#: (``Ledgers.pair``) judges reading on: two pages' spread says little of the ratio's error,
#: nor do a few keys of a heavy tail (14 keys in 4 pages passed reading on at 1.14x).
PAIR_PAGES = 4
PAIR_KEYS = 64
#: The relative error of skipping's rate (``Ledgers.error``) up to which it is taken as known:
#: reading on goes on past what it cost beyond skipping, while its pages pass.
SETTLED = 0.25


@dataclass
class Ledgers:
    """What skipping and reading on as a scan cost so far, and the judgement between them."""

    item_bytes: float = 0.0  # the table's average item size (0: unknown)
    skip_units: float = 0.0  # read units of the pages that skipped
    skip_keys: int = 0  # the keys they handed out
    skip_items: int = 0  # the items they read
    skip_pages: int = 0  # how many they were
    large: int = 0  # ... whose last collection filled a unit
    through_units: float = 0.0  # read units of the pages read on, priced (see read)
    through_cost: float = 0.0  # ... and as they cost
    through_keys: int = 0  # the keys they handed out
    through_large: int = 0  # ... those that met a collection of a skipping unit or more
    through_cut: int = 0  # ... those that ended in a collection of ``CUT`` units or more

    seen_units: float = 0.0  # what skipping would have cost collections read on whole
    seen_keys: int = 0  # ... their keys (``seen``)
    seen_items: int = 0  # ... the items those skipping pages would have read
    seen_pages: int = 0  # ... and how many they would have been
    skip_squares: tuple[float, float, float] = (0.0, 0.0, 0.0)  # sums of u*u, u*k, k*k
    pair_on: float = 0.0  # what pages read on whole cost for the collections seen (``paired``)
    pair_skip: float = 0.0  # ... what skipping would have cost those
    pair_keys: int = 0  # ... their keys
    pair_pages: int = 0  # ... and the pages read on they came from
    pair_squares: tuple[float, float, float] = (0.0, 0.0, 0.0)  # sums of o*o, o*s, s*s
    table_units: float = 0.0  # the table's 4 KB units, by its description (0: unknown)
    segments: int = 1  # the listing's Scan segments
    ended: int = 0  # ... read to their end
    ended_keys: int = 0  # ... and the keys they handed out
    unit_items: float = 0.0  # items a unit of skipping pages asks for now (0: unknown)
    few_pages: bool = False  # a scan reads the table in a few pages (``pages.few_pages``)

    def skip_rate(self) -> float:
        """What skipping costs a key from here: its units a key over all its pages, or, where
        its limit has fallen since (a large item met: the limit fits the largest items), what
        a unit of the present limit costs a key, at the keys an item its pages handed out (a
        skipping page starts a collection: one key at least), if that is more. Skipping's
        first pages, before the large item, would hold reading on to a rate skipping no
        longer has (on heavy-tailed item sizes, 0.22 units a key where a page of 2 items now
        costs a unit a key: trials failed against it for 85 requests where a scan takes 2)."""
        units, keys_of, items = self._skipping()
        rate = units / keys_of
        if self.unit_items and items:
            keys = self.unit_items * keys_of / items
            rate = max(rate, 1 / max(1.0, keys))
        return rate

    @property
    def table_rate(self) -> float:
        """What reading on costs a key over the whole table (0: not known): its 4 KB units
        (DescribeTable) over the keys the Scan segments ended so far show it holds. It weighs
        in :meth:`passing` as ``PRIOR`` keys read on: where a heavy tail of collection sizes
        carries the table, a few pages of small collections no longer pass a trial that a
        scan-sized page then fails (1,200 keys of Pareto counts and sizes, shapes 0.8 and 0.7,
        in 30 segments: 1.08x skipping's units, the median of 20 orders, 0.99x with it)."""
        if not (self.table_units and self.ended_keys and self.segments > 1):
            return 0.0
        return self.table_units * self.ended / (self.ended_keys * self.segments)

    def segment_ended(self, keys: int) -> None:
        """A Scan segment was read to its end, having handed out ``keys``."""
        self.ended += 1
        self.ended_keys += keys

    def skipped(self, units: float, keys: int, items: int) -> None:
        """A skipping page cost ``units``, read ``items`` and handed out ``keys``."""
        self.skip_units += units
        self.skip_keys += keys
        self.skip_items += items
        self.skip_pages += 1
        self.skip_squares = squared(self.skip_squares, units, keys)

    def seen(self, units: float, keys: int, items: int) -> None:
        """A skipping page would have cost ``units``, read ``items`` and handed out ``keys``,
        over the items of a page read on whole (:func:`skipping_over`): a sample of what
        skipping costs, as a skipping page is, for no request."""
        self.seen_units += units
        self.seen_keys += keys
        self.seen_items += items
        self.seen_pages += 1
        self.skip_squares = squared(self.skip_squares, units, keys)

    def samples(self) -> int:
        """The samples of what skipping costs: skipping pages, and those :meth:`seen`."""
        return self.skip_pages + self.seen_pages

    def _skipping(self) -> tuple[float, int, int]:
        """Skipping's units, keys and items, of its pages and those :meth:`seen`."""
        return (
            self.skip_units + self.seen_units,
            self.skip_keys + self.seen_keys,
            self.skip_items + self.seen_items,
        )

    def went_on(self, units: float, keys: int, items: int, *, read_on: bool) -> None:
        """The rest of a page that ended on a collection showing ddbkeys' own items alone (its
        next item says whether it holds yours) cost ``units``: counted in the way that page
        was read (``read_on``), not as a page of its own."""
        if read_on:
            self.through_units += items * self.item_bytes / 4096 if self.item_bytes else units
            self.through_cost += units
            self.through_keys += keys
        else:
            self.skip_units += units
            self.skip_keys += keys
            self.skip_items += items

    def read(
        self,
        units: float,
        keys: int,
        items: int,
        *,
        fits: bool = False,
        longest: int = 0,
        tail: int = 0,
    ) -> bool:
        """A page read on cost ``units``, read ``items`` and handed out ``keys``. It is priced
        at the table's average item size where known (its items' share of ``TableSizeBytes``,
        which is what the whole scan costs): one 40 KB item among 300-byte ones says little
        about the next page, while the average holds every item. What it cost beyond that
        counts against reading on (:meth:`passing`), unless each of its collections ``fits`` a
        skipping page: skipping would read all their items too (30,000 single-item keys, 8 of
        them a 300 KB item: a page that met one would end reading on). ``longest``: the most
        items of one collection in the page (``through_large``); ``tail``: of the one it
        ended in, whose rest it skipped (``through_cut``). False where the page
        alone, ``MAX_TARGET`` units or more, cost a key twice what :meth:`passing` allows: the
        table changed under the pages read on (their rate, over all, would hide it for
        long)."""
        priced = items * self.item_bytes / 4096 if self.item_bytes else units
        self.through_units += priced
        self.through_cost += min(units, priced) if fits else units
        self.through_keys += keys
        self.through_large += 0 < self.unit_items <= longest
        self.through_cut += tail >= CUT * self.unit_items > 0 and tail * units >= CUT * items
        most = 2 * self.allowed() * self.skip_rate() * keys
        return units < MAX_TARGET or min(priced, units) <= most

    def promising(self) -> bool:
        """Whether the skipping pages cost more than ``WASTE`` above what their items would
        have a key read on, at the table's average item size: a lower bound of what reading
        on costs a key (a collection a page cut is counted by the items read of it)."""
        items = self.skip_items * self.item_bytes / 4096
        return bool(self.item_bytes) and self.skip_units > (1 + WASTE) * items

    def passing(self) -> bool:
        """Whether the pages read on cost a key at most :meth:`allowed` times what skipping
        costs (:meth:`skip_rate`), priced as :meth:`read` says until what they cost exceeds
        that by ``MAX_TARGET`` units (an average that misleads: a DescribeTable hours old, or
        large items gathered where reading on read)."""
        if pair := self.pair():
            ratio, error = pair
            return ratio <= 1 + WASTE + SPREAD * error
        priced, keys = self._priced(), self.through_keys
        if rate := self.table_rate:  # (a few pages read on say little of a heavy tail)
            priced, keys = priced + PRIOR * rate, keys + PRIOR
        return priced <= self.allowed() * self.skip_rate() * keys

    def doubtful(self) -> bool:
        """Whether the pages read on cost a key more than ``1 + WASTE`` times what skipping
        does (skipping would save more than ``WASTE``), though :meth:`allowed` lets them pass:
        skipping's rate is not yet known well enough to tell."""
        if pair := self.pair():
            return pair[0] > 1 + WASTE
        if not (self.through_keys and self.skip_keys):
            return False
        return self._priced() > (1 + WASTE) * self.skip_rate() * self.through_keys

    def undecided(self) -> bool:
        """Whether more samples of what skipping costs may yet turn the judgement: the pages
        read on cost a key within ``SPREAD`` times skipping's error of ``1 + WASTE`` times what
        skipping does (or none were read on yet). Not that the judgement now passes or fails:
        a few skipping pages that met more large items than their share pass pages read on at
        1.2 times skipping's true rate as settled and not doubtful."""
        if pair := self.pair():
            return abs(pair[0] - 1 - WASTE) <= SPREAD * pair[1]
        if not (self.through_keys and self.samples()):
            return True
        ratio = self._priced() / (self.skip_rate() * self.through_keys)
        return abs(ratio - 1 - WASTE) <= SPREAD * self.error()

    def fails(self) -> bool:
        """Whether the pages read on whole show that reading on costs more than ``1 + WASTE``
        times what skipping would, beyond ``SPREAD`` times that ratio's error (:meth:`pair`):
        trials that start as skipping pages cost more than their items (``promising``) then
        wait twice as long after each (on 1,200 keys of Pareto counts and sizes, a trial of a
        page or two every 8 skipping pages, each sending skipping back to one unit: 1.21x)."""
        pair = self.pair()
        return pair is not None and pair[0] - SPREAD * pair[1] > 1 + WASTE

    def paired(self, on: float, skip: float, keys: int) -> None:
        """A page read on whole cost ``on`` 4 KB units for collections of ``keys`` keys that
        skipping would have read for ``skip`` (:func:`skipping_over`)."""
        self.pair_on += on
        self.pair_skip += skip
        self.pair_keys += keys
        self.pair_pages += 1
        self.pair_squares = squared(self.pair_squares, on, skip)

    def pair(self) -> tuple[float, float] | None:
        """What reading on costs over what skipping would have, on the same collections (the
        pages read on whole: :meth:`paired`), and that ratio's relative error (at least
        ``FLOOR`` over the square root of their keys); None before ``PAIR_PAGES`` such pages
        and ``PAIR_KEYS`` keys. Which keys met large items weighs on both alike, so the ratio
        is known far sooner than either way's rate (keys of 5 items of 1 KB whose first is 30
        KB one time in seven: reading on costs 1.11 times skipping, within a percent or two
        after a few pages). None too where they hold under half the keys read on: pages of
        small collections read whole, then larger ones read on for their keys alone, say
        little of those."""
        pages = self.pair_pages
        keys = self.pair_keys
        if pages < PAIR_PAGES or keys < PAIR_KEYS or 2 * keys < self.through_keys:
            return None
        ratio = self.pair_on / max(self.pair_skip, 1.0)
        if ratio <= 0:  # (pages that said they cost nothing)
            return None
        error = ratio_error(self.pair_squares, pages, self.pair_skip, ratio)
        return ratio, max(error, FLOOR / math.sqrt(keys))

    def _priced(self) -> float:
        """The pages read on, priced as :meth:`read` says until what they cost exceeds that
        by ``MAX_TARGET`` units (an average that misleads), then at their cost."""
        return max(self.through_units, self.through_cost - MAX_TARGET)

    def allowed(self) -> float:
        """How many times skipping's units a key a key read on may cost: ``1 + WASTE``, plus
        ``SPREAD`` times the relative error of skipping's rate, as its pages show it (the
        standard error of a ratio of sums: pages that each cost a unit for a key say it
        exactly; pages of tiny items that hand out ten keys a unit, between pages of a large
        item that hand out one, say it loosely)."""
        return 1 + WASTE + SPREAD * self.error()

    def error(self) -> float:
        """The relative standard error of skipping's units a key, as its pages show it (at
        least ``FLOOR / pages``; 1 before two pages)."""
        pages = self.samples()
        if pages < 2:
            return 1.0
        units, keys, _ = self._skipping()
        rate = units / keys
        return max(ratio_error(self.skip_squares, pages, keys, rate), FLOOR / pages)

    def met_enough(self) -> bool:
        """Whether pages read on may be scan-sized: the keys read on are ``HOLD`` times as
        many as make a collection that filled a skipping page, at the skipping pages' rate
        (all theirs, where they met none), ``HOLD_UNMET`` times and as many as a 1 MB page
        holds where the pages read on met none (``through_large``); a 1 MB page would end in
        a collection of ``CUT`` units at most once (``through_cut``: it reads 1 MB of each);
        a key of the table (``table_rate``) costs at most ``HOLD_UNMET`` times one read on.
        Else a huge collection may not have shown (3,000 keys of 300 bytes, one of 24 MB, 23
        segments: 259 RCU, now 140; one in 300 of 3,000 items of 400 bytes, one segment:
        1.25-1.37x skipping's units, now at most 1.10x). Not on ``few_pages`` tables."""
        hold = HOLD if self.through_large or not self.large else HOLD_UNMET
        if self.through_keys * max(1, self.large) < hold * self.skip_keys:
            return False
        if self.few_pages or not self.through_cost:
            return True
        held = self.through_keys / self.through_cost * SCAN_UNITS  # (keys of a 1 MB page)
        if self.through_cut * held > self.through_keys:
            return False
        if self.table_rate * self.through_keys > HOLD_UNMET * self.through_cost:
            return False
        return bool(self.through_large) or self.skip_keys + self.through_keys >= held

    def settled(self) -> bool:
        """Whether skipping's rate is known to within ``SETTLED`` (:meth:`error`). Until then
        pages read on pass only while what they cost beyond skipping is within
        :meth:`may_try`'s bound (``PageSize.read_through``). Where first items' sizes are
        heavy-tailed, one skipping page that met a 40 KB item puts skipping's rate at twice
        what it is, and its error lets pages read on at three times skipping's cost a key
        pass (1,200 keys of Pareto item counts and sizes: up to 1.51x skipping's units)."""
        return self.error() <= SETTLED

    def excess(self) -> float:
        """What the pages read on cost beyond what skipping would have, at its units a key."""
        units, keys, _ = self._skipping()
        return self.through_units - units / keys * self.through_keys

    def room(self) -> float:
        """The units a page read on may cost while it passes on skipping's error alone
        (:meth:`doubtful`): as many as keep what reading on cost beyond skipping within
        :meth:`allowance`, if that page costs beyond skipping the share reading on's pages
        have so far (no limit where that share is ``WASTE`` or less). Such a trial fails on a
        page of this size, not a scan-sized one (600 keys of a 30 KB item and a 50-byte one,
        either first: scan-sized pages read on at 1.6 times skipping's units a key)."""
        if not (self.through_units and self.skip_keys):
            return math.inf
        excess = self.excess()
        share = excess / self.through_units
        if share <= WASTE:
            return math.inf
        return max(0.0, self.allowance() - excess) / (share - WASTE)

    def allowance(self) -> float:
        """What reading on may cost beyond skipping: ``WASTE`` of all read, plus ``LEEWAY``."""
        return WASTE * (self.skip_units + self.through_units) + LEEWAY

    def may_try(self) -> bool:
        """Whether a trial of reading on may start: what reading on cost beyond skipping is
        within :meth:`allowance`."""
        return self.excess() <= self.allowance()


def squared(sums: tuple[float, float, float], a: float, b: float) -> tuple[float, float, float]:
    """Sums of ``a*a``, ``a*b`` and ``b*b``, with one more pair."""
    aa, ab, bb = sums
    return aa + a * a, ab + a * b, bb + b * b


def ratio_error(
    sums: tuple[float, float, float], samples: int, denominator: float, ratio: float
) -> float:
    """The relative standard error of ``ratio``, a ratio of two sums over ``samples`` pairs
    (their :func:`squared` sums; the second sum: ``denominator``)."""
    aa, ab, bb = sums
    spread = max(0.0, aa - 2 * ratio * ab + ratio * ratio * bb) / (samples * (samples - 1))
    return math.sqrt(spread) * samples / denominator / ratio
