"""An export of a DynamoDB table written by hand, in AWS's layout, for tables that cannot be
exported (DynamoDB Local has no ExportTableToPointInTime): :func:`write_export`.

The layout is AWS's ("DynamoDB table export output format", https://docs.aws.amazon.com/
amazondynamodb/latest/developerguide/S3DataExport.Output.html), in a folder standing for the
bucket: ``<prefix>/AWSDynamoDB/<export id>/`` holds ``_started``, ``manifest-summary.json``,
``manifest-files.json`` and ``data/<name>.json.gz`` (or ``.ion.gz``). The manifests' keys are
relative to the bucket's root, as AWS writes them. (AWS also writes a ``.checksum`` beside each
manifest, whose content its page does not give: none is written here.)
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import secrets
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._clients import as_client
from ddbkeys._errors import ConfigurationError
from ddbkeys._translate import raise_translated
from ddbkeys.testing._export_lines import EXTENSIONS, FORMATS, ExportFormat, Item, line_of

__all__ = ["ExportLayout", "Spread", "export_time_text", "write_export", "write_export_files"]

Spread = Literal["round_robin", "hash"]
_SPREADS: tuple[Spread, ...] = ("round_robin", "hash")


def export_time_text(moment: datetime) -> str:
    """A time as the manifests write it: UTC, to the millisecond (cut, never rounded up)."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ExportLayout:
    """Where an export goes and what its summary says of the table and the time."""

    folder: Path  # the bucket's root
    table_arn: str
    table_id: str
    export_time: datetime
    fmt: ExportFormat = "DYNAMODB_JSON"
    prefix: str = "exports"
    bucket: str = ""
    export_id: str = ""

    def __post_init__(self) -> None:
        if not self.export_id:  # AWS's shape: the time in ms (14 digits), then 8 hex digits
            millis = int(self.export_time.timestamp() * 1000)
            object.__setattr__(self, "export_id", f"{millis:014d}-{secrets.token_hex(4)}")

    @property
    def key(self) -> str:
        """The export's folder as a key in the bucket: ``<prefix>/AWSDynamoDB/<id>/``."""
        prefix = self.prefix.strip("/")
        return (f"{prefix}/" if prefix else "") + f"AWSDynamoDB/{self.export_id}/"

    @property
    def path(self) -> Path:
        return self.folder.joinpath(*self.key.strip("/").split("/"))


def _key_bytes(key: Mapping[str, Any]) -> bytes:
    ((kind, value),) = key.items()
    return kind.encode() + (bytes(value) if kind == "B" else str(value).encode("utf-8"))


def _file_name() -> str:
    return base64.b32encode(secrets.token_bytes(16)).decode("ascii").rstrip("=").lower()


def _md5s(path: Path) -> tuple[str, str]:
    """A file's md5 in base64 (``md5Checksum``) and the ETag S3 gives it uploaded in one part
    of a multipart upload (the md5 of the part's md5, then ``-1``), as the page shows."""
    digest = hashlib.md5()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    etag = hashlib.md5(digest.digest()).hexdigest() + "-1"
    return base64.b64encode(digest.digest()).decode("ascii"), etag


