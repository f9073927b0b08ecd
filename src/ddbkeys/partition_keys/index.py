"""The sparse marker index (from the AWS post on distinct partition keys): one marker item per
item collection, projected into a KEYS_ONLY global secondary index that holds nothing else, so
listing scans only that."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from ddbkeys.capacity import Usage
from ddbkeys.core.steps import Flow
from ddbkeys.errors import (
    ConfigurationError,
    DdbKeysError,
    KeySchemaError,
    error_code,
    error_response,
)
from ddbkeys.partition_keys.base import Key, Reader, SegmentMethod, client_and_table
from ddbkeys.partition_keys.scan import scan_from
from ddbkeys.partition_keys.skip import PagedSkipMethod
from ddbkeys.partition_keys.state import STATE_TABLE, StateStore
from ddbkeys.retry import DEFAULT_DEADLINE
from ddbkeys.schema import TableInfo, describe, key_value, show_value

__all__ = [
    "DEFAULT_INDEX",
    "DEFAULT_MARKER_ATTRIBUTE",
    "BackfillReport",
    "IndexMethod",
    "MarkerClashError",
    "MarkerIndex",
    "VerifyReport",
]

T = TypeVar("T")

DEFAULT_INDEX = "ddbkeys-partition-keys"
DEFAULT_MARKER_ATTRIBUTE = "ddbkeys_pk"
#: Each marker write gives the marker a new version, so that a maintainer deletes a marker only
#: as it saw it (see ddbkeys.partition_keys.maintain).
VERSION_ATTRIBUTE = "ddbkeys_v"
#: The marker's sort key, by the sort key's type: a fixed value, unlikely in data. A marker is
#: known by its attribute, never by its sort key: an item at this key without the attribute is
#: data, and its collection cannot be marked (a clash, reported). The number is -(10**38 - 1),
#: 38 digits however it is written, so that boto3's TypeDeserializer (38 digits of precision)
#: reads it back; the string is not the smallest (" " and "!" sort before "#").
DEFAULT_MARKER_SORT_KEY: dict[str, dict[str, Any]] = {
    "S": {"S": "#ddbkeys#marker"},
    "N": {"N": "-" + "9" * 38},
    "B": {"B": b"\x00"},
}


class MarkerClashError(DdbKeysError):
    """A collection holds an item that is not a marker at the marker's sort key, so it cannot
    be marked; ``key`` is the collection's partition key (typed)."""

    def __init__(self, message: str, *, key: Key, table: str | None = None) -> None:
        super().__init__(message, table=table)
        self.key = key


class IndexMethod(SegmentMethod):
    """List the keys by scanning the marker index.

    Cost: 0.5 read units per 4 KB of the index, which holds one small item (about 100 bytes)
    per collection: roughly 0.5 units per 40 keys. Needs the index to be complete: see
    :class:`MarkerIndex` (``backfill``, ``verify``, ``repair``).
    """

    name = "index"

    def __init__(self, info: TableInfo, index: MarkerIndex) -> None:
        super().__init__(info)
        self.index = index

    def start_key(self, after: Key) -> dict[str, Any]:
        key: dict[str, Any] = {self.index.attribute: after, self.info.partition_key.name: after}
        if self.info.sort_key is not None:
            key[self.info.sort_key.name] = self.index.marker_sort_key
        return key

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Flow[None]:
        request: dict[str, Any] = {
            "IndexName": self.index.name,
            "ProjectionExpression": "#m",
            "ExpressionAttributeNames": {"#m": self.index.attribute},
            **self.segment_args(segment, segments),
        }
        if after is not None:
            request["ExclusiveStartKey"] = self.start_key(after)
        yield from scan_from(reader, request, self.index.attribute, previous=after)

    def scanned_bytes(self) -> int:
        return self.info.index_sizes.get(self.index.name, 0)


@dataclass
class VerifyReport:
    """What ``verify`` found: collections without a marker (``missing``), markers whose
    collection holds nothing else (``orphans``), and collections that cannot be marked because
    a data item sits at the marker's sort key (``clashes``, never counted as marked).

    After ``repair``: ``fixed_missing`` and ``fixed_orphans`` say what it did, and
    ``unfixed`` what it could not fix (the clashes, and anything that failed); ``repaired`` is
    true only when nothing is left."""

    table: str
    index: str
    collections: int = 0
    markers: int = 0
    missing: list[Any] = field(default_factory=list)
    orphans: list[Any] = field(default_factory=list)
    clashes: list[Any] = field(default_factory=list)
    fixed_missing: list[Any] = field(default_factory=list)
    fixed_orphans: list[Any] = field(default_factory=list)
    unfixed: list[Any] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.missing and not self.orphans and not self.clashes

    @property
    def repaired(self) -> bool:
        return not self.unfixed


