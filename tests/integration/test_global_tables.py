"""Global tables refused by the strategies that rely on a conditional write in one region, as a
caller meets them. DynamoDB Local cannot create replicas in other regions, so the description of
a global table comes from botocore's Stubber: the only way to produce this case here (no request
reaches a server). The guard and the description's flow alone are unit tests
(tests/unit/test_retry_and_group.py)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from ddbkeys.ids import CollectionSequence, GaplessSequence, GlobalTableError
from ddbkeys.ids import _described as described
from tests.support.hand import GLOBAL, description

pytestmark = pytest.mark.integration


def test_global_tables_are_refused() -> None:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    answer = description(GLOBAL)
    described.forget(described.table_key(client, "users-global"))  # (from another test)
    with Stubber(client) as stub:
        stub.add_response("describe_table", answer, {"TableName": "users-global"})
        with pytest.raises(GlobalTableError) as raised:
            GaplessSequence(client, "users-global").put({"pk": "a"})
        stub.assert_no_pending_responses()
    assert "Table 'users-global' is a global table (replicas in eu-west-1, us-west-2)" in str(
        raised.value
    )
    assert "allow_global_tables=True" in str(raised.value)
    # (The process kept the description: the other strategies send no DescribeTable.)
    with pytest.raises(GlobalTableError, match="CollectionSequence relies on conditional"):
        CollectionSequence(client, "users-global").put("a")
    allowed = GaplessSequence(client, "users-global", allow_global_tables=True)
    assert allowed.table_info().replica_regions == ("eu-west-1", "us-west-2")
