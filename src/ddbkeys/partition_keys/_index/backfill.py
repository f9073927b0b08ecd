"""The backfill and the repair of a marker index as flows (see :mod:`ddbkeys._core`): each
reconciles collections with their markers and keeps the index's evidence in the state table
(see :mod:`ddbkeys.partition_keys._proof.evidence`): a marker index's core and its record's, run by
either ``MarkerIndex``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ddbkeys._core.steps import Flow
from ddbkeys._core.stopping import StopFlag
from ddbkeys._errors import ConfigurationError
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._export.keys import ExportSnapshot
from ddbkeys.partition_keys._index.backfill_claim import (
    Claim,
    claim_flow,
    farewell,
    kept_alive,
    owner_name,
    released,
    rewrite,
    telling,
)
from ddbkeys.partition_keys._index.backfill_export import export_flow
from ddbkeys.partition_keys._index.backfill_read import Controls, read_flow, stream_born
from ddbkeys.partition_keys._index.backfill_switch import looked_again, switching
from ddbkeys.partition_keys._index.backfill_wait import Readiness, wait_flow
from ddbkeys.partition_keys._index.maintain import Outcome, reconcile_flow, reconcile_held_flow
from ddbkeys.partition_keys._index.markers import (
    BackfillReport,
    MarkerClashError,
    SkipPages,
    VerifyReport,
)
from ddbkeys.partition_keys._index.state import StateCore, key_json, key_of_json, markers_key
from ddbkeys.partition_keys._index.verify import verify_flow
from ddbkeys.partition_keys._listing.base import Key
from ddbkeys.partition_keys._proof.evidence import DEFAULT_REPLAY_MARGIN, Evidence

if TYPE_CHECKING:
    from ddbkeys.partition_keys._index.marker_core import MarkerCore

__all__ = [
    "MODES",
    "READ_FROM_ITEMS",
    "backfill_flow",
    "choose_mode",
    "repair_flow",
    "waited_backfill_flow",
]

#: The backfill's modes: ``auto`` chooses between the two others (:func:`choose_mode`).
MODES = ("auto", "reconcile", "read")
#: ``auto`` reads (rather than reconciles each collection) from this many items in the table
#: (DescribeTable): below, the reconcile mode costs a few hundred read units at most, and the
#: read mode's wait of a margin after its last write is not worth it.
READ_FROM_ITEMS = 1000


def choose_mode(mode: str, info: TableInfo) -> str:
    """``reconcile`` or ``read`` for the table ``info`` describes: as given, or (``auto``) the
    read mode where the table has a stream (its window is read from it) whose label says when
    it began (as the service's do) and at least ``READ_FROM_ITEMS`` items; the read is the same
    skip scan the reconcile mode finds the keys with, so it costs less whenever its window
    names fewer collections than the table holds."""
    if mode not in MODES:
        raise ConfigurationError(
            f"Backfill mode {mode!r} for table {info.name!r} is not one of "
            f"{', '.join(MODES)}: pass one of those.",
            table=info.name,
        )
    if mode != "auto":
        return mode
    stream = info.stream_arn
    if (
        stream is not None
        and stream_born(stream) is not None
        and info.item_count >= READ_FROM_ITEMS
    ):
        return "read"
    return "reconcile"


def backfill_flow(
    index: MarkerCore,
    progress: Callable[[int], None] | None,
    store: StateCore | None,
    mode: str = "auto",
    margin: float = DEFAULT_REPLAY_MARGIN,
    controls: Controls | None = None,
    start: Callable[[], Flow[Readiness]] | None = None,
    stop: StopFlag | None = None,
    *,
    wait: bool = True,
    force: bool = False,
    on_wait: Callable[[Readiness], None] | None = None,
    owner: str | None = None,
    export: ExportSnapshot | None = None,
    report: BackfillReport | None = None,
    on_claim: Callable[[], None] | None = None,
) -> Flow[BackfillReport]:
    """Reconcile every collection of the table with its marker: mark those without one,
    unmark those that hold nothing else. Recorded in ``store``'s state table (None: not
    recorded) as evidence for listings (see ``evidence``), with the replay ``margin`` it was
    begun for: it counts only if it met no clash, and began at least ``margin`` after a
    maintainer recorded positions.

    ``mode`` (see ``choose_mode``): ``reconcile``, each collection found with the skip scan and
    reconciled by a consistent Query; ``read``, one read of the table and its index, then the
    stream over the backfill's window (``margin`` seconds, the replay margin, on each side; see
    ``backfill_read``); ``auto``, chosen from the table's description. ``controls``: the read
    mode's negative controls (tests only). ``start`` (see ``backfill_wait.wait_flow``), run once
    the index is checked and before anything is written, waits as that rule says and tells
    whether the backfill will count. ``export``: the collections of the table's export, read
    instead of the table (see ``backfill_export``; ``mode`` is then ``export``). ``stop`` ends
    it between collections once set (its record then says it did not finish).

    One backfill at a time (see ``backfill_claim``): recorded, it takes the index's record
    first, and keeps it alive while it works (``owner`` says who runs it: by default
    ``host:pid``); finding another at work that could count, it waits for it (telling
    ``on_wait``) and returns that one's outcome (``report.joined``) if listings can prove the
    index from it, and runs otherwise; ``wait=False`` refuses instead (an error, nothing
    written), ``force`` runs anyway. ``on_claim`` is called once the record is this
    backfill's, before it reads or writes a collection (``index follow``'s "backfill begins":
    said before that, two followers both said it, helper-76 F2)."""
    if index.info is not None and index.info.stream_arn is None:
        # Described again: the stream may have been turned on since this index object saw the
        # table (the mode goes by it).
        yield from index.describe()
    info = yield from index.check()
    report = report if report is not None else BackfillReport()  # (a caller's, to watch)
    claim: Claim | None = None
    if store is not None:
        yield from store.ensure()
        if start is not None:
            ready = yield from start()
            report.counts, report.advice = ready.counts, None if ready.counts else ready.advice()
        who = owner or owner_name()

        def make(stream: str | None, saved: Evidence | None) -> dict[str, Any]:
            assert store is not None
            firsts = [
                m.first_saved
                for m in (saved.shards.values() if saved is not None else ())
                if m.stream == stream and m.first_saved is not None
            ]
            now = store.clock()
            return {
                "started": now,
                "stream": stream,
                "maintained_since": min(firsts, default=None),
                "finished": None,
                "clashes": [],
                "markers": markers_key(index.attribute, index.sort_key(info)),
                "margin": margin,
                "alive": now,
                "owner": who,
                "handled": 0,
            }

        got = yield from claim_flow(
            index, store, make, margin, report, wait=wait, force=force, on_wait=on_wait, stop=stop
        )
        if isinstance(got, BackfillReport):  # another one did it
            return got
        claim = got
        on_wait = telling(claim, store.clock, on_wait, on_claim)
    # The clashes recorded before: taken out at the end only those this backfill found
    # resolved (its eventually consistent scan may not show a collection a maintainer
    # met a moment ago: such a clash stays).
    saved = claim.saved if claim is not None else None
    recorded = set(saved.clashes) if saved is not None else set()
    ends: list[float] = []  # (a backfill from an export: when its window's tip was read)
    work = (
        _work(
            index, info, store, claim, report, progress, mode, margin, recorded, controls, on_wait
        )
        if export is None
        else _from_export(
            index, claim, export, report, progress, margin, recorded, ends, store, on_wait
        )
    )
    work = looked_again(work, index)  # (the index gone since: an error, not "finished")
    if claim is None:
        yield from work(stop)
        return report
    work = switching(work, index, info, claim.saved, report)
    assert store is not None
    try:
        resolved = yield from kept_alive(work(stop), claim, store, index)
    except BaseException as exc:
        # Said in the record (an error, a stop, Ctrl-C or a cancelled task, which the drivers
        # throw in), so that the next backfill (a follower's next try, the same command run
        # again) need not wait for this one's alive time to grow old. Not when the generator
        # is closed: it can send nothing then. (Where it cannot be said, an endpoint out, the
        # next of this process's takes the record at once all the same: ``left_here``.)
        try:
            if not isinstance(exc, GeneratorExit):
                yield from farewell(claim, store, index)
        finally:
            released(claim)
        raise
    try:
        yield from _finished(claim, store, index, report, ends)
    finally:
        # (only once the record says it finished: a backfill of this process that waits for
        # this one reads it there, not an unfinished claim of its own to take: helper-75 F1)
        released(claim)
    yield from store.clashes(index.table, index.name, resolved, add=False)
    if report.clashes:
        report.counts = False
    if report.uncounted is not None:
        report.counts, report.advice = False, report.uncounted
    return report


def _finished(
    claim: Claim, store: StateCore, index: MarkerCore, report: BackfillReport, ends: list[float]
) -> Flow[None]:
    """Write in the claim's entry that the backfill finished, and what it found."""
    changes: dict[str, Any] = {
        "finished": store.clock(),
        "clashes": [key_json(k) for k in report.clashes],
        "mode": report.mode,
    }
    if report.uncounted is not None:
        changes["uncounted"] = report.uncounted
    changes.update((yield from _counted_from(ends, claim, store, index)))
    yield from rewrite(claim, store, index, changes)


