"""The condition of the puts that write an item only where none is (``ids._base.absent``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddbkeys._errors import KeySchemaError
from ddbkeys.ids._base import MAX_ABSENT_NAMES, MAX_KEY_BYTES, absent, put_if_new, stale_key

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
    expression, names = absent(item, ["id"])
    assert names == {"#k0": "id", "#k1": "order", "#k2": "blob"}
    assert expression == (
        "attribute_not_exists(#k0) AND attribute_not_exists(#k1) AND attribute_not_exists(#k2)"
    )
    put = put_if_new("t", item, ["id"])["Put"]
    assert (put["ConditionExpression"], put["ExpressionAttributeNames"]) == (expression, names)
    assert put["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"


def test_it_names_a_bounded_number_of_attributes() -> None:
    """An item of many attributes: the key and what the strategy sets (a gapless sequence's id,
    set last: a helper's item of 63 numbers and the id escaped the first bound of 64), then
    the first others, up to the bound (DynamoDB refuses an expression over 4 KB)."""
    item: dict[str, AttributeValueTypeDef] = {f"a{n}": {"N": str(n)} for n in range(300)}
    expression, names = absent(item, ["a150", "a299"])
    assert len(names) == MAX_ABSENT_NAMES
    assert (names["#k0"], names["#k1"], names["#k2"]) == ("a150", "a299", "a0")
    assert len(expression.encode()) < 4096
    assert absent({}, ["pk"]) == ("attribute_not_exists(#k0)", {"#k0": "pk"})


def test_an_item_found_without_the_key_written_says_the_key_is_another() -> None:
    """A failed condition finds an item at the key: where it does not hold the key written
    (numbers as numbers), the table's key is another than the description's."""
    written: dict[str, AttributeValueTypeDef] = {"pk": {"S": "c"}, "sk": {"N": "4"}}
    assert stale_key("t", written, {"pk": {"S": "c"}, "sk": {"N": "4.0"}}, ["pk", "sk"]) is None
    assert stale_key("t", written, None, ["pk", "sk"]) is None  # (no image: cannot tell)
    found = stale_key("t", written, {"pk": {"S": "c"}, "sk": {"N": "3"}}, ["pk", "sk"])
    assert isinstance(found, KeySchemaError) and found.table == "t"
    assert "'pk', 'sk'" in str(found)
    assert isinstance(stale_key("t", written, {"pk": {"S": "c"}}, ["pk", "sk"]), KeySchemaError)
