"""Where a sequence per item collection starts and what it keeps, in both drivers, against
DynamoDB Local: numbers start at 1 whatever another tool wrote at 0 or below, and a
``never_reuse`` counter never holds a value it would later refuse; a long-lived sequence keeps
a bounded state per collection, and numbers stay exact when it forgets one."""

from __future__ import annotations

import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING

import pytest

from ddbkeys.ids import CounterStateError
from ddbkeys.partition_keys import MarkerIndex
from ddbkeys.testing import History, HistoryReport
from tests.support.drivers import Driver

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration


def sort_keys(client: DynamoDBClient, table: str) -> list[int]:
    return sorted(int(i["sk"]["N"]) for i in client.scan(TableName=table)["Items"])


@pytest.mark.parametrize("never_reuse", [False, True])
@pytest.mark.parametrize("foreign", [[-3], [0], [-7, -3, 0]])
def test_numbers_start_at_1_above_sort_keys_of_0_or_below(
    driver: Driver,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    never_reuse: bool,
    foreign: list[int],
) -> None:
    """Items another tool numbered 0 or below are left alone: the sequence gives 1, 2, 3...
    (not -2, -1, 0...), and with never_reuse its counter goes 1, 2, 3 too (never -2, which
    it would then refuse, blocking every later put). With never_reuse, an item of yours at 0
    (where its counter goes) is refused, never made the counter: typed a counter, it would
    leave the listings once the numbered items were gone (a helper's finding)."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for n in foreign:
        item = {"pk": {"S": "p"}, "sk": {"N": str(n)}, "from": {"S": "another tool"}}
        ddb_client.put_item(TableName=table, Item=item)
    sequence = driver.make(
        "CollectionSequence", ddb_client, table, never_reuse=never_reuse, group_commit=False
    )
    if never_reuse and 0 in foreign:
        with pytest.raises(CounterStateError, match="is an item of yours, not a counter") as e:
            sequence.put("p")
        # (what to do, as a collection sequence can: helper-73 F3 read "Name a counter whose
        # item no other item uses", which it cannot)
        assert str(e.value).endswith(
            "keeps its counter at number 0 of the collection: move that item to another sort "
            "key, or use the sequence without never_reuse=True."
        ), e.value
        assert sort_keys(ddb_client, table) == sorted(foreign)
        zero = ddb_client.get_item(TableName=table, Key={"pk": {"S": "p"}, "sk": {"N": "0"}})
        assert zero["Item"]["from"] == {"S": "another tool"} and "last_number" not in zero["Item"]
        return
    assert sequence.current("p") == 0
    assert [sequence.put("p") for _ in range(3)] == [1, 2, 3]
    assert sequence.current("p") == 3
    # A new instance (nothing remembered) reads the collection or its counter afresh.
    again = driver.make("CollectionSequence", ddb_client, table, never_reuse=never_reuse)
    assert again.put("p") == 4 and again.current("p") == 4
    expected = sorted({*foreign, 1, 2, 3, 4} | ({0} if never_reuse else set()))
    assert sort_keys(ddb_client, table) == expected
    if never_reuse:
        counter = ddb_client.get_item(
            TableName=table, Key={"pk": {"S": "p"}, "sk": {"N": "0"}}, ConsistentRead=True
        )["Item"]
        assert counter["last_number"] == {"N": "4"}


def test_a_batch_above_a_negative_sort_key_starts_at_1(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Concurrent puts combined into one transaction number from 1 as well."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "p"}, "sk": {"N": "-3"}})
    sequence = driver.make("CollectionSequence", ddb_client, table, never_reuse=True)
    with ThreadPoolExecutor(16) as pool:
        numbers = list(pool.map(lambda _: sequence.put("p"), range(16)))
    assert sorted(numbers) == list(range(1, 17))
    assert sequence.current("p") == 16


# --- what a long-lived sequence keeps per collection -------------------------------------------


@pytest.mark.parametrize("never_reuse", [False, True])
def test_many_collections_and_concurrent_writers_keep_bounded_state_and_exact_numbers(
    driver: Driver,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    never_reuse: bool,
    histories: Callable[..., HistoryReport],
) -> None:
    """Two sequences (two processes, say) remembering 4 collections each, 16 threads (or tasks)
    writing to 30 collections in a shuffled order: numbers are forgotten and read again all
    the time, while the other writer moves on. Every collection still holds 1..n exactly, every
    number went to one caller (and in real-time order: the calls' history is checked), and each
    sequence keeps at most 4 numbers and no group."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    writers = [
        driver.make("CollectionSequence", ddb_client, table, never_reuse=never_reuse, remembered=4)
        for _ in range(2)
    ]
    collections = [f"c{i:02}" for i in range(30)]
    jobs = [(w, c) for c in collections for w in range(2) for _ in range(3)]
    random.Random(7).shuffle(jobs)
    history = History()

    def put(job: tuple[int, str]) -> tuple[str, int]:
        writer, collection = job
        return collection, history.call(partial(writers[writer].put, collection), collection)

    with ThreadPoolExecutor(16) as pool:
        numbers = list(pool.map(put, jobs))
    assert histories("CollectionSequence", history.operations).scopes == 30
    for collection in collections:
        given = sorted(n for c, n in numbers if c == collection)
        assert given == list(range(1, 7)), collection
        report = driver.call("audit_collection", ddb_client, table, collection)
        assert (report.ok, report.count, report.last) == (True, 6, 6)
    for writer in writers:
        assert len(writer._highest) == 4 and len(writer._groups) == 0


