"""What skip-pages' line of the estimate adds for what the sample did not see
(:mod:`ddbkeys.partition_keys._tasks.methods`): the bytes DescribeTable counts beyond the
drawn segments', the items they missed, and the large collections the sample read in part,
each laid out as the sample cannot tell apart (``lone``), to the low end and the high end.
Pure."""

from __future__ import annotations

from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._tasks.figures import figure, size
from ddbkeys.partition_keys._tasks.lone import Layouts, cut_once, unseen_in_one
from ddbkeys.partition_keys._tasks.missed import TAIL, Missed, heavy_rest
from ddbkeys.partition_keys._tasks.ranges import Range
from ddbkeys.partition_keys._tasks.sampled import Sample

__all__ = ["FEW_COLLECTIONS", "THROUGH", "fewer", "layouts", "share", "widened", "within_scan"]

#: Fewer sampled collections than this say too little of the table's spread for the ranges'
#: normal approximation (about 30, the usual rule for a mean's): skip-pages' high end then
#: reaches a scan's, as its trials of reading on may go either way.
FEW_COLLECTIONS = 30
#: The most skip-pages reads past a scan's (times it, and a unit) before it goes on as one
#: (``pages.PageSize``'s bound).
THROUGH = 1.1


def within_scan(units: Range, scan: Range) -> Range:
    """At most ``THROUGH`` times a scan's and a unit: where skipping saves nothing, it goes on
    as a scan (``pages.PageSize``'s bound)."""
    high = min(units.high, scan.high * THROUGH + 1)
    low = min(units.low, high)
    return Range(low, min(max(low, units.value), high), high)


def widened(
    info: TableInfo,
    keys: Range,
    scan: Range,
    sample: Sample,
    units: Range,
    simulated: bool,
    missed: Missed | None,
) -> tuple[Range, str, int]:
    """skip-pages' ``units`` widened by what the sample did not see, what the line's note adds
    for it, and the pages it may add: the bytes DescribeTable counts beyond the drawn
    segments' (``missed``, :func:`~ddbkeys.partition_keys._tasks.missed.missed_bytes`'s:
    collections of large items the draw missed, a page
    each, up to the high end), and the items beyond them, if they lie in one collection
    (``lone.unseen_in_one``), and the large collections the sample cut, if they are the
    table's only ones (``lone.cut_once``): down to the low end; the items it missed, up to the
    high end where laid in several collections (after the pages have grown, they cost more
    than the orders said); the bytes it
    did not read, read whole where they are far heavier than what it read
    (``missed.heavy_rest``); at most about a scan's where it was ``simulated`` or bytes were
    missed."""
    note = ""
    if missed is not None:
        more = missed.units
        units = Range(units.low, units.value + more.value, units.high + more.high)
        note = (
            f"; DescribeTable counts ~{size(missed.bytes)} more than the sampled segments' "
            f"share held: in collections the sample missed, up to {figure(more.high)} RCU more "
            f"(a page of each at most: {figure(more.low)} RCU at most if they are one)"
        )
    units, said, unread = _unread(info, sample, scan, units, simulated)
    note += said
    lone, once = layouts(info, keys, scan, sample) if simulated else (None, None)
    most = lone.most if lone is not None else 0.0
    if most > units.high:  # (laid once: late, after the pages have grown, say)
        units = Range(units.low, units.value, most)
    units = within_scan(units, scan) if simulated or missed or unread else units
    if most and most >= units.high:
        note += (
            f"; as much as {figure(units.high)} RCU if the items the sample missed lie in a few "
            "large collections where no sampled segment lies (late in scan order, say)"
        )
    if simulated:
        units, few = fewer(keys, sample, units, lone, once)
        note += few
    return units, note, missed.most if missed else 0


def _unread(
    info: TableInfo, sample: Sample, scan: Range, units: Range, simulated: bool
) -> tuple[Range, str, bool]:
    """``units``' high end raised for what the sample read too little of to say: bytes it did
    not read far heavier than those it read (``missed.heavy_rest``), read whole; fewer than
    ``FEW_COLLECTIONS`` collections sampled, a scan's (helper-78: 6 to 27 of 600 keys, 1% of
    items of 300 KB; how skip-pages' trials of reading on went turned on which segments it
    split the table in: 738.5 to 1,259.5 RCU, the line said up to 1,009). What the note adds,
    and whether it raised it."""
    note = ""
    heavy = heavy_rest(info, sample, scan)
    if heavy is not None:  # (large items the listing reads, not the rests it skips)
        units = Range(units.low, units.value, units.high + heavy)
        note += (
            f"; up to {figure(min(units.high, scan.high * THROUGH + 1))} RCU if the bytes the "
            "sample did not read are large items of collections the listing reads, not the "
            "rests of those it read in part"
        )
    few = simulated and not sample.whole_table and sample.keys < FEW_COLLECTIONS
    if few and units.high < scan.high:
        units = Range(units.low, units.value, scan.high)
        note += (
            f"; up to a scan's: {sample.keys} collection(s) sampled say too little of how its "
            "trials of reading on will go"
        )
    return units, note, heavy is not None or few


def layouts(
    info: TableInfo, keys: Range, scan: Range, sample: Sample
) -> tuple[Layouts | None, float | None]:
    """What skip-pages may cost where what the sample drew stands for fewer collections than
    its share says (``lone``): the items it missed, and the large collections it cut as the
    table's only ones, where a draw might have caught every one (``p ** cut``: the
    heavy-tailed and runs tables' draws cut several, of hundreds; laid together once, their
    run may cost more than the orders did, as no table lays them)."""
    caught = (sample.segments / sample.total_segments) ** sample.cut >= TAIL
    once = cut_once(info, keys, scan, sample) if caught else None
    return unseen_in_one(info, keys, scan, sample), once


def fewer(
    keys: Range, sample: Sample, units: Range, lone: Layouts | None, once: float | None
) -> tuple[Range, str]:
    """The simulated ``units`` where what the sample drew stands for fewer collections than
    its share says (``lone``): the items it missed in one collection, the large collections it
    cut the table's only ones (where a draw could have caught every one). Where one of those
    costs less than the low end, the low end reaches it, and the note says why; where the low
    end lies below the least of them (times the key count's low end over its value: the other
    collections may be fewer too), it is raised to that: a normal spread of a few large
    collections' costs reaches below what any layout of the table costs (0.5 RCU for 3,000
    keys, where the least layout cost 204 and the listing read 2,584.5). Not the layout of
    many cut collections laid together once, which no draw could have caught: their run can
    cost more than every order (three Pareto and lognormal tables, whose draws cut dozens:
    the low end raised to the likeliest value missed the listing's units in 15 of 36 draws, 4
    without it)."""
    layouts = [x for x in (lone.least if lone else None, once) if x is not None]
    if not layouts:
        return units, ""
    by = min(layouts)
    if by < units.low:
        units = Range(by, units.value, units.high)
    elif units.low < by * share(keys):
        units = Range(min(by * share(keys), units.value), units.value, units.high)
    else:
        return units, ""
    if lone is not None and by == lone.least:
        return units, (
            "; the sampled segments held fewer items than DescribeTable counts: if the rest "
            f"lie in one collection the sample missed, as little as {figure(units.low)} RCU"
        )
    cut = "large collection the sample read in part is the table's only one"
    if sample.cut > 1:
        cut = f"{sample.cut:,} large collections the sample read in part are the table's only ones"
    return units, f"; if the {cut}, as little as {figure(units.low)} RCU"


def share(keys: Range) -> float:
    """The key count's low end over its value (the other collections may be fewer too)."""
    return keys.low / keys.value if keys.value else 1.0
