"""The backfill's read mode: at about a scan's cost, one eventually consistent read of the
table's keys and of the marker index, the markers they call for written, then the stream read
over the backfill's own window and each collection it names reconciled.

The reconcile mode (``backfill.backfill_flow``'s other branch) reads each collection with a
consistent Query (1 read unit at least) and again after each write: on a table of small
collections that is many times a scan. The read mode instead:

1. reads the collections that hold data with the paged skip scan (which reads like a scan
   where collections are small and skips where they are large: the cheaper of the two) and the
   markers with a scan of the marker index (KEYS_ONLY: about 0.5 read units per 40 markers);
2. marks each collection with data and no marker (a conditional put, as ``mark``: 1 write
   unit), and reconciles each marker whose collection showed nothing else (``maintain``'s
   consistent Query, and a delete conditioned on the version that Query saw);
3. waits until one margin has passed since its last marker write or removal, then reads the
   table's stream (its tip, now) from the backfill's start less the margin less the stream's
   timestamp rounding (``CREATED_ROUNDING``), and reconciles every collection those records
   name (Query, conditional write, re-read), after its own writes.

Why: neither read is a snapshot (items change while it runs, and both are eventually
consistent, up to the margin late by the proof's one assumption). A collection whose data did
not change from a margin before the backfill began is seen as it is, and the write it calls for
is right (each is conditional, so a marker another maintainer wrote or removed meanwhile is not
undone). A collection whose data changed from then until the backfill's last write may have
been seen stale, or changed between the read and the write: that change has a stream record,
in the stream within the margin, so the tip read a margin after the last write holds it, and
the collection is reconciled after the write (a consistent read that writes again if it must).
A record of the marker's own key names nothing: a marker written or removed changes no data
(and data written at the marker's key is a clash, which the maintainer records and a listing
re-checks; where the stream carries images, such a record still names its collection).

When the window cannot be read (the stream is off or changed, it began after the window's
start, a position in it is older than it keeps, or reading it was refused), the backfill says
so in its record (``uncounted``), and listings decline quoting it.

Cost: the skip scan (at most about a scan), the index scan, 1 write unit per marker written or
removed, and 1 to 2 read units per collection the window names (a consistent Query of two small
items, and one more after a write). The stream's reads are Streams requests, not read units.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ddbkeys._core.steps import Flow, Pause
from ddbkeys._core.stopping import StopFlag
from ddbkeys._errors import DdbKeysError
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._index.backfill_wait import READING, TICK, TIP, Readiness
from ddbkeys.partition_keys._index.maintain import Outcome, _look, reconcile_flow
from ddbkeys.partition_keys._index.markers import (
    BackfillReport,
    IndexPages,
    MarkerClashError,
    SkipPages,
    unhash,
)
from ddbkeys.partition_keys._index.state import StateCore, key_of_json
from ddbkeys.partition_keys._listing.base import Key, Reader
from ddbkeys.partition_keys._listing.recognise import Markers, same_value
from ddbkeys.partition_keys._proof.evidence import (
    CREATED_ROUNDING,
    TRIM_SAFETY,
    Decline,
    Evidence,
    nearly_a_day_old,
)
from ddbkeys.partition_keys._proof.replay_window import ReplayWindow, ShardRead, unlisted_child
from ddbkeys.partition_keys._proof.shard_read import Replay, read_shard, refusal, shard_list

if TYPE_CHECKING:
    from ddbkeys.partition_keys._index.marker_core import MarkerCore

__all__ = [
    "Controls",
    "backfill_window",
    "read_flow",
    "reconciled",
    "stream_born",
    "stream_window",
    "window_names",
]


@dataclass(frozen=True)
class Controls:
    """Two broken forms of the read mode, kept as negative controls for the proof's state
    machine (tests/support/proof_machine.py), never for use: ``window_at_read``, the window's
    tip read at the end of the table's read rather than a margin after the last write;
    ``read_only``, the window's collections re-checked by a read that writes nothing."""

    window_at_read: bool = False
    read_only: bool = False


def stream_born(arn: str) -> float | None:
    """When the stream ``arn`` was made (its label, a UTC time), in seconds; None when the
    label is not a time."""
    label = arn.rsplit("/stream/", 1)[-1] if "/stream/" in arn else ""
    try:
        return datetime.fromisoformat(label).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def backfill_window(
    saved: Evidence | None,
    stream: str,
    shards: Sequence[Mapping[str, Any]],
    started: float,
    margin: float,
    now: float,
    whole_history: bool = True,
) -> ReplayWindow:
    """Where to read each shard of ``stream`` from to hold every record of a write made from
    ``started - margin`` on: after the newest position a maintainer recorded (in ``saved``) by
    then (every record up to it was applied, so written, before), else from the shard's start;
    records whose time (rounded down) is more than ``CREATED_ROUNDING`` before are passed
    over. ``whole_history`` (see ``ShardRead``): False where ``started`` is checked younger
    than the stream keeps records (a backfill from an export). Pure."""
    start = started - margin
    named = {
        s: m for s, m in (saved.shards.items() if saved is not None else ()) if m.stream == stream
    }
    reads = []
    for shard in sorted(str(s["ShardId"]) for s in shards):
        mark = named.get(shard)
        after: str | None = None
        reach: str | None = None
        if mark is not None:
            sequence, found = mark.held_back(start)
            after = sequence if found else None
            reach = mark.marks[-1][0] if mark.marks else None
        reads.append(
            ShardRead(shard, after, skip_before=start, reach=reach, whole_history=whole_history)
        )
    return ReplayWindow(stream, tuple(reads), margin, now - margin)


