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
item holding another collection's key in the marker attribute (``put``'s ``tag``).

Reconciliations that do not settle (issue 33): a maintainer's step may run with a collection
``hot`` (the application changes it right after each of the maintainer's marker writes, until
the reconciliation gives up: the cause is in the stream) or ``unsettled`` (its reconciliation
gives up at once, with no write: only the pending set says so), and the pending set's bound may
be small (``pending_bound``): then a shard's position must hold."""

from __future__ import annotations

import copy
from collections import Counter
from decimal import Decimal
from typing import ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ddbkeys._core.steps import Request
from ddbkeys.partition_keys._index.backfill_read import Controls
from ddbkeys.partition_keys._index.maintain import MAX_ROUNDS
from ddbkeys.partition_keys._index.markers import unhash
from ddbkeys.partition_keys._index.pending import MAX_PENDING
from ddbkeys.partition_keys._index.state import evidence_from_item
from ddbkeys.partition_keys._proof.evidence import CREATED_ROUNDING, ShardMark
from tests.support.proof_actors import (
    BackfillStepper,
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
    PK,
    TABLE,
    Item,
    World,
    is_marker,
    typed_item,
)

KEYS = st.sampled_from(("a", "b", "c", "d"))
SORTS = st.sampled_from((1, 2))
LANES = st.integers(0, 3)
#: A maintainer's step with collections that do not settle: one ``hot`` (changed after each
#: marker write), or every one ``unsettled`` (each reconciliation gives up with no write).
UPSETS = st.none() | st.tuples(KEYS, st.just("hot")) | st.just(("*", "unsettled"))
MARGIN = 5.0
#: Copies of the state table kept, one after each step (the backups a restore goes back to).
COPIES = 8
#: Seconds a rule lets pass: within the margin, at it, past it, past an iterator's life.
TICKS = (0.5, 1.0, 2.0, 4.0, 5.0, 6.0, 30.0, 1000.0)

#: What the listings said over a run: the checker must see proven answers, not only declines.
SEEN: Counter[str] = Counter()


class ListingWrong(AssertionError):
    """The listing answered, and not the non-empty collections of the table."""


class BackfillWrong(AssertionError):
    """A read-mode backfill that counts finished with a marker wrong that its window should
    have put right."""


MODES = st.sampled_from(("reconcile", "read"))


def _sk(sk: int) -> Decimal:
    return Decimal(sk)


