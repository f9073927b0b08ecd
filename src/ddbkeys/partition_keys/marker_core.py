"""The marker index's work as flows (see :mod:`ddbkeys.core`): create, check, mark, unmark,
backfill, verify and repair, each request sent through the one retry layer. The sync
:class:`~ddbkeys.partition_keys.index.MarkerIndex` and :class:`ddbkeys.aio.index.MarkerIndex`
run these same flows on their drivers."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError

from ddbkeys.capacity import Usage
from ddbkeys.core.attempts import attempts
from ddbkeys.core.steps import (
    Flow,
    OnceCell,
    Pause,
    Request,
    delete_item,
    describe_table,
    get_item,
    once,
    put_item,
    query,
    scan,
    update_table,
)
from ddbkeys.entity import ENTITY_ATTRIBUTE, MARKER
from ddbkeys.errors import ConfigurationError, DdbKeysError, error_code, error_response
from ddbkeys.partition_keys.base import Key, client_and_table
from ddbkeys.partition_keys.markers import (
    DEFAULT_INDEX,
    DEFAULT_MARKER_ATTRIBUTE,
    VERSION_ATTRIBUTE,
    BackfillReport,
    IndexPages,
    KeyPages,
    MarkerClashError,
    Markers,
    SkipPages,
    VerifyReport,
    check_index,
    clash,
    create_request,
    hashable,
    index_status,
    marker_sort_key,
    put_answer,
    unhash,
)
from ddbkeys.renames import renamed
from ddbkeys.retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys.schema import (
    TableInfo,
    check_table_name,
    describe_flow,
    described,
    key_value,
    table_info,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        DeleteItemInputTypeDef,
        GetItemInputTypeDef,
        GetItemOutputTypeDef,
        QueryInputTypeDef,
        QueryOutputTypeDef,
        ScanOutputTypeDef,
    )

__all__ = ["MarkerCore", "check_deadline", "send"]

R = TypeVar("R")


def check_deadline(deadline: float | None, table: str) -> float | None:
    """A deadline above 0 seconds, or None (no deadline)."""
    if deadline is not None and (
        isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not deadline > 0
    ):
        raise ConfigurationError(
            f"The deadline must be above 0 seconds (or None for none), not {deadline!r}.",
            table=table,
        )
    return None if deadline is None else float(deadline)


def send(request: Request) -> Flow[Any]:
    """One request as an attempt: its answer (its error goes up, for the retry layer)."""
    answer = yield request
    return answer


class MarkerCore:
    """The marker index of one table, driver aside (see the sync ``MarkerIndex``).

    ``info`` is the table's description when the caller has read it already (a listing): then
    nothing is described again. Otherwise the first call that needs it reads it, once per
    object. Nothing is sent by the constructor.
    """

    def __init__(
        self,
        client: object,
        table: str | None = None,
        *,
        index_name: str = DEFAULT_INDEX,
        marker_attribute: str | None = None,
        marker_sort_key: Any = None,
        usage: Usage | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        retry: RetryPolicy | None = None,
        info: TableInfo | None = None,
        name: str | None = None,
        attribute: str | None = None,
    ) -> None:
        self.client, self.table = self._connect(client, table, deadline)
        check_table_name(self.table)
        name = renamed("name", "index_name", name, index_name, DEFAULT_INDEX)
        attribute = renamed("attribute", "marker_attribute", attribute, marker_attribute, None)
        #: The marker index's name (``index_name=``, ``--index-name``).
        self.name = name
        #: The marker attribute (``DEFAULT_MARKER_ATTRIBUTE`` unless given). A follower takes
        #: the index's own key instead when none was given.
        self.attribute = DEFAULT_MARKER_ATTRIBUTE if attribute is None else attribute
        self._attribute_given = attribute
        self.usage = usage or Usage()
        self.deadline = check_deadline(deadline, self.table)
        self.retry = retry or RetryPolicy()
        self._sort_key_given = marker_sort_key
        self._info: OnceCell[TableInfo] = OnceCell()
        self._checked = False
        if info is not None:
            if info.name != self.table:
                raise ConfigurationError(
                    f"info= describes table {info.name!r}, not {self.table!r}.", table=self.table
                )
            self._learn(info)

    def _connect(self, client: object, table: str | None, deadline: float | None) -> Any:
        return client_and_table(client, table, deadline)

    # --- what is known without a request ---------------------------------------------------

    @property
    def info(self) -> TableInfo | None:
        """The table's description, once given or read (None before: no request is sent)."""
        return self._info.get() if self._info.done else None

    @property
    def marker_sort_key(self) -> dict[str, Any] | None:
        """The markers' sort key value (typed), once the table's description is known."""
        info = self.info
        return marker_sort_key(info, self._sort_key_given) if info is not None else None

    def _learn(self, info: TableInfo) -> TableInfo:
        marker_sort_key(info, self._sort_key_given)  # no sort key: a clear error
        return self._info.set(info)

    def _sort_key(self, info: TableInfo) -> dict[str, Any]:
        return marker_sort_key(info, self._sort_key_given)

    def _markers(self, info: TableInfo) -> Markers:
        """How this index's markers are known (see :mod:`ddbkeys.partition_keys.recognise`)."""
        pk, sk = info.partition_key, info.sort_key
        assert sk is not None
        return Markers(pk.name, sk.name, self.attribute, self._sort_key(info))

    def _marker_key(self, info: TableInfo, value: Any) -> dict[str, Any]:
        pk, sk = info.partition_key, info.sort_key
        assert sk is not None
        typed = value if isinstance(value, dict) else key_value(pk, value, table=self.table)
        return {pk.name: typed, sk.name: self._sort_key(info)}

    # --- sending ------------------------------------------------------------------------------

    def _begin(self) -> Deadline:
        """The deadline of a call (or, in a long one such as backfill, of one request)."""
        return Deadline(self.deadline, clock=self.retry.clock)

    def _attempts(
        self,
        attempt: Callable[[int], Flow[R]],
        what: str,
        deadline: Deadline | None = None,
        *,
        writes: bool = True,
    ) -> Flow[R]:
        return attempts(
            attempt,
            what=what,
            table=self.table,
            policy=self.retry,
            deadline=deadline or self._begin(),
            usage=self.usage,
            read_timeout=getattr(getattr(self.client, "meta", None), "config", None)
            and getattr(self.client.meta.config, "read_timeout", None),
            writes=writes,
        )

    def _table_info(self, deadline: Deadline) -> Flow[TableInfo]:
        """The table's description: given, or read once per object."""
        info = yield from once(
            self._info,
            lambda: self._attempts(
                lambda _: describe_flow(self.table), "DescribeTable", deadline, writes=False
            ),
            deadline,
            f"the description of table {self.table!r}",
            self.table,
        )
        self._sort_key(info)
        return info

    def _describe(self, deadline: Deadline) -> Flow[dict[str, Any]]:
        """DescribeTable now (the index's status changes); what it says is kept."""
        answer = yield from self._attempts(
            lambda _: send(describe_table({"TableName": self.table})),
            "DescribeTable",
            deadline,
            writes=False,
        )
        raw: dict[str, Any] = dict(described(answer, self.table))
        self._learn(table_info(raw, self.table))
        return raw

    # --- the index ------------------------------------------------------------------------------

    def _status(self, fresh: bool) -> Flow[str | None]:
        deadline = self._begin()
        if fresh or not self._info.done:
            yield from self._describe(deadline)
        info = yield from self._table_info(deadline)
        return index_status(info, self.name)

    def check_flow(self) -> Flow[TableInfo]:
        """The flow of ``check()``: the table's description, once the index is fit to list."""
        return self._check(self._begin())

    def _check(self, deadline: Deadline) -> Flow[TableInfo]:
        """The table's description, once the index is known to be there, KEYS_ONLY, keyed on
        the marker attribute and ACTIVE (an index seen building is described again)."""
        info = yield from self._table_info(deadline)
        if index_status(info, self.name) not in (None, "ACTIVE"):
            yield from self._describe(deadline)
            info = self._info.get()
        check_index(info, self.name, self.attribute)
        return info

    def _checked_info(self, deadline: Deadline) -> Flow[TableInfo]:
        """:meth:`_check`, once per object: before the first marker is written or removed."""
        if not self._checked:
            yield from self._check(deadline)
            self._checked = True
        info = yield from self._table_info(deadline)
        return info

    def _maintained(self, deadline: Deadline) -> Flow[TableInfo]:
        """:meth:`_check` for a maintainer: the marker attribute is the index's own key when
        none was given (one given that differs is an error, as any mismatch)."""
        info = yield from self._table_info(deadline)
        keyed = info.index_hash_keys.get(self.name)
        if self._attribute_given is None and keyed is not None:
            self.attribute = keyed
        info = yield from self._check(deadline)
        self._checked = True
        return info

    def _create(self, wait: bool, timeout: float) -> Flow[None]:
        deadline = self._begin()
        raw = yield from self._describe(deadline)
        info = yield from self._table_info(deadline)
        if index_status(info, self.name) is not None:
            check_index(info, self.name, self.attribute, active=False)
            if not wait or index_status(info, self.name) == "ACTIVE":
                return
        else:
            request = create_request(
                raw, self.table, self.name, self.attribute, info.partition_key.type
            )
            yield from self._attempts(
                lambda _: send(update_table(request)),
                f"UpdateTable (adding index {self.name!r})",
                deadline,
            )
        ends = Deadline(timeout, clock=self.retry.clock)
        pause = 0.1  # DynamoDB Local is ready at once; the service takes minutes
        while True:
            yield from self._describe(self._begin())
            if not wait or index_status(self._info.get(), self.name) == "ACTIVE":
                return
            if not ends.allows(pause):
                raise DdbKeysError(
                    f"Index {self.name!r} of table {self.table!r} is not ACTIVE after "
                    f"{timeout:.0f} s; it may still be building.",
                    table=self.table,
                )
            yield Pause(pause, self.retry.sleep)
            pause = min(pause * 1.5, 5.0)

    # --- markers ------------------------------------------------------------------------------

    def _mark(self, value: Any, deadline: Deadline) -> Flow[bool]:
        """Put the marker (conditional: nothing there); True if written, False if a marker
        was there, :class:`MarkerClashError` if data is. A clear error, nothing written, unless
        the index is there (checked once per object)."""
        info = yield from self._checked_info(deadline)
        key = self._marker_key(info, value)
        pk = info.partition_key.name
        item = {
            **key,
            self.attribute: key[pk],
            VERSION_ATTRIBUTE: {"S": uuid.uuid4().hex[:16]},
            ENTITY_ATTRIBUTE: {"S": MARKER},
        }

        def attempt(_: int) -> Flow[tuple[bool, Mapping[str, Any] | None]]:
            try:
                yield put_item(
                    {
                        "TableName": self.table,
                        "Item": item,
                        "ConditionExpression": "attribute_not_exists(#pk)",
                        "ExpressionAttributeNames": {"#pk": pk},
                        "ReturnConsumedCapacity": "TOTAL",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    },
                    items=1,
                    count_refused=True,
                )
            except ClientError as exc:
                if error_code(exc) != "ConditionalCheckFailedException":
                    raise
                return False, error_response(exc).get("Item") or {}
            return True, None

        written, old = yield from self._attempts(attempt, "marking a collection", deadline)
        answer = put_answer(written, old, self._markers(info))
        if answer is None:
            raise clash(info, key, self.attribute)
        return answer

    def _unmark(self, value: Any, deadline: Deadline) -> Flow[bool]:
        info = yield from self._checked_info(deadline)
        request: DeleteItemInputTypeDef = {
            "TableName": self.table,
            "Key": self._marker_key(info, value),
            "ConditionExpression": "#m = #pk",  # a marker: its attribute holds its own key
            "ExpressionAttributeNames": {"#m": self.attribute, "#pk": info.partition_key.name},
            "ReturnConsumedCapacity": "TOTAL",
        }
        removed = yield from self._attempts(
            lambda _: conditional(delete_item(request)),
            "removing a marker",
            deadline,
        )
        return removed is not None

    def _mark_many(
        self, keys: Iterable[Any], progress: Callable[[int], None] | None
    ) -> Flow[BackfillReport]:
        report = BackfillReport()
        for key in keys:
            yield from self._mark_one(key, report)
            if progress is not None:
                progress(report.written)
        return report

    def _mark_one(self, key: Any, report: BackfillReport) -> Flow[None]:
        try:
            if (yield from self._mark(key, self._begin())):
                report.written += 1
            else:
                report.present += 1
        except MarkerClashError as found:
            report.clashes.append(found.key)

    def _pages(self, pages: KeyPages, what: str) -> Flow[list[Key]]:
        """One page of ``pages`` (each request with its own deadline): its new keys."""
        request = pages.request()
        assert request is not None
        page: ScanOutputTypeDef = yield from self._attempts(
            lambda _: send(scan(request)),
            what,
            writes=False,
        )
        return pages.take(page)

    def _backfill(
        self, progress: Callable[[int], None] | None, state_table: str | None, record: bool = True
    ) -> Flow[BackfillReport]:
        """See :func:`ddbkeys.partition_keys.backfill.backfill_flow`."""
        from ddbkeys.partition_keys.backfill import backfill_flow  # noqa: PLC0415 (it uses this)

        report: BackfillReport = yield from backfill_flow(self, progress, state_table, record)
        return report

    def _keys(self, pages: KeyPages, what: str) -> Flow[set[tuple[str, Any]]]:
        found: set[tuple[str, Any]] = set()
        while pages.request() is not None:
            found.update(hashable(k) for k in (yield from self._pages(pages, what)))
        return found

    def _verify(self) -> Flow[VerifyReport]:
        info = yield from self.check_flow()
        markers = self._markers(info)
        table_keys = yield from self._keys(SkipPages(info, markers), "reading the table's keys")
        index_keys = yield from self._keys(
            IndexPages(self.table, self.name, markers), "reading the marker index"
        )
        report = VerifyReport(self.table, self.name, len(table_keys), len(index_keys))
        for hashed in sorted(table_keys - index_keys):
            key = unhash(hashed)
            if (yield from self._holds_data_at_marker(info, key)):
                report.clashes.append(key)  # it cannot be marked: not "missing"
            else:
                report.missing.append(key)
        # A marker whose collection holds nothing else: the data is gone but the marker stays.
        for hashed in sorted(index_keys):
            if (yield from self._alone(info, unhash(hashed))):
                report.orphans.append(unhash(hashed))
        return report

    def _alone(self, info: TableInfo, key: Key) -> Flow[bool]:
        """Whether the collection ``key`` holds at most one item (its marker)."""
        request: QueryInputTypeDef = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": info.partition_key.name},
            "ExpressionAttributeValues": {":pk": key},
            "Limit": 2,
            "ProjectionExpression": "#pk",
            "ReturnConsumedCapacity": "TOTAL",
        }
        answer: QueryOutputTypeDef = yield from self._attempts(
            lambda _: send(query(request, count_scanned=True)),
            "reading a collection",
            writes=False,
        )
        return len(answer.get("Items", [])) < 2 and "LastEvaluatedKey" not in answer

    def _holds_data_at_marker(self, info: TableInfo, key: Key) -> Flow[bool]:
        """Whether the collection's item at the marker's key exists and is not a marker."""
        request: GetItemInputTypeDef = {
            "TableName": self.table,
            "Key": self._marker_key(info, key),
            "ReturnConsumedCapacity": "TOTAL",
        }
        answer: GetItemOutputTypeDef = yield from self._attempts(
            lambda _: send(get_item(request)),
            "reading a marker",
            writes=False,
        )
        item = answer.get("Item")
        return item is not None and self._markers(info).is_data(item)

    def _repair(self, remove_orphans: bool, state_table: str | None = None) -> Flow[VerifyReport]:
        """See :func:`ddbkeys.partition_keys.backfill.repair_flow`."""
        from ddbkeys.partition_keys.backfill import repair_flow  # noqa: PLC0415 (it uses this)

        report: VerifyReport = yield from repair_flow(self, remove_orphans, state_table)
        return report


def conditional(request: Request) -> Flow[Any]:
    """One conditional request as an attempt: its answer, or None when its condition failed."""
    try:
        answer = yield request
    except ClientError as exc:
        if error_code(exc) == "ConditionalCheckFailedException":
            return None
        raise
    return answer
