"""The sync driver: runs a flow on a boto3 client, in the caller's thread."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from ddbkeys._capacity import Usage
from ddbkeys._clients import deadline_scope, send
from ddbkeys._core.steps import Emit, Flow, Pause, Request, Step
from ddbkeys._errors import unexpected_answer

__all__ = ["SyncDriver", "count"]

T = TypeVar("T")


#: What every answer DynamoDB gives to these operations holds, and what it is called.
_HOLDS = {"scan": ("Scan", "Items"), "query": ("Query", "Items")}


def count(usage: Usage, step: Request, answer: Any) -> None:
    """Count an answered request in ``usage`` as the request says (both drivers do this); an
    answer without what DynamoDB's always hold is an UnexpectedAnswerError (an endpoint that
    is not DynamoDB answering HTTP 200: read as no items, a listing or an audit would be empty
    and say nothing)."""
    holds = _HOLDS.get(step.operation)
    if holds is not None and not isinstance(answer.get(holds[1]), list):
        raise unexpected_answer(holds[0], step.params.get("TableName"), "Items", answer)
    if not step.counted:
        return
    items = step.items
    if step.count_scanned:
        items = int(answer.get("ScannedCount", len(answer.get("Items", []))))
    usage.add(answer, write=step.write, items=items, billed=step.billed)


def refused(usage: Usage, step: Request, exc: BaseException) -> None:
    """Count a request DynamoDB answered with an error, when the request asks for it, and
    botocore's own retries before that answer (a lost response resent, then refused: a
    conditional write that finds its own first attempt applied) in any case."""
    if not isinstance(exc, ClientError):
        return
    if step.count_refused:
        usage.add(None, write=step.write, billed=step.billed if step.bill_refused else 0.0)
    resent = exc.response.get("ResponseMetadata", {}).get("RetryAttempts", 0)
    if step.counted and isinstance(resent, int) and resent > 0:
        usage.count(retries=resent)


class SyncDriver:
    """Sends a flow's requests with a boto3 client (one :func:`~ddbkeys.as_client`
    made), each inside the deadline it carries; sleeps its pauses; counts in ``usage``."""

    def __init__(
        self, client: Any, usage: Usage, guard: Callable[[Flow[Any]], Flow[Any]] | None = None
    ) -> None:
        self.client = client
        self.usage = usage
        #: What each flow run for its result goes through (an id strategy's ``Link.guarded``).
        self.guard = guard

    def run(self, flow: Flow[T]) -> T:
        """Run ``flow`` to its end and return its result."""
        if self.guard is not None:
            flow = self.guard(flow)
        try:
            step: Step = next(flow)
            while True:
                if isinstance(step, Emit):
                    raise TypeError(f"a flow run for its result yielded {step!r}")
                step = self._step(flow, step)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]

    def iterate(self, flow: Flow[Any]) -> Iterator[Any]:
        """Run a streaming flow, yielding what it emits."""
        try:
            step: Step = next(flow)
            while True:
                if isinstance(step, Emit):
                    yield step.value
                    step = flow.send(None)
                else:
                    step = self._step(flow, step)
        except StopIteration:
            return

    def _step(self, flow: Flow[Any], step: Step) -> Step:
        """Carry out ``step`` and hand the flow what it gave: the flow's next step
        (StopIteration at its end)."""
        # What carrying out a step raised is thrown into the flow, Ctrl-C (KeyboardInterrupt)
        # and SystemExit too: a flow may say so on its way out (a backfill's record, see
        # partition_keys.backfill_claim.farewell) before it raises it again.
        if isinstance(step, Request):
            try:
                answer = self.send(step)
            except BaseException as exc:  # the flow reads what the request raised
                return flow.throw(exc)
            return flow.send(answer)
        if isinstance(step, Pause):
            try:
                pause(step)
            except BaseException as exc:
                return flow.throw(exc)
            return flow.send(None)
        raise TypeError(f"not a step: {step!r}")

    def send(self, step: Request) -> Any:
        """One request, kept inside its deadline (see :func:`ddbkeys._clients.send`)."""
        try:
            with deadline_scope(step.deadline):
                answer = send(self.client, step.operation, step.params)
        except Exception as exc:
            refused(self.usage, step, exc)
            raise
        count(self.usage, step, answer)
        return answer


def pause(step: Pause) -> None:
    if step.stop is not None:
        step.stop.sleep(step.seconds, step.sleep)
    elif step.seconds > 0:
        step.sleep(step.seconds)
