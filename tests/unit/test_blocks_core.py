"""The block allocator's decisions (BlockState), without a server: when the next block is asked
for, how its size adapts (a fake clock), what close() hands back, and the hand-back's write
driven by hand (close(): test_blocks_close.py)."""

from __future__ import annotations

from typing import Any

import pytest

from ddbkeys._errors import ConfigurationError
from ddbkeys.ids._blocks_core import BlockState
from ddbkeys.ids._blocks_steps import Direct, Hand, Step, Wait, adapt_block_size
from tests.support.blocks_state import Clock, arrive, claimed, fail, held, in_flight, next_id

# --- when the next block is asked for (refill_at) ----------------------------------------------


@pytest.mark.parametrize(
    ("block_size", "refill_at", "prefetch", "paths"),
    [
        # the take that hands out refill_at of the block asks (at least the first take)
        (10, 0.1, True, "S" + "s" * 9),
        (10, 0.5, True, "ssssSsssss"),
        (10, 0.45, True, "ssssSsssss"),  # 4.5 ids: the fifth
        (10, 1.0, True, "sssssssssS"),  # at the last id: the next caller may stall
        (10, 0.1, False, "ssssssssss"),  # no refill ahead
        (100, 0.1, True, "s" * 9 + "S" + "s" * 90),
        (1, 0.1, True, "S"),
        (3, 0.5, True, "sSs"),
        (2, 1.0, True, "sS"),
    ],
)
def test_the_next_block_is_asked_for_once_refill_at_of_the_block_is_handed_out(
    block_size: int, refill_at: float, prefetch: bool, paths: str
) -> None:
    state = held(range(1, block_size + 1), refill_at=refill_at, prefetch=prefetch)
    got = [next_id(state) for _ in range(block_size)]
    assert [i for i, _ in got] == list(range(1, block_size + 1))
    assert "".join(p for _, p in got) == paths
    assert state.fetching == ("S" in paths)
    if prefetch:
        assert claimed(state).size == block_size and state.claim_refill() is None
    assert state.stats.stalls == 0


def test_a_refill_in_flight_or_a_spare_held_asks_for_nothing_more() -> None:
    state = held(range(1, 11), refill_at=0.1)
    assert next_id(state) == (1, "S")
    arrive(state, range(11, 21))  # the spare: nothing is asked while it is held
    assert [next_id(state)[1] for _ in range(9)] == ["s"] * 9
    assert next_id(state) == (11, "S")  # the spare is current: the next one is asked for


def test_nothing_held_one_caller_asks_the_others_wait_and_count_as_stalls() -> None:
    state = BlockState(10)
    assert state.take(1) == Wait(0, refill=True)
    assert state.fetching and claimed(state).size == 10
    assert state.take(1) == Wait(0)
    assert state.take(3) == Wait(0)
    assert state.stats.stalls == 3
    arrive(state, range(1, 11))
    assert not state.fetching and state.spare == range(1, 11)
    assert state.take(1, ticket=0) == Hand(range(1, 2), refill=True)
    assert state.stats.stalls == 3  # (a caller that waited is counted once)
    assert state.stats.refills == 1


def test_ids_are_handed_out_in_order_with_the_counters_step() -> None:
    state = held(range(10, 60, 10), prefetch=False)
    handed = [state.take(count) for count in (1, 2, 2)]
    assert handed == [Hand(range(10, 20, 10)), Hand(range(20, 40, 10)), Hand(range(40, 60, 10))]
    assert state.take(1) == Wait(1, refill=True)  # prefetch=False: every block is a stall
    assert state.stats.stalls == 1


# --- reserve(count): a slice, the next block, or one write of its own ------------------------


