"""What every partition-key listing method shares: the greatest sort key values, the reader
(retries, read budget, accounting), parallel segments, checkpoints, and typed keys."""

from __future__ import annotations

import base64
import json
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ddbkeys.capacity import Usage
from ddbkeys.errors import ConfigurationError, DdbKeysError, raise_translated
from ddbkeys.retry import RetriesExhaustedError, RetryPolicy, is_unavailable
from ddbkeys.schema import TableInfo

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["MAX_SORT_KEY", "Key", "ReadBudget", "Reader", "SegmentMethod", "plain_key"]

#: The greatest value of each key type: a start key holding it jumps past the whole collection.
MAX_SORT_KEY: dict[str, dict[str, Any]] = {
    "S": {"S": chr(0x10FFFF) * 256},  # 1,024 bytes of the greatest code point in UTF-8
    "N": {"N": "9.9999999999999999999999999999999999999E+125"},
    "B": {"B": b"\xff" * 1024},
}

Key = dict[str, Any]  # one DynamoDB AttributeValue, e.g. {"S": "a"}
Position = Key | bool | None  # per segment: not started (None), last key handed out, done (True)


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

    def acquire(self) -> None:
        while True:
            with self._lock:
                self._refill()
                if self._tokens > -1e-9:  # (float dust is no debt)
                    return
                wait = max(0.001, -self._tokens / self.rate)
            self.sleep(wait)

    def spend(self, units: float) -> None:
        with self._lock:
            self._refill()
            self._tokens -= units


@dataclass
class Reader:
    """Sends Scan requests for one listing: retries, the read budget and the accounting."""

    client: DynamoDBClient
    table: str
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    usage: Usage = field(default_factory=Usage)
    budget: ReadBudget | None = None

    def scan(self, **request: Any) -> dict[str, Any]:
        """One Scan of this table (or of its index), retried on throttling and 5xx with
        exponential backoff and jitter, at most ``retry.max_attempts`` times."""
        request.setdefault("TableName", self.table)
        request["ReturnConsumedCapacity"] = "TOTAL"
        last: BaseException | None = None
        for attempt in range(self.retry.max_attempts):
            if self.budget is not None:
                self.budget.acquire()
            try:
                response: dict[str, Any] = dict(self.client.scan(**request))
            except (ClientError, BotoCoreError) as exc:
                if not is_unavailable(exc):
                    raise_translated(exc, table=self.table)
                last = exc
                self.usage.count(retries=1)
                self.retry.wait_unavailable(attempt)
                continue
            items = int(response.get("ScannedCount", len(response.get("Items", []))))
            self.usage.add(response, write=False, items=items)
            if self.budget is not None:
                consumed = response.get("ConsumedCapacity") or {}
                self.budget.spend(float(consumed.get("CapacityUnits", 0.5)))
            return response
        raise RetriesExhaustedError(
            f"Scan of table {self.table!r} still failed after {self.retry.max_attempts} "
            f"attempts ({last}). Lower --max-rcu-per-second, or try again later.",
            attempts=self.retry.max_attempts,
            table=self.table,
            cause=last,
        )


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


def encode_checkpoint(method: str, positions: list[Position]) -> str:
    """A resume token: the method and, per segment, the last key handed out (True: done)."""

    def one(position: Position) -> Any:
        if position is None or position is True:
            return position
        kind, raw = next(iter(position.items()))  # type: ignore[union-attr]
        return {kind: base64.b64encode(raw).decode() if kind == "B" else raw}

    payload = {"v": 1, "method": method, "positions": [one(p) for p in positions]}
    return base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()


def decode_checkpoint(token: str) -> tuple[str, list[Position]]:
    """The method and positions of a resume token, or a clear error."""
    try:
        payload = json.loads(base64.urlsafe_b64decode(token.encode()))
        method = str(payload["method"])
        positions: list[Position] = []
        for p in payload["positions"]:
            if p is None or p is True:
                positions.append(p)
            else:
                kind, raw = next(iter(p.items()))
                positions.append({kind: base64.b64decode(raw) if kind == "B" else raw})
        if not 1 <= len(positions) <= 1_000_000:
            raise ValueError(f"{len(positions)} segments")
    except (ValueError, KeyError, TypeError, AttributeError, StopIteration) as exc:
        raise DdbKeysError(
            f"The resume token {token[:40]!r}... is not one ddbkeys wrote: copy it whole from "
            "the listing that stopped.",
            cause=exc,
        ) from exc
    return method, positions


class Listing:
    """The distinct partition keys of a table, as a stream (iterate over it once).

    Keys come as Python values (str, int or Decimal, bytes), each once. ``usage`` counts
    requests, items read and read units so far; ``checkpoint()`` is a token that
    ``distinct_partition_keys(..., resume=token)`` continues from, without repeating or missing
    a key. ``positions`` holds one entry per Scan segment; ``readers`` threads take the
    segments in turn, each reading one segment to its end before taking the next. With more
    than one reader, keys of different segments interleave.
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
        return encode_checkpoint(self.method.name, list(self.positions))

    @property
    def finished(self) -> bool:
        return all(p is True for p in self.positions)

    def raw(self) -> Iterator[Key]:
        """The keys as DynamoDB AttributeValues (``{"S": ...}``)."""
        if self._started:
            raise DdbKeysError("A listing is a stream: iterate over it once.")
        self._started = True
        todo = [s for s in range(self.scan_segments) if self.positions[s] is not True]
        if self.readers <= 1 or len(todo) <= 1:
            for segment in todo:
                for key in self._segment_keys(segment):
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

    def _parallel(self, todo: list[int]) -> Iterator[Key]:
        pending: queue.SimpleQueue[int] = queue.SimpleQueue()
        for segment in todo:
            pending.put(segment)
        out: queue.Queue[tuple[int, Any]] = queue.Queue(maxsize=1024)
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
                segment, item = out.get()
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
            for thread in threads:
                thread.join(timeout=5)

    def __iter__(self) -> Iterator[str | int | Decimal | bytes]:
        for key in self.raw():
            yield plain_key(key)
