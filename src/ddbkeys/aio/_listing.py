"""The distinct partition keys for asyncio: the same listing methods, flows and bookkeeping as
:mod:`ddbkeys.partition_keys`, read by asyncio tasks over an aiobotocore client.

``distinct_partition_keys`` is awaited or iterated: awaiting it reads the table's description
(one DescribeTable) and checks every argument and the resume token, so that a missing table or
a bad token is raised where the listing is asked for, as in the sync form; it gives an
:class:`AsyncListing` to read with ``async for``. Or ``async for`` over the call directly::

    listing = await distinct_partition_keys(client, "orders", segments=32)
    async for key in listing:
        ...
    async for key in distinct_partition_keys(client, "orders"):
        ...

``segments`` Scan segments are read at once by as many tasks on the caller's event loop (up to
64), taking the Scan segments in turn and handing keys to the consumer through one queue.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine, Generator
from contextlib import aclosing
from decimal import Decimal
from typing import Any, Generic, ParamSpec, TypeVar, Unpack

from ddbkeys._capacity import Usage
from ddbkeys._core.loops import LoopBinding
from ddbkeys._core.stopping import STOP_SLICE
from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._errors import ConfigurationError
from ddbkeys._retry import RetryPolicy
from ddbkeys._schema import TableInfo
from ddbkeys.aio._client import as_async_client
from ddbkeys.aio._export import CHUNK, close_reading, export_of, some
from ddbkeys.aio._index import OpenedOnUse
from ddbkeys.partition_keys._export.keyset import MEMORY_KEYS, KeySet
from ddbkeys.partition_keys._export.listing import ExportFacts, ExportMethod
from ddbkeys.partition_keys._export.location import ExportFolder
from ddbkeys.partition_keys._export.manifest import Manifest
from ddbkeys.partition_keys._export.now import Since, forget
from ddbkeys.partition_keys._listing.base import Key, Position, Reader, SegmentMethod, plain_key
from ddbkeys.partition_keys._listing.listing import DONE, EXITED, ListingCore
from ddbkeys.partition_keys._listing.opening import (
    listing_reader,
    noting,
    opened,
    opening_flow,
)
from ddbkeys.partition_keys._listing.options import (
    ListingOptions,
    ListingSettings,
    Method,
    check_no_resume,
    listing_options,
)
from ddbkeys.partition_keys._streams.streams import SplitClient

__all__ = ["AsyncListing", "ListingCall", "OneLoopIterator", "distinct_partition_keys"]

_OWNER = "ddbkeys.aio.distinct_partition_keys"

T = TypeVar("T")
P = ParamSpec("P")


class OneLoopIterator(Generic[T]):
    """An async iterator over ``keys`` that belongs to the event loop of its first step: a step
    from another loop is a :class:`ConfigurationError` (the readers, their queue and the
    generator are that loop's; an ``asyncio.run()`` that ends closes the generator, which would
    otherwise look like the end of the listing in the next one). After a step raised (a stop,
    an error, a cancellation: ``asyncio.wait_for(anext(keys), ...)`` that timed out), the next
    one raises :class:`~ddbkeys.ListingInterrupted` again, as the sync form's does,
    rather than ending as if the keys handed out were all of them."""

    __slots__ = ("_binding", "_keys", "_listing")

    def __init__(
        self, keys: AsyncGenerator[T, None], binding: LoopBinding, listing: ListingCore
    ) -> None:
        self._keys = keys
        self._binding = binding
        self._listing = listing

    def __aiter__(self) -> OneLoopIterator[T]:
        return self

    async def __anext__(self) -> T:
        self._binding.check()
        self._listing._check_ended()
        try:
            return await self._keys.__anext__()
        except StopAsyncIteration:
            raise
        except BaseException as exc:
            self._listing._end_early(exc)
            raise

    async def aclose(self) -> None:
        """Stop reading (in the listing's own loop; from another, the readers are only told to
        stop, between pages)."""
        home = self._binding.loop
        if home is None or home is asyncio.get_running_loop():
            await self._keys.aclose()


class AsyncListing(ListingCore):
    """The distinct partition keys of a table, as a stream (``async for``, once), read by
    asyncio tasks: the asyncio form of :class:`ddbkeys.partition_keys.Listing`, with the same
    ``usage``, ``checkpoint()``, ``stop()``, ``positions``, ``method_reason`` and
    ``index_trusted``.

    ``readers`` tasks take the Scan segments in turn, each reading one segment to its end
    before taking the next; keys of different segments interleave. The consumer looks at the
    stop flag at least every 0.1 s, so ``stop()`` (from a task, a thread or a signal handler)
    ends the iteration with :class:`~ddbkeys.ListingInterrupted` even while a request is
    outstanding; that request is cancelled, and ``checkpoint()`` goes on from the last key
    handed out.

    The iteration belongs to the event loop of its first step (its readers are tasks of that
    loop): a step from another loop is a :class:`~ddbkeys.ConfigurationError`. Make and
    read one listing per event loop; ``checkpoint()`` and a new listing with ``resume=`` carry
    a listing over to another loop or process.
    """

    def __init__(
        self,
        method: SegmentMethod,
        reader: Reader,
        positions: list[Position],
        readers: int = 1,
        on_key: Callable[[AsyncListing], Awaitable[None] | None] | None = None,
    ) -> None:
        super().__init__(method, reader, positions, readers, on_key)
        self._notices: deque[Awaitable[Any]] = deque()
        self._driver = AsyncDriver(reader.client, reader.usage, "ddbkeys.aio.AsyncListing")
        self._loop = LoopBinding(
            "ddbkeys.aio.AsyncListing", "its segments are read by tasks of that loop"
        )

    def _notify(self) -> None:
        """``on_key`` may be a coroutine function: what it returns is awaited before the key
        is handed out (or the segment's end is told)."""
        if self.on_key is not None:
            result = self.on_key(self)
            if inspect.isawaitable(result):
                self._notices.append(result)

    def __aiter__(self) -> AsyncIterator[str | int | Decimal | bytes]:
        return OneLoopIterator(self._plain(), self._loop, self)

    async def _plain(self) -> AsyncGenerator[str | int | Decimal | bytes, None]:
        async with aclosing(self._raw()) as keys:
            async for key in keys:
                yield plain_key(key)

    def raw(self) -> OneLoopIterator[Key]:
        """The keys as DynamoDB AttributeValues (``{"S": ...}``), with ``async for``."""
        return OneLoopIterator(self._raw(), self._loop, self)

    async def _raw(self) -> AsyncGenerator[Key, None]:
        todo = self._begin()
        if not todo:
            return
        pending = deque(todo)
        # One reader reads little ahead: a stop wastes at most a page.
        out: asyncio.Queue[tuple[int, Any]] = asyncio.Queue(1024 if self.readers > 1 else 64)

        async def run() -> None:
            segment = -1
            try:
                while pending:
                    segment = pending.popleft()
                    async for key in self._driver.iterate(self._segment_flow(segment)):
                        await out.put((segment, key))
                    await out.put((segment, DONE))
            except Exception as exc:  # handed to the consumer
                await out.put((segment, exc))
            await out.put((-1, EXITED))

        tasks = [asyncio.create_task(run()) for _ in range(min(self.readers, len(todo)))]
        running = len(tasks)
        try:
            while running:
                segment, item = await self._next_item(out)
                if item is EXITED:
                    running -= 1
                    continue
                before = (self.positions[segment], self.keys_found) if segment >= 0 else None
                key = self._take(segment, item)
                if self._notices:
                    await self._notified(segment, before)
                if key is not None:
                    yield key
                elif item is DONE and (more := self._joiners(running, len(pending))):
                    tasks += [asyncio.create_task(run()) for _ in range(more)]
                    running += more
        finally:
            self.reader.stop.set()  # the readers stop between pages, and out of their waits
            for task in tasks:
                task.cancel()  # a request outstanding is given up: its keys were not handed out
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _notified(self, segment: int, before: tuple[Position, int] | None) -> None:
        """Await what an async ``on_key`` returned. When it raises, or the step is cancelled
        meanwhile, the key was not handed out: the segment's position goes back (as when a
        plain ``on_key`` raises), so that a checkpoint goes on before it."""
        try:
            while self._notices:
                await self._notices.popleft()
        except BaseException:
            for notice in self._notices:
                if inspect.iscoroutine(notice):
                    notice.close()
            self._notices.clear()
            if before is not None:
                self.positions[segment], self.keys_found = before
            raise

    async def _next_item(self, out: asyncio.Queue[tuple[int, Any]]) -> tuple[int, Any]:
        """The readers' next item, looking at the stop flag every ``STOP_SLICE`` seconds."""
        while True:
            self.reader.stop.check()
            try:
                return out.get_nowait()
            except asyncio.QueueEmpty:
                pass
            try:
                # (Not wait_for: on Python 3.11 it can swallow a cancellation of the caller
                # that comes as the queue answers, and the listing would read on.)
                async with asyncio.timeout(STOP_SLICE):
                    return await out.get()
            except TimeoutError:
                continue


class AsyncExportListing(ExportFacts, AsyncListing):
    """The asyncio form of :class:`~ddbkeys.partition_keys.ExportListing` (``async for``,
    once): the same keys, counts and ``as_of``."""

    def __init__(
        self,
        info: TableInfo,
        reader: Reader,
        folder: ExportFolder,
        manifest: Manifest,
        *,
        marker_attribute: str,
        own_items: bool,
        marker_sort_key: Any = None,
        on_key: Callable[[AsyncListing], Awaitable[None] | None] | None = None,
        memory_keys: int = MEMORY_KEYS,
        spill_folder: str | None = None,
        since: Since | str | None = None,
    ) -> None:
        method = ExportMethod(info).knowing_markers_by(
            marker_attribute, sort_key=marker_sort_key, own_items=own_items
        )
        super().__init__(method, reader, [None], 1, on_key)
        self.method_reason = self._export(folder, manifest, memory_keys, spill_folder, since)

    async def _raw(self) -> AsyncGenerator[Key, None]:
        self._begin()
        try:
            async with aclosing(self._read()) as keys:
                async for key in keys:
                    yield key
        finally:
            forget(self.since)
        self._done(0)
        if self._notices:
            await self._notified(0, None)

    async def _read(self) -> AsyncGenerator[Key, None]:
        """The export's keys less those the stream named, then those of these that exist."""
        seen = KeySet(self.memory_keys, self.spill_folder)
        keys = self._export_keys(seen)
        lock = threading.Lock()  # (held by the thread reading a chunk)
        try:
            while True:
                chunk = await asyncio.to_thread(some, keys, CHUNK, lock)
                for key in chunk:
                    yield await self._hand(key)
                if len(chunk) < CHUNK:
                    break
        finally:
            await asyncio.to_thread(close_reading, keys, seen, lock)
        for hashed, key in self._touched():
            self.reader.stop.check()
            if await self._driver.run(self._recheck(hashed, key)):
                yield await self._hand(key)

    async def _hand(self, key: Key) -> Key:
        """``key`` handed out (``on_key`` told, and awaited)."""
        self.reader.stop.check()
        before = (self.positions[0], self.keys_found)
        self._handed(0, key)
        if self._notices:
            await self._notified(0, before)
        return key


class ListingCall(Coroutine[Any, Any, "AsyncListing"]):
    """What :func:`distinct_partition_keys` returns: ``await`` it for the
    :class:`AsyncListing` (its ``usage``, ``checkpoint()`` and ``stop()`` at hand), or
    ``async for`` over it directly. Either once; nothing is sent before. It is a coroutine too
    (``asyncio.run``, ``create_task`` and ``gather`` take it, as they took the coroutine
    function this was)."""

    def __init__(self, opening: Callable[[], Coroutine[Any, Any, AsyncListing]]) -> None:
        self._opening: Callable[[], Coroutine[Any, Any, AsyncListing]] | None = opening
        self._running: Coroutine[Any, Any, AsyncListing] | None = None

    def _opened(self) -> Coroutine[Any, Any, AsyncListing]:
        if self._opening is None:
            raise ConfigurationError(
                "This listing was already awaited or iterated: call distinct_partition_keys() "
                "again for another (with resume= to go on from a checkpoint)."
            )
        opening, self._opening = self._opening, None
        return opening()

    def __await__(self) -> Generator[Any, None, AsyncListing]:
        return self._opened().__await__()

    def send(self, value: Any) -> Any:
        if self._running is None:
            self._running = self._opened()
        return self._running.send(value)

    def throw(self, *error: Any) -> Any:
        if self._running is None:
            self._running = self._opened()
        return self._running.throw(*error)

    def close(self) -> None:
        if self._running is not None:
            self._running.close()

    def __aiter__(self) -> AsyncIterator[str | int | Decimal | bytes]:
        return self._keys(self._opened())

    @staticmethod
    async def _keys(
        opened: Awaitable[AsyncListing],
    ) -> AsyncGenerator[str | int | Decimal | bytes, None]:
        listing = await opened
        async for key in listing:
            yield key


def _either_way(
    open_listing: Callable[P, Coroutine[Any, Any, AsyncListing]],
) -> Callable[P, ListingCall]:
    """``open_listing`` as a function whose result is awaited or iterated directly."""

    @functools.wraps(open_listing)
    def call(*args: P.args, **kwargs: P.kwargs) -> ListingCall:
        return ListingCall(lambda: open_listing(*args, **kwargs))

    return call


@_either_way
async def distinct_partition_keys(
    client: object,
    table: str | None = None,
    method: Method | str | None = None,
    *,
    options: ListingOptions | None = None,
    resume: str | None = None,
    retry: RetryPolicy | None = None,
    usage: Usage | None = None,
    on_key: Callable[[AsyncListing], Awaitable[None] | None] | None = None,
    streams: Any = None,
    s3: Any = None,
    **settings: Unpack[ListingSettings],
) -> AsyncListing:
    """The distinct partition keys of ``table``, either way::

        listing = await distinct_partition_keys(client, "orders")  # then: async for key in listing
        async for key in distinct_partition_keys(client, "orders"):
            ...

    Awaiting reads the table's description (one DescribeTable) and checks every argument and
    the resume token, so that a missing table or a bad token is raised where the listing is
    asked for, as in the sync form; it gives an :class:`AsyncListing` (``usage``,
    ``checkpoint()``, ``stop()``) to read with ``async for`` once. The arguments mean what
    they mean in :func:`ddbkeys.partition_keys.distinct_partition_keys` (the settings: a
    :class:`~ddbkeys.partition_keys.ListingOptions` and its fields as keywords, applied over
    it); ``client`` is an aiobotocore DynamoDB client, and ``segments`` (1 to 64) tasks read
    at once.

    Every method of the sync form, the marker index's included; a resume token of either form
    goes on in the other. ``on_key`` may be a coroutine function too (to save a checkpoint
    with an async client): it is awaited before each key is handed out. With ``from_export``,
    the export's files are read in a worker thread, with ``s3`` (a boto3 S3 client, not an
    aiobotocore one; by default one in ``client``'s region): see ``ddbkeys.aio._export``.
    """
    options = listing_options(options, method, settings)
    client, name = as_async_client(client, table)
    if name is None:
        raise ConfigurationError("No table given: pass the table's name.")
    reader = listing_reader(client, name, options, retry, usage)
    given = streams if streams is not None else OpenedOnUse(client, name)
    if options.from_export is not None:
        check_no_resume(options, resume)
        try:
            info, folder, manifest, since = await export_of(
                client, reader, options, s3, given, _OWNER
            )
        finally:
            if streams is None:
                await given.aclose()
        return AsyncExportListing(
            info,
            reader,
            folder,
            manifest,
            marker_attribute=options.marker_attribute,
            marker_sort_key=options.marker_sort_key,
            own_items=options.include_own_items,
            on_key=on_key,
            since=since,
        )
    notes: list[str] = []
    try:
        driver = AsyncDriver(SplitClient(client, given), reader.usage, _OWNER)
        choice, positions = await driver.run(opening_flow(options, resume, reader, noting(notes)))
    finally:
        if streams is None:
            await given.aclose()
    listing = AsyncListing(
        choice.knowing(
            options.marker_attribute, options.marker_sort_key, options.include_own_items
        ),
        reader,
        positions,
        choice.readers,
        on_key,
    )
    return opened(listing, choice, notes)
