"""A listing that proves the marker index at answer time (see :mod:`ddbkeys.partition_keys.
evidence` for the argument): the flows that load the evidence, read the stream from the
maintainer's marks to its tip, and re-check each collection the records name; and the listing
method that scans the index leaving those collections out, then hands out the ones that exist.

The flows only decide; the sync listing and ``ddbkeys.aio`` run them on their drivers (the
stream's requests go to a DynamoDB Streams client, see ``SplitClient``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddbkeys._core.steps import (
    Emit,
    Flow,
    query,
)
from ddbkeys._errors import DdbKeysError
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._index.markers import collection_query, hashable
from ddbkeys.partition_keys._index.pending import pending_keys
from ddbkeys.partition_keys._index.state import StateCore, markers_key
from ddbkeys.partition_keys._listing.base import Key, Reader
from ddbkeys.partition_keys._listing.index_method import IndexMethod
from ddbkeys.partition_keys._proof.evidence import CREATED_ROUNDING, RUN_BACKFILL, Decline, Evidence
from ddbkeys.partition_keys._proof.precheck import precheck
from ddbkeys.partition_keys._proof.replay_window import ReplayWindow, replay_window
from ddbkeys.partition_keys._proof.shard_read import (
    Replay,
    ask_within_budget,
    read_shard,
    refusal,
    shard_list,
)
from ddbkeys.partition_keys._tasks.figures import figure

if TYPE_CHECKING:
    from ddbkeys.partition_keys._index.marker_core import MarkerCore

__all__ = [
    "Replay",
    "ReplayedIndexMethod",
    "StreamRead",
    "estimate",
    "index_listing_units",
    "index_weighed",
    "lag_of",
    "load_evidence",
    "read_flow",
    "replay_flow",
    "replay_units",
    "scan_units",
]


def scan_units(size_bytes: int) -> float:
    """Read units of scanning ``size_bytes`` (0.5 per 4 KB, eventually consistent; at least a
    request's 0.5)."""
    return max(0.5, size_bytes / 4096 * 0.5)


def estimate(info: TableInfo, index: str) -> tuple[float, float, float]:
    """Read units: of scanning the table (what listing another way costs at most), of scanning
    the index, and of re-checking one collection (a consistent Query of two items)."""
    items = max(1, info.item_count)
    average = info.size_bytes / items if info.size_bytes else 100.0
    scan = scan_units(info.size_bytes)
    index_scan = scan_units(info.index_sizes.get(index, 0))
    per_key = float(max(1, math.ceil(2 * average / 4096)))
    return scan, index_scan, per_key


def replay_units(info: TableInfo, index: str, rechecks: int) -> float:
    """Read units of the replay a listing of the marker index pays now: a consistent Query of
    each of the ``rechecks`` collections the stream names past the maintainer's positions
    (held back by the margin), ``estimate``'s per-collection figure each. What a lagging
    maintainer costs, as ``index status``, the estimate and ``auto`` all count it."""
    return estimate(info, index)[2] * rechecks


def index_listing_units(info: TableInfo, index: str, rechecks: int) -> float:
    """Read units of listing from the marker index now: its scan and :func:`replay_units`."""
    return estimate(info, index)[1] + replay_units(info, index, rechecks)


def index_weighed(info: TableInfo, index: str, rechecks: int | None) -> str:
    """What ``auto`` weighs, in words: the index's scan and the replay of ``rechecks``
    collections (None: not known yet) against a scan's read units."""
    scan, index_scan, per_key = estimate(info, index)
    replay = (
        f"replay ~{figure(replay_units(info, index, rechecks))} RCU ({rechecks:,} collection(s))"
        if rechecks is not None
        else f"replay {per_key:g} RCU a collection the stream names"
    )
    return f"the index: ~{figure(index_scan)} RCU + {replay} against a scan's ~{figure(scan)} RCU"


def load_evidence(
    store: StateCore, info: TableInfo, marker: MarkerCore, margin: float
) -> Flow[tuple[Evidence | None, Decline | None]]:
    """The index's record, and why it proves nothing (before the stream is read) if so."""
    exists, evidence = yield from store.lookup(info.name, marker.name)
    if not exists and info.stream_arn is not None:  # (else the stream first: `index stream`)
        return None, Decline(
            f"there is no record of a backfill, nor a state table {store.name!r} to hold one: "
            f"{RUN_BACKFILL}, or name the state table they write with --state-table"
        )
    return evidence, precheck(evidence, info.stream_arn, margin, _markers(marker, info))


def _markers(marker: MarkerCore, info: TableInfo) -> str:
    """How this listing recognises markers, as a backfill records it."""
    return markers_key(marker.attribute, marker.sort_key(info))


@dataclass
class StreamRead:
    """What the replay's read of the stream found, before any re-check: the stream's shards
    (DescribeStream; None when not read), where it read each from (``window``), the records and
    the collections they name (``replay``, nothing re-checked yet), and why it proves nothing
    (``decline``) if so. What ``index status`` shows."""

    shards: list[dict[str, Any]] | None = None
    window: ReplayWindow | None = None
    replay: Replay | None = None
    decline: Decline | None = None


def _costly(what: str, replay: Replay | None = None, now: float = 0.0) -> Decline:
    """Too much to re-check: ``what`` costs more than listing another way (with how far behind
    the maintainer is, from ``replay``'s records)."""
    return Decline(
        f"{what}, and re-checking them costs more than listing another way",
        True,
        lag_of(replay, now),
        replay.history if replay is not None else 0,
    )


def lag_of(replay: Replay | None, now: float) -> float | None:
    """How long ago, at least, the oldest record the maintainer has not applied was written
    (its time is rounded down: to the minute on DynamoDB Local, ``CREATED_ROUNDING``)."""
    oldest = replay.oldest_unapplied if replay is not None else None
    return None if oldest is None else max(now - oldest - CREATED_ROUNDING, 0.0)


def read_flow(
    reader: Reader,
    marker: MarkerCore,
    info: TableInfo,
    evidence: Evidence | None,
    margin: float,
    now: float,
    most: int | None,
) -> Flow[StreamRead]:
    """Read the stream from the marks held back by ``margin`` to its tip: the collections its
    records name, not re-checked (see :func:`replay_flow`). Only Streams requests."""
    arn = info.stream_arn
    if arn is None:
        return StreamRead(decline=Decline("the table's stream is off"))
    try:
        shards = yield from shard_list(reader, arn)
    except DdbKeysError as exc:
        return StreamRead(decline=refusal(exc, "describing the table's stream"))
    window = replay_window(evidence, arn, shards, now, margin, _markers(marker, info))
    if isinstance(window, Decline):
        return StreamRead(shards, decline=window)
    replay = Replay(margin)
    # Every collection pending when the listing began (read with the evidence, at its start:
    # see the evidence module for why that is when): re-checked, whatever the stream says.
    for key in pending_keys(evidence.pending if evidence is not None else ()):
        replay.touched.setdefault(hashable(key), key)
    replay.pending = len(replay.touched)
    if most is not None and replay.pending > most:
        return StreamRead(
            shards,
            window,
            replay,
            _costly(f"{replay.pending:,} collection(s) are pending (their markers did not settle)"),
        )
    pk = info.partition_key.name
    for read in window.reads:
        outcome = yield from read_shard(reader, window, read, pk, replay)
        if outcome is not None:
            return StreamRead(shards, window, replay, outcome)
        if most is not None and len(replay.touched) > most:
            return StreamRead(
                shards,
                window,
                replay,
                _costly(
                    f"the stream since the maintainer's positions names more than {most:,} "
                    + ("collection" if most == 1 else "collections"),
                    replay,
                    now,
                )
                if most
                else Decline(
                    f"the stream since the maintainer's positions names {len(replay.touched):,} "
                    "collection(s) to re-check, and even one costs more than a scan of this "
                    "small table",
                    True,
                    lag_of(replay, now),
                    replay.history,
                ),
            )
    return StreamRead(shards, window, replay)


def replay_flow(
    reader: Reader,
    marker: MarkerCore,
    info: TableInfo,
    evidence: Evidence | None,
    margin: float,
    now: float,
    most: int | None,
    on_read: Callable[[Replay], None] | None = None,
) -> Flow[Replay | Decline]:
    """Read the stream from the marks held back by ``margin`` to its tip and re-check what it
    names; a :class:`Decline` when that cannot prove the index (a shard nobody covered, a
    position the stream no longer keeps, the stream refused, or more than ``most``
    collections to re-check). ``on_read`` is told what the stream named before any re-check."""
    read = yield from read_flow(reader, marker, info, evidence, margin, now, most)
    if read.decline is not None:
        return read.decline
    replay = read.replay
    assert replay is not None
    if on_read is not None:
        on_read(replay)
    for hashed, key in replay.touched.items():
        replay.exists[hashed] = yield from _exists(reader, marker, info, key)
    return replay


def _exists(reader: Reader, marker: MarkerCore, info: TableInfo, key: Key) -> Flow[bool]:
    """Whether the collection ``key`` holds an item that is not ddbkeys' own (a marker, a
    counter item: a consistent Query of at most two items a page; a next page only when a
    page held ddbkeys' own items alone and stopped short)."""
    markers = marker.markers(info)
    request: dict[str, Any] = {**collection_query(info.name, key, markers, consistent=True)}
    while True:
        asked = query(request, count_scanned=True)  # type: ignore[arg-type]
        page = yield from ask_within_budget(reader, asked)
        if any(markers.is_data(item) for item in page.get("Items", [])):
            return True
        if "LastEvaluatedKey" not in page:
            return False
        request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}


class ReplayedIndexMethod(IndexMethod):
    """The marker index, proven by a replay: its last segment hands out the re-checked
    collections that exist; the others scan the index (``segments - 1`` Scan segments),
    leaving the re-checked collections out."""

    def __init__(self, info: TableInfo, index: MarkerCore, replay: Replay) -> None:
        super().__init__(info, index)
        self.replay = replay

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Flow[None]:
        if segment == segments - 1:
            for key in self.replay.existing(after):
                yield Emit(key)
            return
        touched = self.replay.touched
        yield from _filtered(
            super().keys(reader, segment, segments - 1, after),
            lambda key: hashable(key) not in touched,
        )


def _filtered(flow: Flow[None], keep: Callable[[Key], bool]) -> Flow[None]:
    """``flow`` with the keys it emits that ``keep`` refuses left out."""
    try:
        step = next(flow)
        while True:
            if isinstance(step, Emit) and not keep(step.value):
                step = flow.send(None)
                continue
            try:
                answer = yield step
            except GeneratorExit:
                flow.close()
                raise
            except BaseException as exc:
                step = flow.throw(exc)
                continue
            step = flow.send(answer)
    except StopIteration:
        return
