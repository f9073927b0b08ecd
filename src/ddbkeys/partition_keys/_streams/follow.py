"""``index follow``: keep the markers right by reading the table's stream (every shard, shard
splits, expired iterators), for servers, containers and DynamoDB Local (which has Streams but no
Lambda triggers). The same reconciliation as the Lambda handler (``maintain.reconcile``).

Each shard is read in order; a child shard (after a split) only once its parent is finished, so
one item's records are handled in order. Records of one batch are grouped by collection and each
collection is reconciled once. The position in every shard (the last sequence number handled) is
saved in the state table after each batch, so a follower killed at any moment goes on from
there: the records after its last save are handled again, which reconciliation makes harmless.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from ddbkeys._core.steps import (
    Flow,
    Pause,
    get_records,
    get_shard_iterator,
)
from ddbkeys._core.stopping import StopFlag
from ddbkeys._errors import ConfigurationError, error_code
from ddbkeys.partition_keys._index.backfill_wait import markers_checked, needs_backfill
from ddbkeys.partition_keys._index.marker_core import MarkerCore, send
from ddbkeys.partition_keys._index.markers import hashable, index_gone
from ddbkeys.partition_keys._index.pending import (
    MAX_PENDING,
    RETRY_PENDING,
    Nonces,
)
from ddbkeys.partition_keys._index.state import StateCore
from ddbkeys.partition_keys._proof.evidence import (
    DEFAULT_REPLAY_MARGIN,
    SHARD_PREFIX,
    nearly_a_day_old,
)
from ddbkeys.partition_keys._proof.marks import advance, created_at
from ddbkeys.partition_keys._streams.follow_apply import apply_keys, retry_pending
from ddbkeys.partition_keys._streams.follow_state import (
    FollowReport,
    FollowState,
    covered_since,
    gone_marks,
    keys_of_records,
    may_have_lost,
    note_page,
    ready,
    records_after,
    said_again,
    took,
)
from ddbkeys.partition_keys._streams.streams import stream_shards

__all__ = [
    "FollowCore",
    "FollowReport",
    "FollowState",
    "keys_of_records",
]

T = TypeVar("T")
LOG = logging.getLogger("ddbkeys")

#: Records created this long (seconds) before a follower began reading a shard at its end are
#: history the backfill covers (the stream's ApproximateCreationDateTime is rounded down to
#: the second, and the clocks may differ a little).
CLOCK_MARGIN = 5.0
#: How old (seconds) a quiet shard's mark grows before the follower, caught up, says it again.
REFRESH = 3600.0
#: How often (seconds) it asks for the stream's shards again, to find new ones.
DISCOVER = 10.0


class FollowCore:
    """How a follower follows ``index.table``'s stream and reconciles the marker of every
    collection a record names, driver and clients aside: the marker index's core, the core of
    its record in ``state_table`` (``store``), ``poll``, ``clock`` and ``on_batch``, built from
    settings alone. Its flows take where the follower stands (a :class:`FollowState`); the
    whole run is one flow (:meth:`follow`), which the sync :class:`StreamFollower` and
    ``ddbkeys.aio._index.StreamFollower`` run."""

    def __init__(
        self,
        index: MarkerCore,
        *,
        state_table: str | None = None,
        poll: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_batch: Callable[[FollowReport], None] | None = None,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self.index = index
        self.store = StateCore(state_table, deadline=index.deadline, clock=clock, retry=index.retry)
        self.poll = poll
        self.clock = clock
        self.on_batch = on_batch
        #: The replay margin of the listings it serves (``backfill_needed``, ``--backfill``).
        self.replay_margin = DEFAULT_REPLAY_MARGIN
        #: The most pending collections it records (see ``pending.MAX_PENDING``), and how often
        #: (seconds) it tries those it knows of again.
        self.max_pending = max_pending
        self.retry_every = RETRY_PENDING
        self.nonce = Nonces()

    # --- the stream ---------------------------------------------------------------------------

    def _ask(self, request: Any, what: str) -> Flow[Any]:
        return self.index.attempts(lambda _: send(request), what, writes=False)

    def stream_arn(self) -> Flow[str]:
        """At a start: the table's stream, the table described now (not as an earlier run of
        this follower saw it) and its marker index checked first (a clear error when it has
        none)."""
        arn = yield from self.latest_stream()
        yield from self.index.maintained()
        if arn is None:
            table = self.index.table
            raise ConfigurationError(
                f"Table {table!r} has no stream: turn it on with `ddbkeys "
                f"partition-keys index stream -t {table}`.",
                table=table,
            )
        return arn

    def latest_stream(self) -> Flow[str | None]:
        """The table's stream, None while it has none; the table described now (and kept: a
        table made anew under the same name has another key schema and index, maybe)."""
        description = yield from self.index.describe()
        if not description.get("StreamSpecification", {}).get("StreamEnabled"):
            return None
        return str(description["LatestStreamArn"])

    def _shards(self, arn: str) -> Flow[list[dict[str, Any]]]:
        return stream_shards(lambda request: self._ask(request, "reading the stream's shards"), arn)

    def _iterator(self, arn: str, shard: str, kind: str, sequence: str | None = None) -> Flow[str]:
        request: dict[str, Any] = {"StreamArn": arn, "ShardId": shard, "ShardIteratorType": kind}
        if sequence:
            request["SequenceNumber"] = sequence
        answer = yield from self._ask(get_shard_iterator(request), "opening a shard")
        return str(answer["ShardIterator"])

    # --- the loop -----------------------------------------------------------------------------

    def start(self, state: FollowState, arn: str, from_start: bool) -> Flow[None]:
        """Load the marks saved under this stream, or begin covering it now."""
        index, name = self.index.table, self.index.name
        yield from self.store.ensure()
        saved = yield from self.store.load(index, name)
        yield from markers_checked(self.index, saved)  # (else a second set of markers)
        shards = yield from self._shards(arn)
        state.parents = {s["ShardId"]: s.get("ParentShardId") for s in shards}
        # (not pruned here: marks of shards long gone still say this is no first start)
        known = saved.shards if saved is not None else {}
        # Without the Lambda handler's ``failed`` (its batch under way): saved back after that
        # batch ended, it read as a batch given up on (its own record keeps what it needs).
        state.marks = {s: replace(m, failed=None) for s, m in known.items() if m.stream == arn}
        state.pending = set(saved.pending) if saved is not None else set()
        state.saves = saved.saves if saved is not None else None
        # Whether a backfill must still run for listings to prove the index (said at once).
        # (not while another backfill that can count is at work: helper-73 F4, a second
        # follower said to run `index backfill` while status said nothing was to be run)
        state.report.backfill_needed = needs_backfill(
            saved, arn, self.replay_margin, now=self.clock()
        )
        if self.on_batch is not None:
            self.on_batch(state.report)
        if state.marks:
            return
        # A first start under this stream: every shard is named now. A closed shard holds
        # history only (before now), which the backfill covers: marked at its end. An open one
        # is read from its end (its records from now on), or with from_start from its oldest.
        if not from_start:  # open first: a write before ``now`` below is covered by a backfill
            for shard in shards:
                if "EndingSequenceNumber" not in shard.get("SequenceNumberRange", {}):
                    shard_id = str(shard["ShardId"])
                    state.iterators[shard_id] = yield from self._iterator(arn, shard_id, "LATEST")
        now = self.clock()
        for shard in shards:
            ending = shard.get("SequenceNumberRange", {}).get("EndingSequenceNumber")
            shard_id = str(shard["ShardId"])
            if ending is not None:
                state.marks[shard_id] = advance(None, shard_id, arn, now, str(ending), now)
                state.finished.add(shard_id)
            elif from_start:
                since = covered_since(shard_id, now)
                state.marks[shard_id] = advance(None, shard_id, arn, since, None, now)
            else:
                state.marks[shard_id] = advance(None, shard_id, arn, now, None, now)
        yield from self._save_marks(state, list(state.marks))
        yield from self.store.update(index, name, {"maintainer": "follow"})

    def _open_iterators(self, state: FollowState, arn: str) -> Flow[None]:
        for shard in list(state.parents):
            if shard in state.finished or shard in state.iterators or not ready(state, shard):
                continue
            mark = state.marks.get(shard)
            position = mark.marks[-1][0] if mark is not None and mark.marks else None
            if mark is None:
                # Found since. A child of a shard this follower named holds the records that
                # came after its parent's: every one is applied, from its first. Any other
                # shard may hold records nobody applied (or that were trimmed): covered from
                # now, so only a backfill begun after this counts for it.
                now = self.clock()
                child = state.parents.get(shard) in state.marks
                state.marks[shard] = advance(None, shard, arn, "start" if child else now, None, now)
                yield from self._save_marks(state, [shard])  # (the record never left without)
            if position is None:
                if may_have_lost(state, shard, mark, self.clock()):
                    self._gap(state, shard)
                state.iterators[shard] = yield from self._iterator(arn, shard, "TRIM_HORIZON")
                state.from_oldest.add(shard)
                continue
            try:
                state.iterators[shard] = yield from self._iterator(
                    arn, shard, "AFTER_SEQUENCE_NUMBER", position
                )
            except Exception as exc:
                if _code(exc) != "TrimmedDataAccessException":
                    raise
                # Stopped for longer than the stream keeps records (24 hours): some were never
                # applied. Recorded as a gap in the shard's mark (listings decline until a
                # backfill begun after it), and the follower goes on from the oldest record.
                self._gap(state, shard)
                state.iterators[shard] = yield from self._iterator(arn, shard, "TRIM_HORIZON")

    def read(self, state: FollowState, shard: str) -> Flow[list[dict[str, Any]]]:
        """One GetRecords on ``shard``; [] at its end for now. A finished shard is dropped."""
        request = {"ShardIterator": state.iterators[shard], "Limit": 1000}
        began = self.clock()
        try:
            page = yield from self._ask(get_records(request), "reading a shard")
        except Exception as exc:
            if _code(exc) not in ("ExpiredIteratorException", "TrimmedDataAccessException"):
                raise
            # An iterator too old (15 minutes), or one that points before what the shard
            # still holds: taken again from the position saved, on the next round.
            del state.iterators[shard]
            state.empty_reads.pop(shard, None)  # (a new iterator's pages count anew)
            return []
        records = took(state, shard, page)
        note_page(state, shard, records, began)
        return records

    def handle(
        self,
        state: FollowState,
        arn: str,
        shard: str,
        records: list[dict[str, Any]],
        stop: StopFlag | None = None,
    ) -> Flow[None]:
        """Apply ``records`` of ``shard``, then save its mark: only once every one of them is
        applied (a reconciliation that fails ends the run before the mark moves). A collection
        whose reconciliation does not settle is applied by recording it as pending; one that
        cannot be (the pending set full) is owed: tried again, the mark waiting for it. Once
        ``stop`` is set, it stops between collections, the mark where it was: the next run
        reads the batch again (applying a record twice changes nothing)."""
        info = yield from self.index.table_info()
        if shard in state.from_oldest and records:
            # The first records of a shard read from its oldest: when they are nearly a day
            # old, earlier ones may have been trimmed unapplied (a gap, as above).
            state.from_oldest.discard(shard)
            created = created_at(records[0])
            if created is not None and nearly_a_day_old(created, self.clock()):
                self._gap(state, shard)
        mark = state.marks.get(shard)
        since = mark.since if mark is not None else "start"
        skip = float(since) - CLOCK_MARGIN if isinstance(since, int | float) else None
        # The collections owed from earlier batches first, then this batch's.
        todo = dict(state.owed.pop(shard, {}))
        for key in keys_of_records(records_after(records, skip), info.partition_key.name):
            todo.setdefault(hashable(key), key)
        owed = yield from apply_keys(self, state, list(todo.values()), stop)
        if stop is not None and stop.requested:
            state.report.cut_short = len(records)
            return
        read_to = state.unsaved.pop(shard, None)
        last = str(records[-1]["dynamodb"]["SequenceNumber"]) if records else read_to
        if owed:
            # Not all applied: the shard's mark stays where it is (see pending's docstring).
            state.owed[shard] = {hashable(k): k for k in owed}
            if last is not None:
                state.unsaved[shard] = last
            if state.report.held_since is None:
                state.report.held_since = self.clock()
                LOG.warning(
                    "ddbkeys: the pending set of index %s of %s is full: the position in shard "
                    "%s stops advancing until its collection(s) settle",
                    self.index.name,
                    self.index.table,
                    shard,
                )
        else:
            state.marks[shard] = advance(mark, shard, arn, since, last, self.clock())
            yield from self._save_marks(state, [shard])
            if not state.owed:
                state.report.held_since = None
        state.report.records += len(records)
        state.report.batches += 1

    def retry_owed(self, state: FollowState, arn: str) -> Flow[None]:
        """After a round: the collections owed are tried again (a shard's mark waits for them
        whether more records come or not), and the pending collections this follower knows
        of (see ``follow_apply.retry_pending``)."""
        for shard in list(state.owed):
            yield from self.handle(state, arn, shard, [])
        yield from retry_pending(self, state)

    def _gap(self, state: FollowState, shard: str) -> None:
        """Records of ``shard`` were lost before this follower applied them: said in its mark."""
        mark = state.marks.get(shard)
        if mark is not None:
            state.marks[shard] = replace(mark, gap=self.clock())

    def _prune(self, state: FollowState, arn: str, now: float) -> Flow[None]:
        """Take the marks of shards a day gone (``gone_marks``) off the record and ``state``."""
        gone = gone_marks(state.marks, state.parents, arn, now)
        state.marks = {s: m for s, m in state.marks.items() if s not in gone}
        if gone:
            remove = tuple(SHARD_PREFIX + s for s in gone)
            yield from self.store.update(self.index.table, self.index.name, {}, remove)

    def _save_marks(self, state: FollowState, shards: list[str]) -> Flow[None]:
        """Save the marks of ``shards``: not where the record holds fewer saves than this
        follower saw (put back: ``state.put_back``, and nothing is written until ``follow``
        has begun again from the record)."""
        if not state.put_back:
            values = {SHARD_PREFIX + s: state.marks[s].to_json() for s in shards}
            table, name = self.index.table, self.index.name
            saves = yield from self.store.save_marks(table, name, values, state.saves)
            state.put_back, state.saves = saves is None, saves

    def _anew(self, state: FollowState, arn: str) -> Flow[None]:
        """Begin again under ``arn`` from the marks the record holds (none: a first start)."""
        state.iterators.clear()
        state.empty_reads.clear()
        state.finished.clear()
        state.marks = {}
        state.forget_owed()
        yield from self.start(state, arn, False)

    def _caught_up(self, state: FollowState, arn: str, began: float, now: float) -> Flow[None]:
        """A round that began at ``began`` found every open shard read to its tip."""
        state.report.caught_up = True
        # As of the round's start, not its end: a record written while the round read the
        # other shards may lie past a shard already read.
        state.report.caught_up_at = began
        # A shard with nothing new keeps its position, said again now (true: nothing after it
        # as of now), so that a quiet shard's mark does not grow a day old while it runs; one
        # begun at its end with no record applied yet, every half margin at the tip it read,
        # so that a listing's replay there moves on past what came before the follower began.
        quiet = said_again(state, arn, now, REFRESH, self.replay_margin / 2)
        if quiet:
            yield from self._save_marks(state, quiet)

    def _round(self, state: FollowState, arn: str, stop: StopFlag) -> Flow[tuple[bool, bool]]:
        """Read each open shard once and apply what it gave: whether every shard was at its
        end (read, and gave nothing: a shard that ended, its children next, or whose iterator
        expired, taken again next round, is not the end of the stream), and whether one ended."""
        at_end, ended = True, False
        for shard in list(state.iterators):
            records = yield from self.read(state, shard)
            if records or shard in state.finished:
                yield from self.handle(state, arn, shard, records, stop)
                if self.on_batch is not None:
                    self.on_batch(state.report)
            if records or shard not in state.iterators:
                at_end = False
            ended = ended or shard in state.finished
            if stop.requested or state.put_back:
                break
        return at_end, ended

    def _discover(self, state: FollowState, arn: str, now: float) -> Flow[str]:
        """Look at the table's stream again: its shards now, or a new stream (turned off and
        on: begun anew), or none (off: said once, and waited for). The stream followed next."""
        # None: the stream is off (as between the two updates that change its view type). The
        # old stream is read to its end and the table looked at again: the follower goes on,
        # and a listing's proof of the index says what it missed.
        latest = yield from self.latest_stream()
        if self.index.found:  # (an index dropped: stopped within DISCOVER s, writes or none)
            index_gone((yield from self.index.table_info()), self.index.name)
        off, state.report.stream_off_since = state.report.stream_off_since, None
        if latest is None:
            state.report.stream_off_since = off or now
            if off is None and self.on_batch is not None:
                self.on_batch(state.report)  # (said once)
        elif latest != arn:
            # (Checked again as at a first start, on the table as it is now: one made anew
            # under the same name may be keyed otherwise, or have no index.)
            yield from self.index.maintained()
            # The stream was turned off and on: a new stream, begun anew (from its end, as a
            # first start: only a backfill begun after counts).
            arn = latest
            yield from self._anew(state, arn)
        shards = yield from self._shards(arn)
        state.parents = {s["ShardId"]: s.get("ParentShardId") for s in shards}
        yield from self._prune(state, arn, now)
        return arn

    def follow(
        self,
        state: FollowState,
        stop: StopFlag,
        until_caught_up: bool,
        from_start: bool,
        after: Callable[[], bool] | None = None,
    ) -> Flow[FollowReport]:
        """Until ``stop`` is set, or (``until_caught_up``) every open shard was read to its end
        in a round begun once ``after()`` held (a backfill beside it is over). A shard's mark is
        saved after each batch; nothing is written unless the marker index is there."""
        arn = yield from self.stream_arn()
        state.iterators.clear()  # a new run goes on from the marks saved
        state.empty_reads.clear()
        state.finished.clear()
        yield from self.start(state, arn, from_start)
        discovered = self.clock()
        while not stop.requested:
            began = self.clock()
            over = after is None or after()  # (asked before the round: it reads what came since)
            yield from self._open_iterators(state, arn)
            at_end, ended = yield from self._round(state, arn, stop)
            if not (stop.requested or state.put_back):  # (put back: its marks would not save)
                yield from self.retry_owed(state, arn)
            if state.put_back:
                # The record holds fewer saves than this follower made (see _save_marks): put
                # back from an older copy. It goes on from the marks restored, so the records
                # after them are applied again: a clash or pending collection the copy lacks
                # is met, and recorded, again.
                LOG.warning(
                    "ddbkeys: the record of index %s of %s was put back (restored from an older "
                    "copy?): the follower goes on from its marks",
                    self.index.name,
                    self.index.table,
                )
                state.put_back, state.report.put_back = False, state.report.put_back + 1
                yield from self._anew(state, arn)
                continue
            now = self.clock()
            if at_end and not stop.requested:
                yield from self._caught_up(state, arn, began, now)
                if until_caught_up and over:
                    break
                yield Pause(self.poll, stop=stop)
            if now - discovered >= DISCOVER or ended:
                arn = yield from self._discover(state, arn, now)
                discovered = now
        return state.report


def _code(exc: BaseException) -> str | None:
    return error_code(getattr(exc, "cause", None) or exc)
