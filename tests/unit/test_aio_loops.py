"""ddbkeys.aio and event loops, without a server: what belongs to one loop (PerLoop,
LoopBinding), the asyncio driver's check of the loop a client is used in, how a closed or
never-entered aiobotocore client is told apart (from what aiobotocore raises; with real
aiobotocore clients in tests/transport/test_aio_clients.py), and the block allocators' one
signature. The same cases against DynamoDB Local are in tests/integration/test_aio_misuse.py."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, TypeVar, cast

import pytest
from botocore.exceptions import HTTPClientError

from ddbkeys._capacity import Usage
from ddbkeys._core.loops import LoopBinding, PerLoop
from ddbkeys._core.steps import Flow, get_item
from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._errors import ConfigurationError
from ddbkeys.aio._blocks import BlockAllocator as AsyncBlockAllocator
from ddbkeys.aio._client import misuse
from ddbkeys.ids._blocks import BlockAllocator
from tests.support.blocks_counter import AsyncCounter, Counter
from tests.support.drivers import EventLoopThread, in_thread

T = TypeVar("T")


# --- what belongs to one loop -------------------------------------------------------------------


def test_per_loop_makes_one_value_per_loop_and_drops_those_of_closed_loops() -> None:
    per_loop: PerLoop[object] = PerLoop(object)

    async def twice() -> tuple[object, object]:
        return per_loop.get(), per_loop.get()

    first, again = asyncio.run(twice())
    assert first is again
    second, _ = asyncio.run(twice())  # a new loop (it may even get the id of the first)
    assert second is not first
    assert len(per_loop) == 1  # the first loop's value went: that loop is closed
    assert in_thread(twice(), 30)[0] is not second


def test_a_binding_is_to_the_loop_of_the_first_call() -> None:
    binding = LoopBinding("ddbkeys.aio.Thing", "its work is done by tasks of that loop")

    async def check() -> asyncio.AbstractEventLoop:
        binding.check()
        return binding.check()

    home = asyncio.run(check())
    assert binding.loop is home
    with pytest.raises(ConfigurationError) as ended:
        asyncio.run(check())
    assert str(ended.value) == (
        "ddbkeys.aio.Thing was called in an event loop other than the one of its first call "
        "(one that has ended), and its work is done by tasks of that loop: create one Thing per "
        "event loop (each over a client opened in that loop)."
    )

    running = EventLoopThread()
    try:
        elsewhere = LoopBinding("ddbkeys.aio.Thing", "it holds tasks")
        running.call(elsewhere.check)
        with pytest.raises(ConfigurationError, match=r"\(one still running, in another thread\)"):
            asyncio.run(check_with(elsewhere))
    finally:
        running.close()


async def check_with(binding: LoopBinding) -> None:
    binding.check()


# --- the driver: the loop a client is used in -----------------------------------------------------


class Client:
    """An asyncio client stand-in that answers every get_item."""

    def __init__(self) -> None:
        self.sent = 0

    async def get_item(self, **params: Any) -> Any:
        self.sent += 1
        return {"Item": {}}


def one_read() -> Flow[Any]:
    return (yield get_item({"TableName": "orders", "Key": {}}))


def test_a_client_may_go_on_in_a_new_loop_once_its_loop_has_ended() -> None:
    # (an aiobotocore client closed in one asyncio.run() and entered again in the next works)
    client = Client()
    driver = AsyncDriver(client, Usage(), "ddbkeys.aio.AtomicCounter")
    asyncio.run(driver.run(one_read()))
    asyncio.run(driver.run(one_read()))
    in_thread(driver.run(one_read()), 30)
    assert client.sent == 3


def test_a_client_in_use_by_a_loop_still_running_is_refused_in_another() -> None:
    client = Client()
    driver = AsyncDriver(client, Usage(), "ddbkeys.aio.AtomicCounter")
    running = EventLoopThread()
    try:
        running.run(driver.run(one_read()))
        with pytest.raises(ConfigurationError) as caught:
            asyncio.run(driver.run(one_read()))
        running.run(driver.run(one_read()))  # its own loop still may
    finally:
        running.close()
    message = str(caught.value)
    assert message.startswith(
        "ddbkeys.aio.AtomicCounter was called in an event loop other than the one its "
        "aiobotocore client was used in (one still running, in another thread)"
    )
    assert "create one AtomicCounter per event loop" in message
    assert "async with session.create_client('dynamodb') as client:" in message
    assert caught.value.table == "orders" and client.sent == 2


def http_client_error(error: Exception) -> HTTPClientError:
    return HTTPClientError(error=error)


def test_what_aiobotocore_raises_for_a_closed_client_or_another_loop_is_told_apart() -> None:
    # (read in aiobotocore's httpsession.py: its sessions are None outside async with, and its
    # connections raise RuntimeError in another loop; both come wrapped in HTTPClientError)
    closed = misuse(
        http_client_error(AttributeError("'NoneType' object has no attribute 'get'")),
        "ddbkeys.aio.GaplessSequence",
        None,
    )
    assert closed is not None and str(closed).startswith(
        "The aiobotocore client of ddbkeys.aio.GaplessSequence is closed, or was never entered"
    )
    assert isinstance(closed.cause, HTTPClientError)
    other = misuse(
        http_client_error(RuntimeError("Task got Future attached to a different loop")),
        "ddbkeys.aio.GaplessSequence",
        None,
    )
    assert other is not None and "create one GaplessSequence per event loop" in str(other)
    assert misuse(http_client_error(ValueError("something else")), "x", None) is None
    assert misuse(RuntimeError("a different loop, but not from the client"), "x", None) is None


# --- the block allocators ------------------------------------------------------------------------


def test_both_block_allocators_have_one_signature() -> None:
    sync = inspect.signature(BlockAllocator)
    asynchronous = inspect.signature(AsyncBlockAllocator)
    shape = [(p.name, p.kind, p.default) for p in sync.parameters.values()]
    assert shape == [(p.name, p.kind, p.default) for p in asynchronous.parameters.values()]
    assert [name for name, _, _ in shape] == [
        "counter",
        "block_size",
        "prefetch",
        "refill_at",
        "min_block_size",
        "max_block_size",
        "block_lifetime",
        "clock",
    ]


def test_a_block_allocator_refuses_the_other_apis_counter() -> None:
    with pytest.raises(ConfigurationError) as caught:
        AsyncBlockAllocator(cast(Any, Counter()), 10)
    assert str(caught.value) == (
        "ddbkeys.aio.BlockAllocator takes a ddbkeys.aio.AtomicCounter, not a ddbkeys.ids one: "
        "use ddbkeys.ids.BlockAllocator with it, or make the counter with "
        "ddbkeys.aio.AtomicCounter."
    )
    with pytest.raises(ConfigurationError, match=r"^ddbkeys.ids.BlockAllocator takes a ddbkeys"):
        BlockAllocator(cast(Any, AsyncCounter()), 10)
    with pytest.raises(ConfigurationError, match=r"BlockAllocator takes an AtomicCounter"):
        AsyncBlockAllocator(cast(Any, object()), 10)


def test_an_async_block_allocator_belongs_to_one_loop() -> None:
    counter = AsyncCounter()
    blocks = AsyncBlockAllocator(cast(Any, counter), 10)

    async def three() -> list[int]:
        return [await blocks.next() for _ in range(3)]

    assert asyncio.run(three()) == [1, 2, 3]
    reserved = list(counter.calls)
    with pytest.raises(ConfigurationError, match=r"^ddbkeys.aio.BlockAllocator was called in an"):
        asyncio.run(three())
    with pytest.raises(ConfigurationError, match="create one BlockAllocator per event loop"):
        in_thread(three(), 30)
    assert counter.calls == reserved  # nothing more was reserved
