"""The gapless sequence (the transactional optimistic lock): the counter and the item move
together, in one transaction. The decisions are its plan's
(:class:`~ddbkeys.ids._gapless_plan.GaplessPlan`); this is the sync API, on the sync driver
(threads share commits through :class:`GroupCommit`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ddbkeys._errors import ConfigurationError
from ddbkeys.ids._base import CounterItem, IdStrategy
from ddbkeys.ids._gapless_core import MAX_BATCH, GaplessCore, Pending
from ddbkeys.ids._group import GroupCommit

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["MAX_BATCH", "GaplessSequence"]


class GaplessSequence(GaplessCore, IdStrategy):
    __doc__ = GaplessCore.__doc__

    _group: GroupCommit[Pending, int] | None

    def _start_group(self, enabled: bool, max_batch: int, linger: float) -> None:
        self._group = GroupCommit(self._commit_batch, max_batch, linger=linger) if enabled else None

    def _commit_batch(self, pending: Sequence[Pending]) -> list[int | BaseException]:
        """One shared commit of the group (run by the leading thread)."""
        return self._run(self._shared(pending))

    def put(self, item: Mapping[str, Any], *, typed: bool = False) -> int:
        """Write ``item`` with the next id, and return the id.

        ``typed=True``: the item is in DynamoDB's typed form (``{"name": {"S": "x"}}``).
        """
        if self._group is None:
            return self._run(self._put_alone(item, typed))
        return self._group.submit(self._run(self._pending(item, typed)))

    def put_many(self, items: Sequence[Mapping[str, Any]], *, typed: bool = False) -> list[int]:
        """Write up to 99 items in one transaction with consecutive ids; all or none.

        If one of them already exists, :class:`ItemExistsError` names it and nothing is written.
        """
        return self._run(self._put_many(items, typed))

    def current(self) -> int:
        """The last id given out (0 before the first)."""
        return self._run(self._current())

    def counter_item(self) -> CounterItem:
        """Where the counter lives: its table, key and attribute (one DescribeTable the first
        time, to find the key from the table's key schema)."""
        return self._run(self._counter_item(self._begin()))

    @property
    def counter_key(self) -> dict[str, AttributeValueTypeDef]:
        """The counter item's key, once a call has found it (a property sends no request)."""
        if self._counter is None:
            raise ConfigurationError(
                f"The counter key of sequence {self.name!r} is not known yet (it comes from the "
                "table's key schema): use counter_item().key, which reads it.",
                table=self.table,
            )
        return self._counter.key
