"""The marker index proven at answer time (snapshot plus log), against DynamoDB Local with the
real follower: each case that made the old heartbeat rule list keys wrongly with no warning
(issue 21) now lists exactly, or declines and says why."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys.partition_keys import (
    IndexUnprovenError,
    MarkerIndex,
    StreamFollower,
    distinct_partition_keys,
)
from ddbkeys.partition_keys._index.markers import DEFAULT_MARKER_SORT_KEY
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._index.stream_setup import enable_stream
from tests.integration.test_marker_follow_faults import (
    follow_command,
    saved_since,
    start,
    wait_for_record,
    write_randomly,
)
from tests.integration.test_marker_lifecycle import MARGIN, item, non_empty

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


def listing(client: DynamoDBClient, table: str, store: str, method: str = "auto") -> Any:
    return distinct_partition_keys(client, table, method, state_table=store, replay_margin=MARGIN)


@contextlib.contextmanager
def following(client: DynamoDBClient, table: str, store: str) -> Iterator[StreamFollower]:
    """A follower in a thread, once it has recorded its positions and the margin has passed."""
    follower = StreamFollower(MarkerIndex(client, table), state_table=store, poll=0.05)
    stop = threading.Event()
    runner = threading.Thread(target=follower.run, args=(stop,))
    runner.start()
    try:
        wait_for_record(client, table, store)
        time.sleep(MARGIN)
        yield follower
    finally:
        stop.set()
        runner.join(timeout=30)


def caught_up(follower: StreamFollower) -> None:
    moment = time.time()
    deadline = time.monotonic() + 30
    while (follower.report.caught_up_at or 0) <= moment:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(MARGIN)


def test_a_backfill_that_met_a_clash_proves_nothing(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    for n in range(10):
        ddb_client.put_item(TableName=table, Item=item(f"k{n}", 1))
    squatter = {"pk": {"S": "k3"}, "sk": DEFAULT_MARKER_SORT_KEY["N"], "note": {"S": "mine"}}
    ddb_client.put_item(TableName=table, Item=squatter)
    with following(ddb_client, table, store):
        report = MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        assert report.clashes == [{"S": "k3"}]
        auto = listing(ddb_client, table, store)
        assert auto.method_name == "skip-pages" and "'k3'" in auto.method_reason
        assert sorted(auto) == non_empty(ddb_client, table)  # all 10, k3 included
        with pytest.raises(IndexUnprovenError, match="backfill met data at the marker's key"):
            listing(ddb_client, table, store, "index")


def test_a_marker_overwritten_with_data_is_a_clash_until_repaired(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    for n in range(10):
        ddb_client.put_item(TableName=table, Item=item(f"k{n}", 1))
    with following(ddb_client, table, store) as follower:
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
        assert listing(ddb_client, table, store).method_name == "index"
        # The application writes data over k5's marker: the follower meets the clash.
        marker_key = {"pk": {"S": "k5"}, "sk": DEFAULT_MARKER_SORT_KEY["N"]}
        ddb_client.put_item(TableName=table, Item={**marker_key, "note": {"S": "mine"}})
        caught_up(follower)
        assert follower.report.clashes >= 1
        auto = listing(ddb_client, table, store)
        assert auto.method_name == "skip-pages" and "a maintainer found data" in auto.method_reason
        assert "'k5'" in auto.method_reason and sorted(auto) == non_empty(ddb_client, table)
        # The application moves its item; a repair finds no clash and clears the record.
        ddb_client.delete_item(TableName=table, Key=marker_key)
        caught_up(follower)
        assert MarkerIndex(ddb_client, table).repair(state_table=store).repaired
        proven = listing(ddb_client, table, store)
        assert proven.method_name == "index", proven.method_reason
        assert sorted(proven) == non_empty(ddb_client, table)


def test_a_follower_that_stopped_is_read_past_not_trusted(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    for n in range(10):
        ddb_client.put_item(TableName=table, Item=item(f"k{n}", 1))
    with following(ddb_client, table, store) as follower:
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
    # Nobody follows now. A new collection, and an emptied one, are in the stream only.
    ddb_client.put_item(TableName=table, Item=item("new", 1))
    ddb_client.delete_item(TableName=table, Key=item("k0", 1))
    proven = listing(ddb_client, table, store, "index")
    assert proven.index_trusted is True and proven.replay is not None
    assert sorted(proven) == non_empty(ddb_client, table)
    assert "new" in non_empty(ddb_client, table) and "k0" not in non_empty(ddb_client, table)
    assert proven.replay.rechecked >= 2


def test_markers_from_before_any_maintainer_are_removed_by_the_backfill(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    index = MarkerIndex(ddb_client, table)
    for n in range(5):
        ddb_client.put_item(TableName=table, Item=item(f"k{n}", 1))
    assert index.mark("stale") is True  # a marker on a collection with nothing else
    index.mark("k0")
    ddb_client.delete_item(TableName=table, Key=item("k0", 1))  # k0 emptied: its marker stays
    with following(ddb_client, table, store) as follower:
        report = index.backfill(state_table=store, replay_margin=MARGIN)
        assert report.removed == 2
        caught_up(follower)
        proven = listing(ddb_client, table, store)
        assert proven.method_name == "index", proven.method_reason
        assert sorted(proven) == ["k1", "k2", "k3", "k4"] == non_empty(ddb_client, table)
        assert index.verify().healthy


def test_a_follower_killed_under_writers_leaves_listings_exact(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    streamed_table: str,
    state_table: str,
    tmp_path: Path,
) -> None:
    table, store = streamed_table, state_table
    follower = start(follow_command(ddb_endpoint_url, table, store), tmp_path, 0)
    try:
        wait_for_record(ddb_client, table, store)
        time.sleep(MARGIN)
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        writers = [
            threading.Thread(target=write_randomly, args=(ddb_client, table, seed, 120, 40))
            for seed in range(4)
        ]
        before = StateStore(ddb_client, store).load(table, "ddbkeys-partition-keys")
        for w in writers:
            w.start()
        # In the middle of the writes: once the follower has saved a mark past the backfill's
        # (it applied some of them), not after a fixed time that a busy machine could outlast.
        saved_since(ddb_client, table, store, before, follower, threading.Event())
        follower.send_signal(signal.SIGKILL)
        for w in writers:
            w.join()
    finally:
        with contextlib.suppress(ProcessLookupError):
            follower.kill()
        follower.wait(timeout=30)
    truth = non_empty(ddb_client, table)
    for method in ("index", "auto"):
        found = listing(ddb_client, table, store, method)
        assert sorted(found) == truth, (method, found.method_reason)
        assert found.method_name == "index" or found.index_trusted is False


def test_the_state_table_is_taken_from_the_environment_by_every_command(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    streamed_table: str,
    state_table: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table, store = streamed_table, state_table
    monkeypatch.setenv("DDBKEYS_STATE_TABLE", store)
    for n in range(3):
        ddb_client.put_item(TableName=table, Item=item(f"k{n}", 1))
    with following(ddb_client, table, store) as follower:  # (given the name: the same table)
        run = CliRunner().invoke(
            cli,
            [
                "partition-keys",
                "index",
                "backfill",
                "-t",
                table,
                "--replay-margin",
                str(MARGIN),
                "--endpoint-url",
                ddb_endpoint_url,
            ],
        )
        assert run.exit_code == 0, run.output
        saved = StateStore(ddb_client, store).load(table, "ddbkeys-partition-keys")
        assert saved is not None and saved.backfill is not None
        caught_up(follower)
        run = CliRunner().invoke(
            cli,
            [
                "partition-keys",
                "-t",
                table,
                "--replay-margin",
                str(MARGIN),
                "--output",
                "json",
                "--endpoint-url",
                ddb_endpoint_url,
            ],
        )
        assert run.exit_code == 0, run.output
        assert '"method": "index"' in run.stdout and '"rechecked": 0' in run.stdout
    assert os.environ["DDBKEYS_STATE_TABLE"] == store


def test_a_proven_listing_resumes_with_the_collections_it_rechecked(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    for n in range(20):
        ddb_client.put_item(TableName=table, Item=item(f"k{n:02}", 1))
    with following(ddb_client, table, store) as follower:
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
    for n in range(3):  # past the follower's positions: re-checked by the listing
        ddb_client.put_item(TableName=table, Item=item(f"new{n}", 1))
    ddb_client.delete_item(TableName=table, Key=item("k00", 1))
    first = listing(ddb_client, table, store, "index")
    assert first.replay is not None and first.replay.rechecked == 4
    keys = iter(first)
    taken = [next(keys) for _ in range(5)]
    token = first.checkpoint()
    # The token carries the re-checked collections: the resume reads no stream, and goes on
    # in the other form too.
    rest = list(distinct_partition_keys(ddb_client, table, resume=token, state_table=store))
    assert sorted(taken + rest) == non_empty(ddb_client, table)
    assert len(taken + rest) == len(set(taken + rest))

    async def in_asyncio() -> list[Any]:
        from ddbkeys import aio  # noqa: PLC0415 (the optional extra)

        async with aio.make_client(endpoint_url=ddb_client.meta.endpoint_url) as aclient:
            resumed = await aio.distinct_partition_keys(aclient, table, resume=token)
            return [k async for k in resumed]

    import asyncio  # noqa: PLC0415

    assert sorted(taken + asyncio.run(in_asyncio())) == non_empty(ddb_client, table)


def test_the_asyncio_listing_proves_the_index_the_same_way(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    import asyncio  # noqa: PLC0415

    from ddbkeys import aio  # noqa: PLC0415 (the optional extra)

    table, store = streamed_table, state_table
    for n in range(6):
        ddb_client.put_item(TableName=table, Item=item(f"k{n}", 1))
    with following(ddb_client, table, store) as follower:
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
    ddb_client.put_item(TableName=table, Item=item("late", 1))  # nobody follows now

    async def listed(method: str) -> tuple[list[Any], Any]:
        async with aio.make_client(endpoint_url=ddb_client.meta.endpoint_url) as aclient:
            run = await aio.distinct_partition_keys(
                aclient, table, method, state_table=store, replay_margin=MARGIN
            )
            return [k async for k in run], run

    keys, run = asyncio.run(listed("index"))
    assert run.index_trusted is True and run.replay is not None and run.replay.rechecked == 1
    assert sorted(keys) == non_empty(ddb_client, table)
    sync = listing(ddb_client, table, store, "index")
    assert sync.method_reason == run.method_reason  # one choice, two drivers


def test_a_running_follower_moves_to_a_new_stream(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    with following(ddb_client, table, store) as follower:
        ddb_client.update_table(TableName=table, StreamSpecification={"StreamEnabled": False})
        # (Off for a second, as a change of view type leaves it: the follower looks at the table
        # meanwhile, its shards ended, and waits for a stream rather than ending with an error.)
        time.sleep(1.0)
        assert follower.report.stream_off_since is not None  # (and the CLI says so)
        ddb_client.update_table(
            TableName=table,
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
        )
        latest = ddb_client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
        deadline = time.monotonic() + 60
        while True:
            saved = StateStore(ddb_client, store).load(table, "ddbkeys-partition-keys")
            assert saved is not None
            if any(m.stream == latest for m in saved.shards.values()):
                break
            assert time.monotonic() < deadline, "the follower stayed on the old stream"
            time.sleep(0.2)
        ddb_client.put_item(TableName=table, Item=item("after", 1))
        caught_up(follower)
        assert follower.report.stream_off_since is None
        assert follower.report.marked >= 1  # it keeps the markers of the new stream


def test_a_follower_run_again_on_a_table_made_anew_follows_it_as_it_is_now(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    streamed_table: str,
    state_table: str,
) -> None:
    """(A follower kept the first table's description: on the new table's stream it looked for
    the old key attribute, marked nothing, and saved its positions, so a proven listing missed
    every collection written after the backfill.) It describes the table at each start, and
    again when it finds a new stream."""
    table, store = streamed_table, state_table
    follower = StreamFollower(MarkerIndex(ddb_client, table), state_table=store, poll=0.05)
    follower.run(until_caught_up=True)
    ddb_client.delete_table(TableName=table)
    ddb_client.get_waiter("table_not_exists").wait(TableName=table)
    ddb_table_factory(("id", "S"), ("sk", "N"), name=table)  # made anew, keyed on "id"
    MarkerIndex(ddb_client, table).create()
    enable_stream(ddb_client, table)
    follower.run(until_caught_up=True)  # the same follower: its first start on this stream
    time.sleep(MARGIN)
    MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
    for n in range(5):
        ddb_client.put_item(TableName=table, Item={"id": {"S": f"b{n}"}, "sk": {"N": "1"}})
    time.sleep(MARGIN)
    follower.run(until_caught_up=True)
    time.sleep(MARGIN)
    run = listing(ddb_client, table, store, "index")
    assert sorted(run) == [f"b{n}" for n in range(5)]
    assert run.index_trusted is True
