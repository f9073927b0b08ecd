"""The skip scan (seed 004): read the first item of a collection, then jump past the rest."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ddbkeys.partition_keys.base import Key, Reader, SegmentMethod
from ddbkeys.partition_keys.scan import scan_from
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
            groups: list[int] = []
            for item in items:
                key = item[pk]
                if key != last:
                    last = key
                    groups.append(0)
                    yield key
                if groups:
                    groups[-1] += 1
            if "LastEvaluatedKey" not in page:
                return
            if last is not None and items:
                request["ExclusiveStartKey"] = self.start_key(last)
            else:
                request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
            if self.adapt(request, page, groups, state):
                # Collections proved small: jumping saves nothing; read on with a plain scan.
                request.pop("Limit", None)
                yield from scan_from(reader, request, pk, previous=last)
                return

    def adapt(
        self, request: dict[str, Any], page: dict[str, Any], groups: list[int], state: _Observed
    ) -> bool:
        """Change the request for the next page; True to go on as a plain scan."""
        return False


class PagedSkipMethod(SkipMethod):
    """The skip scan reading up to ``k`` items a request, and jumping past the last key seen.

    A Scan page of up to 4 KB costs 0.5 read units, the same as a page of one item; so ``k``
    starts at what fits 4 KB by the table's average item size, shrinks when a page cost more
    than one read unit (``k / units``), and grows (doubling, up to the last size that fit)
    while pages come back full and cheap. Small collections then give several keys per request
    at the price of one. With ``switch_to_scan`` (used by ``auto``), once the collections seen
    average two items or fewer over eight pages, it reads on as a plain scan: jumping saves
    nothing there and a plain scan needs fewer requests.
    """

    name = "skip-pages"

    def __init__(self, info: TableInfo, *, switch_to_scan: bool = False) -> None:
        average = info.size_bytes / info.item_count if info.item_count else 0
        first = int(READ_UNIT_BYTES // average) if average else 8
        super().__init__(info, page_items=max(1, min(MAX_PAGE_ITEMS, first)))
        self.switch_to_scan = switch_to_scan

    def adapt(
        self, request: dict[str, Any], page: dict[str, Any], groups: list[int], state: _Observed
    ) -> bool:
        k = int(request["Limit"])
        consumed = float((page.get("ConsumedCapacity") or {}).get("CapacityUnits", 0.5))
        units = consumed / 0.5  # 4 KB read units of an eventually consistent scan
        returned = len(page.get("Items", []))
        if units > 1:
            state.ceiling = max(1, int(k / units))
            request["Limit"] = state.ceiling
        elif returned >= k and k < state.ceiling:
            request["Limit"] = min(state.ceiling, k * 2)
        state.pages += 1
        state.complete += len(groups) - 1 if groups else 0
        state.complete_items += sum(groups[:-1])
        return (
            self.switch_to_scan
            and state.pages >= 8
            and state.complete > 0
            and state.complete_items / state.complete <= 2
        )


class _Observed:
    """What one segment has seen so far."""

    def __init__(self) -> None:
        self.ceiling = MAX_PAGE_ITEMS  # the largest page that stayed within one read unit
        self.pages = 0
        self.complete = 0  # collections seen whole inside a page
        self.complete_items = 0
