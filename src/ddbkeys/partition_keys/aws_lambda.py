"""A handler for AWS Lambda's DynamoDB Streams events that keeps the marker index right: the
same reconciliation as ``index follow`` (see ``maintain``), for tables on the service.

Deployment:

1. Turn the table's stream on: ``ddbkeys partition-keys index stream -t TABLE`` (KEYS_ONLY is
   enough; any view type works).
2. Create the index if it is not there: ``ddbkeys partition-keys index create -t TABLE``.
3. Package ddbkeys with your function (``pip install ddbkeys -t package/``) and set the handler
   to ``ddbkeys.partition_keys.aws_lambda.handler``. Environment: ``DDBKEYS_INDEX`` (default
   ``ddbkeys-partition-keys``), ``DDBKEYS_MARKER_ATTRIBUTE`` (default ``ddbkeys_pk``),
   ``DDBKEYS_STATE_TABLE`` (default ``ddbkeys-state``). The table comes from each record's
   ``eventSourceARN``.
4. Give its role: ``dynamodb:Query``, ``GetItem``, ``PutItem``, ``DeleteItem`` and
   ``DescribeTable`` on the table; ``GetItem``, ``UpdateItem``, ``DescribeTable`` and
   ``CreateTable`` on the state table; and the stream read actions Lambda needs
   (``AWSLambdaDynamoDBExecutionRole``).
5. Add the trigger (an event source mapping) with ``StartingPosition=TRIM_HORIZON``,
   ``FunctionResponseTypes=["ReportBatchItemFailures"]``, and a retry limit or an on-failure
   destination of your choice. TRIM_HORIZON matters: the handler then covers the stream from
   its oldest record, so nothing between the trigger's creation and its first batch is lost.
6. Once the handler has handled its first batch, run ``ddbkeys partition-keys index backfill``.

Promise: under at-least-once delivery, in any order across shards, a non-empty collection is
never left without a marker and an empty one keeps its marker no longer than until its next
record is handled. A collection whose reconciliation fails is reported in
``batchItemFailures`` (its first record in the batch), so Lambda sends it again.
"""

from __future__ import annotations

import base64
import functools
import logging
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import boto3

from ddbkeys.partition_keys.follow import keys_of_records
from ddbkeys.partition_keys.index import DEFAULT_INDEX, DEFAULT_MARKER_ATTRIBUTE, MarkerIndex
from ddbkeys.partition_keys.maintain import Outcome, reconcile
from ddbkeys.partition_keys.state import STATE_TABLE, StateStore

__all__ = ["StreamHandler", "handler", "table_of"]

LOG = logging.getLogger("ddbkeys")


def table_of(event_source_arn: str) -> str:
    """The table's name in a stream ARN (``arn:aws:dynamodb:R:A:table/NAME/stream/LABEL``)."""
    try:
        return event_source_arn.split(":table/", 1)[1].split("/stream/", 1)[0]
    except IndexError:
        raise ValueError(f"not a DynamoDB stream ARN: {event_source_arn!r}") from None


def _typed_key(value: dict[str, Any]) -> dict[str, Any]:
    """A key as Lambda's JSON event carries it, for the low-level client: binary values come
    base64-encoded in the event."""
    kind, raw = next(iter(value.items()))
    if kind == "B" and isinstance(raw, str):
        return {"B": base64.b64decode(raw)}
    return {kind: raw}


def _created(record: Mapping[str, Any], default: float) -> float:
    value = record.get("dynamodb", {}).get("ApproximateCreationDateTime", default)
    return float(value.timestamp()) if isinstance(value, datetime) else float(value)


class StreamHandler:
    """Handles DynamoDB Streams events for the tables they come from. Keeps one
    :class:`MarkerIndex` per table (one DescribeTable each, per cold start)."""

    def __init__(
        self,
        client: object,
        *,
        index: str = DEFAULT_INDEX,
        attribute: str = DEFAULT_MARKER_ATTRIBUTE,
        state_table: str = STATE_TABLE,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.client = client
        self.index_name = index
        self.attribute = attribute
        self.state_table = state_table
        self._clock = clock
        self._indexes: dict[str, MarkerIndex] = {}
        self._store: StateStore | None = None
        self._known: set[str] = set()  # tables whose record names this stream already

    def _index(self, table: str) -> MarkerIndex:
        if table not in self._indexes:
            self._indexes[table] = MarkerIndex(
                self.client, table, name=self.index_name, attribute=self.attribute
            )
        return self._indexes[table]

    def _state(self, index: MarkerIndex) -> StateStore:
        if self._store is None:
            store = StateStore(index.client, self.state_table)
            if self._clock is not None:
                store.clock = self._clock
            store.ensure()
            self._store = store
        return self._store

    def handle(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """One event: reconcile every collection its records name; the failed ones in
        ``batchItemFailures`` (by the sequence number of their first record)."""
        records = list(event.get("Records", []))
        failures: list[dict[str, str]] = []
        by_table: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            by_table.setdefault(record["eventSourceARN"], []).append(record)
        for arn, some in by_table.items():
            index = self._index(table_of(arn))
            pk = index.table_info().partition_key.name
            failed: set[str] = set()
            for key in keys_of_records(some, pk):
                try:
                    outcome = reconcile(index, _typed_key(key))
                except Exception:
                    LOG.exception("ddbkeys: reconciling %r of %s failed", key, index.table)
                    failed.add(repr(key))
                    continue
                if outcome is Outcome.CLASH:
                    LOG.warning("ddbkeys: collection %r of %s cannot be marked", key, index.table)
            for record in some:
                if repr(record["dynamodb"]["Keys"].get(pk)) in failed:
                    failures.append({"itemIdentifier": record["dynamodb"]["SequenceNumber"]})
                    break
            if not failed:
                self._record(index, arn, some)
        return {"batchItemFailures": failures[:1]}

    def _record(self, index: MarkerIndex, arn: str, records: list[dict[str, Any]]) -> None:
        """The evidence: the stream, when the handler began covering it, and now."""
        store = self._state(index)
        now = store.clock()
        values: dict[str, Any] = {"maintainer": "lambda", "stream_arn": arn, "caught_up_at": now}
        if index.table not in self._known:
            saved = store.load(index.table, index.name)
            if saved is None or saved.stream_arn != arn or saved.maintained_since is None:
                first = min((_created(r, now) for r in records), default=now)
                values["maintained_since"] = first
            self._known.add(index.table)
        store.update(index.table, index.name, values)


@functools.cache
def _default_handler() -> StreamHandler:
    """One handler per Lambda execution environment (its client and table descriptions are
    reused by every invocation after a cold start)."""
    return StreamHandler(
        boto3.client("dynamodb"),
        index=os.environ.get("DDBKEYS_INDEX", DEFAULT_INDEX),
        attribute=os.environ.get("DDBKEYS_MARKER_ATTRIBUTE", DEFAULT_MARKER_ATTRIBUTE),
        state_table=os.environ.get("DDBKEYS_STATE_TABLE", STATE_TABLE),
    )


def handler(event: Mapping[str, Any], context: object = None) -> dict[str, Any]:
    """The Lambda entry point (``ddbkeys.partition_keys.aws_lambda.handler``)."""
    return _default_handler().handle(event)
