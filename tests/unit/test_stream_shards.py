"""The stream's shard list as a reader of the whole stream takes it (no server: the flows
driven by hand): a closed shard listed with no child is described again, and then declined."""

from __future__ import annotations

from typing import Any

from ddbkeys._core.steps import Request
from ddbkeys.partition_keys._proof.replay_window import unlisted_child
from ddbkeys.partition_keys._streams.streams import (
    DESCRIBE_AGAIN,
    closed_leaves,
    settled_shards,
)
from tests.support.hand import drive

ARN = "arn:aws:dynamodb:r:1:table/orders/stream/2026-11-30T19:00:00.000"


def shard(name: str, parent: str | None = None, closed: bool = False) -> dict[str, Any]:
    numbers = {"StartingSequenceNumber": "100"}
    if closed:
        numbers["EndingSequenceNumber"] = "200"
    described: dict[str, Any] = {"ShardId": name, "SequenceNumberRange": numbers}
    if parent is not None:
        described["ParentShardId"] = parent
    return described


def page(*shards: dict[str, Any], status: str = "ENABLED", more: str | None = None) -> Any:
    description: dict[str, Any] = {"StreamArn": ARN, "StreamStatus": status, "Shards": shards}
    if more is not None:
        description["LastEvaluatedShardId"] = more
    return {"StreamDescription": description}


def ask(request: Request) -> Any:
    answer = yield request
    return answer


def test_a_closed_shard_is_a_leaf_until_a_child_names_it() -> None:
    assert closed_leaves([shard("s1"), shard("s2")]) == []
    assert closed_leaves([shard("s1", closed=True), shard("s2")]) == ["s1"]
    assert closed_leaves([shard("s1", closed=True), shard("s2", parent="s1")]) == []
    # (a child of a shard no longer listed, and a closed child with its own child)
    assert closed_leaves([shard("s2", "s0", closed=True), shard("s3", "s2")]) == []
    declined = unlisted_child([shard("s1", closed=True)])
    assert declined is not None and "shard s1 of the table's stream is closed" in declined.reason
    assert unlisted_child([shard("s1", closed=True), shard("s2", parent="s1")]) is None


def test_a_child_listed_a_moment_late_is_described_again_a_second_later() -> None:
    run = drive(
        settled_shards(ask, ARN, sleep=lambda _: None),
        [
            page(shard("s1", closed=True)),
            page(shard("s1", closed=True), more="s1"),  # (whole pages followed)
            page(shard("s2", parent="s1")),
        ],
    )
    assert run.pauses == [1.0]
    assert [s["ShardId"] for s in run.result] == ["s1", "s2"]
    assert run.requests[2].params["ExclusiveStartShardId"] == "s1"


def test_described_again_at_most_describe_again_times_then_as_it_is() -> None:
    closed = page(shard("s1", closed=True))
    run = drive(settled_shards(ask, ARN, sleep=lambda _: None), [closed] * (DESCRIBE_AGAIN + 1))
    assert run.pauses == [1.0] * DESCRIBE_AGAIN
    assert closed_leaves(run.result) == ["s1"]  # (the caller declines: unlisted_child)


def test_a_stream_turned_off_is_not_described_again() -> None:
    # Every shard of a disabled stream is closed with no child: nothing is missing.
    run = drive(
        settled_shards(ask, ARN, sleep=lambda _: None),
        [page(shard("s1", closed=True), status="DISABLED")],
    )
    assert run.pauses == [] and len(run.requests) == 1
