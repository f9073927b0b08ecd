"""Values as Python holds them and as DynamoDB types them: the checks every public call makes
of an item before it writes anything (clear errors naming the attribute at fault, numbers kept
exact), the conversions both ways, and how a value is shown in a message."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Context, Decimal
from typing import TYPE_CHECKING, Any, NoReturn, cast

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from ddbkeys._errors import ConfigurationError, DdbKeysError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

__all__ = [
    "MAX_DIGITS",
    "MAX_NESTING",
    "check_name",
    "from_attributes",
    "get_item_answer",
    "is_dynamodb_json",
    "looks_typed",
    "resource_value",
    "serialize_plain",
    "show_value",
    "to_attributes",
    "typed_value",
]

_DYNAMODB_TYPES = frozenset({"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"})
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
MAX_DIGITS = 38  # significant digits of a DynamoDB number
MAX_NESTING = 31  # maps and lists inside an attribute value: 32 levels with the item


def check_name(what: str, value: object, *, table: str | None = None) -> str:
    """A clear error unless ``value`` is a non-empty attribute (or counter) name."""
    if not isinstance(value, str) or not value or len(value.encode()) > 255:
        raise ConfigurationError(
            f"Invalid {what} {value!r}: it must be a non-empty string of at most 255 bytes.",
            table=table,
        )
    return value


def looks_typed(value: object) -> bool:
    """True when ``value`` has the shape of one DynamoDB JSON value: a mapping with exactly one
    key, and that key a type descriptor (S, N, B, SS, NS, BS, M, L, NULL, BOOL)."""
    return isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in _DYNAMODB_TYPES


def is_dynamodb_json(item: Mapping[str, Any]) -> bool:
    """True when every value is shaped like a typed AttributeValue, like ``{"S": "x"}`` (and
    there is at least one)."""
    return bool(item) and all(looks_typed(v) for v in item.values())


#: What a GetItem answer holds beside its Item (boto3's, or the AWS CLI's output).
_ANSWER_KEYS = frozenset({"Item", "ConsumedCapacity", "ResponseMetadata"})


def get_item_answer(item: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The item inside ``item`` when ``item`` is a GetItem answer rather than an item (boto3's,
    or ``aws dynamodb get-item``'s output: ``{"Item": {<DynamoDB JSON>}}``, perhaps with its
    ConsumedCapacity and ResponseMetadata); None when it is not one. ``{"Item": {"M": ...}}``
    is an item (its attribute ``Item`` a map), not an answer."""
    inner = item.get("Item")
    if not isinstance(inner, Mapping) or not set(item) <= _ANSWER_KEYS or looks_typed(inner):
        return None
    return inner if is_dynamodb_json(inner) else None


def to_attributes(
    item: Mapping[str, Any], *, table: str | None = None, typed: bool = False
) -> dict[str, AttributeValueTypeDef]:
    """An item in DynamoDB's typed form, safe to send with the low-level client, or a one-line
    :class:`DdbKeysError` naming the attribute (and the path inside it) at fault.

    The rule (docs/items.md):

    - ``typed=False`` (default): the values are plain Python: str, int, Decimal, bytes, bool,
      None, list, tuple, dict, set. Floats are refused (DynamoDB numbers are exact). An item in
      which a top-level value *looks like* DynamoDB JSON (a mapping with exactly one key that is
      a type descriptor, ``{"S": "x"}``) is refused as ambiguous: it is either a whole typed item
      given without ``typed=True`` (stored as maps, it would be a silent wrong result), or a map
      with such a key, which you store by giving the item typed (:func:`serialize_plain`).
    - ``typed=True``: every value is a DynamoDB AttributeValue (as the low-level client, the AWS
      CLI and PynamoDB's ``serialize()`` write them), checked recursively.

    Either way, what DynamoDB would refuse is refused here, before any request: numbers with
    more than 38 significant digits or outside 1E-130..9.99E+125 in magnitude, NaN and Infinity,
    empty sets and duplicates in sets, empty or non-string map keys, and maps and lists nested
    deeper than DynamoDB's 32 levels.
    """
    pairs = _item_pairs(item, table)
    if get_item_answer(item) is not None:
        on = f" for table {table!r}" if table else ""
        raise DdbKeysError(
            f"The item given{on} is a GetItem answer ({{'Item': {{...}}}}), not an item: pass "
            "its Item (answer['Item']) with typed=True; as it is, it would be stored as one "
            "attribute 'Item'.",
            table=table,
        )
    if typed:
        return {name: _typed(value, name, 0, table) for name, value in pairs}
    for name, value in pairs:
        if looks_typed(value):
            kind = next(iter(value))
            raise DdbKeysError(
                f"Attribute {name!r} holds {_show(value)}, which looks like DynamoDB JSON: pass "
                "typed=True if the whole item is DynamoDB JSON (as the low-level client, the AWS "
                "CLI and PynamoDB's serialize() write it), or to store a map with the key "
                f"{kind!r} pass the item typed (serialize_plain(item), then typed=True).",
                table=table,
            )
    return serialize_plain(item, table=table)


