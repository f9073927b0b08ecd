"""The actors of the proof's schedules, each ddbkeys' own code run against a
:class:`~tests.support.proof_world.World`: the follower (``FollowCore.follow``) and the
backfill (``backfill_flow``) stepped one request at a time, the Lambda handler
(``StreamHandler.handle``) fed by a model of Lambda's event source mapping, and the proven
listing (``load_evidence``, ``replay_flow`` and ``ReplayedIndexMethod``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

from ddbkeys._capacity import Usage
from ddbkeys._core.steps import Emit, Flow, Pause, Request, Step
from ddbkeys._core.stopping import StopFlag
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._retry import RetryPolicy
from ddbkeys.partition_keys._index.backfill import backfill_flow, repair_flow
from ddbkeys.partition_keys._index.backfill_read import Controls
from ddbkeys.partition_keys._index.index import MarkerIndex
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._index.pending import MAX_PENDING, Nonces
from ddbkeys.partition_keys._index.state import StateCore, StateStore
from ddbkeys.partition_keys._listing.base import Reader
from ddbkeys.partition_keys._listing.index_method import IndexMethod
from ddbkeys.partition_keys._proof.evidence import Decline
from ddbkeys.partition_keys._proof.replay import ReplayedIndexMethod, load_evidence, replay_flow
from ddbkeys.partition_keys._proof.shard_read import Replay
from ddbkeys.partition_keys._streams.follow import FollowCore
from ddbkeys.partition_keys._streams.follow_state import FollowReport, FollowState
from ddbkeys.partition_keys.aws_lambda import StreamHandler
from tests.support.proof_client import ModelClient, stream_record
from tests.support.proof_world import PK, SK, STATE, TABLE, ItemKey, Record, Shard, World


def marker(world: World) -> MarkerCore:
    """The index's settings; a pause of a flow a driver runs (``index repair``'s settling
    second) passes on the model clock."""
    return MarkerCore(TABLE, info=world.info(), deadline=None, retry=RetryPolicy(sleep=world.tick))


def record(world: World) -> StateCore:
    """The index's record in the state table, on the model clock."""
    return StateCore(STATE, deadline=None, clock=world.clock)


class Stepper:
    """Runs a flow a few requests at a time, answered by the model when each is sent; a flow
    that raises ends there (a maintainer that crashed)."""

    def __init__(self, flow: Flow[Any], client: ModelClient) -> None:
        self.flow = flow
        self.driver = SyncDriver(client, Usage())
        self.step: Step | None = None
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.report: FollowReport | None = None  # a follower's: what it did so far
        self.core: FollowCore | None = None  # a follower's core (its settings)

    def advance(self, requests: int) -> None:
        if self.done:
            return
        logger = logging.getLogger("ddbkeys")  # (what a maintainer logs is left out)
        was, logger.disabled = logger.disabled, True
        try:
            self._advance(requests)
        finally:
            logger.disabled = was

    def _advance(self, requests: int) -> None:
        try:
            if self.step is None:
                self.step = next(self.flow)
            for _ in range(requests):
                self.step = self._one(self.step)
        except StopIteration as finished:
            self.done, self.result = True, finished.value
        except Exception as exc:  # the maintainer crashed: it does no more
            self.done, self.error = True, exc

    def advance_until(self, ready: Callable[[Step], bool], most: int) -> None:
        """Advance until the next step is one ``ready`` accepts (at most ``most`` requests)."""
        for _ in range(most):
            if self.done or (self.step is not None and ready(self.step)):
                return
            self.advance(1)

    def _one(self, step: Step) -> Step:
        if isinstance(step, Request):
            return self.driver._step(self.flow, step)
        assert isinstance(step, Pause | Emit), step
        return self.flow.send(None)


def follower(
    world: World, client: ModelClient, from_start: bool, max_pending: int = MAX_PENDING
) -> Stepper:
    """``index follow``, started now (a new process: nothing in memory). Its start (up to its
    first GetRecords) runs at once: a write in the middle of it is test_proof_bugs' case."""
    stepper = follower_at_rest(world, client, from_start, max_pending)
    stepper.advance_until(_reads_records, 60)
    return stepper


