"""The ddbkeys pytest plugin: a DynamoDB for your tests, and tables that clean up after them.

Installed with ddbkeys and loaded by pytest on its own (entry point ``pytest11``). Fixtures:

- ``ddb_endpoint_url`` (session): the endpoint of the embedded DynamoDB Local, started once for
  the session and stopped after it; or the endpoint in ``DDBKEYS_TEST_ENDPOINT_URL`` when that is
  set (real DynamoDB, ScyllaDB Alternator, LocalStack), with the region and credentials taken
  from the usual AWS environment variables and profile.
- ``ddb_client`` (session): a low-level boto3 DynamoDB client on that endpoint.
- ``ddb_table_factory``: ``ddb_table_factory(("pk", "S"), ("sk", "N"))`` creates an on-demand
  table with a unique name, waits until it is active and returns its name; every table it made
  is deleted when the test ends.

Nothing starts until a test asks for one of these fixtures.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from ddbkeys._connect import make_client
from ddbkeys._local import DynamoDBLocal
from ddbkeys.testing._tables import TableFactory

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ENDPOINT_ENV = "DDBKEYS_TEST_ENDPOINT_URL"


@pytest.fixture(scope="session")
def ddb_endpoint_url() -> Iterator[str]:
    """The DynamoDB endpoint the tests use."""
    configured = os.environ.get(ENDPOINT_ENV)
    if configured:
        yield configured
        return
    with DynamoDBLocal(heap_mb=768) as server:
        yield server.endpoint_url


@pytest.fixture(scope="session")
def ddb_client(ddb_endpoint_url: str) -> DynamoDBClient:
    """A low-level DynamoDB client on the test endpoint."""
    return make_client(endpoint_url=ddb_endpoint_url)


@pytest.fixture
def ddb_table_factory(ddb_client: DynamoDBClient) -> Iterator[TableFactory]:
    """Make uniquely named tables that are deleted after the test."""
    factory = TableFactory(ddb_client)
    try:
        yield factory
    finally:
        factory.delete_all()