def window_names(info: TableInfo, markers: Markers) -> Callable[[Mapping[str, Any]], bool]:
    """Whether a stream record names its collection for the window: any record but one of the
    marker's own key, unless an image it carries shows data there."""
    assert info.sort_key is not None
    sk = info.sort_key.name

    def names(record: Mapping[str, Any]) -> bool:
        body = record.get("dynamodb", {})
        if not same_value(body.get("Keys", {}).get(sk), markers.sort_value):
            return True
        images = [body[i] for i in ("NewImage", "OldImage") if i in body]
        return any(not markers.is_marker(image) for image in images)

    return names


def read_flow(
    index: MarkerCore,
    store: StateCore | None,
    saved: Evidence | None,
    started: float | None,
    report: BackfillReport,
    progress: Callable[[int], None] | None,
    margin: float,
    recorded: set[str],
    controls: Controls | None = None,
    stop: StopFlag | None = None,
    on_wait: Callable[[Readiness], None] | None = None,
) -> Flow[list[str]]:
    """The read mode (see the module's docstring) after the backfill's record is begun:
    fills ``report`` (``uncounted`` set when the window could not be read) and returns the
    clashes recorded before (``recorded``) that it found resolved. ``stop`` ends it between
    collections, and its wait, once set; ``on_wait`` is told of its reads (state ``READING``) and
    of that wait (state ``TIP``) about once a second."""
    controls = controls or Controls()
    clock = store.clock if store is not None else time.time
    began = clock() if started is None else started
    reader = Reader(
        None, index.table, retry=index.retry, usage=index.usage, deadline=index.deadline
    )
    info = yield from index.table_info()
    markers = index.markers(info)
    report.mode = "read"
    told = _Reading(index.table, margin, clock, on_wait)
    data = yield from index.key_set(
        SkipPages(info, markers), "reading the table's keys", stop, told.seen("the table")
    )
    marked = yield from index.key_set(
        IndexPages(index.table, index.name, markers),
        "reading the marker index",
        stop,
        told.seen("the marker index"),
    )
    told.read(len(data - marked))
    # Known now when the stream cannot hold the window: said without waiting the margin.
    window: Replay | Decline | None = unreadable(info.stream_arn, began, margin)
    if window is None and controls.window_at_read:
        window = yield from stream_window(index, reader, saved, info, began, margin, clock)
    written, resolved = yield from write_calls_for(
        index, data, marked, recorded, report, progress, clock, stop
    )
    last = clock() if written is None else written
    if window is None:
        until = last + margin
        while (now := clock()) < until:  # the tip is read a margin after the last write
            if on_wait is not None:
                on_wait(Readiness(index.table, TIP, margin, until - now))
            yield Pause(min(until - now, TICK), stop=stop)
        window = yield from stream_window(index, reader, saved, info, began, margin, clock)
    if isinstance(window, Decline):
        report.uncounted = window.reason
        return resolved
    report.rechecked = len(window.touched)
    for key in window.touched.values():
        if stop is not None:
            stop.check()
        if controls.read_only:
            yield from _look(index, key, index.begin())
        else:
            yield from reconciled(index, key, report)
    return resolved


class _Reading:
    """``on_wait`` told of the read mode's reads (state ``READING``): when each begins, about
    once a second (``TICK``) while it reads, and once both are read."""

    def __init__(
        self,
        table: str,
        margin: float,
        clock: Callable[[], float],
        on_wait: Callable[[Readiness], None] | None,
    ) -> None:
        self.table, self.margin, self.clock, self.on_wait = table, margin, clock, on_wait
        self.told = 0.0

    def seen(self, what: str) -> Callable[[int], None] | None:
        """What ``key_set`` tells as it reads ``what`` (told once now, with no key yet)."""
        if self.on_wait is None:
            return None
        on_wait = self.on_wait

        def tell(keys: int, at_once: bool = False) -> None:
            if at_once or self.clock() - self.told >= TICK:
                self.told = self.clock()
                on_wait(Readiness(self.table, READING, self.margin, reading=what, keys=keys))

        tell(0, at_once=True)
        return tell

    def read(self, to_mark: int) -> None:
        if self.on_wait is not None:
            self.on_wait(Readiness(self.table, READING, self.margin, to_mark=to_mark))


