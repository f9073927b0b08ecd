"""What the sample did not see of the table: the bytes DescribeTable counts beyond what the
drawn segments held, and what skip-pages may pay, or skip, for them. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._tasks.ranges import Range, Z
from ddbkeys.partition_keys._tasks.sampled import UNIT, Sample

__all__ = [
    "HEAVY_REST",
    "PAGE_UNITS",
    "SLACK",
    "TAIL",
    "UNSEEN",
    "Missed",
    "heavy_rest",
    "missed_bytes",
    "missed_items",
    "unseen_units",
]

#: The share of the sample's items that the drawn segments' share of the table may exceed
#: them by before the rest is taken for a collection the sample missed (``simulate._unseen``).
UNSEEN = 0.25
#: The most a page of skip-pages reads: 1 MB and the item that crosses it (up to 400 KB),
#: at 0.5 RCU a 4 KB.
PAGE_UNITS = 0.5 * math.ceil((1024 + 400) * 1024 / UNIT)
#: The odds left beyond the high end that the drawn segments missed more collections (one
#: tail of the ranges' ``Z``).
TAIL = 0.005
#: How many times the average size of the items the sample read of the collections it cut the
#: items it did not read may average (by DescribeTable), before they may be large items of
#: collections a listing reads rather than the rests of those it cut (``heavy_rest``).
HEAVY_REST = 4.0
#: How far DescribeTable's size may exceed the sample's share of it, besides the sampling
#: error, before the rest is taken for collections the sample missed (sizes counted a little
#: apart).
SLACK = 0.05


@dataclass(frozen=True)
class Missed:
    """Bytes DescribeTable counts that the drawn segments did not hold (``bytes``, the table's:
    scaled from the drawn segments' share), in as many as ``most`` collections that every
    drawn segment missed, and what skip-pages may pay for them (``units``)."""

    bytes: float
    most: int
    units: Range


def missed_bytes(info: TableInfo, sample: Sample, scan: Range) -> Missed | None:
    """Where the drawn segments' share of DescribeTable's size exceeds the bytes the sample
    read by more than its sampling error (``Z`` of it) and ``SLACK``, while their items are as
    many as its count says (no collection cut, none missed by count: ``_unseen``), the rest
    lies in a few collections of large items that no drawn segment held: on 3,000 small
    collections and six of 40 items of 100-390 KB (29 MB), 30 segments of 788 drawn saw none
    of the six and the line said 96-193 RCU where the listing read 892.5. skip-pages reads a
    page of each such collection at most (``PAGE_UNITS``: it skips the rest of the one a page
    ends in) and at most the bytes themselves at a scan's price: from one collection (a page)
    to as many as the draw could miss all of but ``TAIL`` of the time (``(1 - p)**n >=
    TAIL``). What they cost is not known within that; ``value`` is the middle of its ends (the
    geometric mean). None: nothing is missing beyond the error (or the sample is the whole
    table, or cut a collection whose rest holds the bytes)."""
    if sample.whole_table or sample.cut or not sample.segments or not info.size_bytes:
        return None
    p = sample.segments / sample.total_segments
    if p >= 1 or not sample.items:
        return None
    if info.item_count * p - sample.items > UNSEEN * sample.items:
        return None  # (missed by count too: ``_unseen`` lays them out as a collection)
    squares = sum(sum(c.sizes) ** 2 for run in sample.runs for c in run)
    spread = Z * math.sqrt((1 - p) * squares)
    share = info.size_bytes * p
    if share - sample.bytes <= spread + SLACK * share:
        return None
    missed = (share - sample.bytes) / p
    most = max(1, math.floor(math.log(TAIL) / math.log(1 - p)))
    price = _price(info, scan)
    low = min(missed * price, PAGE_UNITS)
    high = max(low, min((share - sample.bytes + spread) / p * price, most * PAGE_UNITS))
    return Missed(missed, most, Range(low, math.sqrt(low * high), high))


def missed_items(info: TableInfo, sample: Sample) -> float:
    """The items DescribeTable counts beyond the drawn segments' share of them, the sampling
    error (``Z`` of it) and ``SLACK``, at the high end (the table's: scaled from the drawn
    segments' share; 0: none, or the sample is the whole table). Each may be a key of its
    own: keys packed in a part of the table that no drawn segment reached (helper-88: 10,000
    single-item keys in the first tenth of scan order; a draw that missed them saw a table of
    a tenth as many keys). Where the sample cut collections, their rests may be those items."""
    if sample.whole_table or not sample.segments or not info.item_count:
        return 0.0
    p = sample.segments / sample.total_segments
    if p >= 1:
        return 0.0
    squares = sum(len(c.sizes) ** 2 for run in sample.runs for c in run)
    spread = Z * math.sqrt((1 - p) * squares)
    share = info.item_count * p
    if share - sample.items <= spread + SLACK * share:
        return 0.0
    return (share - sample.items + spread) / p


def unseen_units(info: TableInfo, p: float, sample: Sample, scan: Range) -> float:
    """What a scan pays for the bytes of the table that the drawn segments (a share ``p`` of
    it) held but the sample did not read (DescribeTable's size, its share ``p``, less the
    bytes read, plus ``Z`` times the sampling error of those bytes). On 2,000 keys of up to
    20 items among three of 2,000 items, six segments in 100 read none of the three: every
    order read on, at a scan's share, 376-426 RCU, where the listing read 378 (its pages
    ended in one of them and skipped its rest); large sampled collections of other keys may
    hide the three's absence (10 names: 381-429 RCU on one): the error counts them."""
    if sample.whole_table or not info.size_bytes or p <= 0:
        return 0.0
    squares = sum(sum(c.sizes) ** 2 for run in sample.runs for c in run)
    spread = Z * math.sqrt((1 - p) * squares) if p < 1 else 0.0
    unseen = max(0.0, info.size_bytes * p - sample.bytes + spread) / p
    return scan.value * min(1.0, unseen / info.size_bytes)


def heavy_rest(info: TableInfo, sample: Sample, scan: Range) -> float | None:
    """What a scan pays for the bytes the drawn segments held by DescribeTable's share but the
    sample did not read, where it cut collections (so that ``missed_bytes`` takes those bytes
    for the cut collections' rests, which skip-pages skips) and yet the items it did not read
    average more than ``HEAVY_REST`` times the items it read of the cut collections, and over 4
    KB: then they may as well be a few large items among the collections skip-pages reads whole
    (helper-83: where the cut collections' items are as heavy as the rest, 4 KB, the rest is
    as likely their tails: the high end rose to 1,045 RCU where the listing read 160).
    helper-78: 600 keys of 100 B items, 1% of them 300 KB; 17 segments of 355 drawn read 160
    items of 123 B and cut two collections of 25 small items, while the share's 53 more items
    held 538 KB; the line said 6.4-456 RCU where skip-pages read 893, reading 20 such items
    (None: no collection cut, the sample is the whole table, or the rest is like what it
    read)."""
    if sample.whole_table or not sample.cut or not sample.items or not info.item_count:
        return None
    p = sample.segments / sample.total_segments
    missing = info.item_count * p - sample.items
    unread = info.size_bytes * p - sample.bytes
    if missing < 1 or unread <= 0:
        return None
    cut = [size for run in sample.runs for c in run if c.cut for size in c.sizes]
    like = sum(cut) / len(cut) if cut else sample.bytes / sample.items
    if unread / missing <= max(UNIT, HEAVY_REST * like):
        return None  # (as heavy as the cut collections' own items: their rests, as likely)
    price = _price(info, scan)
    return unread / p * price


def _price(info: TableInfo, scan: Range) -> float:
    """What a scan pays a byte (its likeliest units over DescribeTable's size; 0.5 a 4 KB where
    either is not known)."""
    return scan.value / info.size_bytes if scan.value and info.size_bytes else 0.5 / UNIT
