"""ddbkeys.aio's gapless sequence against a real DynamoDB: many tasks of one event loop, the
exact set of ids, one item per id, and the calls' history (start, end, id: increasing and gapless
across tasks); and no request from a property, in either API."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from botocore.config import Config

from ddbkeys._connect import LOCAL_ACCESS_KEY, is_loopback
from ddbkeys._errors import ConfigurationError
from ddbkeys.aio._gapless import GaplessSequence as AsyncGaplessSequence
from ddbkeys.ids import GaplessSequence, ItemExistsError, audit_attribute, audit_ids
from ddbkeys.testing import Fault, FaultProxy, Faults, History, HistoryReport
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

TASKS = 64
PER_TASK = 8
WRITES = frozenset({"GetItem", "TransactWriteItems"})


def async_client(endpoint_url: str, ddb_client: DynamoDBClient) -> Any:
    """An aiobotocore DynamoDB client on ``endpoint_url`` (to be entered with ``async with``),
    with the test client's region, and DynamoDB Local's dummy keys on a loopback endpoint;
    retries are left to ddbkeys, as make_client() leaves them."""
    aiobotocore = pytest.importorskip("aiobotocore.session")
    keys = LOCAL_ACCESS_KEY if is_loopback(endpoint_url) else None
    return aiobotocore.get_session().create_client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name=ddb_client.meta.region_name,
        aws_access_key_id=keys,
        aws_secret_access_key=keys,
        config=Config(
            retries={"mode": "standard", "total_max_attempts": 1},
            connect_timeout=5,
            read_timeout=5,
        ),
    )


def tags_in(client: DynamoDBClient, table: str) -> Counter[str]:
    """How many items carry each tag (every written item has a unique tag)."""
    seen: Counter[str] = Counter()
    kwargs: dict[str, Any] = {"TableName": table, "ProjectionExpression": "tag"}
    while True:
        page = client.scan(**kwargs)
        seen.update(str(item["tag"]["S"]) for item in page["Items"] if "tag" in item)
        if "LastEvaluatedKey" not in page:
            return seen
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


async def puts_from_tasks(endpoint_url: str, ddb_client: DynamoDBClient, table: str) -> Any:
    """TASKS tasks of one event loop, each putting PER_TASK items with one sequence object: the
    ids, the sequence, its current value and the calls' history."""
    async with async_client(endpoint_url, ddb_client) as client:
        sequence = AsyncGaplessSequence(client, table, "users")

        history = History()

        async def writer(task: int) -> list[int]:
            mine: list[int] = []
            for n in range(PER_TASK):
                with history.recording() as got:
                    got.append(await sequence.put({"pk": f"user#{task}-{n}", "tag": f"{task}-{n}"}))
                mine += got
            return mine

        per_task = await asyncio.gather(*(writer(t) for t in range(TASKS)))
        ids = [i for ids in per_task for i in ids]
        return ids, sequence, await sequence.current(), history


def check(ddb_client: DynamoDBClient, table: str, ids: list[int], n: int) -> None:
    report = audit_ids(ids)
    assert report.duplicates == {}, f"ids given out twice: {report.duplicates}"
    assert sorted(ids) == list(range(1, n + 1)), f"not gapless: {report.gaps}"
    stored = audit_attribute(ddb_client, table, "id")
    assert (stored.ok, stored.count, stored.last) == (True, n, n)
    tags = tags_in(ddb_client, table)
    assert len(tags) == n and set(tags.values()) == {1}, "an item was written twice"


def test_64_tasks_of_one_event_loop(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    histories: Callable[..., HistoryReport],
) -> None:
    table = ddb_table_factory()
    ids, sequence, current, history = asyncio.run(
        puts_from_tasks(ddb_endpoint_url, ddb_client, table)
    )
    n = TASKS * PER_TASK
    check(ddb_client, table, ids, n)
    assert histories("GaplessSequence", history.operations).operations == n
    assert current == n
    # The tasks shared commits: far fewer transactions than ids.
    assert sequence.usage.requests < n / 4, sequence.usage


def test_64_tasks_through_lost_answers_and_throttling(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    histories: Callable[..., HistoryReport],
) -> None:
    table = ddb_table_factory()
    fault_proxy.set_faults(
        Faults(
            lose_response=0.05,
            throttle=0.05,
            seed=20261122,
            script=[Fault.LOSE_RESPONSE, Fault.THROTTLE, Fault.LOSE_RESPONSE],
            script_operations=WRITES,
        )
    )
    ids, _, _, history = asyncio.run(puts_from_tasks(fault_proxy.endpoint_url, ddb_client, table))
    assert fault_proxy.counts["lose_response"] > 0 and fault_proxy.counts["throttle"] > 0
    check(ddb_client, table, ids, TASKS * PER_TASK)
    assert histories("GaplessSequence", history.operations).operations == TASKS * PER_TASK


def test_the_async_api(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()

    async def main() -> None:
        async with async_client(ddb_endpoint_url, ddb_client) as client:
            users = AsyncGaplessSequence(client, table, "users", group_commit=False)
            with pytest.raises(ConfigurationError, match=r"use \(await counter_item\(\)\)\.key"):
                users.counter_key  # noqa: B018  (a property sends no request)
            assert users.usage.requests == 0
            assert await users.current() == 0
            assert users.counter_key == {"pk": {"S": "users"}}
            assert await users.put({"pk": "a"}) == 1
            assert await users.put_many([{"pk": "b"}, {"pk": "c"}]) == [2, 3]
            with pytest.raises(ItemExistsError, match=r"\{'pk': 'b'\} already exists"):
                await users.put_many([{"pk": "d"}, {"pk": "b"}])
            with pytest.raises(ItemExistsError, match=r"\{'pk': 'a'\} already exists"):
                await users.put({"pk": "a"})
            assert await users.current() == 3
            counter = await users.counter_item()
            assert (counter.table, counter.attribute) == (table, "last_id")

    asyncio.run(main())
    assert "Item" not in ddb_client.get_item(TableName=table, Key={"pk": {"S": "d"}})
    # The sync sequence goes on from where the async one left off.
    sync = GaplessSequence(ddb_client, table, "users")
    with pytest.raises(ConfigurationError, match=r"use counter_item\(\)\.key"):
        sync.counter_key  # noqa: B018  (a property sends no request)
    assert sync.usage.requests == 0
    assert sync.counter_item().key == {"pk": {"S": "users"}}
    assert sync.counter_key == {"pk": {"S": "users"}}  # known now
    assert sync.put({"pk": "e"}) == 4