@pytest.mark.parametrize(
    ("spare", "fetching", "count", "expected", "block_after", "skipped"),
    [
        # fits in what is left (4 of 1..10 are handed out): a slice (and, with nothing in
        # flight, the next block is asked for)
        (None, False, 6, Hand(range(5, 11), refill=True), range(1, 11), 0),
        (None, True, 6, Hand(range(5, 11)), range(1, 11), 0),
        # does not fit, a spare is held: the rest (5..10) is skipped, the spare is sliced
        (range(11, 21), False, 7, Hand(range(11, 18), refill=True), range(11, 21), 6),
        (range(11, 21), False, 10, Hand(range(11, 21), refill=True), range(11, 21), 6),
        # does not fit, nothing spare: wait for the block being reserved (asked for ahead:
        # it did not keep up, a second one goes beside it), or ask for one
        (None, True, 7, Wait(1, refill=True), range(1, 11), 0),
        (None, False, 7, Wait(1, refill=True), range(1, 11), 0),
        # more than a block: one write of its own, whatever is held
        (range(11, 21), False, 11, Direct(11, 3), range(1, 11), 0),
        (None, True, 500, Direct(500, 3), range(1, 11), 0),
        # a spare too small for it (the size grew since): one write of its own too
        (range(11, 16), False, 8, Direct(8, 3), range(1, 11), 0),
    ],
)
def test_reserve_count(
    spare: range | None,
    fetching: bool,
    count: int,
    expected: Step,
    block_after: range,
    skipped: int,
) -> None:
    state = held(range(1, 11))
    assert state.take(4) == Hand(range(1, 5), refill=True)
    claimed(state)  # the block asked for ahead: in flight, or else ended (the spare, or none)
    state.queue = [spare] if spare else []
    if not fetching:
        state.flight.clear()
        state.ahead = False
    assert state.take(count) == expected
    assert state.block == block_after
    assert state.stats.skipped == skipped


@pytest.mark.parametrize(
    ("spare", "direct", "block_after", "spare_after", "skipped"),
    [
        # the blocks held below the direct ids are dropped
        (range(11, 21), range(21, 521), range(0), None, 7 + 10),
        # a block above them (reserved later, answered first) is kept
        (range(600, 610), range(21, 521), range(0), range(600, 610), 7),
    ],
)
def test_direct_ids_drop_the_blocks_below_them(
    spare: range | None,
    direct: range,
    block_after: range,
    spare_after: range | None,
    skipped: int,
) -> None:
    state = held(range(1, 11))
    state.take(3)
    arrive(state, spare) if spare else None
    step = state.take(len(direct))
    assert isinstance(step, Direct)
    assert state.reserved(step, direct) == direct
    assert (state.block, state.spare, state.floor) == (block_after, spare_after, direct.stop)
    assert state.stats.skipped == skipped
    assert state.top == max(direct[-1], spare[-1] if spare else 0)


def test_a_block_reserved_below_direct_ids_is_dropped_when_it_arrives() -> None:
    state = held(range(1, 11))
    assert state.take(6) == Hand(range(1, 7), refill=True)
    assert (direct := state.take(20)) == Direct(20, 2)
    assert state.reserved(direct, range(21, 41))  # sent while the refill was asked for
    arrive(state, range(11, 21))  # the refill's block: below ids handed out, dropped
    assert state.spare is None and not state.fetching
    assert state.take(1) == Wait(2, refill=True)
    arrive(state, range(41, 51))
    assert state.take(1) == Hand(range(41, 42), refill=True)


# --- a reservation that fails or is given up --------------------------------------------------


class Throttled(Exception):
    pass


def test_a_failed_reservation_is_the_error_of_those_who_waited_for_it() -> None:
    state = BlockState(10)
    assert state.take(1) == Wait(0, refill=True)
    waiting = state.take(1)
    assert waiting == Wait(0)
    error = Throttled("slow down")
    fail(state, error)
    assert not state.fetching and state.stats.failed_refills == 1
    with pytest.raises(Throttled) as raised:
        state.take(1, ticket=0)
    assert type(raised.value) is type(error) and raised.value.args == error.args
    # a caller that did not wait for it asks again, and new callers wait for that one
    assert state.take(1) == Wait(1, refill=True)
    assert state.take(1) == Wait(1)
    fail(state, second := Throttled("again"))
    with pytest.raises(Throttled) as raised:
        state.take(1, ticket=1)
    assert type(raised.value) is type(second) and raised.value.args == second.args


