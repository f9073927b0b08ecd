"""A listing that proves the marker index at answer time (see :mod:`ddbkeys.partition_keys.
evidence` for the argument): the flows that load the evidence, read the stream from the
maintainer's marks to its tip, and re-check each collection the records name; and the listing
method that scans the index leaving those collections out, then hands out the ones that exist.

The flows only decide; the sync listing and ``ddbkeys.aio`` run them on their drivers (the
stream's requests go to a DynamoDB Streams client, see ``follow.Both``).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys.core.steps import (
    Emit,
    Flow,
    Request,
    get_records,
    get_shard_iterator,
    query,
)
from ddbkeys.errors import DdbKeysError, error_code
from ddbkeys.partition_keys.base import Key, Reader
from ddbkeys.partition_keys.evidence import (
    CREATED_ROUNDING,
    DAY,
    TRIM_SAFETY,
    Decline,
    Evidence,
    ReplayPlan,
    ShardRead,
    created_at,
    plan_replay,
    precheck,
)
from ddbkeys.partition_keys.index import IndexMethod
from ddbkeys.partition_keys.markers import hashable, unhash
from ddbkeys.partition_keys.pending import pending_keys
from ddbkeys.partition_keys.state import StatePlan, markers_key
from ddbkeys.partition_keys.streams import stream_shards
from ddbkeys.schema import TableInfo

if TYPE_CHECKING:
    from ddbkeys.partition_keys.marker_plan import MarkerPlan

__all__ = [
    "Replay",
    "ReplayedIndexMethod",
    "StreamRead",
    "estimate",
    "load_evidence",
    "read_flow",
    "replay_flow",
    "scan_units",
]

Hashed = tuple[str, Any]
#: Records per GetRecords (the most DynamoDB Streams gives).
RECORDS_PER_READ = 1000
#: Past the maintainer's newest position, this many empty GetRecords pages in a row are the
#: shard's tip (an assumption: an empty page may come before records; see _read_shard).
EMPTY_AT_TIP = 3
#: Empty pages in a row before the maintainer's position that end the read (declined).
MOST_EMPTY = 1000
#: GetShardIterator answered with a server error this many times in a row: declined at once.
REFUSALS = 3


@dataclass
class Replay:
    """What a listing read from the stream and found: the collections the records after the
    maintainer's marks name (``touched``), and whether each exists (``exists``, after the
    re-check). ``records`` read, ``margin`` held back (seconds)."""

    margin: float
    touched: dict[Hashed, Key] = field(default_factory=dict)
    exists: dict[Hashed, bool] = field(default_factory=dict)
    records: int = 0
    shards: int = 0
    #: Records read, by shard.
    by_shard: dict[str, int] = field(default_factory=dict)
    #: Of the touched collections, those the maintainers recorded as pending (their
    #: reconciliation did not settle), re-checked whatever the stream says.
    pending: int = 0

    @property
    def rechecked(self) -> int:
        return len(self.exists)

    def existing(self, after: Key | None = None) -> Iterator[Key]:
        """The re-checked collections that exist, in a fixed order, past ``after``."""
        start = hashable(after) if after is not None else None
        for hashed in sorted(h for h, there in self.exists.items() if there):
            if start is None or hashed > start:
                yield unhash(hashed)

    def to_json(self) -> dict[str, Any]:
        """For a resume token: the margin and each re-checked collection with its state."""
        return {
            "margin": self.margin,
            "keys": [
                [k, base64.b64encode(v).decode() if k == "B" else v, there]
                for (k, v), there in sorted(self.exists.items())
            ],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Replay:
        replay = cls(float(raw["margin"]))
        for kind, value, there in raw["keys"]:
            hashed = (str(kind), base64.b64decode(value) if kind == "B" else str(value))
            replay.touched[hashed] = unhash(hashed)
            replay.exists[hashed] = bool(there)
        return replay


def scan_units(size_bytes: int) -> float:
    """Read units of scanning ``size_bytes`` (0.5 per 4 KB, eventually consistent; at least a
    request's 0.5)."""
    return max(0.5, size_bytes / 4096 * 0.5)


def estimate(info: TableInfo, index: str) -> tuple[float, float, float]:
    """Read units: of scanning the table (what listing another way costs at most), of scanning
    the index, and of re-checking one collection (a consistent Query of two items)."""
    items = max(1, info.item_count)
    average = info.size_bytes / items if info.size_bytes else 100.0
    scan = scan_units(info.size_bytes)
    index_scan = scan_units(info.index_sizes.get(index, 0))
    per_key = float(max(1, math.ceil(2 * average / 4096)))
    return scan, index_scan, per_key


def load_evidence(
    store: StatePlan, info: TableInfo, marker: MarkerPlan, margin: float
) -> Flow[tuple[Evidence | None, Decline | None]]:
    """The index's record, and why it proves nothing (before the stream is read) if so."""
    evidence = yield from store.load(info.name, marker.name)
    return evidence, precheck(evidence, info.stream_arn, margin, _markers(marker, info))


def _markers(marker: MarkerPlan, info: TableInfo) -> str:
    """How this listing recognises markers, as a backfill records it."""
    return markers_key(marker.attribute, marker.sort_key(info))


@dataclass
class StreamRead:
    """What the replay's read of the stream found, before any re-check: the stream's shards
    (DescribeStream; None when not read), where it read each from (``plan``), the records and
    the collections they name (``replay``, nothing re-checked yet), and why it proves nothing
    (``decline``) if so. What ``index status`` shows."""

    shards: list[dict[str, Any]] | None = None
    plan: ReplayPlan | None = None
    replay: Replay | None = None
    decline: Decline | None = None


def _costly(what: str) -> Decline:
    """Too much to re-check: ``what`` costs more than listing another way."""
    return Decline(f"{what}, and re-checking them costs more than listing another way")


def read_flow(
    reader: Reader,
    marker: MarkerPlan,
    info: TableInfo,
    evidence: Evidence | None,
    margin: float,
    now: float,
    most: int | None,
) -> Flow[StreamRead]:
    """Read the stream from the marks held back by ``margin`` to its tip: the collections its
    records name, not re-checked (see :func:`replay_flow`). Only Streams requests."""
    arn = info.stream_arn
    if arn is None:
        return StreamRead(decline=Decline("the table's stream is off"))
    try:
        shards = yield from _shards(reader, arn)
    except DdbKeysError as exc:
        return StreamRead(decline=_refused(exc, "describing the table's stream"))
    plan = plan_replay(evidence, arn, shards, now, margin, _markers(marker, info))
    if isinstance(plan, Decline):
        return StreamRead(shards, decline=plan)
    replay = Replay(margin)
    # Every collection pending when the listing began (read with the evidence, at its start:
    # see the evidence module for why that is when): re-checked, whatever the stream says.
    for key in pending_keys(evidence.pending if evidence is not None else ()):
        replay.touched.setdefault(hashable(key), key)
    replay.pending = len(replay.touched)
    if most is not None and replay.pending > most:
        return StreamRead(
            shards,
            plan,
            replay,
            _costly(f"{replay.pending:,} collection(s) are pending (their markers did not settle)"),
        )
    pk = info.partition_key.name
    for read in plan.reads:
        outcome = yield from _read_shard(reader, plan, read, pk, replay)
        if outcome is not None:
            return StreamRead(shards, plan, replay, outcome)
        if most is not None and len(replay.touched) > most:
            return StreamRead(
                shards,
                plan,
                replay,
                _costly(
                    f"the stream since the maintainer's positions names more than {most:,} "
                    "collections"
                )
                if most
                else Decline(
                    "the stream since the maintainer's positions names a collection to "
                    "re-check, which costs more than a scan of this small table"
                ),
            )
    return StreamRead(shards, plan, replay)


def replay_flow(
    reader: Reader,
    marker: MarkerPlan,
    info: TableInfo,
    evidence: Evidence | None,
    margin: float,
    now: float,
    most: int | None,
) -> Flow[Replay | Decline]:
    """Read the stream from the marks held back by ``margin`` to its tip and re-check what it
    names; a :class:`Decline` when that cannot prove the index (a shard nobody covered, a
    position the stream no longer keeps, the stream refused, or more than ``most``
    collections to re-check)."""
    read = yield from read_flow(reader, marker, info, evidence, margin, now, most)
    if read.decline is not None:
        return read.decline
    replay = read.replay
    assert replay is not None
    for hashed, key in replay.touched.items():
        replay.exists[hashed] = yield from _exists(reader, marker, info, key)
    return replay


def _ask(reader: Reader, request: Request) -> Flow[Any]:
    def attempt(_: int) -> Flow[Any]:
        answer = yield request
        return answer

    return reader.attempts(attempt)


def _refused(exc: DdbKeysError, what: str) -> Decline:
    code = error_code(getattr(exc, "cause", None) or exc)
    if code in ("AccessDeniedException", "UnrecognizedClientException"):
        return Decline(
            f"{what} was refused ({code}): grant dynamodb:DescribeStream, GetShardIterator "
            "and GetRecords on the table's stream (see `ddbkeys iam-policy`)"
        )
    raise exc


def _shards(reader: Reader, arn: str) -> Flow[list[dict[str, Any]]]:
    return stream_shards(lambda request: _ask(reader, request), arn)


def _iterator(
    reader: Reader, plan: ReplayPlan, shard: str, after: str | None
) -> Flow[str | Decline]:
    request: dict[str, Any] = {"StreamArn": plan.stream, "ShardId": shard}
    if after is None:
        request["ShardIteratorType"] = "TRIM_HORIZON"
    else:
        request["ShardIteratorType"] = "AFTER_SEQUENCE_NUMBER"
        request["SequenceNumber"] = after
    refused = 0

    def attempt(_: int) -> Flow[Any]:
        # A 5xx answer is a transient fault, tried again; REFUSALS of them in a row are the
        # stream's verdict on the position (DynamoDB Local answers one past the shard's tip
        # so), declined at once rather than retried to the deadline.
        nonlocal refused
        try:
            answer = yield get_shard_iterator(request)
        except ClientError as exc:
            refused = refused + 1 if _server_error(exc) else 0
            if refused >= REFUSALS:
                return Decline(
                    f"the stream refused {REFUSALS} times in a row to read shard {shard} "
                    + (f"after the position {after} recorded for it" if after else "from its start")
                    + f" ({error_code(exc)}): is it a position no maintainer wrote?"
                )
            raise
        return answer

    try:
        answer = yield from reader.attempts(attempt)
    except DdbKeysError as exc:
        code = error_code(getattr(exc, "cause", None) or exc)
        if code == "ValidationException" and after is not None:
            return Decline(
                f"the stream refuses the position {after} recorded for shard {shard} "
                f"({_said(exc)}): no maintainer wrote it (only the maintainer's role may "
                "write the state table)"
            )
        if code == "TrimmedDataAccessException":
            return Decline(
                f"the maintainer's position in shard {shard} is older than the stream keeps "
                "(24 h): run `index backfill` again once the maintainer runs"
            )
        if code == "ResourceNotFoundException":
            return Decline(f"shard {shard} is no longer in the stream")
        return _refused(exc, "reading the table's stream")
    if isinstance(answer, Decline):
        return answer
    return str(answer["ShardIterator"])


def _said(exc: DdbKeysError) -> str:
    """The error code and DynamoDB's own message behind ``exc``."""
    cause = getattr(exc, "cause", None)
    message = (
        cause.response.get("Error", {}).get("Message") if isinstance(cause, ClientError) else None
    )
    code = error_code(cause or exc)
    return f"{code}: {message}" if message and message != code else str(code)


def _server_error(exc: ClientError) -> bool:
    """An answer with a 5xx status (not throttling, not a lost connection)."""
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return int(status) >= 500 or error_code(exc) in ("InternalServerError", "InternalFailure")


def _read_shard(
    reader: Reader,
    plan: ReplayPlan,
    read: ShardRead,
    pk: str,
    replay: Replay,
    names: Callable[[Mapping[str, Any]], bool] | None = None,
) -> Flow[Decline | None]:
    """Read one shard from ``read.after`` to its tip; the keys its records name go into
    ``replay.touched`` (only those of the records ``names`` accepts, when given). An expired
    iterator (15 minutes) is taken again past the last record.

    GetRecords may answer an empty page before a shard's records (its API reference: "it
    might take multiple calls to get to a portion of the shard that contains stream
    records"): the read goes on through empty pages until it has passed the maintainer's
    newest position in the shard (``read.reach``), and beyond it ends at ``EMPTY_AT_TIP``
    empty pages in a row (or at a closed shard's end)."""
    after, first, empty = read.after, True, 0
    reached = read.reach is None or (after is not None and int(after) >= int(read.reach))
    now = plan.cut + plan.margin
    iterator = yield from _iterator(reader, plan, read.shard, after)
    replay.shards += 1
    while True:
        if isinstance(iterator, Decline):
            return iterator
        try:
            page = yield from _ask(
                reader, get_records({"ShardIterator": iterator, "Limit": RECORDS_PER_READ})
            )
        except DdbKeysError as exc:
            if error_code(getattr(exc, "cause", None) or exc) != "ExpiredIteratorException":
                return _refused(exc, "reading the table's stream")
            iterator = yield from _iterator(reader, plan, read.shard, after)
            continue
        records = page.get("Records", [])
        for record in records:
            created = created_at(record)
            if first and read.after is None:
                declined = _from_the_start(read, created, now)
                if declined is not None:
                    return declined
            first = False
            after = str(record["dynamodb"]["SequenceNumber"])
            reached = reached or int(after) >= int(str(read.reach))
            replay.records += 1
            replay.by_shard[read.shard] = replay.by_shard.get(read.shard, 0) + 1
            if (
                read.skip_before is not None
                and created is not None
                and created + CREATED_ROUNDING < read.skip_before
            ):
                continue  # history the backfill covers
            key = record.get("dynamodb", {}).get("Keys", {}).get(pk)
            if key is not None and (names is None or names(record)):
                replay.touched.setdefault(hashable(key), key)
        following = page.get("NextShardIterator")
        if not following:
            return None  # a closed shard's end
        empty = 0 if records else empty + 1
        if reached and empty >= EMPTY_AT_TIP:
            return None  # the tip, for now
        if empty >= MOST_EMPTY:
            return Decline(
                f"shard {read.shard} gave {MOST_EMPTY} empty pages in a row before the "
                "maintainer's position in it"
            )
        iterator = following


def _from_the_start(read: ShardRead, created: float | None, now: float) -> Decline | None:
    """Why a shard read from its start cannot be trusted to hold every record needed, if so:
    records from before the backfill in a shard nobody named, or a first record so old that
    earlier ones may have been trimmed (24 hours) before anyone applied them."""
    if read.only_after is not None and (created is None or created < read.only_after):
        return Decline(
            f"no maintainer recorded a position in shard {read.shard}, which holds records "
            "from before the backfill"
        )
    if created is not None and created < now - DAY + TRIM_SAFETY:
        return Decline(
            f"shard {read.shard} is read from its oldest record, which is nearly 24 h old: "
            "earlier ones may have been trimmed before anyone applied them"
        )
    return None


def _exists(reader: Reader, marker: MarkerPlan, info: TableInfo, key: Key) -> Flow[bool]:
    """Whether the collection ``key`` holds an item that is not ddbkeys' marker (a consistent
    Query of at most two items a page; a second page only when the first held the marker
    alone and stopped short)."""
    pk, sk = info.partition_key.name, info.sort_key
    assert sk is not None
    marker_sk = marker.sort_key(info)
    request: dict[str, Any] = {
        "TableName": info.name,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": {"#pk": pk, "#sk": sk.name, "#m": marker.attribute},
        "ExpressionAttributeValues": {":pk": key},
        "ProjectionExpression": "#pk, #sk, #m",
        "ConsistentRead": True,
        "Limit": 2,
        "ReturnConsumedCapacity": "TOTAL",
    }
    budget = reader.budget
    while True:
        if budget is not None:
            yield from budget.wait(reader.stop)
        page = yield from _ask(reader, query(request, count_scanned=True))  # type: ignore[arg-type]
        if budget is not None:
            consumed = page.get("ConsumedCapacity") or {}
            budget.spend(float(consumed.get("CapacityUnits", 1.0)))
        for item in page.get("Items", []):
            if not (item.get(sk.name) == marker_sk and item.get(marker.attribute) == item.get(pk)):
                return True
        if "LastEvaluatedKey" not in page:
            return False
        request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}


class ReplayedIndexMethod(IndexMethod):
    """The marker index, proven by a replay: its last segment hands out the re-checked
    collections that exist; the others scan the index (``segments - 1`` Scan segments),
    leaving the re-checked collections out."""

    def __init__(self, info: TableInfo, index: MarkerPlan, replay: Replay) -> None:
        super().__init__(info, index)
        self.replay = replay

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Flow[None]:
        if segment == segments - 1:
            for key in self.replay.existing(after):
                yield Emit(key)
            return
        touched = self.replay.touched
        yield from _filtered(
            super().keys(reader, segment, segments - 1, after),
            lambda key: hashable(key) not in touched,
        )


def _filtered(flow: Flow[None], keep: Callable[[Key], bool]) -> Flow[None]:
    """``flow`` with the keys it emits that ``keep`` refuses left out."""
    try:
        step = next(flow)
        while True:
            if isinstance(step, Emit) and not keep(step.value):
                step = flow.send(None)
                continue
            try:
                answer = yield step
            except GeneratorExit:
                flow.close()
                raise
            except BaseException as exc:
                step = flow.throw(exc)
                continue
            step = flow.send(answer)
    except StopIteration:
        return
