"""``index drop`` against maintainers left running, under random schedules (helper-94 F4, F10).

A Hypothesis state machine drives a model of one table (four collections, each with a data
item; their markers; the marker index's status) on a model clock, and three actors stepped a
request at a time, in any order: ``drop_flow`` and two maintainers that mark collections
(``MarkerCore.mark``, as a follower, a backfill or the Lambda handler does), each with its own
core and a description of the table as old as the schedule makes it. Any request may be
throttled (the retry layer waits, then sends it again); the clock moves by the schedule's
ticks, within and past ``RECHECK``; the index leaves DELETING when the schedule says.

The contract checked: once the drop has returned, the table holds no marker, and no maintainer
step writes one later. It rests on a maintainer describing the table again before a put once
its description is ``recheck`` seconds old (a retried put too), and the drop waiting
``recheck`` + 1 s between deleting the index and removing the markers; a request takes effect
when it is sent, but a put the schedule holds in the network (helper-101 F6), which lands when
the schedule delivers it: a marker it lands after the drop returned must be gone when its
maintainer's mark ends (answered that late, the maintainer looks again and takes it back).
Each maintainer's end is also checked: only the "index gone" error, never a write refused
otherwise.

The negative control (maintainers that never look at the index again, as before helper-94's
F4) must be caught; the drop's wait is held by schedules kept below (the random search finds
its absence only rarely: it needs the maintainer's look to stay fresh over the whole drop).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ddbkeys._core.steps import Pause, Request
from ddbkeys._errors import DdbKeysError
from ddbkeys._retry import RetryPolicy
from ddbkeys._schema import table_info
from ddbkeys.partition_keys._index.drop import drop_flow
from ddbkeys.partition_keys._index.marker_core import RECHECK, MarkerCore
from ddbkeys.partition_keys._index.markers import (
    DEFAULT_INDEX,
    DEFAULT_MARKER_SORT_KEY,
    VERSION_ATTRIBUTE,
)

TABLE = "orders"
KEYS = ("a", "b", "c", "d")
MARKER_SK = DEFAULT_MARKER_SORT_KEY["N"]
ACTORS = ("drop", "m0", "m1")
TICKS = (0.5, 2.0, 5.0, 9.9, RECHECK, RECHECK + 1.0, 30.0)

#: 300 schedules of up to 40 steps (derandomized: the same on every run); the negative
#: control's first find comes within its CONTROL.
CONTROL = 600
SCHEDULES = settings(
    max_examples=300, stateful_step_count=40, deadline=None, derandomize=True, database=None
)


#: Runs, and drops that returned, over a test: the checker must see drops end.
SEEN: Counter[str] = Counter()


class DropWrong(AssertionError):
    """The contract does not hold: a marker after the drop returned."""


def described(status: str | None) -> dict[str, Any]:
    names = [("pk", "S", "HASH"), ("sk", "N", "RANGE")]
    index = {
        "IndexName": DEFAULT_INDEX,
        "KeySchema": [{"AttributeName": "ddbkeys_pk", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
        "IndexStatus": status,
    }
    return {
        "Table": {
            "TableName": TABLE,
            "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t, _ in names],
            "KeySchema": [{"AttributeName": n, "KeyType": k} for n, _, k in names],
            **({"GlobalSecondaryIndexes": [index]} if status else {}),
        }
    }


def refused(code: str, **extra: Any) -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": code}, **extra}
    return ClientError(response, "Op")


def marker_item(pk: str) -> dict[str, Any]:
    return {
        "pk": {"S": pk},
        "sk": MARKER_SK,
        "ddbkeys_pk": {"S": pk},
        "ddbkeys_type": {"S": "marker"},
        VERSION_ATTRIBUTE: {"S": "model"},
    }


class Actor:
    """A flow stepped a request at a time: a request takes effect when it is sent (or, one
    ``held`` in the network, when the schedule delivers it); its answer (or error) is handed to
    the flow at the actor's next step; a pause holds it until due."""

    def __init__(self, flow: Generator[Any, Any, Any]) -> None:
        self.flow = flow
        self.held: Request | None = None
        self.answer: Any = None
        self.waits_until: float | None = None
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None


