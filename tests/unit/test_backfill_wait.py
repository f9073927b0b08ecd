"""The backfill's waiting rule (issue 33, point 1): decided from the index's record, the stream
and the time (``readiness``), and waited out by a flow driven here by hand with a clock that
moves only when the flow pauses, so no test sleeps."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ddbkeys._core.steps import Flow, Pause, Request
from ddbkeys._errors import DdbKeysError
from ddbkeys.partition_keys._index.backfill_wait import (
    MAINTAINER_GRACE,
    NO_MAINTAINER,
    NO_STREAM,
    READY,
    WAITING,
    Readiness,
    readiness,
    wait_flow,
)
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._index.state import StateCore
from ddbkeys.partition_keys._proof.evidence import (
    SHARD_PREFIX,
    Backfill,
    Decline,
    Evidence,
    ShardMark,
)
from ddbkeys.partition_keys._proof.precheck import backfill_reason
from ddbkeys.partition_keys._proof.replay_window import replay_window
from ddbkeys.partition_keys._streams.follow_backfill import needs_backfill

ARN = "arn:aws:dynamodb:us-east-1:1:table/orders/stream/2026-01-01T00:00:00.000"
OTHER = ARN.replace("2026", "2025")


def mark(shard: str, since: str | float, *saved: float, stream: str = ARN) -> ShardMark:
    return ShardMark(shard, stream, since, tuple((None, t) for t in saved))


def evidence(*marks: ShardMark, backfill: Backfill | None = None) -> Evidence:
    return Evidence("orders", "ddbkeys-partition-keys", {m.shard: m for m in marks}, backfill)


def test_with_no_stream_nothing_can_count() -> None:
    where = readiness("orders", evidence(mark("s1", 100.0, 100.0)), None, 1000.0, 60.0)
    assert where.state == NO_STREAM and not where.counts
    assert "index stream -t orders" in where.advice()


def test_with_no_position_under_the_current_stream_there_is_no_maintainer() -> None:
    for record in (None, evidence(), evidence(mark("s1", 100.0, 100.0, stream=OTHER))):
        where = readiness("orders", record, ARN, 1000.0, 60.0)
        assert where.state == NO_MAINTAINER and not where.counts
        advice = where.advice()
        assert "ddbkeys partition-keys index follow -t orders" in advice
        assert "ddbkeys partition-keys index backfill -t orders --wait-for-maintainer" in advice


def test_a_first_position_younger_than_the_margin_is_waited_out() -> None:
    record = evidence(mark("s1", 1000.0, 1000.0))
    assert readiness("orders", record, ARN, 1001.0, 60.0) == Readiness(
        "orders", WAITING, 60.0, 59.0, 1000.0
    )
    assert readiness("orders", record, ARN, 1060.0, 60.0).state == READY
    assert readiness("orders", record, ARN, 1059.9, 60.0).state == WAITING


def test_the_wait_runs_to_the_latest_shard_begun_at_its_end() -> None:
    # A shard read from its start ("start") began with its first mark; one begun at its end
    # later moves the moment (the proof's per-shard rule, replay_window's).
    record = evidence(mark("s1", "start", 1000.0), mark("s2", 1030.0, 1030.0))
    where = readiness("orders", record, ARN, 1050.0, 60.0)
    assert (where.state, where.left, where.maintained_since) == (WAITING, 40.0, 1000.0)


def test_what_readiness_calls_ready_is_what_the_proof_accepts() -> None:
    """The rule before the backfill and the proof's after it agree at the boundary."""
    for now in (1059.0, 1060.0, 1061.0):
        record = evidence(mark("s1", 1000.0, 1000.0))
        where = readiness("orders", record, ARN, now, 60.0)
        backfill = Backfill(now, ARN, where.maintained_since, now + 5, (), None, 60.0)
        _, why = backfill_reason(evidence(*record.shards.values(), backfill=backfill), ARN, 60.0)
        assert (why is None) == where.counts, (now, why)


