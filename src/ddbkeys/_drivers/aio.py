"""The asyncio driver: runs a flow on an aiobotocore client, in an event loop.

aiobotocore is an optional dependency (``pip install 'ddbkeys[async]'``); this module imports
without it, and says what to install when a client is needed.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from ddbkeys._capacity import Usage
from ddbkeys._clients import deadline_scope
from ddbkeys._core.steps import Emit, Flow, Pause, Request, Step
from ddbkeys._core.stopping import STOP_SLICE
from ddbkeys._drivers.sync import count, refused
from ddbkeys._errors import NoAnswerInTime
from ddbkeys._probe import not_answered_async
from ddbkeys.aio._client import check_loop, misuse, record_loop

__all__ = ["AsyncDriver"]

T = TypeVar("T")


class AsyncDriver:
    """Sends a flow's requests with an aiobotocore DynamoDB client, each inside the deadline
    it carries (``asyncio.timeout``: a request still unanswered then is given up as
    :class:`~ddbkeys.NoAnswerInTime`); sleeps its pauses on the event loop; counts in
    ``usage``.

    ``owner`` (``"ddbkeys.aio.AtomicCounter"``) is named by the :class:`ConfigurationError`
    raised for a client that is closed, was never entered, or belongs to another event loop
    (see :mod:`ddbkeys.aio._client`)."""

    def __init__(
        self,
        client: Any,
        usage: Usage,
        owner: str = "ddbkeys.aio",
        guard: Callable[[Flow[Any]], Flow[Any]] | None = None,
    ) -> None:
        self.client = client
        self.usage = usage
        self.owner = owner
        #: What each flow run for its result goes through (an id strategy's ``Link.guarded``).
        self.guard = guard

    async def run(self, flow: Flow[T]) -> T:
        """Run ``flow`` to its end and return its result."""
        if self.guard is not None:
            flow = self.guard(flow)
        step: Step | _Done = _advance(flow, None, None)
        while not isinstance(step, _Done):
            if isinstance(step, Emit):
                raise TypeError(f"a flow run for its result yielded {step!r}")
            step = await self._step(flow, step)
        return step.value  # type: ignore[no-any-return]

    async def iterate(self, flow: Flow[Any]) -> AsyncIterator[Any]:
        """Run a streaming flow, yielding what it emits."""
        try:
            step: Step | _Done = _advance(flow, None, None)
            while not isinstance(step, _Done):
                if isinstance(step, Emit):
                    yield step.value
                    step = _advance(flow, None, None)
                else:
                    step = await self._step(flow, step)
        finally:
            flow.close()

    async def _step(self, flow: Flow[Any], step: Step) -> Step | _Done:
        """Carry out ``step`` and hand the flow what it gave; the flow's next step (a
        coroutine must not let StopIteration out, so the end comes as :class:`_Done`)."""
        # What carrying out a step raised is thrown into the flow, a cancellation
        # (asyncio.CancelledError) too: a flow may say so on its way out (a backfill's record,
        # see partition_keys.backfill_claim.farewell) before it raises it again.
        if isinstance(step, Request):
            try:
                answer = await self.send(step)
            except BaseException as exc:  # the flow reads what the request raised
                return _advance(flow, None, exc)
            return _advance(flow, answer, None)
        if isinstance(step, Pause):
            try:
                await pause(step)
            except BaseException as exc:
                return _advance(flow, None, exc)
            return _advance(flow, None, None)
        raise TypeError(f"not a step: {step!r}")

    async def send(self, step: Request) -> Any:
        """One request, given up when its deadline comes."""
        left = step.deadline.remaining() if step.deadline is not None else math.inf
        url = getattr(getattr(self.client, "meta", None), "endpoint_url", "the endpoint")
        table = step.params.get("TableName")
        try:
            if left <= 0:
                raise NoAnswerInTime(endpoint_url=url, waited=0.0)
            method = getattr(self.client, step.operation)
            client = getattr(method, "__self__", self.client)  # (SplitClient: the client it picked)
            previous = check_loop(client, self.owner, table)
            with deadline_scope(step.deadline):  # botocore's own retries stop there too
                try:
                    async with asyncio.timeout(None if math.isinf(left) else left):
                        answer = await method(**step.params)
                except TimeoutError:
                    config = getattr(getattr(client, "meta", None), "config", None)
                    raise await not_answered_async(url, left, config) from None
                except Exception as exc:
                    wrong = misuse(exc, self.owner, previous, table)
                    if wrong is not None:
                        raise wrong from exc
                    record_loop(client, asyncio.get_running_loop())
                    raise
        except Exception as exc:
            refused(self.usage, step, exc)
            raise
        record_loop(client, asyncio.get_running_loop())
        count(self.usage, step, answer)
        return answer


class _Done:
    """A flow's end, and its result."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _advance(flow: Flow[Any], sent: Any, error: BaseException | None) -> Step | _Done:
    """The flow's next step after it is sent ``sent`` (or thrown ``error``), or its end."""
    try:
        if error is not None:
            return flow.throw(error)
        return flow.send(sent)
    except StopIteration as done:
        return _Done(done.value)


async def pause(step: Pause) -> None:
    """A pause on the event loop (a test's injected ``sleep`` is called instead, once)."""
    if step.sleep is not time.sleep:
        step.sleep(step.seconds)
        return
    if step.stop is None:
        if step.seconds > 0:
            await asyncio.sleep(step.seconds)
        return
    step.stop.check()
    end = time.monotonic() + step.seconds
    while (left := end - time.monotonic()) > 0:
        await asyncio.sleep(min(left, STOP_SLICE))
        step.stop.check()
    step.stop.check()
