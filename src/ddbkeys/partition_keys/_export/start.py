"""Starting a table's export to S3 (ExportTableToPointInTime) and waiting until it is done.

The decisions are flows (:func:`start_flow`, :func:`wait_flow`) that the sync functions here and
their twins in :mod:`ddbkeys.aio` run on their driver, through the one retry layer. What an
export is and where its files go: :mod:`.described`.

A retry never starts two exports: each call sends one ClientToken (made once per call, or the
caller's), and every attempt of the call, the retry layer's and botocore's, sends that same
token. DynamoDB treats requests with the same token and arguments within 8 hours as one
(the API reference of ExportTableToPointInTime, ``ClientToken``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys._capacity import Usage
from ddbkeys._clients import as_client
from ddbkeys._core.attempts import attempts
from ddbkeys._core.steps import Flow, Pause, Request, describe_table
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import (
    ConfigurationError,
    DeadlineExceededError,
    TableNotFoundError,
    error_code,
    unexpected_answer,
)
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys.partition_keys._export.described import (
    COMPLETED,
    ENDED_BADLY,
    ExportFormat,
    TableExport,
    check_export_arn,
    check_format,
    check_wait,
    described,
    failed,
    pitr_off,
    table_of,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        DescribeExportInputTypeDef,
        ExportTableToPointInTimeInputTypeDef,
    )

__all__ = [
    "POLL",
    "WAIT_DEADLINE",
    "new_token",
    "prepared_start",
    "prepared_wait",
    "start_export",
    "start_flow",
    "wait_export",
    "wait_flow",
]


def _export_request(params: ExportTableToPointInTimeInputTypeDef) -> Request:
    return Request("export_table_to_point_in_time", params, counted=False)


def _describe_request(params: DescribeExportInputTypeDef) -> Request:
    return Request("describe_export", params, counted=False)


def _start_attempt(params: ExportTableToPointInTimeInputTypeDef, table: str) -> Flow[Any]:
    """One ExportTableToPointInTime (a new Request each attempt, the same parameters and so
    the same ClientToken): its answer, or the error a caller can act on."""
    try:
        answer = yield _export_request(params)
    except ClientError as exc:
        code = error_code(exc)
        if code == "PointInTimeRecoveryUnavailableException":
            raise pitr_off(table, exc) from exc
        if code == "TableNotFoundException":
            raise TableNotFoundError(
                f"Table {table!r} not found: check the name, the region and the endpoint.",
                table=table,
                cause=exc,
            ) from exc
        if code in ("IdempotentParameterMismatchException", "ImportConflictException"):
            raise ConfigurationError(
                f"Client token {params.get('ClientToken')!r} started an export of table "
                f"{table!r} with other arguments in the last 8 hours: give a new token, or the "
                "same arguments.",
                table=table,
                cause=exc,
            ) from exc
        raise
    return answer


def _describe_attempt(export_arn: str) -> Flow[Any]:
    """One DescribeExport: its answer, or, for an ARN DynamoDB does not know, the error saying
    where to look."""
    try:
        answer = yield _describe_request({"ExportArn": export_arn})
    except ClientError as exc:
        if error_code(exc) == "ExportNotFoundException":
            raise ConfigurationError(
                f"No export {export_arn} in this account and region: check the ARN and region= "
                "(DynamoDB keeps an export's description 90 days).",
                table=table_of(export_arn),
                cause=exc,
            ) from exc
        raise
    return answer


def _send(request: Request) -> Flow[Any]:
    answer = yield request
    return answer


def start_flow(
    table: str,
    s3_bucket: str,
    *,
    s3_prefix: str | None,
    export_format: ExportFormat,
    client_token: str,
    policy: RetryPolicy,
    deadline: Deadline,
    usage: Usage,
) -> Flow[TableExport]:
    """Start the export of ``table`` (a name: its ARN is read with DescribeTable; or an ARN,
    sent as it is) to ``s3_bucket``/``s3_prefix``, with ``client_token``."""
    name = table_of(table)
    table_arn = table
    if not table.startswith("arn:"):
        answer = yield from attempts(
            lambda _: _send(describe_table({"TableName": table})),
            what="DescribeTable",
            table=name,
            policy=policy,
            deadline=deadline,
            usage=usage,
            writes=False,
        )
        description = answer.get("Table") if isinstance(answer, Mapping) else None
        if not isinstance(description, Mapping) or not description.get("TableArn"):
            raise unexpected_answer("DescribeTable", name, "TableArn", answer)
        table_arn = str(description["TableArn"])
    params: ExportTableToPointInTimeInputTypeDef = {
        "TableArn": table_arn,
        "S3Bucket": s3_bucket,
        "ExportFormat": export_format,
        "ClientToken": client_token,
    }
    if s3_prefix:
        params["S3Prefix"] = s3_prefix
    answer = yield from attempts(
        lambda _: _start_attempt(params, name),
        what="ExportTableToPointInTime",
        table=name,
        policy=policy,
        deadline=deadline,
        usage=usage,
        advice=f"Run it again with client token {client_token!r} (--client-token, "
        "client_token=): it starts no second export.",
    )
    return described(answer, "ExportTableToPointInTime", client_token)


def new_token() -> str:
    """A ClientToken for one call (every retry of that call sends it again)."""
    return str(uuid.uuid4())


def wait_flow(
    export_arn: str,
    *,
    poll: float,
    policy: RetryPolicy,
    deadline: Deadline,
    usage: Usage,
    on_progress: Callable[[TableExport], object] | None = None,
) -> Flow[TableExport]:
    """Ask DescribeExport every ``poll`` seconds until the export is COMPLETED (returned) or
    FAILED or CANCELLED (:class:`ExportFailedError`), within ``deadline``."""
    table = table_of(export_arn)
    asked = 0
    while True:  # (bounded by the deadline: a wait past it is not waited)
        answer = yield from attempts(
            lambda _: _describe_attempt(export_arn),
            what="DescribeExport",
            table=table,
            policy=policy,
            deadline=deadline,
            usage=usage,
            writes=False,
        )
        asked += 1
        export = described(answer, "DescribeExport")
        if on_progress is not None:
            on_progress(export)
        if export.status == COMPLETED:
            return export
        if export.status in ENDED_BADLY:
            raise failed(export)
        if not deadline.allows(poll):
            seconds = deadline.seconds or 0.0
            raise DeadlineExceededError(
                f"Export {export_arn} of table {table!r} was still {export.status} after "
                f"{seconds:.0f} s (the wait's deadline): it goes on; wait again with "
                f"`ddbkeys partition-keys export wait --export-arn {export_arn}`.",
                seconds=seconds,
                attempts=asked,
                table=table,
            )
        yield Pause(poll, policy.sleep)


# --- the sync API (ddbkeys.aio has the same over its driver) ------------------------------------

#: How long a wait for an export lasts at most unless told: exports of large tables take hours.
WAIT_DEADLINE = 86_400.0
#: Seconds between two DescribeExport of a wait, unless told.
POLL = 10.0


def prepared_start(
    table: str,
    s3_bucket: str,
    *,
    s3_prefix: str | None,
    export_format: str,
    client_token: str | None,
    deadline: float,
    retry: RetryPolicy | None,
) -> tuple[Flow[TableExport], Usage]:
    """The flow of :func:`start_export`'s arguments, checked, and the usage it counts in."""
    policy = retry or RetryPolicy()
    usage = Usage()
    flow = start_flow(
        table,
        s3_bucket,
        s3_prefix=s3_prefix,
        export_format=check_format(export_format),
        client_token=client_token or new_token(),
        policy=policy,
        deadline=Deadline(deadline, clock=policy.clock),
        usage=usage,
    )
    return flow, usage