def test_a_listing_with_a_larger_margin_than_the_backfills_says_so() -> None:
    backfill = Backfill(1010.0, ARN, 1000.0, 1020.0, (), None, 5.0)
    _, why = backfill_reason(evidence(mark("s1", 1000.0, 1000.0), backfill=backfill), ARN, 60.0)
    assert why is not None and "begun for a replay margin of 5 s" in why
    assert "--replay-margin 60" in why


# --- the flow, driven by hand -------------------------------------------------------------------


class World:
    """The table's description and the index's record as the flow reads them; a clock that
    moves only when the flow pauses; and what happens at given times (``events``)."""

    def __init__(self, shards: dict[str, Any] | None = None, stream: str | None = ARN) -> None:
        self.now = 1000.0
        self.stream = stream
        self.shards: dict[str, Any] = shards or {}
        self.events: list[tuple[float, Any]] = []
        self.pauses: list[float] = []
        self.told: list[Readiness] = []

    def clock(self) -> float:
        return self.now

    def answer(self, request: Request) -> Any:
        if request.operation == "describe_table":
            table: dict[str, Any] = {
                "TableName": "orders",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                ],
            }
            if self.stream is not None:
                table["StreamSpecification"] = {"StreamEnabled": True}
                table["LatestStreamArn"] = self.stream
            return {"Table": table}
        assert request.operation == "get_item", request.operation
        if not self.shards:
            return {}
        item = {"id": {"S": "orders/ddbkeys-partition-keys"}}
        for shard, value in self.shards.items():
            item[SHARD_PREFIX + shard] = {"S": json.dumps(value)}
        return {"Item": item}

    def run(self, flow: Flow[Readiness]) -> Readiness:
        try:
            step = next(flow)
            while True:
                if isinstance(step, Pause):
                    self.pauses.append(step.seconds)
                    self.now += step.seconds
                    for at, change in list(self.events):
                        if self.now >= at:
                            change(self)
                            self.events.remove((at, change))
                    step = flow.send(None)
                else:
                    assert isinstance(step, Request)
                    step = flow.send(self.answer(step))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def flow(world: World, **settings: Any) -> Flow[Readiness]:
    core = MarkerCore("orders")
    store = StateCore("ddbkeys-state", clock=world.clock)
    margin = settings.pop("margin", 60.0)
    return wait_flow(core, store, margin, on_wait=world.told.append, **settings)


def saved(since: str | float, at: float) -> dict[str, Any]:
    return {"stream": ARN, "since": since, "marks": [[None, at]]}


def test_it_waits_until_the_margin_has_passed_since_the_first_position() -> None:
    world = World({"s1": saved(990.0, 990.0)})
    where = world.run(flow(world))
    assert where.state == READY and world.now == 1050.0
    assert sum(world.pauses) == 50.0 and max(world.pauses) <= 1.0  # a countdown, a tick a second
    lefts = [t.left for t in world.told if t.state == WAITING]
    assert lefts[0] == 50.0 and lefts == sorted(lefts, reverse=True)
    assert world.told[-1].state == READY


def test_no_wait_begins_at_once_and_says_it_will_not_count() -> None:
    world = World({"s1": saved(990.0, 990.0)})
    where = world.run(flow(world, wait=False))
    assert (where.state, world.pauses) == (WAITING, [])
    assert "does not count" in where.advice()


def test_with_no_maintainer_it_waits_a_moment_for_one_then_goes_on_saying_why() -> None:
    world = World()
    where = world.run(flow(world))
    assert where.state == NO_MAINTAINER
    assert sum(world.pauses) == pytest.approx(MAINTAINER_GRACE)


def test_a_maintainer_started_a_moment_before_is_waited_for_and_then_the_margin() -> None:
    world = World()
    world.events.append((1002.0, lambda w: w.shards.update({"s1": saved(1002.0, 1002.0)})))
    where = world.run(flow(world))
    assert where.state == READY and world.now == pytest.approx(1062.0)


