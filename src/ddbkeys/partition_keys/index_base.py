"""What both forms of ``MarkerIndex`` (sync and asyncio) share: the :class:`MarkerPlan` and the
client its flows are sent with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ddbkeys.capacity import Usage
from ddbkeys.core.reads import Through
from ddbkeys.partition_keys.base import client_and_table, read_timeout
from ddbkeys.partition_keys.markers import (
    DEFAULT_INDEX,
)
from ddbkeys.partition_keys.state import StatePlan
from ddbkeys.retry import DEFAULT_DEADLINE, RetryPolicy
from ddbkeys.schema import (
    TableInfo,
    check_table_name,
)

if TYPE_CHECKING:
    pass

from ddbkeys.partition_keys.marker_plan import MarkerPlan

__all__ = ["MarkerIndexBase"]


class MarkerIndexBase:
    """What both forms of ``MarkerIndex`` share: the :class:`MarkerPlan` (``plan``: the
    settings, and the table's description once known) and the client its flows are sent with
    (``client``); the plan's settings read through."""

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
        self.plan = MarkerPlan(
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

    def _state(self, state_table: str | None) -> StatePlan:
        """The record of this index in ``state_table``, within this index's settings."""
        return StatePlan(state_table, deadline=self.plan.deadline, retry=self.plan.retry)

    table: Through[str] = Through("plan")
    name: Through[str] = Through(
        "plan", "The marker index's name (``index_name=``, ``--index-name``)."
    )
    attribute: Through[str] = Through(
        "plan",
        "The marker attribute (``DEFAULT_MARKER_ATTRIBUTE`` unless given). A follower takes "
        "the index's own key instead when none was given.",
    )
    usage: Through[Usage] = Through("plan")
    deadline: Through[float | None] = Through("plan")
    retry: Through[RetryPolicy] = Through("plan")
    info: Through[TableInfo | None] = Through(
        "plan", "The table's description, once given or read (None before: no request is sent)."
    )
    marker_sort_key: Through[dict[str, Any] | None] = Through(
        "plan", "The markers' sort key value (typed), once the table's description is known."
    )
