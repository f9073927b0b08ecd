"""An export's manifests, read without I/O: what ``manifest-summary.json`` and
``manifest-files.json`` say, checked, and where each data file lies relative to the export's
folder.

The layout is AWS's ("DynamoDB table export output format", https://docs.aws.amazon.com/
amazondynamodb/latest/developerguide/S3DataExport.Output.html): an export's folder
``<prefix>/AWSDynamoDB/<export id>/`` holds ``manifest-summary.json`` (one JSON object: the
export's and the table's ARNs, ``exportTime``, ``outputFormat``, ``itemCount``,
``manifestFilesS3Key``...) and ``manifest-files.json`` (a JSON object a line per data file:
``itemCount``, ``md5Checksum``, ``etag``, ``dataFileS3Key``), and the data files under
``data/``, gzip-compressed, one item a line. The keys in the manifests are the objects' keys in
the bucket the export was written to; read from anywhere else (an ``aws s3 sync`` copy on disk,
a copy under another prefix), a file is found by its path below the export's folder, which the
manifest's own ``manifestFilesS3Key`` names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from ddbkeys._errors import ExportError

__all__ = [
    "FORMATS",
    "SUMMARY",
    "DataFile",
    "ExportError",
    "ExportFormat",
    "Manifest",
    "parse_files",
    "parse_summary",
    "table_of",
    "when",
]

SUMMARY = "manifest-summary.json"
ExportFormat = Literal["DYNAMODB_JSON", "ION"]
FORMATS: tuple[ExportFormat, ...] = ("DYNAMODB_JSON", "ION")


@dataclass(frozen=True)
class DataFile:
    """One data file of an export: its path below the export's folder, and how many items the
    manifest says it holds."""

    path: str
    items: int


@dataclass(frozen=True)
class Manifest:
    """What an export's manifests say: the export (``arn``, its ``time``: the data is the
    table as it was then), the table's ARN, the data files' format, and the data files."""

    arn: str
    table_arn: str
    time: datetime
    format: ExportFormat
    items: int
    files: tuple[DataFile, ...] = ()
    #: The folder of the export in the manifest's keys (``<prefix>/AWSDynamoDB/<id>/``).
    folder: str = ""
    export_type: str = "FULL_EXPORT"
    sse: str | None = None
    kms_key: str | None = None

    @property
    def table(self) -> str:
        return table_of(self.table_arn)

    @property
    def export_id(self) -> str:
        return self.arn.rsplit("/", 1)[-1]

    def with_files(self, files: tuple[DataFile, ...]) -> Manifest:
        return Manifest(
            self.arn,
            self.table_arn,
            self.time,
            self.format,
            self.items,
            files,
            self.folder,
            self.export_type,
            self.sse,
            self.kms_key,
        )


def table_of(arn: str) -> str:
    """The table's name in a table ARN (``arn:aws:dynamodb:region:account:table/NAME``)."""
    _, _, rest = arn.partition(":table/")
    return rest.split("/", 1)[0]


def _json(raw: bytes, where: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExportError(
            f"{where} is not JSON ({exc}): not an export's manifest.", where=where
        ) from None


def _text(summary: dict[str, Any], name: str, where: str) -> str:
    value = summary.get(name)
    if not isinstance(value, str) or not value:
        raise ExportError(
            f"{where} has no {name}: not a DynamoDB export's manifest-summary.json.", where=where
        )
    return value


def _time(text: str, where: str) -> datetime:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ExportError(f"{where}: exportTime {text!r} is not a time.", where=where) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def parse_summary(raw: bytes, where: str = SUMMARY) -> Manifest:
    """The export ``manifest-summary.json`` (``raw``) describes, its files not yet read; an
    :class:`ExportError` naming ``where`` for anything that is not a full export's summary."""
    summary = _json(raw, where)
    if not isinstance(summary, dict):
        raise ExportError(f"{where} is not a JSON object: not an export's manifest.", where=where)
    arn, table_arn = _text(summary, "exportArn", where), _text(summary, "tableArn", where)
    if ":table/" not in table_arn:
        raise ExportError(f"{where}: tableArn {table_arn!r} is not a table's ARN.", where=where)
    export_type = summary.get("exportType") or "FULL_EXPORT"
    if export_type != "FULL_EXPORT":
        raise ExportError(
            f"{where} is an {export_type}, the changes between two times: list keys from a "
            "full export (the table at one time), or from the table.",
            where=where,
        )
    fmt = summary.get("outputFormat") or "DYNAMODB_JSON"
    if fmt not in FORMATS:
        raise ExportError(
            f"{where}: outputFormat {fmt!r} is none ddbkeys reads ({', '.join(FORMATS)}).",
            where=where,
        )
    files_key = _text(summary, "manifestFilesS3Key", where)
    folder = files_key.rsplit("/", 1)[0] + "/" if "/" in files_key else ""
    items = summary.get("itemCount")
    return Manifest(
        arn=arn,
        table_arn=table_arn,
        time=_time(_text(summary, "exportTime", where), where),
        format=fmt,
        items=items if isinstance(items, int) and not isinstance(items, bool) else -1,
        folder=folder,
        export_type=export_type,
        sse=summary.get("s3SseAlgorithm") or None,
        kms_key=summary.get("s3SseKmsKeyId") or None,
    )


def parse_files(manifest: Manifest, raw: bytes, where: str = "manifest-files.json") -> Manifest:
    """``manifest`` with the data files ``manifest-files.json`` (``raw``) lists, each by its
    path below the export's folder; an :class:`ExportError` for a line that is not one, or a
    file outside the export's folder."""
    files: list[DataFile] = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ExportError(f"{where} is not text ({exc}).", where=where) from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ExportError(f"{where} line {number} is not JSON ({exc}).", where=where) from None
        key = entry.get("dataFileS3Key") if isinstance(entry, dict) else None
        if not isinstance(key, str) or not key:
            raise ExportError(f"{where} line {number} names no dataFileS3Key.", where=where)
        if not key.startswith(manifest.folder):
            raise ExportError(
                f"{where} line {number}: {key!r} is not in the export's folder "
                f"{manifest.folder!r}.",
                where=where,
            )
        count = entry.get("itemCount")
        files.append(DataFile(key[len(manifest.folder) :], count if isinstance(count, int) else -1))
    _check_total(manifest, files, where)
    return manifest.with_files(tuple(files))


def when(moment: datetime) -> str:
    """A time as the summary says it: ISO 8601 in UTC, to the second or the millisecond."""
    text = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return text.replace(".000Z", "Z")


def _check_total(manifest: Manifest, files: list[DataFile], where: str) -> None:
    """That the files listed hold the items the summary counts (where both say): a files
    manifest cut short would otherwise list a part of the table as if it were all of it."""
    if manifest.items < 0 or any(data.items < 0 for data in files):
        return
    total = sum(data.items for data in files)
    if total != manifest.items:
        raise ExportError(
            f"{where} lists {len(files)} data files holding {total} items where "
            f"{SUMMARY} says {manifest.items}: it is cut short or another export's; copy "
            "the export again.",
            where=where,
        )
