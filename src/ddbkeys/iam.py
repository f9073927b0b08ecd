"""Least-privilege IAM policies: exactly the DynamoDB actions each ddbkeys command calls, on the
one table (and, where it reads or changes it, the one marker index) it works on, the marker
index's record in the state table (``ddbkeys-state``), the table's stream, and its exports. One
entry is not a command: ``lambda-handler``, the role of the Lambda function that keeps the marker
index (``deploy/marker-handler.yaml`` grants the same, and its function's logs), which also reads
its own trigger (``lambda:ListEventSourceMappings``).

The catalog below is checked by the tests against the requests each command really sends (a
proxy records every operation with its table and index), so it cannot promise less than the
command needs or grant more than it uses; the S3 requests of a listing from an export are
checked the same way, through a proxy in front of an S3 endpoint. The S3 writes of an export are
DynamoDB's own, inside AWS, and kms:Decrypt needs a real key: those are AWS's documented
actions, on the export's folder only (``PREFIX/AWSDynamoDB/*``, where AWS writes every object
of an export).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from ddbkeys._errors import ConfigurationError
from ddbkeys._names import DEFAULT_INDEX, STATE_TABLE
from ddbkeys._schema import check_table_name

__all__ = ["COMMANDS", "OWN_TABLES", "Need", "needs", "policy"]

On = Literal[
    "table", "index", "state", "stream", "streams", "triggers", "export", "bucket", "objects", "key"
]
#: The service of each place's actions, where it is not DynamoDB.
SERVICES: dict[On, str] = {"triggers": "lambda", "bucket": "s3", "objects": "s3", "key": "kms"}


@dataclass(frozen=True, order=True)
class Need:
    """One DynamoDB action on the table itself, its marker index, the state table (where the
    evidence for the index lives), the table's stream, every stream ("streams": ListStreams,
    which IAM only grants on ``*``), or the table's exports ("export": DescribeExport, on
    ``table/T/export/*``); one Lambda action on every event source mapping ("triggers":
    ListEventSourceMappings, which takes no resource type in the Service Authorization
    Reference, so IAM grants it on ``*`` only); one S3 action on an export's bucket ("bucket":
    ListBucket, for the export's folder only) or on the objects of its folder ("objects"); or
    kms:Decrypt on the export's KMS key ("key", only when the export was encrypted with one)."""

    action: str
    on: On = "table"


def _n(*actions: str, on: On = "table") -> frozenset[Need]:
    return frozenset(Need(a, on) for a in actions)


#: What making sure the state table exists calls (CreateTable only the first time, anywhere).
ENSURE = ("DescribeTable", "CreateTable")
#: Reading the table's stream, shard by shard.
STREAM_READS = ("DescribeStream", "GetShardIterator", "GetRecords")
#: What a listing that proves the marker index reads besides the index and the maintainer's
#: record of how far it got in each shard (in the state table): the stream from those
#: positions, and each collection a record there names (a consistent Query).
REPLAY = _n("Query") | _n(*STREAM_READS, on="stream")
#: What DynamoDB writes an export with, on the caller's permissions (AWS: "Requesting a table
#: export in DynamoDB", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/
#: S3DataExport_Requesting.html, names these three S3 actions).
EXPORT_WRITES = _n("AbortMultipartUpload", "PutObject", "PutObjectAcl", on="objects")
#: What a listing from an export reads of it: its manifests and data files (GetObject) and, so
#: that a missing one is "not found" rather than "access denied", the folder's listing; and
#: kms:Decrypt on its key when its manifest names SSE-KMS.
EXPORT_READS = (
    _n("GetObject", on="objects") | _n("ListBucket", on="bucket") | _n("Decrypt", on="key")
)

# command -> variant -> what it calls. The variant is the option that changes the calls
# (--strategy for `ids put`, --method for `partition-keys`, --partition-key for `ids audit`);
# "" is the only variant of the others. IAM has no action for a transaction: each of its
# actions needs the permission of the request it stands for (an Update needs
# dynamodb:UpdateItem, a Put dynamodb:PutItem, a ConditionCheck dynamodb:ConditionCheckItem).
COMMANDS: dict[str, dict[str, frozenset[Need]]] = {
    # An increment refused because the counter holds no number says what it holds from the
    # refusal itself (ReturnValuesOnConditionCheckFailure): no read.
    "ids next": {"": _n("DescribeTable", "UpdateItem")},
    "ids current": {"": _n("DescribeTable", "GetItem")},
    "ids set": {"": _n("DescribeTable", "UpdateItem")},
    "ids put": {
        # (Scan: one page of at most 50 items as a sequence begins, for the note that the
        # table's items hold ids of another sequence already; without it, no note)
        "gapless": _n("DescribeTable", "GetItem", "PutItem", "UpdateItem", "Scan"),
        "collection": _n("DescribeTable", "Query", "PutItem"),
    },
    "ids audit": {
        "attribute": _n("Scan"),
        "collection": _n("DescribeTable", "Query"),
    },
    "partition-keys": {
        "auto": _n("DescribeTable", "Scan")
        | _n("Scan", on="index")
        | _n("GetItem", on="state")
        | REPLAY,
        "scan": _n("DescribeTable", "Scan"),
        "skip": _n("DescribeTable", "Scan"),
        "skip-pages": _n("DescribeTable", "Scan"),
        "index": _n("DescribeTable") | _n("Scan", on="index") | _n("GetItem", on="state") | REPLAY,
        # --from-export: the export's files, then (exact now) the stream since the export's
        # time and a consistent Query of each collection it names.
        "from-export": _n("DescribeTable") | REPLAY | EXPORT_READS,
    },
    # The estimate's sample of the table and, where the table has a marker index, what
    # `index status` reads (the index's record and the stream): never the index itself.
    "partition-keys estimate": {
        "": _n("DescribeTable", "Scan") | _n("GetItem", on="state") | _n(*STREAM_READS, on="stream")
    },
    # The method settled once (auto's choice, the index's proof: its replay) and the estimate.
    "partition-keys plan": {"": _n("DescribeTable", "Scan") | _n("GetItem", on="state") | REPLAY},
    # A worker reads its task's part of the table, or of the index (the plan proved it).
    "partition-keys run-task": {
        "scan": _n("DescribeTable", "Scan"),
        "skip": _n("DescribeTable", "Scan"),
        "skip-pages": _n("DescribeTable", "Scan"),
        "index": _n("DescribeTable") | _n("Scan", on="index"),
    },
    # ExportTableToPointInTime names the table by its ARN (read with DescribeTable).
    "partition-keys export start": {
        "": _n("DescribeTable", "ExportTableToPointInTime") | EXPORT_WRITES
    },
    "partition-keys export wait": {"": _n("DescribeExport", on="export")},
    # It first reads the estimate's sample of the table (what the markers would add).
    "partition-keys index create": {"": _n("DescribeTable", "Scan", "UpdateTable")},
    # Both read the index's record first: how the index knows its markers.
    "partition-keys index mark": {"": _n("DescribeTable", "PutItem") | _n("GetItem", on="state")},
    "partition-keys index unmark": {
        "": _n("DescribeTable", "DeleteItem") | _n("GetItem", on="state")
    },
    # A backfill reconciles each collection (a consistent Query, then a put or a delete, and
    # the Query again), and reads the maintainer's record before writing its own. From an
    # export (--from-export) it reads the export instead of the table: the markers it calls
    # for put and the orphans deleted, each conditionally, then the stream since the export's
    # time, each collection it names reconciled.
    "partition-keys index backfill": {
        "table": _n("DescribeTable", "Scan", "Query", "PutItem", "DeleteItem")
        | _n(*ENSURE, "GetItem", "UpdateItem", on="state"),
        "from-export": _n("DescribeTable", "Query", "PutItem", "DeleteItem")
        | _n(*ENSURE, "GetItem", "UpdateItem", on="state")
        | _n(*STREAM_READS, on="stream")
        | EXPORT_READS,
    },
    "partition-keys index stream": {"": _n("DescribeTable", "UpdateTable")},
    "partition-keys index follow": {
        "": _n("DescribeTable", "Query", "GetItem", "PutItem", "DeleteItem")
        | _n(*ENSURE, "GetItem", "UpdateItem", on="state")
        | _n(*STREAM_READS, on="stream")
    },
    # From an export (--from-export) it reads neither the table nor the index: the export's
    # files, and the stream since the export's time (the collections changed after it).
    # It reads the index's record first: how the index knows its markers.
    "partition-keys index verify": {
        "table": _n("DescribeTable", "Scan", "Query", "GetItem")
        | _n("Scan", on="index")
        | _n("GetItem", on="state"),
        "from-export": _n("DescribeTable") | _n(*STREAM_READS, on="stream") | EXPORT_READS,
    },
    # Repair also reads the clashes a maintainer recorded, and takes out those resolved.
    "partition-keys index repair": {
        "": _n("DescribeTable", "Scan", "Query", "GetItem", "PutItem", "DeleteItem")
        | _n("Scan", on="index")
        | _n("GetItem", "UpdateItem", on="state")
    },
    # The index deleted, then the markers found by a Scan of the table and deleted; first the
    # index's record, to note a maintainer (which stops by itself once the index is gone).
    "partition-keys index drop": {
        "": _n("DescribeTable", "UpdateTable", "Scan", "DeleteItem") | _n("GetItem", on="state")
    },
    # What a listing reads to prove the index, and no more: never the table, nothing written.
    "partition-keys index status": {
        "": _n("DescribeTable") | _n("GetItem", on="state") | _n(*STREAM_READS, on="stream")
    },
    "demo": {
        "": _n(
            "CreateTable",
            "DescribeTable",
            "DeleteTable",
            "UpdateTable",
            "GetItem",
            "PutItem",
            "UpdateItem",
            "BatchWriteItem",
            "DeleteItem",
            "Query",
            "Scan",
        )
        | _n("Scan", on="index")
        | _n(*STREAM_READS, on="stream")
    },
    # Not a command: the role of the Lambda function that runs the marker handler. What the
    # handler calls, and what Lambda's poller calls with the function's role to read the stream
    # (ListStreams among them); and lambda:ListEventSourceMappings, the handler's check that its
    # trigger hands it a shard's batches in order. deploy/marker-handler.yaml grants exactly
    # these, and logs.
    "lambda-handler": {
        "": _n("DescribeTable", "Query", "GetItem", "PutItem", "DeleteItem")
        | _n(*ENSURE, "GetItem", "UpdateItem", on="state")
        | _n(*STREAM_READS, on="stream")
        | _n("ListStreams", on="streams")
        | _n("ListEventSourceMappings", on="triggers")
    },
}


# Commands that make their own tables: the policy covers the tables of that name pattern. The
# demo's tables are "ddbkeys-demo-" and 12 hex digits; "?" matches one character each, so the
# pattern does not also match the tables' indexes, as "*" would (it matches "/" too).
OWN_TABLES = {"demo": "ddbkeys-demo-" + "?" * 12}


def _command(words: str | Iterable[str]) -> str:
    """The catalog's name for ``words`` ("ids put", or ["ids", "put"]); an error if unknown."""
    command = " ".join(" ".join([words] if isinstance(words, str) else words).split())
    if command.startswith("ddbkeys "):
        command = command[len("ddbkeys ") :]
    if command not in COMMANDS:
        raise ConfigurationError(
            f"No IAM policy for {command!r}: ddbkeys knows "
            + ", ".join(repr(c) for c in COMMANDS)
            + " (`ddbkeys local` needs no AWS)."
        )
    return command


def needs(command: str | Iterable[str], variant: str | None = None) -> frozenset[Need]:
    """What ``command`` calls; ``variant`` picks among its variants (all of them when None)."""
    return _needs(_command(command), variant)


def _needs(name: str, variant: str | None) -> frozenset[Need]:
    variants = COMMANDS[name]
    if variant is None or variant == "":
        return frozenset().union(*variants.values())
    if variant not in variants:
        named = [repr(v) for v in variants if v]
        raise ConfigurationError(
            f"{name!r} has no variant {variant!r}; "
            + (f"it has {', '.join(named)}." if named else "it has none: leave --variant out.")
        )
    return variants[variant]


def policy(
    command: str | Iterable[str],
    table: str | None,
    *,
    variant: str | None = None,
    index_name: str = DEFAULT_INDEX,
    state_table: str = STATE_TABLE,
    region: str = "*",
    account_id: str = "*",
    partition: str = "aws",
    s3_bucket: str | None = None,
    s3_prefix: str | None = None,
    kms_key: str | None = None,
) -> dict[str, Any]:
    """The IAM policy document (a dict, ready for ``json.dumps``) that lets ``command`` run on
    ``table``, with one statement for each place it acts on: the table, the marker index, the
    state table, the table's streams, ``*`` for ListStreams (which names no stream), ``*``
    for lambda:ListEventSourceMappings (which takes no resource), the table's exports, and an
    export's S3 folder ``s3_bucket``/``s3_prefix``/``AWSDynamoDB/`` (its objects, and listing the
    bucket under it only). ``kms_key``: the ARN of the KMS key an export was encrypted with
    (its manifest's ``s3SseKmsKeyId``), for kms:Decrypt; without it, none is granted.
    ``table`` is None for a command that makes its own tables (``demo``). The S3 statements need
    ``s3_bucket``; without it, a policy of every variant leaves them out."""
    name = _command(command)
    wanted = _needs(name, variant)
    if name in OWN_TABLES:
        if table is not None:
            raise ConfigurationError(
                f"`ddbkeys {name}` makes its own tables, named {OWN_TABLES[name]}, and deletes "
                "them afterwards: leave out --table-name."
            )
        table = OWN_TABLES[name]
    elif table is None:
        raise ConfigurationError(f"`ddbkeys {name}` works on one table: give --table-name.")
    else:
        check_table_name(table)
    if not re.fullmatch(r"[a-z0-9-]+|\*", region):
        raise ConfigurationError(f"{region!r} is not an AWS region (for example eu-west-1).")
    if not re.fullmatch(r"\d{12}|\*", account_id):
        raise ConfigurationError(f"{account_id!r} is not a 12-digit AWS account id.")
    wanted = _with_s3(name, variant, wanted, s3_bucket, kms_key)
    arn = f"arn:{partition}:dynamodb:{region}:{account_id}:table/{table}"
    statements: list[dict[str, Any]] = []
    check_table_name(state_table)
    state_arn = f"arn:{partition}:dynamodb:{region}:{account_id}:table/{state_table}"
    folder = _export_folder(s3_prefix)
    places: list[tuple[On, str, str]] = [
        ("table", arn, "Table"),
        ("index", f"{arn}/index/{index_name}", "MarkerIndex"),
        ("state", state_arn, "MarkerIndexRecord"),
        ("stream", f"{arn}/stream/*", "Stream"),
        ("streams", "*", "Streams"),
        ("triggers", "*", "Triggers"),
        ("export", f"{arn}/export/*", "TableExports"),
        ("bucket", f"arn:{partition}:s3:::{s3_bucket}", "ExportBucket"),
        ("objects", f"arn:{partition}:s3:::{s3_bucket}/{folder}*", "ExportObjects"),
        ("key", str(kms_key), "ExportKey"),
    ]
    for on, resource, sid in places:
        service = SERVICES.get(on, "dynamodb")
        actions = sorted(f"{service}:{n.action}" for n in wanted if n.on == on)
        if actions:
            statement: dict[str, Any] = {
                "Sid": f"Ddbkeys{sid}",
                "Effect": "Allow",
                "Action": actions,
                "Resource": resource,
            }
            if on == "bucket":  # (ListBucket: only the keys under the export's folder)
                statement["Condition"] = {"StringLike": {"s3:prefix": [f"{folder}*"]}}
            statements.append(statement)
    return {"Version": "2012-10-17", "Statement": statements}


def _with_s3(
    name: str,
    variant: str | None,
    wanted: frozenset[Need],
    s3_bucket: str | None,
    kms_key: str | None,
) -> frozenset[Need]:
    """``wanted`` as the S3 and KMS arguments allow: the S3 needs need a bucket (a policy of
    every variant leaves them out without one), kms:Decrypt a key (without one, the export is
    taken to be encrypted by S3's own keys, which need no grant)."""
    aside = {"bucket", "objects", "key"}
    if kms_key is not None and not any(n.on == "key" for n in wanted):
        raise ConfigurationError(
            f"`ddbkeys {name}` decrypts nothing with KMS: leave out --kms-key (it is for the "
            "variants from-export of partition-keys and index backfill)."
        )
    if s3_bucket is None:
        every_way = all(any(n.on in aside for n in v) for v in COMMANDS[name].values())
        if any(n.on in aside - {"key"} for n in wanted) and (variant or every_way):
            raise ConfigurationError(
                f"`ddbkeys {name}`"
                + (f" ({variant})" if variant else "")
                + " reads or writes an export in S3: give --s3-bucket (and --s3-prefix)."
            )
        return frozenset(n for n in wanted if n.on not in aside)
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", s3_bucket):
        raise ConfigurationError(f"{s3_bucket!r} is not an S3 bucket name.")
    if kms_key is None:
        return frozenset(n for n in wanted if n.on != "key")
    if not re.fullmatch(r"arn:[\w-]+:kms:[a-z0-9-]+:\d{12}:key/[\w-]+", kms_key):
        raise ConfigurationError(
            f"{kms_key!r} is not a KMS key's ARN (arn:aws:kms:REGION:ACCOUNT:key/ID, the "
            "export manifest's s3SseKmsKeyId)."
        )
    return wanted


def _export_folder(s3_prefix: str | None) -> str:
    """``PREFIX/AWSDynamoDB/``: where AWS writes every object of an export (see
    :attr:`ddbkeys.partition_keys.TableExport.uri`)."""
    prefix = (s3_prefix or "").strip("/")
    if any(c in prefix for c in "*?"):
        raise ConfigurationError(f"An S3 prefix with * or ? ({s3_prefix!r}) cannot be granted.")
    return f"{prefix}/AWSDynamoDB/" if prefix else "AWSDynamoDB/"