class ProofMachine(RuleBasedStateMachine):
    margin: ClassVar[float] = MARGIN  # the listing's replay margin
    lag: ClassVar[float] = MARGIN  # the most a write takes to reach the index (the assumption)
    recheck: ClassVar[bool] = True  # False: the negative control that skips the re-checks
    factor_seen: ClassVar[bool] = True  # False: the control whose trigger always reads 1
    pending: ClassVar[bool] = True  # False: the negative control that ignores pending ones
    #: The read-mode backfill's broken forms (negative controls): every backfill reads.
    controls: ClassVar[Controls | None] = None

    def __init__(self) -> None:
        super().__init__()
        self.world = World(lag=self.lag)
        self.client = ModelClient(self.world)
        self.handler = ModelHandler(self.world, self.client)
        self.handler.lambda_service.honest = self.factor_seen
        self.handler.follows_checked = self.factor_seen  # (its control: both guards off)
        self.followers: dict[int, Stepper] = {}
        self.backfill: BackfillStepper | None = None
        self.backfill_checked = False
        #: The table's versions that finished backfills wrote (see check_backfill).
        self.backfilled: set[tuple[int, tuple[str, Decimal], int]] = set()
        self.trigger: Trigger | None = None
        self.segments = 1
        self.most: int | None = None
        self.max_pending = MAX_PENDING  # for the followers started from now on
        #: Copies of the state table (backups), and whether a Lambda trigger ever maintained
        #: the index (its handler keeps no count of saves: restores are not for it).
        self.copies: list[dict[str, Item]] = []
        self.lambda_ever = False

    # --- a start: history, and (or not) a maintained, backfilled index -----------------------

    @initialize(
        history=st.lists(st.tuples(KEYS, SORTS), max_size=4),
        shards=st.integers(1, 3),
        settled=st.sampled_from(("follower", "lambda", "lambda-unnamed", "none")),
        rounding=st.sampled_from((1.0, 60.0)),
        mode=MODES,
    )
    def start(
        self,
        history: list[tuple[str, int]],
        shards: int,
        settled: str,
        rounding: float = 1.0,
        mode: str = "reconcile",
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
            self.followers[0] = follower(world, self.client, False, self.max_pending)
            self.followers[0].advance(40)
        else:
            self.trigger = Trigger(world.latest_arn or "", named=settled == "lambda")
            self.lambda_ever = True
            self.handler.lambda_service.trigger = self.trigger
            world.write(("a", _sk(9)), typed_item("a", _sk(9)))  # a first batch names a shard
            self.quiet()
        world.tick(self.margin + 1)
        self.backfill = self.backfill_of(mode)
        self.backfill.advance(200)
        if not self.backfill.done:  # the read mode waits a margin after its last write
            world.tick(self.margin + 1)
            self.backfill.advance(400)
        self.backfill_finished()
        self.quiet()

    def backfill_of(self, mode: str) -> BackfillStepper:
        self.backfill_checked = False
        if self.controls is not None:
            mode = "read"
        return backfill(self.world, self.client, mode, self.margin, self.controls)

    def backfill_finished(self) -> None:
        """Once a backfill has finished: the read mode's own guarantee (see check_backfill)."""
        if self.backfill is not None and self.backfill.done and not self.backfill_checked:
            self.backfill_checked = True
            if self.backfill.error is None:
                self.backfilled |= self.backfill.own
            check_backfill(self.backfill, self.world, self.margin, self.backfilled)

    @rule()
    def quiet(self) -> None:
        """A quiet while: the maintainers that run catch up, and the margin passes."""
        for running in self.followers.values():
            running.advance(60)
        if self.trigger is not None:
            for n in range(8):
                self.trigger.deliver(self.world, self.handler, n, 10, None)
        self.world.tick(self.margin + 1)

    @rule(upset=st.tuples(KEYS, st.just("hot")) | st.just(("*", "unsettled")))
    def quiet_upset(self, upset: tuple[str, str]) -> None:
        """:meth:`quiet`, the maintainers' reconciliations not settling as ``upset`` says
        (see :meth:`upset`) while they catch up."""
        self.upset(upset)
        try:
            self.quiet()
        finally:
            self.calm()

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

    @rule(
        n=st.integers(0, 3),
        children=st.integers(1, 2),
        hidden=st.sampled_from((0.0, 0.0, 2.0, 9.0)),
    )
    def split(self, n: int, children: int, hidden: float = 0.0) -> None:
        """A shard closes; DescribeStream may list its children only ``hidden`` seconds later
        (as the service may: a closed shard with no children, a moment after it closed)."""
        self.world.split(n, children, hidden)

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
                self.followers[slot] = follower(
                    self.world, self.client, from_start, self.max_pending
                )
            else:
                started = follower_at_rest(self.world, self.client, from_start, self.max_pending)
                started.advance(steps)
                self.followers[slot] = started

    @precondition(lambda self: bool(self.followers))
    @rule(
        slot=st.integers(0, 1),
        requests=st.integers(1, 30),
        refused=st.none() | KEYS,
        upset=UPSETS,
    )
    def follower_runs(
        self,
        slot: int,
        requests: int,
        refused: str | None,
        upset: tuple[str, str] | None = None,
    ) -> None:
        running = self.followers.get(slot)
        if running is None:
            return
        self.world.failing = {refused} if refused is not None else set()
        self.upset(upset)
        try:
            running.advance(requests)
        finally:
            self.calm()

    def upset(self, upset: tuple[str, str] | None) -> None:
        """For one maintainer's step: a collection whose reconciliations do not settle."""
        if upset is None:
            return
        pk, how = upset
        if how == "hot":  # (enough changes for one reconciliation to give up)
            self.client.hot = {pk: MAX_ROUNDS + 1}
        else:
            self.world.unsettled = {"a", "b", "c", "d"}

    def calm(self) -> None:
        self.world.failing = set()
        self.world.unsettled = set()
        self.client.hot = {}

    @rule(most=st.sampled_from((0, 1, MAX_PENDING)))
    def pending_bound(self, most: int) -> None:
        """The pending set's bound, for the Lambda handler and the followers."""
        self.max_pending = most
        self.handler.max_pending = most
        for running in self.followers.values():
            if running.core is not None:
                running.core.max_pending = most

    @precondition(lambda self: bool(self.followers))
    @rule(slot=st.integers(0, 1))
    def follower_killed(self, slot: int) -> None:
        self.followers.pop(slot, None)

    # --- the state table restored from an older copy (a backup) ------------------------------

    @precondition(lambda self: len(self.copies) > 1 and not self.lambda_ever)
    @rule(back=st.integers(1, COPIES - 1))
    def state_restored(self, back: int) -> None:
        """The state table put back to a copy taken ``back`` steps ago (a backup: one is
        taken after every step), under running followers (which find it at their next save
        of marks and go on from the marks restored)."""
        restored = copy.deepcopy(self.copies[-1 - min(back, len(self.copies) - 1)])
        if self.followers:
            SEEN["the state table restored under a follower"] += 1
        self.world.state.clear()
        self.world.state.update(restored)

    # --- the Lambda handler -----------------------------------------------------------------

    @precondition(lambda self: self.world.stream is not None)
    @rule(named=st.booleans())
    def trigger_created(self, named: bool) -> None:
        assert self.world.stream is not None
        self.trigger = Trigger(self.world.stream.arn, named)
        self.lambda_ever = True
        self.handler.lambda_service.trigger = self.trigger

    @precondition(lambda self: self.trigger is not None)
    @rule(
        n=st.integers(0, 3),
        size=st.integers(1, 4),
        fail=st.none() | st.integers(0, 3),
        meanwhile=st.none() | st.tuples(st.integers(1, 6), KEYS, SORTS, st.booleans()),
        upset=UPSETS,
    )
    def lambda_batch(
        self,
        n: int,
        size: int,
        fail: int | None,
        meanwhile: tuple[int, str, int, bool] | None,
        upset: tuple[str, str] | None = None,
    ) -> None:
        """A batch of one shard; ``meanwhile``, the application puts or deletes an item
        between two of the handler's requests."""
        assert self.trigger is not None
        if meanwhile is not None:
            after, pk, sk, there = meanwhile
            item = typed_item(pk, _sk(sk), note={"S": "late"}) if there else None
            self.client.between(after, lambda: self.world.write((pk, _sk(sk)), item))
        self.upset(upset)
        try:
            self.trigger.deliver(self.world, self.handler, n, size, fail)
        finally:
            self.calm()
        self.client.clear_between()

    @precondition(lambda self: self.trigger is not None)
    @rule(n=st.integers(0, 3), back=st.integers(1, 4), size=st.integers(1, 4))
    def lambda_again(self, n: int, back: int, size: int) -> None:
        assert self.trigger is not None
        self.trigger.again(self.world, self.handler, n, back, size)

    @precondition(lambda self: self.trigger is not None)
    @rule(n=st.integers(0, 3), size=st.integers(1, 4))
    def lambda_dies(self, n: int, size: int) -> None:
        """A batch whose invocations all end before the handler writes anything."""
        assert self.trigger is not None
        self.trigger.dies(self.world, n, size)

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
    @rule(mode=MODES)
    def backfill_starts(self, mode: str = "reconcile") -> None:
        self.backfill = self.backfill_of(mode)

    @precondition(lambda self: self.backfill is not None and not self.backfill.done)
    @rule(
        requests=st.integers(1, 10),
        meanwhile=st.none() | st.tuples(st.integers(1, 6), KEYS, SORTS, st.booleans()),
    )
    def backfill_runs(
        self, requests: int, meanwhile: tuple[int, str, int, bool] | None = None
    ) -> None:
        """The backfill sends ``requests`` requests; ``meanwhile``, the application puts an
        item or empties a collection between two of them (a second after the one before, and
        a second before the next)."""
        assert self.backfill is not None
        if meanwhile is not None:
            after, pk, sk, there = meanwhile

            def write() -> None:
                self.world.tick(1.0)
                if there:
                    self.world.write((pk, _sk(sk)), typed_item(pk, _sk(sk), note={"S": "new"}))
                else:  # the collection emptied
                    for key in [k for k in self.world.table if k[0] == pk and k[1] != MARKER_SK]:
                        self.world.write(key, None)
                self.world.tick(1.0)

            self.client.between(after, write)
        try:
            self.backfill.advance(requests)
        finally:
            self.client.clear_between()
        self.backfill_finished()

    @precondition(lambda self: self.backfill is not None and not self.backfill.done)
    @rule(pk=st.none() | KEYS, there=st.booleans())
    def change_before_a_backfill_write(self, pk: str | None, there: bool) -> None:
        """The backfill runs up to its next marker write; just before it, a second apart, the
        application puts an item in, or empties, collection ``pk`` (None: the one the write
        is for); then the backfill runs to its end, time passing while it waits (the
        ``meanwhile`` of ``backfill_runs`` interleaves changes with its requests anywhere)."""
        assert self.backfill is not None
        self.backfill.advance_until(_writes_a_marker, 60)
        step = self.backfill.step
        if self.backfill.done or not _writes_a_marker(step):
            return
        assert isinstance(step, Request)
        raw = step.params.get("Key") or step.params.get("Item") or {}
        target = pk if pk is not None else str(raw[PK]["S"])
        self.world.tick(1.0)
        if there:
            self.world.write((target, _sk(1)), typed_item(target, _sk(1), note={"S": "new"}))
        else:
            for key in [k for k in self.world.table if k[0] == target and k[1] != MARKER_SK]:
                self.world.write(key, None)
        self.world.tick(1.0)
        for _ in range(4):
            self.backfill.advance(100)
            if self.backfill.done:
                break
            self.world.tick(self.margin + 1)
        self.backfill_finished()

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
        self.copies = [*self.copies[1 - COPIES :], copy.deepcopy(self.world.state)]
        for running in self.followers.values():  # (what the followers met, counted)
            report = running.report
            if report is not None and report.pending:
                SEEN["a follower recorded a collection pending"] += 1
            if report is not None and report.held_since is not None:
                SEEN["a follower held a shard's position (the pending set full)"] += 1
            if report is not None and report.put_back:
                SEEN["a follower found its record put back"] += 1
        verdict = listing(
            self.world,
            self.client,
            self.margin,
            segments=self.segments,
            most=self.most,
            recheck=self.recheck,
            pending=self.pending,
        )
        check(verdict, self.world)
        if verdict.keys is not None:
            for item in self.world.state.values():
                record = evidence_from_item(TABLE, INDEX, item)
                if any(tipped(m, self.world.now - self.margin) for m in record.shards.values()):
                    SEEN["proven, past a tip a follower read before any record"] += 1
                unfinished = record.backfill is not None and record.backfill.finished is None
                if unfinished and record.kept is not None:
                    SEEN["proven while a backfill had not finished (the one it replaced kept)"] += 1
        return verdict


def tipped(mark: ShardMark, cut: float) -> bool:
    """Whether ``mark`` is a follower's begun at its shard's end, no record applied by
    ``cut``, with a tip it read there after it began (a ``(None, t)`` mark, ``t`` past
    ``since``, held back to ``cut``): where a listing leaves out what came before ``t``."""
    if not isinstance(mark.since, int | float):
        return False
    held = [(sequence, t) for sequence, t in mark.marks if t <= cut]
    return bool(held) and held[-1][0] is None and held[-1][1] > mark.since


def check(verdict: Verdict, world: World) -> None:
    """The listing declined with a reason, or answered the non-empty collections, each once."""
    if verdict.keys is None:
        SEEN["declined"] += 1
        assert verdict.reason.strip(), "declined without a reason"
        # No rule here writes a position no maintainer wrote: a decline that says so accuses
        # the state table falsely (the model's shards once ended at their start when a day's
        # records had gone, and a split then put every position past the shard's end).
        assert "no maintainer wrote it" not in verdict.reason, verdict.reason
        return
    SEEN["proven"] += 1
    replay = verdict.replay
    touched = {str(unhash(h)["S"]) for h in (replay.touched if replay else ())}
    if touched:
        SEEN["proven, with re-checks"] += 1
    if replay is not None and replay.pending:
        SEEN["proven, with pending collections"] += 1
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


def check_backfill(
    stepper: BackfillStepper,
    world: World,
    margin: float,
    backfilled: set[tuple[int, tuple[str, Decimal], int]],
) -> None:
    """The read mode's own guarantee, once a backfill that counts has finished: every
    collection whose data did not change after the backfill's last write from its eventually
    consistent read (or after it began, when it made none), and whose marker's key nothing
    but a finished backfill (``backfilled``: its versions) wrote since its window began (not
    a maintainer, a backfill stopped half way, or the application's clash), holds its
    marker exactly when it holds data. (A listing needs less: what changed after the
    backfill began is in the log; this is what the window itself promises.)"""
    report = stepper.result
    if stepper.mode != "read" or stepper.error is not None or report is None:
        return
    if report.clashes or report.uncounted is not None:
        return
    since = stepper.blind if stepper.blind is not None else stepper.began
    window = stepper.began - margin - CREATED_ROUNDING
    wrong = []
    for pk in sorted({key[0] for key in world.history}):
        at_marker = (pk, MARKER_SK)
        versions = world.history.get(at_marker, [])
        if any(
            t >= window and (world.generation, at_marker, i) not in backfilled
            for i, (t, _) in enumerate(versions)
        ):
            continue
        if _data_changed(world, pk, since):
            continue
        holds = any(key[0] == pk and not is_marker(item) for key, item in world.table.items())
        found = world.table.get(at_marker)
        SEEN["read-mode backfill: collections checked"] += 1
        if holds != (found is not None and is_marker(found)):
            wrong.append(pk)
    if wrong:
        raise BackfillWrong(
            f"the read-mode backfill finished with the markers of {wrong} wrong (its last "
            f"blind write at {since - world.now:+.1f} s); the table holds {sorted(world.table)}"
        )


def _data_changed(world: World, pk: str, since: float) -> bool:
    """Whether an item of collection ``pk`` that is data (not ddbkeys' marker) was written or
    removed at ``since`` or later."""
    for key, versions in world.history.items():
        if key[0] != pk:
            continue
        previous: dict[str, object] | None = None
        for t, item in versions:
            data = (previous is not None and not is_marker(previous)) or (
                item is not None and not is_marker(item)
            )
            if data and t >= since:
                return True
            previous = item
    return False


def _writes_a_marker(step: object) -> bool:
    return (
        isinstance(step, Request)
        and step.operation in ("put_item", "delete_item")
        and step.params.get("TableName") == TABLE
    )
