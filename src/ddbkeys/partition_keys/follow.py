"""``index follow``: keep the markers right by reading the table's stream (every shard, shard
splits, expired iterators), for servers, containers and DynamoDB Local (which has Streams but no
Lambda triggers). The same reconciliation as the Lambda handler (``maintain.reconcile``).

Each shard is read in order; a child shard (after a split) only once its parent is finished, so
one item's records are handled in order. Records of one batch are grouped by collection and each
collection is reconciled once. The position in every shard (the last sequence number handled) is
saved in the state table after each batch, so a follower killed at any moment goes on from
there: the records after its last save are handled again, which reconciliation makes harmless.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ddbkeys.core.steps import (
    Flow,
    Pause,
    describe_stream,
    describe_table,
    get_records,
    get_shard_iterator,
    update_table,
)
from ddbkeys.core.stopping import StopFlag
from ddbkeys.drivers.sync import SyncDriver
from ddbkeys.errors import ConfigurationError, DdbKeysError, error_code
from ddbkeys.partition_keys.maintain import Outcome, reconcile_flow
from ddbkeys.partition_keys.marker_core import MarkerCore, send
from ddbkeys.partition_keys.state import STATE_TABLE, StateCore
from ddbkeys.partition_keys.streams import streams_client_for
from ddbkeys.retry import Deadline
from ddbkeys.schema import described

__all__ = [
    "FollowReport",
    "StreamFollower",
    "enable_stream",
    "keys_of_records",
    "streams_client_for",
]

T = TypeVar("T")

#: How often (seconds) the follower rewrites its "caught up" time while it stays caught up.
HEARTBEAT = 5.0
#: How often (seconds) it asks for the stream's shards again, to find new ones.
DISCOVER = 10.0
#: The Streams operations, sent to the Streams client (the rest to the table's).
STREAM_OPERATIONS = frozenset({"describe_stream", "get_shard_iterator", "get_records"})


class Both:
    """One client for a driver: the Streams operations go to ``streams``, the rest (and
    ``meta``) to ``client``. Either may be sync or asyncio: the driver calls what it finds."""

    def __init__(self, client: Any, streams: Any) -> None:
        self._client = client
        self._streams = streams

    def __getattr__(self, name: str) -> Any:
        return getattr(self._streams if name in STREAM_OPERATIONS else self._client, name)


def enable_stream_flow(index: MarkerCore) -> Flow[tuple[str, bool]]:
    """:func:`enable_stream` as a flow (each request within ``index``'s deadline)."""
    answer = yield from index._attempts(
        lambda _: send(describe_table({"TableName": index.table})), "DescribeTable", writes=False
    )
    changed = not described(answer, index.table).get("StreamSpecification", {}).get("StreamEnabled")
    if changed:
        request = update_table(
            {
                "TableName": index.table,
                "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
            }
        )
        yield from index._attempts(
            lambda _: send(request),
            "turning the stream on",
        )
    pause, ends = 0.1, Deadline(600.0, clock=index.retry.clock)
    while not _streaming(described(answer, index.table)):
        if not ends.allows(pause):
            raise DdbKeysError(
                f"Table {index.table!r} is not ACTIVE after 600 s.", table=index.table
            )
        yield Pause(pause, index.retry.sleep)
        pause = min(pause * 1.5, 5.0)
        answer = yield from index._attempts(
            lambda _: send(describe_table({"TableName": index.table})),
            "DescribeTable",
            writes=False,
        )
    return str(described(answer, index.table)["LatestStreamArn"]), changed


def _streaming(table: Mapping[str, Any]) -> bool:
    return table.get("TableStatus") == "ACTIVE" and "LatestStreamArn" in table


def enable_stream(client: object, table: str | None = None) -> tuple[str, bool]:
    """Turn ``table``'s stream on (KEYS_ONLY: a record names the item, which is all a maintainer
    needs) if it is off, and wait until the table is ACTIVE again. Returns the stream's ARN and
    whether it was turned on now (a stream already on is left as it is, whatever its view)."""
    index = MarkerCore(client, table, deadline=60.0)
    return SyncDriver(index.client, index.usage).run(enable_stream_flow(index))


def keys_of_records(records: Iterable[dict[str, Any]], partition_key: str) -> list[dict[str, Any]]:
    """The distinct partition keys (typed) of stream records, in the order first seen."""
    seen: dict[str, dict[str, Any]] = {}
    for record in records:
        value = record.get("dynamodb", {}).get("Keys", {}).get(partition_key)
        if value is not None:
            seen.setdefault(_hashable(value), value)
    return list(seen.values())


def _hashable(value: dict[str, Any]) -> str:
    kind, raw = next(iter(value.items()))
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).hex()
    return json.dumps([kind, raw])


