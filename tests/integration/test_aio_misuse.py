"""ddbkeys.aio against a real DynamoDB, used the ways a tester found confusing: with an
aiobotocore client that is closed or was never entered, and from more than one event loop (a
second ``asyncio.run()``, a second thread). Each is a ConfigurationError that says what is wrong
and what to do, raised at once (never after waiting for the deadline); what holds nothing of a
loop goes on working in the next one when its client is open there."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pytest

from ddbkeys import aio
from ddbkeys._connect import LOCAL_ACCESS_KEY, is_loopback
from ddbkeys._errors import ConfigurationError
from ddbkeys.ids import AtomicCounter, CollectionSequence, GaplessSequence
from ddbkeys.testing._tables import TableFactory
from tests.support.drivers import EventLoopThread, in_thread

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

T = TypeVar("T")
#: Long enough that an error that waits for the deadline is told from one raised at once.
DEADLINE = 60.0
AT_ONCE = 10.0
CLOSED = "is closed, or was never entered: send with it inside its block, async with "
OPEN = "async with session.create_client('dynamodb') as client:"


def creator(endpoint_url: str, ddb_client: DynamoDBClient) -> Any:
    """``session.create_client("dynamodb", ...)`` for the test endpoint, not entered."""
    session = pytest.importorskip("aiobotocore.session").get_session()
    keys = LOCAL_ACCESS_KEY if is_loopback(endpoint_url) else None
    return session.create_client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name=ddb_client.meta.region_name,
        aws_access_key_id=keys,
        aws_secret_access_key=keys,
    )


def run(call: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``call()`` run by ``asyncio.run()``: in a new event loop."""
    return asyncio.run(call())


def refused(call: Callable[[], T]) -> str:
    """The message of the ConfigurationError ``call()`` raises, which it raises at once."""
    began = time.monotonic()
    with pytest.raises(ConfigurationError) as caught:
        call()
    assert time.monotonic() - began < AT_ONCE, "it waited for the deadline"
    return str(caught.value)


@pytest.fixture
def tables(ddb_table_factory: TableFactory) -> tuple[str, str]:
    """(a table keyed on pk, a table of item collections)."""
    return ddb_table_factory(("pk", "S")), ddb_table_factory(("pk", "S"), ("sk", "N"))


#: Each entry point, as (what the error names, a coroutine of the client and the two tables).
ENTRY_POINTS: dict[str, Callable[[Any, str, str], Awaitable[object]]] = {
    "ddbkeys.aio.AtomicCounter": lambda c, t, _: aio.AtomicCounter(c, t, "order").next(),
    "ddbkeys.aio.GaplessSequence": lambda c, t, _: aio.GaplessSequence(c, t, "user").put(
        {"pk": "user#1"}
    ),
    "ddbkeys.aio.CollectionSequence": lambda c, _, t: aio.CollectionSequence(c, t).put("p"),
    "ddbkeys.aio.distinct_partition_keys": lambda c, t, _: aio.distinct_partition_keys(c, t),
    "ddbkeys.aio.MarkerIndex": lambda c, _, t: aio.MarkerIndex(c, t).status(),
    "ddbkeys.aio.audit_attribute": lambda c, t, _: aio.audit_attribute(c, t, "id"),
}


# --- 1. a client closed, or never entered ----------------------------------------------------


@pytest.mark.parametrize("owner", sorted(ENTRY_POINTS))
def test_a_client_whose_block_has_ended_is_a_configuration_error(
    owner: str, ddb_endpoint_url: str, ddb_client: DynamoDBClient, tables: tuple[str, str]
) -> None:
    async def after_the_block() -> object:
        async with creator(ddb_endpoint_url, ddb_client) as client:
            pass
        return await ENTRY_POINTS[owner](client, *tables)

    message = refused(lambda: asyncio.run(after_the_block()))
    assert message.startswith(f"The aiobotocore client of {owner} {CLOSED}")
    assert "ddbkeys.aio.make_client() as client:" in message


