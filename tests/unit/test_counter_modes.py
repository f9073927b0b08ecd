"""The counter's modes without a server: the idempotent increment driven by hand (every answer
and cancellation it reads, and which request comes next), and the coalesced write's split."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from ddbkeys.errors import ConfigurationError, DdbKeysError, UnexpectedAnswerError
from ddbkeys.ids import AtomicCounter, CounterStateError, SequenceExhaustedError
from ddbkeys.ids.base import CounterItem
from ddbkeys.ids.counter import Want, split
from ddbkeys.retry import Deadline, RetryPolicy
from tests.support.hand import Run, cancelled, drive, lost

POLICY = RetryPolicy(max_attempts=6, base_delay=0.01, max_delay=0.1, random=lambda: 0.5)
JITTER = POLICY.full_jitter(1)
BACKOFF = POLICY.exponential(0)
MAX = 10**38 - 1
KEY: Any = {"pk": {"S": "orders"}}


def counter(**settings: Any) -> AtomicCounter:
    """An idempotent counter that knows where it lives (no DescribeTable)."""
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    settings = {"idempotent": True, **settings}
    made = AtomicCounter(client, "ids", "orders", retry=POLICY, **settings)
    made._counter = CounterItem("ids", KEY, "last_id")
    return made


def held(value: str | None, kind: str = "N") -> dict[str, Any]:
    """A GetItem answer: the counter holding ``value`` (None: no counter yet)."""
    return {} if value is None else {"Item": {"last_id": {kind: value}}}


def moved_to(value: str | None, kind: str = "N") -> Any:
    """The transaction cancelled: the counter's condition failed, its old image says this."""
    item = {**KEY, "last_id": {kind: value}} if value is not None else dict(KEY)
    return cancelled(("ConditionalCheckFailed", item))


def shown(run: Run) -> list[tuple[Any, ...]]:
    """The requests: ("get",) or ("tx", from, to, condition, token number)."""
    tokens: dict[str, int] = {}
    out: list[tuple[Any, ...]] = []
    for r in run.requests:
        if r.operation == "get_item":
            out.append(("get",))
            continue
        assert r.operation == "transact_write_items"
        assert r.billed == 2.0 and r.write and r.count_refused
        (action,) = r.params["TransactItems"]
        update = action["Update"]
        assert update["Key"] == KEY and update["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
        values = update["ExpressionAttributeValues"]
        token = tokens.setdefault(r.params["ClientRequestToken"], len(tokens) + 1)
        out.append(
            (
                "tx",
                int(values[":last"]["N"]),
                int(values[":new"]["N"]),
                "missing ok" if "attribute_not_exists" in update["ConditionExpression"] else "",
                token,
            )
        )
    return out


@dataclass
class Row:
    """``count`` ids from a counter that knows ``known`` (None: it reads first); the answers in
    order; the requests sent; the ids, or the error the call ends with; the waits."""

    name: str
    answers: list[Any]
    requests: list[tuple[Any, ...]]
    ends: range | type[BaseException]
    known: int | None = None
    count: int = 1
    pauses: list[float] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)


