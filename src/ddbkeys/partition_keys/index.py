"""The sparse marker index (seed 004): one marker item per item collection, projected into a
KEYS_ONLY global secondary index that holds nothing else, so listing scans only that."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys.capacity import Usage
from ddbkeys.errors import (
    ConfigurationError,
    DdbKeysError,
    KeySchemaError,
    error_code,
)
from ddbkeys.partition_keys.base import Key, Reader, SegmentMethod, client_and_table
from ddbkeys.partition_keys.scan import scan_from
from ddbkeys.partition_keys.skip import PagedSkipMethod
from ddbkeys.retry import DEFAULT_DEADLINE
from ddbkeys.schema import TableInfo, describe, key_value

if TYPE_CHECKING:
    pass

__all__ = [
    "DEFAULT_INDEX",
    "DEFAULT_MARKER_ATTRIBUTE",
    "IndexMethod",
    "MarkerIndex",
    "VerifyReport",
]

DEFAULT_INDEX = "ddbkeys-partition-keys"
DEFAULT_MARKER_ATTRIBUTE = "ddbkeys_pk"
#: The marker's sort key, by the sort key's type: the smallest value, out of the way of data.
DEFAULT_MARKER_SORT_KEY: dict[str, dict[str, Any]] = {
    "S": {"S": "#ddbkeys#marker"},
    "N": {"N": "-9.9999999999999999999999999999999999999E+125"},
    "B": {"B": b"\x00"},
}


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

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Iterator[Key]:
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
    """What ``verify`` found: collections without a marker, and markers whose collection holds
    nothing else (``orphans``)."""

    table: str
    index: str
    collections: int = 0
    markers: int = 0
    missing: list[Any] = field(default_factory=list)
    orphans: list[Any] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.missing and not self.orphans


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
        """Put the marker into one collection. True if it was written, False if it was there."""
        key = self.marker_key(partition_key_value)
        item = dict(key, **{self.attribute: key[self.info.partition_key.name]})
        response = self._conditional(
            lambda: self.client.put_item(
                TableName=self.table,
                Item=item,
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": self.info.partition_key.name},
                ReturnConsumedCapacity="TOTAL",
            )
        )
        self.usage.add(response, write=True, items=1 if response is not None else 0)
        return response is not None

    def unmark(self, partition_key_value: str | int | Decimal | bytes | Key) -> bool:
        """Remove one collection's marker. True if there was one."""
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
        yield from PagedSkipMethod(self.info).keys(reader, 0, 1, None)

    def _index_keys(self, reader: Reader) -> Iterator[Key]:
        yield from IndexMethod(self.info, self).keys(reader, 0, 1, None)

    def backfill(self, progress: Any = None) -> int:
        """Mark every collection of the table (found with the skip scan). Returns how many
        markers were written; collections already marked cost one rejected put each."""
        reader = self._reader()
        written = 0
        for key in self._table_keys(reader):
            written += self.mark(key)
            if progress is not None:
                progress(written)
        return written

    def verify(self) -> VerifyReport:
        """Compare the index with the table. Holds both key sets in memory."""
        self.check()
        reader = self._reader()
        table_keys = {_hashable(k) for k in self._table_keys(reader)}
        index_keys = {_hashable(k) for k in self._index_keys(reader)}
        report = VerifyReport(self.table, self.name, len(table_keys), len(index_keys))
        report.missing = [_unhash(k) for k in sorted(table_keys - index_keys)]
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

    def repair(self, *, remove_orphans: bool = True) -> VerifyReport:
        """Mark the collections ``verify`` found unmarked (and remove orphaned markers)."""
        report = self.verify()
        for key in report.missing:
            self.mark(key)
        if remove_orphans:
            for key in report.orphans:
                self.unmark(key)
        return report


def _hashable(key: Key) -> tuple[str, Any]:
    kind, raw = next(iter(key.items()))
    return (kind, bytes(raw) if kind == "B" else str(raw))


def _unhash(key: tuple[str, Any]) -> Key:
    return {key[0]: key[1]}