def test_failure_then_success_hands_out_ids() -> None:
    state = BlockState(10)
    state.take(1)
    fail(state, Throttled())
    assert state.take(1) == Wait(1, refill=True)
    arrive(state, range(1, 11))
    assert state.failure is None
    assert state.take(1, ticket=1) == Hand(range(1, 2), refill=True)


def test_a_failed_refill_ahead_reaches_only_callers_who_cannot_be_served() -> None:
    state = held(range(1, 11), refill_at=0.5)
    assert state.take(5) == Hand(range(1, 6), refill=True)
    fail(state, Throttled())  # the current block still serves, and the next take asks again
    assert next_id(state) == (6, "S")
    assert [next_id(state) for _ in range(4)] == [(7, "s"), (8, "s"), (9, "s"), (10, "s")]
    fail(state, Throttled())
    with pytest.raises(Throttled):
        state.take(1, ticket=2)


def test_an_abandoned_reservation_is_asked_again_without_error() -> None:
    state = BlockState(10)
    assert state.take(1) == Wait(0, refill=True)
    assert state.take(1) == Wait(0)
    state.abandoned(in_flight(state, None))
    assert state.take(1, ticket=0) == Wait(1, refill=True)


# --- adaptive size ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "lifetime", "expected"),
    [
        (100, 0.5, 200),  # under the target (10 s): doubled
        (100, 9.99, 200),
        (100, 10.0, 100),  # between the target and twice it: kept
        (100, 20.0, 100),
        (100, 20.01, 50),  # over twice the target: halved
        (800, 0.1, 1000),  # within the bounds (50..1000)
        (60, 100.0, 50),
        (50, 100.0, 50),
        (1000, 0.0, 1000),
        (101, 30.0, 50),  # 50.5 rounds down, and stays within the bounds
    ],
)
def test_adapt_block_size(size: int, lifetime: float, expected: int) -> None:
    assert adapt_block_size(size, lifetime, target=10.0, smallest=50, largest=1000) == expected


def run_blocks(state: BlockState, clock: Clock, rates: list[float]) -> list[tuple[int, int]]:
    """For each rate (ids per second), the spare becomes current and is used up at that rate;
    the block asked for meanwhile then arrives with the size asked. (Each block's length, the
    size decided after it.)"""
    top = state.top or 0
    seen = []
    for rate in rates:
        next_id(state)  # the spare becomes current (the clock read)
        length = len(state.block)
        clock.now += length / rate
        while state.left:
            next_id(state)  # the last id's take measures how long the block lasted
        size = claimed(state).size
        arrive(state, range(top + 1, top + 1 + size))
        top += size
        seen.append((length, state.block_size))
    return seen


def test_the_size_doubles_when_blocks_go_fast_and_halves_when_they_go_slowly() -> None:
    clock = Clock()
    state = held(
        range(1, 101), min_block_size=50, max_block_size=800, block_lifetime=10.0, clock=clock
    )
    seen = run_blocks(state, clock, [100.0] * 5 + [5.0] * 5)
    # 100 ids/s: a block of 800 lasts 8 s (under 10: the bound stops it); 5 ids/s: a block
    # of 100 lasts 20 s (not over twice 10: kept). A block is asked for at 10% of the one
    # before, so the lengths follow the decided size one block late.
    assert [size for _, size in seen] == [200, 400, 800, 800, 800, 400, 200, 100, 100, 100]
    assert [length for length, _ in seen] == [100, 100, 200, 400, 800, 800, 800, 400, 200, 100]


def test_adaptation_projects_the_rate_onto_the_size_to_come() -> None:
    clock = Clock()
    state = held(
        range(1, 101), min_block_size=100, max_block_size=10_000, block_lifetime=10.0, clock=clock
    )
    assert [next_id(state)[0] for _ in range(10)] == list(range(1, 11))
    assert claimed(state).size == 100
    state.block_size = 400  # (as if it had grown since this block was asked for)
    clock.now += 3.0
    for _ in range(90):
        next_id(state)
    # 100 ids in 3 s: a block of 400 would last 12 s, within the band: kept (not doubled)
    assert state.block_size == 400


