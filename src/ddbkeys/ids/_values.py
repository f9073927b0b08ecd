"""The values the id strategies read and write, checked before any request is sent: counter
values (whatever another tool left in the counter item), key values in the key's own type, and
ids in the attribute that receives them. Pure functions; no I/O."""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from ddbkeys._errors import ConfigurationError, KeySchemaError
from ddbkeys._key_json import brief_key
from ddbkeys._schema import show_value
from ddbkeys.ids._errors import CounterStateError, SequenceExhaustedError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

    from ddbkeys._schema import KeyAttribute, TableInfo

__all__ = [
    "DEFAULT_WIDTH",
    "MAX_ID",
    "check_item_key",
    "counter_value",
    "id_value",
    "item_key",
    "show_key",
    "show_value",
    "whole_number",
]

MAX_ID = 10**38 - 1  # DynamoDB numbers keep 38 significant digits
#: The digits of an id kept in a string key, unless ``width=`` says otherwise.
DEFAULT_WIDTH = 10
_TYPE_NAMES = {
    "S": "a string (S)",
    "N": "a number (N)",
    "B": "binary (B)",
    "BOOL": "a boolean (BOOL)",
    "NULL": "null (NULL)",
    "M": "a map (M)",
    "L": "a list (L)",
    "SS": "a string set (SS)",
    "NS": "a number set (NS)",
    "BS": "a binary set (BS)",
}


def flag(name: str, value: object, table: str | None) -> bool:
    """A setting that is True or False, or a :class:`ConfigurationError` (``prefetch="no"`` is
    not taken as true)."""
    if not isinstance(value, bool):
        raise ConfigurationError(f"{name} must be True or False, not {value!r}.", table=table)
    return value


def check_name_and_key(
    owner: str,
    name: str,
    default: str,
    counter_key: Mapping[str, Any] | None,
    *,
    table: str,
) -> None:
    """A :class:`ConfigurationError` when ``name`` (not left at its ``default``) and
    ``counter_key`` name different counter items: ``name`` is then none of the key's values,
    and one of them would be ignored."""
    if counter_key is None or name == default:
        return
    if any(value == name for value in counter_key.values()):
        return
    raise ConfigurationError(
        f"{owner}(name={name!r}, counter_key={dict(counter_key)!r}) names two counter items of "
        f"table {table!r}: name= makes the key {{partition key: {name!r}}}, counter_key= gives "
        "the whole key; pass one of them (or a name that is the key's partition key value).",
        table=table,
    )


def whole_number(what: str, value: object, *, minimum: int = 1, table: str | None = None) -> int:
    """``value``, a whole number from ``minimum`` to :data:`MAX_ID`; else a ConfigurationError."""
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= MAX_ID:
        raise ConfigurationError(
            f"{what} must be a whole number from {minimum} to 10**38 - 1, not {value!r}.",
            table=table,
        )
    return value


def type_name(value: Mapping[str, Any] | None) -> str:
    if isinstance(value, Mapping) and len(value) == 1:
        return _TYPE_NAMES.get(next(iter(value)), "an unknown type")
    return "not an attribute value"


def counter_label(name: str, counter_key: Mapping[str, Any] | None) -> str:
    """How messages name a counter: ``'orders'``, or its item's key where ``counter_key``
    gives it whole (helper-77 F2: two such counters read the same, ``'counter'``)."""
    if counter_key is None:
        return repr(name)
    return "{" + ", ".join(f"{k!r}: {_shown(v)}" for k, v in counter_key.items()) + "}"


def _shown(value: Any) -> str:
    """A key value in a counter's label: bytes as ``show_key`` writes them (``b64:...``: a
    quoted base64 text read as a string key, helper-79 F5), else ``brief_key``'s."""
    if isinstance(value, (bytes, bytearray)):
        return f"b64:{base64.b64encode(bytes(value)).decode()}"
    return brief_key(value, 80)


def show_key(key: Mapping[str, Any]) -> str:
    """A key for messages: ``{'pk': 'a', 'sk': 3}``, binary in base64."""
    parts = []
    for name, value in key.items():
        kind, raw = next(iter(value.items())) if isinstance(value, Mapping) else ("?", value)
        if kind == "N":
            shown = str(raw)
        elif kind == "B" and isinstance(raw, (bytes, bytearray)):
            shown = f"b64:{base64.b64encode(bytes(raw)).decode()}"
        else:
            shown = repr(raw)
        parts.append(f"{name!r}: {shown}")
    return "{" + ", ".join(parts) + "}"


