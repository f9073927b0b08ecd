"""One backfill at a time (issue 33), on DynamoDB Local: a manual `index backfill` run while
`index follow --backfill` is backfilling reads nothing of the table and reports the follower's
outcome; a backfill killed with SIGKILL stops being alive, and the next one runs and counts.
The backfills are slowed by the fault proxy's latency (each Query held 0.2 s) so that they
are still at work when the other one comes; replay margins of 1 s."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli, index_backfill
from ddbkeys._connect import make_client
from ddbkeys.partition_keys import MarkerIndex, StreamFollower, distinct_partition_keys
from ddbkeys.partition_keys._index import backfill_wait
from ddbkeys.partition_keys._index.backfill_wait import OTHER_RUNNING, Readiness, running_backfill
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._proof.evidence import Backfill
from ddbkeys.testing._proxy import FaultProxy, Faults
from tests.integration.test_index_setup import fill
from tests.integration.test_marker_follow_faults import wait_for_record
from tests.integration.test_marker_lifecycle import item, non_empty
from tests.support.progress import PROGRESS_CEILING

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

MARGIN = 1.0
INDEX = "ddbkeys-partition-keys"
#: Each Query (a backfill's consistent read of one collection) held this long by the proxy.
SLOW = Faults(delay=1.0, delay_seconds=0.2, operations=frozenset({"Query"}))


def at_work(client: DynamoDBClient, table: str, store: str, most: float = 60.0) -> Backfill:
    """Wait until a backfill's record says it is at work (begun, not finished)."""
    deadline = time.monotonic() + most
    while True:
        saved = StateStore(client, store).load(table, INDEX)
        if saved is not None and saved.backfill is not None and saved.backfill.finished is None:
            return saved.backfill
        assert time.monotonic() < deadline, saved
        time.sleep(0.05)


def table_reads(proxy: FaultProxy, table: str) -> int:
    """The Scans and Queries of ``table`` (or its indexes) that went through ``proxy``."""
    return sum(1 for c in proxy.calls if c.table == table and c.operation in ("Scan", "Query"))


def test_a_manual_backfill_beside_the_followers_waits_for_it_and_reads_nothing(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    fault_proxy: FaultProxy,
    capsys: pytest.CaptureFixture[str],
) -> None:
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(12))
    fault_proxy.set_faults(SLOW)  # the follower's backfill: 2 Queries a collection, 5 s or so
    told: list[str] = []
    follower = StreamFollower(
        MarkerIndex(make_client(fault_proxy.endpoint_url), table),
        state_table=store,
        poll=0.05,
        backfill=True,
        replay_margin=MARGIN,
        on_backfill=told.append,
    )
    stop = threading.Event()
    runner = threading.Thread(target=follower.run, args=(stop,))
    runner.start()
    try:
        theirs = at_work(ddb_client, table, store)
        assert theirs.owner is not None and theirs.owner.endswith(f":{os.getpid()} (index follow)")
        # The manual backfill, through a proxy of its own: what it reads is counted apart.
        with FaultProxy(ddb_endpoint_url) as mine:
            args = ["partition-keys", "index", "backfill", "-t", table, "--state-table", store]
            args += ["--replay-margin", "1", "--endpoint-url", mine.endpoint_url]
            refused = CliRunner().invoke(cli, [*args, "--no-wait"])
            assert refused.exit_code == 1, refused.output
            # --force would say whose record it takes (helper-81 F4: it said nothing).
            index_backfill._said_forced(MarkerIndex(ddb_client, table), store, True)
            assert capsys.readouterr().err == (
                f"--force: this backfill takes the record of table {table!r}'s index from the one "
                f"at work ({backfill_wait.began(theirs)}), which stops at its next write of it.\n"
            )
            assert refused.stderr.splitlines()[-1].startswith(
                f"Error: Another backfill of table {table!r} is at work "
                f"({backfill_wait.began(theirs)}; alive "
            ), refused.stderr
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 0, result.output
            assert table_reads(mine, table) == 0, mine.calls  # no second read of the table
            assert not any(c.operation in ("PutItem", "DeleteItem") for c in mine.calls)
        assert re.fullmatch(
            re.escape(
                f"another backfill of table {table!r} is at work ({backfill_wait.began(theirs)}): "
                "waiting for it to end (it was alive "
            )
            + r"\d+ s ago; if it was killed, \d+ s at most; --force runs this one all the same\)",
            result.stderr.splitlines()[0],
        ), result.stderr
        assert result.stdout == (
            f"another backfill ({backfill_wait.began(theirs)}) did the work: listings can "
            "prove the index from it\n"
        )
        assert follower.report.backfills == 1 and follower.report.backfill is not None
        assert follower.report.backfill.written == 12 and follower.report.backfill.counts
        assert table_reads(fault_proxy, table) >= 12  # the one read: the follower's
        listing = distinct_partition_keys(
            ddb_client, table, "index", state_table=store, replay_margin=MARGIN
        )
        assert sorted(listing) == non_empty(ddb_client, table) and listing.index_trusted
        saved = StateStore(ddb_client, store).load(table, INDEX)
        assert saved is not None and saved.backfill is not None
        assert (saved.backfill.started, saved.backfill.owner) == (theirs.started, theirs.owner)
        assert saved.backfill.handled == 12 and saved.backfill.finished is not None
    finally:
        stop.set()
        runner.join(timeout=30)


