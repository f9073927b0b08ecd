"""The sync :class:`StreamFollower` (and what it shares with the asyncio one): the
:class:`~ddbkeys.partition_keys._streams.follow.FollowCore` run on a driver until stopped, with its
backfill in a thread of its own when asked."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ddbkeys._capacity import Usage
from ddbkeys._core.reads import Settable, Through
from ddbkeys._core.steps import (
    Flow,
)
from ddbkeys._core.stopping import StopFlag
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys.partition_keys._index.index_base import MarkerIndexBase
from ddbkeys.partition_keys._proof.evidence import DEFAULT_REPLAY_MARGIN
from ddbkeys.partition_keys._streams.follow import FollowCore
from ddbkeys.partition_keys._streams.follow_state import (
    Event,
    FollowReport,
    FollowState,
    StopOn,
    Stopped,
)
from ddbkeys.partition_keys._streams.streams import SplitClient, streams_client_for

__all__ = ["FollowerBase", "StreamFollower"]


class FollowerBase:
    """What both forms of ``StreamFollower`` share: its :class:`FollowCore` (``core``), where it
    stands (``position``, a :class:`FollowState`: kept from one run to the next), the marker
    index whose client it writes with (``index``) and its Streams client (``streams``). Nothing
    is sent by the constructor."""

    def __init__(
        self,
        index: MarkerIndexBase,
        *,
        streams: Any = None,
        state_table: str | None = None,
        poll: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_batch: Callable[[FollowReport], None] | None = None,
        backfill: bool = False,
        replay_margin: float = DEFAULT_REPLAY_MARGIN,
        on_backfill: Callable[[str], None] | None = None,
    ) -> None:
        self.index = index
        self.streams = streams if streams is not None else self._default_streams(index)
        self.core = FollowCore(
            index.core, state_table=state_table, poll=poll, clock=clock, on_batch=on_batch
        )
        self.position = FollowState()
        self.core.replay_margin = replay_margin
        #: Whether ``run`` also backfills the index (see ``follow_backfill``), for listings
        #: with this ``replay_margin``; ``on_backfill`` is told what that does, a line each time.
        self.backfill = backfill
        self.replay_margin = replay_margin
        self.on_backfill = on_backfill

    def _backfilling(self, stop: StopFlag, once: bool) -> Flow[None]:
        """The backfill beside the following (``backfill=True``), a flow of its own."""
        from ddbkeys.partition_keys._streams.follow_backfill import keep_backfilled  # noqa: PLC0415

        return keep_backfilled(
            self.core, self.report, self.replay_margin, stop, self.on_backfill, once=once
        )

    def _default_streams(self, index: MarkerIndexBase) -> Any:
        """The Streams client when none is given: one like the index's client."""
        return streams_client_for(index.client, index.table)

    report: Through[FollowReport] = Through(
        "position", "What it did so far: records and batches handled, and what they did to markers."
    )

    # The settings it was made with, as before they moved to its core (read and set there).
    poll: Settable[float] = Settable("core")
    on_batch: Settable[Callable[[FollowReport], None] | None] = Settable("core")
    clock: Through[Callable[[], float]] = Through("core")
    state = property(
        lambda self: self.core.store,
        doc="Its record's core: the state table (``.name``), deadline and retry.",
    )


class StreamFollower(FollowerBase):
    """Follows ``index.table``'s stream and reconciles the marker of every collection a record
    names. ``run`` until ``stop`` is set (or, with ``until_caught_up``, until every open shard
    has been read to its end once).

    ``run`` refuses (a :class:`~ddbkeys.ConfigurationError`, before anything is
    written) unless the table has the index ``index.name``, KEYS_ONLY and ACTIVE. The marker
    attribute is that index's own key: an ``index`` made without ``marker_attribute=`` takes it, and
    one made with another attribute is refused.

    On the first run (or when the table has a new stream), reading starts at the stream's end
    (``from_start=False``) or at its oldest record (``TRIM_HORIZON``, up to 24 hours back); the time
    it started is recorded as when the maintainer began covering the stream, and a backfill begun
    after it makes the index trustworthy (see docs/partition-keys/index.md, "What a listing proves,
    and how"). ``streams`` is a DynamoDB Streams client (by default one on the index's client's
    endpoint and credentials).

    With ``backfill=True`` it also backfills the index beside the following (a thread of its
    own; a task in ``ddbkeys.aio``), once ``replay_margin`` seconds have passed since its first
    position, so that listings with that margin can prove the index: once per stream, and not
    again on a restart while a backfill that counts is recorded (see ``follow_backfill``).
    ``on_backfill`` is told what that backfill does, a line each time; ``report.backfills``,
    ``report.backfill`` and ``report.backfill_state`` say it too. With ``until_caught_up``,
    ``run`` then returns only once that backfill is done (the margin, then the backfill) and
    the stream read to its end after it: it goes on following meanwhile.
    """

    def run(
        self,
        stop: threading.Event | None = None,
        *,
        until_caught_up: bool = False,
        from_start: bool = False,
    ) -> FollowReport:
        """Follow the stream until ``stop`` is set, or (``until_caught_up``) until every open
        shard has been read to its end once (with ``backfill``: once more after the backfill
        is over, so that what was written meanwhile is applied too). The checkpoint is saved
        after every batch."""
        driver = SyncDriver(SplitClient(self.index.client, self.streams), self.index.usage)
        stop = stop or threading.Event()
        flag = StopOn(stop)
        ended = threading.Event()
        beside = self._backfill_thread(stop, ended, until_caught_up) if self.backfill else None
        after = None if beside is None else lambda: not beside.is_alive()
        try:
            return driver.run(
                self.core.follow(self.position, flag, until_caught_up, from_start, after)
            )
        except Stopped:
            return self.report
        except BaseException:
            ended.set()  # (the following failed: its backfill is not waited for, it stops too)
            raise
        finally:
            if beside is not None:
                if not until_caught_up:  # (caught up: its one backfill is waited for)
                    ended.set()
                beside.join()

    def _backfill_thread(
        self, stop: threading.Event, ended: threading.Event, once: bool
    ) -> threading.Thread:
        """A thread that runs :meth:`_backfilling` until ``stop`` or ``ended`` is set."""
        flag = StopOn(_Either(stop, ended))
        flow = self._backfilling(flag, once)

        def run() -> None:
            try:
                # (the Streams client too: a read-mode backfill reads the stream)
                SyncDriver(SplitClient(self.index.client, self.streams), Usage()).run(flow)
            except Stopped:
                pass
            except Exception as exc:  # said, not lost in a thread
                self.report.backfill_state = "failed"
                if self.on_backfill is not None:
                    self.on_backfill(f"backfill failed: {exc}")

        thread = threading.Thread(target=run, name="ddbkeys-follow-backfill", daemon=True)
        thread.start()
        return thread


class _Either:
    """Set when either event is (a stop signal for :class:`StopOn`)."""

    def __init__(self, first: Event, second: Event) -> None:
        self.first, self.second = first, second

    def is_set(self) -> bool:
        return self.first.is_set() or self.second.is_set()
