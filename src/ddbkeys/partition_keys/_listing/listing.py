"""A listing: the segments of one table read by a segment method, and where each stands.

:class:`ListingCore` is the bookkeeping both forms share: one position per Scan segment (not
started, the last key handed out, done), the keys found, the resume token, the stop flag, and
the flow that reads one segment. :class:`Listing` runs those flows on the sync driver, in the
caller's thread or in reader threads; :class:`ddbkeys.aio._listing.AsyncListing` runs the same
flows as asyncio tasks. Only the waiting and the spawning differ.
"""

from __future__ import annotations

import inspect
import queue
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any, TypeVar

from ddbkeys._capacity import Usage
from ddbkeys._core.reads import Through
from ddbkeys._core.steps import Flow
from ddbkeys._core.stopping import STOP_SLICE
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys._errors import ConfigurationError, DdbKeysError, ListingInterrupted
from ddbkeys.partition_keys._listing.base import (
    Key,
    Position,
    ReadBudget,
    Reader,
    SegmentMethod,
    plain_key,
)
from ddbkeys.partition_keys._listing.checkpoint import Checkpoint, encode_token, key_schema
from ddbkeys.partition_keys._listing.joining import Joining

__all__ = ["DONE", "EXITED", "Keys", "Listing", "ListingCore"]

T = TypeVar("T")

#: What a reader hands the consumer besides keys: a segment read to its end, a reader finished.
DONE = object()
EXITED = object()


