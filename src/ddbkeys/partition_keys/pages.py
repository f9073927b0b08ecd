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
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "MAX_PAGE_ITEMS",
    "MAX_PROBE_AFTER",
    "MAX_TARGET",
    "PROBE_AFTER",
    "REGRET",
    "PageSize",
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

    @classmethod
    def for_items_of(cls, average_bytes: float) -> PageSize:
        """Start from the table's average item size (0 when it reports none)."""
        if average_bytes <= 0:
            return cls(limit=8, known=False)
        return cls(limit=max(1, min(MAX_PAGE_ITEMS, int(4096 // average_bytes))))

    def observe(self, items: int, units: float, tail: int, asked: int | None = None) -> int:
        """After a page that asked for ``asked`` items (default: ``limit``), read ``items``,
        cost ``units`` 4 KB read units and ended with ``tail`` items of its last key: the next
        page's limit. A page asked for under another limit (segments read in parallel share
        one PageSize) says nothing about the present limit: only its collections count."""
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
