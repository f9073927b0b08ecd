"""Turn an endpoint URL, a region and a profile into a DynamoDB client.

Every setting is resolved when the client is made, never at import time, in this order:

1. the argument given (``--endpoint-url``, ``--region``, ``--profile`` on the CLI);
2. the standard AWS environment variables: ``AWS_ENDPOINT_URL_DYNAMODB`` then ``AWS_ENDPOINT_URL``;
   ``AWS_REGION`` then ``AWS_DEFAULT_REGION``;
3. the AWS config and credentials files (``region``, ``endpoint_url`` of the profile);
   ``AWS_PROFILE`` and the credentials are left to boto3, so they resolve exactly as a
   ``boto3.client("dynamodb")`` resolves them (keys exported in the environment win over
   ``AWS_PROFILE``'s, as in boto3 and the AWS CLI; ``--profile`` names the profile to use);
4. defaults: the public DynamoDB endpoint of the region.

The client's connect timeout is at most 5 s and its read timeout at most 30 s, and neither more
than ``timeout`` (the deadline it serves); botocore does not retry (``max_attempts=1``): the
loops of ddbkeys count every attempt, and stop at the deadline.

For an endpoint on the loopback address (DynamoDB Local, a test proxy) a missing region defaults to
``us-east-1`` and missing credentials to a dummy pair, since such servers accept any.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ProfileNotFound

from ddbkeys._clients import guard
from ddbkeys._errors import ConfigurationError
from ddbkeys._origins import remember
from ddbkeys._retry import DEFAULT_DEADLINE
from ddbkeys._translate import translate_error
from ddbkeys._version import __version__

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "ClientSettings",
    "client_options",
    "is_loopback",
    "make_client",
    "region_for",
    "resolve_settings",
]

LOCAL_REGION = "us-east-1"
LOCAL_ACCESS_KEY = "ddbkeyslocal"
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0


@dataclass(frozen=True)
class ClientSettings:
    """What a client will use. None means "left to botocore" (config files, then defaults)."""

    endpoint_url: str | None
    region: str | None
    profile: str | None


def resolve_settings(
    endpoint_url: str | None = None,
    region: str | None = None,
    profile: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> ClientSettings:
    """Apply the argument-then-environment precedence (the config files come after, in botocore)."""
    env = os.environ if environ is None else environ
    endpoint = (
        endpoint_url or env.get("AWS_ENDPOINT_URL_DYNAMODB") or env.get("AWS_ENDPOINT_URL") or None
    )
    if endpoint is not None:
        _check_endpoint(endpoint)
    return ClientSettings(
        endpoint_url=endpoint,
        region=region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
        # (AWS_PROFILE is boto3's to read: given to it as an argument, it would make the
        # profile's keys win over exported ones, which boto3 and the AWS CLI do not do.)
        profile=profile or None,
    )


def _check_endpoint(endpoint: str) -> None:
    """Refuse an endpoint URL botocore or urllib would fail on later with a bare ValueError."""
    why = ""
    try:
        parsed = urlparse(endpoint)
        parsed.port  # noqa: B018 - raises ValueError on a port that is no number from 0 to 65535
    except ValueError as exc:
        why = f" ({exc})"
    else:
        if any(c.isspace() or not c.isprintable() for c in endpoint):
            why = " (it holds a space or a control character)"
        elif parsed.scheme in {"http", "https"} and parsed.hostname:
            return
    raise ConfigurationError(
        f"Endpoint URL {endpoint!r} is not an http:// or https:// URL{why}, for example "
        "http://127.0.0.1:8000."
    )


def is_loopback(endpoint_url: str | None) -> bool:
    """True for http(s)://127.x.x.x, ::1 or localhost endpoints."""
    if not endpoint_url:
        return False
    host = (urlparse(endpoint_url).hostname or "").lower()
    return host in {"localhost", "::1"} or host.startswith("127.")


def check_limits(max_attempts: int, timeout: float | None) -> None:
    """Refuse a timeout or a number of attempts no client can have."""
    if timeout is not None and not timeout > 0:
        raise ConfigurationError(f"The timeout must be above 0 seconds, not {timeout!r}.")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ConfigurationError(f"max_attempts must be 1 or more, not {max_attempts!r}.")


def region_for(settings: ClientSettings, from_profile: str | None) -> str:
    """The region a client uses: given, else the profile's, else us-east-1 for a loopback
    endpoint; none at all is a :class:`ConfigurationError`."""
    region_name = settings.region or from_profile
    if region_name is None and is_loopback(settings.endpoint_url):
        region_name = LOCAL_REGION
    if region_name is None:
        raise ConfigurationError(
            "No AWS region set. Pass region=, or set AWS_REGION (or AWS_DEFAULT_REGION), "
            "or a region in your AWS profile."
        )
    return region_name


def client_options(max_attempts: int, timeout: float | None) -> dict[str, Any]:
    """ddbkeys' client configuration: timeouts within ``timeout``, ``max_attempts`` botocore
    attempts, a connection pool for 64 readers (for botocore's Config or aiobotocore's)."""
    return {
        "retries": {"mode": "standard", "total_max_attempts": max_attempts},
        "connect_timeout": min(CONNECT_TIMEOUT, timeout or CONNECT_TIMEOUT),
        "read_timeout": min(READ_TIMEOUT, timeout or READ_TIMEOUT),
        "max_pool_connections": 64,
        "user_agent_extra": f"ddbkeys/{__version__}",
    }


def make_client(
    endpoint_url: str | None = None,
    region: str | None = None,
    profile: str | None = None,
    *,
    session: boto3.Session | None = None,
    config: Config | None = None,
    max_attempts: int = 1,
    timeout: float | None = DEFAULT_DEADLINE,
) -> DynamoDBClient:
    """Build a DynamoDB client from the given settings, the environment and the config files.

    ``session`` is used as given when passed (its profile and credentials win). ``timeout``
    caps the connect timeout (5 s) and the read timeout (30 s): pass the deadline the client
    will serve, so that no single request outlives it (None: no cap). ``max_attempts`` is
    botocore's own attempts per request (standard mode: exponential backoff with jitter, for
    throttling, 5xx and connection errors); the default, 1, leaves every retry to ddbkeys,
    which counts them in one place and stops at the deadline. ``config`` is merged over
    ddbkeys' defaults.
    """
    check_limits(max_attempts, timeout)
    settings = resolve_settings(endpoint_url, region, profile)
    try:
        if session is None:
            session = boto3.Session(profile_name=settings.profile)
        local = is_loopback(settings.endpoint_url)
        region_name = region_for(settings, session.region_name)
        dummy = LOCAL_ACCESS_KEY if local and session.get_credentials() is None else None
        client = session.client(
            "dynamodb",
            region_name=region_name,
            endpoint_url=settings.endpoint_url,
            config=Config(**client_options(max_attempts, timeout)).merge(config or Config()),
            aws_access_key_id=dummy,
            aws_secret_access_key=dummy,
        )
        remember(client, session, aws_access_key_id=dummy, aws_secret_access_key=dummy)
    except ProfileNotFound as exc:
        missing = exc.kwargs.get("profile", settings.profile)
        raise ConfigurationError(
            f"AWS profile {missing!r} not found in the AWS config files: check "
            "profile= or AWS_PROFILE (aws configure list-profiles lists them).",
            cause=exc,
        ) from exc
    except BotoCoreError as exc:
        raise translate_error(exc) from exc
    return guard(client)  # type: ignore[no-any-return]
