"""The read budget as a share of the table's read capacity, decided from its description."""

from __future__ import annotations

from typing import Any

import pytest

from ddbkeys._errors import ConfigurationError
from ddbkeys._schema import table_info
from ddbkeys.partition_keys._listing.read_share import (
    ON_DEMAND_ASSUMED,
    check_percent,
    read_capacity,
    share,
)

KEYS: dict[str, Any] = {
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
}


def described(**more: Any) -> Any:
    return table_info({**KEYS, **more}, "orders")


@pytest.mark.parametrize(
    ("description", "capacity", "source"),
    [
        ({"ProvisionedThroughput": {"ReadCapacityUnits": 200}}, 200.0, "provisioned"),
        (
            {
                "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 0},
                "OnDemandThroughput": {"MaxReadRequestUnits": 5000},
                "WarmThroughput": {"ReadUnitsPerSecond": 12000},
            },
            5000.0,
            "the on-demand maximum",
        ),
        (
            {
                "BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
                "OnDemandThroughput": {"MaxReadRequestUnits": -1},
                "WarmThroughput": {"ReadUnitsPerSecond": 12000},
            },
            12000.0,
            "the warm throughput",
        ),
        (
            {"BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"}},
            ON_DEMAND_ASSUMED,
            "assumed for an on-demand table",
        ),
    ],
)
def test_the_capacity_comes_from_the_description(
    description: dict[str, Any], capacity: float, source: str
) -> None:
    assert read_capacity(described(**description)) == (capacity, source)
    assert read_capacity(described(**description), 300.0) == (300.0, "as given")


def test_the_share_is_the_lower_limit_divided_among_the_readers() -> None:
    info = described(ProvisionedThroughput={"ReadCapacityUnits": 1000})
    assert share(info, None, None) is None
    assert share(info, 0.5, None) == 500.0
    assert share(info, 0.5, 100.0) == 100.0  # the lower wins
    assert share(info, 0.5, None, concurrency=4) == 125.0
    assert share(info, 0.5, None, capacity=40.0) == 20.0


@pytest.mark.parametrize("bad", [0.0, 0.05, 1.6, float("nan"), True, "0.5"])
def test_a_percent_out_of_range_is_refused(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="read_percent must be a share"):
        check_percent(bad, "orders")
    with pytest.raises(ConfigurationError, match="read_capacity must be"):
        read_capacity(described(), 0.0)
