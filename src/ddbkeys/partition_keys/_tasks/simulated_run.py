"""The pages skip-pages reads over the sampled collections laid end to end (a
:class:`~ddbkeys.partition_keys._tasks.stream.Stream`), as the simulation of
:mod:`ddbkeys.partition_keys._tasks.simulate` runs them: each page's Limit and way of reading
decided by the listing's own ``Reading``, its cost its bytes rounded up to 4 KB. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddbkeys.partition_keys._listing.pages import PageSize
from ddbkeys.partition_keys._listing.reading import Reading
from ddbkeys.partition_keys._tasks.stream import Stream

__all__ = ["UNIT", "Run"]

UNIT = 4096


@dataclass
class Run:
    """The pages read over a stream: the 4 KB units of those that skipped (and each
    segment's share of them), of those read on, and both where the last page begun in the
    stream's first half began (a scan-sized page may hold most of the stream: the rate of what
    follows it is taken from where it began, not from the half)."""

    stream: Stream
    shares: list[float]
    units: float = 0.0
    through: float = 0.0
    ending: int = 0  # units of an empty page that ended it
    pages: float = 0.0  # the pages that skipped
    pages_on: float = 0.0  # the pages read on
    #: units, through, the collection, pages, pages_on
    at_half: tuple[float, float, int, float, float] = (0.0, 0.0, 0, 0.0, 0.0)

    def read(
        self,
        average: float,
        read_on: bool = True,
        table_bytes: float = 0.0,
        segments: int = 1,
        length: float = 0.0,
    ) -> None:
        """Page after page, as ``PagedSkipMethod`` asks for them, to the stream's end: one
        of ``segments`` after another, each ``length`` collections (0: the stream split
        evenly) with its own ``Reading`` of the one ``PageSize``, as one reader of the
        listing reads its segments in turn."""
        stream = self.stream
        pages = PageSize.for_items_of(average, table_bytes)
        pages.may_read_on = read_on
        count = len(stream.collections)
        length = length or count / max(1, segments)
        half = count // 2
        ends = iter([*(round(k * length) for k in range(1, segments)), count])
        while True:
            stream.stop = min(count, next(ends, count))
            reading = Reading(pages)
            limit: int | None = reading.first_limit(segments)
            while True:
                if stream.at <= half:
                    self.at_half = (self.units, self.through, stream.at, self.pages, self.pages_on)
                start, on = stream.at, reading.reading_on
                page, parts, lead, unhanded = stream.page(limit)
                size = sum(b for _, b in parts)
                cost = max(1, math.ceil(size / UNIT))
                ended = not stream.more()
                if on:
                    self.through += cost
                    self.pages_on += 1
                else:
                    self.pages += 1
                    full = ended and limit is not None and len(page) >= limit
                    self.skipped(start, cost, parts, full)
                sizes = stream.sizes if reading.whole_items else None
                if ended:
                    reading.end(page, cost, asked=limit, lead=lead, unhanded=unhanded, sizes=sizes)
                    break
                limit, skip = reading.after(
                    page, cost, asked=limit, lead=lead, unhanded=unhanded, sizes=sizes
                )
                if skip and page and not unhanded:  # (else it goes on in that collection)
                    stream.at, stream.item = page[-1] + 1, 0
            if stream.stop >= count:
                return
            stream.at, stream.item = stream.stop, 0

    def skipped(self, start: int, cost: int, parts: list[tuple[int, int]], last: bool) -> None:
        """A skipping page's ``cost``, shared out by the bytes each collection gave it (and
        an empty ``last`` page, where DynamoDB ends a full page's segment with one)."""
        self.units += cost + last
        self.ending += 1 if last or not parts else 0  # (a page that read nothing: an end's)
        size = sum(b for _, b in parts)
        origins = self.stream.origins
        for at, part in parts if size else [(min(start, len(origins) - 1), 1)]:
            self.shares[origins[at]] += cost * part / max(1, size)
