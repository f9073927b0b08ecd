"""Whether a Lambda batch follows on from what was applied of its shard, as the stream itself
says, and what the handler says of a batch that does not.

Sequence numbers are not consecutive, so a batch that begins past the position recorded does not
show what lay between. A batch whose every invocation ended before the handler wrote anything (an
init error after a deploy, a timeout at cold start, its first DynamoDB request refused or
throttled) leaves no trace in the state record; once the trigger gives up on it
(MaximumRetryAttempts) and hands out the next, only the stream shows the records skipped: the
record right after the shard's applied position must be the batch's first. One GetShardIterator
and one GetRecords (``Limit`` 1) a batch, on a role that reads the stream already (the trigger's).
The decision is a flow (:func:`follows_on`); the handler runs it (:func:`skipped`)."""

from __future__ import annotations

import logging
from typing import Any

from ddbkeys._core.steps import Flow, get_records, get_shard_iterator
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import error_code
from ddbkeys.partition_keys._index.index import MarkerIndex
from ddbkeys.partition_keys._proof.evidence import Evidence
from ddbkeys.partition_keys._streams.lambda_batch import BatchStart
from ddbkeys.partition_keys._streams.lambda_trigger import (
    Parallelized,
    Reading,
    TriggerCheck,
    same_stream,
)
from ddbkeys.partition_keys._streams.streams import (
    ClientOnFirstUse,
    SplitClient,
    streams_client_for,
)

__all__ = [
    "MOST_EMPTY",
    "Begun",
    "applied_before",
    "follows_on",
    "parallel",
    "say",
    "skipped",
    "streams_of",
]

LOG = logging.getLogger("ddbkeys")

#: Empty GetRecords pages in a row, at most, before the record after a position (GetRecords
#: "might take multiple calls to get to a portion of the shard that contains stream records"):
#: past them the stream has not said, and the batch counts as not following on.
MOST_EMPTY = 8

#: What the handler keeps of a batch under way: when it began, the shard's check then, a
#: factor above 1 read, and the position the batch must follow on from (None: no check).
Begun = tuple[float, TriggerCheck, Parallelized | None, str | None]


def applied_before(saved: Evidence | None, shard: str, stream: str, first: str) -> str | None:
    """The newest position of ``shard`` known applied (the handler's own batches, or the
    shard's mark: a follower's on the same shard counts), when it lies before ``first``, the
    batch's first record: the record right after it must be ``first``. None: nothing to check
    (no position yet, or the batch begins at or before it: sent again, or out of order)."""
    if saved is None:
        return None
    known: list[str] = []
    check = saved.triggers.get(shard)
    if check is not None and same_stream(check.stream, stream):
        known += [last for _, last in check.batches]  # (as written: DynamoDB Local's pad)
    mark = saved.shards.get(shard)
    if mark is not None and mark.stream == stream and mark.marks and mark.marks[-1][0]:
        known.append(str(mark.marks[-1][0]))
    if not known:
        return None
    after = max(known, key=int)
    return after if int(after) < int(first) else None


def follows_on(stream: str, shard: str, after: str, first: str) -> Flow[bool]:
    """Whether the record right after ``after`` in ``shard`` is ``first`` (or later: nothing
    between): False where it is an earlier one (records skipped), where the stream no longer
    holds ``after`` (trimmed: records lost), or where it does not say within ``MOST_EMPTY``
    empty pages."""
    request = {
        "StreamArn": stream,
        "ShardId": shard,
        "ShardIteratorType": "AFTER_SEQUENCE_NUMBER",
        "SequenceNumber": after,
    }
    try:
        answer: dict[str, Any] = yield get_shard_iterator(request)
    except Exception as exc:
        if error_code(getattr(exc, "cause", None) or exc) == "TrimmedDataAccessException":
            return False
        raise
    iterator = answer.get("ShardIterator")
    for _ in range(MOST_EMPTY):
        if not iterator:
            return False
        page: dict[str, Any] = yield get_records({"ShardIterator": iterator, "Limit": 1})
        records = page.get("Records", [])
        if records:
            return int(records[0]["dynamodb"]["SequenceNumber"]) >= int(first)
        iterator = page.get("NextShardIterator")
    return False


def streams_of(index: MarkerIndex) -> Any:
    """A Streams client for ``index``'s table, made on its first request (the handler keeps
    one per table: a warm environment reuses it)."""
    return ClientOnFirstUse(lambda: streams_client_for(index.client, index.table))


def skipped(
    index: MarkerIndex,
    streams: Any,
    stream: str,
    shard: str,
    after: str | None,
    first: str | None,
    reading: Reading | None,
) -> bool:
    """Whether records of ``shard`` lie between ``after`` (what was applied of it, as the
    batch began: :func:`applied_before`) and the batch's ``first`` record, as the stream shows
    (see the module's docstring), read with the Streams client ``streams``; said in the log.
    Not where the trigger reads a factor above 1 (:func:`parallel`). A request that fails
    raises: Lambda sends the batch again."""
    if after is None or first is None or parallel(reading):
        return False
    driver = SyncDriver(SplitClient(index.client, streams), index.usage)
    if driver.run(follows_on(stream, shard, after, first)):
        return False
    LOG.error(
        "ddbkeys: records of shard %s of %s came between the last batch applied and this one, "
        "and were never applied (Lambda gave up on a batch whose invocations all failed "
        "early): listings decline the index until `index backfill` runs again",
        shard,
        index.table,
    )
    return True


def parallel(reading: Reading | None) -> bool:
    """Whether the trigger reads a ParallelizationFactor above 1: a shard's batches may then
    run out of order, and a batch begun past one not handled yet is said as such (by the
    batch that comes after it, and by every listing while the factor reads so), not as
    records skipped."""
    return reading is not None and (reading.factor or 1) > 1


def say(begun: BatchStart, shard: str, table: str) -> None:
    """Log what a batch's start found wrong, as listings will say it."""
    if begun.backwards:
        LOG.error(
            "ddbkeys: a batch of shard %s of %s came after a later one (is the trigger's "
            "ParallelizationFactor above 1?): listings decline the index until `index "
            "backfill` runs again",
            shard,
            table,
        )
    if begun.lost:
        LOG.error(
            "ddbkeys: records of shard %s of %s were not applied (Lambda went on past them, "
            "or they grew too old): listings decline the index until `index backfill` runs "
            "again",
            shard,
            table,
        )