class DropMachine(RuleBasedStateMachine):
    #: Whether maintainers look at the index again (a negative control: never, as before).
    looks_again = True
    #: The maintainers' core (a negative control: one that never takes back a late put).
    maintainers: type[MarkerCore] = MarkerCore

    def __init__(self) -> None:
        super().__init__()
        SEEN["runs"] += 1
        self.now = 0.0
        self.status: str | None = "ACTIVE"
        self.deleting_since = 0.0
        self.markers: set[str] = {"a", "b"}
        self.actors: dict[str, Actor | None] = dict.fromkeys(ACTORS)
        self.cores = {name: self.maintainer() for name in ("m0", "m1")}
        self.throttled: set[str] = set()
        self.holding: set[str] = set()  # maintainers whose next put is held in the network
        self.late: dict[str, str] = {}  # markers a held put wrote after the drop returned: whose
        self.dropped = False

    def clock(self) -> float:
        return self.now

    def core(self) -> MarkerCore:
        info = table_info(described(self.status)["Table"], TABLE)
        return MarkerCore(TABLE, info=info, deadline=None, retry=RetryPolicy(clock=self.clock))

    def maintainer(self) -> MarkerCore:
        info = table_info(described(self.status)["Table"], TABLE)
        core = self.maintainers(
            TABLE, info=info, deadline=None, retry=RetryPolicy(clock=self.clock)
        )
        if not self.looks_again:
            core.recheck = math.inf
        return core

    # --- the model table --------------------------------------------------------------------

    def apply(self, request: Request, late: str | None = None) -> Any:
        params: Any = request.params
        operation = request.operation
        if operation == "describe_table":
            return described(self.status)
        if operation == "update_table":
            if self.status is None:
                return refused("ResourceNotFoundException")
            self.status, self.deleting_since = "DELETING", self.now
            return {}
        pk = params.get("Key", params.get("Item", {})).get("pk", {}).get("S")
        if operation == "put_item":
            if pk in self.markers:
                return refused("ConditionalCheckFailedException", Item=marker_item(pk))
            if self.dropped:
                if late is None:
                    raise DropWrong(f"a marker of {pk!r} put after the drop returned")
                self.late[pk] = late  # (sent before, held in the network: taken back, later)
                SEEN["late"] += 1
            self.markers.add(pk)
            return {}
        if operation == "delete_item":
            if pk not in self.markers:
                return refused("ConditionalCheckFailedException")
            self.markers.discard(pk)
            self.late.pop(pk, None)
            return {}
        if operation == "scan":
            return {"Items": [marker_item(k) for k in sorted(self.markers)]}
        raise AssertionError(f"unexpected request {operation}")

    # --- the actors -------------------------------------------------------------------------

    def advance(self, actor: Actor, name: str) -> None:
        try:
            if isinstance(actor.answer, BaseException):
                step = actor.flow.throw(actor.answer)
            else:
                step = actor.flow.send(actor.answer)
        except StopIteration as done:
            actor.done, actor.result = True, done.value
            return
        except DdbKeysError as exc:
            actor.done, actor.error = True, exc
            return
        actor.answer = None
        if isinstance(step, Pause):
            actor.waits_until = self.now + step.seconds
        elif name in self.throttled:
            self.throttled.discard(name)
            actor.answer = refused("ProvisionedThroughputExceededException")
        elif name in self.holding and step.operation == "put_item":
            self.holding.discard(name)
            actor.held = step  # (sent; lands when delivered)
        else:
            actor.answer = self.apply(step)

    @rule(name=st.sampled_from(("m0", "m1")))
    def maintainer_steps(self, name: str) -> None:
        self.step(name)

    @rule(steps=st.integers(1, 6))
    def drop_steps(self, steps: int) -> None:
        """A few of the drop's requests in a row (one at a time, the drop rarely ended)."""
        for _ in range(steps):
            self.step("drop")

    def step(self, name: str) -> None:
        """One step of ``name``: its answer handed to it, its next request sent."""
        actor = self.actors[name]
        if actor is None or actor.done:
            return
        if actor.held is not None:  # (its answer has not come)
            return
        if actor.waits_until is not None:
            if self.now < actor.waits_until:
                return
            actor.waits_until = None
        self.advance(actor, name)
        if actor.done:
            self.ended(name, actor)

    def ended(self, name: str, actor: Actor) -> None:
        if name == "drop":
            if actor.error is not None:  # (the index DELETING for 600 s: said, markers gone)
                assert "is still DELETING after" in str(actor.error), actor.error
                return
            self.dropped = True
            SEEN["dropped"] += 1
            if self.markers:
                raise DropWrong(f"the drop returned with markers {sorted(self.markers)} left")
            return
        self.actors[name] = None
        left = sorted(k for k, whose in self.late.items() if whose == name and k in self.markers)
        if left:  # (helper-101 F6: a put held past the drop's wait landed after its sweep)
            raise DropWrong(f"{name}'s put held in the network left markers {left}")
        if actor.error is not None:  # (only the index gone, or never there for this one)
            said = str(actor.error)
            assert any(
                w in said for w in ("is gone", "being deleted", "has no index", "not ACTIVE")
            )
            assert self.status != "ACTIVE", said

    @rule(name=st.sampled_from(("m0", "m1")), key=st.sampled_from(KEYS))
    def maintainer_marks(self, name: str, key: str) -> None:
        if self.actors[name] is None:
            actor = Actor(self.cores[name].mark(key))
            self.actors[name] = actor
            self.advance(actor, name)  # (its first request, sent now)
            if actor.done:
                self.ended(name, actor)

    @rule(name=st.sampled_from(("m0", "m1")))
    def maintainer_restarts(self, name: str) -> None:
        """A new process (or Lambda environment) with a description of the table as of now."""
        if self.actors[name] is None:
            self.cores[name] = self.maintainer()

    @rule(name=st.sampled_from(ACTORS))
    def throttle_next(self, name: str) -> None:
        self.throttled.add(name)

    @rule(name=st.sampled_from(("m0", "m1")), key=st.sampled_from(KEYS))
    def held_put(self, name: str, key: str) -> None:
        """The maintainer marks, and its next put is held in the network (a proxy, a paused
        VM) until :meth:`deliver`: it lands then, and its answer comes then."""
        self.holding.add(name)
        self.maintainer_marks(name, key)

    @rule()
    def drop_to_its_end(self) -> None:
        """The drop runs on, its waits waited, to its end (a schedule where nothing else moves
        meanwhile: rare otherwise)."""
        actor = self.actors["drop"]
        for _ in range(40):
            if actor is None or actor.done:
                return
            if actor.waits_until is not None:
                self.tick(max(actor.waits_until - self.now, 0.0))
            self.step("drop")

    @rule(name=st.sampled_from(("m0", "m1")))
    def deliver(self, name: str) -> None:
        actor = self.actors[name]
        if actor is not None and actor.held is not None:
            request, actor.held = actor.held, None
            actor.answer = self.apply(request, late=name)

    @rule(key=st.sampled_from(KEYS))
    def unmarked_by_the_application(self, key: str) -> None:
        """A collection emptied and filled again: its marker gone (a maintainer marks it)."""
        self.markers.discard(key)

    @precondition(lambda self: self.actors["drop"] is None)
    @rule(wait=st.booleans())
    def drop(self, wait: bool) -> None:
        """``index drop`` (``wait``: until the index is gone, at most 600 s)."""
        actor = Actor(drop_flow(self.core(), None, wait, 600.0))
        self.actors["drop"] = actor
        while not actor.done and actor.waits_until is None:  # (to its wait: the index deleted)
            self.step("drop")

    @precondition(lambda self: self.status == "DELETING")
    @rule()
    def index_deleted(self) -> None:
        self.status = None

    @precondition(lambda self: self.status == "ACTIVE" and self.actors["drop"] is None)
    @rule()
    def index_deleted_elsewhere(self) -> None:
        """The GSI deleted with the console (or a drop killed after its UpdateTable): the
        drop, run then, finds no index (helper-98 F1: it did not wait, and a follower put
        188 markers back)."""
        self.status, self.deleting_since = "DELETING", self.now

    @rule(steps=st.integers(1, 6))
    def drop_wakes(self, steps: int) -> None:
        """Time passes until the drop's wait ends (an index DELETING is gone by then, maybe),
        and it goes on a few requests."""
        actor = self.actors["drop"]
        if actor is not None and actor.waits_until is not None:
            self.tick(max(actor.waits_until - self.now, 0.0))
        self.drop_steps(steps)

    @rule(seconds=st.sampled_from(TICKS))
    def tick(self, seconds: float) -> None:
        """The clock moves; an index DELETING for 5 s is gone (the service takes minutes)."""
        self.now += seconds
        if self.status == "DELETING" and self.now - self.deleting_since >= 5.0:
            self.status = None

    @invariant()
    def no_marker_after_the_drop(self) -> None:
        """None, but those a held put landed late, until its maintainer's mark ends."""
        if self.dropped and set(self.markers) - set(self.late):
            raise DropWrong(f"markers {sorted(self.markers)} after the drop returned")

    def teardown(self) -> None:
        """Every held put delivered and every maintainer run to its end: no marker is left
        after a drop that returned."""
        for name in ("m0", "m1"):
            self.deliver(name)
            for _ in range(20):
                if self.actors[name] is None:
                    break
                self.tick(RECHECK + 1.0)
                self.step(name)
        if self.dropped and self.markers:
            raise DropWrong(f"markers {sorted(self.markers)} left after the drop returned")


