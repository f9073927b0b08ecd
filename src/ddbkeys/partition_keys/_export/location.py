"""Where an export lies, and reading its files: a folder on disk (an ``aws s3 sync`` copy of the
export's folder) or on S3 (``s3://bucket/prefix/AWSDynamoDB/<export id>/``), through a boto3
S3 client. The I/O of reading an export, and nothing else."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import IO, Any, Protocol

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    PartialCredentialsError,
)

from ddbkeys._origins import origin_of
from ddbkeys._translate import one_line
from ddbkeys.partition_keys._export.manifest import SUMMARY, ExportError
from ddbkeys.partition_keys._export.s3body import ResumingBody

__all__ = [
    "DiskExport",
    "ExportFolder",
    "S3Export",
    "export_folder",
    "open_export",
    "s3_client_for",
]

_HOW = (
    "the URI is the export's folder, which holds manifest-summary.json: "
    "s3://BUCKET/PREFIX/AWSDynamoDB/EXPORT_ID/ (`ddbkeys partition-keys export wait` prints it) "
    "or a copy of it on disk"
)


class ExportFolder(Protocol):
    """An export's folder: its files by their path below it."""

    @property
    def uri(self) -> str:
        """The folder, as the user named it (ending in ``/``)."""
        ...

    def read(self, path: str) -> bytes:
        """The whole file at ``path`` (a manifest)."""
        ...

    def open(self, path: str) -> IO[bytes]:
        """The file at ``path`` as a stream (a data file)."""
        ...


@dataclass(frozen=True)
class DiskExport:
    """An export's folder on disk."""

    uri: str
    root: str

    def _path(self, path: str) -> str:
        return os.path.join(self.root, *path.split("/"))

    def read(self, path: str) -> bytes:
        with self.open(path) as stream:
            return stream.read()

    def open(self, path: str) -> IO[bytes]:
        full = self._path(path)
        try:
            return open(full, "rb")
        except FileNotFoundError:
            below = self.exports_below() if path == SUMMARY else []
            if full.endswith(".gz") and os.path.isfile(full[:-3]):
                raise ExportError(
                    f"{full} is missing, but {os.path.basename(full[:-3])} is beside it: the "
                    "data files are read gzip-compressed, as the export wrote them (copy them "
                    "again, or gzip them back).",
                    where=self.uri + path,
                ) from None
            raise ExportError(
                f"{full} is missing: {_missing(path, below)}", where=self.uri + path
            ) from None
        except OSError as exc:
            raise ExportError(f"{full} cannot be read: {exc}.", where=self.uri + path) from None

    def exports_below(self) -> list[str]:
        """The exports' folders in this folder's ``AWSDynamoDB/`` (or in it, when it is that
        folder), by name: by the time each export began."""
        base = self.root if _is_exports_parent(self.uri) else self._path(_PARENT)
        try:
            names = sorted(os.listdir(base))
        except OSError:
            return []
        found = [n for n in names if os.path.isfile(os.path.join(base, n, SUMMARY))]
        return [_child(self.uri, _is_exports_parent(self.uri), name) for name in found]


#: The folder below an export's prefix that holds its exports, one folder each.
_PARENT = "AWSDynamoDB"


def _is_exports_parent(uri: str) -> bool:
    return uri.rstrip("/").rsplit("/", 1)[-1] == _PARENT


def _child(uri: str, in_parent: bool, name: str) -> str:
    return f"{uri}{name}/" if in_parent else f"{uri}{_PARENT}/{name}/"


def _missing(path: str, below: tuple[str, ...] | list[str] = ()) -> str:
    if path == SUMMARY and len(below) == 1:
        return f"not an export's folder, but it holds one: pass {below[0]}"
    if path == SUMMARY and below:
        return (
            f"not an export's folder, but it holds {len(below)} exports: pass one, "
            f"the latest is {below[-1]}"
        )
    if path == SUMMARY:
        return f"not an export's folder ({_HOW})."
    return "the manifest names it but the export does not hold it (copy the export again)."


