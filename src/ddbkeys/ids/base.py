"""What the id strategies share: the bounded attempt loop inside one deadline, table
descriptions, the counter item's key, accounting, the global-table guard, and group commit."""

from __future__ import annotations

import functools
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys.capacity import Usage
from ddbkeys.clients import as_client, current_deadline, deadline_scope
from ddbkeys.errors import (
    ConfigurationError,
    DdbKeysError,
    DeadlineExceededError,
    KeySchemaError,
    cut_short,
    deadline_exceeded,
    describe_failure,
    error_code,
    error_response,
    raise_translated,
    unanswered,
)
from ddbkeys.ids.cancellation import Cancellation, read_cancellation
from ddbkeys.ids.errors import (
    CounterStateError,
    GlobalTableError,
    ItemExistsError,
    ItemKeyClashError,
    SequenceExhaustedError,
)
from ddbkeys.ids.values import check_item_key
from ddbkeys.retry import (
    DEFAULT_DEADLINE,
    MAX_REFUSED_ATTEMPTS,
    Deadline,
    RetriesExhaustedError,
    RetryPolicy,
    is_refused,
    is_unavailable,
)
from ddbkeys.schema import TableInfo, check_table_name, describe, key_value, to_attributes

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = [
    "CounterStateError",
    "GlobalTableError",
    "IdStrategy",
    "ItemExistsError",
    "ItemKeyClashError",
    "SequenceExhaustedError",
]

T = TypeVar("T")
R = TypeVar("R")


class Contention(Exception):
    """Raised by an attempt that lost a race; the loop tries again (after a full-jitter wait
    unless ``immediate``)."""

    def __init__(self, immediate: bool = False) -> None:
        super().__init__("lost a race")
        self.immediate = immediate


class Throttled(Exception):
    """Raised by an attempt whose transaction was cancelled for capacity; the loop waits with
    exponential backoff, as for a throttled request."""

    def __init__(self, codes: str) -> None:
        super().__init__(f"throttled ({codes})")


_P = ParamSpec("_P")
_T = TypeVar("_T")
_S = TypeVar("_S", bound="IdStrategy")


