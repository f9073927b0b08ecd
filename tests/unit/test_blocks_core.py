"""The block allocator's decisions (BlockState), without a server; and both forms of its
concurrency over a counter stand-in, for what a real server cannot produce on demand (a
reservation that fails or hangs while callers wait for it)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, cast

import pytest

from ddbkeys.aio.blocks import BlockAllocator as AsyncBlockAllocator
from ddbkeys.errors import ConfigurationError
from ddbkeys.ids.blocks import BlockAllocator, BlockState, Direct, Fetch, Hand, Step, Wait


def filled(block_size: int, *blocks: range, prefetch: bool = True) -> BlockState:
    """A state whose current block is ``blocks[0]``, none of it handed out (and ``blocks[1]``,
    if given, the spare)."""
    state = BlockState(block_size, prefetch=prefetch)
    assert state.take(1) == Fetch()
    state.filled(blocks[0])
    state.block, state.position, state.spare = blocks[0], 0, None
    if len(blocks) > 1:
        state.filled(blocks[1])
    return state


# --- handing out and prefetching -------------------------------------------------------------


def test_nothing_held_one_caller_reserves_the_others_wait() -> None:
    state = BlockState(10)
    assert state.take(1) == Fetch()
    assert state.fetching
    assert state.take(1) == Wait(0)
    assert state.take(3) == Wait(0)
    state.filled(range(1, 11))
    assert not state.fetching and state.spare == range(1, 11)
    assert state.take(1, ticket=0) == Hand(range(1, 2))


@pytest.mark.parametrize(
    ("block_size", "prefetch", "takes", "expected"),
    [
        # blocks of 10: the prefetch is asked for once, by the take that leaves 5
        (10, True, [1, 1, 1, 1, 1, 1, 1], [False, False, False, False, True, False, False]),
        (10, True, [4, 1, 1], [False, True, False]),
        (10, True, [10], [True]),
        (10, False, [1] * 10, [False] * 10),
        (1, True, [1], [True]),  # a block of 1: the next one at once
        (3, True, [1, 1, 1], [False, True, False]),  # 3 // 2 = 1 left
    ],
)
def test_prefetch_once_half_the_block_is_handed_out(
    block_size: int, prefetch: bool, takes: list[int], expected: list[bool]
) -> None:
    state = filled(block_size, range(1, block_size + 1), prefetch=prefetch)
    got = []
    for count in takes:
        step = state.take(count)
        assert isinstance(step, Hand)
        got.append(step.prefetch)
    assert got == expected
    assert state.fetching == any(expected)


def test_ids_are_handed_out_in_order_with_the_counters_step() -> None:
    state = filled(5, range(10, 60, 10), prefetch=False)
    handed = [state.take(count) for count in (1, 2, 2)]
    assert handed == [Hand(range(10, 20, 10)), Hand(range(20, 40, 10)), Hand(range(40, 60, 10))]
    assert state.take(1) == Fetch()


# --- reserve(count): a slice, the next block, or one write of its own ------------------------


@pytest.mark.parametrize(
    ("spare", "fetching", "count", "expected", "block_after"),
    [
        # fits in what is left (4 of 1..10 are handed out): a slice
        (None, False, 6, Hand(range(5, 11), prefetch=True), range(1, 11)),
        # does not fit, a spare is held: the rest (5..10) is skipped, the spare is sliced
        (range(11, 21), False, 7, Hand(range(11, 18), prefetch=True), range(11, 21)),
        (range(11, 21), False, 10, Hand(range(11, 21), prefetch=True), range(11, 21)),
        # does not fit, nothing spare: reserve one, or wait for the one being reserved
        (None, False, 7, Fetch(), range(1, 11)),
        (None, True, 7, Wait(1), range(1, 11)),  # (one reservation ended: the first block)
        # more than a block: one write of its own, whatever is held
        (range(11, 21), False, 11, Direct(11), range(1, 11)),
        (None, True, 500, Direct(500), range(1, 11)),
    ],
)
def test_reserve_count(
    spare: range | None, fetching: bool, count: int, expected: Step, block_after: range
) -> None:
    state = filled(10, range(1, 11), prefetch=True)
    assert state.take(4) == Hand(range(1, 5))
    state.spare, state.fetching = spare, fetching
    assert state.take(count) == expected
    assert state.block == block_after


@pytest.mark.parametrize(
    ("block", "spare", "direct", "block_after", "spare_after"),
    [
        # the blocks held below the direct ids are dropped
        (range(1, 11), range(11, 21), range(21, 521), range(0), None),
        # a block above them (another process wrote in between... of ours, a later one) is kept
        (range(1, 11), range(600, 610), range(21, 521), range(0), range(600, 610)),
        (range(600, 610), None, range(21, 521), range(600, 610), None),
    ],
)
def test_direct_ids_drop_the_blocks_below_them(
    block: range,
    spare: range | None,
    direct: range,
    block_after: range,
    spare_after: range | None,
) -> None:
    state = filled(10, block, *([spare] if spare else []))
    assert state.reserved(direct) == direct
    assert (state.block, state.spare, state.floor) == (block_after, spare_after, direct.stop)


def test_a_block_reserved_below_direct_ids_is_dropped_when_it_arrives() -> None:
    state = filled(10, range(1, 11))
    step = state.take(6)
    assert step == Hand(range(1, 7), prefetch=True)
    assert state.take(20) == Direct(20)
    state.reserved(range(21, 41))  # sent while the prefetch was in flight, answered first
    state.filled(range(11, 21))  # the prefetch's block: below ids handed out, dropped
    assert state.spare is None and not state.fetching
    assert state.take(1) == Fetch()
    state.filled(range(41, 51))
    assert state.take(1) == Hand(range(41, 42))


def test_direct_ids_keep_the_highest_floor() -> None:
    state = BlockState(10)
    state.reserved(range(101, 201))
    state.reserved(range(21, 41))  # a concurrent direct reservation, answered later
    assert state.floor == 201
    state.reserved(range(0))
    assert state.floor == 201


# --- a reservation that fails or is given up --------------------------------------------------


class Throttled(Exception):
    pass


def test_a_failed_reservation_is_the_error_of_those_who_waited_for_it() -> None:
    state = BlockState(10)
    assert state.take(1) == Fetch()
    waiting = state.take(1)
    assert waiting == Wait(0)
    error = Throttled("slow down")
    state.failed(error)
    assert not state.fetching
    with pytest.raises(Throttled) as raised:
        state.take(1, ticket=0)
    assert raised.value is error
    # a caller that did not wait for it reserves again, and new callers wait for that one
    assert state.take(1) == Fetch()
    assert state.take(1) == Wait(1)
    state.failed(second := Throttled("again"))
    with pytest.raises(Throttled) as raised:
        state.take(1, ticket=1)
    assert raised.value is second


def test_failure_then_success_hands_out_ids() -> None:
    state = BlockState(10)
    state.take(1)
    state.failed(Throttled())
    assert state.take(1) == Fetch()
    state.filled(range(1, 11))
    assert state.failure is None
    assert state.take(1, ticket=0) == Hand(range(1, 2))


def test_the_error_reaches_only_callers_who_cannot_be_served() -> None:
    state = filled(10, range(1, 11), prefetch=True)
    assert state.take(5) == Hand(range(1, 6), prefetch=True)
    state.failed(Throttled())  # the prefetch failed: the current block still serves...
    assert state.take(5, ticket=1) == Hand(range(6, 11), prefetch=True)  # ...and asks again
    state.failed(Throttled())
    with pytest.raises(Throttled):
        state.take(1, ticket=2)


def test_an_abandoned_reservation_is_taken_again_without_error() -> None:
    state = BlockState(10)
    assert state.take(1) == Fetch()
    assert state.take(1) == Wait(0)
    state.abandoned()
    assert state.take(1, ticket=0) == Fetch()


# --- both forms over a counter stand-in --------------------------------------------------------


class Counter:
    """Stands in for AtomicCounter: blocks from 1 up, optionally failing or held."""

    table = "stand-in"

    def __init__(self, fail: BaseException | None = None) -> None:
        self.last = 0
        self.calls: list[int] = []
        self.fail = fail
        self.release = threading.Event()
        self.release.set()

    def _reserve(self, count: int) -> range:
        self.calls.append(count)
        if self.fail is not None:
            raise self.fail
        first, self.last = self.last + 1, self.last + count
        return range(first, self.last + 1)

    def reserve(self, count: int) -> range:
        assert self.release.wait(5)
        return self._reserve(count)


class AsyncCounter(Counter):
    async def reserve(self, count: int) -> range:  # type: ignore[override]
        while not self.release.is_set():
            await asyncio.sleep(0.001)
        return self._reserve(count)


def test_sync_allocator_hands_the_error_to_every_waiting_thread() -> None:
    counter = Counter(fail=Throttled("busy"))
    counter.release.clear()
    blocks = BlockAllocator(cast(Any, counter), 10)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            blocks.next()
        except Throttled as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    time.sleep(0.05)  # (callers that come after the failure send their own, failing too)
    counter.release.set()
    for thread in threads:
        thread.join(5)
    # the one that sent it and every caller that waited for it; late ones sent their own
    assert len(errors) == 8
    assert counter.calls and all(c == 10 for c in counter.calls)


def test_sync_allocator_a_failed_prefetch_is_not_its_callers_error() -> None:
    counter = Counter()
    blocks = BlockAllocator(cast(Any, counter), 10)
    assert [blocks.next() for _ in range(4)] == [1, 2, 3, 4]
    counter.fail = Throttled()
    assert blocks.next() == 5  # it sent the prefetch, which failed
    assert [blocks.next() for _ in range(5)] == [6, 7, 8, 9, 10]
    with pytest.raises(Throttled):
        blocks.next()
    counter.fail = None
    assert blocks.next() == 11
    assert blocks.reserve(3) == range(12, 15)
    assert blocks.reserve(25) == range(21, 46)  # one write of its own; 15..20 dropped
    assert blocks.next() == 46
    with pytest.raises(ConfigurationError, match="count must be a whole number"):
        blocks.reserve(0)
    with pytest.raises(ConfigurationError, match="block_size must be a whole number"):
        BlockAllocator(cast(Any, counter), 0)


def test_async_allocator_one_reservation_for_64_tasks_and_its_error_for_all() -> None:
    async def main() -> None:
        counter = AsyncCounter()
        counter.release.clear()
        blocks = AsyncBlockAllocator(cast(Any, counter), 100)
        calls = [asyncio.create_task(blocks.next()) for _ in range(64)]
        await asyncio.sleep(0.01)
        assert counter.calls == [] and not any(c.done() for c in calls)
        calls[0].cancel()  # the caller that asked for the block: the block still comes
        counter.release.set()
        got = await asyncio.gather(*calls[1:])
        assert sorted(got) == list(range(1, 64))
        assert counter.calls[0] == 100

        failing = AsyncCounter(fail=Throttled("busy"))
        failing.release.clear()
        broken = AsyncBlockAllocator(cast(Any, failing), 10)
        waiting = [asyncio.create_task(broken.reserve(2)) for _ in range(16)]
        await asyncio.sleep(0.01)
        failing.release.set()
        results = await asyncio.gather(*waiting, return_exceptions=True)
        assert all(isinstance(r, Throttled) for r in results)
        assert failing.calls == [10]

    asyncio.run(main())
