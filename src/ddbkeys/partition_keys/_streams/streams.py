"""The DynamoDB Streams client a :class:`ddbkeys.partition_keys.StreamFollower` (or a listing
replaying the stream) opens when it is given none: one like the DynamoDB client (its endpoint unless
the service's own, its region and config) that signs as that client does.
Signing alike is proven, not assumed, with public botocore only:

- a client ddbkeys made (``make_client``, the CLI) is remembered with its session
  (:mod:`ddbkeys._origins`): the Streams client comes from that session, and so shares its very
  credentials object, which refreshes temporary credentials (an assumed role, ECS/EC2/Lambda
  roles, SSO) for both;
- any other client: the Streams client comes from boto3's default session (the one
  ``boto3.client()`` uses) when the client signs with that session's access key, read from a
  URL the client presigns (no request is sent);
- otherwise, on an endpoint that is not AWS's (DynamoDB Local, which checks no signature and
  keeps tables per access key unless ``-sharedDb``), it signs with the client's access key and
  a stand-in secret; on AWS, ddbkeys cannot copy a client's credentials, and says to pass a
  Streams client (``streams=``) made from the DynamoDB client's session.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
from botocore.exceptions import BotoCoreError

from ddbkeys._core.steps import Flow, Pause, Request, describe_stream
from ddbkeys._core.stopping import StopFlag
from ddbkeys._errors import ConfigurationError
from ddbkeys._origins import Origin, origin_of

#: The domains of AWS's own endpoints.
AWS_DOMAINS = (".amazonaws.com", ".amazonaws.com.cn", ".api.aws", ".amazonwebservices.com.cn")
#: The secret a Streams client on an endpoint other than AWS's signs with (never checked there).
STAND_IN_SECRET = "ddbkeys-stand-in"
#: How often a reader of the whole stream describes it again (a second apart) while it lists
#: a closed shard and none after it (:func:`settled_shards`).
DESCRIBE_AGAIN = 3

#: What a client is asked to presign to learn the access key it signs with.
PRESIGN = ("describe_table", {"TableName": "ddbkeys"})

__all__ = [
    "DESCRIBE_AGAIN",
    "STAND_IN_SECRET",
    "STREAM_OPERATIONS",
    "ClientOnFirstUse",
    "SplitClient",
    "closed_leaves",
    "own_endpoint",
    "settled_shards",
    "shard_born",
    "signed_as",
    "stream_shards",
    "streams_client_for",
    "streams_keys",
    "streams_settings",
]


def own_endpoint(client: Any) -> bool:
    """Whether ``client`` talks to one of AWS's own endpoints (a region's, FIPS, dual-stack,
    China, a VPC endpoint)."""
    host = urlsplit(str(client.meta.endpoint_url)).hostname or ""
    return host.endswith(AWS_DOMAINS)


def signed_as(url: str) -> tuple[str, str | None] | None:
    """The access key (and session token) a presigned ``url`` was signed with."""
    query = parse_qs(urlsplit(url).query)
    key = query.get("X-Amz-Credential", [""])[0].split("/")[0]
    return (key, query.get("X-Amz-Security-Token", [None])[0]) if key else None


def streams_keys(
    theirs: tuple[str, str | None] | None, ours: str | None, own: bool, table: str | None = None
) -> dict[str, Any]:
    """The keys a Streams client made from a session (which signs as ``ours``) is given, to
    sign as a DynamoDB client that signs as ``theirs`` (None: with no credentials) does.
    ``own``: the endpoint is AWS's."""
    if theirs is None or theirs[0] == ours:
        return {}
    if not own:
        token = {"aws_session_token": theirs[1]} if theirs[1] else {}
        return {"aws_access_key_id": theirs[0], "aws_secret_access_key": STAND_IN_SECRET, **token}
    whose = f"Table {table!r}'s stream" if table else "The table's stream"
    raise ConfigurationError(
        f"{whose} must be read with the credentials its DynamoDB client signs with (access key "
        f"{theirs[0]}), which ddbkeys cannot copy from a client: pass streams= a DynamoDB "
        "Streams client made from the same session (session.client('dynamodbstreams')).",
        table=table,
    )


def _from(origin: Origin, client: Any) -> Any:
    return origin.session.client("dynamodbstreams", **streams_settings(client), **origin.keys)


def _access_key(credentials: Any) -> str | None:
    return None if credentials is None else credentials.get_frozen_credentials().access_key


