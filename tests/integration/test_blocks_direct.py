"""The block allocator's promise of increasing ids (an id handed out after a call returned is
greater than every id that call got), for both drivers, with a ``reserve(count)`` of more than
a block (one write of its own) whose answer comes late through the fault proxy: applied at once,
answered a second later, as on a congested connection. A ``next()`` that needs a block reserved
meanwhile (51..60, above the write) returns after that answer, not before. (A breaker's finding:
it returned 51 at once, and the reserve then returned 1..50.) When the write gives up at its
deadline instead, the ``next()`` gets its id then, without waiting for the answer."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pytest

from ddbkeys._connect import make_client
from ddbkeys._errors import DdbKeysError
from ddbkeys.testing import Fault, FaultProxy, Faults
from ddbkeys.testing._tables import TableFactory
from tests.support.drivers import Driver

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("deadline", "answer_after"),
    [
        (60.0, 1.0),  # the answer comes (late): the next() returns after it, above its ids
        # (3 s: its own writes, next() and close(), keep to it on a busy machine; at 1.5 s B's
        # own reservation missed it once in CI under a load of 7-14 on 2 cores)
        (3.0, 8.0),  # the write gives up at its deadline: the next() returns then
    ],
    ids=["late answer", "deadline"],
)
def test_a_next_while_a_larger_reserve_is_unanswered_returns_after_it_and_above_it(
    driver: Driver,
    fault_proxy: FaultProxy,
    ddb_client: DynamoDBClient,
    ddb_table_factory: TableFactory,
    deadline: float,
    answer_after: float,
) -> None:
    driver.require("BlockAllocator")
    table = ddb_table_factory(("pk", "S"))
    client = make_client(endpoint_url=fault_proxy.endpoint_url)
    counter = driver.make("AtomicCounter", client, table, "ids", deadline=deadline)
    assert counter.current() == 0  # (the table's description read)
    blocks = driver.make("BlockAllocator", counter, 10)
    fault_proxy.set_faults(
        Faults(
            script=[Fault.DELAY_ANSWER],
            script_operations=frozenset({"UpdateItem"}),
            delay_seconds=answer_after,
        )
    )
    returned: dict[str, float] = {}

    def call(name: str, method: Callable[[], Any]) -> Any:
        try:
            return method()
        finally:
            returned[name] = time.monotonic()

    key = {"pk": {"S": "ids"}}
    with ThreadPoolExecutor(2) as pool:
        started = time.monotonic()
        a = pool.submit(call, "a", lambda: blocks.reserve(50))
        while "Item" not in ddb_client.get_item(TableName=table, Key=key):
            assert time.monotonic() - started < 10, "the write of 50 ids never arrived"
            time.sleep(0.005)
        # A's write is applied (1..50), its answer held: B's next() reserves 51..60. B's wait
        # for A's answer begins its own deadline; begun 2 s after A's, it outlives A's give-up
        # by 2 s for its own write (begun a few ms after, a CI run under load took A's error
        # past B's deadline)
        if deadline < answer_after:
            time.sleep(2.0)
        b = pool.submit(call, "b", blocks.next)
        assert b.result(30) == 51
        if deadline == 60.0:
            assert list(a.result(30)) == list(range(1, 51))
            # B did not return before A's answer (the few ms: A's own return, in its thread)
            assert returned["b"] >= returned["a"] - 0.1
            assert returned["b"] - started >= answer_after
        else:
            with pytest.raises(DdbKeysError):
                a.result(30)
            assert returned["b"] - started < answer_after  # not held to the late answer
    assert fault_proxy.counts_by_operation[("UpdateItem", "delay_answer")] == 1
    assert blocks.next() == 52
    report = blocks.aclose() if driver.is_async else blocks.close()
    assert report.wasted == 0
