"""``Listing.stop()``: from another thread (or a signal handler), a listing ends within about
0.1 s wherever it waits (a read-budget wait, a retry backoff, an outstanding request with
``background``), and its checkpoint goes on exactly from the last key handed out; on both
drivers (async: ``stop()`` is called on the listing's event loop)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import pytest

from ddbkeys import ListingInterrupted
from ddbkeys.partition_keys import Listing
from ddbkeys.testing import Fault, FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory
from tests.conftest import proxied_client
from tests.support.drivers import Driver

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


def fill(client: DynamoDBClient, table: str, keys: int) -> set[str]:
    for k in range(keys):
        client.put_item(TableName=table, Item={"pk": {"S": f"k{k:03}"}, "sk": {"N": "1"}})
    return {f"k{k:03}" for k in range(keys)}


def stop_after(listing: Listing, seconds: float) -> list[float]:
    """Stop ``listing`` from another thread after ``seconds``; returns [when it was stopped]."""
    when: list[float] = []

    def stop() -> None:
        time.sleep(seconds)
        when.append(time.monotonic())
        listing.stop()

    threading.Thread(target=stop, daemon=True).start()
    return when


def read_until_stopped(listing: Listing) -> tuple[list[object], float, float]:
    """Read ``listing`` and stop it (from another thread) 0.5 s after its first key: a sign it
    is under way, where a stop after a fixed time could come before it started on a busy
    machine. Returns the keys, when it was stopped and when it ended."""
    got: list[object] = []
    when: list[float] = []
    with pytest.raises(ListingInterrupted, match=r"Listing\.stop\(\)"):
        for key in listing:
            got.append(key)
            if len(got) == 1:
                when = stop_after(listing, 0.5)
    return got, when[0], time.monotonic()


@pytest.mark.parametrize("segments", [1, 3])
def test_stop_during_a_read_budget_wait(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, segments: int
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(ddb_client, table, 30)
    # 0.05 read units a second: once the first keys are read (0.5 unit each), the next read
    # waits 9 s and more, so a stop that waited for the budget would take that long.
    listing = driver.call(
        "distinct_partition_keys",
        ddb_client,
        table,
        "skip",
        max_rcu_per_second=0.05,
        segments=segments,
    )
    got, stopped, ended = read_until_stopped(listing)
    assert ended - stopped < 5.0  # (within a stop slice on a quiet machine; room for load)
    assert 0 < len(got) < 30
    rest = list(
        driver.call(
            "distinct_partition_keys", ddb_client, table, "skip", resume=listing.checkpoint()
        )
    )
    assert sorted(map(str, got + rest)) == sorted(expected)  # each key once, none missed


def test_stop_during_an_outstanding_request_in_the_background(
    driver: Driver,
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
) -> None:
    table = ddb_table_factory(("pk", "S"), ("sk", "N"))
    expected = fill(ddb_client, table, 10)
    fault_proxy.set_faults(
        Faults(
            script=[Fault.FORWARD] * 4 + [Fault.DELAY],
            delay_seconds=20,
            operations=frozenset({"Scan"}),
        )
    )
    listing = driver.call("distinct_partition_keys", proxied_client(fault_proxy), table, "skip")
    listing.background = True
    got: list[object] = []
    ended = 0.0
    with pytest.raises(ListingInterrupted):
        for key in listing:
            got.append(key)
            if len(got) == 4:
                # The 5th Scan is being answered 20 s late: stop while it is outstanding.
                while fault_proxy.counts["delay"] == 0:
                    time.sleep(0.01)
                sent = time.monotonic()
                listing.stop()
        ended = time.monotonic()
    assert fault_proxy.counts["delay"] == 1
    # (Within a stop slice on a quiet machine; 5 s leaves a busy one room, and the answer
    # it would have waited for takes 20 s.)
    assert ended - sent < 5.0, "the stop waited on the outstanding request"
    rest = list(
        driver.call(
            "distinct_partition_keys", ddb_client, table, "skip", resume=listing.checkpoint()
        )
    )
    assert sorted(map(str, got + rest)) == sorted(expected)
