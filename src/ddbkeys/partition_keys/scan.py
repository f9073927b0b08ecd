"""The plain scan: read every item's key, hand each partition key out once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ddbkeys.partition_keys.base import Key, Reader, SegmentMethod

__all__ = ["PAGE_ITEMS", "ScanMethod", "scan_from"]

PAGE_ITEMS = 1000


class ScanMethod(SegmentMethod):
    """A Scan projecting only the partition key.

    Cost: the whole table, 0.5 read units per 4 KB (eventually consistent). The cheapest method
    when the table has no sort key, or when item collections are small. Memory stays flat: a
    collection's items come one after another in scan order, so comparing each key with the
    one before is enough to hand each out once.
    """

    name = "scan"

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Iterator[Key]:
        pk = self.info.partition_key.name
        request: dict[str, Any] = {
            "ProjectionExpression": "#pk",
            "ExpressionAttributeNames": {"#pk": pk},
            **self.segment_args(segment, segments),
        }
        if after is not None:
            request["ExclusiveStartKey"] = self.start_key(after)
        yield from scan_from(reader, request, pk, previous=after)


def scan_from(
    reader: Reader, request: dict[str, Any], attribute: str, previous: Key | None = None
) -> Iterator[Key]:
    """Scan pages from ``request`` to the end, handing out each new value of ``attribute``.

    Pages hold at most ``PAGE_ITEMS`` items (besides DynamoDB's 1 MB), so memory stays the same
    whatever the size of the table: a 1 MB page of small items is hundreds of thousands of
    Python objects. The read units are the same; the requests a few more.
    """
    request.setdefault("Limit", PAGE_ITEMS)
    while True:
        page = reader.scan(**request)
        for item in page.get("Items", []):
            key = item[attribute]
            if key != previous:
                previous = key
                yield key
        if "LastEvaluatedKey" not in page:
            return
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
