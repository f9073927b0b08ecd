"""Two reservations in flight (BlockState, without a server): when the callers outrun a block
asked for ahead, a second one goes beside it; a block is handed out only once no reservation
in flight may land below it, so ids keep increasing whatever order the answers come in; never
more than two blocks held."""

from __future__ import annotations

import pytest

from ddbkeys.ids._blocks_core import BlockState
from ddbkeys.ids._blocks_steps import CloseReport, Hand, HandBack, Refill, Wait


def two_in_flight() -> tuple[BlockState, Refill, Refill]:
    """Blocks of 10; 1..10 handed out while the block asked for ahead (at the first id) is in
    flight: the caller finding nothing asks for a second one."""
    state = BlockState(10)
    assert state.take(1) == Wait(0, refill=True)
    first = state.claim_refill()
    assert first is not None
    state.filled(first, range(1, 11))
    assert state.take(1) == Hand(range(1, 2), refill=True)  # the block after, asked ahead
    ahead = state.claim_refill()
    assert ahead is not None and state.take(9) == Hand(range(2, 11))
    assert state.take(1) == Wait(1, refill=True)  # outran: a second reservation beside it
    assert state.take(1) == Wait(1)  # (and no third)
    second = state.claim_refill()
    assert second is not None and state.claim_refill() is None
    return state, ahead, second


def taken(state: BlockState) -> int:
    step = state.take(1)
    assert isinstance(step, Hand), step
    return step.ids[0]


@pytest.mark.parametrize(
    ("answers", "handed_after_each"),
    [
        # applied in the order sent, answered in that order: the first waits for the second
        # (sent before it was answered, it might have landed below)
        ([("ahead", range(11, 21)), ("second", range(21, 31))], [False, True]),
        # applied the other way round (the second first), answered in the order sent
        ([("ahead", range(21, 31)), ("second", range(11, 21))], [False, True]),
        # answered the other way round
        ([("second", range(11, 21)), ("ahead", range(21, 31))], [False, True]),
        ([("second", range(21, 31)), ("ahead", range(11, 21))], [False, True]),
        # another process between them
        ([("ahead", range(11, 21)), ("second", range(41, 51))], [False, True]),
    ],
)
def test_blocks_in_flight_together_are_handed_out_lowest_first_once_both_ended(
    answers: list[tuple[str, range]], handed_after_each: list[bool]
) -> None:
    state, ahead, second = two_in_flight()
    refills = {"ahead": ahead, "second": second}
    for (which, block), handed in zip(answers, handed_after_each, strict=True):
        state.filled(refills[which], block)
        step = state.take(1, ticket=1)
        assert isinstance(step, Hand) is handed, step
    blocks = sorted((block for _, block in answers), key=lambda block: block.start)
    got = [taken(state) for _ in range(19)]  # (the first was taken above)
    assert [blocks[0].start, *got] == [*blocks[0], *blocks[1]]
    assert state.stats.skipped == 0 and state.stats.refills == 3


def test_a_reservation_sent_after_a_block_came_does_not_hold_it_back() -> None:
    state = BlockState(10)
    assert state.take(1) == Wait(0, refill=True)
    first = state.claim_refill()
    assert first is not None
    state.filled(first, range(1, 11))
    assert state.take(1) == Hand(range(1, 2), refill=True)
    ahead = state.claim_refill()
    assert ahead is not None
    state.filled(ahead, range(11, 21))
    assert state.take(9) == Hand(range(2, 11))
    # 11..20 is current; its first id asks for the next block, sent now: it lands above 20
    assert state.take(1) == Hand(range(11, 12), refill=True)
    assert state.claim_refill() is not None
    assert state.take(9) == Hand(range(12, 21))


def test_one_of_two_failing_is_no_callers_error_while_the_other_may_serve() -> None:
    state, ahead, second = two_in_flight()
    state.failed(ahead, RuntimeError("throttled"))
    assert state.take(1, ticket=1) == Wait(2)  # the second is still in flight: wait for it
    state.filled(second, range(11, 21))
    assert state.take(1, ticket=2) == Hand(range(11, 12), refill=True)


def test_both_failing_is_the_error_of_the_callers_waiting() -> None:
    state, ahead, second = two_in_flight()
    state.failed(ahead, RuntimeError("first"))
    state.failed(second, error := RuntimeError("second"))
    with pytest.raises(RuntimeError) as raised:
        state.take(1, ticket=1)
    assert type(raised.value) is type(error) and raised.value.args == error.args
    assert state.take(1) == Wait(3, refill=True)  # a new caller asks again


