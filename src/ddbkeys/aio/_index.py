"""The marker index for asyncio: the same names, settings and flows as
:mod:`ddbkeys.partition_keys._index.index`, ``state`` and ``follow``, with ``await``, over an
aiobotocore client (``pip install 'ddbkeys[async]'``)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError

from ddbkeys._capacity import Usage
from ddbkeys._core.steps import Flow
from ddbkeys._drivers.aio import AsyncDriver
from ddbkeys._errors import ConfigurationError
from ddbkeys._origins import Origin, origin_of
from ddbkeys._retry import DEFAULT_DEADLINE, RetryPolicy
from ddbkeys._schema import TableInfo
from ddbkeys.aio._client import as_async_client
from ddbkeys.partition_keys._export.keys import export_snapshot
from ddbkeys.partition_keys._export.now import since_flow
from ddbkeys.partition_keys._export.verify import compared
from ddbkeys.partition_keys._index import index as _sync
from ddbkeys.partition_keys._index.backfill import choose_mode, repair_flow, waited_backfill_flow
from ddbkeys.partition_keys._index.backfill_wait import Readiness
from ddbkeys.partition_keys._index.create import create_flow
from ddbkeys.partition_keys._index.drop import drop_flow, warn_left
from ddbkeys.partition_keys._index.index_base import MarkerIndexBase
from ddbkeys.partition_keys._index.maintain import Outcome, reconcile_flow
from ddbkeys.partition_keys._index.markers import BackfillReport, VerifyReport, warn_uncounted
from ddbkeys.partition_keys._index.state import StoreBase
from ddbkeys.partition_keys._index.stream_setup import enable_stream_flow
from ddbkeys.partition_keys._index.verify import verify_flow
from ddbkeys.partition_keys._listing.base import Key
from ddbkeys.partition_keys._listing.choice import check_margin
from ddbkeys.partition_keys._proof.evidence import DEFAULT_REPLAY_MARGIN, Evidence
from ddbkeys.partition_keys._proof.report import ProofStatus
from ddbkeys.partition_keys._proof.status import status_flow, status_reader
from ddbkeys.partition_keys._streams.follow_state import FollowReport, StopOn, Stopped
from ddbkeys.partition_keys._streams.follower import FollowerBase, _Either
from ddbkeys.partition_keys._streams.streams import (
    PRESIGN,
    SplitClient,
    own_endpoint,
    signed_as,
    streams_keys,
    streams_settings,
)

__all__ = ["MarkerIndex", "StateStore", "StreamFollower", "enable_stream", "reconcile"]

T = TypeVar("T")


class OpenedOnUse:
    """An aiobotocore Streams client like ``client``, opened on its first request."""

    def __init__(self, client: Any, table: str) -> None:
        self._client, self._table = client, table
        self._opened: Any = None
        self._streams: Any = None

    def __getattr__(self, name: str) -> Any:
        async def call(**params: Any) -> Any:
            if self._streams is None:
                self._opened = await _streams_client_for(self._client, self._table)
                self._streams = await self._opened.__aenter__()
            return await getattr(self._streams, name)(**params)

        return call

    async def aclose(self) -> None:
        opened, self._opened, self._streams = self._opened, None, None
        if opened is not None:
            await opened.__aexit__(None, None, None)


class MarkerIndex(MarkerIndexBase):
    __doc__ = _sync.MarkerIndex.__doc__

    def _connect(self, client: object, table: str | None, deadline: float | None) -> Any:
        resolved, name = as_async_client(client, table)
        if name is None:
            raise ConfigurationError("No table given: pass the table's name.")
        return resolved, name

    async def _run(self, flow: Flow[T]) -> T:
        owner = f"ddbkeys.aio.{type(self).__name__}"
        return await AsyncDriver(self.client, self.usage, owner).run(flow)

    async def table_info(self) -> TableInfo:
        """The table's description: the one given, or one DescribeTable the first time."""
        return await self._run(self.core.table_info())

    async def status(self, *, fresh: bool = False) -> str | None:
        """The index's status, or None when there is no such index (see the sync one)."""
        return await self._run(self.core.status(fresh))

    async def check(self) -> None:
        """A clear error unless the index exists, is KEYS_ONLY and is keyed on the marker."""
        await self._run(self.core.check())

    async def create(self, *, wait: bool = True, timeout: float = 600.0) -> bool:
        """Add the KEYS_ONLY index on the marker attribute (no-op if it exists); with
        ``wait``, until it is ACTIVE (at most ``timeout`` seconds). True where this call added
        it (also where its answer was lost and its retry found the index); False where it was
        there already, or a create running at the same time added it."""
        return await self._run(create_flow(self.core, wait, timeout))

    async def marker_key(self, partition_key_value: Any) -> dict[str, Any]:
        """The whole key (typed) of the marker of the collection ``partition_key_value``."""
        return self.core.marker_key(await self.table_info(), partition_key_value)

    async def mark(self, partition_key_value: str | int | Decimal | bytes | Key) -> bool:
        """Put the marker into one collection (see the sync ``MarkerIndex.mark``)."""
        return await self._run(self.core.mark(partition_key_value))

    async def unmark(self, partition_key_value: str | int | Decimal | bytes | Key) -> bool:
        """Remove one collection's marker (see the sync ``MarkerIndex.unmark``)."""
        return await self._run(self.core.unmark(partition_key_value))

    async def drop(
        self,
        progress: Callable[[int], None] | None = None,
        *,
        wait: bool = True,
        timeout: float = 600.0,
    ) -> int:
        """Take the index away, and its markers with it (see the sync ``MarkerIndex.drop``)."""
        return warn_left(await self._run(drop_flow(self.core, progress, wait, timeout)), self.table)

    async def mark_many(
        self, keys: Iterable[Any], progress: Callable[[int], None] | None = None
    ) -> BackfillReport:
        """:meth:`mark` each collection of ``keys``, one after another."""
        return await self._run(self.core.mark_many(keys, progress))

    async def backfill(
        self,
        progress: Callable[[int], None] | None = None,
        *,
        state_table: str | None = None,
        record: bool = True,
        mode: str = "auto",
        replay_margin: float = DEFAULT_REPLAY_MARGIN,
        wait: bool = True,
        wait_for_maintainer: bool = False,
        timeout: float | None = None,
        on_wait: Callable[[Readiness], None] | None = None,
        streams: Any = None,
        force: bool = False,
        from_export: str | None = None,
        s3: Any = None,
    ) -> BackfillReport:
        """Mark every collection of the table, begun as the proof's rule says (see the sync
        ``MarkerIndex.backfill``: the same settings; its waits are on the event loop; a
        Streams client like ``client`` is opened when the read mode runs and ``streams`` is
        not given). ``from_export``: the export's files are read in a worker thread, with
        ``s3`` (a boto3 S3 client, not an aiobotocore one)."""
        export = None
        if from_export is not None:
            info = await self._run(self.core.check())
            export = await asyncio.to_thread(
                export_snapshot, self.client, from_export, s3, info, self.core.markers(info)
            )
        flow = waited_backfill_flow(
            self.core,
            progress,
            self._state(state_table) if record else None,
            replay_margin,
            wait=wait,
            for_maintainer=wait_for_maintainer,
            timeout=timeout,
            on_wait=on_wait,
            mode=mode,
            force=force,
            export=export,
        )
        async with contextlib.AsyncExitStack() as stack:
            reads = export is not None or (
                mode != "reconcile" and choose_mode(mode, await self.table_info()) == "read"
            )
            if streams is None and reads:
                streams = await stack.enter_async_context(
                    await _streams_client_for(self.client, self.table)
                )
            owner = f"ddbkeys.aio.{type(self).__name__}"
            driver = AsyncDriver(SplitClient(self.client, streams), self.usage, owner)
            report = await driver.run(flow)
        warn_uncounted(report, self.table)
        return report

    async def verify(
        self,
        *,
        from_export: str | None = None,
        s3: Any = None,
        replay_margin: float = DEFAULT_REPLAY_MARGIN,
        streams: Any = None,
        state_table: str | None = None,
    ) -> VerifyReport:
        """Compare the index with the table. Holds both key sets in memory. ``from_export``:
        with the export instead, reading neither the table nor the index (see the sync
        ``MarkerIndex.verify``); its files are read in a worker thread, with ``s3`` (a boto3 S3
        client, not an aiobotocore one)."""
        if from_export is None:
            saved = await self._run(self._state(state_table).load(self.table, self.name))
            return await self._run(verify_flow(self.core, saved, state_table))
        margin = check_margin(replay_margin, self.table)
        info = await self._run(self.core.check())
        snapshot = await asyncio.to_thread(
            export_snapshot, self.client, from_export, s3, info, self.core.markers(info)
        )
        taken = datetime.fromtimestamp(snapshot.time, UTC)
        flow = since_flow(status_reader(self.client, self.core), info, taken, margin, time.time())
        async with contextlib.AsyncExitStack() as stack:
            if streams is None:
                streams = await stack.enter_async_context(
                    await _streams_client_for(self.client, self.table)
                )
            owner = f"ddbkeys.aio.{type(self).__name__}"
            since = await AsyncDriver(SplitClient(self.client, streams), self.usage, owner).run(
                flow
            )
        return compared(self.table, self.name, snapshot, since)

    async def repair(
        self, *, remove_orphans: bool = True, state_table: str | None = None
    ) -> VerifyReport:
        """Mark what ``verify`` found unmarked, and remove orphaned markers."""
        return await self._run(repair_flow(self.core, self._state(state_table), remove_orphans))

    async def proof_status(
        self,
        *,
        state_table: str | None = None,
        replay_margin: float = DEFAULT_REPLAY_MARGIN,
        streams: Any = None,
    ) -> ProofStatus:
        """Where the index stands against its proof (see the sync
        ``MarkerIndex.proof_status``); ``streams``: an aiobotocore Streams client (by
        default one like this index's client, opened on the first stream request)."""
        margin = check_margin(replay_margin, self.table)
        given = streams if streams is not None else OpenedOnUse(self.client, self.table)
        flow = status_flow(
            status_reader(self.client, self.core), self.core, self._state(state_table), margin
        )
        owner = f"ddbkeys.aio.{type(self).__name__}"
        try:
            return await AsyncDriver(SplitClient(self.client, given), self.usage, owner).run(flow)
        finally:
            if streams is None:
                await given.aclose()


