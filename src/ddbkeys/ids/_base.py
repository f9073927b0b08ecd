"""What the id strategies share, beside the link each one holds to its tables
(:mod:`ddbkeys.ids._link`): the public shape (:class:`IdStrategy`), the counter item and its
key, and the requests several strategies send. Every
request goes out as a flow step (see :mod:`ddbkeys._core`): a sync strategy runs its core's flows
on the sync driver, and :mod:`ddbkeys.aio` runs the same flows on the asyncio driver."""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import Contention, Throttled
from ddbkeys._core.steps import Flow, transact_write_items
from ddbkeys._entity import COUNTER, ENTITY_ATTRIBUTE
from ddbkeys._errors import (
    ConfigurationError,
    DdbKeysError,
    KeySchemaError,
    error_code,
)
from ddbkeys._retry import Deadline, RetryPolicy
from ddbkeys._schema import (
    TableInfo,
    check_name,
    key_value,
    to_attributes,
)
from ddbkeys._translate import error_response, key_schema_refusal
from ddbkeys.ids._cancellation import Cancellation, read_cancellation
from ddbkeys.ids._errors import (
    CounterStateError,
    GlobalTableError,
    ItemExistsError,
    ItemKeyClashError,
    SequenceExhaustedError,
)
from ddbkeys.ids._group import GroupCommit
from ddbkeys.ids._values import check_item_key

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        PutTypeDef,
        TransactWriteItemTypeDef,
    )

__all__ = [
    "Attempts",
    "Contention",
    "CounterStateError",
    "GlobalTableError",
    "GroupCommit",
    "IdStrategy",
    "ItemExistsError",
    "ItemKeyClashError",
    "SequenceExhaustedError",
    "Throttled",
    "earliest",
]


#: The retry layer a core's requests go through: ``attempts(attempt, what, deadline)`` (a
#: strategy's :meth:`Link.attempts`, or :func:`ddbkeys._core.attempts.attempts` with
#: a policy and a :class:`Usage` in a test).
Attempts = Callable[[Callable[[int], Flow[Any]], str, Deadline], Flow[Any]]


class OnTable(Protocol):
    """What names a table: a strategy, or its core."""

    @property
    def table(self) -> str: ...


class Waiting(Protocol):
    """A call waiting for a shared commit, with its deadline."""

    @property
    def deadline(self) -> Deadline: ...


def earliest(waiting: Iterable[Waiting]) -> Deadline:
    """The deadline a shared commit keeps to: the one that ends first, so that no caller of
    the batch waits past its own."""
    return min((w.deadline for w in waiting), key=lambda d: d.remaining())


class IdStrategy(abc.ABC):
    """The shape every sync id strategy shows (:class:`AtomicCounter`, :class:`GaplessSequence`,
    :class:`CollectionSequence` are its subclasses): its table, retry policy, deadline and
    accounting, and the description of its table. A type to annotate with and to check with
    ``isinstance``; it holds no behaviour (a strategy is its core, a link, a driver and, where it
    shares writes, a group, none of them inherited)."""

    @property
    @abc.abstractmethod
    def table(self) -> str:
        """The strategy's table."""

    @property
    @abc.abstractmethod
    def retry(self) -> RetryPolicy:
        """How its requests are retried (``retry=``, or the strategy's own default)."""

    @property
    @abc.abstractmethod
    def usage(self) -> Usage:
        """What its requests cost (``usage=``, or its own)."""

    @property
    @abc.abstractmethod
    def deadline(self) -> float | None:
        """The most seconds one call may take in all (None: no limit)."""

    @property
    @abc.abstractmethod
    def allow_global_tables(self) -> bool:
        """Whether it writes to a global table all the same (where it refuses them)."""

    @abc.abstractmethod
    def table_info(self, table: str | None = None) -> TableInfo:
        """A table's description (the strategy's table by default): one DescribeTable the
        first time, within the strategy's deadline; the global-table guard applied."""


#: Every write of a counter item sets, in the same expression, what the item is
#: (``ddbkeys_type = "counter"``, see :mod:`ddbkeys._entity`), so that other readers of the
#: table can leave it out: this SET action, with its name and value. ddbkeys never reads it back
#: (a counter seeded by another tool has none, and gets it with its next write).
TYPE_SET = "#ddbkeys_type = :ddbkeys_type"
TYPE_NAMES: Mapping[str, str] = {"#ddbkeys_type": ENTITY_ATTRIBUTE}
TYPE_VALUES: Mapping[str, AttributeValueTypeDef] = {":ddbkeys_type": {"S": COUNTER}}


