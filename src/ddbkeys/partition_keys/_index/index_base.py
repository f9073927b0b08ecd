"""What both forms of ``MarkerIndex`` (sync and asyncio) share: the :class:`MarkerCore` and the
client its flows are sent with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage
from ddbkeys._core.reads import Through
from ddbkeys._retry import DEFAULT_DEADLINE, RetryPolicy
from ddbkeys._schema import TableInfo, check_table_name
from ddbkeys.partition_keys._index.markers import DEFAULT_INDEX
from ddbkeys.partition_keys._index.state import StateCore
from ddbkeys.partition_keys._listing.base import client_and_table, read_timeout

if TYPE_CHECKING:
    pass

from ddbkeys.partition_keys._index.marker_core import MarkerCore

__all__ = ["MarkerIndexBase"]


class MarkerIndexBase:
    """What both forms of ``MarkerIndex`` share: the :class:`MarkerCore` (``core``: the
    settings, and the table's description once known) and the client its flows are sent with
    (``client``); the core's settings read through."""

    def __init__(
        self,
        client: object,
        table: str | None = None,
        *,
        index_name: str = DEFAULT_INDEX,
        marker_attribute: str | None = None,
        marker_sort_key: Any = None,
        usage: Usage | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        retry: RetryPolicy | None = None,
        info: TableInfo | None = None,
    ) -> None:
        self.client, table = self._connect(client, table, deadline)
        check_table_name(table)
        self.core = MarkerCore(
            table,
            index_name=index_name,
            marker_attribute=marker_attribute,
            marker_sort_key=marker_sort_key,
            usage=usage,
            deadline=deadline,
            retry=retry,
            info=info,
            read_timeout=read_timeout(self.client),
        )

    def _connect(self, client: object, table: str | None, deadline: float | None) -> Any:
        return client_and_table(client, table, deadline)

    def _state(self, state_table: str | None) -> StateCore:
        """The record of this index in ``state_table``, within this index's settings."""
        return StateCore(state_table, deadline=self.core.deadline, retry=self.core.retry)

    table: Through[str] = Through("core")
    name: Through[str] = Through(
        "core", "The marker index's name (``index_name=``, ``--index-name``)."
    )
    attribute: Through[str] = Through(
        "core",
        "The marker attribute (``DEFAULT_MARKER_ATTRIBUTE`` unless given). A follower takes "
        "the index's own key instead when none was given.",
    )
    usage: Through[Usage] = Through("core")
    deadline: Through[float | None] = Through("core")
    retry: Through[RetryPolicy] = Through("core")
    info: Through[TableInfo | None] = Through(
        "core", "The table's description, once given or read (None before: no request is sent)."
    )
    marker_sort_key: Through[dict[str, Any] | None] = Through(
        "core", "The markers' sort key value (typed), once the table's description is known."
    )