def write_calls_for(
    index: MarkerCore,
    data: set[tuple[str, Any]],
    marked: set[tuple[str, Any]],
    recorded: set[str],
    report: BackfillReport,
    progress: Callable[[int], None] | None,
    clock: Callable[[], float],
    stop: StopFlag | None = None,
    unmark_orphans: bool = False,
) -> Flow[tuple[float | None, list[str]]]:
    """What the read calls for: a marker for each collection with data and none (``mark``),
    a reconciliation for each marker whose collection showed nothing else (with
    ``unmark_orphans``, its removal instead, conditioned on its being a marker: no read), and
    one for each clash recorded before. When it last wrote or removed a marker (None: never),
    and the recorded clashes it found resolved."""
    last: float | None = None
    report.present += len(data & marked)
    for hashed in sorted(data - marked):
        if stop is not None:
            stop.check()
        key = unhash(hashed)
        try:
            wrote = yield from index.mark(key)
        except MarkerClashError as found:
            report.clashes.append(found.key)
            continue
        if wrote:
            report.written += 1
            last = clock()
        else:
            report.present += 1
        if progress is not None:
            progress(report.written)
    for hashed in sorted(marked - data):
        if stop is not None:
            stop.check()
        if unmark_orphans:
            if (yield from index.unmark(unhash(hashed))):
                report.removed += 1
                last = clock()
        elif (yield from reconciled(index, unhash(hashed), report)):
            last = clock()
    resolved = []
    for text in sorted(recorded):
        key = key_of_json(text)
        outcome = yield from reconcile_flow(index, key, index.begin())
        if outcome is not Outcome.CLASH:
            resolved.append(text)
        elif key not in report.clashes:
            report.clashes.append(key)
        if outcome in (Outcome.MARKED, Outcome.UNMARKED):
            last = clock()
    return last, resolved


def reconciled(index: MarkerCore, key: Key, report: BackfillReport) -> Flow[bool]:
    """Reconcile one collection, counted in ``report``: True if its marker was written or
    removed."""
    outcome = yield from reconcile_flow(index, key, index.begin())
    if outcome is Outcome.MARKED:
        report.written += 1
    elif outcome is Outcome.UNMARKED:
        report.removed += 1
    elif outcome is Outcome.CLASH and key not in report.clashes:
        report.clashes.append(key)
    return outcome in (Outcome.MARKED, Outcome.UNMARKED)


def unreadable(stream: str | None, started: float, margin: float) -> Decline | None:
    """Why the stream ``stream`` (the table's when the backfill began; None: off) cannot hold
    the window of a backfill begun at ``started`` (it began after the window's start, or its
    label does not say when it began); None when it may. Known before the backfill
    writes, so that it does not wait the margin to say so. Pure."""
    if stream is None:
        return Decline(
            "the table's stream was off when it began, so the changes made while it ran are "
            "in no log: turn the stream on (`index stream`), then run `index backfill` "
            "again"
        )
    born = stream_born(stream)
    if born is None:  # (the service's labels, and DynamoDB Local's, are times)
        return Decline(
            f"the table's stream label ({stream.rsplit('/', 1)[-1]!r}) is not a time, so "
            "whether the stream holds the changes made while it ran cannot be told: run "
            "`index backfill --mode reconcile`"
        )
    if born > started - margin:
        return Decline(
            f"the table's stream began {born - started + margin:.0f} s after the start of its "
            f"window (the replay margin, {margin:g} s, before it began), so earlier changes "
            f"are in no log: run `index backfill` again once the stream is {margin:g} s old, "
            "with `index follow` (or the Lambda handler) keeping the markers meanwhile"
        )
    return None


def stream_window(
    index: MarkerCore,
    reader: Reader,
    saved: Evidence | None,
    info: TableInfo,
    started: float,
    margin: float,
    clock: Callable[[], float],
    whole_history: bool = True,
) -> Flow[Replay | Decline]:
    """The collections the stream names from ``started - margin`` to its tip now; a
    :class:`Decline` when that cannot be read whole."""
    stream = info.stream_arn
    unread = unreadable(stream, started, margin)
    if unread is not None:
        return unread
    assert stream is not None  # (off: unreadable says so)
    if nearly_a_day_old(started - margin - CREATED_ROUNDING, clock()):
        # (a shard whose records since are all gone reads empty: nothing would say so)
        return Decline(
            "its window began more than a day before it read the table's stream (the stream "
            f"keeps records 24 h; {TRIM_SAFETY / 3600:g} h less to be safe), so changes made "
            "while it ran may be in no log: run `index backfill` again (or `--from-export`)"
        )
    yield from index.describe()  # the stream as it is now
    now_stream = (yield from index.table_info()).stream_arn
    if now_stream != stream:
        return Decline(
            "the table's stream was turned off (or on again) while it ran: run `index "
            "backfill` again"
        )
    try:
        shards = yield from shard_list(reader, stream)
    except DdbKeysError as exc:
        return refusal(exc, "describing the table's stream")
    unlisted = unlisted_child(shards)
    if unlisted is not None:
        return unlisted
    window = backfill_window(saved, stream, shards, started, margin, clock(), whole_history)
    replay = Replay(margin)
    names = window_names(info, index.markers(info))
    for read in window.reads:
        declined = yield from read_shard(
            reader, window, read, info.partition_key.name, replay, names
        )
        if declined is not None:
            return declined
    return replay
