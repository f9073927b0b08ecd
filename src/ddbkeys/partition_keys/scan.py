"""The plain scan: read every item's key, hand each partition key out once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ddbkeys.core.steps import Emit, Flow
from ddbkeys.partition_keys.base import Key, Reader, SegmentMethod

if TYPE_CHECKING:
    from ddbkeys.partition_keys.base import ScanPage

__all__ = ["PAGE_ITEMS", "ScanMethod", "new_keys", "scan_from"]

PAGE_ITEMS = 1000


class ScanMethod(SegmentMethod):
    """A Scan projecting only the partition key.

    Cost: the whole table, 0.5 read units per 4 KB (eventually consistent). The cheapest method
    when the table has no sort key, or when item collections are small. Memory stays flat: a
    collection's items come one after another in scan order, so comparing each key with the
    one before is enough to hand each out once.
    """

    name = "scan"

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Flow[None]:
        request = self.first_request(segment, segments, after)
        yield from scan_from(reader, request, self.info.partition_key.name, previous=after)


def new_keys(
    items: list[dict[str, Any]], attribute: str, previous: Key | None
) -> tuple[list[Key], Key | None]:
    """The values of ``attribute`` in ``items`` that differ from the one before (the first
    from ``previous``), and the last value seen: a collection's items come together."""
    found: list[Key] = []
    for item in items:
        key = item[attribute]
        if key != previous:
            previous = key
            found.append(key)
    return found, previous


def scan_from(
    reader: Reader, request: ScanPage, attribute: str, previous: Key | None = None
) -> Flow[None]:
    """A streaming flow: Scan pages from ``request`` to the end, emitting each new value of
    ``attribute``.

    Pages hold at most ``PAGE_ITEMS`` items (besides DynamoDB's 1 MB), so memory stays the same
    whatever the size of the table: a 1 MB page of small items is hundreds of thousands of
    Python objects. The read units are the same; the requests a few more.
    """
    request = {"Limit": PAGE_ITEMS, **request}
    while True:
        page = yield from reader.page(request)
        found, previous = new_keys(page.get("Items", []), attribute, previous)
        for key in found:
            yield Emit(key)
        if "LastEvaluatedKey" not in page:
            return
        request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}
