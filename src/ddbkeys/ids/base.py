"""What the id strategies share: the bounded attempt loop, the table description, accounting,
the global-table guard, and group commit."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys.capacity import Usage
from ddbkeys.errors import (
    ConfigurationError,
    DdbKeysError,
    KeySchemaError,
    error_code,
    error_response,
    raise_translated,
)
from ddbkeys.retry import RetriesExhaustedError, RetryPolicy, is_unavailable
from ddbkeys.schema import TableInfo, check_table_name, describe, key_value

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["GlobalTableError", "IdStrategy", "ItemExistsError", "SequenceExhaustedError"]

T = TypeVar("T")
R = TypeVar("R")


class ItemExistsError(DdbKeysError):
    """The item to write already exists. No id was used up."""


class SequenceExhaustedError(DdbKeysError):
    """The next id would pass the configured maximum (or no longer fits its sort key)."""


class GlobalTableError(ConfigurationError):
    """The table has replicas in other regions, where last-writer-wins breaks the strategy."""


class Contention(Exception):
    """Raised by an attempt that lost a race; the loop tries again (after a full-jitter wait
    unless ``immediate``)."""

    def __init__(self, immediate: bool = False) -> None:
        super().__init__("lost a race")
        self.immediate = immediate


class IdStrategy:
    """The base of every id strategy: a client, a table, a retry policy and a :class:`Usage`.

    ``allow_global_tables`` matters only to strategies that are unsafe on global tables.
    """

    #: Strategies that depend on a single-region conditional write refuse global tables.
    refuses_global_tables = False
    #: The retry policy when none is given. Optimistic strategies override it: a writer that
    #: lost a race learns the counter's new value at once, so short waits (and many of them)
    #: keep it from being starved by a winner that goes on committing.
    default_retry = RetryPolicy()

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        *,
        retry: RetryPolicy | None = None,
        usage: Usage | None = None,
        allow_global_tables: bool = False,
    ) -> None:
        self.client = client
        self.table = check_table_name(table)
        self.retry = retry or self.default_retry
        self.usage = usage or Usage()
        self.allow_global_tables = allow_global_tables
        self._info: TableInfo | None = None
        self._info_lock = threading.Lock()

    def table_info(self) -> TableInfo:
        """The table's description, read once (and the global-table guard applied)."""
        with self._info_lock:
            if self._info is None:
                info = describe(self.client, self.table)
                if (
                    info.replica_regions
                    and self.refuses_global_tables
                    and not self.allow_global_tables
                ):
                    raise GlobalTableError(
                        f"Table {self.table!r} is a global table (replicas in "
                        f"{', '.join(info.replica_regions)}). {type(self).__name__} relies on "
                        "conditional writes that last-writer-wins replication can silently "
                        "undo, so ids could repeat across regions. Write from one region only "
                        "and pass allow_global_tables=True (--allow-global-tables) to go on.",
                        table=self.table,
                    )
                self._info = info
            return self._info

    def _attempts(self, attempt: Callable[[int], R], what: str) -> R:
        """Run ``attempt(n)`` until it returns, at most ``retry.max_attempts`` times.

        :class:`Contention` waits with full jitter; throttling, 5xx and dropped connections
        (after botocore's own retries) wait with exponential backoff and send the same request
        again; any other error goes up at once, translated where ddbkeys knows it.
        """
        policy = self.retry
        last: BaseException | None = None
        for n in range(policy.max_attempts):
            if n:
                self.usage.count(retries=1)
            try:
                return attempt(n)
            except Contention as lost:
                last = lost
                self.usage.count(conflicts=1)
                if not lost.immediate:
                    policy.wait_contention(n)
            except (ClientError, BotoCoreError) as exc:
                if not is_unavailable(exc):
                    raise_translated(exc, table=self.table)
                last = exc
                policy.wait_unavailable(n)
        raise RetriesExhaustedError(
            f"{what} on table {self.table!r} still failed after {policy.max_attempts} attempts "
            f"({'lost races to other writers' if isinstance(last, Contention) else last}). "
            "Raise RetryPolicy.max_attempts, or spread the load.",
            attempts=policy.max_attempts,
            table=self.table,
            cause=last,
        )


def put_if_new(table: str, item: Mapping[str, Any], pk_name: str) -> dict[str, Any]:
    """A transaction action that writes ``item`` only if no item with its key exists."""
    return {
        "Put": {
            "TableName": table,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": pk_name},
        }
    }


