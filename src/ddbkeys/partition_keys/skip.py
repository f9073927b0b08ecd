"""The skip scan (seed 004): read the first item of a collection, then jump past the rest."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ddbkeys.partition_keys.base import Key, Reader, SegmentMethod
from ddbkeys.schema import TableInfo

__all__ = ["PagedSkipMethod", "SkipMethod"]

READ_UNIT_BYTES = 4096
MAX_PAGE_ITEMS = 1000


class SkipMethod(SegmentMethod):
    """Seed 004's modified ExclusiveStartKey, made robust.

    Each request is a Scan with ``Limit`` items; after it, the next request starts just past the
    last partition key seen, at the greatest value of the sort key's type (found by name in the
    table description), so the rest of that collection is never read. With ``Limit=1`` this is
    the seed's algorithm: 0.5 read units per distinct key (items up to 4 KB). Works for S, N and
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
            "Limit": self.page_items,
            **self.segment_args(segment, segments),
        }
        if after is not None:
            request["ExclusiveStartKey"] = self.start_key(after)
        last: Key | None = after
        state = _Observed()
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

    def adapt(self, request: dict[str, Any], page: dict[str, Any], state: _Observed) -> None:
        """Change the request for the next page (the seed's Limit 1 stays as it is)."""


class PagedSkipMethod(SkipMethod):
    """The skip scan reading up to ``k`` items a request, and jumping past the last key seen.

    A Scan page of up to 4 KB costs 0.5 read units, the same as a page of one item. So ``k`` is
    what fits in 4 KB by the table's average item size (from DescribeTable), and shrinks
    (``k / units``) whenever a page cost more than one read unit. Only when the table reports
    no size does it probe upwards (doubling while pages come back full and cheap), which costs
    at most one half unit too many per segment. Small collections then give several keys per
    request at the price of one: where collections are smaller than a page the jumps skip
    nothing and this reads like a plain scan in 4 KB pages, at a plain scan's cost; where they
    are large it reads one page per collection, like seed 004. ``auto`` does not go on to 1 MB
    scan pages when collections prove small: that would save requests but not read units, and
    one large collection met later would cost up to 128 read units for a single key.
    """

    name = "skip-pages"

    def __init__(self, info: TableInfo) -> None:
        average = info.size_bytes / info.item_count if info.item_count else 0
        self.known = bool(average)
        first = int(READ_UNIT_BYTES // average) if average else 8
        super().__init__(info, page_items=max(1, min(MAX_PAGE_ITEMS, first)))

    def adapt(self, request: dict[str, Any], page: dict[str, Any], state: _Observed) -> None:
        k = int(request["Limit"])
        if self.known:
            state.ceiling = min(state.ceiling, self.page_items)
        consumed = float((page.get("ConsumedCapacity") or {}).get("CapacityUnits", 0.5))
        units = consumed / 0.5  # 4 KB read units of an eventually consistent scan
        if units > 1:
            state.ceiling = max(1, int(k / units))
            request["Limit"] = state.ceiling
        elif len(page.get("Items", [])) >= k and k < state.ceiling:
            request["Limit"] = min(state.ceiling, k * 2)


class _Observed:
    """What one segment has learned so far."""

    def __init__(self) -> None:
        self.ceiling = MAX_PAGE_ITEMS  # the largest page that stayed within one read unit
