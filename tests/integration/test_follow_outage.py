"""`index follow` rides out an endpoint that stops answering (helper-73 F1: a 3 s outage, as a
network blip or DynamoDB Local restarted makes, ended it with exit 1 within 0.5-3 s, and the
index was left with no maintainer). The endpoint here is the fault proxy, stopped and started
again on its port: connections are refused meanwhile, as they were there."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys.testing._proxy import Faults
from tests.integration.test_index_all_at_once import watching
from tests.integration.test_index_setup import ddbkeys, fill, run
from tests.integration.test_marker_lifecycle import marked

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._proxy import FaultProxy
    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


def follower(
    endpoint: str, table: str, state: str, log: Path, *options: str
) -> subprocess.Popen[bytes]:
    command = ["partition-keys", "index", "follow", "-t", table, "--state-table", state]
    with log.open("wb") as err:
        return subprocess.Popen(
            ddbkeys(endpoint, *command, *options),
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


def set_up(ddb_client: DynamoDBClient, ddb_endpoint_url: str, table: str) -> None:
    for step in ("create", "stream"):
        done = run(ddbkeys(ddb_endpoint_url, "partition-keys", "index", step, "-t", table))
        assert done.returncode == 0, done.stderr


def following(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    proxy: FaultProxy,
    state: str,
    log: Path,
    *options: str,
) -> tuple[str, subprocess.Popen[bytes], Callable[..., str]]:
    """A table with the marker index and its stream, and `index follow` on it through
    ``proxy``, once its start is done: the table, the follower, a wait for its words."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    set_up(ddb_client, ddb_endpoint_url, table)
    process = follower(proxy.endpoint_url, table, state, log, *options)
    said = watching(process, log)
    said("Note: no backfill under this stream")  # (following: its start is done)
    return table, process, said


def refusing(proxy: FaultProxy, said: Callable[..., str], seconds: float) -> None:
    """``proxy`` refuses connections for ``seconds`` from the follower's first warning on."""
    port = int(proxy.endpoint_url.rsplit(":", 1)[1])
    proxy.stop()
    said("Warning: Could not connect to the DynamoDB endpoint")
    time.sleep(seconds)
    proxy.reset()
    proxy.start(port)


def test_a_follower_goes_on_after_the_endpoint_refused_for_a_while(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    fault_proxy: FaultProxy,
    own_state_table: str,
    tmp_path: Path,
) -> None:
    log = tmp_path / "follow.err"
    table, process, said = following(
        ddb_client, ddb_endpoint_url, ddb_table_factory, fault_proxy, own_state_table, log
    )
    try:
        refusing(fault_proxy, said, 3.0)
        fill(ddb_client, table, range(3), items=1)  # (written while it comes back)
        text = said("The endpoint answers again after")
        assert "Trying again for up to 900 s (it goes on from its checkpoint" in text, text
        ends = time.monotonic() + 60
        while marked(ddb_client, table) != ["k000", "k001", "k002"]:
            assert time.monotonic() < ends, (marked(ddb_client, table), log.read_text())
            time.sleep(0.2)
        assert fault_proxy.counts["requests"] > 0  # (through the proxy again)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(30)
    assert code == 0, log.read_text()


def test_a_follower_gives_up_after_its_outage_wait(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    fault_proxy: FaultProxy,
    own_state_table: str,
    tmp_path: Path,
) -> None:
    """--outage-wait bounds it: past that, exit 1 and the error (a supervisor restarts it)."""
    log = tmp_path / "follow.err"
    _, process, _ = following(
        ddb_client,
        ddb_endpoint_url,
        ddb_table_factory,
        fault_proxy,
        own_state_table,
        log,
        "--outage-wait",
        "2",
    )
    assert fault_proxy.counts["requests"] > 0
    began = time.monotonic()
    fault_proxy.stop()
    code = process.wait(60)
    text = log.read_text()
    assert code == 1, text
    assert 2 <= time.monotonic() - began < 30, text
    assert "Trying again for up to 2 s" in text
    assert (
        text.rstrip()
        .splitlines()[-1]
        .startswith("Error: Could not connect to the DynamoDB endpoint")
    ), text


