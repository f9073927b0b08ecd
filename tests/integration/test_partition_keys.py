"""Every listing method returns exactly the set of partition keys, on awkward tables too, and
through throttling and 5xx; resume, segments, budget and accounting."""

from __future__ import annotations

import re
import threading
import time
from decimal import Decimal
from itertools import islice
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._connect import make_client
from ddbkeys._demo_keys import load_items
from ddbkeys._errors import ConfigurationError, KeySchemaError, TableNotFoundError
from ddbkeys.partition_keys import (
    MAX_SORT_KEY,
    Listing,
    MarkerIndex,
    distinct_partition_keys,
    estimate_listing,
)
from ddbkeys.testing import Fault, FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory
from tests.conftest import proxied_client
from tests.support.drivers import Driver

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

#: For the tests of the sync driver's own mechanics (reader threads, botocore event hooks).
SYNC = Driver("sync")
METHODS = ["auto", "scan", "skip", "skip-pages", "index"]

KEYS: dict[str, list[Any]] = {
    "S": ["a", "b", "ü-multi-byte", "𝄞 supplementary", "日本", "z" * 300, "0"],
    "N": [0, 1, -5, Decimal("3.25"), 10**30, Decimal("-1E-100"), 42],
    "B": [b"\x00", b"\xff" * 20, b"abc", b"\x80\x81", b"\xff"],
}
SORT_VALUES: dict[str, list[dict[str, Any]]] = {
    "S": [{"S": "a"}, {"S": "m"}, MAX_SORT_KEY["S"]],
    "N": [{"N": "-1"}, {"N": "2"}, MAX_SORT_KEY["N"]],
    "B": [{"B": b"\x01"}, {"B": b"\x7f"}, MAX_SORT_KEY["B"]],
}


def typed(kind: str, value: Any) -> dict[str, Any]:
    return {kind: value if kind == "B" else str(value)}


