"""``index verify --from-export``: the markers compared with the data, both as an export holds
them, at no read capacity of the table or its index; the collections the table's stream names
since the export's time (changed after it) are left out of the comparison and named."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

from ddbkeys.partition_keys._export.keys import ExportSnapshot
from ddbkeys.partition_keys._export.manifest import when
from ddbkeys.partition_keys._export.now import Since, forget
from ddbkeys.partition_keys._index.markers import VerifyReport, unhash

__all__ = ["compared", "verify_export"]


def compared(table: str, index: str, snapshot: ExportSnapshot, since: Since | str) -> VerifyReport:
    """:func:`verify_export` with the stream since the export (``since``: what
    :func:`~ddbkeys.partition_keys._export.now.since_flow` read, or why it could not)."""
    taken = when(datetime.fromtimestamp(snapshot.time, UTC))
    if isinstance(since, Since):
        changed = set(since.replay.touched)
        forget(since)
        as_of = (
            f"exact now: the export of {taken} and the stream since "
            f"{when(datetime.fromtimestamp(since.bound, UTC))} ({len(changed)} collections "
            "changed since, not compared)"
        )
        return verify_export(table, index, snapshot, changed, as_of)
    return verify_export(table, index, snapshot, (), f"as of {taken}, the export's time; {since}")


def verify_export(
    table: str,
    index: str,
    snapshot: ExportSnapshot,
    changed: Collection[tuple[str, Any]],
    as_of: str,
) -> VerifyReport:
    """What ``verify`` says of ``snapshot`` (the export's data and markers), leaving out the
    ``changed`` collections (named in ``not_compared``); ``as_of`` says when it holds. Pure."""
    left = set(changed)
    report = VerifyReport(table, index, len(snapshot.data), len(snapshot.marked))
    unmarked = snapshot.data - snapshot.marked - left
    report.clashes = [unhash(h) for h in sorted(unmarked & snapshot.clashes)]
    report.missing = [unhash(h) for h in sorted(unmarked - snapshot.clashes)]
    report.orphans = [unhash(h) for h in sorted(snapshot.marked - snapshot.data - left)]
    report.not_compared = [unhash(h) for h in sorted(left)]
    report.as_of = as_of
    return report
