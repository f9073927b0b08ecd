"""``ddbkeys.aio.start_export`` and ``wait_export``: the sync forms' flows
(:mod:`ddbkeys.partition_keys._export.start`) on the asyncio driver (the listing from an export is
:mod:`ddbkeys.aio._export`), with an aiobotocore client."""

from __future__ import annotations

from collections.abc import Callable

from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._errors import ConfigurationError
from ddbkeys._retry import DEFAULT_DEADLINE, RetryPolicy
from ddbkeys.aio._client import as_async_client
from ddbkeys.partition_keys._export.described import ExportFormat, TableExport
from ddbkeys.partition_keys._export.start import (
    POLL,
    WAIT_DEADLINE,
    prepared_start,
    prepared_wait,
)

__all__ = ["start_export", "wait_export"]


async def start_export(
    client: object,
    table: str | None,
    s3_bucket: str,
    *,
    s3_prefix: str | None = None,
    export_format: ExportFormat = "DYNAMODB_JSON",
    client_token: str | None = None,
    deadline: float = DEFAULT_DEADLINE,
    retry: RetryPolicy | None = None,
) -> TableExport:
    """Start a full export of ``table`` to S3, with an aiobotocore DynamoDB ``client``: the
    same request, client token, errors and result as
    :func:`ddbkeys.partition_keys.start_export`."""
    resolved, name = as_async_client(client, table)
    if name is None:
        raise ConfigurationError("No table given: pass the table's name or ARN.")
    flow, usage = prepared_start(
        name,
        s3_bucket,
        s3_prefix=s3_prefix,
        export_format=export_format,
        client_token=client_token,
        deadline=deadline,
        retry=retry,
    )
    return await AsyncDriver(resolved, usage, "ddbkeys.aio.start_export").run(flow)


async def wait_export(
    client: object,
    export_arn: str,
    *,
    poll: float = POLL,
    deadline: float = WAIT_DEADLINE,
    on_progress: Callable[[TableExport], object] | None = None,
    retry: RetryPolicy | None = None,
) -> TableExport:
    """Wait until the export ``export_arn`` is COMPLETED, with an aiobotocore DynamoDB
    ``client`` (its polls sleep on the event loop): as
    :func:`ddbkeys.partition_keys.wait_export`."""
    resolved, _ = as_async_client(client, None)
    flow, usage = prepared_wait(
        export_arn, poll=poll, deadline=deadline, on_progress=on_progress, retry=retry
    )
    return await AsyncDriver(resolved, usage, "ddbkeys.aio.wait_export").run(flow)
