"""What proves a marker index complete at answer time, decided without I/O: a snapshot (the
index) plus its log (the table's stream after the maintainer's recorded positions).

The maintainer (``index follow`` or the Lambda handler) records, per shard of the stream, the
position up to which it has applied every record (a *mark*: the last sequence number applied,
and when that was saved), only after applying it. A listing then (see
:mod:`ddbkeys.partition_keys._proof.replay`) reads each shard from the newest mark saved at least
``margin`` seconds ago, to the shard's tip; re-checks every collection those records name with a
consistent Query; scans the index leaving those collections out; and hands out the re-checked
ones that exist. :func:`replay_window` says where to read each shard from, or why no proof is
possible (the listing then declines the index and says so).

The proof, for a collection ``c`` that nothing writes while the listing runs:

* If a record of ``c`` lies after a shard's chosen mark, ``c`` is re-checked by a consistent
  Query: its answer is ``c``'s state.
* Otherwise every record of ``c`` in the stream was applied by the maintainer, and saved at least
  ``margin`` before the listing began. Applying reconciles ``c``'s marker with ``c``'s state as
  read *after* that record's write (see :mod:`ddbkeys.partition_keys._index.maintain`), so after its
  last record ``c``'s marker is right, and it shows in the index within the margin.
* A reconciliation that does not settle (the collection kept changing under it for
  ``MAX_ROUNDS`` rounds) applies its record all the same: the maintainer adds the collection to
  the *pending set* of the index's record (see :mod:`ddbkeys.partition_keys._index.pending`) before
  it saves the mark, and every listing re-checks each pending collection. Why that is enough: take
  ``c``'s last write ``W`` before the listing (data or a marker: a maintainer's marker writes have
  records too) and its record, at or before the chosen mark. The reconciliation that applied it
  began after ``W``. If it settled, its last read found the marker right, and it wrote nothing after
  ``W``: the marker was last written at or before ``W``, before the cut, and the index shows it. If
  it did not settle, its element was added before the mark was saved, so before the cut, so before
  the listing read the record: the listing re-checks ``c``, unless the element was taken out by
  then. A maintainer takes an element out only once a newer element of ``c`` is in (which then
  stands for it), or if it knew of it before its own reconciliation of ``c`` began, once that
  reconciliation settled: it began after the give-up, so after ``W``, and found the marker right
  without writing (a write would come after ``W``): the marker, last written at or before ``W``, is
  right, and the index shows it. So the pending set is read once, with the rest of the record, when
  the listing begins (after the cut): every element that matters was added before the cut, and one
  taken out at any time, even during the replay, was taken out safely. Read after the replay
  instead, the set would be as sound (it could only lack elements taken out safely, and hold newer
  ones) and cost a second read; an element added after the cut names a give-up on a record the mark
  does not need (the one who saved the mark applied it before). A collection that keeps changing
  leaves records of its changes after the give-up, so its last record is in practice applied by a
  reconciliation that settles; the pending set keeps the proof from resting on why a reconciliation
  gave up (the schedules' model makes reconciliations give up with no write: a listing that ignores
  the set is then wrong).
* A pending set at its bound holds the shard's mark where it is (the follower saves no mark
  past a record whose collection it could neither settle nor record; the Lambda handler
  reports that record failed): a mark that does not move only makes listings read more.
* A collection written before the log begins (before the stream was on, or before the follower
  started) was reconciled by the backfill, which must have begun at least ``margin`` after the
  maintainer's first position under the current stream, met no clash, and run under the stream
  the table has now.
* A shard a follower began at its end (``since`` a time), no record applied yet, is read
  from its start, leaving out records created before ``since`` less the margin (the backfill
  covers them), or before ``t`` less the margin for a ``(None, t)`` mark held back: ``t`` is
  when the first of ``shard_read.EMPTY_AT_TIP`` empty GetRecords pages in a row began, on
  iterators begun at the shard's end (never at its oldest, where empty pages may come before
  records). A write shows in the stream within the margin, so a record written before that
  lay before where the follower began (history) or was applied (the mark would hold its
  position). Without it, quiet tables' listings re-checked a backfill's marker writes from
  just before the follower began until a later write.
* Every shard of the stream must be accounted for: named by the maintainer, a descendant of
  one (read from its start: a child's records all come after its parent's), or with no record
  from before the backfill began (read from its start).

It rests on one assumption, not proven here: DynamoDB shows every write in the index, in the
stream and in eventually consistent reads within ``margin`` (AWS bounds none of these; all
are near real time), and the clocks of the maintainer and the listing agree to well within it.
Where the Lambda handler keeps the index, its positions count only with its check that the trigger
hands it a shard's batches in order (see :mod:`ddbkeys.partition_keys._streams.lambda_trigger`),
which assumes besides that ``ParallelizationFactor`` does not go above 1 and back between two of its
checks (minutes apart). A shard is listed by DescribeStream for as long as any of its records is
kept (24 hours).

The state table is part of what a proof trusts: the positions recorded there are taken as the
maintainer's word that every record up to them was applied. Only the maintainer's role may
write it (the listing's policy only reads it, see :mod:`ddbkeys.iam`); whoever can write it can
make a listing wrong. What no maintainer can have written is declined at once: a position
outside its shard's ``SequenceNumberRange`` (``replay_window.out_of_range``), and one the stream
refuses (see ``shard_read._iterator``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ddbkeys.partition_keys._streams.lambda_trigger import (
    Parallelized,
    TriggerCheck,
)

__all__ = [
    "CLASHED",
    "CREATED_ROUNDING",
    "DAY",
    "DEFAULT_REPLAY_MARGIN",
    "GONE_AFTER",
    "RUN_BACKFILL",
    "SHARD_PREFIX",
    "TRIM_SAFETY",
    "Backfill",
    "Decline",
    "Evidence",
    "ShardMark",
    "nearly_a_day_old",
]

#: How a reason starts where the backfill met your items at the marker's key: no command fixes
#: that alone (the items must be moved first).
CLASHED = "the backfill met data at the marker's key"

#: What to run where there is no record of a backfill.
RUN_BACKFILL = (
    "run `ddbkeys partition-keys index backfill` while `index follow` or the Lambda handler "
    "keeps the markers"
)

#: Seconds a listing holds the maintainer's positions back: what was applied within it is read
#: again from the stream, as the index may not show it yet.
DEFAULT_REPLAY_MARGIN = 60.0
#: How long a stream keeps a record (seconds).
DAY = 24 * 3600.0
#: The attribute of the index's record that holds one shard's marks: ``shard <shard id>``.
SHARD_PREFIX = "shard "
#: How far a record's ApproximateCreationDateTime may lie before the write: it is rounded down
#: (to the second on the service, to the minute on DynamoDB Local). A record is taken as
#: created before a moment only when its time plus this is.
CREATED_ROUNDING = 60.0
#: A shard read from its oldest record is trusted to hold every record since it began only if
#: that record is younger than a day less this (seconds): older, and records before it may
#: have been trimmed (the stream keeps a record 24 hours).
TRIM_SAFETY = 3600.0
#: How old a shard's last position is when its mark may leave the record, its shard gone
#: from the stream: its records are trimmed (a day), and nothing it vouches for is read any
#: more (the Lambda handler's and the follower's pruning).
GONE_AFTER = DAY + 3600.0


def nearly_a_day_old(at: float, now: float) -> bool:
    """Whether ``at`` is nearly a day before ``now`` (within ``TRIM_SAFETY``): a record written
    after it may have been trimmed (the stream keeps a record 24 hours) before it was read."""
    return at < now - DAY + TRIM_SAFETY


@dataclass(frozen=True)
class ShardMark:
    """What a maintainer recorded for one shard of ``stream``.

    ``since`` is where its coverage of the shard began: ``"start"`` (every record of the shard
    is applied, from its first), or a time (it began reading at the shard's end then: records
    from before were not applied; the backfill covers them). ``marks`` are ``(sequence, saved)``
    pairs, oldest first: every record up to and including ``sequence`` (None: none yet) was
    applied when ``saved`` (or a tip read then, in a follower's: see the rule above)."""

    shard: str
    stream: str
    since: str | float
    marks: tuple[tuple[str | None, float], ...] = ()
    #: A record the maintainer reported failed (Lambda sends it again), and when it found
    #: that Lambda went on past such a record instead (its retries ran out): a gap.
    failed: str | None = None
    gap: float | None = None

    def to_json(self) -> str:
        raw: dict[str, Any] = {
            "stream": self.stream,
            "since": self.since,
            "marks": [list(m) for m in self.marks],
        }
        if self.failed is not None:
            raw["failed"] = self.failed
        if self.gap is not None:
            raw["gap"] = self.gap
        return json.dumps(raw, separators=(",", ":"))

    @classmethod
    def from_json(cls, shard: str, text: str) -> ShardMark | None:
        """The mark saved as ``text``; None when it is not one (a stranger's attribute)."""
        try:
            raw = json.loads(text)
            since = raw["since"]
            if not (since == "start" or isinstance(since, (int, float))):
                return None
            marks = tuple(
                (None if s is None else str(s), float(t)) for s, t in raw.get("marks", [])
            )
            if not all((s is None or s.isdigit()) and math.isfinite(t) for s, t in marks) or (
                isinstance(since, float | int) and not math.isfinite(since)
            ):
                return None
            failed = raw.get("failed")
            gap = raw.get("gap")
            return cls(
                shard,
                str(raw["stream"]),
                since,
                marks,
                None if failed is None else str(failed),
                None if gap is None else float(gap),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None

    @property
    def first_saved(self) -> float | None:
        """When coverage of the shard was first recorded."""
        if isinstance(self.since, float | int):
            return float(self.since)
        return self.marks[0][1] if self.marks else None

    def held_back(self, cut: float) -> tuple[str | None, bool]:
        """The newest mark saved at or before ``cut``: (its sequence, True), or (None, False)
        when there is none that old (the shard is then read from its start)."""
        chosen: tuple[str | None, bool] = (None, False)
        for sequence, saved in self.marks:
            if saved <= cut:
                chosen = (sequence, True)
        return chosen


@dataclass(frozen=True)
class Backfill:
    """A backfill's record: when it began, under which stream, the maintainer's first recorded
    position then (None: none), when it finished, and the collections it could not mark."""

    started: float
    stream: str | None
    maintained_since: float | None
    finished: float | None = None
    clashes: tuple[str, ...] = ()
    #: How it recognised markers (``state.markers_key``: their attribute and sort key).
    markers: str | None = None
    #: The replay margin it was begun for (seconds; None: a record of an older ddbkeys).
    margin: float | None = None
    #: Why it does not count, when it said so itself (a read-mode backfill whose window of
    #: the stream could not be read: see ``_index.backfill_read``); None: it may.
    uncounted: str | None = None
    #: Its last sign of life (seconds; None: a record of an older ddbkeys, its ``started``
    #: then): an unfinished backfill refreshes it at least every ``backfill_wait.ALIVE``
    #: seconds, so one that stops (killed) is not taken for one at work for long (see
    #: ``backfill_wait.running_backfill``).
    alive: float | None = None
    #: Who runs it (``host:pid``, and what: see ``backfill_claim.owner_name``), for messages.
    owner: str | None = None
    #: How many collections it had handled at its last sign of life (marked, already
    #: marked, unmarked or clashing), for a backfill waiting for it to show.
    handled: int | None = None
    #: When it stopped before its end (an error, or asked to stop), if it could say so: it is
    #: no longer at work (one killed cannot say it: its ``alive`` time stops instead).
    stopped: float | None = None
    #: How it read the table (``"reconcile"``, ``"read"``, ``"export"``), once finished.
    mode: str | None = None
    #: When it reads the stream's tip, its markers written (the read and export modes wait
    #: out the replay margin first; None: not yet, or not said).
    tip_at: float | None = None


@dataclass(frozen=True)
class Evidence:
    """The index's record, as far as the proof needs it."""

    table: str
    index: str
    shards: Mapping[str, ShardMark] = field(default_factory=dict)
    backfill: Backfill | None = None
    #: Collections (JSON of their typed keys) where a maintainer found data at the marker's key.
    clashes: tuple[str, ...] = ()
    #: A Lambda handler got events without a shard id (no tumbling window): when, last.
    unnamed_batches: float | None = None
    #: Why the record is not one ddbkeys wrote, if it is not (a part edited or broken).
    corrupt: str | None = None
    #: Per shard, the Lambda handler's check of its trigger (see ``lambda_trigger``); the
    #: latest reading of a ParallelizationFactor other than 1; who said last it keeps the index.
    triggers: Mapping[str, TriggerCheck] = field(default_factory=dict)
    parallelized: Parallelized | None = None
    maintainer: str | None = None
    #: The pending set: elements naming collections whose reconciliation did not settle
    #: (see :mod:`ddbkeys.partition_keys._index.pending`); a listing re-checks each one.
    pending: tuple[str, ...] = ()
    #: The backfill that had finished when ``backfill`` began (kept beside it by the claim,
    #: ``backfill_claim.KEPT``): the proof rests on it while ``backfill`` has not finished
    #: (:func:`basis`).
    kept: Backfill | None = None
    #: How many times followers saved marks (``state.SAVES``; None: never): the count only
    #: grows, so a follower that finds fewer than it last saw knows the record was put back.
    saves: int | None = None


@dataclass(frozen=True)
class Decline:
    """Why the index cannot be proven complete now (one line); ``costly``: it could be, at
    more cost than listing another way (re-checks past what auto would pay), and ``behind``
    says whether its maintainer lagging is why."""

    reason: str
    costly: bool = False
    #: Where ``costly``: how long ago (seconds) the oldest stream record its maintainer has
    #: not applied was written (None: it had applied every record read), and how many of
    #: the records re-checked came before it began (``Replay.history``).
    behind: float | None = None
    history: int = 0
