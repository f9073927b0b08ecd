"""``index verify`` (and ``repair``'s first step): the table's collections against the marker
index, both key sets in memory.

A collection the index does not show (*missing*), or a marker whose collection holds nothing
else (*orphan*), may be a change in flight while writers and a maintainer run: the index lags
the table (within the replay margin), and the maintainer applies each change a moment after it.
So once both key sets are read, each such collection is looked at again, by itself and its
marker in the table (consistent reads): one whose marker is now right is *settled*
(``VerifyReport.settled``), not missing nor orphaned. Every ``verify`` under writers said NOT
HEALTHY before, and `repair` right after it too, a helper found. What is still wrong after the
second look is reported; more than ``MOST_RECHECKED`` are not looked at again (so many are no
changes in flight, and the second look would cost two reads each).

Where the index's record (its last backfill) knows markers otherwise than this command (another
``marker_sort_key`` or attribute), verify (and so repair) refuses, naming the index's own,
rather than find every marker missing and have repair write a second set (a helper left
--marker-sort-key out once; the second set's markers then kept emptied collections listed)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ddbkeys._core.steps import Flow, Pause, get_item, query
from ddbkeys._names import state_table_name
from ddbkeys.partition_keys._index.backfill_wait import markers_checked
from ddbkeys.partition_keys._index.drop import index_dropped
from ddbkeys.partition_keys._index.marker_core import sending
from ddbkeys.partition_keys._index.markers import (
    IndexPages,
    SkipPages,
    VerifyReport,
    collection_query,
    unhash,
    until_data,
)
from ddbkeys.partition_keys._listing.base import Key

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import GetItemInputTypeDef, GetItemOutputTypeDef

    from ddbkeys._schema import TableInfo
    from ddbkeys.partition_keys._index.marker_core import MarkerCore
    from ddbkeys.partition_keys._proof.evidence import Evidence

__all__ = ["MOST_LOOKS", "MOST_RECHECKED", "SETTLE_PAUSE", "alone", "verify_flow"]

#: The most discrepancies looked at again once both key sets are read.
MOST_RECHECKED = 1000
#: Looks at the discrepancies at most, and the seconds between two (while one settles some).
MOST_LOOKS = 3
SETTLE_PAUSE = 1.0


def verify_flow(
    core: MarkerCore, saved: Evidence | None, state_table: str | None = None
) -> Flow[VerifyReport]:
    """Compare the index with the table (see the module); ``saved``: the index's record (None:
    none, read in ``state_table``), which says how the index knows its markers, and where the
    index is gone, that it was dropped."""
    if saved is not None:  # (dropped? helper-102 F2)
        where = state_table_name(state_table)
        info = yield from core.table_info()
        index_dropped(info, core.name, saved, where, core.attribute)
    info = yield from core.check()
    markers = core.markers(info)
    yield from markers_checked(core, saved)  # (told other markers: see the module)
    table_keys = yield from core.key_set(SkipPages(info, markers), "reading the table's keys")
    index_keys = yield from core.key_set(
        IndexPages(core.table, core.name, markers), "reading the marker index"
    )
    report = VerifyReport(core.table, core.name, len(table_keys), len(index_keys))
    for hashed in sorted(table_keys - index_keys):
        key = unhash(hashed)
        if (yield from _marker_item(core, info, key, consistent=False)) == "data":
            report.clashes.append(key)  # it cannot be marked: not "missing"
        else:
            report.missing.append(key)
    # A marker whose collection holds nothing else: the data is gone but the marker stays.
    for hashed in sorted(index_keys):
        if (yield from alone(core, info, unhash(hashed))):
            report.orphans.append(unhash(hashed))
    if len(report.missing) + len(report.orphans) <= MOST_RECHECKED:
        yield from _second_look(core, info, report)
    return report


def _second_look(core: MarkerCore, info: TableInfo, report: VerifyReport) -> Flow[None]:
    """Each missing or orphaned collection looked at again: settled where its marker is now
    right (a marker in the table for a collection holding data, none for one holding none).
    While a look settles some (writes in flight), the rest are looked at again after
    ``SETTLE_PAUSE``, up to ``MOST_LOOKS`` looks in all; none settled: no wait."""
    for look in range(MOST_LOOKS):
        if look:
            yield Pause(SETTLE_PAUSE, core.retry.sleep)
        settled = len(report.settled)
        for found in (report.missing, report.orphans):
            still: list[Any] = []
            for key in found:
                there = (yield from _marker_item(core, info, key, consistent=True)) == "marker"
                if there != (yield from alone(core, info, key)):
                    report.settled.append(key)
                else:
                    still.append(key)
            found[:] = still
        if len(report.settled) == settled or report.healthy:
            return


def alone(core: MarkerCore, info: TableInfo, key: Key) -> Flow[bool]:
    """Whether the collection ``key`` holds nothing but ddbkeys' own items (consistent)."""
    markers = core.markers(info)
    items, _ = yield from until_data(
        lambda asked: core.attempts(
            sending(query(asked, count_scanned=True)), "reading a collection", writes=False
        ),
        collection_query(core.table, key, markers),
        markers,
    )
    return not any(markers.is_data(item) for item in items)


def _marker_item(core: MarkerCore, info: TableInfo, key: Key, *, consistent: bool) -> Flow[str]:
    """What the collection holds at the marker's key: ``"marker"``, ``"data"`` or ``"none"``."""
    request: GetItemInputTypeDef = {
        "TableName": core.table,
        "Key": core.marker_key(info, key),
        "ConsistentRead": consistent,
        "ReturnConsumedCapacity": "TOTAL",
    }
    answer: GetItemOutputTypeDef = yield from core.attempts(
        sending(get_item(request)), "reading a marker", writes=False
    )
    item = answer.get("Item")
    if item is None:
        return "none"
    return "marker" if core.markers(info).is_marker(item) else "data"
