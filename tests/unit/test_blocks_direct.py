"""Reservations of more than a block (BlockState, without a server): one write of their own
(``Direct``), in flight until answered like a block's. A block that may lie above such a
write's ids is not handed out while it is unanswered, and its ids are handed out once no
other such write may land below them, lowest first: so every id handed out is above every id
handed out before, whatever order the answers come in."""

from __future__ import annotations

import pytest

from ddbkeys.ids._blocks_core import BlockState
from ddbkeys.ids._blocks_steps import Direct, Hand, Step, Wait


def direct(state: BlockState, count: int = 50) -> Direct:
    step = state.take(count)
    assert isinstance(step, Direct), step
    return step


def arrive(state: BlockState, block: range) -> None:
    """The block asked for is sent and comes."""
    refill = state.claim_refill()
    assert refill is not None, "nothing was asked for"
    state.filled(refill, block)


@pytest.mark.parametrize(
    ("answer", "then", "skipped", "wasted"),
    [
        # (the breaker's scene) the write was applied first, its answer comes late: the block
        # above it waits for that answer, then goes out after its ids
        (range(1, 51), Hand(range(51, 52), refill=True), 0, 0),
        # the write was applied after the block: the block (below it) is dropped, a new one
        # is asked for
        (range(11, 61), Wait(1, refill=True), 10, 0),
        # the write failed (or was given up): the block goes out, nothing was reserved
        (None, Hand(range(51, 52), refill=True), 0, 0),
    ],
)
def test_a_block_that_came_while_a_write_of_more_than_a_block_was_unanswered_waits_for_it(
    answer: range | None, then: Step, skipped: int, wasted: int
) -> None:
    state = BlockState(10)
    reserve = direct(state)  # A: reserve(50), its answer late
    assert state.take(1) == Wait(0, refill=True)  # B: next(), nothing held
    arrive(state, range(1, 11) if answer == range(11, 61) else range(51, 61))
    assert state.take(1, ticket=0) == Wait(1)  # held back, and nothing more asked for
    if answer is None:
        state.forgone(reserve)
    else:
        assert state.reserved(reserve, answer) == answer  # A gets its ids at once
    assert state.take(1, ticket=1) == then  # then B
    assert (state.stats.skipped, state.stats.wasted) == (skipped, wasted)


@pytest.mark.parametrize(
    ("spare_before", "served"),
    [
        (True, True),  # reserved before the write was sent: below anything it may get
        (False, False),  # came after: it may lie above the write's ids
    ],
)
def test_what_was_known_when_the_write_was_sent_goes_on_being_handed_out(
    spare_before: bool, served: bool
) -> None:
    state = BlockState(10)
    assert state.take(1) == Wait(0, refill=True)
    arrive(state, range(1, 11))
    assert state.take(3) == Hand(range(1, 4), refill=True)
    if spare_before:
        arrive(state, range(11, 21))
    reserve = direct(state)
    assert state.take(1) == Hand(range(4, 5))  # the current block goes on
    assert state.take(6) == Hand(range(5, 11))
    if not spare_before:
        arrive(state, range(11, 21))
    step = state.take(1)
    assert isinstance(step, Hand) is served, step
    state.reserved(reserve, range(21, 71))
    if not served:  # the spare lies below the write's ids: dropped
        assert state.spare is None and state.stats.skipped == 10


# Events: ("send", who): a take of more than a block; ("answer", who, ids, returned): its
# write's answer, and what reserved() returns; ("fail", who), ("leave", who): its caller leaves
# without its ids. After each, the callers waiting take their ids when they can (woken, they
# call collect()).
Event = tuple[str, str] | tuple[str, str, range, range | None]
ONE, TWO, THREE = range(1, 51), range(51, 101), range(101, 151)


