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

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from ddbkeys.capacity import Usage
from ddbkeys.core.reads import Settable, Through
from ddbkeys.core.steps import (
    Flow,
    Pause,
    describe_table,
    get_records,
    get_shard_iterator,
    update_table,
)
from ddbkeys.core.stopping import StopFlag
from ddbkeys.drivers.sync import SyncDriver
from ddbkeys.errors import ConfigurationError, DdbKeysError, error_code
from ddbkeys.partition_keys.backfill_wait import needs_backfill
from ddbkeys.partition_keys.base import Key
from ddbkeys.partition_keys.evidence import (
    CREATED_ROUNDING,
    DAY,
    DEFAULT_REPLAY_MARGIN,
    SHARD_PREFIX,
    TRIM_SAFETY,
    ShardMark,
    advance,
    created_at,
)
from ddbkeys.partition_keys.index import MarkerIndex
from ddbkeys.partition_keys.maintain import Outcome
from ddbkeys.partition_keys.marker_plan import MarkerIndexBase, MarkerPlan, send
from ddbkeys.partition_keys.markers import BackfillReport, hashable
from ddbkeys.partition_keys.pending import (
    MAX_PENDING,
    RETRY_PENDING,
    Nonces,
    apply_flow,
    retry_flow,
    unpend_flow,
)
from ddbkeys.partition_keys.state import StatePlan, key_json
from ddbkeys.partition_keys.streams import stream_shards, streams_client_for
from ddbkeys.retry import Deadline
from ddbkeys.schema import described

