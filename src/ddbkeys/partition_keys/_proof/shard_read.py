"""Reading one shard of a table's stream for a proof of the marker index: from a maintainer's
position (or the shard's start) to its tip, through the empty pages GetRecords may answer, with
an expired iterator taken again; the collections its records name go into a :class:`Replay`. A
refusal, or a shard that never reaches the maintainer's position, is a
:class:`~ddbkeys.partition_keys._proof.evidence.Decline` with its reason. Only Streams requests."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys._core.steps import (
    Flow,
    Request,
    get_records,
    get_shard_iterator,
)
from ddbkeys._errors import DdbKeysError, error_code
from ddbkeys.partition_keys._index.markers import hashable, unhash
from ddbkeys.partition_keys._listing.base import Key, Reader
from ddbkeys.partition_keys._proof.evidence import CREATED_ROUNDING, Decline, nearly_a_day_old
from ddbkeys.partition_keys._proof.marks import created_at
from ddbkeys.partition_keys._proof.replay_window import ReplayWindow, ShardRead, trimmed
from ddbkeys.partition_keys._streams.streams import settled_shards

if TYPE_CHECKING:
    pass

__all__ = [
    "EMPTY_AT_TIP",
    "MOST_EMPTY",
    "RECORDS_PER_READ",
    "REFUSALS",
    "Replay",
    "ask",
    "ask_within_budget",
    "read_shard",
    "refusal",
    "shard_list",
]

Hashed = tuple[str, Any]
#: Records per GetRecords (the most DynamoDB Streams gives).
RECORDS_PER_READ = 1000
#: Past the maintainer's newest position, this many empty GetRecords pages in a row are the
#: shard's tip (an assumption: an empty page may come before records; see read_shard).
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
    touched: MutableMapping[Hashed, Key] = field(default_factory=dict)
    exists: dict[Hashed, bool] = field(default_factory=dict)
    records: int = 0
    shards: int = 0
    #: Records read, by shard.
    by_shard: dict[str, int] = field(default_factory=dict)
    #: Of the touched collections, those the maintainers recorded as pending (their
    #: reconciliation did not settle), re-checked whatever the stream says.
    pending: int = 0
    #: Of the records read, those past the maintainer's newest position in their shard (not
    #: applied yet: how far behind it is), and when the oldest of them was written (None: none).
    unapplied: int = 0
    oldest_unapplied: float | None = None
    #: The collections those unapplied records name (of ``touched``): what the maintainer's
    #: lag alone costs to re-check, the rest being the margin's writes.
    lagging: set[Hashed] = field(default_factory=set)
    #: Of the records re-checked, those written before the maintainer began at the shard's
    #: end (the backfill's history, left out once it has read the tip: see ``evidence``):
    #: not counted as unapplied, so not taken for a maintainer behind.
    history: int = 0

    @property
    def rechecked(self) -> int:
        return len(self.exists)

    def __repr__(self) -> str:
        """Counts, not the collections: a replay of 1,900 re-checked keys printed each twice,
        tens of KB in a REPL or a log line (helper-89 C5)."""
        return (
            f"Replay(records={self.records}, shards={self.shards}, "
            f"touched={len(self.touched)}, rechecked={self.rechecked}, "
            f"pending={self.pending}, unapplied={self.unapplied}, margin={self.margin})"
        )

    def of_history(self) -> str:
        """Its records written before the maintainer began, in words after the count of those
        read ("" where none): counted among the records read past its positions, they read as
        a lag (helper-72 F4)."""
        return f" ({self.history:,} of them from before it began)" if self.history else ""

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


def ask(reader: Reader, request: Request) -> Flow[Any]:
    def attempt(_: int) -> Flow[Any]:
        answer = yield request
        return answer

    return reader.attempts(attempt)


def ask_within_budget(reader: Reader, request: Request) -> Flow[Any]:
    """:func:`ask`, within ``reader``'s read budget (waited for first; the units the answer
    consumed taken out of it): a re-check's consistent Query (1 unit where none is said)."""
    budget = reader.budget
    if budget is not None:
        yield from budget.wait(reader.stop)
    page = yield from ask(reader, request)
    if budget is not None:
        consumed = page.get("ConsumedCapacity") or {}
        budget.spend(float(consumed.get("CapacityUnits", 1.0)))
    return page


def refusal(exc: DdbKeysError, what: str) -> Decline:
    code = error_code(getattr(exc, "cause", None) or exc)
    if code in ("AccessDeniedException", "UnrecognizedClientException"):
        return Decline(
            f"{what} was refused ({code}): grant dynamodb:DescribeStream, GetShardIterator "
            "and GetRecords on the table's stream (see `ddbkeys iam-policy`)"
        )
    raise exc


