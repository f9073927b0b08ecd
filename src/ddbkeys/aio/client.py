"""What the asyncio API takes where it takes a client: an aiobotocore DynamoDB client."""

from __future__ import annotations

from typing import Any

from ddbkeys.clients import _guard
from ddbkeys.errors import ConfigurationError

__all__ = ["INSTALL", "as_async_client"]

INSTALL = (
    "The asyncio API sends with aiobotocore: pip install 'ddbkeys[async]' (aiobotocore pins "
    "botocore to a narrow range of versions, so it is not a dependency of ddbkeys itself)."
)


def as_async_client(obj: object, table: str | None) -> tuple[Any, str | None]:
    """An aiobotocore DynamoDB client (``session.create_client("dynamodb")``, entered), as it
    is, with ``table``; anything else is a :class:`ConfigurationError` saying what is taken."""
    try:
        from aiobotocore.client import AioBaseClient
    except ImportError as exc:  # the extra is not installed
        raise ConfigurationError(INSTALL) from exc
    if not isinstance(obj, AioBaseClient):
        kind = type(obj).__name__
        hint = (
            " (a boto3 client is for the sync API: from ddbkeys import ...)"
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