async def reconcile(index: MarkerIndex, partition_key: dict[str, Any]) -> Outcome:
    """Make the marker of the collection ``partition_key`` match the collection as it is now
    (see :func:`ddbkeys.partition_keys.reconcile`)."""
    return await index._run(reconcile_flow(index.core, partition_key, index.core.begin()))


async def enable_stream(
    client: object, table: str | None = None, *, deadline: float | None = DEFAULT_DEADLINE
) -> tuple[str, bool]:
    """Turn ``table``'s stream on if it is off, within ``deadline`` seconds in all (see the
    sync ``enable_stream``)."""
    index = MarkerIndex(client, table, deadline=deadline)
    return await index._run(enable_stream_flow(index.core))


class StateStore(StoreBase):
    """Reads and writes the records of marker indexes in the state table ``name``."""

    def __init__(
        self,
        client: object,
        name: str | None = None,
        *,
        deadline: float | None = 60.0,
        clock: Callable[[], float] = time.time,
        retry: RetryPolicy | None = None,
    ) -> None:
        resolved = as_async_client(client, None)[0]
        super().__init__(resolved, name, deadline=deadline, clock=clock, retry=retry)

    async def _run(self, flow: Flow[T]) -> T:
        owner = f"ddbkeys.aio.{type(self).__name__}"
        return await AsyncDriver(self.client, self.usage, owner).run(flow)

    async def ensure(self) -> None:
        """Create the state table if it is missing, and wait until it is ACTIVE."""
        await self._run(self.core.ensure())

    async def load(self, table: str, index_name: str) -> Evidence | None:
        """The record of ``table``'s index ``index_name``; None when there is none."""
        return await self._run(self.core.load(table, index_name))

    async def update(
        self, table: str, index_name: str, values: dict[str, Any], remove: tuple[str, ...] = ()
    ) -> None:
        """Set ``values`` (plain: float, str, dict of str, list of str) on the record."""
        await self._run(self.core.update(table, index_name, values, remove))


