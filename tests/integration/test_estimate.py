"""The estimate against DynamoDB Local: on a filled table, its read units are within a stated
factor of what the listing then consumes, and its sample costs what it says (a few pages);
throttled, the sample is read all the same."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._capacity import Usage
from ddbkeys._connect import make_client
from ddbkeys._errors import DdbKeysError
from ddbkeys.partition_keys import distinct_partition_keys, estimate_listing
from ddbkeys.partition_keys._tasks.sampled import SAMPLE_SEGMENTS
from ddbkeys.testing._proxy import Fault, FaultProxy, Faults

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

#: A scan consumes the table's size at 0.5 RCU per 4 KB, rounded up per page: the estimate of
#: a scan is within this factor of what it consumes.
SCAN_FACTOR = 1.1
#: The skip scans depend on the keys per item, read from a sample of four segments' starts:
#: within this factor on this table (a mix of small and large collections).
SKIP_FACTOR = 1.5
KEYS = 400


def fill(client: DynamoDBClient, table: str) -> int:
    """KEYS collections: most of 1 to 3 items, one in five of 12 to 20 (over 4 KB), items of
    100 to 900 bytes, in a fixed random order. Returns the number of items."""
    rng = random.Random(22)
    items = []
    for k in range(KEYS):
        size = rng.randint(12, 20) if k % 5 == 0 else rng.randint(1, 3)
        items += [
            {
                "pk": {"S": f"key{k:04}"},
                "sk": {"N": str(n)},
                "pad": {"S": "x" * rng.randint(100, 900)},
            }
            for n in range(size)
        ]
    for start in range(0, len(items), 25):
        batch: list[Any] = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        client.batch_write_item(RequestItems={table: batch})
    return len(items)


def ratio(estimated: float | None, consumed: float) -> float:
    assert estimated is not None and consumed > 0
    return max(estimated / consumed, consumed / estimated)


def consumed(client: DynamoDBClient, table: str, method: str, keys: int = KEYS) -> float:
    """The read units the listing with ``method`` consumes (and it finds every key)."""
    listing = distinct_partition_keys(client, table, method)
    assert len(list(listing)) == keys
    return listing.usage.read_units


def test_the_estimate_is_near_what_the_listing_consumes(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    items = fill(ddb_client, table)
    usage = Usage()
    found = estimate_listing(ddb_client, table, usage=usage)
    # DynamoDB Local keeps DescribeTable's count current (AWS refreshes it about every 6 hours).
    assert found.source == "DescribeTable" and found.items == items
    assert found.keys is not None and ratio(found.keys, KEYS) <= SKIP_FACTOR
    # The sample: a one-item page and a larger one at the start of each of 4 segments.
    assert usage.requests == found.sample.requests == 2 * SAMPLE_SEGMENTS
    assert usage.read_units == found.sample.read_units <= 40
    assert 0 < found.sample.items < items and not found.sample.whole_table
    assert ratio(found.method("scan").rcu, consumed(ddb_client, table, "scan")) <= SCAN_FACTOR
    for method in ("skip", "skip-pages"):
        assert ratio(found.method(method).rcu, consumed(ddb_client, table, method)) <= SKIP_FACTOR
    assert found.auto == "skip-pages" and found.method("index").available is False
    for each in found.methods[:3]:
        assert each.seconds is not None and each.seconds > 0 and each.tasks == 1


def test_a_small_table_is_sampled_whole(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A table the sample reads to its end: its counts are exact, whatever DescribeTable says."""
    table = ddb_table_factory(("pk", "S"))
    for n in range(7):
        ddb_client.put_item(TableName=table, Item={"pk": {"S": f"k{n}"}})
    found = estimate_listing(ddb_client, table)
    assert found.sample.whole_table and found.source.startswith("the sample")
    assert (found.items, found.keys) == (7, 7)
    assert found.auto == "scan" and not found.method("skip").available
    assert found.method("scan").rcu == consumed(ddb_client, table, "scan", 7) == 0.5


def test_the_sample_is_read_through_throttling(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, fault_proxy: FaultProxy
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    fill(ddb_client, table)
    calm = estimate_listing(ddb_client, table)
    fault_proxy.set_faults(
        Faults(script=[Fault.THROTTLE] * 3, script_operations=frozenset({"Scan"}))
    )
    client = make_client(endpoint_url=fault_proxy.endpoint_url)
    throttled = estimate_listing(client, table)
    assert fault_proxy.counts_by_operation[("Scan", "throttle")] == 3
    assert throttled.sample.items == calm.sample.items
    assert throttled.keys == calm.keys and throttled.method("scan").rcu == calm.method("scan").rcu


def test_a_missing_table_is_a_clear_error(ddb_client: DynamoDBClient) -> None:
    with pytest.raises(DdbKeysError, match="no-such-table"):
        estimate_listing(ddb_client, "no-such-table")