def follower_at_rest(
    world: World, client: ModelClient, from_start: bool, max_pending: int = MAX_PENDING
) -> Stepper:
    """``index follow`` before its first request, to be stepped (its start too); it records
    at most ``max_pending`` pending collections."""
    core = FollowCore(
        marker(world), state_table=STATE, poll=0.0, clock=world.clock, max_pending=max_pending
    )
    core.nonce = Nonces(f"f{next(world.nonces)}")
    state = FollowState()
    stepper = Stepper(core.follow(state, StopFlag(), False, from_start), client)
    stepper.report, stepper.core = state.report, core
    return stepper


def _reads_records(step: Step) -> bool:
    return isinstance(step, Request) and step.operation == "get_records"


class BackfillStepper(Stepper):
    """``index backfill`` stepped, and what the read mode's own check needs: when it began,
    when it last wrote a marker from its eventually consistent read (a *blind* write: not
    just after a consistent read of that collection), and which of the table's versions at a
    marker's key are its own writes."""

    def __init__(self, flow: Flow[Any], client: ModelClient, world: World, mode: str) -> None:
        super().__init__(flow, client)
        self.world = world
        self.mode = mode
        self.began = world.now
        self.blind: float | None = None
        #: (the table's generation, marker's key, index in its history): a table created again
        #: starts its histories over.
        self.own: set[tuple[int, ItemKey, int]] = set()
        self._previous: str | None = None

    def _one(self, step: Step) -> Step:
        if not (isinstance(step, Request) and step.params.get("TableName") == TABLE):
            return super()._one(step)
        previous, self._previous = self._previous, step.operation
        if step.operation not in ("put_item", "delete_item"):
            return super()._one(step)
        if previous not in ("query", "get_item"):
            self.blind = self.world.now
        raw = step.params.get("Key") or step.params.get("Item") or {}
        key = (str(raw[PK]["S"]), Decimal(str(raw[SK]["N"])))
        before = len(self.world.history.get(key, []))
        following = super()._one(step)
        if len(self.world.history.get(key, [])) > before:
            self.own.add((self.world.generation, key, before))
        return following


def backfill(
    world: World,
    client: ModelClient,
    mode: str = "reconcile",
    margin: float = 5.0,
    controls: Controls | None = None,
) -> BackfillStepper:
    """``index backfill`` in ``mode`` (the read mode's window ``margin`` seconds on each
    side, ``controls`` its broken forms), recording its start and end on the model clock.
    ``force``: the adversary begins one at once, whatever the record says of one killed a
    moment before (without it, the new one would wait for the killed one's record to go
    silent, ``backfill_wait.ALIVE_FOR``, on a clock the machine moves only by its rules)."""
    flow = backfill_flow(marker(world), None, record(world), mode, margin, controls, force=True)
    return BackfillStepper(flow, client, world, mode)


def repair(world: World, client: ModelClient) -> None:
    """``index repair`` (at once): clears the recorded clashes it no longer finds."""
    SyncDriver(client, Usage()).run(repair_flow(marker(world), record(world), True))


class ModelIndex(MarkerIndex):
    """A marker index whose client is the model (not a boto3 client, which a MarkerIndex
    otherwise insists on)."""

    def _connect(self, client: object, table: str | None, deadline: float | None) -> Any:
        assert isinstance(client, ModelClient) and table is not None
        return client, table


#: The handler's function, as Lambda's context names it (``invoked_function_arn``).
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:ddbkeys-marker-handler:live"


class ModelLambda:
    """Lambda's ListEventSourceMappings over the model's trigger (its ParallelizationFactor);
    ``honest=False`` is the negative control: it always says 1."""

    def __init__(self) -> None:
        self.trigger: Trigger | None = None
        self.honest = True
        self.calls = 0

    def list_event_source_mappings(self, **request: Any) -> dict[str, Any]:
        self.calls += 1
        trigger = self.trigger
        if trigger is None or request.get("EventSourceArn") != trigger.arn:
            return {"EventSourceMappings": []}
        mapping = {
            "EventSourceArn": trigger.arn,
            "FunctionArn": FUNCTION,
            "ParallelizationFactor": trigger.factor if self.honest else 1,
        }
        return {"EventSourceMappings": [mapping]}


