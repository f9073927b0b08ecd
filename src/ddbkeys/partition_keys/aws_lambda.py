"""A handler for AWS Lambda's DynamoDB Streams events that keeps the marker index right: the
same reconciliation as ``index follow`` (see docs/partition-keys/index.md, "Keeping the markers
right"), for tables on the service.

Deployment:

1. Turn the table's stream on: ``ddbkeys partition-keys index stream -t TABLE`` (KEYS_ONLY is
   enough; any view type works).
2. Create the index if it is not there: ``ddbkeys partition-keys index create -t TABLE``.
3. Package ddbkeys from its checkout (``python -m pip install . -t package/``); set the handler
   to ``ddbkeys.partition_keys.aws_lambda.handler``. Environment: ``DDBKEYS_INDEX`` (default
   ``ddbkeys-partition-keys``), ``DDBKEYS_MARKER_ATTRIBUTE`` (default ``ddbkeys_pk``),
   ``DDBKEYS_STATE_TABLE`` (default ``ddbkeys-state``). The table comes from each record's
   ``eventSourceARN``.
4. Give its role what ``ddbkeys iam-policy lambda-handler -t TABLE`` prints (the table, the
   state table, the stream, and ``lambda:ListEventSourceMappings``, its trigger read).
5. Add the trigger (an event source mapping) with ``StartingPosition=TRIM_HORIZON``,
   ``FunctionResponseTypes=["ReportBatchItemFailures"]``, a tumbling window
   (``TumblingWindowInSeconds``: only then does an event name its shard, and the position the
   handler records proves anything) and ``ParallelizationFactor=1`` (with more, batches of
   one shard run at once), and a retry limit or an on-failure destination of your choice
   (TRIM_HORIZON: nothing between the trigger's creation and its first batch is lost).
6. Once the handler has handled its first batch, and the replay margin (60 s) has passed, run
   ``ddbkeys partition-keys index backfill``.

The evidence: after each batch, per shard, the sequence number up to which every record is applied
(before the first failed one), in the state table; a listing reads the stream from there itself (see
docs/partition-keys/index.md, "What a listing proves, and how"). With it, per shard, the handler's
check of its trigger (see docs/partition-keys/lambda.md, "The trigger's settings, and why"): after
its first batch in an execution environment and every ``CHECK_EVERY`` seconds (5 minutes),
``ListEventSourceMappings`` of the batch's ``eventSourceARN`` and the invoked function
(``context.invoked_function_arn``) says its ``ParallelizationFactor``; listings decline while it is
not 1, and use a shard's positions only up to the last check. A batch that begins before the
handler's own position in its shard, and is none it handled sent again, came out of order: a gap.
So is one the stream shows records before, after what was applied of the shard (a batch given up
on whose every invocation failed before the handler wrote anything: ``lambda_follows``). A
read refused (the role lacks the permission) keeps the markers right; only listings decline. A table
with no writes for 24 hours is listed another way: the shards the handler named have then left the
stream, and the handler is not called to name their successors.

Promise: under at-least-once delivery, in any order across shards, a non-empty collection is never
left without a marker and an empty one keeps its marker no longer than until its next record is
handled. A collection whose reconciliation fails is reported in ``batchItemFailures`` (its first
record in the batch): Lambda sends it again. One that keeps changing is recorded as pending
instead (listings re-check it), and reported failed only when the pending set is full. With the
index gone (``index drop``), a batch fails at its first collection, in one line: disable the
trigger."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from decimal import Decimal
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import ConfigurationError
from ddbkeys.partition_keys._index.index import DEFAULT_INDEX, DEFAULT_MARKER_ATTRIBUTE, MarkerIndex
from ddbkeys.partition_keys._index.maintain import Outcome
from ddbkeys.partition_keys._index.pending import (
    MAX_PENDING,
    RETRY_PENDING,
    Applied,
    Nonces,
    apply_flow,
    retry_flow,
    unpend_flow,
)
from ddbkeys.partition_keys._index.state import StateStore, key_json, state_table_name
from ddbkeys.partition_keys._listing.base import Key
from ddbkeys.partition_keys._listing.recognise import sort_value_of_text
from ddbkeys.partition_keys._proof.evidence import SHARD_PREFIX, ShardMark
from ddbkeys.partition_keys._proof.marks import advance, created_at
from ddbkeys.partition_keys._streams.follow_state import keys_of_records
from ddbkeys.partition_keys._streams.lambda_batch import begin_batch, same_markers
from ddbkeys.partition_keys._streams.lambda_events import parse_event, typed_key
from ddbkeys.partition_keys._streams.lambda_follows import (
    Begun,
    applied_before,
    say,
    skipped,
    streams_of,
)
from ddbkeys.partition_keys._streams.lambda_trigger import (
    CHECK_EVERY,
    CHECK_RETRY,
    LAMBDA_PREFIX,
    PARALLELIZED,
    Parallelized,
    Reading,
    TriggerCheck,
    factor_of,
    recorded,
)

__all__ = ["StreamHandler", "handler", "table_of"]

LOG = logging.getLogger("ddbkeys")


def table_of(event_source_arn: str) -> str:
    """The table's name in a stream ARN (``arn:aws:dynamodb:R:A:table/NAME/stream/LABEL``)."""
    try:
        return event_source_arn.split(":table/", 1)[1].split("/stream/", 1)[0]
    except IndexError:
        raise ValueError(f"not a DynamoDB stream ARN: {event_source_arn!r}") from None