@dataclass
class BackfillReport:
    """What ``backfill`` did: markers ``written``, collections already marked (``present``),
    and collections that cannot be marked (``clashes``: a data item holds the marker's sort
    key)."""

    written: int = 0
    present: int = 0
    clashes: list[Any] = field(default_factory=list)


class MarkerIndex:
    """Create, fill, check and mend the marker index of one table.

    A marker is an item in each collection with the sort key ``marker_sort_key`` and the
    attribute ``attribute`` set to the collection's partition key; the index ``name`` is keyed
    on that attribute, KEYS_ONLY, so it holds the markers alone. Marking is idempotent and
    conditional: a marker that exists is left as it is.

    ``client`` is anything :func:`ddbkeys.clients.as_client` takes (a boto3 ``Table`` names the
    table itself). Every request is retried on throttling, 5xx and dropped connections for up
    to ``deadline`` seconds.
    """

    def __init__(
        self,
        client: object,
        table: str | None = None,
        *,
        name: str = DEFAULT_INDEX,
        attribute: str = DEFAULT_MARKER_ATTRIBUTE,
        marker_sort_key: Any = None,
        usage: Usage | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
    ) -> None:
        self.client, table = client_and_table(client, table, deadline)
        self.table = table
        self.name = name
        self.attribute = attribute
        self.usage = usage or Usage()
        self.deadline = deadline
        self._requests = self._reader()
        self._checked = False
        self.info = self._requests.call(lambda: describe(self.client, table))
        if self.info.sort_key is None:
            raise KeySchemaError(
                f"Table {table!r} has no sort key, so a marker item cannot sit beside the "
                "collection's items; list its keys with a plain scan (--method scan), which "
                "reads each key once anyway.",
                table=table,
            )
        sk = self.info.sort_key
        self.marker_sort_key = (
            key_value(sk, marker_sort_key, table=table)
            if marker_sort_key is not None
            else DEFAULT_MARKER_SORT_KEY[sk.type]
        )

    # --- the index itself -------------------------------------------------------------------

    def _reader(self) -> Reader:
        return Reader(self.client, self.table, usage=self.usage, deadline=self.deadline)

    def call(self, send: Callable[[], T]) -> T:
        """``send()`` retried on throttling, 5xx and dropped connections within the deadline
        (errors as DdbKeysError)."""
        return self._requests.call(send)

    def status(self) -> str | None:
        """The index's status (ACTIVE, CREATING, ...), or None when there is no such index."""
        table = self._requests.call(lambda: self.client.describe_table(TableName=self.table))[
            "Table"
        ]
        for index in table.get("GlobalSecondaryIndexes", []):
            if index["IndexName"] == self.name:
                return str(index.get("IndexStatus", "ACTIVE"))
        return None

    def check(self) -> None:
        """A clear error unless the index exists, is KEYS_ONLY and is keyed on the marker."""
        info = self._requests.call(lambda: describe(self.client, self.table))
        projection = info.index_projections.get(self.name)
        if projection is None:
            raise ConfigurationError(
                f"Table {self.table!r} has no index {self.name!r}. Create it with "
                f"`ddbkeys partition-keys index create --table-name {self.table}`, then "
                "backfill the markers.",
                table=self.table,
            )
        if projection != "KEYS_ONLY":
            raise ConfigurationError(
                f"Index {self.name!r} of table {self.table!r} projects {projection}, not "
                "KEYS_ONLY: it is not a marker index (it would cost more to scan).",
                table=self.table,
            )

    def create(self, *, wait: bool = True, timeout: float = 600.0) -> None:
        """Add the KEYS_ONLY index on the marker attribute (no-op if it exists)."""
        if self.status() is not None:
            self.check()
            return
        pk = self.info.partition_key
        update: dict[str, Any] = {
            "IndexName": self.name,
            "KeySchema": [{"AttributeName": self.attribute, "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        }
        table = self._requests.call(lambda: self.client.describe_table(TableName=self.table))[
            "Table"
        ]
        billing = table.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED")
        if billing == "PROVISIONED" and "ProvisionedThroughput" in table:
            throughput = table["ProvisionedThroughput"]
            update["ProvisionedThroughput"] = {
                "ReadCapacityUnits": throughput["ReadCapacityUnits"],
                "WriteCapacityUnits": throughput["WriteCapacityUnits"],
            }
        request: dict[str, Any] = {
            "TableName": self.table,
            "AttributeDefinitions": [{"AttributeName": self.attribute, "AttributeType": pk.type}],
            "GlobalSecondaryIndexUpdates": [{"Create": update}],
        }
        self._requests.call(lambda: self.client.update_table(**request))
        deadline = time.monotonic() + timeout
        pause = 0.1  # DynamoDB Local is ready at once; the service takes minutes
        while wait and self.status() != "ACTIVE":
            if time.monotonic() > deadline:
                raise DdbKeysError(
                    f"Index {self.name!r} of table {self.table!r} is not ACTIVE after "
                    f"{timeout:.0f} s; it may still be building.",
                    table=self.table,
                )
            time.sleep(pause)
            pause = min(pause * 1.5, 5.0)

    # --- markers ------------------------------------------------------------------------------

    def marker_key(self, partition_key_value: Any) -> dict[str, Any]:
        pk, sk = self.info.partition_key, self.info.sort_key
        assert sk is not None
        value = (
            partition_key_value
            if isinstance(partition_key_value, dict)
            else key_value(pk, partition_key_value, table=self.table)
        )
        return {pk.name: value, sk.name: self.marker_sort_key}

    def mark(self, partition_key_value: str | int | Decimal | bytes | Key) -> bool:
        """Put the marker into one collection. True if it was written, False if a marker was
        there already; :class:`MarkerClashError` (nothing written) when an item that is not a
        marker (it lacks the marker attribute) holds the marker's key."""
        key = self.marker_key(partition_key_value)
        item = dict(
            key,
            **{
                self.attribute: key[self.info.partition_key.name],
                VERSION_ATTRIBUTE: {"S": uuid.uuid4().hex[:16]},
            },
        )
        old: dict[str, Any] = {}

        def put() -> Any:
            try:
                return self.client.put_item(
                    TableName=self.table,
                    Item=item,
                    ConditionExpression="attribute_not_exists(#pk)",
                    ExpressionAttributeNames={"#pk": self.info.partition_key.name},
                    ReturnConsumedCapacity="TOTAL",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as exc:
                if error_code(exc) != "ConditionalCheckFailedException":
                    raise
                old.update(error_response(exc).get("Item") or {})
                return None

        response = self._requests.call(put)
        self.usage.add(response, write=True, items=1 if response is not None else 0)
        if response is None and self.attribute not in old:
            raise self._clash(key)
        return response is not None

    def _clash(self, key: dict[str, Any]) -> MarkerClashError:
        pk, sk = self.info.partition_key, self.info.sort_key
        assert sk is not None
        return MarkerClashError(
            f"Collection {show_value(key[pk.name])} of table {self.table!r} cannot be marked: "
            f"its item at the marker's sort key ({sk.name} = {show_value(key[sk.name])}) is "
            f"data, not a marker (it has no {self.attribute!r}); it was left as it is. Give "
            "the markers another sort key value (marker_sort_key=) for this table.",
            key=key[pk.name],
            table=self.table,
        )

    def unmark(self, partition_key_value: str | int | Decimal | bytes | Key) -> bool:
        """Remove one collection's marker. True if there was one; an item at the marker's key
        that is not a marker is never removed. An error when the table has no marker index
        (there are no markers to remove: is it the right table, or index name?)."""
        if not self._checked:
            self.check()
            self._checked = True
        key = self.marker_key(partition_key_value)
        response = self._conditional(
            lambda: self.client.delete_item(
                TableName=self.table,
                Key=key,
                ConditionExpression="attribute_exists(#m)",
                ExpressionAttributeNames={"#m": self.attribute},
                ReturnConsumedCapacity="TOTAL",
            )
        )
        if response is None:
            return False
        self.usage.add(response, write=True)
        return True

    def _conditional(self, send: Callable[[], Any]) -> Any:
        """``send()`` with retries; None when its condition failed."""

        def once() -> Any:
            try:
                return send()
            except ClientError as exc:
                if error_code(exc) == "ConditionalCheckFailedException":
                    return None
                raise

        return self._requests.call(once)

    def _table_keys(self, reader: Reader) -> Iterator[Key]:
        yield from reader.iterate(PagedSkipMethod(self.info).keys(reader, 0, 1, None))

    def _index_keys(self, reader: Reader) -> Iterator[Key]:
        yield from reader.iterate(IndexMethod(self.info, self).keys(reader, 0, 1, None))

    def mark_many(self, keys: Iterable[Any], progress: Any = None) -> BackfillReport:
        """:meth:`mark` each collection of ``keys``: how many were written, already marked,
        and which cannot be marked (``clashes``, each left as it is). ``progress(written)`` is
        called after each one."""
        report = BackfillReport()
        for key in keys:
            try:
                if self.mark(key):
                    report.written += 1
                else:
                    report.present += 1
            except MarkerClashError as clash:
                report.clashes.append(clash.key)
            if progress is not None:
                progress(report.written)
        return report

    def backfill(
        self, progress: Any = None, *, state_table: str | None = STATE_TABLE
    ) -> BackfillReport:
        """Mark every collection of the table (found with the skip scan). Collections already
        marked cost one rejected put each; a collection whose item at the marker's sort key is
        data is left as it is and reported (``clashes``).

        The start and the end are recorded in ``state_table`` (created if missing; None: not
        recorded), the evidence ``auto`` needs to trust the index (see ``state.vouch``)."""
        store = (
            StateStore(self.client, state_table, deadline=self.deadline) if state_table else None
        )
        if store is not None:
            store.ensure()
            store.update(
                self.table,
                self.name,
                {"backfill_started": store.clock()},
                remove=("backfill_finished",),
            )
        report = self.mark_many(self._table_keys(self._reader()), progress)
        if store is not None:
            store.update(self.table, self.name, {"backfill_finished": store.clock()})
        return report

    def verify(self) -> VerifyReport:
        """Compare the index with the table. Holds both key sets in memory."""
        self.check()
        reader = self._reader()
        table_keys = {_hashable(k) for k in self._table_keys(reader)}
        index_keys = {_hashable(k) for k in self._index_keys(reader)}
        report = VerifyReport(self.table, self.name, len(table_keys), len(index_keys))
        for key in sorted(table_keys - index_keys):
            unmarked = _unhash(key)
            if self._holds_data_at_marker(unmarked):
                report.clashes.append(unmarked)  # it cannot be marked: not "missing"
            else:
                report.missing.append(unmarked)
        # A marker whose collection holds nothing else: the data is gone but the marker stays.
        for key in sorted(index_keys):
            if self._alone(_unhash(key)):
                report.orphans.append(_unhash(key))
        return report

    def _alone(self, key: Key) -> bool:
        pk = self.info.partition_key.name
        response = self._requests.call(
            lambda: self.client.query(
                TableName=self.table,
                KeyConditionExpression="#pk = :pk",
                ExpressionAttributeNames={"#pk": pk},
                ExpressionAttributeValues={":pk": key},
                Limit=2,
                ProjectionExpression="#pk",
                ReturnConsumedCapacity="TOTAL",
            )
        )
        self.usage.add(response, write=False, items=len(response.get("Items", [])))
        return len(response.get("Items", [])) < 2 and "LastEvaluatedKey" not in response

    def _holds_data_at_marker(self, key: Key) -> bool:
        """Whether the collection's item at the marker's key exists and is not a marker."""
        response = self._requests.call(
            lambda: self.client.get_item(
                TableName=self.table,
                Key=self.marker_key(key),
                ReturnConsumedCapacity="TOTAL",
            )
        )
        self.usage.add(response, write=False)
        item = response.get("Item")
        return item is not None and self.attribute not in item

    def repair(self, *, remove_orphans: bool = True) -> VerifyReport:
        """Mark the collections ``verify`` found unmarked, and remove orphaned markers (unless
        ``remove_orphans=False``). What it could not fix is in ``report.unfixed``: collections
        that cannot be marked (``clashes``), and orphans kept."""
        report = self.verify()
        report.unfixed.extend(report.clashes)
        for key in report.missing:
            try:
                self.mark(key)
                report.fixed_missing.append(key)
            except MarkerClashError:  # data written at the marker's key since verify
                report.unfixed.append(key)
        for key in report.orphans:
            if remove_orphans and self.unmark(key):
                report.fixed_orphans.append(key)
            else:  # kept, or not a marker at the marker's key (an item of the index all the same)
                report.unfixed.append(key)
        return report


def _hashable(key: Key) -> tuple[str, Any]:
    kind, raw = next(iter(key.items()))
    return (kind, bytes(raw) if kind == "B" else str(raw))


def _unhash(key: tuple[str, Any]) -> Key:
    return {key[0]: key[1]}
