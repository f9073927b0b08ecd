"""A model of one DynamoDB table with ddbkeys' marker index, its stream and the ddbkeys state
table, on a model clock (for tests/unit/test_proof_schedules.py).

What it models, and where it is adversarial within the proof's one assumption (every write
shows in the index, the stream and eventually consistent reads within ``lag`` seconds):

* the table: items by (partition key, sort key), read exactly by consistent Query and GetItem;
  a Scan may see the table as it was up to ``scan_lag`` seconds ago;
* the marker index (a KEYS_ONLY GSI on the marker attribute): each write reaches it late, in
  order per item, and at the latest ``lag`` seconds after the write (``settle``);
* the stream: a record for every write that changes an item (data and markers alike), in the
  item's shard; shards split into children (a closed shard has an ending sequence number); a
  record is kept 24 hours, a closed shard listed until its records are gone; turning the
  stream off closes its shards, turning it on (or creating the table again) makes a new stream
  with a new ARN;
* the state table: one record per marker index (GetItem, UpdateItem SET/REMOVE/ADD/DELETE).

Requests are answered by :mod:`tests.support.proof_client`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from ddbkeys._schema import KeyAttribute, TableInfo
from ddbkeys.partition_keys._index.markers import (
    DEFAULT_INDEX,
    DEFAULT_MARKER_ATTRIBUTE,
    DEFAULT_MARKER_SORT_KEY,
)
from ddbkeys.partition_keys._proof.evidence import DAY

TABLE = "orders"
INDEX = DEFAULT_INDEX
ATTR = DEFAULT_MARKER_ATTRIBUTE
STATE = "ddbkeys-state"
PK, SK = "pk", "sk"
MARKER_SK = Decimal(DEFAULT_MARKER_SORT_KEY["N"]["N"])
#: Where the model clock starts (seconds since the epoch).
T0 = 1_700_000_000.0
#: How long a shard iterator lives (seconds).
ITERATOR_LIFE = 900.0

ItemKey = tuple[str, Decimal]
Item = dict[str, Any]


def typed_item(pk: str, sk: Decimal, **more: Any) -> Item:
    return {PK: {"S": pk}, SK: {"N": str(sk)}, **more}


def key_of(item: Item) -> ItemKey:
    return str(item[PK]["S"]), Decimal(item[SK]["N"])


def is_marker(item: Item) -> bool:
    """ddbkeys' own marker: at the marker's sort key, holding the collection's key."""
    key = key_of(item)
    return key[1] == MARKER_SK and item.get(ATTR) == item[PK]


@dataclass
class Record:
    seq: int
    written: float
    key: ItemKey
    event: str  # INSERT, MODIFY, REMOVE


@dataclass
class Shard:
    id: str
    parent: str | None
    start: int  # the first sequence number it may hold
    records: list[Record] = field(default_factory=list)
    closed_at: float | None = None
    ending: int | None = None
    trimmed_to: int = 0  # every record of this shard up to this sequence number is gone
    #: DescribeStream leaves it out until then (a new child: the service may list its closed
    #: parent a moment before it).
    hidden_until: float = 0.0

    @property
    def open(self) -> bool:
        return self.closed_at is None

    def kept(self) -> list[Record]:
        return [r for r in self.records if r.seq > self.trimmed_to]

    def last_seq(self) -> int:
        """The newest sequence number the shard took (trimmed or not: the service's
        EndingSequenceNumber and LATEST do not move back when a day's records go)."""
        return self.records[-1].seq if self.records else max(self.start - 1, self.trimmed_to)


@dataclass
class Stream:
    arn: str
    shards: dict[str, Shard] = field(default_factory=dict)
    enabled: bool = True