def counter_value(
    value: Mapping[str, Any] | None,
    *,
    table: str,
    key: Mapping[str, Any],
    attribute: str,
    maximum: int = MAX_ID,
    then: str = "Nothing was changed",
) -> int | None:
    """The whole number a counter attribute holds (None when the attribute is missing), or a
    :class:`CounterStateError` naming table, key, attribute and value (and ``then``, what
    was done about it)."""
    if value is None:
        return None
    number: Decimal | None = None
    if isinstance(value, Mapping) and set(value) == {"N"}:
        try:
            number = Decimal(str(value["N"]))
        except InvalidOperation:
            number = None
    problem = ""
    most = "10**38 - 1" if maximum == MAX_ID else str(maximum)
    if number is None:
        problem = f"{type_name(value)}, not a number"
    elif not number.is_finite() or number != number.to_integral_value():
        problem = "not a whole number"
    elif number < 0:
        problem = "below 0"
    elif number > maximum:
        problem = f"past the maximum {most}"
    if problem:
        raise CounterStateError(
            f"The counter item {show_key(key)} of table {table!r} holds {attribute} = "
            f"{show_value(value)} ({problem}): a counter holds a whole number from 0 to "
            f"{most}. {then}; fix the item, for example with "
            f"`{_set_command(table, key, attribute)}`.",
            table=table,
        )
    assert number is not None
    return int(number)


def _set_command(table: str, key: Mapping[str, Any], attribute: str) -> str:
    """The ``ddbkeys ids set`` that puts a whole number into this counter item's attribute
    (helper-68: it named neither table nor item), ready to paste but for VALUE."""
    typed = {}
    for name, value in key.items():
        kind, raw = next(iter(value.items())) if isinstance(value, Mapping) else ("S", value)
        if kind == "B" and isinstance(raw, (bytes, bytearray)):
            raw = base64.b64encode(bytes(raw)).decode()
        typed[name] = {kind: str(raw)}
    words = ["ddbkeys", "ids", "set", "VALUE", "-t", table, "--counter-key", json.dumps(typed)]
    if attribute != "last_id":
        words += ["--attribute", attribute]
    return shlex.join([*words, "--force"])


def check_key_value(
    attribute: KeyAttribute, value: Any, *, table: str, where: str = "The item"
) -> None:
    """A typed key value in the attribute's own type, non-empty, or a clear error naming the
    attribute, the expected type and the value."""
    kind = next(iter(value)) if isinstance(value, Mapping) and len(value) == 1 else None
    raw = value[kind] if kind is not None else None
    expected = _TYPE_NAMES.get(attribute.type, attribute.type)
    if kind != attribute.type:
        raise KeySchemaError(
            f"Key attribute {attribute.name!r} of table {table!r} is {expected}; {where.lower()} "
            f"gives {type_name(value)}: {show_value(value)}.",
            table=table,
        )
    if kind in ("S", "B") and not raw:
        raise KeySchemaError(
            f"Key attribute {attribute.name!r} of table {table!r} is {expected}; {where.lower()} "
            "gives an empty value, which DynamoDB does not allow in a key.",
            table=table,
        )
    if kind == "S" and len(str(raw).encode()) > 2048:
        raise KeySchemaError(
            f"Key attribute {attribute.name!r} of table {table!r}: {where.lower()} gives a "
            "string over 2,048 bytes, the most DynamoDB allows in a partition key.",
            table=table,
        )


def item_key(item: Mapping[str, Any], info: TableInfo) -> dict[str, Any]:
    """The key attributes of a typed item."""
    return {name: item[name] for name in info.key_names() if name in item}


def check_item_key(
    item: Mapping[str, Any], info: TableInfo, *, skip: str | None = None, where: str = "The item"
) -> None:
    """Every key attribute of ``info``'s table but ``skip`` is present and of its type."""
    for key in (info.partition_key, info.sort_key):
        if key is None or key.name == skip:
            continue
        if key.name not in item:
            raise KeySchemaError(
                f"{where} has no {key.name!r}, a key attribute ({key.type}) of table "
                f"{info.name!r}.",
                table=info.name,
            )
        check_key_value(key, item[key.name], table=info.name, where=where)


def id_value(
    number: int, target: KeyAttribute | None, *, width: int, prefix: str, table: str
) -> AttributeValueTypeDef:
    """An id as the attribute that receives it holds it: a number, or (in a string key) the
    prefix and the number padded with zeros to ``width`` digits, so key order is id order."""
    if target is None or target.type == "N":
        return {"N": str(number)}
    if target.type == "S":
        digits = str(number)
        if len(digits) > width:
            raise SequenceExhaustedError(
                f"Id {number} no longer fits the {width}-digit string key {target.name!r} of "
                f"table {table!r}: use a larger width (width=, --width) for a new sequence.",
                table=table,
            )
        return {"S": prefix + digits.zfill(width)}
    raise KeySchemaError(
        f"Key attribute {target.name!r} of table {table!r} is binary (B); an id goes in a "
        "number (N) or string (S) attribute: choose another id_attribute.",
        table=table,
    )


def check_padding(width: object, prefix: object, *, table: str) -> None:
    """``width`` and ``prefix`` of ids kept in string keys, or a clear error."""
    if not isinstance(width, int) or isinstance(width, bool) or not 1 <= width <= 38:
        raise ConfigurationError(f"width must be 1 to 38 digits, not {width!r}.", table=table)
    if not isinstance(prefix, str):
        raise ConfigurationError(f"prefix must be a string, not {prefix!r}.", table=table)
