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

import functools
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3

from ddbkeys.errors import ConfigurationError, error_code
from ddbkeys.partition_keys.base import Reader, client_and_table
from ddbkeys.partition_keys.index import MarkerIndex
from ddbkeys.partition_keys.maintain import Outcome, reconcile
from ddbkeys.partition_keys.state import STATE_TABLE, StateStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "FollowReport",
    "StreamFollower",
    "enable_stream",
    "keys_of_records",
    "streams_client_for",
]

#: How often (seconds) the follower rewrites its "caught up" time while it stays caught up.
HEARTBEAT = 5.0
#: How often (seconds) it asks for the stream's shards again, to find new ones.
DISCOVER = 10.0


def streams_client_for(client: Any) -> Any:
    """A DynamoDB Streams client on the same endpoint, region and credentials as ``client``
    (the service's own endpoint on AWS; DynamoDB Local serves both APIs on one port)."""
    meta = client.meta
    endpoint = str(meta.endpoint_url)
    own = endpoint.startswith("https://dynamodb.") and endpoint.endswith(".amazonaws.com")
    credentials = client._get_credentials() if hasattr(client, "_get_credentials") else None
    kwargs: dict[str, Any] = {"region_name": meta.region_name, "config": meta.config}
    if not own:
        kwargs["endpoint_url"] = endpoint
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        kwargs.update(
            aws_access_key_id=frozen.access_key,
            aws_secret_access_key=frozen.secret_key,
            aws_session_token=frozen.token,
        )
    return boto3.session.Session().client("dynamodbstreams", **kwargs)


def enable_stream(client: object, table: str | None = None) -> tuple[str, bool]:
    """Turn ``table``'s stream on (KEYS_ONLY: a record names the item, which is all a maintainer
    needs) if it is off, and wait until the table is ACTIVE again. Returns the stream's ARN and
    whether it was turned on now (a stream already on is left as it is, whatever its view)."""
    ddb, name = client_and_table(client, table, 60.0)
    reader = Reader(ddb, name, what="turning the stream on")
    description = reader.call(lambda: ddb.describe_table(TableName=name))["Table"]
    changed = not description.get("StreamSpecification", {}).get("StreamEnabled")
    if changed:
        reader.call(
            lambda: ddb.update_table(
                TableName=name,
                StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
            )
        )
        ddb.get_waiter("table_exists").wait(TableName=name)
        description = reader.call(lambda: ddb.describe_table(TableName=name))["Table"]
    return str(description["LatestStreamArn"]), changed


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