def backfill_to_kill(table: str, store: str, endpoint: str) -> subprocess.Popen[bytes]:
    """`index backfill` in a process of its own, its record refreshed every second (ALIVE,
    10 s, made short so that a test sees it refreshed)."""
    code = (
        "import sys; from ddbkeys.partition_keys._index import backfill_claim as c; c.ALIVE = 1.0; "
        "from ddbkeys._cli import main; sys.argv[0] = 'ddbkeys'; main()"
    )
    args = ["partition-keys", "index", "backfill", "-t", table, "--state-table", store]
    args += ["--replay-margin", "1", "--mode", "reconcile", "--endpoint-url", endpoint]
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def filled_and_followed(
    client: DynamoDBClient, table: str, store: str
) -> tuple[threading.Event, threading.Thread]:
    """40 collections of 2 items, and a follower in a thread (set the event to stop it)."""
    fill(client, table, range(40))
    follower = StreamFollower(MarkerIndex(client, table), state_table=store, poll=0.05)
    stop = threading.Event()
    runner = threading.Thread(target=follower.run, args=(stop,))
    runner.start()
    return stop, runner


def proven(client: DynamoDBClient, table: str, store: str) -> None:
    """A `--method index` listing answers the table's collections, proven."""
    listing = distinct_partition_keys(
        client, table, "index", state_table=store, replay_margin=MARGIN
    )
    assert sorted(listing) == non_empty(client, table) and listing.index_trusted


def ended(
    killed: subprocess.Popen[bytes] | None, stop: threading.Event, runner: threading.Thread
) -> None:
    """The backfill's process killed if it still runs, and the follower's thread stopped."""
    if killed is not None and killed.poll() is None:
        killed.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            killed.wait(timeout=10)
    stop.set()
    runner.join(timeout=30)


def test_a_backfill_killed_mid_way_stops_being_alive_and_the_next_one_runs(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    fault_proxy: FaultProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table, store = streamed_table, state_table
    stop, runner = filled_and_followed(ddb_client, table, store)
    killed: subprocess.Popen[bytes] | None = None
    try:
        wait_for_record(ddb_client, table, store)
        fault_proxy.set_faults(SLOW)  # 40 Queries at least: 10 s and more
        killed = backfill_to_kill(table, store, fault_proxy.endpoint_url)
        first = at_work(ddb_client, table, store)
        assert first.owner is not None and first.owner.endswith(f":{killed.pid}")
        deadline = time.monotonic() + PROGRESS_CEILING  # (a sign of progress, then the kill)
        while (at_work(ddb_client, table, store).handled or 0) < 4:
            assert time.monotonic() < deadline, "the backfill handled no 4 collections"
            time.sleep(0.1)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=10)
        last = at_work(ddb_client, table, store)
        assert last.alive is not None and last.alive > first.started  # it was refreshed
        assert 4 <= (last.handled or 0) < 40  # mid-way
        time.sleep(1.0)
        still = at_work(ddb_client, table, store)  # no sign of life since the kill
        assert (still.alive, still.handled) == (last.alive, last.handled)
        # The next backfill waits for it while it may be alive (ALIVE_FOR, 30 s, made 3 s
        # from now, however long the machine took since its last sign of life), then runs
        # itself: the killed one is in no one's way.
        silent = time.time() - still.alive  # type: ignore[operator]
        monkeypatch.setattr(backfill_wait, "ALIVE_FOR", silent + 3.0)
        told: list[Readiness] = []
        report = MarkerIndex(ddb_client, table).backfill(
            state_table=store, replay_margin=MARGIN, on_wait=told.append
        )
        assert any(t.state == OTHER_RUNNING and t.other == still for t in told), told
        assert report.joined is None and report.counts is True
        assert report.written + report.present == 40  # what the killed one wrote is there
        assert report.present >= (last.handled or 0)
        saved = StateStore(ddb_client, store).load(table, INDEX)
        assert saved is not None and saved.backfill is not None
        assert saved.backfill.finished is not None and saved.backfill.owner != still.owner
        assert running_backfill(saved, saved.backfill.stream, time.time()) is None
        proven(ddb_client, table, store)
    finally:
        ended(killed, stop, runner)


