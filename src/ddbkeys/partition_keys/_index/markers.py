"""The marker index's decisions without I/O: what a marker is, what each answer means, and the
pages of the scans ``backfill`` and ``verify`` read. Sent by the flows of
:mod:`ddbkeys.partition_keys._index.marker_core`, whichever driver runs them."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ddbkeys._errors import ConfigurationError, DdbKeysError, KeySchemaError
from ddbkeys._names import DEFAULT_INDEX
from ddbkeys._schema import TableInfo, show_value
from ddbkeys.partition_keys._listing.base import Key
from ddbkeys.partition_keys._listing.recognise import (
    DEFAULT_MARKER_ATTRIBUTE,
    DEFAULT_MARKER_SORT_KEY,
    Markers,
    Seen,
    marker_sort_key,
    own_projection,
)
from ddbkeys.partition_keys._listing.scan import PAGE_ITEMS
from ddbkeys.partition_keys._listing.skip import PagedSkipMethod

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.literals import ScalarAttributeTypeType
    from mypy_boto3_dynamodb.type_defs import (
        CreateGlobalSecondaryIndexActionTypeDef,
        QueryInputTypeDef,
        QueryOutputTypeDef,
        ScanInputTypeDef,
        UpdateTableInputTypeDef,
    )

    from ddbkeys._core.steps import Flow
    from ddbkeys.partition_keys._proof.evidence import Backfill

__all__ = [
    "DEFAULT_INDEX",
    "DEFAULT_MARKER_ATTRIBUTE",
    "DEFAULT_MARKER_SORT_KEY",
    "VERSION_ATTRIBUTE",
    "BackfillReport",
    "IndexBackfillWarning",
    "IndexPages",
    "KeyPages",
    "MarkerClashError",
    "Markers",
    "SkipPages",
    "VerifyReport",
    "check_index",
    "collection_query",
    "create_request",
    "index_gone",
    "index_status",
    "marker_shaped",
    "marker_sort_key",
    "marker_table",
    "put_answer",
    "read_collection",
    "until_data",
    "warn_uncounted",
]

#: Each marker write gives the marker a new version, so that a maintainer deletes a marker only
#: as it saw it (see ddbkeys.partition_keys._index.maintain).
VERSION_ATTRIBUTE = "ddbkeys_v"
#: A key attribute's type, as an AttributeDefinition spells it (a key is S, N or B).
_KEY_TYPES: dict[str, ScalarAttributeTypeType] = {"S": "S", "N": "N", "B": "B"}


class MarkerClashError(DdbKeysError):
    """A collection holds an item that is not a marker at the marker's sort key (its marker
    attribute does not hold its own partition key), so it cannot be marked; ``key`` is the
    collection's partition key (typed)."""

    def __init__(self, message: str, *, key: Key, table: str | None = None) -> None:
        super().__init__(message, table=table)
        self.key = key


@dataclass
class VerifyReport:
    """What ``verify`` found: collections without a marker (``missing``), markers whose
    collection holds nothing else (``orphans``), and collections that cannot be marked because
    a data item sits at the marker's sort key (``clashes``, never counted as marked). From an
    export, ``not_compared`` and ``as_of`` say what the comparison left out and when it holds.

    After ``repair``: ``fixed_missing`` and ``fixed_orphans`` say what it did, and
    ``unfixed`` what it could not fix (the clashes, and anything that failed); ``repaired`` is
    true only when nothing is left."""

    table: str
    index: str
    collections: int = 0
    markers: int = 0
    missing: list[Any] = field(default_factory=list)
    orphans: list[Any] = field(default_factory=list)
    clashes: list[Any] = field(default_factory=list)
    fixed_missing: list[Any] = field(default_factory=list)
    fixed_orphans: list[Any] = field(default_factory=list)
    unfixed: list[Any] = field(default_factory=list)
    #: Compared with an export (``verify(from_export=...)``): the collections the table's
    #: stream names since the export's time, changed after it and so not compared; and what
    #: the comparison is exact as of (None: the table now, read).
    not_compared: list[Any] = field(default_factory=list)
    as_of: str | None = None
    #: Collections found missing or orphaned whose marker was right when looked at again,
    #: once both key sets were read: changes in flight (see ``_index.verify``).
    settled: list[Any] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.missing and not self.orphans and not self.clashes

    @property
    def repaired(self) -> bool:
        return not self.unfixed