def test_waiting_for_a_maintainer_ends_with_its_timeout_and_writes_nothing() -> None:
    world = World()
    with pytest.raises(DdbKeysError, match=r"No maintainer recorded a position .* within 30 s"):
        world.run(flow(world, for_maintainer=True, timeout=30.0))
    assert world.now == pytest.approx(1030.0)
    world = World()
    world.events.append((1100.0, lambda w: w.shards.update({"s1": saved(1100.0, 1100.0)})))
    where = world.run(flow(world, for_maintainer=True))  # no limit: the Lambda path
    assert where.state == READY and world.now == pytest.approx(1160.0)


def test_a_new_stream_during_the_wait_moves_the_moment() -> None:
    world = World({"s1": saved(990.0, 990.0)})

    def new_stream(w: World) -> None:
        w.stream = OTHER
        w.shards = {"t1": {"stream": OTHER, "since": 1040.0, "marks": [[None, 1040.0]]}}

    world.events.append((1040.0, new_stream))
    where = world.run(flow(world))
    assert where.state == READY and world.now == pytest.approx(1100.0)


def test_with_the_stream_off_it_does_not_wait() -> None:
    world = World(stream=None)
    assert world.run(flow(world)).state == NO_STREAM and world.pauses == []


# --- index follow --backfill: when to backfill ------------------------------------------------


def finished(started: float, **changes: Any) -> Backfill:
    fields: dict[str, Any] = {
        "started": started,
        "stream": ARN,
        "maintained_since": 1000.0,
        "finished": started + 10,
        "clashes": (),
        "markers": None,
        "margin": 60.0,
    }
    fields.update(changes)
    return Backfill(**fields)


@pytest.mark.parametrize(
    ("record", "needed"),
    [
        (None, True),
        (evidence(mark("s1", 1000.0, 1000.0)), True),
        (evidence(mark("s1", 1000.0, 1000.0), backfill=finished(1070.0)), False),
        (evidence(mark("s1", 1000.0, 1000.0), backfill=finished(1030.0)), True),  # too soon
        (evidence(mark("s1", 1000.0, 1000.0), backfill=finished(1070.0, finished=None)), True),
        (evidence(mark("s1", 1000.0, 1000.0), backfill=finished(1070.0, stream=OTHER)), True),
        (evidence(mark("s1", 1000.0, 1000.0), backfill=finished(1070.0, clashes=("x",))), False),
    ],
)
def test_a_follower_backfills_only_where_no_record_lets_a_listing_prove_the_index(
    record: Evidence | None, needed: bool
) -> None:
    assert needs_backfill(record, ARN, 60.0) is needed


def test_records_lost_since_the_backfill_call_for_another() -> None:
    lost = ShardMark("s1", ARN, 1000.0, ((None, 1000.0),), gap=2000.0)
    assert needs_backfill(evidence(lost, backfill=finished(1070.0)), ARN, 60.0)
    assert not needs_backfill(evidence(lost, backfill=finished(1070.0)), None, 60.0)


def test_records_a_maintainer_lost_are_waited_out_as_the_proof_needs() -> None:
    """A gap (records lost before anyone applied them) is covered only by a backfill begun the
    margin after it: the rule waits for that, and the proof then accepts the backfill."""
    lost = ShardMark("s1", ARN, 1000.0, ((None, 1000.0),), gap=2000.0)
    where = readiness("orders", evidence(lost), ARN, 2010.0, 60.0)
    assert (where.state, where.left, where.after_gap) == (WAITING, 50.0, True)
    assert where.advice().startswith("records a maintainer lost are younger than the replay")
    for started in (2059.0, 2060.0):
        counts = readiness("orders", evidence(lost), ARN, started, 60.0).counts
        backfill = Backfill(started, ARN, 1000.0, started + 5, (), None, 60.0)
        window = replay_window(
            evidence(lost, backfill=backfill), ARN, [{"ShardId": "s1"}], started + 100, 60.0
        )
        assert isinstance(window, Decline) != counts, (started, window)