def test_a_client_closed_inside_its_block_or_after_use(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, tables: tuple[str, str]
) -> None:
    async def closed_inside() -> None:
        async with creator(ddb_endpoint_url, ddb_client) as client:
            counter = aio.AtomicCounter(client, tables[0], "order", deadline=DEADLINE)
            assert await counter.next() == 1
            await client.close()
            await counter.next()

    assert CLOSED in refused(lambda: asyncio.run(closed_inside()))

    async def blocks_after_the_block() -> None:
        async with creator(ddb_endpoint_url, ddb_client) as client:
            counter = aio.AtomicCounter(client, tables[0], "tickets", deadline=DEADLINE)
            blocks = aio.BlockAllocator(counter, 2, prefetch=False)
            assert [await blocks.next() for _ in range(2)] == [1, 2]
        await blocks.next()  # the next block is reserved with the closed client

    assert "The aiobotocore client of ddbkeys.aio.AtomicCounter " + CLOSED in refused(
        lambda: asyncio.run(blocks_after_the_block())
    )


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_a_client_never_entered_is_a_configuration_error(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, tables: tuple[str, str]
) -> None:
    # session.create_client(...) without async with: refused where it is given
    message = refused(lambda: aio.AtomicCounter(creator(ddb_endpoint_url, ddb_client), tables[0]))
    assert message.startswith(
        f"ddbkeys.aio was given a client that was not entered (ClientCreatorContext): open it "
        f"with {OPEN}"
    )
    assert "not entered (_AsyncGeneratorContextManager)" in refused(
        lambda: aio.AtomicCounter(aio.make_client(), tables[0])
    )

    # an AioBaseClient that was never entered (aiobotocore makes one before entering it)
    session = pytest.importorskip("aiobotocore.session").get_session()
    if not hasattr(session, "_create_client"):
        pytest.skip("this aiobotocore makes its clients another way")
    keys = LOCAL_ACCESS_KEY if is_loopback(ddb_endpoint_url) else None

    async def not_entered() -> int:
        client = await session._create_client(
            "dynamodb",
            endpoint_url=ddb_endpoint_url,
            region_name=ddb_client.meta.region_name,
            aws_access_key_id=keys,
            aws_secret_access_key=keys,
        )
        return await aio.AtomicCounter(client, tables[0], "order").next()

    assert CLOSED in refused(lambda: asyncio.run(not_entered()))
    # (The creator never entered warns when it is collected: here, under this test's filter,
    # not in whichever test of this worker runs when the collector next does.)
    gc.collect()


# --- 2. more than one event loop ---------------------------------------------------------------


def test_a_client_left_open_when_its_loop_ended(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, tables: tuple[str, str]
) -> None:
    simple, collections = tables

    async def first() -> dict[str, Any]:
        client = await creator(ddb_endpoint_url, ddb_client).__aenter__()  # never left
        objects: dict[str, Any] = {
            "AtomicCounter": aio.AtomicCounter(client, simple, "order", deadline=DEADLINE),
            "GaplessSequence": aio.GaplessSequence(client, simple, "user", deadline=DEADLINE),
            "CollectionSequence": aio.CollectionSequence(client, collections, deadline=DEADLINE),
        }
        assert await objects["AtomicCounter"].next() == 1
        assert await objects["GaplessSequence"].put({"pk": "user#1"}) == 1
        assert await objects["CollectionSequence"].put("p") == 1
        return objects

    objects = asyncio.run(first())
    calls: dict[str, Callable[[], Coroutine[Any, Any, object]]] = {
        "AtomicCounter": objects["AtomicCounter"].next,
        "GaplessSequence": partial(objects["GaplessSequence"].put, {"pk": "user#2"}),
        "CollectionSequence": partial(objects["CollectionSequence"].put, "p"),
    }
    for name, call in calls.items():
        message = refused(partial(run, call))
        assert message.startswith(
            f"ddbkeys.aio.{name} was called in an event loop other than the one its aiobotocore "
            "client was used in (one that has ended)"
        )
        assert f"create one {name} per event loop, over a client opened in that loop" in message
        assert OPEN in message
        assert message.endswith("Nothing was sent.")
    # ... and nothing was: the request would have gone out on the ended loop's connection,
    # been applied, and failed as its answer was read (the Lambda pattern: a client entered
    # once, kept in a global, and asyncio.run() for each invocation).
    assert AtomicCounter(ddb_client, simple, "order").current() == 1
    assert GaplessSequence(ddb_client, simple, "user").current() == 1
    assert CollectionSequence(ddb_client, collections).current("p") == 1
    assert "Item" not in ddb_client.get_item(TableName=simple, Key={"pk": {"S": "user#2"}})


def test_make_client_left_open_and_a_second_asyncio_run(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, tables: tuple[str, str]
) -> None:
    """helper-77 F4: make_client() entered in one asyncio.run() and never left is closed by
    that run's end (it finalizes the context manager's generator); the next asyncio.run()'s
    call was said to use a client "closed, or never entered"."""
    held: list[Any] = []

    async def first() -> aio.AtomicCounter:
        opened = aio.make_client(endpoint_url=ddb_endpoint_url, region=ddb_client.meta.region_name)
        held.append(opened)  # (never left)
        counter = aio.AtomicCounter(await opened.__aenter__(), tables[0], "second-run")
        assert await counter.next() == 1
        return counter

    counter = asyncio.run(first())
    message = refused(lambda: asyncio.run(counter.next()))
    assert message.startswith(
        "The aiobotocore client of ddbkeys.aio.AtomicCounter is closed, and was last used in "
        "an event loop that has ended (a second asyncio.run()?"
    ), message
    assert "Create one AtomicCounter per event loop" in message


