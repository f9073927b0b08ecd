"""The estimate of a listing before it runs (:func:`estimate_listing`): the table's description
and a sample of it, read by :func:`sample_flow`, weighed by
:mod:`ddbkeys.partition_keys._tasks.estimate`.

The sample reads whole segments of a parallel Scan split in about one segment per 4 KB of the table
(``sampled.sample_segments``; fewer where the first segments prove nearly empty), drawn at random,
until it has seen ``SAMPLE_KEYS`` collections or spent ``sample_rcu`` read units (32; on a table
whose scan costs over 640, 5% of that, up to 128), or read them all; a table of a MB or less
(DescribeTable) is read whole instead, in a request or two of the probe's. A drawn segment is read
to its end, so that its collections are all counted (DynamoDB puts a collection's items in one
segment); a page that ends inside a collection of which it read ``JUMP_AFTER`` of 4 KB or more jumps
to the next one (as the skip scan does), so that a very large collection costs a page of 0.5 units,
not its size (its first 4 KB are then known to within an item). The flow only decides which pages to
ask for and times them with the clock it is given (first, a page of one item and one of about 32 KB
at the table's start, for one reader's speed); a driver sends them (through the reader: its retries,
deadline and read budget).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Unpack

from ddbkeys._capacity import Usage, item_size
from ddbkeys._core.steps import Flow
from ddbkeys._errors import DdbKeysError
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._index.index import MarkerIndex
from ddbkeys.partition_keys._listing.base import (
    MAX_SORT_KEY,
    Reader,
    SegmentMethod,
    client_and_table,
)
from ddbkeys.partition_keys._listing.choice import index_ready, proof_failed
from ddbkeys.partition_keys._listing.opening import listing_reader, read_budget
from ddbkeys.partition_keys._listing.options import (
    ListingOptions,
    ListingSettings,
    check_whole,
    listing_options,
)
from ddbkeys.partition_keys._listing.recognise import is_own, markers_of
from ddbkeys.partition_keys._tasks.estimate import ListingEstimate, estimate
from ddbkeys.partition_keys._tasks.sampled import (
    SAMPLE_KEYS,
    SAMPLE_MAX_RCU,
    SAMPLE_PAGE_ITEMS,
    UNIT,
    PageTime,
    Sample,
    SegmentTally,
    sample_limit,
    sample_rcu,
    sample_segments,
)

if TYPE_CHECKING:
    from ddbkeys.partition_keys._listing.base import ScanPage
    from ddbkeys.partition_keys._proof.report import ProofStatus

__all__ = [
    "described_sample",
    "estimate_listing",
    "has_index",
    "index_settings",
    "sample_flow",
    "speed_probe",
]

#: A segment that has cost this many times the sample's read units is given up (not
#: counted): a table whose DescribeTable reports far less than it holds.
GIVE_UP = 4
#: The share of 4 KB read of a collection after which a page that ends inside it jumps past
#: its rest (a one-unit page of items of the average size ends a little short of 4 KB).
JUMP_AFTER = 0.75


def sample_flow(
    reader: Reader,
    info: TableInfo,
    clock: Callable[[], float] = time.monotonic,
    rng: random.Random | None = None,
    *,
    rcu: float | None = None,
    keys: int = SAMPLE_KEYS,
    probe: bool = True,
    own: Callable[[Mapping[str, Any]], bool] | None = None,
) -> Flow[Sample]:
    """Whole segments of ``sampled.sample_segments(info)``, drawn by ``rng`` (by default seeded
    with the table's name: the same table sampled twice reads the same segments), until
    ``keys`` collections were seen or ``rcu`` read units spent (by default
    ``sampled.sample_rcu(info)``), summed up as a
    :class:`Sample`. Where the first ``PILOT`` segments hold under a quarter of a 4 KB unit
    each (most of the table's bytes lie in a few large collections, which the sample jumps
    past), the table is split in ``RESPLIT`` times fewer segments and the draw starts again
    (what was read is not counted twice: only the units spent). ``own`` tells ddbkeys' own
    items from yours (``Sample.owned``: the collections holding none of yours). First
    (``probe``), one reader's speed: :func:`speed_probe`; where its pages reached the table's
    end (an empty table, or a small one, which it reads whole), they are the sample: the table
    read as one segment, in two requests (not a draw of a thousand empty segments, nor a
    table of a few KB read again in 1-unit pages at more than a scan's cost)."""
    total = sample_segments(info)
    rcu = sample_rcu(info) if rcu is None else rcu
    draw = rng if rng is not None else random.Random(info.name)
    tallies: list[SegmentTally] = []
    pages: list[PageTime] = []
    if probe:
        whole = SegmentTally(info.partition_key.name, own, 0)
        probed, ended = yield from speed_probe(reader, info, clock, pages, whole)
        if ended:
            return Sample.of_segments([whole], 1, pages, probed)
    else:
        probed = 0.0
    spent, resplit = 0.0, False
    order = draw.sample(range(total), min(total, max(1, int(2 * rcu) + keys)))
    while order and spent < rcu and sum(t.keys for t in tallies) < keys:
        segment = order.pop(0)
        tally, units = yield from _segment(reader, info, segment, total, clock, pages, rcu, own)
        spent += units
        if tally is not None:
            tallies.append(tally)
        if not resplit and len(tallies) == PILOT and total >= 2 * RESPLIT and _thin(tallies):
            total, tallies, resplit = total // RESPLIT, [], True
            order = draw.sample(range(total), total)
    return Sample.of_segments(tallies, total, pages, probed + spent)


def speed_probe(
    reader: Reader,
    info: TableInfo,
    clock: Callable[[], float],
    pages: list[PageTime],
    whole: SegmentTally | None = None,
) -> Flow[tuple[float, bool]]:
    """A page of one item (its time: a request's latency), then from there a page of about
    ``SPEED_PAGE_BYTES`` (its time past the latency: the bytes a second one reader reads;
    the whole table, in up to ``WHOLE_PAGES`` pages of a MB, where DescribeTable says it holds
    at most ``WHOLE_PROBE_BYTES``), timed into ``pages``; the read units they took (about 4.5:
    on top of the segments' read units), and whether they reached the table's end. Their
    items are added to ``whole`` (they are the whole table where they reached its end)."""
    request: ScanPage = {"Limit": 1}
    began = clock()
    first = yield from reader.page(request)
    pages.append(PageTime(len(first.get("Items", [])), 0, clock() - began))
    spent = _units(first)
    if whole is not None:
        whole.add(first.get("Items", []))
    average = info.size_bytes / info.item_count if info.item_count else 400.0
    limit = max(1, min(SAMPLE_PAGE_ITEMS, int(SPEED_PAGE_BYTES / max(average, 1.0))))
    reads_whole = bool(info.item_count) and info.size_bytes <= WHOLE_PROBE_BYTES
    if reads_whole:
        limit = 2 * info.item_count + 100  # (its count may lag the table a little)
    page = first
    for _ in range(WHOLE_PAGES if reads_whole else 1):
        if "LastEvaluatedKey" not in page:
            break
        request = {"Limit": limit, "ExclusiveStartKey": page["LastEvaluatedKey"]}
        began = clock()
        page = yield from reader.page(request)
        items = page.get("Items", [])
        pages.append(PageTime(len(items), sum(item_size(i) for i in items), clock() - began))
        spent += _units(page)
        if whole is not None:
            whole.add(items)
    return spent, "LastEvaluatedKey" not in page


#: The bytes of the page that times one reader's speed.
SPEED_PAGE_BYTES = 32 * 1024
#: A table of at most this many bytes (DescribeTable) is read whole by the probe's pages: its
#: scan costs at most the largest sample's budget (``SAMPLE_MAX_RCU``) in a request or two, and
#: gives exact counts, where a draw of its segments in 1-unit pages costs a few dozen requests
#: (helper-86: 66 Scans of a 375 KB table, 36.5 RCU, where reading it whole took one request
#: of 46: on an endpoint answering in 2 s, 135 s against 4 s).
WHOLE_PROBE_BYTES = int(SAMPLE_MAX_RCU * 2 * UNIT)
#: The most pages the probe reads of a table it reads whole (DescribeTable's size may lag the
#: table's: a table of a MB by it may take two pages of a MB); where it has not reached the
#: end by then, the sample draws segments as on a larger table.
WHOLE_PAGES = 3
#: Segments read before the sample judges how full they are, and how many times fewer it
#: splits the table in when they held under a quarter of a 4 KB unit each (their median).
PILOT = 4
RESPLIT = 8


def _thin(tallies: list[SegmentTally]) -> bool:
    middle = sorted(t.bytes for t in tallies)[len(tallies) // 2]
    return middle < UNIT / 4


def _segment(
    reader: Reader,
    info: TableInfo,
    segment: int,
    total: int,
    clock: Callable[[], float],
    pages: list[PageTime],
    rcu: float,
    own: Callable[[Mapping[str, Any]], bool] | None = None,
) -> Flow[tuple[SegmentTally | None, float]]:
    """Read segment ``segment`` of ``total`` to its end (its pages' times added to
    ``pages``), past each collection's first 4 KB: its tally (None: given up past
    ``GIVE_UP * rcu``) and the read units it took."""
    pk, sort = info.partition_key.name, info.sort_key
    tally = SegmentTally(pk, own, segment)
    request: ScanPage = {"Limit": sample_limit(info), **SegmentMethod.segment_args(segment, total)}
    spent = 0.0
    while True:
        began = clock()
        page = yield from reader.page(request)
        seconds = clock() - began
        items = page.get("Items", [])
        tally.add(items)
        spent += _units(page)
        pages.append(PageTime(len(items), sum(item_size(i) for i in items), seconds))
        if "LastEvaluatedKey" not in page:
            return tally, spent
        if spent >= GIVE_UP * rcu:
            return None, spent
        request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}
        # (Not past a collection that showed only ddbkeys' own items: a marker of a 2 KB key
        # fills most of a unit, and a collection cut after it would count as holding none of
        # yours, as 73 of 138 did on a helper's table.)
        if (
            sort is not None
            and items
            and tally.open_bytes >= JUMP_AFTER * UNIT
            and tally.open_yours
        ):
            tally.skip_rest()  # the rest of a large collection
            start: dict[str, Any] = {pk: tally.last_key, sort.name: MAX_SORT_KEY[sort.type]}
            request = {**request, "ExclusiveStartKey": start}


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

    Each method's read units and the key count come as ranges (``rcu_low``/``rcu_high``,
    ``keys_low``/``keys_high``), and ``basis`` says what they rest on. Cost: one DescribeTable
    and whole Scan segments drawn at random until ``SAMPLE_KEYS`` (1,000) keys were seen or
    32 read units spent (on a table whose scan costs over 640, 5% of that, up to 128), and two
    pages at the table's start that time one reader (about 4.5 more; ``usage`` counts them all);
    a table of a MB or less (DescribeTable) is read whole by those pages instead, in a request
    or two, which is then the sample (exact counts, at a scan's cost: up to 128); where the
    table has a marker index, what ``index status`` reads (its record in the state table and the
    stream, never the table), so that the index's line includes the replay a lagging maintainer
    costs.
    DescribeTable's size and item count are refreshed about every six hours on AWS: an
    estimate, not a promise."""

    options = listing_options(options, None, settings)
    readers = check_whole("concurrency", concurrency)
    client, table = client_and_table(client, table, options.deadline)
    reader = listing_reader(client, table, options, usage=usage)
    info, sample = reader.run(described_sample(reader, options, clock))
    proof: ProofStatus | str | None = None
    if has_index(info, options):
        index = MarkerIndex(client, info.name, **index_settings(info, options))
        try:
            proof = index.proof_status(
                state_table=options.state_table, replay_margin=options.replay_margin
            )
        except DdbKeysError as exc:
            proof = proof_failed(exc)
    return estimate(info, sample, options, concurrency=readers, proof=proof)


def described_sample(
    reader: Reader, options: ListingOptions, clock: Callable[[], float] = time.monotonic
) -> Flow[tuple[TableInfo, Sample]]:
    """The table's description and its sample, within the listing's read budget (one flow
    for both drivers)."""
    reader.what = "sampling the table for an estimate"
    info = yield from reader.describe()
    reader.budget = read_budget(options, info)  # the sample keeps to it too
    own = None
    if not options.include_own_items:
        own = own_rule(info, options.marker_attribute, options.marker_sort_key)
    sample = yield from sample_flow(reader, info, clock=clock, own=own)
    return info, sample


def own_rule(
    info: TableInfo, attribute: str, sort_key: Any = None
) -> Callable[[Mapping[str, Any]], bool]:
    """What a listing of ``info``'s table takes for ddbkeys' own items (its markers by
    ``attribute`` and ``sort_key``, counter items), so that the sample counts the keys a
    listing gives."""
    markers = markers_of(info, attribute, sort_key)
    return lambda item: is_own(item, markers)


def has_index(info: TableInfo, options: ListingOptions) -> bool:
    """Whether the table has the marker index ``options`` name (then ``index status`` is
    read for the replay a listing from it would pay)."""
    return index_ready(info, options.index_name, options.marker_attribute)


def index_settings(info: TableInfo, options: ListingOptions) -> dict[str, Any]:
    """The marker index's settings for its ``proof_status()`` (sync or asyncio)."""
    return {
        "index_name": options.index_name,
        "marker_attribute": options.marker_attribute,
        "marker_sort_key": options.marker_sort_key,
        "deadline": options.deadline,
        "info": info,
    }
