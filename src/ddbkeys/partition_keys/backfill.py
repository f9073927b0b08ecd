"""The backfill and the repair of a marker index as flows (see :mod:`ddbkeys.core`): each
reconciles collections with their markers and keeps the index's evidence in the state table
(see :mod:`ddbkeys.partition_keys.evidence`): a marker index's plan and its record's, run by
either ``MarkerIndex``."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ddbkeys.core.steps import Flow
from ddbkeys.core.stopping import StopFlag
from ddbkeys.partition_keys.backfill_wait import Readiness, wait_flow
from ddbkeys.partition_keys.base import Key
from ddbkeys.partition_keys.evidence import DEFAULT_REPLAY_MARGIN
from ddbkeys.partition_keys.maintain import Outcome, reconcile_flow
from ddbkeys.partition_keys.markers import (
    BackfillReport,
    MarkerClashError,
    SkipPages,
    VerifyReport,
)
from ddbkeys.partition_keys.state import StatePlan, key_json, markers_key

if TYPE_CHECKING:
    from ddbkeys.partition_keys.marker_plan import MarkerPlan

__all__ = ["backfill_flow", "repair_flow", "waited_backfill_flow"]


def backfill_flow(
    index: MarkerPlan,
    progress: Callable[[int], None] | None,
    store: StatePlan | None,
    margin: float = DEFAULT_REPLAY_MARGIN,
    start: Callable[[], Flow[Readiness]] | None = None,
    stop: StopFlag | None = None,
) -> Flow[BackfillReport]:
    """Reconcile every collection of the table (found with the skip scan) with its marker:
    mark those without one, unmark those that hold nothing else. Recorded in ``store``'s
    state table (None: not recorded) as evidence for listings (see ``evidence``), with the
    replay ``margin`` it was begun for: it counts only if it met no clash, and began at least
    ``margin`` after a maintainer recorded positions. ``start`` (see
    ``backfill_wait.wait_flow``), run once the index is checked and before anything is
    written, waits as that rule says and tells whether the backfill will count. ``stop``
    ends it between pages once set (its record then says it did not finish)."""
    info = yield from index.check()
    entry: dict[str, Any] = {}
    report = BackfillReport()
    if store is not None:
        yield from store.ensure()
        if start is not None:
            ready = yield from start()
            report.counts, report.advice = ready.counts, None if ready.counts else ready.advice()
        yield from index.describe()  # the stream as it is now
        stream = (yield from index.table_info()).stream_arn
        saved = yield from store.load(index.table, index.name)
        firsts = [
            m.first_saved
            for m in (saved.shards.values() if saved is not None else ())
            if m.stream == stream and m.first_saved is not None
        ]
        entry = {
            "started": store.clock(),
            "stream": stream,
            "maintained_since": min(firsts, default=None),
            "finished": None,
            "clashes": [],
            "markers": markers_key(index.attribute, index.sort_key(info)),
            "margin": margin,
        }
        yield from store.update(index.table, index.name, {"backfill": _json(entry)})
    # The clashes recorded before: taken out at the end only those this backfill found
    # resolved (its eventually consistent scan may not show a collection a maintainer
    # met a moment ago: such a clash stays).
    recorded = set(saved.clashes) if store is not None and saved is not None else set()
    resolved: list[str] = []
    # Every collection, one holding nothing but a marker included (its marker goes): the
    # skip scan with a recogniser that knows no marker (no sort key value equals NULL).
    pages = SkipPages(info, replace(index.markers(info), sort_value={"NULL": True}))
    while pages.request() is not None:
        if stop is not None:
            stop.check()
        for key in (yield from index.page(pages, "reading the table's keys")):
            outcome = yield from reconcile_flow(index, key, index.begin())
            if outcome is not Outcome.CLASH and key_json(key) in recorded:
                resolved.append(key_json(key))
            if outcome is Outcome.MARKED:
                report.written += 1
            elif outcome is Outcome.UNMARKED:
                report.removed += 1
            elif outcome is Outcome.CLASH:
                report.clashes.append(key)
            else:
                report.present += 1
            if progress is not None:
                progress(report.written)
    if store is not None:
        entry["finished"] = store.clock()
        entry["clashes"] = [key_json(k) for k in report.clashes]
        yield from store.update(index.table, index.name, {"backfill": _json(entry)})
        yield from store.clashes(index.table, index.name, resolved, add=False)
        if report.clashes:
            report.counts = False
    return report


def waited_backfill_flow(
    index: MarkerPlan,
    progress: Callable[[int], None] | None,
    store: StatePlan | None,
    margin: float,
    *,
    wait: bool = True,
    for_maintainer: bool = False,
    timeout: float | None = None,
    on_wait: Callable[[Readiness], None] | None = None,
    stop: StopFlag | None = None,
) -> Flow[BackfillReport]:
    """:func:`backfill_flow` begun as the proof's rule says (``backfill_wait.wait_flow``): what
    ``MarkerIndex.backfill`` runs, in both forms, and ``index follow --backfill``."""

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

    return backfill_flow(index, progress, store, margin, start, stop)


def repair_flow(index: MarkerPlan, store: StatePlan, remove_orphans: bool) -> Flow[VerifyReport]:
    """Mark the collections :meth:`~MarkerPlan.verify` finds unmarked and remove orphaned
    markers (unless not ``remove_orphans``); clear the clashes recorded in ``store`` that are
    resolved."""
    saved = yield from store.load(index.table, index.name)
    report = yield from index.verify()
    if saved is not None and saved.clashes:
        # Each clash a maintainer recorded is looked at again, by the collection itself (a
        # consistent reconciliation, not the index, which may lag): one resolved is taken
        # out (one by one: one recorded meanwhile stays).
        cleared = []
        for text in saved.clashes:
            outcome = yield from reconcile_flow(index, _key_of(text), index.begin())
            if outcome is not Outcome.CLASH:
                cleared.append(text)
        yield from store.clashes(index.table, index.name, cleared, add=False)
    report.unfixed.extend(report.clashes)
    for key in report.missing:
        try:
            yield from index.mark(key)
            report.fixed_missing.append(key)
        except MarkerClashError:  # data written at the marker's key since verify
            report.unfixed.append(key)
    for key in report.orphans:
        if remove_orphans and (yield from index.unmark(key)):
            report.fixed_orphans.append(key)
        else:  # kept, or not a marker at the marker's key (an item of the index all the same)
            report.unfixed.append(key)
    return report


def _key_of(text: str) -> Key:
    """A typed key as the state table keeps it (see ``state.key_json``)."""
    kind, raw = next(iter(json.loads(text).items()))
    return {kind: base64.b64decode(raw) if kind == "B" else raw}


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))
