"""A listing that ended before its last key never looks complete: reading on raises
ListingInterrupted (sync and asyncio), a caller's asyncio timeout ends the iteration on time,
and an async ``on_key`` is awaited. Against DynamoDB Local, some scenes through the fault
proxy."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys import ConfigurationError, ListingInterrupted
from ddbkeys.aio import distinct_partition_keys as aio_listing
from ddbkeys.aio import make_client as make_aio_client
from ddbkeys.partition_keys import distinct_partition_keys as sync_listing
from ddbkeys.testing import FaultProxy, Faults

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


def fill(client: DynamoDBClient, table: str, keys: int) -> list[str]:
    for key in range(keys):
        for sk in range(2):
            client.put_item(TableName=table, Item={"pk": {"S": f"k{key:03}"}, "sk": {"N": str(sk)}})
    return [f"k{key:03}" for key in range(keys)]


def test_reading_on_after_a_stop_raises_again_in_the_sync_form(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(ddb_client, table, 30)
    listing = sync_listing(ddb_client, table, "skip")
    keys = iter(listing)
    got = [next(keys) for _ in range(10)]
    listing.stop()
    with pytest.raises(ListingInterrupted, match=r"Listing\.stop\(\)"):
        next(keys)
    # Before, the next step ended the iteration: list(keys) was [], as if all were read.
    with pytest.raises(ListingInterrupted, match=r"ended early \(stopped\) after 10 key\(s\)"):
        list(keys)
    rest = list(sync_listing(ddb_client, table, "skip", resume=listing.checkpoint()))
    assert sorted(got + rest) == expected


def test_a_cancelled_step_does_not_end_the_async_form_as_if_complete(
    fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """``asyncio.wait_for(anext(keys), t)`` timing out cancels the step; the next step raises
    (it used to end the iteration quietly, with keys missing), and the checkpoint goes on."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(ddb_client, table, 20)
    fault_proxy.set_faults(Faults(delay=1.0, delay_seconds=0.5))

    async def body() -> tuple[list[Any], str]:
        async with make_aio_client(fault_proxy.endpoint_url) as client:
            listing = await aio_listing(client, table, "skip")
            keys = aiter(listing)
            got: list[Any] = []
            with pytest.raises(TimeoutError):
                while True:
                    got.append(await asyncio.wait_for(anext(keys), 0.2))
            with pytest.raises(ListingInterrupted, match=r"ended early \(CancelledError\)"):
                await anext(keys)
            return got, listing.checkpoint()

    got, token = asyncio.run(body())
    assert fault_proxy.counts["delay"] >= 1
    rest = list(sync_listing(ddb_client, table, "skip", resume=token))
    assert sorted(got + rest) == expected


def test_an_asyncio_timeout_around_the_listing_ends_it_on_time(
    fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """The consumer's own wait for keys must not swallow the caller's cancellation (on Python
    3.11 ``asyncio.wait_for`` can, when it comes as the queue answers: the listing read on)."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, 150)
    # Each answer 250 ms late: read to its end, the listing would take about 10 s; cut at
    # 0.2 s it must end well before (4 s: the margin is for a busy machine).
    fault_proxy.set_faults(Faults(delay=1.0, delay_seconds=0.25))

    async def once() -> float:
        async with make_aio_client(fault_proxy.endpoint_url) as client:
            listing = await aio_listing(client, table, "skip", segments=4)
            began = time.monotonic()
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    async for _ in listing:
                        pass
            return time.monotonic() - began

    for _ in range(3):
        assert asyncio.run(once()) < 4.0
    assert fault_proxy.counts["delay"] > 0


def test_an_async_on_key_is_awaited_and_the_sync_form_refuses_one(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(ddb_client, table, 12)
    saved: list[str] = []

    async def save(listing: Any) -> None:
        await asyncio.sleep(0)
        saved.append(listing.checkpoint())

    async def body() -> list[Any]:
        async with make_aio_client(ddb_endpoint_url) as client:
            listing = await aio_listing(client, table, "skip", on_key=save)
            return [key async for key in listing]

    assert sorted(asyncio.run(body())) == expected
    assert len(saved) == 12 + 1  # each key, and the segment's end
    with pytest.raises(ConfigurationError, match=r"on_key=.*save is a coroutine function"):
        sync_listing(ddb_client, table, "skip", on_key=save)  # type: ignore[arg-type]


def test_a_key_whose_on_key_failed_is_not_skipped_on_resume(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """``on_key`` that raises (the sync form), or an async one that raises or is cancelled
    (``asyncio.wait_for`` on the step): the key was not handed out, and the checkpoint goes on
    before it. It used to count the key as handed out, and the resume skipped it."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(ddb_client, table, 20)

    def failing(listing: Any) -> None:
        if listing.keys_found == 10:
            raise OSError("checkpoint store unavailable")

    listing = sync_listing(ddb_client, table, "skip", on_key=failing)
    got: list[Any] = []
    with pytest.raises(OSError, match="checkpoint store unavailable"):
        got.extend(listing)
    rest = list(sync_listing(ddb_client, table, "skip", resume=listing.checkpoint()))
    assert sorted(got + rest) == expected

    async def body(how: str) -> tuple[list[Any], str]:
        async def save(listing: Any) -> None:
            if listing.keys_found == 10:
                if how == "raise":
                    raise OSError("checkpoint store unavailable")
                await asyncio.sleep(5)  # ... or slow: the step is cancelled meanwhile

        async with make_aio_client(ddb_endpoint_url) as client:
            listing = await aio_listing(client, table, "skip", on_key=save)
            keys = aiter(listing)
            got: list[Any] = []
            with pytest.raises((OSError, TimeoutError)):
                while True:
                    got.append(await asyncio.wait_for(anext(keys), 1.0))
            return got, listing.checkpoint()

    for how in ("raise", "cancel"):
        got, token = asyncio.run(body(how))
        assert len(got) == 9
        rest = list(sync_listing(ddb_client, table, "skip", resume=token))
        assert sorted(got + rest) == expected, how
