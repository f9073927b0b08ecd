"""The item-collection sequence (seed 000 "with a sort key"): the number is the sort key."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError

from ddbkeys.capacity import Usage, write_units
from ddbkeys.errors import (
    ConfigurationError,
    DdbKeysError,
    KeySchemaError,
    error_code,
    error_response,
)
from ddbkeys.ids.base import (
    Contention,
    GroupCommit,
    IdStrategy,
    SequenceExhaustedError,
    put_if_new,
    transact,
)
from ddbkeys.retry import RetryPolicy
from ddbkeys.schema import KeyAttribute, check_name, key_value, to_attributes

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["CollectionSequence"]

Item = dict[str, "AttributeValueTypeDef"]
MAX_BATCH = 100
_REQUERY_EVERY = 3  # with on_conflict="next", every third lost race in a row reads again
OnConflict = Literal["next", "requery"]


class CollectionSequence(IdStrategy):
    """Numbers 1, 2, 3, ... per item collection, kept in the sort key: no counter item at all.

    Promises, within one item collection (one partition key value): **unique**, **increasing**
    and **gapless** numbers, across threads and processes, through lost responses. Each number
    is written only if its item does not exist yet, and only after the number below it exists,
    so no number is skipped; a single put carries a token attribute by which a retried write
    whose response was lost recognises itself (ReturnValuesOnConditionCheckFailure), and a
    batch is one transaction with a ClientRequestToken.

    How: read the highest sort key of the collection (Query, newest first, Limit 1; strongly
    consistent when ``consistent_read``), then write ``highest + 1`` on condition that it does
    not exist. A lost race is retried, at most ``retry.max_attempts`` times, by
    ``on_conflict``: ``"next"`` tries the next number at once (the seed's loop; every third
    lost race in a row it reads the highest again, since another writer is then far ahead),
    ``"requery"`` reads the highest again after a full-jitter wait. Within one process,
    concurrent ``put()``
    calls on the same collection are combined: one caller writes them all, as one PutItem (one
    item) or one TransactWriteItems (several), and the highest number it wrote is remembered so
    the next write needs no query.

    Cost: the query is 0.5 read units (1 when consistent) and is skipped while the remembered
    number holds; a single put is 1 write unit per KB; a batch of ``k`` is ``2k`` write units on
    the service (transactional). A lost race costs a rejected write. Throughput is that of one
    partition per collection.

    Sort keys: a number sort key holds the number itself; a string sort key holds
    ``prefix`` + the number padded with zeros to ``width`` digits (an error once it no longer
    fits). Refuses global tables unless ``allow_global_tables``.
    """

    refuses_global_tables = True
    default_retry = RetryPolicy(max_attempts=400, base_delay=0.002, max_delay=0.05)

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        *,
        width: int = 10,
        prefix: str = "",
        consistent_read: bool = True,
        on_conflict: OnConflict = "next",
        token_attribute: str = "ddbkeys_token",
        group_commit: bool = True,
        retry: RetryPolicy | None = None,
        usage: Usage | None = None,
        allow_global_tables: bool = False,
    ) -> None:
        super().__init__(
            client, table, retry=retry, usage=usage, allow_global_tables=allow_global_tables
        )
        if not isinstance(width, int) or isinstance(width, bool) or not 1 <= width <= 38:
            raise ConfigurationError(f"width must be 1 to 38 digits, not {width!r}.", table=table)
        if not isinstance(prefix, str):
            raise ConfigurationError(f"prefix must be a string, not {prefix!r}.", table=table)
        if on_conflict not in ("next", "requery"):
            raise ConfigurationError(
                f"on_conflict must be 'next' or 'requery', not {on_conflict!r}.", table=table
            )
        self.width = width
        self.prefix = prefix
        self.consistent_read = consistent_read
        self.on_conflict = on_conflict
        self.token_attribute = check_name("token attribute", token_attribute, table=table)
        self.group_commit = group_commit
        self._lock = threading.Lock()
        self._groups: dict[str, GroupCommit[Item, int]] = {}
        self._highest: dict[str, int] = {}

    def keys(self) -> tuple[KeyAttribute, KeyAttribute]:
        info = self.table_info()
        if info.sort_key is None or info.sort_key.type not in ("N", "S"):
            raise KeySchemaError(
                f"Table {self.table!r} needs a number (N) or string (S) sort key to keep a "
                f"sequence per item collection; its key is ({', '.join(info.key_names())}).",
                table=self.table,
            )
        return info.partition_key, info.sort_key

    def put(
        self,
        partition_key_value: str | int | Decimal | bytes,
        item: Mapping[str, Any] | None = None,
    ) -> int:
        """Store ``item`` in the collection ``partition_key_value`` with the next number as its
        sort key, and return the number."""
        pk, sk = self.keys()
        pk_value = key_value(pk, partition_key_value, table=self.table)
        typed = to_attributes(item or {}, table=self.table)
        for reserved in (pk.name, sk.name, self.token_attribute):
            if reserved in typed:
                raise ConfigurationError(
                    f"The item must not hold {reserved!r}: the sequence sets it.", table=self.table
                )
        typed[pk.name] = pk_value
        collection = repr(pk_value)
        if not self.group_commit:
            result = self._commit(collection, [typed])[0]
            if isinstance(result, BaseException):
                raise result
            return result
        with self._lock:
            group = self._groups.get(collection)
            if group is None:
                group = self._groups[collection] = GroupCommit(
                    lambda batch: self._commit(collection, batch), MAX_BATCH
                )
        return group.submit(typed)

    def sort_key_value(self, number: int) -> AttributeValueTypeDef:
        """The sort key that holds ``number``."""
        _, sk = self.keys()
        if sk.type == "N":
            return {"N": str(number)}
        digits = str(number)
        if len(digits) > self.width:
            raise SequenceExhaustedError(
                f"Number {number} no longer fits the {self.width}-digit sort key {sk.name!r} of "
                f"table {self.table!r}: choose a larger width for new collections.",
                table=self.table,
            )
        return {"S": self.prefix + digits.zfill(self.width)}

    def number_of(self, value: Mapping[str, Any]) -> int:
        """The number a sort key holds, or a clear error naming the value."""
        raw = value.get("N") if "N" in value else value.get("S", "")
        text = str(raw)
        if "S" in value:
            if not text.startswith(self.prefix):
                raise KeySchemaError(
                    f"Sort key {text!r} of table {self.table!r} does not start with the prefix "
                    f"{self.prefix!r}.",
                    table=self.table,
                )
            text = text[len(self.prefix) :]
        try:
            number = Decimal(text)
        except InvalidOperation:
            number = Decimal("NaN")
        if not number.is_finite() or number != number.to_integral_value():
            raise KeySchemaError(
                f"Sort key {raw!r} in table {self.table!r} is not a whole number, so it cannot "
                "be part of a sequence.",
                table=self.table,
            )
        return int(number)

    def highest(self, partition_key_value: str | int | Decimal | bytes) -> int:
        """The highest number in the collection (0 when it has none)."""
        pk, _ = self.keys()
        return self._attempts(
            lambda _: self._query_highest(key_value(pk, partition_key_value, table=self.table)),
            "reading the highest number",
        )

    def _query_highest(self, pk_value: AttributeValueTypeDef) -> int:
        pk, sk = self.keys()
        names = {"#pk": pk.name, "#sk": sk.name}
        values: dict[str, Any] = {":pk": pk_value}
        condition = "#pk = :pk"
        if sk.type == "S":
            condition += " AND #sk BETWEEN :lo AND :hi"
            values[":lo"] = {"S": self.prefix + "0" * self.width}
            values[":hi"] = {"S": self.prefix + "9" * self.width}
        response = self.client.query(
            TableName=self.table,
            KeyConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ProjectionExpression="#sk",
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=self.consistent_read,
            ReturnConsumedCapacity="TOTAL",
        )
        self.usage.add(response, write=False, items=len(response.get("Items", [])))
        items = response.get("Items", [])
        return self.number_of(items[0][sk.name]) if items else 0

    def _commit(self, collection: str, batch: list[Item] | Any) -> list[int | BaseException]:
        """Write the batch with the next numbers of one collection, retrying lost races."""
        pk, sk = self.keys()
        items: list[Item] = list(batch)
        pk_value = items[0][pk.name]
        plan: dict[str, Any] = {}

        def attempt(_: int) -> list[int | BaseException]:
            if "token" not in plan:
                with self._lock:
                    known = self._highest.get(collection)
                plan["highest"] = known if known is not None else self._query_highest(pk_value)
                plan["token"] = str(uuid.uuid4())
            highest: int = plan["highest"]
            numbers = list(range(highest + 1, highest + 1 + len(items)))
            written = [
                dict(item, **{sk.name: self.sort_key_value(n)})
                for item, n in zip(items, numbers, strict=True)
            ]
            if len(written) == 1:
                self._put_one(written[0], plan, collection, pk.name, highest)
            else:
                self._put_many(written, plan, collection, pk.name, highest)
            with self._lock:
                if self._highest.get(collection, 0) < numbers[-1]:
                    self._highest[collection] = numbers[-1]
            return list(numbers)

        try:
            return self._attempts(attempt, f"adding to collection {collection}")
        except BaseException:
            with self._lock:
                self._highest.pop(collection, None)
            raise

    def _lost_race(self, plan: dict[str, Any], collection: str, taken: int) -> Contention:
        """After number ``taken`` turned out to exist: plan the next attempt by ``on_conflict``."""
        with self._lock:
            self._highest.pop(collection, None)  # what this process remembered proved stale
        streak = plan.get("streak", 0) + 1
        if self.on_conflict == "next" and streak % _REQUERY_EVERY:
            plan.update(highest=taken, token=str(uuid.uuid4()), streak=streak)
            return Contention(immediate=True)
        # "requery", or "next" losing again and again (another writer is far ahead): read the
        # highest number afresh, after a full-jitter wait.
        plan.clear()
        plan["streak"] = streak
        return Contention(immediate=False)

    def _put_one(
        self, item: Item, plan: dict[str, Any], collection: str, pk_name: str, highest: int
    ) -> None:
        item = dict(item, **{self.token_attribute: {"S": plan["token"]}})
        try:
            response = self.client.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": pk_name},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ReturnConsumedCapacity="TOTAL",
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            self.usage.add(None, write=True, billed=write_units([item]))  # rejected: still paid
            old = error_response(exc).get("Item", {})
            if old.get(self.token_attribute) == {"S": plan["token"]}:
                return  # our own write, applied before its response was lost
            raise self._lost_race(plan, collection, highest + 1) from None
        self.usage.add(response, write=True, items=1, billed=write_units([item]))

    def _put_many(
        self,
        items: list[Item],
        plan: dict[str, Any],
        collection: str,
        pk_name: str,
        highest: int,
    ) -> None:
        actions = [put_if_new(self.table, item, pk_name) for item in items]
        billed = write_units(items, transactional=True)
        reasons = transact(self, actions, plan["token"], items=len(items), billed=billed)
        if reasons is None:
            return
        codes = [r.get("Code", "None") for r in reasons]
        taken = [i for i, code in enumerate(codes) if code == "ConditionalCheckFailed"]
        if taken:
            raise self._lost_race(plan, collection, highest + 1 + max(taken))
        if any(code in ("TransactionConflict", "ThrottlingError") for code in codes):
            plan.clear()
            raise Contention(immediate=False)
        raise DdbKeysError(
            f"A transaction on table {self.table!r} was cancelled ({', '.join(codes)}).",
            table=self.table,
            code="TransactionCanceledException",
        )
