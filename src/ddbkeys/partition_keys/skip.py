"""The skip scan (the AWS post on distinct partition keys): read the first item of a collection,
then jump past the rest."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from ddbkeys.partition_keys.base import Key, Reader, SegmentMethod
from ddbkeys.partition_keys.pages import PageSize
from ddbkeys.schema import TableInfo

__all__ = ["PagedSkipMethod", "SkipMethod"]


class SkipMethod(SegmentMethod):
    """The article's modified ExclusiveStartKey, made robust.

    Each request is a Scan with ``Limit`` items; after it, the next request starts just past the
    last partition key seen, at the greatest value of the sort key's type (found by name in the
    table description), so the rest of that collection is never read. With ``Limit=1`` this is
    the article's algorithm: 0.5 read units per distinct key (items up to 4 KB). Works for S, N and
    B keys under any attribute names, for collections whose sort key already holds the greatest
    value, and for numbers boto3's Decimal context cannot hold (the low-level client keeps them
    as text). Needs a sort key.
    """

    name = "skip"

    def __init__(self, info: TableInfo, page_items: int = 1) -> None:
        super().__init__(info)
        self.page_items = page_items

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Iterator[Key]:
        pk = self.info.partition_key.name
        request: dict[str, Any] = {
            "ProjectionExpression": "#pk",
            "ExpressionAttributeNames": {"#pk": pk},
            **self.segment_args(segment, segments),
        }
        if after is not None:
            request["ExclusiveStartKey"] = self.start_key(after)
        last: Key | None = after
        state = self.start_state()
        request["Limit"] = self.first_limit(state)
        while True:
            page = reader.scan(**request)
            items = page.get("Items", [])
            for item in items:
                key = item[pk]
                if key != last:
                    last = key
                    yield key
            if "LastEvaluatedKey" not in page:
                return
            if last is not None and items:
                request["ExclusiveStartKey"] = self.start_key(last)
            else:
                request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
            self.adapt(request, page, state)

    def start_state(self) -> Any:
        """What one segment learns from its pages (nothing, for the article's Limit 1)."""
        return None

    def first_limit(self, state: Any) -> int:
        """The Limit of a segment's first page."""
        return self.page_items

    def adapt(self, request: dict[str, Any], page: dict[str, Any], state: Any) -> None:
        """Change the request for the next page (the article's Limit 1 stays as it is)."""


class PagedSkipMethod(SkipMethod):
    """The skip scan reading up to ``k`` items a request, and jumping past the last key seen.

    A Scan page of up to 4 KB costs 0.5 read units, the same as a page of one item. So ``k`` is
    kept near what fits in the page's target, learning from what each page cost
    (``pages.PageSize``). Where collections prove small, the target grows from 4 KB towards
    256 KB, so rounding up to the next 4 KB costs less and requests are few: the listing then
    reads like a plain scan, at about its cost and speed. The first page whose last collection
    fills 4 KB or more brings pages back to 4 KB, so where collections are large it reads one
    page per collection, like the article's skip scan, and never reads a large collection's tail.
    """

    name = "skip-pages"

    def __init__(self, info: TableInfo) -> None:
        self.average = info.size_bytes / info.item_count if info.item_count else 0.0
        super().__init__(info, page_items=PageSize.for_items_of(self.average).limit)
        # One controller for every segment of the listing: segments read in parallel learn
        # together (each alone would pay the ramp up to large pages once per segment).
        self._pages = PageSize.for_items_of(self.average)
        self._lock = threading.Lock()

    def start_state(self) -> PageSize:
        return self._pages

    def first_limit(self, state: PageSize) -> int:
        with self._lock:  # a segment that starts late goes on from what the others learned
            return state.limit

    def adapt(self, request: dict[str, Any], page: dict[str, Any], state: PageSize) -> None:
        consumed = float((page.get("ConsumedCapacity") or {}).get("CapacityUnits", 0.5))
        items = page.get("Items", [])
        pk = self.info.partition_key.name
        asked = int(request.get("Limit", self.page_items))
        with self._lock:
            request["Limit"] = state.observe(
                len(items), consumed / 0.5, tail_items(items, pk), asked=asked
            )


def tail_items(items: list[dict[str, Any]], pk: str) -> int:
    """How many of ``items``, at the end, share the last item's partition key."""
    if not items:
        return 0
    last = items[-1].get(pk)
    count = 0
    for item in reversed(items):
        if item.get(pk) != last:
            break
        count += 1
    return count
