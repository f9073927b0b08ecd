"""What ddbkeys needs to know about a table, read by name from DescribeTable, never by position;
and the checks of names and key values that every public call makes before it writes anything
(an item's values: :mod:`ddbkeys._attributes`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._attributes import (
    MAX_DIGITS,
    MAX_NESTING,
    check_name,
    from_attributes,
    is_dynamodb_json,
    looks_typed,
    serialize_plain,
    show_value,
    to_attributes,
)
from ddbkeys._core.steps import Flow, describe_table
from ddbkeys._errors import ConfigurationError, KeySchemaError, unexpected_answer
from ddbkeys._translate import raise_translated

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = [  # (with the conversions of ddbkeys._attributes, imported from here before)
    "MAX_DIGITS",
    "MAX_NESTING",
    "KeyAttribute",
    "TableInfo",
    "check_name",
    "check_table_name",
    "describe",
    "describe_flow",
    "described",
    "from_attributes",
    "is_dynamodb_json",
    "looks_typed",
    "serialize_plain",
    "show_value",
    "table_info",
    "to_attributes",
]

_TABLE_NAME = re.compile(r"^[a-zA-Z0-9_.-]{3,255}$")
#: What DynamoDB accepts as a table's name, as a message says it.
TABLE_NAME_RULE = "3 to 255 characters of a-z, A-Z, 0-9, '_', '-' and '.'"


@dataclass(frozen=True)
class KeyAttribute:
    """A key attribute: its name and its type, S, N or B."""

    name: str
    type: str


@dataclass(frozen=True)
class TableInfo:
    """The key schema of a table (and of its indexes) and whether it has replicas elsewhere."""

    name: str
    partition_key: KeyAttribute
    sort_key: KeyAttribute | None
    replica_regions: tuple[str, ...]
    index_projections: Mapping[str, str]
    item_count: int
    size_bytes: int
    index_sizes: Mapping[str, int] = field(default_factory=dict)  # IndexSizeBytes by name
    #: IndexStatus by index name (ACTIVE, CREATING, UPDATING, DELETING) when described.
    index_statuses: dict[str, str] = field(default_factory=dict)
    #: The partition (HASH) key attribute of each global secondary index, by index name.
    index_hash_keys: Mapping[str, str] = field(default_factory=dict)
    #: The table's stream (its LatestStreamArn) while the stream is on, else None.
    stream_arn: str | None = None
    #: When the table was created (DescribeTable's CreationDateTime, ISO 8601; "" if unknown):
    #: a table deleted and created again under the same name is another table.
    created: str = ""
    #: Its ARN (DescribeTable's TableArn; "" if unknown): the region and account it is in.
    arn: str = ""
    #: Its read capacity as DescribeTable tells it: the billing mode, the provisioned read
    #: units, on demand the most read units a second (OnDemandThroughput, None when unset)
    #: and the warm throughput's read units a second (None when not told).
    billing_mode: str = "PROVISIONED"
    provisioned_reads: float | None = None
    max_reads: float | None = None
    warm_reads: float | None = None
    #: The sort (RANGE) key attribute of each global secondary index that has one, by index
    #: name (a marker index has none: helper-95 F5).
    index_range_keys: Mapping[str, str] = field(default_factory=dict)

    def key_names(self) -> tuple[str, ...]:
        sort = (self.sort_key.name,) if self.sort_key else ()
        return (self.partition_key.name, *sort)


def _created(value: object) -> str:
    """CreationDateTime as text: a datetime (botocore) or a number of seconds (raw JSON)."""
    if value is None:
        return ""
    isoformat = getattr(value, "isoformat", None)
    return str(isoformat()) if callable(isoformat) else str(value)


def check_table_name(table: str) -> str:
    """A clear error for a table name DynamoDB would refuse."""
    if not isinstance(table, str) or not _TABLE_NAME.match(table):
        raise ConfigurationError(
            f"Invalid table name {table!r}: it must be {TABLE_NAME_RULE}.",
            table=table if isinstance(table, str) else None,
        )
    return table


def describe(client: DynamoDBClient, table: str) -> TableInfo:
    """DescribeTable, with the keys found by name and a clear error for a missing table."""
    check_table_name(table)
    try:
        answer = client.describe_table(TableName=table)
    except (ClientError, BotoCoreError) as exc:
        raise_translated(exc, table=table)
    return table_info(described(answer, table), table)


def describe_flow(table: str) -> Flow[TableInfo]:
    """DescribeTable as a flow step (see :mod:`ddbkeys._core`); errors go up as they came, for
    the retry layer to read."""
    check_table_name(table)
    answer = yield describe_table({"TableName": table})
    return table_info(described(answer, table), table)


def described(answer: object, table: str) -> Mapping[str, Any]:
    """The table description of a DescribeTable answer: an :class:`UnexpectedAnswerError`
    when it has none, or one without keys (an endpoint that answers HTTP 200 and is not
    DynamoDB), rather than a KeyError further on."""
    description = answer.get("Table") if isinstance(answer, Mapping) else None
    if (
        not isinstance(description, Mapping)
        or not isinstance(description.get("KeySchema"), list)
        or not isinstance(description.get("AttributeDefinitions"), list)
    ):
        raise unexpected_answer("DescribeTable", table, "table description with its keys", answer)
    return description


def table_info(description: Mapping[str, Any], table: str) -> TableInfo:
    """What DescribeTable's ``Table`` says, with the keys found by name."""
    types = {d["AttributeName"]: d["AttributeType"] for d in description["AttributeDefinitions"]}
    roles = {k["KeyType"]: k["AttributeName"] for k in description["KeySchema"]}
    hash_name = roles["HASH"]
    range_name = roles.get("RANGE")
    projections = {
        index["IndexName"]: index.get("Projection", {}).get("ProjectionType", "ALL")
        for index in description.get("GlobalSecondaryIndexes", [])
    }
    return TableInfo(
        name=table,
        partition_key=KeyAttribute(hash_name, types[hash_name]),
        sort_key=KeyAttribute(range_name, types[range_name]) if range_name else None,
        replica_regions=tuple(
            str(r.get("RegionName", "?")) for r in description.get("Replicas", [])
        ),
        index_projections=projections,
        item_count=int(description.get("ItemCount", 0)),
        created=_created(description.get("CreationDateTime")),
        arn=str(description.get("TableArn") or ""),
        size_bytes=int(description.get("TableSizeBytes", 0)),
        index_sizes={
            index["IndexName"]: int(index.get("IndexSizeBytes", 0))
            for index in description.get("GlobalSecondaryIndexes", [])
        },
        index_statuses={
            index["IndexName"]: str(index.get("IndexStatus", "ACTIVE"))
            for index in description.get("GlobalSecondaryIndexes", [])
        },
        index_hash_keys={
            index["IndexName"]: key["AttributeName"]
            for index in description.get("GlobalSecondaryIndexes", [])
            for key in index.get("KeySchema", [])
            if key.get("KeyType") == "HASH"
        },
        index_range_keys={
            index["IndexName"]: key["AttributeName"]
            for index in description.get("GlobalSecondaryIndexes", [])
            for key in index.get("KeySchema", [])
            if key.get("KeyType") == "RANGE"
        },
        stream_arn=(
            description.get("LatestStreamArn")
            if description.get("StreamSpecification", {}).get("StreamEnabled")
            else None
        ),
        billing_mode=str(
            description.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED")
        ),
        provisioned_reads=_positive(
            description.get("ProvisionedThroughput", {}).get("ReadCapacityUnits")
        ),
        max_reads=_positive(description.get("OnDemandThroughput", {}).get("MaxReadRequestUnits")),
        warm_reads=_positive(description.get("WarmThroughput", {}).get("ReadUnitsPerSecond")),
    )


def _positive(value: object) -> float | None:
    """A capacity DescribeTable told, above 0 (0 and -1 mean none set)."""
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def key_value(attribute: KeyAttribute, value: object, *, table: str) -> AttributeValueTypeDef:
    """A key value in the attribute's own type, or a clear error."""
    if attribute.type == "S" and isinstance(value, str) and value:
        return {"S": value}
    if attribute.type == "N" and isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        return {"N": str(value)}
    if attribute.type == "B" and isinstance(value, (bytes, bytearray)) and value:
        return {"B": bytes(value)}
    raise KeySchemaError(
        f"Key attribute {attribute.name!r} of table {table!r} is of type {attribute.type}; "
        f"{value!r} is not a valid value for it.",
        table=table,
    )
