"""What a listing will cost, said before it runs: read units, requests and time for each method,
what ``auto`` would likely choose, and how many tasks to split it into. Pure: decided from the
table's description and a small sample of it
(:class:`~ddbkeys.partition_keys._tasks.sampled.Sample`, read by
:mod:`ddbkeys.partition_keys._tasks.sample`).

The model is the one ``auto`` already uses to weigh the marker index against a scan
(:func:`ddbkeys.partition_keys._proof.replay.estimate`: a scan costs the table's size at 0.5 read
units per 4 KB, the index scan the index's size), with what the sample adds:

- the items per partition key (the collection starts among the sampled items), hence the
  number of keys, which the skip scan pays 0.5 read units each (per 4 KB of the item it reads);
- each sampled collection's size up to 4 KB: the adaptive skip scan (``skip-pages``) pays about
  that share of a 4 KB page per collection (one page for a large one, whose rest it jumps past;
  small ones packed like a scan), at most what a scan costs;
- the speed of one reader: a request's latency (the fastest of the one-item pages) and the
  bytes a second a page reads on top of it (the median of the ~64 KB pages). A method's time
  is its requests times the latency plus the bytes it reads at that speed. (On DynamoDB Local a
  request that starts further into a table takes longer: there the skip scans' times lean
  short.)

The time is the longer of that speed shared by ``concurrency`` readers and the read units
divided by the read budget (``read_percent``, ``max_rcu_per_second``) or by the table's own
limit (provisioned read units, or an on-demand maximum). DescribeTable's size and item count
are refreshed about every six hours on AWS (DynamoDB Local keeps them current): an estimate,
not a promise. When the table says it holds nothing yet and the sample did not read it all,
no total is made up: the numbers are None and the notes say why.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace

from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._listing.choice import choose, index_ready, most_keys, not_active
from ddbkeys.partition_keys._listing.options import ListingOptions
from ddbkeys.partition_keys._listing.pages import LOOK_AFTER, MAX_TARGET, WASTE
from ddbkeys.partition_keys._listing.read_share import read_capacity, share
from ddbkeys.partition_keys._listing.scan import PAGE_ITEMS as SCAN_PAGE_ITEMS
from ddbkeys.partition_keys._proof.replay import estimate as scan_costs
from ddbkeys.partition_keys._proof.replay import scan_units
from ddbkeys.partition_keys._tasks.sampled import SAMPLE_PAGE_BYTES, UNIT, Sample

__all__ = [
    "REFRESHED",
    "TASK_SECONDS",
    "ListingEstimate",
    "MethodEstimate",
    "duration",
    "estimate",
    "size",
]

MB = 1024 * 1024
#: A suggested task takes about this long at one reader's measured speed: an engine that runs
#: a failed task again loses at most about that much work.
TASK_SECONDS = 15 * 60
TASKS_RULE = (
    f"enough tasks that each takes about {TASK_SECONDS // 60} minutes at one reader's measured "
    "speed, at most one per MB the method scans"
)
REFRESHED = (
    "DescribeTable's size and item count are refreshed about every six hours on AWS: an "
    "estimate, not a promise"
)


@dataclass(frozen=True)
class MethodEstimate:
    """One method's expected cost: read units (``rcu``), requests, ``seconds`` (with the
    estimate's readers and budget) and the suggested ``tasks``; None where it cannot be known
    (``note`` says why). ``available`` is False for a method the table cannot be listed with."""

    method: str
    available: bool
    rcu: float | None = None
    requests: int | None = None
    seconds: float | None = None
    tasks: int | None = None
    note: str = ""


@dataclass(frozen=True)
class ListingEstimate:
    """What listing ``table`` would cost, before it runs (see :mod:`this module
    <ddbkeys.partition_keys._tasks.estimate>` for the model). ``items``, ``size_bytes`` and ``keys``
    are the table's (``source`` says from where; None: unknown); ``rate`` is the read budget
    (read units a second, None: none) and ``limit`` what the table serves at most (None: no
    known limit); ``auto`` the method ``auto`` would likely choose, and why."""

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

    def method(self, name: str) -> MethodEstimate:
        """The estimate of method ``name`` (``auto``: the one it would likely choose)."""
        wanted = self.auto if name == "auto" else name
        for found in self.methods:
            if found.method == wanted:
                return found
        raise KeyError(name)

    def summary(self, method: str = "auto") -> str:
        """One line: the table's size, the method's read units and time, the tasks suggested."""
        chosen = self.method(method)
        what = (
            f"~{size(self.size_bytes)}, ~{self.items:,} items, ~{self.keys:,} keys"
            if self.size_bytes is not None and self.items is not None and self.keys is not None
            else "size unknown"
        )
        named = f"{chosen.method} (auto's likely choice)" if method == "auto" else chosen.method
        if not chosen.available:
            return f"Estimate for {self.table}: {what}; {named} cannot list it: {chosen.note}"
        cost = (
            f"~{chosen.rcu:,.0f} RCU, ~{duration(chosen.seconds)}"
            if chosen.rcu is not None and chosen.seconds is not None
            else "cost unknown"
        )
        if chosen.method == "index":
            cost += " and its proof (not known in advance)"
        tasks = f"; {chosen.tasks} task(s) suggested" if chosen.tasks is not None else ""
        return f"Estimate for {self.table}: {what}; {named}: {cost}{tasks} ({REFRESHED})."

    def to_json(self, indent: int | None = None) -> str:
        """The estimate as one JSON document."""
        return json.dumps(asdict(self), sort_keys=True, indent=indent)


def estimate(
    info: TableInfo, sample: Sample, options: ListingOptions, *, concurrency: int = 1
) -> ListingEstimate:
    """The estimate of listing the table ``info`` describes, given ``sample`` of it, with
    ``concurrency`` readers at once (threads or tasks) under the read budget ``options`` give
    (see :func:`~ddbkeys.partition_keys._listing.read_share.share`), its marker index named
    by them."""
    notes: list[str] = []
    items, size_bytes, source = _totals(info, sample, notes)
    keys = _keys(items, sample)
    capacity = options.read_capacity
    rate = share(info, options.read_percent, options.max_rcu_per_second, capacity)
    whole, whence = read_capacity(info, capacity)
    limit = _limit(info, capacity)
    index, marker_attribute = options.index_name, options.marker_attribute
    speed = _Speed(sample, concurrency, min(x for x in (rate, limit, math.inf) if x is not None))
    known = info if items is None else replace(info, item_count=items, size_bytes=size_bytes or 0)
    methods = (
        _scan(known, items, speed),
        _skip(known, items, keys, speed),
        _skip_pages(known, items, keys, sample, speed),
        _index(known, items, index, marker_attribute, speed),
    )
    auto, reason = _auto(info, index, marker_attribute)
    return ListingEstimate(
        table=info.name,
        items=items,
        size_bytes=size_bytes,
        keys=keys,
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
        notes=(*notes, REFRESHED),
    )


def _totals(
    info: TableInfo, sample: Sample, notes: list[str]
) -> tuple[int | None, int | None, str]:
    """The table's items and bytes, and where they come from: the sample when it read the
    whole table, else DescribeTable; None when the table reports nothing and the sample did
    not read it all."""
    if sample.whole_table:
        return sample.items, sample.bytes, "the sample, which read the whole table"
    if info.item_count > 0:
        return info.item_count, info.size_bytes, "DescribeTable"
    notes.append(
        f"DescribeTable reports no items yet, and the sample read {sample.items:,} without "
        "reaching the end of the table: no total can be estimated until the table's size is "
        "refreshed"
    )
    return None, None, "unknown"


def _keys(items: int | None, sample: Sample) -> int | None:
    """The distinct partition keys: the table's items times the sample's keys per item."""
    if items is None:
        return None
    if not sample.items:
        return 0 if items == 0 else None
    return max(1, round(items * sample.keys / sample.items)) if items else 0


def _limit(info: TableInfo, given: float | None) -> float | None:
    """The most read units a second the table serves: as given, provisioned, or an on-demand
    maximum (None: no known limit; a warm throughput is not one)."""
    if given is not None:
        return float(given)
    if info.billing_mode != "PAY_PER_REQUEST" and info.provisioned_reads is not None:
        return info.provisioned_reads
    return info.max_reads


@dataclass(frozen=True)
class _Speed:
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
        if s.latency > 0:  # (no page read past the first item: a table of a few items)
            return requests * s.latency
        return None

    def seconds(self, one_reader: float | None, rcu: float) -> float | None:
        """The time with the readers at once and within the read units allowed a second."""
        if one_reader is None:
            return None
        return max(one_reader / self.readers, rcu / self.allowed)

    def method(
        self, name: str, rcu: float, requests: float, read_bytes: float, scanned: int, note: str
    ) -> MethodEstimate:
        """The estimate of a method that sends ``requests`` reading ``read_bytes`` in all
        (billed ``rcu``) over a table (or index) of ``scanned`` bytes."""
        one = self.one_reader(requests, read_bytes)
        return MethodEstimate(
            name, True, rcu, math.ceil(requests), self.seconds(one, rcu), _tasks(one, scanned), note
        )


def _tasks(one_reader: float | None, scanned: int) -> int | None:
    """``TASKS_RULE``: about ``TASK_SECONDS`` a task for one reader, at most one per MB."""
    if one_reader is None:
        return None
    return max(1, min(math.ceil(one_reader / TASK_SECONDS), scanned // MB, 1_000_000))


def _unknown(method: str) -> MethodEstimate:
    return MethodEstimate(method, True, note="the table's size is unknown")


def _scan(info: TableInfo, items: int | None, speed: _Speed) -> MethodEstimate:
    if items is None:
        return _unknown("scan")
    rcu = scan_units(info.size_bytes) if items else 0.0
    requests = max(math.ceil(items / SCAN_PAGE_ITEMS), math.ceil(info.size_bytes / MB), 1)
    return speed.method(
        "scan", rcu, requests, info.size_bytes, info.size_bytes, "0.5 RCU a 4 KB of the table"
    )


def _no_sort_key(method: str, info: TableInfo) -> MethodEstimate | None:
    if info.sort_key is not None:
        return None
    return MethodEstimate(method, False, note="the table has no sort key: use scan")


def _skip(info: TableInfo, items: int | None, keys: int | None, speed: _Speed) -> MethodEstimate:
    if (none := _no_sort_key("skip", info)) is not None:
        return none
    if items is None or keys is None:
        return _unknown("skip")
    average = info.size_bytes / items if items else 0.0
    requests = keys + 1
    rcu = 0.5 * max(1, math.ceil(average / UNIT)) * requests
    return speed.method(
        "skip", rcu, requests, requests * average, info.size_bytes, "0.5 RCU a key, a request each"
    )


def _skip_pages(
    info: TableInfo, items: int | None, keys: int | None, sample: Sample, speed: _Speed
) -> MethodEstimate:
    """A page (0.5 RCU) for each large collection; the small ones packed in pages that grow
    from 4 to 256 KB (``pages.PageSize``), taken as about 64 KB each; at most a scan's cost."""
    if (none := _no_sort_key("skip-pages", info)) is not None:
        return none
    if items is None or keys is None:
        return _unknown("skip-pages")
    scan_rcu = scan_units(info.size_bytes) if items else 0.0
    per_key = sample.capped_bytes / sample.keys / UNIT * 0.5 if sample.keys else 0.5
    rcu = min(scan_rcu, max(0.5, keys * per_key)) if items else 0.0
    if items and scan_rcu <= (1 + WASTE) * rcu:  # skipping saves little: it reads through
        requests = math.ceil(info.size_bytes / (MAX_TARGET * UNIT)) + LOOK_AFTER + 1
        note = (
            "collections of about 4 KB or less: skipping would save under 5% a key, so it "
            "reads through like a scan, in pages of up to 256 KB"
        )
        return speed.method(
            "skip-pages", scan_rcu, requests, info.size_bytes, info.size_bytes, note
        )
    large = round(keys * sample.large / sample.keys) if sample.keys else keys
    small_bytes = max(0.0, (rcu - 0.5 * large) / 0.5 * UNIT)
    requests = large + math.ceil(small_bytes / SAMPLE_PAGE_BYTES) + 1
    return speed.method(
        "skip-pages",
        rcu,
        requests,
        rcu / 0.5 * UNIT,
        info.size_bytes,
        "a 4 KB page (0.5 RCU) a large collection, small ones packed like a scan; up to a "
        "quarter more while its pages grow",
    )


