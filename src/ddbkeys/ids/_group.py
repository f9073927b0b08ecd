"""Group commit: concurrent calls of one process combined into shared commits, in a threading
form (:class:`GroupCommit`) and an asyncio form (:class:`AsyncGroupCommit`) that share how a
batch is taken and how a batch's failure is handed out."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from ddbkeys._translate import fresh

__all__ = ["AsyncGroupCommit", "GroupCommit", "GroupsInUse", "alone_after"]

T = TypeVar("T")
R = TypeVar("R")
K = TypeVar("K", bound=Hashable)
G = TypeVar("G")


def alone_after(batch_size: int, exc: BaseException) -> bool:
    """Whether a batch whose commit raised ``exc`` is committed again one value at a time.

    DynamoDB refuses a whole batch as invalid (ValidationException) when one caller's value is
    (an item over 400 KB, a transaction over 4 MB): then each value is committed alone, so only
    its own caller fails. Any other error is every caller's."""
    return batch_size > 1 and getattr(exc, "code", None) == "ValidationException"


def should_linger(linger: float, last_batch: int, pending: int, max_batch: int) -> bool:
    """Busy (the last batch held more than one value, and fewer than a full batch wait): wait
    ``linger`` for more callers. Batches grow, and writers in other processes get a window
    between our commits instead of being starved."""
    return bool(linger) and last_batch > 1 and pending < max_batch


def filled(last_batch: int, pending: int, max_batch: int) -> bool:
    """With ``fill``, a linger ends early once as many callers wait as the last batch held
    (the callers it served are back): no time is spent waiting for callers that are not
    coming."""
    return pending >= min(last_batch, max_batch)


class _Slot(Generic[T, R]):
    """One caller's value and answer. ``done`` is a lock taken at once: the caller waits by
    taking it again, the leader lets it go by releasing it (cheaper than an Event, whose wait
    makes a lock of its own each time)."""

    __slots__ = ("done", "error", "finished", "lead", "result", "value")

    def __init__(self, value: T) -> None:
        self.value = value
        self.done = threading.Lock()
        self.done.acquire()
        self.result: R | None = None
        self.error: BaseException | None = None
        self.finished = False
        self.lead = False


class GroupCommit(Generic[T, R]):
    """Combines concurrent calls from many threads into shared commits.

    The first caller with nothing in flight becomes the leader: it takes up to ``max_batch``
    pending values, calls ``commit(values)`` (which returns one result or exception per value,
    in order), hands out the results, and goes on until its own value is done; then it passes
    the lead to the oldest waiter. So one commit serves every caller that arrived while the
    previous one was in flight: the busier the process, the fewer commits per id.
    """

    def __init__(
        self,
        commit: Callable[[Sequence[T]], Sequence[R | BaseException]],
        max_batch: int,
        *,
        linger: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
        fill: bool = False,
    ) -> None:
        self._commit = commit
        self.max_batch = max_batch
        self.linger = linger
        self.fill = fill
        self._sleep = sleep
        self._last_batch = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # (with fill) a caller joined
        self._pending: deque[_Slot[T, R]] = deque()
        self._leading = False

    def submit(self, value: T) -> R:
        slot: _Slot[T, R] = _Slot(value)
        with self._lock:
            self._pending.append(slot)
            if self._leading:
                lead = False
                if self.fill and filled(self._last_batch, len(self._pending), self.max_batch):
                    self._arrived.notify()  # (only then: the leader wakes once a batch)
            else:
                self._leading = lead = True
        if not lead:
            slot.done.acquire()
            if not slot.finished:  # handed the lead
                self._lead(slot)
        else:
            self._lead(slot)
        if slot.error is not None:
            raise fresh(slot.error)  # (one failure may be every caller's)
        return slot.result  # type: ignore[return-value]

    def _lead(self, own: _Slot[T, R]) -> None:
        try:
            while not own.finished:
                if should_linger(self.linger, self._last_batch, len(self._pending), self.max_batch):
                    if self.fill:
                        with self._lock:
                            self._arrived.wait_for(
                                lambda: filled(
                                    self._last_batch, len(self._pending), self.max_batch
                                ),
                                self.linger,
                            )
                    else:
                        self._sleep(self.linger)
                with self._lock:
                    batch = [
                        self._pending.popleft()
                        for _ in range(min(self.max_batch, len(self._pending)))
                    ]
                self._last_batch = len(batch)
                values = [s.value for s in batch]
                stop: BaseException | None = None
                try:
                    try:
                        results: Sequence[Any] = self._commit(values)
                    except Exception as exc:  # every caller's, or each its own (see alone_after)
                        results, stop = self._one_by_one(values, exc)
                except BaseException as exc:  # interrupted: the batch's callers learn so
                    results, stop = [exc] * len(batch), exc
                self._hand(batch, results, own)
                if stop is not None:
                    raise stop
        finally:
            with self._lock:  # the next caller leads (an interrupted leader's too)
                if not own.finished and own in self._pending:  # (interrupted before its batch)
                    self._pending.remove(own)
                if self._pending:
                    heir = self._pending[0]
                    heir.lead = True
                    heir.done.release()
                else:
                    self._leading = False

    @staticmethod
    def _hand(batch: list[_Slot[T, R]], results: Sequence[Any], own: _Slot[T, R]) -> None:
        for slot, result in zip(batch, results, strict=True):
            if isinstance(result, BaseException):
                slot.error = result
            else:
                slot.result = result
            slot.finished = True
            if slot is not own:
                slot.done.release()

    def _one_by_one(
        self, values: list[T], exc: Exception
    ) -> tuple[list[Any], BaseException | None]:
        """Each value's own answer when the batch was refused as invalid (else ``exc`` for
        all), and an interrupt that came meanwhile (its value's answer and the rest's)."""
        if not alone_after(len(values), exc):
            return [exc] * len(values), None
        results: list[Any] = []
        for n, value in enumerate(values):
            try:
                results.extend(self._commit([value]))
            except Exception as alone:  # that caller's own answer
                results.append(alone)
            except BaseException as stop:  # interrupted: it and the rest are told so
                return results + [stop] * (len(values) - n), stop
        return results, None


