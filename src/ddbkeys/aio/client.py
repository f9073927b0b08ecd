"""What the asyncio API takes where it takes a client: an aiobotocore DynamoDB client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ProfileNotFound

from ddbkeys.clients import _guard
from ddbkeys.connect import (
    LOCAL_ACCESS_KEY,
    check_limits,
    client_options,
    is_loopback,
    region_for,
    resolve_settings,
)
from ddbkeys.errors import ConfigurationError, translate_error
from ddbkeys.retry import DEFAULT_DEADLINE

__all__ = ["INSTALL", "as_async_client", "make_client"]

INSTALL = (
    "The asyncio API sends with aiobotocore: pip install 'ddbkeys[async]' (aiobotocore pins "
    "botocore to a narrow range of versions, so it is not a dependency of ddbkeys itself)."
)


def as_async_client(obj: object, table: str | None) -> tuple[Any, str | None]:
    """An aiobotocore DynamoDB client (``session.create_client("dynamodb")``, entered), as it
    is, with ``table``; anything else is a :class:`ConfigurationError` saying what is taken."""
    try:
        from aiobotocore.client import AioBaseClient  # noqa: PLC0415 (an optional extra)
    except ImportError as exc:  # the extra is not installed
        raise ConfigurationError(INSTALL) from exc
    if not isinstance(obj, AioBaseClient):
        kind = type(obj).__name__
        hint = (
            " (a boto3 client is for the sync API: ddbkeys.ids, ddbkeys.partition_keys)"
            if hasattr(obj, "meta") and not hasattr(obj, "__aenter__")
            else ""
        )
        raise ConfigurationError(
            "ddbkeys.aio takes an aiobotocore DynamoDB client: "
            "async with aiobotocore.session.get_session().create_client('dynamodb') as client, "
            f"or ddbkeys.aio.make_client(); not {kind}{hint}."
        )
    service = obj.meta.service_model.service_name
    if service != "dynamodb":
        raise ConfigurationError(
            f"ddbkeys.aio takes an aiobotocore DynamoDB client, not one for {service!r}."
        )
    _guard(obj)
    return obj, table


@asynccontextmanager
async def make_client(
    endpoint_url: str | None = None,
    region: str | None = None,
    profile: str | None = None,
    *,
    config: Config | None = None,
    max_attempts: int = 1,
    timeout: float | None = DEFAULT_DEADLINE,
) -> AsyncIterator[Any]:
    """An aiobotocore DynamoDB client with the settings :func:`ddbkeys.make_client` resolves
    (argument, environment, AWS config files; timeouts within ``timeout``; no botocore retries
    by default), open for the ``async with`` block::

        async with ddbkeys.aio.make_client() as client:
            counter = ddbkeys.aio.AtomicCounter(client, "orders", "order")
    """
    try:
        from aiobotocore.config import AioConfig  # noqa: PLC0415 (an optional extra)
        from aiobotocore.session import AioSession  # noqa: PLC0415
    except ImportError as exc:
        raise ConfigurationError(INSTALL) from exc
    check_limits(max_attempts, timeout)
    settings = resolve_settings(endpoint_url, region, profile)
    try:
        session = AioSession(profile=settings.profile)
        region_name = region_for(settings, session.get_config_variable("region"))
        local = is_loopback(settings.endpoint_url)
        dummy = LOCAL_ACCESS_KEY if local and await session.get_credentials() is None else None
        opened = session.create_client(
            "dynamodb",
            region_name=region_name,
            endpoint_url=settings.endpoint_url,
            config=AioConfig(**client_options(max_attempts, timeout)).merge(
                AioConfig(**getattr(config, "_user_provided_options", {}))
            ),
            aws_access_key_id=dummy,
            aws_secret_access_key=dummy,
        )
    except ProfileNotFound as exc:
        raise ConfigurationError(
            f"AWS profile {exc.kwargs.get('profile', settings.profile)!r} not found in the AWS "
            "config files: check the profile or AWS_PROFILE.",
            cause=exc,
        ) from exc
    except BotoCoreError as exc:
        raise translate_error(exc) from exc
    async with opened as client:
        yield as_async_client(client, None)[0]
