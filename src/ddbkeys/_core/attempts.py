"""The one retry layer: a flow that runs an attempt until it returns, within a deadline.

Both drivers and every strategy and listing method go through it, so what is retried, how long
to wait and how a call gives up read the same everywhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._capacity import Usage
from ddbkeys._core.steps import Flow, Pause, Request, Step
from ddbkeys._core.stopping import StopFlag
from ddbkeys._errors import (
    DEADLINE_HINT,
    DdbKeysError,
    DeadlineExceededError,
    cut_short,
    error_code,
)
from ddbkeys._probe import StillRetried, StillTrying
from ddbkeys._retry import (
    MAX_REFUSED_ATTEMPTS,
    Deadline,
    RetriesExhaustedError,
    RetryPolicy,
    is_refused,
    is_unavailable,
)
from ddbkeys._translate import (
    deadline_exceeded,
    describe_failure,
    foreign_answer,
    raise_translated,
    translate_error,
    unanswered,
)

__all__ = [
    "SLOW_REFUSAL",
    "Contention",
    "Throttled",
    "attempts",
    "bounded",
    "unavailable_failure",
]

R = TypeVar("R")


class Contention(Exception):
    """Raised by an attempt that lost a race; the loop tries again (after a full-jitter wait
    unless ``immediate``)."""

    def __init__(self, immediate: bool = False, *, wait: float | None = None) -> None:
        super().__init__("lost a race")
        self.immediate = immediate
        #: The wait the attempt chose itself (from what it saw of the contention), if any.
        self.wait = wait


class Throttled(Exception):
    """Raised by an attempt whose transaction was cancelled for capacity; the loop waits with
    exponential backoff, as for a throttled request."""

    def __init__(self, codes: str) -> None:
        super().__init__(f"throttled ({codes})")


def unavailable_failure(exc: BaseException) -> BaseException | None:
    """The botocore failure behind ``exc`` when it is worth the same request again after a
    wait (throttling, 5xx, a timeout, a dropped or refused connection), else None. A
    DdbKeysError counts by its cause, unless it is already a final verdict on retries."""
    if isinstance(exc, (RetriesExhaustedError, DeadlineExceededError)):
        return None
    failure = exc.cause if isinstance(exc, DdbKeysError) else exc
    if failure is None or not is_unavailable(failure):
        return None
    return failure


def bounded(flow: Flow[R], deadline: Deadline, failed: list[Step] | None = None) -> Flow[R]:
    """``flow`` with ``deadline`` on every request it sends that carries none yet; the step
    each failure was met at is added to ``failed``."""
    try:
        step: Step = next(flow)
    except StopIteration as done:  # a flow that had nothing to send
        return done.value  # type: ignore[no-any-return]
    while True:
        if type(step) is Request and step.deadline is None:
            step.deadline = deadline
        try:
            sent = yield step
        except Exception as exc:  # the request's failure, for the flow to read
            if failed is not None:
                failed.append(step)
            try:
                step = flow.throw(exc)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
        else:
            try:
                step = flow.send(sent)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]


def attempts(
    attempt: Callable[[int], Flow[R]],
    *,
    what: str,
    table: str,
    policy: RetryPolicy,
    deadline: Deadline,
    usage: Usage,
    read_timeout: float | None = None,
    stop: StopFlag | None = None,
    advice: str = "Try again later.",
    writes: bool = True,
) -> Flow[R]:
    """Run ``attempt(n)`` until it returns, at most ``policy.max_attempts`` times and within
    ``deadline``.

    :class:`Contention` waits with full jitter; :class:`Throttled`, throttling, 5xx, timeouts
    and dropped connections wait with exponential backoff and send the same request again (a
    refused connection at most :data:`~ddbkeys._retry.MAX_REFUSED_ATTEMPTS` times: nothing
    listens there); any other error goes up at once as a :class:`DdbKeysError`. A wait that
    would pass the deadline is not waited: the call gives up at once, saying why. Every
    request of an attempt carries the deadline, so the driver ends it there.

    ``stop`` (a listing's) is looked at before each attempt and during each wait. The error
    counts the failures of the last kind (a request the deadline cut short is an attempt, not a
    throttle).
    ``writes=False``: nothing the attempt sends changes the table (no "may still have been
    applied" note when the last request got no answer).
    """
    tally = _Tally()
    out_of_time = False
    for n in range(policy.max_attempts):
        if n:
            usage.count(retries=1)
        if deadline.expired():
            out_of_time = True
            break
        if stop is not None:
            stop.check()
        tally.tried += 1
        began = deadline.elapsed()
        tally.at.clear()
        try:
            return (yield from bounded(attempt(n), deadline, tally.at))
        except Contention as lost:
            tally.last, tally.last_unanswered = lost, False
            usage.count(conflicts=1)
            wait = 0.0 if lost.immediate else lost.wait
            if wait is None:
                wait = policy.full_jitter(n)
        except Throttled as throttled:
            tally.last, tally.last_unanswered = throttled, False
            wait = policy.exponential(n)
        except (ClientError, BotoCoreError, DdbKeysError) as exc:
            tally.failed(exc, table, took=deadline.elapsed() - began, writes=writes)
            wait = policy.exponential(n)
        if n + 1 < policy.max_attempts and wait:
            if not deadline.allows(wait):
                out_of_time = True
                break
            yield Pause(wait, policy.sleep, stop)
    last = tally.last
    times = (
        tally.kinds[_kind(last)] if last is not None and tally.kinds[_kind(last)] else tally.tried
    )
    raise gave_up(
        what,
        table,
        deadline,
        tally.tried,
        last,
        out_of_time,
        read_timeout,
        advice,
        times,
        writes,
        sent_unanswered=tally.sent_unanswered,
        last_unanswered=tally.last_unanswered,
    ) from last


#: What a call's error adds where a write may have been applied: its last request got no
#: answer, an earlier one did, or the client's own retries may still send it.
_LAST_WRITE = " The last write got no answer: it may still have been applied."
_SOME_WRITE = " A write of this call got no answer: it may still have been applied."
_STILL_RETRIED = " The client's own retries may still send the write: it may yet be applied."

#: Seconds a refused connection takes, at least, when the client retried it on its own.
SLOW_REFUSAL = 1.0


class _Tally:
    """What the attempts of one call met: the last failure, how many were tried, refused and
    of each kind, and whether a write may have been applied though it got no answer."""

    __slots__ = ("at", "kinds", "last", "last_unanswered", "refused", "sent_unanswered", "tried")

    def __init__(self) -> None:
        self.last: BaseException | None = None
        self.tried = self.refused = 0
        self.kinds: Counter[str] = Counter()
        self.sent_unanswered = self.last_unanswered = False
        #: The steps of the attempt at work that met a failure, the last one last.
        self.at: list[Step] = []

    def failed(
        self,
        exc: ClientError | BotoCoreError | DdbKeysError,
        table: str,
        *,
        took: float = 0.0,
        writes: bool = True,
    ) -> None:
        """A request failed: counted if another attempt may fix it, else raised translated.
        A refused connection that ``took`` :data:`SLOW_REFUSAL` or longer was tried again by
        the client itself (a plain ``boto3.client``'s retries back off for about 25 s): raised
        at once, not tried :data:`~ddbkeys._retry.MAX_REFUSED_ATTEMPTS` times; where the call
        ``writes`` and a write may still be applied, its message says so."""
        failure = unavailable_failure(exc)
        if failure is None:
            raise_translated(exc, table=table)
        # (a read that got no answer, the call's DescribeTable among them, applied nothing:
        # helper-77 F1, a refused endpoint said a write "may yet be applied")
        at = self.at[-1] if self.at else None
        write = not isinstance(at, Request) or at.write
        self.sent_unanswered = self.sent_unanswered or (write and unanswered(failure))
        if self.last is None or not cut_short(failure):
            self.last = failure  # (the deadline cutting a request short tells less)
            self.last_unanswered = write and unanswered(failure)
        # Refused, or answered by a web server that is not DynamoDB: a few tries, not all.
        self.refused += is_refused(failure) or foreign_answer(failure) is not None
        if is_refused(failure) and took >= SLOW_REFUSAL:
            self.refused = MAX_REFUSED_ATTEMPTS
        self.kinds[_kind(failure)] += 1
        if self.refused >= MAX_REFUSED_ATTEMPTS:
            error = translate_error(failure, table=table)
            if writes and self.sent_unanswered and isinstance(error, DdbKeysError):
                still = write and isinstance(failure, StillRetried)
                note = _STILL_RETRIED if still else _SOME_WRITE
                error = type(error)(error.message + note, table=table, cause=failure)
            raise error from failure


def _kind(exc: BaseException | None) -> str:
    return (error_code(exc) if exc is not None else None) or type(exc).__name__


def gave_up(
    what: str,
    table: str,
    deadline: Deadline,
    tried: int,
    last: BaseException | None,
    out_of_time: bool,
    read_timeout: float | None = None,
    advice: str = "Try again later.",
    times: int | None = None,
    writes: bool = True,
    *,
    sent_unanswered: bool = False,
    last_unanswered: bool | None = None,
) -> DdbKeysError:
    """The error for a call that stopped trying: out of time, or out of attempts.
    ``sent_unanswered``: an earlier attempt's write got no answer (not only the last one's),
    so the call may have changed the table: the message says so, whatever the last failure.
    ``last_unanswered``: whether the last failure is a write that got no answer (None: as
    ``last`` says, whatever request met it)."""
    if isinstance(last, Contention):
        reason = f"lost {tried} race{'s' if tried != 1 else ''} in a row to other writers"
    elif isinstance(last, Throttled):
        reason = f"its transaction was {last}"
    else:
        reason = ""
    note = ""
    lost = unanswered(last) if last_unanswered is None else last_unanswered
    if writes and (lost or sent_unanswered) and not what.startswith(("DescribeTable", "reading")):
        note = _LAST_WRITE if lost else _SOME_WRITE
        if lost and isinstance(last, StillTrying):  # (the client's own retries go on)
            note = _STILL_RETRIED
    if out_of_time and deadline.seconds is not None:
        if not reason:
            return deadline_exceeded(
                what,
                table,
                deadline.seconds,
                tried,
                last,
                failures=times,
                read_timeout=read_timeout,
                elapsed=deadline.elapsed(),
                note=note,
            )
        return DeadlineExceededError(
            f"Gave up on {what} on table {table!r} after {deadline.seconds:.1f} s (the "
            f"deadline; {DEADLINE_HINT}): {reason}, {tried} "
            f"attempt{'s' if tried != 1 else ''}.{note}",
            seconds=deadline.seconds,
            attempts=tried,
            table=table,
            cause=last,
        )
    if isinstance(last, Contention):
        advice = "Raise RetryPolicy.max_attempts, or spread the load."
    else:
        reason = reason or describe_failure(last, times=tried if times is None else times)
    return RetriesExhaustedError(
        f"Gave up on {what} on table {table!r} after {tried} attempts "
        f"(RetryPolicy.max_attempts): {reason}. {advice}{note}",
        attempts=tried,
        table=table,
        cause=last,
    )
