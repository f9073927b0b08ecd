"""The item-collection sequence (the AWS post on auto-increment, "with a sort key"): the number
is the sort key. Its decisions are its plan's
(:class:`~ddbkeys.ids._collection_plan.CollectionPlan`); this is the sync form, on the sync driver
(threads share commits through :class:`~ddbkeys.ids._group.GroupCommit`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ddbkeys._schema import KeyAttribute
from ddbkeys.ids._base import IdStrategy
from ddbkeys.ids._collection_core import CollectionCore
from ddbkeys.ids._collection_plan import OnConflict, PartitionKeyValue, Pending
from ddbkeys.ids._group import GroupCommit

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = ["CollectionSequence", "OnConflict"]


class CollectionSequence(CollectionCore, IdStrategy):
    __doc__ = CollectionCore.__doc__

    def put(
        self,
        partition_key_value: PartitionKeyValue,
        item: Mapping[str, Any] | None = None,
        *,
        typed: bool = False,
    ) -> int:
        """Store ``item`` in the collection ``partition_key_value`` with the next number as its
        sort key, and return the number.

        ``typed=True``: the item is in DynamoDB's typed form (``{"name": {"S": "x"}}``).
        """
        if not self.group_commit:
            return self._run(self._put_alone(partition_key_value, item, typed))
        pending = self._run(self._prepare(self._begin(), partition_key_value, item, typed))
        with self._groups.using(pending.collection) as group:
            number: int = group.submit(pending)
        return number

    def _new_group(self) -> GroupCommit[Pending, int]:
        return GroupCommit(lambda batch: self._run(self._commit(batch)), self.plan.max_batch)

    def check(
        self,
        partition_key_value: PartitionKeyValue,
        item: Mapping[str, Any] | None = None,
        *,
        typed: bool = False,
    ) -> None:
        """Raise the error :meth:`put` would raise for this item before sending it (a key of the
        wrong type, a value DynamoDB cannot store, an attribute the sequence sets); at most 1
        DescribeTable, once per object. Check every item of a batch first, then write them."""
        self._run(self._prepare(self._begin(), partition_key_value, item, typed))

    def current(self, partition_key_value: PartitionKeyValue) -> int:
        """The last number given out in the collection, 0 before the first: the highest sort
        key (one Query of one item, 0.5 or 1 read unit), or with ``never_reuse`` the
        collection's counter (one strongly consistent GetItem, 1 read unit)."""
        return self._run(self._current(partition_key_value))

    def keys(self) -> tuple[KeyAttribute, KeyAttribute]:
        """The table's partition and sort key (one DescribeTable the first time)."""
        return self._run(self._keys(self._begin()))

    def sort_key_value(self, number: int) -> AttributeValueTypeDef:
        """The sort key that holds ``number`` (one DescribeTable the first time, to learn the
        sort key's type)."""
        return self.plan.sort_key(self.keys()[1], number)

    def counter_key(self, partition_key_value: AttributeValueTypeDef) -> dict[str, Any]:
        """The key of a collection's counter item (``never_reuse``): the number 0."""
        return self.plan.counter_key(self.keys(), partition_key_value)
