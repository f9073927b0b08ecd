"""``ddbkeys.aio`` takes an aiobotocore client that serializes like a resource's (aioboto3's
``resource.meta.client``, ``table.meta.client``), as the sync API takes boto3's: it failed
with "Invalid attribute value type". aioboto3 itself pins another aiobotocore than the one
installed here, so the client is made as aioboto3 makes it: boto3's own DynamoDB
transformation handlers registered on an aiobotocore client's events."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from boto3.dynamodb.transform import TransformationInjector, copy_dynamodb_params

from ddbkeys import aio
from tests.integration.test_listing_async import aio_client

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


def as_resource_client(client: Any) -> Any:
    """``client`` with the handlers a DynamoDB resource puts on its client (boto3's
    DynamoDBHighLevelResource): plain Python values in, plain values out."""
    injector = TransformationInjector()
    events = client.meta.events
    events.register("provide-client-params.dynamodb", copy_dynamodb_params)
    events.register("before-parameter-build.dynamodb", injector.inject_condition_expressions)
    events.register("before-parameter-build.dynamodb", injector.inject_attribute_value_input)
    events.register("after-call.dynamodb", injector.inject_attribute_value_output)
    return client


def test_an_aioboto3_style_resource_client_is_taken(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for n in range(5):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"c{n}"}, "sk": {"N": "1"}})

    async def body() -> tuple[list[int], list[Any], int]:
        async with aio_client(ddb_endpoint_url) as raw:
            client = as_resource_client(raw)
            plain = await client.get_item(TableName=table, Key={"pk": "c0", "sk": 1})
            assert plain["Item"] == {"pk": "c0", "sk": 1}  # (it is a resource's client)
            counter = aio.AtomicCounter(client, table, counter_key={"pk": "ctr", "sk": 0})
            ids = [await counter.next() for _ in range(3)]
            keys = [key async for key in aio.distinct_partition_keys(client, table, "skip")]
            gapless = aio.GaplessSequence(
                client, table, counter_key={"pk": "gapless", "sk": 0}, id_attribute="sk"
            )
            put = await gapless.put({"pk": "numbered", "note": "x"})
            return ids, keys, put

    ids, keys, put = asyncio.run(body())
    assert ids == [1, 2, 3]
    assert sorted(keys) == ["c0", "c1", "c2", "c3", "c4"]  # ("ctr" holds ddbkeys' own counter)
    assert put == 1
    item = ddb_client.get_item(TableName=table, Key={"pk": {"S": "numbered"}, "sk": {"N": "1"}})
    assert item["Item"]["note"] == {"S": "x"}
