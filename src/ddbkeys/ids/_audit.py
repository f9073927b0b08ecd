"""Audit: find the gaps and duplicates in the ids a table holds.

The scans and queries are flows (see :mod:`ddbkeys._core`): :func:`audit_attribute` and
:func:`audit_collection` run them on the sync driver, and :mod:`ddbkeys.aio._audit` runs the
same flows on the asyncio driver."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage
from ddbkeys._clients import as_client
from ddbkeys._core.attempts import attempts
from ddbkeys._core.steps import Flow, Request, query, scan
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._entity import ENTITY_ATTRIBUTE, MARKER, is_counter, typed_as
from ddbkeys._errors import ConfigurationError, KeySchemaError
from ddbkeys._key_json import brief_key
from ddbkeys._names import DEFAULT_MARKER_ATTRIBUTE
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys._schema import check_name, describe_flow, key_value
from ddbkeys.ids._collection_keys import (
    HighestSortKey,
    check_collection_settings,
    collection_keys,
    number_in,
)
from ddbkeys.ids._values import check_padding

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef, ScanInputTypeDef

__all__ = [
    "AuditReport",
    "attribute_flow",
    "audit_attribute",
    "audit_collection",
    "audit_ids",
    "check_attribute_settings",
    "collection_flow",
]


@dataclass
class AuditReport:
    """What an audit found. ``count``, ``first`` and ``last`` are those of the ids from
    ``start`` on; ``gaps`` are inclusive ranges of missing ids between ``start`` and the
    highest id; ``duplicates`` maps an id to how many items hold it; ``below_start`` holds the
    whole numbers below ``start`` (once per item, sorted) and ``not_numbers`` counts the values
    that are not ids (not whole numbers; for a string, not ``prefix`` and ``width`` digits).

    ``values_are_ids``: whether every value read should be an id, so that one below ``start``
    or not a number is a problem (an attribute audit), or not (an item collection holds other
    items beside its numbered ones: a profile, items another tool numbered 0 or below).

    ``blocking_sort_key``: a collection's highest sort key, as text, where it holds no number
    the sequence writes (``1.5``; in a string key, not ``prefix`` and ``width`` digits): a
    problem, :class:`~ddbkeys.ids.CollectionSequence` refuses to go on from it."""

    table: str
    source: str
    count: int = 0
    first: int | None = None
    last: int | None = None
    gaps: list[tuple[int, int]] = field(default_factory=list)
    duplicates: dict[int, int] = field(default_factory=dict)
    not_numbers: int = 0
    usage: dict[str, float] = field(default_factory=dict)
    below_start: list[int] = field(default_factory=list)
    values_are_ids: bool = True
    blocking_sort_key: str | None = None

    @property
    def missing(self) -> int:
        return sum(hi - lo + 1 for lo, hi in self.gaps)

    @property
    def ok(self) -> bool:
        """No gaps, no duplicates and no ``blocking_sort_key``; and when every value should be
        an id (``values_are_ids``), none below ``start`` and none that is not a number."""
        strays = self.values_are_ids and bool(self.below_start or self.not_numbers)
        stuck = self.blocking_sort_key is not None
        return not self.gaps and not self.duplicates and not strays and not stuck

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "source": self.source,
            "count": self.count,
            "first": self.first,
            "last": self.last,
            "missing": self.missing,
            "gaps": [list(g) for g in self.gaps],
            "duplicates": {str(k): v for k, v in sorted(self.duplicates.items())},
            "not_numbers": self.not_numbers,
            "below_start": self.below_start,
            "blocking_sort_key": self.blocking_sort_key,
            "ok": self.ok,
            "usage": self.usage,
        }


def audit_ids(
    ids: Iterable[int],
    *,
    table: str = "",
    source: str = "ids",
    start: int = 1,
    values_are_ids: bool = True,
) -> AuditReport:
    """Check a collection of ids for gaps (from ``start`` to the highest), duplicates and ids
    below ``start`` (problems unless ``values_are_ids`` is False, see :class:`AuditReport`).

    This is the checker the tests apply to every strategy (and to the unsafe negative control).
    """
    every = Counter(ids)
    counts = Counter({k: v for k, v in every.items() if k >= start})
    report = AuditReport(
        table=table,
        source=source,
        count=sum(counts.values()),
        below_start=sorted(n for n in every.elements() if n < start),
        values_are_ids=values_are_ids,
    )
    report.duplicates = {k: v for k, v in counts.items() if v > 1}
    if counts:
        ordered = sorted(counts)
        report.first, report.last = ordered[0], ordered[-1]
        expected = start
        for value in ordered:
            if value > expected:
                report.gaps.append((expected, value - 1))
            expected = max(expected, value + 1)
    return report


def _as_int(value: dict[str, Any], prefix: str = "", width: int = 10) -> int | None:
    """The id a value holds: a whole number, or a string of ``prefix`` and exactly ``width``
    digits (the padded form the sequences write in string keys); else None."""
    if "S" in value:
        text = str(value["S"])
        digits = text[len(prefix) :]
        if not text.startswith(prefix) or len(digits) != width:
            return None
        return int(digits) if digits.isascii() and digits.isdigit() else None
    raw = value.get("N")
    try:
        number = Decimal(str(raw))
    except InvalidOperation:
        return None
    if not number.is_finite() or number != number.to_integral_value():
        return None
    return int(number)


def checked_deadline(table: str, deadline: float | None) -> None:
    """A deadline above 0 seconds (or None), or a :class:`ConfigurationError`."""
    if deadline is not None and (
        isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not deadline > 0
    ):
        raise ConfigurationError(
            f"The deadline must be above 0 seconds (or None for none), not {deadline!r}.",
            table=table,
        )


def _answer(request: Request) -> Flow[Any]:
    return (yield request)


def _pages(
    table: str, usage: Usage, deadline: float | None, retry: RetryPolicy
) -> Callable[[Request], Flow[Any]]:
    """One request of the audit, retried on throttling, 5xx and dropped connections within its
    own ``deadline`` (a page's: an audit may rightly read for a long time)."""

    def page(request: Request) -> Flow[Any]:
        return attempts(
            lambda _: _answer(request),
            what="a page of the audit",
            table=table,
            policy=retry,
            deadline=Deadline(deadline, clock=retry.clock),
            usage=usage,
            writes=False,
        )

    return page


def attribute_flow(
    table: str,
    attribute: str,
    *,
    start: int = 1,
    prefix: str = "",
    width: int = 10,
    counter_attribute: str = "last_id",
    usage: Usage,
    deadline: float | None = DEFAULT_DEADLINE,
    retry: RetryPolicy | None = None,
) -> Flow[AuditReport]:
    """The flow of :func:`audit_attribute`: a full Scan, page by page (counted in ``usage``,
    which the driver that runs it counts in)."""
    page = _pages(table, usage, deadline, retry or RetryPolicy())
    values: list[int] = []
    not_numbers = 0
    apart = counter_attribute != attribute
    names = {"#a": attribute, "#c": counter_attribute} if apart else {"#a": attribute}
    typed = attribute != ENTITY_ATTRIBUTE  # (ddbkeys_type: its counter items read too)
    if typed:
        names["#t"] = ENTITY_ATTRIBUTE
    projection = ", ".join(names)
    params: ScanInputTypeDef = {
        "TableName": table,
        "ProjectionExpression": projection,  # (two equal paths: refused)
        "FilterExpression": "attribute_exists(#a)",
        "ExpressionAttributeNames": names,
        "ReturnConsumedCapacity": "TOTAL",
    }
    while True:
        answer = yield from page(scan(params.copy()))
        for item in answer.get("Items", []):
            if typed and (is_counter(item) or typed_as(item, MARKER)):
                continue  # an id strategy's counter item: its value is no id (helper-91 F5:
                # `--attribute last_id` audited a gapless counter's 3 as an id, gaps 1-2);
                # nor a marker's sort key (helper-101 F1: `--attribute sk` of a table with
                # the marker index said "below 1: -999...", PROBLEMS FOUND)
            number = _as_int(dict(item[attribute]), prefix, width)
            if apart and counter_attribute in item and (number is None or number < start):
                continue  # the sequence's counter item (its key may be the id attribute)
            if number is None:
                not_numbers += 1
            else:  # (an id, even on an item that holds the counter attribute as well)
                values.append(number)
        if "LastEvaluatedKey" not in answer:
            break
        params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
    report = audit_ids(values, table=table, source=f"attribute {attribute}", start=start)
    report.not_numbers = not_numbers
    report.usage = usage.snapshot()
    return report


def collection_flow(
    table: str,
    partition_key_value: str | int | Decimal | bytes,
    *,
    prefix: str = "",
    width: int = 10,
    usage: Usage,
    marker_attribute: str = DEFAULT_MARKER_ATTRIBUTE,
    counter_attribute: str = "last_number",
    deadline: float | None = DEFAULT_DEADLINE,
    retry: RetryPolicy | None = None,
    marker_sort_key: str | int | Decimal | bytes | None = None,
) -> Flow[AuditReport]:
    """The flow of :func:`audit_collection`: one DescribeTable (for the key schema), then a
    Query of the collection, page by page. A number counts whatever its padding (``"9"`` and
    ``"0000000009"``: one number twice); ``width`` tells only ``blocking_sort_key``."""
    policy = retry or RetryPolicy()
    page = _pages(table, usage, deadline, policy)
    info = yield from attempts(
        lambda _: describe_flow(table),
        what="DescribeTable",
        table=table,
        policy=policy,
        deadline=Deadline(deadline, clock=policy.clock),
        usage=usage,
        writes=False,
    )
    pk, sk = collection_keys(info, table)
    # (the listings' code, loaded only by an audit: ``ddbkeys ids next`` does without it)
    from ddbkeys.partition_keys._listing import recognise  # noqa: PLC0415

    sort_value = recognise.marker_sort_key(info, marker_sort_key)
    markers = recognise.Markers(pk.name, sk.name, marker_attribute, sort_value)
    params: QueryInputTypeDef = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": {
            "#pk": pk.name,
            "#sk": sk.name,
            "#m": marker_attribute,
            "#c": counter_attribute,
        },
        "ExpressionAttributeValues": {":pk": key_value(pk, partition_key_value, table=table)},
        "ProjectionExpression": "#pk, #sk, #m, #c",
        "ReturnConsumedCapacity": "TOTAL",
    }
    values: list[int] = []
    not_numbers = 0
    goes_on_from = HighestSortKey(sk.type, prefix, width, table)
    while True:
        answer = yield from page(query(params.copy(), count_scanned=True))
        for item in answer.get("Items", []):
            goes_on_from.see(item.get(sk.name))
            if markers.is_marker(item):
                continue  # the collection's marker (by its key and attribute), not an id
            try:
                number = number_in(item[sk.name], prefix=prefix, table=table)
            except KeySchemaError:
                not_numbers += 1
                continue
            if number == 0 and counter_attribute in item:
                continue  # the never_reuse counter item
            values.append(number)
        if "LastEvaluatedKey" not in answer:
            break
        params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
    source = f"collection {brief_key(partition_key_value, most=200)}"  # (a number whole)
    report = audit_ids(values, table=table, source=source, values_are_ids=False)
    report.not_numbers = not_numbers
    report.blocking_sort_key = goes_on_from.refused()
    report.usage = usage.snapshot()
    return report