def test_no_marker_outlives_a_drop_whatever_the_maintainers_do() -> None:
    SEEN.clear()
    run_state_machine_as_test(DropMachine, settings=SCHEDULES)
    assert SEEN["dropped"] >= SEEN["runs"] / 4, SEEN  # (schedules where a drop ended)
    assert SEEN["late"] >= 10, SEEN  # (a held put landed after the drop returned, taken back)


class NoLookAgain(DropMachine):
    looks_again = False


class NoTakeBack(MarkerCore):
    """A maintainer that looks again, but never takes back a put answered after the drop's
    wait (as before helper-101 F6's fix)."""

    def _landed_late(self, *_: object) -> Generator[Any, Any, None]:
        return
        yield


class LeavesLatePuts(DropMachine):
    maintainers = NoTakeBack


@pytest.mark.parametrize("machine", [NoLookAgain, LeavesLatePuts])
def test_the_checker_finds_maintainers_broken_so(machine: type[DropMachine]) -> None:
    """The negative controls: maintainers that never look again (as before helper-94 F4), and
    ones that never take back a late put (as before helper-101 F6), must be caught."""
    with pytest.raises(Exception) as caught:
        chosen = settings(
            SCHEDULES, max_examples=CONTROL, phases=(Phase.generate,), report_multiple_bugs=False
        )
        run_state_machine_as_test(machine, settings=chosen)
    found = caught.value
    errors = found.exceptions if isinstance(found, BaseExceptionGroup) else (found,)
    assert errors and all(isinstance(e, DropWrong) for e in errors), errors