ROWS = [
    Row("a new counter", [held(None), {}], [("get",), ("tx", 0, 1, "missing ok", 1)], range(1, 2)),
    Row(
        "a counter at 0",
        [held("0"), {}],
        [("get",), ("tx", 0, 3, "missing ok", 1)],
        range(1, 4),
        count=3,
    ),
    Row("known: no read", [{}], [("tx", 7, 8, "", 1)], range(8, 9), known=7),
    Row(
        "start and step",
        [held(None), {}],
        [("get",), ("tx", 90, 110, "missing ok", 1)],
        range(100, 111, 10),
        count=2,
        settings={"start": 100, "step": 10},
    ),
    # A lost response: the same transaction, the same token (applied once by DynamoDB).
    Row(
        "lost response",
        [lost(), {}],
        [("tx", 7, 8, "", 1), ("tx", 7, 8, "", 1)],
        range(8, 9),
        known=7,
        pauses=[BACKOFF],
    ),
    Row(
        "throttled by the proxy",
        [
            boto3.client("dynamodb", region_name="us-east-1").exceptions.ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "TransactWriteItems"
            ),
            {},
        ],
        [("tx", 7, 8, "", 1), ("tx", 7, 8, "", 1)],
        range(8, 9),
        known=7,
        pauses=[BACKOFF],
    ),
    # Another writer moved it: the old image says where to, a new token at once.
    Row(
        "moved",
        [moved_to("12"), {}],
        [("tx", 7, 8, "", 1), ("tx", 12, 13, "", 2)],
        range(13, 14),
        known=7,
    ),
    Row(
        "moved twice in a row: the second time waits",
        [moved_to("12"), moved_to("20"), {}],
        [("tx", 7, 8, "", 1), ("tx", 12, 13, "", 2), ("tx", 20, 21, "", 3)],
        range(21, 22),
        known=7,
        pauses=[JITTER],
    ),
    Row(
        "deleted meanwhile",
        [moved_to(None), {}],
        [("tx", 7, 8, "", 1), ("tx", 0, 1, "missing ok", 2)],
        range(1, 2),
        known=7,
    ),
    Row(
        "conflict",
        [cancelled("TransactionConflict"), {}],
        [("tx", 7, 8, "", 1), ("tx", 7, 8, "", 2)],
        range(8, 9),
        known=7,
        pauses=[POLICY.full_jitter(0)],
    ),
    Row(
        "throttled in the transaction",
        [cancelled("ThrottlingError"), {}],
        [("tx", 7, 8, "", 1), ("tx", 7, 8, "", 2)],
        range(8, 9),
        known=7,
        pauses=[BACKOFF],
    ),
    Row("invalid", [cancelled("ValidationError")], [("tx", 7, 8, "", 1)], DdbKeysError, known=7),
    Row("holds a string", [held("x", "S")], [("get",)], CounterStateError),
    Row("holds a fraction", [held("5.5")], [("get",)], CounterStateError),
    Row(
        "moved to a string", [moved_to("x", "S")], [("tx", 7, 8, "", 1)], CounterStateError, known=7
    ),
    Row("at the top", [held(str(MAX))], [("get",)], SequenceExhaustedError, known=MAX),
    # Known near the maximum, but set back since (elsewhere): what it holds now decides.
    Row(
        "set back since",
        [held("10"), {}],
        [("get",), ("tx", 10, 20, "", 1)],
        range(11, 21),
        known=95,
        count=10,
        settings={"maximum": 100},
    ),
    Row(
        "moved to the top",
        [moved_to(str(MAX))],
        [("tx", 7, 8, "", 1)],
        SequenceExhaustedError,
        known=7,
    ),
    Row(
        "past the maximum",
        [held("9")],
        [("get",)],
        SequenceExhaustedError,
        count=2,
        settings={"maximum": 10},
    ),
    Row(
        "up to the maximum",
        [held("8"), {}],
        [("get",), ("tx", 8, 10, "", 1)],
        range(9, 11),
        count=2,
        settings={"maximum": 10},
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_idempotent_increment(row: Row) -> None:
    made = counter(**row.settings)
    made._known.set(row.known)
    run = Run()
    flow = made._advance(row.count, Deadline(None))
    if isinstance(row.ends, range):
        drive(flow, row.answers, run=run)
        assert run.result == row.ends
        assert made._known.get() == row.ends[-1]
    else:
        with pytest.raises(row.ends):
            drive(flow, row.answers, run=run)
    assert shown(run) == row.requests
    assert run.pauses == row.pauses


def test_a_known_value_only_goes_up() -> None:
    made = counter()
    made._known.set(10)
    made._known.set(8, only_up=True)
    assert made._known.get() == 10
    made._known.set(None)  # set() forgets it
    assert made._known.get() is None


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
    made = counter()
    made.idempotent = False
    wants = [Want(1, Deadline(None)), Want(3, Deadline(None)), Want(1, Deadline(None))]
    run = drive(made._coalesced(wants), [{"Attributes": {"last_id": {"N": "15"}}}])
    assert run.operations == ["update_item"]
    assert run.requests[0].params["ExpressionAttributeValues"][":inc"] == {"N": "5"}
    assert run.result == [range(11, 12), range(12, 15), range(15, 16)]


def test_when_a_coalesced_write_would_pass_the_maximum_each_caller_goes_alone() -> None:
    made = counter(maximum=10)
    made._known.set(8)
    wants = [Want(1, Deadline(None)), Want(2, Deadline(None)), Want(1, Deadline(None))]
    # Known at 8, 4 ids would pass 10: read (it is 8), then each caller alone; the one that
    # would pass is read again first (it may have been set back), and refused.
    run = drive(made._coalesced(wants), [held("8"), {}, held("9"), {}])
    assert [r[0] for r in [run.result[0], run.result[2]]] == [9, 10]
    assert isinstance(run.result[1], SequenceExhaustedError)
    assert shown(run) == [("get",), ("tx", 8, 9, "", 1), ("get",), ("tx", 9, 10, "", 2)]


@pytest.mark.parametrize(("name", "value"), [("coalesce", "yes"), ("idempotent", 1)])
def test_the_modes_are_flags(name: str, value: Any) -> None:
    with pytest.raises(ConfigurationError, match=f"{name} must be True or False"):
        counter(**{name: value})


@pytest.mark.parametrize(
    "answer",
    [{}, {"Attributes": {}}, {"Attributes": {"other": {"N": "1"}}}],
    ids=["empty", "no attributes", "another attribute"],
)
def test_an_answer_without_the_counter_is_not_dynamodbs(answer: dict[str, Any]) -> None:
    """DynamoDB's answer to the counter's ADD holds the counter: without it (an endpoint that
    answers HTTP 200 and is not DynamoDB) a clear error, not a KeyError."""
    made = counter(idempotent=False)
    with pytest.raises(UnexpectedAnswerError) as raised:
        drive(made._advance(1, Deadline(None)), [answer])
    assert str(raised.value).startswith(
        "The endpoint's answer to UpdateItem of table 'ids' holds no counter attribute "
        "'last_id' (it said "
    )