def _work(
    index: MarkerCore,
    info: TableInfo,
    store: StateCore | None,
    claim: Claim | None,
    report: BackfillReport,
    progress: Callable[[int], None] | None,
    mode: str,
    margin: float,
    recorded: set[str],
    controls: Controls | None,
    on_wait: Callable[[Readiness], None] | None = None,
) -> Callable[[StopFlag | None], Flow[list[str]]]:
    """The backfill's reads and writes, in ``mode``: the recorded clashes it found resolved
    (``on_wait``: told of the read mode's wait for the stream's tip)."""

    def work(stop: StopFlag | None) -> Flow[list[str]]:
        if choose_mode(mode, info) != "read":
            return (yield from _reconcile_each(index, info, recorded, report, progress, stop))
        # (the read mode reads the stream as a listing does: it imports the replay, above this)

        return (
            yield from read_flow(
                index,
                store,
                claim.saved if claim is not None else None,
                claim.entry["started"] if claim is not None else None,
                report,
                progress,
                margin,
                recorded,
                controls,
                stop,
                on_wait,
            )
        )

    return work


def _counted_from(
    ends: list[float], claim: Claim, store: StateCore, index: MarkerCore
) -> Flow[dict[str, Any]]:
    """What a backfill from an export records at its end: it counts from when its window's tip
    was read (``ends``; none: it did not read it), with the maintainer's first position as it is
    then (see ``backfill_export``)."""
    if not ends:
        return {}
    now = yield from store.load(index.table, index.name)
    firsts = [
        m.first_saved
        for m in (now.shards.values() if now is not None else ())
        if m.stream == claim.entry.get("stream") and m.first_saved is not None
    ]
    return {"started": ends[0], "maintained_since": min(firsts, default=None)}