class IndexBackfillWarning(UserWarning):
    """A recorded backfill (``MarkerIndex.backfill``) that no listing can prove the marker index
    from: its markers are written, but ``auto`` goes on listing another way and
    ``method="index"`` declines until a backfill counts. The line says why and what to do (the
    report's ``advice``; ``report.counts`` is False). The command line prints the same as a
    note (helper-87 F3: in Python, nothing was said)."""


def warn_uncounted(report: BackfillReport, table: str) -> None:
    """An :class:`IndexBackfillWarning` where ``report``'s backfill was recorded and does not
    count (``counts`` False), naming the line of your code that called it."""
    if report.counts is False:
        from ddbkeys._caller import outside  # noqa: PLC0415 (only where it warns)

        warnings.warn(
            f"Backfill of table {table!r}: no listing can prove the marker index from it: "
            f"{report.advice or 'see report.advice'}",
            IndexBackfillWarning,
            stacklevel=outside(),
        )


@dataclass
class BackfillReport:
    """What ``backfill`` did: markers ``written``, collections already marked (``present``),
    markers removed from collections that held nothing else (``removed``), collections found
    that held nothing by the time they were reconciled (``emptied``: the application deleted
    their items meanwhile; nothing to mark), and collections that cannot be marked
    (``clashes``: a data item holds the marker's sort key). A recorded
    backfill also says whether a listing can prove the index from it (``counts``; None: not
    recorded, or not known) and, when not, why and what to do (``advice``, one line)."""

    written: int = 0
    present: int = 0
    removed: int = 0
    clashes: list[Any] = field(default_factory=list)
    counts: bool | None = None
    advice: str | None = None
    #: How it read the table (``"reconcile"``: a consistent Query a collection; ``"read"``: one
    #: read of the table and its index, then the stream over its window), and how many
    #: collections that window named (each reconciled again). One that ``joined`` another:
    #: that one's, as its record says.
    mode: str = "reconcile"
    rechecked: int = 0
    #: Why it does not count as the index's snapshot, when it found that itself (None: see
    #: the evidence's other rules).
    uncounted: str | None = None
    #: Another backfill, found at work, that this one waited for rather than read the table a
    #: second time, and whose outcome this report gives (listings can prove the index from
    #: it); its record (``written``, ``present``, ``removed`` are then this one's: none).
    #: None: this one did the work.
    joined: Backfill | None = None
    #: (last, so that the fields before keep their places)
    emptied: int = 0


def emptied_meanwhile(report: BackfillReport) -> str:
    """ ", N emptied meanwhile" for a backfill's summary (nothing when none was)."""
    return f", {report.emptied:,} emptied meanwhile" if report.emptied else ""


def index_status(info: TableInfo, name: str) -> str | None:
    """The status of index ``name`` as ``info`` describes it (None: no such index)."""
    if name not in info.index_projections:
        return None
    return info.index_statuses.get(name, "ACTIVE")


def marker_shaped(info: TableInfo, name: str, attribute: str | None) -> bool:
    """Whether ``info``'s index ``name`` has a marker index's shape (KEYS_ONLY, keyed on the
    marker ``attribute`` alone), as :func:`check_index` wants it, whatever its status."""
    return (
        info.index_projections.get(name) == "KEYS_ONLY"
        and info.index_hash_keys.get(name) == attribute
        and name not in info.index_range_keys
    )


