"""How many items the next skip-scan page asks for: the decision, apart from the requests.

A Scan page costs its bytes rounded up to the next 4 KB (0.5 read units each, eventually
consistent), however few items it holds. So a page that asks for too few items pays for room it
does not use, and one that asks for too many spills into a second unit for a few bytes. Item
sizes vary, so the right number moves: :class:`PageSize` keeps it near the largest that stays
within its target, learning from what each page cost.

- It starts from the table's average item size (DescribeTable), or from 8 items and doubling
  while pages come back full and within target when the table reports no size.
- A page that cost more than its target lowers the limit by one item (by the share it overshot,
  when that was more than one unit), and that limit is not tried again until the next probe.
- After ``PROBE_AFTER`` full pages within target in a row, each holding more than one
  collection, it tries one item more (a page of a single collection would gain nothing from
  it: one item more there only reads more of a collection that is skipped anyway). A probe that
  overshoots doubles the wait before the next (up to ``MAX_PROBE_AFTER`` pages), and one that
  fits brings it back to ``PROBE_AFTER``: where the limit is already the most that fits, probing
  costs a few units a listing, not one unit every ``PROBE_AFTER`` pages.
- Where collections prove small, pages grow: the target (4 KB units a page aims at) doubles
  each time the pages read since the last sign of a large collection cost ``REGRET`` times the
  new target, up to what ``MAX_PAGE_ITEMS`` items hold. Larger pages pay the rounding up to the
  next 4 KB less often and take fewer requests, so where every collection is small the listing
  reads like a plain scan, at about its cost and speed.
- A page whose last collection filled a unit or more (its ``tail``: the items of the page's
  last key, a collection as large as a one-unit page or larger, whose rest is skipped) brings the
  target back to one unit and starts the count again. Such a page cost at most ``target - 1``
  units more than a one-unit page would have, and the target got there only after ``REGRET``
  times as much was read: so growing costs at most about ``1 / REGRET`` more than never growing,
  wherever the large collections lie, and where they are frequent the pages stay small.
- Skipping past a page's last collection saves nothing where collections end about where a
  one-unit page does (each a unit or so): the listing would then read what a scan reads, in a
  request per collection. So after ``LOOK_AFTER`` skips past a collection that filled its page,
  one segment tries reading on through instead, like a scan, from one-unit pages (a unit's
  items at the table's average item size, or the skipping pages' count where larger; the others
  skip meanwhile; :class:`Reading`). What it reads is judged against the skipping before it:
  once a ``window`` of read units costs at most ``WASTE`` more a key, every segment reads
  through, and pages and windows double (up to ``MAX_TARGET`` units and ``MAX_WINDOW``); as
  soon as a key costs more (or no next key could make it up), skipping starts again at one
  unit and the next trial waits twice as long (up to ``MAX_PROBE_AFTER`` skips). A trial that
  fails costs about a unit or two; reading through for good costs at most about ``WASTE``
  more, plus a page where the table changes under it, and saves the requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

__all__ = [
    "LOOK_AFTER",
    "MAX_PAGE_ITEMS",
    "MAX_PROBE_AFTER",
    "MAX_TARGET",
    "MAX_WINDOW",
    "PROBE_AFTER",
    "REGRET",
    "WASTE",
    "WINDOW",
    "PageSize",
    "Reading",
    "tail_of",
]

MAX_PAGE_ITEMS = 1000
#: The most 4 KB units a page aims at (256 KB: a quarter of DynamoDB's 1 MB page).
MAX_TARGET = 64
#: Full pages within target, in a row, before one more item is tried.
PROBE_AFTER = 16
#: The longest wait between probes, after probes that overshot.
MAX_PROBE_AFTER = 1024
#: Units read since the last such sign, as a multiple of the new target, before pages grow.
REGRET = 4
#: Skips past a collection that filled its page, before a trial of reading through.
LOOK_AFTER = 16
#: Read units a trial of reading through reads before it is first judged (the window doubles
#: with each judgement it passes, up to ``MAX_WINDOW``).
WINDOW = 4
MAX_WINDOW = 64
#: How much more a key may cost read through than skipping (it saves requests).
WASTE = 0.05


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
    through: bool = False  # every segment reads on through, like a scan
    trying: bool = False  # one segment's trial of reading through is under way
    unit_items: int = 0  # the items of a unit, when the last trial started
    through_target: int = 1  # read units (4 KB) a page read through aims at
    skips: int = 0  # skips past a collection that filled its page, since the last trial
    look_after: int = LOOK_AFTER  # such skips before the next trial
    skip_units: float = 0.0  # read units of the skipping pages since the last trial
    skip_keys: int = 0  # the keys they handed out
    through_units: float = 0.0  # read units read through since the last judgement
    through_keys: float = 0.0  # the keys they handed out
    window: float = WINDOW  # read units read through before the next judgement
    item_bytes: float = 0.0  # the table's average item size (0: unknown)

    @classmethod
    def for_items_of(cls, average_bytes: float) -> PageSize:
        """Start from the table's average item size (0 when it reports none)."""
        if average_bytes <= 0:
            return cls(limit=8, known=False)
        return cls(limit=items_a_unit(average_bytes), item_bytes=average_bytes)

    def observe(self, items: int, units: float, tail: int, asked: int | None = None) -> int:
        """After a page that asked for ``asked`` items (default: ``limit``), read ``items``,
        cost ``units`` 4 KB read units and ended with ``tail`` items of its last key: the next
        page's limit. A page asked for under another limit (segments read in parallel share
        one PageSize) says nothing about the present limit: only its collections count."""
        if self.through:
            return self.limit
        per_unit = self.limit / self.target
        if asked is None or asked == self.limit:
            self._fit(items, units, several=tail < items)
        if tail >= per_unit:
            self.credit = 0.0
            if self.target > 1:
                self._retarget(1)
        else:
            self.credit += units
            grown = self.target * 2
            if (
                grown <= MAX_TARGET
                and self.limit < MAX_PAGE_ITEMS
                and self.credit >= REGRET * grown
            ):
                self._retarget(grown)
        return self.limit

    def skip_past(self, tail: int) -> bool:
        """Whether the next page skips past the last collection of this one, which ended with
        ``tail`` items of it (after :meth:`observe`). After ``look_after`` skips past a
        collection that filled its page, False: that segment's next page starts a trial of
        reading on through (``trying``; one at a time, the other segments skip meanwhile)."""
        if tail < self.limit / self.target:  # a small collection: nothing to look at
            return True
        self.skips += 1
        if self.trying or self.skips < self.look_after or not self.skip_keys:
            return True
        # (A unit's items at the table's average size where known: where item sizes vary, the
        # limit fits the largest, and pages of an item or two read through would judge each
        # small item at a whole unit, and start inside the collection looked past.)
        average = items_a_unit(self.item_bytes) if self.item_bytes else 0
        self.unit_items = max(1, self.limit // self.target, average)
        self.trying, self.skips, self.window, self.through_target = True, 0, WINDOW, 1
        self.through_units, self.through_keys = 0.0, 0.0
        return False

    @property
    def through_limit(self) -> int:
        """The Limit of a page read through."""
        return min(MAX_PAGE_ITEMS, self.unit_items * self.through_target)

    def skipped(self, units: float, keys: int) -> None:
        """A skipping page cost ``units`` and handed out ``keys``."""
        self.skip_units += units
        self.skip_keys += keys

    def read_through(self, units: float, keys: int, items: int) -> None:
        """A page read through (in the trial, or by any segment once ``through``) cost
        ``units``, read ``items`` and handed out ``keys``. Its cost is judged as the items'
        share of 4 KB units at the table's average item size where known (the pages grow: the
        rounding up to the next 4 KB that small pages pay is not what reading through costs),
        held within the unit of rounding below what the page cost (items larger than the
        average, or a DescribeTable hours old, are not taken for cheap ones),
        else as the units it cost. It goes on while a key costs at most ``WASTE`` more than
        skipping (with one key more once some came: pages cut collections; a first page that
        held none ends it), and after each window's worth
        (the first ends the trial: every segment reads through), in pages twice as large (up to
        ``MAX_TARGET`` units), with a window twice as long and what was read before counting
        half; else skipping starts again at one unit, and the next trial waits twice as
        long."""
        # (A page costs its bytes rounded up to a unit: within one unit of what they cost.)
        share = items * self.item_bytes / 4096 if self.item_bytes else units
        self.through_units += min(units, max(units - 1, share))
        self.through_keys += keys
        most = (1 + WASTE) * self.skip_units / self.skip_keys  # read units a key
        # One key more where some came (pages cut collections); none before: a page of the
        # collection looked past and nothing else is one a skip would have saved.
        if self.through_units <= most * (self.through_keys + 1 if self.through_keys else 0):
            if self.through_units >= self.window:
                if self.window >= MAX_WINDOW:  # held for long: a later trial need not wait
                    self.look_after = LOOK_AFTER
                self.through, self.trying = True, False
                self.window = min(MAX_WINDOW, self.window * 2)
                self.through_target = min(MAX_TARGET, self.through_target * 2)
                self.through_units /= 2  # what was read long ago counts less
                self.through_keys /= 2
            return
        self.through = self.trying = False
        self.look_after = min(MAX_PROBE_AFTER, self.look_after * 2)
        self._retarget(1)  # skipping again, at one unit
        self.limit, self.credit = self.unit_items, 0.0
        self.skip_units, self.skip_keys = 0.0, 0

    def _fit(self, items: int, units: float, *, several: bool) -> None:
        """Keep the limit near the most items that stay within the target."""
        k = self.limit
        if units > self.target:  # overshot: one item less, or the share it overshot
            if self.probing:
                self.probe_after = min(MAX_PROBE_AFTER, self.probe_after * 2)
            self.probing = False
            step = 1 if units <= self.target + 1 else max(1, round(k - k * self.target / units))
            self.ceiling = k
            self.limit = max(1, k - step)
            self.clean = 0
            self.known = True  # no more doubling
        elif items >= k:  # a full page within target
            if self.probing:
                self.probe_after = PROBE_AFTER
            self.probing = False
            if several:
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


@dataclass
class Reading:
    """One segment's reading, with the :class:`PageSize` every segment shares (the caller
    holds a lock around :meth:`after` where segments run in parallel): the last key of a page
    the next page reads on through, so that a key is counted once."""

    pages: PageSize
    last: object = None  # the last page's last key, when the next page reads on through it
    trial: bool = False  # this segment runs the trial of reading through

    def after(
        self, keys: Sequence[object], units: float, asked: int | None = None
    ) -> tuple[int, bool]:
        """After a page of items whose partition keys were ``keys`` (in order), which cost
        ``units`` 4 KB read units and asked for ``asked`` items: the next page's limit, and
        whether it skips past the page's last collection. A page read on counts for reading
        through while this segment's trial or reading through lasts; one that skipped counts
        for skipping; each is judged by the way it was asked for, whatever the other
        segments changed meanwhile."""
        pages = self.pages
        read_on = self.last is not None
        tail = tail_of(keys)
        if keys:
            new = sum(1 for a, b in pairwise(keys) if a != b) + (keys[0] != self.last)
            if not read_on:
                pages.skipped(units, new)
                pages.observe(len(keys), units, tail, asked)
            elif self.trial or pages.through:
                pages.read_through(units, new, len(keys))
        elif not read_on:
            pages.observe(0, units, 0, asked)
        self.trial = self.trial and pages.trying
        if self.trial or pages.through:
            skip = False
        else:
            skip = not keys or pages.skip_past(tail)
            self.trial = not skip
        if keys or skip:
            self.last = None if skip else keys[-1]
        return (pages.limit if skip else pages.through_limit), skip

    def end(self) -> None:
        """The segment was read to its end: a trial it ran ends unjudged."""
        if self.trial:
            self.pages.trying = self.trial = False


def tail_of(keys: Sequence[object]) -> int:
    """How many of ``keys``, at the end, are the same as the last."""
    tail = 0
    while tail < len(keys) and keys[-tail - 1] == keys[-1]:
        tail += 1
    return tail