def check_counter_attribute(value: object, *, table: str) -> str:
    """A counter attribute name, or a :class:`ConfigurationError`: not empty, and not the
    attribute that says what the counter item is (:data:`ddbkeys.ENTITY_ATTRIBUTE`)."""
    name = check_name("counter attribute", value, table=table)
    if name == ENTITY_ATTRIBUTE:
        raise ConfigurationError(
            f"Invalid counter attribute {name!r}: ddbkeys sets it on the counter item to say "
            "what the item is (see ddbkeys._entity). Choose another name.",
            table=table,
        )
    return name


def counter_written(
    key: Mapping[str, AttributeValueTypeDef], attribute: str, value: int
) -> dict[str, AttributeValueTypeDef]:
    """The counter item as a write leaves it: its key, its number and its type (what its
    write units are counted from)."""
    return {**key, attribute: {"N": str(value)}, ENTITY_ATTRIBUTE: {"S": COUNTER}}


@dataclass(frozen=True)
class CounterItem:
    """Where a counter lives: a table, the item's whole key (typed), and its attribute;
    ``advice``, what to do where an item of yours holds its key."""

    table: str
    key: dict[str, AttributeValueTypeDef]
    attribute: str
    advice: str = "Name a counter whose item no other item uses."


def counter_key_from(
    info: TableInfo,
    table: str,
    name: str,
    key_attribute: str | None,
    given: Mapping[str, Any] | None,
    key_parameter: str = "counter_key",
) -> dict[str, AttributeValueTypeDef]:
    """The counter item's key: ``given`` checked against the table's key schema (``info``), or
    ``{partition key: name}``; a clear error when the key schema does not allow a key made from
    a name alone (naming the strategy's real parameter, ``key_parameter``)."""
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
            f"key_attribute={pk.name!r}, or leave it out (it is read from the table).",
            table=table,
        )
    if info.sort_key is not None or pk.type != "S":
        example: dict[str, Any] = {pk.name: name if pk.type == "S" else 0}
        if info.sort_key is not None:
            example[info.sort_key.name] = "0" if info.sort_key.type == "S" else 0
        binary = "B" in (pk.type, info.sort_key.type if info.sort_key else "")
        shown = "" if binary else f", for example '{json.dumps(example)}'"
        raise KeySchemaError(
            f"Table {table!r} has the key ({', '.join(info.key_names())}); a counter item key "
            "cannot be made from a name alone: give the counter item's whole key, as "
            f"{key_parameter}= (--counter-key JSON{shown}).",
            table=table,
        )
    return {pk.name: key_value(pk, name, table=table)}


#: The most attributes :func:`absent` names (its expression stays under 3.2 KB of DynamoDB's 4).
MAX_ABSENT_NAMES = 100
#: The longest string or binary value a key attribute may hold (a partition key's, in bytes).
MAX_KEY_BYTES = 2048


def absent(
    item: Mapping[str, AttributeValueTypeDef], keys: Sequence[str]
) -> tuple[str, dict[str, str]]:
    """A condition (expression and names) that holds where no item has ``item``'s key, whatever
    the table's key schema is now: ``attribute_not_exists`` of ``keys`` (the key of the
    description held, and the attributes the strategy sets: the id's) and of each other
    attribute of ``item`` that could be a key one (a string, number or binary of a key's
    size), up to ``MAX_ABSENT_NAMES`` in all. An item holds every attribute of its key, so
    the condition fails on any item at the key; where the description is right, as on its
    key alone. Where it is not (the table made again with another key since it was read),
    the key attribute written may hold nothing of the key: a sequence whose counter lives in
    another table wrote over an item another tool had written at the new key, its one
    condition on an attribute the item lacked. (Past the bound, a key made of an item's
    101st such attribute is the one it cannot see.)"""
    names = list(dict.fromkeys(keys))
    for name, value in item.items():
        if len(names) >= MAX_ABSENT_NAMES:
            break
        if name not in names and _may_be_key(value):
            names.append(name)
    expression = " AND ".join(f"attribute_not_exists(#k{n})" for n in range(len(names)))
    return expression, {f"#k{n}": name for n, name in enumerate(names)}


