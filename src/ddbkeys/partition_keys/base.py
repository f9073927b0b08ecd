"""What every partition-key listing method shares: the greatest sort key values, the reader
(retries, read budget, accounting), parallel segments, checkpoints, and typed keys."""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys.capacity import Usage
from ddbkeys.clients import as_client, deadline_scope
from ddbkeys.errors import (
    ConfigurationError,
    DdbKeysError,
    cut_short,
    deadline_exceeded,
    describe_failure,
    error_code,
    raise_translated,
)
from ddbkeys.partition_keys.checkpoint import Checkpoint, encode_token, key_schema
from ddbkeys.partition_keys.stopping import STOP_SLICE, StopFlag
from ddbkeys.retry import (
    DEFAULT_DEADLINE,
    MAX_REFUSED_ATTEMPTS,
    Deadline,
    RetriesExhaustedError,
    RetryPolicy,
    is_refused,
    is_unavailable,
)
from ddbkeys.schema import TableInfo

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "MAX_SORT_KEY",
    "Key",
    "ReadBudget",
    "Reader",
    "SegmentMethod",
    "client_and_table",
    "plain_key",
]

#: The greatest value of each key type: a start key holding it jumps past the whole collection.
MAX_SORT_KEY: dict[str, dict[str, Any]] = {
    "S": {"S": chr(0x10FFFF) * 256},  # 1,024 bytes of the greatest code point in UTF-8
    "N": {"N": "9.9999999999999999999999999999999999999E+125"},
    "B": {"B": b"\xff" * 1024},
}

T = TypeVar("T")
Key = dict[str, Any]  # one DynamoDB AttributeValue, e.g. {"S": "a"}
Position = Key | bool | None  # per segment: not started (None), last key handed out, done (True)