# --- schedules kept: each breaks a maintainer without one part of its re-check --------------


def test_a_put_retried_after_a_long_throttle_looks_again_first() -> None:
    """A put throttled while the look was fresh, retried 30 s later after the drop returned:
    without the look again inside the attempt, it wrote a marker into a table without the
    index."""
    machine = DropMachine()
    machine.throttle_next("m0")
    machine.maintainer_marks("m0", "c")  # (its put refused: throttled)
    machine.step("m0")  # (the retry layer's wait)
    machine.drop(wait=False)
    machine.step("drop")  # (the index deleted)
    machine.step("drop")  # (the drop's wait, recheck + 1 s)
    machine.tick(30.0)
    for _ in range(5):  # (the description, the Scan, two deletes, the end)
        machine.step("drop")
    assert machine.dropped and not machine.markers
    machine.step("m0")  # (the put again: the table described first, the index gone)
    machine.step("m0")
    assert machine.actors["m0"] is None and not machine.markers


def test_a_maintainer_told_the_index_is_gone_says_so_at_its_next_call() -> None:
    """The Lambda handler goes on to the next collection after one's error: that next mark,
    within ``recheck`` of the look that found the index gone, must not write either."""
    machine = DropMachine()
    machine.maintainer_marks("m0", "c")  # (written: the index is there)
    machine.step("m0")
    assert machine.markers == {"a", "b", "c"}
    machine.drop(wait=False)
    machine.step("drop")  # (the index deleted)
    machine.step("drop")  # (the drop's wait begins)
    machine.tick(RECHECK)
    machine.unmarked_by_the_application("d")
    machine.maintainer_marks("m0", "d")  # (describes: DELETING, an error)
    machine.step("m0")
    assert machine.actors["m0"] is None and "d" not in machine.markers
    machine.tick(1.0)
    for _ in range(7):  # (the wait's end, the description, the Scan, three deletes, the end)
        machine.step("drop")
    assert machine.dropped and not machine.markers
    machine.maintainer_marks("m0", "d")  # (within recheck of its last look)
    assert machine.actors["m0"] is None and not machine.markers