def _may_be_key(value: AttributeValueTypeDef) -> bool:
    """Whether an attribute value could be a key attribute's (S, N or B of a key's size)."""
    if "N" in value:
        return True
    if "S" in value:
        return len(value["S"].encode()) <= MAX_KEY_BYTES
    return "B" in value and len(value["B"]) <= MAX_KEY_BYTES


def put_new(
    table: str, item: Mapping[str, AttributeValueTypeDef], keys: Sequence[str]
) -> PutTypeDef:
    """A put of ``item`` only where no item has its key (:func:`absent`), the old item
    returned where one does."""
    expression, names = absent(item, keys)
    return {
        "TableName": table,
        "Item": item,
        "ConditionExpression": expression,
        "ExpressionAttributeNames": names,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def stale_key(
    table: str,
    written: Mapping[str, AttributeValueTypeDef],
    old: Mapping[str, Any] | None,
    keys: Sequence[str],
) -> KeySchemaError | None:
    """A :class:`KeySchemaError` where the item a put's condition found (``old``, returned
    with it) does not hold the key ``written`` holds (``keys``, of the description held):
    the condition fails only on an item at the key, so the table's key is another now (a
    table made again: a collection's put spun for good on an item without its sort key, and
    a sequence said "the counter is behind" of an item that was not at its id)."""
    if old is None:
        return None
    for name in keys:
        if not same_value(old.get(name), written.get(name)):
            return KeySchemaError(
                f"Table {table!r} no longer has the key {', '.join(map(repr, keys))} it was "
                f"described with: the item found where one was written holds another.",
                table=table,
            )
    return None


def key_names(info: TableInfo) -> list[str]:
    """The names of the key ``info`` describes: its partition key, and its sort key if any."""
    return [key.name for key in (info.partition_key, info.sort_key) if key is not None]


def stale_images(
    table: str, written: Sequence[Mapping[str, Any]], reasons: Cancellation, keys: Sequence[str]
) -> KeySchemaError | None:
    """:func:`stale_key` of each put whose condition failed in a cancelled transaction, its
    actions the puts of ``written`` after any others (a counter's update first)."""
    first = len(reasons.codes) - len(written)
    for index in reasons.failed_conditions:
        if index >= first:
            found = stale_key(table, written[index - first], reasons.old_item(index), keys)
            if found is not None:
                return found
    return None


def same_value(a: Any, b: Any) -> bool:
    """Whether two typed key values are the same (numbers as numbers: 1.50 is 1.5)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping) and "N" in a and "N" in b:
        try:
            return Decimal(str(a["N"])) == Decimal(str(b["N"]))
        except ArithmeticError:
            return False
    return bool(a == b)


def put_if_new(
    table: str, item: Mapping[str, AttributeValueTypeDef], keys: Sequence[str]
) -> TransactWriteItemTypeDef:
    """A transaction action that writes ``item`` only if no item with its key exists
    (:func:`put_new`)."""
    return {"Put": put_new(table, item, keys)}


def transact(
    actions: Sequence[TransactWriteItemTypeDef], token: str, *, items: int, billed: float
) -> Flow[Cancellation | None]:
    """TransactWriteItems with a ClientRequestToken (so a retry of an applied transaction is not
    applied again). Returns None when it was applied, or the reading of its CancellationReasons
    when it was cancelled; other errors go up. Counted by the driver, a cancelled one too."""
    try:
        yield transact_write_items(
            {
                "TransactItems": actions,
                "ClientRequestToken": token,
                "ReturnConsumedCapacity": "TOTAL",
            },
            items=items,
            billed=billed,
            count_refused=True,
        )
    except ClientError as exc:
        if error_code(exc) != "TransactionCanceledException":
            raise
        return read_cancellation(error_response(exc).get("CancellationReasons", []))
    return None


def cancelled_error(
    on: OnTable, cancellation: Cancellation, tables: Sequence[str] = ()
) -> DdbKeysError:
    """The error for a transaction cancelled for a reason no retry can fix, on the table of
    ``on`` (a strategy, or its core): a :class:`KeySchemaError` naming the table of the
    action refused for its key (``tables[i]`` for action ``i``, else ``on``'s), which the
    call that kept a description from before the table was made again describes afresh."""
    message = f"DynamoDB cancelled a transaction on table {on.table!r}: {cancellation.describe()}."
    for index, _, words in cancellation.invalid:
        if key_schema_refusal(words):
            table = tables[index] if index < len(tables) else on.table
            return KeySchemaError(message, table=table)
    return DdbKeysError(message, table=on.table, code="TransactionCanceledException")
