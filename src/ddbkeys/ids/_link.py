"""A strategy's way to its tables (:class:`Link`): its client, table, retry policy, deadline
and accounting, the descriptions it reads (kept once per process, :mod:`ddbkeys.ids._described`)
and what it made of them (:class:`Known`), the global-table guard, and a call made once more
where a table made again with another key refused a description kept from before it
(:meth:`Link.afresh`, :func:`once_more`). The sync strategies and :mod:`ddbkeys.aio`'s share it."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import attempts
from ddbkeys._core.steps import Flow
from ddbkeys._errors import ConfigurationError, KeySchemaError, TableNotFoundError
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys._schema import TableInfo, check_table_name, describe_flow
from ddbkeys.ids import _described as described
from ddbkeys.ids._base import Attempts, CounterItem
from ddbkeys.ids._errors import GlobalTableError
from ddbkeys.ids._values import flag

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import UpdateItemInputTypeDef

__all__ = [
    "Known",
    "Link",
    "afresh",
    "once_more",
    "once_more_async",
    "read_description",
    "refuse_global",
    "sequence_link",
]

R = TypeVar("R")
T = TypeVar("T")
C = TypeVar("C")
P = ParamSpec("P")


@dataclass
class Known:
    """What a strategy made of its tables' descriptions (kept by its :class:`Link`, dropped with
    them): where its counter lives, and the counter's ``next()`` request, built once."""

    counter: CounterItem | None = None
    request: UpdateItemInputTypeDef | None = None


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
    made of it, ``known``, goes with it, and ``forgot(table)`` is told): at once, and the call
    made again, where the refusal came from a description read before the call
    (:meth:`afresh`).
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
            self.forget_tables(exc.table)
            raise

    def holds_description(self) -> bool:
        """Whether this process holds a description of the strategy's tables (a call that
        uses it sends no DescribeTable)."""
        tables = {self.table, *self.infos}
        return any(described.known(described.table_key(self.client, t)) for t in tables)

    def afresh(self, make: Callable[[], Flow[R]]) -> Flow[R]:
        """``make()``'s flow (a call's), made and run once more where it failed on the key
        schema (:class:`KeySchemaError`) of a description read before the call began, by this
        object or this process: the table may have been made again since, under its name,
        with the key the caller means. Such a refusal leaves nothing to undo (a check before
        any write, or DynamoDB's ValidationException, which refuses a request whole), so the
        call goes on with the table described afresh rather than fail (a test suite that made
        a table again with another key, a fleet of Lambda functions across a table made
        again: each process's first call failed with "the key does not match the key
        schema"). Where the description was read by this call, the refusal is the caller's."""
        kept = self.holds_description()
        try:
            return (yield from make())
        except KeySchemaError as exc:
            if not kept:
                raise
            self.forget_tables(exc.table)
        return (yield from make())

    def forget_tables(self, table: str | None = None) -> None:
        """Forget the descriptions of ``table`` and of every table of the strategy: a
        transaction refused for a key names no table (a sequence whose counter table was made
        again kept the old one for good, its error naming the items table)."""
        for name in {table or self.table, self.table, *self.infos}:
            self.forget_table(name)

    def forget_table(self, table: str) -> None:
        """Forget what this object and this process know of ``table``'s description, and what
        the strategy made of it."""
        described.forget(described.table_key(self.client, table))
        self.infos.pop(table, None)
        self.forget_made(table)

    def forget_made(self, table: str) -> None:
        """Forget what the strategy made of ``table``'s description (``known``, and what
        ``forgot`` keeps)."""
        self.known = Known()
        if self.forgot is not None:
            self.forgot(table)

    def table_info(self, deadline: Deadline, table: str | None = None) -> Flow[TableInfo]:
        """A table's description (this strategy's table by default), with the global-table
        guard applied: :func:`read_description` (what this process has read, else one
        DescribeTable within ``deadline``). First calls at once may each send one; later
        calls send none. Where another object of the process read it afresh since this one
        last did (a table made again), what this one made of the old one goes."""
        name = table or self.table
        where = described.table_key(self.client, name)

        def tries(attempt: Callable[[int], Flow[R]], what: str, ends: Deadline) -> Flow[R]:
            return self.attempts(attempt, what, ends, table=name)

        info = yield from read_description(name, where, deadline, tries)
        if self.infos.get(name) is not info:  # (another object of the process read it afresh)
            if name in self.infos:
                self.forget_made(name)
            self.infos[name] = info
        if self.refuses_global_tables and not self.allow_global_tables:
            refuse_global(info, name, self.owner)
        return info


def afresh(
    flow: Callable[Concatenate[C, Link, P], Flow[R]],
) -> Callable[Concatenate[C, Link, P], Flow[R]]:
    """A call's flow (of ``(core, link, ...)``) that goes on through :meth:`Link.afresh`: a
    description this process kept, which the table no longer matches, is read again and the
    call made once more."""

    @functools.wraps(flow)
    def again(core: C, link: Link, /, *args: P.args, **kwargs: P.kwargs) -> Flow[R]:
        return link.afresh(lambda: flow(core, link, *args, **kwargs))

    return again


def once_more(link: Link, call: Callable[[], T]) -> T:
    """``call()`` (a put through a group commit: its item prepared, then written with
    others'), made once more where it failed on the key schema of a description the process
    held before it (as :meth:`Link.afresh` does for a flow of its own)."""
    kept = link.holds_description()
    try:
        return call()
    except KeySchemaError as exc:
        if not kept:
            raise
        link.forget_tables(exc.table)
    return call()


async def once_more_async(link: Link, call: Callable[[], Awaitable[T]]) -> T:
    """:func:`once_more` of an asyncio call."""
    kept = link.holds_description()
    try:
        return await call()
    except KeySchemaError as exc:
        if not kept:
            raise
        link.forget_tables(exc.table)
    return await call()


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