def fill(
    client: DynamoDBClient,
    table: str,
    pk: tuple[str, str],
    sk: tuple[str, str] | None,
    keys: list[Any],
    per_key: int,
) -> None:
    for n, key in enumerate(keys):
        count = per_key if n % 2 == 0 else 1 + n % 3
        for i in range(count):
            item = {pk[0]: typed(pk[1], key), "payload": {"S": "x" * 50}}
            if sk is not None:
                values = SORT_VALUES[sk[1]]
                # Every collection holds the greatest sort key value of its type.
                item[sk[0]] = (
                    values[-1]
                    if i == 0
                    else (
                        values[i % 2]
                        if i < 3
                        else typed(sk[1], i)
                        if sk[1] != "B"
                        else {"B": bytes([1, i % 256, i // 256])}
                    )
                )
            client.put_item(TableName=table, Item=item)


def expected(kind: str) -> set[Any]:
    return {
        int(k) if isinstance(k, Decimal) and k == k.to_integral_value() else k for k in KEYS[kind]
    }


def listed(
    driver: Driver, client: DynamoDBClient, table: str, method: str, **kwargs: Any
) -> list[Any]:
    return list(driver.call("distinct_partition_keys", client, table, method, **kwargs))


def as_is(method: str) -> dict[str, Any]:
    """What these tests list the marker index with: as it is (they run no stream, so nothing
    proves it; the proof is tested in test_index_proof.py)."""
    return {"trust_index": True} if method == "index" else {}


def stop_after(listing: Listing, count: int) -> tuple[list[Any], str]:
    """Take the first ``count`` keys of a listing and stop: (those keys, the resume token)."""
    first = list(islice(listing, count))
    return first, listing.checkpoint()


def make_index(client: DynamoDBClient, table: str) -> None:
    index = MarkerIndex(client, table)
    index.create()
    index.backfill()


@pytest.mark.parametrize("pk_type", ["S", "N", "B"])
@pytest.mark.parametrize("sk_type", ["S", "N", "B"])
def test_every_method_every_key_type(
    driver: Driver,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    pk_type: str,
    sk_type: str,
) -> None:
    # Odd attribute names, defined in an unusual order, and a GSI besides.
    pk, sk = ("Tenant Id", pk_type), ("#sort", sk_type)
    table = ddb_table_factory(
        pk,
        sk,
        attributes=[("gsi_key", "S"), sk, pk],
        global_secondary_indexes=[
            {
                "IndexName": "other",
                "KeySchema": [{"AttributeName": "gsi_key", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    fill(ddb_client, table, pk, sk, KEYS[pk_type], per_key=7)
    make_index(ddb_client, table)
    for method in METHODS:
        keys = listed(driver, ddb_client, table, method, **as_is(method))
        assert len(keys) == len(set(keys)), f"{method} repeated a key"
        assert set(keys) == expected(pk_type), method


def test_table_without_sort_key(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"))
    fill(ddb_client, table, ("pk", "S"), None, KEYS["S"], per_key=1)
    for method in ("auto", "scan"):
        assert sorted(listed(driver, ddb_client, table, method)) == sorted(KEYS["S"])
    listing = driver.call("distinct_partition_keys", ddb_client, table)
    assert listing.method_name == "scan"
    with pytest.raises(KeySchemaError, match="has no sort key: every item is its own collection"):
        driver.call("distinct_partition_keys", ddb_client, table, "skip")


def test_empty_table(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    make_index(ddb_client, table)
    for method in METHODS:
        assert listed(driver, ddb_client, table, method, **as_is(method)) == []
        assert listed(driver, ddb_client, table, method, segments=3, **as_is(method)) == []


def test_skip_reads_one_item_per_key(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for key in range(20):
        for i in range(30):
            ddb_client.put_item(
                TableName=table,
                Item={"pk": {"S": f"k{key:02}"}, "sk": {"N": str(i)}, "pad": {"S": "x" * 400}},
            )
    scan = driver.call("distinct_partition_keys", ddb_client, table, "scan")
    skip = driver.call("distinct_partition_keys", ddb_client, table, "skip")
    assert sorted(scan) == sorted(skip) == [f"k{k:02}" for k in range(20)]
    assert scan.usage.items == 600
    assert skip.usage.items <= 20 + 1
    assert skip.usage.read_units < scan.usage.read_units
    auto = driver.call("distinct_partition_keys", ddb_client, table)
    assert len(list(auto)) == 20
    assert auto.usage.read_units <= 1.1 * skip.usage.read_units  # the target of issue 4


def test_a_second_reader_joins_where_skipping_sends_a_request_a_key(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """600 collections of two 4 KB items (5 MB: up to one reader every 2 MB): skipping sends a
    request a key, where a scan reads 5 pages. auto starts with one reader; once the first
    segment shows the rate, a second joins (sync threads, asyncio tasks): each key once, and
    about skipping's read units."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    keys = [f"w{k:04}" for k in range(600)]
    items = [{"pk": {"S": k}, "sk": {"N": "0"}, "p": {"S": "x" * 4000}} for k in keys]
    load_items(ddb_client, table, items + [{**i, "sk": {"N": "1"}} for i in items])
    auto = driver.call("distinct_partition_keys", ddb_client, table)
    listed = list(auto)
    assert sorted(listed) == keys and len(listed) == 600
    assert auto.readers == 2 and "one reader at first, up to 2 at once" in auto.method_reason
    one = driver.call("distinct_partition_keys", ddb_client, table, segments=1)
    assert sorted(one) == keys and one.readers == 1
    assert auto.usage.read_units <= 1.05 * one.usage.read_units + 5
    # Resumed, it judges by what it reads and sends itself (a new user's resumed listing kept
    # to one reader: the segments done before counted, not their requests).
    first, token = stop_after(driver.call("distinct_partition_keys", ddb_client, table), 300)
    resumed = driver.call("distinct_partition_keys", ddb_client, table, resume=token)
    assert sorted(first + list(resumed)) == keys
    assert resumed.readers == 2


def test_collections_about_a_unit_each_are_read_through_like_a_scan(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """Each collection 9 items of about 470 bytes (a binary sort key), the page 8 of them:
    skipping past each saves an item of nine, for a request a collection. auto (skip-pages)
    tries reading through, finds a key costs about what a skip costs, and reads on like a scan:
    the scan's read units (within 5%) in a few requests more, not one a key. Stopped and
    resumed mid-way, in parallel segments too, every key comes once."""
    table = ddb_table_factory(("pk", "S"), ("sk", "B"))
    keys = [f"user#{k:05}" for k in range(1200)]
    load_items(
        ddb_client,
        table,
        [
            {"pk": {"S": key}, "sk": {"B": bytes([i]) * 16}, "p": {"S": "x" * 430}}
            for key in keys
            for i in range(9)
        ],
    )
    scan = driver.call("distinct_partition_keys", ddb_client, table, "scan")
    assert sorted(scan) == keys
    auto = driver.call("distinct_partition_keys", ddb_client, table)
    assert sorted(auto) == keys
    assert auto.method_name == "skip-pages"
    assert auto.usage.read_units <= 1.05 * scan.usage.read_units
    assert auto.method_note.startswith("skip-pages read on as a scan after ")
    # auto may read a table of 5 MB with two readers (one every 2 MB): where it reads on as a
    # scan, the segments' requests do not call for a second (a scan's time with one)
    assert auto.readers == 1 and "up to 2 at once" in auto.method_reason
    one = driver.call("distinct_partition_keys", ddb_client, table, segments=1)
    assert one.readers == 1 and sorted(one) == keys
    assert one.usage.requests <= 2 * scan.usage.requests + 10
    # (its segments: each starts and ends on its own, as two readers' would)
    assert auto.usage.requests <= 2 * scan.usage.requests + 10 * 2
    first, token = stop_after(driver.call("distinct_partition_keys", ddb_client, table), 300)
    resumed = driver.call("distinct_partition_keys", ddb_client, table, resume=token)
    rest = list(resumed)
    assert sorted(first + rest) == keys
    # the resumed listing (auto, as the CLI's printed resume command runs it) reads with as
    # many readers as the one it goes on from, not one: the token names skip-pages, not auto
    assert resumed.readers == auto.readers
    assert resumed.method_reason.startswith("skip-pages, as the resume token says")
    # under a read budget of less than two pages a second, one reader: two would each take
    # the budget into debt by a page at once, reading over it
    started = time.monotonic()
    budgeted = driver.call("distinct_partition_keys", ddb_client, table, max_rcu_per_second=100)
    assert sorted(budgeted) == keys
    assert budgeted.readers == 1 and "1 reader(s) at once" in budgeted.method_reason
    # a second's units saved up, and the page that took the budget into debt
    assert time.monotonic() - started >= (budgeted.usage.read_units - 100 - 128) / 100
    parallel = driver.call("distinct_partition_keys", ddb_client, table, segments=4)
    assert sorted(parallel) == keys
    assert parallel.usage.read_units <= 1.05 * scan.usage.read_units


@pytest.mark.parametrize(
    ("keys", "items", "pad", "cost"),
    [(120, 1, 30_000, 1.05), (300, 2, 3000, 0.8), (800, 1, 100, 1.05)],
    ids=["one-30KB-item", "two-3KB-items", "one-small-item"],
)
def test_collections_led_by_their_marker_cost_what_they_would_without(
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    keys: int,
    items: int,
    pad: int,
    cost: float,
) -> None:
    """Every collection led by its marker (the default marker sorts first): skip-pages reads a
    marker with its collection's first item, asking for one item more, not a lone marker and
    then the item in a request of its own. One item of 30 KB a key: skipping saves nothing and
    it reads on as a scan, in about a scan's requests (before: 2 requests a key, 15% over a
    scan's units, and auto chose it); two of 3 KB: a page a key, at a unit a key; one small
    item: pages of many collections (a page that ends on a marker is followed by one of the
    same size, not by one of an item). The estimate's ranges hold what it read."""
    # One name per case: the estimate's sample draws its segments by the table's name, so each
    # run checks the same draw. (Its ranges are 99% ones: a draw of two-3KB-items that held 66
    # collections in 71 segments of 448, a 1% draw, put the keys at 312-556 and skip-pages at
    # 12-47 requests where it sent 301.)
    table = ddb_table_factory(("pk", "S"), ("sk", "S"), name=f"ddbkeys-test-led-{keys}-{items}")
    names = [f"k{k:04}" for k in range(keys)]
    load_items(
        ddb_client,
        table,
        [
            {"pk": {"S": name}, "sk": {"S": f"{i}"}, "d": {"S": "x" * pad}}
            for name in names
            for i in range(items)
        ],
    )
    index = MarkerIndex(ddb_client, table)
    index.create()
    index.backfill(record=False)
    estimate = estimate_listing(ddb_client, table).method("skip-pages")
    scan = distinct_partition_keys(ddb_client, table, "scan", segments=1)
    assert sorted(scan) == names
    paged = distinct_partition_keys(ddb_client, table, "skip-pages", segments=1)
    assert sorted(paged) == names
    assert paged.usage.read_units <= cost * scan.usage.read_units
    assert paged.usage.requests <= keys + 10
    if items == 1:  # (skipping saves nothing: about a scan's requests, not one a page more)
        assert paged.usage.requests <= 2 * scan.usage.requests + 10
    low, high = estimate.rcu_low, estimate.rcu_high
    assert low is not None and high is not None
    # (two 3 KB items: 153 RCU against 163.8-238.7 in one draw of four, while the estimate held
    # a marker with its collection's first item; now an item of its own, as the listing reads
    # it: inside in 8 draws of 8)
    assert low <= paged.usage.read_units <= high
    assert estimate.requests_low is not None and estimate.requests_high is not None
    assert estimate.requests_low <= paged.usage.requests <= estimate.requests_high


@pytest.mark.parametrize("method", ["scan", "skip", "skip-pages", "index"])
def test_segments_and_resume(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, method: str
) -> None:
    table = ddb_table_factory(("pk", "N"), ("sk", "S"))
    for key in range(60):
        for i in range(1 + key % 4):
            ddb_client.put_item(TableName=table, Item={"pk": {"N": str(key)}, "sk": {"S": f"s{i}"}})
    make_index(ddb_client, table)
    keys = listed(driver, ddb_client, table, method, segments=4, **as_is(method))
    assert sorted(keys) == list(range(60))
    # Stop part way, resume from the checkpoint: every key exactly once in all.
    for segments in (1, 3):
        listing = driver.call(
            "distinct_partition_keys", ddb_client, table, method, segments=segments, **as_is(method)
        )
        first, token = stop_after(listing, 17)
        rest = listed(
            driver, ddb_client, table, method, segments=segments, resume=token, **as_is(method)
        )
        assert sorted(first + rest) == list(range(60)), (method, segments)


def scans_sent(client: DynamoDBClient) -> list[tuple[int, int, str]]:
    """Record each Scan's (Segment, TotalSegments, thread name) as the client sends it (a
    request thread is named after the reader it sends for)."""
    sent: list[tuple[int, int, str]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        segment = (params.get("Segment", 0), params.get("TotalSegments", 1))
        sent.append((*segment, threading.current_thread().name))

    client.meta.events.register("provide-client-params.dynamodb.Scan", record)
    return sent


def test_readers_take_scan_segments_in_turn(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    client = make_client(endpoint_url=ddb_endpoint_url)
    table = ddb_table_factory(("pk", "N"), ("sk", "S"))
    for key in range(60):
        client.put_item(TableName=table, Item={"pk": {"N": str(key)}, "sk": {"S": "s"}})
    sent = scans_sent(client)
    listing = distinct_partition_keys(client, table, "skip", segments=3, scan_segments=12)
    assert sorted(listing) == list(range(60))
    assert listing.scan_segments == 12 and listing.segments_done == 12
    assert {(segment, total) for segment, total, _ in sent} == {(s, 12) for s in range(12)}
    # Each segment is read to its end by one reader; three readers share the twelve.
    readers = {segment: name for segment, _, name in sent}
    assert all(readers[segment] == name for segment, _, name in sent)
    assert len(set(readers.values())) == 3
    # By default a table under a megabyte is not split beyond one segment a reader.
    sent.clear()
    assert len(listed(SYNC, client, table, "skip-pages", segments=2)) == 60
    assert {(segment, total) for segment, total, _ in sent} == {(0, 2), (1, 2)}
    # One reader reads the one segment, for the caller's thread.
    sent.clear()
    assert len(listed(SYNC, client, table, "skip")) == 60
    assert {(segment, total) for segment, total, _ in sent} == {(0, 1)}


def test_a_held_up_reader_does_not_hold_up_the_rest(
    ddb_endpoint_url: str, ddb_table_factory: TableFactory
) -> None:
    """Segment 0's first Scan waits until the other seven segments are done. With a fixed share
    of segments per reader (segments 0-3 to one, 4-7 to the other) that never happens; with
    readers taking segments in turn, the free reader reads all seven."""
    client = make_client(endpoint_url=ddb_endpoint_url)
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for key in range(80):
        client.put_item(TableName=table, Item={"pk": {"S": f"k{key}"}, "sk": {"N": "1"}})
    others_done = threading.Event()
    sent = scans_sent(client)

    def hold_segment_0(params: dict[str, Any], **_: Any) -> None:
        if params.get("Segment") == 0 and "ExclusiveStartKey" not in params:
            others_done.wait(timeout=60)

    client.meta.events.register("provide-client-params.dynamodb.Scan", hold_segment_0)

    def progress(listing: Listing) -> None:
        if listing.segments_done == 7 and listing.positions[0] is not True:
            others_done.set()

    listing = distinct_partition_keys(
        client, table, "skip", segments=2, scan_segments=8, on_key=progress
    )
    assert sorted(listing) == sorted(f"k{k}" for k in range(80))
    assert others_done.is_set()
    held = {name for segment, _, name in sent if segment == 0}
    assert len(held) == 1
    assert {segment for segment, _, name in sent if name in held} == {0}


def test_resume_with_other_readers(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for key in range(50):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"k{key}"}, "sk": {"N": "1"}})
    listing = driver.call(
        "distinct_partition_keys", ddb_client, table, "skip-pages", segments=2, scan_segments=8
    )
    first, token = stop_after(listing, 21)
    for readers in (1, 5):
        resumed = driver.call(
            "distinct_partition_keys",
            ddb_client,
            table,
            "skip-pages",
            segments=readers,
            resume=token,
        )
        rest = list(resumed)
        assert resumed.scan_segments == 8
        assert sorted(first + rest) == sorted(f"k{k}" for k in range(50)), readers
    with pytest.raises(
        ConfigurationError,
        match=re.escape("for 8 scan segment(s), not 3: resume with --scan-segments 8"),
    ):
        driver.call(
            "distinct_partition_keys", ddb_client, table, segments=2, scan_segments=3, resume=token
        )


def test_accounting_and_budget(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for key in range(10):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"k{key}"}, "sk": {"N": "1"}})
    listing = driver.call(
        "distinct_partition_keys", ddb_client, table, "skip", max_rcu_per_second=1000
    )
    assert len(list(listing)) == 10
    usage = listing.usage.snapshot()
    assert usage["requests"] == 11
    assert usage["items"] == 10
    assert 5.0 <= usage["read_units"] <= 5.5  # 0.5 a request (the last, empty one may be free)


def test_bad_input(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    with pytest.raises(TableNotFoundError, match="Table 'no-such-table' not found"):
        driver.call("distinct_partition_keys", ddb_client, "no-such-table")
    with pytest.raises(ConfigurationError, match="segments must be a whole number from 1"):
        driver.call("distinct_partition_keys", ddb_client, table, segments=0)
    with pytest.raises(ConfigurationError, match="scan_segments must be a whole number from 1"):
        driver.call(
            "distinct_partition_keys", ddb_client, table, segments=2, scan_segments=1_000_001
        )
    with pytest.raises(ConfigurationError, match="has no index 'ddbkeys-partition-keys'"):
        driver.call("distinct_partition_keys", ddb_client, table, "index")
    with pytest.raises(ConfigurationError, match="Unknown method 'magic'"):
        driver.call("distinct_partition_keys", ddb_client, table, "magic")
    for rate in (0, -1, 0.0, float("nan"), float("inf"), True, "5"):
        with pytest.raises(ConfigurationError) as refused:
            driver.call("distinct_partition_keys", ddb_client, table, max_rcu_per_second=rate)
        assert str(refused.value) == (
            "max_rcu_per_second must be a number of read units a second above 0 (or None for no "
            f"limit), not {rate!r}."
        )
    for readers in (65, 1_000_000):
        with pytest.raises(ConfigurationError) as too_many:
            driver.call("distinct_partition_keys", ddb_client, table, segments=readers)
        assert str(too_many.value) == (
            "segments must be a whole number from 1 to 64 (reader threads; for more, split the "
            f"Scan segments between processes), not {readers}."
        )
    assert len(list(driver.call("distinct_partition_keys", ddb_client, table, segments=64))) == 0
    with pytest.raises(Exception, match="not one ddbkeys wrote"):
        driver.call("distinct_partition_keys", ddb_client, table, resume="garbage")
    all_keys = ddb_table_factory(
        ("pk", "S"),
        ("sk", "N"),
        attributes=[("g", "S")],
        global_secondary_indexes=[
            {
                "IndexName": "ddbkeys-partition-keys",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    with pytest.raises(ConfigurationError, match="projects ALL, not KEYS_ONLY"):
        driver.call("distinct_partition_keys", ddb_client, all_keys, "index")


def test_index_verify_and_repair(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    for key in ("a", "b", "c"):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": key}, "sk": {"S": "data"}})
    index = driver.make("MarkerIndex", ddb_client, table)
    index.create()
    assert index.mark("a") is True
    assert index.mark("a") is False  # idempotent
    report = index.verify()
    assert report.missing == [{"S": "b"}, {"S": "c"}] and not report.healthy
    index.repair()
    assert index.verify().healthy
    assert sorted(listed(driver, ddb_client, table, "index", **as_is("index"))) == ["a", "b", "c"]
    ddb_client.delete_item(TableName=table, Key={"pk": {"S": "c"}, "sk": {"S": "data"}})
    assert index.verify().orphans == [{"S": "c"}]
    index.repair()
    assert sorted(listed(driver, ddb_client, table, "index", **as_is("index"))) == ["a", "b"]
    assert index.unmark("b") is True and index.unmark("b") is False
    auto = driver.call(
        "distinct_partition_keys", ddb_client, table
    )  # marked by hand: no evidence to trust
    assert (auto.method_name, auto.index_trusted) == ("skip-pages", False)
    # (no stream here: the first step named is `index stream`, before any backfill)
    assert "the table's stream is off" in auto.method_reason


@pytest.mark.parametrize("method", METHODS)
def test_through_throttling_and_5xx(
    driver: Driver,
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    method: str,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for key in range(40):
        for i in range(1 + key % 5):
            ddb_client.put_item(TableName=table, Item={"pk": {"S": f"k{key}"}, "sk": {"N": str(i)}})
    make_index(ddb_client, table)
    # 10% throttled, 5% HTTP 500, seeded; the first two Scans are sure to be hit, so that even
    # a method that needs few requests meets both faults.
    fault_proxy.set_faults(
        Faults(
            script=[Fault.THROTTLE, Fault.ERROR_500],
            throttle=0.10,
            error_500=0.05,
            seed=4,
            operations=frozenset({"Scan"}),
        )
    )
    client = proxied_client(fault_proxy, max_attempts=1)  # our own retries do the work
    keys = listed(driver, client, table, method, segments=2, **as_is(method))
    assert sorted(keys) == sorted(f"k{k}" for k in range(40))
    assert fault_proxy.counts["throttle"] > 0
    assert fault_proxy.counts["error_500"] > 0


def test_a_listing_describes_the_table_once_whatever_the_method(
    ddb_endpoint_url: str, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """One DescribeTable per listing: the marker index and its check read the listing's own."""
    table = ddb_table_factory(("pk", "S"), ("sk", "S"))
    for key in ("a", "b"):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": key}, "sk": {"S": "data"}})
    MarkerIndex(ddb_client, table).create()
    client = make_client(ddb_endpoint_url)
    sent: list[str] = []
    client.meta.events.register(
        "provide-client-params.dynamodb.*",
        lambda model, **_: sent.append(model.name),
    )
    for method in ("auto", "index", "skip-pages", "scan"):
        sent.clear()
        listing = distinct_partition_keys(client, table, method, **as_is(method))
        list(listing)
        assert sent.count("DescribeTable") == 1, (method, sent)