def check_index(info: TableInfo, name: str, attribute: str, *, active: bool = True) -> None:
    """A clear error unless ``info``'s table has the index ``name``, KEYS_ONLY, keyed on the
    marker ``attribute``, and (``active``) ACTIVE: before any marker is written or read."""
    where = f"Index {name!r} of table {info.name!r}"
    flag = "" if attribute == DEFAULT_MARKER_ATTRIBUTE else f" --marker-attribute {attribute}"
    projection = info.index_projections.get(name)
    if projection is None:
        raise ConfigurationError(
            f"Table {info.name!r} has no index {name!r}. Create it with "
            f"`ddbkeys partition-keys index create --table-name {info.name}{flag}` (KEYS_ONLY, "
            f"keyed on the marker attribute {attribute!r}), then backfill the markers.",
            table=info.name,
        )
    if projection != "KEYS_ONLY":
        raise ConfigurationError(
            f"{where} projects {projection}, not KEYS_ONLY: it is not a marker index (it "
            f"would cost more to scan); name the marker index (keyed on {attribute!r}) with "
            "--index-name.",
            table=info.name,
        )
    keyed = info.index_hash_keys.get(name)
    if keyed != attribute:
        raise ConfigurationError(
            f"{where} is keyed on {keyed!r}, not on the marker attribute {attribute!r}: pass "
            f"the marker attribute {keyed!r} (marker_attribute=) if it is the marker index, or "
            "name the marker index (index_name=).",
            table=info.name,
        )
    ranged = info.index_range_keys.get(name)
    if ranged is not None:  # (helper-95 F5: a GSI of yours, taken for one and deleted)
        raise ConfigurationError(
            f"{where} has the range key {ranged!r} besides {attribute!r}: it is not a marker "
            "index (one is keyed on the marker attribute alone); name the marker index "
            "(index_name=), or leave this one to what it serves.",
            table=info.name,
        )
    status = index_status(info, name)
    if active and status != "ACTIVE":
        raise ConfigurationError(
            f"{where} (keyed on {attribute!r}) is {status}, not ACTIVE: wait until it is "
            f"(`ddbkeys partition-keys index create --table-name {info.name}{flag}` waits for "
            "it), then try again.",
            table=info.name,
        )


class _IndexGoneError(ConfigurationError):
    """The marker index a maintainer found is gone, or DELETING (:func:`index_gone`): not
    tried again (helper-99 F2: a follower's backfill said "tried again in 10 s" as the
    follower ended)."""


def index_gone(info: TableInfo, name: str) -> None:
    """Where ``info``'s table has the index ``name`` no more, or it is DELETING: a
    :class:`~ddbkeys.ConfigurationError` for a maintainer that found it there when it began."""
    status = index_status(info, name)
    if status in (None, "DELETING"):
        state = "gone" if status is None else "being deleted"
        raise _IndexGoneError(
            f"Index {name!r} of table {info.name!r} is {state} (`index drop`?): no marker is "
            "written or removed without it, and this maintainer stops. Stop the others "
            "(`index follow`, the Lambda trigger), or create the index again and backfill.",
            table=info.name,
        )


def marker_table(info: TableInfo, name: str, attribute: str, given: Any = None) -> None:
    """:func:`marker_sort_key`'s check of ``info``'s table, for the marker index ``name`` on
    ``attribute``: a table without a sort key that has an index of that shape is told how to
    delete it (helper-95 F6: it was told a listing's advice, and ddbkeys could not drop it).
    No marker can be there and ``index create`` refuses such a table: ddbkeys made none."""
    if info.sort_key is None and marker_shaped(info, name, attribute):
        raise KeySchemaError(
            f"Table {info.name!r} has no sort key, so no marker can sit in it and ddbkeys makes "
            f"no marker index there (`index create` refuses such a table): its index {name!r} "
            "is not one ddbkeys made, and holds no marker. List the table's keys with a plain "
            "scan (method='scan'); to delete that index, run "
            f"`aws dynamodb update-table --table-name {info.name} "
            f'--global-secondary-index-updates \'[{{"Delete": {{"IndexName": "{name}"}}}}]\'`.',
            table=info.name,
        )
    marker_sort_key(info, given)


