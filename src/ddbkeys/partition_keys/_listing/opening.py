"""Opening a listing of distinct partition keys (sync): checking its settings, choosing the method
(or resuming from a token) and handing back the :class:`ddbkeys.partition_keys.Listing` that reads.
:func:`distinct_partition_keys` is given out by :mod:`ddbkeys.partition_keys`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, TypeVar

from ddbkeys._capacity import Usage
from ddbkeys._core.steps import Flow
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import ConfigurationError
from ddbkeys._retry import DEFAULT_DEADLINE, RetryPolicy
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._index.index import DEFAULT_INDEX, DEFAULT_MARKER_ATTRIBUTE
from ddbkeys.partition_keys._listing.base import Position, ReadBudget, Reader, client_and_table
from ddbkeys.partition_keys._listing.checkpoint import check_binding, decode_token
from ddbkeys.partition_keys._listing.choice import Choice, check_margin, choose_flow
from ddbkeys.partition_keys._listing.listing import Listing, ListingCore
from ddbkeys.partition_keys._listing.read_share import check_percent, share
from ddbkeys.partition_keys._proof.evidence import DEFAULT_REPLAY_MARGIN
from ddbkeys.partition_keys._streams.streams import (
    ClientOnFirstUse,
    SplitClient,
    streams_client_for,
)

__all__ = [
    "MAX_READERS",
    "MAX_TOTAL_SEGMENTS",
    "PAGE_BYTES",
    "SEGMENTS_PER_READER",
    "Method",
    "Opening",
    "default_scan_segments",
    "distinct_partition_keys",
    "opened",
    "opening_flow",
]

Method = Literal["auto", "scan", "skip", "skip-pages", "index"]


@dataclass(frozen=True)
class Opening:
    """What a listing opens with, checked alike by both forms (the client aside): the
    settings :func:`opening_flow` takes."""

    method: str
    scan_segments: int | None
    readers: int
    rate: float | None
    percent: float | None
    read_capacity: float | None
    resume: str | None
    index_name: str
    marker_attribute: str
    state_table: str | None
    margin: float
    trust_index: bool

    @classmethod
    def checked(cls, table: str, **given: Any) -> Opening:
        """The settings of ``distinct_partition_keys`` (either form) for ``table``, checked."""
        readers, rate = _settings(
            table, given.pop("segments"), given["scan_segments"], given.pop("max_rcu_per_second")
        )
        margin = check_margin(given.pop("replay_margin"), table)
        _check_trust(given["trust_index"], given["method"], table)
        percent = check_percent(given.pop("read_percent"), table)
        return cls(readers=readers, rate=rate, margin=margin, percent=percent, **given)


def opening_flow(opening: Opening, reader: Reader) -> Flow[tuple[Choice, list[Position]]]:
    """A listing's start, one flow for both drivers: the table's description, the read budget,
    the resume token and the method (:func:`~ddbkeys.partition_keys._listing.choice.choose_flow`,
    whose Streams requests go to the Streams client the driver has): the choice, and the positions
    to read from."""
    info = yield from reader.describe()
    _budget(reader, info, opening.percent, opening.rate, opening.read_capacity)
    method, positions, replayed = _resumed(
        opening.resume, info, opening.method, opening.scan_segments
    )
    choice = yield from choose_flow(
        method,
        reader,
        info,
        opening.index_name,
        opening.marker_attribute,
        opening.state_table,
        margin=opening.margin,
        trust_index=opening.trust_index,
        replay=replayed,
    )
    return choice, _positions(positions, opening.scan_segments, opening.readers, choice)


L = TypeVar("L", bound=ListingCore)


def opened(listing: L, choice: Choice) -> L:
    """``listing`` with what its choice says (method_reason, index_trusted, replay)."""
    listing.method_reason = choice.reason
    listing.index_trusted = choice.trusted
    listing.replay = choice.replay
    return listing


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
    index_name: str = DEFAULT_INDEX,
    marker_attribute: str = DEFAULT_MARKER_ATTRIBUTE,
    max_rcu_per_second: float | None = None,
    resume: str | None = None,
    retry: RetryPolicy | None = None,
    usage: Usage | None = None,
    on_key: Callable[[Listing], None] | None = None,
    deadline: float | None = DEFAULT_DEADLINE,
    state_table: str | None = None,
    replay_margin: float = DEFAULT_REPLAY_MARGIN,
    trust_index: bool = False,
    read_percent: float | None = None,
    read_capacity: float | None = None,
    streams: Any = None,
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
    not become a rolling hot partition. ``read_percent`` (0.1 to 1.5) does it as a share of the
    table's read capacity: provisioned, or on demand its maximum where set, else its warm
    throughput, else 40,000 read units a second (``read_capacity`` overrides it); with both,
    the lower limit wins. ``resume`` takes a token from ``Listing.checkpoint()``
    and goes on from there. ``listing.usage`` counts requests, items read and read units.
    ``on_key`` is called after each key and each finished segment (for progress displays).

    ``client`` is a boto3 DynamoDB client, resource or ``Table`` (which names the table
    itself); see :func:`ddbkeys._clients.as_client`. ``deadline`` (seconds, None for none)
    bounds each request with its retries: a listing may run for hours, but no answer for that
    long (a silent or unreachable endpoint, throttling that does not let up) ends it with a
    :class:`~ddbkeys.DeadlineExceededError` that says which; ``checkpoint()`` still resumes it.

    ``auto`` uses the marker index only when it can prove the index complete now: from the
    backfill and the maintainer's positions recorded in ``state_table`` (see
    :func:`~ddbkeys.partition_keys._index.state.state_table_name`), it reads the table's stream past
    those positions held back ``replay_margin`` seconds, re-checks each collection named there
    with a consistent Query, scans the index leaving those out, and hands out those that exist
    (see :mod:`ddbkeys.partition_keys._proof.evidence` for the proof and its one assumption). It
    counts the collections to re-check first, and lists with the skip scan instead when they
    would cost more, or when nothing proves the index; ``listing.method_reason`` says why, and
    ``listing.replay`` what the proof read and re-checked. ``method="index"`` fails with the
    same reason (:class:`~ddbkeys.partition_keys._listing.choice.IndexUnprovenError`) unless
    ``trust_index=True``, which reads the index as it is (for an index the application keeps
    itself with ``mark()``/``unmark()``). ``streams`` is the DynamoDB Streams client the
    replay reads with; by default one like ``client`` (see
    :func:`~ddbkeys.partition_keys._streams.streams.streams_client_for`: pass one when ``client``
    was made with credentials other than boto3's default session's).
    """
    client, table = client_and_table(client, table, deadline)
    opening = Opening.checked(
        table,
        method=method,
        segments=segments,
        scan_segments=scan_segments,
        max_rcu_per_second=max_rcu_per_second,
        read_percent=read_percent,
        read_capacity=read_capacity,
        resume=resume,
        index_name=index_name,
        marker_attribute=marker_attribute,
        state_table=state_table,
        replay_margin=replay_margin,
        trust_index=trust_index,
    )
    reader = _reader(client, table, retry, usage, opening.rate, deadline)
    if streams is None:
        streams = ClientOnFirstUse(lambda: streams_client_for(reader.client, reader.table))
    driver = SyncDriver(SplitClient(reader.client, streams), reader.usage)
    choice, positions = driver.run(opening_flow(opening, reader))
    listing = Listing(
        choice.method.knowing_markers_by(marker_attribute),
        reader,
        positions,
        opening.readers,
        on_key,
    )
    return opened(listing, choice)


