"""The follower under the faults its users meet, against DynamoDB Local: many writers and the
follower itself going through the fault proxy (lost responses, throttles, 5xx); the follower
command killed with SIGKILL at random moments and started again from its checkpoint, and
stopped with SIGTERM and SIGINT; a shard that splits and an iterator that expires (the two
cases DynamoDB Local cannot produce, played by botocore's Stubber on the Streams client only:
the table, the markers and the state table stay real). At the end of each: markers exactly on
the non-empty collections, `index verify` healthy, `--method index` exact."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from botocore.stub import ANY, Stubber

from ddbkeys._connect import make_client
from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._streams.follower import StreamFollower
from ddbkeys.partition_keys._streams.streams import streams_client_for
from ddbkeys.testing import FaultProxy, Faults
from tests.integration.test_marker_lifecycle import MARGIN, item, marked, non_empty
from tests.support.progress import PROGRESS_CEILING

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.partition_keys._proof.evidence import Evidence

pytestmark = pytest.mark.integration


def write_randomly(client: Any, table: str, seed: int, count: int, keys: int = 10) -> None:
    """Puts and deletes on a few collections, so that they fill and empty again and again."""
    rng = random.Random(seed)
    for _ in range(count):
        pk, sk = f"w{rng.randrange(keys)}", rng.randrange(3)
        if rng.random() < 0.5:
            client.put_item(TableName=table, Item=item(pk, sk))
        else:
            client.delete_item(TableName=table, Key=item(pk, sk))


def settle(client: DynamoDBClient, table: str, seconds: float = 90) -> None:
    """Wait until the markers are exactly on the non-empty collections."""
    deadline = time.monotonic() + seconds
    while marked(client, table) != non_empty(client, table):
        assert time.monotonic() < deadline, (marked(client, table), non_empty(client, table))
        time.sleep(0.2)


def assert_exact(client: DynamoDBClient, table: str, store: str) -> None:
    assert marked(client, table) == non_empty(client, table)
    assert MarkerIndex(client, table).verify().healthy
    time.sleep(MARGIN)  # what the follower applied last is in the index (and held back)
    listing = distinct_partition_keys(
        client, table, "index", state_table=store, replay_margin=MARGIN
    )
    assert listing.index_trusted is True, listing.method_reason
    assert sorted(listing) == non_empty(client, table)


def wait_for_record(
    client: DynamoDBClient,
    table: str,
    store: str,
    caught_up_after: float | None = None,
    *,
    any_shard: bool = False,
) -> None:
    """Wait until a follower has recorded its start (or, given a time, saved a mark since in
    every shard it named: it applied every record up to then)."""
    deadline = time.monotonic() + 60
    while True:
        saved = StateStore(client, store).load(table, "ddbkeys-partition-keys")
        if (
            saved is not None
            and saved.shards
            and (
                caught_up_after is None
                or all(m.marks and m.marks[-1][1] > caught_up_after for m in saved.shards.values())
            )
        ):
            return
        assert time.monotonic() < deadline, "the follower never recorded its start"
        time.sleep(0.1)


def test_writers_and_the_follower_through_the_fault_proxy(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str, fault_proxy: FaultProxy
) -> None:
    table, store = streamed_table, state_table
    for n in range(8):
        ddb_client.put_item(TableName=table, Item=item(f"old{n}", 1))
    fault_proxy.set_faults(Faults(lose_response=0.08, throttle=0.08, error_500=0.04, seed=11))
    # The follower's table client and its Streams client both go through the proxy.
    proxied = make_client(endpoint_url=fault_proxy.endpoint_url, max_attempts=1)
    index = MarkerIndex(proxied, table)
    follower = StreamFollower(index, state_table=store, poll=0.05)
    stop = threading.Event()
    failure: list[BaseException] = []

    def follow() -> None:
        try:
            follower.run(stop)
        except BaseException as exc:  # pragma: no cover - shown by the assertion below
            failure.append(exc)

    runner = threading.Thread(target=follow)
    runner.start()
    try:
        wait_for_record(ddb_client, table, store)
        time.sleep(MARGIN)
        # A backfill through the same proxy, begun after the follower's start.
        # (A marker whose PutItem response was lost is found there on the retry.)
        backfill = MarkerIndex(proxied, table).backfill(state_table=store, replay_margin=MARGIN)
        assert backfill.written + backfill.present == 8 and not backfill.clashes

        def writer(seed: int) -> None:
            client = make_client(endpoint_url=fault_proxy.endpoint_url, max_attempts=10)
            write_randomly(client, table, seed, 50)

        writers = [threading.Thread(target=writer, args=(seed,)) for seed in range(6)]
        for w in writers:
            w.start()
        for w in writers:
            w.join()
        settle(ddb_client, table)
    finally:
        stop.set()
        runner.join(timeout=60)
    assert not failure, failure
    assert not runner.is_alive()
    counts = fault_proxy.counts
    assert min(counts["lose_response"], counts["throttle"], counts["error_500"]) > 0, counts
    streamed = [c for c in fault_proxy.calls if c.stream]
    assert {c.operation for c in streamed} >= {"DescribeStream", "GetRecords"}
    assert follower.report.marked > 0 and follower.report.unmarked > 0, follower.report
    fault_proxy.set_faults(Faults())
    assert_exact(ddb_client, table, store)


def follow_command(endpoint: str, table: str, store: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ddbkeys",
        "partition-keys",
        "index",
        "follow",
        "-t",
        table,
        "--state-table",
        store,
        "--poll",
        "0.05",
        "--endpoint-url",
        endpoint,
    ]


def start(command: list[str], tmp_path: Path, n: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(tmp_path / f"follow-{n}.err", "wb") as err:
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env)


def saved_since(
    client: DynamoDBClient,
    table: str,
    store: str,
    before: Evidence | None,
    follower: subprocess.Popen[bytes],
    done: threading.Event,
) -> None:
    """Wait until ``follower`` has saved a position or mark beyond ``before`` (the state a
    killed predecessor left, or the state before the writes began): a sign it got somewhere,
    where a fixed time could pass on a busy machine before it even started reading. Once the
    writers are ``done`` there may be nothing left to save: then it does not wait."""
    deadline = time.monotonic() + PROGRESS_CEILING
    while not done.is_set():
        saved = StateStore(client, store).load(table, "ddbkeys-partition-keys")
        if saved is not None and before is not None and saved.shards != before.shards:
            return
        assert follower.poll() is None, "the follower ended"
        assert time.monotonic() < deadline, (
            f"the follower saved nothing new in {PROGRESS_CEILING:.0f} s"
        )
        time.sleep(0.05)


def test_the_follower_killed_at_random_moments_goes_on_from_its_checkpoint(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    streamed_table: str,
    state_table: str,
    tmp_path: Path,
) -> None:
    table, store = streamed_table, state_table
    command = follow_command(ddb_endpoint_url, table, store)
    follower = start(command, tmp_path, 0)
    wait_for_record(ddb_client, table, store)
    time.sleep(MARGIN)
    MarkerIndex(ddb_client, table).backfill(state_table=store, replay_margin=MARGIN)
    done = threading.Event()

    def writers() -> None:
        threads = [
            threading.Thread(target=write_randomly, args=(ddb_client, table, seed, 80))
            for seed in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done.set()

    background = threading.Thread(target=writers)
    background.start()
    rng = random.Random(5)
    kills = 0
    before: Evidence | None = None
    while not done.is_set() or kills < 4:
        if kills:  # a restarted one: killed once it got somewhere, while there is work
            saved_since(ddb_client, table, store, before, follower, done)
        time.sleep(rng.uniform(0.2, 1.2))
        follower.send_signal(signal.SIGKILL)
        assert follower.wait(timeout=30) == -signal.SIGKILL
        kills += 1
        saved = StateStore(ddb_client, store).load(table, "ddbkeys-partition-keys")
        assert saved is not None and saved.shards
        before = saved  # what the killed one left: the next must get past it
        follower = start(command, tmp_path, kills)
    background.join()
    # The last one catches up with every write above, from the checkpoint its killed
    # predecessors left, and stops cleanly on SIGTERM.
    try:
        settle(ddb_client, table)
        # A last write, once settled: its marker shows the follower applied everything before
        # it, and its mark (saved after it) says so in the state table.
        restarted = time.time()
        ddb_client.put_item(TableName=table, Item=item("last", 1))
        settle(ddb_client, table)
        wait_for_record(ddb_client, table, store, caught_up_after=restarted, any_shard=True)
    finally:
        follower.send_signal(signal.SIGTERM)
        code = follower.wait(timeout=30)
    assert code == 0, (tmp_path / f"follow-{kills}.err").read_text()
    assert kills >= 4
    assert_exact(ddb_client, table, store)
    # Nothing it kept was a position from another stream, and none of the starts began over:
    # the time coverage began is the first run's, so the backfill still counts.
    saved = StateStore(ddb_client, store).load(table, "ddbkeys-partition-keys")
    assert saved is not None and saved.backfill is not None and saved.backfill.finished
    began = [m.first_saved for m in saved.shards.values()]
    assert began and all(b is not None and b < saved.backfill.started for b in began)


@pytest.mark.parametrize("stop_with", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_the_follower_stops_cleanly_on_sigterm_sighup_and_ctrl_c(
    ddb_client: DynamoDBClient,
    ddb_endpoint_url: str,
    streamed_table: str,
    state_table: str,
    tmp_path: Path,
    stop_with: signal.Signals,
) -> None:
    table, store = streamed_table, state_table
    follower = start(follow_command(ddb_endpoint_url, table, store), tmp_path, 0)
    wait_for_record(ddb_client, table, store)
    ddb_client.put_item(TableName=table, Item=item("a", 1))
    settle(ddb_client, table)
    begun = time.monotonic()
    follower.send_signal(stop_with)
    assert follower.wait(timeout=10) == 0
    assert time.monotonic() - begun < 5
    err = (tmp_path / "follow-0.err").read_text()
    assert "Traceback" not in err
    assert f"Stopped by {stop_with.name}; the next start goes on from the checkpoint" in err


# --- what DynamoDB Local cannot do: split a shard, expire an iterator ---------------------------


PARENT = "shardId-00000001700000000000-0000parent"
CHILD = "shardId-00000001700000900000-00000child"


def seq(n: int) -> str:
    """A sequence number as the service writes them (21 digits at least)."""
    return f"{n:021d}"


def shard(shard_id: str, parent: str | None = None, closed: bool = False) -> dict[str, Any]:
    numbers: dict[str, str] = {"StartingSequenceNumber": seq(100)}
    if closed:
        numbers["EndingSequenceNumber"] = seq(900)
    found: dict[str, Any] = {"ShardId": shard_id, "SequenceNumberRange": numbers}
    if parent:
        found["ParentShardId"] = parent
    return found


def record(pk: str, sequence: str) -> dict[str, Any]:
    return {
        "eventName": "INSERT",
        "dynamodb": {"Keys": {"pk": {"S": pk}, "sk": {"N": "1"}}, "SequenceNumber": sequence},
    }


def describe(stubber: Stubber, arn: str, shards: list[dict[str, Any]]) -> None:
    stubber.add_response(
        "describe_stream",
        {
            "StreamDescription": {
                "StreamArn": arn,
                "StreamStatus": "ENABLED",
                "Shards": shards,
            }
        },
        {"StreamArn": arn},
    )


def iterator(
    stubber: Stubber, arn: str, shard_id: str, kind: str, value: str, **extra: Any
) -> None:
    stubber.add_response(
        "get_shard_iterator",
        {"ShardIterator": value},
        {"StreamArn": arn, "ShardId": shard_id, "ShardIteratorType": kind, **extra},
    )


def records(stubber: Stubber, it: str, found: list[dict[str, Any]], following: str | None) -> None:
    answer: dict[str, Any] = {"Records": found}
    if following:
        answer["NextShardIterator"] = following
    stubber.add_response("get_records", answer, {"ShardIterator": it, "Limit": ANY})


def test_a_split_shard_is_read_parent_first_and_an_expired_iterator_is_taken_again(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    """A real table and state table; the stream's answers scripted, because DynamoDB Local
    neither splits shards nor lets an iterator live long enough (15 minutes) to expire."""
    table, store = streamed_table, state_table
    arn = str(ddb_client.describe_table(TableName=table)["Table"]["LatestStreamArn"])
    # The collection the child's record names, and one the parent's record names but that
    # was emptied before the follower read it.
    ddb_client.put_item(TableName=table, Item=item("kept", 1))
    streams = streams_client_for(ddb_client)
    stubber = Stubber(streams)
    parent, child = shard(PARENT, closed=True), shard(CHILD, parent=PARENT)
    # First run: the parent is still open; the follower starts at the end of it (LATEST).
    describe(stubber, arn, [shard(PARENT)])
    iterator(stubber, arn, PARENT, "LATEST", "it-p0")
    records(stubber, "it-p0", [record("gone", seq(200))], "it-p1")
    records(stubber, "it-p1", [], "it-p2")
    with stubber:
        follower = StreamFollower(
            MarkerIndex(ddb_client, table), streams=streams, state_table=store
        )
        follower.run(until_caught_up=True)
    saved = StateStore(ddb_client, store).load(table, "ddbkeys-partition-keys")
    assert saved is not None and saved.shards[PARENT].marks[-1][0] == seq(200)
    # Second run: the parent split into a child. The parent's saved iterator position is
    # taken again; its first read says the iterator expired; it is taken again from the
    # saved position, read to its end, and only then is the child read.
    stubber = Stubber(streams)
    describe(stubber, arn, [parent, child])
    iterator(stubber, arn, PARENT, "AFTER_SEQUENCE_NUMBER", "it-p3", SequenceNumber=seq(200))
    stubber.add_client_error("get_records", "ExpiredIteratorException", "Iterator expired", 400)
    iterator(stubber, arn, PARENT, "AFTER_SEQUENCE_NUMBER", "it-p4", SequenceNumber=seq(200))
    records(stubber, "it-p4", [record("gone", seq(300))], None)  # the parent's end
    describe(stubber, arn, [parent, child])  # a finished shard: its children are looked for
    iterator(stubber, arn, CHILD, "TRIM_HORIZON", "it-c0")
    records(stubber, "it-c0", [record("kept", seq(1000))], "it-c1")
    records(stubber, "it-c1", [], "it-c2")
    with stubber:
        again = StreamFollower(MarkerIndex(ddb_client, table), streams=streams, state_table=store)
        again.run(until_caught_up=True)
        stubber.assert_no_pending_responses()
    assert marked(ddb_client, table) == ["kept"] == non_empty(ddb_client, table)
    saved = StateStore(ddb_client, store).load(table, "ddbkeys-partition-keys")
    assert saved is not None
    assert saved.shards[PARENT].marks[-1][0] == seq(300)  # read to its end
    assert saved.shards[CHILD].marks[-1][0] == seq(1000)
    assert saved.shards[CHILD].since == "start"
