"""Each method's line of the estimate (:mod:`ddbkeys.partition_keys._tasks.estimate`): its read
units as a range, requests, time and tasks, from the table's description, the key count's range
and the sample's per-collection sums. Pure.

- ``scan``: the table's size (DescribeTable, or the sample when it read the whole table) at 0.5
  read units per 4 KB (``replay.scan_units``, the figure ``auto`` weighs the index against),
  from 5% under to 5% over plus half a unit a page (each page is rounded up to 4 KB).
- ``skip``: a one-item page a collection, its first item rounded up to 4 KB: the sample's sum
  of that, scaled to the table (``ranges.total_range``), and up to half a unit more for the
  request that ends the scan.
- ``skip-pages``: skip-pages itself, run over the sample's collections in scan order
  (:func:`~ddbkeys.partition_keys._tasks.simulate.skip_pages_range`: what it would skip and
  where it would go on as a scan), at most about ``THROUGH`` times a scan's and a unit;
  where the sample holds no collections, from its sums: about what its pages read of each
  collection (its items up to 4 KB, ``prefix_units``, 10-30% more while its pages grow), or
  about a scan's where that is less. Where DescribeTable counts more bytes than the drawn
  segments held beyond the sampling error (collections of large items the draw missed,
  ``missed.missed_bytes``), the simulation's pages read on are priced without those bytes,
  which add from a page of theirs to a page each.
- ``index``: the index's size (DescribeTable) like a scan's, plus the replay a lagging
  maintainer costs now (``replay.replay_units``, from what ``index status`` reads).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._listing.choice import index_ready, most_keys
from ddbkeys.partition_keys._listing.pages import (
    LOOK_AFTER,
    MAX_TARGET,
    WASTE,
    WHOLE_BYTES,
    WHOLE_OVER,
)
from ddbkeys.partition_keys._listing.scan import PAGE_ITEMS as SCAN_PAGE_ITEMS
from ddbkeys.partition_keys._proof.replay import estimate as scan_costs
from ddbkeys.partition_keys._proof.replay import replay_units, scan_units
from ddbkeys.partition_keys._proof.report import ProofStatus
from ddbkeys.partition_keys._tasks.figures import figure
from ddbkeys.partition_keys._tasks.missed import Missed, missed_bytes
from ddbkeys.partition_keys._tasks.ranges import Range, Z, total_range
from ddbkeys.partition_keys._tasks.sampled import UNIT, Sample
from ddbkeys.partition_keys._tasks.simulate import (
    Simulated,
    simulated_orders,
    skip_pages_range,
    skipping_requests,
)
from ddbkeys.partition_keys._tasks.unseen import THROUGH, widened

__all__ = [
    "MB",
    "TASK_SECONDS",
    "MethodEstimate",
    "Speed",
    "index_line",
    "pages_of",
    "scan_range",
    "size_range",
    "skip_line",
    "skip_pages_line",
    "skip_pages_requests",
]

MB = 1024 * 1024
#: A suggested task takes about this long at one reader's measured speed: an engine that runs
#: a failed task again loses at most about that much work.
TASK_SECONDS = 15 * 60
#: How far a scan's units may be from the size DescribeTable reports (item sizes counted a
#: little apart), besides half a unit a page.
SIZE_SLACK = 0.05
#: skip-pages: what its pages read past the collections' first 4 KB while they grow and round
#: up (from ``GROWTH`` where skipping wins by far, to ``GROWTH + NEAR`` where it reads about
#: what a scan reads), what it may read under them (pages pack small collections, and
#: DynamoDB's sizes differ a little from the sample's); the most it reads past a scan's
#: before it goes on as one is ``unseen.THROUGH``.
GROWTH = 1.1
NEAR = 0.2
UNDER = 0.9


@dataclass(frozen=True)
class MethodEstimate:
    """One method's expected cost: read units (``rcu``, within ``rcu_low`` to ``rcu_high``),
    requests, ``seconds`` (with the estimate's readers and budget) and the suggested
    ``tasks``; None where it cannot be known (``note`` says why). ``available`` is False for a
    method the table cannot be listed with."""

    method: str
    available: bool
    rcu: float | None = None
    requests: int | None = None
    seconds: float | None = None
    tasks: int | None = None
    note: str = ""
    rcu_low: float | None = None
    rcu_high: float | None = None
    #: The requests' range, where it is known to vary (skip-pages, simulated over the sample);
    #: None: ``requests`` as it is.
    requests_low: int | None = None
    requests_high: int | None = None


def _tasks(one_reader: float | None, scanned: float) -> int | None:
    """About ``TASK_SECONDS`` a task for one reader, at most one per MB."""
    if one_reader is None:
        return None
    return max(1, min(math.ceil(one_reader / TASK_SECONDS), int(scanned // MB), 1_000_000))


@dataclass(frozen=True)
class Speed:
    """One reader's measured speed (a request's latency, the bytes a second a page reads on
    top of it), the readers at once and the read units a second allowed."""

    sample: Sample
    readers: int
    allowed: float

    def one_reader(self, requests: float, read_bytes: float) -> float | None:
        """Seconds one reader takes for ``requests`` that read ``read_bytes`` in all (None:
        nothing was measured)."""
        s = self.sample
        if not s.requests:
            return None
        if s.bytes_per_second > 0:
            return requests * s.latency + read_bytes / s.bytes_per_second
        if s.latency > 0:  # (no page large enough to time the reading: a small table)
            return requests * s.latency
        return None

    def seconds(self, one_reader: float | None, rcu: float) -> float | None:
        """The time with the readers at once and within the read units allowed a second."""
        if one_reader is None:
            return None
        return max(one_reader / self.readers, rcu / self.allowed)

    def method(
        self,
        name: str,
        rcu: Range,
        requests: float | Range,
        read_bytes: float,
        scanned: float,
        note: str,
    ) -> MethodEstimate:
        """The estimate of a method that sends ``requests`` (a range: where they vary) reading
        ``read_bytes`` in all (billed ``rcu``) over a table (or index) of ``scanned`` bytes."""
        spread = requests if isinstance(requests, Range) else Range.exact(requests)
        count = spread.value
        one = self.one_reader(count, read_bytes)
        return MethodEstimate(
            name,
            True,
            rcu.value,
            math.ceil(count),
            self.seconds(one, rcu.value),
            _tasks(one, scanned),
            note,
            rcu.low,
            rcu.high,
            math.floor(spread.low) if isinstance(requests, Range) else None,
            math.ceil(spread.high) if isinstance(requests, Range) else None,
        )


def pages_of(items: float, size_bytes: float) -> int:
    """The pages of a scan: 1 MB, or ``scan.PAGE_ITEMS`` items, each."""
    return max(math.ceil(items / SCAN_PAGE_ITEMS), math.ceil(size_bytes / MB), 1)


def size_range(size_bytes: float, pages: int, exact: bool = False) -> Range:
    """Read units of scanning ``size_bytes`` in ``pages``: ``scan_units``, from ``SIZE_SLACK``
    under (none when the size is ``exact``: read by the sample) to as much over, rounded up to
    a whole 4 KB unit, plus half a unit for each page after the first (each rounds its own
    bytes up)."""
    units = scan_units(int(size_bytes))
    under = units if exact else max(0.5, units * (1 - SIZE_SLACK))
    over = 0.5 * max(1, math.ceil(size_bytes * (1 + SIZE_SLACK) / UNIT))
    return Range(under, units, max(under, over + 0.5 * (pages - 1)))


def scan_range(info: TableInfo, items: int, exact: bool) -> Range:
    """A scan's read units (0 for an empty table)."""
    if not items:
        return Range.exact(0.0)
    return size_range(info.size_bytes, pages_of(items, info.size_bytes), exact)