def transact(
    strategy: IdStrategy, actions: list[Any], token: str, *, items: int, billed: float
) -> list[dict[str, Any]] | None:
    """TransactWriteItems with a ClientRequestToken (so a retry of an applied transaction is not
    applied again). Returns None when it was applied, or the CancellationReasons when it was
    cancelled; other errors go up. Counted in ``strategy.usage``."""
    try:
        response = strategy.client.transact_write_items(
            TransactItems=actions, ClientRequestToken=token, ReturnConsumedCapacity="TOTAL"
        )
    except ClientError as exc:
        if error_code(exc) != "TransactionCanceledException":
            raise
        strategy.usage.add(None, write=True)
        return list(error_response(exc).get("CancellationReasons", []))
    strategy.usage.add(response, write=True, items=items, billed=billed)
    return None


def counter_item_key(
    strategy: IdStrategy, name: str, key_attribute: str | None
) -> dict[str, AttributeValueTypeDef]:
    """``{partition key: name}`` for a counter item, or a clear error when the table's key schema
    does not allow a key made from a name alone."""
    info = strategy.table_info()
    pk = info.partition_key
    table = strategy.table
    if key_attribute and key_attribute != pk.name:
        raise KeySchemaError(
            f"Table {table!r} has partition key {pk.name!r}, not {key_attribute!r}: pass "
            f"key_attribute={pk.name!r} (--key-attribute {pk.name}).",
            table=table,
        )
    if info.sort_key is not None or pk.type != "S":
        raise KeySchemaError(
            f"Table {table!r} has the key ({', '.join(info.key_names())}); a counter item key "
            "cannot be made from a name alone: pass key= with the whole key of the counter item.",
            table=table,
        )
    return {pk.name: key_value(pk, name, table=table)}


@dataclass
class _Slot(Generic[T, R]):
    value: T
    done: threading.Event = field(default_factory=threading.Event)
    result: R | None = None
    error: BaseException | None = None
    finished: bool = False
    lead: bool = False


class GroupCommit(Generic[T, R]):
    """Combines concurrent calls from many threads into shared commits.

    The first caller with nothing in flight becomes the leader: it takes up to ``max_batch``
    pending values, calls ``commit(values)`` (which returns one result or exception per value,
    in order), hands out the results, and goes on until its own value is done; then it passes
    the lead to the oldest waiter. So one commit serves every caller that arrived while the
    previous one was in flight: the busier the process, the fewer commits per id.
    """

    def __init__(
        self,
        commit: Callable[[Sequence[T]], Sequence[R | BaseException]],
        max_batch: int,
        *,
        linger: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._commit = commit
        self.max_batch = max_batch
        self.linger = linger
        self._sleep = sleep
        self._last_batch = 0
        self._lock = threading.Lock()
        self._pending: deque[_Slot[T, R]] = deque()
        self._leading = False

    def submit(self, value: T) -> R:
        slot: _Slot[T, R] = _Slot(value)
        with self._lock:
            self._pending.append(slot)
            if self._leading:
                lead = False
            else:
                self._leading = lead = True
        if not lead:
            slot.done.wait()
            if not slot.finished:  # handed the lead
                self._lead(slot)
        else:
            self._lead(slot)
        if slot.error is not None:
            raise slot.error
        return slot.result  # type: ignore[return-value]

    def _lead(self, own: _Slot[T, R]) -> None:
        while not own.finished:
            if self.linger and self._last_batch > 1 and len(self._pending) < self.max_batch:
                # Busy: wait a moment for more callers. Batches grow, and writers in other
                # processes get a window between our commits instead of being starved.
                self._sleep(self.linger)
            with self._lock:
                batch = [
                    self._pending.popleft() for _ in range(min(self.max_batch, len(self._pending)))
                ]
            self._last_batch = len(batch)
            try:
                results: Sequence[Any] = self._commit([s.value for s in batch])
            except BaseException as exc:  # handed to every caller of the batch
                results = [exc] * len(batch)
            for slot, result in zip(batch, results, strict=True):
                if isinstance(result, BaseException):
                    slot.error = result
                else:
                    slot.result = result
                slot.finished = True
                if slot is not own:
                    slot.done.set()
        with self._lock:
            if self._pending:
                heir = self._pending[0]
                heir.lead = True
                heir.done.set()
            else:
                self._leading = False
