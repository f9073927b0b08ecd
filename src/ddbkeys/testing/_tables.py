"""Uniquely named test tables that are deleted afterwards (used by the pytest plugin)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["TableFactory"]


class TableFactory:
    """Creates on-demand tables named ``<prefix>-<random>`` and remembers them for deletion."""

    def __init__(self, client: DynamoDBClient, prefix: str = "ddbkeys-test") -> None:
        self.client = client
        self.prefix = prefix
        self.created: list[str] = []

    def __call__(
        self,
        partition_key: tuple[str, str] = ("pk", "S"),
        sort_key: tuple[str, str] | None = None,
        *,
        attributes: Sequence[tuple[str, str]] = (),
        global_secondary_indexes: Sequence[Any] = (),
        name: str | None = None,
    ) -> str:
        """Create a table and wait until it is active; return its name.

        ``partition_key`` and ``sort_key`` are ``(name, type)`` pairs with type S, N or B.
        ``attributes`` adds attribute definitions (for indexes), placed first, so tables that
        define their attributes in an unusual order can be made too.
        """
        table = name or f"{self.prefix}-{uuid.uuid4().hex[:12]}"
        keys = [partition_key] + ([sort_key] if sort_key else [])
        definitions: dict[str, str] = dict(attributes)
        for attr, kind in keys:
            definitions.setdefault(attr, kind)
        request: dict[str, Any] = {
            "TableName": table,
            "KeySchema": [
                {"AttributeName": attr, "KeyType": role}
                for (attr, _), role in zip(keys, ("HASH", "RANGE"), strict=False)
            ],
            "AttributeDefinitions": [
                {"AttributeName": attr, "AttributeType": kind} for attr, kind in definitions.items()
            ],
            "BillingMode": "PAY_PER_REQUEST",
        }
        if global_secondary_indexes:
            request["GlobalSecondaryIndexes"] = list(global_secondary_indexes)
        self.client.create_table(**request)
        self.created.append(table)
        self.client.get_waiter("table_exists").wait(
            TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
        )
        return table

    def delete_all(self) -> None:
        """Delete every table this factory made (missing ones are ignored)."""
        while self.created:
            table = self.created.pop()
            with contextlib.suppress(self.client.exceptions.ResourceNotFoundException):
                self.client.delete_table(TableName=table)