def _sampled(total: float, squares: float, sample: Sample) -> Range:
    if sample.whole_table or not sample.segments:
        return Range.exact(total)
    return total_range(total, squares, sample.keys, sample.segments, sample.total_segments)


def skip_line(info: TableInfo, keys: Range, sample: Sample, speed: Speed) -> MethodEstimate:
    """A one-item page a collection, and one more for each own item that leads it (its
    marker: the next page looks at the item after it), and perhaps a last, empty one that
    ends the scan."""
    found = _sampled(sample.skip_units, sample.skip_squares, sample)
    units = Range(found.low, found.value, found.high + 0.5)  # (and a last, empty page or not)
    if sample.keys and not sample.whole_table:  # (no narrower than the key count's range)
        rate = sample.skip_units / sample.keys
        low = min(units.low, keys.low * rate)
        units = Range(low, max(low, units.value), max(units.high, keys.high * rate + 0.5))
    heavy = _firsts_like_any(info, keys, sample)
    if heavy is not None and heavy > units.high:
        units = Range(units.low, units.value, heavy)
    average = info.size_bytes / info.item_count if info.item_count else 0.0
    listed = sample.keys - sample.owned
    # (a collection of own items alone costs its pages too, though no key is listed)
    per_key = max(1.0, sample.skip_pages / listed) if sample.skip_pages and listed > 0 else 1.0
    requests = math.ceil(keys.value * per_key) + 1
    note = "a request a key: its first item's 4 KB units"
    if per_key >= 1.05:
        note += f"; {per_key:.2g} a key, with the own items (markers) that lead collections"
    if heavy is not None and heavy >= units.high:
        note += (
            f"; up to {figure(heavy)} RCU if first items are like the sample's other items "
            "(its first items were lighter)"
        )
    return speed.method("skip", units, requests, requests * average, info.size_bytes, note)


