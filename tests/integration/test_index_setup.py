"""The marker index from nothing to proven, the way users set it up (issue 33, point 1): in the
natural order of commands (create the index, start `index follow` in the background, run
`index backfill` at once), with the default replay margin, a listing proves the index without
a second backfill; `index follow --backfill` does it all in one command; the Lambda path waits
for the handler's first position. The first test waits the real 60 s margin twice (marked
slow; `.ci/run` runs it); the others use a margin of 1 s."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys.partition_keys import MarkerIndex, StreamFollower, distinct_partition_keys
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._index.stream_setup import enable_stream
from ddbkeys.testing import Fault, FaultProxy, Faults
from tests.conftest import proxied_client
from tests.integration.test_marker_follow_faults import wait_for_record
from tests.integration.test_marker_lambda import Stream
from tests.integration.test_marker_lifecycle import item, non_empty
from tests.support.stream_events import InvokedHandler

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

MARGIN = 1.0
INDEX = "ddbkeys-partition-keys"


def ddbkeys(endpoint: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "ddbkeys", *args, "--endpoint-url", endpoint]


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        command, check=False, capture_output=True, text=True, env=env, timeout=600
    )


def fill(client: DynamoDBClient, table: str, keys: range, items: int = 2) -> None:
    for n in keys:
        for sk in range(items):
            client.put_item(TableName=table, Item=item(f"k{n:03}", sk))


@pytest.mark.slow
def test_the_natural_order_with_the_default_margin_ends_with_a_proven_index(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    own_state_table: str,
) -> None:
    table, store = ddb_table_factory(("pk", "S"), ("sk", "N")), own_state_table
    fill(ddb_client, table, range(30))
    for args in (("index", "create"), ("index", "stream")):
        done = run(ddbkeys(ddb_endpoint_url, "partition-keys", *args, "-t", table))
        assert done.returncode == 0, done.stderr
    err = (tmp_path / "follow.err").open("wb")
    follower = subprocess.Popen(
        ddbkeys(ddb_endpoint_url, "partition-keys", "index", "follow", "-t", table),
        stdout=subprocess.DEVNULL,
        stderr=err,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    status = ddbkeys(ddb_endpoint_url, "partition-keys", "index", "status", "-t", table)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    began = time.monotonic()
    command = ddbkeys(ddb_endpoint_url, "partition-keys", "index", "backfill", "-t", table)
    backfill = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        # While the backfill waits: `index status` says the index cannot be proven, and why.
        wait_for_record(ddb_client, table, store)
        before = run([*status, "--output", "json"])
        assert before.returncode == 1, before.stdout + before.stderr
        told = json.loads(before.stdout)
        assert told["provable"] is False and "no record of a backfill" in told["reason"]
        assert told["fix"].startswith(f"ddbkeys partition-keys index backfill -t {table}")
        out, err_text = backfill.communicate(timeout=300)
        waited = time.monotonic() - began
        assert backfill.returncode == 0, err_text
        assert (
            out == "30 marker(s) written, 0 already there; listings can prove the index from it\n"
        )
        assert "waiting" in err_text and "replay margin (60 s" in err_text
        assert waited >= 55, (waited, err_text)
        saved = StateStore(ddb_client, store).load(table, INDEX)
        assert saved is not None and saved.backfill is not None
        assert saved.backfill.margin == 60.0 and saved.backfill.maintained_since is not None
        assert saved.backfill.started - saved.backfill.maintained_since >= 60.0
        # The application writes; a margin later the default listing proves the index.
        fill(ddb_client, table, range(30, 40), items=1)
        for sk in range(2):
            ddb_client.delete_item(TableName=table, Key=item("k000", sk))
        time.sleep(62)
        listed = run(ddbkeys(ddb_endpoint_url, "partition-keys", "-t", table, "--output", "json"))
        assert listed.returncode == 0, listed.stderr
        answer = json.loads(listed.stdout)
        keys = answer["keys"]
        assert "Note" not in listed.stderr, listed.stderr
        assert answer["method"] == "index", (answer["method_reason"], listed.stderr)
        assert sorted(keys) == non_empty(ddb_client, table)
        assert len(keys) == 39
        after = run([*status, "--output", "json"])
        assert after.returncode == 0, after.stdout
        assert json.loads(after.stdout)["provable"] is True
    finally:
        for process in (follower, backfill):
            if process.poll() is None:
                process.terminate()
            process.wait(timeout=30)
        err.close()


def test_follow_with_backfill_takes_an_empty_index_to_a_proven_one_once(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(12))
    told: list[str] = []
    follower = StreamFollower(
        MarkerIndex(ddb_client, table),
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
        deadline = time.monotonic() + 60
        while follower.report.backfills < 1:
            assert time.monotonic() < deadline and runner.is_alive(), told
            time.sleep(0.05)
        report = follower.report.backfill
        assert report is not None and report.counts is True
        assert (report.written, report.clashes) == (12, [])
        # (Said "backfill in N s" first unless the margin, 1 s, passed while it looked.)
        assert told[0].startswith("backfill in ") or told[0] == "backfill begins", told
        assert told[-1].endswith("listings can prove the index from now on"), told
        fill(ddb_client, table, range(12, 15), items=1)
        listing = distinct_partition_keys(
            ddb_client, table, "index", state_table=store, replay_margin=MARGIN
        )
        assert sorted(listing) == non_empty(ddb_client, table)
        assert listing.index_trusted is True
    finally:
        stop.set()
        runner.join(timeout=30)
    assert not runner.is_alive()
    # Restarted: a counting backfill exists under this stream, so it does not backfill again.
    again: list[str] = []
    restarted = StreamFollower(
        MarkerIndex(ddb_client, table),
        state_table=store,
        poll=0.05,
        backfill=True,
        replay_margin=MARGIN,
        on_backfill=again.append,
    )
    restarted.run(until_caught_up=True)
    assert restarted.report.backfills == 0
    assert again == ["a backfill under this stream already lets listings prove the index"]


class Writer:
    """The application writing a new key to ``table`` every ``every`` seconds from a thread of
    its own, until stopped; ``written`` counts its puts, ``done_at`` how many it had made when
    a follower said its backfill was done (``told``: the follower's ``on_backfill``)."""

    def __init__(self, client: DynamoDBClient, table: str, every: float = 0.25) -> None:
        self.client, self.table, self.every = client, table, every
        self.written = 0
        self.done_at: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._write)

    def _write(self) -> None:
        while not self.stop.is_set():
            self.client.put_item(TableName=self.table, Item=item(f"w{self.written:04}", 0))
            self.written += 1
            self.stop.wait(self.every)

    def told(self, line: str) -> None:
        if line.startswith("backfill done"):
            self.done_at.append(self.written)

    def __enter__(self) -> Writer:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()