def prepared_wait(
    export_arn: str,
    *,
    poll: float,
    deadline: float,
    on_progress: Callable[[TableExport], object] | None,
    retry: RetryPolicy | None,
) -> tuple[Flow[TableExport], Usage]:
    """The flow of :func:`wait_export`'s arguments, checked, and the usage it counts in."""
    poll, seconds = check_wait(poll, deadline)
    check_export_arn(export_arn)
    policy = retry or RetryPolicy()
    usage = Usage()
    flow = wait_flow(
        export_arn,
        poll=poll,
        policy=policy,
        deadline=Deadline(seconds, clock=policy.clock),
        usage=usage,
        on_progress=on_progress,
    )
    return flow, usage


def start_export(
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
    """Start a full export of ``table`` (its name, or its ARN; None with a boto3 ``Table``)
    to S3 at the current time (ExportTableToPointInTime; with a name, its ARN is read with
    DescribeTable), and return it as DynamoDB describes it, IN_PROGRESS as a rule:
    :func:`wait_export` waits for it. Its ``uri`` is the folder to pass to ``--from-export``.

    An export reads no capacity of the table (DynamoDB reads its point-in-time recovery
    backup) and needs PITR on: a table with PITR off is a one-line
    :class:`~ddbkeys.ConfigurationError` saying how to turn it on, and nothing is started.
    ``client_token`` (default: one made for this call) is sent by every attempt of the call,
    so that a retry after a lost answer starts no second export; pass the same token again to
    make a call of your own idempotent too (DynamoDB keeps a token 8 hours). AWS bills an
    export by the table's size at the export time (https://aws.amazon.com/dynamodb/pricing/).
    ``deadline``: seconds for the whole call, retries included.
    """
    resolved, name = as_client(client, table)
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
    return SyncDriver(resolved, usage).run(flow)


def wait_export(
    client: object,
    export_arn: str,
    *,
    poll: float = POLL,
    deadline: float = WAIT_DEADLINE,
    on_progress: Callable[[TableExport], object] | None = None,
    retry: RetryPolicy | None = None,
) -> TableExport:
    """Wait until the export ``export_arn`` is COMPLETED, asking DescribeExport every ``poll``
    seconds (``on_progress`` is called with each answer), and return it: its ``uri`` is the
    folder to pass to ``--from-export``. An export DynamoDB says FAILED or CANCELLED is an
    :class:`ExportFailedError` naming it and DynamoDB's reason; one still running after
    ``deadline`` seconds a :class:`~ddbkeys.DeadlineExceededError` (the export goes on: wait
    again). Reads no capacity."""
    resolved, _ = as_client(client)
    flow, usage = prepared_wait(
        export_arn, poll=poll, deadline=deadline, on_progress=on_progress, retry=retry
    )
    return SyncDriver(resolved, usage).run(flow)
