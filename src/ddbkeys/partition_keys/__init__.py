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

from ddbkeys.partition_keys._export.described import ExportFailedError, TableExport
from ddbkeys.partition_keys._export.listing import ExportListing
from ddbkeys.partition_keys._export.start import start_export, wait_export
from ddbkeys.partition_keys._index.drop import IndexDropWarning
from ddbkeys.partition_keys._index.index import (
    DEFAULT_INDEX,
    DEFAULT_MARKER_ATTRIBUTE,
    BackfillReport,
    MarkerClashError,
    MarkerIndex,
    VerifyReport,
)
from ddbkeys.partition_keys._index.maintain import UnsettledError, reconcile
from ddbkeys.partition_keys._index.markers import IndexBackfillWarning
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._index.stream_setup import enable_stream
from ddbkeys.partition_keys._listing.base import MAX_SORT_KEY, ReadBudget, plain_key
from ddbkeys.partition_keys._listing.choice import METHODS, IndexUnprovenError
from ddbkeys.partition_keys._listing.listing import Listing
from ddbkeys.partition_keys._listing.opening import default_scan_segments, distinct_partition_keys
from ddbkeys.partition_keys._listing.options import MAX_READERS, ListingOptions, ListingSettings
from ddbkeys.partition_keys._listing.text import read_text_key, text_line
from ddbkeys.partition_keys._proof.evidence import DEFAULT_REPLAY_MARGIN
from ddbkeys.partition_keys._proof.lag import IndexReplayWarning
from ddbkeys.partition_keys._proof.report import ProofStatus
from ddbkeys.partition_keys._streams.follower import StreamFollower
from ddbkeys.partition_keys._streams.lambda_events import MalformedEventError, parse_event
from ddbkeys.partition_keys._streams.streams import streams_settings
from ddbkeys.partition_keys._tasks.estimate import ListingEstimate
from ddbkeys.partition_keys._tasks.sample import estimate_listing
from ddbkeys.partition_keys._tasks.tasks import ListingTask, list_tasks, open_task, plan_listing

__all__ = [
    "DEFAULT_INDEX",
    "DEFAULT_MARKER_ATTRIBUTE",
    "DEFAULT_REPLAY_MARGIN",
    "MAX_READERS",
    "MAX_SORT_KEY",
    "METHODS",
    "BackfillReport",
    "ExportFailedError",
    "ExportListing",
    "IndexBackfillWarning",
    "IndexDropWarning",
    "IndexReplayWarning",
    "IndexUnprovenError",
    "Listing",
    "ListingEstimate",
    "ListingOptions",
    "ListingSettings",
    "ListingTask",
    "MalformedEventError",
    "MarkerClashError",
    "MarkerIndex",
    "ProofStatus",
    "ReadBudget",
    "StateStore",
    "StreamFollower",
    "TableExport",
    "UnsettledError",
    "VerifyReport",
    "default_scan_segments",
    "distinct_partition_keys",
    "enable_stream",
    "estimate_listing",
    "list_tasks",
    "open_task",
    "parse_event",
    "plain_key",
    "plan_listing",
    "read_text_key",
    "reconcile",
    "start_export",
    "streams_settings",
    "text_line",
    "wait_export",
]
