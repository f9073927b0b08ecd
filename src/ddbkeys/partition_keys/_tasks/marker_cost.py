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

    def summary(self) -> str:
        """The figures in one line."""
        return (
            f"markers would add {_span(self.markers_low, self.markers_high, count)} "
            f"{'item' if self.markers_high < 1.5 else 'items'} of ~{size(self.marker_bytes)} "
            f"({_span(self.bytes_low, self.bytes_high, size)} in all): a scan would read "
            f"{_span(self.scan_after_low, self.scan_after_high)} RCU instead of "
            f"~{figure(self.scan_now)}, and a listing from the index cost "
            f"{_span(self.index_low, self.index_high)} RCU against today's scan of "
            f"~{figure(self.scan_now)}; the backfill that writes them costs once "
            f"{_span(self.backfill_wcu_low, self.backfill_wcu_high)} WCU and "
            f"{_span(self.backfill_rcu_low, self.backfill_rcu_high)} RCU ({self.backfill_mode} "
            f"mode{self.backfill_why})"
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
) -> MarkerCost:
    """What markers for ``keys`` collections (partition keys of ``key_bytes`` on average)
    would add to the table ``info`` describes, whose scan costs ``scan`` now; ``table_read``:
    what the backfill's skip scan of the table reads (skip-pages' estimate; None: a scan's);
    ``query_units``: the read units of a consistent Query of a collection's first items."""
    marker, entry = marker_sizes(info, attribute, key_bytes)
    read = table_read or scan
    many = info.item_count >= READ_FROM_ITEMS
    mode = "read" if many and info.stream_arn is not None else "reconcile"
    if mode == "read":  # (its high end: a Query for every collection the stream names)
        why = "; the high end where your writes reach every collection while it runs"
    elif many:
        why = "; the table's stream is off: the read mode, once `index stream` has turned it on"
    else:
        why = ""
    # Consistent Queries a collection (see MarkerCost): as few, as many.
    query = max(1.0, query_units)
    each = (query, 2 * query) if mode == "reconcile" else (0.0, query)
    writes = math.ceil(marker / 1024) + math.ceil(entry / 1024)  # the table's, the index's
    added_low, added_high = keys.low * marker, keys.high * marker
    items, size = info.item_count, info.size_bytes
    after_low = size_range(info.size_bytes + added_low, pages_of(items + keys.low, 0)).low
    after_high = size_range(
        info.size_bytes + added_high, pages_of(items + keys.high, info.size_bytes + added_high)
    ).high
    index = Range(
        scan_units(int(keys.low * entry)),
        scan_units(int(keys.value * marker)),
        size_range(keys.high * marker, pages_of(keys.high, keys.high * marker)).high,
    )
    return MarkerCost(
        marker_bytes=marker,
        markers_low=keys.low,
        markers_high=keys.high,
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
            scan.value,
            scan_units(int(size + keys.value * marker)),
            before=True,
        ),
        backfill_mode=mode,
        backfill_why=why,
        backfill_wcu_low=keys.low * writes,
        backfill_wcu_high=keys.high * writes,
        backfill_rcu_low=read.low + each[0] * keys.low,
        backfill_rcu_high=read.high + each[1] * keys.high,
    )


def index_warning(
    table: str, index: float, scan: float, scan_after: float | None = None, *, before: bool
) -> str | None:
    """One line when a listing from the index (``index`` read units) would cost more than
    today's scan of the table (``scan``); None when it would not."""
    if index <= scan:
        return None
    after = (
        f", and the markers would make every scan of it ~{scan_after / max(scan, 0.5):.1f}x dearer"
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
    already, for the collections the sample saw without one (led by none of ddbkeys' own
    items): an index created again before its backfill still says what its markers cost."""
    if keys is None or scan is None or not info.sort_key or not sample.keys:
        return None
    if index_ready(info, index, attribute):
        leads = [c.lead for run in sample.runs for c in run]
        bare = leads.count(0) / len(leads) if leads else 0.0
        if not bare:
            return None
        keys = Range(keys.low * bare, keys.value * bare, keys.high * bare)
    # A consistent Query of a collection's first items: a unit a 4 KB of its first (the
    # sample's mean of a one-item page's units, which are half-units), at least one.
    query = max(1.0, 2 * sample.skip_units / sample.keys)
    return marker_cost(
        known, keys, sample.key_bytes / sample.keys, attribute, scan, backfill, query
    )