def _firsts_like_any(info: TableInfo, keys: Range, sample: Sample) -> float | None:
    """skip's high end if collections' first items are drawn like any item the sample read,
    where those cost more on average than the sampled collections' first items did (None:
    not so, or the sample is the whole table). A few large items among many small ones are
    seen among the sample's items long before among its first items: helper-78, 600 keys
    whose items are 100 B but 1% of them 300 KB; 22 keys sampled, none led by a large item,
    and the line said 194-565 RCU where the skip scan read 628.5 (9 keys led by one). The
    items' mean cost as a first item, plus ``Z`` of its standard error, times the key count's
    high end; its part over the first items' at most a scan's (the large items' bytes)."""
    if sample.whole_table or not sample.keys:
        return None
    costs = [0.5 * math.ceil(max(1, b) / UNIT) for run in sample.runs for c in run for b in c.sizes]
    firsts = sample.skip_units / sample.keys
    if len(costs) < 2 or sum(costs) <= (1 + WASTE) * firsts * len(costs):
        return None
    mean = sum(costs) / len(costs)
    variance = sum((c - mean) ** 2 for c in costs) / (len(costs) - 1)
    high = mean + Z * math.sqrt(variance / len(costs))
    scan = scan_units(info.size_bytes) * (1 + SIZE_SLACK)
    return keys.high * firsts + min(keys.high * (high - firsts), scan)


def _formula(prefix: Range, scan: Range) -> Range:
    """skip-pages' read units from the sample's sums alone (no collections to run it over)."""
    growth = GROWTH + NEAR * min(1.0, prefix.value / scan.value) if scan.value else GROWTH
    low = min(prefix.low * UNDER, scan.low)
    high = max(low, min(prefix.high * growth + 0.5, scan.high * THROUGH + 1))
    value = min(max(low, min(prefix.value * (1 + growth) / 2, scan.value)), high)
    return Range(low, value, high)


