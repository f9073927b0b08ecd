"""The DynamoDB Streams client a :class:`~ddbkeys.partition_keys.follow.StreamFollower` opens
when it is given none: one like the index's DynamoDB client (its endpoint unless the service's
own, its region and config), signing with the very credentials object that client signs with.

Sharing the object, not a frozen copy of its keys, is what a botocore session does for all the
clients it creates: temporary credentials (an assumed role, ECS/EC2/Lambda roles, SSO) are
refreshed by that object before they expire, for both clients. A copy would keep the first
token, and a follower running longer than it lasts would fail. The object is handed to a new
session as its credential provider (botocore's ``credential_provider`` component), so the new
client takes it exactly as it would take the session's own credentials.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import boto3
import botocore.session
from botocore.credentials import CredentialProvider, CredentialResolver

from ddbkeys.core.steps import Flow, Request, describe_stream

#: The domains of AWS's own endpoints.
AWS_DOMAINS = (".amazonaws.com", ".amazonaws.com.cn", ".api.aws", ".amazonwebservices.com.cn")

__all__ = [
    "SharedCredentials",
    "client_credentials",
    "stream_shards",
    "streams_client_for",
    "streams_settings",
]


class SharedCredentials(CredentialProvider):
    """A credential provider handing out one credentials object (refreshable or not)."""

    METHOD = "ddbkeys-shared"
    CANONICAL_NAME = "custom-ddbkeys-shared"

    def __init__(self, credentials: Any) -> None:
        super().__init__()
        self.credentials = credentials

    def load(self) -> Any:
        return self.credentials


def streams_settings(client: Any) -> dict[str, Any]:
    """``create_client`` arguments for a Streams client like ``client``: its region and config,
    and its endpoint unless it is the service's own (DynamoDB Local serves both APIs on one
    port; on AWS the Streams endpoint is another one)."""
    meta = client.meta
    endpoint = str(meta.endpoint_url)
    # Any endpoint of AWS (a region's, FIPS, dual-stack, China, a VPC endpoint): the Streams
    # endpoint is another one, which botocore finds from the region and the config. Any other
    # (DynamoDB Local, a proxy in front of it) serves both APIs on one port.
    host = urlsplit(endpoint).hostname or ""
    own = host.endswith(AWS_DOMAINS)
    settings: dict[str, Any] = {"region_name": meta.region_name, "config": meta.config}
    if not own:
        settings["endpoint_url"] = endpoint
    return settings


def client_credentials(client: Any) -> Any:
    """The credentials object ``client`` signs with (None when it signs with none, or when
    botocore no longer offers it: the new client then finds credentials as any client does).
    An aiobotocore client answers with an awaitable."""
    get = getattr(client, "_get_credentials", None)
    return get() if callable(get) else None


def streams_client_for(client: Any) -> Any:
    """A DynamoDB Streams client on the same endpoint, region and credentials as ``client``:
    the same credentials object, so temporary credentials are refreshed for both."""
    session = botocore.session.get_session()
    credentials = client_credentials(client)
    if credentials is not None:
        resolver = CredentialResolver([SharedCredentials(credentials)])
        session.register_component("credential_provider", resolver)
    streams = boto3.session.Session(botocore_session=session)
    return streams.client("dynamodbstreams", **streams_settings(client))


def stream_shards(ask: Callable[[Request], Flow[Any]], arn: str) -> Flow[list[dict[str, Any]]]:
    """Every shard of the stream ``arn`` (DescribeStream, page by page), each request sent
    by ``ask``."""
    shards: list[dict[str, Any]] = []
    start: str | None = None
    while True:
        request: dict[str, Any] = {"StreamArn": arn}
        if start:
            request["ExclusiveStartShardId"] = start
        page = yield from ask(describe_stream(request))
        description = page["StreamDescription"]
        shards.extend(description.get("Shards", []))
        start = description.get("LastEvaluatedShardId")
        if not start:
            return shards
