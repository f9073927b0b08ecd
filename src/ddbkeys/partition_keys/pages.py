"""How many items the next skip-scan page asks for: the decision, apart from the requests.

A Scan page costs its bytes rounded up to the next 4 KB (0.5 read units each, eventually
consistent), however few items it holds. So a page that asks for too few items pays for room it
does not use, and one that asks for too many spills into a second unit for a few bytes. Item
sizes vary, so the right number moves: :class:`PageSize` keeps it near the largest that stays
within its target, learning from what each page cost.

- It starts from the table's average item size (DescribeTable), or from 8 items and doubling
  while pages come back full and within one unit when the table reports no size.
- A page that cost more than its target lowers the limit by one item (by the share it overshot,
  when that was more than one unit), and that limit is not tried again for ``PROBE_AFTER`` pages.
- After ``PROBE_AFTER`` full pages within target in a row it tries one item more.
- Where collections prove small (every one of the last ``SMALL_RUN`` pages found at least
  ``SMALL_KEYS`` keys) and few items fill a unit, pages aim at two units: the rounding then
  costs half as much per byte. The first page that finds a single key (a collection larger than
  the page) brings the target back to one unit, so a large collection costs at most one unit
  more than with one-unit pages.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_PAGE_ITEMS", "PROBE_AFTER", "PageSize"]

MAX_PAGE_ITEMS = 1000
#: Full pages within target, in a row, before one more item is tried.
PROBE_AFTER = 16
#: Pages in a row, each with at least SMALL_KEYS keys, that show collections are small.
SMALL_RUN = 4
SMALL_KEYS = 3
#: Two-unit pages only where a unit holds fewer items than this (large items: rounding bites).
ROUNDING_BITES = 16


@dataclass
class PageSize:
    """The Limit of the next page (``limit``) and what it learned from the pages so far."""

    limit: int
    known: bool = True  # the start came from the table's average item size
    target: int = 1  # read units (4 KB) a page aims at
    ceiling: int = MAX_PAGE_ITEMS  # a limit that overshot: not tried again for a while
    clean: int = 0  # full pages within target since the last change
    small: int = 0  # pages in a row with at least SMALL_KEYS keys

    @classmethod
    def for_items_of(cls, average_bytes: float) -> PageSize:
        """Start from the table's average item size (0 when it reports none)."""
        if average_bytes <= 0:
            return cls(limit=8, known=False)
        return cls(limit=max(1, min(MAX_PAGE_ITEMS, int(4096 // average_bytes))))

    def observe(self, items: int, units: float, keys: int) -> int:
        """After a page that asked for ``limit`` items, read ``items``, cost ``units`` 4 KB read
        units and held ``keys`` distinct keys: the next page's limit."""
        k = self.limit
        per_unit = k / self.target
        if units > self.target:  # overshot: one item less, or the share it overshot
            step = 1 if units <= self.target + 1 else max(1, round(k - k * self.target / units))
            self.ceiling = k
            self.limit = max(1, k - step)
            self.clean = 0
            self.known = True  # no more doubling
        elif items >= k:  # a full page within target
            self.clean += 1
            if not self.known and k * 2 < self.ceiling and self.clean == 1:
                self.limit = min(MAX_PAGE_ITEMS, k * 2)
                self.clean = 0
            elif self.clean >= PROBE_AFTER:
                self.ceiling = MAX_PAGE_ITEMS
                self.limit = min(MAX_PAGE_ITEMS, k + 1)
                self.clean = 0
        if self.limit >= self.ceiling:
            self.limit = max(1, self.ceiling - 1)
        self.small = self.small + 1 if keys >= SMALL_KEYS else 0
        if self.target == 1 and self.small >= SMALL_RUN and per_unit < ROUNDING_BITES:
            self._retarget(2)
        elif self.target > 1 and keys <= 1:
            self._retarget(1)
        return self.limit

    def _retarget(self, target: int) -> None:
        self.limit = max(1, min(MAX_PAGE_ITEMS, self.limit * target // self.target))
        self.ceiling = MAX_PAGE_ITEMS
        self.target = target
        self.clean = 0
