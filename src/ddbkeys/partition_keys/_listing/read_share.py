"""A listing's read budget as a share of the table's read capacity (``read_percent``), as the
established readers for Glue and EMR take it: a fraction of what the table can serve, not a
number of read units picked by hand. Pure: decided from the table's description."""

from __future__ import annotations

import math

from ddbkeys._errors import ConfigurationError
from ddbkeys._schema import TableInfo

__all__ = ["ON_DEMAND_ASSUMED", "check_capacity", "check_percent", "read_capacity", "share"]

#: The read capacity assumed of an on-demand table that says nothing of its own (read units a
#: second), as Glue's DynamoDB reader assumes.
ON_DEMAND_ASSUMED = 40_000.0


def check_percent(value: object, table: str | None = None) -> float | None:
    """``read_percent``: None, or a number from 0.1 to 1.5 (as Glue's)."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0.1 <= value <= 1.5
    ):
        raise ConfigurationError(
            f"read_percent must be a share of the table's read capacity from 0.1 to 1.5, not "
            f"{value!r}.",
            table=table,
        )
    return float(value)


def read_capacity(info: TableInfo, given: float | None = None) -> tuple[float, str]:
    """The table's read capacity (read units a second) and where it comes from: ``given``;
    else the provisioned read units; on demand its maximum (OnDemandThroughput) where set,
    else its warm throughput, else ``ON_DEMAND_ASSUMED``."""
    capacity = check_capacity(given, info.name)
    if capacity is not None:
        return capacity, "as given"
    if info.billing_mode != "PAY_PER_REQUEST" and info.provisioned_reads is not None:
        return info.provisioned_reads, "provisioned"
    if info.max_reads is not None:
        return info.max_reads, "the on-demand maximum"
    if info.warm_reads is not None:
        return info.warm_reads, "the warm throughput"
    return ON_DEMAND_ASSUMED, "assumed for an on-demand table"


def check_capacity(value: object, table: str | None = None) -> float | None:
    """``read_capacity``: None (the table's own), or read units a second above 0."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not value > 0
        or not math.isfinite(value)
    ):
        raise ConfigurationError(
            f"read_capacity must be read units a second above 0, not {value!r}.", table=table
        )
    return float(value)


def share(
    info: TableInfo,
    read_percent: float | None,
    max_rcu_per_second: float | None,
    capacity: float | None = None,
    concurrency: int = 1,
) -> float | None:
    """The read units a second one of ``concurrency`` readers (tasks, processes) may spend:
    ``read_percent`` of the table's read capacity and ``max_rcu_per_second`` (each the whole
    listing's), the lower where both are given, divided among them. None: no limit."""
    limits = []
    if read_percent is not None:
        limits.append(read_percent * read_capacity(info, capacity)[0])
    if max_rcu_per_second is not None:
        limits.append(float(max_rcu_per_second))
    return min(limits) / concurrency if limits else None
