"""A backfill that changes how the index knows its markers (``index backfill --force`` with
another ``--marker-sort-key``): the markers of the settings before are removed first.

Left in the table, they read as data under the new settings: a collection emptied later kept
its old marker, so a maintainer of the new markers found it not empty and kept it marked, and
every listing, the index's proof among them, listed it (a helper's switch, which the docs said
to do after removing the old markers by hand, gave a wrong answer with exit 0).

The old markers are found in the marker index (a KEYS_ONLY index keyed on the marker
attribute holds them while that attribute is the same) and each removed by the conditional
delete of :meth:`~ddbkeys.partition_keys._index.marker_core.MarkerCore.unmark` (an item at
their key that is not a marker is never removed). Markers of another attribute are in no index
of this one: they are left (remove them by hand, `index unmark` with the old settings)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ddbkeys._core.stopping import StopFlag
from ddbkeys.partition_keys._index.backfill_wait import known_markers
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._index.markers import IndexPages, unhash
from ddbkeys.partition_keys._index.state import markers_key, markers_of_key
from ddbkeys.partition_keys._listing.base import plain_key

if TYPE_CHECKING:
    from ddbkeys._core.steps import Flow
    from ddbkeys._schema import TableInfo
    from ddbkeys.partition_keys._index.markers import BackfillReport
    from ddbkeys.partition_keys._proof.evidence import Evidence

__all__ = ["earlier_markers", "looked_again", "old_markers_removed", "switching"]

Work = Callable[[StopFlag | None], "Flow[list[str]]"]


def earlier_markers(saved: Evidence | None, markers: str) -> list[str]:
    """How the index knew its markers before this backfill (``backfill_wait.known_markers``
    of ``saved``, its record then), where not as ``markers`` (``state.markers_key``: this
    backfill's). Pure."""
    return [m for m in known_markers(saved) if m != markers]


def old_markers_removed(index: MarkerCore, info: TableInfo, saved: Evidence | None) -> Flow[int]:
    """Remove the markers of the settings ``saved`` knew before this backfill's (``index``'s):
    how many were removed."""
    removed = 0
    for old in earlier_markers(saved, markers_key(index.attribute, index.sort_key(info))):
        attribute, sort_key = markers_of_key(old)
        if attribute != index.attribute:
            continue  # (not in this index: see the module)
        before = MarkerCore(
            index.table,
            index_name=index.name,
            marker_attribute=attribute,
            marker_sort_key=plain_key(sort_key),
            usage=index.usage,
            deadline=index.deadline,
            retry=index.retry,
            info=info,
            read_timeout=index.read_timeout,
        )
        pages = IndexPages(index.table, index.name, before.markers(info))
        for hashed in sorted((yield from before.key_set(pages, "reading the old markers"))):
            removed += bool((yield from before.unmark(unhash(hashed))))
    return removed


def switching(
    work: Work, index: MarkerCore, info: TableInfo, saved: Evidence | None, report: BackfillReport
) -> Work:
    """A backfill's ``work``, after the old markers are removed (counted in
    ``report.removed``), inside the time it keeps its claim alive."""

    def switched(stop: StopFlag | None) -> Flow[list[str]]:
        report.removed += yield from old_markers_removed(index, info, saved)
        return (yield from work(stop))

    return switched


def looked_again(work: Work, index: MarkerCore) -> Work:
    """A backfill's ``work``, then the index looked at again (once its description is
    ``recheck`` seconds old: ``MarkerCore.checked_info``) before the backfill says it finished:
    one dropped during the stream's window, with no marker written since, said "listings can
    prove the index from it", exit 0 (helper-98 F3)."""

    def looked(stop: StopFlag | None) -> Flow[list[str]]:
        resolved = yield from work(stop)
        yield from index.checked_info(index.begin())
        return resolved

    return looked