@dataclass
class FollowReport:
    """What a follower did: records and batches handled, and what they did to markers."""

    records: int = 0
    batches: int = 0
    marked: int = 0
    unmarked: int = 0
    clashes: int = 0
    caught_up: bool = False


class Event(Protocol):
    """A stop signal: a ``threading.Event`` or an ``asyncio.Event``."""

    def is_set(self) -> bool: ...


class _Stopped(Exception):
    """The stop was set during a wait: the run ends there (its checkpoint is saved)."""


class StopOn(StopFlag):
    """A :class:`StopFlag` that is set when ``event`` is (for the drivers' sliced waits)."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    @requested.setter
    def requested(self, value: bool) -> None:
        pass

    def check(self) -> None:
        if self.event.is_set():
            raise _Stopped


class FollowerCore:
    """Follows ``index.table``'s stream and reconciles the marker of every collection a record
    names, driver aside: the whole run is one flow (:meth:`_follow`), which the sync
    :class:`StreamFollower` and ``ddbkeys.aio.index.StreamFollower`` run. Nothing is sent by
    the constructor."""

    def __init__(
        self,
        index: MarkerCore,
        *,
        streams: Any = None,
        state_table: str = STATE_TABLE,
        poll: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_batch: Callable[[FollowReport], None] | None = None,
    ) -> None:
        self.index = index
        self.streams = streams if streams is not None else self._default_streams(index)
        self.state = StateCore(
            index.client, state_table, deadline=index.deadline, clock=clock, retry=index.retry
        )
        self.poll = poll
        self.clock = clock
        self.on_batch = on_batch
        self.report = FollowReport()
        self._positions: dict[str, str] = {}  # shard -> last sequence number handled
        self._finished: set[str] = set()
        self._iterators: dict[str, str | None] = {}
        self._parents: dict[str, str | None] = {}

    def _default_streams(self, index: MarkerCore) -> Any:
        """The Streams client when none is given: one like the index's client."""
        return streams_client_for(index.client)

    # --- the stream ---------------------------------------------------------------------------

    def _ask(self, request: Any, what: str) -> Flow[Any]:
        return self.index._attempts(lambda _: send(request), what, writes=False)

    def _stream_arn(self) -> Flow[str]:
        table = self.index.table
        answer = yield from self._ask(describe_table({"TableName": table}), "DescribeTable")
        description = described(answer, table)
        if not description.get("StreamSpecification", {}).get("StreamEnabled"):
            raise ConfigurationError(
                f"Table {table!r} has no stream: turn it on with `ddbkeys "
                f"partition-keys index stream enable -t {table}`.",
                table=table,
            )
        return str(description["LatestStreamArn"])

    def _shards(self, arn: str) -> Flow[list[dict[str, Any]]]:
        shards: list[dict[str, Any]] = []
        start: str | None = None
        while True:
            request: dict[str, Any] = {"StreamArn": arn}
            if start:
                request["ExclusiveStartShardId"] = start
            page = yield from self._ask(describe_stream(request), "reading the stream's shards")
            description = page["StreamDescription"]
            shards.extend(description.get("Shards", []))
            start = description.get("LastEvaluatedShardId")
            if not start:
                return shards

    def _iterator(self, arn: str, shard: str, kind: str, sequence: str | None = None) -> Flow[str]:
        request: dict[str, Any] = {"StreamArn": arn, "ShardId": shard, "ShardIteratorType": kind}
        if sequence:
            request["SequenceNumber"] = sequence
        answer = yield from self._ask(get_shard_iterator(request), "opening a shard")
        return str(answer["ShardIterator"])

    # --- the loop -----------------------------------------------------------------------------

    def _start(self, arn: str, from_start: bool) -> Flow[None]:
        """Load the checkpoint, or begin covering the stream now."""
        index, name = self.index.table, self.index.name
        yield from self.state._ensure()
        saved = yield from self.state._load(index, name)
        shards = yield from self._shards(arn)
        self._parents = {s["ShardId"]: s.get("ParentShardId") for s in shards}
        if saved is not None and saved.maintainer == "follow" and saved.stream_arn == arn:
            self._positions = dict(saved.shards)
            self._finished = set(saved.finished_shards)
            return
        # A first start: the open shards from their end (or oldest record), now.
        since = self.clock()
        for shard in shards:
            if "EndingSequenceNumber" in shard.get("SequenceNumberRange", {}):
                self._finished.add(shard["ShardId"])  # closed: its records are history
            elif not from_start:
                self._iterators[shard["ShardId"]] = yield from self._iterator(
                    arn, shard["ShardId"], "LATEST"
                )
        values = {
            "maintainer": "follow",
            "stream_arn": arn,
            "maintained_since": since,
            "shards": {},
            "finished_shards": sorted(self._finished),
        }
        yield from self.state._update(index, name, values, remove=("caught_up_at",))

    def _ready(self, shard: str) -> bool:
        parent = self._parents.get(shard)
        return parent is None or parent not in self._parents or parent in self._finished

    def _open_iterators(self, arn: str) -> Flow[None]:
        for shard in list(self._parents):
            if shard in self._finished or shard in self._iterators or not self._ready(shard):
                continue
            position = self._positions.get(shard)
            if not position:
                self._iterators[shard] = yield from self._iterator(arn, shard, "TRIM_HORIZON")
                continue
            try:
                self._iterators[shard] = yield from self._iterator(
                    arn, shard, "AFTER_SEQUENCE_NUMBER", position
                )
            except Exception as exc:
                if _code(exc) != "TrimmedDataAccessException":
                    raise
                # Stopped for longer than the stream keeps records (24 hours): some were never
                # handled. Go on from the oldest, and record that coverage begins now, so the
                # index is not trusted again until a new backfill.
                self._iterators[shard] = yield from self._iterator(arn, shard, "TRIM_HORIZON")
                yield from self.state._update(
                    self.index.table, self.index.name, {"maintained_since": self.clock()}
                )

    def _read(self, shard: str) -> Flow[list[dict[str, Any]]]:
        """One GetRecords on ``shard``; [] at its end for now. A finished shard is dropped."""
        request = {"ShardIterator": self._iterators[shard], "Limit": 1000}
        try:
            page = yield from self._ask(get_records(request), "reading a shard")
        except Exception as exc:
            if _code(exc) not in ("ExpiredIteratorException", "TrimmedDataAccessException"):
                raise
            # An iterator too old (15 minutes), or one that points before what the shard
            # still holds: taken again from the position saved, on the next round.
            del self._iterators[shard]
            return []
        records: list[dict[str, Any]] = list(page.get("Records", []))
        following = page.get("NextShardIterator")
        if following:
            self._iterators[shard] = following
        else:
            del self._iterators[shard]
            self._finished.add(shard)
        return records

    def _handle(self, shard: str, records: list[dict[str, Any]]) -> Flow[None]:
        info = yield from self.index._table_info(self.index._begin())
        for key in keys_of_records(records, info.partition_key.name):
            outcome = yield from reconcile_flow(self.index, key, self.index._begin())
            count(self.report, outcome)
        if records:
            self._positions[shard] = str(records[-1]["dynamodb"]["SequenceNumber"])
        self.report.records += len(records)
        self.report.batches += 1

    def _save(self, caught_up: bool) -> Flow[None]:
        values: dict[str, Any] = {
            "shards": {k: v for k, v in self._positions.items() if k not in self._finished},
            "finished_shards": sorted(self._finished),
        }
        if caught_up:
            values["caught_up_at"] = self.clock()
        yield from self.state._update(self.index.table, self.index.name, values)

    def _follow(
        self, stop: StopFlag, until_caught_up: bool, from_start: bool
    ) -> Flow[FollowReport]:
        """The whole run: until ``stop`` is set, or (``until_caught_up``) until every open
        shard has been read to its end once. The checkpoint is saved after every batch.
        Nothing is written unless the marker index is there (keyed on the marker attribute,
        KEYS_ONLY, ACTIVE)."""
        yield from self.index._maintained(self.index._begin())
        arn = yield from self._stream_arn()
        self._iterators.clear()  # a new run goes on from the positions saved
        yield from self._start(arn, from_start)
        discovered = last_beat = self.clock()
        while not stop.requested:
            yield from self._open_iterators(arn)
            # At the end only when every shard was read and gave nothing: a shard that ended
            # (its children come next) or whose iterator expired (taken again next round) is
            # not the end of the stream.
            at_end, ended = True, False
            for shard in list(self._iterators):
                records = yield from self._read(shard)
                if records or shard in self._finished:
                    yield from self._handle(shard, records)
                    yield from self._save(caught_up=False)
                    if self.on_batch is not None:
                        self.on_batch(self.report)
                if records or shard not in self._iterators:
                    at_end = False
                ended = ended or shard in self._finished
                if stop.requested:
                    break
            now = self.clock()
            if at_end and not stop.requested:
                if now - last_beat >= HEARTBEAT or not self.report.caught_up:
                    yield from self._save(caught_up=True)
                    last_beat = now
                self.report.caught_up = True
                if until_caught_up:
                    break
                yield Pause(self.poll, stop=stop)
            if now - discovered >= DISCOVER or ended:
                shards = yield from self._shards(arn)
                self._parents = {s["ShardId"]: s.get("ParentShardId") for s in shards}
                discovered = now
        return self.report


