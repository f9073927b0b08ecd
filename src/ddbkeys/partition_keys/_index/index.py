"""The sparse marker index (from the AWS post on distinct partition keys): one marker item per
item collection, projected into a KEYS_ONLY global secondary index that holds nothing else, so
listing scans only that.

The work is the flows of a :class:`~ddbkeys.partition_keys._index.marker_core.MarkerCore`
(decisions in :mod:`ddbkeys.partition_keys._index.markers`); :class:`MarkerIndex` is that core, a
client and the sync driver, :class:`ddbkeys.aio.MarkerIndex` the same with the asyncio one."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from ddbkeys._core.steps import Flow
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._export.keys import ExportSnapshot, export_snapshot
from ddbkeys.partition_keys._export.now import since_flow
from ddbkeys.partition_keys._export.verify import compared
from ddbkeys.partition_keys._index.backfill import repair_flow, waited_backfill_flow
from ddbkeys.partition_keys._index.backfill_wait import Readiness
from ddbkeys.partition_keys._index.create import create_flow
from ddbkeys.partition_keys._index.drop import drop_flow, warn_left
from ddbkeys.partition_keys._index.index_base import MarkerIndexBase
from ddbkeys.partition_keys._index.markers import (
    DEFAULT_INDEX,
    DEFAULT_MARKER_ATTRIBUTE,
    DEFAULT_MARKER_SORT_KEY,
    VERSION_ATTRIBUTE,
    BackfillReport,
    MarkerClashError,
    VerifyReport,
    warn_uncounted,
)
from ddbkeys.partition_keys._index.verify import verify_flow
from ddbkeys.partition_keys._listing.base import Key
from ddbkeys.partition_keys._listing.choice import check_margin
from ddbkeys.partition_keys._proof.evidence import DEFAULT_REPLAY_MARGIN
from ddbkeys.partition_keys._proof.status import status_flow, status_reader
from ddbkeys.partition_keys._streams.streams import (
    ClientOnFirstUse,
    SplitClient,
    streams_client_for,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.partition_keys._proof.report import ProofStatus

__all__ = [
    "DEFAULT_INDEX",
    "DEFAULT_MARKER_ATTRIBUTE",
    "DEFAULT_MARKER_SORT_KEY",
    "VERSION_ATTRIBUTE",
    "BackfillReport",
    "MarkerClashError",
    "MarkerIndex",
    "VerifyReport",
]

T = TypeVar("T")


class MarkerIndex(MarkerIndexBase):
    """Create, fill, check and mend the marker index of one table.

    A marker is an item in each collection with the sort key ``marker_sort_key`` and the
    attribute ``attribute`` set to the collection's partition key; the index ``name`` is keyed
    on that attribute, KEYS_ONLY, so it holds the markers alone. Marking is idempotent and
    conditional: a marker that exists is left as it is.

    ``client`` is anything :func:`ddbkeys.as_client` takes (a boto3 ``Table`` names the
    table itself). ``info`` is the table's description when you have it (a listing passes its
    own), read just now: a marker is written on it for 10 s before the table is described again
    (one read before an ``index drop`` would let a marker in after it); otherwise the first call
    reads it and it is kept (two first calls at once may each read it). Nothing is sent by the
    constructor. Each call of one request or a few (``mark``,
    ``unmark``, ``status``, ``check``) ends within ``deadline`` seconds; in the long ones
    (``backfill``, ``verify``, ``repair``, ``create``'s wait) each request, with its retries on
    throttling, 5xx and dropped connections, does.
    """

    client: DynamoDBClient

    def _run(self, flow: Flow[T]) -> T:
        # A driver per call: the client may be replaced (tests put a hand-driven one in).
        return SyncDriver(self.client, self.usage).run(flow)

    def table_info(self) -> TableInfo:
        """The table's description: the one given, or one DescribeTable the first time."""
        return self._run(self.core.table_info())

    def status(self, *, fresh: bool = False) -> str | None:
        """The index's status (ACTIVE, CREATING, ...), or None when there is no such index:
        from the table's description this object holds (given as ``info``, or read by a
        call before), or from a DescribeTable now when it holds none or ``fresh``."""
        return self._run(self.core.status(fresh))

    def check(self) -> None:
        """A clear error unless the index exists, is KEYS_ONLY, is keyed on the marker
        attribute and is ACTIVE."""
        self._run(self.core.check())

    def create(self, *, wait: bool = True, timeout: float = 600.0) -> bool:
        """Add the KEYS_ONLY index on the marker attribute (no-op if it exists); with
        ``wait``, until it is ACTIVE (at most ``timeout`` seconds). True where this call added
        it (also where its answer was lost and its retry found the index); False where it was
        there already, or a create running at the same time added it."""
        return self._run(create_flow(self.core, wait, timeout))

    def marker_key(self, partition_key_value: Any) -> dict[str, Any]:
        """The whole key (typed) of the marker of the collection ``partition_key_value``."""
        return self.core.marker_key(self.table_info(), partition_key_value)

    def mark(self, partition_key_value: str | int | Decimal | bytes | Key) -> bool:
        """Put the marker into one collection. True if it was written, False if a marker was
        there already; :class:`MarkerClashError` (nothing written) when an item that is not a
        marker (its marker attribute does not hold its own partition key) holds the marker's
        key. A clear error, nothing written, unless the table has the index, KEYS_ONLY, keyed on
        the marker attribute and ACTIVE (checked once per object). One conditional PutItem (1
        write unit)."""
        return self._run(self.core.mark(partition_key_value))

    def unmark(self, partition_key_value: str | int | Decimal | bytes | Key) -> bool:
        """Remove one collection's marker. True if there was one; an item at the marker's key
        that is not a marker is never removed. An error when the table has no marker index
        (there are no markers to remove: is it the right table, or index name?)."""
        return self._run(self.core.unmark(partition_key_value))

    def drop(
        self,
        progress: Callable[[int], None] | None = None,
        *,
        wait: bool = True,
        timeout: float = 600.0,
    ) -> int:
        """Take the index away, and its markers with it: one UpdateTable deleting the index
        (where it is there), then one consistent Scan of the table for the markers, each
        deleted on the condition that it still is one (an item of yours is never removed).
        How many were removed; ``progress(removed)`` after each. With ``wait``, until the table
        no longer lists the index (at most ``timeout`` seconds). Between deleting the index
        and removing the markers it waits 11 s: a maintainer still running (``index follow``,
        a backfill, the Lambda handler) looks at the index again before a change once its last
        look is 10 s old, and ends with a :class:`~ddbkeys.ConfigurationError` where it is
        gone; disable a Lambda trigger (its batches fail then). A second ``drop`` removes what
        is left. It reads no record: give the index's ``marker_sort_key`` and
        ``marker_attribute`` (``index drop`` checks them against the record); items that say
        they are markers but are none of these settings' are left, with an
        :class:`IndexDropWarning`. The table's stream is left as it is. The Scan reads the
        whole table once (consistent: 1 RCU per 4 KB)."""
        return warn_left(self._run(drop_flow(self.core, progress, wait, timeout)), self.table)

    def mark_many(
        self, keys: Iterable[Any], progress: Callable[[int], None] | None = None
    ) -> BackfillReport:
        """:meth:`mark` each collection of ``keys``: how many were written, already marked,
        and which cannot be marked (``clashes``, each left as it is). ``progress(written)`` is
        called after each one."""
        return self._run(self.core.mark_many(keys, progress))

    def backfill(
        self,
        progress: Callable[[int], None] | None = None,
        *,
        state_table: str | None = None,
        record: bool = True,
        mode: str = "auto",
        replay_margin: float = DEFAULT_REPLAY_MARGIN,
        wait: bool = True,
        wait_for_maintainer: bool = False,
        timeout: float | None = None,
        on_wait: Callable[[Readiness], None] | None = None,
        streams: Any = None,
        force: bool = False,
        from_export: str | None = None,
        s3: Any = None,
    ) -> BackfillReport:
        """Reconcile every collection of the table with its marker: mark those that have
        none, remove the markers of those that hold nothing else; a collection whose item at
        the marker's sort key is data is left as it is and reported (``clashes``).

        ``mode="reconcile"`` finds the collections with the skip scan and reads each with a
        consistent Query of at most two items (1 read unit), and again after a write.
        ``mode="read"`` reads the table once (the skip scan, which reads like a scan where
        collections are small) and the marker index, writes the markers that calls for (1 write unit
        each), then waits until ``replay_margin`` seconds have passed since its last write, reads
        the table's stream (``streams``: a DynamoDB Streams client; one like ``client`` when None)
        from ``replay_margin`` before it began, and reconciles each collection those records name
        (see docs/partition-keys/index.md, "The backfill's two modes"). ``auto`` (the default) reads
        where the table has a stream and at least 1,000 items, and reconciles otherwise.
        ``report.mode`` says which ran.

        The start and the end are recorded in ``state_table`` (None: ``DDBKEYS_STATE_TABLE``, else
        ``ddbkeys-state``; created if missing; ``record=False``: not recorded, and no wait): the
        snapshot a listing proves the index from, with the stream as its log (see
        docs/partition-keys/index.md, "What a listing proves, and how"). It counts only if it met no
        clash and began at least ``replay_margin`` seconds after a maintainer (``index follow``, the
        Lambda handler) recorded its first position in the table's current stream. Before writing
        anything it applies that rule:

        * the maintainer's first position is younger than the margin: it waits out the rest
          (``wait=False``: it begins at once, and will not count);
        * no maintainer has recorded one: with ``wait_for_maintainer`` it waits for one (at most
          ``timeout`` seconds, then a ``DdbKeysError`` with nothing written); otherwise it waits
          10 s for one started a moment before (not when the stream is off, nor with
          ``wait=False``), then begins and will not count.

        One backfill at a time: a backfill at work says so in the index's record (its ``alive``
        time, refreshed at least every 10 s, and who runs it, ``host:pid``). Finding another one at
        work under the table's stream (alive within the last 30 s) that can count, it reads nothing:
        it waits for that one to end and, if listings can prove the index from it, returns its
        outcome (``report.joined`` is its record; ``written`` and the other counts are 0), else (a
        clash, it does not count, or it died: silent for 30 s) runs itself. ``wait=False`` refuses
        instead (a ``DdbKeysError``, nothing written); ``force=True`` runs anyway, taking the record
        (the other stops at its next write of it: a second read of the table).

        ``on_wait`` is told where it stands (a ``Readiness``) about once a second while it
        waits (``state`` ``"another running"`` and ``other``, that one's record, while it
        waits for another backfill), once when it begins, and in the read mode about once a
        second while it reads the keys (``"reading"``: ``reading``, ``keys`` so far, then
        ``to_mark``) and waits for the stream's tip (``"tip"``). The report says whether the
        backfill counts (``counts``) and, if not, why and what to do (``advice``).

        ``from_export`` (the folder of the table's export to S3, ``s3://...`` read with ``s3``,
        a boto3 S3 client, or a copy on disk) reads the export instead of the table: the markers
        it calls for are written and the orphans removed with no read of the table, then the
        stream is read from the export's time less the margin and each collection it names is
        reconciled (``report.mode`` is ``"export"``; see docs/partition-keys/exports.md). It
        counts when the stream holds every change since the export and a maintainer's first
        position is at least a margin before the stream's tip was read."""
        export = None
        if from_export is not None:
            export = self._export_snapshot(from_export, s3)
        flow = waited_backfill_flow(
            self.core,
            progress,
            self._state(state_table) if record else None,
            replay_margin,
            wait=wait,
            for_maintainer=wait_for_maintainer,
            timeout=timeout,
            on_wait=on_wait,
            mode=mode,
            force=force,
            export=export,
        )
        if streams is None:
            streams = ClientOnFirstUse(lambda: streams_client_for(self.client, self.table))
        report = SyncDriver(SplitClient(self.client, streams), self.usage).run(flow)
        warn_uncounted(report, self.table)
        return report

    def _export_snapshot(self, uri: str, s3: Any) -> ExportSnapshot:
        """The collections of the table's export at ``uri``, its manifests checked."""
        info = self._run(self.core.check())
        return export_snapshot(self.client, uri, s3, info, self.core.markers(info))

    def verify(
        self,
        *,
        from_export: str | None = None,
        s3: Any = None,
        replay_margin: float = DEFAULT_REPLAY_MARGIN,
        streams: Any = None,
        state_table: str | None = None,
    ) -> VerifyReport:
        """Compare the index with the table. Holds both key sets in memory.

        ``from_export`` (the folder of the table's export, ``s3://...`` read with ``s3``, or a
        copy on disk) compares the markers with the data as the export holds them, reading
        neither the table nor the index: the collections the table's stream names since the
        export's time (less ``replay_margin`` and the stream's rounding) changed after it and
        are left out (``report.not_compared``); ``report.as_of`` says when the comparison
        holds (exact now, or as of the export's time and why not now). The index's record in
        ``state_table`` (None: ``DDBKEYS_STATE_TABLE``, else ``ddbkeys-state``) says how it
        knows its markers: told others (another ``marker_sort_key``), verify refuses in one
        line, comparing nothing (repair would otherwise write a second set of markers)."""
        if from_export is None:
            saved = self._run(self._state(state_table).load(self.table, self.name))
            return self._run(verify_flow(self.core, saved, state_table))
        margin = check_margin(replay_margin, self.table)
        info = self._run(self.core.check())
        snapshot = export_snapshot(self.client, from_export, s3, info, self.core.markers(info))
        if streams is None:
            streams = ClientOnFirstUse(lambda: streams_client_for(self.client, self.table))
        taken = datetime.fromtimestamp(snapshot.time, UTC)
        flow = since_flow(status_reader(self.client, self.core), info, taken, margin, time.time())
        since = SyncDriver(SplitClient(self.client, streams), self.usage).run(flow)
        return compared(self.table, self.name, snapshot, since)

    def proof_status(
        self,
        *,
        state_table: str | None = None,
        replay_margin: float = DEFAULT_REPLAY_MARGIN,
        streams: Any = None,
    ) -> ProofStatus:
        """Where the index stands against its proof (``status()`` is the GSI's own state):
        whether a listing can prove it complete now and, if not, the reason in the listing's
        words, the command that fixes it and when; the stream, the maintainer's positions,
        the backfill's record, and what a listing would pay now against a scan. Reads
        DescribeTable, the index's record in ``state_table`` and the stream (``streams``: a
        DynamoDB Streams client; by default one like this index's client): never the table,
        and writes nothing. A :class:`~ddbkeys.DdbKeysError` when the table, the index or
        the state table is missing."""

        margin = check_margin(replay_margin, self.table)
        reader = status_reader(self.client, self.core)
        if streams is None:
            streams = ClientOnFirstUse(lambda: streams_client_for(self.client, self.table))
        flow = status_flow(reader, self.core, self._state(state_table), margin)
        return SyncDriver(SplitClient(self.client, streams), self.usage).run(flow)

    def repair(
        self, *, remove_orphans: bool = True, state_table: str | None = None
    ) -> VerifyReport:
        """Mark the collections ``verify`` found unmarked, and remove orphaned markers (unless
        ``remove_orphans=False``). Clashes a maintainer recorded in ``state_table`` that
        ``verify`` no longer finds are cleared. What it could not fix is in
        ``report.unfixed``: collections that cannot be marked (``clashes``), and orphans
        kept. A marker a maintainer removed (or wrote) between ``verify`` and this write is
        fixed, once a consistent Query of its collection (1 read unit) shows it right."""
        return self._run(repair_flow(self.core, self._state(state_table), remove_orphans))