def _from_export(
    index: MarkerCore,
    claim: Claim | None,
    export: ExportSnapshot,
    report: BackfillReport,
    progress: Callable[[int], None] | None,
    margin: float,
    recorded: set[str],
    ends: list[float],
    store: StateCore | None,
    on_wait: Callable[[Readiness], None] | None = None,
) -> Callable[[StopFlag | None], Flow[list[str]]]:
    """The backfill's work from an export (see ``backfill_export``); ``on_wait`` is told of
    its wait for the stream's tip, as the read mode's."""

    def work(stop: StopFlag | None) -> Flow[list[str]]:
        return (
            yield from export_flow(
                index,
                claim.saved if claim is not None else None,
                export,
                report,
                progress,
                margin,
                recorded,
                store.clock if store is not None else time.time,
                ends,
                stop,
                on_wait,
            )
        )

    return work


def _reconcile_each(
    index: MarkerCore,
    info: TableInfo,
    recorded: set[str],
    report: BackfillReport,
    progress: Callable[[int], None] | None,
    stop: StopFlag | None = None,
) -> Flow[list[str]]:
    """The reconcile mode: each collection found by the skip scan reconciled in turn; the
    clashes of ``recorded`` it found resolved."""
    resolved: list[str] = []
    # Every collection, one holding nothing but ddbkeys' own items included (its marker goes):
    # the skip scan handing out own items too.
    pages = SkipPages(info, index.markers(info), own_items=True)
    while pages.request() is not None:
        if stop is not None:
            stop.check()
        for key in (yield from index.page(pages, "reading the table's keys")):
            if stop is not None:
                stop.check()
            outcome, held = yield from reconcile_held_flow(index, key, index.begin())
            if outcome is not Outcome.CLASH and key_json(key) in recorded:
                resolved.append(key_json(key))
            if outcome is Outcome.MARKED:
                report.written += 1
            elif outcome is Outcome.UNMARKED:
                report.removed += 1
            elif outcome is Outcome.CLASH:
                report.clashes.append(key)
            elif held:
                report.present += 1
            elif held is not None:  # (None: ddbkeys' counter alone, nothing to mark)
                report.emptied += 1
            if progress is not None:
                progress(report.written)
    return resolved


