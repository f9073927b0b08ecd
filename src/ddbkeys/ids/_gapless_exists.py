"""The error of a gapless put refused because an item's key was taken (apart from
:mod:`ddbkeys.ids._gapless_core`, which decides when)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ddbkeys.ids._errors import ItemExistsError
from ddbkeys.ids._values import item_key, show_key

if TYPE_CHECKING:
    from ddbkeys._schema import TableInfo
    from ddbkeys.ids._cancellation import Cancellation

__all__ = ["exists_error"]


def exists_error(
    table: str,
    name: str,
    by_id: bool,
    item: Mapping[str, Any],
    cancellation: Cancellation,
    last: int | None,
    info: TableInfo,
    others: int = 0,
) -> ItemExistsError:
    """The error of an item of the sequence ``name`` (as messages name it: its core's
    ``label``) whose key was taken (by the item itself, or,
    ``by_id``, an id's key); ``others``: the items of its transaction, not written either."""
    nor = (
        f" Nor were the other {others} item(s) of this put: they are written together or "
        "not at all."
        if others
        else ""
    )
    if not by_id:
        key = item_key(item, info)
        return ItemExistsError(
            f"An item with the key {show_key(key)} already exists in table {table!r}; "
            f"it was not written and used up no id.{nor}",
            key=dict(key),
            table=table,
        )
    failed = min(i for i in cancellation.failed_conditions if i >= 1)
    number = (last or 0) + failed
    old = cancellation.old_item(failed)
    key = item_key(old, info) if old else {}
    return ItemExistsError(
        f"Id {number} is taken: an item with the key {show_key(key) if key else number} "
        f"already exists in table {table!r}, but sequence {name} is at "
        f"{last or 0} (the counter is behind the ids in the table: was it set back?). The "
        f"item was not written and used up no id.{nor}",
        key=dict(key),
        table=table,
    )