def streams_client_for(client: Any, table: str | None = None) -> Any:
    """A DynamoDB Streams client like ``client``, signing as it does (see above); a
    :class:`~ddbkeys.ConfigurationError` naming ``table`` when that cannot be proven."""
    origin = origin_of(client)
    if origin is not None:
        return _from(origin, client)
    try:
        theirs = signed_as(client.generate_presigned_url(PRESIGN[0], Params=PRESIGN[1]))
    except BotoCoreError:  # it signs with nothing: neither will the Streams client
        theirs = None
    session = boto3.DEFAULT_SESSION or boto3.Session()
    ours = _access_key(session.get_credentials())
    keys = streams_keys(theirs, ours, own_endpoint(client), table)
    return _from(Origin(session, keys), client)


def streams_settings(client: Any) -> dict[str, Any]:
    """``create_client`` arguments for a Streams client like ``client``: its region and config,
    and its endpoint unless it is the service's own (any other, DynamoDB Local or a proxy in
    front of it, serves both APIs on one port; botocore finds AWS's Streams endpoint from the
    region and the config)."""
    meta = client.meta
    settings: dict[str, Any] = {"region_name": meta.region_name, "config": meta.config}
    if not own_endpoint(client):
        settings["endpoint_url"] = str(meta.endpoint_url)
    return settings


def stream_shards(ask: Callable[[Request], Flow[Any]], arn: str) -> Flow[list[dict[str, Any]]]:
    """Every shard of the stream ``arn`` (DescribeStream, page by page), each request sent
    by ``ask``."""
    shards, _ = yield from _described(ask, arn)
    return shards


def settled_shards(
    ask: Callable[[Request], Flow[Any]],
    arn: str,
    sleep: Callable[[float], None],
    stop: StopFlag | None = None,
) -> Flow[list[dict[str, Any]]]:
    """:func:`stream_shards`, described again (up to ``DESCRIBE_AGAIN`` times, ``sleep``
    waiting a second between) while the stream is enabled and lists a closed shard with none
    after it (:func:`closed_leaves`): the list a reader of the whole stream needs."""
    for again in range(DESCRIBE_AGAIN + 1):
        shards, status = yield from _described(ask, arn)
        if status != "ENABLED" or not closed_leaves(shards) or again == DESCRIBE_AGAIN:
            return shards
        yield Pause(1.0, sleep, stop)
    raise AssertionError("unreachable")  # pragma: no cover


def closed_leaves(shards: Sequence[Mapping[str, Any]]) -> list[str]:
    """The shards listed closed (an ``EndingSequenceNumber``) that no listed shard follows
    (names as its parent). On an enabled stream a closed shard's keys go on in a child, and
    DescribeStream may list the closed shard a moment before the child (Flink's DynamoDB
    Streams source and the Kinesis Client Library both meet "a closed shard with no
    children"): a read of the stream that left the child out would miss its records."""
    parents = {str(s["ParentShardId"]) for s in shards if s.get("ParentShardId")}
    return [
        str(s["ShardId"])
        for s in shards
        if s.get("SequenceNumberRange", {}).get("EndingSequenceNumber") is not None
        and str(s["ShardId"]) not in parents
    ]


def shard_born(shard: str) -> float | None:
    """When the shard was made (seconds), as its id says on the service and on DynamoDB Local
    (``shardId-00000001796068906466-bc90b014``: milliseconds since the epoch); None when the
    id says no time."""
    match = _BORN.fullmatch(shard)
    return int(match.group(1)) / 1000 if match is not None else None


_BORN = re.compile(r"shardId-0*(1\d{12})-[0-9a-f]+")


def _described(
    ask: Callable[[Request], Flow[Any]], arn: str
) -> Flow[tuple[list[dict[str, Any]], str | None]]:
    """Every shard of the stream ``arn``, and its StreamStatus (as its last page says)."""
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
            return shards, description.get("StreamStatus")


#: The Streams operations, sent to the Streams client (the rest to the table's).
STREAM_OPERATIONS = frozenset({"describe_stream", "get_shard_iterator", "get_records"})


class SplitClient:
    """One client for a driver: the Streams operations go to ``streams``, the rest (and
    ``meta``) to ``client``. Either may be sync or asyncio: the driver calls what it finds."""

    def __init__(self, client: Any, streams: Any) -> None:
        self._client = client
        self._streams = streams

    def __getattr__(self, name: str) -> Any:
        return getattr(self._streams if name in STREAM_OPERATIONS else self._client, name)


class ClientOnFirstUse:
    """A client made by ``make()`` on first use (for :class:`SplitClient`: a Streams client
    made only when a Streams request is sent)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._made: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._made is None:
            self._made = self._make()
        return getattr(self._made, name)
