"""The requests the marker index and its record build, as sent: the UpdateTable that adds the
index, the UpdateItem of a record, and the Scans of the index's pages."""

from __future__ import annotations

import pytest

from ddbkeys.partition_keys._index.markers import IndexPages, Markers, create_request
from ddbkeys.partition_keys._index.state import update_request
from ddbkeys.partition_keys._listing.scan import PAGE_ITEMS

M = "ddbkeys_pk"


@pytest.mark.parametrize("key_type", ["S", "N", "B"])
def test_the_index_is_keyed_in_the_partition_keys_type(key_type: str) -> None:
    request = create_request({}, "orders", "ix", M, key_type)
    assert request == {
        "TableName": "orders",
        "AttributeDefinitions": [{"AttributeName": M, "AttributeType": key_type}],
        "GlobalSecondaryIndexUpdates": [
            {
                "Create": {
                    "IndexName": "ix",
                    "KeySchema": [{"AttributeName": M, "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                    # no BillingModeSummary, no ProvisionedThroughput: nothing to copy
                }
            }
        ],
    }


def test_an_update_that_only_removes_sends_no_values() -> None:
    request = update_request("state", {"id": {"S": "t/i"}}, {}, remove=("a", "b"))
    assert request == {
        "TableName": "state",
        "Key": {"id": {"S": "t/i"}},
        "UpdateExpression": "REMOVE #r0, #r1",
        "ExpressionAttributeNames": {"#r0": "a", "#r1": "b"},
    }


def test_the_index_pages_are_scans_of_the_index_each_a_copy() -> None:
    pages = IndexPages("orders", "ix", Markers("pk", "sk", M, {"S": "#ddbkeys#marker"}))
    first = pages.request()
    assert first == {
        "TableName": "orders",
        "IndexName": "ix",
        "ProjectionExpression": "#pk, #sk, #m",
        "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk", "#m": M},
        "Limit": PAGE_ITEMS,
        "ReturnConsumedCapacity": "TOTAL",
    }
    assert first is not None
    first["Limit"] = 1  # the caller's copy: the pages are not changed
    assert pages.request() == {**first, "Limit": PAGE_ITEMS}
