"""What the audits call a problem, in both drivers, against DynamoDB Local: an id attribute
holding ids below ``start`` or values that are not ids is not ok; an item collection's other
items (not numbered, or numbered below 1 by another tool) are reported and still ok."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.support.drivers import Driver

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


def test_an_attribute_holding_ids_below_start_or_not_ids_is_not_ok(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory()
    values: list[tuple[str, Any]] = [
        ("a", {"N": "-1"}),
        ("b", {"N": "0"}),
        ("c", {"N": "1"}),
        ("d", {"N": "2"}),
        ("e", {"S": "3"}),
        ("f", {"N": "4"}),
    ]
    for pk, value in values:
        ddb_client.put_item(TableName=table, Item={"pk": {"S": pk}, "id": value})
    report = driver.call("audit_attribute", ddb_client, table, "id", start=1)
    assert (report.count, report.first, report.last, report.gaps) == (3, 1, 4, [(3, 3)])
    assert (report.below_start, report.not_numbers, report.ok) == ([-1, 0], 1, False)
    # The same ids, all whole numbers from 1: ok.
    for pk in ("a", "b", "e"):
        ddb_client.delete_item(TableName=table, Key={"pk": {"S": pk}})
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "e"}, "id": {"N": "3"}})
    assert driver.call("audit_attribute", ddb_client, table, "id", start=1).ok


def test_a_collection_above_a_negative_sort_key_is_ok(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": {"N": "-3"}})
    sequence = driver.make("CollectionSequence", ddb_client, table, never_reuse=True)
    assert [sequence.put("p") for _ in range(3)] == [1, 2, 3]
    report = driver.call("audit_collection", ddb_client, table, "p")
    assert (report.count, report.first, report.last, report.gaps) == (3, 1, 3, [])
    assert (report.below_start, report.ok) == ([-3], True)