class ListingCore:
    """The distinct partition keys of a table, as a stream (iterate over it once): what the
    threaded and the asyncio form share.

    ``positions`` holds one entry per Scan segment: None (not started), the last key handed out
    (a key AttributeValue), or True (done). ``checkpoint()`` is a token that
    ``distinct_partition_keys(..., resume=token)`` continues from, without repeating or missing
    a key. ``usage`` counts requests, items read and read units so far. ``on_key`` is called
    with the listing after each key handed out and each segment finished.
    """

    def __init__(
        self,
        method: SegmentMethod,
        reader: Reader,
        positions: list[Position],
        readers: int = 1,
        on_key: Callable[[Any], object] | None = None,
    ) -> None:
        self.method = method
        self.reader = reader
        self.positions = positions
        self.readers = readers
        self.on_key = on_key
        self.keys_found = 0
        #: Why this method was chosen (for ``auto``: why the index was or was not used).
        self.method_reason = ""
        #: Whether the marker index was proven complete (None: no index was considered; False:
        #: it could not be, and was not used, or was read as it is with ``trust_index``).
        self.index_trusted: bool | None = None
        #: The replay that proved the index (what it read and re-checked), when it was used.
        self.replay: Any = None
        #: What it said before it read, one line each (each also warned of as it was found:
        #: an IndexReplayWarning when re-checking what the marker index's replay read costs
        #: more than a scan: its maintainer's lag, or a busy table's margin of writes).
        self.notes: tuple[str, ...] = ()
        #: Where more readers may join as segments end (``readers``: those reading so far).
        self._joining: Joining | None = None
        #: (segments done, requests sent, segments to read) when it began to read
        self._joined_from = (0, 0, 0)
        self._started = False
        self._ended: str | None = None  # why the iteration ended before the last key

    usage: Through[Usage] = Through("reader")

    @property
    def method_name(self) -> str:
        return self.method.name

    @property
    def method_note(self) -> str:
        """What the method changed its mind about while reading, once it has (skip-pages that
        went on as a scan says after how many keys, and why); empty when nothing."""
        note = self.method.note()
        return f"{self.method.name} {note}" if note else ""

    @property
    def stray_note(self) -> str:
        """Once read: the keys handed out at an item that says it is ddbkeys' marker but is
        not one as this listing knows them (``recognise.Strays``: most likely a marker index
        made with other settings, whose record the listing did not read), and what to pass;
        empty when none."""
        method = self.method
        return method.strays.note(method.markers)

    @property
    def scan_segments(self) -> int:
        """How many Scan segments the table is split into (``TotalSegments``)."""
        return len(self.positions)

    @property
    def segments_done(self) -> int:
        return sum(p is True for p in self.positions)

    @property
    def finished(self) -> bool:
        return all(p is True for p in self.positions)

    def checkpoint(self) -> str:
        """The resume token of where the listing stands: bound to the table, its key schema,
        the method and include_own_items (see :mod:`ddbkeys.partition_keys._listing.checkpoint`)."""
        info = self.method.info
        replay = getattr(self.method, "replay", None)
        return encode_token(
            Checkpoint(
                info.name,
                key_schema(info),
                self.method.name,
                list(self.positions),
                info.created,
                replay.to_json() if replay is not None else None,
                self.method.own_items,
            )
        )

    def stop(self) -> None:
        """Ask the listing to stop; safe from a signal handler, another thread or task. Within
        about 0.1 s, iterating raises :class:`~ddbkeys.ListingInterrupted`, and
        ``checkpoint()`` goes on from the last key handed out."""
        self.reader.stop.set()

    # --- the bookkeeping both forms share -----------------------------------------------------

    def _joiners(self, running: int, left: int) -> int:
        """How many readers to start now that a segment has ended, with ``running`` reading
        and ``left`` segments not yet taken (see :class:`Joining`, over the segments this run
        reads and the requests it sent: a resumed listing's own); ``readers`` counts them."""
        if self._joining is None or not left:
            return 0
        done, sent, of = self._joined_from
        wanted = self._joining.wanted(self.segments_done - done, of, self.usage.requests - sent)
        more = min(left, max(0, wanted - running))
        self.readers = max(self.readers, running + more)
        return more

    def _end_early(self, exc: BaseException) -> None:
        """The iteration raised ``exc``: any later step raises in :meth:`_check_ended`, rather
        than ending as a complete listing does (a generator that raised is over)."""
        if self._ended is None and not self.finished:
            self._ended = "stopped" if isinstance(exc, ListingInterrupted) else type(exc).__name__

    #: How a listing that ended early goes on (said in the error that ending raises).
    _going_on = "Go on with distinct_partition_keys(..., resume=listing.checkpoint())."

    def _check_ended(self) -> None:
        if self._ended is not None:
            info = self.method.info
            raise ListingInterrupted(
                f"The listing of table {info.name!r} ended early ({self._ended}) after "
                f"{self.keys_found} key(s): they are not all the keys. {self._going_on}",
                table=info.name,
            )

    def _begin(self) -> list[int]:
        """The segments left to read, once: a listing is a stream."""
        if self._started:
            raise DdbKeysError("A listing is a stream: iterate over it once.")
        self._started = True
        todo = [s for s in range(self.scan_segments) if self.positions[s] is not True]
        # (resumed: judged by what this run reads and sends, see _joiners)
        self._joined_from = (self.segments_done, self.usage.requests, len(todo))
        return todo

    def _segment_flow(self, segment: int) -> Flow[None]:
        """The flow that emits the keys of ``segment`` from where it stands."""
        after = self.positions[segment]
        start = after if isinstance(after, dict) else None
        keys = self.method.keys(self.reader, segment, self.scan_segments, start)
        budget = self.reader.budget
        return keys if budget is None or not budget.settles else _settled(keys, budget, self.reader)

    def _handed(self, segment: int, key: Key) -> None:
        """``key`` of ``segment`` was handed to the consumer."""
        self._moved(segment, key, 1)

    def _done(self, segment: int) -> None:
        """``segment`` was read to its end, and every key of it handed out."""
        self._moved(segment, True, 0)

    def _moved(self, segment: int, position: Position, keys: int) -> None:
        """``segment`` stands at ``position``, ``on_key`` is told. When ``on_key`` raises, the
        position goes back: the key was not handed out, and a checkpoint taken after that
        goes on before it (it was skipped on resume)."""
        previous = self.positions[segment]
        self.positions[segment] = position
        self.keys_found += keys
        try:
            self._notify()
        except BaseException:
            self.positions[segment] = previous
            self.keys_found -= keys
            raise

    def _notify(self) -> None:
        if self.on_key is not None:
            self.on_key(self)

    def _take(self, segment: int, item: Any) -> Key | None:
        """What a reader handed the consumer: a key (returned, to hand out), a segment
        done, or a reader's failure (raised)."""
        if item is DONE:
            self._done(segment)
        elif isinstance(item, BaseException):
            raise item
        else:
            key: Key = item
            self._handed(segment, key)
            return key
        return None


