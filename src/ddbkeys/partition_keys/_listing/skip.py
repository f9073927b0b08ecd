"""The skip scan (the AWS post on distinct partition keys): read the first item of a collection,
then jump past the rest."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ddbkeys._capacity import item_size
from ddbkeys._core.steps import Emit, Flow
from ddbkeys._errors import ServiceError
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._listing.base import Key, Reader, SegmentMethod
from ddbkeys.partition_keys._listing.notes import how_it_read
from ddbkeys.partition_keys._listing.pages import PageSize
from ddbkeys.partition_keys._listing.reading import Reading
from ddbkeys.partition_keys._listing.recognise import Markers, Seen
from ddbkeys.partition_keys._listing.scan import PAGE_ITEMS as SCAN_PAGE_ITEMS

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import ScanInputTypeDef

    from ddbkeys.partition_keys._listing.base import ScanPage

__all__ = ["PagedSkipMethod", "SkipMethod"]

#: A page's Scan: typed (a listing's own, or the marker index's ScanInputTypeDef, with its
#: table), or a plain dict (a caller's).
_Request = TypeVar("_Request", "ScanPage", "ScanInputTypeDef", dict[str, Any])


class SkipMethod(SegmentMethod):
    """The article's modified ExclusiveStartKey, made robust.

    Each request is a Scan with ``Limit`` items; after it, the next request starts just past the
    last partition key seen, at the greatest value of the sort key's type (found by name in the
    table description), so the rest of that collection is never read. With ``Limit=1`` this is
    the article's algorithm: 0.5 read units per distinct key (items up to 4 KB). Works for S, N and
    B keys under any attribute names, for collections whose sort key already holds the greatest
    value, and for numbers boto3's Decimal context cannot hold (the low-level client keeps them
    as text). Needs a sort key.

    A collection whose first item is ddbkeys' own (its marker, a counter item: see
    :mod:`~ddbkeys.partition_keys._listing.recognise`) needs a look at its next item (the next
    request starts just after that item, not past the collection): one request more for each
    marked collection whose marker sorts first (the default marker does for every number but
    those below -(10**38 - 1), every binary and most strings: those after ``#``), and for each
    whose first item is a counter (a collection sequence's, at sort key 0) and that holds more;
    none for a collection left with nothing but ddbkeys' own
    items, which is not handed out (the request after its last reads the next collection's
    first item), nor with ``own_items``, where every item counts.
    """

    name = "skip"

    def __init__(
        self, info: TableInfo, page_items: int = 1, markers: Markers | None = None
    ) -> None:
        super().__init__(info, markers)
        self.page_items = page_items

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Flow[None]:
        pk = self.info.partition_key.name
        state = self.start_state()
        request = self.first_request(segment, segments, after)
        request["Limit"] = self.first_limit(state, segments)
        self.project(request, state)
        seen = Seen(after)
        while True:
            try:
                page = yield from reader.page(request)
            except ServiceError as error:
                if not self.refused(request, error):
                    raise
                continue  # (the same page again, as refused() set it)
            for key in seen.take(page.get("Items", []), pk, self.counts):
                yield Emit(key)
            following = self.next_request(request, page, seen, state)
            if following is None:
                return
            request = following

    def next_request(
        self, request: _Request, page: Mapping[str, Any], seen: Seen, state: Any
    ) -> _Request | None:
        """The Scan after ``page`` (None: the segment is read to its end). It starts just past
        the collection of the last item read when the page held items, that collection was
        handed out and the method skips it (:meth:`adapt`); else where DynamoDB stopped: after a
        lone marker that ended the page (its collection's next item says whether it holds
        data), where no item came back (DynamoDB stopped short), or where a read through goes
        on."""
        if "LastEvaluatedKey" not in page:
            self.finish(request, page, state, seen)
            return None
        following = request.copy()
        skip = self.adapt(following, page, state, seen)
        if skip and seen.last is not None and seen.handed and page.get("Items"):
            following["ExclusiveStartKey"] = self.start_key(seen.last)
        else:
            following["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return following

    def start_state(self) -> Any:
        """What one segment learns from its pages (nothing, for the article's Limit 1)."""
        return None

    def first_limit(self, state: Any, segments: int = 1) -> int:
        """The Limit of the first page of one of ``segments``."""
        return self.page_items

    def finish(self, request: _Request, page: Mapping[str, Any], state: Any, seen: Seen) -> None:
        """The segment was read to its end, ``page`` (asked by ``request``) its last."""

    def refused(self, request: _Request, error: ServiceError) -> bool:
        """Whether a page DynamoDB refused is asked again, changed (none, here)."""
        return False

    def project(self, request: _Request, state: Any) -> None:
        """Set what the next page projects (the keys and what tells ddbkeys' own items apart,
        as :meth:`first_request` says, for the article's Limit 1)."""

    def adapt(self, request: _Request, page: Mapping[str, Any], state: Any, seen: Seen) -> bool:
        """Change the request for the next page (the article's Limit 1 stays as it is), and say
        whether it skips past the page's last collection (the article's always does); ``seen``
        is where the reading stands after ``page``."""
        return True


class PagedSkipMethod(SkipMethod):
    """The skip scan reading up to ``k`` items a request, and jumping past the last key seen.

    A Scan page of up to 4 KB costs 0.5 read units, the same as a page of one item. So ``k`` is
    kept near what fits in the page's target, learning from what each page cost
    (``pages.PageSize``). Where collections prove small, the target grows from 4 KB towards
    256 KB, so rounding up to the next 4 KB costs less and requests are few: the listing then
    reads like a plain scan, at about its cost and speed. The first page whose last collection
    fills 4 KB or more brings pages back to 4 KB, so where collections are large it reads one
    page per collection, like the article's skip scan, and never reads a large collection's tail.
    Where skipping saves little (collections that end about where a small page does, or item
    sizes so varied that small pages pay the rounding more often than skips save), a trial of
    reading on as a scan shows it, and the listing goes on as a scan from where it stands, in
    scan-sized pages (DynamoDB's 1 MB), while skipping would save at most about 5%
    (``pages.PageSize``); :meth:`note` says so. Where collections are led by ddbkeys' own
    items (a marker that sorts first), its skipping pages ask for as many items more, so a
    marker is read with its collection's first item, not in a request of its own
    (``reading.Reading``).
    """

    name = "skip-pages"

    def __init__(self, info: TableInfo, markers: Markers | None = None) -> None:
        self.average = info.size_bytes / info.item_count if info.item_count else 0.0
        start = PageSize.for_items_of(self.average, info.size_bytes)
        super().__init__(info, start.limit, markers)
        # One controller for every segment of the listing: segments read in parallel (threads
        # or tasks) learn together (each alone would pay the ramp up to large pages once per
        # segment). The lock is held across no wait.
        self._pages = start
        self._lock = threading.Lock()
        self._projection: tuple[str, Mapping[str, str]] | None = None  # of the keys alone
        self._denied = False  # a page of whole items was refused: keys alone from here

    def first_request(self, segment: int, segments: int, after: Key | None) -> ScanPage:
        request = super().first_request(segment, segments, after)
        self._projection = request["ProjectionExpression"], request["ExpressionAttributeNames"]
        return request

    def start_state(self) -> Reading:
        return Reading(self._pages)

    def first_limit(self, state: Reading, segments: int = 1) -> int:
        with self._lock:  # a segment that starts late goes on from what the others learned
            limit = state.first_limit(segments)
        return SCAN_PAGE_ITEMS if limit is None else min(SCAN_PAGE_ITEMS, limit)

    def _page(
        self, request: _Request, page: Mapping[str, Any], state: Reading
    ) -> tuple[list[Any], float, int | None, int, list[int] | None]:
        """What ``Reading`` takes of a page: its items' partition keys, its 4 KB units, the
        Limit it asked for (None: scan-sized), how many of ddbkeys' own items led it, and its
        items' sizes where it asked for whole items (``Reading.whole_items``)."""
        pk = self.info.partition_key.name
        items = page.get("Items", [])
        keys = [item.get(pk) for item in items]
        # (a scan-sized page went out with a scan's Limit: the pages asked it scan-sized)
        asked = None if state.asked is None else request.get("Limit")
        lead = 0  # ddbkeys' own items that led the page's first collection
        # (``yours``, not ``counts``: the page's keys are handed out by ``Seen.take``, which
        # notes a stray once; helper-94 F3: skip-pages said 11 strays for 10 keys)
        while lead < len(items) and keys[lead] == keys[0] and not self.yours(items[lead]):
            lead += 1
        whole = self._projection is not None and "ProjectionExpression" not in request
        sizes = [item_size(item) for item in items] if whole else None
        return keys, _consumed(page) / 0.5, asked, lead, sizes

    def adapt(self, request: _Request, page: Mapping[str, Any], state: Reading, seen: Seen) -> bool:
        keys, units, asked, lead, sizes = self._page(request, page, state)
        with self._lock:
            limit, skip = state.after(
                keys, units, asked=asked, lead=lead, unhanded=not seen.handed, sizes=sizes
            )
        # Read on as a scan: DynamoDB's 1 MB pages, of at most a scan's ``PAGE_ITEMS`` items
        # (as ddbkeys' scan asks: a page of the smallest items stays a few MB of Python objects;
        # and DynamoDB Local serves a Scan without a Limit several times slower, 1.0-1.6 s a
        # page of 7,826 items of ~150 B against 0.2-0.4 s with one).
        request["Limit"] = SCAN_PAGE_ITEMS if limit is None else min(SCAN_PAGE_ITEMS, limit)
        self.project(request, state)
        return skip

    def project(self, request: _Request, state: Reading) -> None:
        """The keys alone, or whole items (the same read units) where their sizes may still
        turn the judgement of reading on (``Reading.whole_items``): they say what skipping
        would have cost the page's collections."""
        with self._lock:
            whole = state.whole_items and not self._denied
        if self._projection is None:
            return
        if whole:
            request.pop("ProjectionExpression", None)
            request.pop("ExpressionAttributeNames", None)
        else:
            request["ProjectionExpression"], request["ExpressionAttributeNames"] = self._projection

    def refused(self, request: _Request, error: ServiceError) -> bool:
        """A page of whole items that these credentials may not read (an IAM policy that
        allows some attributes alone: ``AccessDeniedException``) is asked again for the keys
        alone, as every page from here is: whole items only sharpen the judgement of reading
        on."""
        if error.code != "AccessDeniedException" or self._projection is None:
            return False
        if "ProjectionExpression" in request:
            return False
        self._denied = True
        request["ProjectionExpression"], request["ExpressionAttributeNames"] = self._projection
        return True

    def note(self) -> str:
        """Where it went on as a scan: after how many keys, and why."""
        with self._lock:
            return how_it_read(self._pages)

    def finish(
        self, request: _Request, page: Mapping[str, Any], state: Reading, seen: Seen
    ) -> None:
        keys, units, asked, lead, sizes = self._page(request, page, state)
        with self._lock:
            state.end(keys, units, asked, lead=lead, unhanded=not seen.handed, sizes=sizes)


def _consumed(page: Mapping[str, Any]) -> float:
    """The read units a page cost (0.5 where DynamoDB did not say)."""
    return float((page.get("ConsumedCapacity") or {}).get("CapacityUnits", 0.5))
