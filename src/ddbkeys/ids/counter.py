"""The atomic counter (one UpdateItem per id, as in "Implement resource counters with Amazon
DynamoDB" and "How to generate auto-incrementing IDs in DynamoDB")."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from decimal import Decimal, localcontext
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys.capacity import Usage
from ddbkeys.errors import ConfigurationError, DdbKeysError, error_code, error_response
from ddbkeys.ids.base import (
    CounterItem,
    CounterStateError,
    IdStrategy,
    SequenceExhaustedError,
    counter_item_key,
    read_counter,
    within_deadline,
)
from ddbkeys.ids.values import MAX_ID, counter_value
from ddbkeys.retry import DEFAULT_DEADLINE, RetryPolicy
from ddbkeys.schema import check_name

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["AtomicCounter", "CounterBackwardsError"]


class CounterBackwardsError(DdbKeysError):
    """``set()`` would move a counter backwards, and ``force`` was not given."""


def _positive(what: str, value: object, *, minimum: int = 1, table: str | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= MAX_ID:
        raise ConfigurationError(
            f"{what} must be a whole number from {minimum} to 10**38 - 1, not {value!r}.",
            table=table,
        )
    return value


#: With a maximum, the counter moves only while it holds a number from 0 to the limit.
_VALID = "attribute_not_exists(#v) OR (attribute_type(#v, :number) AND #v BETWEEN :zero AND :limit)"


class AtomicCounter(IdStrategy):
    """Ids from one counter item, moved on by a single UpdateItem per call.

    Promises: **unique** and **increasing** ids, across any number of threads and processes
    (DynamoDB applies writes to one item one at a time). **Not gapless**: an id is used up when
    the counter moves, so a caller that fails before it stores its item leaves a gap, and so does
    a write whose response was lost and that was sent again (the first increment is never seen;
    no id is ever given out twice).

    Cost: ``next()`` and ``reserve(n)`` are one UpdateItem each, 1 write unit (the counter item is
    far below 1 KB), whatever ``n`` is; ``current()`` is one strongly consistent GetItem, 1 read
    unit. Throughput is bounded by one item's partition (about 1,000 writes/s on the service);
    :class:`~ddbkeys.ids.blocks.BlockAllocator` goes past that.

    The counter item is ``{partition key: name}`` (or ``key``, given whole, for tables with a
    sort key or a non-string partition key) holding ``attribute``, the last id given out. It is
    created on first use; a counter holding 0 (seeded by another tool) gives 1 next. A counter
    holding anything but a whole number from 0 to 10**38 - 1 raises
    :class:`~ddbkeys.ids.errors.CounterStateError` and is left as it was. Ids start at
    ``start`` and go up by ``step``; with ``maximum``, a call that would pass it raises
    :class:`SequenceExhaustedError` and moves nothing. Each call ends within ``deadline``
    seconds.
    """

    def __init__(
        self,
        client: object,
        table: str | None = None,
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
        deadline: float | None = DEFAULT_DEADLINE,
    ) -> None:
        super().__init__(client, table, retry=retry, usage=usage, deadline=deadline)
        self.name = check_name("counter name", name, table=self.table)
        self.attribute = check_name("counter attribute", attribute, table=self.table)
        self.key_attribute = (
            check_name("key attribute", key_attribute, table=self.table) if key_attribute else None
        )
        if key is not None and not isinstance(key, Mapping):
            raise ConfigurationError(
                f"key must be a mapping of key attributes to values, not {key!r}.", table=self.table
            )
        self._key_given = key
        self.start = _positive("start", start, minimum=0, table=self.table)
        self.step = _positive("step", step, table=self.table)
        self.maximum = (
            _positive("maximum", maximum, minimum=start, table=self.table)
            if maximum is not None
            else None
        )
        self._key: dict[str, AttributeValueTypeDef] | None = None
        self._next_request: dict[str, Any] | None = None

    @property
    def key(self) -> dict[str, AttributeValueTypeDef]:
        """The counter item's key (found from the table's key schema on first use)."""
        if self._key is None:
            self._key = counter_item_key(
                self, self.name, self.key_attribute, given=self._key_given, key_parameter="key"
            )
        return self._key

    @within_deadline
    def next(self) -> int:
        """The next id."""
        return self._advance(1)[0]

    @within_deadline
    def reserve(self, count: int) -> range:
        """``count`` consecutive ids (``step`` apart), taken with one write."""
        count = _positive("count", count, table=self.table)
        return self._advance(count)

    @property
    def _limit(self) -> int:
        return MAX_ID if self.maximum is None else self.maximum

    def _request(self, count: int) -> dict[str, Any]:
        """The UpdateItem that moves the counter on by ``count`` ids (next()'s is built once)."""
        if count == 1 and self._next_request is not None:
            return self._next_request
        increment = count * self.step
        if self.start - self.step + increment > self._limit:
            raise self._exhausted(None, count)
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
            "ExpressionAttributeValues": values,
            "ReturnValues": "UPDATED_NEW",
        }
        if self.maximum is not None:
            # With a maximum, a condition keeps the counter from passing it (and from moving
            # when it holds no valid number). Without one, no condition: the common path stays
            # a plain update, and a bad value is caught from the answer (see _advance).
            values[":number"] = {"S": "N"}
            values[":zero"] = {"N": "0"}
            values[":limit"] = {"N": str(self._limit - increment)}
            request["ConditionExpression"] = _VALID
            request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        if count == 1:
            self._next_request = request
        return request

    def _exhausted(self, at: int | None, count: int) -> SequenceExhaustedError:
        where = f"is at {at}" if at is not None else "starts at " + str(self.start)
        limit = "10**38 - 1" if self.maximum is None else str(self.maximum)
        return SequenceExhaustedError(
            f"Counter {self.name!r} of table {self.table!r} {where}: {count} more id(s) would "
            f"pass its maximum {limit}.",
            table=self.table,
        )

    def _check(self, value: Mapping[str, Any] | None) -> int | None:
        return counter_value(value, table=self.table, key=self.key, attribute=self.attribute)

    def _advance(self, count: int) -> range:
        increment = count * self.step
        request = self._request(count)

        def attempt(_: int) -> range:
            try:
                response = self.client.update_item(**request)
            except ClientError as exc:
                if error_code(exc) == "ConditionalCheckFailedException":
                    old = error_response(exc).get("Item", {}).get(self.attribute)
                    at = self._check(old)  # CounterStateError when it holds no valid counter
                    raise self._exhausted(at, count) from exc
                if error_code(exc) == "ValidationException":
                    # A string, a list or a map cannot be added to, and a number past 38 digits
                    # cannot be stored: nothing moved. Say what the item holds, or that
                    # --count or --step ids would pass 10**38 - 1.
                    at = self._check(self._read())
                    if at is not None and at + increment > MAX_ID:
                        raise self._exhausted(at, count) from exc
                raise
            self.usage.add(response, write=True, billed=1.0)
            raw = response["Attributes"][self.attribute]
            digits = raw.get("N")
            if isinstance(digits, str) and digits.isdigit() and len(digits) <= 38:
                now = int(digits)  # the common case: a whole number, no more to check
                if now >= increment:
                    return range(now - increment + self.step, now + 1, self.step)
            with localcontext() as exact:
                exact.prec = 200
                held = {"N": str(_decimal(raw) - increment)}
            try:
                at = self._check(held)  # what the counter held before this call
                last = self._check(raw)  # and where it is now, within 10**38 - 1
            except CounterStateError:
                # It held a fraction or a negative number, or it is now past the largest
                # number (5.5 + 1 = 6.5): put it back as it was, then say why.
                self._undo(increment)
                at = self._check(held)
                raise self._exhausted(at, count) from None
            assert last is not None
            return range(last - increment + self.step, last + 1, self.step)

        return self._attempts(attempt, f"moving counter {self.name!r}")

    def _undo(self, increment: int) -> None:
        """Take ``increment`` back off the counter, once: a transaction with a token, so that a
        retry after a lost response does not take it off twice (2 write units)."""
        token = str(uuid.uuid4())

        def attempt(_: int) -> None:
            self.client.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": self.key,
                            "UpdateExpression": "ADD #v :dec",
                            "ExpressionAttributeNames": {"#v": self.attribute},
                            "ExpressionAttributeValues": {":dec": {"N": str(-increment)}},
                        }
                    }
                ],
                ClientRequestToken=token,
            )
            self.usage.add(None, write=True, billed=2.0)

        self._attempts(attempt, f"putting counter {self.name!r} back")

    def _read(self) -> Any:
        """The counter attribute as the item holds it (strongly consistent; 1 read unit)."""
        return read_counter(self, CounterItem(self.table, self.key, self.attribute))

    @within_deadline
    def current(self) -> int | None:
        """The last id given out, or None before the first."""
        value = self._attempts(lambda _: self._read(), f"reading counter {self.name!r}")
        return self._check(value)

    @within_deadline
    def set(self, value: int, *, force: bool = False) -> int:
        """Make ``value`` the last id given out, so ``next()`` returns ``value + step``.

        Refuses to move the counter backwards (which would give ids out twice) unless ``force``.
        The check is a condition on the write itself, not a read followed by a write. A counter
        that holds no valid value (a string, a list...) is replaced only with ``force``.
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
            request["ConditionExpression"] = (
                "attribute_not_exists(#v) OR "
                "(attribute_type(#v, :number) AND #v BETWEEN :zero AND :value)"
            )
            request["ExpressionAttributeValues"][":number"] = {"S": "N"}
            request["ExpressionAttributeValues"][":zero"] = {"N": "0"}
            request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"

        def attempt(_: int) -> int:
            try:
                response = self.client.update_item(**request)
            except ClientError as exc:
                if error_code(exc) == "ConditionalCheckFailedException":
                    old_value = error_response(exc).get("Item", {}).get(self.attribute)
                    old = self._check(old_value)
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


def _decimal(value: Mapping[str, Any]) -> Decimal:
    return Decimal(str(value.get("N")))
