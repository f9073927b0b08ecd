"""What a block allocator's close() hands back (BlockState, without a server), and the
hand-back's one conditional write, driven by hand (no client: a counter's stand-in with the real
retry layer)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError

from ddbkeys._errors import ConfigurationError
from ddbkeys._retry import Deadline
from ddbkeys.ids._base import CounterItem
from ddbkeys.ids._blocks_steps import CloseReport, Hand, HandBack, hand_back_for
from ddbkeys.ids._counter import hand_back
from ddbkeys.ids._counter_core import CounterCore
from ddbkeys.ids._link import Link
from tests.support.blocks_state import arrive, held
from tests.support.hand import POLICY, cancelled, drive

# --- what close() hands back -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unused", "top", "expected"),
    [
        # the current block's rest and the spare, contiguous and the highest: both go back
        ([range(41, 51), range(51, 61)], 60, HandBack(60, 40, 20, 0)),
        # another process reserved 51..60 in between: only the spare goes back
        ([range(41, 51), range(61, 71)], 70, HandBack(70, 60, 10, 10)),
        # no spare, the current block is the highest
        ([range(45, 51), range(0)], 50, HandBack(50, 44, 6, 0)),
        # a direct reservation (or another's block, or the counter moved) is the highest
        ([range(41, 51), range(51, 61)], 90, HandBack(None, None, 0, 20)),
        ([range(0), range(0)], 90, HandBack(None, None, 0, 0)),
        ([range(0), range(0)], None, HandBack(None, None, 0, 0)),
        # nothing handed out of the first block: the counter goes back to "none given"
        ([range(1, 101), range(101, 201)], 200, HandBack(200, 0, 200, 0)),
        # step 10 from 10: the counter holds the last id given out, 30
        ([range(40, 60, 10), range(60, 110, 10)], 100, HandBack(100, 30, 7, 0)),
        # start 0: the id below the first is -1, so the counter is removed (reads as none)
        ([range(0, 100), range(0)], 99, HandBack(99, None, 100, 0)),
        # start 3, step 5: the counter would hold -2
        ([range(3, 53, 5), range(0)], 48, HandBack(48, None, 10, 0)),
        # start 1000: the counter holds 999 before its first id
        ([range(1000, 1100), range(0)], 1099, HandBack(1099, 999, 100, 0)),
    ],
)
def test_hand_back_for(unused: list[range], top: int | None, expected: HandBack) -> None:
    assert hand_back_for(unused, top) == expected


def test_close_waits_for_nothing_it_did_not_send_and_refuses_takes() -> None:
    state = held(range(1, 11))
    assert state.take(3) == Hand(range(1, 4), refill=True)  # asked, not claimed yet
    state.close()
    assert not state.fetching and state.claim_refill() is None  # never sent
    with pytest.raises(ConfigurationError, match="This BlockAllocator is closed"):
        state.take(1)
    back = state.release()
    assert back == HandBack(10, 3, 7, 0)
    assert state.closed_with(back, applied=True) == CloseReport(7, 0, sent=True)
    assert (state.stats.handed_back, state.stats.wasted) == (7, 0)


@pytest.mark.parametrize(
    ("applied", "report"), [(True, CloseReport(15, 7, True)), (False, CloseReport(0, 22, True))]
)
def test_close_counts_what_could_not_go_back(applied: bool, report: CloseReport) -> None:
    state = held(range(1, 11), table="tickets")
    state.take(3)
    state.claim_refill()
    arrive(state, range(21, 36))  # another process took 11..20
    state.close()
    back = state.release()
    assert back == HandBack(35, 20, 15, 7)
    assert state.closed_with(back, applied) == report
    assert (state.stats.handed_back, state.stats.wasted) == (report.handed_back, report.wasted)
    with pytest.raises(ConfigurationError, match="BlockAllocator on table 'tickets' is closed"):
        state.take(1)


def test_a_block_arriving_after_the_release_is_wasted_one_arriving_before_goes_back() -> None:
    state = held(range(1, 11))
    state.take(2)
    state.claim_refill()
    state.close()
    arrive(state, range(11, 21))  # in flight when close() began: waited for, handed back
    back = state.release()
    assert back == HandBack(20, 2, 18, 0)
    late = held(range(1, 11))
    late.take(2)
    late.claim_refill()
    late.close()
    assert late.release() == HandBack(10, 2, 8, 0)
    arrive(late, range(11, 21))  # the wait gave up on it: it comes after the hand-back was decided
    assert late.stats.wasted == 10 and late.spare is None


# --- the hand-back's write, driven by hand ----------------------------------------------------


TICKETS = CounterCore("issues", "tickets")


def tickets() -> Link:
    """What hand_back() reads of a counter's link: where the counter lives (known already, so
    nothing is described) and its retry layer."""
    link = Link(None, TICKETS.table, "AtomicCounter", retry=POLICY)
    link.known.counter = CounterItem(TICKETS.table, {"pk": {"S": TICKETS.name}}, "last_id")
    return link


def lost() -> ConnectionClosedError:
    return ConnectionClosedError(endpoint_url="http://127.0.0.1:9")


def throttled() -> ClientError:
    response: Any = {
        "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    return ClientError(response, "UpdateItem")


def moved_on(held: str) -> ClientError:
    """The hand-back's transaction cancelled: the counter no longer holds the top."""
    return cancelled(("ConditionalCheckFailed", {"last_id": {"N": held}}))


@pytest.mark.parametrize(
    ("back", "answers", "applied"),
    [
        (HandBack(60, 40, 20, 0), [{}], True),
        (HandBack(60, 40, 20, 0), [moved_on("75")], False),
        # its answer lost: the same transaction again (the same token: applied once)
        (HandBack(60, 40, 20, 0), [lost(), {}], True),
        # ... or the counter moved on before it arrived (another process reserved)
        (HandBack(60, 40, 20, 0), [lost(), moved_on("90")], False),
        (HandBack(60, 40, 20, 0), [throttled(), {}], True),
        (HandBack(60, 40, 20, 0), [cancelled("TransactionConflict"), {}], True),
        (HandBack(99, None, 100, 0), [lost(), {}], True),
    ],
)
def test_hand_back_sends_one_conditional_update_with_a_token(
    back: HandBack, answers: list[Any], applied: bool
) -> None:
    run = drive(hand_back(TICKETS, tickets(), back, Deadline(None)), answers)
    assert run.result is applied
    assert run.operations == ["transact_write_items"] * len(answers)
    # Every try is the same transaction: one token, so a late first try is not applied twice.
    assert len({r.params["ClientRequestToken"] for r in run.requests}) == 1
    (action,) = run.requests[0].params["TransactItems"]
    params = action["Update"]
    assert params["ConditionExpression"] == "#v = :top"
    assert params["ExpressionAttributeNames"] == {"#v": "last_id", "#ddbkeys_type": "ddbkeys_type"}
    assert params["ExpressionAttributeValues"][":top"] == {"N": str(back.top)}
    assert params["ExpressionAttributeValues"][":ddbkeys_type"] == {"S": "counter"}
    assert params["Key"] == {"pk": {"S": "tickets"}}
    # The counter item says what it is in the same write (for other readers of the table).
    if back.value is None:
        assert params["UpdateExpression"] == "REMOVE #v SET #ddbkeys_type = :ddbkeys_type"
    else:
        assert params["UpdateExpression"] == "SET #v = :value, #ddbkeys_type = :ddbkeys_type"
        assert params["ExpressionAttributeValues"][":value"] == {"N": str(back.value)}
    assert run.requests[0].billed == 2.0 and run.requests[0].count_refused