__all__ = [
    "FollowPlan",
    "FollowReport",
    "FollowState",
    "StreamFollower",
    "enable_stream",
    "keys_of_records",
    "streams_client_for",
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
#: The Streams operations, sent to the Streams client (the rest to the table's).
STREAM_OPERATIONS = frozenset({"describe_stream", "get_shard_iterator", "get_records"})


class Both:
    """One client for a driver: the Streams operations go to ``streams``, the rest (and
    ``meta``) to ``client``. Either may be sync or asyncio: the driver calls what it finds."""

    def __init__(self, client: Any, streams: Any) -> None:
        self._client = client
        self._streams = streams

    def __getattr__(self, name: str) -> Any:
        return getattr(self._streams if name in STREAM_OPERATIONS else self._client, name)


class Lazy:
    """A client made by ``make()`` on first use (for :class:`Both`: a Streams client made only
    when a Streams request is sent)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._made: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._made is None:
            self._made = self._make()
        return getattr(self._made, name)


def enable_stream_flow(index: MarkerPlan) -> Flow[tuple[str, bool]]:
    """:func:`enable_stream` as a flow (each request within ``index``'s deadline)."""
    answer = yield from index.attempts(
        lambda _: send(describe_table({"TableName": index.table})), "DescribeTable", writes=False
    )
    changed = not described(answer, index.table).get("StreamSpecification", {}).get("StreamEnabled")
    if changed:
        request = update_table(
            {
                "TableName": index.table,
                "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
            }
        )
        yield from index.attempts(
            lambda _: send(request),
            "turning the stream on",
        )
    pause, ends = 0.1, Deadline(600.0, clock=index.retry.clock)
    while not _streaming(described(answer, index.table)):
        if not ends.allows(pause):
            raise DdbKeysError(
                f"Table {index.table!r} is not ACTIVE after 600 s.", table=index.table
            )
        yield Pause(pause, index.retry.sleep)
        pause = min(pause * 1.5, 5.0)
        answer = yield from index.attempts(
            lambda _: send(describe_table({"TableName": index.table})),
            "DescribeTable",
            writes=False,
        )
    return str(described(answer, index.table)["LatestStreamArn"]), changed


def _streaming(table: Mapping[str, Any]) -> bool:
    return table.get("TableStatus") == "ACTIVE" and "LatestStreamArn" in table


def enable_stream(client: object, table: str | None = None) -> tuple[str, bool]:
    """Turn ``table``'s stream on (KEYS_ONLY: a record names the item, which is all a maintainer
    needs) if it is off, and wait until the table is ACTIVE again. Returns the stream's ARN and
    whether it was turned on now (a stream already on is left as it is, whatever its view)."""
    index = MarkerIndex(client, table, deadline=60.0)
    return index._run(enable_stream_flow(index.plan))


def keys_of_records(records: Iterable[dict[str, Any]], partition_key: str) -> list[dict[str, Any]]:
    """The distinct partition keys (typed) of stream records, in the order first seen."""
    seen: dict[str, dict[str, Any]] = {}
    for record in records:
        value = record.get("dynamodb", {}).get("Keys", {}).get(partition_key)
        if value is not None:
            seen.setdefault(_hashable(value), value)
    return list(seen.values())


def _after(records: list[dict[str, Any]], skip_before: float | None) -> list[dict[str, Any]]:
    """``records`` but those created before ``skip_before`` (seconds; None: all)."""
    if skip_before is None:
        return records
    kept = []
    for record in records:
        created = created_at(record)
        if created is None or created + CREATED_ROUNDING >= skip_before:
            kept.append(record)
    return kept


def _hashable(value: dict[str, Any]) -> str:
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
    #: Since when a shard's position has stopped advancing (None: none has): a collection
    #: that did not settle could not be recorded, the pending set being full.
    held_since: float | None = None


class Event(Protocol):
    """A stop signal: a ``threading.Event`` or an ``asyncio.Event``."""

    def is_set(self) -> bool: ...


class _Stopped(Exception):
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
            raise _Stopped


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

    def forget_owed(self) -> None:
        """On a new stream: what was owed in the old one's shards is a backfill's to cover."""
        self.owed.clear()
        self.unsaved.clear()
        self.report.held_since = None


class FollowPlan:
    """How a follower follows ``index.table``'s stream and reconciles the marker of every
    collection a record names, driver and clients aside: the marker index's plan, the plan of
    its record in ``state_table`` (``store``), ``poll``, ``clock`` and ``on_batch``, built from
    settings alone. Its flows take where the follower stands (a :class:`FollowState`); the
    whole run is one flow (:meth:`follow`), which the sync :class:`StreamFollower` and
    ``ddbkeys.aio.index.StreamFollower`` run."""

    def __init__(
        self,
        index: MarkerPlan,
        *,
        state_table: str | None = None,
        poll: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_batch: Callable[[FollowReport], None] | None = None,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self.index = index
        self.store = StatePlan(state_table, deadline=index.deadline, clock=clock, retry=index.retry)
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
        this plan saw it) and its marker index checked first (a clear error when it has none)."""
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
        shards = yield from self._shards(arn)
        state.parents = {s["ShardId"]: s.get("ParentShardId") for s in shards}
        state.marks = {
            shard: mark
            for shard, mark in (saved.shards.items() if saved is not None else ())
            if mark.stream == arn
        }
        state.pending = set(saved.pending) if saved is not None else set()
        # Whether a backfill must still run for listings to prove the index (said at once).
        state.report.backfill_needed = needs_backfill(saved, arn, self.replay_margin)
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
                state.marks[shard_id] = advance(None, shard_id, arn, "start", None, now)
            else:
                state.marks[shard_id] = advance(None, shard_id, arn, now, None, now)
        yield from self._save_marks(state, list(state.marks))
        yield from self.store.update(index, name, {"maintainer": "follow"})

    @staticmethod
    def ready(state: FollowState, shard: str) -> bool:
        """Whether ``shard`` may be read: its parent (if the stream still lists it) is
        finished, so one item's records are handled in order."""
        parent = state.parents.get(shard)
        return parent is None or parent not in state.parents or parent in state.finished

    def _open_iterators(self, state: FollowState, arn: str) -> Flow[None]:
        for shard in list(state.parents):
            if shard in state.finished or shard in state.iterators or not self.ready(state, shard):
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
            if position is None:
                if self._may_have_lost(state, shard, mark):
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
        try:
            page = yield from self._ask(get_records(request), "reading a shard")
        except Exception as exc:
            if _code(exc) not in ("ExpiredIteratorException", "TrimmedDataAccessException"):
                raise
            # An iterator too old (15 minutes), or one that points before what the shard
            # still holds: taken again from the position saved, on the next round.
            del state.iterators[shard]
            return []
        records: list[dict[str, Any]] = list(page.get("Records", []))
        following = page.get("NextShardIterator")
        if following:
            state.iterators[shard] = following
        else:
            del state.iterators[shard]
            state.finished.add(shard)
        return records

    def handle(
        self, state: FollowState, arn: str, shard: str, records: list[dict[str, Any]]
    ) -> Flow[None]:
        """Apply ``records`` of ``shard``, then save its mark: only once every one of them is
        applied (a reconciliation that fails ends the run before the mark moves). A collection
        whose reconciliation does not settle is applied by recording it as pending; one that
        cannot be (the pending set full) is owed: tried again, the mark waiting for it."""
        info = yield from self.index.table_info()
        if shard in state.from_oldest and records:
            # The first records of a shard read from its oldest: when they are nearly a day
            # old, earlier ones may have been trimmed unapplied (a gap, as above).
            state.from_oldest.discard(shard)
            created = created_at(records[0])
            if created is not None and created < self.clock() - DAY + TRIM_SAFETY:
                self._gap(state, shard)
        mark = state.marks.get(shard)
        since = mark.since if mark is not None else "start"
        skip = float(since) - CLOCK_MARGIN if isinstance(since, int | float) else None
        # The collections owed from earlier batches first, then this batch's.
        todo = dict(state.owed.pop(shard, {}))
        for key in keys_of_records(_after(records, skip), info.partition_key.name):
            todo.setdefault(hashable(key), key)
        owed = yield from self._apply(state, list(todo.values()))
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

    def _apply(self, state: FollowState, keys: list[Key]) -> Flow[list[Key]]:
        """Reconcile each collection of ``keys`` (one that does not settle recorded pending);
        the pending elements known before that name one that settled are taken out. Those
        neither settled nor recorded (the pending set full)."""
        known = frozenset(state.pending)
        clashes: list[Key] = []
        settled: list[Key] = []
        owed: list[Key] = []
        for key in keys:
            applied = yield from apply_flow(
                self.index, self.store, key, self.nonce, self.max_pending, known
            )
            if applied.outcome is not None:
                count(state.report, applied.outcome)
                (clashes if applied.outcome is Outcome.CLASH else settled).append(key)
            elif applied.element is not None:
                state.pending.add(applied.element)
                state.pending.difference_update(applied.replaced)
                state.report.pending += 1
            else:
                owed.append(key)
        clashed = [key_json(k) for k in clashes]
        yield from self.store.clashes(self.index.table, self.index.name, clashed, add=True)
        gone = yield from unpend_flow(self.store, self.index.table, self.index.name, known, settled)
        state.pending.difference_update(gone)
        state.report.unpended += len(gone)
        return owed

    def retry_owed(self, state: FollowState, arn: str) -> Flow[None]:
        """After a round: the collections owed are tried again (a shard's mark waits for them
        whether more records come or not), and the pending collections this follower knows
        of (see :meth:`retry_pending`)."""
        for shard in list(state.owed):
            yield from self.handle(state, arn, shard, [])
        yield from self.retry_pending(state)

    def retry_pending(self, state: FollowState) -> Flow[None]:
        """Reconcile the pending collections this follower knows of (at most once every
        ``retry_every`` seconds): those that settle leave the set."""
        now, tried = self.clock(), state.pending_tried
        if not state.pending or (tried is not None and now - tried < self.retry_every):
            return
        state.pending_tried = now
        outcomes, gone = yield from retry_flow(self.index, self.store, state.pending)
        for outcome in outcomes:
            count(state.report, outcome)
        state.pending.difference_update(gone)
        state.report.unpended += len(gone)

    def _may_have_lost(self, state: FollowState, shard: str, mark: ShardMark | None) -> bool:
        """Whether records of ``shard``, about to be read from its oldest one with none of
        them applied yet, may have been trimmed (kept 24 hours) before now: it was begun at
        its end more than a day ago, or its parent was last read more than a day ago (the
        shard holds the records that came after the parent's)."""
        limit = self.clock() - DAY + TRIM_SAFETY
        if mark is not None and isinstance(mark.since, int | float):
            return float(mark.since) < limit
        parent = state.marks.get(state.parents.get(shard) or "")
        return parent is not None and bool(parent.marks) and parent.marks[-1][1] < limit

    def _gap(self, state: FollowState, shard: str) -> None:
        """Records of ``shard`` were lost before this follower applied them: said in its mark."""
        mark = state.marks.get(shard)
        if mark is not None:
            state.marks[shard] = replace(mark, gap=self.clock())

    def _save_marks(self, state: FollowState, shards: list[str]) -> Flow[None]:
        values = {SHARD_PREFIX + s: state.marks[s].to_json() for s in shards}
        yield from self.store.update(self.index.table, self.index.name, values)

    def _caught_up(self, state: FollowState, arn: str, began: float, now: float) -> Flow[None]:
        """A round that began at ``began`` found every open shard read to its tip."""
        state.report.caught_up = True
        # As of the round's start, not its end: a record written while the round read the
        # other shards may lie past a shard already read.
        state.report.caught_up_at = began
        # A shard with nothing new keeps its position, said again now (true: nothing after it
        # as of now), so that a quiet shard's mark does not grow a day old while it runs.
        quiet = [
            shard
            for shard, mark in state.marks.items()
            if shard in state.iterators and mark.marks and now - mark.marks[-1][1] > REFRESH
        ]
        for shard in quiet:
            state.marks[shard] = advance(
                state.marks[shard], shard, arn, state.marks[shard].since, None, now
            )
        if quiet:
            yield from self._save_marks(state, quiet)

    def follow(
        self, state: FollowState, stop: StopFlag, until_caught_up: bool, from_start: bool
    ) -> Flow[FollowReport]:
        """The whole run: until ``stop`` is set, or (``until_caught_up``) until every open
        shard has been read to its end once. A shard's mark is saved after each batch.
        Nothing is written unless the marker index is there (keyed on the marker attribute,
        KEYS_ONLY, ACTIVE)."""
        arn = yield from self.stream_arn()
        state.iterators.clear()  # a new run goes on from the marks saved
        state.finished.clear()
        yield from self.start(state, arn, from_start)
        discovered = self.clock()
        while not stop.requested:
            began = self.clock()
            yield from self._open_iterators(state, arn)
            # At the end only when every shard was read and gave nothing: a shard that ended
            # (its children come next) or whose iterator expired (taken again next round) is
            # not the end of the stream.
            at_end, ended = True, False
            for shard in list(state.iterators):
                records = yield from self.read(state, shard)
                if records or shard in state.finished:
                    yield from self.handle(state, arn, shard, records)
                    if self.on_batch is not None:
                        self.on_batch(state.report)
                if records or shard not in state.iterators:
                    at_end = False
                ended = ended or shard in state.finished
                if stop.requested:
                    break
            if not stop.requested:
                yield from self.retry_owed(state, arn)
            now = self.clock()
            if at_end and not stop.requested:
                yield from self._caught_up(state, arn, began, now)
                if until_caught_up:
                    break
                yield Pause(self.poll, stop=stop)
            if now - discovered >= DISCOVER or ended:
                # None: the stream is off (as between the two updates that change its view
                # type). The old stream is read to its end and the table looked at again: the
                # follower goes on, and a listing's proof of the index says what it missed.
                latest = yield from self.latest_stream()
                off, state.report.stream_off_since = state.report.stream_off_since, None
                if latest is None:
                    state.report.stream_off_since = off or now
                    if off is None and self.on_batch is not None:
                        self.on_batch(state.report)  # (said once)
                elif latest != arn:
                    # (Checked again as at a first start, on the table as it is now: one made
                    # anew under the same name may be keyed otherwise, or have no index.)
                    yield from self.index.maintained()
                    # The stream was turned off and on: a new stream, begun anew (from its
                    # end, as a first start: only a backfill begun after counts).
                    arn = latest
                    state.iterators.clear()
                    state.finished.clear()
                    state.marks = {}
                    state.forget_owed()
                    yield from self.start(state, arn, False)
                shards = yield from self._shards(arn)
                state.parents = {s["ShardId"]: s.get("ParentShardId") for s in shards}
                discovered = now
        return state.report


class FollowerBase:
    """What both forms of ``StreamFollower`` share: its :class:`FollowPlan` (``plan``), where it
    stands (``position``, a :class:`FollowState`: kept from one run to the next), the marker
    index whose client it writes with (``index``) and its Streams client (``streams``). Nothing
    is sent by the constructor."""

    def __init__(
        self,
        index: MarkerIndexBase,
        *,
        streams: Any = None,
        state_table: str | None = None,
        poll: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_batch: Callable[[FollowReport], None] | None = None,
        backfill: bool = False,
        replay_margin: float = DEFAULT_REPLAY_MARGIN,
        on_backfill: Callable[[str], None] | None = None,
    ) -> None:
        self.index = index
        self.streams = streams if streams is not None else self._default_streams(index)
        self.plan = FollowPlan(
            index.plan, state_table=state_table, poll=poll, clock=clock, on_batch=on_batch
        )
        self.position = FollowState()
        self.plan.replay_margin = replay_margin
        #: Whether ``run`` also backfills the index (see ``follow_backfill``), for listings
        #: with this ``replay_margin``; ``on_backfill`` is told what that does, a line each time.
        self.backfill = backfill
        self.replay_margin = replay_margin
        self.on_backfill = on_backfill

    def _backfilling(self, stop: StopFlag, once: bool) -> Flow[None]:
        """The backfill beside the following (``backfill=True``), a flow of its own."""
        from ddbkeys.partition_keys.follow_backfill import keep_backfilled  # noqa: PLC0415

        return keep_backfilled(
            self.plan, self.report, self.replay_margin, stop, self.on_backfill, once=once
        )

    def _default_streams(self, index: MarkerIndexBase) -> Any:
        """The Streams client when none is given: one like the index's client."""
        return streams_client_for(index.client, index.table)

    report: Through[FollowReport] = Through(
        "position", "What it did so far: records and batches handled, and what they did to markers."
    )

    # The settings it was made with, as before they moved to its plan (read and set there).
    poll: Settable[float] = Settable("plan")
    on_batch: Settable[Callable[[FollowReport], None] | None] = Settable("plan")
    clock: Through[Callable[[], float]] = Through("plan")
    state = property(lambda self: self.plan.store, doc="The plan of its record (state table).")


class StreamFollower(FollowerBase):
    """Follows ``index.table``'s stream and reconciles the marker of every collection a record
    names. ``run`` until ``stop`` is set (or, with ``until_caught_up``, until every open shard
    has been read to its end once).

    ``run`` refuses (a :class:`~ddbkeys.errors.ConfigurationError`, before anything is
    written) unless the table has the index ``index.name``, KEYS_ONLY and ACTIVE. The marker
    attribute is that index's own key: an ``index`` made without ``marker_attribute=`` takes it, and
    one made with another attribute is refused.

    On the first run (or when the table has a new stream), reading starts at the stream's end
    (``from_start=False``) or at its oldest record (``TRIM_HORIZON``, up to 24 hours back); the
    time it started is recorded as when the maintainer began covering the stream, and a
    backfill begun after it makes the index trustworthy (see ``state.vouch``). ``streams`` is a
    DynamoDB Streams client (by default one on the index's client's endpoint and credentials).

    With ``backfill=True`` it also backfills the index beside the following (a thread of its
    own; a task in ``ddbkeys.aio``), once ``replay_margin`` seconds have passed since its first
    position, so that listings with that margin can prove the index: once per stream, and not
    again on a restart while a backfill that counts is recorded (see ``follow_backfill``).
    ``on_backfill`` is told what that backfill does, a line each time; ``report.backfills``,
    ``report.backfill`` and ``report.backfill_state`` say it too. With ``until_caught_up``,
    ``run`` then returns only once that backfill is done (the margin, then the backfill).
    """

    def run(
        self,
        stop: threading.Event | None = None,
        *,
        until_caught_up: bool = False,
        from_start: bool = False,
    ) -> FollowReport:
        """Follow the stream until ``stop`` is set, or (``until_caught_up``) until every open
        shard has been read to its end once. The checkpoint is saved after every batch."""
        driver = SyncDriver(Both(self.index.client, self.streams), self.index.usage)
        stop = stop or threading.Event()
        flag = StopOn(stop)
        ended = threading.Event()
        beside = self._backfill_thread(stop, ended, until_caught_up) if self.backfill else None
        try:
            return driver.run(self.plan.follow(self.position, flag, until_caught_up, from_start))
        except _Stopped:
            return self.report
        finally:
            if beside is not None:
                if not until_caught_up:  # (caught up: its one backfill is waited for)
                    ended.set()
                beside.join()

    def _backfill_thread(
        self, stop: threading.Event, ended: threading.Event, once: bool
    ) -> threading.Thread:
        """A thread that runs :meth:`_backfilling` until ``stop`` or ``ended`` is set."""
        flag = StopOn(_Either(stop, ended))
        flow = self._backfilling(flag, once)

        def run() -> None:
            try:
                # (the Streams client too: a read-mode backfill reads the stream)
                SyncDriver(Both(self.index.client, self.streams), Usage()).run(flow)
            except _Stopped:
                pass
            except Exception as exc:  # said, not lost in a thread
                self.report.backfill_state = "failed"
                if self.on_backfill is not None:
                    self.on_backfill(f"backfill failed: {exc}")

        thread = threading.Thread(target=run, name="ddbkeys-follow-backfill", daemon=True)
        thread.start()
        return thread


class _Either:
    """Set when either event is (a stop signal for :class:`StopOn`)."""

    def __init__(self, first: Event, second: Event) -> None:
        self.first, self.second = first, second

    def is_set(self) -> bool:
        return self.first.is_set() or self.second.is_set()


def count(report: FollowReport, outcome: Outcome) -> None:
    """Add what one reconciliation did to ``report``."""
    report.marked += outcome is Outcome.MARKED
    report.unmarked += outcome is Outcome.UNMARKED
    report.clashes += outcome is Outcome.CLASH


def _code(exc: BaseException) -> str | None:
    return error_code(getattr(exc, "cause", None) or exc)