class StreamFollower(FollowerBase):
    """Follows ``index.table``'s stream (see the sync ``StreamFollower``): the same loop, one
    task, its waits on the event loop. ``streams`` is an aiobotocore DynamoDB Streams client;
    by default ``run`` opens one like the index's client, and closes it at its end."""

    def _default_streams(self, index: MarkerIndexBase) -> Any:
        return None  # opened by run(): an aiobotocore client lives in an event loop

    async def run(
        self,
        stop: asyncio.Event | threading.Event | None = None,
        *,
        until_caught_up: bool = False,
        from_start: bool = False,
    ) -> FollowReport:
        """Follow the stream until ``stop`` is set, or (``until_caught_up``) until every open
        shard has been read to its end once (with ``backfill``: once more after the backfill
        is over, so that what was written meanwhile is applied too). The checkpoint is saved
        after every batch."""
        async with contextlib.AsyncExitStack() as stack:
            streams = self.streams
            if streams is None:
                streams = await stack.enter_async_context(
                    await _streams_client_for(self.index.client, self.index.table)
                )
            driver = AsyncDriver(
                SplitClient(self.index.client, streams),
                self.index.usage,
                "ddbkeys.aio.StreamFollower",
            )
            stop = stop or asyncio.Event()
            flag = StopOn(stop)
            ended = asyncio.Event()
            beside = None
            if self.backfill:
                beside = asyncio.ensure_future(
                    AsyncDriver(
                        SplitClient(self.index.client, streams),
                        Usage(),
                        "ddbkeys.aio.StreamFollower",
                    ).run(self._backfilling(StopOn(_Either(stop, ended)), until_caught_up))
                )
            try:
                after = None if beside is None else beside.done
                return await driver.run(
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
                    try:
                        await beside
                    except Stopped:
                        pass
                    except Exception as exc:  # said, not lost in a task
                        self.report.backfill_state = "failed"
                        if self.on_backfill is not None:
                            self.on_backfill(f"backfill failed: {exc}")


async def _streams_client_for(client: Any, table: str | None = None) -> Any:
    """An aiobotocore DynamoDB Streams client (to enter) like ``client``, signing as it does,
    as :func:`ddbkeys.partition_keys._streams.streams.streams_client_for` proves (a client
    ``ddbkeys.aio.make_client`` made: its session; any other: a new session when it signs with
    that session's access key)."""
    from aiobotocore.session import AioSession  # noqa: PLC0415 (an optional extra)

    origin = origin_of(client)
    if origin is None:
        try:
            url = await client.generate_presigned_url(PRESIGN[0], Params=PRESIGN[1])
            theirs = signed_as(url)
        except BotoCoreError:  # it signs with nothing: neither will the Streams client
            theirs = None
        session = AioSession()
        credentials = await session.get_credentials()
        ours = None if credentials is None else (await credentials.get_frozen_credentials())
        keys = streams_keys(theirs, ours and ours.access_key, own_endpoint(client), table)
        origin = Origin(session, keys)
    settings = streams_settings(client)
    return origin.session.create_client("dynamodbstreams", **settings, **origin.keys)
