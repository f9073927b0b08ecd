"""ddbkeys: ever-increasing ids and distinct partition keys for Amazon DynamoDB."""

from __future__ import annotations

__version__ = "0.1.0"

from ddbkeys.clients import as_client
from ddbkeys.connect import make_client
from ddbkeys.errors import (
    ConfigurationError,
    CredentialsError,
    DdbKeysError,
    DeadlineExceededError,
    EndpointUnreachableError,
    KeySchemaError,
    ListingInterrupted,
    LocalServerError,
    ResumeTokenError,
    ServiceError,
    TableNotFoundError,
)
from ddbkeys.local import DynamoDBLocal
from ddbkeys.retry import RetriesExhaustedError

__all__ = [
    "ConfigurationError",
    "CredentialsError",
    "DdbKeysError",
    "DeadlineExceededError",
    "DynamoDBLocal",
    "EndpointUnreachableError",
    "KeySchemaError",
    "ListingInterrupted",
    "LocalServerError",
    "ResumeTokenError",
    "RetriesExhaustedError",
    "ServiceError",
    "TableNotFoundError",
    "__version__",
    "as_client",
    "make_client",
]
