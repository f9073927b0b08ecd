"""The item-collection sequence's decisions, apart from any client: a value built from its
settings alone (:class:`CollectionCore`). How an item is prepared, which request a commit sends
next and what each answer means, as flows (see :mod:`ddbkeys._core`) that take what they need as
arguments: the table's keys (from its description) and the highest numbers the sequence
remembers (a :class:`~ddbkeys.ids._remembered.Remembered`).
:class:`~ddbkeys.ids._collection.CollectionSequence` (sync or asyncio) is this core, a link
(:class:`~ddbkeys.ids._link.Link`), a driver and the group commits in use."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, cast

from botocore.exceptions import ClientError

from ddbkeys._capacity import write_units
from ddbkeys._core.attempts import Contention, Throttled
from ddbkeys._core.steps import Flow, put_item, query
from ddbkeys._errors import ConfigurationError, KeySchemaError, error_code
from ddbkeys._retry import Deadline
from ddbkeys._schema import (
    KeyAttribute,
    TableInfo,
    check_name,
    check_table_name,
    key_value,
    to_attributes,
)
from ddbkeys._translate import error_response
from ddbkeys.ids._base import (
    TYPE_NAMES,
    TYPE_SET,
    TYPE_VALUES,
    Attempts,
    CounterItem,
    SequenceExhaustedError,
    cancelled_error,
    check_counter_attribute,
    counter_written,
    earliest,
    put_if_new,
    put_new,
    stale_images,
    stale_key,
    transact,
)
from ddbkeys.ids._cancellation import Cancellation, Verdict
from ddbkeys.ids._collection_keys import (
    collection_keys,
    highest_in,
    highest_query,
    number_in,
    sort_key_of,
)
from ddbkeys.ids._counter_item import NUMBER_0_TAKEN, not_a_counter, read_counter
from ddbkeys.ids._remembered import REMEMBERED, Remembered
from ddbkeys.ids._values import (
    MAX_ID,
    check_key_value,
    check_padding,
    counter_value,
    flag,
    show_key,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        PutItemInputTypeDef,
        TransactWriteItemTypeDef,
        UpdateTypeDef,
    )

__all__ = [
    "MAX_BATCH",
    "REQUERY_EVERY",
    "CollectionCore",
    "Commit",
    "Keys",
    "OnConflict",
    "PartitionKeyValue",
    "Pending",
]

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
class Commit:
    """One commit to ``collection`` (its partition key value ``pk_value``, the table's
    ``keys``), the highest numbers the sequence remembers (``memory``), and what the commit's
    attempts know: the highest number taken (None: read it), the ``never_reuse`` counter's
    value (None: no counter yet), the token of the write tried (the same in a retry of it, a
    new one for new numbers), and the lost races in a row."""

    collection: str
    keys: Keys
    pk_value: AttributeValueTypeDef
    memory: Remembered
    highest: int | None = None
    counter: int | None = None
    token: str | None = None
    streak: int = 0

    def stale(self) -> None:
        """What the sequence remembered of the collection proved stale: read it next time."""
        self.memory.forget(self.collection)

    def requery(self) -> None:
        """Read the highest number again before the next attempt."""
        self.highest = self.counter = self.token = None


@dataclass(frozen=True)
class CollectionCore:
    """Numbers per item collection of ``table`` in its sort key (``prefix`` and ``width``
    digits in a string one), read with ``consistent_read``; a lost race goes on by
    ``on_conflict``; a single put carries ``token_attribute``; ``never_reuse`` keeps the
    highest number in ``counter_attribute`` of a counter item (sort key 0) too; the highest
    numbers of the ``remembered`` collections used last are kept. Settings no sequence can have
    are a :class:`ConfigurationError` here."""

    table: str
    width: int = 10
    prefix: str = ""
    consistent_read: bool = True
    on_conflict: OnConflict = "next"
    token_attribute: str = "ddbkeys_token"
    never_reuse: bool = False
    counter_attribute: str = "last_number"
    remembered: int = REMEMBERED

    def __post_init__(self) -> None:
        table = check_table_name(self.table)
        check_padding(self.width, self.prefix, table=table)
        if self.on_conflict not in ("next", "requery"):
            raise ConfigurationError(
                f"on_conflict must be 'next' or 'requery', not {self.on_conflict!r}.", table=table
            )
        check_name("token attribute", self.token_attribute, table=table)
        flag("never_reuse", self.never_reuse, table)
        flag("consistent_read", self.consistent_read, table)
        check_counter_attribute(self.counter_attribute, table=table)
        remembered = self.remembered
        if isinstance(remembered, bool) or not isinstance(remembered, int) or remembered < 0:
            raise ConfigurationError(
                f"remembered must be a whole number of collections, 0 or more, not {remembered!r}.",
                table=table,
            )

    @property
    def max_batch(self) -> int:
        """The most items of one commit (a never_reuse transaction also holds the counter)."""
        return MAX_BATCH - 1 if self.never_reuse else MAX_BATCH

    # --- keys and values ------------------------------------------------------------------

    def keys(self, info: TableInfo) -> Keys:
        """The table's partition and sort key, from its description (or a KeySchemaError)."""
        return collection_keys(info, self.table)

    def sort_key(self, sort_key: KeyAttribute, number: int) -> AttributeValueTypeDef:
        """The sort key that holds ``number``."""
        return sort_key_of(sort_key, number, width=self.width, prefix=self.prefix, table=self.table)

    def number_of(self, value: Mapping[str, Any]) -> int:
        """The number a sort key holds (a string one as the sequence writes it), else an error."""
        return number_in(value, prefix=self.prefix, table=self.table, width=self.width)

    def counter_key(self, keys: Keys, pk_value: AttributeValueTypeDef) -> Item:
        """The key of a collection's counter item (``never_reuse``): the number 0."""
        pk, sk = keys
        return {pk.name: pk_value, sk.name: self.sort_key(sk, 0)}

    def prepare(
        self,
        keys: Keys,
        partition_key_value: PartitionKeyValue,
        item: Mapping[str, Any] | None,
        typed: bool,
        deadline: Deadline,
    ) -> Pending:
        """The typed item to write, with its partition key set, or the error that refuses it."""
        pk, sk = keys
        pk_value = to_attributes({pk.name: partition_key_value}, table=self.table)[pk.name]
        check_key_value(pk, pk_value, table=self.table, where="The partition key value")
        typed_item = to_attributes(item or {}, table=self.table, typed=typed and bool(item))
        for reserved in (pk.name, sk.name, self.token_attribute):
            if reserved in typed_item:
                raise ConfigurationError(
                    f"The item must not hold {reserved!r}: the sequence sets it (table "
                    f"{self.table!r}).",
                    table=self.table,
                )
        typed_item[pk.name] = pk_value
        return Pending(typed_item, show_key({pk.name: pk_value}), deadline)

    # --- reads ----------------------------------------------------------------------------

    def query_highest(self, keys: Keys, pk_value: AttributeValueTypeDef) -> Flow[int]:
        """The highest number in the collection: one Query of one item (``highest_in``)."""
        request = highest_query(
            self.table,
            keys,
            pk_value,
            width=self.width,
            prefix=self.prefix,
            consistent_read=self.consistent_read,
        )
        response = yield query(request, count_scanned=True)
        found = response.get("Items", [])
        return highest_in(
            found, keys, pk_value, prefix=self.prefix, table=self.table, width=self.width
        )

    def read_counter(self, keys: Keys, pk_value: AttributeValueTypeDef) -> Flow[int | None]:
        """The ``never_reuse`` counter's value (None when the collection has none yet)."""
        key = self.counter_key(keys, pk_value)
        counter = CounterItem(self.table, key, self.counter_attribute, NUMBER_0_TAKEN)
        value = yield from read_counter(counter)  # (an item of yours at number 0: refused)
        return counter_value(value, table=self.table, key=counter.key, attribute=counter.attribute)

    def current(
        self,
        keys: Keys,
        partition_key_value: PartitionKeyValue,
        deadline: Deadline,
        attempts: Attempts,
    ) -> Flow[int]:
        """The last number given out in the collection (0 before the first): the
        ``never_reuse`` counter when there is one, else the highest sort key."""
        pk_value = key_value(keys[0], partition_key_value, table=self.table)

        def attempt(_: int) -> Flow[int]:
            if self.never_reuse:
                counted = yield from self.read_counter(keys, pk_value)
                if counted is not None:
                    return counted
            return (yield from self.query_highest(keys, pk_value))

        number: int = yield from attempts(attempt, "reading the highest number", deadline)
        return number

    # --- the commit of a batch of one collection -------------------------------------------

    def commit(
        self, batch: Sequence[Pending], keys: Keys, memory: Remembered, attempts: Attempts
    ) -> Flow[list[int]]:
        """Write the batch (of one collection) with its next numbers, retrying lost races
        through ``attempts``, within the deadline of the batch's call that has the least time
        left; what it learns of the collection's highest number is kept in ``memory``."""
        items = [p.item for p in batch]
        if any(keys[0].name not in item for item in items):  # (a put prepared before)
            raise KeySchemaError(
                f"Table {self.table!r} is keyed on {keys[0].name!r} now, not on the key this "
                "put was prepared for: the table was made again with another key.",
                table=self.table,
            )
        commit = Commit(batch[0].collection, keys, items[0][keys[0].name], memory)
        sk = keys[1]

        def attempt(_: int) -> Flow[list[int]]:
            if commit.token is None:
                yield from self._start(commit)
            assert commit.highest is not None
            numbers = self._numbers(commit.collection, commit.highest, len(items))
            written = [
                dict(item, **{sk.name: self.sort_key(sk, n)})
                for item, n in zip(items, numbers, strict=True)
            ]
            if self.never_reuse:
                yield from self._put_counted(written, commit)
            elif len(written) == 1:
                yield from self._put_one(written[0], commit)
            else:
                yield from self._put_many(written, commit)
            memory.raise_to(commit.collection, numbers[-1])
            return numbers

        try:
            what = f"adding to collection {commit.collection}"
            numbers: list[int] = yield from attempts(attempt, what, earliest(batch))
        except BaseException:
            commit.stale()  # whatever happened, the next write reads afresh
            raise
        return numbers

    def _start(self, commit: Commit) -> Flow[None]:
        """Where the next write starts: the remembered highest number, else the counter
        (``never_reuse``), else the collection's highest sort key; and a new token."""
        known = commit.memory.get(commit.collection)
        if known is not None:
            commit.highest = commit.counter = known
        elif self.never_reuse:
            commit.counter = yield from self.read_counter(commit.keys, commit.pk_value)
            if commit.counter is not None:
                commit.highest = commit.counter
            else:
                commit.highest = yield from self.query_highest(commit.keys, commit.pk_value)
        else:
            commit.highest = yield from self.query_highest(commit.keys, commit.pk_value)
        commit.token = str(uuid.uuid4())

    def _numbers(self, collection: str, highest: int, count: int) -> list[int]:
        if highest + count > MAX_ID:
            raise SequenceExhaustedError(
                f"Collection {collection} of table {self.table!r} is at {highest}: "
                f"{count} more number(s) would pass 10**38 - 1, the largest DynamoDB "
                "number.",
                table=self.table,
            )
        return list(range(highest + 1, highest + 1 + count))

    def _lost_race(self, commit: Commit, taken: int) -> Contention:
        """After number ``taken`` turned out to exist: plan the next attempt by ``on_conflict``."""
        commit.stale()
        commit.streak += 1
        if self.on_conflict == "next" and commit.streak % REQUERY_EVERY:
            commit.highest, commit.token = taken, str(uuid.uuid4())
            return Contention(immediate=True)
        # "requery", or "next" losing again and again (another writer is far ahead): read the
        # highest number afresh, after a full-jitter wait.
        commit.requery()
        return Contention(immediate=False)

    def _put_one(self, item: Item, commit: Commit) -> Flow[None]:
        """One conditional PutItem with the token attribute. A failed condition with our own
        token on the old item is our write, applied before its response was lost: done."""
        assert commit.token is not None and commit.highest is not None
        item = dict(item, **{self.token_attribute: {"S": commit.token}})
        try:
            params = put_new(self.table, item, names := [k.name for k in commit.keys])
            yield put_item(
                cast("PutItemInputTypeDef", {**params, "ReturnConsumedCapacity": "TOTAL"}),
                items=1,
                billed=write_units([item]),
                count_refused=True,
                bill_refused=True,  # a rejected conditional put is still paid
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            old = error_response(exc).get("Item", {})
            if old.get(self.token_attribute) == {"S": commit.token}:
                return
            if stale := stale_key(self.table, item, old, names):
                raise stale from None
            raise self._lost_race(commit, commit.highest + 1) from None

    def _put_many(self, items: list[Item], commit: Commit) -> Flow[None]:
        """One transaction of conditional puts, with the commit's token as ClientRequestToken."""
        assert commit.token is not None and commit.highest is not None
        names = [k.name for k in commit.keys]
        actions = [put_if_new(self.table, item, names) for item in items]
        billed = write_units(items, transactional=True)
        reasons = yield from transact(actions, commit.token, items=len(items), billed=billed)
        if reasons is None:
            return
        if reasons.verdict is Verdict.INVALID:
            raise cancelled_error(self, reasons)
        if stale := stale_images(self.table, items, reasons, names):
            raise stale
        if reasons.failed_conditions:  # action i holds number highest + 1 + i
            taken = commit.highest + 1 + max(reasons.failed_conditions)
            raise self._lost_race(commit, taken)
        raise self._retry_whole(reasons, commit)

    @staticmethod
    def _retry_whole(reasons: Cancellation, commit: Commit) -> Exception:
        """A transaction cancelled with no failed condition (conflicts, throttling, no reason):
        read again and try again, after a full-jitter wait (conflicts) or an exponential one
        (throttling)."""
        commit.stale()
        commit.requery()
        if reasons.verdict is Verdict.THROTTLED:
            return Throttled(reasons.describe())
        return Contention(immediate=False)

    # --- never_reuse: the highest number also kept in a counter item, number 0 ------------

    def _put_counted(self, items: list[Item], commit: Commit) -> Flow[None]:
        """The items and the collection's counter, moved to the last of their numbers, in one
        transaction whose first action is the counter's (on condition it still holds what the
        commit read)."""
        assert commit.token is not None and commit.highest is not None
        key = self.counter_key(commit.keys, commit.pk_value)
        new = commit.highest + len(items)
        values: dict[str, AttributeValueTypeDef] = {":new": {"N": str(new)}, **TYPE_VALUES}
        names = {"#c": self.counter_attribute, **TYPE_NAMES}
        # (an item of yours at number 0, one another tool numbered 0, is never made the
        # counter: it is none yet, or typed a counter, or holds the counter and no type)
        if commit.counter is None:
            names["#k"] = commit.keys[0].name
            condition = "attribute_not_exists(#c) AND (attribute_not_exists(#k) OR "
        else:
            values[":last"] = {"N": str(commit.counter)}
            condition = "#c = :last AND (attribute_not_exists(#ddbkeys_type) OR "
        update: UpdateTypeDef = {
            "TableName": self.table,
            "Key": key,
            "UpdateExpression": f"SET #c = :new, {TYPE_SET}",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ConditionExpression": condition + "#ddbkeys_type = :ddbkeys_type)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        actions: list[TransactWriteItemTypeDef] = [{"Update": update}]
        keys = [k.name for k in commit.keys]
        actions += [put_if_new(self.table, i, keys) for i in items]
        counter_image = counter_written(key, self.counter_attribute, new)
        billed = write_units([counter_image, *items], transactional=True)
        reasons = yield from transact(actions, commit.token, items=len(items), billed=billed)
        if reasons is None:
            return
        if reasons.verdict is Verdict.INVALID:
            raise cancelled_error(self, reasons)
        if stale := stale_images(self.table, items, reasons, keys):
            raise stale
        commit.stale()
        if reasons.failed(0):
            # The counter moved (another writer): go on from where it is now; or an item of
            # yours took its place: refused, nothing written.
            counter = CounterItem(self.table, key, self.counter_attribute, NUMBER_0_TAKEN)
            refused = not_a_counter(counter, reasons.old_item(0))
            if refused is not None:
                raise refused
            old = (reasons.old_item(0) or {}).get(self.counter_attribute)
            now = counter_value(old, table=self.table, key=key, attribute=self.counter_attribute)
            commit.counter, commit.highest = now, max(now or 0, commit.highest)
        elif reasons.failed_conditions:
            # The counter held, but a number above it holds an item it did not count (written
            # by something else): go past it, so the collection stays gapless.
            commit.highest += max(reasons.failed_conditions)  # action i holds highest + i
        else:
            raise self._retry_whole(reasons, commit)
        commit.streak += 1
        commit.token = str(uuid.uuid4())
        raise Contention(immediate=bool(commit.streak % 2))