def check_attribute_settings(
    table: str, attribute: str, start: int, prefix: str, width: int, counter_attribute: str
) -> dict[str, Any]:
    """The settings of :func:`audit_attribute` as :func:`attribute_flow` takes them, or a
    :class:`ConfigurationError`."""
    check_name("attribute", attribute, table=table)
    check_padding(width, prefix, table=table)
    check_name("counter attribute", counter_attribute, table=table)
    if isinstance(start, bool) or not isinstance(start, int):
        raise ConfigurationError(f"start must be a whole number, not {start!r}.", table=table)
    return {
        "start": start,
        "prefix": prefix,
        "width": width,
        "counter_attribute": counter_attribute,
    }


def collection_arguments(
    client: object, table: str | None, partition_key_value: str | int | Decimal | bytes | None
) -> tuple[str | None, str | int | Decimal | bytes]:
    """``audit_collection``'s table and collection: with a boto3 ``Table`` (which names the
    table) and no ``partition_key_value``, the second argument is the collection
    (``audit_collection(table, "projectA")``: helper-88 met a TypeError there)."""
    if partition_key_value is not None:
        return table, partition_key_value
    if table is not None and as_client(client)[1] is not None:  # (a Table: it names one)
        return None, table
    raise ConfigurationError(
        "No item collection given: pass its partition key value, as partition_key_value= "
        "(or second, after a boto3 Table)."
    )