def serialize_plain(
    item: Mapping[str, Any], *, table: str | None = None
) -> dict[str, AttributeValueTypeDef]:
    """Plain Python values to DynamoDB's typed form, checked like :func:`to_attributes`, but
    with no look-alike check: every mapping is a map, so ``{"unit": {"S": "x"}}`` stores a map
    with the key ``"S"``. For callers that know their item is plain; pass the result on with
    ``typed=True``."""
    out: dict[str, Any] = {}
    for name, value in _item_pairs(item, table):
        _check_plain(value, name, 0, table)
        try:
            out[name] = _SERIALIZER.serialize(value)
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise DdbKeysError(
                f"Attribute {name!r} holds a value DynamoDB cannot store ({_show(value)}): {exc}",
                table=table,
                cause=exc,
            ) from exc
    return out


def _item_pairs(item: object, table: str | None) -> list[tuple[str, Any]]:
    if not isinstance(item, Mapping):
        raise DdbKeysError(
            f"An item must be a mapping of attribute names to values, not {type(item).__name__}.",
            table=table,
        )
    return [(check_name("attribute name", name, table=table), v) for name, v in item.items()]


def _show(value: object) -> str:
    """A value for a one-line message, cut short when long."""
    return _cut(repr(value))


def _cut(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _number_text(text: str) -> str:
    """A number for a message: whole where short, else its start, "...", and how many digits
    it has in all (helper-95 F6: 1e126 read 1000...000..., its size hidden)."""
    if len(text) <= 60:
        return text
    return f"{text[:40]}... ({sum(c.isdigit() for c in text)} digits in all)"


def _fail(path: str, problem: str, table: str | None) -> NoReturn:
    raise DdbKeysError(f"Attribute {path!r} {problem}", table=table)


def _number_problem(number: Decimal) -> str | None:
    """Why DynamoDB would refuse ``number``, or None."""
    if not number.is_finite():
        return "DynamoDB numbers cannot be NaN or Infinity."
    if not number:
        return None
    coefficient = number.as_tuple().digits
    digits = len(coefficient)
    while coefficient[digits - 1] == 0:
        digits -= 1  # trailing zeros are exponent, not precision
    if digits > MAX_DIGITS:
        return f"it has {digits} significant digits; DynamoDB keeps at most {MAX_DIGITS}."
    if not -130 <= number.adjusted() <= 125:
        return "it is out of DynamoDB's range (1E-130 to 9.99E+125 in magnitude, or 0)."
    return None


def _depth_check(path: str, depth: int, table: str | None) -> None:
    if depth >= MAX_NESTING:
        _fail(
            path,
            f"nests maps, lists or sets more than {MAX_NESTING} deep: DynamoDB allows "
            f"{MAX_NESTING + 1} levels in all, the item included.",
            table,
        )


def _check_text(text: str, path: str, table: str | None) -> None:
    """A string DynamoDB can store: valid Unicode (no lone surrogate, which UTF-8 cannot hold)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            _fail(
                path,
                "holds a string that is not valid Unicode (a lone surrogate "
                f"{text[exc.start]!a} at position {exc.start}).",
                table,
            )


def _check_plain(value: object, path: str, depth: int, table: str | None) -> None:
    """What the serializer would let through (or fail on unclearly), refused with a path."""
    if isinstance(value, str):
        _check_text(value, path, table)
    elif isinstance(value, float):
        _fail(
            path,
            f"holds the float {value!r}: DynamoDB numbers must be exact; pass an int or a "
            "decimal.Decimal.",
            table,
        )
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        number = Decimal(value)
        problem = _number_problem(number)
        if problem:
            _fail(path, f"holds the number {_number_text(str(number))}: {problem}", table)
    elif isinstance(value, (set, frozenset)):
        if not value:
            _fail(path, _EMPTY_SET, table)
        for member in value:
            _check_plain(member, path, depth, table)
    elif isinstance(value, Mapping):
        _depth_check(path, depth, table)
        for key, member in value.items():
            if not isinstance(key, str) or not key:
                _fail(path, f"holds a map with the key {_show(key)}: {_MAP_KEYS}", table)
            _check_plain(member, f"{path}.{key}", depth + 1, table)
    elif isinstance(value, (list, tuple)):
        _depth_check(path, depth, table)
        for n, member in enumerate(value):
            _check_plain(member, f"{path}[{n}]", depth + 1, table)


_EMPTY_SET = (
    "holds an empty set: DynamoDB sets hold at least one value (leave it out, or use None)."
)
_MAP_KEYS = "map keys must be non-empty strings."
_SCALARS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "S": (str, "a string"),
    "B": ((bytes, bytearray), "bytes"),
    "BOOL": (bool, "True or False"),
}


def _article(kind: str) -> str:
    return "an" if kind[0] in "SNML" else "a"  # an S, an NS, an M; a B, a BOOL, a NULL


def _typed_number(value: object, path: str, table: str | None) -> str:
    if not isinstance(value, str) or not _NUMBER.fullmatch(value):
        _fail(path, f"holds the N value {_show(value)}: not a number written as a string.", table)
    try:
        number = Decimal(value)
    except ArithmeticError:
        _fail(path, f"holds the N value {_show(value)}: not a number DynamoDB can store.", table)
    problem = _number_problem(number)
    if problem:
        _fail(path, f"holds the number {_number_text(value)}: {problem}", table)
    return value


def _typed(value: object, path: str, depth: int, table: str | None) -> AttributeValueTypeDef:
    """A checked copy of one AttributeValue (bytearray made bytes, sets and lists made lists)."""
    if not looks_typed(value):
        _fail(
            path,
            f"holds {_show(value)}, which is not a DynamoDB AttributeValue: a mapping with one "
            "of S, N, B, SS, NS, BS, M, L, NULL, BOOL, like {'S': 'text'}.",
            table,
        )
    assert isinstance(value, Mapping)
    kind, raw = next(iter(value.items()))
    if kind in _SCALARS:
        types, what = _SCALARS[kind]
        if not isinstance(raw, types):
            _fail(
                path, f"holds {_show(value)}: {_article(kind)} {kind} value must be {what}.", table
            )
        if isinstance(raw, str):
            _check_text(raw, path, table)
        return cast(
            "AttributeValueTypeDef", {kind: bytes(raw) if isinstance(raw, bytearray) else raw}
        )
    if kind == "N":
        return {"N": _typed_number(raw, path, table)}
    if kind == "NULL":
        if raw is not True:
            _fail(path, f"holds {_show(value)}: a NULL value must be True.", table)
        return {"NULL": True}
    if kind in ("SS", "NS", "BS"):
        return _typed_set(kind, raw, path, table)
    _depth_check(path, depth, table)
    if kind == "M":
        if not isinstance(raw, Mapping):
            _fail(path, f"holds {_show(value)}: an M value must be a mapping.", table)
        out: dict[str, Any] = {}
        for key, member in raw.items():
            if not isinstance(key, str) or not key:
                _fail(path, f"holds a map with the key {_show(key)}: {_MAP_KEYS}", table)
            out[key] = _typed(member, f"{path}.{key}", depth + 1, table)
        return {"M": out}
    if not isinstance(raw, (list, tuple)):
        _fail(path, f"holds {_show(value)}: an L value must be a list.", table)
    return {"L": [_typed(member, f"{path}[{n}]", depth + 1, table) for n, member in enumerate(raw)]}


def _typed_set(kind: str, raw: object, path: str, table: str | None) -> AttributeValueTypeDef:
    if not isinstance(raw, (list, tuple, set, frozenset)):
        _fail(
            path,
            f"holds {_show({kind: raw})}: {_article(kind)} {kind} value must be a list.",
            table,
        )
    if not raw:
        _fail(path, _EMPTY_SET, table)
    members: list[Any] = []
    seen: set[object] = set()
    for member in raw:
        if kind == "NS":
            members.append(_typed_number(member, path, table))
            identity: object = Decimal(member)
        else:
            types, what = _SCALARS[kind[0]]
            if not isinstance(member, types):
                _fail(path, f"holds {_show(member)} in its {kind}: members must be {what}.", table)
            if isinstance(member, str):
                _check_text(member, path, table)
            members.append(bytes(member) if isinstance(member, bytearray) else member)
            identity = members[-1]
        if identity in seen:
            _fail(
                path, f"holds {_show(member)} twice in its {kind}: set members are unique.", table
            )
        seen.add(identity)
    return cast("AttributeValueTypeDef", {kind: members})


class _ExactSerializer(TypeSerializer):
    """boto3's serializer, but numbers written exactly as they are (already checked against
    DynamoDB's limits): boto3's own raises ``decimal.Rounded`` on 10**40, which DynamoDB takes."""

    def _serialize_n(self, value: Any) -> str:
        return str(value)


class _ExactDeserializer(TypeDeserializer):
    """boto3's deserializer, but numbers exact whatever their length (boto3's own rounds to 38
    digits and raises ``decimal.Rounded`` on the 126-digit numbers DynamoDB can return) and
    binary as bytes."""

    def _deserialize_n(self, value: str) -> Decimal:
        return Decimal(value)

    def _deserialize_b(self, value: bytes) -> bytes:
        return bytes(value)


def from_attributes(item: Mapping[str, Any]) -> dict[str, Any]:
    """DynamoDB's typed form back to Python: numbers as exact Decimals, binary as bytes, sets
    as sets, NULL as None. Every valid AttributeValue converts."""
    return {name: _DESERIALIZER.deserialize(value) for name, value in item.items()}


class _ResourceSerializer(_ExactSerializer):
    """For answers boto3's resource layer read: numbers written out as DynamoDB writes them."""

    def _serialize_n(self, value: Any) -> str:
        return format(value, "f") if isinstance(value, Decimal) else str(value)


