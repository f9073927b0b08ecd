"""The two drivers run the same flows the same way: sending, reading errors, counting, pausing,
streaming, and (asyncio) keeping a request inside its deadline.

The client here is a stand-in that records what it is sent: the drivers' mechanics need no
DynamoDB (the strategies' behaviour on a real one is in tests/integration)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from ddbkeys._capacity import Usage
from ddbkeys._core.steps import Emit, Flow, Pause, Request, get_item, scan
from ddbkeys._core.stopping import StopFlag
from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import ListingInterrupted, NoAnswerInTime
from ddbkeys._retry import Deadline


def refused(code: str) -> ClientError:
    answer: Any = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": 400}}
    return ClientError(answer, "GetItem")


class Recorder:
    """Answers get_item with what ``answers`` holds (an exception is raised), records calls."""

    def __init__(self, *answers: Any, delay: float = 0.0) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.delay = delay

    def _answer(self, name: str, params: dict[str, Any]) -> Any:
        self.sent.append((name, params))
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def get_item(self, **params: Any) -> Any:
        if self.delay:
            time.sleep(self.delay)
        return self._answer("get_item", params)

    def scan(self, **params: Any) -> Any:
        return self._answer("scan", params)


class AsyncRecorder(Recorder):
    async def get_item(self, **params: Any) -> Any:
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._answer("get_item", params)

    async def scan(self, **params: Any) -> Any:
        return self._answer("scan", params)


def read_twice() -> Flow[list[str]]:
    """A flow that reads, reads again after a refusal, and returns what it saw."""
    seen = []
    first = yield get_item({"TableName": "t", "Key": {"pk": {"S": "a"}}})
    seen.append(first["Item"]["v"]["S"])
    try:
        yield get_item({"TableName": "t", "Key": {"pk": {"S": "b"}}})
    except ClientError as exc:
        seen.append(str(exc.response["Error"]["Code"]))
    yield Pause(0.0)
    return seen


ANSWERS = (
    {"Item": {"v": {"S": "one"}}, "ConsumedCapacity": {"CapacityUnits": 0.5}},
    refused("ConditionalCheckFailedException"),
)


def test_the_sync_driver_sends_reads_errors_and_counts() -> None:
    client, usage = Recorder(*ANSWERS), Usage()
    assert SyncDriver(client, usage).run(read_twice()) == ["one", "ConditionalCheckFailedException"]
    assert [name for name, _ in client.sent] == ["get_item", "get_item"]
    assert usage.requests == 1 and usage.read_units == 0.5  # the refused read is not counted


def test_the_async_driver_runs_the_same_flow_the_same_way() -> None:
    client, usage = AsyncRecorder(*ANSWERS), Usage()
    result = asyncio.run(AsyncDriver(client, usage).run(read_twice()))
    assert result == ["one", "ConditionalCheckFailedException"]
    assert usage.requests == 1 and usage.read_units == 0.5


def test_an_error_the_flow_does_not_read_goes_up_in_both() -> None:
    def flow() -> Flow[None]:
        yield get_item({"TableName": "t", "Key": {}})

    with pytest.raises(ClientError):
        SyncDriver(Recorder(refused("ValidationException")), Usage()).run(flow())
    with pytest.raises(ClientError):
        asyncio.run(AsyncDriver(AsyncRecorder(refused("ValidationException")), Usage()).run(flow()))


def test_a_refused_request_is_counted_when_it_asks_so() -> None:
    def flow() -> Flow[None]:
        try:
            yield Request("get_item", {}, count_refused=True, write=True)
        except ClientError:
            return

    usage = Usage()
    SyncDriver(Recorder(refused("TransactionCanceledException")), usage).run(flow())
    assert usage.requests == 1 and usage.write_units == 0


def streaming() -> Flow[None]:
    page = yield scan({"TableName": "t"})
    for item in page["Items"]:
        yield Emit(item["pk"]["S"])


def test_streaming_flows_in_both_drivers() -> None:
    page = {"Items": [{"pk": {"S": "a"}}, {"pk": {"S": "b"}}], "ScannedCount": 7}
    usage = Usage()
    assert list(SyncDriver(Recorder(page), usage).iterate(streaming())) == ["a", "b"]
    assert usage.items == 7  # ScannedCount, not the keys handed out

    async def collect() -> list[str]:
        return [k async for k in AsyncDriver(AsyncRecorder(page), Usage()).iterate(streaming())]

    assert asyncio.run(collect()) == ["a", "b"]
    with pytest.raises(TypeError, match="run for its result yielded Emit"):
        SyncDriver(Recorder(page), Usage()).run(streaming())


def test_the_async_driver_gives_a_request_up_at_its_deadline() -> None:
    client = AsyncRecorder({"Item": "late"}, delay=30.0)

    def flow() -> Flow[Any]:
        try:
            yield Request("get_item", {}, deadline=Deadline(0.2))
        except NoAnswerInTime as exc:
            return exc
        return None

    began = time.monotonic()
    caught = asyncio.run(AsyncDriver(client, Usage()).run(flow()))
    assert isinstance(caught, NoAnswerInTime) and "had not answered" in str(caught)
    assert time.monotonic() - began < 10.0  # (not the 30 s answer; the room is for load)


def test_a_stoppable_pause_ends_the_flow_in_both() -> None:
    stop = StopFlag()
    stop.set()

    def flow() -> Flow[None]:
        yield Pause(10.0, stop=stop)

    with pytest.raises(ListingInterrupted):
        SyncDriver(Recorder(), Usage()).run(flow())
    with pytest.raises(ListingInterrupted):
        asyncio.run(AsyncDriver(AsyncRecorder(), Usage()).run(flow()))


def test_an_injected_sleep_is_called_by_both() -> None:
    waits: list[float] = []

    def flow() -> Flow[None]:
        yield Pause(0.25, waits.append)

    SyncDriver(Recorder(), Usage()).run(flow())
    asyncio.run(AsyncDriver(AsyncRecorder(), Usage()).run(flow()))
    assert waits == [0.25, 0.25]
