"""Audit: find the gaps and duplicates in the ids a table holds."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from ddbkeys.capacity import Usage
from ddbkeys.errors import KeySchemaError
from ddbkeys.ids.collection import CollectionSequence
from ddbkeys.partition_keys.base import Reader, client_and_table
from ddbkeys.partition_keys.index import DEFAULT_MARKER_ATTRIBUTE
from ddbkeys.retry import DEFAULT_DEADLINE
from ddbkeys.schema import check_name, key_value

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["AuditReport", "audit_attribute", "audit_collection", "audit_ids"]


@dataclass
class AuditReport:
    """What an audit found. ``gaps`` are inclusive ranges of missing ids between ``start`` and
    the highest id; ``duplicates`` maps an id to how many items hold it."""

    table: str
    source: str
    count: int = 0
    first: int | None = None
    last: int | None = None
    gaps: list[tuple[int, int]] = field(default_factory=list)
    duplicates: dict[int, int] = field(default_factory=dict)
    not_numbers: int = 0
    usage: dict[str, float] = field(default_factory=dict)

    @property
    def missing(self) -> int:
        return sum(hi - lo + 1 for lo, hi in self.gaps)

    @property
    def ok(self) -> bool:
        """No gaps and no duplicates."""
        return not self.gaps and not self.duplicates

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
            "ok": self.ok,
            "usage": self.usage,
        }


def audit_ids(
    ids: Iterable[int], *, table: str = "", source: str = "ids", start: int = 1
) -> AuditReport:
    """Check a collection of ids for gaps (from ``start`` to the highest) and duplicates.

    This is the checker the tests apply to every strategy (and to the unsafe negative control).
    """
    counts = Counter(ids)
    report = AuditReport(table=table, source=source, count=sum(counts.values()))
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


def _as_int(value: dict[str, Any], prefix: str = "") -> int | None:
    raw = value.get("N", value.get("S"))
    if "S" in value:
        if not str(raw).startswith(prefix):
            return None
        raw = str(raw)[len(prefix) :]
    try:
        number = Decimal(str(raw))
    except InvalidOperation:
        return None
    if not number.is_finite() or number != number.to_integral_value():
        return None
    return int(number)


def audit_attribute(
    client: object,
    table: str | None = None,
    attribute: str = "id",
    *,
    start: int = 1,
    usage: Usage | None = None,
    prefix: str = "",
    deadline: float | None = DEFAULT_DEADLINE,
) -> AuditReport:
    """Scan ``table`` for ``attribute`` (items without it are skipped) and report gaps and
    duplicates. A string id counts when it is ``prefix`` and digits (the padded ids of a
    gapless sequence kept in a string key). Cost: a full scan, 0.5 read units per 4 KB of the
    table. ``client`` is anything :func:`ddbkeys.clients.as_client` takes (a boto3 ``Table``
    names the table); each page is retried within ``deadline`` seconds."""
    ddb, table = client_and_table(client, table, deadline)
    check_name("attribute", attribute, table=table)
    usage = usage or Usage()
    reader = Reader(ddb, table, usage=usage, deadline=deadline, what="a page of the audit")
    values: list[int] = []
    not_numbers = 0
    kwargs: dict[str, Any] = {
        "TableName": table,
        "ProjectionExpression": "#a",
        "FilterExpression": "attribute_exists(#a)",
        "ExpressionAttributeNames": {"#a": attribute},
        "ReturnConsumedCapacity": "TOTAL",
    }
    while True:
        page = reader.scan(**kwargs)
        for item in page.get("Items", []):
            number = _as_int(dict(item[attribute]), prefix)
            if number is None:
                not_numbers += 1
            else:
                values.append(number)
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    report = audit_ids(values, table=table, source=f"attribute {attribute}", start=start)
    report.not_numbers = not_numbers
    report.usage = usage.snapshot()
    return report


def audit_collection(
    client: object,
    table: str | None,
    partition_key_value: str | int | Decimal | bytes,
    *,
    width: int = 10,
    prefix: str = "",
    usage: Usage | None = None,
    marker_attribute: str = DEFAULT_MARKER_ATTRIBUTE,
    counter_attribute: str = "last_number",
    deadline: float | None = DEFAULT_DEADLINE,
) -> AuditReport:
    """Query one item collection's sort keys and report gaps and duplicates (a number written
    twice with different padding). Cost: 0.5 read units per 4 KB of the collection.

    Not counted as ids: the collection's marker item (it holds ``marker_attribute``, see
    :class:`~ddbkeys.partition_keys.MarkerIndex`) and the ``never_reuse`` counter item (number
    0, holding ``counter_attribute``). ``client`` is anything
    :func:`ddbkeys.clients.as_client` takes (pass ``table=None`` with a boto3 ``Table``); each
    page is retried within ``deadline`` seconds."""
    ddb, table = client_and_table(client, table, deadline)
    check_name("marker attribute", marker_attribute, table=table)
    check_name("counter attribute", counter_attribute, table=table)
    sequence = CollectionSequence(
        ddb,
        table,
        width=width,
        prefix=prefix,
        usage=usage,
        counter_attribute=counter_attribute,
        deadline=deadline,
    )
    reader = Reader(ddb, table, usage=sequence.usage, deadline=deadline, what="a page of the audit")
    pk, sk = sequence.keys()
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": {
            "#pk": pk.name,
            "#sk": sk.name,
            "#m": marker_attribute,
            "#c": counter_attribute,
        },
        "ExpressionAttributeValues": {":pk": key_value(pk, partition_key_value, table=table)},
        "ProjectionExpression": "#sk, #m, #c",
        "ReturnConsumedCapacity": "TOTAL",
    }
    values: list[int] = []
    not_numbers = 0
    while True:
        page: dict[str, Any] = reader.call(functools.partial(_query, ddb, dict(kwargs)))
        sequence.usage.add(page, write=False, items=int(page.get("ScannedCount", 0)))
        for item in page.get("Items", []):
            if marker_attribute in item:
                continue  # the collection's marker, not an id
            try:
                number = sequence.number_of(item[sk.name])
            except KeySchemaError:
                not_numbers += 1
                continue
            if number == 0 and counter_attribute in item:
                continue  # the never_reuse counter item
            values.append(number)
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    report = audit_ids(values, table=table, source=f"collection {partition_key_value!r}")
    report.not_numbers = not_numbers
    report.usage = sequence.usage.snapshot()
    return report


def _query(client: DynamoDBClient, request: dict[str, Any]) -> dict[str, Any]:
    return dict(client.query(**request))
