"""What a listing will cost, said before it runs: each method's read units and the key count
as ranges (low, likeliest, high), requests and time, what ``auto`` would likely choose and why,
what the marker index adds or costs, and how many tasks to split it into. Pure: decided from the
table's description, a sample of it (:class:`~ddbkeys.partition_keys._tasks.sampled.Sample`, read
by :mod:`ddbkeys.partition_keys._tasks.sample`) and, for a marker index, what ``index status``
reads (:class:`~ddbkeys.partition_keys._proof.report.ProofStatus`).

The sample reads whole segments of a parallel Scan split in about one segment per 4 KB, drawn
at random. DynamoDB places each collection in one segment by a hash of its partition key, so the
drawn segments hold each collection with the same chance, whatever the collections hold: the
key count, and any per-collection sum (a method's read units), scale up from them with a range
that narrows as the sample grows (:mod:`ddbkeys.partition_keys._tasks.ranges`, about 99%; a
point when the sample read every segment). A heavy collection lands in one segment only, so it
cannot sway the count the way it swayed a sample of the segments' first pages. The per-method
model (:mod:`ddbkeys.partition_keys._tasks.methods`) turns those sums into each method's range;
the scan's and the index's come from DescribeTable's sizes through the functions ``auto`` and
``index status`` use (:func:`ddbkeys.partition_keys._proof.replay.estimate`,
:func:`~ddbkeys.partition_keys._proof.replay.index_listing_units`): one model, not two.

What the ranges rest on (``basis``): the sample's size (segments, keys seen), DescribeTable's
size and item count (refreshed about every six hours on AWS; DynamoDB Local keeps them current),
the stream as ``index status`` read it (a maintainer that falls further behind costs more), and
skip-pages going on as a scan where skipping saves little. The time is the longer of one
reader's measured speed shared by ``concurrency`` readers and the read units over the read
budget or the table's own limit. When the table says it holds nothing yet and the sample did not
read it all, no total is made up: the numbers are None and the notes say why.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace

from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._listing.opening import auto_segments
from ddbkeys.partition_keys._listing.options import ListingOptions
from ddbkeys.partition_keys._listing.read_share import read_capacity, share
from ddbkeys.partition_keys._proof.report import (
    ProofStatus,
)
from ddbkeys.partition_keys._tasks.auto import auto_choice, in_segments
from ddbkeys.partition_keys._tasks.figures import duration, plural, size, span
from ddbkeys.partition_keys._tasks.marker_cost import MarkerCost, index_warning, markers_to_add
from ddbkeys.partition_keys._tasks.methods import (
    TASK_SECONDS,
    MethodEstimate,
    Speed,
    index_line,
    pages_of,
    scan_range,
    skip_line,
    skip_pages_line,
)
from ddbkeys.partition_keys._tasks.missed import missed_items
from ddbkeys.partition_keys._tasks.ranges import Range, count_range
from ddbkeys.partition_keys._tasks.sampled import Sample

__all__ = [
    "REFRESHED",
    "TASK_SECONDS",
    "ListingEstimate",
    "MethodEstimate",
    "estimate",
]

TASKS_RULE = (
    f"enough tasks that each takes about {TASK_SECONDS // 60} minutes at one reader's measured "
    "speed, at most one per MB the method scans"
)
REFRESHED = (
    "DescribeTable's size and item count are refreshed about every six hours on AWS: an "
    "estimate, not a promise"
)


@dataclass(frozen=True)
class ListingEstimate:
    """What listing ``table`` would cost, before it runs (see :mod:`this module
    <ddbkeys.partition_keys._tasks.estimate>` for the model). ``items``, ``size_bytes`` and ``keys``
    are the table's (``source`` says from where; None: unknown), the keys within ``keys_low``
    to ``keys_high``, and ``basis`` says what these ranges rest on; ``rate`` is the read budget
    (read units a second, None: none) and ``limit`` what the table serves at most (None: no
    known limit); ``auto`` the method ``auto`` would likely choose, and why (the figures it
    weighed); ``markers`` what creating the marker index would add and cost (None: it is
    there, or the table cannot have one)."""

    table: str
    items: int | None
    size_bytes: int | None
    keys: int | None
    source: str
    sample: Sample
    read_capacity: float
    capacity_source: str
    rate: float | None
    limit: float | None
    concurrency: int
    methods: tuple[MethodEstimate, ...]
    auto: str
    auto_reason: str
    tasks_rule: str = TASKS_RULE
    notes: tuple[str, ...] = ()
    keys_low: int | None = None
    keys_high: int | None = None
    basis: str = ""
    markers: MarkerCost | None = None
    warning: str | None = None
    #: auto's own line where it reads otherwise than the method it would choose does when
    #: asked for (skip-pages in several Scan segments, on a table of 4 MB or more); None: as it.
    auto_line: MethodEstimate | None = None

    def method(self, name: str) -> MethodEstimate:
        """The estimate of method ``name`` (``auto``: the one it would likely choose, as
        ``auto`` reads with it: ``auto_line`` where there is one)."""
        if name == "auto" and self.auto_line is not None:
            return self.auto_line
        wanted = self.auto if name == "auto" else name
        for found in self.methods:
            if found.method == wanted:
                return found
        raise KeyError(name)

    def summary(self, method: str = "auto") -> str:
        """One line: the table's size, the method's read units and time, the tasks suggested."""
        chosen = self.method(method)
        what = (
            f"~{size(self.size_bytes)}, ~{plural(self.items)}, "
            f"{span(self.keys_low, self.keys, self.keys_high, whole=True)} keys"
            if self.size_bytes is not None and self.items is not None and self.keys is not None
            else "size unknown"
        )
        named = f"{chosen.method} (auto's likely choice)" if method == "auto" else chosen.method
        if not chosen.available:
            return f"Estimate for {self.table}: {what}; {named} cannot list it: {chosen.note}"
        cost = (
            f"{span(chosen.rcu_low, chosen.rcu, chosen.rcu_high)} RCU, ~{duration(chosen.seconds)}"
            if chosen.rcu is not None and chosen.seconds is not None
            else "cost unknown"
        )
        tasks = f"; {chosen.tasks} task(s) suggested" if chosen.tasks is not None else ""
        return f"Estimate for {self.table}: {what}; {named}: {cost}{tasks} ({REFRESHED})."

    def to_json(self, indent: int | None = None) -> str:
        """The estimate as one JSON document (the sample's figures, not the item sizes of each
        collection it read: ``sample.runs``, what the simulation of skip-pages ran over)."""
        document = asdict(self)
        document["sample"].pop("runs", None)
        return json.dumps(document, sort_keys=True, indent=indent)


def export_note(size_bytes: int | None) -> str:
    """What listing from an export would cost instead (said beside each method's read units)."""
    written = "its bytes" if size_bytes is None else f"about {size(size_bytes)}"
    return (
        "an export of the table (`partition-keys export start`, then `--from-export`) reads no "
        f"read capacity: it writes {written} to S3 (ExportTableToPointInTime is billed per GB "
        "and needs point-in-time recovery on), and lists the keys as of the export's time"
    )


def estimate(
    info: TableInfo,
    sample: Sample,
    options: ListingOptions,
    *,
    concurrency: int = 1,
    proof: ProofStatus | str | None = None,
) -> ListingEstimate:
    """The estimate of listing the table ``info`` describes, given ``sample`` of it, with
    ``concurrency`` readers at once (threads or tasks) under the read budget ``options`` give
    (see :func:`~ddbkeys.partition_keys._listing.read_share.share`), its marker index named
    by them, whose ``proof`` status was read (a string: why it could not be)."""
    notes: list[str] = []
    items, size_bytes, source = _totals(info, sample, notes)
    one_each = info.sort_key is None
    keys = _keys(items, sample, sample.keys - sample.owned, one_each, yours=True)  # listed
    collections = _keys(items, sample, sample.keys, one_each)  # what skip reads, yours or not
    missed = _missed(info, items, sample, one_each)
    keys = _with_missed(keys, missed, items)
    rate = share(info, options.read_percent, options.max_rcu_per_second, options.read_capacity)
    whole, whence = read_capacity(info, options.read_capacity)
    limit = _limit(info, options.read_capacity)
    index, attribute = options.index_name, options.marker_attribute
    speed = Speed(sample, concurrency, min(x for x in (rate, limit, math.inf) if x is not None))
    known = info if items is None else replace(info, item_count=items, size_bytes=size_bytes or 0)
    exact = sample.whole_table and not sample.cut
    scan = scan_range(known, items, exact) if items is not None else None
    skip_pages = _skip_pages(known, items, collections, scan, sample, speed, info.size_bytes)
    low, rcu, high = skip_pages.rcu_low, skip_pages.rcu, skip_pages.rcu_high
    backfill = None if low is None or rcu is None or high is None else Range(low, rcu, high)
    cost = markers_to_add(
        info, known, sample, keys, scan, options.index_name, options.marker_attribute, backfill
    )
    markers = cost if cost is not None and cost.markers_high >= 0.5 else None  # (some to add)
    listed, replay = index_line(
        known,
        items,
        index,
        attribute,
        speed,
        proof,
        markers.summary() if markers is not None else None,
    )
    methods = (
        _scan(known, items, scan, speed),
        _skip(known, _with_missed(collections, missed, items), sample, speed),
        skip_pages,
        listed,
    )
    segments = auto_segments(options, info.size_bytes, rate)
    pages = _as_auto(skip_pages, segments, known, items, collections, scan, sample, speed, info)
    auto, reason = auto_choice(
        info,
        index,
        attribute,
        (*methods[:2], pages, *methods[3:]),
        replay,
        options.include_own_items,
        proof,
    )
    auto_line = pages if auto == "skip-pages" and pages is not skip_pages else None
    warning = _warning(info, cost, listed, scan)
    return ListingEstimate(
        table=info.name,
        items=items,
        size_bytes=size_bytes,
        keys=None if keys is None else round(keys.value),
        source=source,
        sample=sample,
        read_capacity=whole,
        capacity_source=whence,
        rate=rate,
        limit=limit,
        concurrency=concurrency,
        methods=methods,
        auto=auto,
        auto_reason=reason,
        notes=(*notes, export_note(size_bytes), REFRESHED),
        keys_low=None if keys is None else math.floor(keys.low),
        keys_high=None if keys is None else math.ceil(keys.high),
        basis=_basis(sample, source, sorted_keys=info.sort_key is not None),
        markers=markers,
        warning=warning,
        auto_line=auto_line,
    )


def _as_auto(
    alone: MethodEstimate,
    segments: int,
    known: TableInfo,
    items: int | None,
    keys: Range | None,
    scan: Range | None,
    sample: Sample,
    speed: Speed,
    info: TableInfo,
) -> MethodEstimate:
    """skip-pages as ``auto`` reads with it (``alone``: as asked for): in ``segments`` Scan
    segments, on a table of 4 MB or more (``auto.in_segments``)."""
    if not alone.available or alone.rcu is None or segments <= 1:
        return alone
    split = _skip_pages(known, items, keys, scan, sample, speed, info.size_bytes, segments)
    return in_segments(alone, split, segments)


def _warning(
    info: TableInfo, markers: MarkerCost | None, listed: MethodEstimate, scan: Range | None
) -> str | None:
    """The markers' warning, else the index's when it would cost more than a scan."""
    if markers is not None and markers.warning is not None:
        return markers.warning
    if listed.available and listed.rcu is not None and scan is not None:
        return index_warning(info.name, listed.rcu, scan.value, before=False)
    return None


def _basis(sample: Sample, source: str, *, sorted_keys: bool = True) -> str:
    """What the ranges rest on, in a sentence (``sorted_keys``: the table has a sort key, so
    skip-pages and the index can list it)."""
    seen = sample.keys - sample.owned
    if sample.whole_table:
        drawn = f"the sample read the whole table ({plural(seen, 'key')}): counts exact"
    else:
        drawn = (
            f"{sample.segments:,} of {sample.total_segments:,} Scan segments drawn at random "
            f"({seen:,} keys seen; about 99% ranges: collections the draw missed show only "
            "as DescribeTable's size and count beyond the sample's)"
        )
    sizes = (
        f"{drawn}; sizes from {source} (DescribeTable's are refreshed about every six hours on AWS)"
    )
    if not sorted_keys:
        return sizes
    return (
        f"{sizes}; the index's replay as the stream stands now; skip-pages going on as a scan "
        "where skipping saves little"
    )


#: The sample's bytes over the table's own (DescribeTable) that prove the description stale
#: (leeway for how item sizes are counted; its items are counted exactly).
STALE_BYTES = 1.25


def _totals(
    info: TableInfo, sample: Sample, notes: list[str]
) -> tuple[int | None, int | None, str]:
    """The table's items and bytes, and where they come from: the sample when it read the
    whole table (skipping nothing), else DescribeTable; None when the table reports nothing
    and the sample did not read it all."""
    if sample.whole_table and not sample.cut:
        return sample.items, sample.bytes, "the sample, which read the whole table"
    if info.item_count > 0 and (
        sample.items > info.item_count or sample.bytes > STALE_BYTES * info.size_bytes
    ):
        # (a table loaded since DynamoDB last refreshed its description: figures resting on
        # it were 7x and 87x too low, shown as exact, where a helper's proxy made it stale)
        notes.append(
            f"DescribeTable reports {info.item_count:,} items and {size(info.size_bytes)}, but "
            f"the sample alone read {sample.items:,} items and {size(sample.bytes)} in "
            f"{sample.segments} of {sample.total_segments} Scan segments: the description "
            "is older than the table (DynamoDB refreshes it about every 6 hours), so no total "
            "can be estimated until it is refreshed"
        )
        return None, None, "unknown"
    if info.item_count > 0:
        return info.item_count, info.size_bytes, "DescribeTable"
    notes.append(
        f"DescribeTable reports no items yet, and the sample read {sample.items:,} without "
        "reaching the end of the table: no total can be estimated until the table's size is "
        "refreshed"
    )
    return None, None, "unknown"


def _keys(
    items: int | None, sample: Sample, seen: int, one_each: bool = False, yours: bool = False
) -> Range | None:
    """The distinct partition keys, of which the sample saw ``seen`` (``ranges.count_range``,
    as even as the drawn segments show: ``yours``, counting only those that showed one of
    your items), at most the items. ``one_each`` (a table without a sort key): the items, less
    those of the sample's that were not counted (ddbkeys' own), scaled up as a count."""
    if items is None or (not sample.segments and items):
        return None
    if not items:
        return Range.exact(0)
    if sample.whole_table:
        return Range.exact(seen)
    if one_each:
        unseen = sample.keys - seen
        left = count_range(unseen, sample.segments, sample.total_segments)
        return Range(max(0.0, items - left.high), max(0.0, items - left.value), items - left.low)
    found = count_range(
        seen, sample.segments, sample.total_segments, squares=sample.squares(seen, yours)
    )
    most = max(float(items), float(seen))
    low = min(found.low, most)
    return Range(low, min(found.value, most), min(found.high, most))


def _missed(info: TableInfo, items: int | None, sample: Sample, one_each: bool) -> float:
    """The items no drawn segment held, each of which may be a key (``missed.missed_items``:
    the key count's high end and skip's hold them); none where the sample cut collections,
    whose rests they may be, as the count takes them."""
    if items is None or one_each or sample.cut:
        return 0.0
    return missed_items(replace(info, item_count=items), sample)


def _with_missed(keys: Range | None, missed: float, items: int | None) -> Range | None:
    """``keys`` whose high end holds ``missed`` more (``missed.missed_items``), at most the
    items."""
    if keys is None or not missed or items is None:
        return keys
    return Range(keys.low, keys.value, max(keys.high, min(float(items), keys.high + missed)))


def _limit(info: TableInfo, given: float | None) -> float | None:
    """The most read units a second the table serves: as given, provisioned, or an on-demand
    maximum (None: no known limit; a warm throughput is not one)."""
    if given is not None:
        return float(given)
    if info.billing_mode != "PAY_PER_REQUEST" and info.provisioned_reads is not None:
        return info.provisioned_reads
    return info.max_reads


def _unknown(method: str) -> MethodEstimate:
    return MethodEstimate(method, True, note="the table's size is unknown")


def _scan(info: TableInfo, items: int | None, scan: Range | None, speed: Speed) -> MethodEstimate:
    if items is None or scan is None:
        return _unknown("scan")
    pages = pages_of(items, info.size_bytes)
    return speed.method(
        "scan", scan, pages, info.size_bytes, info.size_bytes, "0.5 RCU a 4 KB of the table"
    )


def _no_sort_key(method: str, info: TableInfo) -> MethodEstimate | None:
    if info.sort_key is not None:
        return None
    return MethodEstimate(method, False, note="the table has no sort key: use scan")


def _skip(info: TableInfo, keys: Range | None, sample: Sample, speed: Speed) -> MethodEstimate:
    if (none := _no_sort_key("skip", info)) is not None:
        return none
    if keys is None:
        return _unknown("skip")
    return skip_line(info, keys, sample, speed)


def _skip_pages(
    info: TableInfo,
    items: int | None,
    keys: Range | None,
    scan: Range | None,
    sample: Sample,
    speed: Speed,
    described: int,
    segments: int = 1,
) -> MethodEstimate:
    if (none := _no_sort_key("skip-pages", info)) is not None:
        return none
    if items is None or keys is None or scan is None:
        return _unknown("skip-pages")
    return skip_pages_line(info, items, keys, scan, sample, speed, described, segments)