def shard_list(reader: Reader, arn: str) -> Flow[list[dict[str, Any]]]:
    """Every shard of the stream ``arn``, described again a moment later while it lists a
    closed shard and none after it (``settled_shards``)."""
    return settled_shards(
        lambda request: ask(reader, request), arn, reader.retry.sleep, reader.stop
    )


def _iterator(
    reader: Reader, window: ReplayWindow, shard: str, after: str | None
) -> Flow[str | Decline]:
    request: dict[str, Any] = {"StreamArn": window.stream, "ShardId": shard}
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
            return trimmed(shard)
        if code == "ResourceNotFoundException":
            return Decline(f"shard {shard} is no longer in the stream")
        return refusal(exc, "reading the table's stream")
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


def read_shard(
    reader: Reader,
    window: ReplayWindow,
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
    at = _At(read.after, read.reach is None or _past(read.after, read.reach))
    empty = 0
    now = window.cut + window.margin
    iterator = yield from _iterator(reader, window, read.shard, at.after)
    replay.shards += 1
    while True:
        if isinstance(iterator, Decline):
            return iterator
        try:
            page = yield from ask(
                reader, get_records({"ShardIterator": iterator, "Limit": RECORDS_PER_READ})
            )
        except DdbKeysError as exc:
            if error_code(getattr(exc, "cause", None) or exc) != "ExpiredIteratorException":
                return refusal(exc, "reading the table's stream")
            iterator = yield from _iterator(reader, window, read.shard, at.after)
            continue
        records = page.get("Records", [])
        declined = _take(records, read, at, pk, replay, names, now)
        if declined is not None:
            return declined
        following = page.get("NextShardIterator")
        if not following:
            return None  # a closed shard's end
        empty = 0 if records else empty + 1
        if at.reached and empty >= EMPTY_AT_TIP:
            return None  # the tip, for now
        if empty >= MOST_EMPTY:
            return Decline(
                f"shard {read.shard} gave {MOST_EMPTY} empty pages in a row before the "
                "maintainer's position in it"
            )
        iterator = following


@dataclass
class _At:
    """Where a shard's read stands: past record ``after`` (None: none yet), and whether it has
    ``reached`` the maintainer's newest position in the shard."""

    after: str | None
    reached: bool


def _past(after: str | None, reach: str | None) -> bool:
    return after is not None and int(after) >= int(str(reach))


def _take(
    records: list[dict[str, Any]],
    read: ShardRead,
    at: _At,
    pk: str,
    replay: Replay,
    names: Callable[[Mapping[str, Any]], bool] | None,
    now: float,
) -> Decline | None:
    """A page's records: counted, and the collections they name (past the history the backfill
    covers) added to ``replay.touched``; a decline when a read from a shard's start finds it
    does not reach back far enough."""
    for record in records:
        created = created_at(record)
        if at.after is None and read.after is None and read.whole_history:
            declined = _from_the_start(read, created, now)
            if declined is not None:
                return declined
        at.after = str(record["dynamodb"]["SequenceNumber"])
        at.reached = at.reached or _past(at.after, read.reach)
        replay.records += 1
        replay.by_shard[read.shard] = replay.by_shard.get(read.shard, 0) + 1
        if (
            read.skip_before is not None
            and created is not None
            and created + CREATED_ROUNDING < read.skip_before
        ):
            continue  # history the backfill covers
        key = record.get("dynamodb", {}).get("Keys", {}).get(pk)
        hashed = hashable(key) if key is not None and (names is None or names(record)) else None
        if hashed is not None:
            replay.touched.setdefault(hashed, key)
        _count(replay, read, int(at.after), created, hashed)
    return None


def _count(
    replay: Replay, read: ShardRead, sequence: int, created: float | None, hashed: Hashed | None
) -> None:
    """A record re-checked: history (written before the maintainer began), or past its
    position (unapplied: how far behind it is, and the collection it names)."""
    if read.began is not None and created is not None and created + CREATED_ROUNDING < read.began:
        replay.history += 1  # (surely before: DynamoDB Local rounds to the minute)
    elif read.reach is None or sequence > int(read.reach):
        replay.unapplied += 1
        if created is not None:
            replay.oldest_unapplied = min(created, replay.oldest_unapplied or created)
        if hashed is not None:
            replay.lagging.add(hashed)


def _from_the_start(read: ShardRead, created: float | None, now: float) -> Decline | None:
    """Why a shard read from its start cannot be trusted to hold every record needed, if so:
    records from before the backfill in a shard nobody named, or a first record so old that
    earlier ones may have been trimmed (24 hours) before anyone applied them."""
    if read.only_after is not None and (created is None or created < read.only_after):
        return Decline(
            f"no maintainer recorded a position in shard {read.shard}, which holds records "
            "from before the backfill"
        )
    if created is not None and nearly_a_day_old(created, now):
        return Decline(
            f"shard {read.shard} is read from its oldest record, which is nearly 24 h old: "
            "earlier ones may have been trimmed before anyone applied them"
        )
    return None