class AsyncGroupCommit(Generic[T, R]):
    """The asyncio form of :class:`GroupCommit`: concurrent ``await submit(value)`` calls of
    one event loop share commits. A committing task takes up to ``max_batch`` pending values at
    a time while any are pending; each caller waits only for its own value's answer."""

    def __init__(
        self,
        commit: Callable[[Sequence[T]], Awaitable[Sequence[R | BaseException]]],
        max_batch: int,
        *,
        linger: float = 0.0,
        fill: bool = False,
    ) -> None:
        self._commit = commit
        self.max_batch = max_batch
        self.linger = linger
        self.fill = fill
        self._last_batch = 0
        self._pending: deque[tuple[T, asyncio.Future[R]]] = deque()
        self._task: asyncio.Task[None] | None = None
        self._arrived: asyncio.Event | None = None  # (with fill) set once the batch is full

    async def submit(self, value: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((value, future))
        if self._arrived is not None and filled(
            self._last_batch, len(self._pending), self.max_batch
        ):
            self._arrived.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._lead())
        return await future

    async def _lead(self) -> None:
        while self._pending:
            if should_linger(self.linger, self._last_batch, len(self._pending), self.max_batch):
                await self._wait(self.linger)
            taken = [
                self._pending.popleft() for _ in range(min(self.max_batch, len(self._pending)))
            ]
            batch = [(v, f) for v, f in taken if not f.cancelled()]  # (callers that gave up)
            if not batch:
                continue
            self._last_batch = len(batch)
            values = [v for v, _ in batch]
            stop: BaseException | None = None
            try:
                try:
                    results: Sequence[Any] = await self._commit(values)
                except Exception as exc:  # every caller's, or each its own (see alone_after)
                    results, stop = await self._one_by_one(values, exc)
            except BaseException as exc:  # this task was cancelled: the batch's callers learn so
                results, stop = [exc] * len(batch), exc
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, BaseException):
                    future.set_exception(result if result is stop else fresh(result))
                else:
                    future.set_result(result)
            if stop is not None:
                raise stop

    async def _wait(self, linger: float) -> None:
        """Linger: ``linger`` seconds, or (with fill) until the batch is full."""
        if not self.fill:
            await asyncio.sleep(linger)
            return
        if filled(self._last_batch, len(self._pending), self.max_batch):
            return
        self._arrived = asyncio.Event()
        try:
            async with asyncio.timeout(linger):  # (wait_for may swallow a cancellation)
                await self._arrived.wait()
        except TimeoutError:
            pass
        finally:
            self._arrived = None

    async def _one_by_one(
        self, values: list[T], exc: Exception
    ) -> tuple[list[Any], BaseException | None]:
        """As :meth:`GroupCommit._one_by_one`: a cancellation meanwhile is the rest's answer."""
        if not alone_after(len(values), exc):
            return [exc] * len(values), None
        results: list[Any] = []
        for n, value in enumerate(values):
            try:
                results.extend(await self._commit([value]))
            except Exception as alone:  # that caller's own answer
                results.append(alone)
            except BaseException as stop:  # cancelled: it and the rest are told so
                return results + [stop] * (len(values) - n), stop
        return results, None


class _InUse(Generic[G]):
    __slots__ = ("group", "users")

    def __init__(self, group: G) -> None:
        self.group = group
        self.users = 0


class GroupsInUse(Generic[K, G]):
    """The group commits of the keys (item collections) that calls are using now: one is made
    for the first call on a key, shared by the calls that come while any is using it, and
    dropped when the last of them is done. A group holds nothing between calls (its callers
    are all answered), so a long-lived object keeps none for the keys it once wrote to: its
    memory follows the calls in flight, not every key it ever met.

    ``gone``: keys whose calls will never end theirs (say, of an event loop closed with calls
    still waiting); their groups are dropped whenever a group is made."""

    def __init__(self, make: Callable[[], G], gone: Callable[[K], bool] | None = None) -> None:
        self._make = make
        self._gone = gone
        self._lock = threading.Lock()
        self._groups: dict[K, _InUse[G]] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._groups)

    @contextlib.contextmanager
    def using(self, key: K) -> Iterator[G]:
        """The group of ``key`` while the ``with`` block runs (its own lock is held only
        here, never across the block, which may wait or ``await``)."""
        with self._lock:
            entry = self._groups.get(key)
            if entry is None:
                if self._gone is not None:
                    for stale in [k for k in self._groups if self._gone(k)]:
                        del self._groups[stale]
                entry = self._groups[key] = _InUse(self._make())
            entry.users += 1
        try:
            yield entry.group
        finally:
            with self._lock:
                entry.users -= 1
                if not entry.users and self._groups.get(key) is entry:
                    del self._groups[key]
