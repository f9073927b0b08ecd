"""The Streams client ddbkeys opens (a follower's, a listing's replay) signs as the DynamoDB
client does, proven with public botocore only, in both drivers:

- a client ddbkeys made: the Streams client comes from its very session, so temporary
  credentials (an assumed role, ECS/EC2/Lambda roles, SSO) are refreshed for both: played with
  refreshable credentials whose session token the test rotates, read from each request's
  headers, against DynamoDB Local (which accepts any token);
- ``boto3.client()``: from boto3's default session, the same way;
- any other client: on an endpoint other than AWS's, its access key (read from a URL it
  presigns) with a stand-in secret; on AWS, a one-line refusal that says to pass ``streams=``,
  raised before any request."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import botocore.session
import pytest
from botocore.credentials import CredentialProvider, CredentialResolver, RefreshableCredentials

from ddbkeys import make_client
from ddbkeys._errors import ConfigurationError
from ddbkeys.aio._index import _streams_client_for
from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys
from ddbkeys.partition_keys._index.stream_setup import enable_stream
from ddbkeys.partition_keys._streams.follower import StreamFollower
from ddbkeys.partition_keys._streams.streams import PRESIGN, signed_as, streams_client_for

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


class Tokens:
    """Temporary credentials with a token the test rotates. Each answer expires within
    botocore's mandatory refresh window, so every signature asks again and sees the token of
    the moment."""

    def __init__(self) -> None:
        self.generation = 1

    def metadata(self) -> dict[str, str]:
        expiry = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=5)
        return {
            "access_key": "AKIDROTATING",
            "secret_key": "secret",
            "token": f"token-{self.generation}",
            "expiry_time": expiry.isoformat(),
        }


class Rotating(CredentialProvider):
    """A credential provider handing out the test's refreshable credentials."""

    METHOD = CANONICAL_NAME = "test-rotating"

    def __init__(self, tokens: Tokens) -> None:
        super().__init__()
        self.credentials = RefreshableCredentials.create_from_metadata(
            tokens.metadata(), tokens.metadata, self.METHOD
        )

    def load(self) -> Any:
        return self.credentials


def rotating_session(tokens: Tokens) -> boto3.Session:
    session = botocore.session.get_session()
    session.register_component("credential_provider", CredentialResolver([Rotating(tokens)]))
    return boto3.Session(botocore_session=session, region_name="us-east-1")


def record_tokens(client: Any, seen: list[str]) -> None:
    """Append the session token of every request ``client`` (one the test made) sends."""

    def hook(request: Any, **_: Any) -> None:
        seen.append(request.headers["X-Amz-Security-Token"].decode())

    client.meta.events.register("before-send", hook)


def rotates(streams: Any, tokens: Tokens) -> list[str]:
    seen: list[str] = []
    record_tokens(streams, seen)
    streams.list_streams()
    tokens.generation = 2
    streams.list_streams()
    return seen


def access_key(streams: Any) -> str | None:
    """The access key a Streams client signs with."""
    signed = signed_as(streams.generate_presigned_url("list_streams", Params={}))
    return signed and signed[0]


@pytest.fixture
def tokens() -> Tokens:
    return Tokens()


@pytest.fixture
def made(tokens: Tokens, ddb_client: DynamoDBClient) -> Iterator[Any]:
    """A client ddbkeys made from a session with the rotating credentials."""
    client = make_client(ddb_client.meta.endpoint_url, session=rotating_session(tokens))
    yield client
    client.close()


def test_a_client_ddbkeys_made_shares_its_session_and_refreshed_token(
    made: Any, tokens: Tokens
) -> None:
    streams = streams_client_for(made)
    assert rotates(streams, tokens) == ["token-1", "token-2"]
    meta = streams.meta  # the endpoint and region derivation is unchanged
    assert (meta.endpoint_url, meta.region_name) == (made.meta.endpoint_url, "us-east-1")