def test_a_new_loop_sends_only_what_the_user_asked_for(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, tables: tuple[str, str]
) -> None:
    """Whether a client was entered again in a new loop, or left open in the one that ended,
    is read from the client: no request of ddbkeys' own (ListTables used to be sent, which no
    iam-policy grants) goes out, either way."""
    simple, _ = tables
    opened = creator(ddb_endpoint_url, ddb_client)
    sent: list[str] = []

    def note(model: Any, **_: Any) -> None:
        sent.append(model.name)

    async def first() -> tuple[Any, Any]:
        client = await opened.__aenter__()
        client.meta.events.register("before-call.dynamodb", note)
        counter = aio.AtomicCounter(client, simple, "order", deadline=DEADLINE)
        assert await counter.next() == 1
        return client, counter

    client, counter = run(first)

    async def entered_again() -> int:
        async with client:  # left and entered again, in this loop
            return cast(int, await counter.next())

    async def leave() -> None:
        await client.__aexit__(None, None, None)

    assert sent == ["DescribeTable", "UpdateItem"]  # (the table's schema, checked once)
    sent.clear()
    run(leave)
    assert run(entered_again) == 2
    assert sent == ["UpdateItem"]  # (no ListTables before it)

    async def left_open() -> None:
        await client.__aenter__()  # entered in this loop, never left
        assert await counter.next() == 3

    run(left_open)
    assert refused(partial(run, counter.next)).endswith("Nothing was sent.")
    assert sent == ["UpdateItem"] * 2
    assert AtomicCounter(ddb_client, simple, "order").current() == 3


def test_what_holds_no_loop_state_goes_on_in_the_next_loop_and_thread(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, tables: tuple[str, str]
) -> None:
    """A client closed in one loop and entered again in the next (a second asyncio.run(), a
    new thread) serves the same counter, sequences and index; a block allocator holds tasks of
    its first loop and is refused; a listing belongs to the loop it is read in."""
    simple, collections = tables
    opened = creator(ddb_endpoint_url, ddb_client)

    async def first() -> dict[str, Any]:
        async with opened as client:
            counter = aio.AtomicCounter(client, simple, "order", deadline=DEADLINE)
            objects: dict[str, Any] = {
                "counter": counter,
                "gapless": aio.GaplessSequence(client, simple, "user", deadline=DEADLINE),
                "collection": aio.CollectionSequence(client, collections, deadline=DEADLINE),
                "blocks": aio.BlockAllocator(counter, 10, prefetch=False),
                "index": aio.MarkerIndex(client, collections, deadline=DEADLINE),
            }
            assert await objects["blocks"].next() == 1
            await use(objects, 1)
            objects["client"] = client
            return objects

    async def use(objects: dict[str, Any], n: int) -> None:
        # One request at a time: two at once would bind a lock of the client's HTTP session to
        # this loop (aiobotocore makes it once per client), and then the client itself would
        # fail in the next loop; what ddbkeys holds does not.
        assert await objects["gapless"].put({"pk": f"user#{n}"}) == n
        assert await objects["collection"].put("p") == n
        assert await objects["counter"].next() == 10 + n  # (the block took 1..10)
        assert await objects["index"].status() is None

    async def later(objects: dict[str, Any], n: int) -> None:
        async with objects["client"]:  # entered again, in this loop
            await use(objects, n)

    objects = asyncio.run(first())
    asyncio.run(later(objects, 2))
    in_thread(later(objects, 3))

    async def more_ids() -> int:
        async with objects["client"]:
            return cast(int, await objects["blocks"].next())

    for attempt in (lambda: asyncio.run(more_ids()), lambda: in_thread(more_ids())):
        message = refused(attempt)
        assert message == (
            "ddbkeys.aio.BlockAllocator was called in an event loop other than the one of its "
            "first call (one that has ended), and its blocks are reserved by tasks of that "
            "loop: create one BlockAllocator per event loop (each over a client opened in that "
            "loop)."
        )

    async def listing() -> Any:
        async with objects["client"]:
            return await aio.distinct_partition_keys(objects["client"], simple, segments=2)

    made = asyncio.run(listing())

    async def first_key() -> tuple[Any, object]:
        async with objects["client"]:
            keys = made.__aiter__()
            return keys, await keys.__anext__()  # read in this loop, though made in another

    keys, key = in_thread(first_key())
    assert str(key).startswith("user#")

    async def next_key() -> object:
        async with objects["client"]:
            return await keys.__anext__()

    assert refused(lambda: asyncio.run(next_key())).startswith(
        "ddbkeys.aio.AsyncListing was called in an event loop other than the one of its first "
        "call (one that has ended), and its segments are read by tasks of that loop"
    )


