"""What ddbkeys' own items are, in one place, without I/O: the rule every reader of the table
applies (every listing method, the marker index, its backfill, verify, repair and maintainers).

ddbkeys keeps two kinds of items of its own in your tables, and nothing else is its own:

- a **marker**: the item at the markers' sort key whose marker attribute holds its own partition
  key (the same type and the same value). Recognised by that rule alone: a data item with
  ``ddbkeys_pk`` set to another key (or to its own key at another sort key), or an item that
  merely says ``ddbkeys_type = "marker"``, is not a marker, never lists a key that does not
  exist, and never makes its collection look marked;
- a **counter item** (:func:`is_counter`): an item whose ``ddbkeys_type``
  (:data:`ddbkeys._entity.ENTITY_ATTRIBUTE`) is exactly the string ``"counter"``, which every id
  strategy writes on its counter (the atomic counter, the block allocator's counter, the gapless
  sequence's and a collection sequence's counter item). Counter attributes are named by their
  strategy's settings, so the type is the one thing a reader sees; only that exact value counts:
  a ``ddbkeys_type`` of another value or type (``"customer"``, ``"Counter"``, a number) is your
  item. ``ddbkeys_type`` is ddbkeys' name (a strategy refuses it as a counter attribute): an item
  of yours that sets it to ``"counter"`` is taken for ddbkeys' own.

The listings use the rule twice: a scan or skip scan of the table hands out a collection's key
only at an item that is not ddbkeys' own (a collection holding nothing but its marker and
counters is not a key, unless the listing includes own items), and a scan of the marker index
hands out only markers. A scan projects the sort key, the marker attribute and
``ddbkeys_type`` besides the partition key, which costs no read unit on the service (a read is
charged by the item's size, whatever is projected).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from ddbkeys._attributes import show_value
from ddbkeys._entity import ENTITY_ATTRIBUTE, MARKER, is_counter, typed_as
from ddbkeys._errors import ConfigurationError, KeySchemaError
from ddbkeys._key_json import key_of_text
from ddbkeys._names import DEFAULT_MARKER_ATTRIBUTE
from ddbkeys._schema import TableInfo, key_value

__all__ = [
    "DEFAULT_MARKER_ATTRIBUTE",
    "DEFAULT_MARKER_SORT_KEY",
    "Markers",
    "Seen",
    "Strays",
    "is_counter",
    "is_own",
    "marker_sort_key",
    "markers_of",
    "own_projection",
    "same_value",
    "sort_value_of_text",
]

Key = dict[str, Any]  # one DynamoDB AttributeValue, e.g. {"S": "a"}

#: The marker's sort key, by the sort key's type: a fixed value, unlikely in data. An item at
#: this key is a marker only when its marker attribute holds its own partition key; any other
#: item there is data, and its collection cannot be marked (a clash, reported). The number is
#: -(10**38 - 1), 38 digits however it is written, so that boto3's TypeDeserializer (38 digits
#: of precision) reads it back; the string is not the smallest (" " and "!" sort before "#"),
#: so a collection's data can come before its marker in a scan.
DEFAULT_MARKER_SORT_KEY: dict[str, dict[str, Any]] = {
    "S": {"S": "#ddbkeys#marker"},
    "N": {"N": "-" + "9" * 38},
    "B": {"B": b"\x00"},
}


def marker_sort_key(info: TableInfo, given: Any = None) -> dict[str, Any]:
    """The markers' sort key value (typed) in ``info``'s table: ``given`` in the sort key's
    type, or the default for that type; a clear error for a table without a sort key."""
    sk = info.sort_key
    if sk is None:
        raise KeySchemaError(
            f"Table {info.name!r} has no sort key, so a marker item cannot sit beside the "
            "collection's items; list its keys with a plain scan (method='scan'), which "
            "reads each key once anyway.",
            table=info.name,
        )
    if given is None:
        return DEFAULT_MARKER_SORT_KEY[sk.type]
    return dict(key_value(sk, given, table=info.name))


def sort_value_of_text(value: object, kind: str) -> object:
    """A marker sort key given as text (a Lambda function's environment) in the sort key's
    type ``kind``: a number, or base64 bytes; any other value as it is."""
    if not isinstance(value, str):
        return value
    try:
        return key_of_text(value, kind)
    except (ArithmeticError, ValueError) as exc:
        wanted = "a number" if kind == "N" else "base64"
        raise ConfigurationError(
            f"The marker sort key {value!r} is not {wanted}, as the table's sort key needs."
        ) from exc


def same_value(a: object, b: object) -> bool:
    """Whether two AttributeValues are the same key value: the same type and value (numbers by
    value), as DynamoDB's ``#a = #b`` compares them. A missing value is never the same."""
    if not isinstance(a, Mapping) or not isinstance(b, Mapping) or len(a) != 1 or len(b) != 1:
        return False
    (kind, left), (other, right) = next(iter(a.items())), next(iter(b.items()))
    if kind != other or kind not in ("S", "N", "B"):
        return False
    if kind == "N":
        try:
            return Decimal(str(left)) == Decimal(str(right))
        except InvalidOperation:
            return False
    if kind == "B":
        return bytes(left) == bytes(right)
    return bool(left == right)


def is_own(item: Mapping[str, Any], markers: Markers | None) -> bool:
    """Whether ``item`` is ddbkeys' own in a table whose markers are ``markers`` (None: the
    table has no sort key, hence no markers, and only counter items are ddbkeys' own)."""
    return is_counter(item) if markers is None else markers.is_own(item)


def own_projection(partition_key: str, markers: Markers | None) -> tuple[str, dict[str, str]]:
    """A ProjectionExpression of what telling ddbkeys' own items from yours reads in the table
    (the keys, the marker attribute where there are markers, and ``ddbkeys_type``)."""
    if markers is None:
        return "#pk, #t", {"#pk": partition_key, "#t": ENTITY_ATTRIBUTE}
    projection, names = markers.projection()
    return projection + ", #t", {**names, "#t": ENTITY_ATTRIBUTE}


@dataclass(frozen=True)
class Markers:
    """How ddbkeys' markers are known in one table: the key attributes' names, the marker
    attribute and the markers' sort key value."""

    partition_key: str
    sort_key: str
    attribute: str
    sort_value: Key

    def is_marker(self, item: Mapping[str, Any]) -> bool:
        """Whether ``item`` is a marker: at the markers' sort key, its marker attribute equal
        to its own partition key."""
        return same_value(item.get(self.sort_key), self.sort_value) and same_value(
            item.get(self.attribute), item.get(self.partition_key)
        )

    def is_own(self, item: Mapping[str, Any]) -> bool:
        """Whether ``item`` is ddbkeys' own: a marker, or a counter item."""
        return self.is_marker(item) or is_counter(item)

    def is_data(self, item: Mapping[str, Any]) -> bool:
        """Whether ``item`` is yours: neither a marker nor a counter item."""
        return not self.is_own(item)

    def projection(self) -> tuple[str, dict[str, str]]:
        """A ProjectionExpression of what :meth:`is_marker` reads, with its names (the marker
        index projects no more; :func:`own_projection` adds ``ddbkeys_type`` for the table)."""
        names = {"#pk": self.partition_key, "#sk": self.sort_key, "#m": self.attribute}
        return "#pk, #sk, #m", names


def markers_of(
    info: TableInfo, attribute: str = DEFAULT_MARKER_ATTRIBUTE, sort_key: Any = None
) -> Markers | None:
    """The markers of ``info``'s table (None when it has no sort key: it has no markers)."""
    if info.sort_key is None:
        return None
    return Markers(
        info.partition_key.name, info.sort_key.name, attribute, marker_sort_key(info, sort_key)
    )


@dataclass
class Seen:
    """Where the reading of one Scan segment stands: the collection of the last item read
    (``last``), and whether its key was handed out (``handed``: False while that collection
    showed nothing that counts, such as its marker alone). A segment resumed after a key
    starts as having handed it out."""

    last: Key | None = None
    handed: bool = True

    def take(
        self,
        items: Sequence[Mapping[str, Any]],
        attribute: str,
        counts: Callable[[Mapping[str, Any]], bool],
    ) -> list[Key]:
        """The keys (the values of ``attribute``) of ``items`` to hand out: a collection's
        key once, at its first item that ``counts`` (a collection's items come together)."""
        found: list[Key] = []
        for item in items:
            key = item[attribute]
            if key != self.last:
                self.last, self.handed = dict(key), False
            if not self.handed and counts(item):
                self.handed = True
                found.append(dict(key))
        return found


@dataclass
class Strays:
    """Keys a listing handed out at an item that says it is ddbkeys' marker (``ddbkeys_type``
    ``"marker"``, as every marker ddbkeys writes) but is not one as the listing knows markers:
    most likely a marker index made with another ``--marker-sort-key`` or
    ``--marker-attribute``, whose record the listing did not read (another state table). Such
    a key may hold nothing but that marker. The type alone never makes an item ddbkeys' own
    (another tool may write anything): the listing says so instead, once it has read."""

    count: int = 0
    sort_value: Any = None  # the first one's sort key value
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def met(self, item: Mapping[str, Any], markers: Markers | None) -> None:
        """A key is handed out at ``item``: counted where it says it is a marker."""
        if not typed_as(item, MARKER):
            return
        with self._lock:
            self.count += 1
            if self.sort_value is None and markers is not None:
                self.sort_value = item.get(markers.sort_key)

    def note(self, markers: Markers | None) -> str:
        """What the listing says of them (empty: none)."""
        if not self.count or markers is None:
            return ""
        many = "s were" if self.count != 1 else " was"
        at = f", the first at sort key {show_value(self.sort_value)}" if self.sort_value else ""
        return (
            f"{self.count:,} key{many} listed at an item that says it is ddbkeys' marker but is "
            f"not one of this listing's (sort key {show_value(markers.sort_value)}, attribute "
            f"{markers.attribute!r}){at}: such a key may hold nothing but a marker of an index "
            "made with other settings. Pass that index's marker_sort_key= and "
            "marker_attribute=, or the state_table= holding its record"
        )
