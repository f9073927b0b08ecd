"""One backfill at a time (issue 33): a backfill at work keeps its record alive, and a second
one finds it and waits rather than read the table again. The rule (``running_backfill``,
``can_count``, ``needs_backfill(now=...)``) is pure; the flows that take the record and keep it
alive (``backfill_claim``) are driven here by hand, against a record held in memory and a clock
that moves only when the flow pauses (or when a test moves it), so no test sleeps."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ddbkeys._capacity import Usage
from ddbkeys._cli.index_backfill import show_marked
from ddbkeys._core.steps import Flow, Pause, Request
from ddbkeys._errors import DdbKeysError
from ddbkeys.partition_keys._index.backfill import backfill_flow
from ddbkeys.partition_keys._index.backfill_claim import (
    Claim,
    claim_flow,
    farewell,
    kept_alive,
    left_here,
    rewrite,
    telling,
)
from ddbkeys.partition_keys._index.backfill_wait import (
    ALIVE,
    ALIVE_FOR,
    OTHER_POLL,
    OTHER_RUNNING,
    TIP,
    Readiness,
    can_count,
    dead_in,
    needs_backfill,
    other_markers,
    running_backfill,
    unmaintained,
)
from ddbkeys.partition_keys._index.backfill_wait import at_work as at_work_reason
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._index.markers import BackfillReport
from ddbkeys.partition_keys._index.state import KEPT, StateCore, evidence_from_item
from ddbkeys.partition_keys._proof.evidence import SHARD_PREFIX, Backfill, Evidence, ShardMark

ARN = "arn:aws:dynamodb:us-east-1:1:table/orders/stream/2026-01-01T00:00:00.000"
OTHER = ARN.replace("2026", "2025")
FIRST = 1000.0  # the maintainer's first position
KEY = "orders/ddbkeys-partition-keys"


def at_work(started: float = 1100.0, **changes: Any) -> Backfill:
    """A backfill begun at ``started`` (the margin after the maintainer's first position),
    not finished, last alive then."""
    fields: dict[str, Any] = {
        "started": started,
        "stream": ARN,
        "maintained_since": FIRST,
        "margin": 60.0,
        "alive": started,
        "owner": "host-a:41 (index follow)",
    }
    fields.update(changes)
    return Backfill(**fields)


def record(backfill: Backfill | None) -> Evidence:
    mark = ShardMark("s1", ARN, FIRST, ((None, FIRST),))
    return Evidence("orders", "ddbkeys-partition-keys", {"s1": mark}, backfill)


# --- the rule ------------------------------------------------------------------------------


def test_a_backfill_alive_within_the_limit_is_at_work() -> None:
    other = at_work(alive=1200.0)
    assert running_backfill(record(other), ARN, 1200.0) == other
    assert running_backfill(record(other), ARN, 1200.0 + ALIVE_FOR) == other
    assert running_backfill(record(other), ARN, 1190.0) == other  # its host's clock ahead


def test_one_silent_for_longer_is_dead_and_in_no_ones_way() -> None:
    other = at_work(alive=1200.0)
    assert running_backfill(record(other), ARN, 1200.0 + ALIVE_FOR + 0.1) is None
    assert needs_backfill(record(other), ARN, 60.0, now=1200.0 + ALIVE_FOR + 0.1)


def test_a_record_of_an_older_ddbkeys_is_alive_from_its_start_only() -> None:
    other = at_work(alive=None)
    assert running_backfill(record(other), ARN, 1100.0 + ALIVE_FOR) == other
    assert running_backfill(record(other), ARN, 1100.0 + ALIVE_FOR + 1) is None


def test_a_finished_one_or_one_under_another_stream_is_not_at_work() -> None:
    assert running_backfill(record(at_work(finished=1150.0, alive=1150.0)), ARN, 1151.0) is None
    assert running_backfill(record(at_work(stream=OTHER)), ARN, 1101.0) is None
    assert running_backfill(record(at_work()), None, 1101.0) is None
    assert running_backfill(record(None), ARN, 1101.0) is None
    assert running_backfill(None, ARN, 1101.0) is None


def test_only_one_that_could_count_is_waited_for() -> None:
    assert can_count(at_work(), 60.0)
    assert not can_count(at_work(), 120.0)  # begun 100 s after: too soon for a 120 s margin
    assert not can_count(at_work(started=1030.0), 60.0)  # --no-wait, too early
    assert not can_count(at_work(maintained_since=None), 60.0)
    assert not can_count(at_work(uncounted="its window could not be read"), 60.0)


@pytest.mark.parametrize(
    ("backfill", "now", "needed"),
    [
        (at_work(), 1101.0, False),  # at work: waited for
        (at_work(), 1100.0 + ALIVE_FOR + 1, True),  # dead
        (at_work(started=1030.0, alive=1101.0), 1101.0, True),  # cannot count: not waited for
        (at_work(stream=OTHER), 1101.0, True),
        (at_work(finished=1150.0), 1151.0, False),  # finished, counts
    ],
)
def test_needs_backfill_with_the_time_waits_for_one_at_work(
    backfill: Backfill, now: float, needed: bool
) -> None:
    assert needs_backfill(record(backfill), ARN, 60.0, now=now) is needed
    if backfill.finished is None:  # without the time: as before, no record proves the index
        assert needs_backfill(record(backfill), ARN, 60.0)


# --- the flows, driven by hand ---------------------------------------------------------------


def entry(backfill: Backfill) -> str:
    fields = {k: v for k, v in vars(backfill).items() if k != "clashes"}
    fields["clashes"] = list(backfill.clashes)
    return json.dumps(fields, separators=(",", ":"))


class World:
    """The table's description, the index's record (its ``backfill`` entry as text) and a
    clock that moves when the flow pauses; ``events`` happen at given times."""

    def __init__(self, backfill: Backfill | None = None) -> None:
        self.now = 1101.0
        self.text = entry(backfill) if backfill is not None else None
        self.events: list[tuple[float, Callable[[World], None]]] = []
        self.pauses: list[float] = []
        self.told: list[Readiness] = []
        self.writes: list[dict[str, Any]] = []  # the entries written, in order
        self.kept: list[str] = []  # the entries kept beside them (state.KEPT), in order
        self.refuse_next = False  # the next conditional write finds another's entry
        self.lose_next_answer = False  # the next write is applied, its answer lost
        self.out = False  # every update of the record fails, as during an outage
        self.out_from_scan = False  # ... from the backfill's refused read of the table on
        self.empty = False  # the table's read answers: no items (else it is refused)
        self.before_finished: list[Callable[[World], None]] = []  # run before that write
        self.gets, self.refused_gets = 0, set[int]()  # which reads of the record are refused

    def clock(self) -> float:
        return self.now

    def put(self, backfill: Backfill) -> None:
        self.text = entry(backfill)

    def answer(self, request: Request) -> Any:
        if request.operation == "describe_table":
            return {
                "Table": {
                    "TableName": "orders",
                    "KeySchema": [
                        {"AttributeName": "pk", "KeyType": "HASH"},
                        {"AttributeName": "sk", "KeyType": "RANGE"},
                    ],
                    "AttributeDefinitions": [
                        {"AttributeName": "pk", "AttributeType": "S"},
                        {"AttributeName": "sk", "AttributeType": "S"},
                    ],
                    "StreamSpecification": {"StreamEnabled": True},
                    "LatestStreamArn": ARN,
                    "GlobalSecondaryIndexes": [
                        {
                            "IndexName": "ddbkeys-partition-keys",
                            "KeySchema": [{"AttributeName": "ddbkeys_pk", "KeyType": "HASH"}],
                            "Projection": {"ProjectionType": "KEYS_ONLY"},
                            "IndexStatus": "ACTIVE",
                        }
                    ],
                }
            }
        if request.operation == "get_item":
            self.gets += 1
            if self.gets in self.refused_gets:
                raise ClientError({"Error": {"Code": "AccessDeniedException"}}, "GetItem")
            item: dict[str, Any] = {"id": {"S": KEY}}
            item[SHARD_PREFIX + "s1"] = {
                "S": json.dumps({"stream": ARN, "since": FIRST, "marks": [[None, FIRST]]})
            }
            if self.text is not None:
                item["backfill"] = {"S": self.text}
            return {"Item": item}
        if request.operation == "put_item":  # the work's own requests (see ``work``)
            return {}
        if request.operation == "scan" and self.empty:
            return {"Items": [], "Count": 0, "ScannedCount": 0}
        if request.operation == "scan":  # a backfill's read, refused (see the test)
            self.out = self.out or self.out_from_scan
            raise ClientError(
                {"Error": {"Code": "AccessDeniedException", "Message": "not you"}}, "Scan"
            )
        assert request.operation == "update_item", request.operation
        if self.out:
            raise ClientError(
                {"Error": {"Code": "ServiceUnavailable", "Message": "out"}}, "UpdateItem"
            )
        params = request.params
        seen = params.get("ExpressionAttributeValues", {}).get(":seen", {}).get("S")
        holds = (
            seen == self.text
            if "#seen = :seen" in params["ConditionExpression"]
            else (self.text is None)
        )
        if self.refuse_next:
            self.refuse_next, holds = False, False
        if not holds:
            raise ClientError(
                {"Error": {"Code": "ConditionalCheckFailedException", "Message": "no"}},
                "UpdateItem",
            )
        names, values = params["ExpressionAttributeNames"], params["ExpressionAttributeValues"]
        sets = {a: values[":v" + k[2:]]["S"] for k, a in names.items() if k.startswith("#a")}
        new = sets["backfill"]
        if json.loads(new).get("finished") is not None:
            for check in self.before_finished:
                check(self)
        if KEPT in sets:
            self.kept.append(sets[KEPT])
        self.text = new
        self.writes.append(json.loads(new))
        if self.lose_next_answer:
            self.lose_next_answer = False
            raise ClientError(
                {"Error": {"Code": "InternalServerError", "Message": "lost"}}, "UpdateItem"
            )
        return {}

    def run(self, flow: Flow[Any]) -> Any:
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
                    continue
                assert isinstance(step, Request)
                try:
                    answer = self.answer(step)
                except ClientError as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(answer)
        except StopIteration as done:
            return done.value


def cores(world: World) -> tuple[MarkerCore, StateCore]:
    core = MarkerCore("orders")
    store = StateCore("ddbkeys-state", clock=world.clock)
    return core, store


def make(world: World) -> Callable[[str | None, Evidence | None], dict[str, Any]]:
    def entry_of(stream: str | None, saved: Evidence | None) -> dict[str, Any]:
        return {
            "started": world.now,
            "stream": stream,
            "maintained_since": FIRST,
            "finished": None,
            "margin": 60.0,
            "alive": world.now,
            "owner": "host-b:42",
        }

    return entry_of


def claim(world: World, **settings: Any) -> Claim | BackfillReport:
    core, store = cores(world)
    report = BackfillReport()
    flow = claim_flow(core, store, make(world), 60.0, report, on_wait=world.told.append, **settings)
    return world.run(flow)  # type: ignore[no-any-return]


def test_with_none_at_work_it_takes_the_record_on_the_condition_it_read() -> None:
    finished = at_work(finished=1090.0, started=1080.0, alive=1090.0)
    world = World(finished)
    got = claim(world)
    assert isinstance(got, Claim) and got.entry["owner"] == "host-b:42"
    assert world.pauses == [] and world.writes == [got.entry]
    # The finished entry it replaced is kept beside it, in the same write (the proof rests
    # on that one until this one finishes: precheck.basis).
    assert world.kept == [entry(finished)]
    dead = World(at_work())  # (not finished, silent since 1100: killed)
    dead.now = 1200.0
    assert isinstance(claim(dead), Claim) and dead.kept == []  # (an unfinished one is not)
    clashed = World(at_work(finished=1090.0, started=1080.0, alive=1090.0, clashes=("k",)))
    assert isinstance(claim(clashed), Claim) and clashed.kept == []  # (nor one that proves nothing)
    empty = World()
    assert isinstance(claim(empty), Claim) and len(empty.writes) == 1  # none there before


def test_it_waits_for_one_at_work_and_returns_its_outcome_when_it_counts() -> None:
    other = at_work()
    world = World(other)

    def alive(w: World) -> None:
        w.put(at_work(alive=w.now))

    for t in range(1110, 1200, 10):
        world.events.append((float(t), alive))
    world.events.append((1201.0, lambda w: w.put(at_work(alive=w.now, finished=w.now))))
    got = claim(world)
    assert isinstance(got, BackfillReport)
    assert got.joined is not None and got.joined.owner == other.owner and got.counts
    assert world.writes == []  # nothing written: no second read of the table
    assert set(world.pauses) == {OTHER_POLL} and world.now >= 1201.0
    assert world.told and all(t.state == OTHER_RUNNING for t in world.told)
    assert world.told[0].other == other
    assert "host-a:41 (index follow)" in world.told[0].advice()


def test_it_runs_itself_once_the_one_it_waited_for_is_dead() -> None:
    world = World(at_work())  # silent from 1100 on: a kill -9
    got = claim(world)
    assert isinstance(got, Claim)
    assert world.now > 1100.0 + ALIVE_FOR and world.now <= 1100.0 + ALIVE_FOR + OTHER_POLL
    assert [w["owner"] for w in world.writes] == ["host-b:42"]


def test_it_runs_itself_when_the_one_it_waited_for_ends_not_counting() -> None:
    world = World(at_work())
    clash = at_work(finished=1105.0, alive=1105.0, clashes=('{"S":"x"}',))
    world.events.append((1104.0, lambda w: w.put(clash)))
    got = claim(world)
    assert isinstance(got, Claim) and len(world.writes) == 1


def test_no_wait_refuses_at_once_and_writes_nothing() -> None:
    world = World(at_work())
    with pytest.raises(
        DdbKeysError, match=r"Another backfill of table 'orders' is at work \(begun"
    ):
        claim(world, wait=False)
    assert world.writes == [] and world.pauses == []


def test_force_takes_the_record_at_once() -> None:
    world = World(at_work())
    got = claim(world, force=True)
    assert isinstance(got, Claim) and world.pauses == [] and len(world.writes) == 1


def test_one_that_cannot_count_is_taken_over_not_waited_for() -> None:
    world = World(at_work(started=1030.0, alive=1100.0))  # a --no-wait one, begun too early
    assert isinstance(claim(world), Claim) and world.pauses == []


def test_two_that_begin_at_once_one_takes_the_record_the_other_waits() -> None:
    """The other's write comes between this one's read and its write: the condition fails,
    and this one reads again, finds it at work, and waits."""
    world = World()
    world.refuse_next = True
    world.events.append(
        (1101.0 + OTHER_POLL, lambda w: w.put(at_work(alive=w.now, finished=w.now)))
    )

    original = world.answer

    def answer(request: Request) -> Any:
        if request.operation == "update_item" and world.refuse_next:
            world.put(at_work(started=1101.0, alive=1101.0))  # the other one's write, first
        return original(request)

    world.answer = answer  # type: ignore[method-assign]
    got = claim(world)
    assert isinstance(got, BackfillReport) and got.joined is not None
    assert world.writes == []


def test_a_lost_answer_to_its_own_write_is_not_taken_for_another_backfill() -> None:
    world = World()
    world.lose_next_answer = True  # applied, then retried: the retry's condition fails
    got = claim(world)
    assert isinstance(got, Claim) and world.text == got.text


# --- alive while it works --------------------------------------------------------------------


def work(world: World, requests: int, every: float, pause: float = 0.0) -> Flow[str]:
    """A backfill's work as far as being alive goes: ``requests`` writes ``every`` seconds
    apart, then a ``pause``."""
    for _ in range(requests):
        world.now += every
        yield Request("put_item", {"TableName": "orders"})
    if pause:
        yield Pause(pause)
    return "done"


def kept(world: World, flow: Flow[str]) -> Any:
    core, store = cores(world)
    got = claim(world)
    assert isinstance(got, Claim)
    world.writes.clear()
    return world.run(kept_alive(flow, got, store, core))


def test_it_refreshes_alive_between_requests_at_least_every_alive_seconds() -> None:
    world = World()
    assert kept(world, work(world, 30, 3.0)) == "done"
    times = [w["alive"] for w in world.writes]
    assert len(times) == 7  # 90 s of work: refreshed at 12, 24, ... 84 s (3 s steps past 10)
    gaps = [b - a for a, b in zip([1101.0, *times], times, strict=False)]
    assert all(ALIVE <= g <= ALIVE + 3.0 for g in gaps), gaps
    assert all(w["owner"] == "host-b:42" and w["finished"] is None for w in world.writes)


def test_a_long_pause_is_cut_around_refreshes() -> None:
    world = World()
    assert kept(world, work(world, 0, 0.0, pause=65.0)) == "done"
    assert sum(world.pauses) == pytest.approx(65.0) and max(world.pauses) <= ALIVE
    assert len(world.writes) == 6  # at 10, 20, ... 60 s


def test_a_refresh_that_finds_the_record_taken_ends_the_work() -> None:
    world = World()
    closed: list[bool] = []

    def endless() -> Flow[str]:
        try:
            while True:
                world.now += 5.0
                yield Request("put_item", {"TableName": "orders"})
        finally:
            closed.append(True)

    flow = endless()
    core, store = cores(world)
    got = claim(world)
    assert isinstance(got, Claim)
    world.put(at_work(started=1102.0, alive=1102.0, owner="host-c:7"))  # --force elsewhere
    with pytest.raises(DdbKeysError, match=r"Another backfill \(begun .* by host-c:7\) took over"):
        world.run(kept_alive(flow, got, store, core))
    assert closed == [True]


def test_a_backfill_that_fails_says_it_stopped_and_is_in_no_ones_way() -> None:
    """(A follower's next try, 10 s later, then need not wait for its alive time to age.)"""
    world = World()
    core, store = cores(world)
    with pytest.raises(DdbKeysError, match="AccessDenied"):
        world.run(backfill_flow(core, None, store, "reconcile", 60.0))
    last = world.writes[-1]
    assert last["stopped"] == world.now and last["finished"] is None
    saved = world.run(store.load("orders", "ddbkeys-partition-keys"))
    assert saved.backfill is not None and saved.backfill.stopped == world.now
    assert running_backfill(saved, ARN, world.now) is None
    assert running_backfill(record(at_work(stopped=1101.0)), ARN, 1101.0) is None


def test_one_of_this_process_that_could_not_say_it_stopped_is_taken_over_at_once() -> None:
    """helper-74 F3: an outage in the middle of ``index follow --backfill``'s backfill; its
    farewell could not be written either, and the follower's next try, in the same process,
    found its own entry alive and waited up to ``ALIVE_FOR`` for itself (``index status``
    meanwhile said to start a follower). Another process's entry, alive as recently, is
    still waited for."""
    world = World()
    world.out_from_scan = True  # (the endpoint goes as the backfill fails)
    core, store = cores(world)
    with pytest.raises(DdbKeysError, match="AccessDenied"):
        world.run(backfill_flow(core, None, store, "reconcile", 60.0))
    left = world.writes[-1]
    assert "stopped" not in left and left["finished"] is None
    saved = world.run(store.load("orders", "ddbkeys-partition-keys"))
    assert running_backfill(saved, ARN, world.now) is not None  # (to anyone, it looks at work)
    assert left_here(saved.backfill)
    world.out, world.pauses = False, []
    again = claim(world)
    assert isinstance(again, Claim) and world.pauses == [] and world.told == []
    now = world.run(store.load("orders", "ddbkeys-partition-keys"))
    assert not left_here(now.backfill)  # (this one is at work)
    # Another process's, alive as recently (its owner another host:pid), is waited for.
    elsewhere = World()
    elsewhere.text, elsewhere.now = json.dumps({**left, "owner": "host-c:7"}), world.now
    assert isinstance(claim(elsewhere), Claim) and elsewhere.pauses[0] == OTHER_POLL
    assert elsewhere.told and elsewhere.told[0].state == OTHER_RUNNING


def test_one_of_this_process_is_at_work_until_the_record_says_it_finished() -> None:
    """helper-75 F1: it said it was no longer at work before it wrote that it finished; a
    second backfill of the process, waiting for it, read the record in between (a slow final
    write), took it for its own ended claim, read the table again, and made the first fail
    ("another backfill took over")."""
    world = World()
    world.empty = True
    core, store = cores(world)
    seen: list[bool] = []

    def look(w: World) -> None:
        item = w.answer(Request("get_item", {}))["Item"]
        seen.append(
            left_here(evidence_from_item("orders", "ddbkeys-partition-keys", item).backfill)
        )

    world.before_finished.append(look)
    report = world.run(backfill_flow(core, None, store, "reconcile", 60.0))
    assert seen == [False] and report.mode == "reconcile"
    finished = world.run(store.load("orders", "ddbkeys-partition-keys"))
    assert finished.backfill is not None and finished.backfill.finished is not None
    assert running_backfill(finished, ARN, world.now) is None  # (in no one's way)


class Interrupting:
    """A stand-in for a boto3 client answering from ``world``, whose Scan (the backfill's
    first read of the table) is interrupted by Ctrl-C (KeyboardInterrupt)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def __getattr__(self, operation: str) -> Callable[..., Any]:
        if operation.startswith("__") or operation == "meta":
            raise AttributeError(operation)

        def call(**params: Any) -> Any:
            if operation == "scan":
                raise KeyboardInterrupt
            return self.world.answer(Request(operation, params))

        return call


def test_a_backfill_interrupted_by_ctrl_c_says_it_stopped_on_its_way_out() -> None:
    """The sync driver throws the KeyboardInterrupt into the flow: the record says stopped
    (so the same command run again begins at once), and the interrupt goes on up."""
    from ddbkeys._capacity import Usage  # noqa: PLC0415
    from ddbkeys._drivers.sync import SyncDriver  # noqa: PLC0415

    world = World()
    core, store = cores(world)
    with pytest.raises(KeyboardInterrupt):
        SyncDriver(Interrupting(world), Usage()).run(
            backfill_flow(core, None, store, "reconcile", 60.0)
        )
    last = world.writes[-1]
    assert last["stopped"] == world.now and last["finished"] is None
    saved = world.run(store.load("orders", "ddbkeys-partition-keys"))
    assert running_backfill(saved, ARN, world.now) is None


def test_a_ctrl_c_during_a_refresh_that_landed_still_lets_it_say_it_stopped() -> None:
    """The refresh's write reached the record but its answer never came back (Ctrl-C, or a
    cancelled task, while the request was out): the record holds a text this backfill never
    saw confirmed. Its farewell expects that text too, so the record still says stopped. This
    was the asyncio test's rare failure under load: a refresh in flight when the task was
    cancelled, and no ``stopped`` after."""
    world = World()
    core, store = cores(world)
    got = claim(world)
    assert isinstance(got, Claim)
    world.now += ALIVE
    refresh = rewrite(got, store, core, {})
    request = next(refresh)
    assert isinstance(request, Request) and request.operation == "update_item"
    world.answer(request)  # applied by the server ...
    with pytest.raises(KeyboardInterrupt):
        refresh.throw(KeyboardInterrupt())  # ... and the answer never read
    world.now += 1.0
    world.run(farewell(got, store, core))
    last = world.writes[-1]
    assert last["stopped"] == world.now and last["finished"] is None
    saved = world.run(store.load("orders", "ddbkeys-partition-keys"))
    assert running_backfill(saved, ARN, world.now) is None


def test_a_write_whose_answer_never_came_and_never_landed_changes_nothing() -> None:
    """(The other half: the interrupted write never reached the record; the next write
    expects the record's text as last confirmed, and finds it.)"""
    world = World()
    core, store = cores(world)
    got = claim(world)
    assert isinstance(got, Claim)
    before = world.text
    refresh = rewrite(got, store, core, {})
    next(refresh)
    with pytest.raises(KeyboardInterrupt):
        refresh.throw(KeyboardInterrupt())  # never sent
    assert world.text == before
    world.run(farewell(got, store, core))
    assert world.writes[-1]["stopped"] == world.now


def test_a_second_ctrl_c_while_it_says_so_stops_at_once() -> None:
    from ddbkeys._capacity import Usage  # noqa: PLC0415
    from ddbkeys._drivers.sync import SyncDriver  # noqa: PLC0415

    world = World()
    core, store = cores(world)
    client = Interrupting(world)
    writes = 0

    def answer(request: Request) -> Any:
        nonlocal writes
        if request.operation == "update_item" and "stopped" in str(request.params):
            writes += 1
            raise KeyboardInterrupt  # the second Ctrl-C, during the farewell write
        return World.answer(world, request)

    world.answer = answer  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        SyncDriver(client, Usage()).run(backfill_flow(core, None, store, "reconcile", 60.0))
    assert writes == 1  # tried once, not again
    assert "stopped" not in world.writes[-1]


def test_a_wait_for_one_at_work_says_how_long_at_most_if_it_was_killed() -> None:
    """(A follower killed with kill -9 mid-backfill and restarted waits for its own dead
    backfill until ALIVE_FOR after its last sign of life: the message says how long.)"""
    other = at_work(alive=1200.0)
    assert dead_in(other, 1208.0) == f"alive 8 s ago; if it was killed, {ALIVE_FOR - 8:.0f} s"
    assert dead_in(other, 1200.0 + ALIVE_FOR + 5) == (
        f"alive {ALIVE_FOR + 5:.0f} s ago; if it was killed, 0 s"
    )


def test_a_joined_backfill_says_in_json_how_the_one_it_joined_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A helper's joined `index backfill --output json` said "mode": "reconcile" (its own
    default) where the backfill it joined had run in read mode: this one read nothing."""
    joined = replace(at_work(finished=1190.0), mode="read")
    report = BackfillReport(joined=joined, counts=True)
    index: Any = SimpleNamespace(table="orders", usage=Usage())
    show_marked(report, index, "json", usage=True)
    said = json.loads(capsys.readouterr().out)
    assert said["mode"] is None and said["joined"]["mode"] == "read" and said["counts"] is True
    assert (said["written"], said["already"], said["removed"]) == (0, 0, 0)
    record = evidence_from_item(
        "orders", "ix", {"backfill": {"S": entry(joined)}}
    ).backfill  # (the mode reads back from the record)
    assert record is not None and record.mode == "read"


def test_a_command_told_other_markers_than_the_index_s_is_refused() -> None:
    """The record's last finished backfill says how the index knows its markers; one at work
    with this command's (run with --force to change them) counts too."""
    ours, theirs = '["ddbkeys_pk", "{\\"S\\": \\"#mk\\"}"]', '["other", "{\\"S\\": \\"#mk\\"}"]'
    done = at_work(finished=1090.0, markers=theirs)
    assert other_markers(None, ours, "orders") is None  # (no record yet)
    assert other_markers(record(replace(done, markers=None)), ours, "orders") is None  # (older)
    refused = other_markers(record(done), ours, "orders")
    assert refused is not None and "attribute 'other' at sort key '#mk', not " in str(refused)
    assert "`index backfill --force`" in str(refused)
    forced = replace(record(at_work(markers=ours)), kept=done)  # (a switch under way)
    assert other_markers(forced, ours, "orders") is None
    stray = replace(record(at_work(markers=theirs)), kept=replace(done, markers=ours))
    assert other_markers(stray, ours, "orders") is None  # (the last finished one is ours)
    both = replace(record(at_work(markers=theirs)), kept=done)
    assert other_markers(both, ours, "orders") is not None


@pytest.mark.parametrize(
    ("saved", "finished", "wrote", "said"),
    [
        (1050.0, 1200.0, 40, "no maintainer has recorded a position in the stream for 150 s"),
        (1150.0, 1200.0, 40, None),  # a maintainer saved while it ran: it applies them
        (1050.0, 1120.0, 40, None),  # too short to tell (a live one may not have saved yet)
        (1050.0, 1200.0, 0, None),  # nothing written: nothing for a maintainer to apply
        (1050.0, None, 40, None),  # not finished
    ],
)
def test_a_backfill_that_no_maintainer_followed_says_so(
    saved: float, finished: float | None, wrote: int, said: str | None
) -> None:
    """helper-70 F2: after a follower died, a direct `index backfill` ended 0 and every
    listing then replayed all since the dead follower's position (70x a scan), unsaid."""
    mark = ShardMark("s1", ARN, FIRST, ((None, FIRST), ("9", saved)))
    record = Evidence("orders", "ix", {"s1": mark}, at_work(finished=finished))
    note = unmaintained(record, wrote)
    if said is None:
        assert note is None
    else:
        assert note is not None and note.startswith(said), note
        assert "is `ddbkeys partition-keys index follow -t orders`" in note
    # Positions under another stream are no maintainer's of this one.
    other = Evidence("orders", "ix", {"s1": replace(mark, stream=OTHER, marks=((None, 1150.0),))})
    assert unmaintained(replace(other, backfill=at_work(finished=1200.0)), 40) is None


def test_a_follower_s_progress_line_counts_the_collections_handled() -> None:
    """helper-76 F3: the line counted markers written only, so a backfill over collections
    marked already said "0 marker(s) written so far" for good, like a stuck one."""
    from ddbkeys.partition_keys._streams import follow_backfill  # noqa: PLC0415

    now: list[float] = [0.0]
    lines: list[str] = []
    watch = follow_backfill._Progress(lambda: now[0], lines.append)
    report = watch.fresh()
    report.present, report.written = 1200, 3
    watch(3)  # (within PROGRESS of its start: nothing)
    now[0] = follow_backfill.PROGRESS
    watch(3)
    assert lines == [
        "backfill: 1,203 collection(s) handled so far (3 marker(s) written, 1,200 already there)"
    ]
    assert watch.fresh() is not report and watch.report.present == 0  # (the next backfill's)


def follower_lines(
    world: World, *, once: bool = True, until: str = "tried again"
) -> tuple[list[str], Any]:
    """What ``index follow --backfill``'s backfill says (``keep_backfilled``) in ``world``;
    not ``once``: until it says a line with ``until`` (at most 5 minutes of its clock)."""
    from ddbkeys._core.stopping import StopFlag  # noqa: PLC0415
    from ddbkeys.partition_keys._streams.follow import FollowCore  # noqa: PLC0415
    from ddbkeys.partition_keys._streams.follow_backfill import keep_backfilled  # noqa: PLC0415
    from ddbkeys.partition_keys._streams.follow_state import FollowReport  # noqa: PLC0415

    lines: list[str] = []
    stop = StopFlag()
    world.events.append((world.now + 300.0, lambda w: stop.set()))

    def tell(line: str) -> None:
        lines.append(line)
        if until in line:
            stop.set()

    follow = FollowCore(MarkerCore("orders"), state_table="ddbkeys-state", clock=world.clock)
    report = FollowReport()
    world.run(keep_backfilled(follow, report, 60.0, stop, tell, once=once))
    return lines, report


def test_a_follower_says_its_backfill_begins_once_the_record_is_its_own() -> None:
    """helper-76 F2: two followers with --backfill started together both said "backfill
    begins" (when the margin had passed), then the one that found the other's entry "another
    backfill is at work". Now said once the record is taken: here another backfill takes it
    the moment the margin passes, and dies (silent) at once."""
    world = World()
    world.now, world.empty = 1050.0, True  # (the margin ends at FIRST + 60 = 1060)
    world.events.append((1060.0, lambda w: w.put(at_work(started=1060.0, alive=1060.0))))
    lines, report = follower_lines(world)
    assert lines[0].startswith("backfill in 10 s"), lines
    assert lines[1].startswith("another backfill is at work (begun"), lines
    assert lines[2:] == [
        "backfill begins",
        "backfill done: 0 marker(s) written, 0 already there, 0 removed; listings can prove "
        "the index from now on",
    ]
    assert world.writes[0]["started"] >= 1060.0 + ALIVE_FOR  # (taken once the other was dead)
    assert report.backfill_state == "done" and report.backfills == 1


def test_a_follower_s_failed_backfill_says_it_is_tried_again_only_where_it_is() -> None:
    """helper-75: with --until-caught-up (``once``) a failed backfill is not tried again, but
    the follower said "tried again in 10 s" just before it gave up."""
    lines, report = follower_lines(World())  # (the table's read is refused)
    assert report.backfill_state == "failed"
    assert lines[-1].startswith("backfill failed: ") and "tried again" not in lines[-1], lines
    lines, _ = follower_lines(World(), once=False)
    assert lines[-1].endswith("; tried again in 10 s"), lines


def test_a_follower_whose_look_failed_then_finds_a_backfill_that_counts_is_done() -> None:
    """helper-98 F6: DescribeTable out for 20 s under `follow --backfill` whose backfill was
    done: "backfill failed", then every later look found none needed but the state stayed
    "failed", and Ctrl-C said "The backfill was not done", exit 1, though listings proved the
    index. A later look that needs none says so, and it is done."""
    world = World()  # (its table's read refused: the first backfill fails)
    done = at_work(started=1061.0, alive=1090.0, finished=1090.0)
    world.events.append((world.now + 5.0, lambda w: w.put(done)))  # (another's, meanwhile)
    lines, report = follower_lines(world, once=False, until="already lets listings prove")
    assert any(line.startswith("backfill failed: ") for line in lines), lines
    assert lines[-1] == "a backfill under this stream already lets listings prove the index"
    assert report.backfill_state == "done"


def test_a_backfill_that_joined_another_reads_as_that_one_read() -> None:
    """helper-76 F4: a report that joined another backfill said ``mode="reconcile"`` (its own
    default) whatever that one read in."""
    world = World(at_work())
    world.events.append(
        (1105.0, lambda w: w.put(at_work(alive=w.now, finished=w.now, mode="read")))
    )
    got = claim(world)
    assert isinstance(got, BackfillReport) and got.joined is not None and got.mode == "read"


def test_a_backfill_waiting_out_the_margin_says_so_in_its_record_at_once() -> None:
    """helper-99 F3: while a read-mode backfill, its markers written, waited out the replay
    margin, its record said "0 collection(s) handled" (the count of its last refresh) and
    nothing of the wait. Told of it (state TIP), the entry is written at once, with the count
    and when the stream is read."""
    world = World()
    core, store = cores(world)
    got = claim(world)
    assert isinstance(got, Claim)
    world.writes.clear()
    told = telling(got, world.clock, world.told.append)

    def waits() -> Flow[str]:
        for _ in range(3):  # three markers, a second apart (no refresh due)
            world.now += 1.0
            got.report.written += 1
            yield Request("put_item", {"TableName": "orders"})
        told(Readiness("orders", TIP, 60.0, 60.0))
        yield Pause(60.0)
        return "done"

    assert world.run(kept_alive(waits(), got, store, core)) == "done"
    first = world.writes[0]
    assert (first["alive"], first["handled"], first["tip_at"]) == (1104.0, 3, 1164.0)
    assert world.told[-1].state == TIP  # (the caller's on_wait is told still)
    saved = world.run(store.load("orders", "ddbkeys-partition-keys"))
    assert saved.backfill is not None and saved.backfill.tip_at == 1164.0
    said = at_work_reason(saved, ARN, 60.0, 1110.0)
    assert (
        said is not None
        and "its 3 collection(s) handled, it reads the stream's records in 54 s" in said
    )


def test_a_look_that_fails_once_the_backfill_is_done_leaves_it_done() -> None:
    """helper-101 F3: an outage under `index follow --backfill` whose index needed no backfill
    said "backfill failed ...; tried again in 10 s" (and ".;"). A failed look is said as one,
    and leaves the backfill done (Ctrl-C then says nothing of a backfill not done)."""
    world = World(at_work(started=1061.0, alive=1090.0, finished=1090.0))
    world.refused_gets = {2}  # (the look after the first)
    lines, report = follower_lines(world, once=False, until="looked again")
    assert lines[0] == "a backfill under this stream already lets listings prove the index"
    assert lines[1].startswith("look at the index's backfill failed: "), lines
    assert "(AccessDeniedException)" in lines[1] and lines[1].endswith(
        ": Unknown; looked again in 10 s"
    )
    assert report.backfill_state == "done"
