"""The asyncio listing (``ddbkeys.aio._listing``) against DynamoDB Local: the exact key set for
each method with 1 and 32 concurrent segments, resume from a checkpoint taken mid-way, and
``stop()``; the same flows the sync listing runs, read by asyncio tasks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from aiobotocore.config import AioConfig
from aiobotocore.session import get_session

from ddbkeys import ListingInterrupted
from ddbkeys._connect import LOCAL_ACCESS_KEY, make_client
from ddbkeys._errors import ConfigurationError, KeySchemaError, TableNotFoundError
from ddbkeys.aio._listing import AsyncListing, distinct_partition_keys
from ddbkeys.partition_keys import distinct_partition_keys as sync_listing
from ddbkeys.testing import Fault, FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

T = TypeVar("T")
METHODS = ["scan", "skip", "skip-pages", "auto"]
KEYS = 60


@asynccontextmanager
async def aio_client(endpoint_url: str) -> AsyncIterator[Any]:
    """An aiobotocore DynamoDB client on ``endpoint_url`` (retries left to ddbkeys)."""
    config = AioConfig(
        retries={"mode": "standard", "total_max_attempts": 1},
        connect_timeout=5,
        read_timeout=30,
        max_pool_connections=64,
    )
    session = get_session()
    async with session.create_client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        aws_access_key_id=LOCAL_ACCESS_KEY,
        aws_secret_access_key=LOCAL_ACCESS_KEY,
        config=config,
    ) as client:
        yield client


def run(endpoint_url: str, body: Callable[[Any], Awaitable[T]]) -> T:
    """``body(client)`` on a new event loop, with an aiobotocore client on ``endpoint_url``."""

    async def main() -> T:
        async with aio_client(endpoint_url) as client:
            return await body(client)

    return asyncio.run(main())


def fill(client: DynamoDBClient, table: str, keys: int = KEYS) -> list[str]:
    """``keys`` collections of 1 to 4 items; the sorted partition keys."""
    for key in range(keys):
        for i in range(1 + key % 4):
            client.put_item(
                TableName=table,
                Item={"pk": {"S": f"k{key:03}"}, "sk": {"N": str(i)}, "pad": {"S": "x" * 100}},
            )
    return [f"k{key:03}" for key in range(keys)]


async def read(listing: AsyncListing, count: int | None = None) -> list[Any]:
    """The listing's keys (the first ``count`` of them, then stop reading)."""
    got: list[Any] = []
    async for key in listing:
        got.append(key)
        if count is not None and len(got) == count:
            break
    return got


