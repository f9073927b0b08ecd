"""The backfill's read mode (issue 33, point 3) against DynamoDB Local: one read of the table and
its index, the markers that calls for, then the stream over the backfill's own window, each
collection it names reconciled. Under writers, and with changes made between its read and its
writes, the markers end exact and a listing proves the index; its two broken forms (the window
read at the end of the table's read; a re-check that only reads) leave a wrong marker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._capacity import Usage
from ddbkeys._drivers.sync import SyncDriver
from ddbkeys.aio._index import MarkerIndex as AsyncMarkerIndex
from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys
from ddbkeys.partition_keys._index.backfill import backfill_flow
from ddbkeys.partition_keys._index.backfill_read import Controls
from ddbkeys.partition_keys._index.backfill_wait import READING, TIP, Readiness
from ddbkeys.partition_keys._index.state import StateStore
from ddbkeys.partition_keys._streams.streams import SplitClient, streams_client_for
from tests.integration.test_index_async import run
from tests.integration.test_index_proof import caught_up, following
from tests.integration.test_marker_follow_faults import write_randomly
from tests.integration.test_marker_lifecycle import MARGIN, item, marked, non_empty

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def fill(client: DynamoDBClient, table: str, keys: int) -> None:
    for n in range(keys):
        for sk in range(1 + n % 3):
            client.put_item(TableName=table, Item=item(f"k{n:03d}", sk))


def test_a_read_mode_backfill_under_writers_leaves_the_index_proven_and_exact(
    ddb_client: DynamoDBClient, streamed_table: str, state_table: str
) -> None:
    table, store = streamed_table, state_table
    index = MarkerIndex(ddb_client, table)
    fill(ddb_client, table, 120)
    index.mark("orphan")  # a marker on a collection that holds nothing else
    index.mark("k000")
    with following(ddb_client, table, store) as follower:
        writers = [
            threading.Thread(target=write_randomly, args=(ddb_client, table, seed, 150, 30))
            for seed in range(3)
        ]
        for w in writers:
            w.start()
        told: list[Readiness] = []
        report = index.backfill(
            state_table=store, mode="read", replay_margin=MARGIN, on_wait=told.append
        )
        for w in writers:
            w.join()
        caught_up(follower)
        assert report.mode == "read" and report.uncounted is None
        assert report.removed >= 1 and report.written >= 119
        # Its wait for the stream's tip, after the writes, was told (a CLI says it).
        tips = [w.left for w in told if w.state == TIP]
        assert tips and 0 < max(tips) <= MARGIN and told[-1].state == TIP
        record = StateStore(ddb_client, store).load(table, index.name)
        assert record is not None and record.backfill is not None
        assert record.backfill.uncounted is None and record.backfill.finished is not None
        listed = distinct_partition_keys(
            ddb_client, table, "index", state_table=store, replay_margin=MARGIN
        )
        assert listed.index_trusted is True, listed.method_reason
        assert sorted(listed) == non_empty(ddb_client, table)
    assert marked(ddb_client, table) == non_empty(ddb_client, table)


def test_a_stream_younger_than_the_window_is_said_after_the_writes_not_a_margin_later(
    ddb_client: DynamoDBClient, streamed_table: str
) -> None:
    """The natural order on a new table: the stream just turned on, a read-mode backfill with
    the default 60 s margin. Its window (from 60 s before it began) is in no log: it says so as
    soon as its markers are written, where it waited the 60 s before saying it."""
    table = streamed_table
    fill(ddb_client, table, 30)
    index = MarkerIndex(ddb_client, table)
    told: list[Readiness] = []
    began = time.monotonic()
    report = index.backfill(record=False, mode="read", on_wait=told.append)
    took = time.monotonic() - began
    assert report.uncounted is not None
    assert "run `index backfill` again once the stream is 60 s old" in report.uncounted
    assert report.written == 30  # the markers are right all the same
    assert not [w for w in told if w.state == TIP]
    assert took < 30, f"{took:.0f} s: it waited for a window it could not read"
    # Its reads were told as they began (a CLI says them: a long read is not a silence), and
    # then how many markers it would write.
    reads = [w for w in told if w.state == READING]
    assert (reads[0].reading, reads[0].keys) == ("the table", 0)
    assert ("the marker index", 0) in [(w.reading, w.keys) for w in reads]
    assert all(w.keys <= 30 for w in reads) and reads[-1].to_mark == 30
    assert reads[-1].advice() == "the keys are read: 30 marker(s) to write"


def run_backfill(
    client: DynamoDBClient,
    table: str,
    progress: Callable[[int], None],
    controls: Controls | None = None,
) -> Any:
    """A read-mode backfill, not recorded, with ``controls`` (the broken forms)."""
    index = MarkerIndex(client, table)
    flow = backfill_flow(index.core, progress, None, "read", MARGIN, controls)
    both = SplitClient(client, streams_client_for(client, table))
    return SyncDriver(both, Usage()).run(flow)


def changed_after_the_read(client: DynamoDBClient, table: str) -> Callable[[int], None]:
    """A progress callback that, at the backfill's first marker write (after its read),
    empties k119 (which the read saw with data, and the backfill marks last) and writes a
    collection the read never saw."""
    done = threading.Event()

    def progress(written: int) -> None:
        if done.is_set():
            return
        done.set()
        for sk in range(1 + 119 % 3):
            client.delete_item(TableName=table, Key=item("k119", sk))
        client.put_item(TableName=table, Item=item("late", 1))

    return progress


@pytest.mark.parametrize(
    "controls", [None, Controls(window_at_read=True), Controls(read_only=True)]
)
def test_changes_between_the_read_and_the_writes_are_reconciled_by_the_window(
    ddb_client: DynamoDBClient, streamed_table: str, controls: Controls | None
) -> None:
    table = streamed_table
    fill(ddb_client, table, 120)
    time.sleep(MARGIN)  # the stream is older than the window's start
    report = run_backfill(ddb_client, table, changed_after_the_read(ddb_client, table), controls)
    assert report.uncounted is None, report.uncounted
    truth = non_empty(ddb_client, table)
    assert "k119" not in truth and "late" in truth
    if controls is None:
        # No maintainer runs: the window alone put right what the read saw stale.
        assert marked(ddb_client, table) == truth
        assert report.rechecked >= 2
    else:  # the broken forms leave k119's marker with nothing else (and 'late' unmarked)
        assert marked(ddb_client, table) != truth


def test_the_asyncio_backfill_reads_the_same_way(
    ddb_client: DynamoDBClient, streamed_table: str
) -> None:
    table = streamed_table
    fill(ddb_client, table, 40)
    time.sleep(MARGIN)  # the stream is older than the window's start

    async def body(client: Any) -> Any:
        return await AsyncMarkerIndex(client, table).backfill(
            record=False, mode="read", replay_margin=MARGIN
        )

    report = run(ddb_client, body)
    assert (report.mode, report.written, report.uncounted) == ("read", 40, None)
    assert marked(ddb_client, table) == non_empty(ddb_client, table)
