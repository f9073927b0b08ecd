"""ddbkeys: ever-increasing ids and distinct partition keys for Amazon DynamoDB.

The main names are here, as in :mod:`ddbkeys.aio` for asyncio::

    from ddbkeys import AtomicCounter, distinct_partition_keys, make_client

They are loaded on first use, so ``import ddbkeys`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddbkeys._version import __version__

if TYPE_CHECKING:
    from ddbkeys._attributes import from_attributes, serialize_plain, to_attributes
    from ddbkeys._capacity import Usage
    from ddbkeys._clients import as_client
    from ddbkeys._connect import make_client
    from ddbkeys._entity import ENTITY_ATTRIBUTE
    from ddbkeys._errors import (
        ConfigurationError,
        CredentialsError,
        DdbKeysError,
        DeadlineExceededError,
        EndpointUnreachableError,
        ExportError,
        KeySchemaError,
        ListingInterrupted,
        LocalServerError,
        ResumeTokenError,
        ServiceError,
        TableNotFoundError,
        UnexpectedAnswerError,
    )
    from ddbkeys._local import DynamoDBLocal
    from ddbkeys._retry import RetriesExhaustedError, RetryPolicy
    from ddbkeys.ids._audit import AuditReport, audit_attribute, audit_collection, audit_ids
    from ddbkeys.ids._blocks import BlockAllocator
    from ddbkeys.ids._collection import CollectionSequence
    from ddbkeys.ids._counter import AtomicCounter, CounterBackwardsError
    from ddbkeys.ids._errors import (
        CounterStateError,
        GlobalTableError,
        ItemExistsError,
        ItemKeyClashError,
        SequenceExhaustedError,
    )
    from ddbkeys.ids._gapless import GaplessSequence
    from ddbkeys.partition_keys import distinct_partition_keys, estimate_listing
    from ddbkeys.partition_keys._export.described import ExportFailedError, TableExport
    from ddbkeys.partition_keys._export.listing import ExportListing
    from ddbkeys.partition_keys._export.start import start_export, wait_export
    from ddbkeys.partition_keys._index.index import MarkerClashError, MarkerIndex
    from ddbkeys.partition_keys._index.maintain import UnsettledError, reconcile
    from ddbkeys.partition_keys._index.state import StateStore
    from ddbkeys.partition_keys._index.stream_setup import enable_stream
    from ddbkeys.partition_keys._listing.choice import IndexUnprovenError
    from ddbkeys.partition_keys._listing.listing import Listing
    from ddbkeys.partition_keys._listing.options import ListingOptions
    from ddbkeys.partition_keys._streams.follower import StreamFollower
    from ddbkeys.partition_keys._streams.lambda_events import MalformedEventError
    from ddbkeys.partition_keys._tasks.tasks import ListingTask, list_tasks, open_task, plan_listing

#: The main classes and functions, and the errors defined beside what raises them: where each
#: lives (imported when first asked for).
_LAZY = {
    "ENTITY_ATTRIBUTE": "ddbkeys._entity",
    "ConfigurationError": "ddbkeys._errors",
    "CredentialsError": "ddbkeys._errors",
    "DdbKeysError": "ddbkeys._errors",
    "DeadlineExceededError": "ddbkeys._errors",
    "DynamoDBLocal": "ddbkeys._local",
    "EndpointUnreachableError": "ddbkeys._errors",
    "ExportError": "ddbkeys._errors",
    "KeySchemaError": "ddbkeys._errors",
    "ListingInterrupted": "ddbkeys._errors",
    "LocalServerError": "ddbkeys._errors",
    "ResumeTokenError": "ddbkeys._errors",
    "RetriesExhaustedError": "ddbkeys._retry",
    "RetryPolicy": "ddbkeys._retry",
    "ServiceError": "ddbkeys._errors",
    "TableNotFoundError": "ddbkeys._errors",
    "UnexpectedAnswerError": "ddbkeys._errors",
    "Usage": "ddbkeys._capacity",
    "as_client": "ddbkeys._clients",
    "make_client": "ddbkeys._connect",
    "from_attributes": "ddbkeys._attributes",
    "serialize_plain": "ddbkeys._attributes",
    "to_attributes": "ddbkeys._attributes",
    "AtomicCounter": "ddbkeys.ids._counter",
    "AuditReport": "ddbkeys.ids._audit",
    "BlockAllocator": "ddbkeys.ids._blocks",
    "CollectionSequence": "ddbkeys.ids._collection",
    "GaplessSequence": "ddbkeys.ids._gapless",
    "Listing": "ddbkeys.partition_keys._listing.listing",
    "ExportListing": "ddbkeys.partition_keys._export.listing",
    "ListingOptions": "ddbkeys.partition_keys._listing.options",
    "ListingTask": "ddbkeys.partition_keys._tasks.tasks",
    "MarkerIndex": "ddbkeys.partition_keys._index.index",
    "StateStore": "ddbkeys.partition_keys._index.state",
    "StreamFollower": "ddbkeys.partition_keys._streams.follower",
    "audit_attribute": "ddbkeys.ids._audit",
    "audit_collection": "ddbkeys.ids._audit",
    "audit_ids": "ddbkeys.ids._audit",
    "distinct_partition_keys": "ddbkeys.partition_keys",
    "estimate_listing": "ddbkeys.partition_keys",
    "start_export": "ddbkeys.partition_keys._export.start",
    "wait_export": "ddbkeys.partition_keys._export.start",
    "ExportFailedError": "ddbkeys.partition_keys._export.described",
    "TableExport": "ddbkeys.partition_keys._export.described",
    "enable_stream": "ddbkeys.partition_keys._index.stream_setup",
    "plan_listing": "ddbkeys.partition_keys._tasks.tasks",
    "reconcile": "ddbkeys.partition_keys._index.maintain",
    "open_task": "ddbkeys.partition_keys._tasks.tasks",
    "list_tasks": "ddbkeys.partition_keys._tasks.tasks",
    "CounterBackwardsError": "ddbkeys.ids._counter",
    "CounterStateError": "ddbkeys.ids._errors",
    "GlobalTableError": "ddbkeys.ids._errors",
    "IndexUnprovenError": "ddbkeys.partition_keys._listing.choice",
    "ItemExistsError": "ddbkeys.ids._errors",
    "ItemKeyClashError": "ddbkeys.ids._errors",
    "MalformedEventError": "ddbkeys.partition_keys._streams.lambda_events",
    "MarkerClashError": "ddbkeys.partition_keys._index.index",
    "SequenceExhaustedError": "ddbkeys.ids._errors",
    "UnsettledError": "ddbkeys.partition_keys._index.maintain",
}


def __dir__() -> list[str]:
    """The names loaded on first use too (PEP 562), so that ``dir()``, an editor's completion
    and ``help()`` show them."""
    return sorted(set(globals()) | set(__all__))


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ddbkeys' has no attribute {name!r}")
    import importlib  # noqa: PLC0415

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ENTITY_ATTRIBUTE",
    "AtomicCounter",
    "AuditReport",
    "BlockAllocator",
    "CollectionSequence",
    "ConfigurationError",
    "CounterBackwardsError",
    "CounterStateError",
    "CredentialsError",
    "DdbKeysError",
    "DeadlineExceededError",
    "DynamoDBLocal",
    "EndpointUnreachableError",
    "ExportError",
    "ExportFailedError",
    "ExportListing",
    "GaplessSequence",
    "GlobalTableError",
    "IndexUnprovenError",
    "ItemExistsError",
    "ItemKeyClashError",
    "KeySchemaError",
    "Listing",
    "ListingInterrupted",
    "ListingOptions",
    "ListingTask",
    "LocalServerError",
    "MalformedEventError",
    "MarkerClashError",
    "MarkerIndex",
    "ResumeTokenError",
    "RetriesExhaustedError",
    "RetryPolicy",
    "SequenceExhaustedError",
    "ServiceError",
    "StateStore",
    "StreamFollower",
    "TableExport",
    "TableNotFoundError",
    "UnexpectedAnswerError",
    "UnsettledError",
    "Usage",
    "__version__",
    "as_client",
    "audit_attribute",
    "audit_collection",
    "audit_ids",
    "distinct_partition_keys",
    "enable_stream",
    "estimate_listing",
    "from_attributes",
    "list_tasks",
    "make_client",
    "open_task",
    "plan_listing",
    "reconcile",
    "serialize_plain",
    "start_export",
    "to_attributes",
    "wait_export",
]
