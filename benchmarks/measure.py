"""How benchmarks/partition_keys.py measures one listing: ddbkeys' methods, the plain boto3 Scan a
user writes, and the article's skip scan, each a ``Row`` (requests, items read, RCU, wall time,
the right keys or not); rounds in alternating order and their median; the estimate's ranges."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddbkeys._capacity import Usage
from ddbkeys._demo_keys import DEMO_MARGIN
from ddbkeys.partition_keys import MAX_SORT_KEY, distinct_partition_keys

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from shapes import Key


@dataclass
class Row:
    method: str
    requests: int
    items: int
    rcu: float
    seconds: float
    correct: bool
    #: Stopped at the request cap before the end (its figures are lower bounds).
    stopped: bool = False


#: The plain boto3 Scan's row, and the article's (its Python sample: Limit 1, sequential).
PLAIN = "boto3 Scan (plain)"
ARTICLE = "article's skip scan"


def key_value(attribute: Mapping[str, Any]) -> Key:
    value = next(iter(attribute.values()))
    return bytes(value) if isinstance(value, bytes | bytearray) else str(value)


def plain_scan(
    client: DynamoDBClient, table: str, cap: int | None = None
) -> tuple[set[Key], Usage]:
    """What a user writes: boto3's Scan paginator, the partition key projected, the consumed
    capacity asked for, the keys collected in a set."""
    usage = Usage()
    keys: set[Key] = set()
    pages = client.get_paginator("scan").paginate(
        TableName=table, ProjectionExpression="pk", ReturnConsumedCapacity="TOTAL"
    )
    for page in pages:
        usage.add(page, write=False, items=int(page["ScannedCount"]))
        keys.update(key_value(found["pk"]) for found in page["Items"])
        if cap is not None and usage.requests >= cap:
            break
    return keys, usage


def article_skip_scan(
    client: DynamoDBClient, table: str, sort_type: str, cap: int | None = None
) -> tuple[list[Key], Usage]:
    """The article's Python sample (its skip scan), as published but on the low-level client:
    Limit 1, sequential, jumping with the greatest sort key value (its retry branch never runs
    here)."""
    usage = Usage()
    keys: list[Key] = []
    params: dict[str, Any] = {
        "TableName": table,
        "Limit": 1,
        "ProjectionExpression": "pk",
        "ReturnConsumedCapacity": "TOTAL",
    }
    while cap is None or usage.requests < cap:
        response = client.scan(**params)
        usage.add(response, write=False, items=int(response["ScannedCount"]))
        if response["Items"]:
            keys.append(key_value(response["Items"][0]["pk"]))
        if "LastEvaluatedKey" not in response:
            break
        last = response["LastEvaluatedKey"]
        params["ExclusiveStartKey"] = {"pk": last["pk"], "sk": MAX_SORT_KEY[sort_type]}
    return keys, usage


def run_method(
    client: DynamoDBClient,
    table: str,
    method: str,
    expected: set[Key],
    *,
    segments: int | None = 1,
    sort_type: str = "N",
    state_table: str | None = None,
    suffix: str = "",
    cap: int | None = None,
) -> Row:
    """One listing of ``table`` by ``method`` (or the plain Scan, or the article's), stopped
    after ``cap`` requests (None: never). ``segments`` None: the listing's default (``auto``
    decides its readers, as a user's call does)."""
    started = time.perf_counter()
    label = method
    keys: Sequence[Key] | set[Key]
    if method == PLAIN:
        keys, usage = plain_scan(client, table, cap)
    elif method == ARTICLE:
        keys, usage = article_skip_scan(client, table, sort_type, cap)
    else:
        usage = Usage()
        listing = distinct_partition_keys(
            client,
            table,
            method,
            segments=segments,
            state_table=state_table,
            replay_margin=DEMO_MARGIN,
            usage=usage,
        )
        found: list[Key] = []
        for key in listing:
            found.append(key if isinstance(key, bytes) else str(key))
            if cap is not None and usage.requests >= cap:
                break
        keys = found
        if method == "auto":
            label = f"auto ({listing.method_name})"
        if listing.readers > 1:  # readers, and the Scan segments they took in turn
            label += f" x{listing.readers} of {listing.scan_segments}"
        if listing.replay is not None and listing.replay.rechecked:
            label += f", {listing.replay.rechecked} re-checked"
    seconds = time.perf_counter() - started
    stopped = cap is not None and usage.requests >= cap and len(set(keys)) < len(expected)
    correct = len(keys) == len(expected) and set(keys) == expected
    return Row(
        label + suffix, usage.requests, usage.items, usage.read_units, seconds, correct, stopped
    )


def median_row(runs: Sequence[Row]) -> Row:
    """Each figure's median over ``runs`` (one method's rounds); right only if every run was."""

    def median(values: list[float]) -> float:
        return float(statistics.median(values))

    return Row(
        runs[-1].method,
        int(median([r.requests for r in runs])),
        int(median([r.items for r in runs])),
        median([r.rcu for r in runs]),
        median([r.seconds for r in runs]),
        all(r.correct for r in runs),
        any(r.stopped for r in runs),
    )


#: A row whose first run takes longer than this is run once: its time is long enough to be
#: stable, and its requests and RCU do not change from round to round.
LONG_SECONDS = 30.0


def rounds(
    plan: Sequence[str], run: Callable[[str], Row], count: int = 3, long: float = LONG_SECONDS
) -> dict[str, Row]:
    """Every entry of ``plan`` run ``count`` times, in alternating order (forward, backward,
    ...), each kept as its median; but one whose first run took over ``long`` seconds is run
    once."""
    runs: dict[str, list[Row]] = {name: [] for name in plan}
    for turn in range(count):
        for name in plan if turn % 2 == 0 else reversed(plan):
            if not runs[name] or runs[name][0].seconds <= long:
                runs[name].append(run(name))
    return {name: median_row(found) for name, found in runs.items()}


def span(source: object, name: str) -> tuple[float, float] | None:
    """The range ``source`` gives for its figure ``name`` (``rcu``, ``keys``): ``name_low`` and
    ``name_high``, or a ``name_range`` / ``name`` holding ``low`` and ``high``, or (before the
    estimate gave ranges) the point value as both ends; None when it gives none."""
    low, high = getattr(source, f"{name}_low", None), getattr(source, f"{name}_high", None)
    if low is not None and high is not None:
        return float(low), float(high)
    for attribute in (f"{name}_range", name):
        value = getattr(source, attribute, None)
        if value is not None and hasattr(value, "low") and hasattr(value, "high"):
            return float(value.low), float(value.high)
    if name == "rcu" and getattr(source, "low", None) is not None:
        return float(source.low), float(source.high)  # type: ignore[attr-defined]
    value = getattr(source, name, None)
    return None if value is None else (float(value), float(value))