def test_a_backfill_run_again_and_killed_leaves_the_proof_standing(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    fault_proxy: FaultProxy,
) -> None:
    """A helper's runbook step: `index backfill` run again on a proven index, while the
    application writes, then killed -9. Every `--method index` listing declined while it ran
    ("a backfill is at work"), and after the kill until another backfill finished. Now the
    finished backfill it replaced is kept beside it, and listings prove from that one."""
    table, store = streamed_table, state_table
    stop, runner = filled_and_followed(ddb_client, table, store)
    killed: subprocess.Popen[bytes] | None = None

    def status() -> str:
        args = ["partition-keys", "index", "status", "-t", table, "--state-table", store]
        args += ["--replay-margin", "1", "--endpoint-url", ddb_endpoint_url]
        return CliRunner().invoke(cli, args).output

    try:
        wait_for_record(ddb_client, table, store)
        time.sleep(MARGIN + 0.5)
        first = MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        assert first.counts and not first.clashes
        proven(ddb_client, table, store)
        fault_proxy.set_faults(SLOW)  # 40 Queries at least: 10 s and more
        killed = backfill_to_kill(table, store, fault_proxy.endpoint_url)
        again = at_work(ddb_client, table, store)
        assert again.owner is not None and again.owner.endswith(f":{killed.pid}")
        fill(ddb_client, table, range(40, 44))  # the application, meanwhile
        ddb_client.delete_item(TableName=table, Key=item("k000", 0))
        ddb_client.delete_item(TableName=table, Key=item("k000", 1))
        proven(ddb_client, table, store)  # while it is at work
        said = status()
        assert "Provable: yes" in said and "at work by" in said, said
        assert "until it finishes, listings prove the index from the backfill it replaced" in said
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=10)
        fill(ddb_client, table, range(44, 46))
        time.sleep(MARGIN + 0.5)
        proven(ddb_client, table, store)  # and after the kill, with no other backfill
        said = status()  # (it reads "at work" until ALIVE_FOR passes: a kill says nothing)
        assert "Provable: yes" in said and "listings prove the index from the backfill it" in said
        saved = StateStore(ddb_client, store).load(table, INDEX)
        assert saved is not None and saved.backfill is not None and saved.kept is not None
        assert saved.backfill.finished is None and saved.kept.finished is not None
    finally:
        ended(killed, stop, runner)


def test_two_followers_with_backfill_backfill_once(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str, fault_proxy: FaultProxy
) -> None:
    """Two `index follow --backfill` started together: their margins end together, one takes
    the record, and the other waits for it ("another running") and backfills nothing."""
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(10))
    fault_proxy.set_faults(SLOW)
    told: tuple[list[str], list[str]] = ([], [])
    followers = [
        StreamFollower(
            MarkerIndex(make_client(fault_proxy.endpoint_url), table),
            state_table=store,
            poll=0.05,
            backfill=True,
            replay_margin=MARGIN,
            on_backfill=said.append,
        )
        for said in told
    ]
    stop = threading.Event()
    runners = [threading.Thread(target=f.run, args=(stop,)) for f in followers]
    for runner in runners:
        runner.start()
    try:
        deadline = time.monotonic() + 30
        while not all(f.report.backfill_state == "done" for f in followers):
            assert time.monotonic() < deadline, told
            assert all(f.report.backfill_state != "failed" for f in followers), told
            time.sleep(0.05)
        assert sorted(f.report.backfills for f in followers) == [0, 1], told
        waited = told[[f.report.backfills for f in followers].index(0)]
        assert any(line.startswith("another backfill is at work (begun ") for line in waited)
        listing = distinct_partition_keys(
            ddb_client, table, "index", state_table=store, replay_margin=MARGIN
        )
        assert sorted(listing) == non_empty(ddb_client, table) and listing.index_trusted
    finally:
        stop.set()
        for runner in runners:
            runner.join(timeout=30)


def test_the_asyncio_backfill_waits_for_one_at_work_the_same_way(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    fault_proxy: FaultProxy,
) -> None:
    pytest.importorskip("aiobotocore")
    from ddbkeys import aio  # noqa: PLC0415
    from ddbkeys.aio._index import MarkerIndex as AsyncIndex  # noqa: PLC0415

    table, store = streamed_table, state_table
    fill(ddb_client, table, range(10))
    follower = StreamFollower(MarkerIndex(ddb_client, table), state_table=store, poll=0.05)
    stop = threading.Event()
    runner = threading.Thread(target=follower.run, args=(stop,))
    runner.start()
    try:
        wait_for_record(ddb_client, table, store)
        fault_proxy.set_faults(SLOW)
        sync_index = MarkerIndex(make_client(fault_proxy.endpoint_url), table)
        first: list[Any] = []
        worker = threading.Thread(
            target=lambda: first.append(
                sync_index.backfill(state_table=store, replay_margin=MARGIN, mode="reconcile")
            )
        )
        worker.start()
        theirs = at_work(ddb_client, table, store)
        told: list[Readiness] = []

        async def body() -> Any:
            async with aio.make_client(ddb_endpoint_url) as client:
                index = AsyncIndex(client, table)
                report = await index.backfill(
                    state_table=store, replay_margin=MARGIN, on_wait=told.append
                )
                return report, index.usage.snapshot()

        report, usage = asyncio.run(body())
        worker.join(timeout=30)
        assert report.joined is not None and report.joined.started == theirs.started
        assert report.counts is True and report.written == 0
        assert (usage["requests"], usage["read_units"]) == (0, 0), usage  # it read nothing
        assert any(t.state == OTHER_RUNNING for t in told)
        assert first and first[0].written == 10 and first[0].counts
    finally:
        stop.set()
        runner.join(timeout=30)
