"""The state machine of tests/unit/test_proof_schedules.py: a model of the table, its lagging
index, its stream and the state table (:mod:`tests.support.proof_world`), ddbkeys' own
maintainers acting on it (:mod:`tests.support.proof_actors`), and after every step the
listing's decision core, which must decline with a reason or answer exactly the collections
that hold something besides ddbkeys' marker.

The model keeps the proof's one assumption and no more: a write reaches the index, and a
Scan, at most ``lag`` seconds late (the listing's margin), and the stream at once. The seven
faults its first runs found, each kept as a schedule in tests/unit/test_proof_bugs.py, are
rules here too: a maintainer a day behind (``long_wait``, whatever is applied); Lambda's event
source mapping dropping a batch that keeps failing (``trigger_gives_up``); data written at the
marker's key of any collection (``clash``); ``repair`` while the index lags; empty GetRecords
pages before a shard's records (``hollow_pages``, fewer than the replay's tip rule reads);
a write while a follower starts (``follower_starts`` stops anywhere in its start); and a data
item holding another collection's key in the marker attribute (``put``'s ``tag``)."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ddbkeys.partition_keys.markers import unhash
from ddbkeys.partition_keys.state import evidence_from_item
from tests.support.proof_actors import (
    ModelHandler,
    Stepper,
    Trigger,
    Verdict,
    backfill,
    follower,
    follower_at_rest,
    listing,
    repair,
)
from tests.support.proof_client import ModelClient
from tests.support.proof_world import (
    ATTR,
    INDEX,
    MARKER_SK,
    TABLE,
    World,
    is_marker,
    typed_item,
)

KEYS = st.sampled_from(("a", "b", "c", "d"))
SORTS = st.sampled_from((1, 2))
LANES = st.integers(0, 3)
MARGIN = 5.0
#: Seconds a rule lets pass: within the margin, at it, past it, past an iterator's life.
TICKS = (0.5, 1.0, 2.0, 4.0, 5.0, 6.0, 30.0, 1000.0)

#: What the listings said over a run: the checker must see proven answers, not only declines.
SEEN: Counter[str] = Counter()


class ListingWrong(AssertionError):
    """The listing answered, and not the non-empty collections of the table."""


def _sk(sk: int) -> Decimal:
    return Decimal(sk)


class ProofMachine(RuleBasedStateMachine):
    margin: ClassVar[float] = MARGIN  # the listing's replay margin
    lag: ClassVar[float] = MARGIN  # the most a write takes to reach the index (the assumption)
    recheck: ClassVar[bool] = True  # False: the negative control that skips the re-checks
    factor_seen: ClassVar[bool] = True  # False: the control whose trigger always reads 1

    def __init__(self) -> None:
        super().__init__()
        self.world = World(lag=self.lag)
        self.client = ModelClient(self.world)
        self.handler = ModelHandler(self.world, self.client)
        self.handler.lambda_service.honest = self.factor_seen
        self.followers: dict[int, Stepper] = {}
        self.backfill: Stepper | None = None
        self.trigger: Trigger | None = None
        self.segments = 1
        self.most: int | None = None

    # --- a start: history, and (or not) a maintained, backfilled index -----------------------

    @initialize(
        history=st.lists(st.tuples(KEYS, SORTS), max_size=4),
        shards=st.integers(1, 3),
        settled=st.sampled_from(("follower", "lambda", "lambda-unnamed", "none")),
        rounding=st.sampled_from((1.0, 60.0)),
    )
    def start(
        self, history: list[tuple[str, int]], shards: int, settled: str, rounding: float = 1.0
    ) -> None:
        world = self.world
        world.rounding = rounding
        world.disable_stream()  # (the history is older than the stream)
        for pk, sk in history:
            world.write((pk, _sk(sk)), typed_item(pk, _sk(sk)))
        world.tick(10.0)
        world.enable_stream(shards)
        if settled == "none":
            return
        if settled == "follower":
            self.followers[0] = follower(world, self.client, from_start=False)
            self.followers[0].advance(40)
        else:
            self.trigger = Trigger(world.latest_arn or "", named=settled == "lambda")
            self.handler.lambda_service.trigger = self.trigger
            world.write(("a", _sk(9)), typed_item("a", _sk(9)))  # a first batch names a shard
            self.quiet()
        world.tick(self.margin + 1)
        self.backfill = backfill(world, self.client)
        self.backfill.advance(200)
        self.quiet()

    @rule()
    def quiet(self) -> None:
        """A quiet while: the maintainers that run catch up, and the margin passes."""
        for running in self.followers.values():
            running.advance(60)
        if self.trigger is not None:
            for n in range(8):
                self.trigger.deliver(self.world, self.handler, n, 10, None)
        self.world.tick(self.margin + 1)

    # --- the application ---------------------------------------------------------------------

    @rule(pk=KEYS, sk=SORTS, tag=st.none() | KEYS, lane=LANES)
    def put(self, pk: str, sk: int, tag: str | None, lane: int) -> None:
        item = typed_item(pk, _sk(sk), note={"S": "data"})
        if tag is not None:  # a data item that carries the marker attribute (any key)
            item[ATTR] = {"S": tag}
        self.world.write((pk, _sk(sk)), item, lane)

    @rule(pk=KEYS, sk=SORTS, lane=LANES)
    def delete(self, pk: str, sk: int, lane: int) -> None:
        self.world.write((pk, _sk(sk)), None, lane)

    @rule(pk=KEYS, lane=LANES)
    def clash(self, pk: str, lane: int) -> None:
        """The application writes data at the marker's key (over the marker, if any)."""
        self.world.write((pk, MARKER_SK), typed_item(pk, MARKER_SK, note={"S": "x"}), lane)

    @rule(pk=KEYS)
    def unclash(self, pk: str) -> None:
        """The application moves its data off the marker's key."""
        found = self.world.table.get((pk, MARKER_SK))
        if found is not None and not is_marker(found):
            self.world.write((pk, MARKER_SK), None)

    # --- time, the index, the stream, the table --------------------------------------------------

    @rule(seconds=st.sampled_from(TICKS))
    def tick(self, seconds: float) -> None:
        self.world.tick(seconds)

    @rule(hours=st.sampled_from((6.0, 23.0, 25.0)))
    def long_wait(self, hours: float) -> None:
        """Hours without writes: the maintainers run first, or (``behind``) not at all."""
        self.quiet()
        self.world.tick(hours * 3600)

    @rule(hours=st.sampled_from((6.0, 23.0, 25.0)))
    def long_wait_behind(self, hours: float) -> None:
        """Hours with nothing applied: records may be trimmed before a maintainer reads them."""
        self.world.tick(hours * 3600)

    @rule(pages=st.integers(0, 2))
    def hollow_pages(self, pages: int) -> None:
        """GetRecords answers this many empty pages before a shard's records."""
        self.world.hollow = pages

    def caught_up(self) -> bool:
        stream = self.world.stream
        record = self.world.state.get(f"{TABLE}/{INDEX}")
        if stream is None or record is None:
            return False
        marks = evidence_from_item(TABLE, INDEX, record).shards
        for shard in stream.shards.values():
            mark = marks.get(shard.id)
            if not shard.kept():
                continue
            newest = mark.marks[-1][0] if mark is not None and mark.marks else None
            if mark is None or mark.stream != stream.arn or newest is None:
                return False
            if int(newest) < shard.last_seq():
                return False
        return True

    @rule(n=st.integers(0, 20))
    def index_catches_up(self, n: int) -> None:
        self.world.propagate(n)

    @rule(stale=st.sampled_from((0.0, 0.5, 1.0)))
    def scans_lag(self, stale: float) -> None:
        self.world.scan_lag = stale * self.lag

    @rule(
        cap=st.sampled_from((1, 2, 1000)),
        segments=st.integers(1, 3),
        most=st.none() | st.integers(0, 3),
    )
    def pages(self, cap: int, segments: int, most: int | None) -> None:
        self.world.page_cap = cap
        self.segments = segments
        self.most = most

    @rule(n=st.integers(0, 3), children=st.integers(1, 2))
    def split(self, n: int, children: int) -> None:
        self.world.split(n, children)

    @rule(
        change=st.sampled_from(("off", "on", "recreated", "recreated without a stream")),
        shards=st.integers(1, 3),
    )
    def stream_changes(self, change: str, shards: int) -> None:
        if change == "off":
            self.world.disable_stream()
        elif change == "on":
            self.world.enable_stream(shards)
        else:
            self.world.recreate_table(stream=change == "recreated")

    # --- the followers (two processes at most) ------------------------------------------------

    @rule(slot=st.integers(0, 1), from_start=st.booleans(), steps=st.none() | st.integers(1, 6))
    def follower_starts(self, slot: int, from_start: bool, steps: int | None) -> None:
        """A follower process starts: its start runs at once, or stops after ``steps``
        requests (other rules act in the middle of it)."""
        running = self.followers.get(slot)
        if running is None or running.done:
            if steps is None:
                self.followers[slot] = follower(self.world, self.client, from_start)
            else:
                started = follower_at_rest(self.world, self.client, from_start)
                started.advance(steps)
                self.followers[slot] = started

    @precondition(lambda self: bool(self.followers))
    @rule(slot=st.integers(0, 1), requests=st.integers(1, 30), refused=st.none() | KEYS)
    def follower_runs(self, slot: int, requests: int, refused: str | None) -> None:
        running = self.followers.get(slot)
        if running is None:
            return
        self.world.failing = {refused} if refused is not None else set()
        try:
            running.advance(requests)
        finally:
            self.world.failing = set()

    @precondition(lambda self: bool(self.followers))
    @rule(slot=st.integers(0, 1))
    def follower_killed(self, slot: int) -> None:
        self.followers.pop(slot, None)

    # --- the Lambda handler -----------------------------------------------------------------

    @precondition(lambda self: self.world.stream is not None)
    @rule(named=st.booleans())
    def trigger_created(self, named: bool) -> None:
        assert self.world.stream is not None
        self.trigger = Trigger(self.world.stream.arn, named)
        self.handler.lambda_service.trigger = self.trigger

    @precondition(lambda self: self.trigger is not None)
    @rule(
        n=st.integers(0, 3),
        size=st.integers(1, 4),
        fail=st.none() | st.integers(0, 3),
        meanwhile=st.none() | st.tuples(st.integers(1, 6), KEYS, SORTS, st.booleans()),
    )
    def lambda_batch(
        self, n: int, size: int, fail: int | None, meanwhile: tuple[int, str, int, bool] | None
    ) -> None:
        """A batch of one shard; ``meanwhile``, the application puts or deletes an item
        between two of the handler's requests."""
        assert self.trigger is not None
        if meanwhile is not None:
            after, pk, sk, there = meanwhile
            item = typed_item(pk, _sk(sk), note={"S": "late"}) if there else None
            self.client.between(after, lambda: self.world.write((pk, _sk(sk)), item))
        self.trigger.deliver(self.world, self.handler, n, size, fail)
        self.client.clear_between()

    @precondition(lambda self: self.trigger is not None)
    @rule(n=st.integers(0, 3), back=st.integers(1, 4), size=st.integers(1, 4))
    def lambda_again(self, n: int, back: int, size: int) -> None:
        assert self.trigger is not None
        self.trigger.again(self.world, self.handler, n, back, size)

    @precondition(lambda self: self.trigger is not None)
    @rule(n=st.integers(0, 3))
    def trigger_gives_up(self, n: int) -> None:
        """The mapping's retry limit: a failing batch is dropped and the shard goes on."""
        assert self.trigger is not None
        self.trigger.give_up(n)

    @precondition(lambda self: self.trigger is not None)
    @rule()
    def trigger_removed(self) -> None:
        self.trigger = None
        self.handler.lambda_service.trigger = None

    @rule()
    def lambda_cold_start(self) -> None:
        """Lambda runs the next batch in a new execution environment: it reads its trigger at
        its first batch."""
        service = self.handler.lambda_service
        self.handler = ModelHandler(self.world, self.client)
        self.handler.lambda_service = service

    @precondition(lambda self: self.trigger is not None)
    @rule(factor=st.sampled_from((1, 2, 10)))
    def trigger_parallel(self, factor: int) -> None:
        """The trigger's ParallelizationFactor changed (the handler reads it at its next
        check, not at once)."""
        assert self.trigger is not None
        self.trigger.factor = factor

    @precondition(lambda self: self.trigger is not None)
    @rule(
        n=st.integers(0, 3),
        size=st.integers(1, 3),
        writes=st.lists(
            st.tuples(KEYS | st.just("e"), SORTS, st.booleans()), min_size=1, max_size=4
        ),
        lane=LANES,
        fresh=st.booleans(),
        then=st.sampled_from((0.0, MARGIN + 1)),
    )
    def lambda_ahead(
        self,
        n: int,
        size: int,
        writes: list[tuple[str, int, bool]],
        lane: int,
        fresh: bool,
        then: float,
    ) -> None:
        """Out of order: the application writes (``writes``, each a put or a delete; "e" is a
        collection only this rule writes, new at first), then a
        later batch of a shard (B) is handled before the earlier one (A): the trigger's
        ParallelizationFactor is raised to 2 first, if it is 1 (only then can Lambda do that).
        ``fresh``: B runs in a new execution environment (batches of a shard run at once need
        one each), which reads the trigger at its first batch. ``then``: seconds that pass
        after B (the listing after this step may then use B's position)."""
        assert self.trigger is not None
        self.trigger.factor = max(2, self.trigger.factor)
        if fresh:
            self.lambda_cold_start()
        for pk, sk, there in writes:
            item = typed_item(pk, _sk(sk), note={"S": "data"}) if there else None
            self.world.write((pk, _sk(sk)), item, lane)
        self.trigger.ahead(self.world, self.handler, n, size)
        self.world.tick(then)

    @precondition(lambda self: self.trigger is not None and bool(self.trigger.late))
    @rule(n=st.integers(0, 3))
    def lambda_behind(self, n: int) -> None:
        """The batch left behind (A), handled after B."""
        assert self.trigger is not None
        self.trigger.behind(self.world, self.handler, n)

    # --- the backfill and repair ---------------------------------------------------------------

    @precondition(lambda self: self.backfill is None or self.backfill.done)
    @rule()
    def backfill_starts(self) -> None:
        self.backfill = backfill(self.world, self.client)

    @precondition(lambda self: self.backfill is not None and not self.backfill.done)
    @rule(requests=st.integers(1, 10))
    def backfill_runs(self, requests: int) -> None:
        assert self.backfill is not None
        self.backfill.advance(requests)

    @precondition(lambda self: self.backfill is not None)
    @rule()
    def backfill_killed(self) -> None:
        self.backfill = None

    @rule()
    def repaired(self) -> None:
        """``index repair``, whether the index has caught up or not."""
        repair(self.world, self.client)

    # --- what must hold after every step ----------------------------------------------------

    @invariant()
    def listing_is_exact_or_declines(self) -> None:
        self.check()

    def check(self) -> Verdict:
        verdict = listing(
            self.world,
            self.client,
            self.margin,
            segments=self.segments,
            most=self.most,
            recheck=self.recheck,
        )
        check(verdict, self.world)
        return verdict


def check(verdict: Verdict, world: World) -> None:
    """The listing declined with a reason, or answered the non-empty collections, each once."""
    if verdict.keys is None:
        SEEN["declined"] += 1
        assert verdict.reason.strip(), "declined without a reason"
        return
    SEEN["proven"] += 1
    replay = verdict.replay
    touched = {str(unhash(h)["S"]) for h in (replay.touched if replay else ())}
    if touched:
        SEEN["proven, with re-checks"] += 1
    truth = world.non_empty()
    answer = set(verdict.keys)
    if answer - touched:
        SEEN["proven, with keys from the index"] += 1
    if len(answer) != len(verdict.keys) or answer != truth:
        raise ListingWrong(
            f"the listing answered {sorted(verdict.keys)}, the table's non-empty collections "
            f"are {sorted(truth)} (missing {sorted(truth - answer)}, extra "
            f"{sorted(answer - truth)}); re-checked {sorted(touched)}; the index shows "
            f"{sorted(world.index.items())}, with {len(world.pending)} update(s) to come"
        )
