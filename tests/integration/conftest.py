"""Fixtures of the marker index's integration tests: a table with the index and its stream on,
and a state table of its own (deleted after the test)."""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys.partition_keys import MarkerIndex
from ddbkeys.partition_keys._index.stream_setup import enable_stream
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture
def streamed_table(ddb_client: DynamoDBClient, ddb_table_factory: TableFactory) -> str:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    MarkerIndex(ddb_client, table).create()
    enable_stream(ddb_client, table)
    return table


@pytest.fixture
def state_table(ddb_client: DynamoDBClient, streamed_table: str) -> Any:
    name = f"ddbkeys-state-{streamed_table[-12:]}"
    yield name
    with contextlib.suppress(ddb_client.exceptions.ResourceNotFoundException):
        ddb_client.delete_table(TableName=name)


@pytest.fixture
def own_state_table(ddb_client: DynamoDBClient, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A state table of the test's own, named in DDBKEYS_STATE_TABLE (where the CLI's commands
    in subprocesses find it), deleted after the test."""
    name = f"ddbkeys-state-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("DDBKEYS_STATE_TABLE", name)
    yield name
    with contextlib.suppress(ddb_client.exceptions.ResourceNotFoundException):
        ddb_client.delete_table(TableName=name)