class ModelHandler(StreamHandler):
    """The Lambda handler, its requests answered by the model, on the model clock. One
    execution environment: it reads its trigger (``lambda_service``) at its first batch and
    every few minutes of the model's clock."""

    def __init__(self, world: World, client: ModelClient) -> None:
        self.lambda_service = ModelLambda()
        super().__init__(
            client, state_table=STATE, clock=world.clock, lambda_client=lambda: self.lambda_service
        )
        self.world = world
        self.model = client
        self.nonce = Nonces(f"h{next(world.nonces)}")

    #: False: a negative control's handler that never reads the stream to check that a batch
    #: follows on from what was applied (``lambda_follows``).
    follows_checked = True

    def _index(self, table: str) -> MarkerIndex:
        return ModelIndex(self.model, table, deadline=None, info=self.world.info())

    def _skipped(self, index: MarkerIndex, *batch: Any) -> bool:
        return self.follows_checked and super()._skipped(index, *batch)

    def _streams_of(self, index: MarkerIndex) -> Any:
        return self.model  # (the model answers the Streams operations too)

    def _state(self, index: MarkerIndex) -> StateStore:
        return StateStore(self.model, STATE, deadline=None, clock=self.world.clock)

    def handle(self, event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
        """The handler's answer, invoked as ``FUNCTION``; what it logs (each collection the
        model refused, with a traceback) is left out."""
        logger = logging.getLogger("ddbkeys")
        was, logger.disabled = logger.disabled, True
        try:
            return super().handle(event, context or SimpleNamespace(invoked_function_arn=FUNCTION))
        finally:
            logger.disabled = was


@dataclass
class Trigger:
    """Lambda's event source mapping on one stream, from TRIM_HORIZON: per shard, the last
    record it has checkpointed; a child shard only once its parent is finished. ``named``: a
    tumbling window (events carry ``shardId``). ``factor``: its ParallelizationFactor; above
    1, a later batch of a shard may be handled before an earlier one (``ahead``, ``behind``)."""

    arn: str
    named: bool
    factor: int = 1
    late: dict[str, list[int]] = field(default_factory=dict)  # shard -> a batch left behind
    positions: dict[str, int] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)
    failed: dict[str, list[int]] = field(default_factory=dict)  # shard -> its failing batch

    def ready(self, world: World) -> list[Shard]:
        stream = world.streams.get(self.arn)
        if stream is None:
            return []
        shards = stream.shards
        return [
            s
            for s in sorted(shards.values(), key=lambda s: s.start)
            if s.id not in self.finished
            and (s.parent is None or s.parent in self.finished or s.parent not in shards)
        ]

    def position(self, shard: Shard) -> int:
        """Where the mapping goes on from: its checkpoint, or past what the stream no longer
        keeps (Lambda skips records that expired, a day old)."""
        return max(self.positions.get(shard.id, shard.start - 1), shard.trimmed_to)

    def event(self, world: World, shard: Shard, records: list[Record]) -> dict[str, Any]:
        event: dict[str, Any] = {
            "Records": [
                stream_record(self.arn, r, world.created(r.written), event=True) for r in records
            ]
        }
        if self.named:
            event.update(shardId=shard.id, window={"start": "", "end": ""}, state={})
        return event

    def deliver(
        self, world: World, handler: ModelHandler, n: int, size: int, fail: int | None
    ) -> None:
        """One batch of up to ``size`` records of a ready shard; with ``fail``, that record's
        collection cannot be reconciled during the batch. The checkpoint moves to the record
        before the first failed one, or past the batch."""
        ready = self.ready(world)
        if not ready:
            return
        shard = ready[n % len(ready)]
        position = self.position(shard)
        batch = [r for r in shard.records if r.seq > position][:size]
        if not batch:
            if not shard.open:
                self.finished.add(shard.id)
            return
        if fail is not None:
            world.failing = {batch[fail % len(batch)].key[0]}
        try:
            answer = handler.handle(self.event(world, shard, batch))
        finally:
            world.failing = set()
        failures = answer["batchItemFailures"]
        if not failures:
            self.positions[shard.id] = batch[-1].seq
            self.failed.pop(shard.id, None)
            return
        first = int(failures[0]["itemIdentifier"])
        before = [r.seq for r in batch if r.seq < first]
        if before:
            self.positions[shard.id] = before[-1]
        self.failed[shard.id] = [r.seq for r in batch if r.seq >= first]

    def again(self, world: World, handler: ModelHandler, n: int, back: int, size: int) -> None:
        """At-least-once: a batch already handled, delivered again (its answer is ignored)."""
        stream = world.streams.get(self.arn)
        if stream is None or not stream.shards:
            return
        shards = sorted(stream.shards.values(), key=lambda s: s.start)
        shard = shards[n % len(shards)]
        done = [r for r in shard.records if r.seq <= self.position(shard)]
        batch = done[max(0, len(done) - back) :][:size]
        if batch:
            handler.handle(self.event(world, shard, batch))

    def ahead(self, world: World, handler: ModelHandler, n: int, size: int) -> None:
        """With a factor above 1: batch B, the last ``size`` records waiting in a shard (fewer
        if need be, leaving one at least for batch A, the ones before them), is handled first;
        A is left for :meth:`behind`, and the shard goes on past B."""
        ready = [
            s
            for s in self.ready(world)
            if s.id not in self.late and len([r for r in s.records if r.seq > self.position(s)]) > 1
        ]
        if not ready or self.factor == 1:
            return
        shard = ready[n % len(ready)]
        position = self.position(shard)
        waiting = [r for r in shard.records if r.seq > position]
        cut = len(waiting) - min(size, len(waiting) - 1)
        early, later = waiting[:cut], waiting[cut:]
        handler.handle(self.event(world, shard, later))
        self.positions[shard.id] = later[-1].seq
        self.late[shard.id] = [r.seq for r in early]

    def behind(self, world: World, handler: ModelHandler, n: int) -> None:
        """Batch A, left behind by :meth:`ahead`, handled now (its answer is ignored)."""
        stream = world.streams.get(self.arn)
        if not self.late or stream is None:
            return
        shard_id = sorted(self.late)[n % len(self.late)]
        wanted = set(self.late.pop(shard_id))
        shard = stream.shards.get(shard_id)
        if shard is not None:
            batch = [r for r in shard.records if r.seq in wanted]
            if batch:
                handler.handle(self.event(world, shard, batch))

    def dies(self, world: World, n: int, size: int) -> None:
        """A batch of up to ``size`` records of a ready shard whose every invocation ends
        before the handler writes anything (an init error, a timeout at cold start, its first
        request refused): no trace of it in the state record; the mapping holds it failed
        until it gives up (:meth:`give_up`)."""
        ready = self.ready(world)
        if not ready:
            return
        shard = ready[n % len(ready)]
        batch = [r.seq for r in shard.records if r.seq > self.position(shard)][:size]
        if batch:
            self.failed[shard.id] = batch

    def give_up(self, n: int) -> None:
        """The mapping's retry limit: a failing batch is dropped, and the shard goes on past
        it (what Lambda does after MaximumRetryAttempts, or when the records expire)."""
        if not self.failed:
            return
        shard = sorted(self.failed)[n % len(self.failed)]
        self.positions[shard] = max(self.failed.pop(shard))


