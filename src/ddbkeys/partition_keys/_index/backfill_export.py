"""The backfill from an export (``index backfill --from-export``): the read mode's argument
(see :mod:`~ddbkeys.partition_keys._index.backfill_read`) with the export as its read, so that
the backfill reads nothing of the table but the collections the stream names.

1. The export's collections (``ExportSnapshot``, read by the caller: the files are not
   DynamoDB's) say which hold data and which a marker, as the table was at the export's time
   ``E``. A marker is written (conditional, as ``mark``) for each collection with data and
   none; the marker of each collection that held nothing else is removed (``unmark``: a
   delete conditioned on the item being a marker; no read).
2. A margin after its last write, the stream is read from ``E - margin`` (less the records'
   rounding) to its tip, and every collection its records name is reconciled (a consistent
   Query, a conditional write, a re-read), after its own writes: whatever changed since the
   export, or was written wrong against a later state, is put right.
3. It counts (its record's ``started`` is then when that tip was read) when the stream is
   unbroken from the window's start (the current stream began before it, and its records from
   there are still kept) to the tip, and a maintainer's first position in the stream is at
   least a margin before the tip (``maintained_since``, read again at the end): changes from
   then on are the maintainer's. Otherwise its record says why not (``uncounted``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ddbkeys._core.steps import Flow, Pause
from ddbkeys._core.stopping import StopFlag
from ddbkeys.partition_keys._export.keys import ExportSnapshot
from ddbkeys.partition_keys._index.backfill_read import (
    reconciled,
    stream_window,
    write_calls_for,
)
from ddbkeys.partition_keys._index.backfill_wait import TICK, TIP, Readiness
from ddbkeys.partition_keys._index.markers import BackfillReport
from ddbkeys.partition_keys._listing.base import Reader
from ddbkeys.partition_keys._proof.evidence import (
    CREATED_ROUNDING,
    TRIM_SAFETY,
    Decline,
    Evidence,
    nearly_a_day_old,
)

if TYPE_CHECKING:
    from ddbkeys.partition_keys._index.marker_core import MarkerCore

__all__ = ["export_flow"]


def export_flow(
    index: MarkerCore,
    saved: Evidence | None,
    snapshot: ExportSnapshot,
    report: BackfillReport,
    progress: Callable[[int], None] | None,
    margin: float,
    recorded: set[str],
    clock: Callable[[], float],
    ends: list[float],
    stop: StopFlag | None = None,
    on_wait: Callable[[Readiness], None] | None = None,
) -> Flow[list[str]]:
    """The backfill from ``snapshot`` (see the module's docstring): fills ``report``
    (``uncounted`` set when the window could not be read), appends to ``ends`` when its window's
    tip was read, returns the clashes recorded before (``recorded``) found resolved.
    ``on_wait`` is told of the wait for the tip (state ``TIP``) about once a second, as the
    read mode's (helper-89 F10: 2 minutes without a word)."""
    info = yield from index.table_info()
    report.mode = "export"
    data, marked = set(snapshot.data), set(snapshot.marked)
    last, resolved = yield from write_calls_for(
        index, data, marked, recorded, report, progress, clock, stop, unmark_orphans=True
    )
    if nearly_a_day_old(snapshot.time - margin - CREATED_ROUNDING, clock()):
        report.uncounted = (
            "the export is older than the table's stream keeps its records (24 h, less "
            f"{TRIM_SAFETY / 3600:g} h to be safe), so the changes since are in no log: export "
            "again, then run `index backfill --from-export` with the new one"
        )
        return resolved
    until = (last if last is not None else clock()) + margin
    while (now := clock()) < until:  # the tip is read a margin after the last write
        if on_wait is not None:
            on_wait(Readiness(index.table, TIP, margin, until - now))
        yield Pause(min(until - now, TICK), stop=stop)
    reader = Reader(
        None, index.table, retry=index.retry, usage=index.usage, deadline=index.deadline
    )
    tip = clock()
    window = yield from stream_window(
        index, reader, saved, info, snapshot.time, margin, clock, whole_history=False
    )
    if isinstance(window, Decline):
        report.uncounted = window.reason
        return resolved
    report.rechecked = len(window.touched)
    for key in window.touched.values():
        if stop is not None:
            stop.check()
        yield from reconciled(index, key, report)
    ends.append(tip)
    return resolved