@pytest.mark.parametrize(
    ("events", "handed", "wasted"),
    [
        # answered in the order applied: the first waits for the second's answer (it might
        # have landed below), then goes first
        (
            [("send", "a"), ("send", "b"), ("answer", "a", ONE, None), ("answer", "b", TWO, None)],
            ["a", "b"],
            0,
        ),
        # answered the other way round: the second waits for the first's answer
        (
            [("send", "a"), ("send", "b"), ("answer", "b", TWO, None), ("answer", "a", ONE, ONE)],
            ["a", "b"],
            0,
        ),
        # applied the other way round (b first)
        (
            [("send", "a"), ("send", "b"), ("answer", "a", TWO, None), ("answer", "b", ONE, ONE)],
            ["b", "a"],
            0,
        ),
        (
            [("send", "a"), ("send", "b"), ("answer", "b", ONE, None), ("answer", "a", TWO, None)],
            ["b", "a"],
            0,
        ),
        # sent after the first was answered: it lands above, nobody waits
        (
            [("send", "a"), ("answer", "a", ONE, ONE), ("send", "b"), ("answer", "b", TWO, TWO)],
            ["a", "b"],
            0,
        ),
        # three, answered last to first: each goes once those below it went
        (
            [
                *[("send", who) for who in "abc"],
                ("answer", "c", THREE, None),
                ("answer", "b", TWO, None),
                ("answer", "a", ONE, ONE),
            ],
            ["a", "b", "c"],
            0,
        ),
        # the one waited for fails: the other goes
        ([("send", "a"), ("send", "b"), ("answer", "b", TWO, None), ("fail", "a")], ["b"], 0),
        # a caller waiting to take its ids leaves (its deadline, or cancelled): they are
        # wasted, the other goes
        (
            [
                ("send", "a"),
                ("send", "b"),
                ("answer", "a", ONE, None),
                ("leave", "a"),
                ("answer", "b", TWO, TWO),
            ],
            ["b"],
            50,
        ),
    ],
)
def test_writes_of_more_than_a_block_are_handed_out_lowest_first(
    events: list[Event], handed: list[str], wasted: int
) -> None:
    state = BlockState(10)
    sent: dict[str, Direct] = {}
    waiting: list[str] = []
    order: list[tuple[str, range]] = []
    for event in events:
        kind, who = event[0], event[1]
        if kind == "send":
            sent[who] = direct(state)
        elif len(event) == 4:
            got = state.reserved(sent[who], event[2])
            assert got == event[3], event
            if got is None:
                waiting.append(who)
            else:
                order.append((who, got))
        else:
            state.forgone(sent[who])
            if who in waiting:
                waiting.remove(who)
        woken = True
        while woken:
            woken = False
            for other in list(waiting):
                got = state.collect(sent[other])
                if got is not None:
                    waiting.remove(other)
                    order.append((other, got))
                    woken = True
    assert not waiting
    assert [who for who, _ in order] == handed
    ids = [i for _, got in order for i in got]
    assert ids == sorted(ids)
    assert state.stats.wasted == wasted and not state.directs and not state.answered


def test_a_block_above_ids_answered_and_not_taken_yet_waits_for_them() -> None:
    state = BlockState(10)
    first, second = direct(state), direct(state)
    assert state.take(1) == Wait(0, refill=True)
    arrive(state, range(101, 111))
    assert state.reserved(second, range(51, 101)) is None  # the first may land below
    assert state.reserved(first, range(1, 51)) == range(1, 51)
    assert state.take(1, ticket=1) == Wait(1)  # 51..100 are to go out first
    assert state.collect(second) == range(51, 101)
    assert state.take(1, ticket=1) == Hand(range(101, 102), refill=True)
    assert state.stats.skipped == 0


def test_a_caller_that_waited_through_its_deadline_is_told_why() -> None:
    state = BlockState(10, table="tickets")
    late = state.late_error(5.0, Direct(50, 1))
    assert str(late).startswith(
        "The 50 ids reserved on table 'tickets' came, but another reservation of more than a "
        "block, whose ids may lie below them, was still unanswered or not handed out after the "
        "5 s deadline"
    )
    assert late.seconds == 5.0 and late.table == "tickets"
