"""ddbkeys: ever-increasing ids and distinct partition keys for Amazon DynamoDB."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    UnexpectedAnswerError,
)
from ddbkeys.local import DynamoDBLocal
from ddbkeys.retry import RetriesExhaustedError

if TYPE_CHECKING:
    from ddbkeys.ids.counter import CounterBackwardsError
    from ddbkeys.ids.errors import (
        CounterStateError,
        GlobalTableError,
        ItemExistsError,
        ItemKeyClashError,
        SequenceExhaustedError,
    )
    from ddbkeys.partition_keys.choice import IndexUnprovenError
    from ddbkeys.partition_keys.index import MarkerClashError
    from ddbkeys.partition_keys.lambda_events import MalformedEventError

#: Errors defined beside what raises them, importable from here too (loaded when first asked for).
_LAZY_ERRORS = {
    "CounterBackwardsError": "ddbkeys.ids.counter",
    "CounterStateError": "ddbkeys.ids.errors",
    "GlobalTableError": "ddbkeys.ids.errors",
    "IndexUnprovenError": "ddbkeys.partition_keys.choice",
    "ItemExistsError": "ddbkeys.ids.errors",
    "ItemKeyClashError": "ddbkeys.ids.errors",
    "MalformedEventError": "ddbkeys.partition_keys.lambda_events",
    "MarkerClashError": "ddbkeys.partition_keys.index",
    "SequenceExhaustedError": "ddbkeys.ids.errors",
}


def __getattr__(name: str) -> object:
    module = _LAZY_ERRORS.get(name)
    if module is None:
        raise AttributeError(f"module 'ddbkeys' has no attribute {name!r}")
    import importlib  # noqa: PLC0415

    return getattr(importlib.import_module(module), name)


__all__ = [
    "ConfigurationError",
    "CounterBackwardsError",
    "CounterStateError",
    "CredentialsError",
    "DdbKeysError",
    "DeadlineExceededError",
    "DynamoDBLocal",
    "EndpointUnreachableError",
    "GlobalTableError",
    "IndexUnprovenError",
    "ItemExistsError",
    "ItemKeyClashError",
    "KeySchemaError",
    "ListingInterrupted",
    "LocalServerError",
    "MalformedEventError",
    "MarkerClashError",
    "ResumeTokenError",
    "RetriesExhaustedError",
    "SequenceExhaustedError",
    "ServiceError",
    "TableNotFoundError",
    "UnexpectedAnswerError",
    "__version__",
    "as_client",
    "make_client",
]
