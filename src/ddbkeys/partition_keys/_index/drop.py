"""``index drop``: take the marker index away, and its markers with it (helper-89 C1: ``index
create`` warned that the index would cost more than the scan it replaces and sent the user to
the AWS CLI, which removes the GSI and leaves a marker in every collection, read by every later
scan of the table, ddbkeys' own aside).

Only a marker index is dropped (KEYS_ONLY, keyed on the marker attribute, as every index
command checks). The index goes first; then one consistent Scan of the table finds the markers
(an item at the markers' sort key whose marker attribute holds its own partition key: nothing
else), and each is deleted on that same condition, so that an item of yours that came to the
marker's key since is never removed.

A maintainer still running would undo it (helper-94 F4, F10): each marker deleted is a record
of the table's stream, and a follower marks that collection again; a backfill marks what it
read. So a maintainer describes the table again before it writes a marker once its last look
is ``recheck`` seconds old (``marker_core.RECHECK``), and stops where the index is gone or
DELETING; and the drop lets that pass (and a second more) between deleting the index and
removing the markers. A marker put answered later than that after the look it was sent on (held
in the network: helper-101 F6) may have landed after the sweep: its maintainer describes the
table again, and takes that marker back where the index is gone. This flow reads no record: a
caller gives the index's marker settings; ``index drop`` run again removes what is left (a
maintainer killed between such a put and its look)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from ddbkeys._attributes import show_value
from ddbkeys._core.steps import Flow, Pause, scan, update_table
from ddbkeys._entity import ENTITY_ATTRIBUTE, MARKER
from ddbkeys._errors import ConfigurationError, DdbKeysError, amend
from ddbkeys._retry import Deadline
from ddbkeys.partition_keys._index.create import until_status
from ddbkeys.partition_keys._index.marker_core import send, sending
from ddbkeys.partition_keys._index.markers import (
    DEFAULT_INDEX,
    DEFAULT_MARKER_ATTRIBUTE,
    check_index,
    index_status,
    marker_shaped,
)
from ddbkeys.partition_keys._listing.recognise import Markers, Strays

if TYPE_CHECKING:
    from ddbkeys._schema import TableInfo
    from ddbkeys.partition_keys._index.marker_core import MarkerCore
    from ddbkeys.partition_keys._proof.evidence import Evidence

__all__ = ["Dropped", "IndexDropWarning", "drop_flow", "warn_left"]


class IndexDropWarning(UserWarning):
    """A drop (``MarkerIndex.drop``) found items that say they are ddbkeys' markers
    (``ddbkeys_type`` "marker") but are not the markers of the settings it was given: most
    likely an index made with another ``marker_sort_key`` or ``marker_attribute`` (its record
    in another state table). They are left in place, as data (helper-95 F2: they were left
    unsaid, exit 0); the line names the first one's sort key and what to pass."""


class Dropped(NamedTuple):
    """What a drop did: the markers ``removed``, and the items that say they are markers but
    are none of its settings' (``left``)."""

    removed: int
    left: Strays
    markers: Markers | None

    def note(self, table: str) -> str:
        """What is said of ``left`` (empty: nothing)."""
        if not self.left.count or self.markers is None:
            return ""
        first = self.left.sort_value
        many = "s say they are" if self.left.count != 1 else " says it is"
        return (
            f"Table {table!r}: {self.left.count:,} item{many} ddbkeys' marker (ddbkeys_type) but "
            f"not one of these settings' (sort key {show_value(self.markers.sort_value)}, "
            f"attribute {self.markers.attribute!r}), the first at sort key "
            f"{show_value(first)}: the markers of an index made with other settings, left in "
            f"place. Drop again with --marker-sort-key {show_value(first)} to remove them "
            "(in Python marker_sort_key=; and that index's --marker-attribute, if another)."
        )


def warn_left(dropped: Dropped, table: str) -> int:
    """An :class:`IndexDropWarning` where ``dropped`` left items that say they are markers
    (naming the line of your code that called the drop); the markers removed."""
    note = dropped.note(table)
    if note:
        from ddbkeys._caller import outside  # noqa: PLC0415 (only where it warns)

        warnings.warn(note, IndexDropWarning, stacklevel=outside())
    return dropped.removed


