"""The follower's DynamoDB Streams client signs with the credentials of the index's client as
they are now, not as they were when it was made: temporary credentials (an assumed role,
ECS/EC2/Lambda roles, SSO) are refreshed for both clients. Played with refreshable credentials
whose session token the test rotates, against DynamoDB Local (which accepts any token); the
token of every request is read from its headers, in both drivers."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import botocore.session
import pytest
from botocore.credentials import RefreshableCredentials

from ddbkeys.aio.index import _streams_client_for
from ddbkeys.partition_keys import MarkerIndex
from ddbkeys.partition_keys.follow import StreamFollower, enable_stream, streams_client_for

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing.tables import TableFactory

pytestmark = pytest.mark.integration


class Tokens:
    """Temporary credentials: the keys of the test client, a token the test rotates. Each
    answer expires within botocore's mandatory refresh window, so every signature asks again
    and sees the token of the moment."""

    def __init__(self, sync: DynamoDBClient) -> None:
        keys = sync._get_credentials().get_frozen_credentials()  # type: ignore[attr-defined]
        self.access_key, self.secret_key = keys.access_key, keys.secret_key
        self.generation = 1

    def metadata(self) -> dict[str, str]:
        expiry = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=5)
        return {
            "access_key": self.access_key,
            "secret_key": self.secret_key,
            "token": f"token-{self.generation}",
            "expiry_time": expiry.isoformat(),
        }

    async def ametadata(self) -> dict[str, str]:
        return self.metadata()


def record_tokens(client: Any, seen: list[str]) -> None:
    """Append the session token of every request ``client`` sends to ``seen``."""

    def hook(request: Any, **_: Any) -> None:
        seen.append(request.headers["X-Amz-Security-Token"].decode())

    client.meta.events.register("before-send", hook)


@pytest.fixture
def rotating(ddb_client: DynamoDBClient) -> Iterator[tuple[Tokens, Any]]:
    tokens = Tokens(ddb_client)
    session = botocore.session.get_session()
    session._credentials = RefreshableCredentials.create_from_metadata(  # type: ignore[attr-defined]
        tokens.metadata(), tokens.metadata, "test-rotating"
    )
    client = boto3.session.Session(botocore_session=session).client(
        "dynamodb", endpoint_url=ddb_client.meta.endpoint_url, region_name="us-east-1"
    )
    yield tokens, client
    client.close()


def test_sync_streams_client_signs_with_the_refreshed_token(
    rotating: tuple[Tokens, Any],
) -> None:
    tokens, client = rotating
    streams = streams_client_for(client)
    assert streams._get_credentials() is client._get_credentials()
    seen: list[str] = []
    record_tokens(streams, seen)
    streams.list_streams()
    tokens.generation = 2
    streams.list_streams()
    assert seen == ["token-1", "token-2"]
    meta = streams.meta  # the endpoint and region derivation is unchanged
    assert (meta.endpoint_url, meta.region_name) == (client.meta.endpoint_url, "us-east-1")


def test_sync_follower_reads_the_stream_with_the_refreshed_token(
    rotating: tuple[Tokens, Any], ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    tokens, client = rotating
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    MarkerIndex(ddb_client, table).create()
    enable_stream(ddb_client, table)
    store = f"ddbkeys-state-{table[-12:]}"
    try:
        follower = StreamFollower(MarkerIndex(client, table), state_table=store)
        seen: list[str] = []
        record_tokens(follower.streams, seen)
        follower.run(until_caught_up=True)
        tokens.generation = 2
        start = len(seen)
        follower.run(until_caught_up=True)
        assert start > 0 and set(seen[:start]) == {"token-1"}
        assert len(seen) > start and set(seen[start:]) == {"token-2"}
    finally:
        with contextlib.suppress(ddb_client.exceptions.ResourceNotFoundException):
            ddb_client.delete_table(TableName=store)


def test_aio_streams_client_signs_with_the_refreshed_token(ddb_client: DynamoDBClient) -> None:
    from aiobotocore.credentials import AioRefreshableCredentials  # noqa: PLC0415
    from aiobotocore.session import get_session  # noqa: PLC0415

    tokens = Tokens(ddb_client)

    async def main() -> list[str]:
        session: Any = get_session()
        session._credentials = AioRefreshableCredentials.create_from_metadata(
            tokens.metadata(), tokens.ametadata, "test-rotating"
        )
        endpoint = ddb_client.meta.endpoint_url
        async with (
            session.create_client(
                "dynamodb", endpoint_url=endpoint, region_name="us-east-1"
            ) as client,
            await _streams_client_for(client) as streams,
        ):
            own = client._get_credentials()
            assert streams._get_credentials() is own
            seen: list[str] = []
            record_tokens(streams, seen)
            await streams.list_streams()
            tokens.generation = 2
            await streams.list_streams()
            assert (streams.meta.endpoint_url, streams.meta.region_name) == (
                endpoint,
                "us-east-1",
            )
            return seen

    assert asyncio.run(main()) == ["token-1", "token-2"]
