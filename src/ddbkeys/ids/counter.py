"""The atomic counter (seed 000 "with a counter", seed 003)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys.capacity import Usage
from ddbkeys.errors import ConfigurationError, DdbKeysError, error_code, error_response
from ddbkeys.ids.base import IdStrategy, SequenceExhaustedError, counter_item_key
from ddbkeys.retry import RetryPolicy
from ddbkeys.schema import check_name, to_attributes

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["AtomicCounter", "CounterBackwardsError"]

MAX_ID = 10**38 - 1  # DynamoDB numbers keep 38 significant digits


class CounterBackwardsError(DdbKeysError):
    """``set()`` would move a counter backwards, and ``force`` was not given."""


def _positive(what: str, value: object, *, minimum: int = 1, table: str | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= MAX_ID:
        raise ConfigurationError(
            f"{what} must be a whole number from {minimum} to 10**38 - 1, not {value!r}.",
            table=table,
        )
    return value


class AtomicCounter(IdStrategy):
    """Ids from one counter item, moved on by a single UpdateItem per call.

    Promises: **unique** and **increasing** ids, across any number of threads and processes
    (DynamoDB applies writes to one item one at a time). **Not gapless**: an id is used up when
    the counter moves, so a caller that fails before it stores its item leaves a gap, and so does
    a write whose response was lost and that botocore sent again (the first increment is never
    seen; no id is ever given out twice).

    Cost: ``next()`` and ``reserve(n)`` are one UpdateItem each, 1 write unit (the counter item is
    far below 1 KB), whatever ``n`` is; ``current()`` is one strongly consistent GetItem, 1 read
    unit. Throughput is bounded by one item's partition (about 1,000 writes/s on the service);
    :class:`~ddbkeys.ids.blocks.BlockAllocator` goes past that.

    The counter item is ``{key_attribute: name}`` (or ``key``, given whole, for tables with a
    sort key or a numeric key) holding ``attribute``, the last id given out. It is created on
    first use. Ids start at ``start`` and go up by ``step``; with ``maximum``, a call that would
    pass it raises :class:`SequenceExhaustedError` and moves nothing.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        name: str = "counter",
        *,
        key_attribute: str | None = None,
        key: Mapping[str, Any] | None = None,
        attribute: str = "last_id",
        start: int = 1,
        step: int = 1,
        maximum: int | None = None,
        retry: RetryPolicy | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(client, table, retry=retry, usage=usage)
        self.name = check_name("counter name", name, table=table)
        self.attribute = check_name("counter attribute", attribute, table=table)
        self.key_attribute = (
            check_name("key attribute", key_attribute, table=table) if key_attribute else None
        )
        self._key_given = to_attributes(key, table=table) if key is not None else None
        self.start = _positive("start", start, minimum=0, table=table)
        self.step = _positive("step", step, table=table)
        self.maximum = (
            _positive("maximum", maximum, minimum=start, table=table)
            if maximum is not None
            else None
        )
        self._key: dict[str, AttributeValueTypeDef] | None = None
        self._next_request: dict[str, Any] | None = None

    @property
    def key(self) -> dict[str, AttributeValueTypeDef]:
        """The counter item's key (found from the table's key schema on first use)."""
        if self._key is None:
            self._key = self._key_given or counter_item_key(self, self.name, self.key_attribute)
        return self._key

    def next(self) -> int:
        """The next id."""
        return self._advance(1)[0]

    def reserve(self, count: int) -> range:
        """``count`` consecutive ids (``step`` apart), taken with one write."""
        count = _positive("count", count, table=self.table)
        return self._advance(count)

    def _request(self, count: int) -> dict[str, Any]:
        """The UpdateItem that moves the counter on by ``count`` ids (next()'s is built once)."""
        if count == 1 and self._next_request is not None:
            return self._next_request
        increment = count * self.step
        values: dict[str, AttributeValueTypeDef] = {":inc": {"N": str(increment)}}
        if self.start == self.step:
            # Starting at the step itself: a plain ADD (a missing counter counts as 0).
            update = "ADD #v :inc"
        else:
            update = "SET #v = if_not_exists(#v, :base) + :inc"
            values[":base"] = {"N": str(self.start - self.step)}
        # No ReturnConsumedCapacity: the counter item is far below 1 KB, so it is 1 unit.
        request: dict[str, Any] = {
            "TableName": self.table,
            "Key": self.key,
            "UpdateExpression": update,
            "ExpressionAttributeNames": {"#v": self.attribute},
            "ReturnValues": "UPDATED_NEW",
        }
        if self.maximum is not None:
            values[":limit"] = {"N": str(self.maximum - increment)}
            request["ConditionExpression"] = "attribute_not_exists(#v) OR #v <= :limit"
            request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        request["ExpressionAttributeValues"] = values
        if count == 1:
            self._next_request = request
        return request

    def _advance(self, count: int) -> range:
        increment = count * self.step
        request = self._request(count)

        def attempt(_: int) -> range:
            try:
                response = self.client.update_item(**request)
            except ClientError as exc:
                if error_code(exc) == "ConditionalCheckFailedException":
                    old = error_response(exc).get("Item", {}).get(self.attribute, {}).get("N", "?")
                    raise SequenceExhaustedError(
                        f"Counter {self.name!r} of table {self.table!r} is at {old}: "
                        f"{count} more id(s) would pass its maximum {self.maximum}.",
                        table=self.table,
                        cause=exc,
                    ) from exc
                raise
            self.usage.add(response, write=True, billed=1.0)
            last = int(response["Attributes"][self.attribute]["N"])
            return range(last - increment + self.step, last + 1, self.step)

        return self._attempts(attempt, f"moving counter {self.name!r}")

    def current(self) -> int | None:
        """The last id given out, or None before the first."""
        response = self._attempts(
            lambda _: self.client.get_item(
                TableName=self.table,
                Key=self.key,
                ConsistentRead=True,
                ProjectionExpression="#v",
                ExpressionAttributeNames={"#v": self.attribute},
                ReturnConsumedCapacity="TOTAL",
            ),
            f"reading counter {self.name!r}",
        )
        self.usage.add(response, write=False)
        value = response.get("Item", {}).get(self.attribute)
        return int(value["N"]) if value and "N" in value else None

    def set(self, value: int, *, force: bool = False) -> int:
        """Make ``value`` the last id given out, so ``next()`` returns ``value + step``.

        Refuses to move the counter backwards (which would give ids out twice) unless ``force``.
        The check is a condition on the write itself, not a read followed by a write.
        """
        value = _positive("value", value, minimum=0, table=self.table)
        request: dict[str, Any] = {
            "TableName": self.table,
            "Key": self.key,
            "UpdateExpression": "SET #v = :value",
            "ExpressionAttributeNames": {"#v": self.attribute},
            "ExpressionAttributeValues": {":value": {"N": str(value)}},
            "ReturnConsumedCapacity": "TOTAL",
        }
        if not force:
            request["ConditionExpression"] = "attribute_not_exists(#v) OR #v <= :value"
            request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"

        def attempt(_: int) -> int:
            try:
                response = self.client.update_item(**request)
            except ClientError as exc:
                if error_code(exc) == "ConditionalCheckFailedException":
                    old = error_response(exc).get("Item", {}).get(self.attribute, {}).get("N", "?")
                    raise CounterBackwardsError(
                        f"Refusing to move counter {self.name!r} of table {self.table!r} "
                        f"backwards from {old} to {value}: ids after {value} were already given "
                        "out and would be given out again. Pass force=True (--force) if you "
                        "really mean it.",
                        table=self.table,
                        cause=exc,
                    ) from exc
                raise
            self.usage.add(response, write=True, billed=1.0)  # the counter item is < 1 KB
            return value

        return self._attempts(attempt, f"setting counter {self.name!r}")
