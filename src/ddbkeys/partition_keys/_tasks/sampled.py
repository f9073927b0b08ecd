"""What a small sample of a table held (read by :mod:`ddbkeys.partition_keys._tasks.sample`, weighed
by :mod:`ddbkeys.partition_keys._tasks.estimate`): the first pages of a few parallel-scan segments,
and what they say of the table's collections and of one reader's speed. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ddbkeys._capacity import item_size
from ddbkeys._schema import TableInfo

__all__ = [
    "SAMPLE_PAGE_BYTES",
    "SAMPLE_PAGE_ITEMS",
    "SAMPLE_SEGMENTS",
    "UNIT",
    "Sample",
    "SampledSegment",
    "sample_limit",
]

UNIT = 4096  # a read unit's bytes (0.5 RCU each, eventually consistent)
#: Parallel-scan segments whose first page the sample reads (spread over the key space).
SAMPLE_SEGMENTS = 4
#: About how many bytes each sampled page reads (a Limit from the table's average item size),
#: and the most items it asks for.
SAMPLE_PAGE_BYTES = 64 * 1024
SAMPLE_PAGE_ITEMS = 1000


def sample_limit(info: TableInfo) -> int:
    """The Limit of a sampled page: about ``SAMPLE_PAGE_BYTES`` of the table's average item
    (DescribeTable), 1 to ``SAMPLE_PAGE_ITEMS``; 100 when the table reports no size."""
    if not info.item_count or not info.size_bytes:
        return 100
    return max(
        1, min(SAMPLE_PAGE_ITEMS, int(SAMPLE_PAGE_BYTES * info.item_count / info.size_bytes))
    )


@dataclass(frozen=True)
class SampledSegment:
    """The start of one sampled segment: its ``items``, the ``latency`` of its first page (one
    item), the ``seconds`` of its second page, the ``pages`` read (1 when the first ended the
    segment), the read units they took, and whether the segment ``ended`` there."""

    items: Sequence[Mapping[str, Any]]
    latency: float
    seconds: float
    pages: int
    units: float
    ended: bool


@dataclass(frozen=True)
class Sample:
    """What the sampled segments held: ``items``, their ``bytes`` (DynamoDB's item sizes), the
    partition keys seen (``keys``: collection starts, since a collection's items come together
    in a segment), how many of those collections held ``UNIT`` bytes or more (``large``), the
    sum of each collection's bytes up to ``UNIT`` (``capped_bytes``), the ``requests`` and read
    units it took, and whether every sampled segment was read to its end (``whole_table``: then
    its counts are the table's). One reader's speed, measured so that a request slowed by
    warming up (a new connection, a server's first requests) does not count for all: the
    ``latency``, the fastest page of one item; ``bytes_per_second``, the median over the larger
    pages of their bytes over their time past that latency (0: not measured)."""

    segments: int = 0
    requests: int = 0
    items: int = 0
    bytes: int = 0
    keys: int = 0
    large: int = 0
    capped_bytes: int = 0
    read_units: float = 0.0
    whole_table: bool = False
    latency: float = 0.0
    bytes_per_second: float = 0.0

    @classmethod
    def of_segments(cls, segments: Sequence[SampledSegment], pk: str) -> Sample:
        """The sample of ``segments``, the items keyed by partition key ``pk``."""
        items = bytes_ = keys = large = capped = 0
        latency = min((s.latency for s in segments), default=0.0)
        rates: list[float] = []
        for segment in segments:
            for collection in _collections(segment.items, pk):
                keys += 1
                large += collection >= UNIT
                capped += min(collection, UNIT)
                bytes_ += collection
            items += len(segment.items)
            reading = segment.seconds - latency
            if segment.pages > 1 and len(segment.items) > 1 and reading > 0:
                rates.append(sum(item_size(item) for item in segment.items[1:]) / reading)
        rates.sort()
        return cls(
            segments=len(segments),
            requests=sum(s.pages for s in segments),
            items=items,
            bytes=bytes_,
            keys=keys,
            large=large,
            capped_bytes=capped,
            read_units=sum(s.units for s in segments),
            whole_table=bool(segments) and all(s.ended for s in segments),
            latency=latency,
            bytes_per_second=rates[len(rates) // 2] if rates else 0.0,
        )


def _collections(items: Sequence[Mapping[str, Any]], pk: str) -> list[int]:
    """The bytes of each run of items sharing a partition key, in order."""
    sizes: list[int] = []
    last: object = object()
    for item in items:
        value = item.get(pk)
        if not sizes or value != last:
            sizes.append(0)
            last = value
        sizes[-1] += item_size(item)
    return sizes
