"""The gapless sequence for asyncio: the same settings and flows as
:class:`ddbkeys.ids.GaplessSequence` (:mod:`ddbkeys.ids._gapless`), run on the asyncio driver,
with ``await``. Concurrent ``put()`` calls of one event loop share commits
(:class:`~ddbkeys.ids._group.AsyncGroupCommit`): one group per event loop, so that the sequence
holds no task or future of a loop between calls and may be used from one loop after another
(with a client that is open in each)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage
from ddbkeys._core.loops import PerLoop
from ddbkeys._core.reads import Settable, Through
from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._retry import DEFAULT_DEADLINE, RetryPolicy
from ddbkeys._schema import TableInfo
from ddbkeys.aio._client import as_async_client
from ddbkeys.ids import _gapless as flows
from ddbkeys.ids._base import CounterItem
from ddbkeys.ids._gapless_core import MAX_BATCH, Pending
from ddbkeys.ids._group import AsyncGroupCommit
from ddbkeys.ids._link import once_more_async, sequence_link
from ddbkeys.ids._values import flag

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["GaplessSequence"]


class GaplessSequence:
    __doc__ = flows.GaplessSequence.__doc__

    refuses_global_tables = flows.GaplessSequence.refuses_global_tables
    default_retry = flows.GaplessSequence.default_retry

    def __init__(
        self,
        client: object,
        table: str | None = None,
        name: str = "sequence",
        *,
        key_attribute: str | None = None,
        counter_key: Mapping[str, Any] | None = None,
        counter_table: str | None = None,
        counter_attribute: str = "last_id",
        id_attribute: str = "id",
        width: int = 10,
        prefix: str = "",
        group_commit: bool = True,
        max_batch: int = MAX_BATCH,
        linger: float = 0.002,
        retry: RetryPolicy | None = None,
        usage: Usage | None = None,
        allow_global_tables: bool = False,
        deadline: float | None = DEFAULT_DEADLINE,
    ) -> None:
        connected = as_async_client(client, table)
        self._link = sequence_link(
            flows.GaplessSequence, connected, retry, usage, allow_global_tables, deadline
        )
        #: Its decisions (no client in it); the sequence's settings below are its.
        self.core = flows.gapless_core(
            self._link,
            name,
            key_attribute,
            counter_key,
            counter_table,
            counter_attribute,
            id_attribute,
            width,
            prefix,
            max_batch,
        )
        #: What it knows of the counter's value between calls.
        self.state = flows.counter_state(self.core, self._link)
        self._driver = AsyncDriver(
            self._link.client, self._link.usage, "ddbkeys.aio.GaplessSequence", self._link.guarded
        )

        def group() -> AsyncGroupCommit[Pending, int]:
            return AsyncGroupCommit(self._commit, max_batch, linger=linger)

        self._group = (
            PerLoop(group) if flag("group_commit", group_commit, self._link.table) else None
        )

    client: Through[Any] = Through("_link")
    table: Through[str] = Through("_link")
    retry: Through[RetryPolicy] = Through("_link")
    usage: Through[Usage] = Through("_link")
    deadline: Settable[float | None] = Settable("_link")
    allow_global_tables: Through[bool] = Through("_link")
    name: Through[str] = Through("core")
    key_attribute: Through[str | None] = Through("core")
    counter_table: Through[str] = Through("core")
    counter_attribute: Through[str] = Through("core")
    id_attribute: Through[str] = Through("core")
    width: Through[int] = Through("core")
    prefix: Through[str] = Through("core")

    async def _commit(self, calls: Sequence[Pending]) -> list[int | BaseException]:
        """One shared commit of the group (run by the committing task)."""
        return await self._driver.run(flows.shared(self.core, self._link, self.state, calls))

    async def put(self, item: Mapping[str, Any], *, typed: bool = False) -> int:
        """Write ``item`` with the next id, and return the id.

        ``typed=True``: the item is in DynamoDB's typed form (``{"name": {"S": "x"}}``).
        """
        core, link = self.core, self._link
        if self._group is None:
            return await self._driver.run(flows.put_alone(core, link, self.state, item, typed))
        group = self._group

        async def grouped() -> int:
            call = await self._driver.run(flows.pending(core, link, item, typed))
            return await group.get().submit(call)

        return await once_more_async(link, grouped)

    async def put_many(
        self, items: Sequence[Mapping[str, Any]], *, typed: bool = False
    ) -> list[int]:
        """Write up to 99 items in one transaction with consecutive ids; all or none.

        If one of them already exists, :class:`~ddbkeys.ids.ItemExistsError` names it and
        nothing is written.
        """
        many = flows.put_many(self.core, self._link, self.state, items, typed)
        return await self._driver.run(many)

    async def current(self) -> int:
        """The last id given out (0 before the first)."""
        return await self._driver.run(flows.current(self.core, self._link))

    async def counter_item(self) -> CounterItem:
        """Where the counter lives: its table, key and attribute (one DescribeTable the first
        time, to find the key from the table's key schema)."""
        where = flows.counter_item(self.core, self._link, self._link.begin())
        return await self._driver.run(where)

    @property
    def counter_key(self) -> dict[str, AttributeValueTypeDef]:
        """The counter item's key, once a call has found it (a property sends no request)."""
        return flows.known_key(self.core, self._link, "(await counter_item()).key")

    async def table_info(self, table: str | None = None) -> TableInfo:
        """A table's description (this sequence's table by default): one DescribeTable the
        first time, within the sequence's deadline; the global-table guard applied."""
        return await self._driver.run(self._link.table_info(self._link.begin(), table))