def audit_attribute(
    client: object,
    table: str | None = None,
    attribute: str = "id",
    *,
    start: int = 1,
    usage: Usage | None = None,
    prefix: str = "",
    width: int = 10,
    counter_attribute: str = "last_id",
    deadline: float | None = DEFAULT_DEADLINE,
) -> AuditReport:
    """Scan ``table`` for ``attribute`` (items without it are skipped) and report gaps,
    duplicates, ids below ``start`` and values that are not ids: every value of the attribute
    should be an id, so each of these makes the report not ``ok``. An id is a whole number, or
    a string of ``prefix`` and exactly ``width`` digits (the padded ids of a gapless sequence
    kept in a string key). The sequence's counter item (it holds ``counter_attribute``, and its
    key, the sequence's name or 0, is the id attribute when the ids are the key) is not an id:
    an item holding ``counter_attribute`` whose value is not an id from ``start`` is skipped,
    and so is every id strategy's counter item (``ddbkeys_type`` "counter") and every marker
    of the marker index (``ddbkeys_type`` "marker": an item of yours that says so is skipped
    too; ``ddbkeys_type`` is ddbkeys' name). Cost: a full scan, 0.5 read units per 4 KB of the
    table. ``client`` is anything :func:`ddbkeys.as_client` takes (a boto3 ``Table`` names the
    table); each page is retried within ``deadline`` seconds."""
    from ddbkeys.partition_keys._listing.base import client_and_table  # noqa: PLC0415

    ddb, table = client_and_table(client, table, deadline)
    settings = check_attribute_settings(table, attribute, start, prefix, width, counter_attribute)
    usage = usage or Usage()
    flow = attribute_flow(table, attribute, **settings, usage=usage, deadline=deadline)
    return SyncDriver(ddb, usage).run(flow)


