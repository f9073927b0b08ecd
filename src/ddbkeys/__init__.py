"""ddbkeys: ever-increasing ids and distinct partition keys for Amazon DynamoDB.

The main names are here, as in :mod:`ddbkeys.aio` for asyncio::

    from ddbkeys import AtomicCounter, distinct_partition_keys, make_client

They are loaded on first use, so ``import ddbkeys`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from ddbkeys.version import __version__

if TYPE_CHECKING:
    from ddbkeys.ids.audit import AuditReport, audit_attribute, audit_collection, audit_ids
    from ddbkeys.ids.blocks import BlockAllocator
    from ddbkeys.ids.collection import CollectionSequence
    from ddbkeys.ids.counter import AtomicCounter, CounterBackwardsError
    from ddbkeys.ids.errors import (
        CounterStateError,
        GlobalTableError,
        ItemExistsError,
        ItemKeyClashError,
        SequenceExhaustedError,
    )
    from ddbkeys.ids.gapless import GaplessSequence
    from ddbkeys.partition_keys import distinct_partition_keys
    from ddbkeys.partition_keys.choice import IndexUnprovenError
    from ddbkeys.partition_keys.follower import StreamFollower
    from ddbkeys.partition_keys.index import MarkerClashError, MarkerIndex
    from ddbkeys.partition_keys.lambda_events import MalformedEventError
    from ddbkeys.partition_keys.listing import Listing
    from ddbkeys.partition_keys.maintain import UnsettledError, reconcile
    from ddbkeys.partition_keys.state import StateStore
    from ddbkeys.partition_keys.stream_setup import enable_stream
    from ddbkeys.partition_keys.tasks import ListingTask, plan_listing, run_task, run_tasks

#: The main classes and functions, and the errors defined beside what raises them: where each
#: lives (imported when first asked for).
_LAZY = {
    "AtomicCounter": "ddbkeys.ids.counter",
    "AuditReport": "ddbkeys.ids.audit",
    "BlockAllocator": "ddbkeys.ids.blocks",
    "CollectionSequence": "ddbkeys.ids.collection",
    "GaplessSequence": "ddbkeys.ids.gapless",
    "Listing": "ddbkeys.partition_keys.listing",
    "ListingTask": "ddbkeys.partition_keys.tasks",
    "MarkerIndex": "ddbkeys.partition_keys.index",
    "StateStore": "ddbkeys.partition_keys.state",
    "StreamFollower": "ddbkeys.partition_keys.follower",
    "audit_attribute": "ddbkeys.ids.audit",
    "audit_collection": "ddbkeys.ids.audit",
    "audit_ids": "ddbkeys.ids.audit",
    "distinct_partition_keys": "ddbkeys.partition_keys",
    "enable_stream": "ddbkeys.partition_keys.stream_setup",
    "plan_listing": "ddbkeys.partition_keys.tasks",
    "reconcile": "ddbkeys.partition_keys.maintain",
    "run_task": "ddbkeys.partition_keys.tasks",
    "run_tasks": "ddbkeys.partition_keys.tasks",
    "CounterBackwardsError": "ddbkeys.ids.counter",
    "CounterStateError": "ddbkeys.ids.errors",
    "GlobalTableError": "ddbkeys.ids.errors",
    "IndexUnprovenError": "ddbkeys.partition_keys.choice",
    "ItemExistsError": "ddbkeys.ids.errors",
    "ItemKeyClashError": "ddbkeys.ids.errors",
    "MalformedEventError": "ddbkeys.partition_keys.lambda_events",
    "MarkerClashError": "ddbkeys.partition_keys.index",
    "SequenceExhaustedError": "ddbkeys.ids.errors",
    "UnsettledError": "ddbkeys.partition_keys.maintain",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ddbkeys' has no attribute {name!r}")
    import importlib  # noqa: PLC0415

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
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
    "GaplessSequence",
    "GlobalTableError",
    "IndexUnprovenError",
    "ItemExistsError",
    "ItemKeyClashError",
    "KeySchemaError",
    "Listing",
    "ListingInterrupted",
    "ListingTask",
    "LocalServerError",
    "MalformedEventError",
    "MarkerClashError",
    "MarkerIndex",
    "ResumeTokenError",
    "RetriesExhaustedError",
    "SequenceExhaustedError",
    "ServiceError",
    "StateStore",
    "StreamFollower",
    "TableNotFoundError",
    "UnexpectedAnswerError",
    "UnsettledError",
    "__version__",
    "as_client",
    "audit_attribute",
    "audit_collection",
    "audit_ids",
    "distinct_partition_keys",
    "enable_stream",
    "make_client",
    "plan_listing",
    "reconcile",
    "run_task",
    "run_tasks",
]
