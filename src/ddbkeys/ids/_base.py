"""What the id strategies share: the :class:`Link` each one holds (client, table, retry policy,
deadline, accounting, table descriptions, the global-table guard), the public shape
(:class:`IdStrategy`), the counter item's key, and the requests several strategies send. Every
request goes out as a flow step (see :mod:`ddbkeys._core`): a sync strategy runs its core's flows
on the sync driver, and :mod:`ddbkeys.aio` runs the same flows on the asyncio driver."""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from botocore.exceptions import ClientError

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import Contention, Throttled, attempts
from ddbkeys._core.steps import Flow, transact_write_items
from ddbkeys._entity import COUNTER, ENTITY_ATTRIBUTE
from ddbkeys._errors import (
    ConfigurationError,
    DdbKeysError,
    KeySchemaError,
    TableNotFoundError,
    error_code,
)
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys._schema import (
    TableInfo,
    check_name,
    check_table_name,
    describe_flow,
    key_value,
    to_attributes,
)
from ddbkeys._translate import error_response
from ddbkeys.ids import _described as described
from ddbkeys.ids._cancellation import Cancellation, read_cancellation
from ddbkeys.ids._errors import (
    CounterStateError,
    GlobalTableError,
    ItemExistsError,
    ItemKeyClashError,
    SequenceExhaustedError,
)
from ddbkeys.ids._group import GroupCommit
from ddbkeys.ids._values import check_item_key, flag

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        AttributeValueTypeDef,
        TransactWriteItemTypeDef,
        UpdateItemInputTypeDef,
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
    "Known",
    "Link",
    "SequenceExhaustedError",
    "Throttled",
    "earliest",
    "sequence_link",
]

R = TypeVar("R")

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


class Link:
    """A strategy's way to its table, driver aside: the client its driver sends with, the table,
    the retry policy, the deadline of a call and the accounting (the settings every strategy
    shares, checked here), the tables' descriptions it has read, and what it made of them
    (``known``). A strategy holds one (as ``_link``) and passes it to its core's flows, which send
    through :meth:`attempts` and read descriptions with :meth:`table_info`.

    ``deadline`` is the most seconds one call may take in all, its retries and waits included
    (None: no limit). ``allow_global_tables`` matters only when ``refuses_global_tables``.
    Nothing is sent before the first call: the table's description is read then, once per table
    and process in steady state (:mod:`ddbkeys.ids._described`: objects built in every call of
    a Lambda handler describe their table once per container; first calls at once may each read
    it), and read again after a write found the table gone or its key schema changed (what was
    made of it, ``known``, goes with it, and ``forgot(table)`` is told).
    """

    def __init__(
        self,
        client: Any,
        table: str | None,
        owner: str,
        *,
        retry: RetryPolicy | None = None,
        default_retry: RetryPolicy | None = None,
        usage: Usage | None = None,
        allow_global_tables: bool = False,
        refuses_global_tables: bool = False,
        deadline: float | None = DEFAULT_DEADLINE,
        forgot: Callable[[str], None] | None = None,
    ) -> None:
        self.client, self.owner = client, owner
        if table is None:
            raise ConfigurationError(
                f"{owner} needs a table: pass table= with its name, or a boto3 Table object as "
                "the client."
            )
        self.table = check_table_name(table)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise ConfigurationError(
                f"retry must be a ddbkeys.RetryPolicy, not {retry!r}.", table=self.table
            )
        if usage is not None and not isinstance(usage, Usage):
            raise ConfigurationError(
                f"usage must be a ddbkeys.Usage, not {usage!r}.", table=self.table
            )
        self.retry = retry or default_retry or RetryPolicy()
        self.usage = usage or Usage()
        self.allow_global_tables = flag("allow_global_tables", allow_global_tables, self.table)
        self.refuses_global_tables = refuses_global_tables
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
        self.forgot = forgot
        #: The descriptions this object has read, by table.
        self.infos: dict[str, TableInfo] = {}
        #: What the strategy made of them, dropped with them.
        self.known = Known()

    def begin(self) -> Deadline:
        """The deadline of a call that begins now."""
        return Deadline(self.deadline, clock=self.retry.clock)

    def attempts(
        self,
        attempt: Callable[[int], Flow[R]],
        what: str,
        deadline: Deadline,
        *,
        table: str | None = None,
    ) -> Flow[R]:
        """``attempt(n)`` run by the retry layer (:func:`ddbkeys._core.attempts.attempts`)
        with this strategy's policy, accounting and ``deadline`` (its errors name ``table``:
        a table found gone, or whose key schema no longer matches, is described again by the
        next call, see :meth:`guarded`)."""
        return (
            yield from attempts(
                attempt,
                what=what,
                table=table or self.table,
                policy=self.retry,
                deadline=deadline,
                usage=self.usage,
                read_timeout=getattr(getattr(self.client, "meta", None), "config", None)
                and getattr(self.client.meta.config, "read_timeout", None),
            )
        )

    def guarded(self, flow: Flow[R]) -> Flow[R]:
        """``flow`` (a call's, as its driver runs it), after which a table found gone, or not
        of the key schema this process kept, is described again by the next call: a refusal
        the kept description gave too (the table may have been made again since, with the key
        the caller meant: a helper's process said "has the key (id, sk)" for good)."""
        try:
            return (yield from flow)
        except (TableNotFoundError, KeySchemaError) as exc:
            self.forget_table(exc.table or self.table)
            raise

    def forget_table(self, table: str) -> None:
        """Forget what this object and this process know of ``table``'s description, and what
        the strategy made of it."""
        described.forget(described.table_key(self.client, table))
        self.infos.pop(table, None)
        self.known = Known()
        if self.forgot is not None:
            self.forgot(table)

    def table_info(self, deadline: Deadline, table: str | None = None) -> Flow[TableInfo]:
        """A table's description (this strategy's table by default), with the global-table
        guard applied: what this object has read, else :func:`read_description` (what this
        process has read, else one DescribeTable within ``deadline``). First calls at once may
        each send one; later calls send none."""
        name = table or self.table
        info = self.infos.get(name)
        if info is None:
            where = described.table_key(self.client, name)

            def tries(attempt: Callable[[int], Flow[R]], what: str, ends: Deadline) -> Flow[R]:
                return self.attempts(attempt, what, ends, table=name)

            info = yield from read_description(name, where, deadline, tries)
            self.infos[name] = info
        if self.refuses_global_tables and not self.allow_global_tables:
            refuse_global(info, name, self.owner)
        return info