def drop_flow(
    core: MarkerCore, progress: Callable[[int], None] | None, wait: bool, timeout: float
) -> Flow[Dropped]:
    """Delete the index (where it is there), then, once a maintainer's last look at it is
    stale (``core.recheck`` seconds), every marker of the table: how many were removed. With
    ``wait``, until the table no longer lists the index (``timeout`` seconds at most: the
    service takes minutes to delete one). Items that say they are markers but are none of
    these settings' are left, and counted."""
    deadline = core.begin()
    yield from core.describe(deadline)
    info = yield from core.table_info(deadline)
    keyed = info.index_hash_keys.get(core.name)
    if core.attribute_given is None and keyed is not None:
        core.attribute = keyed  # (the index's own marker attribute, as a maintainer takes it)
    status = index_status(info, core.name)
    if status is None:
        _no_other_index(core, info)
    else:  # a marker index only, as every index command (helper-94 F7: any GSI of that name)
        check_index(info, core.name, core.attribute, active=False)
    if status not in (None, "DELETING"):
        yield from _delete_index(core, deadline)
    # A maintainer may have looked at the index ``recheck`` seconds ago: waited also where it
    # is gone already (helper-98 F1: a drop killed in its wait and run again, or a GSI
    # deleted with the console just before, did not wait; a follower put 188 markers back).
    try:
        yield Pause(core.recheck + 1.0, core.retry.sleep)
        yield from core.describe()
        _not_made_again(core, index_status((yield from core.table_info()), core.name), None)
        dropped = yield from _remove_markers(core, info, progress)
    except DdbKeysError as exc:
        if not isinstance(exc, ConfigurationError):
            _unfinished(exc, core)
        raise
    removed = dropped.removed
    if wait:
        yield from until_status(
            core,
            lambda now: _not_made_again(core, now, removed) and now is None,
            timeout,
            f"Index {core.name!r} of table {core.table!r} is still DELETING after {timeout:.0f} "
            f"s ({removed} marker(s) removed): it goes on by itself.",
        )
    return dropped


def _unfinished(exc: DdbKeysError, core: MarkerCore) -> None:
    """``exc``, which stopped the drop once the index was deleted, says what it left and what
    to do (helper-101 F2: "Gave up on DescribeTable ...", and nothing said that the index was
    gone and every marker left; `index status` then advised to create the index)."""
    amend(
        exc,
        f"Index {core.name!r} of table {core.table!r} is deleted, but markers may be left in "
        "the table: run `index drop` again to remove them.",
    )


def index_dropped(
    info: TableInfo, index: str, saved: Evidence | None, state_table: str, attribute: str
) -> None:
    """A ConfigurationError (``index status``'s, ``index verify``'s) where ``info``'s table has
    no ``index`` but its record (``saved``, in ``state_table``) is there, not older than the
    table (helper-103 F1: a table deleted and made again is another): it was dropped, and markers
    may be left (a drop stopped before its end, a maintainer killed between a late put and its
    take-back: helper-102 F2, where both said "has no index ... Create it", as of a table that
    never had one)."""
    if saved is None or index_status(info, index) is not None or _older(saved, info.created):
        return
    table = info.name
    own = "" if index == DEFAULT_INDEX else f" --index-name {index}"  # (helper-103 F4)
    own += "" if attribute == DEFAULT_MARKER_ATTRIBUTE else f" --marker-attribute {attribute}"
    raise ConfigurationError(
        f"Table {table!r} has no index {index!r}, but state table {state_table!r} holds its "
        "record: it was dropped (or deleted another way). Markers are left only where a drop "
        "stopped before its end or a maintainer wrote one late: `ddbkeys partition-keys index "
        f"drop -t {table}{own} --yes` removes them (run again, it removes what is left); "
        f"`ddbkeys partition-keys index create -t {table}{own}` makes the index again.",
        table=table,
    )


def _older(saved: Evidence, created: str) -> bool:
    """Whether every time ``saved`` holds (its backfill's, its shards' marks) is before the
    table's creation (``created``: seconds or ISO 8601; unknown: not older)."""
    try:  # (seconds, in raw JSON; ISO 8601 from botocore's datetime)
        born = float(created)
    except ValueError:
        try:
            born = datetime.fromisoformat(created).timestamp()
        except ValueError:
            return False
    backfill = saved.backfill
    times = [t for _, t in (m for mark in saved.shards.values() for m in mark.marks)]
    if backfill is not None:
        times += [backfill.started, backfill.finished or 0.0, backfill.alive or 0.0]
    return bool(times) and max(times) < born


