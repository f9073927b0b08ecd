"""The one retry layer, :func:`ddbkeys._core.attempts.attempts`, driven by hand: every outcome of
an attempt (a lost race, a capacity cancellation, throttling, 5xx, timeouts, refused
connections, other errors), out of attempts, out of time, with the waits it asks for recorded
and the clock moved by hand. No server, no sleeping."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import Contention, Throttled, attempts
from ddbkeys._core.steps import Flow, Pause, Request, update_item
from ddbkeys._errors import (
    DdbKeysError,
    DeadlineExceededError,
    EndpointUnreachableError,
    NoAnswerInTime,
    ServiceError,
)
from ddbkeys._probe import StillRetried
from ddbkeys._retry import Deadline, RetriesExhaustedError, RetryPolicy
from tests.unit.test_read_budget import FakeClock

TABLE = "some-table"
URL = "http://127.0.0.1:1/"
PARAMS: Any = {"TableName": TABLE, "Key": {"pk": {"S": "c"}}, "UpdateExpression": "ADD n :one"}

# What an attempt's request gets back, as a test writes it.
LOST = "lost a race"  # the answer says another writer won: Contention
LOST_NOW = "lost a race, knowing the winner's value"  # Contention(immediate=True)
LOST_WAIT = "lost a race, choosing its own wait"  # Contention(wait=0.042)
CAPACITY = "cancelled for capacity"  # Throttled


def client_error(code: str, status: int = 400, message: str = "no") -> ClientError:
    response: Any = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, "UpdateItem")


def throttled() -> ClientError:
    return client_error("ThrottlingException", message="Rate exceeded")


def error_500() -> ClientError:
    return client_error("InternalServerError", 500, "boom")


def read_timeout() -> ReadTimeoutError:
    return ReadTimeoutError(endpoint_url=URL, error="timed out")


def attempt(n: int) -> Flow[str]:
    """One attempt: one UpdateItem; what its answer means."""
    answer = yield update_item(PARAMS)
    if answer == LOST:
        raise Contention
    if answer == LOST_NOW:
        raise Contention(immediate=True)
    if answer == LOST_WAIT:
        raise Contention(wait=0.042)
    if answer == CAPACITY:
        raise Throttled("ProvisionedThroughputExceeded")
    return f"{answer} at attempt {n}"


@dataclass
class Run:
    """What a flow asked for and how it ended."""

    requests: list[Request] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    pauses: list[Pause] = field(default_factory=list)
    result: Any = None
    error: BaseException | None = None


def drive(flow: Flow[Any], outcomes: Iterable[Any], clock: FakeClock, took: float = 0.0) -> Run:
    """Run ``flow`` by hand: each request gets the next outcome (an exception is thrown into
    the flow, anything else sent; each request takes ``took`` seconds of ``clock``); each pause
    is recorded and moves the clock."""
    run = Run()
    script = iter(outcomes)
    try:
        step = next(flow)
        while True:
            if isinstance(step, Request):
                run.requests.append(step)
                clock.now += took
                outcome = next(script)
                if isinstance(outcome, BaseException):
                    step = flow.throw(outcome)
                else:
                    step = flow.send(outcome)
            elif isinstance(step, Pause):
                run.pauses.append(step)
                run.waits.append(step.seconds)
                clock.now += step.seconds
                step = flow.send(None)
            else:
                raise AssertionError(f"unexpected step {step!r}")
    except StopIteration as done:
        run.result = done.value
    except Exception as exc:  # what the flow raised: the test's subject
        run.error = exc
    return run


def policy(clock: FakeClock, max_attempts: int = 5) -> RetryPolicy:
    """Full jitter waits 0.5 x min(0.1, 0.01 x 2**n); exponential waits 0.75 x the same."""
    return RetryPolicy(
        max_attempts=max_attempts,
        base_delay=0.01,
        max_delay=0.1,
        sleep=clock.sleep,
        random=lambda: 0.5,
        clock=clock,
    )


def call(
    clock: FakeClock,
    max_attempts: int = 5,
    *,
    first: Callable[[int], Flow[Any]] = attempt,
    seconds: float | None = None,
    what: str = "x",
) -> Flow[Any]:
    """:func:`attempts` of ``first`` (by default :func:`attempt`) on ``clock``, with the test
    policy's ``max_attempts`` and a deadline of ``seconds`` (None: none)."""
    return attempts(
        first,
        what=what,
        table=TABLE,
        policy=policy(clock, max_attempts),
        deadline=Deadline(seconds, clock=clock),
        usage=Usage(),
    )


