"""Both forms of the block allocator over a counter stand-in, with a reservation of more than a
block (one write of its own) whose answer comes late, fails, or is waited for past the
deadline: the ids handed out keep increasing, and no caller waits past its deadline. (The same
scene against DynamoDB Local, through the fault proxy: tests/integration/test_blocks_direct.py.)"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import pytest

from ddbkeys._errors import DeadlineExceededError
from ddbkeys.aio._blocks import BlockAllocator as AsyncBlockAllocator
from tests.support.blocks_counter import AsyncCounter, Counter, Throttled, until
from tests.support.drivers import Driver


def stand_in(driver: Driver) -> Counter:
    """The stand-in of the driver's kind, answering reservations of 50 ids late."""
    counter = AsyncCounter() if driver.is_async else Counter()
    counter.late = {50}
    counter.answer.clear()
    return counter


@pytest.mark.parametrize("answer", ["late", "error"])
def test_a_next_waits_for_the_answer_of_a_larger_reserve_sent_before_it(
    driver: Driver, answer: str
) -> None:
    counter = stand_in(driver)
    if answer == "error":
        counter.late_error = Throttled("the answer never came")
    blocks = driver.make("BlockAllocator", cast(Any, counter), 10)
    with ThreadPoolExecutor(2) as pool:
        a = pool.submit(blocks.reserve, 50)
        until(lambda: counter.calls == [50])  # applied: 1..50, its answer on its way
        b = pool.submit(blocks.next)
        until(lambda: counter.calls == [50, 10] and blocks.stats.refills == 1)
        time.sleep(0.05)
        assert not b.done()  # 51..60 came, but may not go out before A's ids
        counter.answer.set()
        if answer == "late":
            assert a.result(5) == range(1, 51)
        else:
            with pytest.raises(Throttled):
                a.result(5)
        assert b.result(5) == 51  # after A's answer, above A's ids
    assert blocks.stats.skipped == 0 and blocks.stats.wasted == 0
    assert blocks.next() == 52


def test_a_reserve_that_waits_through_its_deadline_for_one_sent_before_it_gives_up(
    driver: Driver,
) -> None:
    counter = stand_in(driver)
    counter.deadline = 0.2
    blocks = driver.make("BlockAllocator", cast(Any, counter), 10)
    with ThreadPoolExecutor(2) as pool:
        a = pool.submit(blocks.reserve, 50)
        until(lambda: counter.calls == [50])
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError, match="The 60 ids reserved on table"):
            blocks.reserve(60)  # 51..110 came, but A's (sent before) may lie below them
        assert 0.2 <= time.monotonic() - started < 10  # (a hang: A's answer never comes)
        assert blocks.stats.wasted == 60
        counter.answer.set()
        assert a.result(5) == range(1, 51)  # A goes on
    assert blocks.next() == 111  # above every id reserved


def test_an_async_reserve_cancelled_before_its_answer_lets_the_others_go_on() -> None:
    async def main() -> None:
        counter = AsyncCounter()
        counter.late = {50}
        blocks = AsyncBlockAllocator(cast(Any, counter), 10)
        a = asyncio.create_task(blocks.reserve(50))
        while counter.calls != [50]:
            await asyncio.sleep(0.001)
        b = asyncio.create_task(blocks.next())
        await asyncio.sleep(0.05)
        assert not b.done() and blocks.stats.refills == 1  # 51..60 came, held back
        a.cancel()
        assert await asyncio.wait_for(b, 5) == 51
        with pytest.raises(asyncio.CancelledError):
            await a
        assert await blocks.next() == 52 and blocks.stats.wasted == 0
        await blocks.aclose()

    asyncio.run(main())