def write_export_files(
    layout: ExportLayout,
    items: Iterable[Item],
    *,
    partition_key: str,
    files: int = 1,
    spread: Spread = "round_robin",
    billed_size_bytes: int = 0,
    clock: Callable[[], datetime] = _now,
) -> str:
    """``items`` written as an export in ``layout`` over ``files`` data files (each item to the
    next file in turn, or by a hash of its ``partition_key``); returns the export's folder."""
    path = layout.path
    (path / "data").mkdir(parents=True, exist_ok=True)
    (path / "_started").write_bytes(b"")
    ext = EXTENSIONS[layout.fmt]
    keys = [f"{layout.key}data/{_file_name()}.{ext}.gz" for _ in range(files)]
    counts = [0] * files
    streams = [gzip.GzipFile(layout.folder / key, "wb", mtime=0) for key in keys]
    try:
        for number, item in enumerate(items):
            if spread == "hash":
                which = _key_bytes(item[partition_key])
                at = int.from_bytes(hashlib.md5(which).digest()[:8], "big") % files
            else:
                at = number % files
            streams[at].write(line_of(item, layout.fmt).encode("utf-8") + b"\n")
            counts[at] += 1
    finally:
        for stream in streams:
            stream.close()
    entries = []
    for key, count in zip(keys, counts, strict=True):
        md5, etag = _md5s(layout.folder / key)
        entries.append({"itemCount": count, "md5Checksum": md5, "etag": etag, "dataFileS3Key": key})
    (path / "manifest-files.json").write_text("".join(json.dumps(e) + "\n" for e in entries))
    moment = export_time_text(layout.export_time)
    summary = {
        "version": "2020-06-30",
        "exportArn": f"{layout.table_arn}/export/{layout.export_id}",
        "startTime": moment,
        "endTime": export_time_text(clock()),
        "tableArn": layout.table_arn,
        "tableId": layout.table_id,
        "exportTime": moment,
        "s3Bucket": layout.bucket or layout.folder.name,
        "s3Prefix": layout.prefix.strip("/") or None,
        "s3SseAlgorithm": "AES256",
        "s3SseKmsKeyId": None,
        "manifestFilesS3Key": f"{layout.key}manifest-files.json",
        "billedSizeBytes": billed_size_bytes,
        "itemCount": sum(counts),
        "outputFormat": layout.fmt,
        "exportType": "FULL_EXPORT",
    }
    (path / "manifest-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return str(path) + os.sep


def _scan(client: Any, table: str) -> Iterator[Item]:
    """Every item of ``table``, by a strongly consistent Scan, page after page."""
    request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        try:
            page = client.scan(**request)
        except (ClientError, BotoCoreError) as exc:
            raise_translated(exc, table=table)
        yield from page.get("Items", [])
        if not page.get("LastEvaluatedKey"):
            return
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _check(export_format: str, files: int, spread: str) -> None:
    if export_format not in FORMATS:
        raise ConfigurationError(
            f"export_format={export_format!r}: an export is written in one of {', '.join(FORMATS)}."
        )
    if not isinstance(files, int) or isinstance(files, bool) or files < 1:
        raise ConfigurationError(f"files={files!r}: an export has at least one data file.")
    if spread not in _SPREADS:
        raise ConfigurationError(f"spread={spread!r}: items are spread by one of {_SPREADS}.")


def write_export(
    client: object,
    table: str | None,
    folder: str | os.PathLike[str],
    *,
    export_format: ExportFormat = "DYNAMODB_JSON",
    prefix: str = "exports",
    files: int = 1,
    spread: Spread = "round_robin",
    s3_bucket: str | None = None,
    clock: Callable[[], datetime] | None = None,
) -> str:
    """Write an export of ``table`` in AWS's layout into ``folder``, as into a bucket whose
    root is ``folder``, for tables AWS cannot export (DynamoDB Local); return the export's
    folder (``folder/<prefix>/AWSDynamoDB/<export id>/``), what ``from_export`` and
    ``--from-export`` take.

    ``client`` is a boto3 DynamoDB client, a resource or one of its Tables (then ``table`` may
    be None). The items are read by a strongly consistent Scan (``ConsistentRead``, every
    page: it costs what a consistent scan of the table costs) and written in ``export_format``
    (``"DYNAMODB_JSON"`` or ``"ION"``; writing Ion needs no extra package) over ``files``
    gzip-compressed data files: ``spread="round_robin"`` sends each item to the next file in
    turn, so a collection lands in several files (as a collection split over partitions does
    in AWS's exports); ``spread="hash"`` sends each item by a hash of its partition key, so a
    collection lands in one file (as AWS spreads a partition's keyspace). Data files are
    written even when empty (AWS writes one per partition, empty or not).

    The manifest's ``exportTime`` (and ``startTime``) is read from ``clock`` (by default the
    system's, in UTC) just before the scan's first request, cut to the millisecond: the export
    is the table exactly as of that time **only if nothing was written to the table during the
    scan**; a write made during the scan may or may not be in it, as with any scan.
    ``endTime`` is read once the files are written. ``tableArn``, ``tableId`` and
    ``billedSizeBytes`` (the table's size) come from DescribeTable; ``s3Bucket`` is
    ``s3_bucket`` (by default the folder's name).
    """
    _check(export_format, files, spread)
    clock = clock or _now
    resolved, name = as_client(client, table)
    if not name:
        raise ConfigurationError("write_export needs a table: pass its name, or a Table.")
    try:
        described = resolved.describe_table(TableName=name)["Table"]
    except (ClientError, BotoCoreError) as exc:
        raise_translated(exc, table=name)
    table_arn = described.get("TableArn") or f"arn:aws:dynamodb:ddblocal:000000000000:table/{name}"
    hash_key = next(k["AttributeName"] for k in described["KeySchema"] if k["KeyType"] == "HASH")
    root = Path(folder)
    layout = ExportLayout(
        folder=root,
        table_arn=table_arn,
        table_id=described.get("TableId") or str(uuid.uuid4()),
        export_time=clock(),
        fmt=export_format,
        prefix=prefix,
        bucket=s3_bucket or root.resolve().name,
    )
    return write_export_files(
        layout,
        _scan(resolved, name),
        partition_key=hash_key,
        files=files,
        spread=spread,
        billed_size_bytes=int(described.get("TableSizeBytes", 0)),
        clock=clock,
    )
