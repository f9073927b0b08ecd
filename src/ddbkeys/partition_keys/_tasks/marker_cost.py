"""What the marker index costs and saves, said before ``index create`` and in the estimate: the
markers it adds (an item a collection: how many, their bytes), what a scan of the table then
reads, and what a listing from the index costs against today's scan, with a one-line warning
when the index would cost more than the scan it replaces. Pure: from the table's description,
the estimate's key count range and the sample's partition key sizes.

A marker holds the collection's partition key, the marker's sort key, the marker attribute (the
partition key again), a version and ``ddbkeys_type``
(:meth:`~ddbkeys.partition_keys._index.marker_core.MarkerCore.mark`). A Scan of the KEYS_ONLY
index reads on the service its projected keys (partition key, sort key, marker attribute), on
DynamoDB Local the whole marker: the index's range goes from the one to the other.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ddbkeys._capacity import item_size
from ddbkeys._entity import ENTITY_ATTRIBUTE, MARKER
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._index.backfill import READ_FROM_ITEMS
from ddbkeys.partition_keys._index.markers import VERSION_ATTRIBUTE, marker_sort_key
from ddbkeys.partition_keys._listing.choice import index_ready
from ddbkeys.partition_keys._proof.replay import scan_units
from ddbkeys.partition_keys._tasks.figures import count, figure, size
from ddbkeys.partition_keys._tasks.methods import pages_of, size_range
from ddbkeys.partition_keys._tasks.ranges import Range
from ddbkeys.partition_keys._tasks.sampled import Sample

__all__ = ["MarkerCost", "index_warning", "marker_cost", "marker_sizes", "markers_to_add"]


@dataclass(frozen=True)
class MarkerCost:
    """What creating the marker index adds and costs (ranges from the key count's): the
    ``markers`` (items, one a collection) of ``marker_bytes`` each, their bytes, a scan's read
    units now and with them, and a listing from the index; ``warning``: one line when the
    index would cost more than today's scan (None: it would not)."""

    marker_bytes: float
    markers_low: float
    markers_high: float
    bytes_low: float
    bytes_high: float
    scan_now: float
    scan_after_low: float
    scan_after_high: float
    index_low: float
    index_rcu: float
    index_high: float
    warning: str | None = None
    #: The backfill that writes the markers, once: the mode ``auto`` would choose now (``read``
    #: from ``READ_FROM_ITEMS`` items with the stream on; else ``reconcile``); the write units
    #: of its markers (the table's and the index's); the read units of its read of the table,
    #: and of the consistent Queries of each collection (a read unit a 4 KB of its first items,
    #: from the sample): reconciling, one before and one after its marker's write; reading,
    #: one for each collection the stream names in its window (the writes from the margin and
    #: the records' time rounding before it began: none to all).
    backfill_mode: str = "reconcile"
    backfill_wcu_low: float = 0.0
    backfill_wcu_high: float = 0.0
    backfill_rcu_low: float = 0.0
    backfill_rcu_high: float = 0.0
    #: Why the mode is ``reconcile`` on a table of ``READ_FROM_ITEMS`` items or more (its
    #: stream is off now: ``index follow`` turns it on), or what the read mode's high end
    #: means (your writes naming every collection in its window); empty otherwise.
    backfill_why: str = ""
    #: The markers there already (an index created before: the sample's collections led by
    #: one), and what a scan of the table would read without them: the index's listing, of
    #: every collection's marker, is weighed against that scan, the one it replaces.
    markers_there: float = 0.0
    scan_without: float = 0.0

    def summary(self) -> str:
        """The figures in one line."""
        against = (
            f"a scan without the markers of ~{figure(self.scan_without)}"
            if self.markers_there
            else f"today's scan of ~{figure(self.scan_now)}"
        )
        why = f"; {self.backfill_why}" if self.backfill_why else ""
        now = f"~{figure(self.scan_now)}"
        after = _span(self.scan_after_low, self.scan_after_high)
        # (helper-89 C6: "a scan would read ~0.5 RCU instead of ~0.5" on a tiny table)
        scan = f"still read {now} RCU" if after == now else f"read {after} RCU instead of {now}"
        return (
            f"markers would add {_span(self.markers_low, self.markers_high, count)} "
            f"{'item' if self.markers_high < 1.5 else 'items'} of ~{size(self.marker_bytes)} "
            f"({_span(self.bytes_low, self.bytes_high, size)} in all): a scan would {scan}, "
            f"and a listing from the index cost "
            f"{_span(self.index_low, self.index_high)} RCU against {against}; the backfill "
            f"that writes them costs once {_span(self.backfill_wcu_low, self.backfill_wcu_high)} "
            f"WCU and {_span(self.backfill_rcu_low, self.backfill_rcu_high)} RCU "
            f"({self.backfill_mode} mode{why})"
        )


def _span(low: float, high: float, shown: Callable[[float], str] = figure) -> str:
    return f"~{shown(low)}" if shown(low) == shown(high) else f"{shown(low)}-{shown(high)}"


def marker_sizes(info: TableInfo, attribute: str, key_bytes: float) -> tuple[float, float]:
    """The bytes of a marker, and of its index entry (its projected keys), for a partition key
    value of ``key_bytes`` (the sample's average)."""
    pk, sk = info.partition_key, info.sort_key
    assert sk is not None
    sort_value = marker_sort_key(info)
    keys: dict[str, Any] = {pk.name: {"S": ""}, sk.name: sort_value, attribute: {"S": ""}}
    whole = {**keys, VERSION_ATTRIBUTE: {"S": "0" * 16}, ENTITY_ATTRIBUTE: {"S": MARKER}}
    return item_size(whole) + 2 * key_bytes, item_size(keys) + 2 * key_bytes


def marker_cost(
    info: TableInfo,
    keys: Range,
    key_bytes: float,
    attribute: str,
    scan: Range,
    table_read: Range | None = None,
    query_units: float = 1.0,
    bare: float = 1.0,
) -> MarkerCost:
    """What markers for ``keys`` collections (partition keys of ``key_bytes`` on average)
    would add to the table ``info`` describes, whose scan costs ``scan`` now; ``table_read``:
    what the backfill's skip scan of the table reads (skip-pages' estimate; None: a scan's);
    ``query_units``: the read units of a consistent Query of a collection's first items;
    ``bare``: the share of the collections without a marker yet (the rest have theirs: the
    markers and the backfill are for the bare ones, the index's listing reads every one)."""
    marker, entry = marker_sizes(info, attribute, key_bytes)
    read = table_read or scan
    many = info.item_count >= READ_FROM_ITEMS
    mode = "read" if many and info.stream_arn is not None else "reconcile"
    if mode == "read":  # (its high end: a Query for every collection the stream names)
        why = "the high end where your writes reach every collection while it runs"
    elif many:
        why = "the table's stream is off: the read mode, once `index stream` has turned it on"
    else:
        why = ""
    # Consistent Queries a collection (see MarkerCost): as few, as many.
    query = max(1.0, query_units)
    each = (query, 2 * query) if mode == "reconcile" else (0.0, query)
    writes = math.ceil(marker / 1024) + math.ceil(entry / 1024)  # the table's, the index's
    adding = Range(keys.low * bare, keys.value * bare, keys.high * bare)
    there = keys.value * (1 - bare)
    added_low, added_high = adding.low * marker, adding.high * marker
    items, size = info.item_count, info.size_bytes
    without = max(0.0, size - there * marker)
    # (a scan costs a request's 0.5 at least: helper-101 F5 warned of "the ~0.192 RCU of a
    # scan" where the estimate's own table showed ~0.5 for both)
    scan_without = max(0.5, scan.value * without / size) if size else scan.value
    # (markers added never make a scan cheaper: no lower than today's, whatever the spread)
    after_low = max(scan.value, size_range(size + added_low, pages_of(items + adding.low, 0)).low)
    after_high = max(
        scan.value,
        size_range(size + added_high, pages_of(items + adding.high, size + added_high)).high,
    )
    index = Range(
        scan_units(int(keys.low * entry)),
        scan_units(int(keys.value * marker)),
        size_range(keys.high * marker, pages_of(keys.high, keys.high * marker)).high,
    )
    return MarkerCost(
        marker_bytes=marker,
        markers_low=adding.low,
        markers_high=adding.high,
        bytes_low=added_low,
        bytes_high=added_high,
        scan_now=scan.value,
        scan_after_low=after_low,
        scan_after_high=after_high,
        index_low=index.low,
        index_rcu=index.value,
        index_high=index.high,
        warning=index_warning(
            info.name,
            index.value,
            scan_without,
            scan_units(int(without + keys.value * marker)),
            before=not there,
        ),
        backfill_mode=mode,
        backfill_why=why,
        backfill_wcu_low=adding.low * writes,
        backfill_wcu_high=adding.high * writes,
        backfill_rcu_low=read.low + each[0] * adding.low,
        backfill_rcu_high=read.high + each[1] * adding.high,
        markers_there=there,
        scan_without=scan_without,
    )


def index_warning(
    table: str, index: float, scan: float, scan_after: float | None = None, *, before: bool
) -> str | None:
    """One line when a listing from the index (``index`` read units) would cost more than
    today's scan of the table (``scan``); None when it would not."""
    if index <= scan:
        return None
    make = "would make" if before else "make"
    after = (
        f", and the markers {make} every scan of it ~{scan_after / max(scan, 0.5):.1f}x dearer"
        if scan_after is not None
        else ""
    )
    verb = "would cost" if before else "costs"
    return (
        f"Warning: a listing from the marker index of {table!r} {verb} ~{figure(index)} RCU, "
        f"more than the ~{figure(scan)} RCU of a scan it replaces{after}: list with --method "
        "scan or skip-pages instead"
    )


def markers_to_add(
    info: TableInfo,
    known: TableInfo,
    sample: Sample,
    keys: Range | None,
    scan: Range | None,
    index: str,
    attribute: str,
    backfill: Range | None,
) -> MarkerCost | None:
    """What markers would add to the table ``info`` describes (``known``: with the sample's
    figures where they are better), where it has a sort key; ``backfill``: what the backfill's
    skip scan of the table reads (skip-pages' estimate). Where the index ``index`` is there
    already, the markers are for the collections the sample saw without one (led by none of
    ddbkeys' own items), and the index's listing is priced for every collection (an index
    created again before its backfill still says what its markers cost; one whose markers are
    all written still warns when its listing costs more than the scan it replaced: its
    ``markers_high`` is then 0)."""
    if keys is None or scan is None or not info.sort_key or not sample.keys:
        return None
    bare = 1.0
    if index_ready(info, index, attribute):
        leads = [c.lead for run in sample.runs for c in run]
        bare = leads.count(0) / len(leads) if leads else 0.0
    # A consistent Query of a collection's first items: a unit a 4 KB of its first (the
    # sample's mean of a one-item page's units, which are half-units), at least one.
    query = max(1.0, 2 * sample.skip_units / sample.keys)
    return marker_cost(
        known, keys, sample.key_bytes / sample.keys, attribute, scan, backfill, query, bare
    )
