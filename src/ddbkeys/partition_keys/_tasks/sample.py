"""The estimate of a listing before it runs (:func:`estimate_listing`): the table's description
and a small sample, read by :func:`sample_flow`, weighed by
:mod:`ddbkeys.partition_keys._tasks.estimate`.

The sample is the first page of each of ``SAMPLE_SEGMENTS`` parallel-scan segments, about
``SAMPLE_PAGE_BYTES`` each: spread over the key space rather than all from one spot, and at
most a few read units (a page costs its bytes rounded up to 4 KB, at 0.5 read units each). The
flow only decides which pages to ask for and times them with the clock it is given; a driver
sends them (through the reader: its retries, deadline and read budget).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Unpack

from ddbkeys._capacity import Usage
from ddbkeys._core.steps import Flow
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._listing.base import Reader, SegmentMethod, client_and_table
from ddbkeys.partition_keys._listing.opening import listing_reader, read_budget
from ddbkeys.partition_keys._listing.options import (
    ListingOptions,
    ListingSettings,
    check_whole,
    listing_options,
)
from ddbkeys.partition_keys._tasks.estimate import ListingEstimate, estimate
from ddbkeys.partition_keys._tasks.sampled import (
    SAMPLE_SEGMENTS,
    Sample,
    SampledSegment,
    sample_limit,
)

if TYPE_CHECKING:
    from ddbkeys.partition_keys._listing.base import ScanPage

__all__ = ["estimate_listing", "sample_flow"]


def sample_flow(
    reader: Reader,
    info: TableInfo,
    segments: int = SAMPLE_SEGMENTS,
    clock: Callable[[], float] = time.monotonic,
) -> Flow[Sample]:
    """The start of each of ``segments`` parallel-scan segments, whole items, summed up as a
    :class:`Sample`: a page of one item (its time is a request's latency), then from there a
    page of about ``SAMPLE_PAGE_BYTES`` (its time, less that latency, gives the bytes a second
    one reader reads)."""
    limit = sample_limit(info)
    read: list[SampledSegment] = []
    for segment in range(segments):
        request: ScanPage = {"Limit": 1, **SegmentMethod.segment_args(segment, segments)}
        began = clock()
        probe = yield from reader.page(request)
        latency = clock() - began
        items: list[dict[str, Any]] = list(probe.get("Items", []))
        units, seconds, pages, page = _units(probe), 0.0, 1, probe
        if "LastEvaluatedKey" in probe:
            request = {**request, "Limit": limit, "ExclusiveStartKey": probe["LastEvaluatedKey"]}
            began = clock()
            page = yield from reader.page(request)
            seconds, pages = clock() - began, 2
            items += page.get("Items", [])
            units += _units(page)
        read.append(
            SampledSegment(items, latency, seconds, pages, units, "LastEvaluatedKey" not in page)
        )
    return Sample.of_segments(read, info.partition_key.name)


def _units(page: Mapping[str, Any]) -> float:
    return float((page.get("ConsumedCapacity") or {}).get("CapacityUnits", 0.0))


def estimate_listing(
    client: object,
    table: str | None = None,
    *,
    options: ListingOptions | None = None,
    concurrency: int = 1,
    usage: Usage | None = None,
    clock: Callable[[], float] = time.monotonic,
    **settings: Unpack[ListingSettings],
) -> ListingEstimate:
    """What listing ``table`` would cost, per method, before it runs: read units, requests,
    time with ``concurrency`` readers at once (threads, or tasks) under the read budget of
    the listing's settings (``options`` and its fields as keywords, as
    :func:`distinct_partition_keys` takes them: ``read_percent``, ``max_rcu_per_second``,
    ``read_capacity``; ``index_name`` and ``marker_attribute`` name the marker index,
    ``deadline`` bounds each request), what ``auto`` would likely choose, and the tasks to
    split it into.

    Cost: one DescribeTable and ``SAMPLE_SEGMENTS`` (4) Scan pages of about 64 KB each (at most
    about 32 read units; ``usage`` counts them). DescribeTable's size and item count are
    refreshed about every six hours on AWS: an estimate, not a promise. The marker index's
    proof cannot be known in advance (the estimate says so); nothing here reads the stream."""

    options = listing_options(options, None, settings)
    readers = check_whole("concurrency", concurrency)
    client, table = client_and_table(client, table, options.deadline)
    reader = listing_reader(client, table, options, usage=usage)
    reader.what = "sampling the table for an estimate"
    info = reader.run(reader.describe())
    reader.budget = read_budget(options, info)  # the sample keeps to it too
    sample = reader.run(sample_flow(reader, info, clock=clock))
    return estimate(info, sample, options, concurrency=readers)
