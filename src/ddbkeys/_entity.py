"""The one attribute that names what a ddbkeys item is, for other readers of the table.

ddbkeys keeps a few items of its own in your tables: a marker in each item collection (the marker
index, :mod:`ddbkeys.partition_keys._index.index`) and the counter items of the id strategies. Each
carries ``ddbkeys_type`` (``ENTITY_ATTRIBUTE``) with what it is (``MARKER``, ``COUNTER``), so a scan
or a model of your own can leave them out with one filter: ``attribute_not_exists(ddbkeys_type)``.

ddbkeys' listings read it for counter items only: an item whose ``ddbkeys_type`` is exactly
``"counter"`` is ddbkeys' own and makes no key (any other value or type is yours). A marker is
recognised by its key and its marker attribute, never by this attribute (another tool may write
anything). The one definition: ``partition_keys._listing.recognise``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["COUNTER", "ENTITY_ATTRIBUTE", "MARKER", "is_counter", "typed_as"]

ENTITY_ATTRIBUTE = "ddbkeys_type"
MARKER = "marker"
COUNTER = "counter"


def typed_as(item: Mapping[str, Any], value: str) -> bool:
    """Whether ``item``'s ``ddbkeys_type`` is exactly the string ``value``."""
    kind = item.get(ENTITY_ATTRIBUTE)
    return isinstance(kind, Mapping) and len(kind) == 1 and kind.get("S") == value


def is_counter(item: Mapping[str, Any]) -> bool:
    """Whether ``item`` is an id strategy's counter item: its ``ddbkeys_type`` is exactly the
    string ``"counter"`` (any other value or type is data)."""
    return typed_as(item, COUNTER)