def waited_backfill_flow(
    index: MarkerCore,
    progress: Callable[[int], None] | None,
    store: StateCore | None,
    margin: float,
    *,
    wait: bool = True,
    for_maintainer: bool = False,
    timeout: float | None = None,
    on_wait: Callable[[Readiness], None] | None = None,
    stop: StopFlag | None = None,
    mode: str = "auto",
    force: bool = False,
    owner: str | None = None,
    export: ExportSnapshot | None = None,
    report: BackfillReport | None = None,
    on_claim: Callable[[], None] | None = None,
) -> Flow[BackfillReport]:
    """:func:`backfill_flow` begun as the proof's rule says (``backfill_wait.wait_flow``): what
    ``MarkerIndex.backfill`` runs, in both forms, and ``index follow --backfill``. ``wait``,
    ``on_wait``: the rule's, and what to do on finding another backfill at work (see
    ``backfill_flow``); ``force``, ``owner``, ``report`` (the one it fills, which a caller may
    watch as it grows: ``index follow``'s progress lines), ``on_claim``: ``backfill_flow``'s."""

    def start() -> Flow[Readiness]:
        assert store is not None
        return wait_flow(
            index,
            store,
            margin,
            wait=wait,
            for_maintainer=for_maintainer,
            timeout=timeout,
            on_wait=on_wait,
            stop=stop,
        )

    return backfill_flow(
        index,
        progress,
        store,
        mode,
        margin,
        start=start,
        stop=stop,
        wait=wait,
        force=force,
        on_wait=on_wait,
        owner=owner,
        export=export,
        report=report,
        on_claim=on_claim,
    )


def repair_flow(index: MarkerCore, store: StateCore, remove_orphans: bool) -> Flow[VerifyReport]:
    """Mark the collections :meth:`~MarkerCore.verify` finds unmarked and remove orphaned
    markers (unless not ``remove_orphans``); clear the clashes recorded in ``store`` that are
    resolved."""
    saved = yield from store.load(index.table, index.name)
    report = yield from verify_flow(index, saved, store.name)
    if saved is not None and saved.clashes:
        # Each clash a maintainer recorded is looked at again, by the collection itself (a
        # consistent reconciliation, not the index, which may lag): one resolved is taken
        # out (one by one: one recorded meanwhile stays).
        cleared = []
        for text in saved.clashes:
            outcome = yield from reconcile_flow(index, key_of_json(text), index.begin())
            if outcome is not Outcome.CLASH:
                cleared.append(text)
        yield from store.clashes(index.table, index.name, cleared, add=False)
    report.unfixed.extend(report.clashes)
    for key in report.missing:
        try:
            yield from index.mark(key)  # (False: marked meanwhile, by a maintainer: fixed)
            report.fixed_missing.append(key)
        except MarkerClashError:  # data written at the marker's key since verify
            report.unfixed.append(key)
    for key in report.orphans:
        if not remove_orphans:
            report.unfixed.append(key)
        elif (yield from index.unmark(key)) or (yield from _settled(index, key)):
            report.fixed_orphans.append(key)
        else:  # not a marker at the marker's key (an item of the index all the same)
            report.unfixed.append(key)
    return report


def _settled(index: MarkerCore, key: Key) -> Flow[bool]:
    """Whether the collection ``key``, whose orphaned marker was not there to remove (a
    maintainer removed it since ``verify``, or data came and it was marked again, or an item
    that is not a marker sits at its key), is as it should be now: reconciled (a consistent
    Query, and a write where it is still wrong), it is unless data sits at the marker's key."""
    return (yield from reconcile_flow(index, key, index.begin())) is not Outcome.CLASH
