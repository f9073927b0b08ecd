"""The idempotent counter's write as releases before writer slots sent it, for the tests of
old and new writers on one counter during an upgrade: a one-item TransactWriteItems with a
ClientRequestToken that moves the counter from the value it holds on condition that it still
does (:func:`ddbkeys.ids._exact.exact_update`, the same request), the same token sent again
after a lost response, a new one after a lost race (the cancellation's old image says where
the counter is)."""

from __future__ import annotations

import random
import time
import uuid
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError

from ddbkeys.ids._base import CounterItem
from ddbkeys.ids._exact import exact_update

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

LOST = (ConnectionClosedError, ReadTimeoutError)
THROTTLED = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException"})


def old_next(client: DynamoDBClient, table: str, name: str, *, attempts: int = 400) -> int:
    """One id, the old way (a counter at ``{"pk": name}``, attribute ``last_id``)."""
    counter = CounterItem(table, {"pk": {"S": name}}, "last_id")
    held = client.get_item(
        TableName=table, Key=counter.key, ConsistentRead=True, ProjectionExpression="last_id"
    )
    last = int(held.get("Item", {}).get("last_id", {}).get("N", "0"))
    token = str(uuid.uuid4())
    for attempt in range(attempts):
        try:
            client.transact_write_items(
                TransactItems=[exact_update(counter, last, last + 1, base=0)],
                ClientRequestToken=token,
            )
            return last + 1
        except LOST:
            pass  # the same transaction, the same token: applied at most once
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in THROTTLED:
                time.sleep(0.01)
                continue
            if code != "TransactionCanceledException":
                raise
            reasons: list[Any] = exc.response.get("CancellationReasons", [])
            if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
                last = int(reasons[0].get("Item", {}).get("last_id", {}).get("N", "0"))
            token = str(uuid.uuid4())
            time.sleep(random.random() * min(0.05, 0.002 * 2**attempt))
    raise AssertionError("the old writer lost every race")
