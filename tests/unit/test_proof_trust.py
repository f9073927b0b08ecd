"""The proof declines at once what no maintainer can have recorded (the state table is part of
what it trusts): a position outside its shard's ``SequenceNumberRange``, a position the stream
refuses (ValidationException), and a GetShardIterator answered with a server error three times
in a row (one such answer is a transient fault, tried again). Driven by hand: DynamoDB Local
answers the first and the last (see tests/integration/test_proof_forged.py); a closed shard's
range and a single 500 cannot be made to order there."""

from __future__ import annotations

from typing import Any

import pytest

from ddbkeys._retry import RetryPolicy
from ddbkeys.partition_keys._listing.base import Reader
from ddbkeys.partition_keys._proof.evidence import Decline, ShardMark
from ddbkeys.partition_keys._proof.replay import replay_flow
from ddbkeys.partition_keys._proof.replay_window import ReplayWindow, out_of_range, replay_window
from ddbkeys.partition_keys._proof.shard_read import REFUSALS, Replay
from tests.unit.test_index_core import failure, play
from tests.unit.test_replay_flow import ARN, GOOD, NOW, evidence, setup


def shard(sid: str, first: str, last: str | None = None) -> dict[str, Any]:
    limits = {"StartingSequenceNumber": first}
    if last is not None:
        limits["EndingSequenceNumber"] = last
    return {"ShardId": sid, "SequenceNumberRange": limits}


def listed(sid: str, first: str, last: str | None = None) -> list[dict[str, Any]]:
    """The shard, and (closed) the child that takes its keys: an enabled stream lists one
    after every closed shard (without it, the listing declines: ``unlisted_child``)."""
    child = {"ShardId": f"{sid}-child", "ParentShardId": sid}
    after = [{**child, "SequenceNumberRange": {"StartingSequenceNumber": "30"}}] if last else []
    return [shard(sid, first, last), *after]


def server_error() -> Exception:
    return failure("InternalFailure", ResponseMetadata={"HTTPStatusCode": 500})


@pytest.mark.parametrize(
    ("sequence", "first", "last", "bound"),
    [
        ("4", "5", None, "before its first, 5"),
        ("21", "5", "20", "after its last, 20"),
    ],
)
def test_a_position_outside_its_shard_is_declined(
    sequence: str, first: str, last: str | None, bound: str
) -> None:
    mark = ShardMark("s1", ARN, "start", ((sequence, 7_000.0),))
    decided = replay_window(evidence(mark), ARN, listed("s1", first, last), NOW)
    assert isinstance(decided, Decline)
    assert f"the position recorded for shard s1, {sequence}, lies {bound}" in decided.reason
    assert "no maintainer wrote it" in decided.reason


def test_a_position_before_the_first_of_a_shard_a_day_old_is_taken_for_trimmed() -> None:
    """A shard that may have lost a day's records may say a later first number (the reference
    speaks of the records it contains): a maintainer's position before it is one the stream
    trimmed since, not one no maintainer wrote (the state table is not accused)."""
    day_old = NOW - 86_400 + 60  # (the shard's first mark: made by then at the latest)
    mark = ShardMark("s1", ARN, "start", (("4", day_old),))
    decided = out_of_range(mark, shard("s1", "5"), NOW)
    assert isinstance(decided, Decline)
    assert "older than the stream keeps (24 h)" in decided.reason
    assert "no maintainer wrote it" not in decided.reason
    # a young shard's first number is its own: a position before it is no maintainer's
    young = ShardMark("s1", ARN, "start", (("4", NOW - 3_600),))
    decided = out_of_range(young, shard("s1", "5"), NOW)
    assert isinstance(decided, Decline) and "no maintainer wrote it" in decided.reason


@pytest.mark.parametrize(
    ("sequence", "first", "last"),
    [
        ("5", "5", None),  # the shard's first record
        ("20", "5", "20"),  # a closed shard's last
        ("999999", "5", None),  # an open shard has no last number: found by reading it
        (None, "5", "20"),  # nothing applied yet
    ],
)
def test_a_position_the_range_allows_is_read(
    sequence: str | None, first: str, last: str | None
) -> None:
    mark = ShardMark("s1", ARN, "start", ((sequence, 7_000.0),))
    assert out_of_range(mark, shard("s1", first, last)) is None
    assert isinstance(
        replay_window(evidence(mark), ARN, listed("s1", first, last), NOW), ReplayWindow
    )


def test_an_older_mark_outside_the_range_is_declined_too() -> None:
    """Every recorded position is one the maintainer applied: one impossible mark among good
    ones is a record something else wrote."""
    mark = ShardMark("s1", ARN, "start", (("3", 6_000.0), ("10", 7_000.0)))
    assert isinstance(out_of_range(mark, shard("s1", "5")), Decline)


def patient() -> tuple[Reader, Any, Any]:
    reader, marker, table = setup()
    reader.retry = RetryPolicy(max_attempts=10)
    reader.deadline = 600.0
    return reader, marker, table


def test_three_server_errors_in_a_row_decline_at_once() -> None:
    reader, marker, table = patient()
    script: list[tuple[str, Any]] = [
        ("describe_stream", {"StreamDescription": {"Shards": [shard("s1", "1")]}}),
        *[("get_shard_iterator", server_error()) for _ in range(REFUSALS)],
    ]
    result, sent = play(replay_flow(reader, marker, table, GOOD, 60.0, NOW, None), script)
    assert len(sent) == 1 + REFUSALS  # not retried to the deadline (10 attempts allowed)
    assert isinstance(result, Decline)
    assert f"refused {REFUSALS} times in a row to read shard s1 after the position 10" in (
        result.reason
    )


def test_one_server_error_is_a_transient_fault_tried_again() -> None:
    reader, marker, table = patient()
    script: list[tuple[str, Any]] = [
        ("describe_stream", {"StreamDescription": {"Shards": [shard("s1", "1")]}}),
        ("get_shard_iterator", server_error()),
        ("get_shard_iterator", server_error()),
        ("get_shard_iterator", failure("ThrottlingException")),  # not a refusal: the count restarts
        ("get_shard_iterator", server_error()),
        ("get_shard_iterator", {"ShardIterator": "i1"}),
        ("get_records", {"Records": []}),  # a closed shard's end
    ]
    result, _ = play(replay_flow(reader, marker, table, GOOD, 60.0, NOW, None), script)
    assert isinstance(result, Replay) and result.records == 0


def test_a_position_the_stream_refuses_is_declined() -> None:
    reader, marker, table = patient()
    script: list[tuple[str, Any]] = [
        ("describe_stream", {"StreamDescription": {"Shards": [shard("s1", "1")]}}),
        ("get_shard_iterator", failure("ValidationException")),
    ]
    result, _ = play(replay_flow(reader, marker, table, GOOD, 60.0, NOW, None), script)
    assert isinstance(result, Decline)
    assert "the stream refuses the position 10 recorded for shard s1" in result.reason
