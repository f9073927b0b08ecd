"""Opening a listing of distinct partition keys (sync): with its settings (a
:class:`~ddbkeys.partition_keys._listing.options.ListingOptions`, checked when made), deciding
its read budget, choosing the method (or resuming from a token) and handing back the
:class:`ddbkeys.partition_keys.Listing` that reads.
:func:`distinct_partition_keys` is given out by :mod:`ddbkeys.partition_keys`."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, Unpack

from ddbkeys._caller import outside
from ddbkeys._capacity import Usage
from ddbkeys._core.steps import Flow
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import ConfigurationError
from ddbkeys._retry import RetryPolicy
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._export.keys import read_manifest
from ddbkeys.partition_keys._export.listing import ExportListing
from ddbkeys.partition_keys._export.location import open_export
from ddbkeys.partition_keys._export.now import since_flow
from ddbkeys.partition_keys._listing.base import Position, ReadBudget, Reader, client_and_table
from ddbkeys.partition_keys._listing.checkpoint import check_binding, decode_token
from ddbkeys.partition_keys._listing.choice import Choice, choose_flow
from ddbkeys.partition_keys._listing.joining import Joining
from ddbkeys.partition_keys._listing.listing import Listing, ListingCore
from ddbkeys.partition_keys._listing.options import (
    AUTO_READERS,
    MAX_TOTAL_SEGMENTS,
    ListingOptions,
    ListingSettings,
    Method,
    check_no_resume,
    listing_options,
)
from ddbkeys.partition_keys._listing.read_share import share
from ddbkeys.partition_keys._listing.skip import PagedSkipMethod
from ddbkeys.partition_keys._proof.lag import IndexReplayWarning
from ddbkeys.partition_keys._proof.replay import scan_units
from ddbkeys.partition_keys._streams.streams import (
    ClientOnFirstUse,
    SplitClient,
    streams_client_for,
)

__all__ = [
    "LISTING_RETRY",
    "PAGE_BYTES",
    "SEGMENTS_PER_READER",
    "auto_readers",
    "auto_segments",
    "default_scan_segments",
    "distinct_partition_keys",
    "listing_reader",
    "noting",
    "opened",
    "opening_flow",
    "read_budget",
]

#: How a listing's requests are retried unless ``retry=`` says otherwise: a listing may rightly
#: wait out long throttling (its deadline bounds each request with its retries).
LISTING_RETRY = RetryPolicy(max_attempts=100, base_delay=0.05, max_delay=5.0)


def opening_flow(
    options: ListingOptions,
    resume: str | None,
    reader: Reader,
    note: Callable[[str], None] | None = None,
) -> Flow[tuple[Choice, list[Position]]]:
    """A listing's start, one flow for both drivers: the table's description, the read budget
    (:func:`read_budget`, decided here once), the resume token and the method
    (:func:`~ddbkeys.partition_keys._listing.choice.choose_flow`, whose Streams requests go to
    the Streams client the driver has): the choice, and the positions to read from. ``note``
    is told what the listing says before it reads (see :func:`noting`)."""
    info = yield from reader.describe()
    reader.budget = read_budget(options, info)
    method, positions, replayed = _resumed(resume, info, options)
    choice = yield from choose_flow(
        method,
        reader,
        info,
        options.index_name,
        options.marker_attribute,
        options.state_table,
        margin=options.replay_margin,
        trust_index=options.trust_index,
        replay=replayed,
        own_items=options.include_own_items,
        marker_sort_key=options.marker_sort_key,
        note=note,
    )
    if resume is not None and options.method == "auto" and method != "index":
        # (the token names the method auto chose; a proven index's choice says it resumed)
        choice.reason = f"{method}, as the resume token says (auto chose it at the start)"
    # (options.method: a resumed auto listing's token names the method auto chose; it goes on
    # with auto's readers, as the printed resume command, which names no method, asks)
    choice.readers = readers_for(options.segments, options.method, choice, reader.budget)
    most = choice.joining.most if choice.joining is not None else choice.readers
    return choice, _positions(positions, options.scan_segments, most, choice)


#: MB of the table a reader of auto's, where it lists by skipping (see readers_for).
MB_A_READER = 2
READERS_BY_SIZE = f"one every {MB_A_READER} MB of the table"


def auto_readers(scanned: int, rate: float | None = None) -> tuple[int, str]:
    """The most readers ``auto`` runs where it lists by skipping a table of ``scanned`` bytes
    under a read budget of ``rate`` RCU a second (None: none), and why (see
    :func:`readers_for`)."""
    readers = max(1, min(AUTO_READERS, scanned // (MB_A_READER * PAGE_BYTES)))
    if rate is not None and readers > rate // PAGE_RCU:
        return max(1, int(rate // PAGE_RCU)), f"one a {PAGE_RCU:g} RCU/s of the budget"
    return readers, READERS_BY_SIZE


def auto_segments(options: ListingOptions, scanned: int, rate: float | None = None) -> int:
    """The Scan segments ``auto`` reads a table of ``scanned`` bytes in where it lists by
    skipping, with ``options`` (their ``segments`` and ``scan_segments``) under a read budget
    of ``rate`` (see :func:`readers_for` and :func:`default_scan_segments`)."""
    if options.scan_segments is not None:
        return options.scan_segments
    readers = options.segments or auto_readers(scanned, rate)[0]
    return default_scan_segments(readers, scanned)


def readers_for(
    segments: int | None, method: str, choice: Choice, budget: ReadBudget | None = None
) -> int:
    """How many read at first: ``segments`` where given; else one. Where ``auto`` lists by
    skipping (up to a request a key, each small: on a table of many keys, many more requests
    than a scan's one a MB), up to one reader every ``MB_A_READER`` MB of the table, up to
    ``AUTO_READERS``, may join as segments end (``choice.joining``, see
    :mod:`~ddbkeys.partition_keys._listing.joining`), so that it takes about as long as a scan
    would, at about the skip scan's read units (said in ``choice.reason``). Readers cost read
    units where the skip scan reads little: they share what the pages learn, so each
    reader's page under way when another meets a large collection may be a large one, and
    each segment ends on a page of its own (on 5 keys of 4,000 items among 2,000 one-item
    keys, 2.2 MB, 33.5 RCU with one reader, 38.5 with two: hence none below 4 MB; they join
    only where skipping's requests call for them). Under a read ``budget``, no more than one a
    ``PAGE_RCU`` a second of it: each reader may take the budget into debt by a page at once,
    so more readers would read in bursts of a page each (7 readers at 100 RCU/s read 1.7x the
    budget over a 6 s listing) and end no sooner."""
    if segments is not None:
        return segments
    if method != "auto" or not isinstance(choice.method, PagedSkipMethod):
        return 1
    scanned = choice.method.scanned_bytes()
    readers, why = auto_readers(scanned, None if budget is None else budget.rate)
    if readers == 1 and budget is not None and why != READERS_BY_SIZE:
        choice.reason += f"; 1 reader(s) at once ({why})"
    if readers > 1:
        choice.joining = Joining(readers, max(1, math.ceil(scanned / PAGE_BYTES)))
        choice.reason += f"{choice.joining.reason()} ({why})"
    return 1


def read_budget(options: ListingOptions, info: TableInfo) -> ReadBudget | None:
    """The listing's read budget, once the table's capacity is known: ``read_percent`` of it
    and ``max_rcu_per_second``, the lower where both are given (None: no limit); with
    ``strict_budget`` it starts empty and settles its debt before each segment ends."""
    limit = share(info, options.read_percent, options.max_rcu_per_second, options.read_capacity)
    if limit is None:
        return None
    return ReadBudget(limit, full=not options.strict_budget, settles=options.strict_budget)


def listing_reader(
    client: object,
    table: str,
    options: ListingOptions,
    retry: RetryPolicy | None = None,
    usage: Usage | None = None,
) -> Reader:
    """The reader of a listing (or of its estimate's sample) of ``table``: its retries, its
    accounting and ``options``' deadline; its budget is :func:`read_budget`'s, once the table
    is described."""
    return Reader(
        client,
        table,
        retry=retry or LISTING_RETRY,
        usage=usage or Usage(),
        deadline=options.deadline,
    )


L = TypeVar("L", bound=ListingCore)


def opened(listing: L, choice: Choice, notes: list[str] | None = None) -> L:
    """``listing`` with what its choice says (method_reason, index_trusted, replay) and what
    it said before it read (``notes``)."""
    listing.method_reason = choice.reason
    listing.index_trusted = choice.trusted
    listing.replay = choice.replay
    listing._joining = choice.joining
    listing.notes = tuple(notes or ())
    return listing


def noting(notes: list[str]) -> Callable[[str], None]:
    """What a listing says before it reads (a lagging maintainer of the marker index: see
    :func:`~ddbkeys.partition_keys._proof.lag.lag_note`), said as it is found: kept in
    ``notes`` (the listing's ``notes``) and warned of (an :class:`~ddbkeys.partition_keys.
    IndexReplayWarning`, which the CLI prints on stderr before the keys)."""

    def note(line: str) -> None:
        notes.append(line)
        warnings.warn(line, IndexReplayWarning, stacklevel=outside())

    return note


#: Scan segments per reader when ``segments > 1`` and ``scan_segments`` is not given, so long
#: as each segment still holds a full Scan page (1 MB) of what is scanned.
SEGMENTS_PER_READER = 4
PAGE_BYTES = 1024 * 1024
#: The read units of a full Scan page (1 MB, eventually consistent).
PAGE_RCU = scan_units(PAGE_BYTES)


def default_scan_segments(readers: int, scanned_bytes: int) -> int:
    """How many Scan segments ``readers`` parallel readers split the table into: up to 4 each,
    but no more than the whole 1 MB pages the table (or index) holds, and never fewer than the
    readers. A segment smaller than a page would cost a request for little work: this way the
    split costs at most one request (0.5 read units) per MB scanned."""
    if readers == 1:
        return 1
    pages = scanned_bytes // PAGE_BYTES
    return max(readers, min(readers * SEGMENTS_PER_READER, pages, MAX_TOTAL_SEGMENTS))


def distinct_partition_keys(
    client: object,
    table: str | None = None,
    method: Method | str | None = None,
    *,
    options: ListingOptions | None = None,
    resume: str | None = None,
    retry: RetryPolicy | None = None,
    usage: Usage | None = None,
    on_key: Callable[[Listing], None] | None = None,
    streams: Any = None,
    s3: Any = None,
    **settings: Unpack[ListingSettings],
) -> Listing:
    """The distinct partition keys of ``table``: a :class:`Listing` to iterate over once.

    Each key comes once, as str, int (Decimal when not whole) or bytes, as a stream whose
    memory does not grow with the table.

    The settings are a :class:`~ddbkeys.partition_keys.ListingOptions` (``options=``, by
    default its defaults) with its fields given as keywords (``segments=4``: see
    :class:`~ddbkeys.partition_keys.ListingSettings`) and ``method`` (None: the options',
    ``auto`` by default) applied over it, all checked before any request. The other arguments
    are what a listing runs with, not settings: ``resume``, ``retry`` (by default
    ``LISTING_RETRY``), ``usage``, ``on_key`` and ``streams``.

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
    itself); see :func:`ddbkeys.as_client`. ``deadline`` (seconds, None for none)
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

    ``from_export`` lists the keys of the table's export instead (an
    :class:`~ddbkeys.partition_keys.ExportListing`): its files, read from disk or with ``s3``
    (a boto3 S3 client; by default one in ``client``'s region), not the table.
    """
    options = listing_options(options, method, settings)
    client, table = client_and_table(client, table, options.deadline)
    reader = listing_reader(client, table, options, retry, usage)
    if streams is None:
        streams = ClientOnFirstUse(lambda: streams_client_for(reader.client, reader.table))
    if options.from_export is not None:
        check_no_resume(options, resume)
        return _from_export(reader, options, on_key, s3, streams)
    driver = SyncDriver(SplitClient(reader.client, streams), reader.usage)
    notes: list[str] = []
    choice, positions = driver.run(opening_flow(options, resume, reader, noting(notes)))
    listing = Listing(
        choice.knowing(
            options.marker_attribute, options.marker_sort_key, options.include_own_items
        ),
        reader,
        positions,
        choice.readers,
        on_key,
    )
    return opened(listing, choice, notes)


def _from_export(
    reader: Reader,
    options: ListingOptions,
    on_key: Callable[[Listing], None] | None,
    s3: Any,
    streams: Any,
) -> ExportListing:
    """The listing of ``options.from_export``: its manifests read and checked against the
    table (DescribeTable: no read capacity), then the table's stream since the export's time
    (see :mod:`ddbkeys.partition_keys._export.now`), so that it says before it reads whether
    it is exact now or as of the export's time."""
    uri = str(options.from_export)
    driver = SyncDriver(SplitClient(reader.client, streams), reader.usage)
    info = driver.run(reader.describe())
    reader.budget = read_budget(options, info)  # (its re-checks: consistent Queries)
    folder = open_export(uri, s3, reader.client)
    manifest = read_manifest(folder, info)
    since = driver.run(since_flow(reader, info, manifest.time, options.replay_margin, time.time()))
    return ExportListing(
        info,
        reader,
        folder,
        manifest,
        marker_attribute=options.marker_attribute,
        marker_sort_key=options.marker_sort_key,
        own_items=options.include_own_items,
        on_key=on_key,
        since=since,
    )


def _resumed(
    resume: str | None, info: TableInfo, options: ListingOptions
) -> tuple[str, list[Position] | None, dict[str, Any] | None]:
    """The method, the positions to go on from (None: a new listing), and the proven index's
    replay the token carries."""
    method, scan_segments = options.method, options.scan_segments
    if resume is None:
        return method, None, None
    resumed = decode_token(resume)
    method = check_binding(resumed, info, method, options.include_own_items)
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