def _settled(keys: Flow[None], budget: ReadBudget, reader: Reader) -> Flow[None]:
    """``keys``, then a wait until ``budget`` is out of debt (see ReadBudget)."""
    yield from keys
    yield from budget.wait(reader.stop)


class Keys(Iterator[T]):
    """A listing's keys, once. After the iteration raised (a stop, an error, Ctrl-C), the next
    step raises :class:`~ddbkeys.ListingInterrupted` again: it does not end as if the
    keys handed out were all of them."""

    __slots__ = ("_keys", "_listing")

    def __init__(self, listing: ListingCore, keys: Iterator[T]) -> None:
        self._listing = listing
        self._keys = keys

    def __iter__(self) -> Keys[T]:
        return self

    def __next__(self) -> T:
        self._listing._check_ended()
        try:
            return next(self._keys)
        except StopIteration:
            raise
        except BaseException as exc:
            self._listing._end_early(exc)
            raise


class Listing(ListingCore):
    """The distinct partition keys of a table, as a stream (iterate over it once), read with
    the sync driver.

    Keys come as Python values (str, int or Decimal, bytes), each once. ``readers`` threads
    take the segments in turn, each reading one segment to its end before taking the next. With
    more than one reader, keys of different segments interleave.

    ``stop()`` (safe from a signal handler or another thread) ends the iteration with
    :class:`~ddbkeys.ListingInterrupted` between requests and out of any wait. With
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
        if inspect.iscoroutinefunction(on_key):
            raise ConfigurationError(
                f"on_key={on_key.__qualname__} is a coroutine function, which a listing read "
                "with threads cannot await: pass a plain function, or list with ddbkeys.aio.",
                table=method.info.name,
            )
        super().__init__(method, reader, positions, readers, on_key)
        #: Read in a thread even with one reader, so that ``stop()`` never waits on a request.
        self.background = False
        self._driver = SyncDriver(reader.client, reader.usage)

    def raw(self) -> Keys[Key]:
        """The keys as DynamoDB AttributeValues (``{"S": ...}``)."""
        return Keys(self, self._raw())

    def _raw(self) -> Iterator[Key]:
        todo = self._begin()
        alone = self.readers <= 1 and self._joining is None
        if (alone or len(todo) <= 1) and not self.background:
            for segment in todo:
                for key in self._driver.iterate(self._segment_flow(segment)):
                    self.reader.stop.check()
                    self._handed(segment, key)
                    yield key
                self._done(segment)
            return
        yield from self._parallel(todo)

    def __iter__(self) -> Keys[str | int | Decimal | bytes]:
        return Keys(self, (plain_key(key) for key in self._raw()))

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
                    out.put((segment, item), timeout=STOP_SLICE)
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
                    for key in self._driver.iterate(self._segment_flow(segment)):
                        if not send(segment, key):
                            return
                    if not send(segment, DONE):
                        return
            except BaseException as exc:  # handed to the consumer
                send(segment, exc)
            finally:
                send(-1, EXITED)

        threads: list[threading.Thread] = []

        def start(count: int) -> None:
            for _ in range(count):
                threads.append(threading.Thread(target=run, daemon=True))
                threads[-1].start()

        start(min(self.readers, len(todo)))
        running = len(threads)
        try:
            while running:
                segment, item = self._next_item(out)
                if item is EXITED:
                    running -= 1
                elif (key := self._take(segment, item)) is not None:
                    yield key
                elif item is DONE and (more := self._joiners(running, pending.qsize())):
                    start(more)
                    running += more
        finally:
            stop.set()
            self.reader.stop.set()  # the readers stop between pages, and out of their waits
            # A reader inside a request is not waited for past 0.1 s in all (daemon threads:
            # its answer is dropped, and the positions handed out stand).
            until = time.monotonic() + 0.1
            for thread in threads:
                thread.join(timeout=max(0.0, until - time.monotonic()))
