"""What every partition-key listing method shares: the greatest sort key values, the reader
(its flows: one Scan page with retries, read budget and accounting), the read budget, the
segment method's shape, and typed keys. The listings that run them: :mod:`ddbkeys.aio._listing`
(asyncio) and :mod:`ddbkeys.partition_keys._listing.listing` (threads)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, Unpack

from ddbkeys._capacity import Usage
from ddbkeys._clients import as_client
from ddbkeys._core.attempts import attempts
from ddbkeys._core.steps import Flow, Pause, scan
from ddbkeys._core.stopping import STOP_SLICE, StopFlag
from ddbkeys._drivers.sync import SyncDriver, pause
from ddbkeys._errors import ConfigurationError
from ddbkeys._retry import DEFAULT_DEADLINE, Deadline, RetryPolicy
from ddbkeys._schema import TableInfo, describe_flow
from ddbkeys.partition_keys._listing.recognise import (
    Markers,
    Strays,
    is_own,
    marker_sort_key,
    markers_of,
    own_projection,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.literals import (
        ConditionalOperatorType,
        ReturnConsumedCapacityType,
        SelectType,
    )
    from mypy_boto3_dynamodb.type_defs import (
        ConditionTypeDef,
        ScanInputTypeDef,
        ScanOutputTypeDef,
        UniversalAttributeValueTypeDef,
    )

    class ScanPage(TypedDict, total=False):
        """A Scan without its table: what a listing method asks of one page. The reader adds
        ``TableName`` (and ``ReturnConsumedCapacity``). The keys of mypy_boto3's
        ``ScanInputTypeDef`` but ``TableName``, with their types, so that
        ``{"TableName": table, **page}`` is a ``ScanInputTypeDef`` and a ``ScanInputTypeDef``
        is a ``ScanPage``."""

        IndexName: str
        AttributesToGet: Sequence[str]
        Limit: int
        Select: SelectType
        ScanFilter: Mapping[str, ConditionTypeDef]
        ConditionalOperator: ConditionalOperatorType
        ExclusiveStartKey: Mapping[str, UniversalAttributeValueTypeDef]
        ReturnConsumedCapacity: ReturnConsumedCapacityType
        TotalSegments: int
        Segment: int
        ProjectionExpression: str
        FilterExpression: str
        ExpressionAttributeNames: Mapping[str, str]
        ExpressionAttributeValues: Mapping[str, UniversalAttributeValueTypeDef]
        ConsistentRead: bool


__all__ = [
    "ADVICE",
    "MAX_SORT_KEY",
    "Key",
    "Position",
    "ReadBudget",
    "Reader",
    "SegmentMethod",
    "check_deadline",
    "client_and_table",
    "plain_key",
    "read_timeout",
]

#: The greatest value of each key type: a start key holding it jumps past the whole collection.
MAX_SORT_KEY: dict[str, dict[str, Any]] = {
    "S": {"S": chr(0x10FFFF) * 256},  # 1,024 bytes of the greatest code point in UTF-8
    "N": {"N": "9.9999999999999999999999999999999999999E+125"},
    "B": {"B": b"\xff" * 1024},
}
#: What a listing that ran out of attempts advises.
ADVICE = "Lower --max-rcu-per-second, or try again later."

T = TypeVar("T")
R = TypeVar("R")
Key = dict[str, Any]  # one DynamoDB AttributeValue, e.g. {"S": "a"}
Position = Key | bool | None  # per segment: not started (None), last key handed out, done (True)


def check_deadline(deadline: object, table: str | None = None) -> float | None:
    """A deadline above 0 seconds, or None (no deadline)."""
    if deadline is not None and (
        isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not deadline > 0
    ):
        raise ConfigurationError(
            f"The deadline must be above 0 seconds (or None for none), not {deadline!r}.",
            table=table,
        )
    return None if deadline is None else float(deadline)


def read_timeout(client: Any) -> float | None:
    """The read timeout of ``client``'s config (None: unknown, or a stand-in without one)."""
    config = getattr(getattr(client, "meta", None), "config", None)
    return getattr(config, "read_timeout", None) if config is not None else None


def client_and_table(
    client: object, table: str | None, deadline: float | None
) -> tuple[DynamoDBClient, str]:
    """What a public entry point needs from its arguments: a client (by
    :func:`~ddbkeys.as_client`), the table's name, and a deadline above 0 (or None)."""
    resolved, name = as_client(client, table)
    if name is None:
        raise ConfigurationError("No table given: pass the table's name, or a boto3 Table.")
    check_deadline(deadline, name)
    return resolved, name


def plain_key(value: Mapping[str, Any]) -> str | int | Decimal | bytes:
    """A key AttributeValue as Python: str, int (or Decimal when not whole), bytes."""
    kind, raw = next(iter(value.items()))
    if kind == "N":
        number = Decimal(str(raw))
        return int(number) if number == number.to_integral_value() else number
    if kind == "B":
        return bytes(raw)
    return str(raw)


