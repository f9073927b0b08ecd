"""The adversary's schedules of issue 33 on DynamoDB Local, each with a replay margin of 1 s:
two followers at once, a follower plus the Lambda handler, a backfill and a repair under
writers, the state record's positions rolled back and deleted, the table and its index made
anew under an old state record, the stream's view type changed under a follower. Each ends with
the listing (``auto`` and ``method="index"``) equal to the table's non-empty collections by a
consistent scan, or with the index declined (``auto`` lists another way and says why; ``method=
"index"`` raises :class:`IndexUnprovenError`): never a wrong answer with the index proven.

Covered by other modules, by name:

* out-of-order Lambda batches (ParallelizationFactor 2):
  ``test_lambda_trigger.py::test_batch_b_before_batch_a_with_factor_2_ends_declined`` (and its
  negative control ``test_the_same_schedule_read_as_factor_1_is_wrong``);
* a hot collection put and emptied 200 times under a follower:
  ``test_marker_pending.py::test_a_collection_put_and_emptied_200_times_does_not_stop_the_follower``;
* a read-mode backfill under writers:
  ``test_backfill_read.py::test_a_read_mode_backfill_under_writers_leaves_the_index_proven_and_exact``;
* the forged state record: ``test_proof_forged.py::test_a_forged_position_declines_at_once``;
* a follower killed under writers:
  ``test_index_proof.py::test_a_follower_killed_under_writers_leaves_listings_exact``;
* a table made anew and followed again, backfilled again:
  ``test_index_proof.py::test_a_follower_run_again_on_a_table_made_anew_follows_it_as_it_is_now``;
* a Lambda batch given up on (Lambda alone):
  ``test_marker_lambda.py::test_records_lambda_gave_up_on_are_a_gap_until_a_new_backfill``.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from ddbkeys._cli import cli
from ddbkeys._errors import ConfigurationError
from ddbkeys.partition_keys import (
    IndexUnprovenError,
    MarkerIndex,
    StreamFollower,
    distinct_partition_keys,
)
from ddbkeys.partition_keys._index.markers import DEFAULT_MARKER_SORT_KEY
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._index.stream_setup import enable_stream
from ddbkeys.partition_keys._proof.evidence import SHARD_PREFIX
from ddbkeys.partition_keys._streams.streams import streams_client_for
from tests.integration.test_index_proof import caught_up
from tests.integration.test_lambda_trigger import Window
from tests.integration.test_marker_follow_faults import wait_for_record, write_randomly
from tests.integration.test_marker_lambda import FailingFor
from tests.integration.test_marker_lifecycle import MARGIN, Between, item, non_empty
from tests.support.stream_events import InvokedHandler

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

INDEX = "ddbkeys-partition-keys"


def outcome(client: DynamoDBClient, table: str, store: str, **options: Any) -> str:
    """The listing, in ``auto`` and with ``method="index"``, once the writers have stopped:
    "exact" (the index proven, and right) or "declined: <why>". A wrong answer fails here,
    whichever method ``auto`` took."""
    truth = holding(client, table, options.get("marker_attribute", "ddbkeys_pk"))
    auto = distinct_partition_keys(
        client, table, state_table=store, replay_margin=MARGIN, **options
    )
    assert sorted(auto) == truth, (auto.method_name, auto.method_reason)
    try:
        forced = distinct_partition_keys(
            client, table, "index", state_table=store, replay_margin=MARGIN, **options
        )
        keys = sorted(forced)
    except IndexUnprovenError as declined:
        assert auto.method_name != "index", auto.method_reason
        return f"declined: {declined}"
    assert forced.index_trusted is True
    assert keys == truth, f"the index proven, and wrong: listed {keys}, the table holds {truth}"
    return "exact"


def holding(client: DynamoDBClient, table: str, attribute: str) -> list[str]:
    """The collections holding an item that is not a marker (markers known by ``attribute``),
    by a consistent scan: ``non_empty`` for any marker attribute."""
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted({str(i["pk"]["S"]) for i in items if attribute not in i})


def collections(client: DynamoDBClient, table: str, count: int) -> None:
    for n in range(count):
        client.put_item(TableName=table, Item=item(f"k{n:02}", 1))


@contextlib.contextmanager
def followers(client: DynamoDBClient, table: str, store: str, count: int = 1) -> Iterator[Any]:
    """``count`` followers in threads (the same table and state table), each with its stop."""
    running = []
    for _ in range(count):
        follower = StreamFollower(MarkerIndex(client, table), state_table=store, poll=0.05)
        stop = threading.Event()
        thread = threading.Thread(target=follower.run, args=(stop,))
        thread.start()
        running.append((follower, stop, thread))
    try:
        wait_for_record(client, table, store)
        yield running
    finally:
        for _, stop, thread in running:
            stop.set()
            thread.join(timeout=30)


@contextlib.contextmanager
def writing(
    client: DynamoDBClient, table: str, threads: int = 3, count: int = 40
) -> Iterator[None]:
    """Writer threads putting and deleting items of collections w0 to w11 meanwhile."""
    writers = [
        threading.Thread(target=write_randomly, args=(client, table, seed, count, 12))
        for seed in range(threads)
    ]
    for w in writers:
        w.start()
    try:
        yield
    finally:
        for w in writers:
            w.join()


def deleted(client: DynamoDBClient, table: str) -> None:
    """Delete the marker index, and wait until it is gone (DynamoDB Local fails writes while
    it deletes an index)."""
    deadline = time.monotonic() + 30
    while True:
        try:  # (DynamoDB Local answers InternalFailure now and then: tried again)
            client.update_table(
                TableName=table, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": INDEX}}]
            )
            break
        except client.exceptions.ClientError as refused:
            code = refused.response.get("Error", {}).get("Code")
            assert code == "InternalFailure" and time.monotonic() < deadline, refused
            time.sleep(0.2)
    while client.describe_table(TableName=table)["Table"].get("GlobalSecondaryIndexes"):
        assert time.monotonic() < deadline, "the index was not deleted"
        time.sleep(0.1)


def on_new_stream(client: DynamoDBClient, table: str, store: str) -> None:
    """Wait until a follower has recorded positions in the table's stream as it is now."""
    latest = client.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    deadline = time.monotonic() + 60
    while True:
        saved = StateStore(client, store).load(table, INDEX)
        if saved is not None and any(m.stream == latest for m in saved.shards.values()):
            return
        assert time.monotonic() < deadline, "the follower stayed on the old stream"
        time.sleep(0.1)