def skip_pages_requests(
    info: TableInfo,
    keys: Range,
    orders: Sequence[Simulated],
    *,
    exact: bool = False,
    seen: float | None = None,
) -> Range:
    """skip-pages' requests, from the ``orders`` simulated: the pages that skipped (with the
    key count's range) and those read on as a scan (over the table's size, DescribeTable's),
    from the fewest of an order to the most, and an empty page that may end the listing.
    Unless the simulation ran over the table itself (``exact``: a sample of the whole table),
    the listing's first trial of reading on may fail where every order's passed (its first
    pages' costs are noise: on the sample table with a binary sort key, 17 requests against
    13), and the next waits as long again (a trial's pages more); and it may go on a page
    earlier than any order. ``seen``: the table's bytes but those the drawn segments missed
    (``_seen_bytes``: their pages are added apart), where not DescribeTable's size."""
    size = info.size_bytes if seen is None else seen
    on = [sim.through_pages * size / sim.whole if sim.whole else 0.0 for sim in orders]
    low_keys = keys.low / keys.value if keys.value else 1.0
    high_keys = keys.high / keys.value if keys.value else 1.0
    pairs = list(zip(orders, on, strict=True))
    again = LOOK_AFTER + 3 if not exact and all(o > 0 for o in on) else 0
    low = min(sim.skip_pages * low_keys + o for sim, o in pairs) - (not exact)
    high = max(sim.skip_pages * high_keys + o for sim, o in pairs) + 1 + again
    value = max(1.0, sum(sim.skip_pages + o for sim, o in pairs) / len(pairs))
    return Range(min(value, max(1.0, math.floor(low))), value, max(math.ceil(high), value))


def skip_pages_line(
    info: TableInfo,
    items: int,
    keys: Range,
    scan: Range,
    sample: Sample,
    speed: Speed,
    described: int,
    segments: int = 1,
) -> MethodEstimate:
    """skip-pages run over the sample (``simulate.skip_pages_range``, in ``segments`` Scan
    segments read one after another), at most ``THROUGH``
    times a scan's and a unit; without sampled collections, what skipping reads of each
    collection (up to ``GROWTH`` more), or about a scan's where that is less; a scan's on a
    table that DescribeTable puts at ``WHOLE_BYTES`` or less (``described``), read whole,
    unless the sample found it over ``WHOLE_OVER`` times that (a description hours old:
    reading whole stops there, ``PageSize.whole``)."""
    if not items:
        return speed.method("skip-pages", Range.exact(0.0), 1, 0, 0, "the table is empty")
    if 0 < described <= WHOLE_BYTES and info.size_bytes <= WHOLE_OVER * described:
        return speed.method(
            "skip-pages",
            scan,
            pages_of(items, info.size_bytes),
            info.size_bytes,
            info.size_bytes,
            "a table of 128 KB or less: read whole, as a scan (skipping saves 16 RCU at most)",
        )
    prefix = _sampled(sample.prefix_units, sample.prefix_squares, sample)
    orders = simulated_orders(info, keys, sample, segments)
    missed = missed_bytes(info, sample, scan)
    seen = _seen_bytes(info, missed)
    priced = scan.scaled(seen / info.size_bytes) if info.size_bytes else scan
    simulated = skip_pages_range(info, keys, priced, sample, orders, segments) if orders else None
    units, unseen, more_pages = widened(
        info, keys, scan, sample, simulated or _formula(prefix, scan), simulated is not None, missed
    )
    value = units.value
    pages = None
    if orders:
        pages = skip_pages_requests(info, keys, orders, exact=sample.whole_table, seen=seen)
    most = skipping_requests(info, keys, priced, sample, orders, segments) if orders else None
    if pages is not None and most is not None:  # (the listing may skip to its end)
        pages = Range(pages.low, pages.value, max(pages.high, math.ceil(most)))
    if pages is not None and more_pages:  # (a page each collection missed, at most)
        pages = Range(pages.low, pages.value, pages.high + more_pages)
    if pages is not None and units.high >= (1 - WASTE) * scan.low:
        # Skipping may save under WASTE: the listing may go on as a scan after its first trial
        # (where the simulated orders skipped on: a trial's turn is not known in advance).
        early = pages_of(items, info.size_bytes) + LOOK_AFTER + 2  # (a ramp of two pages)
        pages = Range(min(pages.low, early), pages.value, pages.high)
    if scan.value <= (1 + WASTE) * prefix.value:  # skipping saves little: it reads through
        through: float | Range = math.ceil(info.size_bytes / (MAX_TARGET * UNIT)) + LOOK_AFTER + 1
        through = pages or through
        note = (
            "collections of about 4 KB or less: skipping would save under 5%, so it reads on "
            "like a scan, in pages of up to 256 KB" + unseen
        )
        return speed.method("skip-pages", units, through, info.size_bytes, info.size_bytes, note)
    large = keys.value * sample.large / sample.keys if sample.keys else keys.value
    small_bytes = max(0.0, (value - 0.5 * large) / 0.5 * UNIT)
    requests = large + math.ceil(small_bytes / (16 * UNIT)) + 1
    return speed.method(
        "skip-pages",
        units,
        pages or requests,
        value / 0.5 * UNIT,
        info.size_bytes,
        "a page a large collection, small ones packed as a scan packs them (its decisions "
        "run over the sample); a scan's where skipping saves little" + unseen,
    )