def test_never_more_than_two_blocks_held_or_asked() -> None:
    state, ahead, _ = two_in_flight()
    for _ in range(5):
        assert state.take(1) == Wait(1)  # stalls: nothing more is asked
    state.filled(ahead, range(11, 21))
    assert state.take(1) == Wait(2)
    assert len(state.queue) + len(state.flight) + len(state.asked) == 2


def test_without_prefetch_there_is_never_a_second() -> None:
    state = BlockState(10, prefetch=False)
    assert state.take(1) == Wait(0, refill=True)
    assert state.claim_refill() is not None
    assert state.take(1) == Wait(0)
    assert state.claim_refill() is None


@pytest.mark.parametrize(
    ("blocks", "back", "report"),
    [
        # both came before the hand-back was decided, next to each other: all go back
        ([range(11, 21), range(21, 31)], HandBack(30, 10, 20, 0), CloseReport(20, 0, True)),
        # another process between them: the higher goes back, the lower is wasted
        ([range(11, 21), range(41, 51)], HandBack(50, 40, 10, 10), CloseReport(10, 10, True)),
    ],
)
def test_close_waits_for_both_and_hands_back_what_follows_on(
    blocks: list[range], back: HandBack, report: CloseReport
) -> None:
    state, ahead, second = two_in_flight()
    state.close()
    assert state.fetching  # both in flight: the driver waits for them
    state.filled(second, blocks[1])
    assert state.fetching
    state.filled(ahead, blocks[0])
    assert not state.fetching
    assert state.release() == back
    assert state.closed_with(back, applied=True) == report


@pytest.mark.parametrize(
    ("max_block_size", "second", "size_after"),
    [
        (10, True, 10),  # a fixed size: a second reservation beside the first
        (40, False, 20),  # room to grow: the next blocks double, no second reservation
        (15, False, 15),
    ],
)
def test_blocks_that_can_grow_grow_instead_of_a_second_reservation(
    max_block_size: int, second: bool, size_after: int
) -> None:
    ticks = iter(range(1000))  # a block lasts a second: the lifetime (1 s) keeps the size
    state = BlockState(
        10, max_block_size=max_block_size, block_lifetime=1.0, clock=lambda: next(ticks)
    )
    assert state.take(1) == Wait(0, refill=True)
    first = state.claim_refill()
    assert first is not None
    state.filled(first, range(1, 11))
    assert state.take(10).refill  # the block after, asked for ahead
    assert state.take(1) == Wait(1, refill=second)
    assert (state.block_size, len(state.asked)) == (size_after, 2 if second else 1)


def test_a_failure_reaches_the_callers_waiting_though_a_newer_caller_asked_again() -> None:
    """(Found by a breaker: under steady load the callers waiting for a failed reservation
    waited for the next one, asked for by a newer caller, and so on, far past the deadline.)"""
    state = BlockState(10)
    assert state.take(1) == Wait(0, refill=True)  # A waits
    first = state.claim_refill()
    assert first is not None
    state.failed(first, error := RuntimeError("throttled"))
    assert state.take(1) == Wait(1, refill=True)  # B, new, asks again before A woke
    with pytest.raises(RuntimeError) as raised:
        state.take(1, ticket=0)  # A: what it waited for failed
    assert type(raised.value) is type(error) and raised.value.args == error.args
    assert state.take(1, ticket=1) == Wait(1)  # B waits for its own


def test_a_caller_out_of_time_is_told_whether_the_endpoint_answered() -> None:
    """The error of a caller that waited through its deadline says what it waited for: a
    reservation that had no answer for most of that time (an endpoint that does not answer),
    or reservations that were answered but did not keep up."""
    now = [0.0]
    state = BlockState(10, table="orders", clock=lambda: now[0])
    assert state.take(1) == Wait(0, refill=True)
    assert state.claim_refill() is not None  # sent at 0 s, never answered
    now[0] = 2.0
    unanswered = str(state.late_error(2.0))
    assert unanswered == (
        "No block of ids came within the 2 s deadline on table 'orders': the block's "
        "reservation, sent 2.0 s before, had no answer yet (is the endpoint slow, or not "
        "answering?). Give the counter a longer deadline if the endpoint is only slow."
    )
    busy = BlockState(10, table="orders", clock=lambda: now[0])
    assert busy.take(1) == Wait(0, refill=True)
    assert str(busy.late_error(2.0)) == (  # (nothing sent yet: waiting for a turn)
        "No block of ids came within the 2 s deadline on table 'orders': the allocator's "
        "reservations did not keep up with its callers (1 stalls so far). Give the counter a "
        "longer deadline, or the allocator larger blocks (block_size, max_block_size)."
    )
