"""The marker index for asyncio against DynamoDB Local: create, backfill and verify give the
exact key set; mark() from 32 tasks of one event loop on one object; the follower's asyncio
form keeps the markers exact and stops when asked; nothing is sent before the first call."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from aiobotocore.session import get_session

from ddbkeys._errors import DdbKeysError
from ddbkeys.aio._index import MarkerIndex, StateStore, StreamFollower, enable_stream, reconcile
from ddbkeys.aio._listing import distinct_partition_keys
from ddbkeys.partition_keys import IndexUnprovenError
from ddbkeys.partition_keys._index.maintain import Outcome
from ddbkeys.testing._tables import TableFactory
from tests.integration.test_listing_async import describes
from tests.integration.test_marker_lifecycle import item, marked, non_empty

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

T = TypeVar("T")


@contextlib.asynccontextmanager
async def async_client(sync: DynamoDBClient) -> AsyncIterator[Any]:
    """An aiobotocore DynamoDB client on the sync client's endpoint, region and keys."""
    frozen = sync._get_credentials().get_frozen_credentials()  # type: ignore[attr-defined]
    async with get_session().create_client(
        "dynamodb",
        endpoint_url=sync.meta.endpoint_url,
        region_name=sync.meta.region_name,
        aws_access_key_id=frozen.access_key,
        aws_secret_access_key=frozen.secret_key,
    ) as client:
        yield client


def run(sync: DynamoDBClient, body: Callable[[Any], Coroutine[Any, Any, T]]) -> T:
    async def main() -> T:
        async with async_client(sync) as client:
            return await body(client)

    return asyncio.run(main())


@pytest.fixture
def store(ddb_client: DynamoDBClient) -> Iterator[str]:
    name = "ddbkeys-state-aio"
    yield name
    with contextlib.suppress(ddb_client.exceptions.ResourceNotFoundException):
        ddb_client.delete_table(TableName=name)


def test_create_backfill_verify_give_the_exact_key_set(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, store: str
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = sorted(f"k{n:03}" for n in range(60))
    for n, key in enumerate(expected):
        for sk in range(1 + n % 4):  # collections of 1 to 4 items
            ddb_client.put_item(TableName=table, Item=item(key, sk))

    async def body(client: Any) -> None:
        index = MarkerIndex(client, table)
        assert index.info is None  # nothing sent yet
        await index.create()
        assert await index.status() == "ACTIVE"
        report = await index.backfill(state_table=store)
        assert (report.written, report.present, report.clashes) == (60, 0, [])
        again = await index.backfill(state_table=store)
        assert (again.written, again.present) == (0, 60)
        verified = await index.verify()
        assert verified.healthy and (verified.collections, verified.markers) == (60, 60)
        saved = await StateStore(client, store).load(table, index.name)
        assert saved is not None and saved.backfill is not None and saved.backfill.finished
        # No follower: nothing proves the index. Asked for, it is an error saying why; read as
        # it is with trust_index; auto lists with the skip scan, and says why.
        with pytest.raises(IndexUnprovenError, match="cannot be proven complete now"):
            await distinct_partition_keys(client, table, "index", state_table=store)
        sent = describes(client)
        listing = await distinct_partition_keys(
            client, table, "index", state_table=store, trust_index=True
        )
        assert sorted([str(k) async for k in listing]) == expected
        assert sent == [table]  # one DescribeTable for the listing, the index's check included
        assert listing.method_name == "index" and listing.index_trusted is False
        auto = await distinct_partition_keys(client, table, state_table=store, segments=4)
        assert sorted([str(k) async for k in auto]) == expected
        assert auto.method_name == "skip-pages" and "cannot be proven" in auto.method_reason
        # A second object given the description reads none itself.
        known = MarkerIndex(client, table, info=index.info)
        assert await known.status() == "ACTIVE"
        assert known.usage.requests == 0
        assert await known.unmark("k000") is True
        assert (await known.verify()).missing == [{"S": "k000"}]
        assert (await known.repair()).fixed_missing == [{"S": "k000"}]

    run(ddb_client, body)
    assert marked(ddb_client, table) == expected == non_empty(ddb_client, table)


def test_mark_from_32_tasks_writes_each_marker_once(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    keys = [f"c{n:02}" for n in range(16)]
    for key in keys:
        ddb_client.put_item(TableName=table, Item=item(key, 1))

    async def body(client: Any) -> list[bool]:
        index = MarkerIndex(client, table)
        await index.create()
        fresh = MarkerIndex(client, table)  # its first calls race for one description
        return await asyncio.gather(*(fresh.mark(key) for key in keys + keys))

    results = run(ddb_client, body)
    assert len(results) == 32 and results.count(True) == 16
    # Each key's two tasks: one wrote, the other found the marker.
    assert all(results[n] != results[n + 16] for n in range(16))
    assert marked(ddb_client, table) == keys


def test_the_async_follower_keeps_the_markers_and_stops(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, store: str
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))

    async def body(client: Any) -> None:
        index = MarkerIndex(client, table)
        await index.create()
        arn, changed = await enable_stream(client, table)
        assert changed and arn
        follower = StreamFollower(index, state_table=store, poll=0.05)
        stop = asyncio.Event()
        task = asyncio.create_task(follower.run(stop))
        while (await StateStore(client, store).load(table, index.name)) is None:
            await asyncio.sleep(0.05)
        for key in ("a", "b", "c"):
            await client.put_item(TableName=table, Item=item(key, 1))
        await client.delete_item(TableName=table, Key=item("b", 1))
        for _ in range(600):
            # (the markers can be right before the delete's record is read: b's marker is
            # never written, its collection being empty when its put is handled)
            if marked(ddb_client, table) == ["a", "c"] and follower.report.records >= 4:
                break
            await asyncio.sleep(0.05)
        stop.set()
        report = await asyncio.wait_for(task, timeout=5)
        assert report.records >= 4 and report.marked >= 2
        assert marked(ddb_client, table) == ["a", "c"] == non_empty(ddb_client, table)
        assert await reconcile(index, {"S": "a"}) is Outcome.UNCHANGED

    run(ddb_client, body)


def test_nothing_is_sent_before_the_first_call(ddb_client: DynamoDBClient) -> None:
    async def body(client: Any) -> None:
        index = MarkerIndex(client, "no-such-table")  # no request: no error yet
        with pytest.raises(DdbKeysError, match="no-such-table"):
            await index.mark("a")

    run(ddb_client, body)