class StreamFollower(FollowerCore):
    """Follows ``index.table``'s stream and reconciles the marker of every collection a record
    names. ``run`` until ``stop`` is set (or, with ``until_caught_up``, until every open shard
    has been read to its end once).

    ``run`` refuses (a :class:`~ddbkeys.errors.ConfigurationError`, before anything is
    written) unless the table has the index ``index.name``, KEYS_ONLY and ACTIVE. The marker
    attribute is that index's own key: an ``index`` made without ``attribute=`` takes it, and
    one made with another attribute is refused.

    On the first run (or when the table has a new stream), reading starts at the stream's end
    (``from_start=False``) or at its oldest record (``TRIM_HORIZON``, up to 24 hours back); the
    time it started is recorded as when the maintainer began covering the stream, and a
    backfill begun after it makes the index trustworthy (see ``state.vouch``). ``streams`` is a
    DynamoDB Streams client (by default one on the index's client's endpoint and credentials).
    """

    def run(
        self,
        stop: threading.Event | None = None,
        *,
        until_caught_up: bool = False,
        from_start: bool = False,
    ) -> FollowReport:
        """Follow the stream until ``stop`` is set, or (``until_caught_up``) until every open
        shard has been read to its end once. The checkpoint is saved after every batch."""
        driver = SyncDriver(Both(self.index.client, self.streams), self.index.usage)
        flag = StopOn(stop or threading.Event())
        try:
            return driver.run(self._follow(flag, until_caught_up, from_start))
        except _Stopped:
            return self.report


def count(report: FollowReport, outcome: Outcome) -> None:
    """Add what one reconciliation did to ``report``."""
    report.marked += outcome is Outcome.MARKED
    report.unmarked += outcome is Outcome.UNMARKED
    report.clashes += outcome is Outcome.CLASH


def _code(exc: BaseException) -> str | None:
    return error_code(getattr(exc, "cause", None) or exc)
