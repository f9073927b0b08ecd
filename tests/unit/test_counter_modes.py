"""The counter's modes without a server or a client: its core's flows driven by hand (every
answer and refusal the idempotent increment reads, and which request comes next), and the
coalesced write's split."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import attempts
from ddbkeys._core.steps import Flow
from ddbkeys._errors import UnexpectedAnswerError
from ddbkeys._retry import Deadline, RetryPolicy
from ddbkeys.ids import CounterStateError, SequenceExhaustedError
from ddbkeys.ids import _exact as exact
from ddbkeys.ids import _slots as slots
from ddbkeys.ids._base import CounterItem
from ddbkeys.ids._counter_core import CounterCore
from ddbkeys.ids._counter_writes import Want, advance, coalesced, split
from tests.support.hand import Run, drive, failed_condition, lost

POLICY = RetryPolicy(max_attempts=6, base_delay=0.01, max_delay=0.1, random=lambda: 0.5)
JITTER = POLICY.full_jitter(0)
BACKOFF = POLICY.exponential(0)
MAX = 10**38 - 1
KEY: Any = {"pk": {"S": "orders"}}
NOW = 1_800_000_000.0  # the writers' wall clock (s)
NOW_MS = int(NOW * 1000)
#: The request number of a call that starts at NOW with the whole deadline (60 s) left.
NUMBER = slots.keep_until(NOW, 60.0)


@pytest.fixture(autouse=True)
def _fresh_slots(monkeypatch: pytest.MonkeyPatch) -> Iterator[slots.WriterSlots]:
    """A process with no slots yet and no counter item seen."""
    pool = slots.WriterSlots()
    monkeypatch.setattr(exact, "SLOTS", pool)
    yield pool


@pytest.fixture(autouse=True)
def seen(monkeypatch: pytest.MonkeyPatch) -> slots.SeenSlots:
    """What the process has seen of counter items: nothing yet."""
    memory = slots.SeenSlots()
    monkeypatch.setattr(exact, "SEEN", memory)
    return memory


WHERE = CounterItem("ids", KEY, "last_id")


def deadline() -> Deadline:
    """A 60 s deadline on a stopped clock: a call's request number does not depend on how
    long the test machine took (a real clock made it one millisecond lower under load)."""
    return Deadline(60.0, clock=lambda: 0.0)


def counter(**settings: Any) -> Callable[[int, Deadline], Flow[range]]:
    """The flow of an idempotent counter's ``reserve(count)`` (unless ``idempotent=False``),
    where it lives known, at NOW: its core, the retry layer and a clock, no client."""
    core = CounterCore("ids", "orders", **{"idempotent": True, **settings})

    def tries(attempt: Callable[[int], Flow[Any]], what: str, deadline: Deadline) -> Flow[Any]:
        return attempts(
            attempt, what=what, table="ids", policy=POLICY, deadline=deadline, usage=Usage()
        )

    return lambda count, deadline: advance(core, WHERE, count, deadline, tries, lambda: NOW)


def own_slot(request: Any) -> str:
    """The writer slot a request stamps."""
    return str(request.params["ExpressionAttributeNames"]["#w"][len(slots.NUMBER_PREFIX) :])


def slot_of(run: Run, n: int = 0) -> str:
    """The writer slot the ``n``-th request stamped."""
    return own_slot(run.requests[n])


def moved(value: str, number: int = NUMBER) -> Any:
    """An answer to the slot's write that moved the counter to ``value``: the item before it
    (ALL_OLD), the counter ``value`` less the increment, none when that is the value a missing
    counter stands for (the write's base). ``number`` is the request number the slot's write
    stamps (what the item after it holds)."""

    def answer(request: Any) -> Any:
        values = request.params["ExpressionAttributeValues"]
        increment, base = int(values[":inc"]["N"]), Decimal(values[":base"]["N"])
        before = Decimal(value) - increment
        return {
            "Attributes": {**KEY, **({} if before == base else {"last_id": {"N": str(before)}})}
        }

    return answer


def refused(value: dict[str, Any] | None, **stamped: Any) -> Any:
    """The write refused; the old image holds the counter ``value`` and the ``stamped`` slots
    ({name: (number, value)}; ``"mine"`` is the request's own slot)."""

    def answer(request: Any) -> ClientError:
        item: dict[str, Any] = dict(KEY)
        if value is not None:
            item["last_id"] = value
        for name, (number, held) in stamped.items():
            slot = own_slot(request) if name == "mine" else name
            item[slots.number_name(slot)] = {"N": str(number)}
            item[slots.value_name(slot)] = {"N": str(held)}
        return failed_condition(item)

    return answer


def shown(run: Run) -> list[tuple[Any, ...]]:
    """The requests: ("update", increment, base, number, removed slots) or ("undo", ...)."""
    out: list[tuple[Any, ...]] = []
    for r in run.requests:
        if r.operation == "transact_write_items":
            update = r.params["TransactItems"][0]["Update"]
            out.append(("undo", update["ExpressionAttributeValues"][":dec"]["N"]))
            continue
        assert r.operation == "update_item" and r.write
        params = r.params
        assert params["Key"] == KEY and params["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
        assert params["ReturnValues"] == "ALL_OLD"
        values = params["ExpressionAttributeValues"]
        names = params["ExpressionAttributeNames"]
        removed = sorted(
            names[n][len(slots.NUMBER_PREFIX) :]
            for n in names
            if n.startswith("#r") and not n.endswith("v")
        )
        out.append(
            (
                "update",
                int(values[":inc"]["N"]),
                int(values[":base"]["N"]),
                int(values[":seq"]["N"]),
                removed,
            )
        )
    return out


@dataclass
class Row:
    """``count`` ids; the answers in order; the requests sent; the ids, or the error the call
    ends with; the waits; ``seen``: an image of the counter item the process saw before."""

    name: str
    answers: list[Any]
    requests: list[tuple[Any, ...]]
    ends: range | type[BaseException]
    count: int = 1
    pauses: list[float] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    seen: dict[str, Any] | None = None


def one(inc: int = 1, base: int = 0, removed: list[str] | None = None) -> tuple[Any, ...]:
    return ("update", inc, base, NUMBER, removed or [])


STALE = {slots.number_name("old"): {"N": str(NOW_MS - 1)}, slots.value_name("old"): {"N": "3"}}
LIVE = {slots.number_name("busy"): {"N": str(NOW_MS)}, slots.value_name("busy"): {"N": "4"}}

ROWS = [
    Row("a new counter", [moved("1")], [one()], range(1, 2)),
    Row("three ids", [moved("10")], [one(3)], range(8, 11), count=3),
    Row(
        "start and step",
        [moved("110")],
        [one(20, 90)],
        range(100, 111, 10),
        count=2,
        settings={"start": 100, "step": 10},
    ),
    # The response lost after the write was applied: sent again with the same number, refused,
    # and the old image shows the slot at that number with the value it wrote: those ids.
    Row(
        "lost, applied",
        [lost(), refused({"N": "9"}, mine=(NUMBER, 5))],
        [one(), one()],
        range(5, 6),
        pauses=[BACKOFF],
    ),
    Row("lost, not applied", [lost(), moved("6")], [one(), one()], range(6, 7), pauses=[BACKOFF]),
    Row(
        "throttled",
        [ClientError({"Error": {"Code": "ThrottlingException"}}, "UpdateItem"), moved("2")],
        [one(), one()],
        range(2, 3),
        pauses=[BACKOFF],
    ),
    Row("holds a string", [refused({"S": "x"})], [one()], CounterStateError),
    Row("holds a list", [refused({"L": []})], [one()], CounterStateError),
    Row("holds a negative number", [refused({"N": "-3"})], [one()], CounterStateError),
    # A fraction passes the condition: moved, then put back (with the slot), and refused.
    Row("holds a fraction", [moved("6.5"), {}], [one(), ("undo", "-1")], CounterStateError),
    Row("at the top", [refused({"N": str(MAX)})], [one()], SequenceExhaustedError),
    Row(
        "past the maximum",
        [refused({"N": "9"})],
        [one(2)],
        SequenceExhaustedError,
        count=2,
        settings={"maximum": 10},
    ),
    Row("up to the maximum", [moved("10")], [one(2)], range(9, 11), 2, settings={"maximum": 10}),
    # The process saw a stale slot: this write removes it, on condition that it still is.
    Row("a stale slot removed", [moved("4")], [one(removed=["old"])], range(4, 5), seen=STALE),
    Row("a live slot kept", [moved("5")], [one()], range(5, 6), seen=LIVE),
    # It was renewed meanwhile: the write is refused, and goes again at once without it.
    Row(
        "a stale slot renewed",
        [refused({"N": "4"}, old=(NOW_MS + 5, 4)), moved("5")],
        [one(removed=["old"]), one()],
        range(5, 6),
        seen=STALE,
    ),
    # Refused for no reason the image shows (it changed since): the usual wait, again.
    Row(
        "refused, no reason",
        [refused({"N": "4"}), moved("5")],
        [one(), one()],
        range(5, 6),
        1,
        [JITTER],
    ),
    # The slot holds a number this process never gave it: another writer uses its name.
    Row("a slot clash", [refused({"N": "4"}, mine=(NUMBER + 1, 4))], [one()], CounterStateError),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_idempotent_increment(row: Row, seen: slots.SeenSlots) -> None:
    if row.seen is not None:
        seen.saw(exact.item_name(WHERE), {**KEY, **row.seen})
    run = Run()
    flow = counter(**row.settings)(row.count, Deadline(60.0, clock=lambda: 0.0))
    if isinstance(row.ends, range):
        drive(flow, row.answers, run=run)
        assert run.result == row.ends
    else:
        with pytest.raises(row.ends):
            drive(flow, row.answers, run=run)
    assert shown(run) == row.requests
    assert run.pauses == row.pauses
    updates = [n for n, r in enumerate(run.requests) if r.operation == "update_item"]
    assert len({slot_of(run, n) for n in updates}) == 1, "one slot for the whole call"


def test_the_fraction_is_put_back_with_the_slot() -> None:
    run = Run()
    with pytest.raises(CounterStateError, match=r"holds last_id = 5.5 \(not a whole number\)"):
        drive(counter()(1, deadline()), [moved("6.5"), {}], run=run)
    undo = run.requests[1].params["TransactItems"][0]["Update"]
    mine = slot_of(run)
    assert sorted(undo["ExpressionAttributeNames"].values()) == sorted(
        ["last_id", "ddbkeys_type", slots.number_name(mine), slots.value_name(mine)]
    )
    assert " REMOVE " in undo["UpdateExpression"]


def test_one_slot_per_call_at_a_time(_fresh_slots: slots.WriterSlots) -> None:
    """Calls one after another reuse the process's slot with growing numbers; calls at once
    take a slot each."""
    made = counter()
    first = drive(made(1, deadline()), [moved("1")])
    second = drive(made(1, deadline()), [moved("2")])
    assert slot_of(first) == slot_of(second)
    numbers = [
        int(r.requests[0].params["ExpressionAttributeValues"][":seq"]["N"]) for r in (first, second)
    ]
    assert numbers == [NUMBER, NUMBER + 1]  # (the same clock: one more)
    held = _fresh_slots.take()
    third = drive(made(1, deadline()), [moved("3")])
    assert slot_of(third) not in (held.name, slot_of(first))


@pytest.mark.parametrize(
    ("ids", "counts", "runs"),
    [
        (range(1, 2), [1], [range(1, 2)]),
        (range(5, 11), [1, 3, 2], [range(5, 6), range(6, 9), range(9, 11)]),
        (range(10, 70, 10), [2, 1, 3], [range(10, 30, 10), range(30, 40, 10), range(40, 70, 10)]),
    ],
)
def test_a_coalesced_write_is_split_in_order(
    ids: range, counts: list[int], runs: list[range]
) -> None:
    assert split(ids, counts) == runs
    assert [list(r) for r in split(ids, counts)] == [list(r) for r in runs]


def test_a_coalesced_write_sends_one_update_for_every_caller() -> None:
    wants = [Want(1, Deadline(None)), Want(3, Deadline(None)), Want(1, Deadline(None))]
    flow = coalesced(wants, counter(idempotent=False))
    run = drive(flow, [{"Attributes": {"last_id": {"N": "10"}}}])  # (as it was: UPDATED_OLD)
    assert run.operations == ["update_item"]
    assert run.requests[0].params["ExpressionAttributeValues"][":inc"] == {"N": "5"}
    assert run.result == [range(11, 12), range(12, 15), range(15, 16)]


def test_when_a_coalesced_write_would_pass_the_maximum_each_caller_goes_alone() -> None:
    wants = [Want(1, deadline()), Want(2, deadline()), Want(1, deadline())]
    # At 8, 4 ids would pass 10: refused; then each caller alone, the one that would pass
    # refused too.
    answers = [refused({"N": "8"}), moved("9"), refused({"N": "9"}), moved("10")]
    run = drive(coalesced(wants, counter(maximum=10)), answers)
    assert [r[0] for r in [run.result[0], run.result[2]]] == [9, 10]
    assert isinstance(run.result[1], SequenceExhaustedError)
    assert [r[1] for r in shown(run)] == [4, 1, 2, 1]


@pytest.mark.parametrize("answer", [{}, {"Attributes": {}}], ids=["empty", "no attributes"])
def test_an_answer_without_the_counter_is_a_new_counter(answer: dict[str, Any]) -> None:
    """The answer holds what the write changed, as it was (UPDATED_OLD): nothing for a counter
    item that did not exist, whose first id is ``start``."""
    assert drive(counter(idempotent=False)(2, Deadline(None)), [answer]).result == range(1, 3)


@pytest.mark.parametrize("attributes", [[], "last_id", 1], ids=["a list", "a string", "a number"])
def test_an_answer_whose_attributes_are_not_a_map_is_not_dynamodbs(attributes: Any) -> None:
    """Without a map of attributes (an endpoint that answers HTTP 200 and is not DynamoDB) a
    clear error, not an AttributeError."""
    with pytest.raises(UnexpectedAnswerError) as raised:
        drive(counter(idempotent=False)(1, Deadline(None)), [{"Attributes": attributes}])
    assert str(raised.value).startswith(
        "The endpoint's answer to UpdateItem of table 'ids' holds no counter attribute "
        "'last_id' (it said "
    )


def test_ids_past_the_maximum_even_from_the_first_say_so() -> None:
    """20 ids at once with a maximum of 10 pass it whatever the counter holds: refused before
    anything is sent, and said as that (it said "starts at 1" of a counter at 3)."""
    core = CounterCore("orders", "order", maximum=10)
    with pytest.raises(SequenceExhaustedError) as refused:
        core.request(WHERE, 20)
    assert str(refused.value) == (
        "Counter 'order' of table 'orders': 20 id(s) at once would pass its maximum 10 even "
        "from its first id, 1 (nothing was written)."
    )


def test_a_counter_given_by_its_key_is_named_by_it() -> None:
    """helper-77 F2: errors about a counter given by counter_key= named it 'counter' (or
    'sequence'), the default name, so two counter items of one table read the same."""
    from ddbkeys.ids._gapless_core import GaplessCore  # noqa: PLC0415

    by_key = CounterCore("t", "counter", maximum=3, counter_key={"entity": "inv", "rev": 0})
    assert by_key.label == "{'entity': 'inv', 'rev': 0}"
    assert str(by_key.exhausted(3, 1)) == (
        "Counter {'entity': 'inv', 'rev': 0} of table 't' is at 3: 1 more id(s) would pass its "
        "maximum 3."
    )
    assert CounterCore("t", "orders").label == "'orders'"
    cli = GaplessCore("ttt", counter_key={"n": Decimal("0"), "b": b"\x01"})  # (as the CLI gives)
    assert cli.label == "{'n': 0, 'b': b64:AQ==}" and GaplessCore("ttt").label == "'sequence'"