def test_a_drop_that_finds_the_index_gone_waits_all_the_same() -> None:
    """helper-98 F1: a drop killed in its wait and run again, or run just after the GSI was
    deleted with the console, found no index and did not wait: a follower whose look was
    fresh put 188 markers back. It waits whatever it finds."""
    machine = DropMachine()
    machine.index_deleted_elsewhere()
    machine.drop(wait=False)
    for _ in range(3):  # (the description; the wait, begun)
        machine.step("drop")
    assert not machine.dropped and machine.markers == {"a", "b"}
    machine.maintainer_marks("m0", "c")  # (its look fresh: written, before the Scan)
    machine.step("m0")
    machine.tick(RECHECK + 1.0)
    for _ in range(7):
        machine.step("drop")
    assert machine.dropped and not machine.markers
    machine.maintainer_marks("m0", "d")  # (its look stale: described, DELETING: an error)
    machine.step("m0")
    assert machine.actors["m0"] is None and not machine.markers


def test_a_put_held_in_the_network_past_the_drop_s_wait_is_taken_back() -> None:
    """helper-101 F6: a follower's put, sent on a fresh look, held 25 s by a proxy, landed
    after the drop had waited its ``recheck`` + 1 s and swept: a marker after the drop's exit
    0. Answered that late, the maintainer describes the table again and takes it back."""
    machine = DropMachine()
    machine.unmarked_by_the_application("a")
    machine.held_put("m0", "a")  # (its look fresh: sent, and held)
    machine.drop(wait=False)
    machine.drop_to_its_end()
    assert machine.dropped and not machine.markers
    machine.tick(14.0)
    machine.deliver("m0")  # (it lands now, after the sweep)
    assert machine.markers == {"a"} and machine.late == {"a": "m0"}
    machine.step("m0")  # (answered: the table described, the index gone)
    machine.step("m0")  # (the marker taken back)
    machine.step("m0")  # (the error: the index is gone)
    assert machine.actors["m0"] is None and not machine.markers


def test_a_put_answered_exactly_the_drop_s_wait_after_its_look_is_taken_back_too() -> None:
    """Found by the search: a put sent on a look as old as the index's deletion, answered
    exactly ``recheck`` + 1 s later, just after the drop's sweep at that same moment, was not
    counted late (``>``, not ``>=``): its marker stayed."""
    machine = DropMachine()
    machine.drop(wait=False)  # (the index deleted now, the maintainer's look as old)
    machine.held_put("m0", "a")
    machine.drop_to_its_end()  # (the sweep, ``recheck`` + 1 s later)
    assert machine.dropped and not machine.markers
    machine.deliver("m0")  # (it lands at that moment, after the sweep)
    machine.maintainer_steps("m0")
    machine.teardown()
    assert not machine.markers
