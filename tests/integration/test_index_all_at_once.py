"""The marker index set up as users do it with `index follow --backfill`, against DynamoDB
Local: everything started at once (helper-70 F5: a follower started before `index create` has
made the index waits for it, saying so in one line, then backfills; it had ended 1 within a
second, "tried again in 10 s", never tried); a follower stopped in the middle of its backfill,
whose fix names that follower again (helper-70 F2, F6); and a direct backfill that no
maintainer followed, which says so."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys.partition_keys import IndexReplayWarning, distinct_partition_keys
from ddbkeys.partition_keys._index import backfill_wait
from tests.integration.test_index_setup import MARGIN, ddbkeys, fill, run
from tests.integration.test_marker_lifecycle import non_empty

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


def watching(follower: subprocess.Popen[bytes], log: Path) -> Callable[..., str]:
    """A wait for ``words`` in ``follower``'s standard error (``log``): all it said then."""

    def said(words: str, within: float = 60.0) -> str:
        ends = time.monotonic() + within
        while words not in (text := log.read_text(encoding="utf-8")):
            assert follower.poll() is None, text  # (it had ended 1 here)
            assert time.monotonic() < ends, text
            time.sleep(0.2)
        return text

    return said


def start_follower(endpoint: str, table: str, margin: float, log: Path) -> subprocess.Popen[bytes]:
    command = ["index", "follow", "-t", table, "--backfill", "--replay-margin", f"{margin:g}"]
    with log.open("wb") as err:
        return subprocess.Popen(
            ddbkeys(endpoint, "partition-keys", *command),
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def test_a_follower_stopped_mid_backfill_is_the_fix_and_its_wait_needs_nothing(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    own_state_table: str,
) -> None:
    """helper-70 F6: while `follow --backfill` waits out its margin, a listing's note said to
    run `index backfill`. F2: after that follower stopped in the middle of its backfill, the
    status and the listing said to run `index backfill`, which left no maintainer (every
    listing then replayed all since the stopped follower's position). Both name the follower
    now, and doing what the `Fix:` line says ends with a proven index."""
    table, margin = ddb_table_factory(("pk", "S"), ("sk", "N")), 8.0
    fill(ddb_client, table, range(500))  # (1,000 items: the read mode, which waits at the tip)
    for step in ("stream", "create"):
        done = run(ddbkeys(ddb_endpoint_url, "partition-keys", "index", step, "-t", table))
        assert done.returncode == 0, done.stderr
    listing = ["partition-keys", "-t", table, "--replay-margin", f"{margin:g}"]
    follower = start_follower(ddb_endpoint_url, table, margin, tmp_path / "follow.err")
    try:
        said = watching(follower, tmp_path / "follow.err")
        said("backfill in")
        waiting = run(ddbkeys(ddb_endpoint_url, *listing))
        assert waiting.returncode == 0, waiting.stderr
        assert "or nothing, if `index follow --backfill` is what runs" in waiting.stderr
        # Stopped while its backfill waits to read the stream's tip (its markers written).
        said("the markers are written")
    finally:
        follower.send_signal(signal.SIGTERM)
        follower.wait(timeout=60)
    status = run(
        ddbkeys(
            ddb_endpoint_url,
            "partition-keys",
            "index",
            "status",
            "-t",
            table,
            "--replay-margin",
            f"{margin:g}",
        )
    )
    assert "begun by `index follow --backfill`" in status.stdout, status.stdout
    (fix,) = [line for line in status.stdout.splitlines() if line.startswith("Fix: ")]
    assert fix.startswith(f"Fix: ddbkeys partition-keys index follow -t {table} --backfill"), fix
    stopped = run(ddbkeys(ddb_endpoint_url, *listing))
    assert "run `index follow --backfill` again" in stopped.stderr, stopped.stderr
    # Doing what it says: the follower again, which backfills once more.
    again = start_follower(ddb_endpoint_url, table, margin, tmp_path / "again.err")
    try:
        watching(again, tmp_path / "again.err")("backfill done", within=120.0)
        found = distinct_partition_keys(
            ddb_client, table, "index", state_table=own_state_table, replay_margin=margin
        )
        assert sorted(found) == non_empty(ddb_client, table)
    finally:
        again.terminate()
        again.wait(timeout=60)


def test_a_follower_started_before_the_index_waits_for_it_then_backfills(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    own_state_table: str,
) -> None:
    table, store = ddb_table_factory(("pk", "S"), ("sk", "N")), own_state_table
    fill(ddb_client, table, range(12))
    streamed = run(ddbkeys(ddb_endpoint_url, "partition-keys", "index", "stream", "-t", table))
    assert streamed.returncode == 0, streamed.stderr
    log = tmp_path / "follow.err"
    follower = start_follower(ddb_endpoint_url, table, MARGIN, log)
    try:
        said = watching(follower, log)
        waiting = said("Waiting for index")
        assert waiting.splitlines()[0] == (
            f"Waiting for index 'ddbkeys-partition-keys' of table {table!r} (not there yet): "
            f"`ddbkeys partition-keys index create -t {table}` makes it; following begins once "
            "it is ACTIVE (Ctrl-C stops)."
        )
        created = run(ddbkeys(ddb_endpoint_url, "partition-keys", "index", "create", "-t", table))
        assert created.returncode == 0, created.stderr
        assert "12 marker(s) written" in said("backfill done")
        listing = distinct_partition_keys(
            ddb_client, table, "index", state_table=store, replay_margin=MARGIN
        )
        assert sorted(listing) == non_empty(ddb_client, table)
    finally:
        follower.terminate()
        follower.wait(timeout=60)


def test_a_follower_stopped_while_it_waits_for_the_index_says_so_and_ends_0(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    own_state_table: str,
) -> None:
    """helper-87 F5: Ctrl-C while `index follow` waited for the index ended with "Error: ...
    has no index", as if it had refused (its help said it refuses; it waits). It says it
    stopped, and with --backfill exits 1: the backfill was not done, as its help says."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    log = tmp_path / "follow.err"
    follower = start_follower(ddb_endpoint_url, table, MARGIN, log)
    try:
        watching(follower, log)("Waiting for index")
        follower.send_signal(signal.SIGINT)
        code = follower.wait(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
    text = log.read_text()
    assert code == 1, text
    assert "Stopped by SIGINT while it waited for the index: nothing was followed." in text
    assert "The backfill may not be done: run the same command again" in text
    assert "Error" not in text, text


def test_a_direct_backfill_no_maintainer_followed_says_so(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    own_state_table: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-70 F2: the follower gone, `index backfill` ended 0 saying listings could prove the
    index, and every listing then replayed all since the follower's last position (4,498 RCU
    against a scan's 64). It says no maintainer applied its writes (here after any time: the
    helper's ran 10 minutes; the rule's 30 s is a unit test's)."""
    monkeypatch.setattr(backfill_wait, "SILENT_AFTER", 0.0)
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table, range(12))
    for step in (["stream"], ["create"], ["follow", "--until-caught-up"]):
        done = run(
            ddbkeys(ddb_endpoint_url, "partition-keys", "index", step[0], "-t", table, *step[1:])
        )
        assert done.returncode == 0, done.stderr
    time.sleep(1.5)  # the margin below, after the follower's first position
    command = ["partition-keys", "index", "backfill", "-t", table, "--replay-margin", "1"]
    result = CliRunner().invoke(cli, [*command, "--endpoint-url", ddb_endpoint_url])
    assert result.exit_code == 0, result.output
    assert "12 marker(s) written, 0 already there; listings can prove the index" in result.stdout
    assert "Note: no maintainer has recorded a position in the stream for " in result.stderr
    assert f"is `ddbkeys partition-keys index follow -t {table}`" in result.stderr


