"""A lagging maintainer, said before (issue 35, point 4), against DynamoDB Local: with the follower
held ``BEHIND`` changes behind, a listing with ``--method index`` (and
``distinct_partition_keys(..., method="index")``, sync and asyncio) whose replay costs more than
a scan says so in one line before it reads (before its first re-check, its first Scan and its
first key), priced as ``index status`` prices it, and goes on with the exact answer. A caught-up
maintainer says nothing."""

from __future__ import annotations

import json
import re
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys._connect import make_client
from ddbkeys.aio._listing import distinct_partition_keys as aio_keys
from ddbkeys.partition_keys import (
    IndexReplayWarning,
    MarkerIndex,
    StreamFollower,
    distinct_partition_keys,
)
from tests.integration.test_index_async import run
from tests.integration.test_index_proof import caught_up
from tests.integration.test_marker_lifecycle import MARGIN, item, non_empty

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

#: Changes nobody applies: each names a collection of its own to re-check.
BEHIND = 40
SAID = re.compile(
    r"Marker index 'ddbkeys-partition-keys': (\d+) stream record\(s\) read from its "
    r"maintainer's positions held back 1 s \((\d+) of them not applied yet, the oldest "
    r"written at most [\d,]+ s ago, naming (\d+) collection\(s\)\) name (\d+) "
    r"collection\(s\) to re-check, so this listing costs about ([\d,.]+) read units against "
    r"([\d,.]+) for a scan of table '[^']+' \(its maintainer is behind; --method auto would "
    r"list another way\); listing from the index all the same\."
)


def held_behind(client: DynamoDBClient, table: str, store: str) -> None:
    """Ten collections, marked and proven by a follower that is then stopped; then ``BEHIND``
    new collections nobody applies."""
    for n in range(10):
        client.put_item(TableName=table, Item=item(f"k{n}", 1))
    follower = StreamFollower(MarkerIndex(client, table), state_table=store, poll=0.05)
    stop = threading.Event()
    thread = threading.Thread(target=follower.run, args=(stop,))
    thread.start()
    try:
        time.sleep(MARGIN + 0.2)
        MarkerIndex(client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
    finally:
        stop.set()
        thread.join(timeout=30)
    for n in range(BEHIND):
        client.put_item(TableName=table, Item=item(f"lag{n:03}", 1))


def test_a_caught_up_maintainer_says_nothing(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    held_behind(ddb_client, table, store)
    StreamFollower(MarkerIndex(ddb_client, table), state_table=store).run(until_caught_up=True)
    time.sleep(MARGIN + 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexReplayWarning)
        listing = distinct_partition_keys(
            ddb_client, table, "index", state_table=store, replay_margin=MARGIN
        )
    assert listing.notes == () and listing.index_trusted is True
    assert sorted(listing) == non_empty(ddb_client, table)


def test_a_lagging_maintainer_is_said_before_the_listing_reads(
    ddb_client: DynamoDBClient, ddb_endpoint_url: str, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    held_behind(ddb_client, table, store)
    expected = non_empty(ddb_client, table)
    assert len(expected) == 10 + BEHIND
    # What `index status` prices, the note says.
    status = MarkerIndex(ddb_client, table).proof_status(state_table=store, replay_margin=MARGIN)
    assert status.rechecks is not None and status.rechecks >= BEHIND
    assert status.listing_rcu is not None and status.listing_rcu > status.scan_rcu
    # Python: a warning, as it is found, before any Query (a re-check) or Scan; then the keys.
    client = make_client(ddb_endpoint_url)
    sent: list[str] = []
    client.meta.events.register(
        "before-call.dynamodb.*", lambda model, **_: sent.append(model.name)
    )
    said: list[tuple[str, list[str], str]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always", IndexReplayWarning)
        warnings.showwarning = lambda message, _, filename, *__, **___: said.append(
            (str(message), list(sent), filename)
        )
        listing = distinct_partition_keys(
            client, table, "index", state_table=store, replay_margin=MARGIN
        )
    assert len(said) == 1 and listing.notes == (said[0][0],)
    assert said[0][2] == __file__  # (the caller's line, not ddbkeys')
    found = SAID.fullmatch(said[0][0])
    assert found is not None, said[0][0]
    records, unapplied, lagging, rechecks, cost, scan = found.groups()
    assert int(unapplied) == BEHIND and int(records) >= BEHIND
    assert int(lagging) == BEHIND  # (a collection of its own each)
    assert int(rechecks) == status.rechecks
    assert float(cost.replace(",", "")) == pytest.approx(status.listing_rcu, abs=0.05)
    assert float(scan.replace(",", "")) == pytest.approx(status.scan_rcu, abs=0.05)
    before = said[0][1]
    assert "Query" not in before and "Scan" not in before, before
    assert "Query" in sent, "the re-checks come after"
    # It goes on, from the index, exact.
    assert listing.index_trusted is True and listing.replay.rechecked == int(rechecks)
    assert sorted(listing) == expected
    said_on_the_command_line(table, store, ddb_endpoint_url, expected)

    async def body(aio_client: Any) -> None:
        with pytest.warns(IndexReplayWarning, match="its maintainer is behind") as met:
            listing = await aio_keys(
                aio_client, table, "index", state_table=store, replay_margin=MARGIN
            )
        # (asyncio too: the awaiting line). The replay warning, not met[0]: pytest.warns records
        # every warning in the block, and a CI run met one with the filename 'sys' first (one
        # the garbage collector raised, such as an unclosed socket of another test's).
        (replay,) = [w for w in met if issubclass(w.category, IndexReplayWarning)]
        assert replay.filename == __file__, [(w.category, w.message, w.filename) for w in met]
        assert len(listing.notes) == 1 and SAID.fullmatch(listing.notes[0])
        assert sorted([k async for k in listing]) == expected

    run(ddb_client, body)
    # auto does not pay it: it lists another way, and says nothing.
    with warnings.catch_warnings():
        warnings.simplefilter("error", IndexReplayWarning)
        auto = distinct_partition_keys(ddb_client, table, state_table=store, replay_margin=MARGIN)
    assert auto.method_name != "index" and auto.notes == ()
    assert sorted(auto) == expected


def said_on_the_command_line(table: str, store: str, endpoint: str, expected: list[str]) -> None:
    """The command line: the line on stderr before the first key, the keys exact; and in the
    JSON document's warnings."""
    ddb_endpoint_url = endpoint
    result = CliRunner().invoke(
        cli,
        [
            *f"partition-keys -t {table} --method index --state-table {store}".split(),
            *("--replay-margin", str(MARGIN), "--endpoint-url", ddb_endpoint_url),
        ],
    )
    assert result.exit_code == 0, result.output
    assert sorted(result.stdout.split()) == expected
    warned = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warned) == 1 and SAID.fullmatch(warned[0].removeprefix("Warning: "))
    first_key = min(result.output.index(f"\n{key}\n") for key in expected)
    assert result.output.index(warned[0]) < first_key
    # ... and in the JSON document's warnings (helper-91 F6: [] beside it on stderr)
    document = CliRunner().invoke(
        cli,
        [
            *f"partition-keys -t {table} --method index --state-table {store}".split(),
            *("--replay-margin", str(MARGIN), "--endpoint-url", ddb_endpoint_url),
            *("--output", "json", "-q"),
        ],
    )
    assert document.exit_code == 0, document.output
    (line,) = json.loads(document.stdout)["warnings"]
    assert SAID.fullmatch(line), line