def test_an_outage_mid_backfill_and_the_follower_takes_its_own_backfill_again_at_once(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    fault_proxy: FaultProxy,
    own_state_table: str,
    tmp_path: Path,
) -> None:
    """helper-74 F3: the endpoint went in the middle of `index follow --backfill`'s backfill,
    which then could not say in the record that it stopped; once the endpoint answered, the
    follower's next try found its own entry alive and waited for it as for "another backfill
    at work" (up to 30 s), while `index status` said to start a follower. It now takes its
    own record again at once, and the backfill ends proven."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    batch: list[Any] = [
        {"PutRequest": {"Item": {"pk": {"S": f"k{n:04}"}, "sk": {"N": "0"}}}} for n in range(1500)
    ]
    for start in range(0, len(batch), 25):
        ddb_client.batch_write_item(RequestItems={table: batch[start : start + 25]})
    set_up(ddb_client, ddb_endpoint_url, table)
    log = tmp_path / "follow.err"
    options = ("--backfill", "--replay-margin", "1")
    process = follower(fault_proxy.endpoint_url, table, own_state_table, log, *options)
    said = watching(process, log)
    try:
        said("backfill begins")
        time.sleep(0.5)
        refusing(fault_proxy, said, 2.0)
        said("The endpoint answers again after")
        text = said("backfill done", within=120)
        assert "listings can prove the index from now on" in text, text
        assert "another backfill is at work" not in text, text  # (its own, taken at once)
        status = run(
            ddbkeys(
                ddb_endpoint_url,
                *("partition-keys", "index", "status", "-t", table),
                *("--state-table", own_state_table, "--replay-margin", "1"),
            )
        )
        assert "Provable: yes" in status.stdout, status.stdout + status.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(30)
    assert code == 0, log.read_text()


def test_an_outage_during_the_margin_wait_is_noticed_at_once_until_caught_up(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    fault_proxy: FaultProxy,
    own_state_table: str,
    tmp_path: Path,
) -> None:
    """helper-74 F2: with --until-caught-up --backfill, the follower's error waited for its
    backfill, which waited out the default margin (60 s) first; the outage was said, and
    --outage-wait counted, only then. The backfill now stops with the following."""
    log = tmp_path / "follow.err"
    options = ("--backfill", "--until-caught-up", "--outage-wait", "2")
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    set_up(ddb_client, ddb_endpoint_url, table)
    process = follower(fault_proxy.endpoint_url, table, own_state_table, log, *options)
    said = watching(process, log)
    said("(the replay margin, 60 s, after the follower's first position)")
    began = time.monotonic()
    fault_proxy.stop()
    try:
        code = process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
    text = log.read_text()
    assert code == 1, text
    assert time.monotonic() - began < 30, text  # (not after the margin's 60 s)
    assert "Trying again for up to 2 s" in text and "giving up" in text, text


def test_a_stop_abandons_a_request_that_hangs_within_about_a_second(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    ddb_table_factory: TableFactory,
    fault_proxy: FaultProxy,
    own_state_table: str,
    tmp_path: Path,
) -> None:
    """helper-86 F3: Ctrl-C or SIGTERM set the follower's stop, but a request that hung (the
    endpoint held it) kept it until the request's deadline (60 s; at start-up, a silent
    endpoint, the whole deadline with the signal not acted on). The help promises a stop
    within about a second: once ``GRACE`` has passed, the request under way is abandoned."""
    log = tmp_path / "follow.err"
    _table, process, _said = following(
        ddb_client, ddb_endpoint_url, ddb_table_factory, fault_proxy, own_state_table, log
    )
    fault_proxy.set_faults(Faults(delay=1.0, delay_seconds=600.0))  # (every request held)
    ends = time.monotonic() + 30
    while not fault_proxy.counts["delay"]:  # (a request of its polling is held)
        assert time.monotonic() < ends and process.poll() is None, log.read_text()
        time.sleep(0.1)
    time.sleep(0.5)
    began = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code = process.wait(30)
    took = time.monotonic() - began
    text = log.read_text()
    assert code == 0, text
    assert "Stopped by SIGTERM, abandoning a request that had not answered within 1 s" in text
    assert took < 10, (took, text)  # (about GRACE; the request's deadline was 60 s)
