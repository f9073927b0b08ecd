"""The plain scan: read every item's key, hand each partition key out once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ddbkeys._core.steps import Emit, Flow
from ddbkeys.partition_keys._listing.base import Key, Reader, SegmentMethod
from ddbkeys.partition_keys._listing.recognise import Seen

if TYPE_CHECKING:
    from ddbkeys.partition_keys._listing.base import ScanPage

__all__ = ["PAGE_ITEMS", "ScanMethod", "scan_from"]

#: The most items a Scan page asks for (its Limit), besides DynamoDB's 1 MB, so that a page of
#: the smallest items stays a few MB of Python objects (about 10 MB at this many). A plain Scan
#: has no Limit: where 1 MB holds more items than this (items under 52 bytes, as DynamoDB
#: counts them), it sends more requests than a plain Scan, at the same read units. (It was
#: 5,000: on 220,000 single-item keys of ~150 B, 45 requests where a plain Scan sent 12.)
PAGE_ITEMS = 20_000


class ScanMethod(SegmentMethod):
    """A Scan projecting only the keys (and the marker attribute, when the table has a sort
    key: a collection that holds nothing but ddbkeys' marker is not handed out).

    Cost: the whole table, 0.5 read units per 4 KB (eventually consistent). The cheapest method
    when the table has no sort key, or when item collections are small. Memory stays flat: a
    collection's items come one after another in scan order, so comparing each key with the
    one before is enough to hand each out once.
    """

    name = "scan"

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Flow[None]:
        request = self.first_request(segment, segments, after)
        pk = self.info.partition_key.name
        yield from scan_from(reader, request, pk, previous=after, counts=self.counts)


def scan_from(
    reader: Reader,
    request: ScanPage,
    attribute: str,
    previous: Key | None = None,
    counts: Callable[[Mapping[str, Any]], bool] = lambda item: True,
) -> Flow[None]:
    """A streaming flow: Scan pages from ``request`` to the end, emitting each new value of
    ``attribute`` at the first item of its collection that ``counts`` (by default: any).

    Pages hold at most ``PAGE_ITEMS`` items (besides DynamoDB's 1 MB), so memory stays the same
    whatever the size of the table: a 1 MB page of small items is hundreds of thousands of
    Python objects. The read units are the same; the requests a few more.
    """
    request = {"Limit": PAGE_ITEMS, **request}
    seen = Seen(previous)
    while True:
        page = yield from reader.page(request)
        for key in seen.take(page.get("Items", []), attribute, counts):
            yield Emit(key)
        if "LastEvaluatedKey" not in page:
            return
        request = {**request, "ExclusiveStartKey": page["LastEvaluatedKey"]}
