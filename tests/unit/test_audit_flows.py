"""The audits' scans and queries, as flows driven by hand without a server."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ddbkeys.capacity import Usage
from ddbkeys.ids.audit import attribute_flow, collection_flow
from tests.support.hand import POLICY, TABLE, drive

# --- the audits' flows ---------------------------------------------------------------------------


def test_the_attribute_audit_scans_every_page_and_retries_a_throttled_one() -> None:
    answer: Any = {
        "Error": {"Code": "ThrottlingException"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    throttled = ClientError(answer, "Scan")
    usage = Usage()
    run = drive(
        attribute_flow(TABLE, "id", prefix="INV#", usage=usage, retry=POLICY),
        [
            {
                "Items": [{"id": {"N": "1"}}, {"id": {"S": "INV#0003"}}],
                "LastEvaluatedKey": {"k": 1},
            },
            throttled,
            {"Items": [{"id": {"N": "3"}}, {"id": {"S": "nope"}}, {"id": {"N": "1.5"}}]},
        ],
    )
    report = run.result
    assert (report.count, report.gaps, report.duplicates, report.not_numbers) == (
        3,
        [(2, 2)],
        {3: 2},
        2,
    )
    assert run.operations == ["scan"] * 3 and len(run.pauses) == 1
    assert "ExclusiveStartKey" not in run.requests[0].params
    assert run.requests[2].params["ExclusiveStartKey"] == {"k": 1}
    assert all(r.count_scanned for r in run.requests)
    assert usage.snapshot()["retries"] == 1


def test_the_collection_audit_skips_the_marker_and_the_counter() -> None:
    description = {
        "Table": {
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
        }
    }
    done = drive(
        collection_flow(TABLE, "p", usage=Usage(), retry=POLICY),
        [
            description,
            {
                "Items": [
                    {"sk": {"N": "0"}, "last_number": {"N": "4"}},
                    {"sk": {"N": "1"}},
                    {"sk": {"N": "2"}, "ddbkeys_pk": {"S": "p"}},
                ],
                "LastEvaluatedKey": {"pk": {"S": "p"}, "sk": {"N": "2"}},
            },
            {"Items": [{"sk": {"N": "4"}}]},
        ],
    )
    report = done.result
    assert done.operations == ["describe_table", "query", "query"]
    assert (report.count, report.first, report.last, report.gaps) == (2, 1, 4, [(2, 3)])
    query = done.requests[1].params
    assert query["ExpressionAttributeValues"] == {":pk": {"S": "p"}}
    assert done.requests[2].params["ExclusiveStartKey"] == {"pk": {"S": "p"}, "sk": {"N": "2"}}
