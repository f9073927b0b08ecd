"""Ids from a fleet of independent processes (Lambda functions) on DynamoDB Local: objects
built in every call describe their table once per process, and again only when it was made
again; the idempotent counter through lost responses (no id skipped, none given twice), beside
writers of earlier releases on one counter, and past a writer killed in the middle of a call
(its slot goes once stale; nobody waits for it). The calls through faults and after the kill
are also checked as histories (each call's start, end and ids: increasing across processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._connect import make_client
from ddbkeys._errors import KeySchemaError, TableNotFoundError
from ddbkeys.ids import AtomicCounter, CounterStateError, audit_ids
from ddbkeys.ids._slots import NUMBER_PREFIX, VALUE_PREFIX
from ddbkeys.testing import Fault, FaultProxy, Faults, History, HistoryReport
from ddbkeys.testing._tables import TableFactory
from tests.support.drivers import Driver
from tests.support.old_counter import old_next
from tests.support.progress import PROGRESS_CEILING

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration

WRITES = frozenset({"UpdateItem", "TransactWriteItems"})


def describes(proxy: FaultProxy) -> Counter[str]:
    """How many DescribeTables went through the proxy, by table."""
    return Counter(str(c.table) for c in proxy.calls if c.operation == "DescribeTable")


def counter_item(client: DynamoDBClient, table: str, name: str = "c") -> dict[str, Any]:
    key = {"pk": {"S": name}}
    return dict(client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"])


def slots_of(item: dict[str, Any]) -> set[str]:
    return {k[len(NUMBER_PREFIX) :] for k in item if k.startswith(NUMBER_PREFIX)}


def test_objects_built_per_call_describe_each_table_once(
    driver: Driver, fault_proxy: FaultProxy, ddb_table_factory: TableFactory
) -> None:
    """As a handler builds its objects in every invocation: one DescribeTable per table and
    process, whatever the strategy."""
    counters, users = ddb_table_factory(), ddb_table_factory()
    issues = ddb_table_factory(("pk", "S"), ("sk", "N"))
    client = make_client(endpoint_url=fault_proxy.endpoint_url)
    for n in range(3):
        assert driver.make("AtomicCounter", client, counters, "plain").next() == n + 1
        exact = driver.make("AtomicCounter", client, counters, "exact", idempotent=True)
        assert exact.next() == n + 1
        assert driver.make("GaplessSequence", client, users, "users").put({"pk": f"u{n}"}) == n + 1
        assert driver.make("CollectionSequence", client, issues).put("p", {}) == n + 1
    assert describes(fault_proxy) == {counters: 1, users: 1, issues: 1}


def test_a_table_made_again_is_described_again(
    driver: Driver, fault_proxy: FaultProxy, ddb_client: DynamoDBClient
) -> None:
    """A write that finds the table's key schema changed drops what the process kept and
    describes the table again, and the call goes on; one that finds the table gone drops it:
    the next object describes the table again, and works."""
    factory = TableFactory(ddb_client)
    client = make_client(endpoint_url=fault_proxy.endpoint_url)

    def again(partition_key: tuple[str, str], *sort_key: tuple[str, str]) -> None:
        ddb_client.delete_table(TableName=table)
        ddb_client.get_waiter("table_not_exists").wait(TableName=table)
        factory(partition_key, *sort_key, name=table)

    try:
        table = factory(("pk", "S"))
        for name, idempotent in (("plain", False), ("exact", True)):
            counter = driver.make("AtomicCounter", client, table, name, idempotent=idempotent)
            assert counter.next() == 1
        # Made again with another key: the kept key schema is refused, read again at once.
        again(("name", "S"))
        assert driver.make("AtomicCounter", client, table, "c").next() == 1
        assert driver.make("AtomicCounter", client, table, "d", idempotent=True).next() == 1
        assert describes(fault_proxy)[table] == 2
        # Gone: the same, once made again.
        ddb_client.delete_table(TableName=table)
        ddb_client.get_waiter("table_not_exists").wait(TableName=table)
        with pytest.raises(TableNotFoundError):
            driver.make("AtomicCounter", client, table, "c", idempotent=True).next()
        factory(("id", "S"), name=table)
        assert driver.make("AtomicCounter", client, table, "c").next() == 1
        assert describes(fault_proxy)[table] == 3
        # Made again with a sort key, then with a number key: each call says what the table
        # is now, the first too (a helper's process said "refused GetItem", then "has the key
        # (id, sk)", for good; then the first call said what the kept description said).
        for key, now in (((("id", "S"), ("sk", "N")), "id, sk"), (((("id", "N"),)), "id")):
            again(*key)
            for _ in range(2):
                with pytest.raises(KeySchemaError) as raised:
                    driver.make("AtomicCounter", client, table, "c").next()
                assert f"has the key ({now}); a counter item key cannot" in str(raised.value)
        assert describes(fault_proxy)[table] == 7  # (each refusal reads it again next)
    finally:
        factory.delete_all()


def test_a_lost_response_costs_no_id_and_gives_none_twice(
    driver: Driver, fault_proxy: FaultProxy, ddb_client: DynamoDBClient, ddb_table_factory: Any
) -> None:
    """Each write's response dropped after DynamoDB applied it: the idempotent counter sends
    it again, is refused, and reads its ids from its slot. The plain counter beside it (the
    negative control) skips the ids of each lost write."""
    table = ddb_table_factory()
    client = make_client(endpoint_url=fault_proxy.endpoint_url)
    lose = [Fault.LOSE_RESPONSE, Fault.FORWARD] * 3
    fault_proxy.set_faults(Faults(script=lose, script_operations=frozenset({"UpdateItem"})))
    exact = [
        list(driver.make("AtomicCounter", client, table, "c", idempotent=True).reserve(2))
        for _ in range(3)
    ]
    assert exact == [[1, 2], [3, 4], [5, 6]]
    assert fault_proxy.counts_by_operation[("UpdateItem", "lose_response")] == 3
    assert fault_proxy.counts_by_operation[("UpdateItem", "forward")] == 3  # the refused resends
    assert AtomicCounter(ddb_client, table, "c").current() == 6
    fault_proxy.set_faults(Faults(script=lose, script_operations=frozenset({"UpdateItem"})))
    plain = [driver.make("AtomicCounter", client, table, "p").next() for _ in range(3)]
    assert plain == [2, 4, 6], "the negative control: a lost plain write skips its id"


def test_old_and_new_writers_on_one_counter(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    histories: Callable[..., HistoryReport],
) -> None:
    """During an upgrade: writers of earlier releases (a transaction that moves the counter
    from the value it holds) and writers with slots, at once, through lost responses and
    throttling: every id once, none skipped."""
    table = ddb_table_factory()
    fault_proxy.set_faults(Faults(lose_response=0.1, throttle=0.05, seed=2311, operations=WRITES))
    url = fault_proxy.endpoint_url
    history = History()

    def old(n: int) -> list[int]:
        client = make_client(endpoint_url=url)
        return [history.call(lambda: old_next(client, table, "c")) for _ in range(n)]

    def new(n: int) -> list[int]:
        client = make_client(endpoint_url=url)

        def take() -> int:
            return AtomicCounter(client, table, "c", idempotent=True).next()

        return [history.call(take) for _ in range(n)]

    with ThreadPoolExecutor(8) as pool:
        runs = [pool.submit(old if w % 2 else new, 25) for w in range(8)]
        ids = [i for run in runs for i in run.result()]
    assert sorted(ids) == list(range(1, 201)), audit_ids(ids).gaps
    assert histories("AtomicCounter", history.operations).operations == 200
    assert fault_proxy.counts_by_operation[("UpdateItem", "lose_response")] > 0
    assert fault_proxy.counts_by_operation[("TransactWriteItems", "lose_response")] > 0
    assert AtomicCounter(ddb_client, table, "c").current() == 200


KILLED_WRITER = """
import sys
from ddbkeys._connect import make_client
from ddbkeys.ids import AtomicCounter
print("started", flush=True)
AtomicCounter(make_client(endpoint_url=sys.argv[1]), sys.argv[2], "c", idempotent=True).next()
print("returned", flush=True)
"""


def test_a_writer_killed_mid_call_blocks_nobody_and_its_slot_goes(
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    histories: Callable[..., HistoryReport],
) -> None:
    """kill -9 of a writer whose write was applied and whose answer never came: the others
    take their ids meanwhile, and remove its slot once its call's deadline and the clock
    margin have passed (their clock moved on by hand)."""
    table = ddb_table_factory()
    fault_proxy.set_faults(
        Faults(delay_answer=1.0, delay_seconds=60, operations=frozenset({"UpdateItem"}))
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, fault_proxy.endpoint_url, table],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "started\n"
        # Its write applied (the answer held back by the proxy): the sign to wait for.
        deadline = time.monotonic() + PROGRESS_CEILING
        while not ddb_client.get_item(TableName=table, Key={"pk": {"S": "c"}}).get("Item"):
            assert time.monotonic() < deadline, "the writer's write was never applied"
            time.sleep(0.05)
        writer.send_signal(signal.SIGKILL)
        assert writer.wait(timeout=30) == -signal.SIGKILL
    finally:
        if writer.poll() is None:
            writer.kill()
    assert fault_proxy.counts["delay_answer"] == 1
    (dead,) = slots_of(counter_item(ddb_client, table))
    # The others go on at once (the dead slot is in nobody's way); its id 1 is a gap: its
    # call never returned it.
    history = History()
    ids = [
        history.call(AtomicCounter(ddb_client, table, "c", idempotent=True).next) for _ in range(5)
    ]
    assert ids == [2, 3, 4, 5, 6]
    assert dead in slots_of(counter_item(ddb_client, table))  # live: kept
    later = AtomicCounter(ddb_client, table, "c", idempotent=True)
    later.wall_clock = lambda: time.time() + 130  # past its 60 s deadline and the 60 s margin
    assert history.call(later.next) == 7
    # (the killed call never returned: it is in no history, and leaves id 1 unreturned)
    assert histories("AtomicCounter", history.operations).operations == 6
    left = counter_item(ddb_client, table)
    assert dead not in slots_of(left) and VALUE_PREFIX + dead not in left
    assert len(slots_of(left)) == 1  # this process's slot alone


def test_a_counter_item_full_of_writer_slots_says_so(
    driver: Driver, ddb_client: DynamoDBClient, ddb_table_factory: TableFactory
) -> None:
    """A helper's counter item held ~7,000 live slots (writers within a minute, or clocks
    ahead): an idempotent call said only DynamoDB's "Item size to update has exceeded the
    maximum allowed size". It now says what fills the item and what to do; nothing moves."""
    table = ddb_table_factory()
    future = str(int((time.time() + 3600) * 1000))
    base = {"pk": {"S": "c"}, "last_id": {"N": "100"}, "ddbkeys_type": {"S": "counter"}}

    def with_slots(n: int) -> dict[str, Any]:
        item = dict(base)
        for k in range(n):
            item[f"{NUMBER_PREFIX}fake{k:08x}x"] = {"N": future}
            item[f"{VALUE_PREFIX}fake{k:08x}x"] = {"N": str(k)}
        return item

    low, high = 1000, 12_000  # (the most slots a 400 KB item holds)
    while low < high:
        middle = (low + high + 1) // 2
        try:
            ddb_client.put_item(TableName=table, Item=with_slots(middle))
            low = middle
        except ddb_client.exceptions.ClientError:
            high = middle - 1
    ddb_client.put_item(TableName=table, Item=with_slots(low))
    with pytest.raises(CounterStateError) as raised:
        driver.make("AtomicCounter", ddb_client, table, "c", idempotent=True).next()
    assert f"Counter item {{'pk': 'c'}} of table {table!r} is full of writer slots" in str(
        raised.value
    )
    held = ddb_client.get_item(TableName=table, Key={"pk": {"S": "c"}}, ConsistentRead=True)
    assert held["Item"]["last_id"] == {"N": "100"}
