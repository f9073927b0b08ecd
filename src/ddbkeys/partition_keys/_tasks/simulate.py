"""skip-pages run over the sample: what its pages would read of the table. Pure.

skip-pages decides each page's Limit, and whether it goes on as a scan, from what its pages
cost (``_listing.pages.PageSize``, ``_listing.reading.Reading``): nothing a formula on the
sample's sums can foresee. But the decision is pure, and the sample holds whole
Scan segments, each collection's items in scan order. So :func:`simulate` feeds them through
the same ``Reading`` the listing's ``PagedSkipMethod`` uses, seeded with the table's average
item size as the listing is: a page is the next ``limit`` items (or, read on, up to 1 MB;
with its items' sizes where the listing's would read whole items), costs its bytes rounded
up to 4 KB, and a skip jumps past the rest of the page's last collection.

The segments are laid end to end, in a drawn order, and drawn again until the stream holds as
many collections as the table is thought to (so that the listing's ramp and its trials weigh
what they weigh on the table, not on a sample ``p`` times smaller), up to ``MOST_KEYS``: past
that, the rest costs what the second half of the stream did a key. A collection whose rest
the sample skipped (``cut``) is given the items the table holds beyond the sample's, shared
out among such collections (``Rest``: DescribeTable's item count and size, times the share
of segments drawn, less what the sample read), each of the average size of those unread
items: where sizes are heavy-tailed, a collection's first 4 KB say little of its rest.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._listing.pages import WASTE
from ddbkeys.partition_keys._tasks.missed import UNSEEN, unseen_units
from ddbkeys.partition_keys._tasks.ranges import Range, Z
from ddbkeys.partition_keys._tasks.sampled import Collection, Sample
from ddbkeys.partition_keys._tasks.simulated_run import UNIT, Run
from ddbkeys.partition_keys._tasks.stream import NO_REST, Rest, Stream, laid

__all__ = [
    "ALONE_ORDERS",
    "LONE_ORDERS",
    "MOST_KEYS",
    "ORDERS",
    "Collection",
    "Rest",
    "Simulated",
    "simulate",
    "simulated_orders",
    "skip_pages_range",
    "skipping_requests",
]

#: The most collections a simulation reads; past them, the rest is priced at the rate a key
#: of the stream's second half.
MOST_KEYS = 10_000
#: Orders of the sampled segments the simulation runs over (their own, and drawn ones).
ORDERS = 10
#: Places in the stream at which each segment is met, over the orders drawn for what skipping
#: alone costs it (the error's spread): a segment's cost turns on the page size the listing
#: has reached where it meets the segment. An order of a long stream lays each segment many
#: times (``_alone_orders``).
ALONE_ORDERS = 20
#: The most items a collection the sample missed is given (``_unseen``).
MOST_ITEMS = 100_000
#: Places drawn for the one collection that may hold what the sample missed (``unseen_in_one``).
LONE_ORDERS = 5
#: How far under the simulations' range skipping alone may take its low end (as a share of
#: the high end): whether the listing goes on as a scan early or late is not known.
SPAN = 2
#: The least share of the table every order read on for the high end to reach a scan's.
READS_ON = 0.25
#: ... and what skipping alone may cost under the simulation's (DynamoDB counts sizes a little
#: apart from the sample's, and a page's units turn on its last bytes).
UNDER = 0.9
#: How far the sample's average item size may be from DescribeTable's to be taken as it.
CALIBRATE = 0.1


@dataclass(frozen=True)
class Simulated:
    """What the simulation read: the read units (RCU) of the pages that skipped, and of each
    sampled segment a copy of it (the pages' units shared out by the bytes each collection
    gave them); the share of the collections read on as a scan (whose cost is a scan's share
    of the table: DescribeTable's size, not the sample's)."""

    skip_rcu: float
    through: float
    per_segment: tuple[float, ...]
    #: The read units of the empty page that ends it, in ``skip_rcu`` (DynamoDB answers a
    #: page that filled its Limit at the table's end with a key to go on from; DynamoDB Local
    #: charges nothing for the empty page that follows).
    ending: float = 0.0
    #: The requests: pages that skipped (over the table's keys), and pages read on as a scan
    #: over ``whole`` bytes (the stream's, to the table's keys).
    skip_pages: float = 0.0
    through_pages: float = 0.0
    whole: float = 0.0


def simulate(
    runs: Sequence[Sequence[Collection]],
    average: float,
    keys: int,
    rest: Rest = NO_REST,
    rng: random.Random | None = None,
    *,
    read_on: bool = True,
    table_bytes: float = 0.0,
    lone: float | None = None,
    segments: int = 1,
) -> Simulated:
    """skip-pages over a table of ``keys`` collections drawn from the sampled segments
    ``runs`` (in their order when ``rng`` is None), whose average item size is ``average``
    (DescribeTable; 0: unknown); with ``read_on`` False, it never goes on as a scan;
    ``table_bytes``: the table's size (DescribeTable), from which the listing takes when its
    first trial starts. ``lone``: the last run is one collection the table holds once, laid
    once that far into the stream (0 to 1), not with each pass over the others. ``segments``:
    the Scan segments the table is read in, one after another (each ``keys / segments``
    collections)."""
    wanted = max(0, keys)
    stream = Stream(*_laid_with(runs, min(wanted, MOST_KEYS), rng, lone), rest)
    if not stream.collections:
        return Simulated(0.5, 0.0, tuple(0.0 for _ in runs), skip_pages=1.0)
    run = Run(stream, [0.0] * len(runs))
    run.read(average, read_on, table_bytes, segments, wanted / max(1, segments))
    read = len(stream.collections)
    scale = 1.0
    if wanted > read:  # the rest as the second half read (from the last page begun in the first)
        units_then, through_then, at, pages_then, on_then = run.at_half
        grow = (wanted - read) / max(1, read - at)
        more = (run.units - units_then) * grow
        scale = (run.units + more) / run.units if run.units else 1.0
        run.units += more
        run.through += (run.through - through_then) * grow
        run.pages += (run.pages - pages_then) * grow
        run.pages_on += (run.pages_on - on_then) * grow
    copies = [0.0] * len(runs)
    for origin in stream.origins:
        copies[origin] += 1 / len(runs[origin])
    per_segment = tuple(
        0.5 * scale * share / copy if copy else 0.0
        for share, copy in zip(run.shares, copies, strict=True)
    )
    whole = sum(stream.bytes(at) for at in range(read)) * max(wanted, read) / read
    through = run.through * UNIT / whole if whole else 0.0
    return Simulated(
        0.5 * run.units, through, per_segment, 0.5 * run.ending, run.pages, run.pages_on, whole
    )


def _laid_with(
    runs: Sequence[Sequence[Collection]], keys: int, rng: random.Random | None, lone: float | None
) -> tuple[list[Collection], list[int]]:
    """:func:`~ddbkeys.partition_keys._tasks.stream.laid`, with the last run laid once, that
    far into the stream (``lone``, 0 to 1; None: with the others)."""
    if lone is None or not runs:
        return laid(runs, keys, rng)
    collections, origins = laid(runs[:-1], max(0, keys - len(runs[-1])), rng)
    at = round(lone * len(collections))
    collections[at:at] = runs[-1]
    origins[at:at] = [len(runs) - 1] * len(runs[-1])
    return collections, origins


def _calibrated(sample: Sample, average: float, rest: Rest) -> Sequence[Sequence[Collection]]:
    """The sampled collections, their item sizes scaled to DescribeTable's average where the
    sample's is within ``CALIBRATE`` of it: DynamoDB counts a byte or so apart from
    ``item_size`` (a number 0), and a page's units turn on its last bytes (204 items of 20
    bytes fill one 4 KB unit, of 21 bytes two). The sample's average counts the ``rest`` of
    each collection it cut, as the simulation gives it (at the average of the items read of
    it): the items read are not the table's items (one collection of 15,000 items of 42 bytes
    among 999 of 46 read whole: scaled 5% down, pages of 92 items cost one unit, not two, and
    the estimate 6.75-7.63 RCU where the listing reads 10)."""
    cut = [sizes for run in sample.runs for sizes, was_cut, _ in run if was_cut and sizes]
    more = sum(rest.bytes_of(sizes) for sizes in cut)
    items = sample.items + rest.items * len(cut)
    mean = (sample.bytes + more) / items if items else 0.0
    if not mean or abs(average / mean - 1) > CALIBRATE or average == mean:
        return sample.runs
    ratio = average / mean
    return [
        [
            Collection(tuple(max(1, round(size * ratio)) for size in sizes), cut, lead)
            for sizes, cut, lead in run
        ]
        for run in sample.runs
    ]


def _unseen(
    sample: Sample, items: float, average: float, share: float = 1.0
) -> list[list[Collection]]:
    """Where no sampled collection was cut and the drawn segments' share of the table's
    ``items`` (DescribeTable) exceeds what the sample read by ``UNSEEN`` of it, the items
    the sample missed: one large collection that no drawn segment held (a sample of a few
    segments misses the few large keys of a skewed table), as a segment of its own, of items
    of ``average`` bytes; with ``share`` (the drawn segments' of the table), all that the
    table holds like it, as one collection."""
    missing = round(items - sample.items)
    if sample.cut or not sample.items or missing <= UNSEEN * sample.items or average <= 0:
        return []
    size = max(1, round(average))
    return [[Collection((size,) * min(round(missing / share), MOST_ITEMS))]]


def _rate_error(costs: Sequence[float], keys: Sequence[int], p: float) -> float:
    """``Z`` times the standard error of the cost a key: the ratio of the sums of ``costs``
    and ``keys`` over segments drawn at random, a share ``p`` of them (without
    replacement). What skipping costs a segment follows the collections it holds, whose
    number the key count's own range prices: this is the rest (one segment drawn alone is
    taken to be off by its whole cost)."""
    n, held = len(costs), sum(keys)
    if p >= 1 or not n or not held:
        return 0.0
    rate = sum(costs) / held
    if n < 2:
        return Z * rate
    spread = sum((c - rate * k) ** 2 for c, k in zip(costs, keys, strict=True)) / (n - 1)
    return Z * math.sqrt((1 - p) * spread / n) / (held / n)


def _seeds(sample: Sample, drawn: range) -> list[int | None]:
    """The orders to run over: the segments' own (None), and one drawn by each seed of
    ``drawn``, unless the sample is the whole table (its own order is the table's)."""
    return [None] if sample.whole_table else [None, *drawn]


def _drawn(seed: int | None) -> random.Random | None:
    """The order drawn by ``seed`` (None: the segments' own)."""
    return None if seed is None else random.Random(seed)


@dataclass(frozen=True)
class _Laid:
    """What each order is simulated over: the drawn segments' share ``p`` of the table, the
    rest of each collection the sample cut, DescribeTable's average item, the collections to
    lay out (the key count's) and the segments (calibrated, and any the sample missed). Own
    items that lead a collection (its marker) are items of the stream, as they are of the
    listing's pages (``Collection.lead``)."""

    p: float
    rest: Rest
    average: float
    count: int
    runs: list[Sequence[Collection]]
    table_bytes: float = 0.0
    #: The items the sample missed (``_unseen``) as one collection of the whole table (not
    #: one for each pass over the drawn segments' share), with the sampled runs it joins.
    lone: Collection | None = None
    sampled: int = 0
    #: The Scan segments the listing reads the table in, one after another.
    segments: int = 1

    @classmethod
    def of(cls, info: TableInfo, keys: Range, sample: Sample, segments: int = 1) -> _Laid:
        p = 1.0 if sample.whole_table else sample.segments / sample.total_segments
        average = info.size_bytes / info.item_count
        missing = info.item_count * p - sample.items
        unread = info.size_bytes * p - sample.bytes
        rest = Rest.of(missing, sample.cut, unread / missing if unread > 0 and missing >= 1 else 0)
        calibrated = _calibrated(sample, average, rest)
        unseen = _unseen(sample, info.item_count * p, average)
        each = unread / missing if unread > 0 and missing >= 1 else average
        whole = _unseen(sample, info.item_count * p, each, share=p)
        return cls(
            p,
            rest,
            average,
            max(1, round(keys.value)),
            [*calibrated, *unseen],
            table_bytes=info.size_bytes,
            lone=whole[0][0] if whole else None,
            sampled=len(calibrated),
            segments=segments,
        )

    def run(self, seed: int | None, read_on: bool = True) -> Simulated:
        """skip-pages in the order ``seed`` draws (None: the segments' own)."""
        rng = _drawn(seed)
        return simulate(
            self.runs,
            self.average,
            self.count,
            self.rest,
            rng,
            read_on=read_on,
            table_bytes=self.table_bytes,
            segments=self.segments,
        )

    def run_lone(self, seed: int, at: float) -> Simulated | None:
        """skip-pages in the order ``seed`` draws, the items the sample missed held by one
        collection, laid once ``at`` that far into the stream (None: it missed none)."""
        if self.lone is None:
            return None
        return self.once([*self.runs[: self.sampled], [self.lone]], seed, at)

    def once(self, runs: Sequence[Sequence[Collection]], seed: int, at: float) -> Simulated:
        """skip-pages over ``runs`` in the order ``seed`` draws, the last run laid once, ``at``
        that far into the stream."""
        return simulate(
            runs,
            self.average,
            self.count,
            self.rest,
            random.Random(seed),
            table_bytes=self.table_bytes,
            lone=at,
            segments=self.segments,
        )


def _orders(laid: _Laid, sample: Sample) -> list[Simulated]:
    """skip-pages simulated in each order of the segments (see :func:`skip_pages_range`)."""
    return [laid.run(seed) for seed in _seeds(sample, range(1, ORDERS))]


def _alone_orders(laid: _Laid) -> int:
    """The orders drawn for what skipping alone costs each segment: enough that each sampled
    segment is laid ``ALONE_ORDERS`` times over them (each order lays the segments again,
    drawn anew, until the stream holds the table's collections, up to ``MOST_KEYS``). On a
    table of many more collections than the sample holds, one or two: the simulations ran
    over 200,000 collections or more (an estimate of 25,000 keys in 1-59 items each, from 236
    sampled collections: 62 simulations, 22 s of a core; 24 with this, 11 s)."""
    held = sum(len(run) for run in laid.runs)
    passes = min(laid.count, MOST_KEYS) / max(1, held)
    return max(1, min(ALONE_ORDERS, math.ceil(ALONE_ORDERS / max(1.0, passes))))


def simulated_orders(
    info: TableInfo, keys: Range, sample: Sample, segments: int = 1
) -> list[Simulated] | None:
    """skip-pages simulated over ``sample`` in each order of its segments, for
    :func:`skip_pages_range` and ``methods.skip_pages_requests`` (None: it holds no
    collections)."""
    if not any(sample.runs) or not info.item_count or not keys.value:
        return None
    return _orders(_Laid.of(info, keys, sample, segments), sample)


def skip_pages_range(
    info: TableInfo,
    keys: Range,
    scan: Range,
    sample: Sample,
    orders: Sequence[Simulated] | None = None,
    segments: int = 1,
) -> Range | None:
    """skip-pages' read units, simulated over ``sample`` (None: it holds no collections):
    each order of the segments (their own, and ``ORDERS - 1`` drawn; their own alone where
    the sample is the whole table: that is the table's scan order) gives the units of the
    pages that skipped and the share of a scan read on (priced at the scan's range:
    DescribeTable's size, not the sample's). The orders disagree where it cannot be known in
    advance whether the listing goes on as a scan early or late: the range spans them all,
    from the orders' mean down to the lowest and up to the highest, each widened (in
    quadrature) by the sampling error and the scan's range on the share read on. The
    sampling error is of two parts: the key count's range, on the units that skipped (the
    orders ran over ``keys.value`` collections), and ``Z`` times the standard error of what
    skipping alone costs a key of a segment drawn (its share of skipping the whole stream,
    averaged over its own order and drawn ones, enough to meet it ``ALONE_ORDERS`` times
    (:func:`_alone_orders`): its share of the pages that
    skipped before the listing read on says where an order put it, not what it holds), times
    the share of that the orders skipped. Where all the orders go on
    as a scan but the listing might skip longer, the low end reaches down to skipping alone
    (``UNDER`` of what it cost simulated, less the error), no lower than ``1 / SPAN`` of the
    high end; where skipping alone, at the key count's high end, costs about a scan's, or
    every order read on ``READS_ON`` of the table or more, the high end reaches the scan's
    (the listing may go on as a scan from its first trial). The low end reaches further
    down, by what pages read on might skip of the bytes the sample did not see
    (:func:`~ddbkeys.partition_keys._tasks.missed.unseen_units`), no further than
    ``1 / SPAN`` of the high end. An empty page ending the listing is in the range at 0.5 RCU
    and at none (DynamoDB Local charges nothing for it). ``orders``: those simulated already
    (:func:`simulated_orders`)."""
    if not any(sample.runs) or not info.item_count or not keys.value:
        return None
    laid = _Laid.of(info, keys, sample, segments)
    sims = orders or _orders(laid, sample)
    values = [sim.skip_rcu + sim.through * scan.value for sim in sims]
    alone = [
        laid.run(seed, read_on=False)
        for seed in _seeds(sample, range(ORDERS, ORDERS + _alone_orders(laid)))
    ]
    skipping = alone[0].skip_rcu
    costs = [sum(c) / len(alone) for c in zip(*(sim.per_segment for sim in alone), strict=True)]
    skipped = sum(sim.skip_rcu for sim in sims) / len(sims)
    share = min(1.0, skipped / max(0.5, sum(sim.skip_rcu for sim in alone) / len(alone)))
    error = share * _rate_error(costs, [len(run) for run in laid.runs], laid.p) * keys.value
    through = max(sim.through for sim in sims)
    mean = sum(values) / len(values)
    fewer = math.hypot(error, skipped * (1 - keys.low / keys.value))
    more = math.hypot(error, skipped * (keys.high / keys.value - 1))
    under = math.hypot(mean - min(values), fewer + through * (scan.value - scan.low))
    over = math.hypot(max(values) - mean, more + through * (scan.high - scan.value))
    # (and the empty page that may end a segment, charged or not)
    high = mean + over + 0.5 * segments - min(sim.ending for sim in sims)
    # The listing may go on as a scan, at a scan's cost: where skipping alone costs about a
    # scan's at the key count's high end (300 keys of a 20 KB first item each, sampled as
    # 169, read 781 RCU so, where every order skipped for 396), or where every order read on
    # much of the table, as its turn may come at the first trial (on 2,000 keys of up to 20
    # items among three of 2,000 items, one name's sample had every order read on 36-68%,
    # 271-334 RCU, where the listing read 378, of 404).
    costs_a_scan = skipping * keys.high / keys.value >= (1 - WASTE) * scan.low
    if costs_a_scan or min(sim.through for sim in sims) >= READS_ON:
        high = max(high, scan.high)
    # (the empty page may end pages read on too: charged as a read-on page's share, or not:
    # helper-83, 8 keys the sample read whole, 4.05-5.03 said and 4.0 read)
    end = max(*(sim.ending for sim in sims), 0.5 if through > 0 else 0.0)
    ordered = mean - under - end
    # (a page read on that ends in a collection skips its rest: where the bytes the sample did
    # not show lie in a few large collections it missed, the pages read on may skip them)
    ordered = max(
        ordered - through * unseen_units(info, laid.p, sample, scan), min(ordered, high / SPAN)
    )
    low = max(min(ordered, max(UNDER * skipping - error - end, high / SPAN)), 0.5)
    return Range(low, max(low, mean), max(low, high))


def skipping_requests(
    info: TableInfo,
    keys: Range,
    scan: Range,
    sample: Sample,
    orders: Sequence[Simulated],
    segments: int = 1,
) -> float | None:
    """The requests of skipping alone over ``sample`` (its segments' own order, to the key
    count's high end), where it costs under ``1 - WASTE`` of the cheapest of the ``orders``
    (their pages read on priced at ``scan``); None elsewhere, and where the sample is the
    whole table (the orders ran over the table itself). There the orders read on only as
    skipping's error let their trials pass: a listing whose pages show more of what skipping
    costs (a trial's page read whole) goes back to skipping, and may skip to its end, a
    request a key or so. On 400 keys of 1-3 items (one in five 12-20) of 200-1,800 bytes,
    each led by its marker (DynamoDB Local): skipping alone 219 RCU over the sample, the
    orders 240-244, their requests 13-41; the listing 154 requests (its scan-sized trial,
    read whole, failed at 1.16x skipping's units a key), 13-368 over 40 orders of the
    table's collections (helper-96)."""
    if sample.whole_table or not orders or not any(sample.runs) or not keys.value:
        return None
    alone = _Laid.of(info, keys, sample, segments).run(None, read_on=False)
    cheapest = min(sim.skip_rcu + sim.through * scan.value for sim in orders)
    if alone.skip_rcu >= (1 - WASTE) * cheapest:
        return None
    return alone.skip_pages * keys.high / keys.value + 1