def _budget(
    reader: Reader,
    info: TableInfo,
    percent: float | None,
    rate: float | None,
    capacity: float | None,
) -> None:
    """The listing's read budget, once the table's capacity is known: ``read_percent`` of it
    and ``max_rcu_per_second``, the lower where both are given."""
    limit = share(info, percent, rate, capacity)
    reader.budget = ReadBudget(limit) if limit is not None else None


def _check_trust(trust_index: object, method: str, table: str) -> None:
    if not isinstance(trust_index, bool):
        raise ConfigurationError(f"trust_index must be True or False, not {trust_index!r}.")
    if trust_index and method != "index":
        raise ConfigurationError(
            f"trust_index reads the marker index as it is, so it goes with method='index' "
            f"(--method index), not {method!r}.",
            table=table,
        )


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
) -> tuple[str, list[Position] | None, dict[str, Any] | None]:
    """The method, the positions to go on from (None: a new listing), and the proven index's
    replay the token carries."""
    if resume is None:
        return method, None, None
    resumed = decode_token(resume)
    method = check_binding(resumed, info, method)
    positions = resumed.positions
    if scan_segments is not None and len(positions) != scan_segments:
        raise ConfigurationError(
            f"The resume token is for {len(positions)} scan segment(s), not {scan_segments}: "
            f"resume with --scan-segments {len(positions)}, or without the option.",
            table=info.name,
        )
    return method, positions, resumed.replay


def _positions(
    positions: list[Position] | None, scan_segments: int | None, readers: int, choice: Choice
) -> list[Position]:
    """Where each segment stands: as resumed, or none started. The proven index has one more
    segment than it scans: its last hands out the collections the proof re-checked."""
    if positions is not None:
        return positions
    total = scan_segments or default_scan_segments(readers, choice.method.scanned_bytes())
    return [None] * (total + (choice.replay is not None))
