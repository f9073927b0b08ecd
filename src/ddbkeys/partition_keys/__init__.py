"""The distinct partition keys of a table, at a small part of the cost of a full scan.

=============  ==============================================  ===============================
method         how                                             read cost
=============  ==============================================  ===============================
scan           Scan the keys, hand each out once               the whole table
skip           1 item a request, jump past the rest            0.5 RCU per key (items <= 4 KB)
skip-pages     pages of 4 KB (more where collections prove    0.5 RCU per 4 KB page, often
               small), jump past the last key seen             less than one page per key
index          scan the sparse KEYS_ONLY marker index          about 0.5 RCU per 40 keys
auto           no sort key: scan; healthy index: index;        the cheapest that applies
               else skip-pages (which reads like a scan, in
               growing pages, where collections prove small)
=============  ==============================================  ===============================
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

from ddbkeys.capacity import Usage
from ddbkeys.errors import ConfigurationError, KeySchemaError
from ddbkeys.partition_keys.base import (
    MAX_SORT_KEY,
    Position,
    ReadBudget,
    Reader,
    SegmentMethod,
    client_and_table,
    plain_key,
)
from ddbkeys.partition_keys.checkpoint import check_binding, decode_token
from ddbkeys.partition_keys.follow import StreamFollower, enable_stream
from ddbkeys.partition_keys.index import (
    DEFAULT_INDEX,
    DEFAULT_MARKER_ATTRIBUTE,
    BackfillReport,
    IndexMethod,
    MarkerClashError,
    MarkerIndex,
    VerifyReport,
)
from ddbkeys.partition_keys.listing import Listing
from ddbkeys.partition_keys.scan import ScanMethod
from ddbkeys.partition_keys.skip import PagedSkipMethod, SkipMethod
from ddbkeys.partition_keys.state import DEFAULT_MAX_LAG, STATE_TABLE, StateStore, vouch
from ddbkeys.retry import DEFAULT_DEADLINE, RetryPolicy
from ddbkeys.schema import TableInfo

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "DEFAULT_INDEX",
    "DEFAULT_MARKER_ATTRIBUTE",
    "MAX_READERS",
    "MAX_SORT_KEY",
    "METHODS",
    "BackfillReport",
    "Listing",
    "MarkerClashError",
    "MarkerIndex",
    "ReadBudget",
    "StreamFollower",
    "VerifyReport",
    "default_scan_segments",
    "distinct_partition_keys",
    "enable_stream",
    "plain_key",
]

Method = Literal["auto", "scan", "skip", "skip-pages", "index"]
METHODS: tuple[str, ...] = ("auto", "scan", "skip", "skip-pages", "index")


def _index_ready(info: TableInfo, index: str) -> bool:
    """The marker index exists and is KEYS_ONLY (ACTIVE is asked separately)."""
    return info.sort_key is not None and info.index_projections.get(index) == "KEYS_ONLY"


@dataclass
class _Choice:
    method: SegmentMethod
    reason: str
    trusted: bool | None = None


def _plan(method: str, info: TableInfo, index: str) -> _Choice | None:
    """The method to list with, decided from the table's description alone; None when the
    marker index is to be read, or vouched for (which takes the index's record)."""
    table = info.name
    if method == "auto":
        if info.sort_key is None:
            return _Choice(
                ScanMethod(info), "the table has no sort key: a scan reads each key once"
            )
        if not _index_ready(info, index):
            return _Choice(PagedSkipMethod(info), f"the table has no marker index {index!r}")
        return None
    if method == "scan":
        return _Choice(ScanMethod(info), "asked for")
    if method in ("skip", "skip-pages"):
        if info.sort_key is None:
            raise KeySchemaError(
                f"Table {table!r} has no sort key: every item is its own collection, so there "
                "is nothing to skip. Use --method scan (or auto).",
                table=table,
            )
        return _Choice(SkipMethod(info) if method == "skip" else PagedSkipMethod(info), "asked for")
    if method == "index":
        return None
    raise ConfigurationError(f"Unknown method {method!r}: choose one of {', '.join(METHODS)}.")


def _untrusted(info: TableInfo, index: str, why: str) -> _Choice:
    """``auto``'s choice when the marker index cannot be vouched for."""
    return _Choice(
        PagedSkipMethod(info),
        f"not using the marker index {index!r}, which cannot be vouched for: {why}",
        False,
    )


def _not_active(info: TableInfo, index: str) -> str | None:
    """Why the index cannot be vouched for from the table's description (IndexStatus), if so."""
    status = info.index_statuses.get(index)
    return None if status == "ACTIVE" else f"index {index!r} is not ACTIVE yet"


def _trust(
    marker: MarkerIndex, info: TableInfo, state_table: str, max_lag: float
) -> tuple[bool, str]:
    """Whether ``marker`` can be vouched for now, and why (``state.vouch``): its status from
    the listing's one description of the table, its record from ``state_table``."""
    why = _not_active(info, marker.name)
    if why is not None:
        return False, why
    store = StateStore(marker.client, state_table, deadline=marker.deadline)
    record = store.load(marker.table, marker.name)
    return vouch(record, info.stream_arn, store.clock(), max_lag)


def _choose(
    method: str,
    client: DynamoDBClient,
    table: str,
    info: TableInfo,
    index: str,
    marker_attribute: str,
    deadline: float | None,
    state_table: str = STATE_TABLE,
    max_lag: float = DEFAULT_MAX_LAG,
) -> _Choice:
    planned = _plan(method, info, index)
    if planned is not None:
        return planned
    # The listing's one description: the marker index sends no DescribeTable of its own.
    marker = MarkerIndex(
        client, table, name=index, attribute=marker_attribute, deadline=deadline, info=info
    )
    if method == "auto":
        trusted, why = _trust(marker, info, state_table, max_lag)
        if trusted:
            return _Choice(IndexMethod(info, marker), f"the marker index: {why}", True)
        return _untrusted(info, index, why)
    marker.check()
    trusted, why = _trust(marker, info, state_table, max_lag)
    reason = "asked for" if trusted else f"asked for, but it cannot be vouched for: {why}"
    return _Choice(IndexMethod(info, marker), reason, trusted)


#: Scan segments per reader when ``segments > 1`` and ``scan_segments`` is not given, so long
#: as each segment still holds a full Scan page (1 MB) of what is scanned.
SEGMENTS_PER_READER = 4
PAGE_BYTES = 1024 * 1024
MAX_TOTAL_SEGMENTS = 1_000_000  # DynamoDB's limit on TotalSegments
#: The most reader threads (``segments``) one listing runs. More gain nothing in one Python
#: process (they share one interpreter and one connection pool); for more parallelism, split
#: the Scan segments between processes.
MAX_READERS = 64


def default_scan_segments(readers: int, scanned_bytes: int) -> int:
    """How many Scan segments ``readers`` parallel readers split the table into: up to 4 each,
    but no more than the whole 1 MB pages the table (or index) holds, and never fewer than the
    readers. A segment smaller than a page would cost a request for little work: this way the
    split costs at most one request (0.5 read units) per MB scanned."""
    if readers == 1:
        return 1
    pages = scanned_bytes // PAGE_BYTES
    return max(readers, min(readers * SEGMENTS_PER_READER, pages, MAX_TOTAL_SEGMENTS))


def _whole(name: str, value: object, table: str, most: int = MAX_TOTAL_SEGMENTS) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        why = (
            " (reader threads; for more, split the Scan segments between processes)"
            if most == MAX_READERS
            else ""
        )
        raise ConfigurationError(
            f"{name} must be a whole number from 1 to {most:,}{why}, not {value!r}.", table=table
        )
    return value


def _rate(value: object, table: str) -> float | None:
    """``max_rcu_per_second``: None (no limit) or a finite number above 0."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, Decimal))
        or not 0 < value < math.inf
    ):
        raise ConfigurationError(
            f"max_rcu_per_second must be a number of read units a second above 0 (or None for "
            f"no limit), not {value!r}.",
            table=table,
        )
    return float(value)


def distinct_partition_keys(
    client: object,
    table: str | None = None,
    method: Method | str = "auto",
    *,
    segments: int = 1,
    scan_segments: int | None = None,
    index: str = DEFAULT_INDEX,
    marker_attribute: str = DEFAULT_MARKER_ATTRIBUTE,
    max_rcu_per_second: float | None = None,
    resume: str | None = None,
    retry: RetryPolicy | None = None,
    usage: Usage | None = None,
    on_key: Callable[[Listing], None] | None = None,
    deadline: float | None = DEFAULT_DEADLINE,
    state_table: str = STATE_TABLE,
    max_lag: float = DEFAULT_MAX_LAG,
) -> Listing:
    """The distinct partition keys of ``table``: a :class:`Listing` to iterate over once.

    Each key comes once, as str, int (Decimal when not whole) or bytes, as a stream whose
    memory does not grow with the table.

    ``segments`` is how many parallel Scan segments are read at once, each skipping inside its
    own, by as many reader threads: 1 to ``MAX_READERS`` (64). With ``segments > 1`` the table
    is split into ``scan_segments`` segments that the readers take in turn as they finish one: a
    reader held up by throttling does not hold up the end of the listing, the resume token keeps
    every segment's place (so a listing can go on with another number of readers), and
    ``segments_done`` / ``scan_segments`` says how far it has come. By default that is 4
    segments a reader, but no more than the whole megabytes the table (or the marker index)
    holds by DescribeTable, and never fewer than ``segments``: each segment costs at least one
    request, so the split adds at most one request (0.5 read units) per MB scanned.

    ``max_rcu_per_second`` (above 0, or None for no limit) spreads the reads so the listing does
    not become a rolling hot partition. ``resume`` takes a token from ``Listing.checkpoint()``
    and goes on from there. ``listing.usage`` counts requests, items read and read units.
    ``on_key`` is called after each key and each finished segment (for progress displays).

    ``client`` is a boto3 DynamoDB client, resource or ``Table`` (which names the table
    itself); see :func:`ddbkeys.clients.as_client`. ``deadline`` (seconds, None for none)
    bounds each request with its retries: a listing may run for hours, but no answer for that
    long (a silent or unreachable endpoint, throttling that does not let up) ends it with a
    :class:`~ddbkeys.DeadlineExceededError` that says which; ``checkpoint()`` still resumes it.

    ``auto`` uses the marker index only when it can vouch that the index is complete: a
    backfill recorded in ``state_table``, begun after a maintainer (``index follow``, or the
    Lambda handler) began following the table's stream, and that maintainer caught up within
    ``max_lag`` seconds (see :func:`ddbkeys.partition_keys.state.vouch`). Otherwise it lists
    with the skip scan. ``listing.method_reason`` says why; ``listing.index_trusted`` is
    False when an index was there but could not be vouched for (``method="index"`` then
    still reads it, as asked, and says so).
    """
    client, table = client_and_table(client, table, deadline)
    readers, rate = _settings(table, segments, scan_segments, max_rcu_per_second)
    reader = _reader(client, table, retry, usage, rate, deadline)
    info = reader.run(reader.describe())
    method, positions = _resumed(resume, info, method, scan_segments)
    choice = _choose(
        method, client, table, info, index, marker_attribute, deadline, state_table, max_lag
    )
    listing = Listing(
        choice.method.knowing_markers_by(marker_attribute),
        reader,
        _positions(positions, scan_segments, readers, choice),
        readers,
        on_key,
    )
    listing.method_reason = choice.reason
    listing.index_trusted = choice.trusted
    return listing


def _settings(
    table: str, segments: int, scan_segments: int | None, max_rcu_per_second: float | None
) -> tuple[int, float | None]:
    """The reader count and the read budget's rate, checked (both forms of the listing)."""
    readers = _whole("segments", segments, table, MAX_READERS)
    rate = _rate(max_rcu_per_second, table)
    if scan_segments is not None:
        _whole("scan_segments", scan_segments, table)
    return readers, rate


def _reader(
    client: object,
    table: str,
    retry: RetryPolicy | None,
    usage: Usage | None,
    rate: float | None,
    deadline: float | None,
) -> Reader:
    return Reader(
        client,
        table,
        retry=retry or RetryPolicy(max_attempts=100, base_delay=0.05, max_delay=5.0),
        usage=usage or Usage(),
        budget=ReadBudget(rate) if rate is not None else None,
        deadline=deadline,
    )


def _resumed(
    resume: str | None, info: TableInfo, method: str, scan_segments: int | None
) -> tuple[str, list[Position] | None]:
    """The method and the positions to go on from (None: a new listing)."""
    if resume is None:
        return method, None
    resumed = decode_token(resume)
    method = check_binding(resumed, info, method)
    positions = resumed.positions
    if scan_segments is not None and len(positions) != scan_segments:
        raise ConfigurationError(
            f"The resume token is for {len(positions)} scan segment(s), not {scan_segments}: "
            f"resume with --scan-segments {len(positions)}, or without the option.",
            table=info.name,
        )
    return method, positions


def _positions(
    positions: list[Position] | None, scan_segments: int | None, readers: int, choice: _Choice
) -> list[Position]:
    """Where each segment stands: as resumed, or none started."""
    if positions is not None:
        return positions
    total = scan_segments or default_scan_segments(readers, choice.method.scanned_bytes())
    return [None] * total
