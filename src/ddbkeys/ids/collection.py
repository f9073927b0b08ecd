"""The item-collection sequence (the AWS post on auto-increment, "with a sort key"): the number
is the sort key."""

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
    KeySchemaError,
    error_code,
    error_response,
)
from ddbkeys.ids.base import (
    Contention,
    CounterItem,
    GroupCommit,
    IdStrategy,
    SequenceExhaustedError,
    Throttled,
    cancelled_error,
    put_if_new,
    read_counter,
    transact,
    within_deadline,
)
from ddbkeys.ids.cancellation import Verdict
from ddbkeys.ids.values import MAX_ID, check_key_value, check_padding, counter_value
from ddbkeys.retry import DEFAULT_DEADLINE, RetryPolicy
from ddbkeys.schema import KeyAttribute, check_name, key_value, to_attributes

if TYPE_CHECKING:
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
    ``on_conflict``: ``"next"`` tries the next number at once (the article's loop; every third
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

    Reuse: without a counter, the next number is the highest one *in the table* plus one. So
    after the highest item of a collection is deleted, its number is handed out again (5
    deleted, the next put gets 5), and an audit cannot see it. ``never_reuse=True`` prevents
    that: the highest number is also kept in a counter item of the collection (sort key number
    0, attribute ``counter_attribute``) written in the same transaction as the items, so a
    number once given is never given again. Its cost: every put is a transaction of the items
    and the counter item, ``2 * (k + 1)`` write units on the service for ``k`` items (4 for one
    item, against 1 without), and the counter's strongly consistent read (1 read unit) replaces
    the query when the highest number is not known. The counter item stays when the
    collection's items are all deleted (it keeps the collection's partition key listed).

    Sort keys: a number sort key holds the number itself; a string sort key holds
    ``prefix`` + the number padded with zeros to ``width`` digits (an error once it no longer
    fits). Refuses global tables unless ``allow_global_tables``. Each call ends within
    ``deadline`` seconds.
    """

    refuses_global_tables = True
    default_retry = RetryPolicy(max_attempts=400, base_delay=0.002, max_delay=0.05)

    def __init__(
        self,
        client: object,
        table: str | None = None,
        *,
        width: int = 10,
        prefix: str = "",
        consistent_read: bool = True,
        on_conflict: OnConflict = "next",
        token_attribute: str = "ddbkeys_token",
        group_commit: bool = True,
        never_reuse: bool = False,
        counter_attribute: str = "last_number",
        retry: RetryPolicy | None = None,
        usage: Usage | None = None,
        allow_global_tables: bool = False,
        deadline: float | None = DEFAULT_DEADLINE,
    ) -> None:
        super().__init__(
            client,
            table,
            retry=retry,
            usage=usage,
            allow_global_tables=allow_global_tables,
            deadline=deadline,
        )
        check_padding(width, prefix, table=self.table)
        if on_conflict not in ("next", "requery"):
            raise ConfigurationError(
                f"on_conflict must be 'next' or 'requery', not {on_conflict!r}.", table=self.table
            )
        self.width = width
        self.prefix = prefix
        self.consistent_read = consistent_read
        self.on_conflict = on_conflict
        self.token_attribute = check_name("token attribute", token_attribute, table=self.table)
        self.group_commit = group_commit
        self.never_reuse = bool(never_reuse)
        self.counter_attribute = check_name(
            "counter attribute", counter_attribute, table=self.table
        )
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

    @within_deadline
    def put(
        self,
        partition_key_value: str | int | Decimal | bytes,
        item: Mapping[str, Any] | None = None,
        *,
        typed: bool = False,
    ) -> int:
        """Store ``item`` in the collection ``partition_key_value`` with the next number as its
        sort key, and return the number.

        ``typed=True``: the item is in DynamoDB's typed form (``{"name": {"S": "x"}}``).
        """
        typed_item = self._prepare(partition_key_value, item, typed=typed)
        collection = repr(typed_item[self.keys()[0].name])
        if not self.group_commit:
            result = self._commit(collection, [typed_item])[0]
            if isinstance(result, BaseException):
                raise result
            return result
        with self._lock:
            group = self._groups.get(collection)
            if group is None:
                group = self._groups[collection] = GroupCommit(
                    lambda batch: self._commit(collection, batch),
                    MAX_BATCH - 1 if self.never_reuse else MAX_BATCH,
                )
        return group.submit(typed_item)

    def check(
        self,
        partition_key_value: str | int | Decimal | bytes,
        item: Mapping[str, Any] | None = None,
        *,
        typed: bool = False,
    ) -> None:
        """Raise the error :meth:`put` would raise for this item before sending it (a key of the
        wrong type, a value DynamoDB cannot store, an attribute the sequence sets); 1
        DescribeTable, once per table. Check every item of a batch first, then write them."""
        self._prepare(partition_key_value, item, typed=typed)

    def _prepare(
        self,
        partition_key_value: str | int | Decimal | bytes,
        item: Mapping[str, Any] | None,
        *,
        typed: bool,
    ) -> Item:
        """The typed item to write, with its partition key set, or the error that refuses it."""
        pk, sk = self.keys()
        pk_value = to_attributes({pk.name: partition_key_value}, table=self.table)[pk.name]
        check_key_value(pk, pk_value, table=self.table, where="The partition key value")
        typed_item = to_attributes(item or {}, table=self.table, typed=typed and bool(item))
        for reserved in (pk.name, sk.name, self.token_attribute):
            if reserved in typed_item:
                raise ConfigurationError(
                    f"The item must not hold {reserved!r}: the sequence sets it.", table=self.table
                )
        typed_item[pk.name] = pk_value
        return typed_item

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

    @within_deadline
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
                if known is not None:
                    plan["highest"] = plan["counter"] = known
                elif self.never_reuse:
                    plan["counter"] = self._read_counter(pk_value)
                    plan["highest"] = (
                        plan["counter"]
                        if plan["counter"] is not None
                        else self._query_highest(pk_value)
                    )
                else:
                    plan["highest"] = self._query_highest(pk_value)
                plan["token"] = str(uuid.uuid4())
            highest: int = plan["highest"]
            if highest + len(items) > MAX_ID:
                raise SequenceExhaustedError(
                    f"Collection {collection} of table {self.table!r} is at {highest}: "
                    f"{len(items)} more number(s) would pass 10**38 - 1, the largest DynamoDB "
                    "number.",
                    table=self.table,
                )
            numbers = list(range(highest + 1, highest + 1 + len(items)))
            written = [
                dict(item, **{sk.name: self.sort_key_value(n)})
                for item, n in zip(items, numbers, strict=True)
            ]
            if self.never_reuse:
                self._put_counted(written, plan, pk_value, numbers[-1])
            elif len(written) == 1:
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
        if reasons.verdict is Verdict.INVALID:
            raise cancelled_error(self, reasons)
        taken = reasons.failed_conditions
        if taken:
            raise self._lost_race(plan, collection, highest + 1 + max(taken))
        plan.clear()
        if reasons.verdict is Verdict.THROTTLED:
            raise Throttled(reasons.describe())
        raise Contention(immediate=False)

    # --- never_reuse: the highest number also kept in a counter item, number 0 ----------------

    def counter_key(self, partition_key_value: AttributeValueTypeDef) -> Item:
        """The key of a collection's counter item (``never_reuse``): the number 0."""
        pk, sk = self.keys()
        return {pk.name: partition_key_value, sk.name: self.sort_key_value(0)}

    def _read_counter(self, pk_value: AttributeValueTypeDef) -> int | None:
        counter = CounterItem(self.table, self.counter_key(pk_value), self.counter_attribute)
        value = read_counter(self, counter)
        return counter_value(value, table=self.table, key=counter.key, attribute=counter.attribute)

    def _put_counted(
        self, items: list[Item], plan: dict[str, Any], pk_value: AttributeValueTypeDef, new: int
    ) -> None:
        """The items and the collection's counter, moved to ``new``, in one transaction."""
        pk, _ = self.keys()
        key = self.counter_key(pk_value)
        counted: int | None = plan.get("counter")
        update: dict[str, Any] = {
            "TableName": self.table,
            "Key": key,
            "UpdateExpression": "SET #c = :new",
            "ExpressionAttributeNames": {"#c": self.counter_attribute},
            "ExpressionAttributeValues": {":new": {"N": str(new)}},
            "ConditionExpression": "attribute_not_exists(#c)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if counted is not None:
            update["ConditionExpression"] = "#c = :last"
            update["ExpressionAttributeValues"][":last"] = {"N": str(counted)}
        actions = [{"Update": update}] + [put_if_new(self.table, i, pk.name) for i in items]
        counter_image = dict(key, **{self.counter_attribute: {"N": str(new)}})
        billed = write_units([counter_image, *items], transactional=True)
        reasons = transact(self, actions, plan["token"], items=len(items), billed=billed)
        if reasons is None:
            return
        if reasons.verdict is Verdict.INVALID:
            raise cancelled_error(self, reasons)
        streak = plan.get("streak", 0) + 1
        collection = repr(pk_value)
        with self._lock:
            self._highest.pop(collection, None)
        if reasons.failed(0):
            old = (reasons.old_item(0) or {}).get(self.counter_attribute)
            now = counter_value(old, table=self.table, key=key, attribute=self.counter_attribute)
            plan.update(counter=now, highest=max(now or 0, plan["highest"]))
        elif reasons.failed_conditions:
            # The counter held, but a number above it holds an item it did not count (written
            # by something else): go past it, so the collection stays gapless.
            plan["highest"] = plan["highest"] + max(reasons.failed_conditions)
        else:
            plan.clear()
            plan["streak"] = streak
            if reasons.verdict is Verdict.THROTTLED:
                raise Throttled(reasons.describe())
            raise Contention(immediate=False)
        plan.update(token=str(uuid.uuid4()), streak=streak)
        raise Contention(immediate=bool(streak % 2))