@dataclass(frozen=True)
class S3Export:
    """An export's folder on S3, read with ``s3`` (a boto3 S3 client)."""

    uri: str
    bucket: str
    prefix: str  # ends with "/", or is ""
    s3: Any

    def _get(self, path: str) -> Any:
        """GetObject of ``path``: its answer, or an ExportError saying why not."""
        key = self.prefix + path
        where = f"s3://{self.bucket}/{key}"
        try:
            return self.s3.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            raise self._refused(path, exc) from None
        except (NoCredentialsError, PartialCredentialsError):
            raise ExportError(
                f"{where} could not be read: no AWS credentials for S3. Set AWS_PROFILE or pass "
                "profile=, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or copy the "
                "export to disk with aws s3 sync and pass the folder).",
                where=where,
            ) from None
        except BotoCoreError as exc:
            raise ExportError(f"{where} could not be read: {one_line(exc)}", where=where) from None

    def _refused(self, path: str, exc: ClientError) -> ExportError:
        """What S3's refusal ``exc`` of GetObject ``path`` means, in a line."""
        code = exc.response.get("Error", {}).get("Code", "")
        where = f"s3://{self.bucket}/{self.prefix}{path}"
        if code in ("NoSuchKey", "404", "NotFound"):
            below = self.exports_below() if path == SUMMARY else []
            return ExportError(f"{where} is missing: {_missing(path, below)}", where=where)
        if code == "NoSuchBucket":
            return ExportError(f"There is no bucket {self.bucket!r}: {_HOW}.", where=where)
        if code in ("AccessDenied", "403"):
            return ExportError(
                f"{where}: access denied; reading an export takes s3:GetObject on its "
                "objects, and kms:Decrypt on its KMS key when its manifest-summary.json "
                "names s3SseAlgorithm KMS.",
                where=where,
            )
        if code in ("PreconditionFailed", "412"):
            return ExportError(
                f"{where} changed while it was read (its ETag is another): run the command "
                "again on an export that is not written over.",
                where=where,
            )
        return ExportError(f"{where}: {code or one_line(exc)}.", where=where)

    def _rest(self, path: str, offset: int, etag: str | None) -> Any:
        """The body of ``path`` from byte ``offset``, if it is still the object of ``etag``;
        a broken connection is raised as it is (:class:`ResumingBody` tries again)."""
        extra = {"Range": f"bytes={offset}-"} | ({"IfMatch": etag} if etag else {})
        try:
            return self.s3.get_object(Bucket=self.bucket, Key=self.prefix + path, **extra)["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "InvalidRange":
                return io.BytesIO(b"")  # (it broke at the very end: nothing is left)
            raise self._refused(path, exc) from None

    def exports_below(self) -> list[str]:
        """The exports' folders in this folder's ``AWSDynamoDB/`` (or in it, when it is that
        folder), by name (ListObjectsV2, which takes s3:ListBucket; none when refused)."""
        in_parent = _is_exports_parent(self.uri)
        base = self.prefix if in_parent else f"{self.prefix}{_PARENT}/"
        try:
            pages = self.s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=base, Delimiter="/", PaginationConfig={"MaxItems": 1000}
            )
            names = [
                common["Prefix"][len(base) :].rstrip("/")
                for page in pages
                for common in page.get("CommonPrefixes", [])
            ]
        except (ClientError, BotoCoreError):
            return []
        return [_child(self.uri, in_parent, name) for name in sorted(names) if name]

    def read(self, path: str) -> bytes:
        with self.open(path) as stream:
            return stream.read()

    def open(self, path: str) -> IO[bytes]:
        """The object's body as it streams; where the connection breaks, the rest of the same
        object is asked for (see :class:`ResumingBody`)."""
        first = self._get(path)
        bodies, etag = [first["Body"]], first.get("ETag")

        def body_at(offset: int) -> Any:
            return bodies.pop() if bodies else self._rest(path, offset, etag)

        where = f"s3://{self.bucket}/{self.prefix}{path}"
        return io.BufferedReader(ResumingBody(body_at, where), buffer_size=1 << 16)


#: The files that name their folder when a URI names them.
_MANIFESTS = (SUMMARY, "manifest-files.json")


def export_folder(uri: str, s3: Any = None) -> ExportFolder:
    """The export at ``uri``: ``s3://bucket/prefix/`` (read with ``s3``, a boto3 S3 client,
    made by the caller when needed) or a path on disk (``file://`` or plain). A URI naming
    ``manifest-summary.json`` itself stands for its folder."""
    if not isinstance(uri, str) or not uri:
        raise ExportError(f"from_export must be a URI or a path, not {uri!r}: {_HOW}.")
    if uri.startswith("s3://"):
        bucket, _, prefix = uri[len("s3://") :].partition("/")
        if not bucket:
            raise ExportError(f"{uri!r} names no bucket: {_HOW}.", where=uri)
        if prefix.rsplit("/", 1)[-1] in _MANIFESTS:
            prefix = prefix.rsplit("/", 1)[0] + "/" if "/" in prefix else ""
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        return S3Export(f"s3://{bucket}/{prefix}", bucket, prefix, s3)
    if "://" in uri and not uri.startswith("file://"):
        raise ExportError(f"{uri!r} is neither s3:// nor a path on disk: {_HOW}.", where=uri)
    root = os.path.expanduser(uri[len("file://") :] if uri.startswith("file://") else uri)
    if os.path.basename(root.rstrip("/")) in _MANIFESTS:
        root = os.path.dirname(root.rstrip("/")) or "."
    if not os.path.isdir(root):
        raise ExportError(f"{root} is not a folder: {_HOW}.", where=uri)
    root = os.path.abspath(root)  # (the summary and --output json name it wherever run)
    return DiskExport(root.rstrip("/") + "/", root)


def s3_client_for(client: Any) -> Any:
    """An S3 client in ``client``'s region, from the session ddbkeys made it from (else
    boto3's default session): its endpoint is S3's, or ``AWS_ENDPOINT_URL_S3`` where set."""
    import boto3  # noqa: PLC0415 (only for an export on S3)

    origin = origin_of(client)
    session = origin.session if origin is not None else (boto3.DEFAULT_SESSION or boto3.Session())
    return session.client("s3", region_name=client.meta.region_name)


def open_export(uri: str, s3: Any, client: Any) -> ExportFolder:
    """The export at ``uri`` (see :func:`export_folder`), on S3 read with ``s3`` or, when None,
    an S3 client like ``client`` (:func:`s3_client_for`)."""
    if s3 is None and isinstance(uri, str) and uri.startswith("s3://"):
        s3 = s3_client_for(client)
    return export_folder(uri, s3)