@pytest.mark.parametrize("segments", [1, 32])
def test_every_method_gives_the_exact_key_set(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    segments: int,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(ddb_client, table)

    async def body(client: Any) -> None:
        for method in METHODS:
            listing = await distinct_partition_keys(client, table, method, segments=segments)
            keys = await read(listing)
            assert len(keys) == len(set(keys)), f"{method} repeated a key"
            assert sorted(keys) == expected, method
            assert listing.finished and listing.keys_found == KEYS
            assert listing.scan_segments == segments and listing.segments_done == segments
            assert listing.usage.requests >= segments
            sync = sync_listing(ddb_client, table, method)
            assert sorted(sync) == expected
            assert sync.method_name == listing.method_name, method

    run(ddb_endpoint_url, body)


def test_the_listing_is_iterated_directly_or_awaited_once(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """``async for key in distinct_partition_keys(...)`` (a newcomer's first try) lists the
    keys as awaiting first does; a call used twice says so in one line, and a missing table is
    raised at the first step of either form."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(ddb_client, table, 12)

    async def body(client: Any) -> None:
        direct = [key async for key in distinct_partition_keys(client, table, "skip")]
        assert sorted(direct) == expected
        call = distinct_partition_keys(client, table, "skip", segments=4)
        assert sorted(await read(await call)) == expected
        with pytest.raises(ConfigurationError, match="already awaited or iterated"):
            await call
        # Still a coroutine, as when this was a coroutine function: a task can run it.
        in_task = await asyncio.create_task(distinct_partition_keys(client, table, "scan"))
        assert sorted(await read(in_task)) == expected
        with pytest.raises(TableNotFoundError):
            async for _ in distinct_partition_keys(client, "no-such-table-here"):
                pass

    run(ddb_endpoint_url, body)


def test_auto_without_a_sort_key_scans(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "N"))
    for key in range(25):
        ddb_client.put_item(TableName=table, Item={"pk": {"N": str(key)}})

    async def body(client: Any) -> None:
        listing = await distinct_partition_keys(client, table, segments=32)
        assert sorted(await read(listing)) == list(range(25))
        assert listing.method_name == "scan"
        with pytest.raises(KeySchemaError, match="has no sort key"):
            await distinct_partition_keys(client, table, "skip")

    run(ddb_endpoint_url, body)


@pytest.mark.parametrize("method", ["scan", "skip", "skip-pages"])
@pytest.mark.parametrize("segments", [1, 32])
def test_resume_from_a_checkpoint_taken_mid_way(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    method: str,
    segments: int,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(ddb_client, table)

    async def body(client: Any) -> None:
        listing = await distinct_partition_keys(client, table, method, segments=segments)
        first = await read(listing, 17)
        token = listing.checkpoint()
        resumed = await distinct_partition_keys(client, table, method, resume=token)
        rest = await read(resumed)
        assert sorted(first + rest) == expected, (method, segments)  # each key exactly once
        assert resumed.scan_segments == segments
        # A token of the async form goes on in the sync form, and the other way round.
        sync_rest = list(sync_listing(ddb_client, table, method, resume=token))
        assert sorted(first + sync_rest) == expected
        sync = sync_listing(ddb_client, table, method, segments=min(segments, 4))
        sync_first = [key for _, key in zip(range(23), sync, strict=False)]
        again = await distinct_partition_keys(
            client, table, method, segments=segments, resume=sync.checkpoint()
        )
        assert sorted(sync_first + await read(again)) == expected

    run(ddb_endpoint_url, body)


@pytest.mark.parametrize("segments", [1, 3])
def test_stop_during_a_read_budget_wait(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    segments: int,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(ddb_client, table, 30)

    async def body(client: Any) -> None:
        # 0.05 read units a second: once the first keys are read (0.5 unit each), the next
        # read waits 9 s and more, so a stop that waited for the budget would take that long.
        listing = await distinct_partition_keys(
            client, table, "skip", max_rcu_per_second=0.05, segments=segments
        )
        got: list[Any] = []

        async def stop_soon() -> float:
            await asyncio.sleep(0.5)
            listing.stop()
            return time.monotonic()

        stopper: asyncio.Task[float] | None = None
        with pytest.raises(ListingInterrupted, match=r"Listing\.stop\(\)"):
            async for key in listing:
                got.append(key)
                if stopper is None:  # under way (not a fixed time, which load could outlast)
                    stopper = asyncio.create_task(stop_soon())
        ended = time.monotonic()
        assert stopper is not None
        assert ended - await stopper < 5.0  # (a stop slice when quiet; room for load)
        assert 0 < len(got) < 30
        rest = await read(await distinct_partition_keys(client, table, resume=listing.checkpoint()))
        assert sorted(got + rest) == expected  # each key once, none missed

    run(ddb_endpoint_url, body)


def test_stop_during_an_outstanding_request(
    fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(ddb_client, table, 10)
    fault_proxy.set_faults(
        Faults(
            script=[Fault.FORWARD] * 5 + [Fault.DELAY],
            delay_seconds=20,
            operations=frozenset({"Scan"}),
        )
    )

    async def body(client: Any) -> None:
        listing = await distinct_partition_keys(client, table, "skip")
        got: list[Any] = []
        sent = 0.0
        with pytest.raises(ListingInterrupted):
            async for key in listing:
                got.append(key)
                if len(got) == 4:
                    # The 6th Scan will be answered 20 s late: stop while it is outstanding.
                    while fault_proxy.counts["delay"] == 0:
                        await asyncio.sleep(0.01)
                    sent = time.monotonic()
                    listing.stop()
        # (A stop slice when quiet; 5 s leaves a busy machine room: the answer takes 20 s.)
        assert time.monotonic() - sent < 5.0, "the stop waited on the outstanding request"
        assert fault_proxy.counts["delay"] == 1
        rest = list(sync_listing(ddb_client, table, "skip", resume=listing.checkpoint()))
        assert sorted(got + rest) == expected

    run(fault_proxy.endpoint_url, body)


def test_what_the_async_form_refuses(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))

    async def body(client: Any) -> None:
        with pytest.raises(TableNotFoundError, match="Table 'no-such-table' not found"):
            await distinct_partition_keys(client, "no-such-table")
        with pytest.raises(ConfigurationError, match="from 1 to 64"):
            await distinct_partition_keys(client, table, segments=65)
        with pytest.raises(ConfigurationError, match="has no index 'ddbkeys-partition-keys'"):
            await distinct_partition_keys(client, table, "index")
        with pytest.raises(ConfigurationError, match="takes an aiobotocore DynamoDB client"):
            await distinct_partition_keys(ddb_client, table)
        listing = await distinct_partition_keys(client, table)
        assert await read(listing) == []
        with pytest.raises(Exception, match="iterate over it once"):
            await read(listing)

    run(ddb_endpoint_url, body)


def describes(client: Any) -> list[str]:
    """Record the table of each DescribeTable ``client`` sends."""
    sent: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sent.append(params["TableName"])

    client.meta.events.register("provide-client-params.dynamodb.DescribeTable", record)
    return sent


@pytest.mark.parametrize("method", METHODS)
def test_one_describe_table_per_listing(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory, method: str
) -> None:
    sync_client = make_client(endpoint_url=ddb_endpoint_url)
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(sync_client, table, 12)
    sent = describes(sync_client)
    listing = sync_listing(sync_client, table, method, segments=3)
    assert sent == [table]  # before the first key: the listing's one description
    assert sorted(listing) == expected and sent == [table]

    async def body(client: Any) -> None:
        sent = describes(client)
        listing = await distinct_partition_keys(client, table, method, segments=3)
        assert sorted(await read(listing)) == expected
        assert sent == [table]

    run(ddb_endpoint_url, body)
