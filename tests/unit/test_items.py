"""The rule for items (docs/items.md): plain values, or DynamoDB JSON when the caller says so,
every value checked before any request. No server."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from ddbkeys._errors import DdbKeysError
from ddbkeys._schema import (
    from_attributes,
    is_dynamodb_json,
    looks_typed,
    serialize_plain,
    to_attributes,
)

LOOKS = (
    "Attribute 'name' holds {'S': 'x'}, which looks like DynamoDB JSON: pass typed=True if the "
    "whole item is DynamoDB JSON (as the low-level client, the AWS CLI and PynamoDB's serialize() "
    "write it), or to store a map with the key 'S' pass the item typed (serialize_plain(item), "
    "then typed=True)."
)
RANGE = "it is out of DynamoDB's range (1E-130 to 9.99E+125 in magnitude, or 0)."
EMPTY_SET = "holds an empty set: DynamoDB sets hold at least one value (leave it out, or use None)."
NOT_AV = (
    "which is not a DynamoDB AttributeValue: a mapping with one of S, N, B, SS, NS, BS, M, L, "
    "NULL, BOOL, like {'S': 'text'}."
)


def nested(depth: int, *, typed: bool) -> Any:
    value: Any = {"S": "x"} if typed else "x"
    for _ in range(depth):
        value = {"M": {"a": value}} if typed else {"a": value}
    return value


class Odd:
    def __repr__(self) -> str:
        return "Odd()"


PLAIN_ERRORS: list[tuple[dict[str, Any], str]] = [
    ({"name": {"S": "x"}}, LOOKS),
    ({"a": 1, "name": {"S": "x"}}, LOOKS),
    (
        {"n": {"NULL": True}},
        LOOKS.replace("'name'", "'n'")
        .replace("{'S': 'x'}", "{'NULL': True}")
        .replace("the key 'S'", "the key 'NULL'"),
    ),
    (
        {"f": 1.5},
        "Attribute 'f' holds the float 1.5: DynamoDB numbers must be exact; pass an int "
        "or a decimal.Decimal.",
    ),
    (
        {"f": {"deep": [1, 2.5]}},
        "Attribute 'f.deep[1]' holds the float 2.5: DynamoDB numbers "
        "must be exact; pass an int or a decimal.Decimal.",
    ),
    ({"n": Decimal("1E126")}, f"Attribute 'n' holds the number 1E+126: {RANGE}"),
    ({"n": Decimal("-1E-131")}, f"Attribute 'n' holds the number -1E-131: {RANGE}"),
    # (helper-95 F6: cut to 1000...000..., the size hidden: how many digits it has, said)
    ({"n": 10**200}, f"Attribute 'n' holds the number 1{'0' * 39}... (201 digits in all): {RANGE}"),
    (
        {"n": -(10**126)},
        f"Attribute 'n' holds the number -1{'0' * 38}... (127 digits in all): {RANGE}",
    ),
    (
        {"n": Decimal("NaN")},
        "Attribute 'n' holds the number NaN: DynamoDB numbers cannot be NaN or Infinity.",
    ),
    (
        {"n": Decimal("-Infinity")},
        "Attribute 'n' holds the number -Infinity: DynamoDB numbers cannot be NaN or Infinity.",
    ),
    (
        {"n": int("1" * 39)},
        f"Attribute 'n' holds the number {'1' * 39}: it has 39 significant "
        "digits; DynamoDB keeps at most 38.",
    ),
    ({"s": set()}, f"Attribute 's' {EMPTY_SET}"),
    ({"s": {"m": [frozenset()]}}, f"Attribute 's.m[0]' {EMPTY_SET}"),
    ({"s": {Decimal("1E200")}}, f"Attribute 's' holds the number 1E+200: {RANGE}"),
    (
        {"m": {1: "a"}},
        "Attribute 'm' holds a map with the key 1: map keys must be non-empty strings.",
    ),
    (
        {"m": {"": "a"}},
        "Attribute 'm' holds a map with the key '': map keys must be non-empty strings.",
    ),
    (
        {"d": nested(32, typed=False)},
        "Attribute 'd" + ".a" * 31 + "' nests maps, lists or sets "
        "more than 31 deep: DynamoDB allows 32 levels in all, the item included.",
    ),
    (
        {"x": Odd()},
        "Attribute 'x' holds a value DynamoDB cannot store (Odd()): Unsupported type "
        '"<class \'tests.unit.test_items.Odd\'>" for value "Odd()"',
    ),
    ({"": "x"}, "Invalid attribute name '': it must be a non-empty string of at most 255 bytes."),
    (
        {"s": ["ok", "a\ud800"]},
        "Attribute 's[1]' holds a string that is not valid Unicode (a lone "
        "surrogate '\\ud800' at position 1).",
    ),
    (
        {7: "x"},  # type: ignore[dict-item]
        "Invalid attribute name 7: it must be a non-empty string of at most 255 bytes.",
    ),
]


@pytest.mark.parametrize(("item", "message"), PLAIN_ERRORS)
def test_plain_errors(item: dict[str, Any], message: str) -> None:
    with pytest.raises(DdbKeysError) as caught:
        to_attributes(item, table="t")
    assert str(caught.value) == message
    assert caught.value.table == "t"
    assert "\n" not in message


TYPED_ERRORS: list[tuple[dict[str, Any], str]] = [
    ({"a": "x"}, f"Attribute 'a' holds 'x', {NOT_AV}"),
    ({"a": {"S": "x", "N": "1"}}, f"Attribute 'a' holds {{'S': 'x', 'N': '1'}}, {NOT_AV}"),
    ({"a": {"X": "x"}}, f"Attribute 'a' holds {{'X': 'x'}}, {NOT_AV}"),
    ({"a": {"S": 5}}, "Attribute 'a' holds {'S': 5}: an S value must be a string."),
    ({"a": {"B": "aGk="}}, "Attribute 'a' holds {'B': 'aGk='}: a B value must be bytes."),
    (
        {"a": {"BOOL": "true"}},
        "Attribute 'a' holds {'BOOL': 'true'}: a BOOL value must be True or False.",
    ),
    ({"a": {"NULL": False}}, "Attribute 'a' holds {'NULL': False}: a NULL value must be True."),
    ({"a": {"N": 5}}, "Attribute 'a' holds the N value 5: not a number written as a string."),
    (
        {"a": {"N": "NaN"}},
        "Attribute 'a' holds the N value 'NaN': not a number written as a string.",
    ),
    ({"a": {"N": " 1"}}, "Attribute 'a' holds the N value ' 1': not a number written as a string."),
    (
        {"a": {"N": "1_000"}},
        "Attribute 'a' holds the N value '1_000': not a number written as a string.",
    ),
    ({"a": {"N": "1E126"}}, f"Attribute 'a' holds the number 1E126: {RANGE}"),
    ({"a": {"N": "1e-131"}}, f"Attribute 'a' holds the number 1e-131: {RANGE}"),
    (
        {"a": {"N": "1" + "0" * 126}},
        f"Attribute 'a' holds the number 1{'0' * 39}... (127 digits in all): {RANGE}",
    ),
    (
        {"a": {"N": "1e9999999999999999999"}},
        "Attribute 'a' holds the N value '1e9999999999999999999': not a number DynamoDB can store.",
    ),
    (
        {"a": {"N": "1" * 39}},
        f"Attribute 'a' holds the number {'1' * 39}: it has 39 "
        "significant digits; DynamoDB keeps at most 38.",
    ),
    ({"a": {"SS": []}}, f"Attribute 'a' {EMPTY_SET}"),
    ({"a": {"SS": "abc"}}, "Attribute 'a' holds {'SS': 'abc'}: an SS value must be a list."),
    ({"a": {"SS": ["x", "x"]}}, "Attribute 'a' holds 'x' twice in its SS: set members are unique."),
    (
        {"a": {"NS": ["1", "1.0"]}},
        "Attribute 'a' holds '1.0' twice in its NS: set members are unique.",
    ),
    (
        {"a": {"NS": ["x"]}},
        "Attribute 'a' holds the N value 'x': not a number written as a string.",
    ),
    ({"a": {"BS": [b"x", "y"]}}, "Attribute 'a' holds 'y' in its BS: members must be bytes."),
    ({"a": {"M": []}}, "Attribute 'a' holds {'M': []}: an M value must be a mapping."),
    (
        {"a": {"M": {"": {"S": "x"}}}},
        "Attribute 'a' holds a map with the key '': map keys must be non-empty strings.",
    ),
    ({"a": {"M": {"b": {"L": [{"S": "x"}, "y"]}}}}, f"Attribute 'a.b[1]' holds 'y', {NOT_AV}"),
    ({"a": {"L": {}}}, "Attribute 'a' holds {'L': {}}: an L value must be a list."),
    (
        {"a": {"S": "\udcff"}},
        "Attribute 'a' holds a string that is not valid Unicode (a lone "
        "surrogate '\\udcff' at position 0).",
    ),
    (
        {"a": {"SS": ["x", "\udcff"]}},
        "Attribute 'a' holds a string that is not valid Unicode (a "
        "lone surrogate '\\udcff' at position 0).",
    ),
    (
        {"a": nested(32, typed=True)},
        "Attribute 'a" + ".a" * 31 + "' nests maps, lists or sets "
        "more than 31 deep: DynamoDB allows 32 levels in all, the item included.",
    ),
]


@pytest.mark.parametrize(("item", "message"), TYPED_ERRORS)
def test_typed_errors(item: dict[str, Any], message: str) -> None:
    with pytest.raises(DdbKeysError) as caught:
        to_attributes(item, table="t", typed=True)
    assert str(caught.value) == message
    assert caught.value.table == "t"


def test_not_a_mapping() -> None:
    for typed in (False, True):
        with pytest.raises(DdbKeysError) as caught:
            to_attributes([("a", 1)], table="t", typed=typed)  # type: ignore[arg-type]
        assert str(caught.value) == (
            "An item must be a mapping of attribute names to values, not list."
        )


def test_plain_values() -> None:
    item = {
        "s": "x",
        "n": 7,
        "d": Decimal("12.50"),
        "b": b"\x00\xff",
        "t": True,
        "none": None,
        "l": [1, "a", [b"x"]],
        "m": {"k": {"deep": "v"}, "S": {"S": "x", "N": "1"}},  # nested look-alikes are maps
        "ss": {"a", "b"},
        "ns": {1, Decimal("2.5")},
        "edge": [Decimal("9.9999999999999999999999999999999999999E+125"), Decimal("1E-130")],
        "depth": nested(31, typed=False),
    }
    typed = to_attributes(item)
    assert typed["n"] == {"N": "7"}
    assert typed["d"] == {"N": "12.50"}
    assert typed["m"] == {
        "M": {
            "k": {"M": {"deep": {"S": "v"}}},
            "S": {"M": {"S": {"S": "x"}, "N": {"S": "1"}}},
        }
    }
    assert from_attributes(typed) == item


def test_serialize_plain_stores_look_alikes_as_maps() -> None:
    typed = serialize_plain({"unit": {"S": "small"}})
    assert typed == {"unit": {"M": {"S": {"S": "small"}}}}
    assert to_attributes(typed, typed=True) == typed
    assert from_attributes(typed) == {"unit": {"S": "small"}}
    with pytest.raises(DdbKeysError):
        serialize_plain({"f": 0.5})


def test_typed_values_round_trip() -> None:
    item: dict[str, Any] = {
        "s": {"S": ""},
        "n": {"N": "+007.50"},
        "b": {"B": bytearray(b"\x01")},
        "ss": {"SS": ["a", ""]},
        "ns": {"NS": ["1", "2.5"]},
        "bs": {"BS": [b"x", bytearray(b"y")]},
        "m": {"M": {"k": {"L": [{"NULL": True}, {"BOOL": False}]}}},
        "big": {"N": "9" * 38 + "0" * 88},
        "depth": nested(31, typed=True),
    }
    typed = to_attributes(item, typed=True)
    assert typed["b"] == {"B": b"\x01"}
    assert typed["bs"] == {"BS": [b"x", b"y"]}
    assert typed["n"] == {"N": "+007.50"}
    plain = from_attributes(typed)
    assert plain["n"] == Decimal("7.50")
    assert plain["big"] == Decimal("9" * 38 + "0" * 88)  # boto3's own raises decimal.Rounded
    assert plain["bs"] == {b"x", b"y"}
    assert plain["m"] == {"k": [None, False]}
    assert to_attributes({}, typed=True) == {}


def test_pynamodb_style_item() -> None:
    # What PynamoDB's Model.serialize() returns: every top-level value typed.
    item = {"name": {"S": "x"}, "tags": {"SS": ["a"]}}
    assert is_dynamodb_json(item)
    assert to_attributes(item, typed=True) == item
    with pytest.raises(DdbKeysError):
        to_attributes(item)  # never stored as maps


def test_shape_helpers() -> None:
    assert looks_typed({"M": {}}) and looks_typed({"S": 5})
    assert not looks_typed({"s": "x"}) and not looks_typed({"S": "x", "N": "1"})
    assert not looks_typed("S")
    assert not is_dynamodb_json({}) and not is_dynamodb_json({"a": {"S": "x"}, "b": 1})