def test_follow_until_caught_up_with_backfill_applies_what_was_written_meanwhile(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """The application writes all along (a helper's `index follow --backfill
    --until-caught-up` said "0 record(s) handled; caught up" with 3,579 records waiting: it
    had caught up at its start, then only waited for the backfill). It goes on following
    while the backfill runs, and reads the stream to its end once more after it: every
    record written before the backfill was done is applied."""
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(6))
    with Writer(ddb_client, table) as writer:
        follower = StreamFollower(
            MarkerIndex(ddb_client, table),
            state_table=store,
            poll=0.05,
            backfill=True,
            replay_margin=MARGIN,
            on_backfill=writer.told,
        )
        report = follower.run(until_caught_up=True)
    done_at = writer.done_at
    assert report.backfills == 1 and done_at, report
    # (a record a put, and one for each marker the follower wrote: at least one a put)
    assert report.records >= done_at[0] > 0, (report.records, done_at)
    listing = distinct_partition_keys(
        ddb_client, table, "index", state_table=store, replay_margin=MARGIN
    )
    assert sorted(listing) == non_empty(ddb_client, table)
    assert listing.index_trusted is True, listing.method_reason
    # (what the maintainer had not applied: only what was written after the follower returned)
    assert listing.replay.unapplied <= 2, listing.replay
    # One more write, the maintainer stopped: on this small table a re-check costs more than a
    # scan, and auto says so as what it is (a cost), and what to look at, not "cannot be proven".
    ddb_client.put_item(TableName=table, Item=item("late", 0))
    auto = distinct_partition_keys(ddb_client, table, state_table=store, replay_margin=MARGIN)
    assert sorted(auto) == non_empty(ddb_client, table)
    assert auto.method_reason.startswith(
        "not using the marker index 'ddbkeys-partition-keys': proving it complete now costs "
        "more than listing another way: "
    ), auto.method_reason
    # (the record is younger than the margin: every listing reads it again, whether a
    # maintainer runs or not; `index status` says which)
    assert auto.method_reason.endswith(
        f"(they changed within the replay margin, {MARGIN:g} s, which every listing reads "
        f"again; `ddbkeys partition-keys index status -t {table}` says whether its maintainer "
        "keeps up)"
    ), auto.method_reason
    # (once it is older than the margin, by more than a record's time may be rounded down, the
    # maintainer is behind and is asked after: tests/unit/test_proof_status.py)