class StreamHandler:
    """Handles DynamoDB Streams events for the tables they come from. Keeps one
    :class:`MarkerIndex` per table (one DescribeTable each, per cold start)."""

    def __init__(
        self,
        client: object,
        *,
        index_name: str = DEFAULT_INDEX,
        marker_attribute: str = DEFAULT_MARKER_ATTRIBUTE,
        marker_sort_key: str | int | Decimal | bytes | None = None,
        state_table: str | None = None,
        clock: Callable[[], float] | None = None,
        lambda_client: Callable[[], Any] | None = None,
    ) -> None:
        self.client = client
        #: Makes the Lambda client that reads the trigger (once, at the first check): boto3's
        #: by default; a test gives its own (see ``lambda_trigger``).
        self._lambda_factory = lambda_client or _lambda_client
        self._lambda: Any = None
        self._streams: dict[str, Any] = {}  # per table: its Streams client (made on first use)
        self._function: str | None = None  # the invoked function's ARN (from the context)
        self._readings: dict[tuple[str, str | None], Reading] = {}
        # Per (stream, shard): when the batch under way began, the shard's check then, and the
        # latest reading of a factor other than 1.
        self._begun: dict[tuple[str, str], Begun] = {}
        self.index_name = index_name
        self.attribute = marker_attribute
        self._sort_key = marker_sort_key  # (text: in the table's sort key type)
        self.state_table = state_table
        self._clock = clock
        self._indexes: dict[str, MarkerIndex] = {}
        self._store: StateStore | None = None
        self._warned: set[str] = set()  # tables whose events named no shard (said once)
        #: The most pending collections it records (the follower's bound too).
        self.max_pending = MAX_PENDING
        #: The prefix of its pending elements (random; a test gives a fixed one).
        self.nonce = Nonces()
        self._known: dict[str, frozenset[str]] = {}  # per table: the pending set, as loaded
        self._pending_tried: dict[str, float] = {}  # per table: when it last tried them

    def _index(self, table: str) -> MarkerIndex:
        if table not in self._indexes:
            index = MarkerIndex(
                self.client, table, index_name=self.index_name, marker_attribute=self.attribute
            )
            if self._sort_key is not None:  # (text from the environment: in the key's type)
                info = index.table_info()
                kind = info.sort_key.type if info.sort_key is not None else "S"
                index = MarkerIndex(
                    self.client,
                    table,
                    index_name=self.index_name,
                    marker_attribute=self.attribute,
                    marker_sort_key=sort_value_of_text(self._sort_key, kind),
                    info=info,
                )
            self._indexes[table] = index
        return self._indexes[table]

    def _state(self, index: MarkerIndex) -> StateStore:
        if self._store is None:
            store = StateStore(index.client, self.state_table)
            if self._clock is not None:
                store.clock = self._clock
            store.ensure()
            self._store = store
        return self._store

    def handle(self, event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
        """One event: reconcile every collection its records name; the failed ones in
        ``batchItemFailures`` (by the sequence number of their first record). With a tumbling
        window the event names its shard: the position up to which every record is applied
        (before the first failed one) is recorded, with the handler's check of its trigger
        (``context.invoked_function_arn`` names the function), and the window's ``state``
        answered."""
        self._function = getattr(context, "invoked_function_arn", None)
        parsed = parse_event(event)  # a malformed event: one line saying what is wrong
        records, shard = parsed.records, parsed.shard_id
        failures: list[str] = []
        by_table: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            by_table.setdefault(record["eventSourceARN"], []).append(record)
        for arn, some in by_table.items():
            index = self._index(table_of(arn))
            pk = index.table_info().partition_key.name
            began = self._begin_batch(index, arn, shard, some)
            known = self._known.pop(index.table, frozenset())  # (loaded before reconciling)
            failed: set[str] = set()
            clashes: list[str] = []
            settled: list[Key] = []
            for key in keys_of_records(some, pk):
                try:
                    result = self._apply(index, typed_key(key), known)
                except Exception as exc:
                    gone = isinstance(exc, ConfigurationError)  # (no index: the rest fail too)
                    LOG.error("ddbkeys: %r of %s: %s", key, index.table, exc, exc_info=not gone)
                    failed.add(repr(key))
                    if gone:
                        break
                    continue
                if not result.applied:
                    LOG.error(
                        "ddbkeys: collection %r of %s did not settle, and the index's pending "
                        "set is full: reported failed, so the shard's position stops there "
                        "until it settles",
                        key,
                        index.table,
                    )
                    failed.add(repr(key))
                elif result.outcome is Outcome.CLASH:
                    LOG.warning("ddbkeys: collection %r of %s cannot be marked", key, index.table)
                    clashes.append(key_json(typed_key(key)))
                elif result.outcome is not None:
                    settled.append(result.key)
            self._settle_pending(index, known, settled)
            applied, failed_at = some, None
            for n, record in enumerate(some):
                if repr(record["dynamodb"]["Keys"].get(pk)) in failed:
                    failed_at = str(record["dynamodb"]["SequenceNumber"])
                    failures.append(failed_at)
                    applied = some[:n]
                    break
            self._end_batch(index, arn, shard, began, applied, clashes, failed_at)
        return parsed.answer(failures[:1])

    def _apply(self, index: MarkerIndex, key: Key, known: frozenset[str]) -> Applied:
        """Reconcile one collection; one that does not settle is recorded pending (unless the
        pending set is full), in place of its elements ``known``."""
        store = self._state(index)
        flow = apply_flow(index.core, store.core, key, self.nonce, self.max_pending, known)
        return SyncDriver(index.client, index.usage).run(flow)

    def _settle_pending(
        self, index: MarkerIndex, known: frozenset[str], settled: list[Key]
    ) -> None:
        """Take out the pending elements ``known`` (loaded before the batch's reconciliations)
        that name a collection of ``settled``; and, at most every ``RETRY_PENDING`` seconds,
        try the other pending collections again (those that settle leave the set too)."""
        if not known:
            return
        store = self._state(index)
        driver = SyncDriver(index.client, index.usage)
        gone = driver.run(unpend_flow(store.core, index.table, index.name, known, settled))
        now, tried = store.clock(), self._pending_tried.get(index.table)
        rest = known - set(gone)
        if not rest or (tried is not None and now - tried < RETRY_PENDING):
            return
        self._pending_tried[index.table] = now
        try:
            driver.run(retry_flow(index.core, store.core, rest))
        except Exception:  # (best effort: the batch is applied whatever this does)
            LOG.exception("ddbkeys: trying the pending collections of %s again failed", index.table)

    def _begin_batch(
        self, index: MarkerIndex, arn: str, shard: str | None, records: list[dict[str, Any]]
    ) -> ShardMark | None:
        """Before a batch of a named shard is applied: its mark says the batch's first record
        is not known applied (``failed``), so a batch Lambda gives up on, whatever ends this
        invocation (a crash included), leaves a trace; and a batch that begins past such a
        record, or that is nearly a day old (earlier records may have been trimmed), is a gap:
        listings decline until a backfill begun after it. The mark as it stands."""
        if shard is None or not records:
            return None
        store = self._state(index)
        now = store.clock()
        saved = same_markers(store.load(index.table, index.name), index.core, index.table_info())
        self._known[index.table] = frozenset(saved.pending) if saved is not None else frozenset()
        first = str(records[0]["dynamodb"]["SequenceNumber"])
        begun = begin_batch(saved, shard, arn, first, created_at(records[0]), now)
        say(begun, shard, index.table)
        reading = self._trigger(arn, now, refresh=False)
        bad, pending, gone = begun.bad, begun.mark, begun.gone
        check = recorded(
            begun.check,
            arn,
            reading,
            now,
            bad=bad,
            gap=now if begun.backwards else None,
            oldest=begun.unchecked,
        )
        check = replace(check, failed=first, lost=now if begun.lost else check.lost)
        after = applied_before(saved, shard, arn, first)  # (checked once the batch is applied)
        self._begun[(arn, shard)] = (now, check, bad, after)
        values = {"maintainer": "lambda", SHARD_PREFIX + shard: pending.to_json()}
        values.update(self._check_values(arn, shard, check, reading))
        store.update(index.table, index.name, values, remove=gone)
        return pending

    def _end_batch(
        self,
        index: MarkerIndex,
        arn: str,
        shard: str | None,
        began: ShardMark | None,
        applied: list[dict[str, Any]],
        clashes: list[str],
        failed_at: str | None,
    ) -> None:
        """The evidence once the batch is applied: the clashes met, and the shard's new mark
        (every record up to the last of ``applied`` is applied now; ``failed_at``, the first
        that was not, is sent again by Lambda). Without a shard id nothing can be vouched
        for: that is recorded, so a listing says why."""
        store = self._state(index)
        store._run(store.core.clashes(index.table, index.name, clashes, add=True))
        now = store.clock()
        if shard is None:
            if index.table not in self._warned:
                LOG.warning(
                    "ddbkeys: the events of %s name no shard (no tumbling window on the "
                    "trigger): the markers are kept, but no listing can prove the index "
                    "complete from them",
                    index.table,
                )
                self._warned.add(index.table)
            store.update(index.table, index.name, {"maintainer": "lambda", "unnamed_batches": now})
            return
        if began is None:
            return
        # The trigger read after the batch is applied (when a read is due): a check vouches for
        # what was applied before it, so the mark keeps the time it was applied by.
        started, check, bad, after = self._begun.pop((arn, shard), (now, None, None, None))
        reading = self._trigger(arn, store.clock(), refresh=True)
        gap = now if self._skipped(index, arn, shard, after, began.failed, reading) else began.gap
        last = str(applied[-1]["dynamodb"]["SequenceNumber"]) if applied else None
        mark = advance(began, shard, arn, "start", last, now)
        values = {SHARD_PREFIX + shard: replace(mark, failed=failed_at, gap=gap).to_json()}
        first = str(applied[0]["dynamodb"]["SequenceNumber"]) if applied else None
        batch = (first, last) if first is not None and last is not None else None
        check = recorded(check, arn, reading, now, bad=bad, began=started, batch=batch)
        check = replace(check, failed=failed_at)  # the batch applied, up to that record
        values.update(self._check_values(arn, shard, check, reading))
        store.update(index.table, index.name, values)

    def _skipped(self, index: MarkerIndex, *batch: Any) -> bool:
        """Whether the stream shows records skipped before the batch (``lambda_follows``)."""
        return skipped(index, self._streams_of(index), *batch)

    def _streams_of(self, index: MarkerIndex) -> Any:
        return self._streams.setdefault(index.table, streams_of(index))  # (no client made yet)

    def _check_values(
        self, arn: str, shard: str, check: TriggerCheck, reading: Reading | None
    ) -> dict[str, Any]:
        """The shard's check, and the reading of a factor other than 1 if this is one."""
        values = {LAMBDA_PREFIX + shard: check.to_json()}
        if reading is not None and reading.factor is not None and reading.factor != 1:
            bad = Parallelized(arn, reading.at, reading.factor, reading.function)
            values[PARALLELIZED] = bad.to_json()
        return values

    def _trigger(self, stream: str, now: float, *, refresh: bool) -> Reading | None:
        """This environment's latest reading of its trigger on ``stream``; with ``refresh``, a
        new one first when the last is ``CHECK_EVERY`` old (``CHECK_RETRY`` if it failed), or
        there is none (the first batch after a cold start)."""
        key = (stream, self._function)
        last = self._readings.get(key)
        if not refresh:
            return last
        if last is not None:
            wait = CHECK_EVERY if last.factor is not None else CHECK_RETRY
            if now - last.at < wait:
                return last
        reading = self._read_trigger(stream, now)
        said = (last.factor, last.error) if last is not None else None
        if reading.factor != 1 and said != (reading.factor, reading.error):  # once, not a batch
            LOG.error(
                "ddbkeys: the trigger of %s on %s: %s: listings decline the index",
                self._function,
                stream,
                reading.error or f"ParallelizationFactor {reading.factor} (it must be 1)",
            )
        self._readings[key] = reading
        return reading

    def _read_trigger(self, stream: str, now: float) -> Reading:
        """``ListEventSourceMappings`` of the invoked function (qualified: an alias or a
        version, as invoked) on ``stream``: its ParallelizationFactor, or why there is none."""
        function = self._function
        if function is None:
            return Reading(None, None, now, "no Lambda context named the function")
        mappings: list[Mapping[str, Any]] = []
        try:
            if self._lambda is None:
                self._lambda = self._lambda_factory()
            marker: str | None = None
            for _ in range(100):  # 100 mappings a page: far more than one function has
                request = {"EventSourceArn": stream, "FunctionName": function}
                if marker:
                    request["Marker"] = marker
                page = self._lambda.list_event_source_mappings(**request)
                mappings.extend(page.get("EventSourceMappings", []))
                marker = page.get("NextMarker")
                if not marker:
                    break
        except (ClientError, BotoCoreError) as exc:
            return Reading(function, None, now, " ".join(str(exc).split())[:200])
        factor, error = factor_of(mappings, stream, function)
        return Reading(function, factor, now, error)


@functools.cache
def _default_handler() -> StreamHandler:
    """One handler per Lambda execution environment (its client and table descriptions are
    reused by every invocation after a cold start)."""
    return StreamHandler(boto3.client("dynamodb"), **environment_settings())


def environment_settings() -> dict[str, Any]:
    """The handler's settings, from the function's environment (``DDBKEYS_INDEX``,
    ``DDBKEYS_MARKER_ATTRIBUTE``, ``DDBKEYS_MARKER_SORT_KEY``: text, a number for a number
    sort key, base64 for a binary one; ``DDBKEYS_STATE_TABLE``), each defaulted."""
    return {
        "index_name": os.environ.get("DDBKEYS_INDEX", DEFAULT_INDEX),
        "marker_attribute": os.environ.get("DDBKEYS_MARKER_ATTRIBUTE", DEFAULT_MARKER_ATTRIBUTE),
        "marker_sort_key": os.environ.get("DDBKEYS_MARKER_SORT_KEY") or None,
        "state_table": state_table_name(),
    }


def _lambda_client() -> Any:
    """boto3's Lambda client (region and credentials from the function's environment)."""
    return boto3.client("lambda")


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
    """The Lambda entry point (``ddbkeys.partition_keys.aws_lambda.handler``)."""
    return _default_handler().handle(event, context)