@dataclass
class Verdict:
    """What the proven listing said: its keys, or why it declined."""

    keys: list[str] | None
    reason: str = ""
    replay: Replay | None = None


def listing(
    world: World,
    client: ModelClient,
    margin: float,
    *,
    segments: int = 1,
    most: int | None = None,
    recheck: bool = True,
    pending: bool = True,
) -> Verdict:
    """The listing's decision core, as ``distinct_partition_keys`` runs it for the marker
    index (``partition_keys._choose``), on the model clock: the evidence and its precheck, the
    replay (window, stream, re-checks), then the index scanned leaving the touched collections
    out and the existing ones handed out. ``recheck=False`` is a negative control: the
    index as it is, after a replay that proved it; ``pending=False`` another: a listing that
    leaves the pending collections out of its re-checks."""
    info = world.info()
    # (its requests go to the model's driver; a wait passes on the model's clock)
    reader = Reader(None, TABLE, deadline=None, retry=RetryPolicy(sleep=world.tick))
    driver = SyncDriver(client, Usage())
    core = marker(world)
    evidence, refused = driver.run(load_evidence(record(world), info, core, margin))
    if refused is not None:
        return Verdict(None, refused.reason)
    if not pending and evidence is not None:
        evidence = replace(evidence, pending=())
    result = driver.run(replay_flow(reader, core, info, evidence, margin, world.now, most))
    if isinstance(result, Decline):
        return Verdict(None, result.reason)
    method: IndexMethod = (
        ReplayedIndexMethod(info, core, result) if recheck else IndexMethod(info, core)
    )
    total = segments + 1 if recheck else segments
    keys: list[str] = []
    for segment in range(total):
        for key in driver.iterate(method.keys(reader, segment, total, None)):
            keys.append(str(key["S"]))
    return Verdict(keys, "", result)
