"""A stand-in for AtomicCounter, for the unit tests of both block allocators' drivers: blocks
from 1 up, a reservation that fails or is held until released (or applied at once and answered
late), and the hand-back's conditional write applied in memory."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any, cast

from botocore.exceptions import ClientError

from ddbkeys._core.steps import Flow, Request
from ddbkeys._retry import Deadline
from ddbkeys.ids._base import CounterItem
from ddbkeys.ids._blocks import BlockAllocator
from ddbkeys.ids._blocks_steps import HandBack
from ddbkeys.ids._counter import hand_back
from ddbkeys.ids._counter_core import CounterCore
from ddbkeys.ids._link import Link

__all__ = ["AsyncCounter", "Counter", "Throttled", "allocator", "until"]


class Throttled(Exception):
    pass


class Counter:
    """Stands in for AtomicCounter: blocks from 1 up (optionally failing, or held until
    released), and the hand-back's conditional write applied to ``last``. A reservation of a
    count in ``late`` is applied at once and answered once ``answer`` is set (with
    ``late_error`` raised instead, when given: an answer that never came)."""

    table = "stand-in"
    name = "tickets"
    core = CounterCore(table, name)  # (its hand-back's write)
    deadline = 5.0

    class retry:  # as AtomicCounter.retry
        clock = staticmethod(time.monotonic)

    def _begin(self) -> Deadline:  # as AtomicCounter's: a call's deadline
        return Deadline(self.deadline, clock=self.retry.clock)

    def __init__(self, fail: BaseException | None = None) -> None:
        self.last = 0
        self.calls: list[int] = []
        self.writes: list[dict[str, Any]] = []
        self.fail = fail
        self.release = threading.Event()
        self.release.set()
        self.lock = threading.Lock()
        self.late: set[int] = set()
        self.answer = threading.Event()
        self.late_error: BaseException | None = None
        self.senders: list[threading.Thread] = []  # the thread of each reservation (sync)

    def _reserve(self, count: int) -> range:
        with self.lock:
            self.calls.append(count)
            if self.fail is not None:
                raise self.fail
            first, self.last = self.last + 1, self.last + count
            return range(first, self.last + 1)

    def reserve(self, count: int) -> range:
        self.senders.append(threading.current_thread())
        assert self.release.wait(5)
        ids = self._reserve(count)
        if count in self.late:
            assert self.answer.wait(5)
        return self._answered(ids, count)

    def _answered(self, ids: range, count: int) -> range:
        if count in self.late and self.late_error is not None:
            raise self.late_error
        return ids

    # what the allocator's close uses: the real hand-back flow, its write applied here

    def _hand_back(self, back: HandBack, deadline: Deadline) -> bool:
        link = Link(None, self.table, "AtomicCounter")
        link.known.counter = CounterItem(self.table, {"pk": {"S": self.name}}, "last_id")
        applied: bool = self._run(hand_back(self.core, link, back, deadline))
        return applied

    def _run(self, flow: Flow[Any]) -> Any:
        try:
            step = next(flow)
            while True:
                assert isinstance(step, Request) and step.operation == "transact_write_items"
                (action,) = step.params["TransactItems"]
                step = self._write(flow, dict(action["Update"]))
        except StopIteration as done:
            return done.value

    def _write(self, flow: Flow[Any], params: dict[str, Any]) -> Any:
        self.writes.append(params)
        values = params["ExpressionAttributeValues"]
        with self.lock:
            if self.last != int(values[":top"]["N"]):
                error: Any = {
                    "Error": {"Code": "TransactionCanceledException", "Message": "no"},
                    "CancellationReasons": [
                        {
                            "Code": "ConditionalCheckFailed",
                            "Item": {"last_id": {"N": str(self.last)}},
                        }
                    ],
                }
                return flow.throw(ClientError(error, "TransactWriteItems"))
            self.last = int(values[":value"]["N"]) if ":value" in values else 0
        return flow.send({})


class AsyncCounter(Counter):
    async def reserve(self, count: int) -> range:  # type: ignore[override]
        while not self.release.is_set():
            await asyncio.sleep(0.001)
        ids = self._reserve(count)
        end = time.monotonic() + 5  # (as the sync one's wait)
        while count in self.late and not self.answer.is_set():
            assert time.monotonic() < end, "the answer was never let through"
            await asyncio.sleep(0.001)
        return self._answered(ids, count)

    async def _hand_back(self, back: HandBack, deadline: Deadline) -> bool:  # type: ignore[override]
        return super()._hand_back(back, deadline)


def allocator(counter: Counter, block_size: int = 10, **settings: Any) -> BlockAllocator:
    return BlockAllocator(cast(Any, counter), block_size, **settings)


def until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.001)
