"""The gapless sequence's core, driven by hand without a server or a client: the commit flow is
sent the answers (and thrown the cancellations) DynamoDB would give, and each row says which step
comes next and what the call ends with."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import attempts
from ddbkeys._core.steps import Flow, Pause, Request, Step
from ddbkeys._errors import ConfigurationError, DdbKeysError
from ddbkeys._retry import Deadline, RetryPolicy
from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.ids import (
    CounterStateError,
    ItemExistsError,
    ItemKeyClashError,
    SequenceExhaustedError,
)
from ddbkeys.ids._base import CounterItem, absent
from ddbkeys.ids._counter_item import COUNTER_ONLY
from ddbkeys.ids._gapless_core import Commit, GaplessCore, Pending, earliest
from ddbkeys.ids._gapless_state import CounterState

MAX = 10**38 - 1
#: (A clock that stands still: a transaction takes no time, so a lost race waits from
#: base_delay.)
POLICY = RetryPolicy(
    max_attempts=10, base_delay=0.01, max_delay=0.1, random=lambda: 0.5, clock=lambda: 0.0
)
JITTER = POLICY.full_jitter(0)  # after a conflict
BACKOFF = POLICY.exponential(0)  # after throttling
#: After the n-th lost race in a row: half of 4 round trips (base_delay, as the clock stands
#: still) doubled n - 1 times (random() is 0.5), at most max_delay or 16 round trips.
LOST = {n: 0.5 * min(0.16, 0.04 * 2 ** (n - 1)) for n in (1, 2, 3)}
#: Table ``users`` (key ``pk``, a string) and where the sequence's counter lives in it.
INFO = TableInfo("users", KeyAttribute("pk", "S"), None, (), {}, 0, 0)
WHERE = CounterItem("users", {"pk": {"S": "sequence"}}, "last_id")


@dataclass
class Sequence:
    """What a gapless sequence is without its client: its core, what it knows of its counter
    (``state``), and the retry layer its requests go through, counted in ``usage``."""

    core: GaplessCore
    state: CounterState
    usage: Usage = field(default_factory=Usage)

    def attempts(
        self, attempt: Callable[[int], Flow[Any]], what: str, deadline: Deadline
    ) -> Flow[Any]:
        return attempts(
            attempt,
            what=what,
            table="users",
            policy=self.core.policy,
            deadline=deadline,
            usage=self.usage,
        )


def sequence(
    *, id_in_key: bool = False, last: int | None = 3, policy: RetryPolicy = POLICY
) -> Sequence:
    """A sequence on table ``users`` whose counter is ``{"pk": "sequence"}`` and, unless ``last``
    is None, knows the counter's value."""
    core = GaplessCore("users", id_attribute="pk" if id_in_key else "id", policy=policy)
    return Sequence(core, CounterState(last))


def items(id_in_key: bool, n: int = 2) -> list[Any]:
    return [{} if id_in_key else {"pk": {"S": f"k{i + 1}"}} for i in range(n)]


def commit(
    seq: Sequence,
    n: int = 2,
    *,
    atomic: bool = False,
    counter: CounterItem = WHERE,
    deadline: Deadline | None = None,
) -> Flow[Any]:
    """The flow of one commit of ``n`` items (the id is the key when ``id_attribute`` is pk)."""
    batch = Commit(items(seq.core.id_attribute == "pk", n), INFO, counter, atomic=atomic)
    return seq.core.write(batch, deadline or Deadline(None), seq.state, seq.attempts)


