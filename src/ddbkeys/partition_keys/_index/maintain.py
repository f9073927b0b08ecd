"""Keeping one collection's marker right: reconcile it with the collection as it is now.

A stream record only says *which* collection changed; what to do is decided from the
collection's current state, read with a strongly consistent Query, never from the record's
kind. So a record handled twice, late, or out of order across shards does no harm: handling it
again reads the same state and does nothing.

The protocol, for one partition key (``reconcile``):

1. Query the collection (consistent, ``Limit=2``, on while its items are all ddbkeys' own): is
   there an item that is neither a marker nor a counter item (data: see
   :mod:`ddbkeys.partition_keys._listing.recognise`), and is the marker among them (with its
   version)? A collection holding only ddbkeys' own items (a counter) is never marked.
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
consistent Query of at most two small items (1 read unit; one more for each further two of
ddbkeys' own items that come before the collection's first data item), a GetItem when the items
read do not settle whether the marker is there, and a write only when the marker must change.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from ddbkeys._core.steps import Flow, delete_item, get_item, query
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import DdbKeysError
from ddbkeys._retry import Deadline
from ddbkeys.partition_keys._index.marker_core import conditional, send, sending
from ddbkeys.partition_keys._index.markers import (
    VERSION_ATTRIBUTE,
    MarkerClashError,
    collection_query,
    read_collection,
    until_data,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        DeleteItemInputTypeDef,
        GetItemOutputTypeDef,
    )

    from ddbkeys.partition_keys._index.index_base import MarkerIndexBase
    from ddbkeys.partition_keys._index.marker_core import MarkerCore

__all__ = [
    "MAX_ROUNDS",
    "Outcome",
    "Step",
    "UnsettledError",
    "next_step",
    "reconcile",
    "reconcile_flow",
]

#: Reads and writes at most, per reconciliation, before giving up (it is tried again later).
MAX_ROUNDS = 8


class UnsettledError(DdbKeysError):
    """A reconciliation gave up: the collection changed under it for ``MAX_ROUNDS`` rounds. A
    maintainer records the collection as pending (see docs/partition-keys/index.md, "What a
    listing proves, and how") and goes on; ``partition_key`` is the collection's key (typed)."""

    def __init__(self, message: str, *, table: str, partition_key: dict[str, Any]) -> None:
        super().__init__(message, table=table)
        self.partition_key = partition_key


class Outcome(enum.Enum):
    """What a reconciliation did to the collection's marker."""

    UNCHANGED = "unchanged"
    MARKED = "marked"
    UNMARKED = "unmarked"
    CLASH = "clash"  # data at the marker's key: the collection cannot be marked


class Step(enum.Enum):
    """What one round of a reconciliation does, from what it read."""

    MARK = "mark"
    UNMARK = "unmark"
    DONE = "done"


def next_step(data: bool, marker: dict[str, Any] | None) -> Step:
    """Data and no marker: mark; a marker and no data: unmark; else the marker is right."""
    if data and marker is None:
        return Step.MARK
    if not data and marker is not None:
        return Step.UNMARK
    return Step.DONE


def reconcile(index: MarkerIndexBase, partition_key: dict[str, Any]) -> Outcome:
    """Make the marker of the collection ``partition_key`` (typed, e.g. ``{"S": "a"}``) match
    the collection as it is now, within ``index``'s deadline (a sync ``MarkerIndex``; see
    :func:`ddbkeys.aio.reconcile` for asyncio). The protocol and why it holds:
    docs/partition-keys/index.md, "Keeping the markers right"."""
    flow = reconcile_flow(index.core, partition_key, index.core.begin())
    return SyncDriver(index.client, index.usage).run(flow)


def reconcile_flow(
    index: MarkerCore, partition_key: dict[str, Any], deadline: Deadline
) -> Flow[Outcome]:
    """:func:`reconcile` as a flow, for any driver."""
    outcome, _held = yield from reconcile_held_flow(index, partition_key, deadline)
    return outcome


def reconcile_held_flow(
    index: MarkerCore, partition_key: dict[str, Any], deadline: Deadline
) -> Flow[tuple[Outcome, bool | None]]:
    """:func:`reconcile_flow`, and whether the collection held data at its last look (None:
    only ddbkeys' own items, a counter): a backfill tells a collection already marked from one
    its application emptied after the scan found it (helper-89 C8: 46 such, said "already
    there" on a fresh index), and from one that holds an id strategy's counter alone
    (helper-101 F4: "1 emptied meanwhile" at every run)."""
    outcome = Outcome.UNCHANGED
    for _ in range(MAX_ROUNDS):
        data, marker, own = yield from _look(index, partition_key, deadline)
        step = next_step(data, marker)
        if step is Step.MARK:
            try:
                wrote = yield from index.mark(partition_key, deadline)
            except MarkerClashError:
                return Outcome.CLASH, True
            if not wrote:
                return outcome, True  # another maintainer marked it meanwhile: right as it is
            outcome = Outcome.MARKED
        elif step is Step.UNMARK:
            assert marker is not None
            if (yield from _unmark_version(index, partition_key, marker, deadline)):
                outcome = Outcome.UNMARKED
        else:
            return outcome, data or (None if own else False)
    raise UnsettledError(
        f"The marker of collection {partition_key!r} of table {index.table!r} did not settle "
        f"after {MAX_ROUNDS} rounds (the collection changes fast); it is tried again with its "
        "next record (a maintainer records it as pending, and listings re-check it).",
        table=index.table,
        partition_key=partition_key,
    )


def _look(
    index: MarkerCore, partition_key: dict[str, Any], deadline: Deadline
) -> Flow[tuple[bool, dict[str, Any] | None, bool]]:
    """Whether the collection holds data, its marker (None when there is none), and whether it
    holds any item that is not its marker (a counter, data)."""
    info = yield from index.table_info(deadline)
    markers = index.markers(info)
    request = collection_query(index.table, partition_key, markers, consistent=True)
    request["ExpressionAttributeNames"] = {
        **request["ExpressionAttributeNames"],
        "#v": VERSION_ATTRIBUTE,
    }
    request["ProjectionExpression"] += ", #v"
    items, more = yield from until_data(  # on past ddbkeys' own items to the first data item
        lambda asked: index.attempts(
            sending(query(asked, count_scanned=True)),
            "reading a collection",
            deadline,
            writes=False,
        ),
        request,
        markers,
    )
    data, marker, look_up = read_collection(items, more, markers)
    if look_up:  # not among the items read: look it up
        marker = yield from _get_marker(index, partition_key, deadline)
    return data, marker, any(not markers.is_marker(item) for item in items)


def _get_marker(
    index: MarkerCore, partition_key: dict[str, Any], deadline: Deadline
) -> Flow[dict[str, Any] | None]:
    info = yield from index.table_info(deadline)
    request = get_item(
        {
            "TableName": index.table,
            "Key": index.marker_key(info, partition_key),
            "ConsistentRead": True,
            "ReturnConsumedCapacity": "TOTAL",
        }
    )
    answer: GetItemOutputTypeDef = yield from index.attempts(
        lambda _: send(request), "reading a marker", deadline, writes=False
    )
    item = answer.get("Item")
    return dict(item) if item is not None and index.markers(info).is_marker(item) else None


def _unmark_version(
    index: MarkerCore, partition_key: dict[str, Any], marker: dict[str, Any], deadline: Deadline
) -> Flow[bool]:
    """Delete the marker if it is still the one read (same version). True if deleted."""
    info = yield from index.table_info(deadline)
    request: DeleteItemInputTypeDef = {
        "TableName": index.table,
        "Key": index.marker_key(info, partition_key),
        "ConditionExpression": "#m = #pk AND attribute_not_exists(#v)",
        "ExpressionAttributeNames": {
            "#m": index.attribute,
            "#pk": info.partition_key.name,
            "#v": VERSION_ATTRIBUTE,
        },
        "ReturnConsumedCapacity": "TOTAL",
    }
    version = marker.get(VERSION_ATTRIBUTE)
    if version is not None:
        request["ConditionExpression"] = "#m = #pk AND #v = :v"
        request["ExpressionAttributeValues"] = {":v": version}
    answer = yield from index.attempts(
        lambda _: conditional(delete_item(request)),
        "removing a marker",
        deadline,
    )
    return answer is not None  # None: written again, or gone, since we read it
