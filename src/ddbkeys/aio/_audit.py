"""Audits for asyncio: the same names and signatures as :mod:`ddbkeys.ids._audit`, with
``await``; the very scan and query flows, run by the asyncio driver."""

from __future__ import annotations

from decimal import Decimal

from ddbkeys._capacity import Usage
from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._errors import ConfigurationError
from ddbkeys._retry import DEFAULT_DEADLINE
from ddbkeys._schema import check_table_name
from ddbkeys.aio._client import as_async_client
from ddbkeys.ids._audit import (
    AuditReport,
    attribute_flow,
    audit_ids,
    check_attribute_settings,
    checked_deadline,
    collection_flow,
)
from ddbkeys.ids._collection_keys import check_collection_settings
from ddbkeys.partition_keys._index.index import DEFAULT_MARKER_ATTRIBUTE

__all__ = ["AuditReport", "audit_attribute", "audit_collection", "audit_ids"]


def _target(client: object, table: str | None, deadline: float | None) -> tuple[object, str]:
    resolved, name = as_async_client(client, table)
    if name is None:
        raise ConfigurationError("No table given: pass the table's name.")
    check_table_name(name)
    checked_deadline(name, deadline)
    return resolved, name


async def audit_attribute(
    client: object,
    table: str | None = None,
    attribute: str = "id",
    *,
    start: int = 1,
    usage: Usage | None = None,
    prefix: str = "",
    width: int = 10,
    counter_attribute: str = "last_id",
    deadline: float | None = DEFAULT_DEADLINE,
) -> AuditReport:
    """Scan ``table`` for ``attribute`` and report gaps, duplicates, ids below ``start`` and
    values that are not ids (see the sync :func:`ddbkeys.ids.audit_attribute`); ``client`` is
    an aiobotocore DynamoDB client."""
    ddb, table = _target(client, table, deadline)
    settings = check_attribute_settings(table, attribute, start, prefix, width, counter_attribute)
    usage = usage or Usage()
    flow = attribute_flow(table, attribute, **settings, usage=usage, deadline=deadline)
    return await AsyncDriver(ddb, usage, "ddbkeys.aio.audit_attribute").run(flow)


async def audit_collection(
    client: object,
    table: str | None,
    partition_key_value: str | int | Decimal | bytes,
    *,
    width: int = 10,
    prefix: str = "",
    usage: Usage | None = None,
    marker_attribute: str = DEFAULT_MARKER_ATTRIBUTE,
    counter_attribute: str = "last_number",
    deadline: float | None = DEFAULT_DEADLINE,
    marker_sort_key: str | int | Decimal | bytes | None = None,
) -> AuditReport:
    """Query one item collection's sort keys and report gaps and duplicates (see the sync
    :func:`ddbkeys.ids.audit_collection`); ``client`` is an aiobotocore DynamoDB client."""
    ddb, table = _target(client, table, deadline)
    check_collection_settings(table, width, prefix, marker_attribute, counter_attribute)
    usage = usage or Usage()
    flow = collection_flow(
        table,
        partition_key_value,
        prefix=prefix,
        width=width,
        usage=usage,
        marker_attribute=marker_attribute,
        counter_attribute=counter_attribute,
        deadline=deadline,
        marker_sort_key=marker_sort_key,
    )
    return await AsyncDriver(ddb, usage, "ddbkeys.aio.audit_collection").run(flow)