def create_request(
    description: Mapping[str, Any], table: str, name: str, attribute: str, key_type: str
) -> UpdateTableInputTypeDef:
    """The UpdateTable that adds the marker index to the table ``description`` describes (the
    table's provisioned throughput copied when it is provisioned); ``key_type`` is the type of
    the table's partition key (S, N or B)."""
    update: CreateGlobalSecondaryIndexActionTypeDef = {
        "IndexName": name,
        "KeySchema": [{"AttributeName": attribute, "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    }
    billing = description.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED")
    if billing == "PROVISIONED" and "ProvisionedThroughput" in description:
        throughput = description["ProvisionedThroughput"]
        update["ProvisionedThroughput"] = {
            "ReadCapacityUnits": throughput["ReadCapacityUnits"],
            "WriteCapacityUnits": throughput["WriteCapacityUnits"],
        }
    return {
        "TableName": table,
        "AttributeDefinitions": [
            {"AttributeName": attribute, "AttributeType": _KEY_TYPES[key_type]}
        ],
        "GlobalSecondaryIndexUpdates": [{"Create": update}],
    }


def put_answer(written: bool, old: Mapping[str, Any] | None, markers: Markers) -> bool | None:
    """What a conditional put of a marker (``attribute_not_exists``, ALL_OLD on failure) did:
    True, written; False, a marker was there (by ``markers.is_marker``); None, the item there
    is data, so the collection cannot be marked (a clash)."""
    if written:
        return True
    return False if old is not None and markers.is_marker(old) else None


def sorts_before(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether key value ``a`` sorts before ``b`` in DynamoDB's order for their type (numbers
    by value, strings by their UTF-8 bytes, binary by bytes); False for values of two types."""
    (kind, left), (other, right) = next(iter(a.items())), next(iter(b.items()))
    if kind != other:
        return False
    if kind == "N":
        return Decimal(str(left)) < Decimal(str(right))
    if kind == "S":
        return str(left).encode() < str(right).encode()
    return bytes(left) < bytes(right)


def read_collection(
    items: Sequence[Mapping[str, Any]], more: bool, markers: Markers
) -> tuple[bool, dict[str, Any] | None, bool]:
    """What the first items of a collection say (read up to its first data item, or all):
    whether it holds data (an item that is neither a marker nor a counter item), its marker
    among them (None), and whether the marker must be looked up by its key (data, no marker
    among the items read, and more items than were read)."""
    data = any(markers.is_data(item) for item in items)
    marker = next((dict(i) for i in items if markers.is_marker(i)), None)
    # A Query reads a collection in sort key order: when its first item sorts after the
    # marker's key, the marker would have come first, and there is none to look up.
    first = items[0].get(markers.sort_key) if items else None
    after = first is not None and sorts_before(markers.sort_value, first)
    return data, marker, data and marker is None and (len(items) >= 2 or more) and not after


def collection_query(
    table: str, key: Key, markers: Markers, *, consistent: bool = False
) -> QueryInputTypeDef:
    """A Query of two items of the collection ``key`` at a time, projecting what tells ddbkeys'
    own items from yours (the same read units whatever is projected)."""
    projection, names = own_projection(markers.partition_key, markers)
    return {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": {":pk": key},
        "ProjectionExpression": projection,
        "ConsistentRead": consistent,
        "Limit": 2,
        "ReturnConsumedCapacity": "TOTAL",
    }


def until_data(
    ask: Callable[[QueryInputTypeDef], Flow[QueryOutputTypeDef]],
    request: QueryInputTypeDef,
    markers: Markers,
) -> Flow[tuple[list[dict[str, Any]], bool]]:
    """Query pages of one collection from ``request``, each sent by ``ask``, on while every
    item read is ddbkeys' own (a marker, a counter item): the items read, and whether the
    collection holds more."""
    items: list[dict[str, Any]] = []
    while True:
        answer = yield from ask(request)
        items += answer.get("Items", [])
        more = "LastEvaluatedKey" in answer
        if not more or any(markers.is_data(item) for item in items):
            return items, more
        request = {**request, "ExclusiveStartKey": answer["LastEvaluatedKey"]}


class KeyPages:
    """The pages of one Scan that hands out each value of ``attribute`` once (in scan order), at
    the first item of its collection that ``counts``: ``request()`` is the next page's Scan
    (None at the end), ``take(page)`` its new keys."""

    def __init__(
        self,
        request: ScanInputTypeDef,
        attribute: str,
        counts: Callable[[Mapping[str, Any]], bool],
    ) -> None:
        self._request: ScanInputTypeDef | None = request
        self.attribute = attribute
        self.counts = counts
        self.seen = Seen()

    def request(self) -> ScanInputTypeDef | None:
        return self._request.copy() if self._request is not None else None

    def take(self, page: Mapping[str, Any]) -> list[Key]:
        assert self._request is not None
        keys = self.seen.take(page.get("Items", []), self.attribute, self.counts)
        if "LastEvaluatedKey" not in page:
            self._request = None
        else:
            self._next(page)
        return keys

    def _next(self, page: Mapping[str, Any]) -> None:
        assert self._request is not None
        self._request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


class IndexPages(KeyPages):
    """The marker index's keys: a Scan of the index (KEYS_ONLY: the table's keys and the
    marker attribute, the same read units whatever is projected), handing out the partition
    key of each item that is a marker (``markers``): an item that holds the marker attribute
    and is not a marker lists nothing."""

    def __init__(self, table: str, index: str, markers: Markers) -> None:
        projection, names = markers.projection()
        super().__init__(
            {
                "TableName": table,
                "IndexName": index,
                "ProjectionExpression": projection,
                "ExpressionAttributeNames": names,
                "Limit": PAGE_ITEMS,
                "ReturnConsumedCapacity": "TOTAL",
            },
            markers.partition_key,
            markers.is_marker,
        )


class SkipPages(KeyPages):
    """The table's keys by the paged skip scan (:class:`~ddbkeys.partition_keys._listing.skip.
    PagedSkipMethod`'s page sizes and jumps): a collection that holds nothing but ddbkeys' own
    items (its marker, counter items) is not one of them, unless ``own_items``."""

    def __init__(
        self, info: TableInfo, markers: Markers | None = None, *, own_items: bool = False
    ) -> None:
        self.method = PagedSkipMethod(info, markers)
        self.method.own_items = own_items
        self.state = self.method.start_state()
        request: ScanInputTypeDef = {
            "TableName": info.name,
            **self.method.first_request(0, 1, None),
            "Limit": self.method.first_limit(self.state),
            "ReturnConsumedCapacity": "TOTAL",
        }
        super().__init__(request, info.partition_key.name, self.method.counts)

    def _next(self, page: Mapping[str, Any]) -> None:
        assert self._request is not None
        self._request = self.method.next_request(self._request, page, self.seen, self.state)


def clash(info: TableInfo, key: Mapping[str, Any], attribute: str) -> MarkerClashError:
    """The error for a collection whose item at the marker's key (``key``) is data."""
    pk, sk = info.partition_key, info.sort_key
    assert sk is not None
    return MarkerClashError(
        f"Collection {show_value(key[pk.name])} of table {info.name!r} cannot be marked: "
        f"its item at the marker's sort key ({sk.name} = {show_value(key[sk.name])}) is "
        f"data, not a marker (its {attribute!r} is not its own partition key); it was left as "
        "it is. Give "
        "the markers another sort key value (marker_sort_key=) for this table.",
        key=key[pk.name],
        table=info.name,
    )


def hashable(key: Key) -> tuple[str, Any]:
    kind, raw = next(iter(key.items()))
    return (kind, bytes(raw) if kind == "B" else str(raw))


def unhash(key: tuple[str, Any]) -> Key:
    return {key[0]: key[1]}
