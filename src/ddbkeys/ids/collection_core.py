"""The item-collection sequence's decisions, without I/O (the AWS post on auto-increment, "with a
sort key"): which request a put sends next and what each answer means, as flows (see
:mod:`ddbkeys.core`) that the sync :class:`~ddbkeys.ids.collection.CollectionSequence` and the
asyncio one (:mod:`ddbkeys.aio.collection`) both run."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError

from ddbkeys.capacity import Usage, write_units
from ddbkeys.core.attempts import Contention, Throttled
from ddbkeys.core.steps import Flow, put_item, query
from ddbkeys.errors import ConfigurationError, error_code, error_response
from ddbkeys.ids.base import (
    TYPE_NAMES,
    TYPE_SET,
    TYPE_VALUES,
    CounterItem,
    SequenceExhaustedError,
    StrategyCore,
    cancelled_error,
    check_counter_attribute,
    counter_written,
    put_if_new,
    read_counter,
    transact,
)
from ddbkeys.ids.cancellation import Cancellation, Verdict
from ddbkeys.ids.collection_keys import collection_keys, highest_query, number_in, sort_key_of
from ddbkeys.ids.group import GroupsInUse
from ddbkeys.ids.remembered import REMEMBERED, Remembered
from ddbkeys.ids.values import MAX_ID, check_key_value, check_padding, counter_value
from ddbkeys.retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys.schema import KeyAttribute, check_name, key_value, to_attributes

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        TransactWriteItemTypeDef,
        UpdateTypeDef,
    )

__all__ = ["MAX_BATCH", "REQUERY_EVERY", "CollectionCore", "OnConflict", "Pending", "Plan"]

Item = dict[str, "AttributeValueTypeDef"]
Keys = tuple[KeyAttribute, KeyAttribute]
PartitionKeyValue = str | int | Decimal | bytes
#: The most items one commit writes (one TransactWriteItems).
MAX_BATCH = 100
#: With on_conflict="next", every third lost race in a row reads the highest number again.
REQUERY_EVERY = 3
OnConflict = Literal["next", "requery"]


@dataclass(frozen=True)
class Pending:
    """One put waiting for its number: the typed item (its partition key set), the collection
    it goes to, and the deadline of the call that put it."""

    item: Item
    collection: str
    deadline: Deadline


@dataclass
class Plan:
    """What the attempts of one commit know: the highest number taken (None: read it), the
    ``never_reuse`` counter's value (None: no counter yet), the token of the write tried (the
    same in a retry of it, a new one for new numbers), and the lost races in a row."""

    highest: int | None = None
    counter: int | None = None
    token: str | None = None
    streak: int = 0

    def requery(self) -> None:
        """Read the highest number again before the next attempt."""
        self.highest = self.counter = self.token = None


class CollectionCore(StrategyCore):
    """Numbers 1, 2, 3, ... per item collection, kept in the sort key: no counter item at all.

    Promises, within one item collection (one partition key value): **unique**, **increasing**
    and **gapless** numbers, across threads, tasks and processes, through lost responses. Each
    number is written only if its item does not exist yet, and only after the number below it
    exists, so no number is skipped; a single put carries a token attribute by which a retried
    write whose response was lost recognises itself (ReturnValuesOnConditionCheckFailure), and
    a batch is one transaction with a ClientRequestToken.

    How: read the highest sort key of the collection (Query, newest first, Limit 1; strongly
    consistent when ``consistent_read``), then write ``highest + 1`` on condition that it does
    not exist. A lost race is retried, at most ``retry.max_attempts`` times, by
    ``on_conflict``: ``"next"`` tries the next number at once (the article's loop; every third
    lost race in a row it reads the highest again, since another writer is then far ahead),
    ``"requery"`` reads the highest again after a full-jitter wait. Within one process (one
    event loop for the asyncio form), concurrent ``put()`` calls on the same collection are
    combined: one caller writes them all, as one PutItem (one item) or one TransactWriteItems
    (several), and the highest number it wrote is remembered so the next write needs no query.

    Cost: the query is 0.5 read units (1 when consistent) and is skipped while the remembered
    number holds; a single put is 1 write unit per KB; a batch of ``k`` is ``2k`` write units on
    the service (transactional). A lost race costs a rejected write. Throughput is that of one
    partition per collection.

    Reuse: without a counter, the next number is the highest one *in the table* plus one. So
    after the highest item of a collection is deleted, its number is handed out again (5
    deleted, the next put gets 5), and an audit cannot see it. ``never_reuse=True`` prevents
    that: the highest number is also kept in a counter item of the collection (sort key number
    0, attribute ``counter_attribute``, and ``ddbkeys_type = "counter"``, see
    :mod:`ddbkeys.entity`) written in the same transaction as the items, so a
    number once given is never given again. Its cost: every put is a transaction of the items
    and the counter item, ``2 * (k + 1)`` write units on the service for ``k`` items (4 for one
    item, against 1 without), and the counter's strongly consistent read (1 read unit) replaces
    the query when the highest number is not known. The counter item stays when the
    collection's items are all deleted (it keeps the collection's partition key listed).

    Memory: the highest number written is remembered for the ``remembered`` collections
    written to last (10,000 by default, about 150 bytes each), a group commit only for the
    collections that calls are writing to now; so a long-lived sequence writing to ever new
    collections stays bounded. A collection forgotten is read again (the query, or the
    counter) by its next write: as for a new instance, a deleted highest number may then be
    given again (without ``never_reuse``).

    Numbers start at 1: items whose number sort key is 0 or negative (written by another tool)
    are left alone and not counted, so the next number is ``max(highest, 0) + 1``; the first
    put to a collection holding only such items gets 1, and a ``never_reuse`` counter is never
    set below 0.

    Sort keys: a number sort key holds the number itself; a string sort key holds
    ``prefix`` + the number padded with zeros to ``width`` digits (an error once it no longer
    fits). Refuses global tables unless ``allow_global_tables``. Each call ends within
    ``deadline`` seconds. Nothing is sent before the first call: the table's description is
    read then, once per object.
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
        remembered: int = REMEMBERED,
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
        self.counter_attribute = check_counter_attribute(counter_attribute, table=self.table)
        if isinstance(remembered, bool) or not isinstance(remembered, int) or remembered < 0:
            raise ConfigurationError(
                f"remembered must be a whole number of collections, 0 or more, not {remembered!r}.",
                table=self.table,
            )
        #: The highest number written, per collection used last (at most ``remembered``).
        self._highest = Remembered(remembered)
        #: The group commits of the collections that calls are using now.
        self._groups: GroupsInUse[Any, Any] = GroupsInUse(self._new_group, self._group_gone)
        #: The most items of one commit (a never_reuse transaction also holds the counter).
        self._max_batch = MAX_BATCH - 1 if self.never_reuse else MAX_BATCH

    # --- keys and values ------------------------------------------------------------------

    def _keys(self, deadline: Deadline) -> Flow[Keys]:
        """The table's partition and sort key (one DescribeTable per object, the first time)."""
        info = yield from self._table_info(deadline)
        return collection_keys(info, self.table)

    def _sort_key(self, sort_key: KeyAttribute, number: int) -> AttributeValueTypeDef:
        return sort_key_of(sort_key, number, width=self.width, prefix=self.prefix, table=self.table)

    def number_of(self, value: Mapping[str, Any]) -> int:
        """The number a sort key holds, or a clear error naming the value (no request)."""
        return number_in(value, prefix=self.prefix, table=self.table)

    def _counter_key(self, keys: Keys, pk_value: AttributeValueTypeDef) -> Item:
        pk, sk = keys
        return {pk.name: pk_value, sk.name: self._sort_key(sk, 0)}

    def _prepare(
        self,
        deadline: Deadline,
        partition_key_value: PartitionKeyValue,
        item: Mapping[str, Any] | None,
        typed: bool,
    ) -> Flow[Pending]:
        """The typed item to write, with its partition key set, or the error that refuses it."""
        pk, sk = yield from self._keys(deadline)
        pk_value = to_attributes({pk.name: partition_key_value}, table=self.table)[pk.name]
        check_key_value(pk, pk_value, table=self.table, where="The partition key value")
        typed_item = to_attributes(item or {}, table=self.table, typed=typed and bool(item))
        for reserved in (pk.name, sk.name, self.token_attribute):
            if reserved in typed_item:
                raise ConfigurationError(
                    f"The item must not hold {reserved!r}: the sequence sets it.", table=self.table
                )
        typed_item[pk.name] = pk_value
        return Pending(typed_item, repr(pk_value), deadline)

    # --- what is kept per collection: bounded, see Remembered and GroupsInUse --------------

    def _remembered(self, collection: str) -> int | None:
        return self._highest.get(collection)

    def _remember(self, collection: str, number: int) -> None:
        self._highest.raise_to(collection, number)

    def _forget(self, collection: str) -> None:
        self._highest.forget(collection)

    def _new_group(self) -> Any:
        """A group commit for one collection, in the driver's form."""
        raise NotImplementedError

    def _group_gone(self, key: Any) -> bool:
        """Whether the calls of a group's ``key`` can no longer end (none, in threads)."""
        return False

    # --- reads ----------------------------------------------------------------------------

    def _query_highest(self, keys: Keys, pk_value: AttributeValueTypeDef) -> Flow[int]:
        """The highest number in the collection (0 when it has none): one Query of one item.
        Numbers start at 1, so a highest sort key below 1 (0, or a negative number another tool
        wrote) counts as none: the sequence never hands out, nor counts up to, a number below
        1."""
        request = highest_query(
            self.table,
            keys,
            pk_value,
            width=self.width,
            prefix=self.prefix,
            consistent_read=self.consistent_read,
        )
        response = yield query(request, count_scanned=True)
        items = response.get("Items", [])
        return max(self.number_of(items[0][keys[1].name]), 0) if items else 0

    def _read_counter(self, keys: Keys, pk_value: AttributeValueTypeDef) -> Flow[int | None]:
        """The ``never_reuse`` counter's value (None when the collection has none yet)."""
        counter = CounterItem(self.table, self._counter_key(keys, pk_value), self.counter_attribute)
        value = yield from read_counter(counter)
        return counter_value(value, table=self.table, key=counter.key, attribute=counter.attribute)

    def _current(self, partition_key_value: PartitionKeyValue) -> Flow[int]:
        """The flow of ``current()``: the last number given out in the collection (0 before the
        first): the ``never_reuse`` counter when there is one, else the highest sort key."""
        deadline = self._begin()
        keys = yield from self._keys(deadline)
        pk_value = key_value(keys[0], partition_key_value, table=self.table)

        def attempt(_: int) -> Flow[int]:
            if self.never_reuse:
                counted = yield from self._read_counter(keys, pk_value)
                if counted is not None:
                    return counted
            return (yield from self._query_highest(keys, pk_value))

        return (yield from self._attempts(attempt, "reading the highest number", deadline))

    # --- the commit of a batch of one collection -------------------------------------------

    def _commit(self, batch: Sequence[Pending]) -> Flow[list[int]]:
        """Write the batch (of one collection) with its next numbers, retrying lost races;
        within the deadline of the batch's call that has the least time left."""
        deadline = min((p.deadline for p in batch), key=lambda d: d.remaining())
        keys = yield from self._keys(deadline)
        collection = batch[0].collection
        items = [p.item for p in batch]
        pk_value = items[0][keys[0].name]
        plan = Plan()

        def attempt(_: int) -> Flow[list[int]]:
            if plan.token is None:
                yield from self._plan(plan, collection, keys, pk_value)
            assert plan.highest is not None
            numbers = self._numbers(collection, plan.highest, len(items))
            written = [
                dict(item, **{keys[1].name: self._sort_key(keys[1], n)})
                for item, n in zip(items, numbers, strict=True)
            ]
            if self.never_reuse:
                yield from self._put_counted(written, plan, collection, keys, pk_value)
            elif len(written) == 1:
                yield from self._put_one(written[0], plan, collection, keys[0].name)
            else:
                yield from self._put_many(written, plan, collection, keys[0].name)
            self._remember(collection, numbers[-1])
            return numbers

        try:
            return (
                yield from self._attempts(attempt, f"adding to collection {collection}", deadline)
            )
        except BaseException:
            self._forget(collection)  # whatever happened, the next write reads afresh
            raise

    def _plan(self, plan: Plan, collection: str, keys: Keys, pk_value: Any) -> Flow[None]:
        """Where the next write starts: the remembered highest number, else the counter
        (``never_reuse``), else the collection's highest sort key; and a new token."""
        known = self._remembered(collection)
        if known is not None:
            plan.highest = plan.counter = known
        elif self.never_reuse:
            plan.counter = yield from self._read_counter(keys, pk_value)
            if plan.counter is not None:
                plan.highest = plan.counter
            else:
                plan.highest = yield from self._query_highest(keys, pk_value)
        else:
            plan.highest = yield from self._query_highest(keys, pk_value)
        plan.token = str(uuid.uuid4())

    def _numbers(self, collection: str, highest: int, count: int) -> list[int]:
        if highest + count > MAX_ID:
            raise SequenceExhaustedError(
                f"Collection {collection} of table {self.table!r} is at {highest}: "
                f"{count} more number(s) would pass 10**38 - 1, the largest DynamoDB "
                "number.",
                table=self.table,
            )
        return list(range(highest + 1, highest + 1 + count))

    def _lost_race(self, plan: Plan, collection: str, taken: int) -> Contention:
        """After number ``taken`` turned out to exist: plan the next attempt by ``on_conflict``."""
        self._forget(collection)  # what this process remembered proved stale
        plan.streak += 1
        if self.on_conflict == "next" and plan.streak % REQUERY_EVERY:
            plan.highest, plan.token = taken, str(uuid.uuid4())
            return Contention(immediate=True)
        # "requery", or "next" losing again and again (another writer is far ahead): read the
        # highest number afresh, after a full-jitter wait.
        plan.requery()
        return Contention(immediate=False)

    def _put_one(self, item: Item, plan: Plan, collection: str, pk_name: str) -> Flow[None]:
        """One conditional PutItem with the token attribute. A failed condition with our own
        token on the old item is our write, applied before its response was lost: done."""
        assert plan.token is not None and plan.highest is not None
        item = dict(item, **{self.token_attribute: {"S": plan.token}})
        try:
            yield put_item(
                {
                    "TableName": self.table,
                    "Item": item,
                    "ConditionExpression": "attribute_not_exists(#pk)",
                    "ExpressionAttributeNames": {"#pk": pk_name},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    "ReturnConsumedCapacity": "TOTAL",
                },
                items=1,
                billed=write_units([item]),
                count_refused=True,
                bill_refused=True,  # a rejected conditional put is still paid
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            old = error_response(exc).get("Item", {})
            if old.get(self.token_attribute) == {"S": plan.token}:
                return
            raise self._lost_race(plan, collection, plan.highest + 1) from None

    def _put_many(self, items: list[Item], plan: Plan, collection: str, pk_name: str) -> Flow[None]:
        """One transaction of conditional puts, with the plan's token as ClientRequestToken."""
        assert plan.token is not None and plan.highest is not None
        actions = [put_if_new(self.table, item, pk_name) for item in items]
        billed = write_units(items, transactional=True)
        reasons = yield from transact(actions, plan.token, items=len(items), billed=billed)
        if reasons is None:
            return
        if reasons.verdict is Verdict.INVALID:
            raise cancelled_error(self, reasons)
        if reasons.failed_conditions:  # action i holds number highest + 1 + i
            taken = plan.highest + 1 + max(reasons.failed_conditions)
            raise self._lost_race(plan, collection, taken)
        raise self._retry_whole(reasons, plan, collection)

    def _retry_whole(self, reasons: Cancellation, plan: Plan, collection: str) -> Exception:
        """A transaction cancelled with no failed condition (conflicts, throttling, no reason):
        read again and try again, after a full-jitter wait (conflicts) or an exponential one
        (throttling)."""
        self._forget(collection)
        plan.requery()
        if reasons.verdict is Verdict.THROTTLED:
            return Throttled(reasons.describe())
        return Contention(immediate=False)

    # --- never_reuse: the highest number also kept in a counter item, number 0 ------------

    def _put_counted(
        self,
        items: list[Item],
        plan: Plan,
        collection: str,
        keys: Keys,
        pk_value: AttributeValueTypeDef,
    ) -> Flow[None]:
        """The items and the collection's counter, moved to the last of their numbers, in one
        transaction whose first action is the counter's (on condition it still holds what the
        plan read)."""
        assert plan.token is not None and plan.highest is not None
        key = self._counter_key(keys, pk_value)
        new = plan.highest + len(items)
        values: dict[str, AttributeValueTypeDef] = {":new": {"N": str(new)}, **TYPE_VALUES}
        update: UpdateTypeDef = {
            "TableName": self.table,
            "Key": key,
            "UpdateExpression": f"SET #c = :new, {TYPE_SET}",
            "ExpressionAttributeNames": {"#c": self.counter_attribute, **TYPE_NAMES},
            "ExpressionAttributeValues": values,
            "ConditionExpression": "attribute_not_exists(#c)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if plan.counter is not None:
            update["ConditionExpression"] = "#c = :last"
            values[":last"] = {"N": str(plan.counter)}
        actions: list[TransactWriteItemTypeDef] = [{"Update": update}]
        actions += [put_if_new(self.table, i, keys[0].name) for i in items]
        counter_image = counter_written(key, self.counter_attribute, new)
        billed = write_units([counter_image, *items], transactional=True)
        reasons = yield from transact(actions, plan.token, items=len(items), billed=billed)
        if reasons is None:
            return
        if reasons.verdict is Verdict.INVALID:
            raise cancelled_error(self, reasons)
        self._forget(collection)
        if reasons.failed(0):
            # The counter moved (another writer): go on from where it is now.
            old = (reasons.old_item(0) or {}).get(self.counter_attribute)
            now = counter_value(old, table=self.table, key=key, attribute=self.counter_attribute)
            plan.counter, plan.highest = now, max(now or 0, plan.highest)
        elif reasons.failed_conditions:
            # The counter held, but a number above it holds an item it did not count (written
            # by something else): go past it, so the collection stays gapless.
            plan.highest += max(reasons.failed_conditions)  # action i holds highest + i
        else:
            raise self._retry_whole(reasons, plan, collection)
        plan.streak += 1
        plan.token = str(uuid.uuid4())
        raise Contention(immediate=bool(plan.streak % 2))
