"""Keeping one collection's marker right: reconcile it with the collection as it is now.

A stream record only says *which* collection changed; what to do is decided from the
collection's current state, read with a strongly consistent Query, never from the record's
kind. So a record handled twice, late, or out of order across shards does no harm: handling it
again reads the same state and does nothing.

The protocol, for one partition key (``reconcile``):

1. Query the collection (consistent, ``Limit=2``): is there an item that is not a marker (data),
   and is the marker among them (with its version)?
2. Data and no marker: put the marker (``attribute_not_exists``; a new version). If the put
   finds an item there, it is either a marker another maintainer just wrote (done) or data at
   the marker's key (a clash: reported, nothing written).
3. A marker and no data: delete it, on the condition that its version is the one read in step 1
   (a marker written again since is not deleted).
4. After a write, go back to 1: the state may have changed between the read and the write (an
   item added just before our delete, or the last item removed just before our put), and only a
   read *after* our own write can show that the marker is right. The loop ends at the first read
   that needs no write.

Why it holds: take the last marker write W for a collection. Its writer reads the collection
after W and finds it consistent with the marker, or writes again (then W was not the last). So
after the last write, a read has confirmed the marker matches the data as of that read; any
later change to the data has a stream record of its own, whose handling starts again at 1. A
non-empty collection is therefore never *left* without a marker, and an empty one keeps its
marker no longer than until its next record is handled. Cost per record handled: one
consistent Query of at most two small items (1 read unit), a GetItem when the first two items
do not settle whether the marker is there, and a write only when the marker must change.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ddbkeys.errors import DdbKeysError, error_code
from ddbkeys.partition_keys.index import VERSION_ATTRIBUTE, MarkerClashError

if TYPE_CHECKING:
    from ddbkeys.partition_keys.index import MarkerIndex

__all__ = ["MAX_ROUNDS", "Outcome", "reconcile"]

#: Reads and writes at most, per reconciliation, before giving up (it is tried again later).
MAX_ROUNDS = 8


class Outcome(enum.Enum):
    """What a reconciliation did to the collection's marker."""

    UNCHANGED = "unchanged"
    MARKED = "marked"
    UNMARKED = "unmarked"
    CLASH = "clash"  # data at the marker's key: the collection cannot be marked


def reconcile(index: MarkerIndex, partition_key: dict[str, Any]) -> Outcome:
    """Make the marker of the collection ``partition_key`` (typed, e.g. ``{"S": "a"}``) match
    the collection as it is now. See the module's docstring for the protocol."""
    outcome = Outcome.UNCHANGED
    for _ in range(MAX_ROUNDS):
        data, marker = _look(index, partition_key)
        if data and marker is None:
            try:
                wrote = index.mark(partition_key)
            except MarkerClashError:
                return Outcome.CLASH
            if not wrote:
                return outcome  # another maintainer marked it meanwhile: right as it is
            outcome = Outcome.MARKED
        elif not data and marker is not None:
            if _unmark_version(index, partition_key, marker):
                outcome = Outcome.UNMARKED
        else:
            return outcome
    raise DdbKeysError(
        f"The marker of collection {partition_key!r} of table {index.table!r} did not settle "
        f"after {MAX_ROUNDS} rounds (the collection changes fast); it is tried again with its "
        "next record.",
        table=index.table,
    )


def _look(index: MarkerIndex, partition_key: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
    """Whether the collection holds data, and its marker (None when there is none)."""
    pk, sk = index.info.partition_key, index.info.sort_key
    assert sk is not None
    response = index.call(
        lambda: index.client.query(
            TableName=index.table,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={
                "#pk": pk.name,
                "#sk": sk.name,
                "#m": index.attribute,
                "#v": VERSION_ATTRIBUTE,
            },
            ExpressionAttributeValues={":pk": partition_key},
            ProjectionExpression="#sk, #m, #v",
            ConsistentRead=True,
            Limit=2,
            ReturnConsumedCapacity="TOTAL",
        )
    )
    items = response.get("Items", [])
    index.usage.add(response, write=False, items=len(items))
    data = any(index.attribute not in item for item in items)
    marker = next(
        (
            item
            for item in items
            if index.attribute in item and item.get(sk.name) == index.marker_sort_key
        ),
        None,
    )
    if data and marker is None and (len(items) == 2 or "LastEvaluatedKey" in response):
        marker = _get_marker(index, partition_key)  # not among the first two: look it up
    return data, marker


def _get_marker(index: MarkerIndex, partition_key: dict[str, Any]) -> dict[str, Any] | None:
    response = index.call(
        lambda: index.client.get_item(
            TableName=index.table,
            Key=index.marker_key(partition_key),
            ConsistentRead=True,
            ReturnConsumedCapacity="TOTAL",
        )
    )
    index.usage.add(response, write=False)
    item = response.get("Item")
    return dict(item) if item is not None and index.attribute in item else None


def _unmark_version(
    index: MarkerIndex, partition_key: dict[str, Any], marker: dict[str, Any]
) -> bool:
    """Delete the marker if it is still the one read (same version). True if deleted."""
    version = marker.get(VERSION_ATTRIBUTE)
    names = {"#m": index.attribute, "#v": VERSION_ATTRIBUTE}
    if version is None:
        condition = "attribute_exists(#m) AND attribute_not_exists(#v)"
        values: dict[str, Any] = {}
    else:
        condition = "attribute_exists(#m) AND #v = :v"
        values = {":v": version}

    def delete() -> Any:
        request: dict[str, Any] = {
            "TableName": index.table,
            "Key": index.marker_key(partition_key),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ReturnConsumedCapacity": "TOTAL",
        }
        if values:
            request["ExpressionAttributeValues"] = values
        try:
            return index.client.delete_item(**request)
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return None  # written again, or gone, since we read it
            raise

    response = index.call(delete)
    if response is None:
        return False
    index.usage.add(response, write=True)
    return True
