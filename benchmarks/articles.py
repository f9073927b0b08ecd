"""The articles' code, as published, that benchmarks/ids.py measures ddbkeys against: the
counter and the item-collection sequence of "Implement auto-increment with Amazon DynamoDB",
and the transactional optimistic lock (gapless). Each counts its retries and the write units
the service would bill (ArticleStats)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import write_units

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class ArticleStats:
    """Retries and write units of the articles' loops (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.retries = 0
        self.write_units = 0.0

    def add(self, units: float = 0.0, retries: int = 0) -> None:
        """Count ``units`` billed by the service's rules, and ``retries``."""
        with self.lock:
            self.retries += retries
            self.write_units += units


# --- the articles' code, as published (low-level client; billed units by the service's rules) -


def article_counter(
    client: DynamoDBClient, table: str, stats: ArticleStats
) -> Callable[[int], int]:
    """ "Implement auto-increment with Amazon DynamoDB", with a counter: UpdateItem ADD,
    UPDATED_NEW (the put that follows is left out)."""

    def mint(_: int) -> int:
        response = client.update_item(
            TableName=table,
            Key={"pk": {"S": "orderCounter"}},
            UpdateExpression="ADD #cnt :val",
            ExpressionAttributeNames={"#cnt": "count"},
            ExpressionAttributeValues={":val": {"N": "1"}},
            ReturnValues="UPDATED_NEW",
        )
        stats.add(1.0)
        return int(response["Attributes"]["count"]["N"])

    return mint


def article_collection(
    client: DynamoDBClient, table: str, stats: ArticleStats
) -> Callable[[int], int]:
    """The same article, with a sort key: query the highest, then put highest + 1, + 2, ...
    until one succeeds (an unbounded loop in the article; bounded here only to stop a runaway
    benchmark)."""

    def insert(i: int) -> int:
        response = client.query(
            TableName=table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "projectA"}},
            ScanIndexForward=False,
            Limit=1,
        )
        highest = int(response["Items"][0]["sk"]["N"]) if response["Count"] > 0 else 0
        for attempt in range(100_000):
            item: Any = {
                "pk": {"S": "projectA"},
                "sk": {"N": str(highest + 1)},
                "priority": {"S": "low"},
                "n": {"N": str(i)},
            }
            stats.add(write_units([item]))  # a rejected put is paid for too
            try:
                client.put_item(
                    TableName=table, Item=item, ConditionExpression="attribute_not_exists(pk)"
                )
                stats.add(retries=attempt)
                return highest + 1
            except client.exceptions.ConditionalCheckFailedException:
                highest += 1
        raise RuntimeError("runaway")

    return insert


def article_gapless(
    client: DynamoDBClient, table: str, stats: ArticleStats
) -> Callable[[int], int]:
    """The good solution of "Reliable Auto-Incrementing Integers in DynamoDB": GetItem the
    LastID, then one transaction that moves it on condition and puts the user; on failure, do
    both again "until it works"."""
    tag = uuid.uuid4().hex[:8]

    def insert(i: int) -> int:
        for attempt in range(100_000):
            got = client.get_item(
                TableName=table,
                Key={"pk": {"S": "UserMetadata"}},
                AttributesToGet=["LastID"],
                ConsistentRead=True,
            )
            current_id = int(got["Item"]["LastID"]["N"])
            next_id = current_id + 1
            user: Any = {"pk": {"S": f"User#{tag}-{i}"}, "NumIdentifier": {"N": str(next_id)}}
            try:
                client.transact_write_items(
                    TransactItems=[
                        {
                            "Update": {
                                "TableName": table,
                                "Key": {"pk": {"S": "UserMetadata"}},
                                "ConditionExpression": "LastID = :current_id",
                                "UpdateExpression": "SET LastID = LastID + :incr",
                                "ExpressionAttributeValues": {
                                    ":incr": {"N": "1"},
                                    ":current_id": {"N": str(current_id)},
                                },
                            }
                        },
                        {
                            "Put": {
                                "TableName": table,
                                "Item": user,
                                "ConditionExpression": "attribute_not_exists(pk)",
                            }
                        },
                    ],
                )
                counter: Any = {"pk": {"S": "UserMetadata"}, "LastID": {"N": str(next_id)}}
                stats.add(write_units([counter, user], transactional=True), retries=attempt)
                return next_id
            except client.exceptions.TransactionCanceledException:
                continue
        raise RuntimeError("runaway")

    return insert