def _seen_bytes(info: TableInfo, missed: Missed | None) -> float:
    """The table's bytes but those the drawn segments missed (``missed``,
    ``missed.missed_bytes``'s): the simulation's pages read on as a scan are priced at their
    share of a scan, as ``widened`` adds what the missed bytes cost (from a page of theirs to
    all). Priced at the whole scan, the missed bytes counted twice, and the low end stayed at
    half a scan where skip-pages skips them (helper-88: 3,000 keys of a 50 B item and one of
    1,000 x 4 KB, the draw missing it: 283-597 RCU said, 29.5 read; 60 keys of 20 x 4 KB first
    in scan order among 6,000 of a 60 B item: 343-746 said, 133 read)."""
    if missed is None:
        return float(info.size_bytes)
    return max(0.0, info.size_bytes - missed.bytes)


def index_line(
    info: TableInfo,
    items: int | None,
    index: str,
    attribute: str,
    speed: Speed,
    proof: ProofStatus | str | None,
    markers: str | None,
) -> tuple[MethodEstimate, float | None]:
    """The index's line, and the replay's read units in it (None: not known)."""
    if info.sort_key is None:  # (index create refuses it: a scan reads each key once)
        note = "the table has no sort key, so it has no markers: a scan reads each key once"
        return MethodEstimate("index", False, note=note), None
    if not index_ready(info, index, attribute):
        note = f"the table has no marker index {index!r}"
        if markers is not None:
            note += f" (`index create` would add it: {markers})"
        return MethodEstimate("index", False, note=note), None
    index_bytes = info.index_sizes.get(index, 0)
    if items is None or (items and not index_bytes):
        note = "the index's size is unknown (DescribeTable reports none yet)"
        return MethodEstimate("index", True, note=note), None
    scanned = size_range(index_bytes, pages_of(0, index_bytes))
    if isinstance(proof, ProofStatus) and proof.rechecks is not None:
        replay = replay_units(info, index, proof.rechecks)
        # (the records are those past the maintainer's positions held back the margin: on a
        # busy table, mostly applied ones; helper-87 F1: a caught-up maintainer's 445 records
        # were said to be how far it was behind)
        unapplied = (
            f", {proof.unapplied:,} of them not applied yet by its maintainer"
            if proof.unapplied
            else ", all applied by its maintainer"
            if proof.unapplied == 0
            else ""
        )
        note = (
            f"its scan and the replay of {proof.records or 0:,} stream record(s) past its "
            f"maintainer's positions held back the replay margin{unapplied}: "
            f"{proof.rechecks:,} collection(s) re-checked, ~{replay:,.1f} RCU (as the stream "
            "stands now; more if the maintainer falls behind)"
        )
        rcu = scanned.scaled(1, replay)
        # (its scan's pages and a consistent Query a re-check: helper-89 F7, ~1 request said
        # where the listing sent 419, one a collection re-checked)
        requests = pages_of(0, index_bytes) + proof.rechecks
        return speed.method("index", rcu, requests, index_bytes, index_bytes, note), replay
    why = proof.reason if isinstance(proof, ProofStatus) else (proof or "not read")
    most = most_keys("auto", info, index)
    per_key = scan_costs(info, index)[2]
    note = (
        f"the index scan only; a replay re-checks each collection the stream names for "
        f"{per_key:g} RCU, and auto gives the index up past {most:,} of them (whatever the "
        f"margin: there a scan costs less). Its proof "
        f"cannot be read now: {why}"
    )
    pages = pages_of(0, index_bytes)
    return speed.method("index", scanned, pages, index_bytes, index_bytes, note), None
