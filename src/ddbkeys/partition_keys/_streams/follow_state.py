"""What a stream follower keeps while it runs (its :class:`FollowState`), says it did (its
:class:`FollowReport`) and stops on (:class:`StopOn`), and the collections a batch of stream
records names. Plain values and pure functions; :mod:`ddbkeys.partition_keys._streams.follow`
decides with them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ddbkeys._core.stopping import StopFlag
from ddbkeys.partition_keys._index.maintain import Outcome
from ddbkeys.partition_keys._index.markers import BackfillReport
from ddbkeys.partition_keys._listing.base import Key
from ddbkeys.partition_keys._proof.evidence import (
    CREATED_ROUNDING,
    GONE_AFTER,
    ShardMark,
    nearly_a_day_old,
)
from ddbkeys.partition_keys._proof.marks import advance, created_at
from ddbkeys.partition_keys._proof.shard_read import EMPTY_AT_TIP
from ddbkeys.partition_keys._streams.streams import shard_born

__all__ = [
    "Event",
    "FollowReport",
    "FollowState",
    "StopOn",
    "Stopped",
    "count",
    "covered_since",
    "gone_marks",
    "keys_of_records",
    "may_have_lost",
    "note_page",
    "ready",
    "records_after",
    "said_again",
    "tip_read",
    "took",
    "value_key",
]


def gone_marks(
    marks: Mapping[str, ShardMark], parents: Mapping[str, str | None], stream: str, now: float
) -> list[str]:
    """The shards of ``marks`` that a follower takes off the record (as the Lambda handler
    does): of another stream than ``stream``, or neither listed by it (``parents``: each
    listed shard's parent) nor a listed shard's parent (a child read from its start is
    trusted by its parent's mark), their last position ``GONE_AFTER`` old, with no gap
    recorded (shards close every few hours on the service: kept, a record of a busy
    table's would grow by a mark each, for ever, to DynamoDB's 400 KB)."""
    needed = {*parents, *(p for p in parents.values() if p is not None)}
    return sorted(
        shard
        for shard, mark in marks.items()
        if (mark.stream != stream or shard not in needed)
        and mark.gap is None  # (records lost before they were applied: a listing heeds it)
        and mark.marks
        and now - mark.marks[-1][1] > GONE_AFTER
    )


def covered_since(shard: str, now: float) -> float | str:
    """Where a follower's coverage of ``shard``, read from its oldest record at a first start,
    begins: "start" (every record of it), but where the shard was made nearly a day ago (its
    id's time): records trimmed before it is read were never applied, so coverage begins
    ``now``, and only a backfill begun after it counts (a follower restarted after its shards
    were gone and their marks pruned, on a shard made a day before, claimed it whole)."""
    born = shard_born(shard)
    return now if born is not None and nearly_a_day_old(born, now) else "start"


def may_have_lost(state: FollowState, shard: str, mark: ShardMark | None, now: float) -> bool:
    """Whether records of ``shard``, about to be read from its oldest one with none of them
    applied yet, may have been trimmed (kept 24 hours) before ``now``: it was begun at its end
    more than a day ago, or its parent was last read more than a day ago (the shard holds the
    records that came after the parent's)."""
    if mark is not None and isinstance(mark.since, int | float):
        return nearly_a_day_old(float(mark.since), now)
    parent = state.marks.get(state.parents.get(shard) or "")
    return parent is not None and bool(parent.marks) and nearly_a_day_old(parent.marks[-1][1], now)


def keys_of_records(records: Iterable[dict[str, Any]], partition_key: str) -> list[dict[str, Any]]:
    """The distinct partition keys (typed) of stream records, in the order first seen."""
    seen: dict[str, dict[str, Any]] = {}
    for record in records:
        value = record.get("dynamodb", {}).get("Keys", {}).get(partition_key)
        if value is not None:
            seen.setdefault(value_key(value), value)
    return list(seen.values())


def records_after(records: list[dict[str, Any]], skip_before: float | None) -> list[dict[str, Any]]:
    """``records`` but those created before ``skip_before`` (seconds; None: all)."""
    if skip_before is None:
        return records
    kept = []
    for record in records:
        created = created_at(record)
        if created is None or created + CREATED_ROUNDING >= skip_before:
            kept.append(record)
    return kept


def value_key(value: dict[str, Any]) -> str:
    """A hashable form of a typed value, whose binary may be bytes (boto3) or base64 text (a
    Lambda event's JSON): not :func:`~ddbkeys.partition_keys._index.markers.hashable`, which takes
    bytes only."""
    kind, raw = next(iter(value.items()))
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).hex()
    return json.dumps([kind, raw])


@dataclass
class FollowReport:
    """What a follower did: records and batches handled, and what they did to markers."""

    records: int = 0
    batches: int = 0
    marked: int = 0
    unmarked: int = 0
    clashes: int = 0
    caught_up: bool = False
    #: When (the follower's clock) it last found every shard read to its end: every record
    #: written before this time has been applied (the start of the round that found it).
    caught_up_at: float | None = None
    #: Since when it has found the table's stream off (None: on); it waits for a new one.
    stream_off_since: float | None = None
    #: At its (last) start: whether no backfill under the stream lets a listing prove the
    #: index yet (with the follower's ``replay_margin``).
    backfill_needed: bool | None = None
    #: With ``backfill=True``: what its backfill does now (None: nothing yet; "waiting" for
    #: the replay margin, "another running": waiting for another backfill at work under the
    #: stream to end, "running", "done", "failed"), how many it finished itself, and the
    #: last (``report.backfill.joined`` set: the other one's outcome, which it waited for).
    backfill_state: str | None = None
    backfills: int = 0
    backfill: BackfillReport | None = None
    #: Collections it recorded as pending (their reconciliation did not settle), and pending
    #: elements it took out once their collection settled.
    pending: int = 0
    unpended: int = 0
    #: How often it found its record put back (fewer saves than it made: restored from an
    #: older copy) and went on from the marks the record holds.
    put_back: int = 0
    #: Since when a shard's position has stopped advancing (None: none has): a collection
    #: that did not settle could not be recorded, the pending set being full.
    held_since: float | None = None
    #: Records of the batch a stop cut short (some of its collections applied, the shard's mark
    #: where it was): the next start reads them again. Its markers are counted above.
    cut_short: int = 0


class Event(Protocol):
    """A stop signal: a ``threading.Event`` or an ``asyncio.Event``."""

    def is_set(self) -> bool: ...


class Stopped(Exception):
    """The stop was set during a wait: the run ends there (its checkpoint is saved)."""


class StopOn(StopFlag):
    """A :class:`StopFlag` that is set when ``event`` is (for the drivers' sliced waits)."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    @requested.setter
    def requested(self, value: bool) -> None:
        pass

    def check(self) -> None:
        if self.event.is_set():
            raise Stopped


@dataclass
class FollowState:
    """Where a follower stands, in memory (what outlives a run is its marks, saved in the state
    table): per shard, what is applied (``marks``, saved as such), the shards read to their end
    (``finished``), those opened at their oldest record and not read yet (``from_oldest``), the
    open iterators, each shard's parent (as the stream lists them), and the report."""

    marks: dict[str, ShardMark] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)
    from_oldest: set[str] = field(default_factory=set)
    iterators: dict[str, str | None] = field(default_factory=dict)
    parents: dict[str, str | None] = field(default_factory=dict)
    report: FollowReport = field(default_factory=FollowReport)
    #: The pending elements it knows of (the record's when it started, and its own since):
    #: those a reconciliation of their collection that settles afterwards takes out.
    pending: set[str] = field(default_factory=set)
    #: When it last tried the pending collections it knows of.
    pending_tried: float | None = None
    #: Per shard, the collections that did not settle and could not be recorded pending (the
    #: set full), tried again with each batch: the shard's mark waits for them; and the last
    #: record read meanwhile (where the mark goes once they are applied).
    owed: dict[str, dict[tuple[str, Any], Key]] = field(default_factory=dict)
    unsaved: dict[str, str] = field(default_factory=dict)
    #: The record's count of saved marks after this follower's last save (``state.SAVES``;
    #: None: none seen), and whether a save found the record holding fewer (put back).
    saves: int | None = None
    put_back: bool = False
    #: Per shard, when each of the last ``EMPTY_AT_TIP`` GetRecords pages began, where each
    #: was empty (since the last record read, and the shard's iterator last taken).
    empty_reads: dict[str, list[float]] = field(default_factory=dict)

    def forget_owed(self) -> None:
        """On a new stream: what was owed in the old one's shards is a backfill's to cover."""
        self.owed.clear()
        self.unsaved.clear()
        self.report.held_since = None


def ready(state: FollowState, shard: str) -> bool:
    """Whether ``shard`` may be read: its parent (if the stream still lists it) is finished,
    so one item's records are handled in order."""
    parent = state.parents.get(shard)
    return parent is None or parent not in state.parents or parent in state.finished


def said_again(
    state: FollowState, arn: str, now: float, refresh: float, tip_every: float
) -> list[str]:
    """The open shards whose mark is over ``refresh`` seconds old, each advanced to ``now`` at
    its position (read to their tip with nothing new: true as of now); and those begun at
    their end where no record is applied yet, whose tip (``tip_read``) was read over
    ``tip_every`` seconds after their newest mark: advanced to that tip, a ``(None, tip)``
    mark that moves on where a listing's replay begins (see ``evidence``'s rule). Theirs to
    save."""
    quiet = []
    for shard, mark in state.marks.items():
        if shard not in state.iterators or not mark.marks:
            continue
        sequence, saved = mark.marks[-1]
        tip = tip_read(state, shard)
        if sequence is None and isinstance(mark.since, int | float):
            # (not where records were read and some are not applied yet: owed, unsaved)
            if tip is None or tip - saved <= tip_every or shard in state.owed:
                continue
            state.marks[shard] = advance(mark, shard, arn, mark.since, None, tip)
        elif now - saved > refresh:
            state.marks[shard] = advance(mark, shard, arn, mark.since, None, now)
        else:
            continue
        quiet.append(shard)
    return quiet


def tip_read(state: FollowState, shard: str) -> float | None:
    """When the shard's tip was last read: the start of the first of the last
    ``EMPTY_AT_TIP`` GetRecords pages, each empty, in a row (by one iterator's chain, since
    the last record read: ``state.empty_reads``); None until there are that many, and on a
    chain begun at the shard's oldest record (``from_oldest``) until it has read a record:
    there, empty pages may come before records not applied yet (a follower restarted with no
    position reads from there; a helper made the service's empty pages last 240 s, and the
    follower took them for the tip: listings then left out what was written while it was
    down)."""
    if shard in state.unsaved or shard in state.from_oldest:
        return None
    run = state.empty_reads.get(shard, [])
    return run[-EMPTY_AT_TIP] if len(run) >= EMPTY_AT_TIP else None


def note_page(state: FollowState, shard: str, records: list[Any], began: float) -> None:
    """Note a GetRecords page of ``shard`` that began at ``began``: a page with records ends
    the run of empty ones (see ``tip_read``)."""
    if records:
        state.empty_reads.pop(shard, None)
    else:
        run = state.empty_reads.setdefault(shard, [])
        run.append(began)
        del run[:-EMPTY_AT_TIP]


def took(state: FollowState, shard: str, page: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The records of a GetRecords ``page`` of ``shard``, whose next iterator is kept; a page
    with none ends the shard (closed, read to its end): finished."""
    following = page.get("NextShardIterator")
    if following:
        state.iterators[shard] = following
    else:
        del state.iterators[shard]
        state.finished.add(shard)
    return list(page.get("Records", []))


def count(report: FollowReport, outcome: Outcome) -> None:
    """Add what one reconciliation did to ``report``."""
    report.marked += outcome is Outcome.MARKED
    report.unmarked += outcome is Outcome.UNMARKED
    report.clashes += outcome is Outcome.CLASH
