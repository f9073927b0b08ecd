"""ddbkeys.aio.CollectionSequence and the asyncio audits against DynamoDB Local: many tasks of
one event loop share commits per collection, and every number is given once, without gaps."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._capacity import Usage
from ddbkeys._errors import ConfigurationError, KeySchemaError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytest.importorskip("aiobotocore", reason="the asyncio API needs aiobotocore")

from ddbkeys.aio._audit import audit_attribute, audit_collection
from ddbkeys.aio._collection import CollectionSequence

TASKS = 32
PUTS_PER_TASK = 4
COLLECTIONS = ("projectA", "projectB")


@asynccontextmanager
async def async_client(sync_client: DynamoDBClient) -> AsyncIterator[Any]:
    """An aiobotocore client for the same endpoint, region and credentials as ``sync_client``."""
    from aiobotocore.config import AioConfig  # noqa: PLC0415 - the optional extra
    from aiobotocore.session import get_session  # noqa: PLC0415

    signer: Any = getattr(sync_client, "_request_signer", None)
    credentials = signer._credentials.get_frozen_credentials() if signer else None
    async with get_session().create_client(
        "dynamodb",
        endpoint_url=sync_client.meta.endpoint_url,
        region_name=sync_client.meta.region_name,
        aws_access_key_id=credentials.access_key if credentials else None,
        aws_secret_access_key=credentials.secret_key if credentials else None,
        aws_session_token=credentials.token if credentials else None,
        config=AioConfig(
            retries={"mode": "standard", "total_max_attempts": 1}, max_pool_connections=64
        ),
    ) as client:
        yield client


def stored(client: DynamoDBClient, table: str, collection: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    request: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": collection}},
        "ConsistentRead": True,
    }
    while True:
        page = client.query(**request)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return items
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


@pytest.mark.parametrize("never_reuse", [False, True], ids=["plain", "never_reuse"])
def test_tasks_of_one_loop_get_exact_numbers_per_collection(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, never_reuse: bool
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    usage = Usage()

    async def main() -> dict[tuple[str, int, int], int]:
        async with async_client(ddb_client) as client:
            sequence = CollectionSequence(client, table, never_reuse=never_reuse, usage=usage)

            async def writer(task: int) -> list[tuple[tuple[str, int, int], int]]:
                collection = COLLECTIONS[task % 2]
                got = []
                for n in range(PUTS_PER_TASK):
                    number = await sequence.put(collection, {"task": task, "n": n})
                    got.append(((collection, task, n), number))
                return got

            results = await asyncio.gather(*(writer(t) for t in range(TASKS)))
            reports = [await audit_collection(client, table, c) for c in COLLECTIONS]
            total = TASKS // 2 * PUTS_PER_TASK
            assert [await sequence.current(c) for c in COLLECTIONS] == [total, total]
            assert all(r.ok and r.count == total for r in reports), reports
            return {key: number for got in results for key, number in got}

    numbers = asyncio.run(main())
    per_collection = TASKS // 2 * PUTS_PER_TASK
    for collection in COLLECTIONS:
        given = sorted(n for (c, _, _), n in numbers.items() if c == collection)
        assert given == list(range(1, per_collection + 1))
        items = [i for i in stored(ddb_client, table, collection) if i["sk"] != {"N": "0"}]
        # One item per put, each holding the number it was given.
        assert len(items) == per_collection
        held = {
            (collection, int(i["task"]["N"]), int(i["n"]["N"])): int(i["sk"]["N"]) for i in items
        }
        assert held == {k: v for k, v in numbers.items() if k[0] == collection}
    # The tasks of one collection shared commits: far fewer requests than puts.
    assert usage.snapshot()["requests"] < TASKS * PUTS_PER_TASK / 2


def test_the_async_form_has_the_sync_forms_methods(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": {"S": "PROFILE"}})

    async def main() -> None:
        async with async_client(ddb_client) as client:
            sequence = CollectionSequence(client, table, width=3, prefix="I#", group_commit=False)
            assert await sequence.current("p") == 0
            await sequence.check("p", {"title": "x"})
            with pytest.raises(ConfigurationError, match="must not hold 'sk'"):
                await sequence.check("p", {"sk": "x"})
            assert [await sequence.put("p", {"t": i}) for i in range(3)] == [1, 2, 3]
            assert await sequence.current("p") == 3
            pk, sk = await sequence.keys()
            assert (pk.name, sk.name, sk.type) == ("pk", "sk", "S")
            assert await sequence.sort_key_value(7) == {"S": "I#007"}
            assert sequence.number_of({"S": "I#042"}) == 42
            report = await audit_collection(client, table, "p", width=3, prefix="I#")
            assert (report.count, report.ok, report.not_numbers) == (3, True, 1)
            scanned = await audit_attribute(client, table, "t", start=0)
            assert (scanned.count, scanned.gaps) == (3, [])
            no_sort = ddb_table_factory(("pk", "S"))
            with pytest.raises(KeySchemaError, match=r"needs a number \(N\) or string \(S\)"):
                await CollectionSequence(client, no_sort).put("p")
            with pytest.raises(ConfigurationError, match="aiobotocore DynamoDB client") as sync:
                await audit_collection(ddb_client, table, "p")
            # (helper-88: it said "not DynamoDB", botocore's name of the client's class)
            assert "not a boto3 client for 'dynamodb' (a boto3 client is for" in str(sync.value)

    asyncio.run(main())
