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

from ddbkeys.partition_keys.base import MAX_SORT_KEY, ReadBudget, plain_key
from ddbkeys.partition_keys.choice import METHODS, IndexUnprovenError
from ddbkeys.partition_keys.estimate import ListingEstimate
from ddbkeys.partition_keys.evidence import DEFAULT_REPLAY_MARGIN
from ddbkeys.partition_keys.follower import StreamFollower
from ddbkeys.partition_keys.index import (
    DEFAULT_INDEX,
    DEFAULT_MARKER_ATTRIBUTE,
    BackfillReport,
    MarkerClashError,
    MarkerIndex,
    VerifyReport,
)
from ddbkeys.partition_keys.listing import Listing
from ddbkeys.partition_keys.opening import (
    MAX_READERS,
    default_scan_segments,
    distinct_partition_keys,
)
from ddbkeys.partition_keys.proof_report import ProofStatus
from ddbkeys.partition_keys.sample import estimate_listing
from ddbkeys.partition_keys.stream_setup import enable_stream
from ddbkeys.partition_keys.tasks import ListingTask, plan_listing, run_task, run_tasks

__all__ = [
    "DEFAULT_INDEX",
    "DEFAULT_MARKER_ATTRIBUTE",
    "DEFAULT_REPLAY_MARGIN",
    "MAX_READERS",
    "MAX_SORT_KEY",
    "METHODS",
    "BackfillReport",
    "IndexUnprovenError",
    "Listing",
    "ListingEstimate",
    "ListingTask",
    "MarkerClashError",
    "MarkerIndex",
    "ProofStatus",
    "ReadBudget",
    "StreamFollower",
    "VerifyReport",
    "default_scan_segments",
    "distinct_partition_keys",
    "enable_stream",
    "estimate_listing",
    "plain_key",
    "plan_listing",
    "run_task",
    "run_tasks",
]