def cli_run(endpoint: str, *args: str) -> Any:
    """The command line, in this process."""
    return CliRunner().invoke(cli, [*args, "--endpoint-url", endpoint])


def cli_listing(endpoint: str, table: str, store: str) -> Any:
    """``ddbkeys partition-keys --method index``, its answer in JSON."""
    listing = f"partition-keys -t {table} --method index --state-table {store} --output json"
    return cli_run(endpoint, *listing.split(), "--replay-margin", str(MARGIN))


def test_two_followers_at_once_on_one_table_and_state_table(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """Both save their marks in the same attributes, each over the other's; one is stopped in
    the middle of the writes, so its last save may lie under the other's."""
    table, store = streamed_table, state_table
    collections(ddb_client, table, 10)
    with followers(ddb_client, table, store, 2) as both:
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        with writing(ddb_client, table):
            time.sleep(0.3)
            both[0][1].set()  # the first stops mid-way
        outcome(ddb_client, table, store)  # the other one mid-way: exact or declined
        caught_up(both[1][0])
        assert outcome(ddb_client, table, store) == "exact"


def test_a_follower_and_the_lambda_handler_on_one_table_under_writers(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    MarkerIndex(ddb_client, table).create()
    window = Window(ddb_client, table)
    store = f"ddbkeys-state-{table[-12:]}"
    handler = InvokedHandler(ddb_client, window.arn, state_table=store)
    collections(ddb_client, table, 10)
    try:
        with followers(ddb_client, table, store) as ((follower, _, _),):
            window.deliver(handler)
            # (Its checks must read 1 from a margin before the backfill: the backfill waits
            # for the follower's first position only; begun sooner it does not count.)
            time.sleep(MARGIN + 0.1)
            MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
            with writing(ddb_client, table):
                for _ in range(5):
                    window.deliver(handler)  # the handler's batches beside the follower's
                    time.sleep(0.05)
            window.deliver(handler)
            caught_up(follower)
            assert outcome(ddb_client, table, store) == "exact"
    finally:
        ddb_client.delete_table(TableName=store)


def test_a_follower_save_does_not_hide_a_batch_lambda_gave_up_on(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """The wrong answer found: the handler fails on b (its batch X) and marks X pending in the
    shard's mark; a follower on the same shard, behind X, saves its own mark over it; Lambda
    gives up on X and a new execution environment handles the next batch (c). The handler took
    the follower's mark for its own, went past X unseen, and ``--method index`` listed a, c, r
    "proven" where the table holds a, b, c, r. Now the handler keeps X pending in its own
    record too: declined (records lost) until a backfill, then exact."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    MarkerIndex(ddb_client, table).create()
    window = Window(ddb_client, table)
    store = f"ddbkeys-state-{table[-12:]}"
    try:
        StreamFollower(MarkerIndex(ddb_client, table), state_table=store).run(until_caught_up=True)
        handler = InvokedHandler(ddb_client, window.arn, state_table=store)
        ddb_client.put_item(TableName=table, Item=item("a", 1))
        window.deliver(handler)
        time.sleep(MARGIN + 0.1)
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        ddb_client.put_item(TableName=table, Item=item("r", 1))  # the follower's next batch
        stop = threading.Event()
        answers: list[dict[str, Any]] = []

        def lambda_fails_on_b() -> None:  # while the follower applies r, before it saves
            ddb_client.put_item(TableName=table, Item=item("b", 1))
            shard, batch_x = window.records()
            failing = InvokedHandler(ddb_client, window.arn, state_table=store)
            broken = MarkerIndex(ddb_client, table)
            failing._indexes[table] = broken
            broken.client = FailingFor(ddb_client, {"S": "b"})  # type: ignore[assignment]
            answers.append(failing.handle(window.event(shard, batch_x)))
            stop.set()  # the follower saves its mark for r, then stops (behind b)

        behind = MarkerIndex(ddb_client, table)
        follower = StreamFollower(
            behind, streams=streams_client_for(ddb_client, table), state_table=store, poll=0.05
        )
        behind.client = Between(ddb_client, "query", lambda_fails_on_b)  # type: ignore[assignment]
        follower.run(stop)
        assert len(answers) == 1 and answers[0]["batchItemFailures"], answers
        # Lambda gave up on X; batch Y (c) comes to a new execution environment.
        ddb_client.put_item(TableName=table, Item=item("c", 1))
        window.deliver(InvokedHandler(ddb_client, window.arn, state_table=store))
        time.sleep(MARGIN + 0.1)
        assert non_empty(ddb_client, table) == ["a", "b", "c", "r"]
        said = outcome(ddb_client, table, store)
        assert (
            said.startswith("declined")
            and "were lost before the maintainer applied them (Lambda" in said
        )
        MarkerIndex(ddb_client, table).repair(state_table=store)  # b marked
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        time.sleep(MARGIN + 0.1)
        assert outcome(ddb_client, table, store) == "exact"
    finally:
        ddb_client.delete_table(TableName=store)


def test_a_backfill_and_a_repair_run_under_writers(
    ddb_client: DynamoDBClient, ddb_endpoint_url: str, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    collections(ddb_client, table, 10)
    common = ["-t", table, "--state-table", store]
    with followers(ddb_client, table, store) as ((follower, _, _),):
        time.sleep(MARGIN)
        with writing(ddb_client, table, count=60):
            run = cli_run(
                ddb_endpoint_url,
                "partition-keys",
                "index",
                "backfill",
                *common,
                "--replay-margin",
                str(MARGIN),
                "--mode",
                "reconcile",
            )
            assert run.exit_code == 0, run.output
            assert re.search(r"\d+ marker\(s\) written, \d+ already there", run.output), run.output
            fixed = cli_run(ddb_endpoint_url, "partition-keys", "index", "repair", *common)
            # A marker it meant to remove that the follower removed first (or one it meant
            # to write that the follower wrote) is repaired: exit 0 (it was "NOT REPAIRED: 1:
            # w4 left as they are", exit 1; see test_repair_race).
            assert "missing markers:" in fixed.output, fixed.output
            assert fixed.exit_code == 0, fixed.output
        caught_up(follower)
        assert outcome(ddb_client, table, store) == "exact"
        listed = cli_listing(ddb_endpoint_url, table, store)
        assert listed.exit_code == 0, listed.output
        document = json.loads(listed.stdout)
        assert document["method"] == "index" and document["keys"] == non_empty(ddb_client, table)


def test_positions_rolled_back_to_an_older_copy_and_deleted(
    ddb_client: DynamoDBClient, ddb_endpoint_url: str, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    key = {"id": {"S": f"{table}/{INDEX}"}}
    collections(ddb_client, table, 10)
    with followers(ddb_client, table, store) as ((follower, stop, _),):
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
        older = ddb_client.get_item(TableName=store, Key=key, ConsistentRead=True)["Item"]
        for n in range(3):
            ddb_client.put_item(TableName=table, Item=item(f"new{n}", 1))
        ddb_client.delete_item(TableName=table, Key=item("k00", 1))
        caught_up(follower)
        ddb_client.put_item(TableName=store, Item=older)  # rolled back: the record of before
        assert outcome(ddb_client, table, store) == "exact"  # (read from the older positions)
        ddb_client.put_item(TableName=table, Item=item("new3", 1))
        caught_up(follower)  # its own marks saved over the older ones
        assert outcome(ddb_client, table, store) == "exact"
        stop.set()
    # Nobody follows; the positions deleted: a shard no maintainer named, holding records
    # from before the backfill.
    shards = [name for name in older if name.startswith(SHARD_PREFIX)]
    ddb_client.update_item(
        TableName=store,
        Key=key,
        UpdateExpression="REMOVE " + ", ".join(f"#s{n}" for n in range(len(shards))),
        ExpressionAttributeNames={f"#s{n}": name for n, name in enumerate(shards)},
    )
    said = outcome(ddb_client, table, store)
    assert said.startswith("declined") and "no maintainer recorded a position" in said, said
    run = cli_listing(ddb_endpoint_url, table, store)
    assert run.exit_code != 0 and "no maintainer recorded a position in shard" in run.output
    # A follower started now covers the stream from now on: only a new backfill counts.
    StreamFollower(MarkerIndex(ddb_client, table), state_table=store).run(until_caught_up=True)
    said = outcome(ddb_client, table, store)
    assert said.startswith("declined") and "after the backfill began" in said, said
    # The whole record deleted.
    ddb_client.delete_item(TableName=store, Key=key)
    said = outcome(ddb_client, table, store)
    assert said.startswith("declined") and "no record of a backfill" in said, said


def test_a_whole_record_rolled_back_past_a_clash(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """Not the positions alone (harmless, above) but the whole record rolled back: its list of
    clashes goes back too."""
    table, store = streamed_table, state_table
    key = {"id": {"S": f"{table}/{INDEX}"}}
    collections(ddb_client, table, 10)
    with followers(ddb_client, table, store) as ((follower, _, _),):
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
        older = ddb_client.get_item(TableName=store, Key=key, ConsistentRead=True)["Item"]
        marker_key = {"pk": {"S": "k05"}, "sk": DEFAULT_MARKER_SORT_KEY["N"]}
        ddb_client.put_item(TableName=table, Item={**marker_key, "note": {"S": "mine"}})
        caught_up(follower)
        assert follower.report.clashes >= 1
        ddb_client.put_item(TableName=store, Item=older)  # restored: no clash recorded
        ddb_client.put_item(TableName=table, Item=item("late", 1))
        # Its next save finds fewer saves than it made: nothing written, and it goes on from
        # the restored marks, so it meets the clash's record again (it used to save its
        # positions past the clash, and the index was "proven" without k05).
        caught_up(follower)
        assert follower.report.put_back == 1
        said = outcome(ddb_client, table, store)
        assert said.startswith("declined") and "k05" in said, said


def test_the_table_and_its_index_made_anew_under_the_old_record(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    streamed_table: str,
    state_table: str,
) -> None:
    table, store = streamed_table, state_table
    collections(ddb_client, table, 8)
    follower = StreamFollower(MarkerIndex(ddb_client, table), state_table=store, poll=0.05)
    follower.run(until_caught_up=True)
    time.sleep(MARGIN)
    MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
    time.sleep(MARGIN)
    assert outcome(ddb_client, table, store) == "exact"
    # The index deleted and made again; meanwhile a collection made and one emptied.
    deleted(ddb_client, table)
    ddb_client.put_item(TableName=table, Item=item("while", 1))
    ddb_client.delete_item(TableName=table, Key=item("k01", 1))
    MarkerIndex(ddb_client, table).create()
    assert outcome(ddb_client, table, store) == "exact"  # the records since, re-checked
    follower.run(until_caught_up=True)
    time.sleep(MARGIN)
    assert outcome(ddb_client, table, store) == "exact"
    # The table deleted and made again under its name, with the old record left.
    ddb_client.delete_table(TableName=table)
    ddb_client.get_waiter("table_not_exists").wait(TableName=table)
    ddb_table_factory(("pk", "S"), ("sk", "N"), name=table)
    MarkerIndex(ddb_client, table).create()
    enable_stream(ddb_client, table)
    for name in ("x", "y", "k02"):
        ddb_client.put_item(TableName=table, Item=item(name, 1))
    said = outcome(ddb_client, table, store)
    assert said.startswith("declined") and "another stream" in said, said
    follower.run(until_caught_up=True)  # the follower on the new table's stream
    time.sleep(MARGIN)
    said = outcome(ddb_client, table, store)
    assert said.startswith("declined") and "another stream" in said, said
    MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
    time.sleep(MARGIN)
    assert outcome(ddb_client, table, store) == "exact"


def test_the_index_made_anew_keyed_on_another_attribute(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """The old markers (``ddbkeys_pk``) stay in the table, out of the new index (``other``).
    A maintainer of the new index refuses, as the record's backfill knew markers
    by ``ddbkeys_pk``: it would keep a second set."""
    table, store = streamed_table, state_table
    collections(ddb_client, table, 6)
    follower = StreamFollower(MarkerIndex(ddb_client, table), state_table=store, poll=0.05)
    follower.run(until_caught_up=True)
    time.sleep(MARGIN)
    MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
    time.sleep(MARGIN)
    assert outcome(ddb_client, table, store) == "exact"
    deleted(ddb_client, table)
    MarkerIndex(ddb_client, table, marker_attribute="other").create()
    ddb_client.put_item(TableName=table, Item=item("new", 1))
    ddb_client.delete_item(TableName=table, Key=item("k00", 1))
    anew = StreamFollower(MarkerIndex(ddb_client, table), state_table=store)
    with pytest.raises(ConfigurationError, match="markers of attribute 'ddbkeys_pk' at sort"):
        anew.run(until_caught_up=True)  # (keyed on the new index's attribute: 'other')
    time.sleep(MARGIN)
    with pytest.raises(ConfigurationError, match="keyed on 'other', not on the marker attr"):
        outcome(ddb_client, table, store)  # the default attribute: refused, nothing listed
    # Told `other`, auto declines, and lists knowing the markers as the record does (the old
    # ones, the only ones in the table): k00, which holds nothing but its old marker, is not
    # one of your keys (before, known by `other`, it was listed).
    listing = distinct_partition_keys(
        ddb_client, table, state_table=store, replay_margin=MARGIN, marker_attribute="other"
    )
    assert sorted(listing) == [f"k{n:02}" for n in range(1, 6)] + ["new"]
    said = listing.method_reason
    assert "another attribute or sort key" in said and "as the index's record does" in said
    with pytest.raises(IndexUnprovenError, match="another attribute or sort key"):
        distinct_partition_keys(
            ddb_client,
            table,
            "index",
            state_table=store,
            replay_margin=MARGIN,
            marker_attribute="other",
        )


def test_the_view_type_changed_under_a_running_follower(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    streamed_table: str,
    state_table: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table, store = streamed_table, state_table
    # The follower looks for a new stream every DISCOVER seconds (10): 1 here, to keep it short.
    monkeypatch.setattr("ddbkeys.partition_keys._streams.follow.DISCOVER", 1.0)
    collections(ddb_client, table, 8)
    with followers(ddb_client, table, store) as ((follower, _, _),):
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
        assert outcome(ddb_client, table, store) == "exact"
        ddb_client.update_table(TableName=table, StreamSpecification={"StreamEnabled": False})
        # Written while the stream is off: in no log.
        ddb_client.put_item(TableName=table, Item=item("unseen", 1))
        ddb_client.delete_item(TableName=table, Key=item("k00", 1))
        said = outcome(ddb_client, table, store)
        assert said.startswith("declined") and "stream is off" in said, said
        ddb_client.update_table(
            TableName=table,
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )
        ddb_client.put_item(TableName=table, Item=item("after", 1))
        said = outcome(ddb_client, table, store)
        assert said.startswith("declined") and "another stream" in said, said
        run = cli_listing(ddb_endpoint_url, table, store)
        assert run.exit_code != 0 and "another stream" in run.output, run.output
        on_new_stream(ddb_client, table, store)
        MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
        caught_up(follower)
        assert outcome(ddb_client, table, store) == "exact"
        run = cli_listing(ddb_endpoint_url, table, store)
        assert run.exit_code == 0, run.output
        assert json.loads(run.stdout)["keys"] == non_empty(ddb_client, table)