def test_a_block_skipped_before_its_end_is_measured_on_what_it_handed_out() -> None:
    clock = Clock()
    state = held(range(1, 11), max_block_size=1000, block_lifetime=10.0, clock=clock)
    assert state.take(4) == Hand(range(1, 5), refill=True)
    arrive(state, range(11, 21))
    clock.now += 100.0  # 4 ids in 100 s: a block of 10 would last 250 s
    assert state.take(8) == Hand(range(11, 19), refill=True)  # 5..10 skipped
    assert state.block_size == 10  # halved, but not below min_block_size (10)
    assert state.stats.skipped == 6


def test_a_fixed_size_reads_the_clock_only_to_date_a_reservation_sent() -> None:
    reads = [0]

    def clock() -> float:
        reads[0] += 1
        return 0.0

    state = held(range(1, 11), clock=clock)  # one reservation sent
    for _ in range(10):
        next_id(state)
    assert claimed(state).size == 10  # the one after, asked for at the first id
    assert state.block_size == 10 and not state.adaptive
    assert reads[0] == state.sent == 2  # (for a caller's error: how long it went unanswered)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"block_size": 0}, r"block_size must be a whole number from 1 to 10\*\*38 - 1, not 0"),
        ({"min_block_size": 0}, "min_block_size must be a whole number from 1 to"),
        ({"max_block_size": 50}, r"block_size \(100\) must lie between min_block_size \(100\)"),
        ({"min_block_size": 200}, r"between min_block_size \(200\) and max_block_size \(100\)"),
        ({"refill_at": 0}, "refill_at must be a number above 0 and at most 1"),
        ({"refill_at": 1.5}, "refill_at must be a number above 0 and at most 1"),
        ({"refill_at": True}, "refill_at must be a number above 0 and at most 1"),
        ({"block_lifetime": 0}, "block_lifetime must be a number of seconds above 0"),
        ({"block_lifetime": "60"}, "block_lifetime must be a number of seconds above 0"),
    ],
)
def test_settings_are_checked(settings: dict[str, Any], message: str) -> None:
    settings.setdefault("block_size", 100)
    with pytest.raises(ConfigurationError, match=message):
        BlockState(**settings)


@pytest.mark.parametrize(
    ("settings", "asked_ahead", "size_after"),
    [
        # the block asked for ahead is still on its way when the current one runs out: the
        # blocks are too small for the time a reservation takes; doubled, once for that block
        ({"max_block_size": 100}, True, 20),
        ({"max_block_size": 15}, True, 15),  # within the bounds
        ({}, True, 10),  # a fixed size
        # nothing was asked ahead (prefetch=False, or the first block): waiting is expected
        ({"max_block_size": 100, "prefetch": False}, False, 10),
    ],
)
def test_a_refill_ahead_that_does_not_keep_up_doubles_the_size(
    settings: dict[str, Any], asked_ahead: bool, size_after: int
) -> None:
    ticks = iter(range(1000))
    # each block lasts 1 s, the target: the size is kept when a block is used up
    state = held(range(1, 11), block_lifetime=1.0, clock=lambda: next(ticks), **settings)
    assert state.take(10).refill is asked_ahead
    # nothing held: the first caller asks, unless a block is on its way (asked for ahead: it
    # did not keep up, so the next blocks grow; at the largest size, a second reservation
    # goes beside it instead)
    second = asked_ahead and size_after == 10
    assert state.take(1) == Wait(1, refill=not asked_ahead or second)
    assert state.take(1) == Wait(1)  # a second caller waiting for the same blocks
    assert len(state.asked) == (2 if second else 1)
    assert state.block_size == size_after
    assert state.stats.stalls == 2


def test_the_first_block_does_not_double_the_size() -> None:
    state = BlockState(10, max_block_size=100)
    assert state.take(1) == Wait(0, refill=True)
    assert state.take(1) == Wait(0)
    assert state.block_size == 10
