"""The sampled collections laid end to end, as the simulation of skip-pages reads them
(:mod:`ddbkeys.partition_keys._tasks.simulate`): the pages a Limit asks for over them, with the
rest of each collection the sample cut. Pure."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from ddbkeys.partition_keys._listing.scan import PAGE_ITEMS as SCAN_PAGE_ITEMS
from ddbkeys.partition_keys._tasks.sampled import Collection

__all__ = ["MB", "NO_REST", "Rest", "Stream", "laid"]

MB = 1024 * 1024


@dataclass(frozen=True)
class Rest:
    """How many items a collection whose rest the sample skipped holds past what it read, and
    their size (the average of the table's items the sample did not read; 0: of the
    collection's items read)."""

    items: int = 0
    size: float = 0.0  # an item's bytes (0: the average of the collection's items read)

    @classmethod
    def of(cls, items: float, cut: int, size: float = 0.0) -> Rest:
        """The rest of each of ``cut`` collections, sharing ``items`` (of ``size`` bytes
        each; 0: as each collection's items read)."""
        if cut <= 0 or items < 1:
            return cls()
        return cls(round(items / cut), size)

    def each(self, sizes: Sequence[int]) -> float:
        """The bytes of an item of the rest of a cut collection whose items read were
        ``sizes``."""
        return self.size or (sum(sizes) / len(sizes) if sizes else 0.0)

    def bytes_of(self, sizes: Sequence[int]) -> float:
        """The bytes of the rest of a cut collection whose items read were ``sizes``."""
        return self.items * self.each(sizes) if sizes else 0.0


@dataclass
class Stream:
    """The collections laid end to end (each with the segment it came from), and where the
    next page starts."""

    collections: list[Collection]
    origins: list[int]
    rest: Rest
    at: int = 0  # the collection the next page starts in
    item: int = 0  # ... at this item of it
    sizes: list[float] = field(default_factory=list)  # the last page's items' bytes
    #: Where the segment being read ends (None: the stream's end): pages stop there.
    stop: int | None = None

    @property
    def end(self) -> int:
        """The collection the segment being read ends before."""
        return len(self.collections) if self.stop is None else self.stop

    def length(self, index: int) -> int:
        sizes, cut, _ = self.collections[index]
        return len(sizes) + (self.rest.items if cut else 0)

    def bytes(self, index: int) -> float:
        """The bytes of collection ``index`` (its rest at the average of its items read)."""
        sizes, cut, _ = self.collections[index]
        return sum(sizes) + (self.rest.bytes_of(sizes) if cut else 0.0)

    def page(self, limit: int | None) -> tuple[list[int], list[tuple[int, int]], int, bool]:
        """The next page (up to ``limit`` items, or 1 MB; scan-sized, None: up to a scan's
        ``PAGE_ITEMS``, as the listing asks): each item's collection, the bytes read of each
        collection in it, how many of its first items are ddbkeys' own ones that lead its
        first collection (``Collection.lead``), and whether its last collection showed none
        of yours so far (the listing's next page goes on in it). Its items' bytes: ``sizes``."""
        self.more()
        self.sizes = []
        start = self.item
        keys, parts = self._page(limit)
        if not keys:
            return keys, parts, 0, False
        first, last = self.collections[keys[0]], keys[-1]
        lead = min(keys.count(keys[0]), max(0, first.lead - start))
        read = self.item if self.at == last else self.length(last)
        return keys, parts, lead, read <= self.collections[last].lead

    def _page(self, limit: int | None) -> tuple[list[int], list[tuple[int, int]]]:
        keys: list[int] = []
        parts: list[tuple[int, int]] = []
        size = 0
        most = limit if limit is not None else SCAN_PAGE_ITEMS
        while len(keys) < most and self.at < self.end:
            sizes = self.collections[self.at].sizes
            if self.item >= self.length(self.at):
                self.at, self.item = self.at + 1, 0
                continue
            start = size
            if self.item < len(sizes):
                known = sizes[self.item : self.item + int(min(most - len(keys), len(sizes)))]
                taken = 0
                for item in known:
                    if keys and size + item > MB:
                        break
                    keys.append(self.at)
                    self.sizes.append(item)
                    size += item
                    taken += 1
                self.item += taken
                if taken < len(known) or not taken:
                    parts.append((self.at, size - start))
                    break
            else:
                each = self.rest.each(sizes)
                room = int((MB - size) // each) if keys else max(1, int(MB // each))
                take = int(min(most - len(keys), self.length(self.at) - self.item, room))
                if take <= 0:
                    break
                keys += [self.at] * take
                self.sizes += [each] * take
                size += math.ceil(take * each)
                self.item += take
            parts.append((self.at, size - start))
        return keys, parts

    def more(self) -> bool:
        while self.at < self.end and self.item >= self.length(self.at):
            self.at, self.item = self.at + 1, 0
        return self.at < self.end


def laid(
    runs: Sequence[Sequence[Collection]], keys: int, rng: random.Random | None
) -> tuple[list[Collection], list[int]]:
    """The segments end to end (in their order, or drawn by ``rng``, drawn again until
    ``keys`` collections), and the segment each collection came from."""
    stream: list[Collection] = []
    origins: list[int] = []
    if not any(runs):
        return stream, origins
    while len(stream) < keys:
        order = list(range(len(runs)))
        if rng is not None:
            rng.shuffle(order)
        for segment in order:
            stream += runs[segment]
            origins += [segment] * len(runs[segment])
    return stream[:keys], origins[:keys]


#: No collection cut: nothing beyond what the sample read.
NO_REST = Rest()