@dataclass
class Case:
    outcomes: list[Any]
    waits: list[float]
    result: str | None = None
    error: type[BaseException] | None = None
    message: str | None = None
    max_attempts: int = 5
    deadline: float | None = None
    took: float = 0.0
    conflicts: int = 0
    retries: int = 0
    what: str = "moving counter 'c'"
    writes: bool = True
    advice: str = "Try again later."
    read_timeout: float | None = None


OUT_OF_ATTEMPTS = "Gave up on moving counter 'c' on table 'some-table' after {n} attempts "
OUT_OF_TIME = (
    "Gave up on moving counter 'c' on table 'some-table' after {s} s (the deadline; raise it "
    "with deadline=): "
)
MAY_HAVE_BEEN_APPLIED = " The last write got no answer: it may still have been applied."

CASES = {
    "the first attempt answers": Case(["ok"], [], result="ok at attempt 0"),
    "contention: full jitter, then an answer": Case(
        [LOST, LOST, "ok"], [0.005, 0.01], result="ok at attempt 2", conflicts=2, retries=2
    ),
    "contention knowing the winner: no wait": Case(
        [LOST_NOW, LOST_NOW, "ok"], [], result="ok at attempt 2", conflicts=2, retries=2
    ),
    "contention with a wait of the attempt's choosing": Case(
        [LOST_WAIT, LOST_WAIT, "ok"],
        [0.042, 0.042],
        result="ok at attempt 2",
        conflicts=2,
        retries=2,
    ),
    "contention every time: out of attempts, no wait after the last": Case(
        [LOST] * 4,
        [0.005, 0.01, 0.02],
        error=RetriesExhaustedError,
        message=OUT_OF_ATTEMPTS.format(n=4) + "(RetryPolicy.max_attempts): lost 4 races in a "
        "row to other writers. Raise RetryPolicy.max_attempts, or spread the load.",
        max_attempts=4,
        conflicts=4,
        retries=3,
    ),
    "a transaction cancelled for capacity: exponential backoff": Case(
        [CAPACITY, CAPACITY, "ok"], [0.0075, 0.015], result="ok at attempt 2", retries=2
    ),
    "cancelled for capacity every time": Case(
        [CAPACITY] * 3,
        [0.0075, 0.015],
        error=RetriesExhaustedError,
        message=OUT_OF_ATTEMPTS.format(n=3) + "(RetryPolicy.max_attempts): its transaction "
        "was throttled (ProvisionedThroughputExceeded). Try again later.",
        max_attempts=3,
        retries=2,
    ),
    "throttling: exponential backoff, then an answer": Case(
        [throttled(), throttled(), "ok"], [0.0075, 0.015], result="ok at attempt 2", retries=2
    ),
    "a 5xx, then an answer": Case(
        [error_500(), "ok"], [0.0075], result="ok at attempt 1", retries=1
    ),
    "a read timeout, then an answer": Case(
        [read_timeout(), "ok"], [0.0075], result="ok at attempt 1", retries=1
    ),
    "a dropped connection, then an answer": Case(
        [ConnectionClosedError(endpoint_url=URL), "ok"],
        [0.0075],
        result="ok at attempt 1",
        retries=1,
    ),
    "throttled every time: out of attempts": Case(
        [throttled()] * 3,
        [0.0075, 0.015],
        error=RetriesExhaustedError,
        message=OUT_OF_ATTEMPTS.format(n=3) + "(RetryPolicy.max_attempts): throttled "
        "(ThrottlingException) 3 times. Try again later.",
        max_attempts=3,
        retries=2,
    ),
    "a refused connection: three attempts at most": Case(
        [EndpointConnectionError(endpoint_url=URL)] * 3,
        [0.0075, 0.015],
        error=EndpointUnreachableError,
        message=f"Could not connect to the DynamoDB endpoint {URL}: is it running, and is the "
        "URL right? Check endpoint_url= or AWS_ENDPOINT_URL_DYNAMODB.",
        max_attempts=10,
        retries=2,
    ),
    "another error goes up at once, translated": Case(
        [client_error("ValidationException", message="nope")],
        [],
        error=ServiceError,
        message="DynamoDB refused UpdateItem on table 'some-table' as invalid "
        "(ValidationException): nope",
    ),
    "a ddbkeys error of its own goes up as it is": Case(
        [DdbKeysError("the counter holds a string", table=TABLE)],
        [],
        error=DdbKeysError,
        message="the counter holds a string",
    ),
    "refused after a write that got no answer: it may have been applied": Case(
        [read_timeout(), *[EndpointConnectionError(endpoint_url=URL)] * 3],
        [0.0075, 0.015, 0.03],
        error=EndpointUnreachableError,
        message=f"Could not connect to the DynamoDB endpoint {URL}: is it running, and is the "
        "URL right? Check endpoint_url= or AWS_ENDPOINT_URL_DYNAMODB. A write of this call got "
        "no answer: it may still have been applied.",
        max_attempts=10,
        retries=3,
    ),
    "refused while the client retries on its own: a write may yet be applied": Case(
        [StillRetried(endpoint_url=URL)],
        [],
        error=EndpointUnreachableError,
        message=f"Could not connect to the DynamoDB endpoint {URL}: is it running, and is the "
        "URL right? Check endpoint_url= or AWS_ENDPOINT_URL_DYNAMODB. The client's own retries "
        "may still send the write: it may yet be applied.",
        took=3.0,
    ),
    "no answer to the last write: it may have been applied": Case(
        [read_timeout()] * 2,
        [0.0075],
        error=RetriesExhaustedError,
        message=OUT_OF_ATTEMPTS.format(n=2) + "(RetryPolicy.max_attempts): the DynamoDB "
        f"endpoint {URL} did not answer (read timeout). Try again later." + MAY_HAVE_BEEN_APPLIED,
        max_attempts=2,
        retries=1,
        read_timeout=60,
    ),
    "no answer to a read: no note": Case(
        [read_timeout()] * 2,
        [0.0075],
        error=RetriesExhaustedError,
        message=OUT_OF_ATTEMPTS.format(n=2) + "(RetryPolicy.max_attempts): the DynamoDB "
        f"endpoint {URL} did not answer (read timeout). Try again later.",
        max_attempts=2,
        retries=1,
        writes=False,
        read_timeout=60,
    ),
    "the deadline: no wait that would pass it": Case(
        [throttled()] * 10,
        [0.0075, 0.015, 0.03],
        error=DeadlineExceededError,
        message=OUT_OF_TIME.format(s="1.0") + "throttled (ThrottlingException) 4 times, "
        "4 attempts.",
        max_attempts=100,
        deadline=1.0,
        took=0.23,  # 4 x 0.23 + 0.0525 of waits = 0.9725 s; the next wait, 0.06, would pass 1 s
        retries=3,
    ),
    "the deadline: passed during a request": Case(
        [read_timeout(), "never sent"],
        [],
        error=DeadlineExceededError,
        message="Gave up on moving counter 'c' on table 'some-table' after 30.0 s, past its "
        "2.0 s deadline (a request outlived it: give the client a read timeout within the "
        "deadline, e.g. make_client(timeout=...)): the DynamoDB endpoint "
        f"{URL} did not answer within 30 s (read timeout), 1 attempt." + MAY_HAVE_BEEN_APPLIED,
        deadline=2.0,
        took=30.0,
        read_timeout=30,
    ),
    "the deadline: a request cut short tells less than the throttle before it": Case(
        [throttled(), NoAnswerInTime(endpoint_url=URL, waited=0.2)],
        [0.0075],
        error=DeadlineExceededError,
        message=OUT_OF_TIME.format(s="0.5") + "throttled (ThrottlingException) 1 time, 2 "
        "attempts. A write of this call got no answer: it may still have been applied.",
        deadline=0.5,
        took=0.25,
        retries=1,
    ),
    "only the failures of the last kind are counted (a listing)": Case(
        [error_500(), throttled(), throttled()],
        [0.0075, 0.015],
        error=RetriesExhaustedError,
        message="Gave up on listing the partition keys on table 'some-table' after 3 attempts "
        "(RetryPolicy.max_attempts): throttled (ThrottlingException) 2 times. Lower "
        "--max-rcu-per-second, or try again later.",
        max_attempts=3,
        retries=2,
        what="listing the partition keys",
        writes=False,
        advice="Lower --max-rcu-per-second, or try again later.",
    ),
    "a lost answer, then throttles: the call may have written all the same": Case(
        [read_timeout(), throttled(), throttled()],
        [0.0075, 0.015],
        error=RetriesExhaustedError,
        message=OUT_OF_ATTEMPTS.format(n=3) + "(RetryPolicy.max_attempts): throttled "
        "(ThrottlingException) 2 times. Try again later. A write of this call got no answer: "
        "it may still have been applied.",
        max_attempts=3,
        retries=2,
    ),
    "a lost answer, then lost races until the deadline: the note too": Case(
        [read_timeout(), LOST, LOST],
        [0.0075, 0.01],
        error=DeadlineExceededError,
        message=OUT_OF_TIME.format(s="0.3") + "lost 3 races in a row to other writers, 3 "
        "attempts. A write of this call got no answer: it may still have been applied.",
        deadline=0.35,
        took=0.15,
        conflicts=2,
        retries=2,
    ),
    "only the failures of the last kind are counted (an id)": Case(
        [error_500(), throttled(), throttled()],
        [0.0075, 0.015],
        error=RetriesExhaustedError,
        message=OUT_OF_ATTEMPTS.format(n=3) + "(RetryPolicy.max_attempts): throttled "
        "(ThrottlingException) 2 times. Try again later.",
        max_attempts=3,
        retries=2,
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_every_outcome(case: Case) -> None:
    clock = FakeClock()
    usage = Usage()
    deadline = Deadline(case.deadline, clock=clock)
    flow = attempts(
        attempt,
        what=case.what,
        table=TABLE,
        policy=policy(clock, case.max_attempts),
        deadline=deadline,
        usage=usage,
        read_timeout=case.read_timeout,
        advice=case.advice,
        writes=case.writes,
    )
    run = drive(flow, case.outcomes, clock, took=case.took)
    assert run.waits == pytest.approx(case.waits)
    assert clock.slept == []  # the driver sleeps, never the flow
    if case.error is None:
        assert run.error is None
        assert run.result == case.result
    else:
        assert type(run.error) is case.error, run.error
        assert str(run.error) == case.message
        assert run.error.table == TABLE  # type: ignore[attr-defined]
    # Every request of every attempt carries the call's one deadline.
    assert run.requests and all(r.deadline is deadline for r in run.requests)
    assert (usage.conflicts, usage.retries) == (case.conflicts, case.retries)


def test_a_pause_carries_the_policys_sleep_and_the_stop_flag() -> None:
    clock = FakeClock()
    run = drive(call(clock), [throttled(), "ok"], clock)
    assert [(p.seconds, p.sleep, p.stop) for p in run.pauses] == [(0.0075, clock.sleep, None)]


def test_the_final_errors_keep_their_cause() -> None:
    clock = FakeClock()
    last = throttled()
    run = drive(call(clock, 2), [throttled(), last], clock)
    assert isinstance(run.error, RetriesExhaustedError)
    assert run.error.cause is last and run.error.__cause__ is last
    assert run.error.attempts == 2


def test_an_attempt_that_sends_several_requests() -> None:
    """An attempt may send more than one request (read, then write): each carries the
    deadline, and a failure of any of them is the attempt's."""
    clock = FakeClock()
    deadline = Deadline(5.0, clock=clock)

    def read_then_write(n: int) -> Flow[tuple[Any, Any]]:
        first = yield Request("get_item", {"TableName": TABLE})
        second = yield update_item(PARAMS)
        return first, second

    flow: Flow[Any] = attempts(
        read_then_write,
        what="x",
        table=TABLE,
        policy=policy(clock),
        deadline=deadline,
        usage=Usage(),
    )
    run = drive(flow, ["read", error_500(), "read again", "written"], clock)
    assert run.result == ("read again", "written")
    assert [r.operation for r in run.requests] == ["get_item", "update_item"] * 2
    assert all(r.deadline is deadline for r in run.requests)
    assert run.waits == pytest.approx([0.0075])


def expired_deadline(clock: FakeClock) -> Callable[[], Deadline]:
    def make() -> Deadline:
        deadline = Deadline(1.0, clock=clock)
        clock.now += 1.0
        return deadline

    return make


def test_a_deadline_already_passed_sends_nothing() -> None:
    clock = FakeClock()
    flow = attempts(
        attempt,
        what="moving counter 'c'",
        table=TABLE,
        policy=policy(clock),
        deadline=expired_deadline(clock)(),
        usage=Usage(),
    )
    run = drive(flow, [], clock)
    assert run.requests == []
    assert isinstance(run.error, DeadlineExceededError)
    assert run.error.attempts == 0
    assert str(run.error).startswith(OUT_OF_TIME.format(s="1.0"))


def described_then_written(n: int) -> Flow[str]:
    """An attempt that reads the table's description first (as a counter's first call does
    when the client has not described the table yet), then writes."""
    from ddbkeys._core.steps import describe_table  # noqa: PLC0415

    yield describe_table({"TableName": TABLE})
    answer = yield update_item(PARAMS)
    return f"{answer} at attempt {n}"


@pytest.mark.parametrize(
    ("outcomes", "note"),
    [
        # helper-77 F1: a plain boto3 client on a refused port, its own retries of the
        # DescribeTable cut short by the deadline: no write was sent.
        ([StillRetried(endpoint_url=URL)], ""),
        ([read_timeout(), read_timeout()], ""),  # the description never answered
        # The write was sent and got no answer, then the description was refused: it may.
        (
            [{}, read_timeout(), StillRetried(endpoint_url=URL)],
            " A write of this call got no answer: it may still have been applied.",
        ),
        ([{}, read_timeout(), {}, read_timeout()], MAY_HAVE_BEEN_APPLIED),
    ],
)
def test_a_read_that_got_no_answer_says_no_write_may_have_been_applied(
    outcomes: list[Any], note: str
) -> None:
    clock = FakeClock()
    flow = call(clock, 2, first=described_then_written, what="moving counter 'c'")
    run = drive(flow, outcomes, clock, took=1.0)  # (a refusal that slow: the client retried)
    assert isinstance(run.error, DdbKeysError), run.error
    assert str(run.error).endswith("." + note), run.error
    assert ("applied" in str(run.error)) == bool(note), run.error


def test_a_write_the_client_goes_on_retrying_after_the_deadline_says_so() -> None:
    """helper-79 F2: a plain boto3 client (its own retries on) whose write got no answer by
    the deadline: the call said "may still have been applied" while the client's retries, in
    the call ddbkeys stopped waiting for, applied it 3 more times."""
    from botocore.config import Config  # noqa: PLC0415

    from ddbkeys._probe import StillTrying, retries_itself  # noqa: PLC0415

    clock = FakeClock()
    flow = call(clock, seconds=3.0, what="moving counter 'c'")
    run = drive(flow, [StillTrying(endpoint_url=URL, waited=3.0)], clock, took=3.0)
    assert str(run.error).endswith(
        "The client's own retries may still send the write: it may yet be applied."
    ), run.error
    assert retries_itself(Config()) and retries_itself(Config(retries={"mode": "standard"}))
    assert not retries_itself(Config(retries={"total_max_attempts": 1}))
    assert not retries_itself(Config(retries={"max_attempts": 0}))
