"""The requests the marker index and its record build, as sent: the UpdateTable that adds the
index, the UpdateItem of a record, and the Scans of the index's pages."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from ddbkeys.partition_keys._index.markers import IndexPages, Markers, create_request
from ddbkeys.partition_keys._index.state import (
    MOST_NAMED,
    SAVES,
    StateCore,
    evidence_from_item,
    update_request,
)
from ddbkeys.partition_keys._listing.scan import PAGE_ITEMS
from tests.support.hand import drive

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


def test_a_record_update_of_many_attributes_is_sent_in_parts_within_the_expression_limit() -> None:
    """A follower's first start on a stream of 290 shards names every shard's mark: one
    UpdateItem's expression was 4,132 characters, over the service's 4 KB (a helper's
    measure); it goes in parts of ``MOST_NAMED`` attributes, each well within it."""
    values = {f"shard shardId-{n:08d}": "{}" for n in range(290)}
    remove = tuple(f"shard gone-{n}" for n in range(20))
    run = drive(StateCore("state").update("t", "i", values, remove), [{}] * 4)
    sent = [request.params for request in run.requests]
    assert len(sent) == 4 == -(-(290 + 20) // MOST_NAMED)
    assert all(len(params["UpdateExpression"]) <= 4096 for params in sent)
    named = [name for params in sent for name in params["ExpressionAttributeNames"].values()]
    assert sorted(named) == sorted([*values, *remove])  # each once
    assert (
        sent[2]["UpdateExpression"].startswith("SET ") and " REMOVE " in sent[2]["UpdateExpression"]
    )
    assert sent[3]["UpdateExpression"].startswith("REMOVE ")
    # A few: one request, as before.
    assert len(drive(StateCore("state").update("t", "i", {"a": "1"}, ("b",)), [{}]).requests) == 1


def _saves(n: int) -> dict[str, object]:
    return {"Attributes": {SAVES: {"N": str(n)}}}


def test_a_save_of_marks_counts_itself_only_where_the_count_has_not_gone_back() -> None:
    """A follower's save of marks adds one to the record's count and asks that the count be
    at least the last it saw (None: its first save, no condition); the count after is its."""
    core = StateCore("state")
    run = drive(core.save_marks("t", "i", {"shard s1": "{}"}, None), [_saves(1)])
    first = run.requests[0].params
    assert run.result == 1 and "ConditionExpression" not in first
    assert first["UpdateExpression"] == "SET #a0 = :v0 ADD #count :one"
    assert first["ExpressionAttributeNames"]["#count"] == SAVES
    assert first["ReturnValues"] == "UPDATED_NEW"
    run = drive(core.save_marks("t", "i", {"shard s1": "{}"}, 7), [_saves(9)])
    params = run.requests[0].params
    assert run.result == 9 and params["ConditionExpression"] == "#count >= :seen"
    assert params["ExpressionAttributeValues"][":seen"] == {"N": "7"}


def test_a_save_of_marks_that_finds_the_record_put_back_writes_nothing_more() -> None:
    refused = ClientError(
        {"Error": {"Code": "ConditionalCheckFailedException", "Message": "no"}}, "UpdateItem"
    )
    values = {f"shard s{n}": "{}" for n in range(MOST_NAMED + 1)}  # two parts
    run = drive(StateCore("state").save_marks("t", "i", values, 5), [refused])
    assert run.result is None and len(run.requests) == 1  # (the second part is not sent)
    # Two parts that pass: each counts, the second asks for the count the first gave.
    run = drive(StateCore("state").save_marks("t", "i", values, 5), [_saves(6), _saves(7)])
    assert run.result == 7
    assert run.requests[1].params["ExpressionAttributeValues"][":seen"] == {"N": "6"}


def test_the_count_of_saves_is_read_with_the_record() -> None:
    item = {"id": {"S": "t/i"}, SAVES: {"N": "12"}}
    assert evidence_from_item("t", "i", item).saves == 12
    assert evidence_from_item("t", "i", {"id": {"S": "t/i"}}).saves is None
