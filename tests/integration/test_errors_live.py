"""The errors a real DynamoDB gives, translated into ones that say what to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from botocore.exceptions import ClientError

from ddbkeys._connect import make_client
from ddbkeys._errors import EndpointUnreachableError, KeySchemaError, TableNotFoundError
from ddbkeys._translate import translate_error
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def test_missing_table(ddb_client: DynamoDBClient) -> None:
    with pytest.raises(ClientError) as raised:
        ddb_client.describe_table(TableName="ddbkeys-no-such-table")
    error = translate_error(raised.value, table="ddbkeys-no-such-table")
    assert isinstance(error, TableNotFoundError)
    assert str(error).startswith("Table 'ddbkeys-no-such-table' not found")


def test_wrong_key_schema(ddb_client: DynamoDBClient, ddb_table_factory: TableFactory) -> None:
    table = ddb_table_factory(("pk", "S"))
    with pytest.raises(ClientError) as raised:
        ddb_client.get_item(TableName=table, Key={"id": {"S": "a"}})
    error = translate_error(raised.value, table=table)
    assert isinstance(error, KeySchemaError)
    assert error.table == table


def test_unreachable_endpoint() -> None:
    client = make_client(endpoint_url="http://127.0.0.1:9", max_attempts=1)
    with pytest.raises(Exception) as raised:
        client.list_tables()
    assert isinstance(translate_error(raised.value), EndpointUnreachableError)