def within_deadline(
    method: Callable[Concatenate[_S, _P], _T],
) -> Callable[Concatenate[_S, _P], _T]:
    """A public call of a strategy: everything it sends (the first DescribeTable included)
    keeps to one deadline, the strategy's ``deadline`` from the moment it is called."""

    @functools.wraps(method)
    def call(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        if current_deadline() is not None:
            return method(self, *args, **kwargs)
        with deadline_scope(Deadline(self.deadline, clock=self.retry.clock)):
            return method(self, *args, **kwargs)

    return call


class IdStrategy:
    """The base of every id strategy: a client, a table, a retry policy, a deadline and a
    :class:`Usage`.

    ``deadline`` is the most seconds one call may take in all, its retries and waits included
    (None: no limit). ``allow_global_tables`` matters only to strategies that are unsafe on
    global tables.
    """

    #: Strategies that depend on a single-region conditional write refuse global tables.
    refuses_global_tables = False
    #: The retry policy when none is given. Optimistic strategies override it: a writer that
    #: lost a race learns the counter's new value at once, so short waits (and many of them)
    #: keep it from being starved by a winner that goes on committing.
    default_retry = RetryPolicy()

    def __init__(
        self,
        client: object,
        table: str | None = None,
        *,
        retry: RetryPolicy | None = None,
        usage: Usage | None = None,
        allow_global_tables: bool = False,
        deadline: float | None = DEFAULT_DEADLINE,
    ) -> None:
        self.client, name = as_client(client, table)
        if name is None:
            raise ConfigurationError(
                f"{type(self).__name__} needs a table: pass table= with its name, or a boto3 "
                "Table object as the client."
            )
        self.table = check_table_name(name)
        self.retry = retry or self.default_retry
        self.usage = usage or Usage()
        self.allow_global_tables = allow_global_tables
        if deadline is not None and (
            isinstance(deadline, bool)
            or not isinstance(deadline, (int, float))
            or not 0 < deadline < 10**9
        ):
            raise ConfigurationError(
                f"deadline must be a number of seconds above 0 (or None), not {deadline!r}.",
                table=self.table,
            )
        self.deadline = None if deadline is None else float(deadline)
        self._infos: dict[str, TableInfo] = {}
        self._info_lock = threading.Lock()

    def table_info(self, table: str | None = None) -> TableInfo:
        """A table's description (this strategy's table by default), read once (DescribeTable
        retried like any request, within the deadline of the call in progress), with the
        global-table guard applied."""
        table = table or self.table
        with self._info_lock:
            info = self._infos.get(table)
            if info is None:
                name = table
                info = self._attempts(
                    lambda _: describe(self.client, name), "DescribeTable", table=name
                )
                if (
                    info.replica_regions
                    and self.refuses_global_tables
                    and not self.allow_global_tables
                ):
                    raise GlobalTableError(
                        f"Table {table!r} is a global table (replicas in "
                        f"{', '.join(info.replica_regions)}). {type(self).__name__} relies on "
                        "conditional writes that last-writer-wins replication can silently "
                        "undo, so ids could repeat across regions. Write from one region only "
                        "and pass allow_global_tables=True (--allow-global-tables) to go on.",
                        table=table,
                    )
                self._infos[table] = info
            return info

    def _attempts(self, attempt: Callable[[int], R], what: str, *, table: str | None = None) -> R:
        """Run ``attempt(n)`` until it returns, at most ``retry.max_attempts`` times and within
        one deadline (the deadline of the call in progress when this runs inside one).

        :class:`Contention` waits with full jitter; :class:`Throttled`, throttling, 5xx, timeouts
        and dropped connections wait with exponential backoff and send the same request again
        (a refused connection at most :data:`~ddbkeys.retry.MAX_REFUSED_ATTEMPTS` times: nothing
        listens there); any other error goes up at once as a :class:`DdbKeysError`. A wait that
        would pass the deadline is not waited: the call gives up at once, saying why. Inside,
        botocore's own retries (on a client the caller built) stop at the deadline too.
        """
        policy = self.retry
        table = table or self.table
        deadline = current_deadline() or Deadline(self.deadline, clock=policy.clock)
        last: BaseException | None = None
        tried = refused = 0
        out_of_time = False
        with deadline_scope(deadline):
            for n in range(policy.max_attempts):
                if n:
                    self.usage.count(retries=1)
                if deadline.expired():
                    out_of_time = True
                    break
                tried += 1
                try:
                    return attempt(n)
                except Contention as lost:
                    last = lost
                    self.usage.count(conflicts=1)
                    wait = 0.0 if lost.immediate else policy.full_jitter(n)
                except Throttled as throttled:
                    last = throttled
                    wait = policy.exponential(n)
                except (ClientError, BotoCoreError, DdbKeysError) as exc:
                    failure = _unavailable_failure(exc)
                    if failure is None:
                        raise_translated(exc, table=table)
                    if last is None or not cut_short(failure):
                        last = failure  # (the deadline cutting a request short tells less)
                    refused += is_refused(failure)
                    if refused >= MAX_REFUSED_ATTEMPTS:
                        raise_translated(failure, table=table)
                    wait = policy.exponential(n)
                if n + 1 < policy.max_attempts and wait:
                    if not deadline.allows(wait):
                        out_of_time = True
                        break
                    policy.sleep(wait)
        raise self._gave_up(what, table, deadline, tried, last, out_of_time) from last

    def _gave_up(
        self,
        what: str,
        table: str,
        deadline: Deadline,
        tried: int,
        last: BaseException | None,
        out_of_time: bool,
    ) -> DdbKeysError:
        if isinstance(last, Contention):
            reason = f"lost {tried} race{'s' if tried != 1 else ''} in a row to other writers"
        elif isinstance(last, Throttled):
            reason = f"its transaction was {last}"
        else:
            reason = ""
        note = ""
        if unanswered(last) and not what.startswith(("DescribeTable", "reading")):
            note = " The last write got no answer: it may still have been applied."
        if out_of_time and deadline.seconds is not None:
            if not reason:
                return deadline_exceeded(
                    what,
                    table,
                    deadline.seconds,
                    tried,
                    last,
                    read_timeout=getattr(self.client.meta.config, "read_timeout", None),
                    elapsed=deadline.elapsed(),
                    note=note,
                )
            return DeadlineExceededError(
                f"Gave up on {what} on table {table!r} after {deadline.seconds:.1f} s (the "
                f"deadline; raise it with deadline= or --timeout): {reason}, {tried} "
                f"attempt{'s' if tried != 1 else ''}.",
                seconds=deadline.seconds,
                attempts=tried,
                table=table,
                cause=last,
            )
        if isinstance(last, Contention):
            advice = "Raise RetryPolicy.max_attempts, or spread the load."
        else:
            reason = reason or describe_failure(last, times=tried)
            advice = "Try again later."
        return RetriesExhaustedError(
            f"Gave up on {what} on table {table!r} after {tried} attempts "
            f"(RetryPolicy.max_attempts): {reason}. {advice}{note}",
            attempts=tried,
            table=table,
            cause=last,
        )


def _unavailable_failure(exc: BaseException) -> BaseException | None:
    """The botocore failure behind ``exc`` when it is worth the same request again after a
    wait (throttling, 5xx, a timeout, a dropped or refused connection), else None. A
    DdbKeysError counts by its cause, unless it is already a final verdict on retries."""
    if isinstance(exc, (RetriesExhaustedError, DeadlineExceededError)):
        return None
    failure = exc.cause if isinstance(exc, DdbKeysError) else exc
    if failure is None or not is_unavailable(failure):
        return None
    return failure


@dataclass(frozen=True)
class CounterItem:
    """Where a counter lives: a table, the item's whole key (typed), and its attribute."""

    table: str
    key: dict[str, AttributeValueTypeDef]
    attribute: str


def counter_item_key(
    strategy: IdStrategy,
    name: str,
    key_attribute: str | None,
    *,
    given: Mapping[str, Any] | None = None,
    table: str | None = None,
    key_parameter: str = "key",
) -> dict[str, AttributeValueTypeDef]:
    """The counter item's key: ``given`` checked against the table's key schema, or
    ``{partition key: name}``; a clear error when the key schema does not allow a key made from
    a name alone (naming the strategy's real parameter, ``key_parameter``)."""
    table = table or strategy.table
    info = strategy.table_info(table)
    pk = info.partition_key
    named = f"{key_parameter}= (--counter-key)"
    if given is not None:
        key = to_attributes(given, table=table)
        extra = sorted(set(key) - set(info.key_names()))
        if extra:
            raise KeySchemaError(
                f"{named} names {', '.join(map(repr, extra))}, which is not a key "
                f"attribute of table {table!r}; its key is ({', '.join(info.key_names())}).",
                table=table,
            )
        check_item_key(key, info, where=named)
        return key
    if key_attribute and key_attribute != pk.name:
        raise KeySchemaError(
            f"Table {table!r} has partition key {pk.name!r}, not {key_attribute!r}: pass "
            f"key_attribute={pk.name!r} (--key-attribute {pk.name}).",
            table=table,
        )
    if info.sort_key is not None or pk.type != "S":
        raise KeySchemaError(
            f"Table {table!r} has the key ({', '.join(info.key_names())}); a counter item key "
            f"cannot be made from a name alone: pass {key_parameter}= with the whole key of the "
            "counter item (--counter-key JSON on the CLI).",
            table=table,
        )
    return {pk.name: key_value(pk, name, table=table)}


def read_counter(strategy: IdStrategy, counter: CounterItem) -> Any:
    """The counter attribute as the counter item holds it, raw (None when the item or the
    attribute is missing): one strongly consistent GetItem (1 read unit), counted."""
    response = strategy.client.get_item(
        TableName=counter.table,
        Key=counter.key,
        ConsistentRead=True,
        ProjectionExpression="#v",
        ExpressionAttributeNames={"#v": counter.attribute},
        ReturnConsumedCapacity="TOTAL",
    )
    strategy.usage.add(response, write=False)
    return response.get("Item", {}).get(counter.attribute)


def put_if_new(table: str, item: Mapping[str, Any], pk_name: str) -> dict[str, Any]:
    """A transaction action that writes ``item`` only if no item with its key exists."""
    return {
        "Put": {
            "TableName": table,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": pk_name},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def transact(
    strategy: IdStrategy, actions: list[Any], token: str, *, items: int, billed: float
) -> Cancellation | None:
    """TransactWriteItems with a ClientRequestToken (so a retry of an applied transaction is not
    applied again). Returns None when it was applied, or the reading of its CancellationReasons
    when it was cancelled; other errors go up. Counted in ``strategy.usage``."""
    try:
        response = strategy.client.transact_write_items(
            TransactItems=actions, ClientRequestToken=token, ReturnConsumedCapacity="TOTAL"
        )
    except ClientError as exc:
        if error_code(exc) != "TransactionCanceledException":
            raise
        strategy.usage.add(None, write=True)
        return read_cancellation(error_response(exc).get("CancellationReasons", []))
    strategy.usage.add(response, write=True, items=items, billed=billed)
    return None


def cancelled_error(strategy: IdStrategy, cancellation: Cancellation) -> DdbKeysError:
    """The error for a transaction cancelled for a reason no retry can fix."""
    return DdbKeysError(
        f"DynamoDB cancelled a transaction on table {strategy.table!r}: {cancellation.describe()}.",
        table=strategy.table,
        code="TransactionCanceledException",
    )


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
                results = self._one_by_one(batch, exc)
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

    def _one_by_one(self, batch: list[_Slot[T, R]], exc: BaseException) -> list[Any]:
        """The answers for a batch whose commit raised ``exc``. DynamoDB refuses a whole batch
        as invalid (ValidationException) when one caller's value is (an item over 400 KB, a
        transaction over 4 MB): then each value is committed alone, so only its own caller
        fails. Any other error is every caller's."""
        if len(batch) == 1 or getattr(exc, "code", None) != "ValidationException":
            return [exc] * len(batch)
        results: list[Any] = []
        for slot in batch:
            try:
                results.extend(self._commit([slot.value]))
            except BaseException as alone:  # that caller's own answer
                results.append(alone)
        return results
