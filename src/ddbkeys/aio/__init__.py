"""ddbkeys for asyncio: the same names and signatures as :mod:`ddbkeys`, with ``await`` and
``async for``, over an aiobotocore client (``pip install 'ddbkeys[async]'``; aiobotocore pins
botocore to a narrow range of versions, which is why the base package does not depend on it).

::

    async with ddbkeys.aio.make_client() as client:
        counter = ddbkeys.aio.AtomicCounter(client, "orders", "order")
        order_id = await counter.next()
        listing = await ddbkeys.aio.distinct_partition_keys(client, "orders")
        async for key in listing:
            ...

The strategies and listing methods are the very flows the sync API runs, sent by an asyncio
driver instead of the sync one (ddbkeys' private ``_core`` and ``_drivers``). What runs
concurrently in threads in the sync API (group commit, block prefetch, segment readers, the
stream follower) runs as tasks of the one event loop here.

Event loops: open the client in the loop that uses it (``async with``), and make the objects
over it there. A client that is closed or was never entered is a
:class:`~ddbkeys.ConfigurationError` at its first request, and so is a request from
another loop while the client's own loop is still open (an aiobotocore client's connections
belong to one loop). A :class:`BlockAllocator` and a listing's iteration belong to the loop of
their first call (their tasks are that loop's); the sequences keep a group commit per loop and
the counter holds nothing of a loop, so they go on in a later loop whose client is open there.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ddbkeys.aio._audit import AuditReport, audit_attribute, audit_collection, audit_ids
    from ddbkeys.aio._blocks import BlockAllocator
    from ddbkeys.aio._client import make_client
    from ddbkeys.aio._collection import CollectionSequence
    from ddbkeys.aio._estimate import estimate_listing
    from ddbkeys.aio._export_start import start_export, wait_export
    from ddbkeys.aio._gapless import GaplessSequence
    from ddbkeys.aio._ids import AtomicCounter
    from ddbkeys.aio._index import MarkerIndex, StateStore, StreamFollower, enable_stream, reconcile
    from ddbkeys.aio._listing import AsyncExportListing, AsyncListing, distinct_partition_keys
    from ddbkeys.aio._listing import AsyncExportListing as ExportListing
    from ddbkeys.aio._listing import AsyncListing as Listing
    from ddbkeys.partition_keys._listing.options import ListingOptions

#: Where each public name lives (imported on first use, so that ``import ddbkeys.aio`` is
#: cheap and a missing aiobotocore is reported where a client is needed).
_HOMES = {
    "AtomicCounter": "ddbkeys.aio._ids",
    "BlockAllocator": "ddbkeys.aio._blocks",
    "CollectionSequence": "ddbkeys.aio._collection",
    "GaplessSequence": "ddbkeys.aio._gapless",
    "AuditReport": "ddbkeys.aio._audit",
    "audit_attribute": "ddbkeys.aio._audit",
    "audit_collection": "ddbkeys.aio._audit",
    "audit_ids": "ddbkeys.aio._audit",
    "AsyncListing": "ddbkeys.aio._listing",
    "AsyncExportListing": "ddbkeys.aio._listing",
    "Listing": "ddbkeys.aio._listing",
    "ExportListing": "ddbkeys.aio._listing",
    "distinct_partition_keys": "ddbkeys.aio._listing",
    "estimate_listing": "ddbkeys.aio._estimate",
    "start_export": "ddbkeys.aio._export_start",
    "wait_export": "ddbkeys.aio._export_start",
    "ListingOptions": "ddbkeys.partition_keys._listing.options",
    "MarkerIndex": "ddbkeys.aio._index",
    "StateStore": "ddbkeys.aio._index",
    "StreamFollower": "ddbkeys.aio._index",
    "enable_stream": "ddbkeys.aio._index",
    "reconcile": "ddbkeys.aio._index",
    "make_client": "ddbkeys.aio._client",
}

#: The names given out under a second name too (the sync form's).
_ALIASES = {"Listing": "AsyncListing", "ExportListing": "AsyncExportListing"}

__all__ = [
    "AsyncExportListing",
    "AsyncListing",
    "AtomicCounter",
    "AuditReport",
    "BlockAllocator",
    "CollectionSequence",
    "ExportListing",
    "GaplessSequence",
    "Listing",
    "ListingOptions",
    "MarkerIndex",
    "StateStore",
    "StreamFollower",
    "audit_attribute",
    "audit_collection",
    "audit_ids",
    "distinct_partition_keys",
    "enable_stream",
    "estimate_listing",
    "make_client",
    "reconcile",
    "start_export",
    "wait_export",
]


def __dir__() -> list[str]:
    """The names loaded on first use too (PEP 562), so that ``dir()``, an editor's completion
    and ``help()`` show them."""
    return sorted(set(globals()) | set(__all__))


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ddbkeys.aio' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), _ALIASES.get(name, name))
    globals()[name] = value
    return value
