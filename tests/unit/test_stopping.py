"""The stop flag a listing looks at (pure: no server)."""

from __future__ import annotations

import threading
import time

import pytest

from ddbkeys import DdbKeysError, ListingInterrupted
from ddbkeys._core.stopping import STOP_SLICE, StopFlag
from ddbkeys.partition_keys._listing.base import ReadBudget


def test_check_raises_once_set() -> None:
    flag = StopFlag()
    flag.check()
    flag.set()
    with pytest.raises(ListingInterrupted) as caught:
        flag.check()
    assert isinstance(caught.value, DdbKeysError)
    assert caught.value.message == (
        "The listing was stopped (Listing.stop()): go on from Listing.checkpoint()."
    )


def test_an_injected_sleep_gets_the_whole_wait() -> None:
    slept: list[float] = []
    StopFlag().sleep(2.5, slept.append)
    assert slept == [2.5]
    flag = StopFlag()
    flag.set()
    with pytest.raises(ListingInterrupted):
        flag.sleep(2.5, slept.append)
    assert slept == [2.5]  # a set flag does not sleep at all


def test_a_real_sleep_ends_soon_after_the_flag_is_set() -> None:
    flag = StopFlag()
    threading.Timer(0.2, flag.set).start()
    started = time.monotonic()
    with pytest.raises(ListingInterrupted):
        flag.sleep(30)
    # Ends within a slice of the flag on a quiet machine; the ceiling (far below the 30 s
    # sleep) leaves a busy one room.
    assert time.monotonic() - started < 0.2 + 50 * STOP_SLICE


def test_a_read_budget_wait_looks_at_the_flag() -> None:
    naps: list[float] = []
    flag = StopFlag()
    budget = ReadBudget(1.0, clock=lambda: 0.0)  # time stands still: the debt stays
    budget.spend(5)  # 5 units in debt: a 5 s wait, in slices
    calls = 0

    def nap(seconds: float) -> None:
        nonlocal calls
        naps.append(seconds)
        calls += 1
        if calls == 3:
            flag.set()

    budget.sleep = nap
    with pytest.raises(ListingInterrupted):
        budget.acquire(flag)
    assert naps == [STOP_SLICE] * 3