def test_a_forgotten_number_costs_a_read_never_a_wrong_one(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Remembering one collection: after a put to b, a's number is forgotten, so the next put
    to a reads the collection first, and sees what another writer added meanwhile (no lost
    race); while remembered, the same put would try a taken number first."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    sequence = driver.make("CollectionSequence", ddb_client, table, remembered=1)
    assert (sequence.put("a"), sequence.put("b")) == (1, 1)
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"N": "2"}})
    before = sequence.usage.snapshot()
    assert sequence.put("a") == 3
    after = sequence.usage.snapshot()
    assert after["conflicts"] == before["conflicts"]  # read first: no lost race
    assert after["read_units"] > before["read_units"]
    ddb_client.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"N": "4"}})
    assert sequence.put("a") == 5  # remembered (3): 4 turns out taken, then 5
    assert sequence.usage.snapshot()["conflicts"] == after["conflicts"] + 1


# --- a deleted highest number (moved from test_ids_trust.py) -------------------------------------


def test_a_deleted_highest_number_is_reused_unless_never_reuse(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    plain = driver.make("CollectionSequence", ddb_client, table)
    kept = driver.make("CollectionSequence", ddb_client, table, never_reuse=True)
    for sequence, collection in ((plain, "reuses"), (kept, "keeps")):
        assert [sequence.put(collection, {"n": i}) for i in range(5)] == [1, 2, 3, 4, 5]
        ddb_client.delete_item(TableName=table, Key={"pk": {"S": collection}, "sk": {"N": "5"}})
    # The running instance remembers 5 and goes on without a read: 5 is left a gap (documented).
    assert plain.put("warm") == 1
    ddb_client.delete_item(TableName=table, Key={"pk": {"S": "warm"}, "sk": {"N": "1"}})
    assert plain.put("warm") == 2
    assert driver.call("audit_collection", ddb_client, table, "warm").gaps == [(1, 1)]
    # A new process (a new object) knows nothing remembered.
    assert (
        driver.make("CollectionSequence", ddb_client, table).put("reuses") == 5
    )  # documented: reused
    fresh = driver.make("CollectionSequence", ddb_client, table, never_reuse=True)
    assert fresh.put("keeps") == 6
    assert fresh.put("keeps") == 7
    counter = ddb_client.get_item(TableName=table, Key={"pk": {"S": "keeps"}, "sk": {"N": "0"}})
    assert counter["Item"]["last_number"] == {"N": "7"}
    # The audit counts neither the counter item nor a marker as an id.
    marker = MarkerIndex(ddb_client, table)
    marker.create()  # (a marker is written only where the marker index is)
    marker.mark("keeps")
    report = driver.call("audit_collection", ddb_client, table, "keeps")
    assert (report.count, report.first, report.last, report.gaps) == (6, 1, 7, [(5, 5)])
    assert driver.call("audit_collection", ddb_client, table, "reuses").ok
