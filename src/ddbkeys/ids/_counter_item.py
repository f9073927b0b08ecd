"""The counter item read and guarded: its one strongly consistent read, and the condition that
keeps a counter's write from making a counter of an item of yours (whose key would then drop
out of every listing: ``ddbkeys_type`` marks ddbkeys' own items)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from ddbkeys._caller import outside
from ddbkeys._core.steps import Flow, get_item
from ddbkeys._entity import COUNTER, ENTITY_ATTRIBUTE
from ddbkeys.ids._base import TYPE_NAMES, CounterItem
from ddbkeys.ids._errors import CounterStateError, NewCounterAttributeWarning
from ddbkeys.ids._values import show_key, type_name

__all__ = [
    "COUNTER_ONLY",
    "NUMBER_0_TAKEN",
    "counter_names",
    "not_a_counter",
    "other_counters",
    "read_counter",
    "read_counter_item",
    "warn_if_new",
]

#: What to do where an item of yours holds number 0 of a collection, the never_reuse
#: counter's key (helper-73 F3: the advice was to name another counter, which a collection
#: sequence cannot).
NUMBER_0_TAKEN = (
    "A collection sequence with never_reuse=True keeps its counter at number 0 of the "
    "collection: move that item to another sort key, or use the sequence without "
    "never_reuse=True."
)


#: The condition that keeps a counter's write from making a counter of an item that is not
#: one: the item is none yet (``#k``, one of its key attributes: :func:`counter_names`, absent),
#: is typed a counter, or holds the counter attribute (``#v``: a counter another tool wrote)
#: and no type (an item you typed otherwise, ``"order"`` say, is yours even with a ``last_id``).
COUNTER_ONLY = (
    "(attribute_not_exists(#k) OR #ddbkeys_type = :ddbkeys_type"
    " OR (attribute_exists(#v) AND attribute_not_exists(#ddbkeys_type)))"
)


def counter_names(counter: CounterItem) -> dict[str, str]:
    """The names :data:`COUNTER_ONLY` takes (with ``TYPE_NAMES`` and ``TYPE_VALUES``)."""
    return {"#k": next(iter(counter.key)), "#v": counter.attribute, **TYPE_NAMES}


def not_a_counter(counter: CounterItem, item: Mapping[str, Any] | None) -> CounterStateError | None:
    """The error when ``item`` (the counter item as it is, or its key, type and counter
    attribute) is an item of yours, not a counter: it exists and is typed otherwise, or holds
    no counter attribute and is not typed one. None when it is none, or a counter."""
    typed = item.get(ENTITY_ATTRIBUTE) if item else None
    if not item or typed == {"S": COUNTER} or (typed is None and counter.attribute in item):
        return None
    why = (
        f"its {ENTITY_ATTRIBUTE} is {shown(typed)}, not {COUNTER!r}"
        if typed is not None
        else f"it holds no {counter.attribute!r} (is counter_attribute= right?) and is not "
        "typed one"
    )
    return CounterStateError(
        f"Item {show_key(counter.key)} of table {counter.table!r} is an item of yours, not a "
        f"counter ({why}): nothing was changed and no id given. {counter.advice}",
        table=counter.table,
    )


def shown(value: Mapping[str, Any]) -> str:
    """A type attribute's value for a message: a string as such, else its type."""
    text = value.get("S") if isinstance(value, Mapping) else None
    return repr(text) if isinstance(text, str) else type_name(value)


def read_counter(counter: CounterItem) -> Flow[Any]:
    """The counter attribute as the counter item holds it, raw (None when the item or the
    attribute is missing): one strongly consistent GetItem (1 read unit), counted; a
    :class:`CounterStateError` when the item is one of yours, not a counter
    (:func:`not_a_counter`: a collection's counter too, whose key an item another tool
    numbered 0 may hold)."""
    item = yield from read_counter_item(counter)
    return item.get(counter.attribute)


def read_counter_item(counter: CounterItem) -> Flow[Mapping[str, Any]]:
    """:func:`read_counter`'s read: the counter item as it is (empty when it is missing;
    whole: a GetItem is billed by the item's size, whatever it projects)."""
    response = yield get_item(
        {
            "TableName": counter.table,
            "Key": counter.key,
            "ConsistentRead": True,
            "ReturnConsumedCapacity": "TOTAL",
        }
    )
    item: Mapping[str, Any] = response.get("Item", {})
    refused = not_a_counter(counter, item)
    if refused is not None:
        raise refused
    return item


def other_counters(counter: CounterItem, item: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers ``item`` (a counter item's whole image) holds beside ``counter``'s own
    attribute, its key and ddbkeys' own attributes (its type, writer slots): the other
    counters on the item, by attribute."""
    return {
        name: value["N"]
        for name, value in item.items()
        if name != counter.attribute
        and name not in counter.key
        and not name.startswith("ddbkeys_")
        and isinstance(value, Mapping)
        and set(value) == {"N"}
    }


def warn_if_new(
    counter: CounterItem, before: Mapping[str, Any], first: int, *, resent: bool = False
) -> None:
    """A :class:`~ddbkeys.ids.NewCounterAttributeWarning` where a counter's write found its
    item (``before``, the write's whole old image) a counter holding another counter but not
    this one's attribute: it made it, and gave ids from ``first`` (helper-77: ``--attribute
    lastid`` for ``last_id`` gave ids from 1 again, silently). ``resent``: a write of the call
    was sent again and may have made the attribute itself (helper-79 F1: the retry found it,
    and no call ever warned). An item that holds no other counter (a new one, or one whose
    ids were all handed back) is none of that."""
    a_counter = before.get(ENTITY_ATTRIBUTE) == {"S": COUNTER}
    if not a_counter or (counter.attribute in before and not resent):
        return
    others = other_counters(counter, before)
    if not others:
        return
    held = ", ".join(f"{name!r} = {value}" for name, value in sorted(others.items()))
    began = (
        f"may have begun with this call, at {first} (a write of the call was sent again: "
        "whether it was new is not known)"
        if resent
        else f"began with this call, at {first}"
    )
    warnings.warn(
        f"Counter item {show_key(counter.key)} of table {counter.table!r} holds {held}, and "
        f"its counter {counter.attribute!r} {began}. If counter_attribute= is misspelt, these "
        "ids may repeat those given from the other.",
        NewCounterAttributeWarning,
        stacklevel=outside(),  # (your line that asked for the id)
    )
