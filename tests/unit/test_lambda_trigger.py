"""The Lambda handler's check of its trigger, without a server: what it reads of
ListEventSourceMappings, what it records per shard, when a batch came out of order, and why a
listing declines or which positions it uses (see ddbkeys.partition_keys._streams.lambda_trigger)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ddbkeys.partition_keys._index.state import evidence_from_item
from ddbkeys.partition_keys._proof.evidence import Backfill, Decline, Evidence, ShardMark
from ddbkeys.partition_keys._proof.precheck import precheck
from ddbkeys.partition_keys._proof.replay_window import ReplayWindow, replay_window
from ddbkeys.partition_keys._streams.lambda_trigger import (
    CHECK_STALE,
    Parallelized,
    Reading,
    TriggerCheck,
    factor_of,
    out_of_order,
    recorded,
    trigger_decline,
    went_past,
)

ARN = "arn:aws:dynamodb:r:1:table/orders/stream/now"
FUNCTION = "arn:aws:lambda:r:1:function:keeper:live"
MARGIN = 60.0
STARTED = 5_000.0  # the backfill began then: it covers what was applied before 4,940


def mapping(factor: int, function: str = FUNCTION, stream: str = ARN) -> dict[str, Any]:
    return {"EventSourceArn": stream, "FunctionArn": function, "ParallelizationFactor": factor}


def test_the_factor_is_the_mapping_of_this_function_on_this_stream() -> None:
    assert factor_of([mapping(1)], ARN, FUNCTION) == (1, None)
    found = [mapping(10, function=FUNCTION[:-5]), mapping(10, stream=ARN + "x"), mapping(1)]
    assert factor_of(found, ARN, FUNCTION) == (1, None)  # another alias, another stream
    assert factor_of([mapping(1), mapping(2)], ARN, FUNCTION) == (2, None)  # the worst
    plain = FUNCTION.removesuffix(":live")
    assert factor_of([mapping(2, function=plain)], ARN, plain + ":$LATEST") == (2, None)
    factor, why = factor_of([], ARN, FUNCTION)
    assert factor is None
    assert why is not None and f"no event source mapping of {FUNCTION} on {ARN}" in why


def handled(*batches: tuple[str, str]) -> TriggerCheck:
    return TriggerCheck(ARN, 1, 100.0, 100.0, 100.0, batches=batches)


def test_a_batch_before_the_handler_s_own_position_is_out_of_order() -> None:
    done = handled(("10", "19"), ("30", "39"))
    assert not out_of_order(None, "5")  # nothing handled yet
    assert not out_of_order(done, "40")  # the next batch
    assert not out_of_order(done, "30")  # the last batch sent again (a timeout, a lost answer)
    assert not out_of_order(done, "35")  # from its failed record, or an older copy
    assert not out_of_order(done, "12")
    assert out_of_order(done, "20")  # B (30-39) was handled before A (20-29)
    assert out_of_order(done, "5")  # older than anything it remembers


def test_the_newest_check_wins_and_since_survives_no_other_factor() -> None:
    first = recorded(None, ARN, None, 1_000.0, bad=None)  # a cold start: nothing read yet
    assert (first.checked, first.since, first.seen, first.first) == (None, None, 1_000.0, 1_000.0)
    # Read during its first batch (begun at 1,000): it vouches for the batch from its start.
    ended = recorded(
        first,
        ARN,
        Reading(FUNCTION, 1, 1_001.0),
        1_001.0,
        bad=None,
        began=1_000.0,
        batch=("1", "5"),
    )
    assert (ended.factor, ended.checked, ended.since, ended.seen) == (1, 1_001.0, 1_000.0, 1_000.0)
    assert ended.batches == (("1", "5"),)
    # Another environment's older reading does not take the place of the newer one.
    older = recorded(ended, ARN, Reading(FUNCTION, 1, 900.0), 1_100.0, bad=None)
    assert (older.checked, older.since, older.seen) == (1_001.0, 1_000.0, 1_100.0)
    # A failed read keeps the last check and says why.
    refused = recorded(
        ended, ARN, Reading(FUNCTION, None, 1_400.0, "AccessDenied"), 1_400.0, bad=None
    )
    assert (refused.factor, refused.checked, refused.error) == (1, 1_001.0, "AccessDenied")
    # A factor of 2 read anywhere on the stream ends ``since``; a stale reading of 1 (from
    # before it) does not bring it back; a reading of 1 after it starts it again.
    bad = Parallelized(ARN, 1_500.0, 2, FUNCTION)
    stale = recorded(ended, ARN, Reading(FUNCTION, 1, 1_200.0), 1_600.0, bad=bad)
    assert stale.since is None
    read_2 = recorded(ended, ARN, Reading(FUNCTION, 2, 1_500.0), 1_500.0, bad=None)
    assert (read_2.factor, read_2.since) == (2, None)
    again = recorded(stale, ARN, Reading(FUNCTION, 1, 1_900.0), 1_900.0, bad=bad)
    assert again.since == 1_900.0
    # A shard new to the handler, that held positions already: they may be the handler's own.
    upgraded = recorded(None, ARN, Reading(FUNCTION, 1, 2_000.0), 2_000.0, bad=None, oldest=10.0)
    assert (upgraded.first, upgraded.since) == (10.0, 2_000.0)


def test_a_batch_past_a_record_the_handler_never_applied_is_seen_in_its_own_record() -> None:
    """Lambda gave up on a batch begun at 20 and sends the next: the handler must see it went
    past 20 whether the shard's mark still says so or a follower's mark (no ``failed``) was
    saved over it meanwhile (the issue 33 adversary's schedule: a follower plus the Lambda
    handler listed 3 of 4 keys with the index proven)."""
    began = replace(handled(("10", "19")), failed="20")
    assert went_past(began, None, "30")  # the mark overwritten by a follower: its own record
    assert went_past(None, "20", "30")  # the mark as the handler left it
    assert not went_past(began, None, "20")  # sent again from its first (or failed) record
    assert not went_past(began, "20", "15")  # from an earlier record: nothing skipped
    assert not went_past(handled(("10", "19")), None, "30")  # the last batch was applied
    assert not went_past(None, None, "30")


def test_a_record_reads_back_as_written() -> None:
    check = replace(handled(("1", "5")), error="x", gap=3.0, first=2.0, failed="7", lost=4.0)
    assert TriggerCheck.from_json(check.to_json()) == replace(check, stream="now")  # its label
    assert TriggerCheck.from_json('{"stream": 1, "batches": [["a", "1"]]}') is None
    bad = Parallelized(ARN, 1.0, 2, FUNCTION)
    assert Parallelized.from_json(bad.to_json()) == bad
    item = {
        "shard s1": {"S": ShardMark("s1", ARN, "start", (("5", 1.0),)).to_json()},
        "lambda s1": {"S": check.to_json()},
        "parallelized": {"S": bad.to_json()},
        "maintainer": {"S": "lambda"},
    }
    evidence = evidence_from_item("orders", "ix", item)
    assert (evidence.triggers, evidence.parallelized) == ({"s1": replace(check, stream="now")}, bad)
    assert (evidence.maintainer, evidence.corrupt) == ("lambda", None)
    broken = evidence_from_item("orders", "ix", {**item, "lambda s1": {"S": "{"}})
    assert broken.corrupt == "its attribute 'lambda s1' is not a check ddbkeys wrote"


GOOD = TriggerCheck(ARN, 1, 9_000.0, 1_000.0, 9_100.0, first=1_000.0)


def decline(
    check: TriggerCheck | None,
    saved: tuple[float, ...] = (4_000.0, 9_000.0),
    *,
    bad: Parallelized | None = None,
    lambda_maintains: bool = True,
) -> str | None:
    checks = {} if check is None else {"s1": check}
    return trigger_decline(ARN, {"s1": saved}, checks, bad, lambda_maintains, STARTED, MARGIN)


@pytest.mark.parametrize(
    ("check", "bad", "why"),
    [
        (None, None, "recorded no check of its trigger's ParallelizationFactor for shard s1"),
        (replace(GOOD, checked=None, error="AccessDeniedException: no"), None, "could not read"),
        (replace(GOOD, checked=None), None, "(it has not checked it yet)"),
        (replace(GOOD, factor=2), None, "reads ParallelizationFactor 2 (batches of shard s1"),
        (replace(GOOD, seen=9_000.0 + CHECK_STALE + 1), None, "older than its latest batch"),
        (replace(GOOD, gap=8_000.0), None, "older than the Lambda handler's position in it"),
        (
            replace(GOOD, lost=8_000.0),
            None,
            "were lost before the maintainer applied them (Lambda went on",
        ),
        (replace(GOOD, since=None), None, "read ParallelizationFactor 1 only since"),
        (replace(GOOD, since=4_990.0), None, "only since less than the replay margin"),
        (GOOD, Parallelized(ARN, 8_000.0, 2, FUNCTION), "and no check of shard s1 has read 1"),
    ],
)
def test_a_listing_declines_a_check_that_vouches_for_nothing(
    check: TriggerCheck | None, bad: Parallelized | None, why: str
) -> None:
    found = decline(check, bad=bad)
    assert found is not None and why in found, found


def test_a_listing_trusts_checks_that_read_1_since_before_the_backfill() -> None:
    assert decline(GOOD) is None
    # Records lost a margin before the backfill began: the backfill covers them.
    assert decline(replace(GOOD, lost=STARTED - MARGIN - 1)) is None
    # A factor of 2 read before a check read 1, itself before the backfill: cleared.
    assert decline(GOOD, bad=Parallelized(ARN, 900.0, 2, FUNCTION)) is None
    # ... a factor of 2 on another stream (the table's earlier one) says nothing of this one.
    assert decline(GOOD, bad=Parallelized(ARN + "0", 8_000.0, 2, FUNCTION)) is None
    # A shard the handler began with a check (a child, or one first handled after the
    # backfill): no position of it is older than the check.
    fresh = replace(GOOD, since=8_000.0, first=8_000.0)
    assert decline(fresh, (8_000.0, 9_000.0)) is None
    # Positions the backfill covers (applied a margin before it began) need no check.
    assert decline(None, (4_000.0, 4_900.0)) is None
    # A follower's shard, the handler not keeping the index: no check needed.
    assert decline(None, lambda_maintains=False) is None


def test_a_listing_uses_only_positions_a_check_came_after() -> None:
    mark = ShardMark("s1", ARN, "start", (("10", 4_000.0), ("20", 8_000.0), ("30", 9_500.0)))
    record = Evidence(
        "orders",
        "ix",
        {"s1": mark},
        Backfill(STARTED, ARN, 1_000.0, 6_000.0),
        triggers={"s1": GOOD},  # checked at 9,000
        maintainer="lambda",
    )
    assert precheck(record, ARN, MARGIN) is None
    window = replay_window(record, ARN, [{"ShardId": "s1"}], 10_000.0, MARGIN)
    assert isinstance(window, ReplayWindow)
    (read,) = window.reads
    assert read.after == "20"  # 30 was saved after the check: it is read again
    # A follower keeping the index: its positions as they are.
    followed = replace(record, maintainer="follow")
    window = replay_window(followed, ARN, [{"ShardId": "s1"}], 10_000.0, MARGIN)
    assert isinstance(window, ReplayWindow) and window.reads[0].after == "30"
    # The trigger read 2: declined, whatever the positions.
    parallel = replace(record, triggers={"s1": replace(GOOD, factor=2)})
    declined = replay_window(parallel, ARN, [{"ShardId": "s1"}], 10_000.0, MARGIN)
    assert isinstance(declined, Decline) and "ParallelizationFactor 2" in declined.reason