def test_a_boto3_default_client_shares_the_default_session(
    tokens: Tokens, ddb_client: DynamoDBClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", rotating_session(tokens))
    client = boto3.client("dynamodb", endpoint_url=ddb_client.meta.endpoint_url)
    assert rotates(streams_client_for(client), tokens) == ["token-1", "token-2"]


def test_another_client_off_aws_signs_with_its_access_key(ddb_client: DynamoDBClient) -> None:
    client = boto3.client(
        "dynamodb",
        endpoint_url=ddb_client.meta.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="AKIDOTHER",
        aws_secret_access_key="not-copied",
    )
    streams = streams_client_for(client)
    assert access_key(streams) == "AKIDOTHER"
    streams.list_streams()  # DynamoDB Local checks no signature


def test_another_client_on_aws_is_refused_before_any_request(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    client = boto3.client(
        "dynamodb", region_name="eu-west-1", aws_access_key_id="AKIDAWS", aws_secret_access_key="x"
    )
    with pytest.raises(ConfigurationError) as caught:
        streams_client_for(client, "orders")
    message = str(caught.value)
    assert "\n" not in message and "orders" in message and "streams=" in message
    assert "AKIDAWS" in message


def test_a_listing_and_a_follower_take_the_streams_client_given(
    made: Any, tokens: Tokens, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """``streams=``: what a caller whose client signs otherwise passes; every stream read of
    the replay and the follower goes through it."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    MarkerIndex(ddb_client, table).create()
    enable_stream(ddb_client, table)
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"N": "1"}})
    store = f"ddbkeys-state-{table[-12:]}"
    given = streams_client_for(made)
    seen: list[str] = []
    record_tokens(given, seen)
    try:
        follower = StreamFollower(MarkerIndex(made, table), state_table=store, streams=given)
        follower.run(until_caught_up=True)
        MarkerIndex(made, table).backfill(state_table=store, replay_margin=0)
        read = len(seen)
        assert read > 0
        ddb_client.put_item(TableName=table, Item={"pk": {"S": "b"}, "sk": {"N": "1"}})
        listing = distinct_partition_keys(
            made, table, "index", state_table=store, replay_margin=0, streams=given
        )
        assert sorted(listing) == ["a", "b"]
        assert len(seen) > read  # the replay read the stream with it
    finally:
        with contextlib.suppress(ddb_client.exceptions.ResourceNotFoundException):
            ddb_client.delete_table(TableName=store)


def test_sync_follower_reads_the_stream_with_the_refreshed_token(
    made: Any, tokens: Tokens, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    MarkerIndex(ddb_client, table).create()
    enable_stream(ddb_client, table)
    store = f"ddbkeys-state-{table[-12:]}"
    try:
        follower = StreamFollower(MarkerIndex(made, table), state_table=store)
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


def test_aio_streams_clients_sign_as_the_client(ddb_client: DynamoDBClient) -> None:
    from aiobotocore.session import get_session  # noqa: PLC0415

    from ddbkeys.aio import make_client as aio_make_client  # noqa: PLC0415

    endpoint = ddb_client.meta.endpoint_url

    async def key_of(client: Any) -> str | None:
        streams = client.meta.service_model.service_name == "dynamodbstreams"
        asked = ("list_streams", {}) if streams else PRESIGN
        url = await client.generate_presigned_url(asked[0], Params=asked[1])
        signed = signed_as(url)
        return signed and signed[0]

    async def main() -> None:
        async with aio_make_client(endpoint) as ours, await _streams_client_for(ours) as streams:
            assert await key_of(streams) == await key_of(ours)
            await streams.list_streams()
        other = get_session().create_client(
            "dynamodb",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="AKIDAIO",
            aws_secret_access_key="not-copied",
        )
        async with other as theirs, await _streams_client_for(theirs) as streams:
            assert await key_of(streams) == "AKIDAIO"
            await streams.list_streams()
        on_aws = get_session().create_client(
            "dynamodb", region_name="eu-west-1", aws_access_key_id="K", aws_secret_access_key="x"
        )
        async with on_aws as theirs:
            with pytest.raises(ConfigurationError, match="streams="):
                await _streams_client_for(theirs, "orders")

    asyncio.run(main())
