"""What DynamoDB says of a table's export (ExportTableToPointInTime's and DescribeExport's
``ExportDescription``), where its files are, and the errors of starting and waiting for one.

Where an export's files are. AWS's page "DynamoDB table export output format"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/S3DataExport.Output.html)
shows them under ``<export-prefix>/AWSDynamoDB/<ExportId>/`` in the bucket: the manifests
(``manifest-summary.json``, ``manifest-files.json``, their checksums), the ``_started`` file and
``data/``. The ExportId is the last part of the export's ARN
(``arn:aws:dynamodb:us-east-1:123456789012:table/T/export/01234567890123-a1b2c3d4``). That
folder, as ``s3://bucket/prefix/AWSDynamoDB/<ExportId>/``, is what ``--from-export`` takes:
:func:`export_uri` makes it from the bucket, the prefix and the ARN.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from ddbkeys._errors import ConfigurationError, DdbKeysError, unexpected_answer

__all__ = [
    "COMPLETED",
    "ENDED_BADLY",
    "EXPORT_FORMATS",
    "PITR_COMMAND",
    "ExportFailedError",
    "ExportFormat",
    "TableExport",
    "check_export_arn",
    "check_format",
    "check_wait",
    "described",
    "export_id",
    "export_uri",
    "failed",
    "pitr_off",
    "table_of",
]

ExportFormat = Literal["DYNAMODB_JSON", "ION"]
#: The formats AWS writes a full export in.
EXPORT_FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)
#: How to turn point-in-time recovery on (AWS CLI), for the error that says it is off.
PITR_COMMAND = (
    "aws dynamodb update-continuous-backups --table-name {table} "
    "--point-in-time-recovery-specification PointInTimeRecoveryEnabled=true"
)
#: An export's states that end the wait (DescribeExport's ExportStatus).
COMPLETED, ENDED_BADLY = "COMPLETED", ("FAILED", "CANCELLED")
#: Where every export of a prefix lives, under its bucket and prefix (see the module's doc).
FOLDER = "AWSDynamoDB"


@dataclass(frozen=True)
class TableExport:
    """One export of a table to S3, as DynamoDB describes it (ExportTableToPointInTime's answer,
    then DescribeExport's). ``uri`` is the export's folder, ``s3://bucket/prefix/AWSDynamoDB/
    <ExportId>/``: what ``ddbkeys partition-keys --from-export`` takes. ``export_time`` is the
    instant the export is a snapshot of (None where the answer gave none). ``status`` is
    IN_PROGRESS, COMPLETED or FAILED (CANCELLED too, should DynamoDB say so)."""

    export_arn: str
    status: str
    table_arn: str
    s3_bucket: str
    s3_prefix: str | None
    export_format: str
    uri: str
    export_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    item_count: int | None = None
    billed_size_bytes: int | None = None
    failure_code: str | None = None
    failure_message: str | None = None
    client_token: str | None = None

    @property
    def export_id(self) -> str:
        """The last part of the export's ARN: its folder's name under ``AWSDynamoDB/``."""
        return export_id(self.export_arn)

    @property
    def table(self) -> str:
        """The name of the table exported."""
        return table_of(self.table_arn)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (times in ISO 8601), as ``--output json`` prints it."""
        return {
            "table": self.table,
            "export_id": self.export_id,
            **{k: v.isoformat() if isinstance(v, datetime) else v for k, v in asdict(self).items()},
        }


class ExportFailedError(DdbKeysError):
    """DynamoDB says the export failed (or was cancelled): ``export`` is its description, with
    DynamoDB's ``failure_code`` and ``failure_message``. Nothing a retry of the wait changes:
    start another export once the cause is fixed."""

    def __init__(self, message: str, *, export: TableExport) -> None:
        super().__init__(message, table=export.table, code=export.failure_code)
        self.export = export


def export_id(export_arn: str) -> str:
    """The ExportId of an export's ARN (its last part)."""
    return export_arn.rstrip("/").rsplit("/", 1)[-1]


def table_of(arn: str) -> str:
    """The table's name in a table's ARN or an export's (``...:table/T[/export/ID]``); a name
    is returned as it is."""
    if ":table/" not in arn:
        return arn
    return arn.rsplit(":table/", 1)[1].split("/", 1)[0]


def export_uri(s3_bucket: str, s3_prefix: str | None, export_arn: str) -> str:
    """``s3://bucket/prefix/AWSDynamoDB/<ExportId>/``: the folder an export's manifests and
    data files are written to (see the module's doc). Slashes at either end of the prefix are
    dropped, as S3 keys have no empty folder; without a prefix the folder is
    ``AWSDynamoDB/<ExportId>/`` at the bucket's root."""
    parts = [(s3_prefix or "").strip("/"), FOLDER, export_id(export_arn)]
    return f"s3://{s3_bucket}/{'/'.join(p for p in parts if p)}/"


def described(answer: object, what: str, client_token: str | None = None) -> TableExport:
    """The :class:`TableExport` of an answer holding an ``ExportDescription``."""
    description = answer.get("ExportDescription") if isinstance(answer, Mapping) else None
    if not isinstance(description, Mapping) or not description.get("ExportArn"):
        raise unexpected_answer(what, None, "ExportDescription with its ExportArn", answer)
    d = description
    arn, bucket, prefix = str(d["ExportArn"]), str(d.get("S3Bucket", "")), d.get("S3Prefix")
    return TableExport(
        export_arn=arn,
        status=str(d.get("ExportStatus", "IN_PROGRESS")),
        table_arn=str(d.get("TableArn", "")),
        s3_bucket=bucket,
        s3_prefix=prefix,
        export_format=str(d.get("ExportFormat", "")),
        uri=export_uri(bucket, prefix, arn),
        export_time=d.get("ExportTime"),
        start_time=d.get("StartTime"),
        end_time=d.get("EndTime"),
        item_count=d.get("ItemCount"),
        billed_size_bytes=d.get("BilledSizeBytes"),
        failure_code=d.get("FailureCode"),
        failure_message=d.get("FailureMessage"),
        client_token=d.get("ClientToken") or client_token,
    )


def pitr_off(table: str, cause: BaseException) -> ConfigurationError:
    """The error for a table whose point-in-time recovery is off (nothing was started)."""
    return ConfigurationError(
        f"Table {table!r} has point-in-time recovery (PITR) off, and an export needs it: turn it "
        f"on with `{PITR_COMMAND.format(table=table)}` (AWS bills PITR by the table's size, per "
        "GB-month: https://aws.amazon.com/dynamodb/pricing/); no export was started.",
        table=table,
        cause=cause,
    )


def failed(export: TableExport) -> ExportFailedError:
    """The error for an export that DynamoDB says failed (or was cancelled)."""
    why = (export.failure_message or "DynamoDB gave no reason").rstrip(".")
    code = f" ({export.failure_code})" if export.failure_code else ""
    return ExportFailedError(
        f"Export {export.export_arn} of table {export.table!r} {export.status}{code}: {why}.",
        export=export,
    )


def check_format(export_format: str) -> ExportFormat:
    """``export_format`` if AWS writes exports in it, else a ConfigurationError."""
    for known in EXPORT_FORMATS:
        if export_format == known:
            return known
    raise ConfigurationError(
        f"{export_format!r} is not an export format: DynamoDB writes "
        + " or ".join(repr(f) for f in EXPORT_FORMATS)
        + "."
    )


def check_export_arn(export_arn: str) -> str:
    """``export_arn`` if it is an export's ARN (of a table), else a ConfigurationError."""
    if not export_arn.startswith("arn:") or ":table/" not in export_arn:
        raise ConfigurationError(
            f"{export_arn!r} is not an export's ARN (arn:aws:dynamodb:REGION:ACCOUNT:table/"
            "TABLE/export/ID, as `export start` prints it)."
        )
    return export_arn


def check_wait(poll: float, deadline: float) -> tuple[float, float]:
    """``poll`` and ``deadline`` (seconds, both above 0), else a ConfigurationError."""
    for name, value in (("poll", poll), ("deadline", deadline)):
        if not (isinstance(value, int | float) and value > 0 and value != float("inf")):
            raise ConfigurationError(f"{name} must be a number of seconds above 0, not {value!r}.")
    return float(poll), float(deadline)
