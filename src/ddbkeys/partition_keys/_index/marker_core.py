"""The marker index's decisions apart from any client: :class:`MarkerCore`, a value built from its
settings alone, and its work as flows (see :mod:`ddbkeys._core`): the table's description, create,
check, mark, unmark, verify, each request sent through the one retry layer (backfill and repair are
in :mod:`ddbkeys.partition_keys._index.backfill`). :class:`ddbkeys.partition_keys.MarkerIndex`
(sync) and :class:`ddbkeys.aio.MarkerIndex` are this core, a client and a driver (what they share:
:class:`MarkerIndexBase`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys._capacity import Usage
from ddbkeys._core.attempts import attempts
from ddbkeys._core.steps import (
    Flow,
    Request,
    delete_item,
    describe_table,
    put_item,
    scan,
)
from ddbkeys._core.stopping import StopFlag
from ddbkeys._entity import ENTITY_ATTRIBUTE, MARKER
from ddbkeys._errors import ConfigurationError, amend, error_code
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys._schema import (
    TableInfo,
    check_table_name,
    describe_flow,
    described,
    key_value,
    table_info,
)
from ddbkeys._translate import error_response, maybe_own, unanswered
from ddbkeys.partition_keys._index.late_puts import landed_late, late
from ddbkeys.partition_keys._index.markers import (
    DEFAULT_INDEX,
    DEFAULT_MARKER_ATTRIBUTE,
    VERSION_ATTRIBUTE,
    BackfillReport,
    KeyPages,
    MarkerClashError,
    Markers,
    _IndexGoneError,
    check_index,
    clash,
    hashable,
    index_gone,
    index_status,
    marker_sort_key,
    marker_table,
    put_answer,
)
from ddbkeys.partition_keys._listing.base import Key, check_deadline

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import (
        DeleteItemInputTypeDef,
        ScanOutputTypeDef,
    )

__all__ = ["MarkerCore", "conditional", "send", "sending"]

R = TypeVar("R")

#: How long (seconds) a maintainer trusts its last look at the index: a marker written later
#: describes the table again first (a removal through ``unmark`` too), and none is written
#: where the index is gone or DELETING (helper-94 F10: a backfill or follower left running
#: while ``index drop`` took the index away marked the collections it emptied again). ``index
#: drop`` lets this pass, and a second more, before it removes the markers.
RECHECK = 10.0


def send(request: Request) -> Flow[Any]:
    """One request as an attempt: its answer (its error goes up, for the retry layer)."""
    answer = yield request
    return answer


class MarkerCore:
    """The marker index ``index_name`` of ``table``, driver and client aside: its settings
    (``marker_attribute``, ``marker_sort_key``, ``deadline``, ``retry``, ``usage``, and
    ``read_timeout``, the client's, in seconds) and its work as flows. Nothing is sent by the
    constructor; no client is needed to build it.

    What it knows besides its settings is the table's description (:attr:`info`): the one given
    (a listing's), or read by the first flow that needs it and kept (two first calls at once
    may each read it), and whether the index was checked before a marker was written.
    """

    def __init__(
        self,
        table: str,
        *,
        index_name: str = DEFAULT_INDEX,
        marker_attribute: str | None = None,
        marker_sort_key: Any = None,
        usage: Usage | None = None,
        deadline: float | None = DEFAULT_DEADLINE,
        retry: RetryPolicy | None = None,
        info: TableInfo | None = None,
        read_timeout: float | None = None,
    ) -> None:
        self.table = check_table_name(table)
        #: The marker index's name (``index_name=``, ``--index-name``).
        self.name = index_name
        #: The marker attribute (``DEFAULT_MARKER_ATTRIBUTE`` unless given). A follower takes
        #: the index's own key instead when none was given.
        self.attribute = DEFAULT_MARKER_ATTRIBUTE if marker_attribute is None else marker_attribute
        self.attribute_given = marker_attribute
        self.sort_key_given = marker_sort_key
        self.usage = usage or Usage()
        self.deadline = check_deadline(deadline, self.table)
        self.retry = retry or RetryPolicy()
        self.read_timeout = read_timeout
        #: The table's description, once given or read (None before).
        self.info: TableInfo | None = None
        #: Whether the index was found fit (:meth:`check`) before the first marker written,
        #: as described now; and whether it ever was, or was seen ACTIVE (one gone since is
        #: said so).
        self.checked = self.found = False
        #: When (``retry.clock``) the table was last described (or ``info`` given), and how
        #: long that look is trusted before a marker is written (:meth:`checked_info`).
        self.looked_at = self.retry.clock()
        self.recheck = RECHECK
        if info is not None:
            if info.name != self.table:
                raise ConfigurationError(
                    f"info= describes table {info.name!r}, not {self.table!r}.", table=self.table
                )
            self.learn(info)

    # --- what is known without a request ---------------------------------------------------

    @property
    def marker_sort_key(self) -> dict[str, Any] | None:
        """The markers' sort key value (typed), once the table's description is known."""
        info = self.info
        return marker_sort_key(info, self.sort_key_given) if info is not None else None

    def learn(self, info: TableInfo) -> TableInfo:
        """Keep ``info``, the table's description (a table without a sort key: a clear error)."""
        marker_table(info, self.name, self.attribute, self.sort_key_given)
        self.info, self.looked_at = info, self.retry.clock()
        # (helper-100 F2: a warm Lambda environment that had seen the index, but written no
        # marker yet, told the operator who had just dropped it to create it)
        self.found = self.found or index_status(info, self.name) == "ACTIVE"
        return info

    def sort_key(self, info: TableInfo) -> dict[str, Any]:
        """The markers' sort key value (typed) in the table ``info`` describes."""
        return marker_sort_key(info, self.sort_key_given)

    def markers(self, info: TableInfo) -> Markers:
        """How this index's markers are known (:mod:`ddbkeys.partition_keys._listing.recognise`)."""
        pk, sk = info.partition_key, info.sort_key
        assert sk is not None
        return Markers(pk.name, sk.name, self.attribute, self.sort_key(info))

    def marker_key(self, info: TableInfo, value: Any) -> dict[str, Any]:
        """The whole key (typed) of the marker of the collection ``value``."""
        pk, sk = info.partition_key, info.sort_key
        assert sk is not None
        typed = value if isinstance(value, dict) else key_value(pk, value, table=self.table)
        return {pk.name: typed, sk.name: self.sort_key(info)}

    # --- sending ------------------------------------------------------------------------------

    def begin(self) -> Deadline:
        """The deadline of a call (or, in a long one such as backfill, of one request)."""
        return Deadline(self.deadline, clock=self.retry.clock)

    def attempts(
        self,
        attempt: Callable[[int], Flow[R]],
        what: str,
        deadline: Deadline | None = None,
        *,
        writes: bool = True,
    ) -> Flow[R]:
        """``attempt(n)`` through the one retry layer, within ``deadline`` (a new one when
        None), counted in ``usage``."""
        return attempts(
            attempt,
            what=what,
            table=self.table,
            policy=self.retry,
            deadline=deadline or self.begin(),
            usage=self.usage,
            read_timeout=self.read_timeout,
            writes=writes,
        )

    def table_info(self, deadline: Deadline | None = None) -> Flow[TableInfo]:
        """The table's description: the one known, or one DescribeTable, kept."""
        info = self.info
        if info is None:
            asked = self.retry.clock()
            info = yield from self.attempts(
                lambda _: describe_flow(self.table), "DescribeTable", deadline, writes=False
            )
            self.learn(info)  # (helper-102 F4: kept without a look, ``found`` unset)
            self.looked_at = asked
        marker_table(info, self.name, self.attribute, self.sort_key_given)
        return info

    def describe(self, deadline: Deadline | None = None) -> Flow[dict[str, Any]]:
        """DescribeTable now (the index's status changes); what it says is kept, as of when
        it was asked (an answer that came late is as old as its question)."""
        asked = self.retry.clock()
        answer = yield from self.attempts(
            lambda _: send(describe_table({"TableName": self.table})),
            "DescribeTable",
            deadline,
            writes=False,
        )
        raw: dict[str, Any] = dict(described(answer, self.table))
        self.learn(table_info(raw, self.table))
        self.looked_at = asked
        return raw

    # --- the index ------------------------------------------------------------------------------

    def status(self, fresh: bool = False) -> Flow[str | None]:
        """The index's status (None: no such index), from the description known unless
        ``fresh`` or none is known."""
        deadline = self.begin()
        if fresh or self.info is None:
            yield from self.describe(deadline)
        info = yield from self.table_info(deadline)
        return index_status(info, self.name)

    def check(self, deadline: Deadline | None = None) -> Flow[TableInfo]:
        """The table's description, once the index is known to be there, KEYS_ONLY, keyed on
        the marker attribute and ACTIVE (an index seen building is described again)."""
        deadline = deadline or self.begin()
        info = yield from self.table_info(deadline)
        if index_status(info, self.name) not in (None, "ACTIVE"):
            yield from self.describe(deadline)
            info = yield from self.table_info(deadline)
        if self.found:  # (helper-102 F1: a follower's look said "has no index ... Create it")
            index_gone(info, self.name)
        check_index(info, self.name, self.attribute)
        return info

    def checked_info(self, deadline: Deadline) -> Flow[TableInfo]:
        """:meth:`check` before the first marker written or removed, and again, the table
        described anew, where the description known is ``recheck`` seconds old
        (:data:`RECHECK`): for a maintainer that found the index, an index gone or DELETING
        since is a :class:`~ddbkeys.ConfigurationError` (nothing written: one left running
        while the index is dropped stops at its next change; a warm Lambda environment's
        description is an hour old, maybe)."""
        if self.retry.clock() - self.looked_at >= self.recheck:
            yield from self.describe(deadline)
            self.checked = False
        info = yield from self.table_info(deadline)
        if self.found:  # (said again at each call: a Lambda handler goes on to the next)
            index_gone(info, self.name)
        if not self.checked:
            info = yield from self.check(deadline)
            self.checked = self.found = True
        return info

    def maintained(self, deadline: Deadline | None = None) -> Flow[TableInfo]:
        """:meth:`check` for a maintainer: the marker attribute is the index's own key when
        none was given (one given that differs is an error, as any mismatch)."""
        deadline = deadline or self.begin()
        info = yield from self.table_info(deadline)
        keyed = info.index_hash_keys.get(self.name)
        if self.attribute_given is None and keyed is not None:
            self.attribute = keyed
        info = yield from self.check(deadline)
        self.checked = self.found = True
        return info

    # --- markers ------------------------------------------------------------------------------

    def mark(self, value: Any, deadline: Deadline | None = None) -> Flow[bool]:
        """Put the marker (conditional: nothing there); True if written, False if a marker
        was there, :class:`MarkerClashError` if data is. A clear error, nothing written, unless
        the index is there (checked once, see :meth:`checked_info`)."""
        deadline = deadline or self.begin()
        info = yield from self.checked_info(deadline)
        key = self.marker_key(info, value)
        pk = info.partition_key.name
        item = {
            **key,
            self.attribute: key[pk],
            VERSION_ATTRIBUTE: {"S": uuid.uuid4().hex[:16]},
            ENTITY_ATTRIBUTE: {"S": MARKER},
        }

        lost: list[bool] = []  # (a put whose answer never came: it may land later)

        def attempt(_: int) -> Flow[tuple[bool, Mapping[str, Any] | None]]:
            # (a retry after a long wait looks at the index again first: a put sent at any
            # time had a look at most ``recheck`` seconds old)
            try:
                yield from self.checked_info(deadline)
            except _IndexGoneError as gone:  # (helper-103 F3: a put abandoned, then landed)
                if any(lost):
                    amend(gone, f"A put of its marker got no answer: {late(key[pk])}")
                raise
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
                old = error_response(exc).get("Item") or {}
                if old.get(VERSION_ATTRIBUTE) == item[VERSION_ATTRIBUTE]:
                    return True, None  # its own write, whose answer was lost: written
                return False, old
            except BotoCoreError as exc:
                lost.append(unanswered(exc))
                raise
            return True, None

        written, old = yield from self.attempts(attempt, "marking a collection", deadline)
        if written and self.retry.clock() - self.looked_at >= self.recheck + 1.0:
            yield from self._landed_late(key, pk, deadline)
        answer = put_answer(written, old, self.markers(info))
        if answer is None:
            raise clash(info, key, self.attribute)
        return answer

    def _landed_late(
        self, key: dict[str, Any], partition_key: str, deadline: Deadline
    ) -> Flow[None]:
        """:func:`~ddbkeys.partition_keys._index.late_puts.landed_late` (a put answered after
        the drop's wait: taken back where the index is gone)."""
        yield from landed_late(self, key, partition_key)

    def unmark(self, value: Any, deadline: Deadline | None = None) -> Flow[bool]:
        """Remove one collection's marker: True if there was one (an item at the marker's key
        that is not a marker is never removed), or none after a try whose answer was lost."""
        deadline = deadline or self.begin()
        info = yield from self.checked_info(deadline)
        removed = yield from self.remove_marker(
            self.marker_key(info, value), info.partition_key.name, deadline
        )
        return removed

    def remove_marker(
        self, key: dict[str, Any], partition_key: str, deadline: Deadline
    ) -> Flow[bool]:
        """Delete the item at ``key`` (a marker's whole key) if it is a marker, the index
        aside (``index drop`` removes markers once the index is gone): True if it was, or
        none was there after a try whose answer was lost (the try removed it)."""
        request: DeleteItemInputTypeDef = {
            "TableName": self.table,
            "Key": key,
            "ConditionExpression": "#m = #pk",  # a marker: its attribute holds its own key
            "ExpressionAttributeNames": {"#m": self.attribute, "#pk": partition_key},
            "ReturnConsumedCapacity": "TOTAL",
        }
        lost: list[bool] = []  # (an attempt whose answer never came: it may have removed it)

        def attempt(_: int) -> Flow[Any]:
            try:
                return (yield delete_item(request))
            except ClientError as exc:
                if error_code(exc) != "ConditionalCheckFailedException":
                    raise
                return {} if maybe_own(exc, lost) else None  # (not there: removed by whom?)
            except BotoCoreError as exc:
                lost.append(unanswered(exc))
                raise

        removed = yield from self.attempts(attempt, "removing a marker", deadline)
        return removed is not None

    def mark_many(
        self, keys: Iterable[Any], progress: Callable[[int], None] | None = None
    ) -> Flow[BackfillReport]:
        """:meth:`mark` each collection of ``keys`` (each with a deadline of its own)."""
        report = BackfillReport()
        for key in keys:
            try:
                if (yield from self.mark(key)):
                    report.written += 1
                else:
                    report.present += 1
            except MarkerClashError as found:
                report.clashes.append(found.key)
            if progress is not None:
                progress(report.written)
        return report

    def page(self, pages: KeyPages, what: str) -> Flow[list[Key]]:
        """One page of ``pages`` (each request with its own deadline): its new keys."""
        request = pages.request()
        assert request is not None
        page: ScanOutputTypeDef = yield from self.attempts(
            lambda _: send(scan(request)),
            what,
            writes=False,
        )
        return pages.take(page)

    def key_set(
        self,
        pages: KeyPages,
        what: str,
        stop: StopFlag | None = None,
        seen: Callable[[int], None] | None = None,
    ) -> Flow[set[tuple[str, Any]]]:
        """Every key ``pages`` reads (hashable), page by page (``stop`` looked at between;
        ``seen`` told how many so far after each page)."""
        found: set[tuple[str, Any]] = set()
        while pages.request() is not None:
            if stop is not None:
                stop.check()
            found.update(hashable(k) for k in (yield from self.page(pages, what)))
            if seen is not None:
                seen(len(found))
        return found


def sending(request: Request) -> Callable[[int], Flow[Any]]:
    """An attempt (for ``attempts``) that sends ``request`` (see :func:`send`)."""
    return lambda _: send(request)


def conditional(request: Request) -> Flow[Any]:
    """One conditional request as an attempt: its answer, or None when its condition failed."""
    try:
        answer = yield request
    except ClientError as exc:
        if error_code(exc) == "ConditionalCheckFailedException":
            return None
        raise
    return answer