def test_the_asyncio_follower_until_caught_up_applies_what_was_written_meanwhile(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    pytest.importorskip("aiobotocore")
    from ddbkeys import aio  # noqa: PLC0415
    from ddbkeys.aio._index import MarkerIndex as AsyncIndex  # noqa: PLC0415
    from ddbkeys.aio._index import StreamFollower as AsyncFollower  # noqa: PLC0415

    table, store = streamed_table, state_table
    fill(ddb_client, table, range(3))
    with Writer(ddb_client, table) as writer:

        async def body() -> Any:
            async with aio.make_client(ddb_endpoint_url) as client:
                follower = AsyncFollower(
                    AsyncIndex(client, table),
                    state_table=store,
                    poll=0.05,
                    backfill=True,
                    replay_margin=MARGIN,
                    on_backfill=writer.told,
                )
                return await follower.run(until_caught_up=True)

        report = asyncio.run(body())
    done_at = writer.done_at
    assert report.backfills == 1 and report.records >= done_at[0] > 0, (report, done_at)


def test_the_asyncio_follower_backfills_the_same_way(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    pytest.importorskip("aiobotocore")
    from ddbkeys import aio  # noqa: PLC0415
    from ddbkeys.aio._index import MarkerIndex as AsyncIndex  # noqa: PLC0415
    from ddbkeys.aio._index import StreamFollower as AsyncFollower  # noqa: PLC0415

    table, store = streamed_table, state_table
    fill(ddb_client, table, range(5))

    async def body() -> Any:
        async with aio.make_client(ddb_endpoint_url) as client:
            follower = AsyncFollower(
                AsyncIndex(client, table),
                state_table=store,
                poll=0.05,
                backfill=True,
                replay_margin=MARGIN,
            )
            # Caught up: its one backfill (after the margin) is waited for before it returns.
            return await follower.run(until_caught_up=True)

    report = asyncio.run(body())
    assert report.backfills == 1 and report.backfill is not None and report.backfill.counts
    assert report.backfill.written == 5
    listing = distinct_partition_keys(
        ddb_client, table, "index", state_table=store, replay_margin=MARGIN
    )
    assert sorted(listing) == non_empty(ddb_client, table)


def caught_up(table: str, store: str, endpoint_url: str) -> list[str]:
    """`index follow --backfill` (margin 1 s) until caught up, as arguments of the CLI."""
    args = ["partition-keys", "index", "follow", "-t", table, "--state-table", store]
    args += ["--backfill", "--replay-margin", "1", "--until-caught-up", "--poll", "0.05"]
    return [*args, "--endpoint-url", endpoint_url]


def test_the_cli_follow_with_backfill_says_what_its_backfill_does(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(4))
    result = CliRunner().invoke(cli, caught_up(table, store, ddb_endpoint_url))
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == "backfill begins" or (
        lines[0].startswith("backfill in ") and "(the replay margin, 1 s" in lines[0]
    ), lines
    assert lines[-1] == (
        "backfill done: 4 marker(s) written, 0 already there, 0 removed; listings can prove "
        "the index from now on"
    )
    assert result.stdout.endswith("caught up\n")


def test_the_follower_s_backfill_says_how_far_it_has_come(
    ddb_endpoint_url: str,
    ddb_client: DynamoDBClient,
    streamed_table: str,
    state_table: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every ``PROGRESS`` seconds (30) a line, here every marker written (0 s): a helper's
    follower, its backfill slowed by DynamoDB Local (a table written to during a SIGSTOP of
    its java answered every request in 20-30 ms), said nothing between "backfill begins" and
    the done line for minutes, and looked stuck."""
    from ddbkeys.partition_keys._streams import follow_backfill  # noqa: PLC0415

    monkeypatch.setattr(follow_backfill, "PROGRESS", 0.0)
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(3))
    result = CliRunner().invoke(cli, caught_up(table, store, ddb_endpoint_url))
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    begins = lines.index("backfill begins")
    assert lines[begins + 1 : begins + 4] == [
        f"backfill: {n} collection(s) handled so far ({n} marker(s) written, 0 already there)"
        for n in (1, 2, 3)
    ], lines
    assert lines[-1].startswith("backfill done: 3 marker(s) written"), lines


def test_verify_after_the_follower_stopped_says_to_start_it_before_repair(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """A helper's follower ran `--until-caught-up` and stopped; one collection was added and
    one emptied after it. verify said "run `index repair`", though the cause was stream
    records no maintainer had applied: it now says how many (past its positions, not from a
    replay margin before them: a helper's 5 were said as 1,288), and to start the follower
    (which, run, makes verify OK with no repair); --output json says it too."""
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(4))
    follow = caught_up(table, store, ddb_endpoint_url)
    followed = CliRunner().invoke(cli, follow)
    assert followed.exit_code == 0, followed.output
    fill(ddb_client, table, range(10, 11), items=1)  # added
    for sk in range(2):  # emptied
        ddb_client.delete_item(TableName=table, Key=item("k000", sk))
    verify = ["partition-keys", "index", "verify", "-t", table, "--state-table", store]
    verify += ["--endpoint-url", ddb_endpoint_url]  # (the default margin, 60 s)
    said = CliRunner().invoke(cli, verify)
    assert said.exit_code == 1, said.output
    last = said.stdout.splitlines()[-1]
    assert re.fullmatch(
        r"NOT HEALTHY: 3 stream record\(s\) not applied by the maintainer yet \(it saved its "
        r"position \d+ s ago\): if it has stopped, start it \(`ddbkeys partition-keys index "
        f"follow -t {re.escape(table)}`\\); if it runs, run `index verify` again once it has "
        r"caught up; `index repair` fixes the markers now",
        last,
    ), said.stdout
    document = json.loads(CliRunner().invoke(cli, [*verify, "--output", "json"]).stdout)
    upkeep = document["upkeep"]
    assert (upkeep["stream"], upkeep["maintainer"], upkeep["unapplied_records"]) == (
        True,
        "follow",
        3,
    )
    again = CliRunner().invoke(cli, follow)
    assert again.exit_code == 0, again.output
    healthy = CliRunner().invoke(cli, verify)
    assert healthy.exit_code == 0 and healthy.stdout.splitlines()[-1] == "OK", healthy.output


def test_verify_with_the_stream_on_and_no_maintainer_says_to_start_one(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """The stream on, markers put by hand, no maintainer ever started (no state table): a
    new collection is missing, and verify says to start a maintainer (as `index status`'s
    fix does), not repair alone (the markers would drift again)."""
    table = streamed_table
    fill(ddb_client, table, range(2))
    MarkerIndex(ddb_client, table).mark_many(["k000", "k001"])
    fill(ddb_client, table, range(5, 6))
    verify = ["partition-keys", "index", "verify", "-t", table, "--state-table", state_table]
    said = CliRunner().invoke(cli, [*verify, "--endpoint-url", ddb_endpoint_url])
    assert said.exit_code == 1, said.output
    assert said.stdout.splitlines()[-1] == (
        "NOT HEALTHY: the table's stream is on, but no maintainer follows it: start one "
        f"(`ddbkeys partition-keys index follow -t {table} --backfill`), which marks what is "
        "missing and keeps the markers right; `index repair` fixes them once"
    ), said.stdout


def test_a_backfill_waits_for_the_lambda_handlers_first_position(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    MarkerIndex(ddb_client, table).create()
    fill(ddb_client, table, range(6))  # before the stream: the backfill's to mark
    stream = Stream(ddb_client, table)
    store = f"ddbkeys-state-{table[-12:]}"
    fill(ddb_client, table, range(100, 101))  # the trigger's first record: the handler's
    # (as Lambda invokes it: with a context, so that it reads its trigger and vouches for the
    # order of the batches it applies after the backfill's window; a bare handler cannot, and
    # a listing declines then, unless all its positions lie before that window)
    handler = InvokedHandler(ddb_client, stream.arn, state_table=store)

    def first_batch() -> None:  # the trigger's first batch, a few seconds after the backfill
        time.sleep(3)
        for event in stream.windowed():
            handler.handle(event)

    lambda_thread = threading.Thread(target=first_batch)
    lambda_thread.start()
    args = ["partition-keys", "index", "backfill", "-t", table, "--state-table", store]
    args += ["--wait-for-maintainer", "60", "--replay-margin", "1"]
    result = CliRunner().invoke(cli, [*args, "--endpoint-url", ddb_endpoint_url])
    lambda_thread.join()
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("waiting for a maintainer (`index follow` or the Lambda")
    assert (
        result.stdout
        == "6 marker(s) written, 1 already there; listings can prove the index from it\n"
    )
    listing = distinct_partition_keys(
        ddb_client, table, "index", state_table=store, replay_margin=MARGIN
    )
    assert sorted(listing) == non_empty(ddb_client, table)


def test_waiting_for_a_maintainer_that_never_comes_ends_and_writes_nothing(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(3))
    args = ["partition-keys", "index", "backfill", "-t", table, "--state-table", store]
    result = CliRunner().invoke(
        cli, [*args, "--wait-for-maintainer", "2", "--endpoint-url", ddb_endpoint_url]
    )
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        f"Error: No maintainer recorded a position in the stream of table {table!r} within 2 s: "
        f"start `ddbkeys partition-keys index follow -t {table}` or the Lambda handler (nothing "
        "was written)."
    )
    items = ddb_client.scan(TableName=table, ConsistentRead=True)["Items"]
    assert not any("ddbkeys_pk" in i for i in items)
    saved = StateStore(ddb_client, store).load(table, INDEX)
    assert saved is None or saved.backfill is None


def test_a_backfill_with_no_maintainer_says_so_and_writes_the_markers(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(3))
    args = ["partition-keys", "index", "backfill", "-t", table, "--state-table", store]
    began = time.monotonic()
    result = CliRunner().invoke(cli, [*args, "--endpoint-url", ddb_endpoint_url])
    assert time.monotonic() - began >= 9  # (it gave a maintainer started just before 10 s)
    assert result.exit_code == 0, result.output
    assert result.stdout == "3 marker(s) written, 0 already there\n"
    assert result.stderr == (
        f"Note: no maintainer has recorded a position (in state table {store!r}) in the stream "
        f"of table {table!r}: no "
        f"listing can prove the index until `ddbkeys partition-keys index follow -t {table}` "
        "(or the Lambda handler) runs and a backfill begins 60 s after its first position "
        f"(`ddbkeys partition-keys index backfill -t {table} --wait-for-maintainer` waits for "
        "it; `index follow --backfill` does both).\n"
    )


def test_a_follower_started_after_the_backfill_says_what_to_run(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """The other natural order: backfill first (nothing maintains the index yet), then follow.
    The follower says in one line that a backfill must run again, until one counts."""
    table, store = streamed_table, state_table
    fill(ddb_client, table, range(3))
    common = ["-t", table, "--state-table", store, "--endpoint-url", ddb_endpoint_url]
    backfill = CliRunner().invoke(
        cli, ["partition-keys", "index", "backfill", *common, "--no-wait"]
    )
    assert backfill.exit_code == 0, backfill.output
    follow = ["partition-keys", "index", "follow", *common, "--until-caught-up", "--poll", "0.05"]
    first = CliRunner().invoke(cli, follow)
    assert first.exit_code == 0, first.output
    assert first.stderr.splitlines()[0] == (
        "Note: no backfill under this stream lets a listing prove the index yet: run "
        f"`ddbkeys partition-keys index backfill -t {table} --state-table {store}` while this "
        "follower runs (it waits for the replay margin after the follower's first position), or "
        "follow with --backfill."
    )  # (the follower's own state table and margin: helper-76 F1; the default margin here)
    fixed = CliRunner().invoke(cli, [*follow, "--backfill", "--replay-margin", "1"])
    assert fixed.exit_code == 0, fixed.output
    again = CliRunner().invoke(cli, [*follow, "--replay-margin", "1"])
    assert again.exit_code == 0 and "Note" not in again.stderr, again.stderr


def test_follow_with_backfill_on_a_table_without_a_stream_says_only_that(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    MarkerIndex(ddb_client, table).create()
    store = f"ddbkeys-state-{table[-12:]}"
    args = ["partition-keys", "index", "follow", "-t", table, "--state-table", store]
    result = CliRunner().invoke(
        cli, [*args, "--backfill", "--until-caught-up", "--endpoint-url", ddb_endpoint_url]
    )
    assert result.exit_code == 1
    assert "already" not in result.stderr and "backfill" not in result.stderr, result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"Error: Table {table!r} has no stream")


def test_index_stream_names_the_new_stream_of_a_table_whose_stream_was_on_before(
    ddb_client: DynamoDBClient, streamed_table: str, ddb_endpoint_url: str
) -> None:
    """A table that had a stream (turned off, or the table made again under its name) still
    names that stream in DescribeTable: `index stream` printed it, exit 0, not the one it had
    just turned on (a new user's find: a Lambda trigger given that ARN reads a stream that is
    off)."""
    table = streamed_table
    first = ddb_client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    time.sleep(0.01)  # (the label is the time, to the millisecond)
    ddb_client.update_table(TableName=table, StreamSpecification={"StreamEnabled": False})
    said = json.loads(
        CliRunner()
        .invoke(
            cli,
            [
                "partition-keys",
                "index",
                "stream",
                "-t",
                table,
                "--endpoint-url",
                ddb_endpoint_url,
                "--output",
                "json",
            ],
            catch_exceptions=False,
        )
        .output
    )
    now = ddb_client.describe_table(TableName=table)["Table"]
    assert now["StreamSpecification"]["StreamEnabled"] and now["TableStatus"] == "ACTIVE"
    assert said["changed"] is True
    assert said["stream"] == now["LatestStreamArn"] != first


def test_index_create_and_stream_whose_answer_was_lost_succeed(
    fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """The answer to `index create`'s or `index stream`'s UpdateTable lost: the try again
    meets the command's own change ("Index is being created", "Table already has an enabled
    stream") and exited 1, though the change was made (a helper found it). Now the table is
    described again, and the change found is the command's."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fault_proxy.set_faults(
        Faults(script=[Fault.LOSE_RESPONSE], operations=frozenset({"UpdateTable"}))
    )
    client = proxied_client(fault_proxy)
    assert MarkerIndex(client, table).create() is True  # (the lost answer's: this call's)
    assert fault_proxy.counts_by_operation[("UpdateTable", "lose_response")] == 1
    indexes = ddb_client.describe_table(TableName=table)["Table"]["GlobalSecondaryIndexes"]
    assert [i["IndexName"] for i in indexes] == ["ddbkeys-partition-keys"]
    fault_proxy.set_faults(
        Faults(script=[Fault.LOSE_RESPONSE], operations=frozenset({"UpdateTable"}))
    )
    arn, changed = enable_stream(client, table)
    assert fault_proxy.counts_by_operation[("UpdateTable", "lose_response")] == 2
    assert changed and arn == ddb_client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    # The command says it created the index ("there already: nothing created", said so, was
    # the retry's view).
    other = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fault_proxy.set_faults(
        Faults(script=[Fault.LOSE_RESPONSE], operations=frozenset({"UpdateTable"}))
    )
    args = ["partition-keys", "index", "create", "-t", other]
    said = CliRunner().invoke(cli, [*args, "--endpoint-url", fault_proxy.endpoint_url])
    assert said.exit_code == 0, said.output
    assert fault_proxy.counts_by_operation[("UpdateTable", "lose_response")] == 3
    assert f"Index ddbkeys-partition-keys of table {other}: ACTIVE" in said.stdout
    assert "there already" not in said.output


def test_mark_and_unmark_whose_answer_was_lost_say_what_they_did(
    fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """`index mark` whose PutItem answer was lost said "0 marker(s) written, 1 already there"
    on its own marker, and `unmark` "0 removed, 1 not there" (a helper found both): the marker
    found holds this write's version, and a marker gone after an unanswered removal was
    removed by it."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"N": "1"}})
    MarkerIndex(ddb_client, table).create()
    lost = 0
    # The CLI's client (ddbkeys retries) and a client that retries on its own.
    for client in (proxied_client(fault_proxy, 1), proxied_client(fault_proxy, 5)):
        for operation in ("PutItem", "DeleteItem"):
            fault_proxy.set_faults(
                Faults(script=[Fault.LOSE_RESPONSE], operations=frozenset({operation}))
            )
            index = MarkerIndex(client, table)
            assert (index.mark("a") if operation == "PutItem" else index.unmark("a")) is True
            lost += 1
            assert (
                sum(
                    n
                    for (_, f), n in fault_proxy.counts_by_operation.items()
                    if f == "lose_response"
                )
                == lost
            )
    # Someone else's marker, or none, is still told as it is.
    fault_proxy.set_faults(Faults())
    assert MarkerIndex(client, table).unmark("a") is False
    assert MarkerIndex(client, table).mark("a") is True
    assert MarkerIndex(client, table).mark("a") is False


def test_a_create_says_whether_it_created_the_index(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    # (helper-67: four `index create` run at once all said they had created it)
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, range(3))
    created: list[bool] = []
    start = threading.Barrier(4)

    def create() -> None:
        index = MarkerIndex(ddb_client, table)  # an object of its own, as a process has
        start.wait()
        created.append(index.create())

    workers = [threading.Thread(target=create) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    # DynamoDB Local takes every one of simultaneous UpdateTables adding the same index (the
    # service refuses all but the first while the table updates: tests/unit/test_index_core.py)
    assert True in created
    assert MarkerIndex(ddb_client, table).create() is False  # there already