def test_objects_in_use_by_a_loop_in_another_thread(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, tables: tuple[str, str]
) -> None:
    """Two threads, each with its own loop, one client open in the first: every object is
    refused in the second at once (the group commit and the block allocator used to wait
    there for a wake-up from the other thread), and goes on in its own."""
    simple, collections = tables
    home = EventLoopThread()
    try:

        async def make() -> dict[str, Any]:
            client = await creator(ddb_endpoint_url, ddb_client).__aenter__()
            counter = aio.AtomicCounter(client, simple, "order", deadline=DEADLINE)
            objects: dict[str, Any] = {
                "client": client,
                "AtomicCounter": counter,
                "GaplessSequence": aio.GaplessSequence(client, simple, "user", deadline=DEADLINE),
                "CollectionSequence": aio.CollectionSequence(
                    client, collections, deadline=DEADLINE
                ),
                "BlockAllocator": aio.BlockAllocator(counter, 10),
                "MarkerIndex": aio.MarkerIndex(client, collections, deadline=DEADLINE),
            }
            assert await objects["BlockAllocator"].next() == 1
            assert await objects["GaplessSequence"].put({"pk": "user#1"}) == 1
            assert await objects["CollectionSequence"].put("p") == 1
            listing = await aio.distinct_partition_keys(client, simple, deadline=DEADLINE)
            objects["AsyncListing"] = listing.__aiter__()
            assert str(await objects["AsyncListing"].__anext__()).startswith(("user#", "order"))
            return objects

        objects = home.run(make())
        calls: dict[str, Callable[[], Coroutine[Any, Any, object]]] = {
            "AtomicCounter": objects["AtomicCounter"].next,
            "GaplessSequence": partial(objects["GaplessSequence"].put, {"pk": "user#2"}),
            "CollectionSequence": partial(objects["CollectionSequence"].put, "p"),
            "BlockAllocator": objects["BlockAllocator"].next,
            "MarkerIndex": partial(objects["MarkerIndex"].status, fresh=True),
            "AsyncListing": objects["AsyncListing"].__anext__,
        }
        for name, call in calls.items():
            message = refused(partial(run, call))
            assert message.startswith(f"ddbkeys.aio.{name} was called in an event loop other")
            assert "(one still running, in another thread)" in message
            assert f"create one {name} per event loop" in message

        async def at_home() -> tuple[int, int, int]:
            return (
                await objects["BlockAllocator"].next(),
                await objects["GaplessSequence"].put({"pk": "user#2"}),
                await objects["CollectionSequence"].put("p"),
            )

        assert home.run(at_home()) == (2, 2, 2)
        home.run(objects["client"].__aexit__(None, None, None))
    finally:
        home.close()


def test_another_thread_may_not_be_first_to_use_a_client_entered_in_this_loop(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    """Thread 1 opens a client and builds a counter on it, sending nothing yet; thread 2 calls
    the counter first from its own loop. Thread 2 is refused (the client belongs to thread 1's
    loop), and thread 1 goes on unharmed (aiohttp's connections stay its loop's)."""
    table = ddb_table_factory(("pk", "S"))
    shared: dict[str, Any] = {}
    built, tried = threading.Event(), threading.Event()
    results: dict[str, Any] = {}

    async def owner() -> list[int]:
        async with aio.make_client(ddb_endpoint_url) as client:
            shared["counter"] = aio.AtomicCounter(client, table, "c", group_commit=True)
            built.set()
            await asyncio.get_running_loop().run_in_executor(None, tried.wait, AT_ONCE)
            return list(await asyncio.gather(*(shared["counter"].next() for _ in range(5))))

    async def intruder() -> int:
        try:
            return int(await shared["counter"].next())
        finally:
            tried.set()

    def run(name: str, make: Callable[[], Coroutine[Any, Any, Any]], wait: bool) -> None:
        if wait:
            built.wait(AT_ONCE)
        try:
            results[name] = asyncio.run(make())
        except Exception as exc:
            results[name] = exc

    threads = [
        threading.Thread(target=run, args=("owner", owner, False)),
        threading.Thread(target=run, args=("intruder", intruder, True)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE)
    assert isinstance(results["intruder"], ConfigurationError)
    assert "create one AtomicCounter per event loop" in str(results["intruder"])
    assert sorted(results["owner"]) == [1, 2, 3, 4, 5]