class StreamFollower:
    """Follows ``index.table``'s stream and reconciles the marker of every collection a record
    names. ``run`` until ``stop`` is set (or, with ``until_caught_up``, until every open shard
    has been read to its end once).

    On the first run (or when the table has a new stream), reading starts at the stream's end
    (``from_start=False``) or at its oldest record (``TRIM_HORIZON``, up to 24 hours back); the
    time it started is recorded as when the maintainer began covering the stream, and a
    backfill begun after it makes the index trustworthy (see ``state.vouch``).
    """

    def __init__(
        self,
        index: MarkerIndex,
        *,
        streams: Any = None,
        state_table: str = STATE_TABLE,
        poll: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_batch: Callable[[FollowReport], None] | None = None,
    ) -> None:
        self.index = index
        self.client: DynamoDBClient = index.client
        self.streams = streams or streams_client_for(index.client)
        self.state = StateStore(index.client, state_table, deadline=index.deadline, clock=clock)
        self.poll = poll
        self.clock = clock
        self.on_batch = on_batch
        self.report = FollowReport()
        self._positions: dict[str, str] = {}  # shard -> last sequence number handled
        self._finished: set[str] = set()
        self._iterators: dict[str, str | None] = {}
        self._parents: dict[str, str | None] = {}

    # --- the stream ---------------------------------------------------------------------------

    def _call(self, send: Callable[[], Any]) -> Any:
        return self.index.call(send)

    def _stream_arn(self) -> str:
        description = self._call(lambda: self.client.describe_table(TableName=self.index.table))
        table = description["Table"]
        if not table.get("StreamSpecification", {}).get("StreamEnabled"):
            raise ConfigurationError(
                f"Table {self.index.table!r} has no stream: turn it on with `ddbkeys "
                f"partition-keys index stream enable -t {self.index.table}`.",
                table=self.index.table,
            )
        return str(table["LatestStreamArn"])

    def _shards(self, arn: str) -> list[dict[str, Any]]:
        shards: list[dict[str, Any]] = []
        start: str | None = None
        while True:
            request: dict[str, Any] = {"StreamArn": arn}
            if start:
                request["ExclusiveStartShardId"] = start
            page = self._call(functools.partial(self.streams.describe_stream, **request))
            description = page["StreamDescription"]
            shards.extend(description.get("Shards", []))
            start = description.get("LastEvaluatedShardId")
            if not start:
                return shards

    def _iterator(self, arn: str, shard: str, kind: str, sequence: str | None = None) -> str:
        request: dict[str, Any] = {"StreamArn": arn, "ShardId": shard, "ShardIteratorType": kind}
        if sequence:
            request["SequenceNumber"] = sequence
        return str(self._call(lambda: self.streams.get_shard_iterator(**request))["ShardIterator"])

    # --- the loop -----------------------------------------------------------------------------

    def _start(self, arn: str, from_start: bool) -> None:
        """Load the checkpoint, or begin covering the stream now."""
        self.state.ensure()
        saved = self.state.load(self.index.table, self.index.name)
        shards = self._shards(arn)
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
                self._iterators[shard["ShardId"]] = self._iterator(arn, shard["ShardId"], "LATEST")
        self.state.update(
            self.index.table,
            self.index.name,
            {
                "maintainer": "follow",
                "stream_arn": arn,
                "maintained_since": since,
                "shards": {},
                "finished_shards": sorted(self._finished),
            },
            remove=("caught_up_at",),
        )

    def _ready(self, shard: str) -> bool:
        parent = self._parents.get(shard)
        return parent is None or parent not in self._parents or parent in self._finished

    def _open_iterators(self, arn: str) -> None:
        for shard in self._parents:
            if shard in self._finished or shard in self._iterators or not self._ready(shard):
                continue
            position = self._positions.get(shard)
            if not position:
                self._iterators[shard] = self._iterator(arn, shard, "TRIM_HORIZON")
                continue
            try:
                self._iterators[shard] = self._iterator(
                    arn, shard, "AFTER_SEQUENCE_NUMBER", position
                )
            except Exception as exc:
                if error_code(getattr(exc, "cause", None) or exc) != "TrimmedDataAccessException":
                    raise
                # Stopped for longer than the stream keeps records (24 hours): some were never
                # handled. Go on from the oldest, and record that coverage begins now, so the
                # index is not trusted again until a new backfill.
                self._iterators[shard] = self._iterator(arn, shard, "TRIM_HORIZON")
                self.state.update(
                    self.index.table, self.index.name, {"maintained_since": self.clock()}
                )

    def _read(self, arn: str, shard: str) -> list[dict[str, Any]]:
        """One GetRecords on ``shard``; [] at its end for now. A finished shard is dropped."""
        iterator = self._iterators[shard]
        try:
            page = self._call(lambda: self.streams.get_records(ShardIterator=iterator, Limit=1000))
        except Exception as exc:
            code = error_code(getattr(exc, "cause", None) or exc)
            if code not in ("ExpiredIteratorException", "TrimmedDataAccessException"):
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

    def _handle(self, shard: str, records: list[dict[str, Any]]) -> None:
        pk = self.index.info.partition_key.name
        for key in keys_of_records(records, pk):
            outcome = reconcile(self.index, key)
            self.report.marked += outcome is Outcome.MARKED
            self.report.unmarked += outcome is Outcome.UNMARKED
            self.report.clashes += outcome is Outcome.CLASH
        if records:
            self._positions[shard] = str(records[-1]["dynamodb"]["SequenceNumber"])
        self.report.records += len(records)
        self.report.batches += 1

    def _save(self, caught_up: bool) -> None:
        values: dict[str, Any] = {
            "shards": {k: v for k, v in self._positions.items() if k not in self._finished},
            "finished_shards": sorted(self._finished),
        }
        if caught_up:
            values["caught_up_at"] = self.clock()
        self.state.update(self.index.table, self.index.name, values)

    def run(
        self,
        stop: threading.Event | None = None,
        *,
        until_caught_up: bool = False,
        from_start: bool = False,
    ) -> FollowReport:
        """Follow the stream until ``stop`` is set, or (``until_caught_up``) until every open
        shard has been read to its end once. The checkpoint is saved after every batch."""
        stop = stop or threading.Event()
        arn = self._stream_arn()
        self._iterators.clear()  # a new run goes on from the positions saved
        self._start(arn, from_start)
        discovered = last_beat = self.clock()
        while not stop.is_set():
            self._open_iterators(arn)
            # At the end only when every shard was read and gave nothing: a shard that ended
            # (its children come next) or whose iterator expired (taken again next round) is
            # not the end of the stream.
            at_end, ended = True, False
            for shard in list(self._iterators):
                records = self._read(arn, shard)
                if records or shard in self._finished:
                    self._handle(shard, records)
                    self._save(caught_up=False)
                    if self.on_batch is not None:
                        self.on_batch(self.report)
                if records or shard not in self._iterators:
                    at_end = False
                ended = ended or shard in self._finished
                if stop.is_set():
                    break
            now = self.clock()
            if at_end and not stop.is_set():
                if now - last_beat >= HEARTBEAT or not self.report.caught_up:
                    self._save(caught_up=True)
                    last_beat = now
                self.report.caught_up = True
                if until_caught_up:
                    break
                stop.wait(self.poll)
            if now - discovered >= DISCOVER or ended:
                self._parents = {s["ShardId"]: s.get("ParentShardId") for s in self._shards(arn)}
                discovered = now
        return self.report