class _ResourceDeserializer(_ExactDeserializer):
    """For requests boto3's resource layer will write: numbers in at most 38 digits (its
    context refuses 10**125 written out in full, exact as it is)."""

    def _deserialize_n(self, value: str) -> Decimal:
        number = Decimal(value)
        if len(number.as_tuple().digits) > MAX_DIGITS:
            number = number.normalize(_WIDE)
        return number


def resource_value(value: Any) -> Any:
    """A typed AttributeValue as boto3's resource layer takes it (plain, numbers exact)."""
    return _FOR_RESOURCE.deserialize(value)


def typed_value(value: Any) -> Any:
    """A plain value as boto3's resource layer answers it, back to a typed AttributeValue."""
    return _FROM_RESOURCE.serialize(value)


_WIDE = Context(prec=200, Emax=999_999, Emin=-999_999)
_SERIALIZER = _ExactSerializer()
_DESERIALIZER = _ExactDeserializer()
_FOR_RESOURCE = _ResourceDeserializer()
_FROM_RESOURCE = _ResourceSerializer()


def show_value(value: Mapping[str, Any] | None) -> str:
    """An AttributeValue as a reader knows it: ``'41'`` for a string, ``5.5`` for a number,
    ``b'\\x01'`` for binary, and the typed form for anything else."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return repr(value)
    kind, raw = next(iter(value.items()))
    if kind == "S":
        return repr(str(raw))
    if kind == "N":
        return str(raw)
    if kind == "B":
        return repr(bytes(raw) if isinstance(raw, (bytes, bytearray)) else raw)
    return repr(dict(value))