class ReadBudget:
    """At most ``rate`` read units a second, on average: a token bucket one second deep.

    Pure: it says how long to wait (:meth:`wait_time`, or :meth:`wait`, a flow of
    :class:`~ddbkeys._core.steps.Pause` steps that a stop flag ends) and takes the units a
    request consumed (:meth:`spend`), each under a short lock held across no wait, so one budget
    serves reader threads and asyncio tasks alike. ``clock`` and ``sleep`` are injectable.

    A request goes while the bucket is out of debt, and may take it into debt by what it read
    (a page of up to 1 MB). ``full=False`` starts it empty, and ``settles`` has each segment's
    listing wait off the debt before it ends: then a listing reads at most ``rate`` times the
    seconds it ran, however short (a task's: tasks run one after another each keep to their
    share, where a full bucket and a forgotten debt would let each read ahead of it).
    """

    def __init__(
        self,
        rate: float,
        *,
        full: bool = True,
        settles: bool = False,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not rate > 0:
            raise ConfigurationError(f"The read budget must be above 0 units a second, not {rate}.")
        self.rate = float(rate)
        self.settles = settles
        self.clock = clock
        self.sleep = sleep
        self._lock = threading.Lock()
        self._tokens = self.rate if full else 0.0
        self._stamp = clock()

    def _refill(self) -> None:
        now = self.clock()
        self._tokens = min(self.rate, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    def wait_time(self) -> float:
        """Seconds until the bucket is out of debt (0: a request may go now)."""
        with self._lock:
            self._refill()
            if self._tokens > -1e-9:  # (float dust is no debt)
                return 0.0
            return max(0.001, -self._tokens / self.rate)

    def wait(self, stop: StopFlag | None = None) -> Generator[Pause, None, None]:
        """Pause until the bucket is out of debt. With ``stop``, in pauses of at most
        ``STOP_SLICE`` seconds that look at it (the debt is looked at again after each)."""
        while (seconds := self.wait_time()) > 0:
            yield Pause(seconds if stop is None else min(seconds, STOP_SLICE), self.sleep, stop)

    def acquire(self, stop: StopFlag | None = None) -> None:
        """:meth:`wait` in this thread."""
        for step in self.wait(stop):
            pause(step)

    def spend(self, units: float) -> None:
        """Take out the units a request consumed."""
        with self._lock:
            self._refill()
            self._tokens -= units


@dataclass
class Reader:
    """The requests of one listing: its retries, deadline, read budget, stop flag and
    accounting. Its flows (:meth:`page`, :meth:`describe`, :meth:`attempts`) run under either
    driver; ``client`` is the one that driver sends with (:meth:`call`, :meth:`scan`,
    :meth:`run` and :meth:`iterate` send with it in this thread: a boto3 client).

    A listing may rightly run for hours, so its deadline (``deadline`` seconds, None for none)
    bounds each request with its retries: no answer for that long, through throttling, 5xx,
    timeouts or a closed port, is a :class:`~ddbkeys.DeadlineExceededError` saying which.
    """

    client: Any
    table: str
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    usage: Usage = field(default_factory=Usage)
    budget: ReadBudget | None = None
    deadline: float | None = DEFAULT_DEADLINE
    what: str = "listing the partition keys"
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    #: Set to stop the listing: looked at before each request and while waiting.
    stop: StopFlag = field(default_factory=StopFlag, repr=False)

    # --- flows -------------------------------------------------------------------------------

    def attempts(
        self, attempt: Callable[[int], Flow[R]], deadline: Deadline | None = None
    ) -> Flow[R]:
        """``attempt(n)`` run by the one retry layer (:func:`ddbkeys._core.attempts.attempts`)
        within a deadline of its own (a new one per request with its retries), tried again
        after throttling, 5xx and dropped connections, at most ``retry.max_attempts`` times;
        any other error goes up at once, as a DdbKeysError."""
        return attempts(
            attempt,
            what=self.what,
            table=self.table,
            policy=self.retry,
            deadline=deadline or Deadline(self.deadline, clock=self.clock),
            usage=self.usage,
            read_timeout=read_timeout(self.client),
            stop=self.stop,
            advice=ADVICE,
            writes=False,
        )

    def page(self, request: ScanPage) -> Flow[ScanOutputTypeDef]:
        """One Scan of this table (or of its index; ``request`` is not changed): within the
        read budget (waited for before the request's deadline starts), retried, counted by the
        driver, its consumed units taken out of the budget."""
        params: ScanInputTypeDef = {
            "TableName": self.table,
            **request,
            "ReturnConsumedCapacity": "TOTAL",
        }
        budget = self.budget
        if budget is not None:
            yield from budget.wait(self.stop)

        def attempt(n: int) -> Flow[ScanOutputTypeDef]:
            if n and budget is not None:
                yield from budget.wait(self.stop)
            answer: ScanOutputTypeDef = yield scan(params)
            return answer

        response = yield from self.attempts(attempt)
        if budget is not None:
            consumed = response.get("ConsumedCapacity") or {}
            budget.spend(float(consumed.get("CapacityUnits", 0.5)))
        return response

    def describe(self) -> Flow[TableInfo]:
        """The table's description: one DescribeTable (not counted), retried."""
        return self.attempts(lambda _: describe_flow(self.table))

    # --- in this thread, with a boto3 client ------------------------------------------------

    def run(self, flow: Flow[T]) -> T:
        """Run ``flow`` on the sync driver, with this reader's client and usage."""
        return SyncDriver(self.client, self.usage).run(flow)

    def iterate(self, flow: Flow[Any]) -> Iterator[Any]:
        """Run a streaming flow on the sync driver: what it emits."""
        return SyncDriver(self.client, self.usage).iterate(flow)

    def scan(self, **request: Unpack[ScanPage]) -> ScanOutputTypeDef:
        """:meth:`page`, sent in this thread."""
        return self.run(self.page(request))


class SegmentMethod:
    """One listing method: its :meth:`keys` flow emits the partition keys of one Scan segment,
    each once, in scan order, starting after the collection of ``after`` (a key
    AttributeValue) when given. The flow only decides (which page to ask for next, which keys
    are new); a driver sends its requests.

    ``markers`` says how ddbkeys' markers are known (by default: the default marker attribute
    and sort key; None in a table without a sort key). A collection that holds nothing but
    ddbkeys' own items (its marker, counter items: :mod:`~ddbkeys.partition_keys._listing.
    recognise`) is not handed out, unless ``own_items`` (a listing's ``include_own_items``)."""

    name = "?"

    def __init__(self, info: TableInfo, markers: Markers | None = None) -> None:
        self.info = info
        self.markers = markers or markers_of(info)
        self.own_items = False
        #: keys handed out at an item that says it is a marker but is not one of ``markers``
        self.strays = Strays()

    def knowing_markers_by(
        self, attribute: str, *, sort_key: Any = None, own_items: bool = False
    ) -> SegmentMethod:
        """This method, knowing ddbkeys' markers by ``attribute`` and ``sort_key`` (a
        listing's ``marker_attribute`` and ``marker_sort_key``; None: the default value), and
        handing out collections that hold only ddbkeys' own items too when ``own_items`` (its
        ``include_own_items``)."""
        if self.markers is not None:
            value = marker_sort_key(self.info, sort_key)
            self.markers = replace(self.markers, attribute=attribute, sort_value=value)
        self.own_items = own_items
        return self

    def yours(self, item: Mapping[str, Any]) -> bool:
        """Whether ``item`` makes its collection one to hand out: any item but ddbkeys' own (a
        marker, a counter item), or any item at all with ``own_items``. Nothing noted."""
        return self.own_items or not is_own(item, self.markers)

    def counts(self, item: Mapping[str, Any]) -> bool:
        """:meth:`yours`, for the item a key is handed out at (once a key): one that says it
        is a marker but is none of this listing's is noted (:attr:`strays`)."""
        if not self.yours(item):
            return False
        if not self.own_items:
            self.strays.met(item, self.markers)
        return True

    def start_key(self, after: Key) -> dict[str, Any]:
        """The ExclusiveStartKey just past the collection of partition key ``after``."""
        pk = self.info.partition_key
        key: dict[str, Any] = {pk.name: after}
        if self.info.sort_key is not None:
            key[self.info.sort_key.name] = MAX_SORT_KEY[self.info.sort_key.type]
        return key

    def first_request(self, segment: int, segments: int, after: Key | None) -> ScanPage:
        """The Scan of a segment's first page (projecting the partition key, and what tells
        ddbkeys' own items from yours unless they count too), starting past the collection of
        ``after`` when given."""
        projection, names = "#pk", {"#pk": self.info.partition_key.name}
        if not self.own_items:
            projection, names = own_projection(self.info.partition_key.name, self.markers)
        request: ScanPage = {
            "ProjectionExpression": projection,
            "ExpressionAttributeNames": names,
            **self.segment_args(segment, segments),
        }
        if after is not None:
            request["ExclusiveStartKey"] = self.start_key(after)
        return request

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Flow[None]:
        """A streaming flow: Scan pages (through ``reader.page``), and ``Emit(key)`` for each
        partition key of the segment, once."""
        raise NotImplementedError

    def note(self) -> str:
        """How this method read, once it has: what it changed its mind about while reading
        (empty: nothing to say)."""
        return ""

    def scanned_bytes(self) -> int:
        """The size of what this method scans, as DescribeTable last reported it (0: unknown)."""
        return self.info.size_bytes

    @staticmethod
    def segment_args(segment: int, segments: int) -> ScanPage:
        return {"Segment": segment, "TotalSegments": segments} if segments > 1 else {}
