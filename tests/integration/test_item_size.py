"""ddbkeys' item sizes (what the estimate prices pages by, and write units) are DynamoDB's: the
table's size that DynamoDB reports, an item at a time, for numbers of every shape."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import pytest

from ddbkeys._capacity import item_size
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def numbers() -> list[str]:
    """Zero, round numbers, fractions, exponents, negatives, and random ones of up to 38
    significant digits (a helper's find: "0" was counted 2 bytes where DynamoDB counts 1, and
    "100" 3 where it counts 2: 5% of a tiny item, which moved a page across a 4 KB unit)."""
    fixed = ["0", "-0", "1", "10", "100", "1000000", "12", "123", "1.5", "0.001", "0.10", "1050"]
    fixed += ["-100", "-1.5", "1E+10", "1e-20", "12345678901234567890", "9" * 38, "-" + "9" * 38]
    draw = random.Random(7)
    for _ in range(40):
        digits = "".join(draw.choice("0123456789") for _ in range(draw.randint(1, 38)))
        sign = draw.choice(["", "-"])
        point = draw.randint(0, len(digits))
        fraction = f"{digits[:point] or '0'}.{digits[point:]}" if point < len(digits) else digits
        fixed.append(
            sign + (fraction if draw.random() < 0.5 else digits + "E" + str(draw.randint(-30, 30)))
        )
    return fixed


def test_a_numbers_size_is_what_dynamodb_counts(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("k", "S"))
    wrong = []
    for number in numbers():
        item = {"k": {"S": "a"}, "n": {"N": number}}
        ddb_client.put_item(TableName=table, Item=item)  # (replaces the last)
        size = ddb_client.describe_table(TableName=table)["Table"]["TableSizeBytes"]
        if size != item_size(item):
            wrong.append((number, size, item_size(item)))
    assert not wrong