def client_and_table(
    client: object, table: str | None, deadline: float | None
) -> tuple[DynamoDBClient, str]:
    """What a public entry point needs from its arguments: a client (by
    :func:`~ddbkeys.clients.as_client`), the table's name, and a deadline above 0 (or None)."""
    resolved, name = as_client(client, table)
    if name is None:
        raise ConfigurationError("No table given: pass the table's name, or a boto3 Table.")
    if deadline is not None and (
        isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not deadline > 0
    ):
        raise ConfigurationError(
            f"The deadline must be above 0 seconds (or None for none), not {deadline!r}.",
            table=name,
        )
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

    Before a request the reader waits until the bucket is not in debt; after it, the request's
    consumed units are taken out. ``clock`` and ``sleep`` are injectable.
    """

    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not rate > 0:
            raise ConfigurationError(f"The read budget must be above 0 units a second, not {rate}.")
        self.rate = float(rate)
        self.clock = clock
        self.sleep = sleep
        self._lock = threading.Lock()
        self._tokens = self.rate
        self._stamp = clock()

    def _refill(self) -> None:
        now = self.clock()
        self._tokens = min(self.rate, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    def acquire(self, stop: StopFlag | None = None) -> None:
        """Wait until the bucket is not in debt; with ``stop``, look at it every 0.1 s."""
        while True:
            with self._lock:
                self._refill()
                if self._tokens > -1e-9:  # (float dust is no debt)
                    return
                wait = max(0.001, -self._tokens / self.rate)
            if stop is None:
                self.sleep(wait)
            else:
                stop.check()
                self.sleep(min(wait, STOP_SLICE))

    def spend(self, units: float) -> None:
        with self._lock:
            self._refill()
            self._tokens -= units


@dataclass
class Reader:
    """Sends the requests of one listing: retries, the deadline, the read budget and the
    accounting.

    A listing may rightly run for hours, so its deadline (``deadline`` seconds, None for none)
    bounds each request with its retries: no answer for that long, through throttling, 5xx,
    timeouts or a closed port, is a :class:`~ddbkeys.DeadlineExceededError` saying which.
    """

    client: DynamoDBClient
    table: str
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    usage: Usage = field(default_factory=Usage)
    budget: ReadBudget | None = None
    deadline: float | None = DEFAULT_DEADLINE
    what: str = "listing the partition keys"
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    #: Set to stop the listing: looked at before each request and while waiting.
    stop: StopFlag = field(default_factory=StopFlag, repr=False)

    def scan(self, **request: Any) -> dict[str, Any]:
        """One Scan of this table (or of its index), retried on throttling, 5xx and dropped
        connections with exponential backoff and jitter, within the deadline and at most
        ``retry.max_attempts`` times."""
        request.setdefault("TableName", self.table)
        request["ReturnConsumedCapacity"] = "TOTAL"

        def send() -> dict[str, Any]:
            self.stop.check()
            if self.budget is not None:
                self.budget.acquire(self.stop)
            return dict(self.client.scan(**request))

        response = self.call(send)
        items = int(response.get("ScannedCount", len(response.get("Items", []))))
        self.usage.add(response, write=False, items=items)
        if self.budget is not None:
            consumed = response.get("ConsumedCapacity") or {}
            self.budget.spend(float(consumed.get("CapacityUnits", 0.5)))
        return response

    def call(self, send: Callable[[], T]) -> T:
        """``send()``, tried again after throttling, 5xx and dropped connections until it
        answers, the deadline passes, or ``retry.max_attempts`` attempts failed. Any other
        error goes up at once, as a DdbKeysError."""
        deadline = Deadline(self.deadline, clock=self.clock)
        failures: Counter[str] = Counter()
        last: BaseException | None = None
        out_of_time = False
        with deadline_scope(deadline):
            for attempt in range(self.retry.max_attempts):
                try:
                    return send()
                except (ClientError, BotoCoreError, DdbKeysError) as exc:
                    failure = exc.cause if isinstance(exc, DdbKeysError) else exc
                    if failure is None or not is_unavailable(failure):
                        raise_translated(exc, table=self.table)
                    if last is None or not cut_short(failure):
                        last = failure  # (the deadline cutting a request short tells less)
                    failures[_kind(failure)] += 1
                    if is_refused(failure) and failures[_kind(failure)] >= MAX_REFUSED_ATTEMPTS:
                        raise_translated(failure, table=self.table)
                self.usage.count(retries=1)
                wait = self.retry.exponential(attempt)
                if attempt + 1 == self.retry.max_attempts:
                    break
                if not deadline.allows(wait):
                    out_of_time = True
                    break
                self.stop.sleep(wait, self.retry.sleep)
        attempts = sum(failures.values())
        times = failures[_kind(last)] if last is not None else 0
        if out_of_time:
            raise deadline_exceeded(
                self.what,
                self.table,
                self.deadline or 0.0,
                attempts,
                last,
                failures=times,
                read_timeout=getattr(self.client.meta.config, "read_timeout", None),
                elapsed=deadline.elapsed(),
            ) from last
        raise RetriesExhaustedError(
            f"Gave up on {self.what} on table {self.table!r} after {attempts} attempts "
            f"(RetryPolicy.max_attempts): {describe_failure(last, times=times)}. Lower "
            "--max-rcu-per-second, or try again later.",
            attempts=attempts,
            table=self.table,
            cause=last,
        ) from last


def _kind(exc: BaseException | None) -> str:
    return (error_code(exc) if exc is not None else None) or type(exc).__name__


class SegmentMethod:
    """One listing method: yields the partition keys of one Scan segment, each once, in scan
    order, starting after the collection of ``after`` (a key AttributeValue) when given."""

    name = "?"

    def __init__(self, info: TableInfo) -> None:
        self.info = info

    def start_key(self, after: Key) -> dict[str, Any]:
        """The ExclusiveStartKey just past the collection of partition key ``after``."""
        pk = self.info.partition_key
        key: dict[str, Any] = {pk.name: after}
        if self.info.sort_key is not None:
            key[self.info.sort_key.name] = MAX_SORT_KEY[self.info.sort_key.type]
        return key

    def keys(self, reader: Reader, segment: int, segments: int, after: Key | None) -> Iterator[Key]:
        raise NotImplementedError

    def scanned_bytes(self) -> int:
        """The size of what this method scans, as DescribeTable last reported it (0: unknown)."""
        return self.info.size_bytes

    @staticmethod
    def segment_args(segment: int, segments: int) -> dict[str, int]:
        return {"Segment": segment, "TotalSegments": segments} if segments > 1 else {}


_DONE = object()  # a segment read to its end
_EXITED = object()  # a reader thread finished


class Listing:
    """The distinct partition keys of a table, as a stream (iterate over it once).

    Keys come as Python values (str, int or Decimal, bytes), each once. ``usage`` counts
    requests, items read and read units so far; ``checkpoint()`` is a token that
    ``distinct_partition_keys(..., resume=token)`` continues from, without repeating or missing
    a key. ``positions`` holds one entry per Scan segment; ``readers`` threads take the
    segments in turn, each reading one segment to its end before taking the next. With more
    than one reader, keys of different segments interleave.

    ``stop()`` (safe from a signal handler or another thread) ends the iteration with
    :class:`~ddbkeys.errors.ListingInterrupted` between requests and out of any wait. With
    ``background = True`` even a single reader reads in a thread, so that the stop takes effect
    within about 0.1 s while a request is still outstanding (the command line does this).
    """

    def __init__(
        self,
        method: SegmentMethod,
        reader: Reader,
        positions: list[Position],
        readers: int = 1,
        on_key: Callable[[Listing], None] | None = None,
    ) -> None:
        self.method = method
        self.reader = reader
        self.positions = positions
        self.readers = readers
        self.on_key = on_key
        self.keys_found = 0
        #: Why this method was chosen (for ``auto``: why the index was or was not used).
        self.method_reason = ""
        #: Whether the marker index could be vouched for (None: no index was considered).
        self.index_trusted: bool | None = None
        #: Read in a thread even with one reader, so that ``stop()`` never waits on a request.
        self.background = False
        self._started = False

    @property
    def usage(self) -> Usage:
        return self.reader.usage

    @property
    def method_name(self) -> str:
        return self.method.name

    @property
    def scan_segments(self) -> int:
        """How many Scan segments the table is split into (``TotalSegments``)."""
        return len(self.positions)

    @property
    def segments_done(self) -> int:
        return sum(p is True for p in self.positions)

    def checkpoint(self) -> str:
        """The resume token of where the listing stands: bound to the table, its key schema
        and the method (see :mod:`ddbkeys.partition_keys.checkpoint`)."""
        info = self.method.info
        return encode_token(
            Checkpoint(
                info.name, key_schema(info), self.method.name, list(self.positions), info.created
            )
        )

    def stop(self) -> None:
        """Ask the listing to stop; safe from a signal handler or another thread. Within about
        0.1 s (or the end of the request being sent), iterating raises
        :class:`~ddbkeys.errors.ListingInterrupted`, and ``checkpoint()`` goes on from the last
        key handed out."""
        self.reader.stop.set()

    @property
    def finished(self) -> bool:
        return all(p is True for p in self.positions)

    def raw(self) -> Iterator[Key]:
        """The keys as DynamoDB AttributeValues (``{"S": ...}``)."""
        if self._started:
            raise DdbKeysError("A listing is a stream: iterate over it once.")
        self._started = True
        todo = [s for s in range(self.scan_segments) if self.positions[s] is not True]
        if (self.readers <= 1 or len(todo) <= 1) and not self.background:
            for segment in todo:
                for key in self._segment_keys(segment):
                    self.reader.stop.check()
                    self._handed(segment, key)
                    yield key
                self.positions[segment] = True
                self._notify()
            return
        yield from self._parallel(todo)

    def _segment_keys(self, segment: int) -> Iterator[Key]:
        after = self.positions[segment]
        return self.method.keys(self.reader, segment, self.scan_segments, after or None)  # type: ignore[arg-type]

    def _handed(self, segment: int, key: Key) -> None:
        self.positions[segment] = key
        self.keys_found += 1
        self._notify()

    def _notify(self) -> None:
        if self.on_key is not None:
            self.on_key(self)

    def _next_item(self, out: queue.Queue[tuple[int, Any]]) -> tuple[int, Any]:
        """The readers' next item, looking at the stop flag every ``STOP_SLICE`` seconds."""
        while True:
            self.reader.stop.check()
            try:
                return out.get(timeout=STOP_SLICE)
            except queue.Empty:
                continue

    def _parallel(self, todo: list[int]) -> Iterator[Key]:
        pending: queue.SimpleQueue[int] = queue.SimpleQueue()
        for segment in todo:
            pending.put(segment)
        # One reader in the background reads little ahead: a stop wastes at most a page.
        out: queue.Queue[tuple[int, Any]] = queue.Queue(maxsize=1024 if self.readers > 1 else 64)
        stop = threading.Event()

        def send(segment: int, item: Any) -> bool:
            """Hand ``item`` to the consumer; False once the consumer has stopped."""
            while not stop.is_set():
                try:
                    out.put((segment, item), timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def run() -> None:
            segment = -1
            try:
                while not stop.is_set():
                    try:
                        segment = pending.get_nowait()
                    except queue.Empty:
                        break
                    for key in self._segment_keys(segment):
                        if not send(segment, key):
                            return
                    if not send(segment, _DONE):
                        return
            except BaseException as exc:  # handed to the consumer
                send(segment, exc)
            finally:
                send(-1, _EXITED)

        threads = [
            threading.Thread(target=run, daemon=True) for _ in range(min(self.readers, len(todo)))
        ]
        for thread in threads:
            thread.start()
        running = len(threads)
        try:
            while running:
                segment, item = self._next_item(out)
                if item is _EXITED:
                    running -= 1
                elif item is _DONE:
                    self.positions[segment] = True
                    self._notify()
                elif isinstance(item, BaseException):
                    raise item
                else:
                    self._handed(segment, item)
                    yield item
        finally:
            stop.set()
            self.reader.stop.set()  # the readers stop between pages, and out of their waits
            # A reader inside a request is not waited for past 0.1 s in all (daemon threads:
            # its answer is dropped, and the positions handed out stand).
            until = time.monotonic() + 0.1
            for thread in threads:
                thread.join(timeout=max(0.0, until - time.monotonic()))

    def __iter__(self) -> Iterator[str | int | Decimal | bytes]:
        for key in self.raw():
            yield plain_key(key)