def audit_collection(
    client: object,
    table: str | None = None,
    partition_key_value: str | int | Decimal | bytes | None = None,
    *,
    width: int = 10,
    prefix: str = "",
    usage: Usage | None = None,
    marker_attribute: str = DEFAULT_MARKER_ATTRIBUTE,
    counter_attribute: str = "last_number",
    deadline: float | None = DEFAULT_DEADLINE,
    marker_sort_key: str | int | Decimal | bytes | None = None,
) -> AuditReport:
    """Query one item collection's sort keys and report gaps and duplicates (a number written
    twice with different padding). Cost: one DescribeTable, then 0.5 read units per 4 KB of
    the collection.

    Not counted as ids: the collection's marker item (at ``marker_sort_key``, by default the
    default marker sort key, its ``marker_attribute`` holding its own partition key, see
    :class:`~ddbkeys.partition_keys.MarkerIndex`) and the ``never_reuse`` counter item (number
    0, holding ``counter_attribute``). ``client`` is anything
    :func:`ddbkeys.as_client` takes; with a boto3 ``Table``, which names the table, the
    collection may come second: ``audit_collection(table, "projectA")``. Each page is
    retried within ``deadline`` seconds."""
    from ddbkeys.partition_keys._listing.base import client_and_table  # noqa: PLC0415

    table, partition_key_value = collection_arguments(client, table, partition_key_value)
    ddb, table = client_and_table(client, table, deadline)
    check_collection_settings(table, width, prefix, marker_attribute, counter_attribute)
    usage = usage or Usage()
    flow = collection_flow(
        table,
        partition_key_value,
        prefix=prefix,
        width=width,
        usage=usage,
        marker_attribute=marker_attribute,
        counter_attribute=counter_attribute,
        deadline=deadline,
        marker_sort_key=marker_sort_key,
    )
    return SyncDriver(ddb, usage).run(flow)
