"""ddbkeys' own item is not a key (issue 21), against DynamoDB Local: after a backfill, a
collection emptied with nobody following keeps its marker, and ``scan``, ``skip`` and
``skip-pages`` leave it out, whether the collection's data sorts before or after the marker;
in one segment or many, resumed after any key handed out, in the sync and the asyncio forms.
A table without markers costs the same read units as before."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys.aio._listing import distinct_partition_keys as aio_keys
from ddbkeys.partition_keys import MarkerIndex, distinct_partition_keys
from ddbkeys.partition_keys._index.index import DEFAULT_MARKER_SORT_KEY
from ddbkeys.testing._tables import TableFactory
from tests.integration.test_index_async import run

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

METHODS = ("scan", "skip", "skip-pages")
#: Sort keys by type: for S, "!" sorts before the marker ("#ddbkeys#marker") and "z" after;
#: the number marker sorts first, the binary one (0x00) before any other one-byte value.
BEFORE: dict[str, dict[str, Any]] = {"S": {"S": "!early"}, "N": {"N": "1"}, "B": {"B": b"\x01"}}
AFTER: dict[str, dict[str, Any]] = {"S": {"S": "z"}, "N": {"N": "2"}, "B": {"B": b"\x02"}}
EMPTIED = {3, 4, 7, 11, 12, 13, 19}  # emptied after the backfill: their markers stay


def phantoms(client: DynamoDBClient, factory: TableFactory, sk_type: str) -> tuple[str, list[str]]:
    """20 collections, marked by a backfill; then 7 of them emptied with nobody following (the
    last one included, and runs of them). The keys that hold data."""
    table = factory(("pk", "S"), ("sk", sk_type))
    for n in range(20):
        for sk in (BEFORE, AFTER)[: 1 + n % 2] if n % 3 else (AFTER,):
            client.put_item(TableName=table, Item={"pk": {"S": f"k{n:02}"}, "sk": sk[sk_type]})
    index = MarkerIndex(client, table)
    index.create()
    assert index.backfill(state_table=None).written == 20
    for n in EMPTIED:
        for sk in (BEFORE, AFTER):
            client.delete_item(TableName=table, Key={"pk": {"S": f"k{n:02}"}, "sk": sk[sk_type]})
    marker = {"pk": {"S": "k03"}, "sk": DEFAULT_MARKER_SORT_KEY[sk_type]}
    assert "Item" in client.get_item(TableName=table, Key=marker)  # kept: a phantom-to-be
    return table, sorted(f"k{n:02}" for n in range(20) if n not in EMPTIED)


@pytest.mark.parametrize("sk_type", ["S", "N", "B"])
def test_a_collection_holding_only_its_marker_is_not_listed(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, sk_type: str
) -> None:
    table, expected = phantoms(ddb_client, ddb_table_factory, sk_type)
    for method in METHODS:
        assert sorted(distinct_partition_keys(ddb_client, table, method)) == expected, method
        parallel = distinct_partition_keys(ddb_client, table, method, segments=2, scan_segments=5)
        keys = list(parallel)
        assert sorted(keys) == expected and len(keys) == len(set(keys)), method
    # The index is the one place a marker-only collection shows (an orphan, for repair).
    verify = MarkerIndex(ddb_client, table).verify()
    assert (verify.collections, verify.markers) == (len(expected), 20)
    assert sorted(k["S"] for k in verify.orphans) == sorted(f"k{n:02}" for n in EMPTIED)


@pytest.mark.parametrize("method", METHODS)
def test_a_resumed_listing_neither_repeats_nor_misses_a_key(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, method: str
) -> None:
    table, expected = phantoms(ddb_client, ddb_table_factory, "S")
    whole = list(distinct_partition_keys(ddb_client, table, method))
    assert sorted(whole) == expected
    for stop_after in range(1, len(whole)):
        listing = distinct_partition_keys(ddb_client, table, method)
        keys = iter(listing)
        first = [next(keys) for _ in range(stop_after)]
        rest = list(distinct_partition_keys(ddb_client, table, resume=listing.checkpoint()))
        assert first + rest == whole, (method, stop_after)


@pytest.mark.parametrize("sk_type", ["S", "N"])
def test_the_asyncio_listing_leaves_them_out_too(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, sk_type: str
) -> None:
    table, expected = phantoms(ddb_client, ddb_table_factory, sk_type)

    async def body(client: Any) -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = {}
        for method in METHODS:
            found[method] = [k async for k in await aio_keys(client, table, method, segments=3)]
        return found

    for method, keys in run(ddb_client, body).items():
        assert sorted(keys) == expected and len(keys) == len(set(keys)), method


#: What each method cost on the table below before markers were recognised (requests, read
#: units): the same now, and the scan's the same on a marked table. (skip-pages: 11 requests
#: until its pages grew at each page before the first large collection, then 10 for 6.5 RCU;
#: since issue 35 it reads a table of 128 KB or less in one request, as a scan.)
COST = {"scan": (1, 7.0), "skip": (31, 15.0), "skip-pages": (1, 7.0)}


@pytest.mark.parametrize("method", METHODS)
def test_a_table_without_markers_costs_what_it_did(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, method: str
) -> None:
    """Projecting the sort key and the marker attribute costs no read unit, and where there is
    no marker the skip scans send the same requests."""
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    for n in range(30):
        for sk in range(1 + n % 3):
            ddb_client.put_item(
                TableName=table,
                Item={"pk": {"S": f"k{n:02}"}, "sk": {"N": str(sk)}, "pad": {"S": "x" * 900}},
            )
    listing = distinct_partition_keys(ddb_client, table, method)
    assert len(list(listing)) == 30
    usage = listing.usage.snapshot()
    assert (usage["requests"], usage["read_units"]) == COST[method], usage
    if method == "scan":
        index = MarkerIndex(ddb_client, table)
        index.create()
        index.backfill(state_table=None)
        listing = distinct_partition_keys(ddb_client, table, method)
        assert len(list(listing)) == 30
        usage = listing.usage.snapshot()
        assert (usage["requests"], usage["read_units"]) == COST[method], usage
