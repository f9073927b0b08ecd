"""Listing the keys from the marker index: a scan of its GSI that hands out markers only
(see :class:`IndexMethod`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ddbkeys._core.steps import Flow
from ddbkeys._schema import TableInfo
from ddbkeys.partition_keys._index.marker_core import MarkerCore
from ddbkeys.partition_keys._listing.base import Key, Reader, SegmentMethod
from ddbkeys.partition_keys._listing.scan import scan_from

if TYPE_CHECKING:
    from ddbkeys.partition_keys._listing.base import ScanPage


__all__ = ["IndexMethod"]


class IndexMethod(SegmentMethod):
    """List the keys by scanning the marker index.

    Only markers are handed out: an item of the index whose marker attribute is not its own
    partition key (data that happens to hold the attribute) lists nothing. The index is
    KEYS_ONLY, so its items are the table's keys and the marker attribute, all projected.

    Cost: 0.5 read units per 4 KB of the index, which holds one small item (about 100 bytes)
    per collection: roughly 0.5 units per 40 keys. Needs the index to be complete: see
    :class:`MarkerIndex` (``backfill``, ``verify``, ``repair``).
    """

    name = "index"

    def __init__(self, info: TableInfo, index: MarkerCore) -> None:
        super().__init__(info, index.markers(info))
        self.index = index

    def start_key(self, after: Key) -> dict[str, Any]:
        key: dict[str, Any] = {self.index.attribute: after, self.info.partition_key.name: after}
        if self.info.sort_key is not None:
            key[self.info.sort_key.name] = self.index.sort_key(self.info)
        return key

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Flow[None]:
        markers = self.index.markers(self.info)
        projection, names = markers.projection()
        request: ScanPage = {
            "IndexName": self.index.name,
            "ProjectionExpression": projection,
            "ExpressionAttributeNames": names,
            **self.segment_args(segment, segments),
        }
        if after is not None:
            request["ExclusiveStartKey"] = self.start_key(after)
        pk = self.info.partition_key.name
        yield from scan_from(reader, request, pk, previous=after, counts=markers.is_marker)

    def scanned_bytes(self) -> int:
        return self.info.index_sizes.get(self.index.name, 0)