class World:
    """The table, its index, its streams and the state table, at ``now``."""

    def __init__(self, lag: float, shards: int = 2) -> None:
        self.now = T0
        #: The maintainers' nonce prefixes, counted (not random: the same schedule, the same
        #: pending elements, so derandomized schedules are the same on every run).
        self.nonces = itertools.count(1)
        self.lag = lag  # the most a write takes to reach the index (the assumption)
        self.scan_lag = 0.0  # how stale a Scan of the table may be (at most ``lag``)
        self.page_cap = 1000  # the most records (or index items) one page holds
        #: GetRecords answers this many empty pages from a new iterator before its records
        #: ("it might take multiple calls to get to a portion of the shard that contains
        #: stream records", says the API).
        self.hollow = 0
        #: ApproximateCreationDateTime is rounded down to this (1 s on the service, 60 s on
        #: DynamoDB Local).
        self.rounding = 1.0
        self.table: dict[ItemKey, Item] = {}
        #: Each item's versions (time written, item or None), for Scans that lag.
        self.history: dict[ItemKey, list[tuple[float, Item | None]]] = {}
        self.index: dict[ItemKey, str] = {}  # what the GSI shows: the item's marker attribute
        self.pending: list[tuple[float, ItemKey, str | None]] = []  # (due, item, value)
        self.streams: dict[str, Stream] = {}
        self.stream: Stream | None = None  # the table's stream while on
        self.latest_arn: str | None = None
        self.route: dict[ItemKey, str] = {}  # item -> its shard (in the current stream)
        self.state: dict[str, Item] = {}  # the state table: id -> item
        self.failing: set[str] = set()  # collections whose Query is refused (AccessDenied)
        #: Collections whose reconciliation gives up at its first read, with no write: it
        #: stands for one that does not settle, and leaves no record of why in the stream.
        self.unsettled: set[str] = set()
        self.generation = 0  # the table, created again, is another table
        self._seq = 10**20
        self._shard_names = 0
        self._labels = 0
        self.enable_stream(shards)

    # --- time ------------------------------------------------------------------------------

    def clock(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        """Time passes: what is due reaches the index; the stream forgets what is a day old."""
        self.now += seconds
        self.settle()
        horizon = self.now - DAY
        for arn, stream in list(self.streams.items()):
            for shard_id, shard in list(stream.shards.items()):
                for record in shard.records:
                    if record.written < horizon:
                        shard.trimmed_to = max(shard.trimmed_to, record.seq)
                shard.records = shard.kept()
                if shard.closed_at is not None and shard.closed_at < horizon:
                    del stream.shards[shard_id]
            if not stream.shards and stream is not self.stream:
                del self.streams[arn]

    def settle(self) -> None:
        """Every index update that is due (written ``lag`` seconds ago or more) shows."""
        due = [p for p in self.pending if p[0] <= self.now]
        self.pending = [p for p in self.pending if p[0] > self.now]
        for _, key, value in due:
            self._show(key, value)

    def propagate(self, n: int) -> None:
        """The index takes the ``n``-th pending update early (and the item's earlier ones)."""
        if not self.pending:
            return
        key = self.pending[n % len(self.pending)][1]
        upto = n % len(self.pending)
        kept = []
        for i, (due, item, value) in enumerate(self.pending):
            if item == key and i <= upto:
                self._show(item, value)
            else:
                kept.append((due, item, value))
        self.pending = kept

    def _show(self, key: ItemKey, value: str | None) -> None:
        if value is None:
            self.index.pop(key, None)
        else:
            self.index[key] = value

    # --- writes --------------------------------------------------------------------------------

    def write(self, key: ItemKey, item: Item | None, lane: int = 0) -> bool:
        """Put (or delete, ``item`` None) one item; False when nothing changed (no record)."""
        old = self.table.get(key)
        if old == item:
            return False
        if item is None:
            del self.table[key]
        else:
            self.table[key] = item
        self.history.setdefault(key, []).append((self.now, item))
        before, after = _indexed(old), _indexed(item)
        if before != after:
            if self.lag > 0:
                self.pending.append((self.now + self.lag, key, after))
            else:
                self._show(key, after)
        if self.stream is not None:
            event = "REMOVE" if item is None else "INSERT" if old is None else "MODIFY"
            shard = self._shard_for(key, lane)
            self._seq += 1
            shard.records.append(Record(self._seq, self.now, key, event))
        return True

    def _shard_for(self, key: ItemKey, lane: int) -> Shard:
        """The item's shard: where its records went, or that shard's open descendant (the
        item's key range went to one of its children); a new item takes an open one."""
        assert self.stream is not None
        shards = self.stream.shards
        current = shards.get(self.route.get(key, ""))
        while current is not None and not current.open:
            children = [s for s in shards.values() if s.parent == current.id]
            current = children[lane % len(children)] if children else None
        if current is None:
            opened = sorted(s for s in shards if shards[s].open)
            current = shards[opened[lane % len(opened)]]
        self.route[key] = current.id
        return current

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    # --- the stream -----------------------------------------------------------------------------

    def _new_shard(self, parent: str | None) -> Shard:
        assert self.stream is not None
        self._shard_names += 1
        # (named as the service names them: when it was made, in ms, and a suffix)
        name = f"shardId-{round(self.now * 1000):020d}-{self._shard_names:08x}"
        shard = Shard(name, parent, self.next_seq())
        self.stream.shards[shard.id] = shard
        return shard

    def enable_stream(self, shards: int = 2) -> None:
        if self.stream is not None:
            return
        self._labels += 1
        # The label is the stream's birth, as the service's (and DynamoDB Local's) are: a
        # read-mode backfill tells from it a stream younger than its window. (A millisecond
        # more for each stream keeps two made at one model time apart.)
        born = datetime.fromtimestamp(self.now + self._labels / 1000, UTC)
        arn = (
            f"arn:aws:dynamodb:us-east-1:123456789012:table/{TABLE}/stream/"
            f"{born.strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3]}"
        )
        self.stream = Stream(arn)
        self.streams[arn] = self.stream
        self.latest_arn = arn
        self.route = {}
        for _ in range(max(1, shards)):
            self._new_shard(None)

    def disable_stream(self) -> None:
        if self.stream is None:
            return
        for shard in self.stream.shards.values():
            self._close(shard)
        self.stream.enabled = False
        self.stream = None
        self.route = {}

    def _close(self, shard: Shard) -> None:
        if shard.open:
            shard.closed_at = self.now
            held = shard.records or shard.trimmed_to >= shard.start
            shard.ending = shard.last_seq() if held else shard.start

    def split(self, n: int, children: int, hidden: float = 0.0) -> None:
        """The ``n``-th open shard closes; ``children`` (1 or 2) take its key range, left out
        of DescribeStream's answers for ``hidden`` seconds."""
        if self.stream is None:
            return
        opened = sorted(s.id for s in self.stream.shards.values() if s.open)
        shard = self.stream.shards[opened[n % len(opened)]]
        self._close(shard)
        for _ in range(children):
            self._new_shard(shard.id).hidden_until = self.now + hidden

    def recreate_table(self, stream: bool) -> None:
        """The table is deleted (its index with it; its stream closes) and created again."""
        self.disable_stream()
        self.generation += 1
        self.table.clear()
        self.history.clear()
        self.index.clear()
        self.pending.clear()
        self.latest_arn = None
        if stream:
            self.enable_stream()

    # --- reads ----------------------------------------------------------------------------------

    def stale(self, key: ItemKey) -> Item | None:
        """Item ``key`` as a read that is not consistent may see it (as a Scan:
        :meth:`scan_view`)."""
        if self.scan_lag <= 0:
            return self.table.get(key)
        seen = self.now - self.scan_lag
        return next((v for t, v in reversed(self.history.get(key, [])) if t <= seen), None)

    def scan_view(self) -> dict[ItemKey, Item]:
        """The table as a Scan may see it now (as it was ``scan_lag`` seconds ago, at most)."""
        if self.scan_lag <= 0:
            return self.table
        seen = {key: self.stale(key) for key in self.history}
        return {key: item for key, item in seen.items() if item is not None}

    def held_since(self, pk: str) -> float | None:
        """Since when the collection ``pk`` has held an item without a break (None: empty)."""
        changes = sorted(
            (t, key, item is not None)
            for key, versions in self.history.items()
            if key[0] == pk
            for t, item in versions
        )
        present: set[ItemKey] = set()
        since: float | None = None
        for t, key, there in changes:
            was = bool(present)
            (present.add if there else present.discard)(key)
            if present and not was:
                since = t
            elif not present:
                since = None
        return since

    def created(self, t: float) -> float:
        """A record's ApproximateCreationDateTime (seconds), rounded down."""
        return float(math.floor(t / self.rounding) * self.rounding)

    def non_empty(self) -> set[str]:
        """The truth: the collections holding an item that is not ddbkeys' marker."""
        return {key[0] for key, item in self.table.items() if not is_marker(item)}

    def info(self) -> TableInfo:
        return TableInfo(
            name=TABLE,
            partition_key=KeyAttribute(PK, "S"),
            sort_key=KeyAttribute(SK, "N"),
            replica_regions=(),
            index_projections={INDEX: "KEYS_ONLY"},
            index_hash_keys={INDEX: ATTR},
            item_count=len(self.table),
            size_bytes=100 * len(self.table),
            index_sizes={INDEX: 50 * len(self.index)},
            index_statuses={INDEX: "ACTIVE"},
            stream_arn=self.stream.arn if self.stream is not None else None,
            created=str(self.generation),
        )

    def description(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "TableName": TABLE,
            "TableStatus": "ACTIVE",
            "KeySchema": [
                {"AttributeName": PK, "KeyType": "HASH"},
                {"AttributeName": SK, "KeyType": "RANGE"},
            ],
            "AttributeDefinitions": [
                {"AttributeName": PK, "AttributeType": "S"},
                {"AttributeName": SK, "AttributeType": "N"},
                {"AttributeName": ATTR, "AttributeType": "S"},
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": INDEX,
                    "KeySchema": [{"AttributeName": ATTR, "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                    "IndexStatus": "ACTIVE",
                }
            ],
            "ItemCount": len(self.table),
            "TableSizeBytes": 100 * len(self.table),
            "CreationDateTime": str(self.generation),
            "StreamSpecification": {
                "StreamEnabled": self.stream is not None,
                "StreamViewType": "KEYS_ONLY",
            },
        }
        if self.latest_arn is not None:
            described["LatestStreamArn"] = self.latest_arn
        return described


def _indexed(item: Item | None) -> str | None:
    """What the marker index holds for ``item``: its marker attribute (a string), if any."""
    if item is None or ATTR not in item or "S" not in item[ATTR]:
        return None
    return str(item[ATTR]["S"])
