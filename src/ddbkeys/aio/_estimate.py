"""``ddbkeys.aio.estimate_listing``: the estimate of a listing with an aiobotocore client, by
the sync form's flows (:mod:`ddbkeys.partition_keys._tasks.sample`) and model
(:mod:`ddbkeys.partition_keys._tasks.estimate`) on the asyncio driver."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Unpack

from ddbkeys._capacity import Usage
from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._errors import ConfigurationError, DdbKeysError
from ddbkeys.aio._client import as_async_client
from ddbkeys.aio._index import MarkerIndex
from ddbkeys.partition_keys._listing.choice import proof_failed
from ddbkeys.partition_keys._listing.opening import listing_reader
from ddbkeys.partition_keys._listing.options import (
    ListingOptions,
    ListingSettings,
    check_whole,
    listing_options,
)
from ddbkeys.partition_keys._tasks.estimate import ListingEstimate, estimate
from ddbkeys.partition_keys._tasks.sample import described_sample, has_index, index_settings

if TYPE_CHECKING:
    from ddbkeys.partition_keys._proof.report import ProofStatus

__all__ = ["estimate_listing"]


async def estimate_listing(
    client: object,
    table: str | None = None,
    *,
    options: ListingOptions | None = None,
    concurrency: int = 1,
    usage: Usage | None = None,
    clock: Callable[[], float] = time.monotonic,
    **settings: Unpack[ListingSettings],
) -> ListingEstimate:
    """What listing ``table`` would cost, per method, before it runs, with an aiobotocore
    DynamoDB ``client``: the same estimate, ranges and cost as
    :func:`ddbkeys.partition_keys.estimate_listing`."""
    options = listing_options(options, None, settings)
    readers = check_whole("concurrency", concurrency)
    client, name = as_async_client(client, table)
    if name is None:
        raise ConfigurationError("No table given: pass the table's name.")
    reader = listing_reader(client, name, options, usage=usage)
    driver = AsyncDriver(client, reader.usage, "ddbkeys.aio.estimate_listing")
    info, sample = await driver.run(described_sample(reader, options, clock))
    proof: ProofStatus | str | None = None
    if has_index(info, options):
        index = MarkerIndex(client, name, **index_settings(info, options))
        try:
            proof = await index.proof_status(
                state_table=options.state_table, replay_margin=options.replay_margin
            )
        except DdbKeysError as exc:
            proof = proof_failed(exc)
    return estimate(info, sample, options, concurrency=readers, proof=proof)