def _index(
    info: TableInfo, items: int | None, index: str, attribute: str, speed: _Speed
) -> MethodEstimate:
    if not index_ready(info, index, attribute):
        return MethodEstimate("index", False, note=f"the table has no marker index {index!r}")
    index_bytes = info.index_sizes.get(index, 0)
    if items is None or (items and not index_bytes):
        return MethodEstimate(
            "index", True, note="the index's size is unknown (DescribeTable reports none yet)"
        )
    _, rcu, per_key = scan_costs(info, index)
    most = most_keys("auto", info, index)
    return speed.method(
        "index",
        rcu,
        max(1, math.ceil(index_bytes / MB)),
        index_bytes,
        index_bytes,
        "the index scan only: its proof (the table's stream read past the maintainer's "
        f"positions, and a consistent Query of {per_key:g} RCU for each collection it names) "
        f"cannot be known in advance; auto gives the index up past {most:,} such collections",
    )


def _auto(info: TableInfo, index: str, attribute: str) -> tuple[str, str]:
    """The method ``auto`` would likely choose, and why (the proof itself is not run)."""
    planned = choose("auto", info, index, attribute)
    if planned is not None:
        return planned.method.name, planned.reason
    why = not_active(info, index) or (
        "the table's stream is off" if info.stream_arn is None else None
    )
    if why is not None:
        return "skip-pages", f"the marker index {index!r} cannot be proven: {why}"
    return (
        "index",
        f"the marker index {index!r}, if its proof succeeds when the listing starts (else "
        "skip-pages)",
    )


def size(n: float | None) -> str:
    """Bytes for a reader: 613 KB, 1.2 GB."""
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "B" or n >= 100 else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def duration(seconds: float | None) -> str:
    """Seconds for a reader: 4 s, 3 min, 2.5 h, 3 days."""
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{max(seconds, 0.1):.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.2g} h"
    return f"{seconds / 86400:.3g} days"
