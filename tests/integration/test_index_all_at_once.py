"""The marker index set up with everything started at once (helper-70 F5): a follower with
--backfill started before `index create` has made the index waits for it, saying so in one
line, then backfills; it had ended 1 within a second ("tried again in 10 s", never tried)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ddbkeys.partition_keys import distinct_partition_keys
from tests.integration.test_index_setup import MARGIN, ddbkeys, fill, run
from tests.integration.test_marker_lifecycle import non_empty

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


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
    command = ["index", "follow", "-t", table, "--backfill", "--replay-margin", str(MARGIN)]
    with log.open("wb") as err:
        follower = subprocess.Popen(
            ddbkeys(ddb_endpoint_url, "partition-keys", *command),
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:

        def said(words: str, within: float = 60.0) -> str:
            ends = time.monotonic() + within
            while words not in (text := log.read_text(encoding="utf-8")):
                assert follower.poll() is None, text  # (it had ended 1 here)
                assert time.monotonic() < ends, text
                time.sleep(0.2)
            return text

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
