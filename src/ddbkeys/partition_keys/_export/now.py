"""A listing from an export made exact now: the export is a snapshot of the table at its time
``E``, and the table's stream since then is its log, as the marker index's proof argues (see
:mod:`ddbkeys.partition_keys._proof.evidence`).

The rule (:func:`now_window`, pure): with ``bound = E - margin - CREATED_ROUNDING``, the log is
whole when the table's current stream began at or before ``bound`` (so every write since is a
record of it) and ``bound`` is younger than the stream keeps records (a day, less
``TRIM_SAFETY``). Then every shard is read from its start (TRIM_HORIZON: the stream has no
timestamp iterator), the records at or after ``bound`` kept (a record's
ApproximateCreationDateTime is rounded down, hence the rounding), and each collection they name
is re-checked with a consistent Query; the export's keys of the other collections stand. Else
the answer is the table as of ``E``, and the reason says why not now.

It assumes, besides the proof's assumption, that the point-in-time recovery instant of the
export and the stream's clock agree within the margin.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ddbkeys._core.steps import Flow, query
from ddbkeys._errors import DdbKeysError
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._export.keyset import TouchedKeys
from ddbkeys.partition_keys._export.manifest import when
from ddbkeys.partition_keys._listing.base import Key, Reader
from ddbkeys.partition_keys._listing.recognise import Markers, is_own, own_projection
from ddbkeys.partition_keys._proof.evidence import (
    CREATED_ROUNDING,
    TRIM_SAFETY,
    Decline,
    nearly_a_day_old,
)
from ddbkeys.partition_keys._proof.replay_window import ReplayWindow, ShardRead, unlisted_child
from ddbkeys.partition_keys._proof.shard_read import (
    Replay,
    ask_within_budget,
    read_shard,
    refusal,
    shard_list,
)

__all__ = ["Since", "exists_flow", "forget", "now_window", "since_flow", "stream_began"]


def stream_began(stream_arn: str) -> datetime | None:
    """When the stream ``stream_arn`` began: its label, the ARN's last part (an ISO time)."""
    label = stream_arn.rsplit("/", 1)[-1]
    try:
        began = datetime.fromisoformat(label.replace("Z", "+00:00"))
    except ValueError:
        return None
    return began if began.tzinfo is not None else began.replace(tzinfo=UTC)


def now_window(info: TableInfo, export_time: datetime, margin: float, now: float) -> float | str:
    """Where the stream is read from to make an export of ``export_time`` exact ``now``
    (seconds since the epoch): ``bound``; or why it cannot be, a clause."""
    bound = export_time.timestamp() - margin - CREATED_ROUNDING
    if info.stream_arn is None:
        return "the table's stream is off"
    began = stream_began(info.stream_arn)
    if began is None:
        return f"the stream's label ({info.stream_arn.rsplit('/', 1)[-1]}) is not a time"
    if began.timestamp() > bound:
        return (
            f"the table's stream began at {when(began)}, after the export's time less "
            f"{margin + CREATED_ROUNDING:g} s ({when(datetime.fromtimestamp(bound, UTC))}): "
            "writes between are in no log"
        )
    if nearly_a_day_old(bound, now):
        return (
            "the export is older than the stream keeps its records (24 h, less "
            f"{TRIM_SAFETY / 3600:g} h to be safe): export again for a listing exact now"
        )
    return bound


def forget(since: Since | str | None) -> None:
    """Forget what ``since`` holds (the collections it named may be on disk)."""
    if isinstance(since, Since):
        _close(since.replay)


@dataclass
class Since:
    """What the stream since an export named: ``replay`` (its records and the collections
    they name), read from ``bound`` (seconds)."""

    bound: float
    replay: Replay
    #: How many collections the records named (kept: ``replay.touched`` is forgotten once read).
    named: int = 0
    #: How many of them the listing has re-checked so far (an interrupted one: fewer).
    rechecked: int = 0

    def rechecks(self) -> str:
        """ "260 collections re-checked", or where the listing has not re-checked them all (it
        has not come to them, or it was interrupted), "27 of 260 collections re-checked"."""
        if self.rechecked >= self.named:
            return f"{self.named:,} collections re-checked"
        if not self.rechecked:
            return f"{self.named:,} collections to re-check"
        return f"{self.rechecked:,} of {self.named:,} collections re-checked"


def since_flow(
    reader: Reader, info: TableInfo, export_time: datetime, margin: float, now: float
) -> Flow[Since | str]:
    """Read every shard of the table's stream from its start, keeping the collections that the
    records at or after the window's bound name; or why the export cannot be made exact now."""
    bound = now_window(info, export_time, margin, now)
    if isinstance(bound, str):
        return bound
    arn = str(info.stream_arn)
    try:
        shards = yield from shard_list(reader, arn)
    except DdbKeysError as exc:
        return refusal(exc, "describing the table's stream").reason
    unlisted = unlisted_child(shards)
    if unlisted is not None:
        return unlisted.reason
    skip_before = export_time.timestamp() - margin  # (a record kept: created + rounding >= it)
    reads = tuple(
        ShardRead(shard["ShardId"], None, skip_before=skip_before, whole_history=False)
        for shard in shards
    )
    window = ReplayWindow(arn, reads, margin, now - margin)
    replay = Replay(margin, touched=TouchedKeys())  # (memory bounded: a day of a busy stream)
    try:
        for read in reads:
            outcome = yield from read_shard(reader, window, read, info.partition_key.name, replay)
            if isinstance(outcome, Decline):
                _close(replay)
                return outcome.reason
    except BaseException:
        _close(replay)
        raise
    return Since(bound, replay, len(replay.touched))


def _close(replay: Replay) -> None:
    """Forget the collections ``replay`` named (their file on disk, if they went there)."""
    close = getattr(replay.touched, "close", None)
    if close is not None:
        close()


def exists_flow(
    reader: Reader, info: TableInfo, markers: Markers | None, key: Key, own_items: bool
) -> Flow[bool]:
    """Whether the collection ``key`` holds an item that counts (yours; any with
    ``own_items``), by a consistent Query of two items a page, on while a page held only
    ddbkeys' own."""
    projection, names = own_projection(info.partition_key.name, markers)
    request: dict[str, Any] = {
        "TableName": info.name,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": {":pk": key},
        "ProjectionExpression": projection,
        "ConsistentRead": True,
        "Limit": 2,
        "ReturnConsumedCapacity": "TOTAL",
    }
    while True:
        asked = query(request, count_scanned=True)  # type: ignore[arg-type]
        page = yield from ask_within_budget(reader, asked)  # (--max-rcu-per-second: helper-89 F8)
        if any(own_items or not is_own(item, markers) for item in page.get("Items", [])):
            return True
        if "LastEvaluatedKey" not in page:
            return False
        request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}