def sequence_link(
    strategy: type[Any],
    connected: tuple[Any, str | None],
    retry: RetryPolicy | None,
    usage: Usage | None,
    allow_global_tables: bool,
    deadline: float | None,
) -> Link:
    """A sequence's link to its tables, from what its class says of itself (its name, its
    ``default_retry`` and whether it ``refuses_global_tables``): one builder for the sync and
    asyncio forms of both sequences."""
    return Link(
        *connected,
        strategy.__name__,
        retry=retry,
        default_retry=strategy.default_retry,
        usage=usage,
        allow_global_tables=allow_global_tables,
        refuses_global_tables=strategy.refuses_global_tables,
        deadline=deadline,
    )


def read_description(
    table: str, where: described.TableKey, deadline: Deadline, attempts: Attempts
) -> Flow[TableInfo]:
    """The description of ``table`` (at ``where``: its endpoint, region and name): what this
    process has read (:mod:`ddbkeys.ids._described`), else one DescribeTable through the retry
    layer ``attempts``, kept for the process."""
    info = described.known(where)
    if info is None:
        info = yield from attempts(lambda _: describe_flow(table), "DescribeTable", deadline)
        described.keep(where, info)
    return info


def refuse_global(info: TableInfo, table: str, owner: str) -> None:
    """A :class:`GlobalTableError` when ``info`` says the table is a global one: the strategy
    ``owner`` relies on conditional writes that replication can undo."""
    if info.replica_regions:
        raise GlobalTableError(
            f"Table {table!r} is a global table (replicas in "
            f"{', '.join(info.replica_regions)}). {owner} relies on "
            "conditional writes that last-writer-wins replication can silently "
            "undo, so ids could repeat across regions. Write from one region only "
            "and pass allow_global_tables=True (--allow-global-tables) to go on.",
            table=table,
        )


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
    """Where a counter lives: a table, the item's whole key (typed), and its attribute."""

    table: str
    key: dict[str, AttributeValueTypeDef]
    attribute: str


@dataclass
class Known:
    """What a strategy made of its tables' descriptions (kept by its :class:`Link`, dropped with
    them): where its counter lives, and the counter's ``next()`` request, built once."""

    counter: CounterItem | None = None
    request: UpdateItemInputTypeDef | None = None


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


def put_if_new(
    table: str, item: Mapping[str, AttributeValueTypeDef], pk_name: str
) -> TransactWriteItemTypeDef:
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


def cancelled_error(on: OnTable, cancellation: Cancellation) -> DdbKeysError:
    """The error for a transaction cancelled for a reason no retry can fix, on the table of
    ``on`` (a strategy, or its core)."""
    return DdbKeysError(
        f"DynamoDB cancelled a transaction on table {on.table!r}: {cancellation.describe()}.",
        table=on.table,
        code="TransactionCanceledException",
    )
