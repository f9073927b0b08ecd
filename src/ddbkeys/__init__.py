"""ddbkeys: ever-increasing ids and distinct partition keys for Amazon DynamoDB."""

from __future__ import annotations

__version__ = "0.1.0"

from ddbkeys.connect import make_client
from ddbkeys.errors import (
    ConfigurationError,
    CredentialsError,
    DdbKeysError,
    DeadlineExceededError,
    EndpointUnreachableError,
    KeySchemaError,
    LocalServerError,
    TableNotFoundError,
)
from ddbkeys.local import DynamoDBLocal

__all__ = [
    "ConfigurationError",
    "CredentialsError",
    "DdbKeysError",
    "DeadlineExceededError",
    "DynamoDBLocal",
    "EndpointUnreachableError",
    "KeySchemaError",
    "LocalServerError",
    "TableNotFoundError",
    "__version__",
    "make_client",
]