def cancelled(
    codes: tuple[str, ...], counter_holds: str | None = "7", sent: Any = None
) -> ClientError:
    """The TransactionCanceledException DynamoDB answers with: action 0 is the counter (its old
    image holds ``counter_holds``), the others the items (an old image at the key of the item
    ``sent`` put there, another writer's, as DynamoDB returns it)."""
    puts = [a["Put"]["Item"] for a in sent.params["TransactItems"][1:]] if sent else []
    reasons: list[dict[str, Any]] = []
    for n, code in enumerate(codes):
        reason: dict[str, Any] = {"Code": code}
        if code == "ConditionalCheckFailed":
            if n == 0 and counter_holds is not None:
                reason["Item"] = {"pk": {"S": "sequence"}, "last_id": {"N": counter_holds}}
            elif n:
                reason["Item"] = {"pk": puts[n - 1]["pk"], "note": {"S": f"old{n}"}}
        elif code not in ("None", "TransactionConflict"):
            reason["Message"] = f"the server says {code}"
        reasons.append(reason)
    response: Any = {
        "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
        "CancellationReasons": reasons,
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    return ClientError(response, "TransactWriteItems")


def shown(step: Step) -> tuple[Any, ...]:
    """A step, for the tables: ("get",), ("pause", seconds), or ("tx", last, ids)."""
    if isinstance(step, Pause):
        return ("pause", step.seconds)
    assert isinstance(step, Request)
    if step.operation == "get_item":
        return ("get",)
    assert step.operation == "transact_write_items"
    actions = step.params["TransactItems"]
    update = actions[0]["Update"]
    last = int(update["ExpressionAttributeValues"][":last"]["N"])
    new = int(update["ExpressionAttributeValues"][":new"]["N"])
    ids = []
    for action in actions[1:]:
        item = action["Put"]["Item"]
        ids.append(int(item["id"]["N"]) if "id" in item else int(item["pk"]["S"]))
    assert new == last + len(ids)
    return ("tx", last, ids)


def until_request(
    flow: Flow[Any], step: Step, holds: str | None = "3"
) -> tuple[list[tuple[Any, ...]], Step]:
    """The steps from ``step`` up to the next TransactWriteItems, and that one (a GetItem of
    the counter is answered with ``holds``, a pause is taken at once)."""
    seen = [shown(step)]
    held = {} if holds is None else {"Item": {"last_id": {"N": holds}}}
    while seen[-1][0] != "tx":
        step = flow.send(held if seen[-1][0] == "get" else None)
        seen.append(shown(step))
    return seen, step


def finish(flow: Flow[Any]) -> Any:
    """Answer the transaction in flight as applied; what the flow returns."""
    with pytest.raises(StopIteration) as done:
        flow.send({})
    return done.value.value


# --- the first request ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("last", "steps", "condition"),
    [
        (3, [("tx", 3, [4, 5])], "#v = :last"),
        (None, [("get",), ("tx", 3, [4, 5])], "#v = :last"),  # unknown: read it first
        # holds 0, or no counter yet: and an item of yours there is not made a counter
        (0, [("tx", 0, [1, 2])], f"{COUNTER_ONLY} AND (attribute_not_exists(#v) OR #v = :last)"),
        (MAX - 2, [("tx", MAX - 2, [MAX - 1, MAX])], "#v = :last"),  # the last ids there are
    ],
)
def test_the_first_request(last: int | None, steps: list[Any], condition: str) -> None:
    seq = sequence(last=last)
    flow = commit(seq)
    seen, tx = until_request(flow, next(flow))
    assert seen == steps
    assert isinstance(tx, Request)
    update = tx.params["TransactItems"][0]["Update"]
    assert update["ConditionExpression"] == condition
    assert update["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
    assert tx.params["ClientRequestToken"]
    puts = [a["Put"] for a in tx.params["TransactItems"][1:]]
    for put in puts:  # (no item at the key, whatever the table's key is now)
        assert put["ExpressionAttributeNames"]["#k0"] == "pk"
        assert (put["ConditionExpression"], put["ExpressionAttributeNames"]) == absent(
            put["Item"], ["pk", "id"]
        )
    assert (tx.write, tx.items, tx.count_refused) == (True, 2, True)
    base = steps[-1][1]
    assert finish(flow) == [base + 1, base + 2]
    assert seq.state.last == base + 2


@pytest.mark.parametrize("last", [MAX, MAX - 1])
def test_a_counter_at_the_largest_number_gives_no_more_ids(last: int) -> None:
    with pytest.raises(SequenceExhaustedError, match=r"2 more id\(s\) would pass 10\*\*38 - 1"):
        next(commit(sequence(last=last)))
    assert shown(next(commit(sequence(last=MAX - 1), 1))) == ("tx", MAX - 1, [MAX])


# --- every cancellation the strategy reads ----------------------------------------------------

CCF, TC, NONE = "ConditionalCheckFailed", "TransactionConflict", "None"


@dataclass
class Row:
    """A cancelled commit of two items after 3 (the counter's old image holds ``holds``): the
    steps that follow (up to the next transaction), and what the call ends with once that one
    is applied (``exists``: the index of an item that failed with ItemExistsError)."""

    name: str
    codes: tuple[str, str, str]
    id_in_key: bool
    atomic: bool
    then: list[tuple[Any, ...]] | type[BaseException]
    ends: list[int | str] = field(default_factory=list)
    holds: str | None = "7"
    conflicts: int = 1


MOVED = [("pause", LOST[1]), ("get",)]
ROWS = [
    # The counter moved: every writer that lost to that commit learnt its value from the old
    # image, and only one could win with it at once: a wait of its own, then a fresh read.
    Row("counter moved", (CCF, NONE, NONE), False, False, [*MOVED, ("tx", 7, [8, 9])], [8, 9]),
    Row("counter moved, atomic", (CCF, NONE, NONE), False, True, [*MOVED, ("tx", 7, [8, 9])]),
    Row("counter moved, id key", (CCF, NONE, NONE), True, False, [*MOVED, ("tx", 7, [8, 9])]),
    Row(
        "counter moved to 0",
        (CCF, NONE, NONE),
        False,
        False,
        [*MOVED, ("tx", 0, [1, 2])],
        holds="0",
    ),
    Row("counter gone", (CCF, NONE, NONE), False, False, [*MOVED, ("tx", 0, [1, 2])], holds=None),
    Row(
        "counter moved to the top",  # (the old image is enough: no wait, no read)
        (CCF, NONE, NONE),
        False,
        False,
        SequenceExhaustedError,
        holds=str(MAX),
        conflicts=0,
    ),
    Row("counter holds a string", (CCF, NONE, NONE), False, False, CounterStateError, [], "x", 0),
    # The id is the key and the counter moved: the racing writer's items hold those keys.
    Row("racing writer's item", (CCF, CCF, NONE), True, False, [*MOVED, ("tx", 7, [8, 9])]),
    Row("racing writer's items", (CCF, CCF, CCF), True, True, [*MOVED, ("tx", 7, [8, 9])]),
    # The id is not the key: an item that exists fails alone (group) or all (atomic).
    Row("item exists", (NONE, CCF, NONE), False, False, [("tx", 3, [4])], ["exists", 4], "7", 0),
    Row("item exists, atomic", (NONE, CCF, NONE), False, True, ItemExistsError, conflicts=0),
    Row("both exist", (NONE, CCF, CCF), False, False, [], ["exists", "exists"], "7", 0),
    Row(
        "item exists, counter moved",
        (CCF, NONE, CCF),
        False,
        False,
        [*MOVED, ("tx", 7, [8])],
        [8, "exists"],
    ),
    Row(
        "item exists, counter moved, atomic",
        (CCF, CCF, NONE),
        False,
        True,
        ItemExistsError,
        conflicts=0,
    ),
    Row(
        "item exists, throttled",
        (NONE, CCF, "ThrottlingError"),
        False,
        False,
        [("tx", 3, [4])],
        ["exists", 4],
        "7",
        0,
    ),
    Row(
        "item exists, conflict",
        (TC, CCF, NONE),
        False,
        False,
        [("tx", 3, [4])],
        ["exists", 4],
        "7",
        0,
    ),
    # The id is the key and the counter held: a key an id needs holds an item the sequence did
    # not write (the counter is behind the table): every item of the batch fails.
    Row("id's key taken", (NONE, CCF, NONE), True, False, [], ["exists", "exists"], "7", 0),
    Row("id's key taken, atomic", (NONE, NONE, CCF), True, True, ItemExistsError, conflicts=0),
    # Conflicts: a full-jitter wait, then a fresh read of the counter.
    Row("conflict on the counter", (TC, NONE, NONE), False, False, [("pause", JITTER), ("get",)]),
    Row("conflict on an item", (NONE, TC, NONE), True, True, [("pause", JITTER), ("get",)]),
    Row("no reason given", (NONE, NONE, NONE), False, False, [("pause", JITTER), ("get",)]),
    # Throttling: an exponential wait (not a lost race), then a fresh read.
    *[
        Row(code, (NONE, code, NONE), False, False, [("pause", BACKOFF), ("get",)], conflicts=0)
        for code in ("ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded")
    ],
    Row(
        "throttled and conflict",
        (TC, "ThrottlingError", NONE),
        False,
        False,
        [("pause", BACKOFF), ("get",)],
        conflicts=0,
    ),
    # The counter moved wins over throttling and conflicts: its old image is news.
    Row(
        "moved and throttled",
        (CCF, "ThrottlingError", TC),
        False,
        False,
        [*MOVED, ("tx", 7, [8, 9])],
    ),
    # A request error: no retry can fix it.
    *[
        Row(code, (NONE, NONE, code), id_in_key, False, DdbKeysError, conflicts=0)
        for code in ("ValidationError", "ItemCollectionSizeLimitExceeded", "SomethingNew")
        for id_in_key in (False, True)
    ],
    Row(
        "invalid beats a condition",
        (CCF, "ValidationError", NONE),
        False,
        True,
        DdbKeysError,
        conflicts=0,
    ),
    Row(
        "invalid beats throttling",
        ("ThrottlingError", NONE, "SomethingNew"),
        False,
        False,
        DdbKeysError,
        conflicts=0,
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_every_cancellation(row: Row) -> None:
    seq = sequence(id_in_key=row.id_in_key)
    flow = commit(seq, atomic=row.atomic)
    first = next(flow)
    assert shown(first) == ("tx", 3, [4, 5])
    error = cancelled(row.codes, row.holds, first)
    if not isinstance(row.then, list):
        with pytest.raises(row.then) as raised:
            flow.throw(error)
        if row.then is DdbKeysError:
            assert raised.value.code == "TransactionCanceledException"  # type: ignore[attr-defined]
            bad = next(c for c in row.codes if c not in (NONE, CCF, TC, "ThrottlingError"))
            assert f"{bad} (the server says {bad})" in str(raised.value)
        if row.then is ItemExistsError:
            assert "used up no id" in str(raised.value)
        assert seq.usage.conflicts == row.conflicts
        return
    if not row.then:  # every item failed: the call ends without another request
        with pytest.raises(StopIteration) as done:
            flow.throw(error)
        results = done.value.value
    else:
        now = row.holds if row.codes[0] == CCF else "3"  # (what a fresh read finds)
        seen, step = until_request(flow, flow.throw(error), now)
        assert seen[: len(row.then)] == row.then
        assert isinstance(first, Request) and isinstance(step, Request)
        assert step.params["ClientRequestToken"] != first.params["ClientRequestToken"]
        if row.then[-1] == ("get",):  # read again: 3 still
            assert seen[-1] == ("tx", 3, [4, 5])
            row.ends = [4, 5]
        elif not row.ends:  # (moved: the ids after what the read found)
            last = seen[-1][1]
            row.ends = [last + 1, last + 2]
        results = finish(flow)
    assert [r if isinstance(r, int) else "exists" for r in results] == row.ends
    for result in results:
        if isinstance(result, ItemExistsError):
            assert "already exists in table 'users'" in str(result)
    assert seq.usage.conflicts == row.conflicts


def test_the_existing_item_errors_say_which_item() -> None:
    # The id is not the key: the item's own key.
    flow = commit(sequence(), atomic=True)
    sent = next(flow)
    with pytest.raises(ItemExistsError) as raised:
        flow.throw(cancelled((NONE, NONE, CCF), sent=sent))
    assert str(raised.value) == (
        "An item with the key {'pk': 'k2'} already exists in table 'users'; it was not written "
        "and used up no id. Nor were the other 1 item(s) of this put: they are written "
        "together or not at all."  # (a helper read it as if only that one failed)
    )
    assert raised.value.key == {"pk": {"S": "k2"}}
    # The id is the key: the id's key, from the old image, and where the counter is.
    flow = commit(sequence(id_in_key=True), atomic=True)
    sent = next(flow)
    with pytest.raises(ItemExistsError) as raised:
        flow.throw(cancelled((NONE, NONE, CCF), sent=sent))
    assert str(raised.value) == (
        "Id 5 is taken: an item with the key {'pk': '0000000005'} already exists in table "
        "'users', but sequence 'sequence' is at 3 (the counter is behind the ids in the table: "
        "was it set back?). The item was not written and used up no id. Nor were the other 1 "
        "item(s) of this put: they are written together or not at all."
    )


def test_lost_races_in_a_row_wait_longer_each_time_then_read_again() -> None:
    """Every loser of one commit learns the same value from the old image: none goes again
    with it at once (only one could win). Each waits a full-jitter time scaled by how long
    the lost transaction took (at least base_delay), doubled with each loss in a row, then
    reads the counter afresh."""
    seq = sequence()
    flow = commit(seq)
    next(flow)
    for n, (holds, then) in enumerate([("7", "8"), ("9", "11"), ("12", "12")], start=1):
        step = flow.throw(cancelled((CCF, NONE, NONE), holds))
        assert shown(step) == ("pause", LOST[n])
        assert shown(flow.send(None)) == ("get",)
        step = flow.send({"Item": {"last_id": {"N": then}}})
        assert shown(step) == ("tx", int(then), [int(then) + 1, int(then) + 2])
    assert finish(flow) == [13, 14]
    assert (seq.state.last, seq.usage.conflicts, seq.usage.retries) == (14, 3, 3)


def test_the_wait_after_a_lost_race_follows_the_round_trip() -> None:
    """A slow attempt (a busy server) makes a longer wait: 4 times its round trip (the
    counter's read, when it reads it, and the transaction), doubled with each loss in a row, up
    to max_delay or 16 round trips, whichever is longer."""
    # The lost attempts took 30 ms (a transaction alone: the counter was known), then 200 ms
    # (read and transaction), then 200 ms again, then 5 ms.
    ticks = iter([0.0, 0.03, 1.0, 1.2, 3.0, 3.2, 9.0, 9.005])
    policy = RetryPolicy(
        max_attempts=10,
        base_delay=0.005,
        max_delay=0.1,
        random=lambda: 1.0,
        clock=lambda: next(ticks),
    )
    flow = commit(sequence(policy=policy), deadline=Deadline(None, clock=lambda: 0.0))
    next(flow)
    waits = []
    for n, holds in enumerate(("7", "9", "11", "13")):
        if n:
            flow.send(None)  # (the wait)
            flow.send({"Item": {"last_id": {"N": str(int(holds) - 2)}}})  # (the read)
        step = shown(flow.throw(cancelled((CCF, NONE, NONE), holds)))
        assert step[0] == "pause"
        waits.append(round(step[1], 6))
    # 4 x 30 ms; 4 x 200 ms x 2; then 16 x 200 ms (the most: longer than max_delay); then
    # max_delay (longer than 16 x 5 ms).
    assert waits == [0.12, 1.6, 3.2, 0.1]


def test_a_lost_answer_sends_the_same_transaction_again() -> None:
    """A retry after no answer carries the same ClientRequestToken (applied once at most); a
    retry after a cancellation a new one."""
    flow = commit(sequence())
    first = next(flow)
    assert isinstance(first, Request)
    pause = flow.throw(ConnectionClosedError(endpoint_url="http://x"))
    assert shown(pause) == ("pause", BACKOFF)
    again = flow.send(None)
    assert isinstance(again, Request)
    assert again.params == first.params
    seen, after = until_request(flow, flow.throw(cancelled((CCF, NONE, NONE), "3")))
    assert seen == [("pause", LOST[1]), ("get",), ("tx", 3, [4, 5])]
    assert isinstance(after, Request)
    assert after.params["ClientRequestToken"] != first.params["ClientRequestToken"]


def test_another_error_goes_up_translated() -> None:
    flow = commit(sequence())
    next(flow)
    refused: Any = {
        "Error": {"Code": "ValidationException", "Message": "Item size has exceeded the maximum"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    with pytest.raises(DdbKeysError) as raised:
        flow.throw(ClientError(refused, "TransactWriteItems"))
    assert raised.value.code == "ValidationException"


def test_the_shared_last_value_only_moves_forward() -> None:
    seq = sequence(last=3)
    slow, fast = commit(seq, 1), commit(seq, 1)
    assert shown(next(slow)) == ("tx", 3, [4])
    assert shown(next(fast)) == ("tx", 3, [4])
    seq.state.passed(10)  # another commit of this object went further meanwhile
    assert finish(fast) == [4]  # (a real server would refuse one of these two)
    assert seq.state.last == 10


# --- preparing items, current(), the deadline of a shared commit ------------------------------


def run_to_end(flow: Flow[Any], answers: list[Any] | None = None) -> Any:
    answers = list(answers or [])
    try:
        step = next(flow)
        while True:
            assert answers, f"an unexpected step {step!r}"
            step = flow.send(answers.pop(0))
    except StopIteration as done:
        assert not answers
        return done.value


def test_items_are_checked_before_any_request() -> None:
    seq = sequence()
    core = seq.core
    with pytest.raises(ConfigurationError, match="The item already has the id attribute 'id'"):
        core.prepare([{"pk": "a", "id": 1}], False, INFO)
    with pytest.raises(ItemKeyClashError, match=re.escape("Item 2 has the key {'pk': 'sequence'}")):
        core.not_the_counter(
            core.prepare([{"pk": "a"}, {"pk": "sequence"}], False, INFO), INFO, WHERE
        )
    with pytest.raises(ItemKeyClashError, match="Items 1 and 3 of put_many have the same key"):
        core.distinct(core.prepare([{"pk": "a"}, {"pk": "b"}, {"pk": "a"}], False, INFO), INFO)
    with pytest.raises(ConfigurationError, match="put_many takes 1 to 99 items, not 0"):
        core.many([])
    with pytest.raises(ConfigurationError, match="put_many takes a list of items, not dict"):
        core.many({"pk": "a"})
    keyed = sequence(id_in_key=True, last=1)
    at_two = CounterItem("users", {"pk": {"S": "0000000002"}}, "last_id")
    with pytest.raises(ItemKeyClashError, match="Id 2 would give the item the key"):
        run_to_end(commit(keyed, 1, counter=at_two))
    assert seq.usage.requests == keyed.usage.requests == 0
    # prefix= and width= where the id is no string key: said, not dropped (a helper's "INV-")
    for settings in ({"prefix": "INV-"}, {"width": 4}):
        unkeyed = GaplessCore("users", id_attribute="id", **settings)
        with pytest.raises(
            ConfigurationError, match="the id attribute 'id' of table 'users' is no"
        ):
            unkeyed.prepare([{"pk": "a"}], False, INFO)
    assert GaplessCore("users", id_attribute="pk", prefix="U#").prepare([{}], False, INFO)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"name": ""}, "Invalid sequence name ''"),
        ({"counter_table": "x"}, "Invalid table name 'x'"),
        ({"counter_attribute": "ddbkeys_type"}, "Invalid counter attribute 'ddbkeys_type'"),
        ({"id_attribute": ""}, "Invalid id attribute ''"),
        ({"width": 0}, "width must be 1 to 38 digits, not 0"),
        ({"prefix": 5}, "prefix must be a string, not 5"),
        ({"max_batch": 100}, "max_batch must be 1 to 99, not 100"),
        ({"counter_key": "pk"}, "counter_key must be a mapping of key attributes to values"),
    ],
)
def test_settings_no_sequence_can_have(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        GaplessCore("users", **settings)


def test_the_counter_lives_where_the_settings_say() -> None:
    assert GaplessCore("users").counter_item(INFO) == WHERE
    elsewhere = GaplessCore("users", counter_table="counters", counter_key={"pk": "ids"})
    assert elsewhere.counter_item(INFO) == CounterItem("counters", {"pk": {"S": "ids"}}, "last_id")


@pytest.mark.parametrize(
    ("answer", "current"),
    [
        ({}, 0),
        ({"Item": {"last_id": {"N": "0"}}}, 0),
        ({"Item": {"last_id": {"N": str(MAX)}}}, MAX),
    ],
)
def test_current(answer: Any, current: int) -> None:
    seq = sequence()
    assert run_to_end(seq.core.current(WHERE, Deadline(None), seq.attempts), [answer]) == current


def test_a_shared_commit_keeps_to_the_deadline_that_ends_first() -> None:
    now = [0.0]
    late = Deadline(10, clock=lambda: now[0])
    now[0] = 5.0
    later = Deadline(10, clock=lambda: now[0])
    free = Deadline(None)
    pending = [Pending({}, d) for d in (free, later, late)]
    assert earliest(pending) is late
