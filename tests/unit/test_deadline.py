"""The deadline, and the retry layer (:func:`ddbkeys._core.attempts.attempts`) as a listing
uses it, with an injected clock and recorded waits: no server, no sleeping."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import SLOW_REFUSAL, attempts
from ddbkeys._core.steps import Flow, Pause, Request, scan
from ddbkeys._errors import DeadlineExceededError, EndpointUnreachableError, ServiceError
from ddbkeys._retry import Deadline, RetriesExhaustedError, RetryPolicy
from tests.unit.test_read_budget import FakeClock as Clock


def test_deadline() -> None:
    clock = Clock()
    deadline = Deadline(2.0, clock=clock)
    assert deadline.remaining() == 2.0 and not deadline.expired()
    assert deadline.allows(1.9) and not deadline.allows(2.0)
    clock.now += 2.0
    assert deadline.expired() and deadline.remaining() == 0.0
    endless = Deadline(None, clock=clock)
    assert endless.allows(1e9) and not endless.expired()
    assert endless.remaining() == float("inf")
    with pytest.raises(ValueError, match="above 0 seconds"):
        Deadline(0)


class Reader:
    """A listing's reads as the retry layer runs them: each attempt is one Scan, answered by
    ``send()`` (which may move the clock, and raises what the request raised); pauses are
    slept on the clock (recorded in ``clock.slept``)."""

    def __init__(self, clock: Clock, *, attempts: int = 100, deadline: float | None = 2.0):
        self.clock = clock
        self.policy = RetryPolicy(
            max_attempts=attempts,
            base_delay=0.1,
            max_delay=1.0,
            sleep=clock.sleep,
            random=lambda: 1,
        )
        self.deadline = deadline

    def call(self, send: Callable[[], Any]) -> Any:
        def attempt(_: int) -> Flow[Any]:
            return (yield scan({"TableName": "T"}))

        flow = attempts(
            attempt,
            what="listing the partition keys",
            table="T",
            policy=self.policy,
            deadline=Deadline(self.deadline, clock=self.clock),
            usage=Usage(),
            read_timeout=60,  # botocore's default
            advice="Lower --max-rcu-per-second, or try again later.",
            writes=False,
        )
        try:
            step = next(flow)
            while True:
                if isinstance(step, Request):
                    try:
                        answer = send()
                    except Exception as exc:  # the request's failure, for the flow
                        step = flow.throw(exc)
                        continue
                    step = flow.send(answer)
                else:
                    assert isinstance(step, Pause)
                    step.sleep(step.seconds)
                    step = flow.send(None)
        except StopIteration as done:
            return done.value


def reader(clock: Clock, *, attempts: int = 100, deadline: float | None = 2.0) -> Reader:
    return Reader(clock, attempts=attempts, deadline=deadline)


def throttled() -> ClientError:
    response: Any = {
        "Error": {"Code": "ThrottlingException", "Message": "slow down"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    return ClientError(response, "Scan")


def test_throttling_until_the_deadline() -> None:
    clock = Clock()
    calls: list[float] = []

    def send() -> None:
        calls.append(clock.now)
        raise throttled()

    with pytest.raises(DeadlineExceededError) as raised:
        reader(clock).call(send)
    # waits of 0.1, 0.2, 0.4, 0.8 fit in 2 s (1.5 in all); the next, 1.0, would not.
    assert clock.slept == pytest.approx([0.1, 0.2, 0.4, 0.8])
    assert len(calls) == 5
    assert str(raised.value) == (
        "Gave up on listing the partition keys on table 'T' after 2.0 s (the deadline; raise "
        "it with deadline=): throttled (ThrottlingException) 5 times, 5 attempts."
    )
    assert raised.value.attempts == 5 and raised.value.code == "ThrottlingException"


def test_a_silent_endpoint_is_named() -> None:
    clock = Clock()

    def send() -> None:
        clock.now += 2.0  # the read timeout
        raise ReadTimeoutError(endpoint_url="http://127.0.0.1:1/", error="timed out")

    with pytest.raises(DeadlineExceededError) as raised:
        reader(clock).call(send)
    assert clock.slept == []
    assert str(raised.value).endswith(
        "the DynamoDB endpoint http://127.0.0.1:1/ did not answer within 60 s (read timeout), "
        "1 attempt."
    )


def test_a_request_that_outlives_the_deadline_is_told_as_it_was() -> None:
    clock = Clock()

    def send() -> None:
        clock.now += 30.0  # a client whose read timeout is longer than the 2 s deadline
        raise ReadTimeoutError(endpoint_url="http://127.0.0.1:1/", error="timed out")

    with pytest.raises(DeadlineExceededError) as raised:
        reader(clock).call(send)
    assert str(raised.value) == (
        "Gave up on listing the partition keys on table 'T' after 30.0 s, past its 2.0 s "
        "deadline (a request outlived it: give the client a read timeout within the deadline, "
        "e.g. make_client(timeout=...)): the DynamoDB endpoint http://127.0.0.1:1/ did not "
        "answer within 60 s (read timeout), 1 attempt."
    )
    assert raised.value.seconds == 2.0


def test_a_refused_connection_is_tried_three_times() -> None:
    clock = Clock()
    calls: list[int] = []

    def send() -> None:
        calls.append(1)
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:1/")

    with pytest.raises(EndpointUnreachableError, match="Could not connect"):
        reader(clock, deadline=None).call(send)
    assert len(calls) == 3


def test_a_refusal_the_client_retried_itself_is_reported_at_once() -> None:
    """A plain boto3 client retries a refused connection for about 25 s on its own: tried 3
    times, it took the whole 60 s deadline and was reported as a deadline exceeded (a helper's
    finding). A refusal that took SLOW_REFUSAL or more is the client's retries: reported at
    once, as unreachable."""
    clock = Clock()
    calls: list[int] = []

    def send() -> None:
        calls.append(1)
        clock.now += 25.6  # (botocore's backoff: 0.05 s doubling, 10 attempts)
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:1/")

    with pytest.raises(EndpointUnreachableError, match="Could not connect"):
        reader(clock, deadline=60.0).call(send)
    assert len(calls) == 1
    calls.clear()

    def quick() -> None:
        calls.append(1)
        clock.now += SLOW_REFUSAL / 2
        raise EndpointConnectionError(endpoint_url="http://127.0.0.1:1/")

    with pytest.raises(EndpointUnreachableError, match="Could not connect"):
        reader(clock, deadline=None).call(quick)
    assert len(calls) == 3


def test_out_of_attempts_before_the_deadline() -> None:
    clock = Clock()

    def send() -> None:
        raise throttled()

    with pytest.raises(RetriesExhaustedError) as raised:
        reader(clock, attempts=3, deadline=None).call(send)
    assert clock.slept == pytest.approx([0.1, 0.2])  # no wait after the last attempt
    assert str(raised.value) == (
        "Gave up on listing the partition keys on table 'T' after 3 attempts "
        "(RetryPolicy.max_attempts): throttled (ThrottlingException) 3 times. Lower "
        "--max-rcu-per-second, or try again later."
    )


def test_other_errors_go_up_at_once_as_ddbkeys_errors() -> None:
    clock = Clock()
    response: Any = {"Error": {"Code": "AccessDeniedException", "Message": "no"}}

    def send() -> None:
        raise ClientError(response, "Scan")

    with pytest.raises(ServiceError) as raised:
        reader(clock).call(send)
    assert str(raised.value) == "DynamoDB refused Scan on table 'T' (AccessDeniedException): no"
    assert clock.slept == []
