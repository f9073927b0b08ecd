"""The keys of a sequence per item collection, without I/O: which key schema keeps one, the
sort key that holds a number, the number a sort key holds, and the Query of a collection's
highest number. Shared by :class:`~ddbkeys.ids._collection.CollectionSequence` (both drivers)
and :func:`~ddbkeys.ids._audit.audit_collection`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from ddbkeys._errors import KeySchemaError
from ddbkeys._schema import KeyAttribute, TableInfo, check_name
from ddbkeys.ids._errors import SequenceExhaustedError
from ddbkeys.ids._values import check_padding, show_key

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef, QueryInputTypeDef

__all__ = [
    "HighestSortKey",
    "check_collection_settings",
    "collection_keys",
    "highest_in",
    "highest_query",
    "number_bounds",
    "number_in",
    "sort_key_of",
]


def collection_keys(info: TableInfo, table: str) -> tuple[KeyAttribute, KeyAttribute]:
    """The partition and sort key of ``table``, or a :class:`KeySchemaError` when it has no
    number (N) or string (S) sort key to keep the numbers in."""
    if info.sort_key is None or info.sort_key.type not in ("N", "S"):
        raise KeySchemaError(
            f"Table {table!r} needs a number (N) or string (S) sort key to keep a "
            f"sequence per item collection; its key is ({', '.join(info.key_names())}).",
            table=table,
        )
    return info.partition_key, info.sort_key


def sort_key_of(
    sort_key: KeyAttribute, number: int, *, width: int, prefix: str, table: str
) -> AttributeValueTypeDef:
    """The sort key that holds ``number``: the number itself in a number sort key, ``prefix`` and
    the number padded to ``width`` digits in a string one (:class:`SequenceExhaustedError` once
    it no longer fits)."""
    if sort_key.type == "N":
        return {"N": str(number)}
    digits = str(number)
    if len(digits) > width:
        raise SequenceExhaustedError(
            f"Number {number} no longer fits the {width}-digit sort key {sort_key.name!r} of "
            f"table {table!r}: choose a larger width for new collections.",
            table=table,
        )
    return {"S": prefix + digits.zfill(width)}


def number_in(
    value: Mapping[str, Any], *, prefix: str, table: str, width: int | None = None
) -> int:
    """The number a sort key holds, or a :class:`KeySchemaError` naming the value. Given
    ``width``, a string sort key must hold exactly ``width`` digits after ``prefix``, as the
    sequence writes them: another tool's ``"9"`` or ``"10"`` sorts among them (``"9"`` after
    ``"0000000012"``), so the sequence would go on from 10 beside ``"10"`` (a number twice),
    or try ``"0000000003"`` for good."""
    raw = value.get("N") if "N" in value else value.get("S", "")
    text = str(raw)
    if "S" in value:
        if not text.startswith(prefix):
            raise KeySchemaError(
                f"Sort key {text!r} of table {table!r} does not start with the prefix {prefix!r}.",
                table=table,
            )
        text = text[len(prefix) :]
        if width is not None and (len(text) != width or not text.isascii() or not text.isdigit()):
            raise KeySchemaError(
                f"Sort key {raw!r} of table {table!r} is not {_form(prefix, width)}, as the "
                "sequence writes its numbers (so that their string order is their order).",
                table=table,
            )
    try:
        number = Decimal(text)
    except InvalidOperation:
        number = Decimal("NaN")
    if not number.is_finite() or number != number.to_integral_value():
        raise KeySchemaError(
            f"Sort key {raw!r} in table {table!r} is not a whole number, so it cannot "
            "be part of a sequence.",
            table=table,
        )
    return int(number)


def _form(prefix: str, width: int) -> str:
    """How the sequence writes a number in a string sort key, in words."""
    return (f"{prefix!r} and " if prefix else "") + f"{width} digits, zero-padded"


def highest_query(
    table: str,
    keys: tuple[KeyAttribute, KeyAttribute],
    pk_value: AttributeValueTypeDef,
    *,
    width: int,
    prefix: str,
    consistent_read: bool,
) -> QueryInputTypeDef:
    """The Query of a collection's highest number: newest first, one item, the sort key alone
    (in a string sort key, only ``prefix`` and ``width`` digits count)."""
    pk, sk = keys
    values: dict[str, AttributeValueTypeDef] = {":pk": pk_value}
    condition = "#pk = :pk"
    if sk.type == "S":
        condition += " AND #sk BETWEEN :lo AND :hi"
        low, high = number_bounds(prefix, width)
        values[":lo"], values[":hi"] = {"S": low}, {"S": high}
    return {
        "TableName": table,
        "KeyConditionExpression": condition,
        "ExpressionAttributeNames": {"#pk": pk.name, "#sk": sk.name},
        "ExpressionAttributeValues": values,
        "ProjectionExpression": "#sk",
        "ScanIndexForward": False,
        "Limit": 1,
        "ConsistentRead": consistent_read,
        "ReturnConsumedCapacity": "TOTAL",
    }


def number_bounds(prefix: str, width: int) -> tuple[str, str]:
    """The lowest and highest string sort key among which a sequence's numbers sort (``prefix``
    and ``width`` zeros, and nines): what its Query of the highest number reads."""
    return prefix + "0" * width, prefix + "9" * width


def highest_in(
    found: Sequence[Mapping[str, Any]],
    keys: tuple[KeyAttribute, KeyAttribute],
    pk_value: AttributeValueTypeDef,
    *,
    prefix: str,
    table: str,
    width: int,
) -> int:
    """The highest number of a collection, from the Query of its highest sort key (``found``:
    none, or its item): 0 for none, or for a number below 1 (another tool's 0, or a negative
    one: the sequence never hands out, nor counts up to, a number below 1). An item without
    the sort key is a :class:`KeySchemaError` (the table's sort key is another now: it was a
    helper's ``KeyError``), as is a sort key that holds no number the sequence writes."""
    if not found:
        return 0
    pk, sk = keys
    if sk.name not in found[0]:
        raise KeySchemaError(f"Table {table!r} has no sort key {sk.name!r} now.", table=table)
    try:
        return max(number_in(found[0][sk.name], prefix=prefix, table=table, width=width), 0)
    except KeySchemaError as exc:  # (a helper's: it named neither collection nor fix)
        raise KeySchemaError(
            f"{exc} It is the highest of collection {show_key({pk.name: pk_value})}, which "
            "the sequence goes on from: move or renumber that item (`ddbkeys ids audit -k` "
            "lists the collection's numbers).",
            table=table,
        ) from exc


@dataclass
class HighestSortKey:
    """The highest sort key a collection sequence goes on from, as its Query finds it
    (:func:`~ddbkeys.ids._collection_keys.highest_query`: in a string key, only those between
    ``prefix`` and ``width`` zeros and nines), seen in ascending order."""

    key_type: str
    prefix: str
    width: int
    table: str
    last: Mapping[str, Any] | None = None

    def see(self, value: Mapping[str, Any] | None) -> None:
        if value is None:
            return
        if self.key_type == "S":
            text = str(value.get("S", ""))
            low, high = number_bounds(self.prefix, self.width)
            if not low <= text <= high:
                return
        self.last = value

    def refused(self) -> str | None:
        """The highest key as text, where the sequence refuses to go on from it."""
        if self.last is None:
            return None
        try:
            number_in(self.last, prefix=self.prefix, table=self.table, width=self.width)
        except KeySchemaError:
            return str(self.last["N"]) if "N" in self.last else repr(self.last.get("S"))
        return None


def check_collection_settings(
    table: str, width: int, prefix: str, marker_attribute: str, counter_attribute: str
) -> None:
    """The settings of :func:`~ddbkeys.ids.audit_collection`, or a :class:`ConfigurationError`."""
    check_padding(width, prefix, table=table)
    check_name("marker attribute", marker_attribute, table=table)
    check_name("counter attribute", counter_attribute, table=table)
