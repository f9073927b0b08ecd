"""The condition of the puts that write an item only where none is (``ids._base.absent``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddbkeys.ids._base import MAX_ABSENT_NAMES, MAX_KEY_BYTES, absent, put_if_new

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef


def test_it_names_the_key_and_every_attribute_that_could_be_a_key() -> None:
    """The described key first, then each string, number or binary of a key's size: an item
    holds all of its key, so whatever the key is now, an item there fails the condition."""
    item: dict[str, AttributeValueTypeDef] = {
        "order": {"S": "o-1"},
        "id": {"N": "7"},
        "blob": {"B": b"\x00"},
        "note": {"S": "x" * (MAX_KEY_BYTES + 1)},  # (too long for a key)
        "big": {"B": b"x" * (MAX_KEY_BYTES + 1)},
        "tags": {"SS": ["a"]},
        "map": {"M": {}},
        "flag": {"BOOL": True},
        "none": {"NULL": True},
    }
    expression, names = absent(item, "id")
    assert names == {"#k0": "id", "#k1": "order", "#k2": "blob"}
    assert expression == (
        "attribute_not_exists(#k0) AND attribute_not_exists(#k1) AND attribute_not_exists(#k2)"
    )
    put = put_if_new("t", item, "id")["Put"]
    assert (put["ConditionExpression"], put["ExpressionAttributeNames"]) == (expression, names)
    assert put["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"


def test_it_names_a_bounded_number_of_attributes() -> None:
    """An item of many attributes: the key and the first others, up to the bound (DynamoDB
    refuses an expression over 4 KB)."""
    item: dict[str, AttributeValueTypeDef] = {f"a{n}": {"N": str(n)} for n in range(300)}
    expression, names = absent(item, "a150")
    assert len(names) == MAX_ABSENT_NAMES and names["#k0"] == "a150"
    assert len(expression.encode()) < 4096
    assert absent({}, "pk") == ("attribute_not_exists(#k0)", {"#k0": "pk"})
