"""Turn an endpoint URL, a region and a profile into a DynamoDB client.

Every setting is resolved when the client is made, never at import time, in this order:

1. the argument given (``--endpoint-url``, ``--region``, ``--profile`` on the CLI);
2. the standard AWS environment variables: ``AWS_ENDPOINT_URL_DYNAMODB`` then ``AWS_ENDPOINT_URL``;
   ``AWS_REGION`` then ``AWS_DEFAULT_REGION``; ``AWS_PROFILE``;
3. the AWS config and credentials files (``region``, ``endpoint_url`` of the profile);
4. defaults: the public DynamoDB endpoint of the region.

For an endpoint on the loopback address (DynamoDB Local, a test proxy) a missing region defaults to
``us-east-1`` and missing credentials to a dummy pair, since such servers accept any.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ProfileNotFound

from ddbkeys import __version__
from ddbkeys.errors import ConfigurationError, translate_error

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["ClientSettings", "is_loopback", "make_client", "resolve_settings"]

LOCAL_REGION = "us-east-1"
LOCAL_ACCESS_KEY = "ddbkeyslocal"


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
        parsed = urlparse(endpoint)
        if parsed.scheme not in {"http", "https"} or not parsed.netloc:
            raise ConfigurationError(
                f"Endpoint URL {endpoint!r} is not an http:// or https:// URL, for example "
                "http://127.0.0.1:8000."
            )
    return ClientSettings(
        endpoint_url=endpoint,
        region=region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
        profile=profile or env.get("AWS_PROFILE") or None,
    )


def is_loopback(endpoint_url: str | None) -> bool:
    """True for http(s)://127.x.x.x, ::1 or localhost endpoints."""
    if not endpoint_url:
        return False
    host = (urlparse(endpoint_url).hostname or "").lower()
    return host in {"localhost", "::1"} or host.startswith("127.")


def make_client(
    endpoint_url: str | None = None,
    region: str | None = None,
    profile: str | None = None,
    *,
    session: boto3.Session | None = None,
    config: Config | None = None,
    max_attempts: int = 5,
) -> DynamoDBClient:
    """Build a DynamoDB client from the given settings, the environment and the config files.

    ``session`` is used as given when passed (its profile and credentials win). ``max_attempts``
    bounds botocore's own retries (standard mode: exponential backoff with jitter, for
    throttling, 5xx and connection errors); ``config`` is merged over ddbkeys' defaults.
    """
    settings = resolve_settings(endpoint_url, region, profile)
    try:
        if session is None:
            session = boto3.Session(profile_name=settings.profile)
        region_name = settings.region or session.region_name
        local = is_loopback(settings.endpoint_url)
        if region_name is None and local:
            region_name = LOCAL_REGION
        if region_name is None:
            raise ConfigurationError(
                "No AWS region set. Pass --region, or set AWS_REGION (or AWS_DEFAULT_REGION), "
                "or a region in your AWS profile."
            )
        dummy = LOCAL_ACCESS_KEY if local and session.get_credentials() is None else None
        base = Config(
            retries={"mode": "standard", "total_max_attempts": max_attempts},
            connect_timeout=5,
            read_timeout=30,
            max_pool_connections=64,
            user_agent_extra=f"ddbkeys/{__version__}",
        )
        return session.client(
            "dynamodb",
            region_name=region_name,
            endpoint_url=settings.endpoint_url,
            config=base.merge(config) if config is not None else base,
            aws_access_key_id=dummy,
            aws_secret_access_key=dummy,
        )
    except ProfileNotFound as exc:
        missing = exc.kwargs.get("profile", settings.profile)
        raise ConfigurationError(
            f"AWS profile {missing!r} not found in the AWS config files: check "
            "--profile or AWS_PROFILE (aws configure list-profiles lists them).",
            cause=exc,
        ) from exc
    except BotoCoreError as exc:
        translated = translate_error(exc)
        if translated is exc:
            raise
        raise translated from exc
