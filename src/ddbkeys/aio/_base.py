"""The asyncio side of the id strategies' core: the same flows, run by the asyncio driver."""

from __future__ import annotations

from typing import Any, TypeVar

from ddbkeys._core.steps import Flow
from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._schema import TableInfo
from ddbkeys.aio._client import as_async_client
from ddbkeys.ids._base import StrategyCore

__all__ = ["AsyncIdStrategy"]

T = TypeVar("T")


class AsyncIdStrategy(StrategyCore):
    """The base of every asyncio id strategy: an aiobotocore client, the asyncio driver."""

    def __init__(self, client: object, table: str | None = None, **settings: Any) -> None:
        super().__init__(client, table, **settings)
        self._driver = AsyncDriver(self.client, self.usage, f"ddbkeys.aio.{type(self).__name__}")

    def _connect(self, client: object, table: str | None) -> tuple[Any, str | None]:
        return as_async_client(client, table)

    async def _run(self, flow: Flow[T]) -> T:
        return await self._driver.run(flow)

    async def table_info(self, table: str | None = None) -> TableInfo:
        """A table's description (this strategy's table by default): one DescribeTable the
        first time, within the strategy's deadline; the global-table guard applied."""
        return await self._run(self._table_info(self._begin(), table))
