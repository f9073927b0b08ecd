"""A backfill stopped on its way (Ctrl-C or SIGTERM on `index backfill`, a cancelled asyncio
task) says so in its record (``stopped``), so that the next backfill begins at once instead of
waiting ``ALIVE_FOR`` (30 s) for the stopped one's alive time to age (issue 33). The backfills
are slowed by the fault proxy (each Query held 0.2 s) so that they are mid-way when stopped."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys.partition_keys import MarkerIndex, StreamFollower, distinct_partition_keys
from ddbkeys.partition_keys._index.backfill_wait import running_backfill
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.testing._proxy import FaultProxy
from tests.integration.test_backfill_alive import INDEX, SLOW, at_work
from tests.integration.test_index_setup import fill
from tests.integration.test_marker_follow_faults import wait_for_record
from tests.integration.test_marker_lifecycle import non_empty
from tests.support.progress import PROGRESS_CEILING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


@contextlib.contextmanager
def following(client: DynamoDBClient, table: str, store: str) -> Iterator[None]:
    follower = StreamFollower(MarkerIndex(client, table), state_table=store, poll=0.05)
    stop = threading.Event()
    runner = threading.Thread(target=follower.run, args=(stop,))
    runner.start()
    try:
        wait_for_record(client, table, store)
        yield
    finally:
        stop.set()
        runner.join(timeout=30)


def mid_way(client: DynamoDBClient, table: str, store: str, handled: int = 3) -> None:
    deadline = time.monotonic() + PROGRESS_CEILING  # (a sign of progress, not a time)
    while (at_work(client, table, store).handled or 0) < handled:
        assert time.monotonic() < deadline, f"the backfill handled no {handled} collections"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_cli_backfill_stopped_mid_way_lets_the_next_one_begin_at_once(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    fault_proxy: FaultProxy,
    sig: signal.Signals,
) -> None:
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(40))
    args = ["partition-keys", "index", "backfill", "-t", table, "--state-table", store]
    args += ["--replay-margin", "1", "--mode", "reconcile"]
    with following(ddb_client, table, store):
        fault_proxy.set_faults(SLOW)  # 40 collections, 2 Queries each: 16 s and more
        code = (
            "import sys; from ddbkeys.partition_keys._index import backfill_claim as c; "
            "c.ALIVE = 1.0; from ddbkeys._cli import main; sys.argv[0] = 'ddbkeys'; main()"
        )
        first = subprocess.Popen(
            [sys.executable, "-c", code, *args, "--endpoint-url", fault_proxy.endpoint_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            mid_way(ddb_client, table, store)
            first.send_signal(sig)
            sent = time.monotonic()
            _, said = first.communicate(timeout=20)
            took = time.monotonic() - sent
        finally:
            if first.poll() is None:
                first.kill()
                first.wait(timeout=10)
        assert first.returncode == 128 + sig, said
        verb = "Interrupted" if sig == signal.SIGINT else f"Stopped by {sig.name}"
        assert said.splitlines()[-1].startswith(
            f"{verb}: the backfill of table {table!r} did not finish"
        ), said
        assert took < 10.0  # the farewell write is bounded (FAREWELL, 2 s; a Query 0.2 s)
        saved = StateStore(ddb_client, store).load(table, INDEX)
        assert saved is not None and saved.backfill is not None
        stopped = saved.backfill
        assert stopped.stopped is not None and stopped.finished is None
        assert stopped.owner is not None and stopped.owner.endswith(f":{first.pid}")
        assert 3 <= (stopped.handled or 0) < 40  # mid-way
        assert running_backfill(saved, stopped.stream, time.time()) is None
        # The same command again (not through the slowing proxy): no wait, and it counts.
        began = time.monotonic()
        again = CliRunner().invoke(
            cli, [*args, "--endpoint-url", ddb_endpoint_url, "--output", "json"]
        )
        assert again.exit_code == 0, again.output
        assert "another backfill" not in again.stderr, again.stderr
        assert time.monotonic() - began < 25.0  # (it would wait 30 s for the stopped one)
        report = json.loads(again.stdout)
        assert report["counts"] is True and report["joined"] is None
        assert report["written"] + report["already"] == 40
        listing = distinct_partition_keys(
            ddb_client, table, "index", state_table=store, replay_margin=1.0
        )
        assert sorted(listing) == non_empty(ddb_client, table) and listing.index_trusted


def test_a_cancelled_asyncio_backfill_says_it_stopped(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str, fault_proxy: FaultProxy
) -> None:
    pytest.importorskip("aiobotocore")
    from ddbkeys import aio  # noqa: PLC0415
    from ddbkeys.aio._index import MarkerIndex as AsyncIndex  # noqa: PLC0415

    table, store = streamed_table, state_table
    fill(ddb_client, table, range(30))
    with following(ddb_client, table, store):
        fault_proxy.set_faults(SLOW)

        async def body() -> float:
            async with aio.make_client(fault_proxy.endpoint_url) as client:
                index = AsyncIndex(client, table)
                task = asyncio.create_task(
                    index.backfill(state_table=store, replay_margin=1.0, mode="reconcile")
                )
                await asyncio.to_thread(mid_way, ddb_client, table, store)
                task.cancel()
                sent = time.monotonic()
                with pytest.raises(asyncio.CancelledError):
                    await task
                return time.monotonic() - sent

        took = asyncio.run(body())
    assert took < 10.0  # (FAREWELL, 2 s, and a Query in flight)
    saved = StateStore(ddb_client, store).load(table, INDEX)
    assert saved is not None and saved.backfill is not None
    assert saved.backfill.stopped is not None and saved.backfill.finished is None
    assert 3 <= (saved.backfill.handled or 0) < 30
    assert running_backfill(saved, saved.backfill.stream, time.time()) is None


def test_a_cli_backfill_interrupted_while_it_waits_for_the_margin_wrote_nothing(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(3))
    args = ["partition-keys", "index", "backfill", "-t", table, "--state-table", store]
    args += ["--replay-margin", "30", "--endpoint-url", ddb_endpoint_url]
    with following(ddb_client, table, store):
        waiting = subprocess.Popen(
            [sys.executable, "-m", "ddbkeys", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert waiting.stderr is not None
            first = waiting.stderr.readline()
            assert first.startswith("waiting "), first
            waiting.send_signal(signal.SIGINT)
            _, said = waiting.communicate(timeout=20)
        finally:
            if waiting.poll() is None:
                waiting.kill()
                waiting.wait(timeout=10)
    assert waiting.returncode == 130, said
    assert said.splitlines()[-1] == (
        f"Interrupted before the backfill of table {table!r} began: nothing was written."
    ), said
    saved = StateStore(ddb_client, store).load(table, INDEX)
    assert saved is not None and saved.backfill is None
