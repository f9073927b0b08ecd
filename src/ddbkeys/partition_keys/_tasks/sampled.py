"""What a sample of a table held (read by :mod:`ddbkeys.partition_keys._tasks.sample`, weighed by
:mod:`ddbkeys.partition_keys._tasks.estimate`): whole segments of a parallel Scan split in many,
drawn at random, and what their collections say of the table's (sums of per-collection
quantities, whose range :mod:`ddbkeys.partition_keys._tasks.ranges` gives) and of one reader's
speed. Pure."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ddbkeys._capacity import item_size
from ddbkeys._schema import TableInfo

__all__ = [
    "SAMPLE_KEYS",
    "SAMPLE_MAX_RCU",
    "SAMPLE_PAGE_ITEMS",
    "SAMPLE_PAGE_UNITS",
    "SAMPLE_RCU",
    "SAMPLE_SHARE",
    "UNIT",
    "UNKNOWN_SEGMENTS",
    "Collection",
    "PageTime",
    "Sample",
    "SegmentTally",
    "sample_limit",
    "sample_rcu",
    "sample_segments",
]

UNIT = 4096  # a read unit's bytes (0.5 RCU each, eventually consistent)
#: The sample starts no new segment once it has spent ``sample_rcu(info)`` read units
#: (``SAMPLE_RCU``, or ``SAMPLE_SHARE`` of a scan's up to ``SAMPLE_MAX_RCU``), or seen this
#: many collections: it costs about that at most (plus what the last segment holds).
SAMPLE_RCU = 32.0
SAMPLE_SHARE = 0.05
SAMPLE_MAX_RCU = 128.0
SAMPLE_KEYS = 1000
#: A sampled page asks for about this many 4 KB units of the table's average item (one: a
#: large collection costs the sample one 0.5-unit page before it jumps past the rest).
SAMPLE_PAGE_UNITS = 1
SAMPLE_PAGE_ITEMS = 1000
#: Segments the table is split in when DescribeTable reports no size yet.
UNKNOWN_SEGMENTS = 1024
#: The most segments a parallel Scan takes.
MAX_SEGMENTS = 1_000_000


def sample_segments(info: TableInfo) -> int:
    """The segments the sample splits the table in: about one 4 KB unit (and at least an item)
    each, by DescribeTable, so that a drawn segment costs about one request of 0.5 read
    units; ``UNKNOWN_SEGMENTS`` when the table reports no size."""
    if not info.item_count or not info.size_bytes:
        return UNKNOWN_SEGMENTS
    return max(1, min(MAX_SEGMENTS, info.item_count, math.ceil(info.size_bytes / UNIT)))


def sample_rcu(info: TableInfo) -> float:
    """The read units the sample spends at most (about): ``SAMPLE_RCU``, or on a large table
    ``SAMPLE_SHARE`` of a scan's (DescribeTable's size) up to ``SAMPLE_MAX_RCU``."""
    scan = info.size_bytes / (2 * UNIT)
    return max(SAMPLE_RCU, min(SAMPLE_MAX_RCU, SAMPLE_SHARE * scan))


def sample_limit(info: TableInfo) -> int:
    """The Limit of a sampled page: about ``SAMPLE_PAGE_UNITS`` units of the table's average
    item (DescribeTable), 1 to ``SAMPLE_PAGE_ITEMS``; 100 when the table reports no size."""
    if not info.item_count or not info.size_bytes:
        return 100
    average = info.size_bytes / info.item_count
    return max(1, min(SAMPLE_PAGE_ITEMS, int(SAMPLE_PAGE_UNITS * UNIT / average)))


class Collection(NamedTuple):
    """A sampled collection: its item sizes as read, in scan order; whether its rest was
    skipped (``cut``); and how many of its first items are ddbkeys' own (``lead``: a marker,
    a collection sequence's counter, which sort first; all of them where it shows none of
    yours)."""

    sizes: tuple[int, ...]
    cut: bool = False
    lead: int = 0


@dataclass(frozen=True)
class PageTime:
    """One sampled page: its ``items``, their ``bytes`` and the ``seconds`` it took."""

    items: int
    bytes: int
    seconds: float


@dataclass
class SegmentTally:
    """The collections of one segment, as its pages come (in order: a collection's items come
    together). Per collection: its first item's size, its ``prefix`` (its items up to and
    including the one that reaches 4 KB: what a page that reads into it and stops reads), its
    bytes as far as read (the rest of a collection past 4 KB may be skipped). ``own`` tells
    ddbkeys' own items (markers, counter items) from yours: ``owned`` counts the collections
    that showed none of yours, which a listing leaves out (None: every item is yours)."""

    pk: str
    own: Callable[[Mapping[str, Any]], bool] | None = field(default=None, repr=False)
    segment: int = 0  # its number in the parallel Scan (segments come in that order)
    keys: int = 0
    owned: int = 0
    items: int = 0
    bytes: int = 0
    large: int = 0
    capped: int = 0
    key_bytes: int = 0
    skip: float = 0.0
    skip_squares: float = 0.0
    skip_pages: int = 0
    prefix: float = 0.0
    prefix_squares: float = 0.0
    cut: int = 0
    #: Each collection in scan order.
    collections: list[Collection] = field(default_factory=list, repr=False)
    _last: object = field(default=None, repr=False)
    _open: list[int] = field(default_factory=list, repr=False)
    _key_size: int = field(default=0, repr=False)
    _yours: bool = field(default=False, repr=False)
    _lead: int = field(
        default=0, repr=False
    )  # own items before the open collection's first of yours

    def add(self, items: Sequence[Mapping[str, Any]]) -> None:
        for item in items:
            value = item.get(self.pk)
            if not self._open or value != self._last:
                self.close()
                self._last = value
                self._key_size = item_size({"": value}) if value is not None else 0
            mine = self.own is not None and self.own(item)
            self._lead += mine and not self._yours
            self._yours = self._yours or not mine
            self._open.append(item_size(item))
            self.items += 1

    @property
    def open_bytes(self) -> int:
        """The bytes read of the collection the last page ended in."""
        return sum(self._open)

    @property
    def last_key(self) -> object:
        return self._last

    @property
    def open_yours(self) -> bool:
        """Whether the collection the last page ended in has shown one of your items (its
        leading own items alone, a marker of a long key, say nothing of the rest)."""
        return self._yours or self.own is None

    def skip_rest(self) -> None:
        """The rest of the open collection is skipped (its items and bytes past what was read
        are not counted)."""
        self.cut += bool(self._open)
        self.close(cut=True)

    def close(self, cut: bool = False) -> None:
        """The open collection is done (read whole, or the rest skipped: ``cut``)."""
        if not self._open:
            return
        sizes, self._open = self._open, []
        lead, self._lead = self._lead, 0
        # skip's one-item pages: the own items that lead (a marker) one each, then the first
        # of yours; a collection of own items alone, each (the request after its last reads
        # the next collection's first item: SkipMethod)
        firsts = sizes[: lead + 1]
        self.collections.append(Collection(tuple(sizes), cut, lead))
        self.owned += not self._yours
        self._yours = False
        whole = sum(sizes)
        upto = 0
        for size in sizes:
            upto += size
            if upto >= UNIT:
                break
        skip = sum(0.5 * max(1, math.ceil(size / UNIT)) for size in firsts)
        self.skip_pages += len(firsts)
        prefix = upto / (2 * UNIT)
        self.keys += 1
        self.bytes += whole
        self.large += whole >= UNIT
        self.capped += min(whole, UNIT)
        self.key_bytes += self._key_size
        self.skip += skip
        self.skip_squares += skip * skip
        self.prefix += prefix
        self.prefix_squares += prefix * prefix


#: The fields of a :class:`Sample` that sum its segments' :class:`SegmentTally` ones (the
#: field, the tally's attribute).
_SUMMED = (
    ("items", "items"),
    ("bytes", "bytes"),
    ("keys", "keys"),
    ("owned", "owned"),
    ("large", "large"),
    ("capped_bytes", "capped"),
    ("key_bytes", "key_bytes"),
    ("skip_units", "skip"),
    ("skip_squares", "skip_squares"),
    ("skip_pages", "skip_pages"),
    ("prefix_units", "prefix"),
    ("prefix_squares", "prefix_squares"),
    ("cut", "cut"),
)


@dataclass(frozen=True)
class Sample:
    """What the sampled segments held: ``segments`` whole segments of ``total_segments``, their
    ``items``, ``bytes`` (DynamoDB's item sizes, of what was read), the collections (``keys``;
    ``owned``: those that showed none of your items, which a listing leaves out), those of 4 KB or
    more (``large``), the sum of each collection's bytes up to 4 KB (``capped_bytes``) and of their
    partition key values (``key_bytes``); per collection, summed with their squares: ``skip_units``
    (the read units of skip's one-item pages of its first item, and of the own items that lead it: a
    marker) and ``prefix_units`` (of its items up to 4 KB: what a page reading into it pays); the
    collections whose rest past 4 KB it skipped (``cut``: their items and bytes are not all
    counted), the ``requests`` and read units it took, and whether it read every segment
    (``whole_table``: then its key count is the table's, and its items and bytes too when nothing
    was ``cut``); ``runs``: each segment's collections in scan order, the segments in theirs
    (:class:`Collection`), over which
    :func:`~ddbkeys.partition_keys._tasks.simulate.simulate` runs skip-pages. One reader's speed:
    ``latency``, the fastest page; ``bytes_per_second``, the median over the pages of 8 KB or more
    of their bytes over their time past that latency (0: not measured)."""

    segments: int = 0
    total_segments: int = 1
    requests: int = 0
    items: int = 0
    bytes: int = 0
    keys: int = 0
    owned: int = 0
    large: int = 0
    capped_bytes: int = 0
    key_bytes: int = 0
    skip_units: float = 0.0
    skip_squares: float = 0.0
    prefix_units: float = 0.0
    prefix_squares: float = 0.0
    cut: int = 0
    read_units: float = 0.0
    #: skip's one-item pages over the sampled collections: one each, and one more for each
    #: own item that leads one (a marker; 0: not counted, one a collection).
    skip_pages: int = 0
    whole_table: bool = False
    runs: tuple[tuple[Collection, ...], ...] = field(default=(), repr=False)
    #: Where each of ``runs`` lies in scan order: its segment's number over ``total_segments``
    #: (empty: not known).
    places: tuple[float, ...] = field(default=(), repr=False)
    latency: float = 0.0
    bytes_per_second: float = 0.0

    def squares(self, seen: int, yours: bool) -> int | None:
        """The sum over the sampled segments of the square of the collections each held
        (``yours``: of those that showed one of your items), for the key count's spread
        (``ranges.count_range``); None where the segments' runs do not add up to ``seen``."""
        counts = [sum(1 for c in run if not yours or c.lead < len(c.sizes)) for run in self.runs]
        if len(counts) != self.segments or sum(counts) != seen:
            return None
        return sum(count * count for count in counts)

    @classmethod
    def of_segments(
        cls,
        segments: Sequence[SegmentTally],
        total: int,
        pages: Sequence[PageTime] = (),
        read_units: float = 0.0,
    ) -> Sample:
        """The sample of whole ``segments`` of ``total``, read in ``pages``."""
        latency = min((p.seconds for p in pages), default=0.0)
        rates = sorted(
            p.bytes / (p.seconds - latency)
            for p in pages
            if p.bytes >= 2 * UNIT and p.seconds > latency
        )
        for segment in segments:
            segment.close()
        summed = {field: sum(getattr(s, tally) for s in segments) for field, tally in _SUMMED}
        return cls(
            segments=len(segments),
            total_segments=total,
            requests=len(pages),
            **summed,
            read_units=read_units,
            whole_table=bool(segments) and len(segments) >= total,
            latency=latency,
            bytes_per_second=rates[len(rates) // 2] if rates else 0.0,
            runs=_runs(segments),
            places=tuple(s.segment / total for s in sorted(segments, key=lambda s: s.segment)),
        )


def _runs(segments: Sequence[SegmentTally]) -> tuple[tuple[Collection, ...], ...]:
    """Each segment's collections, the segments in their order."""
    return tuple(tuple(s.collections) for s in sorted(segments, key=lambda s: s.segment))
