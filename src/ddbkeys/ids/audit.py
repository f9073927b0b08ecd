"""Audit: find the gaps and duplicates in the ids a table holds.

The scans and queries are flows (see :mod:`ddbkeys.core`): :func:`audit_attribute` and
:func:`audit_collection` run them on the sync driver, and :mod:`ddbkeys.aio.audit` runs the
same flows on the asyncio driver."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from ddbkeys.capacity import Usage
from ddbkeys.core.attempts import attempts
from ddbkeys.core.steps import Flow, Request, query, scan
from ddbkeys.drivers.sync import SyncDriver
from ddbkeys.errors import ConfigurationError, KeySchemaError
from ddbkeys.ids.collection_keys import collection_keys, number_in
from ddbkeys.ids.values import check_padding
from ddbkeys.partition_keys.base import client_and_table
from ddbkeys.partition_keys.index import DEFAULT_MARKER_ATTRIBUTE
from ddbkeys.retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys.schema import check_name, describe_flow, key_value

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef, ScanInputTypeDef

__all__ = [
    "AuditReport",
    "attribute_flow",
    "audit_attribute",
    "audit_collection",
    "audit_ids",
    "collection_flow",
]

#: What a page's retries are called in an error.
_WHAT = "a page of the audit"


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
            what=_WHAT,
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
    usage: Usage,
    deadline: float | None = DEFAULT_DEADLINE,
    retry: RetryPolicy | None = None,
) -> Flow[AuditReport]:
    """The flow of :func:`audit_attribute`: a full Scan, page by page (counted in ``usage``,
    which the driver that runs it counts in)."""
    page = _pages(table, usage, deadline, retry or RetryPolicy())
    values: list[int] = []
    not_numbers = 0
    params: ScanInputTypeDef = {
        "TableName": table,
        "ProjectionExpression": "#a",
        "FilterExpression": "attribute_exists(#a)",
        "ExpressionAttributeNames": {"#a": attribute},
        "ReturnConsumedCapacity": "TOTAL",
    }
    while True:
        answer = yield from page(scan(params.copy()))
        for item in answer.get("Items", []):
            number = _as_int(dict(item[attribute]), prefix)
            if number is None:
                not_numbers += 1
            else:
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
    usage: Usage,
    marker_attribute: str = DEFAULT_MARKER_ATTRIBUTE,
    counter_attribute: str = "last_number",
    deadline: float | None = DEFAULT_DEADLINE,
    retry: RetryPolicy | None = None,
) -> Flow[AuditReport]:
    """The flow of :func:`audit_collection`: one DescribeTable (for the key schema), then a
    Query of the collection, page by page."""
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
        "ProjectionExpression": "#sk, #m, #c",
        "ReturnConsumedCapacity": "TOTAL",
    }
    values: list[int] = []
    not_numbers = 0
    while True:
        answer = yield from page(query(params.copy(), count_scanned=True))
        for item in answer.get("Items", []):
            if marker_attribute in item:
                continue  # the collection's marker, not an id
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
    report = audit_ids(values, table=table, source=f"collection {partition_key_value!r}")
    report.not_numbers = not_numbers
    report.usage = usage.snapshot()
    return report


def check_collection_settings(
    table: str, width: int, prefix: str, marker_attribute: str, counter_attribute: str
) -> None:
    """The settings of :func:`audit_collection`, or a :class:`ConfigurationError`."""
    check_padding(width, prefix, table=table)
    check_name("marker attribute", marker_attribute, table=table)
    check_name("counter attribute", counter_attribute, table=table)


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
    flow = attribute_flow(
        table, attribute, start=start, prefix=prefix, usage=usage, deadline=deadline
    )
    return SyncDriver(ddb, usage).run(flow)


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
    twice with different padding). Cost: one DescribeTable, then 0.5 read units per 4 KB of
    the collection.

    Not counted as ids: the collection's marker item (it holds ``marker_attribute``, see
    :class:`~ddbkeys.partition_keys.MarkerIndex`) and the ``never_reuse`` counter item (number
    0, holding ``counter_attribute``). ``client`` is anything
    :func:`ddbkeys.clients.as_client` takes (pass ``table=None`` with a boto3 ``Table``); each
    page is retried within ``deadline`` seconds."""
    ddb, table = client_and_table(client, table, deadline)
    check_collection_settings(table, width, prefix, marker_attribute, counter_attribute)
    usage = usage or Usage()
    flow = collection_flow(
        table,
        partition_key_value,
        prefix=prefix,
        usage=usage,
        marker_attribute=marker_attribute,
        counter_attribute=counter_attribute,
        deadline=deadline,
    )
    return SyncDriver(ddb, usage).run(flow)
