"""The gapless sequence (seed 001): the counter and the item move together, in one transaction."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ddbkeys.capacity import Usage, write_units
from ddbkeys.errors import ConfigurationError, DdbKeysError, KeySchemaError
from ddbkeys.ids.base import (
    Contention,
    GroupCommit,
    IdStrategy,
    ItemExistsError,
    counter_item_key,
    put_if_new,
    transact,
)
from ddbkeys.retry import RetryPolicy
from ddbkeys.schema import check_name, key_value, to_attributes

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["MAX_BATCH", "GaplessSequence"]

Item = dict[str, "AttributeValueTypeDef"]
MAX_BATCH = 99  # TransactWriteItems takes 100 actions: the counter and 99 items


class GaplessSequence(IdStrategy):
    """Ids with no gaps: each item is written in the same transaction that moves the counter.

    Promises: **unique**, **increasing** and **gapless** ids (exactly 1, 2, 3, ... with one
    item per id), across threads and processes, through lost responses (each transaction
    carries a ClientRequestToken, so a retry of an applied one is not applied again) and
    failed writes (an item that already exists raises :class:`ItemExistsError` and uses up no
    id). Ids are given in commit order.

    How: the counter item's ``attribute`` holds the last id; a commit reads it (or knows it from
    its own last commit, or from the old value a failed condition returns), then writes the
    items with ids ``last+1 ... last+k`` and sets the counter to ``last+k`` on condition that it
    still is ``last``. A lost race (ConditionalCheckFailed on the counter, or
    TransactionConflict) is retried with full-jitter backoff, at most ``retry.max_attempts``
    times.

    Group commit: concurrent ``put()`` calls from threads of one process are combined into one
    transaction of up to 99 items, so contention on the counter falls as load rises. While
    busy, the committing thread lingers ``linger`` seconds before each commit: batches grow,
    and writers in other processes get a window instead of being starved.

    Cost: a transaction of ``k`` items and the counter: on the service ``2 * (k + 1)`` write
    units (transactional writes cost double; DynamoDB Local reports half), so between 4 units
    (one item alone) and about 2.02 units per id (full batches). A lost race costs a cancelled
    transaction. The counter's read is 1 read unit and is skipped when the last value is known.

    The id goes into ``id_attribute`` of each item; when that is the table's partition (or
    sort) key, the id is the key, in the key's type. Items must carry the rest of the key.
    Refuses global tables unless ``allow_global_tables``.
    """

    refuses_global_tables = True
    default_retry = RetryPolicy(max_attempts=400, base_delay=0.002, max_delay=0.05)

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        name: str = "sequence",
        *,
        key_attribute: str | None = None,
        counter_key: Mapping[str, Any] | None = None,
        counter_attribute: str = "last_id",
        id_attribute: str = "id",
        group_commit: bool = True,
        max_batch: int = MAX_BATCH,
        linger: float = 0.002,
        retry: RetryPolicy | None = None,
        usage: Usage | None = None,
        allow_global_tables: bool = False,
    ) -> None:
        super().__init__(
            client, table, retry=retry, usage=usage, allow_global_tables=allow_global_tables
        )
        self.name = check_name("sequence name", name, table=table)
        self.key_attribute = key_attribute
        self.counter_attribute = check_name("counter attribute", counter_attribute, table=table)
        self.id_attribute = check_name("id attribute", id_attribute, table=table)
        if not isinstance(max_batch, int) or not 1 <= max_batch <= MAX_BATCH:
            raise ConfigurationError(f"max_batch must be 1 to {MAX_BATCH}, not {max_batch!r}.")
        self._counter_key_given = (
            to_attributes(counter_key, table=table) if counter_key is not None else None
        )
        self._counter_key: Item | None = None
        self._last: int | None = None  # the counter's value after our last commit
        self._last_lock = threading.Lock()
        self._group: GroupCommit[Item, int] | None = (
            GroupCommit(self._commit_each, max_batch, linger=linger) if group_commit else None
        )

    @property
    def counter_key(self) -> Item:
        if self._counter_key is None:
            self._counter_key = self._counter_key_given or counter_item_key(
                self, self.name, self.key_attribute
            )
        return self._counter_key

    def put(self, item: Mapping[str, Any]) -> int:
        """Write ``item`` with the next id, and return the id."""
        typed = self._prepare(item)
        if self._group is not None:
            return self._group.submit(typed)
        result = self._commit_each([typed])[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def put_many(self, items: Sequence[Mapping[str, Any]]) -> list[int]:
        """Write up to 99 items in one transaction with consecutive ids; all or none.

        If one of them already exists, :class:`ItemExistsError` names it and nothing is written.
        """
        if not 1 <= len(items) <= MAX_BATCH:
            raise ConfigurationError(
                f"put_many takes 1 to {MAX_BATCH} items, not {len(items)}.", table=self.table
            )
        typed = [self._prepare(item) for item in items]
        results = self._commit(typed, atomic=True)
        return [r for r in results if isinstance(r, int)]

    def _prepare(self, item: Mapping[str, Any]) -> Item:
        typed = to_attributes(item, table=self.table)
        info = self.table_info()
        if self.id_attribute in typed:
            raise ConfigurationError(
                f"The item already has the id attribute {self.id_attribute!r}; the sequence "
                "sets it. Leave it out.",
                table=self.table,
            )
        for key in (info.partition_key, info.sort_key):
            if key is None or key.name == self.id_attribute:
                continue
            if key.name not in typed:
                raise KeySchemaError(
                    f"The item has no {key.name!r}, a key attribute of table {self.table!r}.",
                    table=self.table,
                )
            key_value(key, next(iter(typed[key.name].values())), table=self.table)
        self.counter_key  # noqa: B018 - resolve the counter key before the first write
        return typed

    def _id_value(self, value: int) -> AttributeValueTypeDef:
        info = self.table_info()
        for key in (info.partition_key, info.sort_key):
            if key is not None and key.name == self.id_attribute and key.type == "S":
                return {"S": str(value)}
        return {"N": str(value)}

    def _read_last(self) -> int:
        response = self.client.get_item(
            TableName=self.table,
            Key=self.counter_key,
            ConsistentRead=True,
            ProjectionExpression="#v",
            ExpressionAttributeNames={"#v": self.counter_attribute},
            ReturnConsumedCapacity="TOTAL",
        )
        self.usage.add(response, write=False)
        value = response.get("Item", {}).get(self.counter_attribute)
        return int(value["N"]) if value and "N" in value else 0

    def current(self) -> int:
        """The last id given out (0 before the first)."""
        return self._attempts(lambda _: self._read_last(), f"reading sequence {self.name!r}")

    def _commit_each(self, items: Sequence[Item]) -> list[int | BaseException]:
        return self._commit(items, atomic=False)

    def _commit(self, items: Sequence[Item], *, atomic: bool) -> list[int | BaseException]:
        """Write ``items`` with consecutive ids in one transaction (retrying lost races).

        With ``atomic=False`` (group commit) an item that exists fails alone and the rest are
        written; with ``atomic=True`` it fails them all.
        """
        results: list[int | BaseException | None] = [None] * len(items)
        live = list(range(len(items)))
        pk_name = self.table_info().partition_key.name
        plan: dict[str, Any] = {}

        def attempt(_: int) -> None:
            if "token" not in plan:
                with self._last_lock:
                    last = self._last
                if last is None:
                    last = self._read_last()
                plan.update(last=last, token=str(uuid.uuid4()))
            last = plan["last"]
            new = last + len(live)
            counter: dict[str, Any] = {
                "TableName": self.table,
                "Key": self.counter_key,
                "UpdateExpression": "SET #v = :new",
                "ExpressionAttributeNames": {"#v": self.counter_attribute},
                "ExpressionAttributeValues": {":new": {"N": str(new)}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
            if last == 0:
                counter["ConditionExpression"] = "attribute_not_exists(#v)"
            else:
                counter["ConditionExpression"] = "#v = :last"
                counter["ExpressionAttributeValues"][":last"] = {"N": str(last)}
            written = [dict(self.counter_key, **{self.counter_attribute: {"N": str(new)}})]
            for offset, index in enumerate(live, start=1):
                item = dict(items[index])
                item[self.id_attribute] = self._id_value(last + offset)
                written.append(item)
            actions = [{"Update": counter}] + [
                put_if_new(self.table, i, pk_name) for i in written[1:]
            ]
            billed = write_units(written, transactional=True)
            reasons = transact(self, actions, plan["token"], items=len(live), billed=billed)
            if reasons is not None:
                self._cancelled(
                    reasons, items=items, live=live, results=results, plan=plan, atomic=atomic
                )
                return
            for offset, index in enumerate(live, start=1):
                results[index] = last + offset
            live.clear()
            with self._last_lock:
                if self._last is None or self._last < new:
                    self._last = new

        while live:
            self._attempts(attempt, f"writing {len(live)} item(s) with sequence {self.name!r}")
        assert all(r is not None for r in results)
        return [r for r in results if r is not None]

    def _cancelled(
        self,
        reasons: list[Any],
        *,
        items: Sequence[Item],
        live: list[int],
        results: list[int | BaseException | None],
        plan: dict[str, Any],
        atomic: bool,
    ) -> None:
        """Tell what cancelled the transaction, from its CancellationReasons; update the plan."""
        codes = [r.get("Code", "None") for r in reasons]
        last = plan.get("last")
        streak = int(plan.get("streak", 0)) + 1
        plan.clear()
        plan["streak"] = streak
        existing = [
            live[i - 1]
            for i, code in enumerate(codes)
            if i >= 1 and code == "ConditionalCheckFailed"
        ]
        pk = self.table_info().partition_key.name
        for index in existing:
            results[index] = ItemExistsError(
                f"An item with {pk} {_plain(items[index].get(pk))!r} already exists in table "
                f"{self.table!r}; it was not written and used up no id.",
                table=self.table,
            )
        if existing and atomic:
            raise results[existing[0]]  # type: ignore[misc]
        live[:] = [i for i in live if results[i] is None]
        counter_code = codes[0] if codes else "None"
        with self._last_lock:
            if counter_code == "ConditionalCheckFailed":
                # Another writer moved the counter: its old image tells us where it is now.
                old = reasons[0].get("Item", {}).get(self.counter_attribute, {}).get("N")
                self._last = int(old) if old is not None else 0
            elif counter_code == "None" and last is not None:
                self._last = last  # the counter held: only items failed
            else:
                self._last = None
        if counter_code == "ConditionalCheckFailed" and streak % 2:
            # The old image told us the counter's value: go again at once; after a second
            # loss in a row, wait (full jitter) as usual.
            raise Contention(immediate=True)
        if counter_code == "ConditionalCheckFailed" or any(code in _RACES for code in codes):
            raise Contention(immediate=False)
        if not existing:
            raise DdbKeysError(
                f"A transaction on table {self.table!r} was cancelled ({', '.join(codes)}).",
                table=self.table,
                code="TransactionCanceledException",
            )


_RACES = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"})


def _plain(value: Any) -> Any:
    """``{"S": "x"}`` -> ``"x"``, for messages."""
    return next(iter(value.values())) if isinstance(value, dict) and len(value) == 1 else value