@pytest.mark.slow
def test_a_direct_backfill_then_a_follower_stops_re_checking_its_writes_once_quiet(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    tmp_path: Path,
    own_state_table: str,
) -> None:
    """`index backfill` first (no maintainer: it cannot count), then `index follow
    --backfill`, the order a user meets. The follower begins at the stream's end, after the
    direct backfill's marker writes. On a quiet table no later write moved its position, so
    every listing read the shard from its start and re-checked those writes for ever (300
    Queries on a 300-key table, against a scan's 3.5 RCU), and called them records the
    maintainer had not applied. Now the follower says where the stream's tip was while
    nothing came (see evidence's rule): within about 2.5 margins and a rounding of the
    writes, listings leave them out (what is said of them meanwhile: unit tests)."""
    table, margin, store = ddb_table_factory(("pk", "S"), ("sk", "N")), 3.0, own_state_table
    fill(ddb_client, table, range(40))
    for step in ("stream", "create", "backfill"):
        done = run(ddbkeys(ddb_endpoint_url, "partition-keys", "index", step, "-t", table))
        assert done.returncode == 0, done.stderr
    wrote = time.monotonic()
    log = tmp_path / "follow.err"
    follower = start_follower(ddb_endpoint_url, table, margin, log)
    try:
        assert "0 marker(s) written" in watching(follower, log)("backfill done", within=120.0)
        rechecked: list[int] = []
        while True:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", IndexReplayWarning)  # (the re-checks, said)
                listing = distinct_partition_keys(
                    ddb_client, table, "index", state_table=store, replay_margin=margin
                )
            assert sorted(listing) == non_empty(ddb_client, table)
            replay, since = listing.replay, time.monotonic() - wrote
            rechecked.append(replay.rechecked)
            if replay.rechecked == 0:
                break
            # (2.5 margins and DynamoDB Local's minute of rounding, and time to spare)
            assert since < 2.5 * margin + 60 + 60, rechecked
            time.sleep(3.0)
        print(f"re-checks {rechecked}, none {time.monotonic() - wrote:.0f} s after the writes")
    finally:
        follower.terminate()
        follower.wait(timeout=60)
