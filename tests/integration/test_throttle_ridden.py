"""helper-86 F2: throttling that lasts seconds is ridden out within a call's deadline. The waits
after throttling grew only to ``max_delay`` (0.5 s): 25 attempts spanned about 9 s, so `ids
next` (and the counter, `ids current`, `table create`, `index status` ...) gave up under a 30 s
throttle inside the 60 s deadline, while listings and the gapless sequence rode it out. They
now grow to ``max_unavailable_delay`` (5 s): 25 attempts span about 40-75 s."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

from ddbkeys._connect import make_client
from ddbkeys.ids import AtomicCounter
from ddbkeys.testing._proxy import Faults

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from ddbkeys.testing._proxy import FaultProxy
    from ddbkeys.testing._tables import TableFactory

pytestmark = pytest.mark.integration

#: How long every request is throttled: past what 25 attempts of 0.5 s at most spanned.
THROTTLED_FOR = 12.0


def test_a_counter_rides_out_throttling_of_longer_than_its_old_retries_spanned(
    ddb_client: DynamoDBClient, ddb_table_factory: TableFactory, fault_proxy: FaultProxy
) -> None:
    table = ddb_table_factory(("pk", "S"))
    counter = AtomicCounter(make_client(endpoint_url=fault_proxy.endpoint_url), table, "thr")
    counter.table_info()  # (its DescribeTable before the throttling)
    fault_proxy.set_faults(Faults(throttle=1.0))
    calm = threading.Timer(THROTTLED_FOR, lambda: fault_proxy.set_faults(Faults()))
    calm.start()
    try:
        assert counter.next() == 1
    finally:
        calm.cancel()
    assert fault_proxy.counts["throttle"] >= 10, dict(fault_proxy.counts)
    assert counter.usage.snapshot()["retries"] == fault_proxy.counts["throttle"]
