"""What ddbkeys needs to know about a table, read by name from DescribeTable, never by position;
and the checks of names and values that every public call makes before it writes anything."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys.errors import ConfigurationError, DdbKeysError, KeySchemaError, raise_translated

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = [
    "KeyAttribute",
    "TableInfo",
    "check_name",
    "check_table_name",
    "describe",
    "from_attributes",
    "to_attributes",
]

_TABLE_NAME = re.compile(r"^[a-zA-Z0-9_.-]{3,255}$")
_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()
_DYNAMODB_TYPES = frozenset({"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"})


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

    def key_names(self) -> tuple[str, ...]:
        sort = (self.sort_key.name,) if self.sort_key else ()
        return (self.partition_key.name, *sort)


def check_table_name(table: str) -> str:
    """A clear error for a table name DynamoDB would refuse."""
    if not isinstance(table, str) or not _TABLE_NAME.match(table):
        raise ConfigurationError(
            f"Invalid table name {table!r}: it must be 3 to 255 characters of a-z, A-Z, 0-9, "
            "'_', '-' and '.'.",
            table=table if isinstance(table, str) else None,
        )
    return table


def check_name(what: str, value: object, *, table: str | None = None) -> str:
    """A clear error unless ``value`` is a non-empty attribute (or counter) name."""
    if not isinstance(value, str) or not value or len(value.encode()) > 255:
        raise ConfigurationError(
            f"Invalid {what} {value!r}: it must be a non-empty string of at most 255 bytes.",
            table=table,
        )
    return value


def describe(client: DynamoDBClient, table: str) -> TableInfo:
    """DescribeTable, with the keys found by name and a clear error for a missing table."""
    check_table_name(table)
    try:
        description = client.describe_table(TableName=table)["Table"]
    except (ClientError, BotoCoreError) as exc:
        raise_translated(exc, table=table)
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
        size_bytes=int(description.get("TableSizeBytes", 0)),
        index_sizes={
            index["IndexName"]: int(index.get("IndexSizeBytes", 0))
            for index in description.get("GlobalSecondaryIndexes", [])
        },
    )


def is_dynamodb_json(item: Mapping[str, Any]) -> bool:
    """True when every value is already a typed AttributeValue, like ``{"S": "x"}``."""
    return bool(item) and all(
        isinstance(v, Mapping) and len(v) == 1 and next(iter(v)) in _DYNAMODB_TYPES
        for v in item.values()
    )


def to_attributes(
    item: Mapping[str, Any], *, table: str | None = None, typed: bool = False
) -> dict[str, AttributeValueTypeDef]:
    """Plain Python values to DynamoDB's typed form, with an error naming the attribute at fault.

    ``typed=True``: the item is already in DynamoDB's typed form (``{"name": {"S": "x"}}``).
    """
    if typed:
        if not is_dynamodb_json(item):
            raise DdbKeysError("The item is not DynamoDB JSON.", table=table)
        return {str(k): v for k, v in item.items()}
    if not isinstance(item, Mapping):
        raise DdbKeysError(
            f"An item must be a mapping of attribute names to values, not {type(item).__name__}.",
            table=table,
        )
    out: dict[str, Any] = {}
    for name, value in item.items():
        check_name("attribute name", name, table=table)
        if isinstance(value, float):
            raise DdbKeysError(
                f"Attribute {name!r} holds the float {value!r}: DynamoDB numbers must be exact; "
                "pass an int or a decimal.Decimal.",
                table=table,
            )
        try:
            out[name] = _SERIALIZER.serialize(value)
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise DdbKeysError(
                f"Attribute {name!r} holds a value DynamoDB cannot store ({value!r}): {exc}",
                table=table,
                cause=exc,
            ) from exc
    return out


def from_attributes(item: Mapping[str, Any]) -> dict[str, Any]:
    """DynamoDB's typed form back to Python (numbers as Decimal, binary as bytes)."""
    out: dict[str, Any] = {}
    for name, value in item.items():
        plain = _DESERIALIZER.deserialize(value)
        out[name] = (
            plain.value if hasattr(plain, "value") and not isinstance(plain, Decimal) else plain
        )
    return out


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