def _not_made_again(core: MarkerCore, status: str | None, removed: int | None) -> bool:
    """True where the index is gone or DELETING; else it was made again during the drop
    (`index create` in its wait): a ConfigurationError, before any marker is removed
    (``removed`` None) or after (helper-100 F1: the drop removed the new index's markers,
    then waited 600 s for it to go and said it was "still DELETING")."""
    if status in (None, "DELETING"):
        return True
    done = (
        "no marker was removed"
        if removed is None
        else f"{removed} marker(s) removed: run `index backfill` for it"
    )
    raise ConfigurationError(
        f"Index {core.name!r} of table {core.table!r} was made again during the drop (it is "
        f"{status}): {done}; run `index drop` again to take it away.",
        table=core.table,
    )


def _no_other_index(core: MarkerCore, info: TableInfo) -> None:
    """Where the index named is not there, a ConfigurationError if another index of the table
    is a marker index (KEYS_ONLY, keyed on the marker attribute alone: helper-95 F5, not any
    index on it): the marker index under another name, whose markers the drop would remove and
    leave it in place, empty (helper-94 F9)."""
    others = sorted(n for n in info.index_hash_keys if marker_shaped(info, n, core.attribute))
    if others:
        raise ConfigurationError(
            f"Table {core.table!r} has no index {core.name!r}, but {others[0]!r} is keyed on the "
            f"marker attribute {core.attribute!r}: name that index to drop it. Nothing was "
            "changed.",
            table=core.table,
        )


def _delete_index(core: MarkerCore, deadline: Deadline) -> Flow[None]:
    """One UpdateTable deleting the index; where it is refused, the table described again: an
    index gone or DELETING (another's drop, or this one's try whose answer was lost) is what
    was asked."""
    request: Any = {
        "TableName": core.table,
        "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": core.name}}],
    }
    try:
        yield from core.attempts(
            lambda _: send(update_table(request)),
            f"UpdateTable (deleting index {core.name!r})",
            deadline,
        )
    except DdbKeysError:
        yield from core.describe(deadline)
        if index_status((yield from core.table_info(deadline)), core.name) not in (
            None,
            "DELETING",
        ):
            raise


def _remove_markers(
    core: MarkerCore, info: TableInfo, progress: Callable[[int], None] | None
) -> Flow[Dropped]:
    """Every marker the table holds, found by a consistent Scan and deleted on the condition
    that it still is one; and the items that say they are markers but are none of these
    settings' (``ddbkeys_type``), counted and left."""
    pk, sk = info.partition_key, info.sort_key
    if sk is None:  # (no sort key: no marker can be there)
        return Dropped(0, Strays(), None)
    markers = core.markers(info)
    names = {"#m": core.attribute, "#pk": pk.name, "#sk": sk.name, "#t": ENTITY_ATTRIBUTE}
    request: Any = {
        "TableName": core.table,
        "ConsistentRead": True,
        # A marker: at the markers' sort key, its attribute holding its own key; nothing else
        # (helper-94 F1: an item of yours whose ddbkeys_pk held its key, at another sort key).
        # And what says it is one: another index's, to be said (helper-95 F2).
        "FilterExpression": "(#sk = :sk AND #m = #pk) OR #t = :marker",
        "ProjectionExpression": "#pk, #sk, #m, #t",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": {":sk": core.sort_key(info), ":marker": {"S": MARKER}},
        "ReturnConsumedCapacity": "TOTAL",
    }
    removed, left = 0, Strays()
    while True:
        page = yield from core.attempts(
            sending(scan(request)), "reading the table for markers", writes=False
        )
        for item in page.get("Items", []):
            if not markers.is_marker(item):
                left.met(item, markers)
                continue
            key = {pk.name: item[pk.name], sk.name: item[sk.name]}
            if (yield from core.remove_marker(key, pk.name, core.begin())):
                removed += 1
                if progress is not None:
                    progress(removed)
        if "LastEvaluatedKey" not in page:
            return Dropped(removed, left, markers)
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
